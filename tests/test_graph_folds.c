/* Batches of graphs over epochs: the seeded per-epoch shuffle, stratified
 * k-fold splits and the fold file another framework can read. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_helpers.h"
#include "helpers.h"

#define N_IDS 100

/* ids 3 * i, shuffled on ctx in batches of 32. */
static void shuffled(gcn_ctx *ctx, int32_t *ids)
{
    for (int32_t i = 0; i < N_IDS; i++)
        ids[i] = 3 * i;
    int32_t n_batches = 0;
    cr_assert_eq(gcn_graph_shuffle_batches(ctx, ids, N_IDS, 32, &n_batches), GCN_OK);
    cr_assert_eq(n_batches, 4);
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int32_t *)a - *(const int32_t *)b;
}

Test(graph_folds, shuffle_is_seeded_and_per_epoch)
{
    gcn_ctx *a = test_cpu_ctx(7), *b = test_cpu_ctx(7), *c = test_cpu_ctx(8);
    int32_t x[N_IDS], y[N_IDS], z[N_IDS], sorted[N_IDS];
    shuffled(a, x);
    shuffled(b, y);
    cr_assert_arr_eq(x, y, sizeof x, "the same seed gives the same order");
    memcpy(sorted, x, sizeof x);
    qsort(sorted, N_IDS, sizeof *sorted, cmp_int);
    bool moved = false;
    for (int32_t i = 0; i < N_IDS; i++) {
        cr_assert_eq(sorted[i], 3 * i, "a permutation of the ids");
        moved = moved || x[i] != 3 * i;
    }
    cr_assert(moved);
    shuffled(c, z);
    cr_assert_arr_neq(x, z, sizeof x, "another seed, another order");
    shuffled(a, z);
    cr_assert_arr_neq(x, z, sizeof x, "the next epoch, another order");
    uint64_t off[GCN_RNG_N_STREAMS];
    gcn_rng_get_state(b, off);
    for (int s = 0; s < GCN_RNG_N_STREAMS; s++)
        cr_assert((off[s] != 0) == (s == GCN_RNG_SHUFFLE), "stream %d at %llu", s,
                  (unsigned long long)off[s]);
    int32_t n_batches = -1;
    cr_assert_eq(gcn_graph_shuffle_batches(a, x, 0, 32, &n_batches), GCN_OK);
    cr_assert_eq(n_batches, 0);
    cr_assert_eq(gcn_graph_shuffle_batches(a, x, N_IDS, 0, &n_batches), GCN_ERR_INVALID_ARG);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
    gcn_ctx_free(&c);
}

/* A collection of 50 one-node graphs without edges, labelled 5, 9 or 11
 * in uneven numbers, in dir/tu/many. */
static void write_many(const char *dir)
{
    char indicator[512] = "", labels[512] = "";
    for (int g = 0; g < 50; g++) {
        snprintf(indicator + strlen(indicator), 8, "%d\n", g + 1);
        snprintf(labels + strlen(labels), 8, "%d\n", g % 7 < 3 ? 5 : g % 7 < 6 ? 9 : 11);
    }
    ds_write(dir, "tu/many/many_graph_indicator.txt", indicator);
    ds_write(dir, "tu/many/many_graph_labels.txt", labels);
    ds_write(dir, "tu/many/many_A.txt", "");
}

/* Asserts that fold is a stratified k-fold split of ds: folds in range,
 * sizes within one of each other, each class's count in each fold within
 * one of its share. */
static void check_folds(const gcn_dataset *ds, int32_t k, const int32_t *fold)
{
    int32_t size[16] = {0}, count[16][4] = {{0}}, total[4] = {0};
    cr_assert_leq(k, 16);
    cr_assert_leq(ds->n_graph_classes, 4);
    for (int32_t g = 0; g < ds->n_graphs; g++) {
        cr_assert(fold[g] >= 0 && fold[g] < k, "graph %d in fold %d", g, fold[g]);
        size[fold[g]]++;
        count[fold[g]][ds->graph_labels[g]]++;
        total[ds->graph_labels[g]]++;
    }
    for (int32_t f = 0; f < k; f++) {
        cr_assert(size[f] * k >= ds->n_graphs - k && size[f] * k <= ds->n_graphs + k,
                  "fold %d holds %d of %d graphs", f, size[f], ds->n_graphs);
        for (int32_t c = 0; c < ds->n_graph_classes; c++)
            cr_assert(abs(count[f][c] * k - total[c]) < k, "fold %d holds %d of class %d's %d",
                      f, count[f][c], c, total[c]);
    }
}

