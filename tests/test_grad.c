/* Finite-difference gradient checks of every differentiable op.  Each op's
 * output is reduced to a scalar by fixed row and column weights,
 * loss = r^T op(inputs) w, and compared with an independent double-precision
 * forward of the same loss. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "core/internal.h"
#include "core/philox.h"
#include "helpers.h"

#define TOL 2e-3 /* float32 analytic gradient vs double central differences */

/* Applies `op` to the checker's inputs and weighs the result. */
typedef gcn_status (*unary_op)(gcn_ctx *, gcn_tensor *, gcn_tensor **);
typedef struct { unary_op op; int64_t n, f; } unary_case;

static gcn_status lib_unary(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    unary_case *c = user;
    gcn_tensor *y = NULL;
    gcn_status st = c->op(ctx, in[0], &y);
    if (st == GCN_OK)
        st = test_weigh(ctx, y, loss);
    gcn_tensor_free(&y);
    return st;
}

/* ---- matmul ------------------------------------------------------------ */

typedef struct { bool ta, tb; int64_t m, k, n; } mm_case;

static gcn_status lib_matmul(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    mm_case *c = user;
    gcn_tensor *y = NULL;
    gcn_status st = gcn_matmul(ctx, in[0], in[1], c->ta, c->tb, &y);
    if (st == GCN_OK)
        st = test_weigh(ctx, y, loss);
    gcn_tensor_free(&y);
    return st;
}

static double ref_matmul(double **in, void *user)
{
    mm_case *c = user;
    double y[64 * 64];
    for (int64_t i = 0; i < c->m; i++)
        for (int64_t j = 0; j < c->n; j++) {
            double s = 0.0;
            for (int64_t l = 0; l < c->k; l++) {
                double a = c->ta ? in[0][l * c->m + i] : in[0][i * c->k + l];
                double b = c->tb ? in[1][j * c->k + l] : in[1][l * c->n + j];
                s += a * b;
            }
            y[i * c->n + j] = s;
        }
    return test_weigh_ref(y, c->m, c->n);
}

Test(grad, matmul_all_transposes)
{
    for (int t = 0; t < 4; t++) {
        gcn_ctx *ctx = test_cpu_ctx(1);
        mm_case c = {t & 1, t >> 1, 5, 7, 3};
        test_input in[2] = {{c.ta ? c.k : c.m, c.ta ? c.m : c.k, -1, 1},
                            {c.tb ? c.n : c.k, c.tb ? c.k : c.n, -1, 1}};
        test_gradcheck(ctx, in, 2, lib_matmul, ref_matmul, &c, TOL);
        gcn_ctx_free(&ctx);
    }
}

static gcn_status lib_matmul_bias(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    (void)user;
    gcn_tensor *y = NULL;
    gcn_status st = gcn_matmul_bias(ctx, in[0], in[1], in[2], &y);
    if (st == GCN_OK)
        st = test_weigh(ctx, y, loss);
    gcn_tensor_free(&y);
    return st;
}

static double ref_matmul_bias(double **in, void *user)
{
    (void)user;
    double y[5 * 3];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++) {
            double s = in[2][j];
            for (int l = 0; l < 7; l++)
                s += in[0][i * 7 + l] * in[1][l * 3 + j];
            y[i * 3 + j] = s;
        }
    return test_weigh_ref(y, 5, 3);
}

