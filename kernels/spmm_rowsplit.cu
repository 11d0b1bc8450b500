/* "rowsplit": the row-parallel CSR baseline and the deterministic kernel.  A
 * group of lanes sized to the feature tile owns each row, broadcasts the
 * row's column indices and values with shuffles, gathers X rows with
 * coalesced vector loads, and writes its row once: no float atomics.  Rows
 * longer than a chunk are cut into warp-sized pieces whose partial rows the
 * last piece to finish sums in a fixed order.  Host planning: spmm_plan.c. */
#include <stdlib.h>

#include "spmm_cuda.cuh"
#include "spmm_impls.h"

#define RS_THREADS 256
#define RS_WARPS (RS_THREADS / 32)
#define RS_MIN_BLOCKS 3 /* at most 80 registers: 24 warps per SM */

typedef struct rowsplit_plan {
    gcn_ctx *ctx;
    const int32_t *row_ptr; /* the matrix the plan describes */
    int32_t n_rows;
    int feat;
    bool empty;             /* no non-zeros: a run only clears y */
    int chunk;              /* rows with more non-zeros are cut into chunks */
    gcn_feat_layout lay[2]; /* [0] vectorised, [1] scalar for misaligned x or y */
    gcn_rowsplit_shape shape[2];
    int32_t n_chunks, n_long;
    int4 *chunks;           /* row, first non-zero, end, long-row id */
    int2 *long_info;        /* first chunk, number of chunks */
    float *partial;         /* [n_chunks, feat] partial rows */
    int *counter;           /* [n_long, tiles] pieces finished, reset by the last */
    size_t chunks_bytes, long_bytes, partial_bytes, counter_bytes;
} rowsplit_plan;

typedef struct rs_args {
    const int32_t *row_ptr, *col_idx;
    const float *val, *x;
    float *y;
    const int4 *chunks;
    const int2 *long_info;
    float *partial;
    int *counter;
    int32_t n_rows, n_chunks, chunk;
    int feat, tile, n_tiles;
    bool accumulate;
} rs_args;

/* Lanes of the group that lane belongs to. */
template <int G>
__device__ __forceinline__ unsigned group_mask(int lane)
{
    return G == 32 ? 0xffffffffu : ((1u << G) - 1u) << (lane & ~(G - 1));
}

/* acc += sum over non-zeros [b, e) of val * X[col, tile], computed by the G
 * lanes of one group (li = lane in group): per round each lane loads M
 * (column, value) pairs, P = M * G in all, and the group walks them U at a
 * time with shuffles, so U * K vector loads per lane are in flight. */
template <int G, int V, int K>
__device__ __forceinline__ void row_sum(const rs_args &a, const float *xt, int b, int e, int li,
                                        unsigned gmask, int nvec, float (&acc)[K][V])
{
    constexpr int M = 32 / G < 8 ? 32 / G : 8;
    constexpr int P = M * G;
    constexpr int U = K >= 4 ? 2 : (K == 2 ? 4 : 8);
    for (int base = b; base < e; base += P) {
        const int cnt = min(P, e - base);
        int c[M];
        float v[M];
#pragma unroll
        for (int m = 0; m < M; m++) {
            const int p = m * G + li;
            c[m] = p < cnt ? __ldg(a.col_idx + base + p) : 0;
            v[m] = p < cnt ? __ldg(a.val + base + p) : 0.0f;
        }
#pragma unroll
        for (int p0 = 0; p0 < P; p0 += U) {
            if (p0 >= cnt)
                break;
            float xv[U][K][V], w[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int p = p0 + u, m = p / G, s = p % G;
                const int col = G == 1 ? c[m] : __shfl_sync(gmask, c[m], s, G);
                w[u] = G == 1 ? v[m] : __shfl_sync(gmask, v[m], s, G);
                const float *xr = xt + (int64_t)col * a.feat;
#pragma unroll
                for (int k = 0; k < K; k++) {
                    const int vi = k * G + li;
                    if (p < cnt && vi < nvec)
                        vload_ro<V>(xr + vi * V, xv[u][k]);
                    else
                        vzero<V>(xv[u][k]);
                }
            }
#pragma unroll
            for (int u = 0; u < U; u++)
#pragma unroll
                for (int k = 0; k < K; k++)
#pragma unroll
                    for (int t = 0; t < V; t++)
                        acc[k][t] = fmaf(w[u], xv[u][k][t], acc[k][t]);
        }
    }
}

