/* Graph-level training on the GPU against the CPU reference: gather_rows
 * bit for bit, and the same epochs (batches drawn from the same streams) on
 * both backends, with the batches' products on the plan-free kernel and
 * the evaluation batch's on the selector. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_helpers.h"
#include "gpu_helpers.h"
#include "helpers.h"

Test(gpu_graph_models, gather_rows_bit_identical)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(1, false);
    uint64_t s = 9;
    enum { ROWS = 300, COLS = 37, N = 1000 };
    float *x = host_random(&s, ROWS * COLS, -1, 1);
    int32_t rows[N];
    for (int i = 0; i < N; i++)
        rows[i] = (int32_t)((i * 7919u) % ROWS);
    float *out[2];
    gcn_ctx *ctx[2] = {p.cpu, p.gpu};
    for (int k = 0; k < 2; k++) {
        gcn_tensor *t = NULL, *y = NULL;
        gcn_index *idx = NULL;
        cr_assert_eq(gcn_tensor_from_host(ctx[k], &t, x, ROWS, COLS), GCN_OK);
        cr_assert_eq(gcn_index_from_host(ctx[k], &idx, rows, N), GCN_OK);
        cr_assert_eq(gcn_gather_rows(ctx[k], t, idx, &y), GCN_OK, "%s", gcn_last_error(ctx[k]));
        out[k] = host_floats(N * COLS);
        cr_assert_eq(gcn_tensor_to_host(ctx[k], y, out[k]), GCN_OK);
        gcn_tensor_free(&y);
        gcn_index_free(&idx);
        gcn_tensor_free(&t);
    }
    expect_close(out[1], out[0], N * COLS, 0.0, "gather_rows");
    free(out[0]);
    free(out[1]);
    free(x);
    gpu_pair_close(&p);
}

/* Epochs of the small GIN graph model on the shapes collection (fold 0 of
 * 4, errica's split); each epoch's loss and validation accuracy, and the
 * selector's call sites on the evaluation batch's matrix. */
static void train(gcn_ctx *ctx, const char *dir, int epochs, float *loss, double *valid,
                  int *sites)
{
    gcn_dataset *ds = ds_load_shapes_fold(ctx, dir, 4, 0, 0, true, NULL);
    gcn_trainer *tr = ds_train_graphs(
        ctx,
        "{\"layers\": [{\"type\": \"gin\", \"out\": 32, \"norm\": \"batch\", \"activation\": "
        "\"relu\"}, {\"type\": \"gin\", \"out\": 32, \"norm\": \"batch\", \"activation\": "
        "\"relu\"}], \"readout\": {\"jk\": true, \"dropout\": 0.5}, \"batch_size\": 8}",
        ds, 4, epochs, loss, valid, NULL);
    *sites = gcn_spmm_sites(gcn_trainer_adjacency(tr, GCN_ADJ_RAW), NULL, 0);
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
}

Test(gpu_graph_models, epochs_match_the_cpu, .timeout = 120)
{
    GPU_REQUIRED();
    char *dir = ds_tmpdir();
    ds_write_tu_shapes(dir, 48);
    gpu_pair p = gpu_pair_open(1, false);
    enum { EPOCHS = 12 };
    float loss[2][EPOCHS];
    double valid[2][EPOCHS];
    int sites[2];
    train(p.cpu, dir, EPOCHS, loss[0], valid[0], &sites[0]);
    train(p.gpu, dir, EPOCHS, loss[1], valid[1], &sites[1]);
    for (int e = 0; e < 3; e++) /* float rounding grows as the models drift apart */
        cr_assert_float_eq(loss[1][e], loss[0][e], 1e-3f * loss[0][e], "epoch %d: gpu %g cpu %g",
                           e + 1, (double)loss[1][e], (double)loss[0][e]);
    cr_assert_lt(loss[1][EPOCHS - 1], loss[1][0], "the GPU model learns");
    cr_assert_geq(valid[1][EPOCHS - 1], 0.9, "cycles and stars: valid %g", valid[1][EPOCHS - 1]);
    cr_assert_gt(sites[1], 0, "the evaluation batch's products go through the selector");
    gpu_pair_close(&p);
    ds_rmtree(dir);
    free(dir);
}
