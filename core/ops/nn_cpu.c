/* CPU backend, neural-network part: batch norm, log_softmax, NLL, accuracy,
 * cross-entropy and segment pooling, on the context's threads
 * (parallel.h).  Statistics accumulate in double, over fixed chunks of rows
 * added in chunk order. */
#include <math.h>
#include <stdlib.h>

#include "epilogue_math.h"
#include "cpu.h"
#include "core/parallel.h"

#define ACC(p, acc) ((acc) ? (p) : 0.0f)

/* Work of an element with an exp or log, in units of a plain one. */
#define HEAVY 8

/* A column statistic's operands: x and dy [rows, cols], and per column
 * centre and scale (double). */
typedef struct col_arg {
    int64_t cols;
    const float *x, *dy;
    const double *centre, *scale;
} col_arg;

static void sum_sq_dev(const void *user, int64_t lo, int64_t hi, double *acc)
{
    const col_arg *u = user;
    for (int64_t i = lo; i < hi; i++)
        GCN_SIMD
        for (int64_t j = 0; j < u->cols; j++) {
            double d = u->x[i * u->cols + j] - u->centre[j];
            acc[j] += d * d;
        }
}

/* acc[j] += dy, acc[cols + j] += dy xhat with xhat = (x - centre) scale. */
static void sum_dy_dyx(const void *user, int64_t lo, int64_t hi, double *acc)
{
    const col_arg *u = user;
    for (int64_t i = lo; i < hi; i++)
        GCN_SIMD
        for (int64_t j = 0; j < u->cols; j++) {
            double g = u->dy[i * u->cols + j];
            acc[j] += g;
            acc[u->cols + j] += g * ((u->x[i * u->cols + j] - u->centre[j]) * u->scale[j]);
        }
}

/* Scratch for `words` doubles of the op's own and the partial sums of a
 * reduction `width` wide after them. */
static gcn_status bn_scratch(gcn_ctx *ctx, int64_t words, int64_t width, double **own,
                             double **part)
{
    double *p;
    GCN_TRY(gcn_cpu_scratch(ctx, (size_t)(words + GCN_PAR_CHUNKS * width) * sizeof *p,
                            (void **)&p));
    *own = p;
    *part = p + words;
    return GCN_OK;
}

/* y = (x - mean) invstd gamma + beta, column by column, in double. */
static void bn_normalize(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                         const double *mean, const double *invstd, const float *gamma,
                         const float *beta, float *y)
{
    GCN_PAR_FOR(gcn_par_threads(ctx, rows * cols))
    for (int64_t i = 0; i < rows; i++)
        GCN_SIMD
        for (int64_t j = 0; j < cols; j++)
            y[i * cols + j] =
                (float)((x[i * cols + j] - mean[j]) * invstd[j] * gamma[j] + beta[j]);
}

gcn_status gcn_cpu_batchnorm_train(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                   const float *gamma, const float *beta, float *y,
                                   float *save_mean, float *save_invstd, float *running_mean,
                                   float *running_var, float momentum, float eps)
{
    double *st, *part;
    GCN_TRY(bn_scratch(ctx, 3 * cols, cols, &st, &part));
    double *mean = st, *var = st + cols, *invstd = st + 2 * cols;
    col_arg u = {.cols = cols, .x = x, .centre = mean};
    gcn_par_sums(ctx, rows, cols, 1, gcn_par_add_rows, &(gcn_par_rows){.cols = cols, .x = x},
                 part, mean);
    for (int64_t j = 0; j < cols; j++)
        mean[j] /= (double)rows;
    gcn_par_sums(ctx, rows, cols, 1, sum_sq_dev, &u, part, var);
    for (int64_t j = 0; j < cols; j++) {
        double unbiased = var[j] / (double)(rows - 1);
        var[j] /= (double)rows;
        invstd[j] = 1.0 / sqrt(var[j] + eps);
        save_mean[j] = (float)mean[j];
        save_invstd[j] = (float)invstd[j];
        running_mean[j] = (float)((1.0 - momentum) * running_mean[j] + momentum * mean[j]);
        running_var[j] = (float)((1.0 - momentum) * running_var[j] + momentum * unbiased);
    }
    bn_normalize(ctx, rows, cols, x, mean, invstd, gamma, beta, y);
    return GCN_OK;
}

