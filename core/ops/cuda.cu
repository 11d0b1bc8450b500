/* The CUDA backend table: memory through the context's pool, transfers on its
 * stream, cuBLAS matmuls on row-major tensors, and the element-wise kernels. */
#include <string.h>

#include "core/cuda_impl.h"
#include "core/philox.h"
#include "core/prof.h"

/* Arithmetic mirrors core/ops/cpu.c expression by expression, with explicit
 * _rn intrinsics where the compiler would otherwise fuse a multiply-add, so
 * element-wise results are bit-identical to the CPU reference. */

/* ---- memory --------------------------------------------------------------- */

static gcn_status cuda_alloc(gcn_ctx *ctx, void **p, size_t bytes)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    return gcn_pool_alloc(ctx, cs->pool, p, bytes);
}

static void cuda_release(gcn_ctx *ctx, void *p, size_t bytes)
{
    gcn_pool_release(ctx, ((gcn_cuda_state *)ctx->cuda)->pool, p, bytes);
}

/* Transfers, copies and fills are GCN_PROF_OTHER work when profiling. */

/* Whether host memory is pageable: an upload from it returns once the
 * driver has staged the bytes, so the caller may reuse them at once; from
 * pinned memory the copy runs later and must be waited for. */
static bool pageable(const void *host)
{
    cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, host) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return at.type == cudaMemoryTypeUnregistered;
}

/* Copies on the context's stream.  Host buffers may be reused as soon as a
 * transfer returns: a download waits for the bytes, an upload from pinned
 * memory for the copy, and an upload from pageable memory for nothing more
 * (the kernel plans of the selector's candidates upload while earlier work
 * runs). */
static gcn_status cuda_memcpy(gcn_ctx *ctx, void *dst, const void *src, size_t bytes,
                              cudaMemcpyKind kind)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    gcn_prof_category prev = gcn_prof_enter(ctx, GCN_PROF_OTHER);
    gcn_status st = GCN_CUDA_ST(cudaMemcpyAsync(dst, src, bytes, kind, cs->stream));
    bool wait = kind == cudaMemcpyDeviceToHost || (kind == cudaMemcpyHostToDevice && !pageable(src));
    if (st == GCN_OK && wait)
        st = GCN_CUDA_ST(cudaStreamSynchronize(cs->stream));
    gcn_prof_leave(ctx, prev);
    return st;
}

static gcn_status cuda_upload(gcn_ctx *ctx, void *dst, const void *host, size_t bytes)
{
    return cuda_memcpy(ctx, dst, host, bytes, cudaMemcpyHostToDevice);
}

static gcn_status cuda_download(gcn_ctx *ctx, void *host, const void *src, size_t bytes)
{
    return cuda_memcpy(ctx, host, src, bytes, cudaMemcpyDeviceToHost);
}

static gcn_status cuda_copy(gcn_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    return cuda_memcpy(ctx, dst, src, bytes, cudaMemcpyDeviceToDevice);
}

static gcn_status cuda_sync(gcn_ctx *ctx)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    GCN_CUDA(cudaStreamSynchronize(cs->stream));
    return GCN_OK;
}

/* ---- element-wise kernels ---------------------------------------------------
 * Mapping for every kernel in this section: a grid-stride loop, one thread per
 * element i in [0, n) (dropout: per group of four elements). */

__global__ void fill_kernel(int64_t n, float *x, float value)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        x[i] = value;
}

static gcn_status cuda_fill(gcn_ctx *ctx, float *x, int64_t n, float value)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    gcn_prof_category prev = gcn_prof_enter(ctx, GCN_PROF_OTHER);
    gcn_status st;
    if (bits == 0) { /* +0.0f: all-zero bytes */
        st = GCN_CUDA_ST(cudaMemsetAsync(x, 0, (size_t)n * sizeof *x, cs->stream));
    } else {
        fill_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(n, x, value);
        st = GCN_LAUNCHED_ST("fill_kernel");
    }
    gcn_prof_leave(ctx, prev);
    return st;
}

/* y = alpha x + (beta == 0 ? 0 : beta y) */
__global__ void axpby_kernel(int64_t n, float alpha, const float *x, float beta, float *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __fadd_rn(__fmul_rn(alpha, x[i]), beta == 0.0f ? 0.0f : __fmul_rn(beta, y[i]));
}

static gcn_status cuda_axpby(gcn_ctx *ctx, int64_t n, float alpha, const float *x, float beta,
                             float *y)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    axpby_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(n, alpha, x, beta,
                                                                              y);
    GCN_LAUNCHED("axpby_kernel");
    return GCN_OK;
}

