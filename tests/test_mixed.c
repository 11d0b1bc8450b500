/* Ops on bf16 operands (core/ops/bf16_mixed.c and the bf16 SpMM): each stored bf16
 * tensor must be the fp32 computation on the widened operands rounded
 * once, on awkward shapes; products checked against a float64 reference
 * with a stated bound; gradients through the bf16 path against fp32's.
 *
 * Tolerances.  bf16 keeps 8 significant bits, so one rounding moves a
 * value by at most 2^-8 of itself (unit roundoff u16 = 2^-8); fp32
 * accumulation of n terms adds at most n 2^-24 sum|terms| (the textbook
 * bound for recursive summation).  An SpMM output of bf16 inputs therefore
 * lies within u16 |ref| + (1 + u16) n 2^-24 sum_j |a_ij x_j| of the
 * float64 product of the same (rounded) inputs.  A chain of k bf16 stores
 * perturbs what flows through it by about k u16 relative, so gradients
 * through the 6 stores of the block below (x, x W, A x W, its output, and
 * two gradients) agree with fp32's to within 5e-2 normwise (6 u16 =
 * 2.3e-2, doubled for the cancellation in the sums that form dW). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bf16.h"
#include "helpers.h"
#include "spmm_bf16_check.h"

#define U16 (1.0 / 256.0)

static gcn_tensor *to_bf16(gcn_ctx *ctx, gcn_tensor *x)
{
    gcn_tensor *b = NULL;
    bool prev = gcn_set_grad_enabled(ctx, false);
    cr_assert_eq(gcn_cast(ctx, x, GCN_DTYPE_BF16, &b), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_set_grad_enabled(ctx, prev);
    return b;
}

static void expect_same_bits(const float *got, const float *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(memcmp(&got[i], &want[i], sizeof(float)), 0, "%s[%lld]: %a != %a", what,
                     (long long)i, (double)got[i], (double)want[i]);
}

/* y = A x in bf16 against float64 on the rounded x (the bound above) and,
 * bit for bit, against the fp32 product of the widened x rounded once. */
static void check_spmm(gcn_ctx *ctx, const hmat *m, int f, float scale, uint64_t seed)
{
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, m->n_rows, m->n_cols, m->nnz, m->row_ptr, m->col_idx,
                                m->values),
                 GCN_OK, "%s", gcn_last_error(ctx));
    int64_t nx = (int64_t)m->n_cols * f, ny = (int64_t)m->n_rows * f;
    float *hx = malloc((size_t)(nx ? nx : 1) * sizeof *hx);
    float *got = malloc((size_t)(ny ? ny : 1) * sizeof *got);
    float *fp32 = malloc((size_t)(ny ? ny : 1) * sizeof *fp32);
    uint64_t s = seed;
    test_fill_uniform(&s, hx, nx, 0.0f, scale);
    gcn_tensor *x = test_tensor(ctx, hx, m->n_cols, f), *xb = to_bf16(ctx, x), *xw = NULL,
               *y = NULL, *y32 = NULL;
    cr_assert_eq(gcn_spmm(ctx, a, xb, &y), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_tensor_dtype(y), GCN_DTYPE_BF16);
    cr_assert_eq(gcn_cast(ctx, xb, GCN_DTYPE_FP32, &xw), GCN_OK);
    cr_assert_eq(gcn_spmm(ctx, a, xw, &y32), GCN_OK);
    cr_assert_eq(gcn_tensor_to_host(ctx, y, got), GCN_OK);
    cr_assert_eq(gcn_tensor_to_host(ctx, y32, fp32), GCN_OK);
    for (int64_t i = 0; i < ny; i++)
        fp32[i] = gcn_bf16_round(fp32[i]);
    expect_same_bits(got, fp32, ny, "bf16 spmm vs fp32 rounded once");
    for (int32_t r = 0; r < m->n_rows; r++)
        for (int c = 0; c < f; c++) {
            double ref = 0.0, mag = 0.0;
            for (int32_t k = m->row_ptr[r]; k < m->row_ptr[r + 1]; k++) {
                double t = (double)m->values[k] *
                           (double)gcn_bf16_round(hx[(int64_t)m->col_idx[k] * f + c]);
                ref += t;
                mag += fabs(t);
            }
            double n = m->row_ptr[r + 1] - m->row_ptr[r];
            double bound = U16 * fabs(ref) + (1.0 + U16) * n * ldexp(1.0, -24) * mag;
            double g = got[(int64_t)r * f + c];
            cr_assert(isfinite(g) && fabs(g - ref) <= bound,
                      "row %d col %d (deg %.0f, f %d): %.9g vs %.9g, bound %.3g", r, c, n, f, g,
                      ref, bound);
        }
    gcn_tensor *all[] = {x, xb, xw, y, y32};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gcn_tensor_free(&all[i]);
    gcn_csr_free(&a);
    free(hx), free(got), free(fp32);
}

