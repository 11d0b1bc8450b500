/* Scalar reductions (sum, dot, NLL loss, accuracy count), row-wise log_softmax,
 * the fused cross-entropy and the backward passes of sum, NLL and
 * cross-entropy on the GPU (segment pooling and the readout's heads are in
 * readout_cuda.cu). */
#include "core/cuda_impl.h"

/* Sums accumulate in double in a fixed order (block partials, then one
 * block), like the CPU reference in core/ops/nn_cpu.c, whose expressions the
 * kernels mirror. */

#define MAX_SUM_BLOCKS 1024

#define ACC(p, acc) ((acc) ? (p) : 0.0f)

/* ---- sum of f(i) over i < n, deterministic -------------------------------- */

/* Sums sh[0 .. blockDim.x) into sh[0] by halving (blockDim.x a power of two). */
__device__ static void block_tree_sum(double *sh)
{
    for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w)
            sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
}

/* Thread t of block b adds f(i) for i = b * GCN_THREADS + t, then every
 * gridDim.x * GCN_THREADS; the block's sums are added by a halving tree into
 * partial[b]. */
template <class F>
__global__ void sum_partial_kernel(int64_t n, F f, double *partial)
{
    __shared__ double sh[GCN_THREADS];
    double s = 0.0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        s += f(i);
    sh[threadIdx.x] = s;
    __syncthreads();
    block_tree_sum(sh);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = sh[0];
}

/* One block: thread t adds partials t, t + GCN_THREADS, ...; a halving tree gives the
 * total, which thread 0 hands to fin. */
template <class Fin>
__global__ void sum_finish_kernel(int64_t n_partial, const double *partial, Fin fin)
{
    __shared__ double sh[GCN_THREADS];
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < n_partial; i += blockDim.x)
        s += partial[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    block_tree_sum(sh);
    if (threadIdx.x == 0)
        fin(sh[0]);
}

/* fin(sum of f(i) for i < n); the block count depends only on n. */
template <class F, class Fin>
static gcn_status reduce_sum(gcn_ctx *ctx, gcn_cuda_state *cs, int64_t n, F f, Fin fin)
{
    int64_t blocks = (n + GCN_THREADS - 1) / GCN_THREADS;
    if (blocks > MAX_SUM_BLOCKS)
        blocks = MAX_SUM_BLOCKS;
    size_t bytes = (size_t)blocks * sizeof(double);
    double *partial = NULL;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&partial, bytes));
    gcn_status st = GCN_OK;
    if (blocks > 0) {
        sum_partial_kernel<<<(unsigned)blocks, GCN_THREADS, 0, cs->stream>>>(n, f, partial);
        st = GCN_LAUNCHED_ST("sum_partial_kernel");
    }
    if (st == GCN_OK) {
        sum_finish_kernel<<<1, GCN_THREADS, 0, cs->stream>>>(blocks, partial, fin);
        st = GCN_LAUNCHED_ST("sum_finish_kernel");
    }
    gcn_mem_release(ctx, partial, bytes);
    return st;
}

/* ---- sum and its backward ------------------------------------------------------- */

struct elem_value {
    const float *x;
    __device__ double operator()(int64_t i) const { return x[i]; }
};

struct store_float {
    float *out;
    double scale;
    __device__ void operator()(double total) const { out[0] = (float)(total * scale); }
};

gcn_status gcn_cuda_sum(gcn_ctx *ctx, int64_t n, const float *x, float *out)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    return reduce_sum(ctx, cs, n, elem_value{x}, store_float{out, 1.0});
}

/* a[i] b[i] in double, as the CPU multiplies */
struct product {
    const float *a, *b;
    __device__ double operator()(int64_t i) const { return __dmul_rn(a[i], b[i]); }
};

struct store_acc {
    float *out;
    bool acc;
    __device__ void operator()(double total) const
    {
        out[0] = (float)total + ACC(out[0], acc);
    }
};

