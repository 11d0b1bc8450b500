/* PARTS reorderings of whole datasets (datasets/reorder_apply.c,
 * reorder_cache.c): every array follows its nodes, and the permutation
 * file beside the dataset cache is kept per part count and balance. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_helpers.h"
#include "helpers.h"

Test(partition, dataset_reorder_into_three_parts_moves_every_array)
{
    gcn_ctx *a = test_cpu_ctx(21), *b = test_cpu_ctx(21);
    gcn_sbm_opts so = gcn_sbm_default_opts();
    so.n_nodes = 602;
    so.n_features = 5;
    so.n_valid = 100;
    so.n_test = 200;
    gcn_dataset *x = NULL, *y = NULL;
    cr_assert_eq(gcn_dataset_sbm(a, &x, &so), GCN_OK);
    cr_assert_eq(gcn_dataset_sbm(b, &y, &so), GCN_OK);
    gcn_reorder_opts o;
    cr_assert_eq(gcn_reorder_parse(b, "parts:3", &o), GCN_OK);
    cr_assert_eq(gcn_dataset_reorder(b, y, &o), GCN_OK, "%s", gcn_last_error(b));
    ds_expect_follows(x, y);
    const gcn_reorder *r = y->reorder;
    cr_assert_eq(r->method, GCN_REORDER_PARTS);
    cr_assert_eq(r->n_parts[0], 3);
    for (int q = 0; q < 3; q++)
        cr_assert_leq(r->part_ptr[0][q], r->part_ptr[0][q + 1]);
    /* The edge cut, counted again on the reordered graph by new ids. */
    int64_t cut = 0;
    for (int32_t u = 0; u < y->n_nodes; u++)
        for (int32_t e = y->graph->row_ptr[u]; e < y->graph->row_ptr[u + 1]; e++) {
            int32_t v = y->graph->col_idx[e], pu = 0, pv = 0;
            for (int q = 1; q < 3; q++) {
                pu += u >= r->part_ptr[0][q];
                pv += v >= r->part_ptr[0][q];
            }
            cut += pu != pv;
        }
    cr_assert_eq(r->edge_cut, cut);
    char text[1024], want[96];
    gcn_dataset_describe(y, text, sizeof text);
    snprintf(want, sizeof want, "reordered by parts (3 parts of 201, edge cut %lld, ",
             (long long)cut);
    cr_assert(strstr(text, want), "%s", text);
    gcn_dataset_free(&x);
    gcn_dataset_free(&y);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
}

/* Loads dir/g.txt with the cache on and the reordering spec under seed 3. */
static gcn_dataset *load_g(const char *dir, const char *spec)
{
    gcn_ctx *ctx = ds_logging_ctx(3);
    gcn_dataset_opts o = ds_opts(dir);
    o.cache = true;
    o.reorder = spec;
    char path[4096];
    snprintf(path, sizeof path, "%s", ds_path(dir, "g.txt"));
    gcn_dataset *ds = ds_load_ok(ctx, path, &o);
    cr_assert_not_null(ds->reorder);
    gcn_ctx_free(&ctx);
    return ds;
}

/* Whether folder holds a file whose name contains part. */
static bool has_file(const char *folder, const char *part)
{
    DIR *d = opendir(folder);
    cr_assert_not_null(d, "%s", folder);
    bool found = false;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        found |= strstr(e->d_name, part) != NULL;
    closedir(d);
    return found;
}

/* "parts:2" is cached once computed; "parts:3" and "parts:2:nnz" are other
 * keys, so each is computed and cached beside it, never served from the
 * file of another. */
Test(partition, cached_parts_are_keyed_by_count_and_balance)
{
    char *dir = ds_tmpdir();
    size_t len;
    char *edges = ds_random_edges("", 600, 120, 0, ' ', &len);
    ds_write(dir, "g.txt", edges);
    const char *specs[] = {"parts:2", "parts:3", "parts:2:nnz"};
    const char *files[] = {".bin.parts-2-s", ".bin.parts-3-s", ".bin.parts-2-nnz-s"};
    gcn_dataset *first[3];
    for (int s = 0; s < 3; s++) {
        first[s] = load_g(dir, specs[s]);
        cr_assert_not(first[s]->reorder->from_cache, "%s served from another's file", specs[s]);
        cr_assert_eq(first[s]->reorder->n_parts[0], s == 1 ? 3 : 2);
        char proc[4096];
        snprintf(proc, sizeof proc, "%s/processed", dir);
        cr_assert(has_file(proc, files[s]), "no %s file", files[s]);
    }
    for (int s = 0; s < 3; s++) {
        gcn_dataset *again = load_g(dir, specs[s]);
        const gcn_reorder *r = again->reorder, *f = first[s]->reorder;
        cr_assert(r->from_cache, "%s not read from its file", specs[s]);
        cr_assert_eq(r->method, GCN_REORDER_PARTS);
        cr_assert_eq(r->n_parts[0], f->n_parts[0]);
        cr_assert_eq(r->size[0], f->size[0]);
        cr_assert_arr_eq(r->order, f->order, (size_t)r->n_nodes * sizeof(int32_t));
        cr_assert_arr_eq(r->part_ptr[0], f->part_ptr[0],
                         ((size_t)r->n_parts[0] + 1) * sizeof(int32_t));
        cr_assert_eq(r->edge_cut, f->edge_cut, "the cut is counted again on reading");
        cr_assert(ds_same(again, first[s]));
        gcn_dataset_free(&again);
    }
    for (int s = 0; s < 3; s++)
        gcn_dataset_free(&first[s]);
    free(edges);
    ds_rmtree(dir);
    free(dir);
}
