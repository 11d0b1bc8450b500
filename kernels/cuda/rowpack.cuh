/* rowpack's device code (the plan and the launch are in rowpack.cu):
 * a group of lanes sums one unit of packed rows or one piece of a long row,
 * and the pickers that choose a compiled kernel for a layout.  T is the
 * unit X and Y hold (common.cuh: float, bf16x2 or bf16x1); sums and
 * partial rows are fp32.  Internal, CUDA C++ only. */
#ifndef GCN_SPMM_ROWPACK_CUH
#define GCN_SPMM_ROWPACK_CUH

#include "rowsplit.cuh"

#define RP_THREADS 256 /* threads a block, but for units of GCN_ROWPACK_MAX_UNIT */
#define RP_WIDE_BLOCKS 2 /* resident blocks an SM of GCN_ROWPACK_WIDE_THREADS (64 registers) */
#define RP_LOADS 8 /* X vectors a lane has in flight */

/* Threads a block of the kernel for units of `unit` non-zeros. */
__host__ __device__ constexpr int rp_block_threads(int unit)
{
    return unit > 64 ? GCN_ROWPACK_WIDE_THREADS : RP_THREADS;
}

/* The piece in scratch slot `slot` of long row `lid` stores its partial
 * row; the last of the row's pieces to finish (a counter per row and tile)
 * sums the slots in order, writes the row and resets the counter. */
template <int G, int V, typename T>
__device__ __forceinline__ void piece_done(const rs_args &a, int64_t row, int slot, int lid,
                                           int li, unsigned gmask, bool lane_on, int col0,
                                           const float (&acc)[V * unit_values<T>])
{
    constexpr int E = unit_values<T>, N = V * E;
    const int64_t off = col0 + li * V;
    if (lane_on)
        fstore<N>(a.partial + ((int64_t)slot * a.feat + off) * E, acc);
    __threadfence();
    __syncwarp(gmask);
    const int2 info = a.long_info[lid];
    int *counter = a.counter + (int64_t)lid * a.n_tiles + blockIdx.y;
    int last = 0;
    if (li == 0)
        last = atomicAdd(counter, 1) == info.y - 1;
    if (!__shfl_sync(gmask, last, 0, G))
        return;
    __threadfence();
    if (lane_on) {
        float sum[N];
        vzero<N>(sum);
#pragma unroll 8
        for (int j = 0; j < info.y; j++) {
            float t[N];
            fload_cg<N>(a.partial + ((int64_t)(info.x + j) * a.feat + off) * E, t);
#pragma unroll
            for (int i = 0; i < N; i++)
                sum[i] += t[i];
        }
        uwrite<T, V>(y_units<T>(a) + row * a.feat + off, sum, a.accumulate);
    }
    if (li == 0)
        *counter = 0;
}

/* Whether non-zero p of a unit ends a row, and the rows of the unit that
 * end before it, from the unit's mask (lo: bits 0-63, hi: 64-127).  p is a
 * constant once the caller's loop is unrolled, so one word is read. */
__device__ __forceinline__ bool ends_row(unsigned long long lo, unsigned long long hi, int p)
{
    return p < 64 ? (lo >> p) & 1ull : (hi >> (p & 63)) & 1ull;
}

__device__ __forceinline__ int rows_before(unsigned long long lo, unsigned long long hi, int p)
{
    return p < 64 ? __popcll(lo & ((1ull << p) - 1ull))
                  : __popcll(lo) + __popcll(hi & ((1ull << (p & 63)) - 1ull));
}

/* The G lanes of a group sum unit k: lane li loads pairs li, li + G, ...,
 * and for each non-zero p (broadcast by shuffles) gathers its vector li of
 * the tile.  In a unit of packed rows, after non-zero p with bit p of the
 * mask set, the row ending there (the mask's set bits below p count the
 * rows before it) is written and the sum restarts; a piece goes to
 * piece_done, and an empty row is written as zeros.  The C positions are
 * unrolled without an early exit or an outer loop, so the compiler keeps
 * RP_LOADS gathers in flight across rows without spilling; positions past
 * the unit's end load nothing.  Units of up to 64 non-zeros read only the
 * mask's first word. */
template <int G, int V, int C, bool FULL, typename T>
__device__ __forceinline__ void unit_task(const rs_args &a, int64_t uwarp, int lane, int col0,
                                          int nvec)
{
    constexpr int M = C / G, N = V * unit_values<T>;
    const int li = lane % G;
    const int64_t k = uwarp * (GCN_WARP / G) + lane / G;
    if (k >= a.n_short)
        return;
    const int4 q = __ldg(a.rows + k);
    const unsigned long long tag = __ldg(a.ends + 2 * k);
    const unsigned long long lo = q.y > 0 ? tag : 0ull;
    const unsigned long long hi = C > 64 && q.y > 0 ? __ldg(a.ends + 2 * k + 1) : 0ull;
    const unsigned gmask = group_mask<G>(lane);
    const int cnt = q.w - q.z;
    const bool lane_on = FULL || li < nvec;
    T *yt = y_units<T>(a) + col0 + li * V;
    const T *xt = x_units<T>(a) + col0 + li * V;
    int c[M];
    float v[M];
    load_pairs<G, M>(a, q.z, cnt, li, 0, c, v);
    float acc[N];
    vzero<N>(acc);
#pragma unroll
    for (int p0 = 0; p0 < C; p0 += RP_LOADS) {
        unit_raw<T> xv[RP_LOADS][V];
        float w[RP_LOADS];
#pragma unroll
        for (int u = 0; u < RP_LOADS; u++) {
            const int p = p0 + u;
            const int col = __shfl_sync(gmask, c[p / G], p % G, G);
            w[u] = __shfl_sync(gmask, v[p / G], p % G, G);
            if (p < cnt && lane_on) /* a 32-bit offset: rowpack_supports */
                uload_ro<T, V>(xt + (uint32_t)col * (uint32_t)a.feat, xv[u]);
            else
                uzero<T, V>(xv[u]);
        }
#pragma unroll
        for (int u = 0; u < RP_LOADS; u++) {
            const int p = p0 + u;
            ufma<T, V>(w[u], xv[u], acc);
            if (ends_row(lo, hi, p)) {
                const int64_t row = q.x + rows_before(lo, hi, p);
                if (lane_on)
                    uwrite<T, V>(yt + row * a.feat, acc, a.accumulate);
                vzero<N>(acc);
            }
        }
    }
    if (q.y < 0)
        piece_done<G, V, T>(a, q.x, -1 - q.y, (int)tag, li, gmask, lane_on, col0, acc);
    else if (cnt == 0 && lane_on)
        uwrite<T, V>(yt + (int64_t)q.x * a.feat, acc, a.accumulate);
}

