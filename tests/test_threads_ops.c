/* The CPU backend's threaded element-wise ops, reductions, losses and fused
 * epilogue, called through the backend table at several thread counts on
 * shapes that split unevenly (fewer rows than threads; many rows of few
 * columns): against double-precision references, and the same bits at
 * every count (reductions add fixed chunks in a fixed order). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "helpers.h"
#include "threads_check.h"

/* rows x cols: fewer rows than threads, many short rows, and in between. */
static const int64_t shapes[][2] = {{3, 50000}, {100003, 3}, {2000, 70}};
#define N_SHAPES 3

/* Runs `op` at every thread count; fails unless each writes the same
 * bits into out[0, n) as the single thread does. */
typedef void (*op_fn)(gcn_ctx *ctx, const float *in, int64_t rows, int64_t cols, float *out);

static void same_bits_at_every_count(op_fn op, const float *in, int64_t rows, int64_t cols,
                                     int64_t n, const char *what, float *first)
{
    float *out = malloc((size_t)n * sizeof *out);
    for (int t = 0; t < N_COUNTS; t++) {
        gcn_ctx *ctx = threads_ctx(thread_counts[t], 1);
        for (int64_t i = 0; i < n; i++)
            out[i] = NAN;
        op(ctx, in, rows, cols, t ? out : first);
        if (t)
            expect_same_bits(first, out, (size_t)n * sizeof *out, what, 1, thread_counts[t]);
        gcn_ctx_free(&ctx);
    }
    free(out);
}

/* out = [col_sum(x) (cols), sum(x), dot(x, x)] */
static void sums_op(gcn_ctx *ctx, const float *x, int64_t rows, int64_t cols, float *out)
{
    cr_assert_eq(ctx->be->col_sum(ctx, rows, cols, x, out, false), GCN_OK);
    cr_assert_eq(ctx->be->sum(ctx, rows * cols, x, out + cols), GCN_OK);
    cr_assert_eq(ctx->be->dot(ctx, rows * cols, x, x, out + cols + 1, false), GCN_OK);
}

Test(threads_ops, sums_against_double_precision)
{
    for (int s = 0; s < N_SHAPES; s++) {
        int64_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
        float *x = random_floats(n, -1, 2, 50 + (uint64_t)s);
        float *out = malloc((size_t)(cols + 2) * sizeof *out);
        double *want = calloc((size_t)cols + 2, sizeof *want);
        for (int64_t i = 0; i < n; i++) {
            want[i % cols] += x[i];
            want[cols] += x[i];
            want[cols + 1] += (double)x[i] * x[i];
        }
        same_bits_at_every_count(sums_op, x, rows, cols, cols + 2, "col_sum, sum, dot", out);
        expect_near(out, want, NULL, cols + 2, 1e-6, "col_sum, sum, dot");
        free(x);
        free(out);
        free(want);
    }
}

/* out = [y (rows x cols), save_mean, save_invstd, then the backward's dx,
 * dgamma, dbeta] of training-mode batch norm, gamma, beta and dy derived
 * from x. */
static void batchnorm_op(gcn_ctx *ctx, const float *x, int64_t rows, int64_t cols, float *out)
{
    int64_t n = rows * cols;
    float *gamma = random_floats(cols, 0.5f, 1.5f, 61), *beta = random_floats(cols, -1, 1, 62);
    float *dy = random_floats(n, -1, 1, 63), *rm = calloc((size_t)cols, 4);
    float *rv = calloc((size_t)cols, 4);
    float *y = out, *mean = out + n, *invstd = mean + cols, *dx = invstd + cols;
    float *dgamma = dx + n, *dbeta = dgamma + cols;
    cr_assert_eq(ctx->be->batchnorm_train(ctx, rows, cols, x, gamma, beta, y, mean, invstd, rm,
                                          rv, 0.1f, 1e-5f),
                 GCN_OK);
    cr_assert_eq(ctx->be->batchnorm_backward(ctx, rows, cols, x, gamma, mean, invstd, dy, dx,
                                             dgamma, dbeta, false, false, false),
                 GCN_OK);
    free(gamma);
    free(beta);
    free(dy);
    free(rm);
    free(rv);
}

