/* The bf16 SpMM checks of spmm_bf16_check.h.
 *
 * Bound.  x is drawn in fp32 and stored as bf16, each value moving by at
 * most u = 2^-8 of itself (bf16 keeps 8 significant bits, so one rounding
 * to nearest errs by at most half a unit in the 8th bit, 2^-8 relative);
 * the kernel sums n terms in fp32 (recursive summation: at most
 * n 2^-24 sum|terms|, however the kernel orders or splits the row) and
 * rounds its result once (u |result|).  Against the float64 product of
 * the fp32 x, an output therefore lies within
 *     u |ref| + (1 + u) (u + n 2^-24) mag,   mag = sum_j |a_ij x_j| (+ |y0|)
 * where an accumulated y0, already bf16, adds exactly.  A slip of one
 * element, lane or half of a bf16 pair moves an output by about |x|, far
 * past this bound. */
#include "spmm_bf16_check.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bf16.h"
#include "helpers.h"

#define U16 (1.0 / 256.0)

/* Element (r, c) of A x (+ y0) in float64 and the magnitude it sums. */
static void reference(const hmat *m, const float *x, const float *y0, int f, int32_t r, int c,
                      double *ref, double *mag)
{
    double s = y0 ? (double)y0[(int64_t)r * f + c] : 0.0, g = fabs(s);
    for (int32_t k = m->row_ptr[r]; k < m->row_ptr[r + 1]; k++) {
        double t = (double)m->values[k] * (double)x[(int64_t)m->col_idx[k] * f + c];
        s += t;
        g += fabs(t);
    }
    *ref = s;
    *mag = g;
}

static void expect_bounded(const hmat *m, const float *x, const float *y0, const float *got, int f,
                         const char *what)
{
    for (int32_t r = 0; r < m->n_rows; r++) {
        double n = m->row_ptr[r + 1] - m->row_ptr[r] + (y0 ? 1 : 0);
        for (int c = 0; c < f; c++) {
            double ref, mag;
            reference(m, x, y0, f, r, c, &ref, &mag);
            double bound = U16 * fabs(ref) + (1.0 + U16) * (U16 + n * ldexp(1.0, -24)) * mag;
            double g = got[(int64_t)r * f + c];
            cr_assert(isfinite(g) && fabs(g - ref) <= bound,
                      "%s: row %d col %d (deg %.0f, f %d): %.9g vs %.9g, bound %.3g", what, r, c,
                      n, f, g, ref, bound);
        }
    }
}

/* A bf16 tensor of host's values rounded, and host overwritten with them
 * widened back (what the kernel reads). */
static gcn_tensor *bf16_tensor(gcn_ctx *ctx, float *host, int64_t rows, int64_t cols)
{
    gcn_tensor *t = NULL;
    cr_assert_eq(gcn_tensor_create_dtype(ctx, &t, rows, cols, GCN_DTYPE_BF16), GCN_OK, "%s",
                 gcn_last_error(ctx));
    if (rows * cols > 0)
        cr_assert_eq(gcn_tensor_copy_from_host(ctx, t, host), GCN_OK);
    return t;
}

