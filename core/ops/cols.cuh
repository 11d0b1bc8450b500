/* Per-column reductions shared by the .cu files that reduce over rows: the
 * tile kernel that walks a [rows, cols] matrix by column tiles and row
 * chunks (writing per-chunk partial sums), the second pass that adds the
 * partials in chunk order, and both in one launch for small inputs.  Sums
 * are doubles in a fixed order, so results are deterministic.  CUDA C++
 * only. */
#ifndef GCN_CUDA_COLS_CUH
#define GCN_CUDA_COLS_CUH

#include "core/cuda_impl.h"
#include "epilogue_math.h"

#define TILE 32        /* threadIdx.x */
#define LANES 8        /* threadIdx.y: rows a block takes at once */
#define MAX_CHUNKS 1024
#define MIN_CHUNK_ROWS 32

/* Work mapping: block (bx, by) covers columns [bx * 32 V, (bx + 1) * 32 V)
 * and the rows of chunk by; thread (tx, ty) takes columns c0 .. c0 + V - 1,
 * c0 = (bx * 32 + tx) V, of rows chunk_start + ty, + 8, ...  A warp reads
 * 32 V adjacent floats of one row (V = 4: float4 accesses, for widths that
 * are a multiple of four on 16-byte aligned arrays).  f(r, c0, acc) handles
 * the thread's V elements of row r and adds its N per-column terms into acc;
 * with `partial` the eight row lanes are added in order and
 * partial[(by * cols + c) * N + k] receives the block's sums. */
