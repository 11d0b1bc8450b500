/* "mergepath": MergePath-SpMM (ISPASS'23).  The merge path of row ends and
 * non-zero indices (n_rows + nnz items) is cut into equal pieces of `cost`
 * items, one per worker; a worker writes the rows it completes with plain
 * stores and adds its partial first and last rows into Y atomically.  The
 * plan finds every worker's start with a binary search on the GPU.  Host
 * planning: mergepath.c; docs/kernels.md. */
#include <stdlib.h>

#include "common.cuh"
#include "kernels/spmm/impls.h"

#define MP_THREADS 256

typedef struct mergepath_plan {
    gcn_spmm_head head;     /* first member: the product the plan is for */
    int cost;               /* merge-path items per worker */
    int64_t n_workers;
    gcn_feat_layout lay[2]; /* [0] vectorised, [1] scalar for misaligned x or y */
    int2 *coord;            /* [n_workers + 1]: (rows, non-zeros) before each worker */
    int32_t n_split;
    int32_t *split;         /* [n_split]: the rows several workers add into */
    size_t coord_bytes, split_bytes;
} mergepath_plan;

typedef struct mp_args {
    const int32_t *row_ptr, *col_idx;
    const float *val, *x;
    float *y;
    const int2 *coord;
    int64_t n_workers;
    int feat, tile;
    int lanes, per_warp, per_block; /* lanes per worker; workers per warp (lanes <= 32), block */
    bool accumulate;
} mp_args;

/* Work mapping: a grid-stride loop over workers w in [0, n_workers] finds
 * where diagonal min(w * cost, items) crosses the merge path. */
__global__ void mergepath_search(const int32_t *row_ptr, int32_t n_rows, int32_t nnz, int cost,
                                 int64_t n_workers, int2 *coord)
{
    const int64_t items = (int64_t)n_rows + nnz;
    for (int64_t w = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; w <= n_workers;
         w += (int64_t)gridDim.x * blockDim.x) {
        const int64_t diag = w * cost < items ? w * cost : items;
        int32_t row, nz;
        gcn_merge_path_search(diag, row_ptr, n_rows, nnz, &row, &nz);
        coord[w] = make_int2(row, nz);
    }
}

/* Work mapping: a grid-stride loop over workers w marks the row that worker
 * w starts inside (-1 if none, or if worker w - 1 started inside it too). */
__global__ void mergepath_split_rows(const int32_t *row_ptr, const int2 *coord,
                                     int64_t n_workers, int32_t *split)
{
    for (int64_t w = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; w < n_workers;
         w += (int64_t)gridDim.x * blockDim.x) {
        const int2 c = coord[w];
        const bool cut = w > 0 && c.y > row_ptr[c.x];
        const bool again = w > 1 && coord[w - 1].x == c.x && coord[w - 1].y > row_ptr[c.x];
        split[w] = cut && !again ? c.x : -1;
    }
}

/* Work mapping: a grid-stride loop over (shared row, column) pairs zeroes
 * the rows that several workers add into, before their atomic adds. */
__global__ void mergepath_zero_split(const int32_t *split, int32_t n_split, float *y, int feat)
{
    const int64_t n = (int64_t)n_split * feat;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[(int64_t)split[i / feat] * feat + i % feat] = 0.0f;
}

/* acc += sum over non-zeros [b, e) of val * X[col, this lane's vector]; all
 * lanes of a worker read the same (column, value), 8 gathers in flight. */
template <int V>
__device__ __forceinline__ void path_sum(const mp_args &a, const float *xt, int b, int e,
                                         float (&acc)[V])
{
    for (int j0 = b; j0 < e; j0 += 8) {
        float xv[8][V], w[8];
#pragma unroll
        for (int u = 0; u < 8; u++) {
            const int j = j0 + u;
            w[u] = j < e ? __ldg(a.val + j) : 0.0f;
            if (j < e)
                vload_ro<V>(xt + (int64_t)__ldg(a.col_idx + j) * a.feat, xv[u]);
            else
                vzero<V>(xv[u]);
        }
#pragma unroll
        for (int u = 0; u < 8; u++)
#pragma unroll
            for (int i = 0; i < V; i++)
                acc[i] = fmaf(w[u], xv[u][i], acc[i]);
    }
}

/* Work mapping: blockIdx.y is the feature tile.  With lanes <= 32 each warp
 * holds per_warp workers of `lanes` consecutive lanes (the rest idle), else
 * a worker is lanes / 32 consecutive warps; lane li of a worker owns the
 * tile's vector li (V floats).  Worker w walks merge-path items
 * [coord[w], coord[w + 1]): each row whose end it reaches is summed from
 * max(its first non-zero, the worker's first) and stored plainly unless
 * the row began before the worker (then added atomically); the non-zeros
 * of the row it stops inside are added atomically. */
