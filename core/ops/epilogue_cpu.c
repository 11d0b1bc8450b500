/* The fused epilogue on the CPU, on the context's threads: the reference the
 * CUDA kernels are tested against (bf16 operands through fp32 copies).
 * Statistics and the batch-norm gradient sums are taken in double over
 * fixed chunks of rows added in chunk order (parallel.h); element
 * arithmetic is epilogue_math.h's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "epilogue_math.h"
#include "cpu.h"
#include "core/parallel.h"

/* Work of an element with a Philox draw, in units of a plain one. */
#define HEAVY 8

/* Operands of the row sums: x + bias per column (bias never NULL here),
 * centred on mean. */
typedef struct stat_arg {
    int64_t cols;
    const float *x, *bias;
    const double *mean;
} stat_arg;

static void sum_v(const void *user, int64_t lo, int64_t hi, double *acc)
{
    const stat_arg *u = user;
    for (int64_t r = lo; r < hi; r++)
        GCN_SIMD
        for (int64_t c = 0; c < u->cols; c++)
            acc[c] += u->x[r * u->cols + c] + u->bias[c];
}

static void sum_sq(const void *user, int64_t lo, int64_t hi, double *acc)
{
    const stat_arg *u = user;
    for (int64_t r = lo; r < hi; r++)
        GCN_SIMD
        for (int64_t c = 0; c < u->cols; c++) {
            double d = (double)(u->x[r * u->cols + c] + u->bias[c]) - u->mean[c];
            acc[c] += d * d;
        }
}

/* On a context of several ranks (comm.h) the statistics are those of every
 * rank's rows: the column sums and the row count are summed over the ranks
 * before the mean is taken, the squared deviations from that mean before
 * the variance is. */
static gcn_status stats32(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                         const float *bias, bool training, float momentum, float eps,
                         float *running_mean, float *running_var, float *mean, float *invstd)
{
    if (!training) {
        for (int64_t c = 0; c < cols; c++)
            invstd[c] = (float)(1.0 / sqrt((double)running_var[c] + eps));
        return GCN_OK;
    }
    bool shared = gcn_ctx_ranks(ctx) > 1;
    double *m;
    GCN_TRY(gcn_cpu_scratch(ctx, (size_t)(GCN_PAR_CHUNKS + 3) * (size_t)cols * sizeof *m + 8,
                            (void **)&m));
    double *var = m + cols + 1, *part = var + 2 * cols;
    float *zeros = (float *)(var + cols);
    for (int64_t c = 0; !bias && c < cols; c++)
        zeros[c] = 0.0f;
    stat_arg u = {.cols = cols, .x = x, .bias = bias ? bias : zeros, .mean = m};
    gcn_par_sums(ctx, rows, cols, 1, sum_v, &u, part, m);
    m[cols] = (double)rows;
    if (shared)
        GCN_TRY(gcn_comm_allreduce_f64(ctx, m, cols + 1));
    double n = m[cols];
    for (int64_t c = 0; c < cols; c++)
        m[c] /= n;
    gcn_par_sums(ctx, rows, cols, 1, sum_sq, &u, part, var);
    if (shared)
        GCN_TRY(gcn_comm_allreduce_f64(ctx, var, cols));
    for (int64_t c = 0; c < cols; c++) {
        double unbiased = var[c] / (n - 1.0);
        mean[c] = (float)m[c];
        invstd[c] = (float)(1.0 / sqrt(var[c] / n + eps));
        running_mean[c] = (float)((1.0 - momentum) * running_mean[c] + momentum * m[c]);
        running_var[c] = (float)((1.0 - momentum) * running_var[c] + momentum * unbiased);
    }
    return GCN_OK;
}

/* The per-column constants of gcn_epi_column, one array each, so the block
 * loops below load them as vectors. */
typedef struct epi_cols {
    float *bias, *mean, *scale, *beta;
    bool norm;
} epi_cols;

/* Scratch: the per-column constants of a into *k, then `words` doubles
 * into *d. */