__global__ void add_kernel(int64_t n, const float *a, const float *b, float *out)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i];
}

static gcn_status cuda_add(gcn_ctx *ctx, int64_t n, const float *a, const float *b, float *out)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    add_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(n, a, b, out);
    GCN_LAUNCHED("add_kernel");
    return GCN_OK;
}

/* Element i of the [rows, cols] matrix is row i / cols, column i % cols. */
__global__ void add_bias_kernel(int64_t n, int64_t cols, const float *x, const float *bias,
                                float *out)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = x[i] + bias[i % cols];
}

static gcn_status cuda_add_bias(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                const float *bias, float *out)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    int64_t n = rows * cols;
    if (n <= 0)
        return GCN_OK;
    add_bias_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(n, cols, x, bias,
                                                                                 out);
    GCN_LAUNCHED("add_bias_kernel");
    return GCN_OK;
}

__global__ void relu_kernel(int64_t n, const float *x, float *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static gcn_status cuda_relu(gcn_ctx *ctx, int64_t n, const float *x, float *y)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    relu_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(n, x, y);
    GCN_LAUNCHED("relu_kernel");
    return GCN_OK;
}

__global__ void relu_backward_kernel(int64_t n, const float *y, const float *dy, float *dx,
                                     bool acc)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dx[i] = (y[i] > 0.0f ? dy[i] : 0.0f) + (acc ? dx[i] : 0.0f);
}

static gcn_status cuda_relu_backward(gcn_ctx *ctx, int64_t n, const float *y, const float *dy,
                                     float *dx, bool acc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    relu_backward_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(n, y, dy,
                                                                                      dx, acc);
    GCN_LAUNCHED("relu_backward_kernel");
    return GCN_OK;
}

/* y = x > 0 ? x : alpha (e^x - 1) */
__global__ void elu_kernel(int64_t n, const float *x, float alpha, float *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i] > 0.0f ? x[i] : __fmul_rn(alpha, expm1f(x[i]));
}

static gcn_status cuda_elu(gcn_ctx *ctx, int64_t n, const float *x, float alpha, float *y)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    elu_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(n, x, alpha, y);
    GCN_LAUNCHED("elu_kernel");
    return GCN_OK;
}

/* dx (+)= dy (y > 0 ? 1 : y + alpha), from the output y */
__global__ void elu_backward_kernel(int64_t n, const float *y, float alpha, const float *dy,
                                    float *dx, bool acc)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dx[i] = __fmul_rn(dy[i], y[i] > 0.0f ? 1.0f : y[i] + alpha) + (acc ? dx[i] : 0.0f);
}

static gcn_status cuda_elu_backward(gcn_ctx *ctx, int64_t n, const float *y, float alpha,
                                    const float *dy, float *dx, bool acc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    elu_backward_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(
        n, y, alpha, dy, dx, acc);
    GCN_LAUNCHED("elu_backward_kernel");
    return GCN_OK;
}

/* y (+)= s[0] x, the scale read on the device */
__global__ void scale_by_kernel(int64_t n, const float *x, const float *s, float *y, bool acc)
{
    float k = s[0];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __fmul_rn(k, x[i]) + (acc ? y[i] : 0.0f);
}

static gcn_status cuda_scale_by(gcn_ctx *ctx, int64_t n, const float *x, const float *s,
                                float *y, bool acc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    scale_by_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(n, x, s, y, acc);
    GCN_LAUNCHED("scale_by_kernel");
    return GCN_OK;
}

/* Thread g takes elements 4g .. 4g + 3 and their words (gcn_draw_words),
 * as on the CPU. */
__global__ void dropout_kernel(int64_t n, const float *x, float *y, float p, float scale,
                               uint32_t key0, uint32_t key1, gcn_draw_offset offset, bool acc)
{
    const uint32_t key[2] = {key0, key1};
    uint64_t first = gcn_draw_first(offset);
    int64_t groups = (n + 3) / 4;
    for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < groups;
         g += (int64_t)gridDim.x * blockDim.x) {
        uint32_t w[4];
        gcn_draw_words(offset, key, first, 4 * g, n, w);
        for (int k = 0; k < 4; k++) {
            int64_t i = 4 * g + k;
            if (i >= n)
                break;
            float u = gcn_philox_uniform(w[k]);
            y[i] = (u >= p ? __fmul_rn(x[i], scale) : 0.0f) + (acc ? y[i] : 0.0f);
        }
    }
}

