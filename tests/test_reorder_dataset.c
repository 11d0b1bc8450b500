/* Reordered datasets (datasets/reorder_apply.c, reorder_cache.c): every
 * array follows its nodes, the permutation file beside the dataset cache
 * (reused, rebuilt when damaged or stale, one per seed, skipped in read-only
 * folders), and export in original ids. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dataset_helpers.h"
#include "helpers.h"

Test(reorder, dataset_reorder_moves_every_array)
{
    gcn_ctx *a = test_cpu_ctx(9), *b = test_cpu_ctx(9);
    gcn_sbm_opts so = gcn_sbm_default_opts();
    so.n_nodes = 600;
    so.n_features = 6;
    so.n_valid = 100;
    so.n_test = 200;
    gcn_dataset *x = NULL, *y = NULL;
    cr_assert_eq(gcn_dataset_sbm(a, &x, &so), GCN_OK);
    cr_assert_eq(gcn_dataset_sbm(b, &y, &so), GCN_OK);
    gcn_reorder_opts none = gcn_reorder_default_opts(GCN_REORDER_NONE), o;
    cr_assert_eq(gcn_dataset_reorder(b, y, &none), GCN_OK);
    cr_assert_null(y->reorder, "none leaves the dataset as it is");
    cr_assert(ds_same(x, y));
    cr_assert_eq(gcn_reorder_parse(b, "metis:16,64", &o), GCN_OK);
    cr_assert_eq(gcn_dataset_reorder(b, y, &o), GCN_OK, "%s", gcn_last_error(b));
    ds_expect_follows(x, y);
    char text[1024];
    gcn_dataset_describe(y, text, sizeof text);
    cr_assert(strstr(text, "reordered by metis ("), "%s", text);
    cr_assert(strstr(text, " parts of 16, "), "%s", text);
    int32_t first = y->reorder->order[0];
    cr_assert_eq(gcn_dataset_reorder(b, y, &o), GCN_ERR_STATE);
    cr_assert(strstr(gcn_last_error(b), "already reordered"), "%s", gcn_last_error(b));
    cr_assert_eq(gcn_dataset_reorder(b, y, &none), GCN_ERR_STATE);
    cr_assert_eq(y->reorder->order[0], first);
    gcn_dataset_free(&x);
    gcn_dataset_free(&y);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
}

/* Loads dir/g.txt with the cache on and metis:4,16 under seed. */
static gcn_dataset *load_g(const char *dir, uint64_t seed)
{
    gcn_ctx *ctx = ds_logging_ctx(seed);
    gcn_dataset_opts o = ds_opts(dir);
    o.cache = true;
    o.reorder = "metis:4,16";
    char path[4096];
    snprintf(path, sizeof path, "%s", ds_path(dir, "g.txt"));
    gcn_dataset *ds = ds_load_ok(ctx, path, &o);
    cr_assert_not_null(ds->reorder);
    gcn_ctx_free(&ctx);
    return ds;
}

