/* Finite-difference gradient checks of the sparse ops: gcn_spmm on an
 * asymmetric matrix with empty rows and repeated columns, and gcn_spmm_self
 * (GIN's A x + alpha x), against double-precision forwards; the A + alpha I
 * that gcn_spmm_self multiplies by. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "helpers.h"
#include "kernels/spmm/internal.h"

#define TOL 2e-3 /* float32 analytic gradient vs double central differences */

/* 5 x 4, asymmetric: row 1 and row 4 empty, row 3 repeats column 2. */
static const int32_t sp_row_ptr[6] = {0, 3, 3, 5, 9, 9};
static const int32_t sp_col_idx[9] = {0, 3, 1, 2, 0, 2, 1, 2, 3};
static const float sp_values[9] = {1.5f, -2.0f, 0.5f, 1.0f, 3.0f, 0.25f, -1.0f, 0.75f, 2.0f};

/* 4 x 4, asymmetric: row 2 empty, row 3 repeats column 1. */
static const int32_t sq_row_ptr[5] = {0, 2, 4, 4, 7};
static const int32_t sq_col_idx[7] = {1, 3, 0, 2, 1, 1, 0};
static const float sq_values[7] = {0.5f, -1.5f, 2.0f, 0.75f, 1.25f, -0.5f, 3.0f};

enum { F = 3 }; /* feature columns of x */

/* y = A x (self_term false) or A x + alpha x, with A as host arrays and on
 * the context. */
typedef struct sparse_case {
    int n_rows, n_cols;
    const int32_t *row_ptr, *col_idx;
    const float *values;
    bool self_term;
    float alpha;
    gcn_csr *a;
} sparse_case;

static gcn_status lib_sparse(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    const sparse_case *c = user;
    gcn_tensor *y = NULL;
    gcn_status st = c->self_term ? gcn_spmm_self(ctx, c->a, in[0], c->alpha, &y)
                                 : gcn_spmm(ctx, c->a, in[0], &y);
    if (st == GCN_OK)
        st = test_weigh(ctx, y, loss);
    gcn_tensor_free(&y);
    return st;
}

static double ref_sparse(double **in, void *user)
{
    const sparse_case *c = user;
    double y[8 * F];
    for (int i = 0; i < c->n_rows * F; i++)
        y[i] = c->self_term ? (double)c->alpha * in[0][i] : 0.0;
    for (int i = 0; i < c->n_rows; i++)
        for (int e = c->row_ptr[i]; e < c->row_ptr[i + 1]; e++)
            for (int j = 0; j < F; j++)
                y[i * F + j] += c->values[e] * in[0][c->col_idx[e] * F + j];
    return test_weigh_ref(y, c->n_rows, F);
}

static void check_sparse(gcn_ctx *ctx, sparse_case *c)
{
    cr_assert_eq(gcn_csr_create(ctx, &c->a, c->n_rows, c->n_cols, c->row_ptr[c->n_rows],
                                c->row_ptr, c->col_idx, c->values), GCN_OK);
    cr_assert_not(gcn_csr_is_symmetric(c->a));
    test_input in[1] = {{c->n_cols, F, -1, 1}};
    test_gradcheck(ctx, in, 1, lib_sparse, ref_sparse, c, TOL);
    gcn_csr_free(&c->a);
}

Test(grad, spmm_asymmetric_empty_rows_duplicates)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    sparse_case c = {5, 4, sp_row_ptr, sp_col_idx, sp_values, false, 0.0f, NULL};
    check_sparse(ctx, &c);
    gcn_ctx_free(&ctx);
}

Test(grad, spmm_self_term)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    sparse_case c = {4, 4, sq_row_ptr, sq_col_idx, sq_values, true, 1.3f, NULL};
    check_sparse(ctx, &c);
    gcn_tensor *x = NULL, *y = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &x, 4, F), GCN_OK);
    gcn_csr *rect = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &rect, 5, 4, 9, sp_row_ptr, sp_col_idx, sp_values), GCN_OK);
    cr_assert_eq(gcn_spmm_self(ctx, rect, x, 1.0f, &y), GCN_ERR_SHAPE);
    cr_assert_null(y);
    cr_assert(strstr(gcn_last_error(ctx), "square"), "%s", gcn_last_error(ctx));
    gcn_tensor_free(&x);
    gcn_csr_free(&rect);
    gcn_ctx_free(&ctx);
}

