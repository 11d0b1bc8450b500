/* Replays every input kept for the dataset fuzzers (the seed corpora in
 * fuzz/corpus/<target>/ and the crash regressions in
 * fuzz/regress/<target>/) through the same harness the libFuzzer targets
 * use, and asserts the outcome each file's name states:
 * "<outcome>-<what it holds>", the outcome being "ok" (it loads and the
 * dataset is usable) or the status it must fail with, as named in the
 * table below ("format-no_banner", "numeric-nan_weight").  Each seed
 * corpus holds valid and malformed inputs; the ASan build also checks every
 * input for memory errors and leaks. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fuzz/harness.c"

typedef gcn_status (*fuzz_fn)(const uint8_t *data, size_t size);

/* The outcomes a file name may state. */
static const struct {
    const char *name;
    gcn_status st;
} outcomes[] = {
    {"ok", GCN_OK},
    {"format", GCN_ERR_FORMAT},
    {"numeric", GCN_ERR_NUMERIC},
    {"unsupported", GCN_ERR_UNSUPPORTED},
    {"io", GCN_ERR_IO},
    {"not_found", GCN_ERR_NOT_FOUND},
    {"invalid_arg", GCN_ERR_INVALID_ARG},
};

#define N_OUTCOMES (sizeof outcomes / sizeof outcomes[0])

/* The outcome the name states before its first '-'; false when none. */
static bool expected_outcome(const char *name, gcn_status *st)
{
    size_t len = strcspn(name, "-");
    for (size_t k = 0; name[len] == '-' && k < N_OUTCOMES; k++)
        if (strlen(outcomes[k].name) == len && !strncmp(name, outcomes[k].name, len)) {
            *st = outcomes[k].st;
            return true;
        }
    return false;
}

static const char *outcome_name(gcn_status st)
{
    for (size_t k = 0; k < N_OUTCOMES; k++)
        if (outcomes[k].st == st)
            return outcomes[k].name;
    return gcn_status_str(st);
}

/* Inputs replayed from one folder: how many, and how many should load. */
typedef struct replayed {
    int n, ok;
} replayed;

/* Runs fn on every file in dir, asserting the outcome its name states. */
static replayed replay_dir(const char *dir, fuzz_fn fn)
{
    replayed r = {0, 0};
    DIR *d = opendir(dir);
    if (!d)
        return r;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        gcn_status want;
        cr_assert(expected_outcome(e->d_name, &want),
                  "%s: the name states no outcome; name it <outcome>-<what it holds>, the "
                  "outcome \"ok\" or a failing status from the table in %s",
                  path, __FILE__);
        FILE *f = fopen(path, "rb");
        cr_assert(f, "%s", path);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
        cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
        fclose(f);
        gcn_status got = fn(buf, (size_t)size);
        cr_assert_eq(got, want, "%s: expected %s, got %s", path, outcome_name(want),
                     outcome_name(got));
        free(buf);
        r.n++;
        r.ok += want == GCN_OK;
    }
    closedir(d);
    return r;
}

static void replay(const char *target, fuzz_fn fn)
{
    char dir[256];
    snprintf(dir, sizeof dir, "fuzz/corpus/%s", target);
    replayed seeds = replay_dir(dir, fn);
    cr_assert(seeds.n > 0, "no seed inputs in %s (run the tests from the repository root)", dir);
    cr_assert(seeds.ok > 0 && seeds.ok < seeds.n,
              "%s: %d of %d seeds load; the corpus needs valid and malformed inputs", dir,
              seeds.ok, seeds.n);
    snprintf(dir, sizeof dir, "fuzz/regress/%s", target);
    replay_dir(dir, fn);
}

Test(dataset_fuzz, edgelist) { replay("edgelist", gcn_fuzz_edgelist); }
Test(dataset_fuzz, mtx) { replay("mtx", gcn_fuzz_mtx); }
Test(dataset_fuzz, textdir) { replay("textdir", gcn_fuzz_textdir); }
Test(dataset_fuzz, ogb) { replay("ogb", gcn_fuzz_ogb); }
Test(dataset_fuzz, tu) { replay("tu", gcn_fuzz_tu); }
Test(dataset_fuzz, cache) { replay("cache", gcn_fuzz_cache); }
Test(dataset_fuzz, pickle) { replay("pickle", gcn_fuzz_pickle); }
