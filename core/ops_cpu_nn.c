/* CPU backend, neural-network part: batch norm, log_softmax, NLL, accuracy
 * and cross-entropy.  Statistics accumulate in double. */
#include <math.h>
#include <stdlib.h>

#include "ops_cpu.h"

#define ACC(p, acc) ((acc) ? (p) : 0.0f)

gcn_status gcn_cpu_batchnorm_train(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                   const float *gamma, const float *beta, float *y,
                                   float *save_mean, float *save_invstd, float *running_mean,
                                   float *running_var, float momentum, float eps)
{
    (void)ctx;
    for (int64_t j = 0; j < cols; j++) {
        double mean = 0.0, var = 0.0;
        for (int64_t i = 0; i < rows; i++)
            mean += x[i * cols + j];
        mean /= (double)rows;
        for (int64_t i = 0; i < rows; i++) {
            double d = x[i * cols + j] - mean;
            var += d * d;
        }
        double unbiased = var / (double)(rows - 1);
        var /= (double)rows;
        double invstd = 1.0 / sqrt(var + eps);
        for (int64_t i = 0; i < rows; i++)
            y[i * cols + j] = (float)((x[i * cols + j] - mean) * invstd * gamma[j] + beta[j]);
        save_mean[j] = (float)mean;
        save_invstd[j] = (float)invstd;
        running_mean[j] = (float)((1.0 - momentum) * running_mean[j] + momentum * mean);
        running_var[j] = (float)((1.0 - momentum) * running_var[j] + momentum * unbiased);
    }
    return GCN_OK;
}

gcn_status gcn_cpu_batchnorm_eval(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                  const float *gamma, const float *beta, const float *mean,
                                  const float *var, float eps, float *y)
{
    (void)ctx;
    for (int64_t j = 0; j < cols; j++) {
        double invstd = 1.0 / sqrt((double)var[j] + eps);
        for (int64_t i = 0; i < rows; i++)
            y[i * cols + j] = (float)((x[i * cols + j] - mean[j]) * invstd * gamma[j] + beta[j]);
    }
    return GCN_OK;
}

/* dx = gamma invstd / n (n dy - sum dy - xhat sum(dy xhat)) */
gcn_status gcn_cpu_batchnorm_backward(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                      const float *gamma, const float *save_mean,
                                      const float *save_invstd, const float *dy, float *dx,
                                      float *dgamma, float *dbeta, bool acc_x, bool acc_gamma,
                                      bool acc_beta)
{
    (void)ctx;
    for (int64_t j = 0; j < cols; j++) {
        double mean = save_mean[j], invstd = save_invstd[j], sdy = 0.0, sdyx = 0.0;
        for (int64_t i = 0; i < rows; i++) {
            double xhat = (x[i * cols + j] - mean) * invstd;
            sdy += dy[i * cols + j];
            sdyx += dy[i * cols + j] * xhat;
        }
        if (dgamma)
            dgamma[j] = (float)sdyx + ACC(dgamma[j], acc_gamma);
        if (dbeta)
            dbeta[j] = (float)sdy + ACC(dbeta[j], acc_beta);
        if (!dx)
            continue;
        double k = gamma[j] * invstd / (double)rows;
        for (int64_t i = 0; i < rows; i++) {
            double xhat = (x[i * cols + j] - mean) * invstd;
            double g = k * ((double)rows * dy[i * cols + j] - sdy - xhat * sdyx);
            dx[i * cols + j] = (float)g + ACC(dx[i * cols + j], acc_x);
        }
    }
    return GCN_OK;
}

