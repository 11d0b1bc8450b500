/* Segment pooling of several inputs side by side, and gcn_readout's heads,
 * on the GPU: each one launch however many inputs there are, which is what
 * a graph-level batch of a few thousand rows is bound by.  Arithmetic
 * mirrors core/ops/nn_cpu.c (round-to-nearest intrinsics, sums in double in
 * the same order), so the two backends agree to rounding. */
#include "core/cuda_impl.h"
#include "epilogue_math.h"

#define ACC(p, acc) ((acc) ? (p) : 0.0f)

/* The inputs' or their gradients' arrays, by value in a kernel's
 * parameters. */
struct in_arrays {
    const float *p[GCN_READOUT_MAX];
};

struct out_arrays {
    float *p[GCN_READOUT_MAX];
    bool acc[GCN_READOUT_MAX];
};

/* Input k's first column in the side-by-side whole, and the input whose
 * columns hold column j. */
__device__ static int64_t first_col(const gcn_pool_args &a, int k)
{
    int64_t f = 0;
    for (int i = 0; i < k; i++)
        f += a.cols[i];
    return f;
}

__device__ static int input_of(const gcn_pool_args &a, int64_t *j)
{
    int k = 0;
    while (*j >= a.cols[k])
        *j -= a.cols[k++];
    return k;
}

/* ---- segment pooling ------------------------------------------------------- */

/* Block (segment s, column chunk, input k): each thread reduces one column
 * over the segment's rows in order, as the CPU does; loads go ahead in
 * groups of POOL_AHEAD so that a long segment does not wait for each row in
 * turn. */
#define POOL_AHEAD 32

__global__ void segment_pool_kernel(gcn_pool_args a, in_arrays x, float *out, int32_t *argmax)
{
    int k = blockIdx.z;
    int64_t s = blockIdx.x, cols = a.cols[k];
    int64_t c = (int64_t)blockIdx.y * blockDim.x + threadIdx.x;
    if (c >= cols)
        return;
    const float *__restrict__ xk = x.p[k];
    int32_t begin = a.offsets[s], end = a.offsets[s + 1];
    float acc = 0.0f;
    int32_t arg = -1;
    for (int32_t r0 = begin; r0 < end; r0 += POOL_AHEAD) {
        float v[POOL_AHEAD];
#pragma unroll
        for (int i = 0; i < POOL_AHEAD; i++)
            v[i] = r0 + i < end ? __ldg(xk + (int64_t)(r0 + i) * cols + c) : 0.0f;
#pragma unroll
        for (int i = 0; i < POOL_AHEAD; i++) {
            if (r0 + i >= end)
                break;
            if (a.kind != GCN_POOL_MAX) {
                acc = __fadd_rn(acc, v[i]);
            } else if (arg < 0 || v[i] > acc || v[i] != v[i]) {
                acc = v[i];
                arg = r0 + i;
            }
        }
    }
    if (a.kind == GCN_POOL_MEAN && end > begin)
        acc = __fdiv_rn(acc, (float)(end - begin));
    int64_t j = s * a.width + first_col(a, k) + c;
    out[j] = acc;
    if (a.kind == GCN_POOL_MAX)
        argmax[j] = arg;
}

/* Block (s, y, k): its threads stride over the (row, column) elements of
 * part y of segment s's rows of input k (POOL_PARTS parts), each written
 * once. */
#define POOL_PARTS 8

__global__ void segment_pool_backward_kernel(gcn_pool_args a, const int32_t *argmax,
                                             const float *dy, out_arrays dx)
{
    int k = blockIdx.z;
    float *dxk = dx.p[k];
    if (!dxk)
        return;
    bool acc = dx.acc[k];
    int64_t s = blockIdx.x, cols = a.cols[k], first = first_col(a, k);
    int32_t begin = a.offsets[s], end = a.offsets[s + 1];
    int64_t n = (int64_t)(end - begin) * cols;
    int64_t lo = n * blockIdx.y / POOL_PARTS, hi = n * (blockIdx.y + 1) / POOL_PARTS;
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        int64_t r = begin + i / cols, c = i % cols, j = s * a.width + first + c;
        float g = dy[j];
        if (a.kind == GCN_POOL_MEAN)
            g = __fdiv_rn(g, (float)(end - begin));
        float v = a.kind == GCN_POOL_MAX && argmax[j] != r ? 0.0f : g;
        dxk[r * cols + c] = v + ACC(dxk[r * cols + c], acc);
    }
}