gcn_status gcn_cpu_batchnorm_eval(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                  const float *gamma, const float *beta, const float *mean,
                                  const float *var, float eps, float *y)
{
    double *st, *part;
    GCN_TRY(bn_scratch(ctx, 2 * cols, 0, &st, &part));
    double *centre = st, *invstd = st + cols;
    for (int64_t j = 0; j < cols; j++) {
        centre[j] = mean[j];
        invstd[j] = 1.0 / sqrt((double)var[j] + eps);
    }
    bn_normalize(ctx, rows, cols, x, centre, invstd, gamma, beta, y);
    return GCN_OK;
}

/* dx = gamma invstd / n (n dy - sum dy - xhat sum(dy xhat)) */
/* dgamma and dbeta from the column sums s (sum of dy, then sum of dy *
 * xhat), each written or added to as its acc flag says; either may be
 * NULL. */
static void bn_param_grads(int64_t cols, const double *s, float *dgamma, float *dbeta,
                           bool acc_gamma, bool acc_beta)
{
    for (int64_t j = 0; j < cols; j++) {
        if (dgamma)
            dgamma[j] = (float)s[cols + j] + ACC(dgamma[j], acc_gamma);
        if (dbeta)
            dbeta[j] = (float)s[j] + ACC(dbeta[j], acc_beta);
    }
}

gcn_status gcn_cpu_batchnorm_backward(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                      const float *gamma, const float *save_mean,
                                      const float *save_invstd, const float *dy, float *dx,
                                      float *dgamma, float *dbeta, bool acc_x, bool acc_gamma,
                                      bool acc_beta)
{
    double *st, *part;
    GCN_TRY(bn_scratch(ctx, 4 * cols, 2 * cols, &st, &part));
    double *mean = st, *invstd = st + cols, *s = st + 2 * cols; /* s: sdy, then sdyx */
    for (int64_t j = 0; j < cols; j++) {
        mean[j] = save_mean[j];
        invstd[j] = save_invstd[j];
    }
    col_arg u = {.cols = cols, .x = x, .dy = dy, .centre = mean, .scale = invstd};
    gcn_par_sums(ctx, rows, 2 * cols, 1, sum_dy_dyx, &u, part, s);
    bn_param_grads(cols, s, dgamma, dbeta, acc_gamma, acc_beta);
    if (!dx)
        return GCN_OK;
    double n = (double)rows;
    GCN_PAR_FOR(gcn_par_threads(ctx, rows * cols))
    for (int64_t i = 0; i < rows; i++)
        GCN_SIMD
        for (int64_t j = 0; j < cols; j++) {
            double k = gamma[j] * invstd[j] / n;
            double xhat = (x[i * cols + j] - mean[j]) * invstd[j];
            double g = k * (n * dy[i * cols + j] - s[j] - xhat * s[cols + j]);
            dx[i * cols + j] = (float)g + ACC(dx[i * cols + j], acc_x);
        }
    return GCN_OK;
}

