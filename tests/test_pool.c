/* gcn_segment_pool and gcn_readout on the CPU: a hand-computed case,
 * gradients against finite differences for each pooling, the readout
 * against the ops it replaces, and the checks of their arguments. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_helpers.h"
#include "helpers.h"
#include "readout_run.h"

#define ROWS 11
#define COLS 3
#define SEGS 4
/* segments of 3, 0, 4 and 4 rows: an empty graph among them */
static const int32_t offsets[SEGS + 1] = {0, 3, 3, 7, 11};

Test(pool, hand_computed_sum_mean_max)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float x[4 * 2] = {1, -2, 3, 5, -1, 0, 2, 7}; /* 4 rows, 2 columns */
    const int32_t off[3] = {0, 3, 4};                  /* graphs of 3 and 1 rows */
    const float want[3][2 * 2] = {{3, 3, 2, 7}, {1, 1, 2, 7}, {3, 5, 2, 7}};
    gcn_tensor *t = test_tensor(ctx, x, 4, 2);
    gcn_index *o = test_index(ctx, off, 3);
    for (int k = 0; k < 3; k++) {
        gcn_tensor *y = NULL;
        cr_assert_eq(gcn_segment_pool(ctx, t, o, (gcn_pooling)k, &y), GCN_OK, "%s",
                     gcn_last_error(ctx));
        cr_assert_eq(gcn_tensor_rows(y), 2);
        float *h = test_read(ctx, y);
        for (int i = 0; i < 4; i++)
            cr_assert_float_eq(h[i], want[k][i], 1e-6f, "pooling %d element %d", k, i);
        free(h);
        gcn_tensor_free(&y);
    }
    gcn_tensor_free(&t);
    gcn_index_free(&o);
    gcn_ctx_free(&ctx);
}

/* The gradient checks' loss: of gcn_segment_pool on in[0], or with `heads`
 * of gcn_readout on in = h[0..1], w[0..1], b[0..1] (below). */
typedef struct {
    gcn_pooling kind;
    bool heads;
} pool_case;

static gcn_status lib_readout(gcn_ctx *ctx, gcn_tensor **in, const gcn_index *o,
                              gcn_pooling kind, gcn_tensor **y);

static gcn_status lib_pool(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    const pool_case *c = user;
    gcn_index *o = NULL;
    gcn_tensor *y = NULL;
    gcn_status st = gcn_index_from_host(ctx, &o, offsets, SEGS + 1);
    if (st == GCN_OK)
        st = c->heads ? lib_readout(ctx, in, o, c->kind, &y)
                      : gcn_segment_pool(ctx, in[0], o, c->kind, &y);
    if (st == GCN_OK)
        st = test_weigh(ctx, y, loss);
    gcn_tensor_free(&y);
    gcn_index_free(&o);
    return st;
}

static double ref_pool(double **in, void *user)
{
    const pool_case *c = user;
    double y[SEGS * COLS];
    for (int s = 0; s < SEGS; s++)
        for (int j = 0; j < COLS; j++) {
            int n = offsets[s + 1] - offsets[s];
            double v = n == 0 ? 0.0 : c->kind == GCN_POOL_MAX ? -INFINITY : 0.0;
            for (int r = offsets[s]; r < offsets[s + 1]; r++) {
                double x = in[0][r * COLS + j];
                v = c->kind == GCN_POOL_MAX ? fmax(v, x) : v + x;
            }
            y[s * COLS + j] = c->kind == GCN_POOL_MEAN && n > 0 ? v / n : v;
        }
    return test_weigh_ref(y, SEGS, COLS);
}

Test(pool, gradients_match_finite_differences)
{
    gcn_ctx *ctx = test_cpu_ctx(2);
    const test_input in = {ROWS, COLS, -1, 1};
    for (int k = 0; k < 3; k++) {
        pool_case c = {(gcn_pooling)k, false};
        test_gradcheck(ctx, &in, 1, lib_pool, ref_pool, &c, 2e-3);
    }
    gcn_ctx_free(&ctx);
}