Test(mixed, spmm_bf16_on_awkward_shapes)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    int32_t deg[40];
    for (int i = 0; i < 40; i++)
        deg[i] = i % 5 == 0 ? 0 : (i * 7) % 23; /* every fifth row empty */
    hmat m = mat_random(40, 31, deg, true, 5);
    const int widths[] = {1, 7, 13, 64};
    for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++)
        check_spmm(ctx, &m, widths[k], 1.0f, 17 + k);
    mat_free(&m);
    gcn_ctx_free(&ctx);
}

/* One row of 100,000 entries whose values (up to 1,000 x 1) sum far past
 * fp16's 65,504: fp32 accumulation keeps the sum, bf16 stores it. */
Test(mixed, spmm_bf16_long_row_past_fp16_range)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    hmat m = mat_long_row();
    check_spmm(ctx, &m, 3, 1000.0f, 23);
    mat_free(&m);
    gcn_ctx_free(&ctx);
}

/* op(bf16 x) is the fp32 op on the widened x with its fp32 weight read
 * as bf16, rounded once: checked bit for bit for the ops a model runs. */
Test(mixed, ops_round_their_fp32_result_once)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    enum { R = 37, C = 13, N = 9 };
    uint64_t s = 41;
    gcn_tensor *x = test_random_tensor(ctx, &s, R, C), *w = test_random_tensor(ctx, &s, C, N);
    gcn_tensor *bias = test_random_tensor(ctx, &s, 1, C);
    gcn_tensor *xb = to_bf16(ctx, x), *xw = NULL, *wb = to_bf16(ctx, w), *ww = NULL;
    cr_assert_eq(gcn_cast(ctx, xb, GCN_DTYPE_FP32, &xw), GCN_OK);
    cr_assert_eq(gcn_cast(ctx, wb, GCN_DTYPE_FP32, &ww), GCN_OK);
    gcn_epilogue e = {.bias = bias, .act = GCN_ACT_RELU};
    for (int op = 0; op < 4; op++) {
        gcn_tensor *yb = NULL, *y32 = NULL;
        gcn_status sb, s32;
        switch (op) {
        case 0:
            sb = gcn_matmul(ctx, xb, w, false, false, &yb);
            s32 = gcn_matmul(ctx, xw, ww, false, false, &y32);
            break;
        case 1:
            sb = gcn_relu(ctx, xb, &yb);
            s32 = gcn_relu(ctx, xw, &y32);
            break;
        case 2:
            sb = gcn_apply_epilogue(ctx, xb, &e, false, &yb);
            s32 = gcn_apply_epilogue(ctx, xw, &e, false, &y32);
            break;
        default:
            sb = gcn_add_bias(ctx, xb, bias, &yb);
            s32 = gcn_add_bias(ctx, xw, bias, &y32);
            break;
        }
        cr_assert_eq(sb, GCN_OK, "op %d: %s", op, gcn_last_error(ctx));
        cr_assert_eq(s32, GCN_OK);
        cr_assert_eq(gcn_tensor_dtype(yb), GCN_DTYPE_BF16, "op %d", op);
        int64_t n = gcn_tensor_numel(y32);
        float *got = malloc((size_t)n * sizeof *got), *want = malloc((size_t)n * sizeof *want);
        cr_assert_eq(gcn_tensor_to_host(ctx, yb, got), GCN_OK);
        cr_assert_eq(gcn_tensor_to_host(ctx, y32, want), GCN_OK);
        for (int64_t i = 0; i < n; i++)
            want[i] = gcn_bf16_round(want[i]);
        expect_same_bits(got, want, n, "bf16 op");
        free(got), free(want);
        gcn_tensor_free(&yb);
        gcn_tensor_free(&y32);
    }
    gcn_tensor *y = NULL;
    cr_assert_eq(gcn_log_softmax(ctx, xb, &y), GCN_ERR_DTYPE, "the loss side stays fp32");
    gcn_tensor *all[] = {x, w, bias, xb, xw, wb, ww};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gcn_tensor_free(&all[i]);
    gcn_ctx_free(&ctx);
}