/* Group grp of the warp owns row rwarp * (32 / G) + grp, unless it is long. */
template <int G, int V, int K>
__device__ __forceinline__ void rows_task(const rs_args &a, int64_t rwarp, int lane, int col0,
                                          int nvec)
{
    const int li = lane % G, grp = lane / G;
    const int64_t row = rwarp * (32 / G) + grp;
    if (row >= a.n_rows)
        return;
    const int b = __ldg(a.row_ptr + row), e = __ldg(a.row_ptr + row + 1);
    if (e - b > a.chunk)
        return;
    float acc[K][V];
#pragma unroll
    for (int k = 0; k < K; k++)
        vzero<V>(acc[k]);
    row_sum<G, V, K>(a, a.x + col0, b, e, li, group_mask<G>(lane), nvec, acc);
    float *yr = a.y + row * a.feat + col0;
#pragma unroll
    for (int k = 0; k < K; k++)
        if (k * G + li < nvec)
            vwrite<V>(yr + (k * G + li) * V, acc[k], a.accumulate);
}

/* The last warp to finish a long row's pieces sums their partial rows in
 * piece order and writes the row. */
template <int V>
__device__ __forceinline__ void reduce_long(const rs_args &a, int4 q, int lane, int col0,
                                            int nvec)
{
    const int2 info = a.long_info[q.w];
    float *yr = a.y + (int64_t)q.x * a.feat + col0;
    for (int vi = lane; vi < nvec; vi += 32) {
        float s[V];
        vzero<V>(s);
        for (int j = 0; j < info.y; j++) {
            float t[V];
            vload_cg<V>(a.partial + (int64_t)(info.x + j) * a.feat + col0 + vi * V, t);
#pragma unroll
            for (int i = 0; i < V; i++)
                s[i] += t[i];
        }
        vwrite<V>(yr + vi * V, s, a.accumulate);
    }
}

/* A whole warp sums one piece of a long row: its 32 / G groups take equal
 * consecutive stretches, combine by butterfly shuffles, and group 0 stores
 * the partial row; a counter per (row, tile) elects the last piece. */
template <int G, int V, int K>
__device__ __forceinline__ void chunk_task(const rs_args &a, int c, int lane, int col0,
                                           int nvec, int tile)
{
    const int4 q = a.chunks[c];
    const int li = lane % G, grp = lane / G;
    const int per = (q.z - q.y + 32 / G - 1) / (32 / G);
    const int b = min(q.y + grp * per, q.z), e = min(b + per, q.z);
    float acc[K][V];
#pragma unroll
    for (int k = 0; k < K; k++)
        vzero<V>(acc[k]);
    row_sum<G, V, K>(a, a.x + col0, b, e, li, group_mask<G>(lane), nvec, acc);
    __syncwarp();
#pragma unroll
    for (int off = G; off < 32; off *= 2)
#pragma unroll
        for (int k = 0; k < K; k++)
#pragma unroll
            for (int t = 0; t < V; t++)
                acc[k][t] += __shfl_xor_sync(0xffffffffu, acc[k][t], off);
    float *slot = a.partial + (int64_t)c * a.feat + col0;
#pragma unroll
    for (int k = 0; k < K; k++)
        if (grp == 0 && k * G + li < nvec)
            vstore<V>(slot + (k * G + li) * V, acc[k]);
    __threadfence();
    __syncwarp();
    int *counter = a.counter + (int64_t)q.w * a.n_tiles + tile;
    int last = 0;
    if (lane == 0)
        last = atomicAdd(counter, 1) == a.long_info[q.w].y - 1;
    if (!__shfl_sync(0xffffffffu, last, 0))
        return;
    __threadfence();
    reduce_long<V>(a, q, lane, col0, nvec);
    if (lane == 0)
        *counter = 0;
}

/* Work mapping: blockIdx.y is the feature tile (columns [y * tile, ...));
 * along x, 8 warps per block; warps [0, n_chunks) each take one piece of a
 * long row, the following warps each take 32 / G consecutive rows, one per
 * group of G lanes; lane l of a group owns the tile's vectors l, l + G, ...
 * (K of them, V floats each). */