static gcn_status cuda_dropout(gcn_ctx *ctx, int64_t n, const float *x, float *y, float p,
                               const uint32_t key[2], gcn_draw_offset offset, bool acc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    float scale = 1.0f / (1.0f - p);
    dropout_kernel<<<gcn_blocks((n + 3) / 4, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(
        n, x, y, p, scale, key[0], key[1], offset, acc);
    GCN_LAUNCHED("dropout_kernel");
    return GCN_OK;
}

/* gcn_sparse_mm_args's product, balanced by entries: a row of bag-of-words
 * features holds a few dozen, but a column of them (the backward's rows)
 * holds up to thousands, which one warp a row would walk alone.  Warp w
 * takes the 32 entries from 32 w on; each lane finds its entry's row
 * (binary search of row_ptr) and draws its mask, then the warp walks the
 * entries in order, lane l adding into columns l, l + 32, ... (up to
 * SPARSE_MM_COLS of them a pass), multiply then add in float.  A row whose
 * entries all lie in the warp's stretch is written at once; the part of a
 * row that starts before the stretch goes to carry[0][w], the part that
 * goes on past it to carry[1][w], and sparse_mm_rows_kernel adds those
 * parts in the stretches' order: no atomics, the same sums every run (they
 * round differently from the CPU's one pass over a row only where a row is
 * split). */
#define SPARSE_MM_COLS 4
#define SPARSE_MM_STRETCH 32

__device__ static int32_t row_of_entry(const int32_t *row_ptr, int32_t rows, int32_t e)
{
    int32_t lo = 0, hi = rows; /* the last r with row_ptr[r] <= e */
    while (hi - lo > 1) {
        int32_t mid = lo + (hi - lo) / 2;
        if (row_ptr[mid] <= e)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

__global__ void sparse_mm_kernel(gcn_sparse_mm_args a, uint32_t threshold, float scale,
                                 int32_t nnz, int64_t n_stretches, float *carry)
{
    const unsigned full = 0xffffffffu;
    int lane = threadIdx.x % 32;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    uint64_t first = gcn_draw_first(a.offset);
    for (int64_t w = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; w < n_stretches;
         w += warps) {
        int32_t e0 = (int32_t)(w * SPARSE_MM_STRETCH), e = e0 + lane;
        int32_t e1 = nnz - e0 < SPARSE_MM_STRETCH ? nnz : e0 + SPARSE_MM_STRETCH;
        int32_t row = 0, j = 0, kept = 0;
        float v = 0.0f;
        if (e < e1) {
            row = row_of_entry(a.row_ptr, a.rows, e);
            j = a.col_idx[e];
            v = a.values[e];
            kept = 1;
            if (a.p > 0.0f) {
                uint32_t word = a.transposed
                                    ? gcn_draw_word_at(a.offset, a.key, first, j, row, a.draw_cols)
                                    : gcn_draw_word_at(a.offset, a.key, first, row, j, a.draw_cols);
                kept = (word >> 8) >= threshold;
                v = __fmul_rn(v, scale);
            }
        }
        for (int64_t k0 = 0; k0 < a.n; k0 += 32 * SPARSE_MM_COLS) {
            float acc[SPARSE_MM_COLS] = {0.0f};
            int32_t cur = __shfl_sync(full, row, 0);
            for (int32_t t = 0; t <= e1 - e0; t++) {
                int32_t rt = __shfl_sync(full, row, t % 32);
                if (t == e1 - e0 || rt != cur) { /* row cur's part of the stretch is summed */
                    int32_t start = a.row_ptr[cur], end = a.row_ptr[cur + 1];
                    bool whole = start >= e0 && end <= e1;
                    float *dst = whole ? a.c + (int64_t)cur * a.n
                                       : carry + ((start < e0 ? 0 : n_stretches) + w) * a.n;
                    for (int q = 0; q < SPARSE_MM_COLS; q++) {
                        int64_t k = k0 + lane + 32 * q;
                        if (k < a.n)
                            dst[k] = whole && a.acc ? __fadd_rn(dst[k], acc[q]) : acc[q];
                        acc[q] = 0.0f;
                    }
                    cur = rt;
                }
                if (t == e1 - e0)
                    break;
                int32_t jt = __shfl_sync(full, j, t);
                float vt = __shfl_sync(full, v, t);
                if (!__shfl_sync(full, kept, t))
                    continue; /* dropped: skipped, as on the CPU */
                const float *bj = a.b + (int64_t)jt * a.n;
                for (int q = 0; q < SPARSE_MM_COLS; q++) {
                    int64_t k = k0 + lane + 32 * q;
                    if (k < a.n)
                        acc[q] = __fadd_rn(acc[q], __fmul_rn(vt, bj[k]));
                }
            }
        }
    }
}

/* The rows sparse_mm_kernel left: empty ones, and those split between
 * stretches, whose parts it adds in order; a thread per element. */
__global__ void sparse_mm_rows_kernel(gcn_sparse_mm_args a, const float *carry,
                                      int64_t n_stretches)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.rows * a.n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / a.n, k = i % a.n;
        int32_t start = a.row_ptr[r], end = a.row_ptr[r + 1];
        int64_t s0 = start / SPARSE_MM_STRETCH, s1 = (end - 1) / SPARSE_MM_STRETCH;
        if (start == end) {
            if (!a.acc)
                a.c[i] = 0.0f;
            continue;
        }
        if (s0 == s1)
            continue;
        float sum = carry[(n_stretches + s0) * a.n + k];
        for (int64_t s = s0 + 1; s <= s1; s++)
            sum = __fadd_rn(sum, carry[s * a.n + k]);
        a.c[i] = a.acc ? __fadd_rn(a.c[i], sum) : sum;
    }
}

static gcn_status cuda_sparse_mm(gcn_ctx *ctx, const gcn_sparse_mm_args *a)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (a->rows <= 0 || a->n <= 0)
        return GCN_OK;
    int32_t nnz = a->nnz;
    int64_t n_stretches = ((int64_t)nnz + SPARSE_MM_STRETCH - 1) / SPARSE_MM_STRETCH;
    size_t bytes = (size_t)(2 * n_stretches * a->n) * sizeof(float);
    float *carry = NULL;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&carry, bytes ? bytes : sizeof(float)));
    uint32_t threshold = (uint32_t)ceil((double)a->p * 16777216.0);
    float scale = 1.0f / (1.0f - a->p);
    gcn_status st = GCN_OK;
    if (n_stretches > 0) {
        sparse_mm_kernel<<<gcn_blocks(n_stretches * 32, GCN_THREADS), GCN_THREADS, 0,
                           cs->stream>>>(*a, threshold, scale, nnz, n_stretches, carry);
        st = GCN_LAUNCHED_ST("sparse_mm_kernel");
    }
    if (st == GCN_OK) {
        sparse_mm_rows_kernel<<<gcn_blocks((int64_t)a->rows * a->n, GCN_THREADS), GCN_THREADS,
                                0, cs->stream>>>(*a, carry, n_stretches);
        st = GCN_LAUNCHED_ST("sparse_mm_rows_kernel");
    }
    gcn_mem_release(ctx, carry, bytes ? bytes : sizeof(float));
    return st;
}