Test(pool, offsets_must_cover_the_rows_in_order)
{
    gcn_ctx *ctx = test_cpu_ctx(3);
    uint64_t s = 4;
    gcn_tensor *x = test_random_tensor(ctx, &s, ROWS, COLS), *y = NULL;
    const int32_t bad[][3] = {{0, 5, 10}, {1, 5, 11}, {0, 7, 5}, {0, 5, 12}};
    for (int i = 0; i < 4; i++) {
        gcn_index *o = test_index(ctx, bad[i], 3);
        cr_assert_eq(gcn_segment_pool(ctx, x, o, GCN_POOL_SUM, &y), GCN_ERR_INVALID_ARG,
                     "offsets case %d", i);
        cr_assert_null(y);
        gcn_index_free(&o);
    }
    gcn_index *o = test_index(ctx, offsets, SEGS + 1);
    cr_assert_eq(gcn_segment_pool(ctx, x, o, (gcn_pooling)7, &y), GCN_ERR_INVALID_ARG);
    gcn_index_free(&o);
    gcn_tensor_free(&x);
    gcn_ctx_free(&ctx);
}

/* ---- gcn_readout ------------------------------------------------------------ */

/* The gradient check's heads (its inputs are at most 8): widths 3 and 4. */
#define HEADS 2
static const int64_t head_cols[HEADS] = {3, 4};
#define CLASSES 2

static gcn_status lib_readout(gcn_ctx *ctx, gcn_tensor **in, const gcn_index *o,
                              gcn_pooling kind, gcn_tensor **y)
{
    return gcn_readout(ctx, in, in + HEADS, in + 2 * HEADS, HEADS, o, kind, 0.0f, true, y);
}

static double ref_readout(double **in, void *user)
{
    const pool_case *c = user;
    double y[SEGS * CLASSES] = {0};
    for (int k = 0; k < HEADS; k++) {
        int64_t f = head_cols[k];
        for (int s = 0; s < SEGS; s++) {
            int n = offsets[s + 1] - offsets[s];
            for (int j = 0; j < f; j++) {
                double v = n == 0 ? 0.0 : c->kind == GCN_POOL_MAX ? -INFINITY : 0.0;
                for (int r = offsets[s]; r < offsets[s + 1]; r++) {
                    double x = in[k][r * f + j];
                    v = c->kind == GCN_POOL_MAX ? fmax(v, x) : v + x;
                }
                v = c->kind == GCN_POOL_MEAN && n > 0 ? v / n : v;
                for (int q = 0; q < CLASSES; q++)
                    y[s * CLASSES + q] += v * in[HEADS + k][j * CLASSES + q];
            }
            for (int q = 0; q < CLASSES; q++)
                y[s * CLASSES + q] += in[2 * HEADS + k][q];
        }
    }
    return test_weigh_ref(y, SEGS, CLASSES);
}

Test(readout, gradients_match_finite_differences)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    test_input in[3 * HEADS];
    for (int k = 0; k < HEADS; k++) {
        in[k] = (test_input){ROWS, head_cols[k], -1, 1};
        in[HEADS + k] = (test_input){head_cols[k], CLASSES, -1, 1};
        in[2 * HEADS + k] = (test_input){1, CLASSES, -1, 1};
    }
    for (int k = 0; k < 3; k++) {
        pool_case c = {(gcn_pooling)k, true};
        test_gradcheck(ctx, in, 3 * HEADS, lib_pool, ref_readout, &c, 2e-3);
    }
    gcn_ctx_free(&ctx);
}

/* One op against segment_pool, matmul_bias, dropout and add a head, on
 * contexts of the same seed: the same masks, so the same scores and
 * gradients up to the products' rounding. */
