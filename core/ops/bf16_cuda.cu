/* The CUDA backend's bf16 storage functions: fills and the conversions
 * between fp32 and bf16, rounding with core/bf16.h as the CPU does. */
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