static gcn_status epi_scratch(gcn_ctx *ctx, const gcn_epilogue_args *a, int64_t words,
                              epi_cols *k, double **d)
{
    size_t kbytes = ((size_t)a->cols * sizeof(float) + 63) / 64 * 64;
    char *p;
    GCN_TRY(gcn_cpu_scratch(ctx, 4 * kbytes + (size_t)words * sizeof **d, (void **)&p));
    *k = (epi_cols){(float *)p, (float *)(p + kbytes), (float *)(p + 2 * kbytes),
                    (float *)(p + 3 * kbytes), a->gamma != NULL};
    *d = (double *)(p + 4 * kbytes);
    for (int64_t c = 0; c < a->cols; c++) {
        gcn_epi_col col = gcn_epi_column(a->bias, a->gamma, a->beta, a->mean, a->invstd, c);
        k->bias[c] = col.bias;
        k->mean[c] = col.mean;
        k->scale[c] = col.scale;
        k->beta[c] = col.beta;
    }
    return GCN_OK;
}

/* Columns of a row taken at a time, their temporaries on the stack. */
#define BLOCK 256

/* One block: w elements of a row from flat element i0 and column c0, with
 * pre, act(pre) and dropout's mask (all ones where the element is kept,
 * and scaled by 1 / (1 - p), else 0).  Each loop runs one stage of
 * epilogue_math.h over the block with the stage's branches decided
 * outside it, and masks bits rather than branching on a float, so the
 * compiler vectorises it. */
typedef struct epi_block {
    int64_t i0, c0, w;
    float pre[BLOCK], y[BLOCK];
    uint32_t keep[BLOCK];
} epi_block;

/* gcn_epi_kept(w, p) compares (w >> 8) 2^-24 with p, both exact in float,
 * so it is (w >> 8) >= ceil(p 2^24): an integer test that vectorises. */
static uint32_t keep_threshold(float p)
{
    return (uint32_t)ceil((double)p * 16777216.0);
}

static void drop_mask(const gcn_epilogue_args *a, epi_block *b)
{
    uint32_t words[BLOCK + 8];
    uint64_t first = gcn_draw_first(a->offset);
    int64_t skip = b->i0 % 4, groups = (skip + b->w + 3) / 4;
    for (int64_t g = 0; g < groups; g++)
        gcn_draw_words(a->offset, a->key, first, b->i0 - skip + 4 * g, a->rows * a->cols,
                       words + 4 * g);
    uint32_t threshold = keep_threshold(a->p);
    const uint32_t *restrict w = words + skip;
    GCN_SIMD
    for (int64_t j = 0; j < b->w; j++)
        b->keep[j] = (w[j] >> 8) >= threshold ? 0xffffffffu : 0u;
}

/* v where keep is all ones, +0 where it is 0: the kept product, or the
 * dropped element's 0 (which v, an infinity times 0, might not be). */
static inline float masked(float v, uint32_t keep)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    bits &= keep;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* b->pre and b->y of the block at row r, column c0, and its factors. */
static void block_values(const gcn_epilogue_args *a, const epi_cols *k, int64_t r, int64_t c0,
                         epi_block *b)
{
    b->i0 = r * a->cols + c0;
    b->c0 = c0;
    b->w = a->cols - c0 < BLOCK ? a->cols - c0 : BLOCK;
    const float *restrict x = a->x + b->i0;
    const float *restrict bias = k->bias + c0, *restrict mean = k->mean + c0;
    const float *restrict scale = k->scale + c0, *restrict beta = k->beta + c0;
    int64_t w = b->w;
    if (k->norm)
        GCN_SIMD
        for (int64_t j = 0; j < w; j++)
            b->pre[j] = gcn_epi_pre(x[j], (gcn_epi_col){bias[j], mean[j], scale[j], beta[j], true});
    else
        GCN_SIMD
        for (int64_t j = 0; j < w; j++)
            b->pre[j] = gcn_epi_pre(x[j], (gcn_epi_col){bias[j], 0.0f, 1.0f, 0.0f, false});
    if (a->act == GCN_ACT_RELU)
        GCN_SIMD
        for (int64_t j = 0; j < w; j++)
            b->y[j] = gcn_epi_act(b->pre[j], GCN_ACT_RELU, a->alpha);
    else
        for (int64_t j = 0; j < w; j++)
            b->y[j] = gcn_epi_act(b->pre[j], a->act, a->alpha);
    if (a->p > 0.0f)
        drop_mask(a, b);
}

