/* The binary cache: written after the first parse (atomically), read on the
 * next load with identical contents, rebuilt when stale or damaged, skipped
 * in read-only folders, and kept in cache_dir when asked. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "datasets/internal.h"
#include "dataset_helpers.h"
#include "helpers.h"

static gcn_dataset_opts cache_opts(const char *dir)
{
    gcn_dataset_opts o = ds_opts(dir);
    o.cache = true;
    return o;
}

/* Number of entries in a folder whose name contains `part`. */
static int count_files(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.' && strstr(e->d_name, part) != NULL;
    closedir(d);
    return n;
}

/* The toy OGB folder in a new temporary folder, a CPU context and options
 * with the cache on; `cache` is where the cache file goes. */
typedef struct toy {
    char *dir;
    gcn_ctx *ctx;
    gcn_dataset_opts o;
    char cache[4096];
} toy;

static toy toy_open(void)
{
    toy t = {.dir = ds_tmpdir()};
    ds_write_ogb_toy(t.dir);
    t.ctx = test_cpu_ctx(1);
    t.o = cache_opts(t.dir);
    snprintf(t.cache, sizeof t.cache, "%s", ds_path(t.dir, "ogbn_toy/processed/gcn-v1.bin"));
    return t;
}

static void toy_close(toy *t)
{
    gcn_ctx_free(&t->ctx);
    ds_rmtree(t->dir);
    free(t->dir);
}

Test(dataset_cache, round_trip)
{
    toy t = toy_open();
    gcn_dataset *first = ds_load_ok(t.ctx, "ogbn-toy", &t.o);
    cr_assert_not(first->from_cache);
    const char *processed = ds_path(t.dir, "ogbn_toy/processed");
    cr_assert_eq(count_files(processed, "gcn-v1.bin"), 1);
    cr_assert_eq(count_files(processed, "tmp"), 0, "no temporary file left behind");
    gcn_dataset *second = ds_load_ok(t.ctx, "ogbn-toy", &t.o);
    cr_assert(second->from_cache);
    cr_assert_str_eq(second->name, "ogbn-toy");
    cr_assert(ds_same(first, second));
    cr_assert_eq(second->n_raw_edges, 6);
    cr_assert_str_eq(second->feature_source, "file");
    gcn_dataset_free(&first);
    gcn_dataset_free(&second);
    toy_close(&t);
}

Test(dataset_cache, written_even_when_features_must_be_substituted)
{
    char *dir = ds_tmpdir();
    ds_write_ogb_toy(dir);
    unlink(ds_path(dir, "ogbn_toy/raw/node-feat.csv.gz"));
    gcn_ctx *a = test_cpu_ctx(5), *b = test_cpu_ctx(5);
    gcn_dataset_opts o = cache_opts(dir);
    ds_expect_fail(a, "ogbn-toy", &o, GCN_ERR_IO, "node-feat.csv.gz", NULL);
    o.features = "random:8";
    gcn_dataset *x = ds_load_ok(a, "ogbn-toy", &o), *y = NULL;
    cr_assert(x->from_cache);
    o.cache = false;
    y = ds_load_ok(b, "ogbn-toy", &o);
    cr_assert_not(y->from_cache);
    cr_assert(ds_same(x, y), "cache or parse, same seed: same dataset");
    gcn_dataset_free(&x);
    gcn_dataset_free(&y);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
    ds_rmtree(dir);
    free(dir);
}

static long file_size(const char *path)
{
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0, "%s", path);
    return (long)sb.st_size;
}

