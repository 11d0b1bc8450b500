/* The kernel LOCAL ranks on one GPU sum doubles with (core/comm_local.c);
 * floats go through the backend's add. */
#include "comm_impl.h"
#include "cuda_impl.h"

/* Grid-stride loop, one thread per element i in [0, n). */
__global__ void add_f64_kernel(int64_t n, const double *x, double *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __dadd_rn(y[i], x[i]);
}

gcn_status gcn_comm_cuda_add_f64(gcn_ctx *ctx, int64_t n, const double *x, double *y)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n <= 0)
        return GCN_OK;
    add_f64_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(n, x, y);
    GCN_LAUNCHED("add_f64_kernel");
    return GCN_OK;
}
