/* NumPy export of a dataset and of a CSR matrix: headers a NumPy reader
 * accepts, and the data read back equal to what was written. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

/* Reads an .npy file: checks magic and 64-byte alignment, returns the
 * header text and the payload. */
static char *read_npy(const char *dir, const char *name, char *header, size_t hsize, size_t *bytes)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s missing", path);
    unsigned char pre[10];
    cr_assert_eq(fread(pre, 1, 10, f), 10);
    cr_assert(!memcmp(pre, "\x93NUMPY\x01\x00", 8));
    size_t hl = pre[8] | (size_t)pre[9] << 8;
    cr_assert_eq((10 + hl) % 64, 0);
    cr_assert_lt(hl, hsize);
    cr_assert_eq(fread(header, 1, hl, f), hl);
    header[hl] = '\0';
    fseek(f, 0, SEEK_END);
    *bytes = (size_t)ftell(f) - 10 - hl;
    char *data = malloc(*bytes + 1);
    fseek(f, (long)(10 + hl), SEEK_SET);
    cr_assert_eq(fread(data, 1, *bytes, f), *bytes);
    fclose(f);
    unlink(path);
    return data;
}

Test(export, npy_round_trip)
{
    gcn_ctx *ctx = test_cpu_ctx(4);
    gcn_sbm_opts o = gcn_sbm_default_opts();
    o.n_nodes = 120;
    o.n_features = 5;
    o.n_classes = 3;
    o.n_valid = 20;
    o.n_test = 30;
    gcn_dataset *ds = NULL;
    cr_assert_eq(gcn_dataset_sbm(ctx, &ds, &o), GCN_OK);
    char dir[] = "/tmp/gcn-npy-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(gcn_dataset_export_npy(ctx, ds, dir), GCN_OK, "%s", gcn_last_error(ctx));
    char h[256], want[128];
    size_t bytes;
    float *x = (float *)read_npy(dir, "x.npy", h, sizeof h, &bytes);
    snprintf(want, sizeof want, "'descr': '<f4', 'fortran_order': False, 'shape': (120, 5)");
    cr_assert(strstr(h, want), "%s", h);
    cr_assert_eq(bytes, 120 * 5 * sizeof(float));
    cr_assert_arr_eq(x, ds->features, bytes);
    int64_t *e = (int64_t *)read_npy(dir, "edge_index.npy", h, sizeof h, &bytes);
    snprintf(want, sizeof want, "'shape': (2, %d)", ds->graph->nnz);
    cr_assert(strstr(h, want), "%s", h);
    for (int32_t i = 0, k = 0; i < ds->n_nodes; i++)
        for (int32_t p = ds->graph->row_ptr[i]; p < ds->graph->row_ptr[i + 1]; p++, k++) {
            cr_assert_eq(e[k], i);
            cr_assert_eq(e[ds->graph->nnz + k], ds->graph->col_idx[p]);
        }
    const char *lists[4] = {"y.npy", "train_idx.npy", "valid_idx.npy", "test_idx.npy"};
    const int32_t *src[4] = {ds->labels, ds->train, ds->valid, ds->test};
    int32_t len[4] = {ds->n_nodes, ds->n_train, ds->n_valid, ds->n_test};
    for (int l = 0; l < 4; l++) {
        int64_t *v = (int64_t *)read_npy(dir, lists[l], h, sizeof h, &bytes);
        cr_assert_eq(bytes, (size_t)len[l] * 8);
        for (int32_t i = 0; i < len[l]; i++)
            cr_assert_eq(v[i], src[l][i]);
        free(v);
    }
    free(x);
    free(e);
    rmdir(dir);
    cr_assert_eq(gcn_dataset_export_npy(ctx, ds, "/proc/no/such/dir"), GCN_ERR_IO);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

/* The CSR matrix export: shape, row_ptr and col_idx as int64, values as
 * float32 (ones for a graph without values), equal to the graph's. */
static void check_csr_export(gcn_ctx *ctx, const gcn_graph *g)
{
    char dir[] = "/tmp/gcn-csr-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(gcn_graph_export_npy(ctx, g, dir), GCN_OK, "%s", gcn_last_error(ctx));
    char h[256], want[128];
    size_t bytes;
    int64_t *shape = (int64_t *)read_npy(dir, "shape.npy", h, sizeof h, &bytes);
    cr_assert(strstr(h, "'descr': '<i8', 'fortran_order': False, 'shape': (2,)"), "%s", h);
    cr_assert_eq(bytes, 2 * sizeof(int64_t));
    cr_assert(shape[0] == g->n_nodes && shape[1] == g->n_nodes);
    int64_t *row_ptr = (int64_t *)read_npy(dir, "row_ptr.npy", h, sizeof h, &bytes);
    snprintf(want, sizeof want, "'descr': '<i8', 'fortran_order': False, 'shape': (%d,)",
             g->n_nodes + 1);
    cr_assert(strstr(h, want), "%s", h);
    cr_assert_eq(bytes, (size_t)(g->n_nodes + 1) * sizeof(int64_t));
    for (int32_t i = 0; i <= g->n_nodes; i++)
        cr_assert_eq(row_ptr[i], g->row_ptr[i]);
    int64_t *col_idx = (int64_t *)read_npy(dir, "col_idx.npy", h, sizeof h, &bytes);
    snprintf(want, sizeof want, "'descr': '<i8', 'fortran_order': False, 'shape': (%d,)",
             g->nnz);
    cr_assert(strstr(h, want), "%s", h);
    cr_assert_eq(bytes, (size_t)g->nnz * sizeof(int64_t));
    float *values = (float *)read_npy(dir, "values.npy", h, sizeof h, &bytes);
    snprintf(want, sizeof want, "'descr': '<f4', 'fortran_order': False, 'shape': (%d,)",
             g->nnz);
    cr_assert(strstr(h, want), "%s", h);
    cr_assert_eq(bytes, (size_t)g->nnz * sizeof(float));
    for (int32_t e = 0; e < g->nnz; e++) {
        cr_assert_eq(col_idx[e], g->col_idx[e]);
        cr_assert_eq(values[e], g->values ? g->values[e] : 1.0f);
    }
    free(shape);
    free(row_ptr);
    free(col_idx);
    free(values);
    cr_assert_eq(rmdir(dir), 0, "files left in %s", dir);
}

Test(export, csr_round_trip)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_sbm_opts o = gcn_sbm_default_opts();
    o.n_nodes = 150;
    o.n_features = 4;
    o.n_classes = 3;
    gcn_dataset *ds = NULL;
    gcn_graph *norm = NULL;
    cr_assert_eq(gcn_dataset_sbm(ctx, &ds, &o), GCN_OK);
    cr_assert_null(ds->graph->values);
    check_csr_export(ctx, ds->graph);
    cr_assert_eq(gcn_graph_gcn_norm(ctx, ds->graph, &norm), GCN_OK);
    cr_assert_not_null(norm->values);
    check_csr_export(ctx, norm);
    cr_assert_eq(gcn_graph_export_npy(ctx, norm, "/proc/no/such/dir"), GCN_ERR_IO);
    cr_assert_eq(gcn_graph_export_npy(ctx, NULL, "/tmp"), GCN_ERR_INVALID_ARG);
    gcn_graph_free(&norm);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}