/* Work mapping: blockIdx.y is the feature tile; along x, the block's warps
 * (8, or 16 for units of GCN_ROWPACK_MAX_UNIT) each take the next 32 / G
 * units, one a group of G lanes; lane l owns the tile's vector l (V units).
 * FULL: every tile has a vector for each of the group's lanes, so no lane
 * checks its own before it loads or writes (the check cost 3-11 % on
 * ogbn-arxiv at F = 32 to 256). */
template <int G, int V, int C, int MINB, bool FULL, typename T>
__global__ void __launch_bounds__(rp_block_threads(C), MINB)
    rowpack_kernel(const __grid_constant__ rs_args a)
{
    constexpr int block_warps = rp_block_threads(C) / GCN_WARP;
    const int lane = threadIdx.x & 31;
    const int64_t warp = (int64_t)blockIdx.x * block_warps + (threadIdx.x / GCN_WARP);
    const int col0 = (int)blockIdx.y * a.tile;
    unit_task<G, V, C, FULL, T>(a, warp, lane, col0, min(a.tile, a.feat - col0) / V);
}

typedef void (*rp_kernel)(const rs_args);

template <typename T, int V, int C, int MINB, bool FULL>
static rp_kernel pick_group(int group)
{
    switch (group) {
    case 4: return rowpack_kernel<4, V, C, MINB, FULL, T>;
    case 8: return rowpack_kernel<8, V, C, MINB, FULL, T>;
    case 16: return rowpack_kernel<16, V, C, MINB, FULL, T>;
    default: return rowpack_kernel<32, V, C, MINB, FULL, T>;
    }
}

/* Units of 64 only with groups of 16 or 32 lanes (choose_unit): narrower
 * groups would hold 8 or more pairs a lane. */
template <typename T, int V, int MINB, bool FULL>
static rp_kernel pick_unit(int group, int unit)
{
    if (unit == 64)
        return group == 16 ? rowpack_kernel<16, V, 64, MINB, FULL, T>
                           : rowpack_kernel<32, V, 64, MINB, FULL, T>;
    return pick_group<T, V, 32, MINB, FULL>(group);
}

/* Units of GCN_ROWPACK_MAX_UNIT only with groups of 32 lanes, in blocks of
 * GCN_ROWPACK_WIDE_THREADS, RP_WIDE_BLOCKS an SM whatever min_blocks says. */
template <typename T, int V, bool FULL>
static rp_kernel pick_blocks(int group, int unit, int min_blocks)
{
    if (unit == GCN_ROWPACK_MAX_UNIT)
        return rowpack_kernel<32, V, GCN_ROWPACK_MAX_UNIT, RP_WIDE_BLOCKS, FULL, T>;
    if (min_blocks == GCN_ROWPACK_BLOCKS_MANY)
        return pick_unit<T, V, GCN_ROWPACK_BLOCKS_MANY, FULL>(group, unit);
    return pick_unit<T, V, GCN_ROWPACK_BLOCKS_FEW, FULL>(group, unit);
}

/* The kernel for vectors of V units T, for groups of `group` lanes, units
 * of at most `unit` non-zeros and `min_blocks` resident blocks an SM;
 * `full` when every tile has a vector for each lane of the group. */
template <typename T, int V>
rp_kernel gcn_rowpack_pick(bool full, int group, int unit, int min_blocks)
{
    return full ? pick_blocks<T, V, true>(group, unit, min_blocks)
                : pick_blocks<T, V, false>(group, unit, min_blocks);
}

/* Instantiated one unit type and width a file (rowpack_v1.cu, _v2.cu,
 * _v4.cu; rowpack_bf16_v1.cu, _v2.cu, _v4.cu): a module holds the kernels
 * of one width, and a process loads only the modules of the widths it
 * runs. */
extern template rp_kernel gcn_rowpack_pick<float, 1>(bool, int, int, int);
extern template rp_kernel gcn_rowpack_pick<float, 2>(bool, int, int, int);
extern template rp_kernel gcn_rowpack_pick<float, 4>(bool, int, int, int);
extern template rp_kernel gcn_rowpack_pick<bf16x1, 1>(bool, int, int, int);
extern template rp_kernel gcn_rowpack_pick<bf16x2, 1>(bool, int, int, int);
extern template rp_kernel gcn_rowpack_pick<bf16x2, 2>(bool, int, int, int);
extern template rp_kernel gcn_rowpack_pick<bf16x2, 4>(bool, int, int, int);

#endif