__global__ void add_u64_kernel(uint64_t *p, uint64_t delta)
{
    *p += delta;
}

static gcn_status cuda_add_u64(gcn_ctx *ctx, uint64_t *p, uint64_t delta)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    add_u64_kernel<<<1, 1, 0, cs->stream>>>(p, delta);
    GCN_LAUNCHED("add_u64_kernel");
    return GCN_OK;
}

/* Element i of the [rows, width] block is row i / width, column i % width. */
__global__ void copy_cols_kernel(int64_t n, int64_t width, const float *src, int64_t src_ld,
                                 const int32_t *src_rows, float *dst, int64_t dst_ld, bool acc)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / width, c = i % width;
        float *d = dst + r * dst_ld + c;
        *d = src[(src_rows ? src_rows[r] : r) * src_ld + c] + (acc ? *d : 0.0f);
    }
}

static gcn_status cuda_copy_cols(gcn_ctx *ctx, int64_t rows, int64_t width, const float *src,
                                 int64_t src_ld, const int32_t *src_rows, float *dst,
                                 int64_t dst_ld, bool acc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    int64_t n = rows * width;
    if (n <= 0)
        return GCN_OK;
    copy_cols_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(
        n, width, src, src_ld, src_rows, dst, dst_ld, acc);
    GCN_LAUNCHED("copy_cols_kernel");
    return GCN_OK;
}

/* ---- gemm ------------------------------------------------------------------ */