gcn_status gcn_cuda_dot(gcn_ctx *ctx, int64_t n, const float *a, const float *b, float *out,
                        bool acc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    return reduce_sum(ctx, cs, n, product{a, b}, store_acc{out, acc});
}

/* One thread per element i (grid-stride). */
__global__ void sum_backward_kernel(int64_t n, const float *dy, float scale, float *dx, bool acc)
{
    float g = __fmul_rn(dy[0], scale);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dx[i] = g + ACC(dx[i], acc);
}

gcn_status gcn_cuda_sum_backward(gcn_ctx *ctx, int64_t n, const float *dy, float scale,
                                 float *dx, bool acc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    sum_backward_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(n, dy, scale,
                                                                                     dx, acc);
    GCN_LAUNCHED("sum_backward_kernel");
    return GCN_OK;
}

/* ---- NLL loss and accuracy ------------------------------------------------------------ */

/* logp[r, labels[r]] for the i-th listed row r; NaN when the label is not a
 * class, so a bad label poisons the loss instead of reading out of bounds. */
struct nll_term {
    const float *logp;
    const int32_t *labels, *rows;
    int64_t cols;
    __device__ double operator()(int64_t i) const
    {
        int32_t r = rows[i], c = labels[r];
        return c >= 0 && c < cols ? (double)logp[(int64_t)r * cols + c] : nan("");
    }
};

struct nll_out {
    float *out;
    int64_t n_rows;
    __device__ void operator()(double total) const { out[0] = (float)(-total / (double)n_rows); }
};

gcn_status gcn_cuda_nll(gcn_ctx *ctx, int64_t cols, const float *logp, const int32_t *labels,
                        const int32_t *rows, int64_t n_rows, float *out)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    return reduce_sum(ctx, cs, n_rows, nll_term{logp, labels, rows, cols}, nll_out{out, n_rows});
}

/* 1 when the first column holding the row's largest score is its label. */
struct correct_term {
    const float *scores;
    const int32_t *labels, *rows;
    int64_t cols;
    __device__ double operator()(int64_t i) const
    {
        const float *si = scores + (int64_t)rows[i] * cols;
        int64_t best = 0;
        for (int64_t j = 1; j < cols; j++)
            if (si[j] > si[best])
                best = j;
        return best == labels[rows[i]] ? 1.0 : 0.0;
    }
};

struct store_double {
    double *out;
    __device__ void operator()(double total) const { out[0] = total; }
};

gcn_status gcn_cuda_count_correct(gcn_ctx *ctx, int64_t cols, const float *scores,
                                  const int32_t *labels, const int32_t *rows, int64_t n_rows,
                                  double *count)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (cols <= 0) {
        GCN_CUDA(cudaMemsetAsync(count, 0, sizeof *count, cs->stream));
        return GCN_OK;
    }
    return reduce_sum(ctx, cs, n_rows, correct_term{scores, labels, rows, cols},
                      store_double{count});
}

/* One thread per listed row i (grid-stride) adds g at (r, labels[r]).  Rows
 * listed twice add the same g twice; with every addend equal the atomic
 * order cannot change the result, so this stays deterministic. */
__global__ void nll_backward_kernel(int64_t cols, const int32_t *labels, const int32_t *rows,
                                    int64_t n_rows, const float *dy, float *dlogp)
{
    float g = -dy[0] / (float)n_rows;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_rows;
         i += (int64_t)gridDim.x * blockDim.x) {
        int32_t r = rows[i], c = labels[r];
        if (c >= 0 && c < cols)
            atomicAdd(&dlogp[(int64_t)r * cols + c], g);
    }
}