template <int V, int N, class F>
__device__ void tile_sums(int64_t rows, int64_t cols, int64_t chunk_rows, F f, double *partial,
                          double (*sh)[LANES][TILE * V])
{
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

/* tile_sums alone: the blocks' partials, or with `partial` NULL just f. */
template <int V, int N, class F>
__global__ void tile_kernel(int64_t rows, int64_t cols, int64_t chunk_rows, F f, double *partial)
{
    __shared__ double sh[N][LANES][TILE * V];
    tile_sums<V, N>(rows, cols, chunk_rows, f, partial, sh);
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

/* Column c's total of term k as col_finish_kernel's lane 0 ends with it,
 * computed by one thread: v[l] is lane l's sum of chunks l, l + 32, ... in
 * order, then gcn_lane_tree_sum adds them as the butterfly does, so the two
 * ways of finishing give the same bits.  The partials are loaded 32 at a
 * time before they are added, so their loads are in flight together. */
template <int N>
__device__ double lane_order_total(const double *partial, int64_t cols, int64_t n_chunks,
                                   int64_t c, int k)
{
    double v[GCN_WARP];
#pragma unroll
    for (int l = 0; l < GCN_WARP; l++)
        v[l] = 0.0;
    for (int64_t b0 = 0; b0 < n_chunks; b0 += GCN_WARP) {
        double x[GCN_WARP];
#pragma unroll
        for (int l = 0; l < GCN_WARP; l++)
            x[l] = b0 + l < n_chunks ? partial[((b0 + l) * cols + c) * N + k] : 0.0;
#pragma unroll
        for (int l = 0; l < GCN_WARP; l++)
            if (b0 + l < n_chunks)
                v[l] += x[l];
    }
    return gcn_lane_tree_sum(v);
}

/* tile_kernel and col_finish_kernel in one launch, the "last block
 * finishes" way: each block writes its partials, and the block that
 * counts itself last among the chunks of its column tile (counters[bx],
 * zero before and after every launch) finishes the tile's 32 V columns.
 * There thread j takes term j % N of tile column j / N (lane_order_total:
 * its loads are adjacent to its neighbours', and all of them are in flight
 * at once), then thread j calls fin for tile column j.  Counters come from
 * gcn_cuda_state: one stream per context, so no two of these kernels run
 * at once. */
template <int V, int N, class F, class Fin>
__global__ void tile_finish_kernel(int64_t rows, int64_t cols, int64_t chunk_rows, F f,
                                   double *partial, Fin fin, unsigned *counters)
{
    static_assert(TILE * V * N <= TILE * LANES, "a thread per term of a tile column");
    __shared__ double sh[N][LANES][TILE * V];
    __shared__ bool last;
    tile_sums<V, N>(rows, cols, chunk_rows, f, partial, sh);
    /* the block's partials are written before it is counted, and the last
     * block reads every block's after: the barriers order the threads of a
     * block, the fences either side of the count order the blocks */
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        __threadfence();
        last = atomicAdd(&counters[blockIdx.x], 1u) == gridDim.y - 1;
        if (last) {
            counters[blockIdx.x] = 0; /* ready for the next launch or graph replay */
            __threadfence();
        }
    }
    __syncthreads();
    if (!last)
        return;
    int64_t first = (int64_t)blockIdx.x * TILE * V;
    int j = threadIdx.y * TILE + threadIdx.x;
    /* sh's partial sums were read before the barriers above: reuse it */
    double *tile_tot = &sh[0][0][0];
    if (j < TILE * V * N && first + j / N < cols)
        tile_tot[j] = lane_order_total<N>(partial, cols, gridDim.y, first + j / N, j % N);
    __syncthreads();
    if (j < TILE * V && first + j < cols) {
        double t[N];
        for (int k = 0; k < N; k++)
            t[k] = tile_tot[j * N + k];
        fin(first + j, t);
    }
}

/* The bound on the partials a finishing block reads alone (n_chunks * 32 V
 * * N doubles).  One SM reads L2 at best at about 64 bytes a cycle, so 16K
 * doubles (128 KB) take 2K cycles or more, about a microsecond: up to there
 * the finishing block costs less than the separate col_finish_kernel's
 * launch, beyond it the separate kernel, whose reads spread over the whole
 * GPU, wins.  Under it: up to 2,048 rows for every use (float4 columns, two
 * terms), so graph-classification batches of about 1,250 rows; above it at
 * every use, ogbn-arxiv's 169,343 rows (1,024 chunks), which keeps the
 * parallel finish. */
#define FUSED_FINISH_DOUBLES 16384

/* Whether tile_finish_kernel may finish tiling t: some rows (with none,
 * no tile runs and col_finish_kernel alone hands fin its zeros), a column
 * tile per counter, and partials under the bound. */
static inline bool fused_finish(const tiling &t, int vec, int n_terms)
{
    return t.n_chunks > 0 && t.grid.x <= GCN_TILE_COUNTERS &&
           t.n_chunks * TILE * vec * n_terms <= FUSED_FINISH_DOUBLES;
}

/* fin(c, totals) for every column of tiling t over [rows, cols], the totals
 * of f's N terms over the rows, into partial (n_chunks * cols * N doubles):
 * one launch where fused_finish allows, else tile_kernel and
 * col_finish_kernel. */
template <int V, int N, class F, class Fin>
static gcn_status reduce_tiles(gcn_ctx *ctx, gcn_cuda_state *cs, const tiling &t, int64_t rows,
                               int64_t cols, F f, double *partial, Fin fin, const char *name)
{
    if (cols <= 0)
        return GCN_OK;
    if (fused_finish(t, V, N)) {
        tile_finish_kernel<V, N><<<t.grid, dim3(TILE, LANES), 0, cs->stream>>>(
            rows, cols, t.chunk_rows, f, partial, fin, cs->tile_counters);
        return gcn_cuda_launched(ctx, name, __FILE__, __LINE__);
    }
    GCN_TRY((launch_tiles<V, N>(ctx, cs->stream, t, rows, cols, f, partial, name)));
    col_finish_kernel<N><<<col_finish_blocks(cols), GCN_THREADS, 0, cs->stream>>>(
        cols, t.n_chunks, partial, fin);
    return gcn_cuda_launched(ctx, "col_finish_kernel", __FILE__, __LINE__);
}

#endif