static void batchnorm_ref(const float *x, int64_t rows, int64_t cols, double *want)
{
    int64_t n = rows * cols;
    float *gamma = random_floats(cols, 0.5f, 1.5f, 61), *beta = random_floats(cols, -1, 1, 62);
    float *dy = random_floats(n, -1, 1, 63);
    double *y = want, *mean = want + n, *invstd = mean + cols, *dx = invstd + cols;
    double *dgamma = dx + n, *dbeta = dgamma + cols;
    for (int64_t j = 0; j < cols; j++) {
        double m = 0, v = 0, sdy = 0, sdyx = 0;
        for (int64_t i = 0; i < rows; i++)
            m += x[i * cols + j];
        m /= (double)rows;
        for (int64_t i = 0; i < rows; i++)
            v += (x[i * cols + j] - m) * (x[i * cols + j] - m);
        double is = 1.0 / sqrt(v / (double)rows + 1e-5);
        mean[j] = m;
        invstd[j] = is;
        for (int64_t i = 0; i < rows; i++) {
            double xhat = (x[i * cols + j] - m) * is;
            y[i * cols + j] = xhat * gamma[j] + beta[j];
            sdy += dy[i * cols + j];
            sdyx += dy[i * cols + j] * xhat;
        }
        for (int64_t i = 0; i < rows; i++) {
            double xhat = (x[i * cols + j] - m) * is, n = (double)rows;
            dx[i * cols + j] = gamma[j] * is / n * (n * dy[i * cols + j] - sdy - xhat * sdyx);
        }
        dgamma[j] = sdyx;
        dbeta[j] = sdy;
    }
    free(gamma);
    free(beta);
    free(dy);
}

Test(threads_ops, batchnorm_against_double_precision, .timeout = 60)
{
    for (int s = 0; s < N_SHAPES; s++) {
        int64_t rows = shapes[s][0], cols = shapes[s][1], n = 2 * rows * cols + 4 * cols;
        float *x = random_floats(rows * cols, -2, 3, 70 + (uint64_t)s);
        float *out = malloc((size_t)n * sizeof *out);
        double *want = malloc((size_t)n * sizeof *want);
        batchnorm_ref(x, rows, cols, want);
        same_bits_at_every_count(batchnorm_op, x, rows, cols, n, "batchnorm", out);
        /* the gradients of 3 rows are rounding noise around 0: scale by the largest */
        double *scale = malloc((size_t)n * sizeof *scale), big = 0;
        for (int64_t i = 0; i < n; i++)
            big = fmax(big, fabs(want[i]));
        for (int64_t i = 0; i < n; i++)
            scale[i] = 1.0 + fabs(want[i]) + (i >= rows * cols + 2 * cols ? big : 0.0);
        expect_near(out, want, scale, n, 1e-5, "batchnorm");
        free(scale);
        free(x);
        free(out);
        free(want);
    }
}

/* Listed rows: unsorted, with repeats, covering a part of the rows. */
static int32_t *listed_rows(int64_t rows, int64_t *n_listed)
{
    *n_listed = rows / 2 + 2;
    int32_t *r = malloc((size_t)*n_listed * sizeof *r);
    for (int64_t i = 0; i < *n_listed; i++)
        r[i] = (int32_t)((i * 7919) % rows);
    r[*n_listed - 1] = r[0]; /* a row listed twice */
    return r;
}

static int32_t *labels_of(int64_t rows, int64_t cols)
{
    int32_t *l = malloc((size_t)rows * sizeof *l);
    for (int64_t i = 0; i < rows; i++)
        l[i] = (int32_t)((i * 31) % cols);
    return l;
}

/* out = [log_softmax(x), its backward for dy = x, cross-entropy's lse of
 * the listed rows and loss, its backward, the count of correct rows]. */