/* The number of .perm files in folder; *last receives the path of one. */
static int perm_files(const char *folder, char last[4096])
{
    DIR *d = opendir(folder);
    cr_assert_not_null(d, "%s", folder);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".perm") == 0) {
            snprintf(last, 4096, "%s/%s", folder, e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

/* The single .perm file under dir/processed. */
static const char *perm_file(const char *dir)
{
    static char path[4096];
    char folder[4096];
    snprintf(folder, sizeof folder, "%s/processed", dir);
    cr_assert_eq(perm_files(folder, path), 1);
    return path;
}

static void flip_last_byte(const char *path)
{
    FILE *f = fopen(path, "r+b");
    cr_assert(f);
    fseek(f, -1, SEEK_END);
    int c = fgetc(f);
    fseek(f, -1, SEEK_END);
    fputc(c ^ 0x01, f);
    fclose(f);
}

Test(reorder, load_keeps_the_permutation_beside_the_cache)
{
    char *dir = ds_tmpdir();
    size_t len;
    char *edges = ds_random_edges("", 400, 80, 0, ' ', &len);
    ds_write(dir, "g.txt", edges);
    gcn_dataset *first = load_g(dir, 3);
    cr_assert_not(first->reorder->from_cache);
    const char *perm = perm_file(dir);
    cr_assert(strstr(perm, "/g.txt.gcn-v1.bin.metis-4-16-s"), "%s", perm);
    gcn_dataset *second = load_g(dir, 3);
    cr_assert(second->reorder->from_cache);
    cr_assert_eq(second->reorder->seconds, 0.0);
    cr_assert(ds_same(first, second));
    size_t bytes = (size_t)first->n_nodes * sizeof(int32_t);
    cr_assert_arr_eq(second->reorder->order, first->reorder->order, bytes);
    cr_assert_eq(second->reorder->n_levels, first->reorder->n_levels);
    for (int k = 0; k < first->reorder->n_levels; k++)
        cr_assert_arr_eq(second->reorder->part_ptr[k], first->reorder->part_ptr[k],
                         ((size_t)first->reorder->n_parts[k] + 1) * sizeof(int32_t));
    char text[1024];
    gcn_dataset_describe(second, text, sizeof text);
    cr_assert(strstr(text, "permutation read from its file)"), "%s", text);
    gcn_dataset_free(&second);

    flip_last_byte(perm_file(dir));
    second = load_g(dir, 3);
    cr_assert_not(second->reorder->from_cache, "a damaged file was trusted");
    cr_assert(strstr(ds_notices, "WARN permutation") && strstr(ds_notices, "is corrupt"), "%s",
              ds_notices);
    cr_assert_arr_eq(second->reorder->order, first->reorder->order, bytes);
    gcn_dataset_free(&second);
    second = load_g(dir, 3);
    cr_assert(second->reorder->from_cache, "the damaged file was rewritten");
    gcn_dataset_free(&second);

    /* Another graph under the same file name: the first 300 of the edges. */
    free(edges);
    edges = ds_random_edges("", 300, 80, 0, ' ', &len);
    ds_write(dir, "g.txt", edges);
    second = load_g(dir, 3);
    cr_assert_not(second->reorder->from_cache, "a permutation of another graph was used");
    cr_assert(strstr(ds_notices, "INFO permutation") && strstr(ds_notices, "another graph"), "%s",
              ds_notices);
    gcn_dataset_free(&second);
    free(edges);
    gcn_dataset_free(&first);
    ds_rmtree(dir);
    free(dir);
}

/* A generated graph keeps its reorderings in cache_dir, under its spec;
 * without cache_dir, or with the cache off, nowhere. */
Test(reorder, generated_graphs_keep_their_permutation_in_cache_dir)
{
    char *dir = ds_tmpdir(), folder[4096], path[4096];
    snprintf(folder, sizeof folder, "%s/cache", dir);
    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_dataset_opts o = gcn_dataset_default_opts();
    o.cache_dir = folder;
    o.reorder = "parts:2";
    gcn_dataset *first = NULL, *second = NULL;
    cr_assert_eq(gcn_dataset_load(ctx, &first, "sbm:nodes=600,classes=3", &o), GCN_OK, "%s",
                 gcn_last_error(ctx));
    cr_assert_not(first->reorder->from_cache);
    cr_assert_eq(perm_files(folder, path), 1);
    cr_assert(strstr(path, "/generated-sbm:nodes=600,classes=3.parts-2-s"), "%s", path);
    gcn_rng_seed(ctx, 5); /* the same graph again */
    cr_assert_eq(gcn_dataset_load(ctx, &second, "sbm:nodes=600,classes=3", &o), GCN_OK);
    cr_assert(second->reorder->from_cache);
    cr_assert_arr_eq(second->reorder->order, first->reorder->order,
                     (size_t)first->n_nodes * sizeof(int32_t));
    cr_assert(ds_same(first, second));
    gcn_dataset_free(&second);
    /* another generated graph under another name; the same name with the
     * cache off reads nothing */
    cr_assert_eq(gcn_dataset_load(ctx, &second, "sbm:nodes=700,classes=3", &o), GCN_OK);
    cr_assert_not(second->reorder->from_cache);
    cr_assert_eq(perm_files(folder, path), 2);
    gcn_dataset_free(&second);
    o.cache = false;
    gcn_rng_seed(ctx, 5);
    cr_assert_eq(gcn_dataset_load(ctx, &second, "sbm:nodes=600,classes=3", &o), GCN_OK);
    cr_assert_not(second->reorder->from_cache);
    gcn_dataset_free(&second);
    gcn_dataset_free(&first);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(reorder, load_options_seeds_and_read_only_folders)
{
    char *dir = ds_tmpdir();
    ds_write_ogb_toy(dir);
    gcn_ctx *ctx = ds_logging_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    o.reorder = "metis:1";
    ds_expect_fail(ctx, "ogbn-toy", &o, GCN_ERR_INVALID_ARG, "reorder spec 'metis:1'", NULL);
    o.reorder = "none";
    gcn_dataset *ds = ds_load_ok(ctx, "ogbn-toy", &o);
    cr_assert_null(ds->reorder);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    char proc[4096];
    snprintf(proc, sizeof proc, "%s", ds_path(dir, "ogbn_toy/processed"));
    for (uint64_t seed = 1; seed <= 2; seed++) {
        ctx = ds_logging_ctx(seed);
        o.cache = true;
        o.reorder = "metis:2";
        gcn_dataset_free(&ds);
        ds = ds_load_ok(ctx, "ogbn-toy", &o);
        gcn_ctx_free(&ctx);
    }
    cr_assert_eq(ds->reorder->n_levels, 1);
    char last[4096];
    cr_assert_eq(perm_files(proc, last), 2, "one file per seed");
    cr_assert_eq(chmod(proc, 0555), 0);
    ctx = ds_logging_ctx(1);
    o.reorder = "degree";
    gcn_dataset_free(&ds);
    ds = ds_load_ok(ctx, "ogbn-toy", &o);
    cr_assert(ds->from_cache);
    cr_assert_not(ds->reorder->from_cache);
    cr_assert(strstr(ds_notices, "degree.perm not written: the folder is read-only"), "%s",
              ds_notices);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    chmod(proc, 0755);
    ds_rmtree(dir);
    free(dir);
}

/* Whether two files hold the same bytes. */
static bool same_file(const char *a, const char *b)
{
    FILE *f = fopen(a, "rb"), *g = fopen(b, "rb");
    cr_assert(f && g, "%s or %s missing", a, b);
    int x, y;
    do {
        x = fgetc(f);
        y = fgetc(g);
    } while (x == y && x != EOF);
    fclose(f);
    fclose(g);
    return x == y;
}

static void export_twice(gcn_ctx *ctx, const gcn_dataset *plain, const gcn_dataset *reordered,
                         const char *dir)
{
    static const char *const files[] = {"x.npy", "edge_index.npy", "y.npy", "train_idx.npy",
                                        "valid_idx.npy", "test_idx.npy"};
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/plain", dir);
    snprintf(b, sizeof b, "%s/reordered", dir);
    cr_assert_eq(gcn_dataset_export_npy(ctx, plain, a), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_dataset_export_npy(ctx, reordered, b), GCN_OK, "%s", gcn_last_error(ctx));
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        char fa[4200], fb[4200];
        snprintf(fa, sizeof fa, "%s/%s", a, files[k]);
        snprintf(fb, sizeof fb, "%s/%s", b, files[k]);
        cr_assert(same_file(fa, fb), "%s differs", files[k]);
    }
}

Test(reorder, export_speaks_original_ids)
{
    char *dir = ds_tmpdir();
    ds_write_ogb_toy(dir);
    gcn_ctx *ctx = test_cpu_ctx(10);
    gcn_dataset_opts o = ds_opts(dir);
    const char *specs[] = {"degree", "metis:2"};
    for (int s = 0; s < 2; s++) {
        gcn_dataset *plain = ds_load_ok(ctx, "ogbn-toy", &o);
        o.reorder = specs[s];
        gcn_dataset *re = ds_load_ok(ctx, "ogbn-toy", &o);
        o.reorder = NULL;
        cr_assert_not_null(re->reorder);
        export_twice(ctx, plain, re, dir);
        gcn_dataset_free(&plain);
        gcn_dataset_free(&re);
    }
    o.reorder = "metis:8,32";
    gcn_ctx *a = test_cpu_ctx(11), *b = test_cpu_ctx(11);
    const char *sbm = "sbm:nodes=300,features=4,classes=3,valid=40,test=60";
    gcn_dataset *plain = ds_load_ok(a, sbm, NULL), *re = ds_load_ok(b, sbm, &o);
    ds_expect_follows(plain, re);
    export_twice(ctx, plain, re, dir);
    gcn_dataset_free(&plain);
    gcn_dataset_free(&re);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}