static int64_t widest(const gcn_pool_args *a)
{
    int64_t w = 0;
    for (int k = 0; k < a->n; k++)
        w = a->cols[k] > w ? a->cols[k] : w;
    return w;
}

gcn_status gcn_cuda_segment_pool(gcn_ctx *ctx, const gcn_pool_args *a, const float *const *x,
                                 float *out, int32_t *argmax)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    int64_t cols = widest(a);
    if (a->n_seg <= 0 || cols <= 0)
        return GCN_OK;
    in_arrays xs;
    for (int k = 0; k < a->n; k++)
        xs.p[k] = x[k];
    /* a block per segment, input and chunk of columns: whole warps, at most GCN_THREADS */
    int64_t warps = (cols + GCN_WARP - 1) / GCN_WARP;
    int threads = (int)(warps * GCN_WARP < GCN_THREADS ? warps * GCN_WARP : GCN_THREADS);
    dim3 grid((unsigned)a->n_seg, (unsigned)((cols + threads - 1) / threads), (unsigned)a->n);
    segment_pool_kernel<<<grid, threads, 0, cs->stream>>>(*a, xs, out, argmax);
    GCN_LAUNCHED("segment_pool_kernel");
    return GCN_OK;
}

gcn_status gcn_cuda_segment_pool_backward(gcn_ctx *ctx, const gcn_pool_args *a,
                                          const int32_t *argmax, const float *dy,
                                          float *const *dx, const bool *acc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (a->n_seg <= 0 || widest(a) <= 0)
        return GCN_OK;
    out_arrays d;
    for (int k = 0; k < a->n; k++) {
        d.p[k] = dx[k];
        d.acc[k] = acc[k];
    }
    segment_pool_backward_kernel<<<dim3((unsigned)a->n_seg, POOL_PARTS, (unsigned)a->n),
                                   GCN_THREADS, 0, cs->stream>>>(*a, argmax, dy, d);
    GCN_LAUNCHED("segment_pool_backward_kernel");
    return GCN_OK;
}

/* ---- the readout's heads ----------------------------------------------------- */

/* One warp per score (g, c), grid-stride: lane l takes head k's features
 * l, l + 32, ... in order, and a butterfly adds the lanes' sums (the order
 * gcn_cpu_heads reproduces with gcn_lane_tree_sum). */
__global__ void heads_kernel(gcn_pool_args a, gcn_heads_args h, float scale, const float *pooled,
                             float *scores)
{
    int64_t classes = h.classes, n = a.n_seg * classes;
    int lane = threadIdx.x % GCN_WARP;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / GCN_WARP);
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / GCN_WARP; i < n;
         i += warps) {
        int64_t g = i / classes, c = i % classes;
        const float *row = pooled + g * a.width;
        float score = 0.0f;
        for (int k = 0; k < a.n; k++) {
            double dot = 0.0;
            for (int64_t f = lane; f < a.cols[k]; f += GCN_WARP)
                dot = GCN_EPI_DMULADD(dot, (double)row[f], (double)h.w[k][f * classes + c]);
            for (int o = GCN_WARP / 2; o > 0; o >>= 1)
                dot += __shfl_xor_sync(0xffffffffu, dot, o);
            row += a.cols[k];
            float t = __fadd_rn((float)dot, h.b[k] ? h.b[k][c] : 0.0f);
            t = gcn_head_dropout(t, h.p, scale, h.offset, h.key, k, a.n_seg, classes, g, c);
            score = k == 0 ? t : __fadd_rn(score, t);
        }
        if (lane == 0)
            scores[i] = score;
    }
}

gcn_status gcn_cuda_heads(gcn_ctx *ctx, const gcn_pool_args *a, const gcn_heads_args *h,
                          const float *pooled, float *scores)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    int64_t n = a->n_seg * h->classes;
    if (n <= 0)
        return GCN_OK;
    float scale = h->p > 0.0f ? 1.0f / (1.0f - h->p) : 1.0f;
    heads_kernel<<<gcn_blocks(n, GCN_THREADS / GCN_WARP), GCN_THREADS, 0, cs->stream>>>(
        *a, *h, scale, pooled, scores);
    GCN_LAUNCHED("heads_kernel");
    return GCN_OK;
}