static void losses_op(gcn_ctx *ctx, const float *x, int64_t rows, int64_t cols, float *out)
{
    int64_t n = rows * cols, n_listed;
    int32_t *r = listed_rows(rows, &n_listed), *labels = labels_of(rows, cols);
    float *ls = out, *dls = ls + n, *lse = dls + n, *loss = lse + n_listed, *dx = loss + 1;
    const float dy = 1.5f;
    double correct = 0;
    cr_assert_eq(ctx->be->log_softmax(ctx, rows, cols, x, ls), GCN_OK);
    cr_assert_eq(ctx->be->log_softmax_backward(ctx, rows, cols, ls, x, dls, false), GCN_OK);
    cr_assert_eq(ctx->be->cross_entropy(ctx, cols, x, labels, r, n_listed, lse, loss), GCN_OK);
    cr_assert_eq(ctx->be->cross_entropy_backward(ctx, rows, cols, x, labels, r, n_listed, lse,
                                                 &dy, dx, false),
                 GCN_OK);
    cr_assert_eq(ctx->be->count_correct(ctx, cols, x, labels, r, n_listed, &correct), GCN_OK);
    dx[n] = (float)correct;
    free(r);
    free(labels);
}

static void losses_ref(const float *x, int64_t rows, int64_t cols, double *want)
{
    int64_t n = rows * cols, n_listed;
    int32_t *r = listed_rows(rows, &n_listed), *labels = labels_of(rows, cols);
    double *ls = want, *dls = ls + n, *lse = dls + n, *loss = lse + n_listed, *dx = loss + 1;
    double *row_lse = malloc((size_t)rows * sizeof *row_lse);
    for (int64_t i = 0; i < rows; i++) {
        double s = 0, sdy = 0;
        for (int64_t j = 0; j < cols; j++) {
            s += exp((double)x[i * cols + j]);
            sdy += x[i * cols + j];
        }
        row_lse[i] = log(s);
        for (int64_t j = 0; j < cols; j++) {
            ls[i * cols + j] = x[i * cols + j] - row_lse[i];
            dls[i * cols + j] = x[i * cols + j] - exp(ls[i * cols + j]) * sdy;
            dx[i * cols + j] = 0;
        }
    }
    *loss = 0;
    dx[n] = 0;
    for (int64_t k = 0; k < n_listed; k++) {
        int64_t i = r[k], best = 0;
        lse[k] = row_lse[i];
        *loss -= (x[i * cols + labels[i]] - row_lse[i]) / (double)n_listed;
        for (int64_t j = 0; j < cols; j++) {
            double p = exp(x[i * cols + j] - row_lse[i]);
            dx[i * cols + j] += 1.5 / (double)n_listed * (p - (j == labels[i]));
            best = x[i * cols + j] > x[i * cols + best] ? j : best;
        }
        dx[n] += best == labels[i];
    }
    free(row_lse);
    free(r);
    free(labels);
}

Test(threads_ops, losses_and_listed_rows_against_double_precision, .timeout = 60)
{
    const int64_t cases[][2] = {{3, 50000}, {100003, 3}, {4001, 40}};
    for (int s = 0; s < 3; s++) {
        int64_t rows = cases[s][0], cols = cases[s][1], n_listed = rows / 2 + 2;
        int64_t n = 3 * rows * cols + n_listed + 2;
        float *x = random_floats(rows * cols, -3, 3, 80 + (uint64_t)s);
        float *out = malloc((size_t)n * sizeof *out);
        double *want = malloc((size_t)n * sizeof *want);
        losses_ref(x, rows, cols, want);
        same_bits_at_every_count(losses_op, x, rows, cols, n, "losses", out);
        expect_near(out, want, NULL, n, 1e-5, "losses");
        free(x);
        free(out);
        free(want);
    }
}

/* The fused epilogue (bias, training-mode batch norm, ReLU, dropout 0.3)
 * forward and backward: out = [epilogue_stats' mean and invstd, out, dx,
 * dbias, dgamma, dbeta]. */
