/* Forward values of every op on small cases computed by hand. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "helpers.h"

static gcn_ctx *ctx;
static void setup(void) { ctx = test_cpu_ctx(3); }
static void teardown(void) { gcn_ctx_free(&ctx); }
TestSuite(ops, .init = setup, .fini = teardown);

static void expect(gcn_tensor *t, const float *want, int64_t n, double tol)
{
    cr_assert_eq(gcn_tensor_numel(t), n);
    float *got = test_read(ctx, t);
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= tol, "element %lld: %.7g, expected %.7g",
                  (long long)i, (double)got[i], (double)want[i]);
    free(got);
}

Test(ops, matmul_by_hand)
{
    const float a[6] = {1, 2, 3, 4, 5, 6};    /* [2, 3] */
    const float b[6] = {7, 8, 9, 10, 11, 12}; /* [3, 2] */
    gcn_tensor *ta = test_tensor(ctx, a, 2, 3), *tb = test_tensor(ctx, b, 3, 2), *c = NULL;
    cr_assert_eq(gcn_matmul(ctx, ta, tb, false, false, &c), GCN_OK);
    expect(c, (float[]){58, 64, 139, 154}, 4, 0);
    gcn_tensor_free(&c);
    /* a^T a: [3, 3] */
    cr_assert_eq(gcn_matmul(ctx, ta, ta, true, false, &c), GCN_OK);
    expect(c, (float[]){17, 22, 27, 22, 29, 36, 27, 36, 45}, 9, 0);
    gcn_tensor_free(&c);
    /* a a^T: [2, 2] */
    cr_assert_eq(gcn_matmul(ctx, ta, ta, false, true, &c), GCN_OK);
    expect(c, (float[]){14, 32, 32, 77}, 4, 0);
    gcn_tensor_free(&c);
    /* b^T a^T = (a b)^T */
    cr_assert_eq(gcn_matmul(ctx, tb, ta, true, true, &c), GCN_OK);
    expect(c, (float[]){58, 139, 64, 154}, 4, 0);
    gcn_tensor_free(&c);
    gcn_tensor_free(&ta);
    gcn_tensor_free(&tb);
}

Test(ops, elementwise_by_hand)
{
    gcn_tensor *x = test_tensor(ctx, (float[]){-1, 2, 0, -3.5f, 4, 0.5f}, 2, 3);
    gcn_tensor *b = test_tensor(ctx, (float[]){10, 20, 30}, 1, 3), *y = NULL;
    cr_assert_eq(gcn_add_bias(ctx, x, b, &y), GCN_OK);
    expect(y, (float[]){9, 22, 30, 6.5f, 24, 30.5f}, 6, 0);
    gcn_tensor_free(&y);
    cr_assert_eq(gcn_add(ctx, x, x, &y), GCN_OK);
    expect(y, (float[]){-2, 4, 0, -7, 8, 1}, 6, 0);
    gcn_tensor_free(&y);
    cr_assert_eq(gcn_scale(ctx, x, -2.0f, &y), GCN_OK);
    expect(y, (float[]){2, -4, 0, 7, -8, -1}, 6, 0);
    gcn_tensor_free(&y);
    cr_assert_eq(gcn_relu(ctx, x, &y), GCN_OK);
    expect(y, (float[]){0, 2, 0, 0, 4, 0.5f}, 6, 0);
    gcn_tensor_free(&y);
    cr_assert_eq(gcn_sum(ctx, x, &y), GCN_OK);
    expect(y, (float[]){2}, 1, 0);
    gcn_tensor_free(&y);
    cr_assert_eq(gcn_mean(ctx, x, &y), GCN_OK);
    expect(y, (float[]){2.0f / 6.0f}, 1, 1e-7);
    gcn_tensor_free(&y);
    gcn_tensor *parts[2] = {b, b};
    cr_assert_eq(gcn_concat_cols(ctx, parts, 2, &y), GCN_OK);
    cr_assert_eq(gcn_tensor_cols(y), 6);
    expect(y, (float[]){10, 20, 30, 10, 20, 30}, 6, 0);
    gcn_tensor_free(&y);
    gcn_tensor_free(&x);
    gcn_tensor_free(&b);
}