Test(grad, matmul_bias)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    test_input in[3] = {{5, 7, -1, 1}, {7, 3, -1, 1}, {1, 3, -1, 1}};
    test_gradcheck(ctx, in, 3, lib_matmul_bias, ref_matmul_bias, NULL, TOL);
    gcn_tensor *x = NULL, *w = NULL, *b = NULL, *y = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &x, 5, 7), GCN_OK);
    cr_assert_eq(gcn_tensor_zeros(ctx, &w, 7, 3), GCN_OK);
    cr_assert_eq(gcn_tensor_zeros(ctx, &b, 1, 4), GCN_OK);
    cr_assert_eq(gcn_matmul_bias(ctx, x, w, b, &y), GCN_ERR_SHAPE);
    cr_assert(strstr(gcn_last_error(ctx), "bias is [1, 4], not [1, 3]"), "%s",
              gcn_last_error(ctx));
    cr_assert_eq(gcn_matmul_bias(ctx, x, w, NULL, &y), GCN_ERR_INVALID_ARG);
    cr_assert_null(y);
    gcn_tensor_free(&x);
    gcn_tensor_free(&w);
    gcn_tensor_free(&b);
    gcn_ctx_free(&ctx);
}

static gcn_status lib_matmul_self(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    gcn_tensor *both[2] = {in[0], in[0]};
    return lib_matmul(ctx, both, user, loss);
}

static double ref_matmul_self(double **in, void *user)
{
    double *both[2] = {in[0], in[0]};
    return ref_matmul(both, user);
}

Test(grad, matmul_same_tensor_twice)
{
    /* X^T X uses one input on both sides: both contributions accumulate. */
    gcn_ctx *ctx = test_cpu_ctx(1);
    mm_case c = {true, false, 4, 6, 4};
    test_input in[1] = {{6, 4, -1, 1}};
    test_gradcheck(ctx, in, 1, lib_matmul_self, ref_matmul_self, &c, TOL);
    gcn_ctx_free(&ctx);
}

/* ---- element-wise ------------------------------------------------------ */

static gcn_status lib_add(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    (void)user;
    gcn_tensor *y = NULL;
    gcn_status st = gcn_add(ctx, in[0], in[1], &y);
    if (st == GCN_OK)
        st = test_weigh(ctx, y, loss);
    gcn_tensor_free(&y);
    return st;
}

static double ref_add(double **in, void *user)
{
    (void)user;
    double y[6 * 4];
    for (int i = 0; i < 24; i++)
        y[i] = in[0][i] + in[1][i];
    return test_weigh_ref(y, 6, 4);
}

Test(grad, add)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    test_input in[2] = {{6, 4, -1, 1}, {6, 4, -1, 1}};
    test_gradcheck(ctx, in, 2, lib_add, ref_add, NULL, TOL);
    gcn_ctx_free(&ctx);
}

static gcn_status lib_add_bias(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    (void)user;
    gcn_tensor *y = NULL;
    gcn_status st = gcn_add_bias(ctx, in[0], in[1], &y);
    if (st == GCN_OK)
        st = test_weigh(ctx, y, loss);
    gcn_tensor_free(&y);
    return st;
}

static double ref_add_bias(double **in, void *user)
{
    (void)user;
    double y[7 * 3];
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 3; j++)
            y[i * 3 + j] = in[0][i * 3 + j] + in[1][j];
    return test_weigh_ref(y, 7, 3);
}

Test(grad, add_bias)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    test_input in[2] = {{7, 3, -1, 1}, {1, 3, -1, 1}};
    test_gradcheck(ctx, in, 2, lib_add_bias, ref_add_bias, NULL, TOL);
    gcn_ctx_free(&ctx);
}

static gcn_status scale_by_3(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor **y)
{
    return gcn_scale(ctx, x, -3.0f, y);
}

static double ref_scale(double **in, void *user)
{
    unary_case *c = user;
    double y[64];
    for (int64_t i = 0; i < c->n * c->f; i++)
        y[i] = -3.0 * in[0][i];
    return test_weigh_ref(y, c->n, c->f);
}

Test(grad, scale)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    unary_case c = {scale_by_3, 5, 4};
    test_input in[1] = {{5, 4, -1, 1}};
    test_gradcheck(ctx, in, 1, lib_unary, ref_scale, &c, TOL);
    gcn_ctx_free(&ctx);
}

