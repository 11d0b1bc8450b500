/* The CUDA backend's bf16 storage functions: fills, the conversions
 * between fp32 and bf16 (rounding with core/bf16.h as the CPU does), and
 * the bf16 product on tensor cores. */
#include "core/bf16.h"
#include "core/cuda_impl.h"
#include "core/prof.h"

/* Mapping for every kernel here: a grid-stride loop, one thread per
 * element i in [0, n). */

__global__ void fill_bf16_kernel(int64_t n, uint16_t *x, uint16_t bits)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        x[i] = bits;
}

__global__ void to_bf16_kernel(int64_t n, const float *x, uint16_t *y, bool acc)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = gcn_bf16_from_float(acc ? __fadd_rn(gcn_bf16_to_float(y[i]), x[i]) : x[i]);
}

__global__ void from_bf16_kernel(int64_t n, const uint16_t *x, float *y, bool acc)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __fadd_rn(gcn_bf16_to_float(x[i]), acc ? y[i] : 0.0f);
}

gcn_status gcn_cuda_fill_bf16(gcn_ctx *ctx, uint16_t *x, int64_t n, uint16_t bits)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    gcn_prof_category prev = gcn_prof_enter(ctx, GCN_PROF_OTHER);
    gcn_status st;
    if (bits == 0) {
        st = GCN_CUDA_ST(cudaMemsetAsync(x, 0, (size_t)n * sizeof *x, cs->stream));
    } else {
        fill_bf16_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(n, x, bits);
        st = GCN_LAUNCHED_ST("fill_bf16_kernel");
    }
    gcn_prof_leave(ctx, prev);
    return st;
}

gcn_status gcn_cuda_to_bf16(gcn_ctx *ctx, int64_t n, const float *x, uint16_t *y, bool acc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    gcn_prof_category prev = gcn_prof_enter(ctx, GCN_PROF_ELEMENTWISE);
    to_bf16_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(n, x, y, acc);
    gcn_status st = GCN_LAUNCHED_ST("to_bf16_kernel");
    gcn_prof_leave(ctx, prev);
    return st;
}

gcn_status gcn_cuda_from_bf16(gcn_ctx *ctx, int64_t n, const uint16_t *x, float *y, bool acc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    gcn_prof_category prev = gcn_prof_enter(ctx, GCN_PROF_ELEMENTWISE);
    from_bf16_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(n, x, y, acc);
    gcn_status st = GCN_LAUNCHED_ST("from_bf16_kernel");
    gcn_prof_leave(ctx, prev);
    return st;
}

/* The bf16 product on tensor cores: cuBLAS with bf16 operands and fp32
 * accumulation (CUBLAS_COMPUTE_32F), c in bf16 or fp32. */
gcn_status gcn_cuda_gemm_bf16(gcn_ctx *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n,
                              int64_t k, float alpha, const uint16_t *a, int64_t lda,
                              const uint16_t *b, int64_t ldb, float beta, void *c, int64_t ldc,
                              bool c_bf16)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (m <= 0 || n <= 0)
        return GCN_OK;
    if (k <= 0) { /* nothing to multiply: c = beta c, and accumulating (beta 1) keeps c */
        if (beta == 1.0f)
            return GCN_OK;
        if (beta != 0.0f)
            return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "gemm_bf16: beta %g with k = 0",
                             (double)beta);
        size_t elem = c_bf16 ? sizeof(uint16_t) : sizeof(float);
        GCN_CUDA(cudaMemset2DAsync(c, (size_t)ldc * elem, 0, (size_t)n * elem, (size_t)m,
                                   cs->stream));
        return GCN_OK;
    }
    if (!c_bf16 || beta == 0.0f)
        return gcn_cuda_gemm_ex(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
                                CUDA_R_16BF, beta, c, ldc, c_bf16 ? CUDA_R_16BF : CUDA_R_32F,
                                CUBLAS_COMPUTE_32F);
    /* Adding into a bf16 c: cuBLAS may split k and add each part's sum into
     * c, rounding every time (seen: one bf16 step off at k = 1000), so the
     * product goes to fp32 first and c takes it in one rounded addition. */
    if (beta != 1.0f)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "gemm_bf16: beta %g into bf16", (double)beta);
    size_t bytes = (size_t)(m * n) * sizeof(float);
    float *t = NULL;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&t, bytes));
    gcn_status st = gcn_cuda_gemm_ex(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
                                     CUDA_R_16BF, 0.0f, t, n, CUDA_R_32F, CUBLAS_COMPUTE_32F);
    uint16_t *c16 = static_cast<uint16_t *>(c);
    for (int64_t i = 0; st == GCN_OK && i < (ldc == n ? 1 : m); i++)
        st = gcn_cuda_to_bf16(ctx, ldc == n ? m * n : n, t + i * n, c16 + i * ldc, true);
    gcn_mem_release(ctx, t, bytes);
    return st;
}