Test(ops, elu_and_scale_by_by_hand)
{
    gcn_tensor *x = test_tensor(ctx, (float[]){-1, 0, 2, -0.5f}, 2, 2), *y = NULL;
    cr_assert_eq(gcn_elu(ctx, x, 0.5f, &y), GCN_OK);
    expect(y, (float[]){0.5f * expm1f(-1), 0, 2, 0.5f * expm1f(-0.5f)}, 4, 1e-7);
    gcn_tensor_free(&y);
    cr_assert_eq(gcn_elu(ctx, x, 0.0f, &y), GCN_ERR_INVALID_ARG);
    gcn_tensor *s = test_tensor(ctx, (float[]){-3}, 1, 1);
    cr_assert_eq(gcn_scale_by(ctx, x, s, &y), GCN_OK);
    expect(y, (float[]){3, 0, -6, 1.5f}, 4, 0);
    gcn_tensor_free(&y);
    cr_assert_eq(gcn_scale_by(ctx, s, x, &y), GCN_ERR_SHAPE); /* the scalar must be [1, 1] */
    cr_assert_null(y);
    gcn_tensor_free(&s);
    gcn_tensor_free(&x);
}

Test(ops, log_softmax_and_nll_by_hand)
{
    /* Row [0, ln 3]: softmax (1/4, 3/4).  Row [1, 1]: (1/2, 1/2). */
    gcn_tensor *x = test_tensor(ctx, (float[]){0, logf(3.0f), 1, 1}, 2, 2), *lp = NULL, *l = NULL;
    cr_assert_eq(gcn_log_softmax(ctx, x, &lp), GCN_OK);
    expect(lp, (float[]){logf(0.25f), logf(0.75f), logf(0.5f), logf(0.5f)}, 4, 1e-6);
    gcn_index *labels = test_index(ctx, (int32_t[]){1, 0}, 2);
    gcn_index *rows = test_index(ctx, (int32_t[]){0, 1}, 2);
    cr_assert_eq(gcn_nll_loss(ctx, lp, labels, rows, &l), GCN_OK);
    expect(l, (float[]){-(logf(0.75f) + logf(0.5f)) / 2}, 1, 1e-6);
    double acc;
    cr_assert_eq(gcn_accuracy(ctx, x, labels, rows, &acc), GCN_OK);
    cr_assert_float_eq(acc, 1.0, 1e-12); /* ties go to column 0 = label of row 1 */
    gcn_index *row1 = test_index(ctx, (int32_t[]){1}, 1), *wrong = test_index(ctx, (int32_t[]){0, 1}, 2);
    cr_assert_eq(gcn_accuracy(ctx, x, wrong, row1, &acc), GCN_OK);
    cr_assert_float_eq(acc, 0.0, 1e-12);
    gcn_index_free(&row1);
    gcn_index_free(&wrong);
    gcn_index_free(&labels);
    gcn_index_free(&rows);
    gcn_tensor_free(&l);
    gcn_tensor_free(&lp);
    gcn_tensor_free(&x);
}

Test(ops, batchnorm_matches_pytorch_semantics)
{
    /* One column [1, 2, 3, 6]: mean 3, biased var 3.5, unbiased 14/3. */
    gcn_tensor *x = test_tensor(ctx, (float[]){1, 2, 3, 6}, 4, 1);
    gcn_tensor *g = test_tensor(ctx, (float[]){2}, 1, 1), *b = test_tensor(ctx, (float[]){1}, 1, 1);
    gcn_tensor *rm = test_tensor(ctx, (float[]){0}, 1, 1), *rv = test_tensor(ctx, (float[]){1}, 1, 1);
    gcn_tensor *y = NULL;
    cr_assert_eq(gcn_batchnorm(ctx, x, g, b, rm, rv, true, 0.1f, 1e-5f, &y), GCN_OK);
    float s = 1.0f / sqrtf(3.5f + 1e-5f);
    expect(y, (float[]){1 - 4 * s, 1 - 2 * s, 1, 1 + 6 * s}, 4, 1e-5);
    expect(rm, (float[]){0.3f}, 1, 1e-6);
    expect(rv, (float[]){0.9f + 0.1f * 14.0f / 3.0f}, 1, 1e-6);
    gcn_tensor_free(&y);
    /* eval uses the running statistics */
    cr_assert_eq(gcn_batchnorm(ctx, x, g, b, rm, rv, false, 0.1f, 1e-5f, &y), GCN_OK);
    float e = 1.0f / sqrtf(0.9f + 0.1f * 14.0f / 3.0f + 1e-5f);
    expect(y, (float[]){1 + 2 * 0.7f * e, 1 + 2 * 1.7f * e, 1 + 2 * 2.7f * e, 1 + 2 * 5.7f * e}, 4, 1e-5);
    gcn_tensor_free(&y);
    gcn_tensor *one = test_tensor(ctx, (float[]){1}, 1, 1);
    cr_assert_eq(gcn_batchnorm(ctx, one, g, b, rm, rv, true, 0.1f, 1e-5f, &y), GCN_ERR_SHAPE);
    gcn_tensor_free(&one);
    gcn_tensor_free(&x);
    gcn_tensor_free(&g);
    gcn_tensor_free(&b);
    gcn_tensor_free(&rm);
    gcn_tensor_free(&rv);
}