/* Head k's dscores at (g, c) through its dropout: from the block's shared
 * copy when it has one (`cached`), else drawn again. */
__device__ static float head_grad(const gcn_pool_args &a, const gcn_heads_args &h, float scale,
                                  const float *dscores, const float *cache, bool cached, int k,
                                  int64_t g, int64_t c)
{
    if (cached)
        return cache[(k * a.n_seg + g) * h.classes + c];
    return gcn_head_dropout(dscores[g * h.classes + c], h.p, scale, h.offset, h.key, k, a.n_seg,
                            h.classes, g, c);
}

/* One thread per result, grid-stride: first every head's dw (f, c) and db
 * c, (width + n) classes of them, then dpooled's n_seg width.  With
 * `cached`, each block first draws every head's dscores through its dropout
 * into shared memory (n n_seg classes floats), which the results then read
 * n_seg or classes times each instead of drawing them again. */
__global__ void heads_backward_kernel(gcn_pool_args a, gcn_heads_args h, float scale,
                                      const float *pooled, const float *dscores, float *dpooled,
                                      gcn_heads_grads gr, bool cached)
{
    extern __shared__ float cache[];
    int64_t classes = h.classes, params = (a.width + a.n) * classes;
    if (cached) {
        int64_t per_head = a.n_seg * classes;
        for (int64_t t = threadIdx.x; t < a.n * per_head; t += blockDim.x)
            cache[t] = gcn_head_dropout(dscores[t % per_head], h.p, scale, h.offset, h.key,
                                        (int)(t / per_head), a.n_seg, classes,
                                        t % per_head / classes, t % classes);
        __syncthreads();
    }
    int64_t n = params + (dpooled ? a.n_seg * a.width : 0);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (i < params) {
            int64_t j = i, first = 0;
            int k = 0;
            while (j >= (a.cols[k] + 1) * classes) {
                j -= (a.cols[k] + 1) * classes;
                first += a.cols[k++];
            }
            int64_t f = j / classes, c = j % classes;
            bool bias = f == a.cols[k];
            float *out = bias ? gr.db[k] : gr.dw[k];
            if (!out)
                continue;
            double s = 0.0;
            for (int64_t g = 0; g < a.n_seg; g++) {
                double d = head_grad(a, h, scale, dscores, cache, cached, k, g, c);
                s = bias ? __dadd_rn(s, d)
                         : GCN_EPI_DMULADD(s, (double)pooled[g * a.width + first + f], d);
            }
            int64_t o = bias ? c : j;
            bool acc = bias ? gr.acc_b[k] : gr.acc_w[k];
            out[o] = __fadd_rn((float)s, ACC(out[o], acc));
        } else {
            int64_t g = (i - params) / a.width, f = (i - params) % a.width;
            int k = input_of(a, &f);
            double s = 0.0;
            for (int64_t c = 0; c < classes; c++)
                s = GCN_EPI_DMULADD(s, (double)head_grad(a, h, scale, dscores, cache, cached, k,
                                                         g, c),
                                    (double)h.w[k][f * classes + c]);
            dpooled[i - params] = (float)s;
        }
    }
}

/* The most dscores a block keeps in shared memory (48 KB). */
#define HEADS_CACHE_FLOATS 12288

gcn_status gcn_cuda_heads_backward(gcn_ctx *ctx, const gcn_pool_args *a, const gcn_heads_args *h,
                                   const float *pooled, const float *dscores, float *dpooled,
                                   const gcn_heads_grads *g)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    int64_t n = (a->width + a->n) * h->classes + (dpooled ? a->n_seg * a->width : 0);
    if (n <= 0)
        return GCN_OK;
    float scale = h->p > 0.0f ? 1.0f / (1.0f - h->p) : 1.0f;
    int64_t grads = a->n * a->n_seg * h->classes;
    bool cached = grads <= HEADS_CACHE_FLOATS;
    size_t shared = cached ? (size_t)grads * sizeof(float) : 0;
    heads_backward_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, shared, cs->stream>>>(
        *a, *h, scale, pooled, dscores, dpooled, *g, cached);
    GCN_LAUNCHED("heads_backward_kernel");
    return GCN_OK;
}
