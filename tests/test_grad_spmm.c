/* Finite-difference gradient checks of the sparse ops: gcn_spmm on an
 * asymmetric matrix with empty rows and repeated columns, and gcn_spmm_self
 * (GIN's A x + alpha x), against double-precision forwards. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"

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