Test(graph_folds, folds_are_stratified_seeded_and_disjoint)
{
    ds_fixture f = ds_fixture_open(write_many, "tu:many");
    gcn_ctx *ctx = f.ctx;
    gcn_dataset *ds = f.ds;
    cr_assert_eq(ds->n_graphs, 50);
    cr_assert_eq(ds->graph->nnz, 0);
    cr_assert_eq(ds->n_graph_classes, 3);
    int32_t a[50], b[50];
    for (int32_t k = 2; k <= 10; k += 4) {
        cr_assert_eq(gcn_graph_folds(ctx, ds, k, 0, a), GCN_OK);
        check_folds(ds, k, a);
        cr_assert_eq(gcn_graph_folds(ctx, ds, k, 0, b), GCN_OK);
        cr_assert_arr_eq(a, b, sizeof a, "the same seed gives the same folds");
        cr_assert_eq(gcn_graph_folds(ctx, ds, k, 1, b), GCN_OK);
        check_folds(ds, k, b);
        cr_assert_arr_neq(a, b, sizeof a, "another seed, other folds");
    }
    cr_assert_eq(gcn_graph_folds(ctx, ds, 1, 0, a), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_graph_folds(ctx, ds, 51, 0, a), GCN_ERR_INVALID_ARG);
    gcn_dataset *sbm = ds_load_ok(ctx, "sbm:nodes=100,classes=2", &f.o);
    cr_assert_eq(gcn_graph_folds(ctx, sbm, 2, 0, a), GCN_ERR_STATE);
    gcn_dataset_free(&sbm);
    ds = ds_load_tu(ctx, "PROTEINS_full", NULL);
    if (ds) {
        int32_t *fold = malloc((size_t)ds->n_graphs * sizeof *fold);
        cr_assert_eq(gcn_graph_folds(ctx, ds, 10, 0, fold), GCN_OK);
        check_folds(ds, 10, fold);
        free(fold);
        gcn_dataset_free(&ds);
    }
    ds_fixture_close(&f);
}

/* Asserts that reading the fold file `text` fails with st and a message
 * holding needle. */
static void expect_bad_folds(gcn_ctx *ctx, const gcn_dataset *ds, const char *dir,
                             const char *text, gcn_status st, const char *needle)
{
    ds_write(dir, "bad-folds.txt", text);
    int32_t k = 0, fold[50];
    gcn_status got = gcn_graph_folds_read(ctx, ds_path(dir, "bad-folds.txt"), ds, &k, fold);
    cr_assert_eq(got, st, "%s: %s", text, gcn_last_error(ctx));
    cr_assert(strstr(gcn_last_error(ctx), needle), "'%s' lacks '%s'", gcn_last_error(ctx),
              needle);
}

Test(graph_folds, fold_file_round_trip)
{
    ds_fixture f = ds_fixture_open(write_many, "tu:many");
    gcn_ctx *ctx = f.ctx;
    const gcn_dataset *ds = f.ds;
    const char *dir = f.dir;
    int32_t fold[50], back[50], k = 0;
    cr_assert_eq(gcn_graph_folds(ctx, ds, 5, 42, fold), GCN_OK);
    char path[4096];
    snprintf(path, sizeof path, "%s", ds_path(dir, "folds.txt"));
    cr_assert_eq(gcn_graph_folds_write(ctx, path, ds, 5, fold), GCN_OK, "%s",
                 gcn_last_error(ctx));
    cr_assert_eq(gcn_graph_folds_read(ctx, path, ds, &k, back), GCN_OK, "%s",
                 gcn_last_error(ctx));
    cr_assert_eq(k, 5);
    cr_assert_arr_eq(fold, back, sizeof fold);
    /* The text another framework reads: comments, then fold 0's ids ascending. */
    FILE *text = fopen(path, "r");
    cr_assert(text);
    char line[1024];
    while (fgets(line, sizeof line, text) && line[0] == '#')
        ;
    fclose(text);
    int prev = -1, n = 0;
    for (char *p = strtok(line, " \n"); p; p = strtok(NULL, " \n"), n++) {
        int g = atoi(p);
        cr_assert_gt(g, prev, "ascending");
        cr_assert_eq(fold[g], 0);
        prev = g;
    }
    cr_assert_eq(n, 10);
    expect_bad_folds(ctx, ds, dir, "# x\n0 1\n1 2\n", GCN_ERR_FORMAT,
                     "bad-folds.txt:3: graph 1 is in fold 0 and fold 1");
    expect_bad_folds(ctx, ds, dir, "0 1\n2 50\n", GCN_ERR_FORMAT,
                     "bad-folds.txt:2: column 2: graph id 50 out of range [0, 49]");
    expect_bad_folds(ctx, ds, dir, "0 1\n2 x\n", GCN_ERR_FORMAT, "is not an integer");
    expect_bad_folds(ctx, ds, dir, "0 1\n\n2 3\n", GCN_ERR_FORMAT, "graph 4 is in no fold");
    expect_bad_folds(ctx, ds, dir, "# only comments\n", GCN_ERR_FORMAT,
                     "0 folds, expected at least 2");
    expect_bad_folds(ctx, ds, dir, "", GCN_ERR_FORMAT, "bad-folds.txt: 0 folds");
    cr_assert_eq(gcn_graph_folds_read(ctx, ds_path(dir, "none.txt"), ds, &k, back),
                 GCN_ERR_IO);
    fold[7] = 5;
    cr_assert_eq(gcn_graph_folds_write(ctx, path, ds, 5, fold), GCN_ERR_INVALID_ARG);
    for (int32_t g = 0; g < 50; g++)
        fold[g] = g % 2;
    cr_assert_eq(gcn_graph_folds_write(ctx, path, ds, 3, fold), GCN_ERR_INVALID_ARG,
                 "fold 2 is empty");
    cr_assert_eq(gcn_graph_folds_read(ctx, path, ds, &k, back), GCN_OK, "the old file stays");
    cr_assert_eq(k, 5);
    ds_fixture_close(&f);
}