gcn_status gcn_cpu_batchnorm_eval_backward(gcn_ctx *ctx, int64_t rows, int64_t cols,
                                           const float *x, const float *gamma, const float *mean,
                                           const float *var, float eps, const float *dy,
                                           float *dx, float *dgamma, float *dbeta, bool acc_x,
                                           bool acc_gamma, bool acc_beta)
{
    (void)ctx;
    for (int64_t j = 0; j < cols; j++) {
        double invstd = 1.0 / sqrt((double)var[j] + eps), sdy = 0.0, sdyx = 0.0;
        for (int64_t i = 0; i < rows; i++) {
            double g = dy[i * cols + j];
            sdy += g;
            sdyx += g * (x[i * cols + j] - mean[j]) * invstd;
            if (dx)
                dx[i * cols + j] = (float)(g * gamma[j] * invstd) + ACC(dx[i * cols + j], acc_x);
        }
        if (dgamma)
            dgamma[j] = (float)sdyx + ACC(dgamma[j], acc_gamma);
        if (dbeta)
            dbeta[j] = (float)sdy + ACC(dbeta[j], acc_beta);
    }
    return GCN_OK;
}

/* log sum_j exp(x[j]) in double, shifted by the largest value. */
static double log_sum_exp(const float *x, int64_t cols)
{
    float mx = x[0];
    for (int64_t j = 1; j < cols; j++)
        mx = x[j] > mx ? x[j] : mx;
    double s = 0.0;
    for (int64_t j = 0; j < cols; j++)
        s += exp((double)x[j] - mx);
    return mx + log(s);
}

gcn_status gcn_cpu_log_softmax(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x, float *y)
{
    (void)ctx;
    for (int64_t i = 0; i < rows; i++) {
        const float *xi = x + i * cols;
        double lse = log_sum_exp(xi, cols);
        for (int64_t j = 0; j < cols; j++)
            y[i * cols + j] = (float)(xi[j] - lse);
    }
    return GCN_OK;
}

/* dx = dy - softmax * sum(dy), softmax = exp(y) */
gcn_status gcn_cpu_log_softmax_backward(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *y,
                                        const float *dy, float *dx, bool acc)
{
    (void)ctx;
    for (int64_t i = 0; i < rows; i++) {
        double s = 0.0;
        for (int64_t j = 0; j < cols; j++)
            s += dy[i * cols + j];
        for (int64_t j = 0; j < cols; j++) {
            float g = (float)(dy[i * cols + j] - exp((double)y[i * cols + j]) * s);
            dx[i * cols + j] = g + ACC(dx[i * cols + j], acc);
        }
    }
    return GCN_OK;
}

gcn_status gcn_cpu_nll(gcn_ctx *ctx, int64_t cols, const float *logp, const int32_t *labels,
                       const int32_t *rows, int64_t n_rows, float *out)
{
    double s = 0.0;
    for (int64_t i = 0; i < n_rows; i++) {
        int32_t r = rows[i], c = labels[r];
        if (c < 0 || c >= cols)
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                             "nll_loss: row %d is listed but its label %d is not a class", r, c);
        s += logp[(int64_t)r * cols + c];
    }
    out[0] = (float)(-s / (double)n_rows);
    return GCN_OK;
}

gcn_status gcn_cpu_nll_backward(gcn_ctx *ctx, int64_t n, int64_t cols, const int32_t *labels,
                                const int32_t *rows, int64_t n_rows, const float *dy,
                                float *dlogp, bool acc)
{
    (void)ctx;
    if (!acc)
        for (int64_t i = 0; i < n * cols; i++)
            dlogp[i] = 0.0f;
    float g = -dy[0] / (float)n_rows;
    for (int64_t i = 0; i < n_rows; i++) {
        int32_t r = rows[i];
        dlogp[(int64_t)r * cols + labels[r]] += g;
    }
    return GCN_OK;
}

gcn_status gcn_cpu_count_correct(gcn_ctx *ctx, int64_t cols, const float *scores,
                                 const int32_t *labels, const int32_t *rows, int64_t n_rows,
                                 double *count)
{
    (void)ctx;
    int64_t hits = 0;
    for (int64_t i = 0; i < n_rows; i++) {
        const float *si = scores + (int64_t)rows[i] * cols;
        int64_t best = 0;
        for (int64_t j = 1; j < cols; j++)
            if (si[j] > si[best])
                best = j;
        hits += best == labels[rows[i]];
    }
    *count = (double)hits;
    return GCN_OK;
}