static void flip(const char *path, long offset)
{
    FILE *f = fopen(path, "r+b");
    cr_assert(f);
    fseek(f, offset, SEEK_SET);
    int c = fgetc(f);
    fseek(f, offset, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
}

/* The damaged cache at `cache` is noticed: the load parses the sources
 * again (same dataset as `ref`), rewrites a cache of the original size, and
 * the next load comes from it. */
static void expect_rebuilt(gcn_ctx *ctx, const gcn_dataset_opts *o, const gcn_dataset *ref,
                           const char *cache, long size)
{
    gcn_dataset *ds = ds_load_ok(ctx, "ogbn-toy", o);
    cr_assert_not(ds->from_cache, "damaged cache %s was trusted", cache);
    cr_assert(ds_same(ds, ref));
    gcn_dataset_free(&ds);
    cr_assert_eq(file_size(cache), size, "cache rewritten");
    ds = ds_load_ok(ctx, "ogbn-toy", o);
    cr_assert(ds->from_cache);
    gcn_dataset_free(&ds);
}

/* Damages the cache in several ways; each load must notice, parse the
 * sources again, and rewrite a good cache. */
Test(dataset_cache, corruption_is_detected_and_rebuilt)
{
    toy t = toy_open();
    gcn_dataset *ref = ds_load_ok(t.ctx, "ogbn-toy", &t.o);
    long size = file_size(t.cache);
    for (int kind = 0; kind < 5; kind++) {
        if (kind == 0)
            flip(t.cache, size - 3); /* payload (test split) */
        else if (kind == 1)
            flip(t.cache, 0); /* magic */
        else if (kind == 2)
            flip(t.cache, 100); /* a header count */
        else if (kind == 3)
            cr_assert_eq(truncate(t.cache, size - 4), 0);
        else
            cr_assert_eq(truncate(t.cache, 10), 0);
        expect_rebuilt(t.ctx, &t.o, ref, t.cache, size);
    }
    gcn_dataset_free(&ref);
    toy_close(&t);
}

/* Rewrites the cache header's class count and its header CRC, so that only
 * the size and content checks behind the checksum can catch it. */
static void set_classes(const char *path, int32_t n_classes)
{
    gcn_cache_header h;
    FILE *f = fopen(path, "r+b");
    cr_assert(f);
    cr_assert_eq(fread(&h, sizeof h, 1, f), 1);
    h.n_classes = n_classes;
    h.header_crc = (uint32_t)crc32_z(0, (const Bytef *)&h, offsetof(gcn_cache_header, header_crc));
    cr_assert_eq(fseek(f, 0, SEEK_SET), 0);
    cr_assert_eq(fwrite(&h, sizeof h, 1, f), 1);
    fclose(f);
}

/* A checksummed header with too many classes (a label cap) or too few for
 * the labels stored is corrupt, not trusted. */
Test(dataset_cache, class_count_is_checked)
{
    toy t = toy_open();
    gcn_dataset *ref = ds_load_ok(t.ctx, "ogbn-toy", &t.o);
    long size = file_size(t.cache);
    const int32_t bad[2] = {(int32_t)GCN_DS_MAX_CLASSES + 1, 2}; /* the labels go up to 2 */
    for (int k = 0; k < 2; k++) {
        set_classes(t.cache, bad[k]);
        expect_rebuilt(t.ctx, &t.o, ref, t.cache, size);
    }
    gcn_dataset_free(&ref);
    toy_close(&t);
}

Test(dataset_cache, stale_when_sources_change)
{
    toy t = toy_open();
    gcn_dataset *ds = ds_load_ok(t.ctx, "ogbn-toy", &t.o);
    gcn_dataset_free(&ds);
    ds_write(t.dir, "ogbn_toy/raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,4\n4,0\n0,3\n");
    ds = ds_load_ok(t.ctx, "ogbn-toy", &t.o);
    cr_assert_not(ds->from_cache);
    cr_assert_eq(ds->graph->col_idx[ds->graph->row_ptr[0] + 1], 3, "0-3 replaced 0-2");
    gcn_dataset_free(&ds);
    ds = ds_load_ok(t.ctx, "ogbn-toy", &t.o);
    cr_assert(ds->from_cache);
    gcn_dataset_free(&ds);
    /* A different split scheme is a different cache key. */
    ds_write(t.dir, "ogbn_toy/split/b/train.csv.gz", "4\n");
    ds_write(t.dir, "ogbn_toy/split/b/valid.csv.gz", "3\n");
    ds_write(t.dir, "ogbn_toy/split/b/test.csv.gz", "2\n");
    t.o.split_scheme = "b";
    ds = ds_load_ok(t.ctx, "ogbn-toy", &t.o);
    cr_assert_not(ds->from_cache);
    cr_assert_eq(ds->train[0], 4);
    gcn_dataset_free(&ds);
    toy_close(&t);
}

Test(dataset_cache, read_only_folder_and_cache_dir)
{
    char *dir = ds_tmpdir();
    ds_write_ogb_toy(dir);
    char data[4096];
    snprintf(data, sizeof data, "%s", ds_path(dir, "ogbn_toy"));
    cr_assert_eq(chmod(data, 0555), 0);
    gcn_ctx *ctx = ds_logging_ctx(0);
    gcn_dataset_opts o = cache_opts(dir);
    gcn_dataset *ds = ds_load_ok(ctx, "ogbn-toy", &o);
    cr_assert_not(ds->from_cache);
    cr_assert(strstr(ds_notices, "read-only"), "%s", ds_notices);
    cr_assert_eq(count_files(data, "processed"), 0, "nothing written into the data");
    gcn_dataset_free(&ds);
    char cache_dir[4096];
    snprintf(cache_dir, sizeof cache_dir, "%s", ds_path(dir, "cache"));
    o.cache_dir = cache_dir; /* created on first use */
    ds = ds_load_ok(ctx, "ogbn-toy", &o);
    cr_assert_not(ds->from_cache);
    gcn_dataset_free(&ds);
    cr_assert_eq(count_files(cache_dir, "ogbn-toy-"), 1);
    ds = ds_load_ok(ctx, "ogbn-toy", &o);
    cr_assert(ds->from_cache);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    chmod(data, 0755);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset_cache, single_files_and_off_switch)
{
    char *dir = ds_tmpdir();
    ds_write(dir, "g.txt", "0 1\n1 2\n");
    ds_write(dir, "h.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n");
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = cache_opts(dir);
    const char *files[] = {"g.txt", "h.mtx"};
    for (int k = 0; k < 2; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s", ds_path(dir, files[k]));
        gcn_dataset *a = ds_load_ok(ctx, path, &o), *b = ds_load_ok(ctx, path, &o);
        cr_assert_not(a->from_cache);
        cr_assert(b->from_cache);
        cr_assert(ds_same(a, b));
        gcn_dataset_free(&a);
        gcn_dataset_free(&b);
    }
    cr_assert_eq(count_files(ds_path(dir, "processed"), ".gcn-v1.bin"), 2);
    ds_write(dir, "t/edges.txt", "0 1\n");
    o.cache = false;
    o.features = "none";
    gcn_dataset *ds = ds_load_ok(ctx, "t", &o);
    gcn_dataset_free(&ds);
    cr_assert_eq(count_files(ds_path(dir, "t"), "processed"), 0);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}