bool bf16_check_kernel(gcn_ctx *ctx, const gcn_spmm_impl *impl, const hmat *m, const gcn_csr *a,
                       int f, float scale, uint64_t seed)
{
    if (!impl->supports(a, f))
        return false;
    int64_t nx = (int64_t)m->n_cols * f, ny = (int64_t)m->n_rows * f;
    float *hx = malloc((size_t)(nx + 1) * sizeof *hx), *hy0 = malloc((size_t)(ny + 1) * 4);
    float *got = malloc((size_t)(ny + 1) * sizeof *got), *first = malloc((size_t)(ny + 1) * 4);
    cr_assert(hx && hy0 && got && first);
    uint64_t s = seed;
    test_fill_uniform(&s, hx, nx, -scale, scale);
    test_fill_uniform(&s, hy0, ny, -scale, scale);
    for (int64_t i = 0; i < ny; i++)
        hy0[i] = gcn_bf16_round(hy0[i]);
    gcn_tensor *x = bf16_tensor(ctx, hx, m->n_cols, f), *y = bf16_tensor(ctx, hy0, m->n_rows, f);
    if (ny > 0)
        cr_assert_eq(gcn_tensor_fill(ctx, y, NAN), GCN_OK);
    gcn_status st = gcn_spmm_run_bf16(ctx, impl, a, gcn_tensor_data_bf16(x),
                                      gcn_tensor_data_bf16(y), f, false);
    bool ran = st != GCN_ERR_UNSUPPORTED;
    cr_assert(st == GCN_OK || !ran, "%s bf16: %s", impl->name, gcn_last_error(ctx));
    char what[96];
    if (ran) {
        snprintf(what, sizeof what, "%s bf16 overwrite", impl->name);
        cr_assert_eq(gcn_tensor_to_host(ctx, y, got), GCN_OK);
        expect_bounded(m, hx, NULL, got, f, what);
        memcpy(first, got, (size_t)ny * sizeof *got);
        cr_assert_eq(gcn_tensor_copy_from_host(ctx, y, hy0), GCN_OK);
        cr_assert_eq(gcn_spmm_run_bf16(ctx, impl, a, gcn_tensor_data_bf16(x),
                                       gcn_tensor_data_bf16(y), f, true),
                     GCN_OK, "%s", gcn_last_error(ctx));
        snprintf(what, sizeof what, "%s bf16 accumulate", impl->name);
        cr_assert_eq(gcn_tensor_to_host(ctx, y, got), GCN_OK);
        expect_bounded(m, hx, hy0, got, f, what);
    }
    if (ran && impl->deterministic) {
        cr_assert_eq(gcn_spmm_run_bf16(ctx, impl, a, gcn_tensor_data_bf16(x),
                                       gcn_tensor_data_bf16(y), f, false),
                     GCN_OK);
        cr_assert_eq(gcn_tensor_to_host(ctx, y, got), GCN_OK);
        cr_assert_eq(memcmp(got, first, (size_t)ny * sizeof *got), 0,
                     "%s bf16 is deterministic: the same bits twice", impl->name);
    }
    gcn_tensor_free(&x);
    gcn_tensor_free(&y);
    free(hx), free(hy0), free(got), free(first);
    return ran;
}

static int check_on(gcn_ctx *ctx, const hmat *m, const gcn_csr *a, int f, float scale,
                    uint64_t seed)
{
    int n_impls, ran = 0;
    const gcn_spmm_impl *const *reg = gcn_spmm_registry(&n_impls);
    for (int i = 0; i < n_impls; i++)
        if (reg[i]->run_bf16 && reg[i]->device == gcn_ctx_device(ctx))
            ran += bf16_check_kernel(ctx, reg[i], m, a, f, scale, seed + (uint64_t)i);
    return ran;
}

int bf16_check_all(gcn_ctx *ctx, const hmat *m, int f, float scale, uint64_t seed)
{
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, m->n_rows, m->n_cols, m->nnz, m->row_ptr, m->col_idx,
                                m->values),
                 GCN_OK, "%s", gcn_last_error(ctx));
    int ran = check_on(ctx, m, a, f, scale, seed);
    if (!gcn_csr_is_symmetric(a) && gcn_csr_transpose(a)) {
        hmat t = mat_transpose(m);
        check_on(ctx, &t, gcn_csr_transpose(a), f, scale, seed + 100);
        mat_free(&t);
    }
    gcn_csr_free(&a);
    return ran;
}

void bf16_check_shapes(gcn_ctx *ctx, const int *feats, int n_feats)
{
    int32_t deg[200];
    for (int i = 0; i < 200; i++)
        deg[i] = i % 5 == 0 ? 0 : (i * 7) % 41; /* every fifth row empty */
    hmat square = mat_random(200, 200, deg, true, 5);
    hmat wide = mat_random(120, 333, deg, true, 6);
    int32_t one[7] = {1, 0, 1, 1, 0, 1, 1};
    hmat column = mat_random(7, 1, one, true, 7);
    int32_t none[9] = {0};
    hmat empty = mat_random(9, 4, none, true, 8);
    const hmat *all[] = {&square, &wide, &column, &empty};
    for (int fi = 0; fi < n_feats; fi++)
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            cr_assert_gt(bf16_check_all(ctx, all[k], feats[fi], 1.0f, 31 * (uint64_t)fi + k), 0,
                         "no bf16 kernel ran shape %zu at F = %d", k, feats[fi]);
    mat_free(&square), mat_free(&wide), mat_free(&column), mat_free(&empty);
}

