/* A program's own CUDA SpMM kernel (gpu_user_kernel.h). */
#include <cuda_runtime.h>

#include "gpu_user_kernel.h"

int user_kernel_launches;

__global__ void entry_per_thread(int32_t rows, int feat, const int32_t *row_ptr,
                                 const int32_t *col_idx, const float *values, const float *x,
                                 float *y, bool accumulate)
{
    int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= (int64_t)rows * feat)
        return;
    int32_t i = (int32_t)(k / feat);
    int c = (int)(k % feat);
    float s = accumulate ? y[k] : 0.0f;
    for (int32_t e = row_ptr[i]; e < row_ptr[i + 1]; e++)
        s += values[e] * x[(int64_t)col_idx[e] * feat + c];
    y[k] = s;
}

static bool entry_supports(const gcn_csr *a, int feat)
{
    return gcn_csr_device(a) == GCN_DEVICE_CUDA && feat >= 1;
}

static gcn_status entry_plan(gcn_ctx *, const gcn_csr *, int, void **plan)
{
    *plan = NULL;
    return GCN_OK;
}

static gcn_status entry_run(gcn_ctx *ctx, void *, const gcn_csr *a, const float *x, float *y,
                            int feat, bool accumulate)
{
    const int threads = 256;
    int64_t total = (int64_t)gcn_csr_rows(a) * feat;
    unsigned blocks = (unsigned)((total + threads - 1) / threads);
    entry_per_thread<<<blocks, threads, 0, (cudaStream_t)gcn_ctx_stream(ctx)>>>(
        gcn_csr_rows(a), feat, gcn_csr_row_ptr(a), gcn_csr_col_idx(a), gcn_csr_values(a), x, y,
        accumulate);
    user_kernel_launches++;
    return cudaGetLastError() == cudaSuccess ? GCN_OK : GCN_ERR_CUDA;
}

const gcn_spmm_impl user_cuda_kernel = {
    sizeof(gcn_spmm_impl),   /* size */
    "thread_per_entry",      /* name */
    GCN_DEVICE_CUDA,         /* device */
    true,                    /* deterministic */
    GCN_SPMM_ROLE_WHOLE,     /* roles */
    entry_supports,
    entry_plan,
    entry_run,
    NULL,                    /* free_plan: plans are always NULL */
};