/* A x + alpha x in double from host arrays. */
static void self_ref(const int32_t *rp, const int32_t *ci, const float *v, int n, float alpha,
                     const float *x, double *y)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < F; j++) {
            y[i * F + j] = (double)alpha * x[i * F + j];
            for (int e = rp[i]; e < rp[i + 1]; e++)
                y[i * F + j] += (double)v[e] * x[ci[e] * F + j];
        }
}

/* gcn_spmm_self on a: against the double product, and its A + alpha I with
 * `added` new entries, sorted like a. */
static void check_self(gcn_ctx *ctx, int n, const int32_t *rp, const int32_t *ci, const float *v,
                       float alpha, int added)
{
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, n, n, rp[n], rp, ci, v), GCN_OK);
    float x[8 * F];
    for (int i = 0; i < n * F; i++)
        x[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
    double want[8 * F];
    self_ref(rp, ci, v, n, alpha, x, want);
    gcn_tensor *tx = test_tensor(ctx, x, n, F), *y = NULL;
    for (int rep = 0; rep < 2; rep++) {
        cr_assert_eq(gcn_spmm_self(ctx, a, tx, alpha, &y), GCN_OK, "%s", gcn_last_error(ctx));
        float *got = test_read(ctx, y);
        for (int i = 0; i < n * F; i++)
            cr_assert(fabs(got[i] - want[i]) <= 1e-5 * (1.0 + fabs(want[i])), "y[%d] %g, want %g",
                      i, got[i], want[i]);
        free(got);
        gcn_tensor_free(&y);
    }
    const gcn_csr *s = NULL, *again = NULL;
    cr_assert_eq(gcn_spmm_self_matrix(ctx, a, alpha, &s), GCN_OK);
    cr_assert_not_null(s);
    cr_assert_eq(gcn_spmm_self_matrix(ctx, a, alpha, &again), GCN_OK);
    cr_assert_eq(s, again, "built once and kept");
    cr_assert_eq(gcn_csr_nnz(s), rp[n] + added);
    cr_assert_eq(gcn_csr_is_sorted(s), gcn_csr_is_sorted(a));
    gcn_spmm_site_info info[4];
    int sites = gcn_spmm_sites(a, info, 4);
    cr_assert_eq(sites, 1, "one site, on A + alpha I");
    cr_assert_float_eq(info[0].self_alpha, alpha, 0.0f);
    /* another alpha: the kept matrix serves only its own; the op still adds */
    cr_assert_eq(gcn_spmm_self_matrix(ctx, a, alpha + 1.0f, &again), GCN_OK);
    cr_assert_null(again);
    self_ref(rp, ci, v, n, alpha + 1.0f, x, want);
    cr_assert_eq(gcn_spmm_self(ctx, a, tx, alpha + 1.0f, &y), GCN_OK);
    float *got = test_read(ctx, y);
    for (int i = 0; i < n * F; i++)
        cr_assert(fabs(got[i] - want[i]) <= 1e-5 * (1.0 + fabs(want[i])));
    free(got);
    gcn_tensor_free(&y);
    gcn_tensor_free(&tx);
    gcn_csr_free(&a);
}

Test(grad, spmm_self_through_a_plus_alpha_i)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    /* unsorted with a repeated column, no diagonal: four entries appended */
    check_self(ctx, 4, sq_row_ptr, sq_col_idx, sq_values, 1.3f, 4);
    /* sorted, diagonals in rows 0 and 2 (alpha added to them), an empty row */
    const int32_t rp[] = {0, 2, 3, 4, 6, 6}, ci[] = {0, 3, 4, 2, 1, 2};
    const float v[] = {1.0f, -2.0f, 0.5f, 3.0f, 0.25f, -1.0f};
    check_self(ctx, 5, rp, ci, v, -0.5f, 3);
    gcn_ctx_free(&ctx);
}