/* loss = weigh(cast(relu(A (x W) + b), fp32)) with x in `dtype`; the
 * parameters' gradients come back in fp32 either way. */
static void block_grads(gcn_ctx *ctx, gcn_csr *a, const float *hx, const float *hw,
                        const float *hb, gcn_dtype dtype, float *dw, float *db, int f, int n,
                        int64_t rows)
{
    gcn_tensor *x = test_tensor(ctx, hx, rows, f), *w = test_tensor(ctx, hw, f, n),
               *b = test_tensor(ctx, hb, 1, n), *xd = NULL, *t = NULL, *u = NULL, *v = NULL,
               *o = NULL, *loss = NULL;
    cr_assert_eq(gcn_tensor_set_requires_grad(w, true), GCN_OK);
    cr_assert_eq(gcn_tensor_set_requires_grad(b, true), GCN_OK);
    xd = dtype == GCN_DTYPE_BF16 ? to_bf16(ctx, x) : gcn_tensor_retain(x);
    gcn_epilogue e = {.bias = b, .act = GCN_ACT_RELU};
    cr_assert_eq(gcn_matmul(ctx, xd, w, false, false, &t), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_spmm(ctx, a, t, &u), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_apply_epilogue(ctx, u, &e, true, &v), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_tensor_dtype(v), dtype);
    cr_assert_eq(gcn_cast(ctx, v, GCN_DTYPE_FP32, &o), GCN_OK);
    cr_assert_eq(test_weigh(ctx, o, &loss), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, loss), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_tensor_dtype(gcn_tensor_grad(w)), GCN_DTYPE_FP32);
    cr_assert_eq(gcn_tensor_to_host(ctx, gcn_tensor_grad(w), dw), GCN_OK);
    cr_assert_eq(gcn_tensor_to_host(ctx, gcn_tensor_grad(b), db), GCN_OK);
    gcn_tensor *all[] = {x, w, b, xd, t, u, v, o, loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gcn_tensor_free(&all[i]);
}

static double rel_err(const float *a, const float *b, int64_t n)
{
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den > 0.0 ? den : 1.0));
}

Test(mixed, gradients_through_bf16_follow_fp32)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    enum { ROWS = 60, F = 11, N = 5 };
    int32_t *deg = degrees_uniform(ROWS, 9, 3);
    hmat m = mat_random(ROWS, ROWS, deg, true, 4);
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, ROWS, ROWS, m.nnz, m.row_ptr, m.col_idx, m.values),
                 GCN_OK);
    float hx[ROWS * F], hw[F * N], hb[N], dw[2][F * N], db[2][N];
    uint64_t s = 8;
    test_fill_uniform(&s, hx, ROWS * F, -1.0f, 1.0f);
    test_fill_uniform(&s, hw, F * N, -1.0f, 1.0f);
    test_fill_uniform(&s, hb, N, 0.0f, 0.5f);
    block_grads(ctx, a, hx, hw, hb, GCN_DTYPE_FP32, dw[0], db[0], F, N, ROWS);
    block_grads(ctx, a, hx, hw, hb, GCN_DTYPE_BF16, dw[1], db[1], F, N, ROWS);
    double ew = rel_err(dw[1], dw[0], F * N), eb = rel_err(db[1], db[0], N);
    cr_assert(ew <= 5e-2 && eb <= 5e-2, "bf16 vs fp32 gradients: dW %.3g, db %.3g", ew, eb);
    cr_assert(ew > 0.0, "the bf16 path must round something");
    gcn_memory_stats ms;
    gcn_csr_free(&a);
    gcn_ctx_memory_stats(ctx, &ms);
    cr_assert_eq(ms.in_use, 0, "stand-ins and their gradients are released");
    mat_free(&m);
    free(deg);
    gcn_ctx_free(&ctx);
}