template <int V>
__global__ void __launch_bounds__(GCN_MAX_THREADS)
    mergepath_kernel(const __grid_constant__ mp_args a)
{
    int li;
    int64_t w;
    if (a.lanes <= GCN_WARP) {
        const int lane = threadIdx.x % GCN_WARP, slot = lane / a.lanes;
        if (slot >= a.per_warp)
            return;
        li = lane % a.lanes;
        w = (int64_t)blockIdx.x * a.per_block + (threadIdx.x / GCN_WARP) * a.per_warp + slot;
    } else {
        li = threadIdx.x % a.lanes;
        w = (int64_t)blockIdx.x * a.per_block + threadIdx.x / a.lanes;
    }
    const int col0 = (int)blockIdx.y * a.tile;
    if (w >= a.n_workers || li >= min(a.tile, a.feat - col0) / V)
        return;
    const int2 s = a.coord[w], t = a.coord[w + 1];
    const float *xt = a.x + col0 + li * V;
    float *yt = a.y + col0 + li * V;
    int rb = max(s.y, __ldg(a.row_ptr + s.x));
    for (int r = s.x; r < t.x; r++) {
        const int re = __ldg(a.row_ptr + r + 1);
        float acc[V];
        vzero<V>(acc);
        path_sum<V>(a, xt, rb, re, acc);
        float *yr = yt + (int64_t)r * a.feat;
        if (r == s.x && s.y > __ldg(a.row_ptr + r)) {
            if (rb < re)
                vatomic_add<V>(yr, acc);
        } else {
            vwrite<V>(yr, acc, a.accumulate);
        }
        rb = re;
    }
    if (t.y > rb) {
        float acc[V];
        vzero<V>(acc);
        path_sum<V>(a, xt, rb, t.y, acc);
        vatomic_add<V>(yt + (int64_t)t.x * a.feat, acc);
    }
}

/* ---- plan ----------------------------------------------------------------- */

static void mergepath_free_plan(void *plan)
{
    mergepath_plan *p = (mergepath_plan *)plan;
    if (!p)
        return;
    gcn_mem_release(p->head.ctx, p->coord, p->coord_bytes);
    gcn_mem_release(p->head.ctx, p->split, p->split_bytes);
    free(p);
}

/* GCN_MERGEPATH_TILE columns per tile when set (> 0), else all, within what
 * one worker of GCN_MAX_THREADS threads can hold. */
static gcn_feat_layout choose_layout(int feat, int vec)
{
    int widest = GCN_MAX_THREADS * vec;
    int knob = gcn_spmm_knob("GCN_MERGEPATH_TILE", 0, 0, 1 << 30);
    int tile = knob > 0 && knob < widest ? knob : widest;
    return gcn_feat_layout_make(feat, vec, tile);
}

/* Threads a worker occupies for a layout (idle lanes of its warp included). */
static int worker_threads(const gcn_feat_layout *l)
{
    int lanes = gcn_mergepath_lanes(l->vecs);
    return lanes <= GCN_WARP ? GCN_WARP / (GCN_WARP / lanes) : lanes;
}

/* The rows several workers share, gathered from the GPU's per-worker
 * marks into a dense list. */
static gcn_status compact_split(gcn_ctx *ctx, mergepath_plan *p, const int32_t *marks)
{
    int32_t *h = (int32_t *)malloc((size_t)p->n_workers * sizeof(int32_t));
    if (!h)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "mergepath: out of host memory for split rows");
    gcn_status st = ctx->be->download(ctx, h, marks, (size_t)p->n_workers * sizeof(int32_t));
    int32_t n = 0;
    for (int64_t w = 0; st == GCN_OK && w < p->n_workers; w++)
        if (h[w] >= 0)
            h[n++] = h[w];
    p->n_split = n;
    p->split_bytes = (size_t)n * sizeof(int32_t);
    if (st == GCN_OK)
        st = gcn_spmm_upload(ctx, (void **)&p->split, h, p->split_bytes);
    free(h);
    return st;
}

/* The workers' start coordinates by binary search on the GPU, and the rows
 * they share. */