static double ref_relu(double **in, void *user)
{
    unary_case *c = user;
    double y[64];
    for (int64_t i = 0; i < c->n * c->f; i++)
        y[i] = in[0][i] > 0.0 ? in[0][i] : 0.0;
    return test_weigh_ref(y, c->n, c->f);
}

Test(grad, relu)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    unary_case c = {gcn_relu, 6, 5};
    test_input in[1] = {{6, 5, -1, 1}};
    test_gradcheck(ctx, in, 1, lib_unary, ref_relu, &c, TOL);
    gcn_ctx_free(&ctx);
}

/* Dropout with p = 0.4; the reference rebuilds the mask from Philox itself:
 * a fresh context draws its first dropout mask at stream offset 0. */
static gcn_status dropout_04(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor **y)
{
    return gcn_dropout(ctx, x, 0.4f, true, y);
}

static double ref_dropout(double **in, void *user)
{
    unary_case *c = user;
    double y[64];
    uint32_t key[2] = {7, 0};
    for (int64_t i = 0; i < c->n * c->f; i++) {
        uint32_t ctr[4] = {(uint32_t)(i / 4), 0, GCN_RNG_DROPOUT, 0}, out[4];
        gcn_philox4x32(ctr, key, out);
        double u = (double)(out[i % 4] >> 8) / 16777216.0;
        y[i] = u >= 0.4 ? in[0][i] / 0.6 : 0.0;
    }
    return test_weigh_ref(y, c->n, c->f);
}

Test(grad, dropout)
{
    gcn_ctx *ctx = test_cpu_ctx(7);
    unary_case c = {dropout_04, 8, 6};
    test_input in[1] = {{8, 6, -1, 1}};
    test_gradcheck(ctx, in, 1, lib_unary, ref_dropout, &c, TOL);
    gcn_ctx_free(&ctx);
}

/* ---- batch norm --------------------------------------------------------- */

typedef struct { bool training; int64_t n, f; } bn_case;

static gcn_status lib_bn(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    bn_case *c = user;
    gcn_tensor *rm = NULL, *rv = NULL, *y = NULL;
    float mean[8], var[8];
    for (int j = 0; j < c->f; j++) {
        mean[j] = 0.1f * (float)j;
        var[j] = 0.5f + 0.25f * (float)j;
    }
    gcn_status st = gcn_tensor_from_host(ctx, &rm, mean, 1, c->f);
    if (st == GCN_OK)
        st = gcn_tensor_from_host(ctx, &rv, var, 1, c->f);
    if (st == GCN_OK)
        st = gcn_batchnorm(ctx, in[0], in[1], in[2], rm, rv, c->training, 0.1f, 1e-5f, &y);
    if (st == GCN_OK)
        st = test_weigh(ctx, y, loss);
    gcn_tensor_free(&y);
    gcn_tensor_free(&rm);
    gcn_tensor_free(&rv);
    return st;
}

static double ref_bn(double **in, void *user)
{
    bn_case *c = user;
    double y[64];
    for (int64_t j = 0; j < c->f; j++) {
        double mean = (double)(0.1f * (float)j), var = 0.5 + 0.25 * (double)j;
        if (c->training) {
            mean = var = 0.0;
            for (int64_t i = 0; i < c->n; i++)
                mean += in[0][i * c->f + j] / (double)c->n;
            for (int64_t i = 0; i < c->n; i++)
                var += pow(in[0][i * c->f + j] - mean, 2) / (double)c->n;
        }
        for (int64_t i = 0; i < c->n; i++)
            y[i * c->f + j] = (in[0][i * c->f + j] - mean) / sqrt(var + 1e-5) * in[1][j] + in[2][j];
    }
    return test_weigh_ref(y, c->n, c->f);
}

Test(grad, batchnorm_training)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    bn_case c = {true, 9, 4};
    test_input in[3] = {{9, 4, -2, 2}, {1, 4, 0.5f, 1.5f}, {1, 4, -1, 1}};
    test_gradcheck(ctx, in, 3, lib_bn, ref_bn, &c, TOL);
    gcn_ctx_free(&ctx);
}