template <int G, int V, int K>
__global__ void __launch_bounds__(RS_THREADS, RS_MIN_BLOCKS) rowsplit_kernel(const __grid_constant__ rs_args a)
{
    const int lane = threadIdx.x & 31;
    const int64_t warp = (int64_t)blockIdx.x * RS_WARPS + (threadIdx.x >> 5);
    const int col0 = (int)blockIdx.y * a.tile;
    const int nvec = min(a.tile, a.feat - col0) / V;
    if (warp < a.n_chunks)
        chunk_task<G, V, K>(a, (int)warp, lane, col0, nvec, (int)blockIdx.y);
    else
        rows_task<G, V, K>(a, warp - a.n_chunks, lane, col0, nvec);
}

typedef void (*rs_kernel)(const rs_args);

template <int V, int K>
static rs_kernel pick_group(int group)
{
    switch (group) {
    case 1: return rowsplit_kernel<1, V, K>;
    case 2: return rowsplit_kernel<2, V, K>;
    case 4: return rowsplit_kernel<4, V, K>;
    case 8: return rowsplit_kernel<8, V, K>;
    case 16: return rowsplit_kernel<16, V, K>;
    default: return rowsplit_kernel<32, V, K>;
    }
}

/* K > 1 only with 32-lane groups, and K * V <= GCN_ROWSPLIT_MAX_FLOATS. */
template <int V>
static rs_kernel pick_per_lane(gcn_rowsplit_shape s)
{
    switch (s.per_lane) {
    case 1: return pick_group<V, 1>(s.group);
    case 2: return rowsplit_kernel<32, V, 2>;
    default: return rowsplit_kernel<32, V, 4>;
    }
}

static rs_kernel pick_kernel(int vec, gcn_rowsplit_shape s)
{
    if (vec == 4)
        return pick_per_lane<4>(s);
    if (vec == 2)
        return s.per_lane == 8 ? rowsplit_kernel<32, 2, 8> : pick_per_lane<2>(s);
    return s.per_lane == 8 ? rowsplit_kernel<32, 1, 8> : pick_per_lane<1>(s);
}

/* ---- plan ----------------------------------------------------------------- */

static bool rowsplit_supports(const gcn_csr *a, int feat)
{
    return a && a->device == GCN_DEVICE_CUDA && feat >= 1 && (a->nnz == 0 || a->values);
}

static void rowsplit_free_plan(void *plan)
{
    rowsplit_plan *p = (rowsplit_plan *)plan;
    if (!p)
        return;
    gcn_mem_release(p->ctx, p->chunks, p->chunks_bytes);
    gcn_mem_release(p->ctx, p->long_info, p->long_bytes);
    gcn_mem_release(p->ctx, p->partial, p->partial_bytes);
    gcn_mem_release(p->ctx, p->counter, p->counter_bytes);
    free(p);
}

/* Tile width for vector width vec: GCN_ROWSPLIT_TILE columns when set (> 0),
 * else automatic (gcn_rowsplit_auto_tile). */
static gcn_feat_layout choose_layout(const gcn_csr *a, int feat, int vec, size_t l2_budget)
{
    int widest = gcn_rowsplit_widest_tile(vec);
    int knob = gcn_spmm_knob("GCN_ROWSPLIT_TILE", 0, 0, 1 << 30);
    int tile = knob > 0 ? (knob < widest ? knob : widest)
                        : gcn_rowsplit_auto_tile(feat, vec, a->n_cols, l2_budget);
    return gcn_feat_layout_make(feat, vec, tile);
}

/* Long-row pieces to the device, with their scratch rows and counters. */
static gcn_status upload_chunks(gcn_ctx *ctx, const gcn_csr *a, rowsplit_plan *p)
{
    int32_t *row_ptr = NULL;
    gcn_rowsplit_chunks ch = {0};
    int tiles = p->lay[0].n_tiles > p->lay[1].n_tiles ? p->lay[0].n_tiles : p->lay[1].n_tiles;
    gcn_status st;
    GCN_CHECK(gcn_spmm_host_row_ptr(ctx, a, &row_ptr));
    GCN_CHECK(gcn_rowsplit_chunks_build(ctx, row_ptr, a->n_rows, p->chunk, &ch));
    p->n_chunks = ch.n_chunks;
    p->n_long = ch.n_long;
    p->chunks_bytes = (size_t)ch.n_chunks * sizeof(int4);
    p->long_bytes = (size_t)ch.n_long * sizeof(int2);
    p->partial_bytes = (size_t)ch.n_chunks * (size_t)p->feat * sizeof(float);
    p->counter_bytes = (size_t)ch.n_long * (size_t)tiles * sizeof(int);
    GCN_CHECK(gcn_spmm_upload(ctx, (void **)&p->chunks, ch.chunk, p->chunks_bytes));
    GCN_CHECK(gcn_spmm_upload(ctx, (void **)&p->long_info, ch.long_info, p->long_bytes));
    GCN_CHECK(gcn_mem_alloc(ctx, (void **)&p->partial, p->partial_bytes));
    GCN_CHECK(gcn_mem_alloc(ctx, (void **)&p->counter, p->counter_bytes));
    if (p->counter_bytes > 0) {
        gcn_cuda_state *cs;
        GCN_CHECK(gcn_cuda_begin(ctx, &cs));
        GCN_CHECK(GCN_CUDA_ST(cudaMemsetAsync(p->counter, 0, p->counter_bytes, cs->stream)));
    }
cleanup:
    free(row_ptr);
    gcn_rowsplit_chunks_free(&ch);
    return st;
}