/* Row-major C[m,n] = op(A) op(B) is column-major C^T[n,m] = op(B)^T op(A)^T,
 * and a row-major matrix with row stride ld is its own transpose seen
 * column-major with leading dimension ld.  So cuBLAS gets B first, then A,
 * with the same transpose flags and strides, and no data moves. */
gcn_status gcn_cuda_gemm_ex(gcn_ctx *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n,
                            int64_t k, float alpha, const void *a, int64_t lda, const void *b,
                            int64_t ldb, cudaDataType_t ab_type, float beta, void *c,
                            int64_t ldc, cudaDataType_t c_type, cublasComputeType_t compute)
{
    cublasHandle_t h;
    GCN_TRY(gcn_cuda_cublas(ctx, &h));
    gcn_prof_category prev = gcn_prof_enter(ctx, GCN_PROF_GEMM);
    gcn_status st = GCN_CUBLAS_ST(
        cublasGemmEx_64(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                        n, m, k, &alpha, b, ab_type, ldb, a, ab_type, lda, &beta, c, c_type, ldc,
                        compute, CUBLAS_GEMM_DEFAULT));
    gcn_prof_leave(ctx, prev);
    return st;
}

static gcn_status cuda_gemm(gcn_ctx *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n,
                            int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                            int64_t ldb, float beta, float *c, int64_t ldc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (m <= 0 || n <= 0)
        return GCN_OK;
    if (k <= 0) { /* nothing to multiply: c = beta c, as the CPU does */
        int64_t n_rows = ldc == n ? 1 : m, len = ldc == n ? m * n : n;
        for (int64_t i = 0; i < n_rows; i++) {
            float *ci = c + i * ldc;
            if (beta == 0.0f)
                GCN_CUDA(cudaMemsetAsync(ci, 0, (size_t)len * sizeof *ci, cs->stream));
            else
                GCN_TRY(cuda_axpby(ctx, len, beta, ci, 0.0f, ci));
        }
        return GCN_OK;
    }
    return gcn_cuda_gemm_ex(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, CUDA_R_32F,
                            beta, c, ldc, CUDA_R_32F,
                            ctx->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
}

const gcn_backend gcn_backend_cuda = {
    .name = "cuda",
    .alloc = cuda_alloc,
    .release = cuda_release,
    .upload = cuda_upload,
    .download = cuda_download,
    .copy = cuda_copy,
    .fill = cuda_fill,
    .fill_bf16 = gcn_cuda_fill_bf16,
    .to_bf16 = gcn_cuda_to_bf16,
    .from_bf16 = gcn_cuda_from_bf16,
    .sync = cuda_sync,
    .gemm = cuda_gemm,
    .gemm_bf16 = gcn_cuda_gemm_bf16,
    .axpby = cuda_axpby,
    .add = cuda_add,
    .add_bias = cuda_add_bias,
    .col_sum = gcn_cuda_col_sum,
    .sum = gcn_cuda_sum,
    .sum_backward = gcn_cuda_sum_backward,
    .relu = cuda_relu,
    .relu_backward = cuda_relu_backward,
    .elu = cuda_elu,
    .elu_backward = cuda_elu_backward,
    .scale_by = cuda_scale_by,
    .dot = gcn_cuda_dot,
    .dropout = cuda_dropout,
    .sparse_mm = cuda_sparse_mm,
    .add_u64 = cuda_add_u64,
    .batchnorm_train = gcn_cuda_batchnorm_train,
    .batchnorm_eval = gcn_cuda_batchnorm_eval,
    .batchnorm_backward = gcn_cuda_batchnorm_backward,
    .batchnorm_eval_backward = gcn_cuda_batchnorm_eval_backward,
    .log_softmax = gcn_cuda_log_softmax,
    .log_softmax_backward = gcn_cuda_log_softmax_backward,
    .nll = gcn_cuda_nll,
    .nll_backward = gcn_cuda_nll_backward,
    .segment_pool = gcn_cuda_segment_pool,
    .segment_pool_backward = gcn_cuda_segment_pool_backward,
    .heads = gcn_cuda_heads,
    .heads_backward = gcn_cuda_heads_backward,
    .epilogue_stats = gcn_cuda_epilogue_stats,
    .epilogue_forward = gcn_cuda_epilogue_forward,
    .epilogue_backward = gcn_cuda_epilogue_backward,
    .copy_cols = cuda_copy_cols,
    .count_correct = gcn_cuda_count_correct,
    .cross_entropy = gcn_cuda_cross_entropy,
    .cross_entropy_backward = gcn_cuda_cross_entropy_backward,
};