gcn_status gcn_cuda_nll_backward(gcn_ctx *ctx, int64_t n, int64_t cols, const int32_t *labels,
                                 const int32_t *rows, int64_t n_rows, const float *dy,
                                 float *dlogp, bool acc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (!acc && n * cols > 0)
        GCN_CUDA(cudaMemsetAsync(dlogp, 0, (size_t)(n * cols) * sizeof *dlogp, cs->stream));
    if (n_rows <= 0)
        return GCN_OK;
    nll_backward_kernel<<<gcn_blocks(n_rows, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(
        cols, labels, rows, n_rows, dy, dlogp);
    GCN_LAUNCHED("nll_backward_kernel");
    return GCN_OK;
}

/* ---- log_softmax ------------------------------------------------------------------------ */

/* Butterfly sum over the warp: every lane ends with the same total, added in
 * the same order on every run. */
__device__ static double warp_sum(double v)
{
    for (int o = GCN_WARP / 2; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ static float warp_max(float v)
{
    for (int o = GCN_WARP / 2; o > 0; o >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w > v ? w : v;
    }
    return v;
}

/* log sum_j exp(xr[j]) of one row in double, shifted by its largest value;
 * lane l takes columns l, l + 32, ... and every lane gets the result. */
__device__ static double warp_log_sum_exp(const float *xr, int64_t cols, int lane)
{
    float mx = xr[0];
    for (int64_t j = lane; j < cols; j += GCN_WARP)
        mx = xr[j] > mx ? xr[j] : mx;
    mx = warp_max(mx);
    double s = 0.0;
    for (int64_t j = lane; j < cols; j += GCN_WARP)
        s += exp(__dsub_rn(xr[j], mx));
    return __dadd_rn(mx, log(warp_sum(s)));
}

/* One warp per row (grid-stride over rows); lane l takes columns l, l + 32, ... */
__global__ void log_softmax_kernel(int64_t rows, int64_t cols, const float *x, float *y)
{
    int lane = threadIdx.x % GCN_WARP;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / GCN_WARP);
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / GCN_WARP; r < rows;
         r += warps) {
        const float *xr = x + r * cols;
        double lse = warp_log_sum_exp(xr, cols, lane);
        for (int64_t j = lane; j < cols; j += GCN_WARP)
            y[r * cols + j] = (float)__dsub_rn(xr[j], lse);
    }
}

static unsigned warp_blocks(int64_t rows)
{
    return gcn_blocks(rows, GCN_THREADS / GCN_WARP);
}

gcn_status gcn_cuda_log_softmax(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                float *y)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (rows <= 0 || cols <= 0)
        return GCN_OK;
    log_softmax_kernel<<<warp_blocks(rows), GCN_THREADS, 0, cs->stream>>>(rows, cols, x, y);
    GCN_LAUNCHED("log_softmax_kernel");
    return GCN_OK;
}

/* One warp per row (grid-stride over rows); lane l takes columns l, l + 32, ...
 * dx = dy - exp(y) sum(dy). */
__global__ void log_softmax_backward_kernel(int64_t rows, int64_t cols, const float *y,
                                            const float *dy, float *dx, bool acc)
{
    int lane = threadIdx.x % GCN_WARP;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / GCN_WARP);
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / GCN_WARP; r < rows;
         r += warps) {
        int64_t base = r * cols;
        double s = 0.0;
        for (int64_t j = lane; j < cols; j += GCN_WARP)
            s += dy[base + j];
        s = warp_sum(s);
        for (int64_t j = lane; j < cols; j += GCN_WARP) {
            float g = (float)__dsub_rn(dy[base + j], __dmul_rn(exp((double)y[base + j]), s));
            dx[base + j] = g + ACC(dx[base + j], acc);
        }
    }
}

gcn_status gcn_cuda_log_softmax_backward(gcn_ctx *ctx, int64_t rows, int64_t cols,
                                         const float *y, const float *dy, float *dx, bool acc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (rows <= 0 || cols <= 0)
        return GCN_OK;
    log_softmax_backward_kernel<<<warp_blocks(rows), GCN_THREADS, 0, cs->stream>>>(rows, cols, y,
                                                                                  dy, dx, acc);
    GCN_LAUNCHED("log_softmax_backward_kernel");
    return GCN_OK;
}