gcn_status gcn_cpu_batchnorm_eval_backward(gcn_ctx *ctx, int64_t rows, int64_t cols,
                                           const float *x, const float *gamma, const float *mean,
                                           const float *var, float eps, const float *dy,
                                           float *dx, float *dgamma, float *dbeta, bool acc_x,
                                           bool acc_gamma, bool acc_beta)
{
    double *st, *part;
    GCN_TRY(bn_scratch(ctx, 4 * cols, 2 * cols, &st, &part));
    double *centre = st, *invstd = st + cols, *s = st + 2 * cols;
    for (int64_t j = 0; j < cols; j++) {
        centre[j] = mean[j];
        invstd[j] = 1.0 / sqrt((double)var[j] + eps);
    }
    col_arg u = {.cols = cols, .x = x, .dy = dy, .centre = centre, .scale = invstd};
    if (dgamma || dbeta)
        gcn_par_sums(ctx, rows, 2 * cols, 1, sum_dy_dyx, &u, part, s);
    bn_param_grads(cols, s, dgamma, dbeta, acc_gamma, acc_beta);
    if (!dx)
        return GCN_OK;
    GCN_PAR_FOR(gcn_par_threads(ctx, rows * cols))
    for (int64_t i = 0; i < rows; i++)
        GCN_SIMD
        for (int64_t j = 0; j < cols; j++)
            dx[i * cols + j] = (float)((double)dy[i * cols + j] * gamma[j] * invstd[j]) +
                               ACC(dx[i * cols + j], acc_x);
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
    GCN_PAR_FOR(gcn_par_threads(ctx, rows * cols * HEAVY))
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
    GCN_PAR_FOR(gcn_par_threads(ctx, rows * cols * HEAVY))
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

/* The first listed row whose label is not a class, or -1. */
static int64_t bad_label(int64_t cols, const int32_t *labels, const int32_t *rows,
                         int64_t n_rows)
{
    for (int64_t i = 0; i < n_rows; i++)
        if (labels[rows[i]] < 0 || labels[rows[i]] >= cols)
            return i;
    return -1;
}

gcn_status gcn_cpu_nll(gcn_ctx *ctx, int64_t cols, const float *logp, const int32_t *labels,
                       const int32_t *rows, int64_t n_rows, float *out)
{
    int64_t bad = bad_label(cols, labels, rows, n_rows);
    if (bad >= 0)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "nll_loss: row %d is listed but its label %d is not a class", rows[bad],
                         labels[rows[bad]]);
    double s = 0.0;
    for (int64_t i = 0; i < n_rows; i++)
        s += logp[(int64_t)rows[i] * cols + labels[rows[i]]];
    out[0] = (float)(-s / (double)n_rows);
    return GCN_OK;
}

/* Zeroes x [n, cols] unless acc. */
static void zero_unless(gcn_ctx *ctx, int64_t n, int64_t cols, float *x, bool acc)
{
    if (acc)
        return;
    GCN_PAR_FOR(gcn_par_threads(ctx, n * cols))
    for (int64_t i = 0; i < n * cols; i++)
        x[i] = 0.0f;
}

gcn_status gcn_cpu_nll_backward(gcn_ctx *ctx, int64_t n, int64_t cols, const int32_t *labels,
                                const int32_t *rows, int64_t n_rows, const float *dy,
                                float *dlogp, bool acc)
{
    zero_unless(ctx, n, cols, dlogp, acc);
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
    int64_t hits = 0;
#pragma omp parallel for num_threads(gcn_par_threads(ctx, n_rows * cols)) reduction(+ : hits)
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

/* Cross-entropy's rows: the listed rows' scores x [n, cols] and labels;
 * lse receives each listed row's log-sum-exp. */
typedef struct ce_arg {
    int64_t cols;
    const float *x;
    const int32_t *labels, *rows;
    float *lse;
} ce_arg;

static void ce_rows(const void *user, int64_t lo, int64_t hi, double *acc)
{
    const ce_arg *u = user;
    for (int64_t i = lo; i < hi; i++) {
        const float *xr = u->x + (int64_t)u->rows[i] * u->cols;
        double l = log_sum_exp(xr, u->cols);
        u->lse[i] = (float)l;
        acc[0] += xr[u->labels[u->rows[i]]] - l;
    }
}

gcn_status gcn_cpu_cross_entropy(gcn_ctx *ctx, int64_t cols, const float *x, const int32_t *labels,
                                 const int32_t *rows, int64_t n_rows, float *lse, float *out)
{
    int64_t bad = bad_label(cols, labels, rows, n_rows);
    if (bad >= 0)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "cross_entropy: row %d is listed but its label %d is not a class",
                         rows[bad], labels[rows[bad]]);
    double *part;
    GCN_TRY(gcn_cpu_scratch(ctx, (GCN_PAR_CHUNKS + 1) * sizeof *part, (void **)&part));
    ce_arg u = {.cols = cols, .x = x, .labels = labels, .rows = rows, .lse = lse};
    gcn_par_sums(ctx, n_rows, 1, cols * HEAVY, ce_rows, &u, part, part + GCN_PAR_CHUNKS);
    out[0] = (float)(-part[GCN_PAR_CHUNKS] / (double)n_rows);
    return GCN_OK;
}

/* Each thread takes the listed rows of its own range of dx's rows, in list
 * order, so a row listed twice is added to by one thread in the order a
 * single thread would. */
