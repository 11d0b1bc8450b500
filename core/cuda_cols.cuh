/* Per-column reductions shared by the .cu files that reduce over rows: the
 * second pass that adds per-chunk partials in chunk order.  CUDA C++ only. */
#ifndef GCN_CUDA_COLS_CUH
#define GCN_CUDA_COLS_CUH

#include "cuda_impl.h"

/* One warp per column c (grid-stride over columns): lane l adds the chunk
 * partials l, l + 32, ... in order, a butterfly over the lanes adds the 32
 * sums in a fixed order, and lane 0 hands the totals to fin(c, totals).
 * Launch with col_finish_blocks(cols) blocks of GCN_THREADS threads. */
template <int N, class Fin>
__global__ void col_finish_kernel(int64_t cols, int64_t n_chunks, const double *partial, Fin fin)
{
    int lane = threadIdx.x % 32;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t c = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; c < cols;
         c += warps) {
        double tot[N];
        for (int k = 0; k < N; k++)
            tot[k] = 0.0;
        for (int64_t b = lane; b < n_chunks; b += 32)
            for (int k = 0; k < N; k++)
                tot[k] += partial[(b * cols + c) * N + k];
        for (int k = 0; k < N; k++)
            for (int o = 16; o > 0; o >>= 1)
                tot[k] += __shfl_xor_sync(0xffffffffu, tot[k], o);
        if (lane == 0)
            fin(c, tot);
    }
}

static inline unsigned col_finish_blocks(int64_t cols)
{
    return gcn_blocks(cols, GCN_THREADS / 32);
}

#endif