static gcn_status rowsplit_plan_create(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, plan);
    *plan = NULL;
    if (!rowsplit_supports(a, feat))
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "rowsplit SpMM needs a CUDA matrix with values and feat >= 1");
    rowsplit_plan *p = (rowsplit_plan *)calloc(1, sizeof *p);
    if (!p)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for a rowsplit plan");
    p->ctx = ctx;
    p->row_ptr = a->row_ptr;
    p->n_rows = a->n_rows;
    p->feat = feat;
    p->empty = a->nnz == 0 || a->n_rows == 0;
    gcn_status st = GCN_OK;
    if (!p->empty) {
        int sms;
        size_t l2;
        GCN_CHECK(gcn_spmm_device_limits(ctx, &sms, &l2));
        p->chunk = gcn_spmm_knob("GCN_ROWSPLIT_CHUNK", 256, 1, INT32_MAX);
        p->lay[0] = choose_layout(a, feat, gcn_feat_vec(feat, 4), gcn_spmm_l2_budget(l2));
        p->lay[1] = choose_layout(a, feat, 1, gcn_spmm_l2_budget(l2));
        for (int i = 0; i < 2; i++) {
            p->shape[i] = gcn_rowsplit_shape_for(p->lay[i].vecs);
            if (p->lay[i].n_tiles > 65535) {
                st = GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "rowsplit: %d feature tiles exceed the "
                               "grid", p->lay[i].n_tiles);
                goto cleanup;
            }
        }
        GCN_CHECK(upload_chunks(ctx, a, p));
    }
    *plan = p;
    return GCN_OK;
cleanup:
    rowsplit_free_plan(p);
    return st;
}

/* ---- run ------------------------------------------------------------------ */

static gcn_status rowsplit_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x,
                               float *y, int feat, bool accumulate)
{
    rowsplit_plan *p = (rowsplit_plan *)plan;
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (!p || p->ctx != ctx || p->row_ptr != a->row_ptr || p->feat != feat)
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "rowsplit SpMM: plan built for another matrix, context or width");
    if (p->empty)
        return accumulate ? GCN_OK : gcn_spmm_clear(ctx, y, p->n_rows, feat);
    int which = gcn_spmm_aligned(x, p->lay[0].vec) && gcn_spmm_aligned(y, p->lay[0].vec) ? 0 : 1;
    const gcn_feat_layout *l = &p->lay[which];
    rs_args args = {a->row_ptr, a->col_idx, a->values, x, y, p->chunks, p->long_info,
                    p->partial, p->counter, a->n_rows, p->n_chunks, p->chunk,
                    feat, l->tile, l->n_tiles, accumulate};
    int rows_per_warp = 32 / p->shape[which].group;
    int64_t warps = p->n_chunks + ((int64_t)a->n_rows + rows_per_warp - 1) / rows_per_warp;
    dim3 grid((unsigned)((warps + RS_WARPS - 1) / RS_WARPS), (unsigned)l->n_tiles);
    pick_kernel(l->vec, p->shape[which])<<<grid, RS_THREADS, 0, cs->stream>>>(args);
    GCN_LAUNCHED("rowsplit_kernel");
    return GCN_OK;
}

const gcn_spmm_impl gcn_spmm_rowsplit = {
    .name = "rowsplit",
    .device = GCN_DEVICE_CUDA,
    .deterministic = true,
    .supports = rowsplit_supports,
    .plan = rowsplit_plan_create,
    .run = rowsplit_run,
    .free_plan = rowsplit_free_plan,
};