gcn_status gcn_cpu_cross_entropy(gcn_ctx *ctx, int64_t cols, const float *x, const int32_t *labels,
                                 const int32_t *rows, int64_t n_rows, float *lse, float *out)
{
    double s = 0.0;
    for (int64_t i = 0; i < n_rows; i++) {
        int32_t r = rows[i], c = labels[r];
        if (c < 0 || c >= cols)
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                             "cross_entropy: row %d is listed but its label %d is not a class", r,
                             c);
        const float *xr = x + (int64_t)r * cols;
        double l = log_sum_exp(xr, cols);
        lse[i] = (float)l;
        s += xr[c] - l;
    }
    out[0] = (float)(-s / (double)n_rows);
    return GCN_OK;
}

gcn_status gcn_cpu_cross_entropy_backward(gcn_ctx *ctx, int64_t n, int64_t cols, const float *x,
                                          const int32_t *labels, const int32_t *rows,
                                          int64_t n_rows, const float *lse, const float *dy,
                                          float *dx, bool acc)
{
    (void)ctx;
    if (!acc)
        for (int64_t i = 0; i < n * cols; i++)
            dx[i] = 0.0f;
    float g = dy[0] / (float)n_rows;
    for (int64_t i = 0; i < n_rows; i++) {
        int64_t base = (int64_t)rows[i] * cols;
        int32_t c = labels[rows[i]];
        for (int64_t j = 0; j < cols; j++) {
            float p = (float)exp((double)x[base + j] - lse[i]);
            dx[base + j] += g * (j == c ? p - 1.0f : p);
        }
    }
    return GCN_OK;
}

/* ---- segment pooling ------------------------------------------------------ */

gcn_status gcn_cpu_segment_pool(gcn_ctx *ctx, gcn_pooling kind, int64_t n_seg, int64_t cols,
                                const int32_t *offsets, const float *x, float *out,
                                int32_t *argmax)
{
    (void)ctx;
    for (int64_t s = 0; s < n_seg; s++)
        for (int64_t c = 0; c < cols; c++) {
            float acc = 0.0f;
            int32_t arg = -1;
            for (int32_t r = offsets[s]; r < offsets[s + 1]; r++) {
                float v = x[r * cols + c];
                if (kind != GCN_POOL_MAX)
                    acc += v;
                else if (arg < 0 || v > acc || v != v) /* NaN wins, as in PyTorch */
                    acc = v, arg = r;
            }
            if (kind == GCN_POOL_MEAN && offsets[s + 1] > offsets[s])
                acc /= (float)(offsets[s + 1] - offsets[s]);
            out[s * cols + c] = acc;
            if (kind == GCN_POOL_MAX)
                argmax[s * cols + c] = arg;
        }
    return GCN_OK;
}

gcn_status gcn_cpu_segment_pool_backward(gcn_ctx *ctx, gcn_pooling kind, int64_t n_seg,
                                         int64_t cols, const int32_t *offsets,
                                         const int32_t *argmax, const float *dy, float *dx,
                                         bool acc)
{
    (void)ctx;
    for (int64_t s = 0; s < n_seg; s++)
        for (int32_t r = offsets[s]; r < offsets[s + 1]; r++)
            for (int64_t c = 0; c < cols; c++) {
                float g = dy[s * cols + c];
                if (kind == GCN_POOL_MEAN)
                    g /= (float)(offsets[s + 1] - offsets[s]);
                else if (kind == GCN_POOL_MAX && argmax[s * cols + c] != r)
                    g = 0.0f;
                dx[r * cols + c] = g + ACC(dx[r * cols + c], acc);
            }
    return GCN_OK;
}