static gcn_status search_path(gcn_ctx *ctx, const gcn_csr *a, mergepath_plan *p)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    p->coord_bytes = (size_t)(p->n_workers + 1) * sizeof(int2);
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&p->coord, p->coord_bytes));
    mergepath_search<<<gcn_blocks(p->n_workers + 1, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(
        a->row_ptr, a->n_rows, a->nnz, p->cost, p->n_workers, p->coord);
    GCN_LAUNCHED("mergepath_search");
    int32_t *marks = NULL;
    size_t marks_bytes = (size_t)p->n_workers * sizeof(int32_t);
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&marks, marks_bytes));
    mergepath_split_rows<<<gcn_blocks(p->n_workers, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(
        a->row_ptr, p->coord, p->n_workers, marks);
    gcn_status st = GCN_LAUNCHED_ST("mergepath_split_rows");
    if (st == GCN_OK)
        st = compact_split(ctx, p, marks);
    gcn_mem_release(ctx, marks, marks_bytes);
    return st;
}

static gcn_status mergepath_plan_create(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    mergepath_plan *p = NULL;
    GCN_TRY(gcn_spmm_plan_new(ctx, a, feat, "mergepath", sizeof *p, plan, (void **)&p));
    gcn_status st = GCN_OK;
    if (!p->head.empty) {
        int sms;
        size_t l2;
        GCN_CHECK(gcn_spmm_device_limits(ctx, &sms, &l2));
        p->lay[0] = choose_layout(feat, gcn_feat_vec(feat, gcn_spmm_knob("GCN_MERGEPATH_VEC", 4,
                                                                          1, 4)));
        p->lay[1] = choose_layout(feat, 1);
        GCN_CHECK(gcn_spmm_check_tiles(ctx, "mergepath", p->lay));
        int64_t items = (int64_t)a->n_rows + a->nnz;
        int64_t target = (int64_t)sms * 2048 / worker_threads(&p->lay[0]) / p->lay[0].n_tiles;
        p->cost = gcn_mergepath_cost(feat, items, target,
                                     gcn_spmm_knob("GCN_MERGEPATH_COST", 0, 0, INT32_MAX));
        p->n_workers = (items + p->cost - 1) / p->cost;
        GCN_CHECK(search_path(ctx, a, p));
    }
    *plan = p;
    return GCN_OK;
cleanup:
    mergepath_free_plan(p);
    return st;
}

/* ---- run ------------------------------------------------------------------ */

static gcn_status mergepath_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x,
                                float *y, int feat, bool accumulate)
{
    mergepath_plan *p = (mergepath_plan *)plan;
    gcn_cuda_state *cs;
    bool done;
    GCN_TRY(gcn_spmm_run_begin(ctx, p, a, y, feat, accumulate, "mergepath", &cs, &done));
    if (done)
        return GCN_OK;
    if (!accumulate && p->n_split > 0) {
        mergepath_zero_split<<<gcn_blocks((int64_t)p->n_split * feat, GCN_THREADS), GCN_THREADS,
                               0, cs->stream>>>(p->split, p->n_split, y, feat);
        GCN_LAUNCHED("mergepath_zero_split");
    }
    int which = gcn_spmm_aligned(x, p->lay[0].vec) && gcn_spmm_aligned(y, p->lay[0].vec) ? 0 : 1;
    const gcn_feat_layout *l = &p->lay[which];
    int lanes = gcn_mergepath_lanes(l->vecs);
    int per_warp = lanes <= GCN_WARP ? GCN_WARP / lanes : 1;
    int per_block = lanes <= GCN_WARP ? (MP_THREADS / GCN_WARP) * per_warp
                                      : (MP_THREADS / lanes > 1 ? MP_THREADS / lanes : 1);
    int threads = lanes <= GCN_WARP ? MP_THREADS : per_block * lanes;
    mp_args args = {a->row_ptr, a->col_idx, a->values, x, y, p->coord, p->n_workers, feat,
                    l->tile, lanes, per_warp, per_block, accumulate};
    dim3 grid((unsigned)((p->n_workers + per_block - 1) / per_block), (unsigned)l->n_tiles);
    if (l->vec == 4)
        mergepath_kernel<4><<<grid, threads, 0, cs->stream>>>(args);
    else if (l->vec == 2)
        mergepath_kernel<2><<<grid, threads, 0, cs->stream>>>(args);
    else
        mergepath_kernel<1><<<grid, threads, 0, cs->stream>>>(args);
    GCN_LAUNCHED("mergepath_kernel");
    return GCN_OK;
}

const gcn_spmm_impl gcn_spmm_mergepath = {
    .size = sizeof(gcn_spmm_impl),
    .name = "mergepath",
    .device = GCN_DEVICE_CUDA,
    .deterministic = false,
    .roles = GCN_SPMM_ROLE_WHOLE,
    .supports = gcn_spmm_cuda_supports,
    .plan = mergepath_plan_create,
    .run = mergepath_run,
    .free_plan = mergepath_free_plan,
};