gcn_status gcn_cpu_cross_entropy_backward(gcn_ctx *ctx, int64_t n, int64_t cols, const float *x,
                                          const int32_t *labels, const int32_t *rows,
                                          int64_t n_rows, const float *lse, const float *dy,
                                          float *dx, bool acc)
{
    zero_unless(ctx, n, cols, dx, acc);
    float g = dy[0] / (float)n_rows;
#pragma omp parallel num_threads(gcn_par_threads(ctx, n_rows * cols * HEAVY))
    {
        int64_t t = gcn_par_thread(), team = gcn_par_team();
        int64_t lo = n * t / team, hi = n * (t + 1) / team;
        for (int64_t i = 0; i < n_rows; i++) {
            if (rows[i] < lo || rows[i] >= hi)
                continue;
            int64_t base = (int64_t)rows[i] * cols;
            int32_t c = labels[rows[i]];
            for (int64_t j = 0; j < cols; j++) {
                float p = (float)exp((double)x[base + j] - lse[i]);
                dx[base + j] += g * (j == c ? p - 1.0f : p);
            }
        }
    }
    return GCN_OK;
}

/* ---- segment pooling and the readout's heads ------------------------------- */

/* Column first(k) of gcn_pool_args's side-by-side output. */
static int64_t first_col(const gcn_pool_args *a, int k)
{
    int64_t f = 0;
    for (int j = 0; j < k; j++)
        f += a->cols[j];
    return f;
}

gcn_status gcn_cpu_segment_pool(gcn_ctx *ctx, const gcn_pool_args *a, const float *const *x,
                                float *out, int32_t *argmax)
{
    const int32_t *offsets = a->offsets;
    int64_t n_seg = a->n_seg, width = a->width;
    for (int k = 0; k < a->n; k++) {
        const float *xk = x[k];
        int64_t cols = a->cols[k], first = first_col(a, k);
        GCN_PAR_FOR(gcn_par_threads(ctx, (n_seg > 0 ? offsets[n_seg] : 0) * cols))
        for (int64_t s = 0; s < n_seg; s++)
            for (int64_t c = 0; c < cols; c++) {
                float acc = 0.0f;
                int32_t arg = -1;
                for (int32_t r = offsets[s]; r < offsets[s + 1]; r++) {
                    float v = xk[r * cols + c];
                    if (a->kind != GCN_POOL_MAX)
                        acc += v;
                    else if (arg < 0 || v > acc || v != v) /* NaN wins, as in PyTorch */
                        acc = v, arg = r;
                }
                if (a->kind == GCN_POOL_MEAN && offsets[s + 1] > offsets[s])
                    acc /= (float)(offsets[s + 1] - offsets[s]);
                out[s * width + first + c] = acc;
                if (a->kind == GCN_POOL_MAX)
                    argmax[s * width + first + c] = arg;
            }
    }
    return GCN_OK;
}

gcn_status gcn_cpu_segment_pool_backward(gcn_ctx *ctx, const gcn_pool_args *a,
                                         const int32_t *argmax, const float *dy,
                                         float *const *dx, const bool *acc)
{
    const int32_t *offsets = a->offsets;
    int64_t n_seg = a->n_seg, width = a->width;
    for (int k = 0; k < a->n; k++) {
        if (!dx[k])
            continue;
        float *dxk = dx[k];
        bool acck = acc[k];
        int64_t cols = a->cols[k], first = first_col(a, k);
        GCN_PAR_FOR(gcn_par_threads(ctx, (n_seg > 0 ? offsets[n_seg] : 0) * cols))
        for (int64_t s = 0; s < n_seg; s++)
            for (int32_t r = offsets[s]; r < offsets[s + 1]; r++)
                for (int64_t c = 0; c < cols; c++) {
                    int64_t j = s * width + first + c;
                    float g = dy[j];
                    if (a->kind == GCN_POOL_MEAN)
                        g /= (float)(offsets[s + 1] - offsets[s]);
                    else if (a->kind == GCN_POOL_MAX && argmax[j] != r)
                        g = 0.0f;
                    dxk[r * cols + c] = g + ACC(dxk[r * cols + c], acck);
                }
    }
    return GCN_OK;
}