Test(ops, spmm_by_hand)
{
    /* [[1 0 2], [0 0 0], [0 3 0]] times [[1 2], [3 4], [5 6]] */
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, 3, 3, 3, (int32_t[]){0, 2, 2, 3}, (int32_t[]){0, 2, 1},
                                (float[]){1, 2, 3}), GCN_OK);
    gcn_tensor *x = test_tensor(ctx, (float[]){1, 2, 3, 4, 5, 6}, 3, 2), *y = NULL;
    cr_assert_eq(gcn_spmm(ctx, a, x, &y), GCN_OK);
    expect(y, (float[]){11, 14, 0, 0, 9, 12}, 6, 0);
    const gcn_csr *at = gcn_csr_transpose(a);
    int32_t rp[4], ci[3];
    float v[3];
    cr_assert_eq(gcn_csr_to_host(ctx, at, rp, ci, v), GCN_OK);
    cr_assert_arr_eq(rp, ((int32_t[]){0, 1, 2, 3}), sizeof rp);
    cr_assert_arr_eq(ci, ((int32_t[]){0, 2, 0}), sizeof ci);
    cr_assert_arr_eq(v, ((float[]){1, 3, 2}), sizeof v);
    cr_assert_eq(gcn_csr_transpose(at), a);
    gcn_tensor_free(&y);
    gcn_tensor_free(&x);
    gcn_csr_free(&a);
}

Test(ops, symmetric_matrix_keeps_no_copy)
{
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, 2, 2, 3, (int32_t[]){0, 2, 3}, (int32_t[]){0, 1, 0},
                                NULL), GCN_OK);
    cr_assert(gcn_csr_is_symmetric(a));
    cr_assert_eq(gcn_csr_transpose(a), a);
    gcn_csr_free(&a);
    cr_assert_null(a);
}

Test(ops, dropout_eval_is_identity)
{
    gcn_tensor *x = test_tensor(ctx, (float[]){1, 2, 3}, 1, 3), *y = NULL;
    cr_assert_eq(gcn_dropout(ctx, x, 0.5f, false, &y), GCN_OK);
    expect(y, (float[]){1, 2, 3}, 3, 0);
    gcn_tensor_free(&y);
    cr_assert_eq(gcn_dropout(ctx, x, 1.0f, true, &y), GCN_ERR_INVALID_ARG);
    gcn_tensor_free(&x);
}

Test(ops, no_grad_records_nothing)
{
    gcn_tensor *w = test_tensor(ctx, (float[]){1, 2}, 1, 2), *y = NULL;
    cr_assert_eq(gcn_tensor_set_requires_grad(w, true), GCN_OK);
    GCN_NO_GRAD(ctx)
    {
        cr_assert_eq(gcn_relu(ctx, w, &y), GCN_OK);
    }
    cr_assert(gcn_grad_enabled(ctx));
    cr_assert_eq(gcn_tape_len(ctx), 0);
    cr_assert_not(gcn_tensor_requires_grad(y));
    gcn_tensor_free(&y);
    cr_assert_eq(gcn_relu(ctx, w, &y), GCN_OK);
    cr_assert_eq(gcn_tape_len(ctx), 1);
    cr_assert(gcn_tensor_requires_grad(y));
    cr_assert_eq(gcn_tensor_set_requires_grad(y, false), GCN_ERR_STATE);
    gcn_tape_clear(ctx);
    gcn_tensor_free(&y);
    gcn_tensor_free(&w);
}

Test(ops, backward_accumulates_until_zero_grad)
{
    gcn_tensor *w = test_tensor(ctx, (float[]){1, -2, 3}, 3, 1), *s = NULL;
    cr_assert_eq(gcn_tensor_set_requires_grad(w, true), GCN_OK);
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(gcn_sum(ctx, w, &s), GCN_OK);
        cr_assert_eq(gcn_backward(ctx, s), GCN_OK);
        gcn_tensor_free(&s);
    }
    expect(gcn_tensor_grad(w), (float[]){2, 2, 2}, 3, 0);
    cr_assert_eq(gcn_tensor_zero_grad(ctx, w), GCN_OK);
    expect(gcn_tensor_grad(w), (float[]){0, 0, 0}, 3, 0);
    gcn_tensor_free(&w);
}