/* The work of one element (plain units). */
static int64_t element_cost(const gcn_epilogue_args *a)
{
    return a->p > 0.0f ? HEAVY : 2;
}

static gcn_status forward32(gcn_ctx *ctx, const gcn_epilogue_args *a, float *out)
{
    epi_cols k;
    double *unused;
    GCN_TRY(epi_scratch(ctx, a, 0, &k, &unused));
    float scale = 1.0f / (1.0f - a->p);
    GCN_PAR_FOR(gcn_par_threads(ctx, a->rows * a->cols * element_cost(a)))
    for (int64_t r = 0; r < a->rows; r++)
        for (int64_t c0 = 0; c0 < a->cols; c0 += BLOCK) {
            epi_block b;
            block_values(a, &k, r, c0, &b);
            float *restrict o = out + b.i0;
            if (a->p == 0.0f)
                GCN_SIMD
                for (int64_t j = 0; j < b.w; j++)
                    o[j] = b.y[j];
            else
                GCN_SIMD
                for (int64_t j = 0; j < b.w; j++)
                    o[j] = masked(b.y[j] * scale, b.keep[j]);
        }
    return GCN_OK;
}

/* g[j]: the gradient at pre of the block's elements, from dout. */
static void block_grad(const gcn_epilogue_args *a, const float *dout, const epi_block *b,
                       float *restrict g)
{
    const float *restrict d = dout + b->i0;
    float scale = 1.0f / (1.0f - a->p);
    if (a->p == 0.0f)
        GCN_SIMD
        for (int64_t j = 0; j < b->w; j++)
            g[j] = d[j];
    else
        GCN_SIMD
        for (int64_t j = 0; j < b->w; j++)
            g[j] = masked(d[j] * scale, b->keep[j]);
    if (a->act == GCN_ACT_RELU)
        GCN_SIMD
        for (int64_t j = 0; j < b->w; j++)
            g[j] = gcn_epi_act_grad(g[j], b->pre[j], b->y[j], GCN_ACT_RELU, a->alpha);
    else
        for (int64_t j = 0; j < b->w; j++)
            g[j] = gcn_epi_act_grad(g[j], b->pre[j], b->y[j], a->act, a->alpha);
}

/* The backward's operands for the row passes. */
typedef struct back_arg {
    const gcn_epilogue_args *a;
    const epi_cols *k;
    const float *dout;
    const double *sums;
    const gcn_epilogue_grads *gr;
} back_arg;

/* xhat of the block's elements (training-mode batch norm): (x + bias -
 * mean) invstd in double. */
static void block_xhat(const gcn_epilogue_args *a, const epi_cols *k, const epi_block *b,
                       double *restrict xhat)
{
    const float *restrict x = a->x + b->i0, *restrict bias = k->bias + b->c0;
    const float *restrict mean = k->mean + b->c0, *restrict invstd = a->invstd + b->c0;
    GCN_SIMD
    for (int64_t j = 0; j < b->w; j++)
        xhat[j] = ((double)(x[j] + bias[j]) - mean[j]) * invstd[j];
}

/* acc[c] += g, acc[cols + c] += g xhat over the rows. */
static void grad_rows(const void *user, int64_t lo, int64_t hi, double *acc)
{
    const back_arg *u = user;
    const gcn_epilogue_args *a = u->a;
    for (int64_t r = lo; r < hi; r++)
        for (int64_t c0 = 0; c0 < a->cols; c0 += BLOCK) {
            epi_block b;
            float g[BLOCK];
            double xhat[BLOCK];
            block_values(a, u->k, r, c0, &b);
            block_grad(a, u->dout, &b, g);
            double *restrict sg = acc + c0, *restrict sgx = acc + a->cols + c0;
            GCN_SIMD
            for (int64_t j = 0; j < b.w; j++)
                sg[j] += g[j];
            if (!u->k->norm)
                continue;
            block_xhat(a, u->k, &b, xhat);
            GCN_SIMD
            for (int64_t j = 0; j < b.w; j++)
                sgx[j] += g[j] * xhat[j];
        }
}

