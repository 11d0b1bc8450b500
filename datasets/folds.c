/* Stratified k-fold splits of a graph collection, drawn from a seed, and
 * the text file that carries them to another framework. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/philox.h"
#include "internal.h"

/* The random key that orders graph g: word g of Philox4x32-10 keyed by
 * seed, on stream GCN_RNG_SPLIT, counting from 0.  These are the first
 * words a context seeded with seed would draw on that stream. */
static uint32_t fold_key(uint64_t seed, int32_t g)
{
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    return gcn_philox_word(key, GCN_RNG_SPLIT, 0, (uint64_t)g);
}

static gcn_status check_collection(gcn_ctx *ctx, const gcn_dataset *ds)
{
    if (ds->n_graphs == 0 || !ds->graph_labels)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "%s: not a labelled collection of graphs", ds->name);
    return GCN_OK;
}

gcn_status gcn_graph_folds(gcn_ctx *ctx, const gcn_dataset *ds, int32_t k, uint64_t seed,
                           int32_t *fold)
{
    GCN_ARG(ctx, ds && fold);
    GCN_TRY(check_collection(ctx, ds));
    int32_t n = ds->n_graphs, n_classes = ds->n_graph_classes;
    if (k < 2 || k > n)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s: %d folds: expected 2 to %d (the graphs)",
                         ds->name, k, n);
    int32_t *ids = NULL, *start = NULL;
    uint64_t *key = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&ids, (size_t)n, sizeof *ids));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&key, (size_t)n, sizeof *key));
    GCN_CHECK(gcn_ds_calloc(ctx, (void **)&start, (size_t)n_classes + 1, sizeof *start));
    /* Graphs by class (counting sort), each class in the order its keys
     * give, then dealt in turn. */
    for (int32_t g = 0; g < n; g++)
        start[ds->graph_labels[g] + 1]++;
    for (int32_t c = 0; c < n_classes; c++)
        start[c + 1] += start[c];
    for (int32_t g = 0; g < n; g++) {
        int32_t at = start[ds->graph_labels[g]]++;
        ids[at] = g;
        key[at] = fold_key(seed, g);
    }
    for (int32_t c = 0; c < n_classes; c++) { /* class c now ends at start[c] */
        int32_t first = c ? start[c - 1] : 0;
        gcn_ds_sort_by_key(ids + first, key + first, start[c] - first);
    }
    for (int32_t j = 0; j < n; j++)
        fold[ids[j]] = j % k;
cleanup:
    free(ids);
    free(key);
    free(start);
    return st;
}

gcn_status gcn_graph_folds_write(gcn_ctx *ctx, const char *path, const gcn_dataset *ds,
                                 int32_t k, const int32_t *fold)
{
    GCN_ARG(ctx, path && ds && fold && k >= 2);
    GCN_TRY(check_collection(ctx, ds));
    int32_t n = ds->n_graphs, *size = NULL;
    char *text = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_ds_calloc(ctx, (void **)&size, (size_t)k, sizeof *size));
    for (int32_t g = 0; g < n; g++) {
        if (fold[g] < 0 || fold[g] >= k) {
            st = GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "graph %d: fold %d out of range [0, %d)", g,
                           fold[g], k);
            goto cleanup;
        }
        size[fold[g]]++;
    }
    for (int32_t f = 0; f < k; f++)
        if (size[f] == 0) {
            st = GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "fold %d of %d is empty", f, k);
            goto cleanup;
        }
    size_t cap = (size_t)n * 12 + (size_t)k + 512, len = 0;
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&text, cap, 1));
    len += (size_t)snprintf(text, cap,
                            "# gcn graph folds: %.64s, %d graphs, %d folds\n"
                            "# one line per fold, fold 0 first: its 0-based graph ids (TU graph "
                            "id - 1), ascending\n",
                            ds->name, n, k);
    for (int32_t f = 0; f < k; f++) {
        const char *sep = "";
        for (int32_t g = 0; g < n; g++)
            if (fold[g] == f) {
                len += (size_t)snprintf(text + len, cap - len, "%s%d", sep, g);
                sep = " ";
            }
        text[len++] = '\n';
    }
    gcn_section s = {text, len};
    GCN_CHECK(gcn_file_write_atomic(ctx, path, &s, 1));
