/* gcn_segment_pool on the CPU: a hand-computed case, gradients against
 * finite differences for each pooling, and the checks of its offsets. */
#include <criterion/criterion.h>
#include <math.h>

#include "helpers.h"

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

typedef struct {
    gcn_pooling kind;
} pool_case;

static gcn_status lib_pool(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    const pool_case *c = user;
    gcn_index *o = NULL;
    gcn_tensor *y = NULL;
    gcn_status st = gcn_index_from_host(ctx, &o, offsets, SEGS + 1);
    if (st == GCN_OK)
        st = gcn_segment_pool(ctx, in[0], o, c->kind, &y);
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
        pool_case c = {(gcn_pooling)k};
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