Test(grad, batchnorm_eval)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    bn_case c = {false, 5, 3};
    test_input in[3] = {{5, 3, -2, 2}, {1, 3, 0.5f, 1.5f}, {1, 3, -1, 1}};
    test_gradcheck(ctx, in, 3, lib_bn, ref_bn, &c, TOL);
    gcn_ctx_free(&ctx);
}

/* ---- log_softmax and NLL ------------------------------------------------- */

static const int32_t nll_labels[6] = {2, 0, -1, 4, 1, 3};
static const int32_t nll_rows[4] = {0, 3, 4, 1};

static gcn_status lib_nll(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    (void)user;
    gcn_index *labels = test_index(ctx, nll_labels, 6), *rows = test_index(ctx, nll_rows, 4);
    gcn_tensor *lp = NULL;
    gcn_status st = gcn_log_softmax(ctx, in[0], &lp);
    if (st == GCN_OK)
        st = gcn_nll_loss(ctx, lp, labels, rows, loss);
    gcn_tensor_free(&lp);
    gcn_index_free(&labels);
    gcn_index_free(&rows);
    return st;
}

static double ref_nll(double **in, void *user)
{
    (void)user;
    double s = 0.0;
    for (int k = 0; k < 4; k++) {
        const double *x = in[0] + nll_rows[k] * 5;
        double lse = 0.0;
        for (int j = 0; j < 5; j++)
            lse += exp(x[j]);
        s += x[nll_labels[nll_rows[k]]] - log(lse);
    }
    return -s / 4.0;
}

Test(grad, log_softmax_nll)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    test_input in[1] = {{6, 5, -3, 3}};
    test_gradcheck(ctx, in, 1, lib_nll, ref_nll, NULL, TOL);
    gcn_ctx_free(&ctx);
}

/* The fused op over a row list that names row 3 twice (it counts twice). */
static const int32_t ce_rows[5] = {0, 3, 4, 1, 3};

static gcn_status lib_cross_entropy(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    (void)user;
    gcn_index *labels = test_index(ctx, nll_labels, 6), *rows = test_index(ctx, ce_rows, 5);
    gcn_status st = gcn_cross_entropy(ctx, in[0], labels, rows, loss);
    gcn_index_free(&labels);
    gcn_index_free(&rows);
    return st;
}

static double ref_cross_entropy(double **in, void *user)
{
    (void)user;
    double s = 0.0;
    for (int k = 0; k < 5; k++) {
        const double *x = in[0] + ce_rows[k] * 5;
        double lse = 0.0;
        for (int j = 0; j < 5; j++)
            lse += exp(x[j]);
        s += x[nll_labels[ce_rows[k]]] - log(lse);
    }
    return -s / 5.0;
}

Test(grad, cross_entropy)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    test_input in[1] = {{6, 5, -3, 3}};
    test_gradcheck(ctx, in, 1, lib_cross_entropy, ref_cross_entropy, NULL, TOL);
    gcn_ctx_free(&ctx);
}

static double ref_log_softmax(double **in, void *user)
{
    unary_case *c = user;
    double y[64];
    for (int64_t i = 0; i < c->n; i++) {
        double lse = 0.0;
        for (int64_t j = 0; j < c->f; j++)
            lse += exp(in[0][i * c->f + j]);
        for (int64_t j = 0; j < c->f; j++)
            y[i * c->f + j] = in[0][i * c->f + j] - log(lse);
    }
    return test_weigh_ref(y, c->n, c->f);
}

Test(grad, log_softmax_alone)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    unary_case c = {gcn_log_softmax, 4, 6};
    test_input in[1] = {{4, 6, -3, 3}};
    test_gradcheck(ctx, in, 1, lib_unary, ref_log_softmax, &c, TOL);
    gcn_ctx_free(&ctx);
}

/* ---- concat, sum, mean --------------------------------------------------- */

