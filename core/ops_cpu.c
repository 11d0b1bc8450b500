/* The CPU backend: heap memory and the dense kernels in plain loops.  It is
 * the reference the CUDA backend is tested against, and the fallback when
 * no GPU is present. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_cpu.h"
#include "philox.h"

/* ---- memory ------------------------------------------------------------ */

static gcn_status cpu_alloc(gcn_ctx *ctx, void **p, size_t bytes)
{
    size_t rounded = (bytes + 63) / 64 * 64;
    *p = aligned_alloc(64, rounded);
    if (!*p)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory allocating %zu bytes", bytes);
    ctx->mem.device_allocs++;
    ctx->mem.reserved += bytes;
    return GCN_OK;
}

static void cpu_release(gcn_ctx *ctx, void *p, size_t bytes)
{
    free(p);
    ctx->mem.device_frees++;
    ctx->mem.reserved -= bytes;
}

static gcn_status cpu_memcpy(gcn_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    memmove(dst, src, bytes);
    return GCN_OK;
}

static gcn_status cpu_fill(gcn_ctx *ctx, float *x, int64_t n, float value)
{
    (void)ctx;
    for (int64_t i = 0; i < n; i++)
        x[i] = value;
    return GCN_OK;
}

static gcn_status cpu_sync(gcn_ctx *ctx)
{
    (void)ctx;
    return GCN_OK;
}

/* ---- gemm -------------------------------------------------------------- */

/* c[i, :] += alpha sum_l opA(i, l) b[l, :], b not transposed: the inner
 * loop runs along contiguous rows of b and c, so it vectorises; zeros of A
 * (sparse features) are skipped.  With A transposed, rows of A are walked
 * in order and scattered into the rows of c. */
static void gemm_nn_rows(bool ta, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                         int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc)
{
    for (int64_t outer = 0; outer < (ta ? k : m); outer++) {
        const float *arow = a + outer * lda;
        for (int64_t inner = 0; inner < (ta ? m : k); inner++) {
            float av = alpha * arow[inner];
            if (av == 0.0f)
                continue;
            int64_t i = ta ? inner : outer, l = ta ? outer : inner;
            const float *bl = b + l * ldb;
            float *ci = c + i * ldc;
            for (int64_t j = 0; j < n; j++)
                ci[j] += av * bl[j];
        }
    }
}

/* b transposed: c[i, j] += alpha dot(opA(i, :), b[j, :]). */
static gcn_status gemm_nt_rows(gcn_ctx *ctx, bool ta, int64_t m, int64_t n, int64_t k,
                               float alpha, const float *a, int64_t lda, const float *b,
                               int64_t ldb, float *c, int64_t ldc)
{
    float *col = NULL;
    if (ta) {
        col = malloc((size_t)(k > 0 ? k : 1) * sizeof *col);
        if (!col)
            return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory in gemm");
    }
    for (int64_t i = 0; i < m; i++) {
        const float *ai = a + i * lda;
        if (ta) {
            for (int64_t l = 0; l < k; l++)
                col[l] = a[l * lda + i];
            ai = col;
        }
        for (int64_t j = 0; j < n; j++) {
            const float *bj = b + j * ldb;
            float s = 0.0f;
            for (int64_t l = 0; l < k; l++)
                s += ai[l] * bj[l];
            c[i * ldc + j] += alpha * s;
        }
    }
    free(col);
    return GCN_OK;
}

static gcn_status cpu_gemm(gcn_ctx *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n,
                           int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                           int64_t ldb, float beta, float *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    if (trans_b)
        return gemm_nt_rows(ctx, trans_a, m, n, k, alpha, a, lda, b, ldb, c, ldc);
    gemm_nn_rows(trans_a, m, n, k, alpha, a, lda, b, ldb, c, ldc);
    return GCN_OK;
}

/* ---- element-wise and reductions ---------------------------------------- */

static gcn_status cpu_axpby(gcn_ctx *ctx, int64_t n, float alpha, const float *x, float beta,
                            float *y)
{
    (void)ctx;
    for (int64_t i = 0; i < n; i++)
        y[i] = alpha * x[i] + (beta == 0.0f ? 0.0f : beta * y[i]);
    return GCN_OK;
}

