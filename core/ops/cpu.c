/* The CPU backend: element-wise ops and reductions on the context's
 * threads (parallel.h), and the table that gathers the CPU functions.  It
 * is the reference the CUDA backend is tested against, and the fallback
 * when no GPU is present. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bf16.h"
#include "cpu.h"
#include "core/parallel.h"
#include "core/philox.h"

/* ---- memory ------------------------------------------------------------ */

static gcn_status cpu_memcpy(gcn_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    memmove(dst, src, bytes);
    return GCN_OK;
}

static gcn_status cpu_fill(gcn_ctx *ctx, float *x, int64_t n, float value)
{
    GCN_PAR_FOR_SIMD(gcn_par_threads(ctx, n))
    for (int64_t i = 0; i < n; i++)
        x[i] = value;
    return GCN_OK;
}

static gcn_status cpu_fill_bf16(gcn_ctx *ctx, uint16_t *x, int64_t n, uint16_t bits)
{
    GCN_PAR_FOR_SIMD(gcn_par_threads(ctx, n))
    for (int64_t i = 0; i < n; i++)
        x[i] = bits;
    return GCN_OK;
}

static gcn_status cpu_to_bf16(gcn_ctx *ctx, int64_t n, const float *x, uint16_t *y, bool acc)
{
    GCN_PAR_FOR_SIMD(gcn_par_threads(ctx, n))
    for (int64_t i = 0; i < n; i++)
        y[i] = gcn_bf16_from_float(acc ? gcn_bf16_to_float(y[i]) + x[i] : x[i]);
    return GCN_OK;
}

static gcn_status cpu_from_bf16(gcn_ctx *ctx, int64_t n, const uint16_t *x, float *y, bool acc)
{
    GCN_PAR_FOR_SIMD(gcn_par_threads(ctx, n))
    for (int64_t i = 0; i < n; i++)
        y[i] = gcn_bf16_to_float(x[i]) + (acc ? y[i] : 0.0f);
    return GCN_OK;
}

static gcn_status cpu_sync(gcn_ctx *ctx)
{
    (void)ctx;
    return GCN_OK;
}

/* ---- element-wise and reductions ---------------------------------------- */

/* Work of an element with a transcendental function or a Philox draw, in
 * units of a plain one (parallel.h's grain). */
#define HEAVY 8

static gcn_status cpu_axpby(gcn_ctx *ctx, int64_t n, float alpha, const float *x, float beta,
                            float *y)
{
    GCN_PAR_FOR_SIMD(gcn_par_threads(ctx, n))
    for (int64_t i = 0; i < n; i++)
        y[i] = alpha * x[i] + (beta == 0.0f ? 0.0f : beta * y[i]);
    return GCN_OK;
}

