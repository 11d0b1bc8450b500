/* Replays every input kept for the dataset fuzzers (the seed corpora in
 * fuzz/corpus/<target>/ and the crash regressions in
 * fuzz/regress/<target>/) through the same harness the libFuzzer
 * targets use: each must load or fail cleanly, which the ASan build checks
 * for memory errors and leaks. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "../fuzz/harness.c"

typedef int (*fuzz_fn)(const uint8_t *data, size_t size);

/* Runs fn on every file in dir; returns how many there were. */
static int replay_dir(const char *dir, fuzz_fn fn)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        cr_assert(f, "%s", path);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
        cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
        fclose(f);
        cr_assert_eq(fn(buf, (size_t)size), 0, "%s", path);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

static void replay(const char *target, fuzz_fn fn)
{
    char dir[256];
    snprintf(dir, sizeof dir, "fuzz/corpus/%s", target);
    int seeds = replay_dir(dir, fn);
    cr_assert(seeds > 0, "no seed inputs in %s (run the tests from the repository root)", dir);
    snprintf(dir, sizeof dir, "fuzz/regress/%s", target);
    replay_dir(dir, fn);
}

Test(dataset_fuzz, edgelist) { replay("edgelist", gcn_fuzz_edgelist); }
Test(dataset_fuzz, mtx) { replay("mtx", gcn_fuzz_mtx); }
Test(dataset_fuzz, textdir) { replay("textdir", gcn_fuzz_textdir); }
Test(dataset_fuzz, ogb) { replay("ogb", gcn_fuzz_ogb); }
Test(dataset_fuzz, cache) { replay("cache", gcn_fuzz_cache); }