Test(readout, equals_the_ops_in_turn)
{
    uint64_t s = 11;
    const int64_t cols[READOUT_HEADS] = {3, 64, 17};
    for (int k = 0; k < 3; k++)
        for (int mode = 0; mode < 3; mode++) { /* dropout training, no dropout, evaluation */
            readout_case c = readout_case_random(&s, 40, cols, 5, (gcn_pooling)k,
                                                 mode == 1 ? 0.0f : 0.5f, mode != 2);
            gcn_ctx *a = test_cpu_ctx(9), *b = test_cpu_ctx(9);
            readout_result fused, ops;
            readout_run(a, &c, true, &fused);
            readout_run(b, &c, false, &ops);
            expect_close(fused.scores, ops.scores, c.segs * c.classes, 1e-5, "scores");
            for (int j = 0; c.training && j < READOUT_HEADS; j++) {
                expect_close(fused.dh[j], ops.dh[j], c.rows * c.cols[j], 1e-5, "dh");
                expect_close(fused.dw[j], ops.dw[j], c.cols[j] * c.classes, 1e-5, "dw");
                expect_close(fused.db[j], ops.db[j], c.classes, 1e-5, "db");
            }
            if (mode == 0) { /* dropout zeroed some of the heads' scores */
                int zeros = 0;
                for (int64_t i = 0; i < c.cols[0] * c.classes; i++)
                    zeros += fused.dw[0][i] == 0.0f;
                cr_assert_lt(zeros, c.cols[0] * c.classes);
            }
            readout_result_free(&fused);
            readout_result_free(&ops);
            readout_case_free(&c);
            gcn_ctx_free(&a);
            gcn_ctx_free(&b);
        }
}

Test(readout, checks_its_arguments)
{
    gcn_ctx *ctx = test_cpu_ctx(6);
    uint64_t s = 8;
    gcn_tensor *h[2] = {test_random_tensor(ctx, &s, ROWS, 3), test_random_tensor(ctx, &s, ROWS, 2)};
    gcn_tensor *w[2] = {test_random_tensor(ctx, &s, 3, CLASSES),
                        test_random_tensor(ctx, &s, 2, CLASSES)};
    gcn_tensor *b[2] = {test_random_tensor(ctx, &s, 1, CLASSES),
                        test_random_tensor(ctx, &s, 1, CLASSES)};
    gcn_tensor *wrong = test_random_tensor(ctx, &s, 2, CLASSES + 1), *y = NULL;
    gcn_index *o = test_index(ctx, offsets, SEGS + 1);
    cr_assert_eq(gcn_readout(ctx, h, w, b, 2, o, GCN_POOL_SUM, 0.5f, true, &y), GCN_OK, "%s",
                 gcn_last_error(ctx));
    cr_assert_eq(gcn_tensor_rows(y), SEGS);
    cr_assert_eq(gcn_tensor_cols(y), CLASSES);
    gcn_tensor_free(&y);
    cr_assert_eq(gcn_readout(ctx, h, w, b, 0, o, GCN_POOL_SUM, 0.0f, true, &y),
                 GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_readout(ctx, h, w, b, 2, o, GCN_POOL_SUM, 1.0f, true, &y),
                 GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_readout(ctx, h, w, b, 2, o, (gcn_pooling)9, 0.0f, true, &y),
                 GCN_ERR_INVALID_ARG);
    gcn_tensor *twice[2] = {h[0], h[0]}, *w_twice[2] = {w[0], w[0]};
    cr_assert_eq(gcn_readout(ctx, twice, w_twice, NULL, 2, o, GCN_POOL_SUM, 0.0f, true, &y),
                 GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "again") != NULL, "%s", gcn_last_error(ctx));
    gcn_tensor *w_bad[2] = {w[0], wrong};
    cr_assert_eq(gcn_readout(ctx, h, w_bad, NULL, 2, o, GCN_POOL_SUM, 0.0f, true, &y),
                 GCN_ERR_SHAPE);
    cr_assert_eq(gcn_readout(ctx, h, w, w, 2, o, GCN_POOL_SUM, 0.0f, true, &y), GCN_ERR_SHAPE);
    cr_assert_null(y);
    for (int k = 0; k < 2; k++) {
        gcn_tensor_free(&h[k]);
        gcn_tensor_free(&w[k]);
        gcn_tensor_free(&b[k]);
    }
    gcn_tensor_free(&wrong);
    gcn_index_free(&o);
    gcn_ctx_free(&ctx);
}