static gcn_status lib_concat(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    (void)user;
    gcn_tensor *parts[3] = {in[0], in[1], in[0]}, *y = NULL;
    gcn_status st = gcn_concat_cols(ctx, parts, 3, &y);
    if (st == GCN_OK)
        st = test_weigh(ctx, y, loss);
    gcn_tensor_free(&y);
    return st;
}

static double ref_concat(double **in, void *user)
{
    (void)user;
    double y[4 * 7];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 7; j++)
            y[i * 7 + j] = j < 2 ? in[0][i * 2 + j] : j < 5 ? in[1][i * 3 + j - 2] : in[0][i * 2 + j - 5];
    return test_weigh_ref(y, 4, 7);
}

Test(grad, concat_cols)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    test_input in[2] = {{4, 2, -1, 1}, {4, 3, -1, 1}};
    test_gradcheck(ctx, in, 2, lib_concat, ref_concat, NULL, TOL);
    gcn_ctx_free(&ctx);
}

static gcn_status lib_reduce(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    /* sum(x) * 0.5 + mean(relu(x)): both reductions on one graph. */
    (void)user;
    gcn_tensor *s = NULL, *h = NULL, *r = NULL, *m = NULL;
    gcn_status st = gcn_sum(ctx, in[0], &s);
    if (st == GCN_OK)
        st = gcn_scale(ctx, s, 0.5f, &h);
    if (st == GCN_OK)
        st = gcn_relu(ctx, in[0], &r);
    if (st == GCN_OK)
        st = gcn_mean(ctx, r, &m);
    if (st == GCN_OK)
        st = gcn_add(ctx, h, m, loss);
    gcn_tensor_free(&s);
    gcn_tensor_free(&h);
    gcn_tensor_free(&r);
    gcn_tensor_free(&m);
    return st;
}

static double ref_reduce(double **in, void *user)
{
    (void)user;
    double s = 0.0, m = 0.0;
    for (int i = 0; i < 15; i++) {
        s += in[0][i];
        m += in[0][i] > 0 ? in[0][i] / 15.0 : 0.0;
    }
    return 0.5 * s + m;
}

Test(grad, sum_and_mean)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    test_input in[1] = {{5, 3, -1, 1}};
    test_gradcheck(ctx, in, 1, lib_reduce, ref_reduce, NULL, TOL);
    gcn_ctx_free(&ctx);
}

static gcn_status elu_07(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor **y)
{
    return gcn_elu(ctx, x, 0.7f, y);
}

static double ref_elu(double **in, void *user)
{
    unary_case *c = user;
    double y[64];
    for (int64_t i = 0; i < c->n * c->f; i++)
        y[i] = in[0][i] > 0.0 ? in[0][i] : 0.7 * expm1(in[0][i]);
    return test_weigh_ref(y, c->n, c->f);
}

Test(grad, elu)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    unary_case c = {elu_07, 5, 6};
    test_input in[1] = {{5, 6, -2, 2}};
    test_gradcheck(ctx, in, 1, lib_unary, ref_elu, &c, TOL);
    gcn_ctx_free(&ctx);
}

static gcn_status lib_scale_by(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    (void)user;
    gcn_tensor *y = NULL;
    gcn_status st = gcn_scale_by(ctx, in[0], in[1], &y);
    if (st == GCN_OK)
        st = test_weigh(ctx, y, loss);
    gcn_tensor_free(&y);
    return st;
}

static double ref_scale_by(double **in, void *user)
{
    (void)user;
    double y[4 * 5];
    for (int i = 0; i < 20; i++)
        y[i] = in[1][0] * in[0][i];
    return test_weigh_ref(y, 4, 5);
}

Test(grad, scale_by_trainable_scalar)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    test_input in[2] = {{4, 5, -1, 1}, {1, 1, 0.5f, 1.5f}};
    test_gradcheck(ctx, in, 2, lib_scale_by, ref_scale_by, NULL, TOL);
    gcn_ctx_free(&ctx);
}