static void epilogue_op(gcn_ctx *ctx, const float *x, int64_t rows, int64_t cols, float *out)
{
    int64_t n = rows * cols;
    float *bias = random_floats(cols, -1, 1, 91), *gamma = random_floats(cols, 0.5f, 1.5f, 92);
    float *beta = random_floats(cols, -1, 1, 93), *dout = random_floats(n, -1, 1, 94);
    float *rm = calloc((size_t)cols, 4), *rv = calloc((size_t)cols, 4);
    float *mean = out, *invstd = mean + cols, *y = invstd + cols, *dx = y + n;
    cr_assert_eq(ctx->be->epilogue_stats(ctx, rows, cols, x, GCN_DTYPE_FP32, bias, true, 0.1f,
                                         1e-5f, rm, rv, mean, invstd),
                 GCN_OK);
    gcn_epilogue_args a = {.rows = rows, .cols = cols, .x = x, .bias = bias, .gamma = gamma,
                           .beta = beta, .mean = mean, .invstd = invstd, .batch_stats = true,
                           .act = GCN_ACT_RELU, .p = 0.3f, .key = {7, 9},
                           .offset = {NULL, 12345}};
    gcn_epilogue_grads g = {.dx = dx, .dbias = dx + n, .dgamma = dx + n + cols,
                            .dbeta = dx + n + 2 * cols};
    cr_assert_eq(ctx->be->epilogue_forward(ctx, &a, y), GCN_OK);
    cr_assert_eq(ctx->be->epilogue_backward(ctx, &a, dout, &g), GCN_OK);
    free(bias);
    free(gamma);
    free(beta);
    free(dout);
    free(rm);
    free(rv);
}

Test(threads_ops, epilogue_same_bits_at_every_count, .timeout = 60)
{
    /* 37 columns: dropout's groups of four straddle the rows */
    const int64_t cases[][2] = {{3, 50000}, {20001, 37}, {2000, 256}};
    for (int s = 0; s < 3; s++) {
        int64_t rows = cases[s][0], cols = cases[s][1], n = 2 * rows * cols + 5 * cols;
        float *x = random_floats(rows * cols, -2, 3, 100 + (uint64_t)s);
        float *out = malloc((size_t)n * sizeof *out);
        same_bits_at_every_count(epilogue_op, x, rows, cols, n, "epilogue", out);
        free(x);
        free(out);
    }
}

/* Element-wise ops: out = [relu, relu backward, elu, add_bias, dropout]. */
static void elementwise_op(gcn_ctx *ctx, const float *x, int64_t rows, int64_t cols, float *out)
{
    int64_t n = rows * cols;
    const uint32_t key[2] = {3, 4};
    cr_assert_eq(ctx->be->relu(ctx, n, x, out), GCN_OK);
    cr_assert_eq(ctx->be->relu_backward(ctx, n, out, x, out + n, false), GCN_OK);
    cr_assert_eq(ctx->be->elu(ctx, n, x, 0.7f, out + 2 * n), GCN_OK);
    cr_assert_eq(ctx->be->add_bias(ctx, rows, cols, x, x, out + 3 * n), GCN_OK);
    cr_assert_eq(ctx->be->dropout(ctx, n, x, out + 4 * n, 0.4f, key, (gcn_draw_offset){.rel = 77},
                                  false),
                 GCN_OK);
}

Test(threads_ops, elementwise_same_bits_at_every_count)
{
    for (int s = 0; s < N_SHAPES; s++) {
        int64_t rows = shapes[s][0], cols = shapes[s][1], n = 5 * rows * cols;
        float *x = random_floats(rows * cols, -2, 2, 110 + (uint64_t)s);
        float *out = malloc((size_t)n * sizeof *out);
        same_bits_at_every_count(elementwise_op, x, rows, cols, n, "element-wise", out);
        for (int64_t i = 0; i < rows * cols; i++)
            cr_assert_eq(out[i], x[i] > 0 ? x[i] : 0.0f);
        free(x);
        free(out);
    }
}