hmat mat_long_row(void)
{
    int32_t deg[3] = {100000, 0, 3};
    hmat m = mat_alloc(3, 100000, deg);
    uint64_t s = 9;
    test_fill_uniform(&s, m.values, m.nnz, 0.0f, 1.0f);
    for (int32_t k = 0; k < 100000; k++)
        m.col_idx[k] = k;
    for (int32_t k = 0; k < 3; k++)
        m.col_idx[100000 + k] = 7 + 5000 * k;
    return m;
}

void bf16_check_long_row(gcn_ctx *ctx, int f)
{
    hmat m = mat_long_row();
    cr_assert_gt(bf16_check_all(ctx, &m, f, 1000.0f, 23), 0);
    mat_free(&m);
}

/* d loss / d x with y = A x in `dtype`, loss = test_weigh(y as fp32). */
static void spmm_grad(gcn_ctx *ctx, gcn_csr *a, const float *hx, int64_t rows, int f,
                      gcn_dtype dtype, float *dx)
{
    gcn_tensor *x = test_tensor(ctx, hx, rows, f), *xd = NULL, *y = NULL, *o = NULL,
               *loss = NULL;
    cr_assert_eq(gcn_tensor_set_requires_grad(x, true), GCN_OK);
    if (dtype == GCN_DTYPE_BF16)
        cr_assert_eq(gcn_cast(ctx, x, GCN_DTYPE_BF16, &xd), GCN_OK, "%s", gcn_last_error(ctx));
    else
        xd = gcn_tensor_retain(x);
    cr_assert_eq(gcn_spmm(ctx, a, xd, &y), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_tensor_dtype(y), dtype);
    cr_assert_eq(gcn_cast(ctx, y, GCN_DTYPE_FP32, &o), GCN_OK);
    cr_assert_eq(test_weigh(ctx, o, &loss), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, loss), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_tensor_to_host(ctx, gcn_tensor_grad(x), dx), GCN_OK);
    gcn_tensor *all[] = {x, xd, y, o, loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gcn_tensor_free(&all[i]);
}

/* The bf16 gradient is A^T dy with dy rounded to bf16 (u relative), summed
 * in fp32 and rounded once more (u), then widened exactly: each element
 * within 2u of |A^T dy| plus 2u of the magnitude it sums, so normwise
 * within 4u = 1.6e-2 of the fp32 gradient; 2e-2 leaves room for fp32's
 * own rounding. */
void bf16_check_gradient(gcn_ctx *ctx, int f)
{
    enum { ROWS = 300 };
    int32_t *deg = degrees_uniform(ROWS, 40, 3);
    hmat m = mat_random(ROWS, ROWS, deg, true, 4);
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, ROWS, ROWS, m.nnz, m.row_ptr, m.col_idx, m.values),
                 GCN_OK);
    cr_assert(!gcn_csr_is_symmetric(a), "backward must go through the stored transpose");
    int64_t n = (int64_t)ROWS * f;
    float *hx = malloc((size_t)n * sizeof *hx), *dx[2];
    dx[0] = malloc((size_t)n * sizeof(float));
    dx[1] = malloc((size_t)n * sizeof(float));
    uint64_t s = 8;
    test_fill_uniform(&s, hx, n, -1.0f, 1.0f);
    spmm_grad(ctx, a, hx, ROWS, f, GCN_DTYPE_FP32, dx[0]);
    spmm_grad(ctx, a, hx, ROWS, f, GCN_DTYPE_BF16, dx[1]);
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        num += ((double)dx[1][i] - dx[0][i]) * ((double)dx[1][i] - dx[0][i]);
        den += (double)dx[0][i] * dx[0][i];
    }
    double err = sqrt(num / (den > 0.0 ? den : 1.0));
    cr_assert(err <= 2e-2, "bf16 vs fp32 gradient through spmm: %.3g (F = %d)", err, f);
    cr_assert(err > 0.0, "the bf16 gradient must be rounded");
    gcn_csr_free(&a);
    mat_free(&m);
    free(deg), free(hx), free(dx[0]), free(dx[1]);
}