static gcn_status cpu_add(gcn_ctx *ctx, int64_t n, const float *a, const float *b, float *out)
{
    (void)ctx;
    for (int64_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
    return GCN_OK;
}

static gcn_status cpu_add_bias(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                               const float *bias, float *out)
{
    (void)ctx;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            out[i * cols + j] = x[i * cols + j] + bias[j];
    return GCN_OK;
}

static gcn_status cpu_col_sum(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                              float *out, bool acc)
{
    double *s = calloc((size_t)(cols > 0 ? cols : 1), sizeof *s);
    if (!s)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory in col_sum");
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            s[j] += x[i * cols + j];
    for (int64_t j = 0; j < cols; j++)
        out[j] = (float)s[j] + (acc ? out[j] : 0.0f);
    free(s);
    return GCN_OK;
}

static gcn_status cpu_sum(gcn_ctx *ctx, int64_t n, const float *x, float *out)
{
    (void)ctx;
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    out[0] = (float)s;
    return GCN_OK;
}

static gcn_status cpu_sum_backward(gcn_ctx *ctx, int64_t n, const float *dy, float scale,
                                   float *dx, bool acc)
{
    (void)ctx;
    float g = dy[0] * scale;
    for (int64_t i = 0; i < n; i++)
        dx[i] = g + (acc ? dx[i] : 0.0f);
    return GCN_OK;
}

static gcn_status cpu_relu(gcn_ctx *ctx, int64_t n, const float *x, float *y)
{
    (void)ctx;
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return GCN_OK;
}

static gcn_status cpu_relu_backward(gcn_ctx *ctx, int64_t n, const float *y, const float *dy,
                                    float *dx, bool acc)
{
    (void)ctx;
    for (int64_t i = 0; i < n; i++)
        dx[i] = (y[i] > 0.0f ? dy[i] : 0.0f) + (acc ? dx[i] : 0.0f);
    return GCN_OK;
}

static gcn_status cpu_elu(gcn_ctx *ctx, int64_t n, const float *x, float alpha, float *y)
{
    (void)ctx;
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : alpha * expm1f(x[i]);
    return GCN_OK;
}

static gcn_status cpu_elu_backward(gcn_ctx *ctx, int64_t n, const float *y, float alpha,
                                   const float *dy, float *dx, bool acc)
{
    (void)ctx;
    for (int64_t i = 0; i < n; i++)
        dx[i] = dy[i] * (y[i] > 0.0f ? 1.0f : y[i] + alpha) + (acc ? dx[i] : 0.0f);
    return GCN_OK;
}

static gcn_status cpu_scale_by(gcn_ctx *ctx, int64_t n, const float *x, const float *s, float *y,
                               bool acc)
{
    (void)ctx;
    float k = s[0];
    for (int64_t i = 0; i < n; i++)
        y[i] = k * x[i] + (acc ? y[i] : 0.0f);
    return GCN_OK;
}

static gcn_status cpu_dot(gcn_ctx *ctx, int64_t n, const float *a, const float *b, float *out,
                          bool acc)
{
    (void)ctx;
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    out[0] = (float)s + (acc ? out[0] : 0.0f);
    return GCN_OK;
}

static gcn_status cpu_add_u64(gcn_ctx *ctx, uint64_t *p, uint64_t delta)
{
    (void)ctx;
    *p += delta;
    return GCN_OK;
}

/* One Philox block gives the mask of four consecutive elements.  A block
 * of four zeros (common in sparse input features) is zero whatever its
 * mask, so it skips the draw. */
static gcn_status cpu_dropout(gcn_ctx *ctx, int64_t n, const float *x, float *y, float p,
                              const uint32_t key[2], gcn_draw_offset offset, bool acc)
{
    (void)ctx;
    uint64_t first = gcn_draw_first(offset);
    float scale = 1.0f / (1.0f - p);
    for (int64_t base = 0; base < n; base += 4) {
        int64_t len = n - base < 4 ? n - base : 4;
        const float *xb = x + base;
        float *yb = y + base;
        bool zeros = true;
        for (int64_t i = 0; i < len; i++)
            zeros = zeros && xb[i] == 0.0f;
        uint32_t w[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
        if (!zeros) {
            uint64_t ctr = first + (uint64_t)base / 4;
            uint32_t counter[4] = {(uint32_t)ctr, (uint32_t)(ctr >> 32), GCN_RNG_DROPOUT, 0u};
            gcn_philox4x32_10(counter, key, w);
        }
        for (int64_t i = 0; i < len; i++) {
            float kept = gcn_philox_uniform(w[i]) >= p ? xb[i] * scale : 0.0f;
            yb[i] = kept + (acc ? yb[i] : 0.0f);
        }
    }
    return GCN_OK;
}

static gcn_status cpu_copy_cols(gcn_ctx *ctx, int64_t rows, int64_t width, const float *src,
                                int64_t src_ld, const int32_t *src_rows, float *dst,
                                int64_t dst_ld, bool acc)
{
    (void)ctx;
    for (int64_t i = 0; i < rows; i++) {
        const float *s = src + (src_rows ? src_rows[i] : i) * src_ld;
        for (int64_t j = 0; j < width; j++)
            dst[i * dst_ld + j] = s[j] + (acc ? dst[i * dst_ld + j] : 0.0f);
    }
    return GCN_OK;
}

const gcn_backend gcn_backend_cpu = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .release = cpu_release,
    .upload = cpu_memcpy,
    .download = cpu_memcpy,
    .copy = cpu_memcpy,
    .fill = cpu_fill,
    .sync = cpu_sync,
    .gemm = cpu_gemm,
    .axpby = cpu_axpby,
    .add = cpu_add,
    .add_bias = cpu_add_bias,
    .col_sum = cpu_col_sum,
    .sum = cpu_sum,
    .sum_backward = cpu_sum_backward,
    .relu = cpu_relu,
    .relu_backward = cpu_relu_backward,
    .elu = cpu_elu,
    .elu_backward = cpu_elu_backward,
    .scale_by = cpu_scale_by,
    .dot = cpu_dot,
    .dropout = cpu_dropout,
    .add_u64 = cpu_add_u64,
    .batchnorm_train = gcn_cpu_batchnorm_train,
    .batchnorm_eval = gcn_cpu_batchnorm_eval,
    .batchnorm_backward = gcn_cpu_batchnorm_backward,
    .batchnorm_eval_backward = gcn_cpu_batchnorm_eval_backward,
    .log_softmax = gcn_cpu_log_softmax,
    .log_softmax_backward = gcn_cpu_log_softmax_backward,
    .nll = gcn_cpu_nll,
    .nll_backward = gcn_cpu_nll_backward,
    .segment_pool = gcn_cpu_segment_pool,
    .segment_pool_backward = gcn_cpu_segment_pool_backward,
    .epilogue_stats = gcn_cpu_epilogue_stats,
    .epilogue_forward = gcn_cpu_epilogue_forward,
    .epilogue_backward = gcn_cpu_epilogue_backward,
    .copy_cols = cpu_copy_cols,
    .count_correct = gcn_cpu_count_correct,
    .cross_entropy = gcn_cpu_cross_entropy,
    .cross_entropy_backward = gcn_cpu_cross_entropy_backward,
};
