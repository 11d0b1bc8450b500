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

/* Opens dir/name (dir is the temporary folder) and writes the header. */
static gcn_status start(gcn_ctx *ctx, const char *dir, const npy_array *a, FILE **f, char *path,
                        size_t size)
{
    if ((size_t)snprintf(path, size, "%s/%s", dir, a->name) >= size)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "export: path %s/%s is too long", dir, a->name);
    *f = fopen(path, "wb");
    if (!*f)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    if (!write_header(*f, a)) {
        fclose(*f);
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: write failed", path);
    }
    return GCN_OK;
}

static gcn_status finish(gcn_ctx *ctx, FILE *f, const char *path, bool ok)
{
    ok = !ferror(f) && ok;
    ok = fclose(f) == 0 && ok;
    return ok ? GCN_OK : GCN_ERROR(ctx, GCN_ERR_IO, "%s: write failed", path);
}

static gcn_status write_ids(gcn_ctx *ctx, const char *dir, const char *name, const int32_t *ids,
                            int64_t n)
{
    npy_array a = {name, "<i8", n, 0};
    FILE *f;
    char path[4096];
    GCN_TRY(start(ctx, dir, &a, &f, path, sizeof path));
    bool ok = true;
    for (int64_t i = 0; i < n && ok; i++) {
        int64_t v = ids[i];
        ok = fwrite(&v, sizeof v, 1, f) == 1;
    }
    return finish(ctx, f, path, ok);
}

static gcn_status write_edges(gcn_ctx *ctx, const char *dir, const gcn_graph *g)
{
    npy_array a = {"edge_index.npy", "<i8", 2, g->nnz};
    FILE *f;
    char path[4096];
    GCN_TRY(start(ctx, dir, &a, &f, path, sizeof path));
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
    return finish(ctx, f, path, ok);
}

/* The graph's values, or ones when it stores none. */
static gcn_status write_values(gcn_ctx *ctx, const char *dir, const gcn_graph *g)
{
    npy_array a = {"values.npy", "<f4", g->nnz, 0};
    FILE *f;
    char path[4096];
    GCN_TRY(start(ctx, dir, &a, &f, path, sizeof path));
    size_t n = (size_t)g->nnz;
    bool ok = true;
    if (g->values)
        ok = fwrite(g->values, sizeof(float), n, f) == n;
    for (size_t e = 0; !g->values && e < n && ok; e++) {
        float one = 1.0f;
        ok = fwrite(&one, sizeof one, 1, f) == 1;
    }
    return finish(ctx, f, path, ok);
}

/* The files each export may write: a folder that already holds an
 * earlier export loses those this one does not write. */
static const char *const dataset_files[] = {"x.npy", "edge_index.npy", "y.npy",
                                            "train_idx.npy", "valid_idx.npy", "test_idx.npy",
                                            NULL};
static const char *const graph_files[] = {"shape.npy", "row_ptr.npy", "col_idx.npy",
                                          "values.npy", NULL};

/* Removes the export's files from the temporary folder, then the folder. */
static void remove_tmp(const char *tmp, const char *const *files)
{
    char path[4200];
    for (int k = 0; files[k]; k++) {
        snprintf(path, sizeof path, "%s/%s", tmp, files[k]);
        unlink(path);
    }
    rmdir(tmp);
}

/* Puts the finished temporary folder in place: renamed to dir when there
 * is none, else each file renamed into dir (and the export's files it
 * lacks removed there). */
static gcn_status put_in_place(gcn_ctx *ctx, const char *tmp, const char *dir,
                               const char *const *files)
{
    if (rename(tmp, dir) == 0)
        return GCN_OK;
    if (!gcn_path_is_dir(dir))
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot create: %s", dir, strerror(errno));
    char from[4200], to[4200];
    for (int k = 0; files[k]; k++) {
        snprintf(from, sizeof from, "%s/%s", tmp, files[k]);
        snprintf(to, sizeof to, "%s/%s", dir, files[k]);
        if (!gcn_path_is_file(from))
            unlink(to);
        else if (rename(from, to) != 0)
            return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot write: %s", to, strerror(errno));
    }
    rmdir(tmp);
    return GCN_OK;
}

/* Writes an export through a new folder beside dir ("dir.tmp.XXXXXX"), so
 * that a failure leaves nothing behind and dir only ever holds a whole
 * export. */
static gcn_status export_through_tmp(gcn_ctx *ctx, const char *dir, const char *const *files,
                                     gcn_status (*write)(gcn_ctx *, const char *, const void *),
                                     const void *what)
{
    char tmp[4096];
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    if (len == 0 || (size_t)snprintf(tmp, sizeof tmp, "%.*s.tmp.XXXXXX", (int)len, dir) >=
                        sizeof tmp - 32)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "export: bad folder '%s'", dir);
    gcn_ctx_temp(ctx, true);
    gcn_status st = GCN_OK;
    if (!mkdtemp(tmp) || chmod(tmp, 0755) != 0)
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    if (st == GCN_OK)
        st = write(ctx, tmp, what);
    if (st == GCN_OK)
        st = put_in_place(ctx, tmp, dir, files);
    if (st != GCN_OK)
        remove_tmp(tmp, files);
    gcn_ctx_temp(ctx, false);
    return st;
}

static gcn_status write_graph(gcn_ctx *ctx, const char *dir, const void *what)
{
    const gcn_graph *g = what;
    const int32_t shape[2] = {g->n_nodes, g->n_nodes};
    GCN_TRY(write_ids(ctx, dir, "shape.npy", shape, 2));
    GCN_TRY(write_ids(ctx, dir, "row_ptr.npy", g->row_ptr, (int64_t)g->n_nodes + 1));
    GCN_TRY(write_ids(ctx, dir, "col_idx.npy", g->col_idx, g->nnz));
    return write_values(ctx, dir, g);
}

gcn_status gcn_graph_export_npy(gcn_ctx *ctx, const gcn_graph *g, const char *dir)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, g && dir);
    return export_through_tmp(ctx, dir, graph_files, write_graph, g);
}

static gcn_status write_dataset(gcn_ctx *ctx, const char *dir, const void *what)
{
    const gcn_dataset *ds = what;
    if (ds->features) {
        npy_array a = {"x.npy", "<f4", ds->n_nodes, ds->n_features};
        FILE *f;
        char path[4096];
        GCN_TRY(start(ctx, dir, &a, &f, path, sizeof path));
        size_t n = (size_t)ds->n_nodes * (size_t)ds->n_features;
        GCN_TRY(finish(ctx, f, path, fwrite(ds->features, sizeof(float), n, f) == n));
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
        return export_through_tmp(ctx, dir, dataset_files, write_dataset, ds);
    gcn_dataset original;
    GCN_TRY(gcn_ds_original(ctx, ds, &original));
    gcn_status st = export_through_tmp(ctx, dir, dataset_files, write_dataset, &original);
    gcn_ds_clear(&original);
    return st;
}