cleanup:
    free(size);
    free(text);
    return st;
}

/* Reading: each record is a fold; fold[g] -1 until graph g is seen. */
typedef struct fold_file {
    int32_t n_graphs, k;
    int32_t *fold;
} fold_file;

static gcn_status fold_record(gcn_reader *r, char **f, void *user)
{
    fold_file *ff = user;
    if (!f) {
        if (ff->k < 2)
            return gcn_reader_fail(r, GCN_ERR_FORMAT, "%d folds, expected at least 2", ff->k);
        for (int32_t g = 0; g < ff->n_graphs; g++)
            if (ff->fold[g] < 0)
                return gcn_reader_fail(r, GCN_ERR_FORMAT, "graph %d is in no fold", g);
        return GCN_OK;
    }
    for (int col = 0; col < r->n_fields; col++) {
        int64_t g;
        GCN_TRY(gcn_reader_int(r, f[col], col + 1, 0, ff->n_graphs - 1, "graph id", &g));
        if (ff->fold[g] >= 0)
            return gcn_reader_fail(r, GCN_ERR_FORMAT, "graph %lld is in fold %d and fold %d",
                                   (long long)g, ff->fold[g], ff->k);
        ff->fold[g] = ff->k;
    }
    ff->k++;
    return GCN_OK;
}

gcn_status gcn_graph_folds_read(gcn_ctx *ctx, const char *path, const gcn_dataset *ds,
                                int32_t *k, int32_t *fold)
{
    GCN_ARG(ctx, path && ds && k && fold);
    GCN_TRY(check_collection(ctx, ds));
    fold_file ff = {ds->n_graphs, 0, NULL};
    GCN_TRY(gcn_ds_malloc(ctx, (void **)&ff.fold, (size_t)ds->n_graphs, sizeof *ff.fold));
    for (int32_t g = 0; g < ds->n_graphs; g++)
        ff.fold[g] = -1;
    const gcn_record_fmt fmt = {.min_fields = 1, .max_fields = ds->n_graphs, .comments = "#"};
    gcn_status st = gcn_read_records(ctx, path, &fmt, fold_record, &ff);
    if (st == GCN_OK) {
        memcpy(fold, ff.fold, (size_t)ds->n_graphs * sizeof *fold);
        *k = ff.k;
    }
    free(ff.fold);
    return st;
}

gcn_status gcn_graph_fold_split(gcn_ctx *ctx, gcn_dataset *ds, const int32_t *fold, int32_t k,
                                int32_t outer, bool inner_valid)
{
    GCN_ARG(ctx, ds && fold && k >= 2 && outer >= 0 && outer < k && (!inner_valid || k >= 3));
    GCN_TRY(check_collection(ctx, ds));
    int32_t n = ds->n_graphs, inner = inner_valid ? (outer + 1) % k : -1;
    int32_t *list[3] = {NULL, NULL, NULL}, count[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++)
        GCN_TRY(gcn_ds_malloc(ctx, (void **)&list[i], (size_t)n, sizeof(int32_t)));
    for (int32_t g = 0; g < n; g++) {
        if (fold[g] < 0 || fold[g] >= k) {
            for (int i = 0; i < 3; i++)
                free(list[i]);
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "graph %d: fold %d out of range [0, %d)",
                             g, fold[g], k);
        }
        int which = fold[g] == outer ? 2 : fold[g] == inner ? 1 : 0;
        list[which][count[which]++] = g;
    }
    free(ds->train);
    free(ds->valid);
    free(ds->test);
    ds->train = list[0];
    ds->valid = count[1] ? list[1] : NULL;
    ds->test = list[2];
    if (!count[1])
        free(list[1]);
    ds->n_train = count[0];
    ds->n_valid = count[1];
    ds->n_test = count[2];
    ds->split_drawn = true;
    return GCN_OK;
}