/* ---- cross-entropy ------------------------------------------------------------------- */

/* One warp per listed row i (grid-stride); lane l takes columns l, l + 32, ...
 * lse[i] as log_softmax_kernel computes it, terms[i] = x[r, label] - lse
 * (NaN when the label is not a class). */
__global__ void cross_entropy_rows_kernel(int64_t cols, const float *x, const int32_t *labels,
                                          const int32_t *rows, int64_t n_rows, float *lse,
                                          double *terms)
{
    int lane = threadIdx.x % GCN_WARP;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / GCN_WARP);
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / GCN_WARP; i < n_rows;
         i += warps) {
        int32_t r = rows[i], c = labels[r];
        const float *xr = x + (int64_t)r * cols;
        double l = warp_log_sum_exp(xr, cols, lane);
        if (lane == 0) {
            lse[i] = (float)l;
            terms[i] = c >= 0 && c < cols ? __dsub_rn(xr[c], l) : nan("");
        }
    }
}

struct double_value {
    const double *v;
    __device__ double operator()(int64_t i) const { return v[i]; }
};

gcn_status gcn_cuda_cross_entropy(gcn_ctx *ctx, int64_t cols, const float *x,
                                  const int32_t *labels, const int32_t *rows, int64_t n_rows,
                                  float *lse, float *out)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    double *terms = NULL;
    size_t bytes = (size_t)n_rows * sizeof *terms;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&terms, bytes));
    gcn_status st = GCN_OK;
    if (n_rows > 0 && cols > 0) {
        cross_entropy_rows_kernel<<<warp_blocks(n_rows), GCN_THREADS, 0, cs->stream>>>(
            cols, x, labels, rows, n_rows, lse, terms);
        st = GCN_LAUNCHED_ST("cross_entropy_rows_kernel");
    }
    if (st == GCN_OK)
        st = reduce_sum(ctx, cs, n_rows, double_value{terms}, nll_out{out, n_rows});
    gcn_mem_release(ctx, terms, bytes);
    return st;
}

/* One warp per listed row i (grid-stride); lane l takes columns l, l + 32, ...
 * and adds dy / n (softmax - onehot) atomically: a row listed twice adds the
 * same values twice, which no order of the additions can change. */
__global__ void cross_entropy_backward_kernel(int64_t cols, const float *x,
                                              const int32_t *labels, const int32_t *rows,
                                              int64_t n_rows, const float *lse, const float *dy,
                                              float *dx)
{
    int lane = threadIdx.x % GCN_WARP;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / GCN_WARP);
    float g = dy[0] / (float)n_rows;
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / GCN_WARP; i < n_rows;
         i += warps) {
        int64_t base = (int64_t)rows[i] * cols;
        int32_t c = labels[rows[i]];
        for (int64_t j = lane; j < cols; j += GCN_WARP) {
            float p = (float)exp(__dsub_rn(x[base + j], lse[i]));
            atomicAdd(&dx[base + j], __fmul_rn(g, j == c ? __fsub_rn(p, 1.0f) : p));
        }
    }
}

gcn_status gcn_cuda_cross_entropy_backward(gcn_ctx *ctx, int64_t n, int64_t cols, const float *x,
                                           const int32_t *labels, const int32_t *rows,
                                           int64_t n_rows, const float *lse, const float *dy,
                                           float *dx, bool acc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (!acc && n * cols > 0)
        GCN_CUDA(cudaMemsetAsync(dx, 0, (size_t)(n * cols) * sizeof *dx, cs->stream));
    if (n_rows <= 0 || cols <= 0)
        return GCN_OK;
    cross_entropy_backward_kernel<<<warp_blocks(n_rows), GCN_THREADS, 0, cs->stream>>>(
        cols, x, labels, rows, n_rows, lse, dy, dx);
    GCN_LAUNCHED("cross_entropy_backward_kernel");
    return GCN_OK;
}