static gcn_status cpu_add(gcn_ctx *ctx, int64_t n, const float *a, const float *b, float *out)
{
    GCN_PAR_FOR_SIMD(gcn_par_threads(ctx, n))
    for (int64_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
    return GCN_OK;
}

static gcn_status cpu_add_bias(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                               const float *bias, float *out)
{
    GCN_PAR_FOR(gcn_par_threads(ctx, rows * cols))
    for (int64_t i = 0; i < rows; i++)
        GCN_SIMD
        for (int64_t j = 0; j < cols; j++)
            out[i * cols + j] = x[i * cols + j] + bias[j];
    return GCN_OK;
}

typedef struct rows_arg {
    int64_t cols;
    const float *x, *y;
} rows_arg;

static void sum_items(const void *user, int64_t lo, int64_t hi, double *acc)
{
    const rows_arg *u = user;
    double s = 0.0;
    GCN_PRAGMA(omp simd reduction(+ : s))
    for (int64_t i = lo; i < hi; i++)
        s += u->x[i];
    acc[0] = s;
}

static void dot_items(const void *user, int64_t lo, int64_t hi, double *acc)
{
    const rows_arg *u = user;
    double s = 0.0;
    GCN_PRAGMA(omp simd reduction(+ : s))
    for (int64_t i = lo; i < hi; i++)
        s += (double)u->x[i] * u->y[i];
    acc[0] = s;
}

/* out[0, width) = the sums gcn_par_sums gives, with the scratch it needs. */
static gcn_status sums(gcn_ctx *ctx, int64_t n, int64_t width, gcn_par_sum_fn *fn,
                       const void *u, double **out)
{
    double *part;
    GCN_TRY(gcn_cpu_scratch(ctx, (size_t)(GCN_PAR_CHUNKS + 1) * (size_t)width * sizeof *part,
                            (void **)&part));
    *out = part + (int64_t)GCN_PAR_CHUNKS * width;
    gcn_par_sums(ctx, n, width, 1, fn, u, part, *out);
    return GCN_OK;
}

static gcn_status cpu_col_sum(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                              float *out, bool acc)
{
    double *s;
    GCN_TRY(sums(ctx, rows, cols, gcn_par_add_rows, &(gcn_par_rows){.cols = cols, .x = x}, &s));
    for (int64_t j = 0; j < cols; j++)
        out[j] = (float)s[j] + (acc ? out[j] : 0.0f);
    return GCN_OK;
}

static gcn_status cpu_sum(gcn_ctx *ctx, int64_t n, const float *x, float *out)
{
    double *s;
    GCN_TRY(sums(ctx, n, 1, sum_items, &(rows_arg){.x = x}, &s));
    out[0] = (float)s[0];
    return GCN_OK;
}

static gcn_status cpu_sum_backward(gcn_ctx *ctx, int64_t n, const float *dy, float scale,
                                   float *dx, bool acc)
{
    float g = dy[0] * scale;
    GCN_PAR_FOR_SIMD(gcn_par_threads(ctx, n))
    for (int64_t i = 0; i < n; i++)
        dx[i] = g + (acc ? dx[i] : 0.0f);
    return GCN_OK;
}

static gcn_status cpu_relu(gcn_ctx *ctx, int64_t n, const float *x, float *y)
{
    GCN_PAR_FOR_SIMD(gcn_par_threads(ctx, n))
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return GCN_OK;
}

static gcn_status cpu_relu_backward(gcn_ctx *ctx, int64_t n, const float *y, const float *dy,
                                    float *dx, bool acc)
{
    GCN_PAR_FOR_SIMD(gcn_par_threads(ctx, n))
    for (int64_t i = 0; i < n; i++)
        dx[i] = (y[i] > 0.0f ? dy[i] : 0.0f) + (acc ? dx[i] : 0.0f);
    return GCN_OK;
}

static gcn_status cpu_elu(gcn_ctx *ctx, int64_t n, const float *x, float alpha, float *y)
{
    GCN_PAR_FOR(gcn_par_threads(ctx, n * HEAVY))
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : alpha * expm1f(x[i]);
    return GCN_OK;
}

static gcn_status cpu_elu_backward(gcn_ctx *ctx, int64_t n, const float *y, float alpha,
                                   const float *dy, float *dx, bool acc)
{
    GCN_PAR_FOR_SIMD(gcn_par_threads(ctx, n))
    for (int64_t i = 0; i < n; i++)
        dx[i] = dy[i] * (y[i] > 0.0f ? 1.0f : y[i] + alpha) + (acc ? dx[i] : 0.0f);
    return GCN_OK;
}

static gcn_status cpu_scale_by(gcn_ctx *ctx, int64_t n, const float *x, const float *s, float *y,
                               bool acc)
{
    float k = s[0];
    GCN_PAR_FOR_SIMD(gcn_par_threads(ctx, n))
    for (int64_t i = 0; i < n; i++)
        y[i] = k * x[i] + (acc ? y[i] : 0.0f);
    return GCN_OK;
}

static gcn_status cpu_dot(gcn_ctx *ctx, int64_t n, const float *a, const float *b, float *out,
                          bool acc)
{
    double *s;
    GCN_TRY(sums(ctx, n, 1, dot_items, &(rows_arg){.x = a, .y = b}, &s));
    out[0] = (float)s[0] + (acc ? out[0] : 0.0f);
    return GCN_OK;
}

static gcn_status cpu_add_u64(gcn_ctx *ctx, uint64_t *p, uint64_t delta)
{
    (void)ctx;
    *p += delta;
    return GCN_OK;
}

/* Elements a dropout pass takes at a time, their mask words on the stack. */
#define DROP_BLOCK 256

/* Four consecutive elements take their mask words together.  A
 * group of four zeros (common in sparse input features) is zero whatever
 * its mask, so it skips the draw (its words say "kept").  An element is
 * kept when its uniform value (w >> 8) 2^-24 >= p, both sides exact in
 * float, so when (w >> 8) >= ceil(p 2^24): an integer test, and the kept
 * product is selected by a bit mask, so the element loops vectorise. */
/* v where word w keeps its element, else +0 (whatever v is). */
static inline float dropped(float v, uint32_t w, uint32_t threshold)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    bits &= (w >> 8) >= threshold ? 0xffffffffu : 0u;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* Elements [base, base + len) of a dropout over n elements. */
static void dropout_block(const float *restrict x, float *restrict y, int64_t base, int64_t len,
                          int64_t n_all, float p, const uint32_t key[2], gcn_draw_offset offset,
                          uint64_t first, bool acc)
{
    uint32_t w[DROP_BLOCK];
    for (int64_t g = 0; g < len; g += 4) {
        const float *xg = x + g;
        int64_t n = len - g < 4 ? len - g : 4;
        if (g % 8 == 0 && g + 8 <= len && gcn_cpu_zeros8(xg)) {
            memset(w + g, 0xff, 8 * sizeof *w);
            g += 4;
            continue;
        }
        bool zeros = true;
        for (int64_t i = 0; i < n; i++)
            zeros = zeros && xg[i] == 0.0f;
        uint32_t *wg = w + g, words[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
        if (!zeros)
            gcn_draw_words(offset, key, first, base + g, n_all, words);
        for (int64_t i = 0; i < n; i++)
            wg[i] = words[i];
    }
    uint32_t threshold = (uint32_t)ceil((double)p * 16777216.0);
    float scale = 1.0f / (1.0f - p);
    if (acc)
        GCN_SIMD
        for (int64_t i = 0; i < len; i++)
            y[i] = dropped(x[i] * scale, w[i], threshold) + y[i];
    else
        GCN_SIMD
        for (int64_t i = 0; i < len; i++)
            y[i] = dropped(x[i] * scale, w[i], threshold) + 0.0f;
}

static gcn_status cpu_dropout(gcn_ctx *ctx, int64_t n, const float *x, float *y, float p,
                              const uint32_t key[2], gcn_draw_offset offset, bool acc)
{
    uint64_t first = gcn_draw_first(offset);
    GCN_PAR_FOR(gcn_par_threads(ctx, n * 2))
    for (int64_t base = 0; base < n; base += DROP_BLOCK)
        dropout_block(x + base, y + base, base, n - base < DROP_BLOCK ? n - base : DROP_BLOCK, n,
                      p, key, offset, first, acc);
    return GCN_OK;
}

/* Rows [lo, hi) of gcn_sparse_mm_args's product. */
static void sparse_mm_rows(const gcn_sparse_mm_args *a, int32_t lo, int32_t hi, uint64_t first,
                           uint32_t threshold, float scale)
{
    int64_t n = a->n;
    for (int32_t i = lo; i < hi; i++) {
        float *restrict ci = a->c + (int64_t)i * n;
        if (!a->acc)
            for (int64_t k = 0; k < n; k++)
                ci[k] = 0.0f;
        for (int32_t e = a->row_ptr[i]; e < a->row_ptr[i + 1]; e++) {
            int32_t j = a->col_idx[e];
            float v = a->values[e];
            if (a->p > 0.0f) {
                uint32_t w = a->transposed
                                 ? gcn_draw_word_at(a->offset, a->key, first, j, i, a->draw_cols)
                                 : gcn_draw_word_at(a->offset, a->key, first, i, j, a->draw_cols);
                if ((w >> 8) < threshold)
                    continue;
                v *= scale;
            }
            const float *restrict bj = a->b + (int64_t)j * n;
            GCN_SIMD
            for (int64_t k = 0; k < n; k++)
                ci[k] += v * bj[k];
        }
    }
}

/* Row i of c from a's row i; the rows split across the threads by entries
 * (a column of bag-of-words features, the backward's row, may hold
 * thousands). */
static gcn_status cpu_sparse_mm(gcn_ctx *ctx, const gcn_sparse_mm_args *a)
{
    uint64_t first = gcn_draw_first(a->offset);
    uint32_t threshold = (uint32_t)ceil((double)a->p * 16777216.0);
    float scale = 1.0f / (1.0f - a->p);
    /* a mask draw costs about what 32 multiply-adds do */
    int nt = gcn_par_threads(ctx, a->nnz * (a->n + (a->p > 0.0f ? 32 : 0)) + a->rows * a->n);
#pragma omp parallel num_threads(nt)
    {
        int t = gcn_par_thread(), team = gcn_par_team();
        sparse_mm_rows(a, gcn_par_row_start(a->row_ptr, a->rows, a->nnz, t, team),
                       gcn_par_row_start(a->row_ptr, a->rows, a->nnz, t + 1, team), first,
                       threshold, scale);
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
    .alloc = gcn_cpu_alloc,
    .release = gcn_cpu_release,
    .upload = cpu_memcpy,
    .download = cpu_memcpy,
    .copy = cpu_memcpy,
    .fill = cpu_fill,
    .fill_bf16 = cpu_fill_bf16,
    .to_bf16 = cpu_to_bf16,
    .from_bf16 = cpu_from_bf16,
    .sync = cpu_sync,
    .gemm = gcn_cpu_gemm,
    .gemm_bf16 = gcn_cpu_gemm_bf16,
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
    .sparse_mm = cpu_sparse_mm,
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
    .heads = gcn_cpu_heads,
    .heads_backward = gcn_cpu_heads_backward,
    .epilogue_stats = gcn_cpu_epilogue_stats,
    .epilogue_forward = gcn_cpu_epilogue_forward,
    .epilogue_backward = gcn_cpu_epilogue_backward,
    .copy_cols = cpu_copy_cols,
    .count_correct = gcn_cpu_count_correct,
    .cross_entropy = gcn_cpu_cross_entropy,
    .cross_entropy_backward = gcn_cpu_cross_entropy_backward,
};
