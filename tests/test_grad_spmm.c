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

static gcn_status lib_spmm(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    gcn_tensor *y = NULL;
    gcn_status st = gcn_spmm(ctx, user, in[0], &y);
    if (st == GCN_OK)
        st = test_weigh(ctx, y, loss);
    gcn_tensor_free(&y);
    return st;
}

static double ref_spmm(double **in, void *user)
{
    (void)user;
    double y[5 * 3] = {0};
    for (int i = 0; i < 5; i++)
        for (int e = sp_row_ptr[i]; e < sp_row_ptr[i + 1]; e++)
            for (int j = 0; j < 3; j++)
                y[i * 3 + j] += sp_values[e] * in[0][sp_col_idx[e] * 3 + j];
    return test_weigh_ref(y, 5, 3);
}

Test(grad, spmm_asymmetric_empty_rows_duplicates)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, 5, 4, 9, sp_row_ptr, sp_col_idx, sp_values), GCN_OK);
    cr_assert_not(gcn_csr_is_symmetric(a));
    test_input in[1] = {{4, 3, -1, 1}};
    test_gradcheck(ctx, in, 1, lib_spmm, ref_spmm, a, TOL);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

/* 4 x 4, asymmetric: row 2 empty, row 3 repeats column 1. */
static const int32_t sq_row_ptr[5] = {0, 2, 4, 4, 7};
static const int32_t sq_col_idx[7] = {1, 3, 0, 2, 1, 1, 0};
static const float sq_values[7] = {0.5f, -1.5f, 2.0f, 0.75f, 1.25f, -0.5f, 3.0f};

static gcn_status lib_spmm_self(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    gcn_tensor *y = NULL;
    gcn_status st = gcn_spmm_self(ctx, user, in[0], 1.3f, &y);
    if (st == GCN_OK)
        st = test_weigh(ctx, y, loss);
    gcn_tensor_free(&y);
    return st;
}

static double ref_spmm_self(double **in, void *user)
{
    (void)user;
    double y[4 * 3];
    for (int i = 0; i < 4 * 3; i++)
        y[i] = (double)1.3f * in[0][i];
    for (int i = 0; i < 4; i++)
        for (int e = sq_row_ptr[i]; e < sq_row_ptr[i + 1]; e++)
            for (int j = 0; j < 3; j++)
                y[i * 3 + j] += sq_values[e] * in[0][sq_col_idx[e] * 3 + j];
    return test_weigh_ref(y, 4, 3);
}

Test(grad, spmm_self_term)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, 4, 4, 7, sq_row_ptr, sq_col_idx, sq_values), GCN_OK);
    cr_assert_not(gcn_csr_is_symmetric(a));
    test_input in[1] = {{4, 3, -1, 1}};
    test_gradcheck(ctx, in, 1, lib_spmm_self, ref_spmm_self, a, TOL);
    gcn_tensor *x = NULL, *y = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &x, 4, 3), GCN_OK);
    gcn_csr *rect = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &rect, 5, 4, 9, sp_row_ptr, sp_col_idx, sp_values), GCN_OK);
    cr_assert_eq(gcn_spmm_self(ctx, rect, x, 1.0f, &y), GCN_ERR_SHAPE);
    cr_assert_null(y);
    cr_assert(strstr(gcn_last_error(ctx), "square"), "%s", gcn_last_error(ctx));
    gcn_tensor_free(&x);
    gcn_csr_free(&rect);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}
