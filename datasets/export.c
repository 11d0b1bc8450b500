/* NumPy .npy export of a dataset or of one CSR matrix (format version 1.0:
 * magic, header length, a Python dict literal padded to 64 bytes, then the
 * array in C order). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export.h"
#include "internal.h"

typedef struct npy_array {
    const char *name;  /* file name inside the folder */
    const char *descr; /* "<f4" or "<i8" */
    int64_t rows, cols; /* cols 0: one-dimensional */
} npy_array;

/* Writes the header; the caller appends rows * max(cols, 1) items. */
static bool write_header(FILE *f, const npy_array *a)
{
    char dict[160], shape[64];
    if (a->cols)
        snprintf(shape, sizeof shape, "(%lld, %lld)", (long long)a->rows, (long long)a->cols);
    else
        snprintf(shape, sizeof shape, "(%lld,)", (long long)a->rows);
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                       a->descr, shape);
    int total = (10 + len + 1 + 63) / 64 * 64; /* magic 6 + version 2 + length 2 */
    uint16_t hlen = (uint16_t)(total - 10);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)len, f) == (size_t)len;
    for (int i = 10 + len; ok && i < total - 1; i++)
        ok = fputc(' ', f) != EOF;
    return ok && fputc('\n', f) != EOF;
}

/* Opens dir/name.tmp for writing; finish() renames it into place. */
static gcn_status start(gcn_ctx *ctx, const char *dir, const npy_array *a, FILE **f, char *tmp,
                        size_t size)
{
    if ((size_t)snprintf(tmp, size, "%s/%s.tmp", dir, a->name) >= size)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "export: path %s/%s is too long", dir, a->name);
    *f = fopen(tmp, "wb");
    if (!*f)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot write: %s", tmp, strerror(errno));
    if (!write_header(*f, a)) {
        fclose(*f);
        unlink(tmp);
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: write failed", tmp);
    }
    return GCN_OK;
}

static gcn_status finish(gcn_ctx *ctx, FILE *f, const char *tmp, bool ok)
{
    ok = !ferror(f) && ok;
    ok = fclose(f) == 0 && ok;
    char final[4096];
    snprintf(final, sizeof final, "%.*s", (int)(strlen(tmp) - 4), tmp);
    if (ok && rename(tmp, final) == 0)
        return GCN_OK;
    unlink(tmp);
    return GCN_ERROR(ctx, GCN_ERR_IO, "%s: write failed", final);
}

static gcn_status write_ids(gcn_ctx *ctx, const char *dir, const char *name, const int32_t *ids,
                            int64_t n)
{
    npy_array a = {name, "<i8", n, 0};
    FILE *f;
    char tmp[4096];
    GCN_TRY(start(ctx, dir, &a, &f, tmp, sizeof tmp));
    bool ok = true;
    for (int64_t i = 0; i < n && ok; i++) {
        int64_t v = ids[i];
        ok = fwrite(&v, sizeof v, 1, f) == 1;
    }
    return finish(ctx, f, tmp, ok);
}

static gcn_status write_edges(gcn_ctx *ctx, const char *dir, const gcn_graph *g)
{
    npy_array a = {"edge_index.npy", "<i8", 2, g->nnz};
    FILE *f;
    char tmp[4096];
    GCN_TRY(start(ctx, dir, &a, &f, tmp, sizeof tmp));
    bool ok = true;
    for (int32_t i = 0; i < g->n_nodes && ok; i++)
        for (int32_t e = g->row_ptr[i]; e < g->row_ptr[i + 1] && ok; e++) {
            int64_t v = i;
            ok = fwrite(&v, sizeof v, 1, f) == 1;
        }
    for (int32_t e = 0; e < g->nnz && ok; e++) {
        int64_t v = g->col_idx[e];
        ok = fwrite(&v, sizeof v, 1, f) == 1;
    }
    return finish(ctx, f, tmp, ok);
}

/* The graph's values, or ones when it stores none. */
static gcn_status write_values(gcn_ctx *ctx, const char *dir, const gcn_graph *g)
{
    npy_array a = {"values.npy", "<f4", g->nnz, 0};
    FILE *f;
    char tmp[4096];
    GCN_TRY(start(ctx, dir, &a, &f, tmp, sizeof tmp));
    size_t n = (size_t)g->nnz;
    bool ok = true;
    if (g->values)
        ok = fwrite(g->values, sizeof(float), n, f) == n;
    for (size_t e = 0; !g->values && e < n && ok; e++) {
        float one = 1.0f;
        ok = fwrite(&one, sizeof one, 1, f) == 1;
    }
    return finish(ctx, f, tmp, ok);
}

static gcn_status make_dir(gcn_ctx *ctx, const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot create: %s", dir, strerror(errno));
    return GCN_OK;
}

gcn_status gcn_graph_export_npy(gcn_ctx *ctx, const gcn_graph *g, const char *dir)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, g && dir);
    GCN_TRY(make_dir(ctx, dir));
    const int32_t shape[2] = {g->n_nodes, g->n_nodes};
    GCN_TRY(write_ids(ctx, dir, "shape.npy", shape, 2));
    GCN_TRY(write_ids(ctx, dir, "row_ptr.npy", g->row_ptr, (int64_t)g->n_nodes + 1));
    GCN_TRY(write_ids(ctx, dir, "col_idx.npy", g->col_idx, g->nnz));
    return write_values(ctx, dir, g);
}

static gcn_status export_dataset(gcn_ctx *ctx, const gcn_dataset *ds, const char *dir)
{
    GCN_TRY(make_dir(ctx, dir));
    if (ds->features) {
        npy_array a = {"x.npy", "<f4", ds->n_nodes, ds->n_features};
        FILE *f;
        char tmp[4096];
        GCN_TRY(start(ctx, dir, &a, &f, tmp, sizeof tmp));
        size_t n = (size_t)ds->n_nodes * (size_t)ds->n_features;
        GCN_TRY(finish(ctx, f, tmp, fwrite(ds->features, sizeof(float), n, f) == n));
    }
    GCN_TRY(write_edges(ctx, dir, ds->graph));
    if (ds->labels)
        GCN_TRY(write_ids(ctx, dir, "y.npy", ds->labels, ds->n_nodes));
    GCN_TRY(write_ids(ctx, dir, "train_idx.npy", ds->train, ds->n_train));
    GCN_TRY(write_ids(ctx, dir, "valid_idx.npy", ds->valid, ds->n_valid));
    return write_ids(ctx, dir, "test_idx.npy", ds->test, ds->n_test);
}

/* A reordered dataset is written from a copy in its original node ids, so
 * the files equal those of the dataset as loaded. */
gcn_status gcn_dataset_export_npy(gcn_ctx *ctx, const gcn_dataset *ds, const char *dir)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, ds && ds->graph && dir);
    if (!ds->reorder)
        return export_dataset(ctx, ds, dir);
    gcn_dataset original;
    GCN_TRY(gcn_ds_original(ctx, ds, &original));
    gcn_status st = export_dataset(ctx, &original, dir);
    gcn_ds_clear(&original);
    return st;
}
