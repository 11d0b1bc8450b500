/* rowsplit's device code shared with the community kernel
 * (adaptgear/intra_smem.cu) and rowpack: the argument block, the
 * group-of-lanes row sum with shuffle broadcasts, and the long-row pieces
 * whose partial rows the last piece sums in a fixed order.  S is the unit
 * X and Y are stored in (common.cuh: float, bf16x2 or bf16x1); sums and
 * partial rows are fp32.  Internal, CUDA C++ only. */
#ifndef GCN_SPMM_ROWSPLIT_CUH
#define GCN_SPMM_ROWSPLIT_CUH

#include <string.h>

#include "common.cuh"

typedef struct rs_args {
    const int32_t *col_idx;
    const int4 *rows;
    const float *val;
    const void *x; /* [n_cols, feat] units (feat: in units) */
    void *y;
    const int4 *chunks;
    const int2 *long_info;
    float *partial;
    int *counter;
    int32_t n_short, n_chunks;
    int feat, tile, n_tiles;
    bool accumulate;
    const unsigned long long *ends; /* rowpack's row-end masks, two words a unit in `rows` */
} rs_args;

/* The units of x and y. */
template <typename S>
__device__ __forceinline__ const S *x_units(const rs_args &a)
{
    return static_cast<const S *>(a.x);
}

template <typename S>
__device__ __forceinline__ S *y_units(const rs_args &a)
{
    return static_cast<S *>(a.y);
}

/* Lanes of the group that lane belongs to. */
template <int G>
__device__ __forceinline__ unsigned group_mask(int lane)
{
    return G == 32 ? 0xffffffffu : ((1u << G) - 1u) << (lane & ~(G - 1));
}

/* Lane li of a group of G lanes loads the (column - col0, value) pairs
 * m * G + li (m < M) of the cnt non-zeros from base; 0 past cnt. */
template <int G, int M>
__device__ __forceinline__ void load_pairs(const rs_args &a, int base, int cnt, int li, int col0,
                                           int (&c)[M], float (&v)[M])
{
#pragma unroll
    for (int m = 0; m < M; m++) {
        const int p = m * G + li;
        c[m] = p < cnt ? __ldg(a.col_idx + base + p) - col0 : 0;
        v[m] = p < cnt ? __ldg(a.val + base + p) : 0.0f;
    }
}

/* acc += sum over non-zeros [b, e) of val * X[col, tile], computed by the G
 * lanes of one group (li = lane in group): per round each lane loads M
 * (column, value) pairs, P = M * G in all, and the group walks them U at a
 * time with shuffles, so U * K vector loads per lane are in flight.  Vectors
 * past the tile's nvec load the tile's last vector again (the same sectors,
 * no extra traffic) into sums the caller never writes: loads guarded by the
 * lane as well as by p made rowsplit 3-8 % slower on ogbn-arxiv. */
template <int G, int V, int K, typename S = float>
__device__ __forceinline__ void row_sum(const rs_args &a, const S *xt, int b, int e, int li,
                                        unsigned gmask, int nvec,
                                        float (&acc)[K][V * unit_values<S>])
{
    constexpr int N = V * unit_values<S>;
    constexpr int M = 32 / G < 8 ? 32 / G : 8;
    constexpr int P = M * G;
    constexpr int U = K >= 4 ? 2 : (K == 2 ? 4 : 8);
    for (int base = b; base < e; base += P) {
        const int cnt = min(P, e - base);
        int c[M];
        float v[M];
        load_pairs<G, M>(a, base, cnt, li, 0, c, v);
#pragma unroll
        for (int p0 = 0; p0 < P; p0 += U) {
            if (p0 >= cnt)
                break;
            unit_raw<S> xv[U][K][V];
            float w[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int p = p0 + u, m = p / G, s = p % G;
                const int col = G == 1 ? c[m] : __shfl_sync(gmask, c[m], s, G);
                w[u] = G == 1 ? v[m] : __shfl_sync(gmask, v[m], s, G);
                const S *xr = xt + (int64_t)col * a.feat;
#pragma unroll
                for (int k = 0; k < K; k++) {
                    if (p < cnt)
                        uload_ro<S, V>(xr + min(k * G + li, nvec - 1) * V, xv[u][k]);
                    else
                        uzero<S, V>(xv[u][k]);
                }
            }
#pragma unroll
            for (int u = 0; u < U; u++)
#pragma unroll
                for (int k = 0; k < K; k++)
                    ufma<S, V>(w[u], xv[u][k], acc[k]);
        }
    }
}

/* The last warp to finish a long row's pieces sums their partial rows in
 * piece order and writes the row. */
template <int V, typename S = float>
__device__ __forceinline__ void reduce_long(const rs_args &a, int4 q, int lane, int col0,
                                            int nvec)
{
    constexpr int E = unit_values<S>, N = V * E;
    const int2 info = a.long_info[q.w];
    S *yr = y_units<S>(a) + (int64_t)q.x * a.feat + col0;
    for (int vi = lane; vi < nvec; vi += 32) {
        float s[N];
        vzero<N>(s);
        for (int j = 0; j < info.y; j++) {
            float t[N];
            fload_cg<N>(a.partial + ((int64_t)(info.x + j) * a.feat + col0 + vi * V) * E, t);
#pragma unroll
            for (int i = 0; i < N; i++)
                s[i] += t[i];
        }
        uwrite<S, V>(yr + vi * V, s, a.accumulate);
    }
}

