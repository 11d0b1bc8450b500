/* The fused epilogue on the CPU: the reference the CUDA kernels are tested
 * against.  Statistics and the batch-norm gradient sums are taken in double
 * over the rows in order; element arithmetic is epilogue_math.h's. */
#include <math.h>
#include <stdlib.h>

#include "epilogue_math.h"
#include "ops_cpu.h"

gcn_status gcn_cpu_epilogue_stats(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                  const float *bias, bool training, float momentum, float eps,
                                  float *running_mean, float *running_var, float *mean,
                                  float *invstd)
{
    (void)ctx;
    for (int64_t c = 0; c < cols; c++) {
        if (!training) {
            invstd[c] = (float)(1.0 / sqrt((double)running_var[c] + eps));
            continue;
        }
        float b = bias ? bias[c] : 0.0f;
        double m = 0.0, var = 0.0;
        for (int64_t r = 0; r < rows; r++)
            m += x[r * cols + c] + b;
        m /= (double)rows;
        for (int64_t r = 0; r < rows; r++) {
            double d = (double)(x[r * cols + c] + b) - m;
            var += d * d;
        }
        double unbiased = var / (double)(rows - 1);
        var /= (double)rows;
        mean[c] = (float)m;
        invstd[c] = (float)(1.0 / sqrt(var + eps));
        running_mean[c] = (float)((1.0 - momentum) * running_mean[c] + momentum * m);
        running_var[c] = (float)((1.0 - momentum) * running_var[c] + momentum * unbiased);
    }
    return GCN_OK;
}

/* The per-column constants of a, or NULL when out of memory. */
static gcn_epi_col *columns(const gcn_epilogue_args *a)
{
    gcn_epi_col *k = malloc((size_t)(a->cols > 0 ? a->cols : 1) * sizeof *k);
    for (int64_t c = 0; k && c < a->cols; c++)
        k[c] = gcn_epi_column(a->bias, a->gamma, a->beta, a->mean, a->invstd, c);
    return k;
}

/* Dropout's factor for flat element i: 1 without dropout, else 1 / (1 - p)
 * or 0 by the mask; w caches the words of i's group of four. */
static float drop_factor(const gcn_epilogue_args *a, int64_t i, uint32_t w[4])
{
    if (a->p == 0.0f)
        return 1.0f;
    if (i % 4 == 0)
        gcn_epi_words(a->key, gcn_draw_first(a->offset), (uint64_t)i / 4, w);
    return gcn_epi_kept(w[i % 4], a->p) ? 1.0f / (1.0f - a->p) : 0.0f;
}

gcn_status gcn_cpu_epilogue_forward(gcn_ctx *ctx, const gcn_epilogue_args *a, float *out)
{
    gcn_epi_col *k = columns(a);
    if (!k)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "epilogue: out of host memory");
    uint32_t w[4];
    for (int64_t i = 0; i < a->rows * a->cols; i++) {
        float y = gcn_epi_act(gcn_epi_pre(a->x[i], k[i % a->cols]), a->act, a->alpha);
        float f = drop_factor(a, i, w);
        out[i] = a->p == 0.0f ? y : f != 0.0f ? y * f : 0.0f;
    }
    free(k);
    return GCN_OK;
}

/* g at pre for flat element i, and pre itself. */
static float pre_grad(const gcn_epilogue_args *a, const gcn_epi_col *k, const float *dout,
                      int64_t i, uint32_t w[4], float *pre)
{
    *pre = gcn_epi_pre(a->x[i], *k);
    float f = drop_factor(a, i, w);
    float g = a->p == 0.0f ? dout[i] : f != 0.0f ? dout[i] * f : 0.0f;
    return gcn_epi_act_grad(g, *pre, gcn_epi_act(*pre, a->act, a->alpha), a->act, a->alpha);
}

/* sums[c] = sum of g, sums[cols + c] = sum of g xhat over the rows. */
static void grad_sums(const gcn_epilogue_args *a, const gcn_epi_col *k, const float *dout,
                      double *sums)
{
    uint32_t w[4];
    for (int64_t c = 0; c < 2 * a->cols; c++)
        sums[c] = 0.0;
    for (int64_t i = 0; i < a->rows * a->cols; i++) {
        int64_t c = i % a->cols;
        float pre;
        double g = pre_grad(a, &k[c], dout, i, w, &pre);
        sums[c] += g;
        if (k[c].norm)
            sums[a->cols + c] += g * (((double)(a->x[i] + k[c].bias) - k[c].mean) * a->invstd[c]);
    }
}

/* Batch-norm training: dx = gamma invstd / n (n g - sum g - xhat sum(g xhat));
 * otherwise dx = g scale (scale 1 without batch norm). */
static double dx_value(const gcn_epilogue_args *a, const gcn_epi_col *k, const double *sums,
                       int64_t i, double g)
{
    int64_t c = i % a->cols;
    if (!k->norm)
        return g;
    if (!a->batch_stats)
        return g * k->scale;
    double n = (double)a->rows, invstd = a->invstd[c];
    double xhat = ((double)(a->x[i] + k->bias) - k->mean) * invstd;
    return a->gamma[c] * invstd / n * (n * g - sums[c] - xhat * sums[a->cols + c]);
}

gcn_status gcn_cpu_epilogue_backward(gcn_ctx *ctx, const gcn_epilogue_args *a, const float *dout,
                                     const gcn_epilogue_grads *gr)
{
    int64_t cols = a->cols;
    gcn_epi_col *k = columns(a);
    double *sums = calloc((size_t)(3 * cols + 1), sizeof *sums);
    if (!k || !sums) {
        free(k);
        free(sums);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "epilogue: out of host memory");
    }
    double *dbias = sums + 2 * cols;
    grad_sums(a, k, dout, sums);
    uint32_t w[4];
    for (int64_t i = 0; i < a->rows * cols; i++) {
        float pre;
        double dx = dx_value(a, &k[i % cols], sums, i, pre_grad(a, &k[i % cols], dout, i, w, &pre));
        dbias[i % cols] += (float)dx;
        if (gr->dx)
            gr->dx[i] = (float)dx + (gr->acc_x ? gr->dx[i] : 0.0f);
    }
    for (int64_t c = 0; c < cols; c++) {
        if (gr->dbias)
            gr->dbias[c] = (float)dbias[c] + (gr->acc_bias ? gr->dbias[c] : 0.0f);
        if (gr->dgamma)
            gr->dgamma[c] = (float)sums[cols + c] + (gr->acc_gamma ? gr->dgamma[c] : 0.0f);
        if (gr->dbeta)
            gr->dbeta[c] = (float)sums[c] + (gr->acc_beta ? gr->dbeta[c] : 0.0f);
    }
    free(k);
    free(sums);
    return GCN_OK;
}