/* Writes dx over the rows and sums it into acc[c] (dbias).  dx = g
 * without batch norm, g scale with running statistics, and in training
 * gamma invstd / n (n g - sum g - xhat sum(g xhat)). */
static void dx_rows(const void *user, int64_t lo, int64_t hi, double *acc)
{
    const back_arg *u = user;
    const gcn_epilogue_args *a = u->a;
    const epi_cols *k = u->k;
    double n = u->sums[2 * a->cols];
    for (int64_t r = lo; r < hi; r++)
        for (int64_t c0 = 0; c0 < a->cols; c0 += BLOCK) {
            epi_block b;
            float g[BLOCK];
            double v[BLOCK];
            block_values(a, k, r, c0, &b);
            block_grad(a, u->dout, &b, g);
            if (!k->norm) {
                GCN_SIMD
                for (int64_t j = 0; j < b.w; j++)
                    v[j] = g[j];
            } else if (!a->batch_stats) {
                GCN_SIMD
                for (int64_t j = 0; j < b.w; j++)
                    v[j] = (double)g[j] * k->scale[c0 + j];
            } else {
                const double *sg = u->sums + c0, *sgx = u->sums + a->cols + c0;
                block_xhat(a, k, &b, v);
                GCN_SIMD
                for (int64_t j = 0; j < b.w; j++) {
                    double invstd = a->invstd[c0 + j];
                    v[j] = a->gamma[c0 + j] * invstd / n * (n * g[j] - sg[j] - v[j] * sgx[j]);
                }
            }
            double *restrict db = acc + c0;
            GCN_SIMD
            for (int64_t j = 0; j < b.w; j++)
                db[j] += (float)v[j];
            float *restrict dx = u->gr->dx ? (float *)u->gr->dx + b.i0 : NULL;
            if (dx && u->gr->acc_x)
                GCN_SIMD
                for (int64_t j = 0; j < b.w; j++)
                    dx[j] = (float)v[j] + dx[j];
            else if (dx)
                GCN_SIMD
                for (int64_t j = 0; j < b.w; j++)
                    dx[j] = (float)v[j];
        }
}

/* The batch-norm sums (sum g, sum g xhat) and the row count they are over
 * are summed over the ranks of a context of several; dgamma and dbeta stay
 * the rank's own (the parameters' gradients are summed with the rest). */
static gcn_status backward32(gcn_ctx *ctx, const gcn_epilogue_args *a, const float *dout,
                             const gcn_epilogue_grads *gr)
{
    int64_t cols = a->cols;
    epi_cols k;
    double *sums;
    GCN_TRY(epi_scratch(ctx, a, (GCN_PAR_CHUNKS * 2 + 3) * cols + 1, &k, &sums));
    double *dbias = sums + 2 * cols + 1, *part = dbias + cols;
    back_arg u = {.a = a, .k = &k, .dout = dout, .sums = sums, .gr = gr};
    gcn_par_sums(ctx, a->rows, 2 * cols, element_cost(a) / 2, grad_rows, &u, part, sums);
    for (int64_t c = 0; c < cols; c++) {
        if (gr->dgamma)
            gr->dgamma[c] = (float)sums[cols + c] + (gr->acc_gamma ? gr->dgamma[c] : 0.0f);
        if (gr->dbeta)
            gr->dbeta[c] = (float)sums[c] + (gr->acc_beta ? gr->dbeta[c] : 0.0f);
    }
    sums[2 * cols] = (double)a->rows;
    if (a->gamma && a->batch_stats && gcn_ctx_ranks(ctx) > 1)
        GCN_TRY(gcn_comm_allreduce_f64(ctx, sums, 2 * cols + 1));
    gcn_par_sums(ctx, a->rows, cols, element_cost(a), dx_rows, &u, part, dbias);
    for (int64_t c = 0; gr->dbias && c < cols; c++)
        gr->dbias[c] = (float)dbias[c] + (gr->acc_bias ? gr->dbias[c] : 0.0f);
    return GCN_OK;
}