/* A whole warp sums one piece of a long row: its 32 / G groups take equal
 * consecutive stretches, combine by butterfly shuffles, and group 0 stores
 * the partial row; a counter per (row, tile) elects the last piece. */
template <int G, int V, int K, typename S = float>
__device__ __forceinline__ void chunk_task(const rs_args &a, int c, int lane, int col0,
                                           int nvec, int tile)
{
    constexpr int E = unit_values<S>, N = V * E;
    const int4 q = a.chunks[c];
    const int li = lane % G, grp = lane / G;
    const int per = (q.z - q.y + 32 / G - 1) / (32 / G);
    const int b = min(q.y + grp * per, q.z), e = min(b + per, q.z);
    float acc[K][N];
#pragma unroll
    for (int k = 0; k < K; k++)
        vzero<N>(acc[k]);
    row_sum<G, V, K, S>(a, x_units<S>(a) + col0, b, e, li, group_mask<G>(lane), nvec, acc);
    __syncwarp();
#pragma unroll
    for (int off = G; off < 32; off *= 2)
#pragma unroll
        for (int k = 0; k < K; k++)
#pragma unroll
            for (int t = 0; t < N; t++)
                acc[k][t] += __shfl_xor_sync(0xffffffffu, acc[k][t], off);
    float *slot = a.partial + ((int64_t)c * a.feat + col0) * E;
#pragma unroll
    for (int k = 0; k < K; k++)
        if (grp == 0 && k * G + li < nvec)
            fstore<N>(slot + (k * G + li) * N, acc[k]);
    __threadfence();
    __syncwarp();
    int *counter = a.counter + (int64_t)q.w * a.n_tiles + tile;
    int last = 0;
    if (lane == 0)
        last = atomicAdd(counter, 1) == a.long_info[q.w].y - 1;
    if (!__shfl_sync(0xffffffffu, last, 0))
        return;
    __threadfence();
    reduce_long<V, S>(a, q, lane, col0, nvec);
    if (lane == 0)
        *counter = 0;
}

/* ---- host side: the long-row pieces ------------------------------------- */

/* The device arrays of the pieces of the rows longer than `chunk`. */
typedef struct gcn_rs_long {
    int32_t n_chunks, n_long;
    int4 *chunks;    /* [n_chunks]: row, first non-zero, end, long-row id */
    int2 *long_info; /* [n_long]: first chunk, number of chunks */
    float *partial;  /* [n_chunks, feat] partial rows, fp32 (a bf16 plan's: feat values) */
    int *counter;    /* [n_long, tiles] pieces finished, reset by the last */
    size_t chunks_bytes, long_bytes, partial_bytes, counter_bytes;
} gcn_rs_long;

static inline void gcn_rs_long_free(gcn_ctx *ctx, gcn_rs_long *l)
{
    gcn_mem_release(ctx, l->chunks, l->chunks_bytes);
    gcn_mem_release(ctx, l->long_info, l->long_bytes);
    gcn_mem_release(ctx, l->partial, l->partial_bytes);
    gcn_mem_release(ctx, l->counter, l->counter_bytes);
    memset(l, 0, sizeof *l);
}

/* Scratch rows for n_slots pieces of feat fp32 values and zeroed counters
 * for l->n_long rows over the feature tiles of either layout. */
static inline gcn_status gcn_rs_long_scratch(gcn_ctx *ctx, gcn_rs_long *l, int64_t n_slots,
                                             int feat, const gcn_feat_layout lay[2])
{
    int tiles = lay[0].n_tiles > lay[1].n_tiles ? lay[0].n_tiles : lay[1].n_tiles;
    l->partial_bytes = (size_t)n_slots * (size_t)feat * sizeof(float);
    l->counter_bytes = (size_t)l->n_long * (size_t)tiles * sizeof(int);
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&l->partial, l->partial_bytes));
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&l->counter, l->counter_bytes));
    if (l->counter_bytes == 0)
        return GCN_OK;
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    return GCN_CUDA_ST(cudaMemsetAsync(l->counter, 0, l->counter_bytes, cs->stream));
}

/* Finds the long rows of a host row_ptr and uploads their pieces, with
 * their scratch rows and counters (gcn_rs_long_scratch).  On failure the
 * caller still frees *l. */
static inline gcn_status gcn_rs_long_upload(gcn_ctx *ctx, const int32_t *row_ptr, int32_t n_rows,
                                            int32_t chunk, int feat,
                                            const gcn_feat_layout lay[2], gcn_rs_long *l)
{
    gcn_rowsplit_chunks ch = {0};
    gcn_status st;
    GCN_CHECK(gcn_rowsplit_chunks_build(ctx, row_ptr, n_rows, chunk, &ch));
    l->n_chunks = ch.n_chunks;
    l->n_long = ch.n_long;
    l->chunks_bytes = (size_t)ch.n_chunks * sizeof(int4);
    l->long_bytes = (size_t)ch.n_long * sizeof(int2);
    GCN_CHECK(gcn_spmm_upload(ctx, (void **)&l->chunks, ch.chunk, l->chunks_bytes));
    GCN_CHECK(gcn_spmm_upload(ctx, (void **)&l->long_info, ch.long_info, l->long_bytes));
    GCN_CHECK(gcn_rs_long_scratch(ctx, l, ch.n_chunks, feat, lay));
cleanup:
    gcn_rowsplit_chunks_free(&ch);
    return st;
}

#endif
