/* gcn_sparse_dropout_matmul on the GPU against the CPU backend (the same
 * masks; sums that round differently only where the GPU splits a long row),
 * and a model on bag-of-words features trained on both. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "gpu_helpers.h"
#include "helpers.h"
#include "sbm_train.h"

enum { ROWS = 301, COLS = 417 };

/* y = dropout(x) w and dw under test_weigh's loss on one context. */
static void run(gcn_ctx *ctx, const int32_t *ids, const int32_t *row_ptr, const int32_t *col,
                const float *val, int32_t nnz, const float *wh, int64_t n, float p, float **y,
                float **dw)
{
    cr_assert_eq(gcn_ctx_set_node_ids(ctx, ids, ROWS, ROWS), GCN_OK);
    gcn_csr *xs = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &xs, ROWS, COLS, nnz, row_ptr, col, val), GCN_OK);
    gcn_tensor *w = test_tensor(ctx, wh, COLS, n), *out = NULL, *loss = NULL;
    cr_assert_eq(gcn_tensor_set_requires_grad(w, true), GCN_OK);
    cr_assert_eq(gcn_sparse_dropout_matmul(ctx, xs, p, true, w, &out), GCN_OK, "%s",
                 gcn_last_error(ctx));
    cr_assert_eq(test_weigh(ctx, out, &loss), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, loss), GCN_OK, "%s", gcn_last_error(ctx));
    *y = test_read(ctx, out);
    *dw = test_read(ctx, gcn_tensor_grad(w));
    gcn_tensor_free(&w);
    gcn_tensor_free(&out);
    gcn_tensor_free(&loss);
    gcn_csr_free(&xs);
    cr_assert_eq(gcn_ctx_set_node_ids(ctx, NULL, 0, 0), GCN_OK);
}

/* Widths across the kernel's passes of 128 columns, rows from empty to one
 * of every column (split over 14 of the kernel's stretches of entries, and
 * the transpose's columns over several), node ids permuted.  Rows within
 * one stretch agree bit for bit. */
Test(gpu_sparse_input, product_matches_cpu, .timeout = 120)
{
    GPU_REQUIRED();
    uint64_t state = 9;
    float *u = host_random(&state, (int64_t)ROWS * COLS, 0.0f, 1.0f);
    int32_t *row_ptr = malloc((ROWS + 1) * sizeof *row_ptr);
    int32_t *col = malloc((size_t)ROWS * COLS * sizeof *col), ids[ROWS];
    float *val = host_floats((int64_t)ROWS * COLS);
    int32_t nnz = 0;
    row_ptr[0] = 0;
    for (int32_t i = 0; i < ROWS; i++) {
        ids[i] = (int32_t)(((int64_t)i * 37 + 11) % ROWS);
        for (int32_t j = 0; j < COLS; j++)
            if (i == 7 || (i % 50 != 3 && u[(int64_t)i * COLS + j] < 0.05f)) {
                col[nnz] = j;
                val[nnz++] = u[(int64_t)i * COLS + j] * 20.0f - 0.5f;
            }
        row_ptr[i + 1] = nnz;
    }
    const int64_t widths[] = {1, 16, 40, 128, 257};
    for (size_t k = 0; k < sizeof widths / sizeof *widths; k++) {
        int64_t n = widths[k];
        float *wh = host_random(&state, COLS * n, -1.0f, 1.0f);
        gpu_pair pr = gpu_pair_open(31, false);
        float *yc, *dwc, *yg, *dwg;
        run(pr.cpu, ids, row_ptr, col, val, nnz, wh, n, 0.5f, &yc, &dwc);
        run(pr.gpu, ids, row_ptr, col, val, nnz, wh, n, 0.5f, &yg, &dwg);
        expect_close(yg, yc, ROWS * n, 1e-6, "forward");
        expect_close(dwg, dwc, COLS * n, 1e-6, "dw");
        expect_same(yg, yc, n, "row 0 (within one stretch)");
        free(wh);
        free(yc);
        free(dwc);
        free(yg);
        free(dwg);
        gpu_pair_close(&pr);
    }
    free(u);
    free(row_ptr);
    free(col);
    free(val);
}

/* Bag-of-words features taken sparse on both backends: the GPU's losses
 * follow the CPU's over 20 epochs, the later ones replayed as a CUDA
 * graph. */
Test(gpu_sparse_input, training_matches_cpu, .timeout = 120)
{
    GPU_REQUIRED();
    gcn_model_config cfg;
    char err[256];
    const char *json = "{\"layers\": [{\"type\": \"gcn\", \"out\": 16, \"activation\": \"relu\", "
                       "\"dropout\": 0.5}, {\"type\": \"gcn\", \"out\": \"classes\", \"dropout\": "
                       "0.5}], \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}";
    cr_assert_eq(gcn_model_config_parse(&cfg, json, "test", err, sizeof err), GCN_OK, "%s", err);
    gpu_pair pr = gpu_pair_open(12, false);
    gcn_dataset *a = sbm_bag_of_words(pr.cpu, true), *b = sbm_bag_of_words(pr.gpu, true);
    gcn_trainer *ta = NULL, *tb = NULL;
    cr_assert_eq(gcn_trainer_create(pr.cpu, &ta, &cfg, a), GCN_OK, "%s", gcn_last_error(pr.cpu));
    cr_assert_eq(gcn_trainer_create(pr.gpu, &tb, &cfg, b), GCN_OK, "%s", gcn_last_error(pr.gpu));
    cr_assert_not_null(gcn_model_sparse_input(gcn_trainer_model(tb)));
    bool replayed = false;
    for (int e = 0; e < 20; e++) {
        gcn_epoch_stats sa, sb;
        cr_assert_eq(gcn_trainer_epoch(pr.cpu, ta, &sa), GCN_OK, "%s", gcn_last_error(pr.cpu));
        cr_assert_eq(gcn_trainer_epoch(pr.gpu, tb, &sb), GCN_OK, "%s", gcn_last_error(pr.gpu));
        replayed = replayed || sb.graph;
        double rel = fabs((double)sa.loss - sb.loss) / fabs((double)sa.loss);
        cr_assert_leq(rel, 1e-4, "epoch %d: GPU loss %.9g, CPU %.9g", e + 1, (double)sb.loss,
                      (double)sa.loss);
    }
    cr_assert(replayed, "no epoch replayed as a CUDA graph");
    gcn_trainer_free(&ta);
    gcn_trainer_free(&tb);
    gcn_dataset_free(&a);
    gcn_dataset_free(&b);
    gpu_pair_close(&pr);
}