/* ---- entry points: bf16 operands widened, bf16 results rounded once ----- */

gcn_status gcn_cpu_epilogue_stats(gcn_ctx *ctx, int64_t rows, int64_t cols, const void *x,
                                  gcn_dtype dtype, const float *bias, bool training,
                                  float momentum, float eps, float *running_mean,
                                  float *running_var, float *mean, float *invstd)
{
    if (dtype == GCN_DTYPE_FP32 || !training)
        return stats32(ctx, rows, cols, x, bias, training, momentum, eps, running_mean,
                       running_var, mean, invstd);
    float *x32;
    GCN_TRY(gcn_cpu_widen(ctx, x, rows * cols, &x32));
    gcn_status st = stats32(ctx, rows, cols, x32, bias, training, momentum, eps, running_mean,
                            running_var, mean, invstd);
    gcn_cpu_release(ctx, x32, (size_t)(rows * cols) * sizeof *x32);
    return st;
}

gcn_status gcn_cpu_epilogue_forward(gcn_ctx *ctx, const gcn_epilogue_args *a, void *out)
{
    if (a->dtype == GCN_DTYPE_FP32)
        return forward32(ctx, a, out);
    int64_t n = a->rows * a->cols;
    size_t bytes = (size_t)n * sizeof(float);
    float *x32 = NULL, *out32 = NULL;
    gcn_status st;
    GCN_CHECK(gcn_cpu_widen(ctx, a->x_bf16, n, &x32));
    GCN_CHECK(gcn_cpu_alloc(ctx, (void **)&out32, bytes));
    gcn_epilogue_args w = *a;
    w.dtype = GCN_DTYPE_FP32;
    w.x = x32;
    GCN_CHECK(forward32(ctx, &w, out32));
    GCN_CHECK(ctx->be->to_bf16(ctx, n, out32, out, false));
cleanup:
    if (out32)
        gcn_cpu_release(ctx, out32, bytes);
    if (x32)
        gcn_cpu_release(ctx, x32, bytes);
    return st;
}

/* dout is widened before dx is written, so dx may be dout as in fp32. */
gcn_status gcn_cpu_epilogue_backward(gcn_ctx *ctx, const gcn_epilogue_args *a, const void *dout,
                                     const gcn_epilogue_grads *gr)
{
    if (a->dtype == GCN_DTYPE_FP32)
        return backward32(ctx, a, dout, gr);
    int64_t n = a->rows * a->cols;
    size_t bytes = (size_t)n * sizeof(float);
    float *x32 = NULL, *dout32 = NULL, *dx32 = NULL;
    gcn_status st;
    GCN_CHECK(gcn_cpu_widen(ctx, a->x_bf16, n, &x32));
    GCN_CHECK(gcn_cpu_widen(ctx, dout, n, &dout32));
    if (gr->dx)
        GCN_CHECK(gcn_cpu_alloc(ctx, (void **)&dx32, bytes));
    gcn_epilogue_args w = *a;
    w.dtype = GCN_DTYPE_FP32;
    w.x = x32;
    gcn_epilogue_grads g = *gr;
    g.dx = dx32;
    g.acc_x = false;
    GCN_CHECK(backward32(ctx, &w, dout32, &g));
    if (gr->dx)
        GCN_CHECK(ctx->be->to_bf16(ctx, n, dx32, gr->dx, gr->acc_x));
cleanup:
    if (dx32)
        gcn_cpu_release(ctx, dx32, bytes);
    if (dout32)
        gcn_cpu_release(ctx, dout32, bytes);
    if (x32)
        gcn_cpu_release(ctx, x32, bytes);
    return st;
}
