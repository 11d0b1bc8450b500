/* Per-column reductions shared by the .cu files that reduce over rows: the
 * tile kernel that walks a [rows, cols] matrix by column tiles and row
 * chunks (writing per-chunk partial sums), and the second pass that adds
 * the partials in chunk order.  Sums are doubles in a fixed order, so
 * results are deterministic.  CUDA C++ only. */
#ifndef GCN_CUDA_COLS_CUH
#define GCN_CUDA_COLS_CUH

#include "cuda_impl.h"

#define TILE 32        /* threadIdx.x */
#define LANES 8        /* threadIdx.y: rows a block takes at once */
#define MAX_CHUNKS 1024
#define MIN_CHUNK_ROWS 32

/* Work mapping: block (bx, by) covers columns [bx * 32 V, (bx + 1) * 32 V)
 * and the rows of chunk by; thread (tx, ty) takes columns c0 .. c0 + V - 1,
 * c0 = (bx * 32 + tx) V, of rows chunk_start + ty, + 8, ...  A warp reads
 * 32 V adjacent floats of one row (V = 4: float4 accesses, for widths that
 * are a multiple of four on 16-byte aligned arrays).  f(r, c0, acc) handles the thread's V elements of row r and adds its N
 * per-column terms into acc; with `partial` the eight row lanes are added in
 * order and partial[(by * cols + c) * N + k] receives the block's sums. */
template <int V, int N, class F>
__global__ void tile_kernel(int64_t rows, int64_t cols, int64_t chunk_rows, F f, double *partial)
{
    __shared__ double sh[N][LANES][TILE * V];
    int64_t c0 = ((int64_t)blockIdx.x * TILE + threadIdx.x) * V;
    int64_t r0 = (int64_t)blockIdx.y * chunk_rows;
    int64_t r1 = r0 + chunk_rows < rows ? r0 + chunk_rows : rows;
    double acc[N][V];
    for (int k = 0; k < N; k++)
        for (int v = 0; v < V; v++)
            acc[k][v] = 0.0;
    if (c0 < cols)
        for (int64_t r = r0 + threadIdx.y; r < r1; r += LANES)
            f(r, c0, acc);
    if (!partial)
        return;
    for (int k = 0; k < N; k++)
        for (int v = 0; v < V; v++)
            sh[k][threadIdx.y][threadIdx.x * V + v] = acc[k][v];
    __syncthreads();
    if (threadIdx.y != 0)
        return;
    for (int v = 0; v < V; v++) {
        int64_t c = c0 + v;
        if (c >= cols)
            break;
        for (int k = 0; k < N; k++) {
            double s = 0.0;
            for (int l = 0; l < LANES; l++)
                s += sh[k][l][threadIdx.x * V + v];
            partial[((int64_t)blockIdx.y * cols + c) * N + k] = s;
        }
    }
}

/* The grid of tile_kernel over [rows, cols]. */
struct tiling {
    int64_t chunk_rows, n_chunks;
    dim3 grid;
};

static inline tiling tile_grid(int64_t rows, int64_t cols, int vec)
{
    tiling t;
    t.chunk_rows = (rows + MAX_CHUNKS - 1) / MAX_CHUNKS;
    if (t.chunk_rows < MIN_CHUNK_ROWS)
        t.chunk_rows = MIN_CHUNK_ROWS;
    t.n_chunks = rows > 0 ? (rows + t.chunk_rows - 1) / t.chunk_rows : 0;
    t.grid = dim3((unsigned)((cols + TILE * vec - 1) / (TILE * vec)), (unsigned)t.n_chunks);
    return t;
}

/* Launches tile_kernel<V, N> over [rows, cols] (nothing when empty). */
template <int V, int N, class F>
static gcn_status launch_tiles(gcn_ctx *ctx, cudaStream_t stream, const tiling &t, int64_t rows,
                               int64_t cols, F f, double *partial, const char *name)
{
    if (t.n_chunks == 0 || cols == 0)
        return GCN_OK;
    tile_kernel<V, N><<<t.grid, dim3(TILE, LANES), 0, stream>>>(rows, cols, t.chunk_rows, f,
                                                                  partial);
    return gcn_cuda_launched(ctx, name, __FILE__, __LINE__);
}

/* One warp per column c (grid-stride over columns): lane l adds the chunk
 * partials l, l + 32, ... in order, a butterfly over the lanes adds the 32
 * sums in a fixed order, and lane 0 hands the totals to fin(c, totals).
 * Launch with col_finish_blocks(cols) blocks of GCN_THREADS threads. */
template <int N, class Fin>
__global__ void col_finish_kernel(int64_t cols, int64_t n_chunks, const double *partial, Fin fin)
{
    int lane = threadIdx.x % GCN_WARP;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / GCN_WARP);
    for (int64_t c = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / GCN_WARP; c < cols;
         c += warps) {
        double tot[N];
        for (int k = 0; k < N; k++)
            tot[k] = 0.0;
        for (int64_t b = lane; b < n_chunks; b += GCN_WARP)
            for (int k = 0; k < N; k++)
                tot[k] += partial[(b * cols + c) * N + k];
        for (int k = 0; k < N; k++)
            for (int o = GCN_WARP / 2; o > 0; o >>= 1)
                tot[k] += __shfl_xor_sync(0xffffffffu, tot[k], o);
        if (lane == 0)
            fin(c, tot);
    }
}

static inline unsigned col_finish_blocks(int64_t cols)
{
    return gcn_blocks(cols, GCN_THREADS / GCN_WARP);
}

#endif