gcn_status gcn_cpu_heads(gcn_ctx *ctx, const gcn_pool_args *a, const gcn_heads_args *h,
                         const float *pooled, float *scores)
{
    int64_t n_seg = a->n_seg, classes = h->classes, width = a->width;
    float scale = h->p > 0.0f ? 1.0f / (1.0f - h->p) : 1.0f;
    GCN_PAR_FOR(gcn_par_threads(ctx, n_seg * classes * width))
    for (int64_t g = 0; g < n_seg; g++)
        for (int64_t c = 0; c < classes; c++) {
            float score = 0.0f;
            int64_t first = 0;
            for (int k = 0; k < a->n; k++) {
                double lanes[32] = {0.0}; /* the GPU's warp: feature f on lane f % 32 */
                for (int64_t f = 0; f < a->cols[k]; f++)
                    lanes[f % 32] = GCN_EPI_DMULADD(lanes[f % 32],
                                                    (double)pooled[g * width + first + f],
                                                    (double)h->w[k][f * classes + c]);
                float t = (float)gcn_lane_tree_sum(lanes) + (h->b[k] ? h->b[k][c] : 0.0f);
                t = gcn_head_dropout(t, h->p, scale, h->offset, h->key, k, n_seg, classes, g, c);
                score = k == 0 ? t : score + t;
                first += a->cols[k];
            }
            scores[g * classes + c] = score;
        }
    return GCN_OK;
}

gcn_status gcn_cpu_heads_backward(gcn_ctx *ctx, const gcn_pool_args *a, const gcn_heads_args *h,
                                  const float *pooled, const float *dscores, float *dpooled,
                                  const gcn_heads_grads *gr)
{
    int64_t n_seg = a->n_seg, classes = h->classes, width = a->width;
    float scale = h->p > 0.0f ? 1.0f / (1.0f - h->p) : 1.0f;
    /* every head's dscores through its dropout, drawn once: grad[k][g][c] */
    int64_t per_head = n_seg * classes;
    size_t bytes = (size_t)(a->n * per_head) * sizeof(float);
    float *grad;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&grad, bytes));
    for (int k = 0; k < a->n; k++)
        for (int64_t t = 0; t < per_head; t++)
            grad[k * per_head + t] = gcn_head_dropout(dscores[t], h->p, scale, h->offset, h->key,
                                                      k, n_seg, classes, t / classes,
                                                      t % classes);
    for (int k = 0; k < a->n; k++) {
        int64_t cols = a->cols[k], first = first_col(a, k);
        const float *gk = grad + k * per_head;
        float *dw = gr->dw[k], *db = gr->db[k];
        bool acc_w = gr->acc_w[k], acc_b = gr->acc_b[k];
        if (db)
            for (int64_t c = 0; c < classes; c++) {
                double s = 0.0;
                for (int64_t g = 0; g < n_seg; g++)
                    s += gk[g * classes + c];
                db[c] = (float)s + ACC(db[c], acc_b);
            }
        if (dw) {
            GCN_PAR_FOR(gcn_par_threads(ctx, cols * classes * n_seg))
            for (int64_t f = 0; f < cols; f++)
                for (int64_t c = 0; c < classes; c++) {
                    double s = 0.0;
                    for (int64_t g = 0; g < n_seg; g++)
                        s = GCN_EPI_DMULADD(s, (double)pooled[g * width + first + f],
                                            (double)gk[g * classes + c]);
                    dw[f * classes + c] = (float)s + ACC(dw[f * classes + c], acc_w);
                }
        }
        if (dpooled) {
            GCN_PAR_FOR(gcn_par_threads(ctx, n_seg * cols * classes))
            for (int64_t g = 0; g < n_seg; g++)
                for (int64_t f = 0; f < cols; f++) {
                    double s = 0.0;
                    for (int64_t c = 0; c < classes; c++)
                        s = GCN_EPI_DMULADD(s, (double)gk[g * classes + c],
                                            (double)h->w[k][f * classes + c]);
                    dpooled[g * width + first + f] = (float)s;
                }
        }
    }
    gcn_mem_release(ctx, grad, bytes);
    return GCN_OK;
}
