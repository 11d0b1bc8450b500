/* "rowsplit": the row-parallel CSR baseline and the deterministic kernel.  A
 * group of lanes sized to the feature tile (half that for matrices of short
 * rows) owns each row (rows taken in degree order within windows, so a
 * warp's rows have similar lengths),
 * broadcasts the row's column indices and values with shuffles, gathers X
 * rows with coalesced vector loads, and writes its row once: no float
 * atomics.  Rows longer than a chunk are cut into warp-sized pieces whose
 * partial rows the last piece to finish sums in a fixed order.  The bf16
 * variant runs the same kernels on rows of bf16 units (rowsplit.cuh),
 * summing in fp32.  Host planning: plan.c; docs/kernels.md. */
#include <stdlib.h>

#include "kernels/adaptgear/adaptgear.h"
#include "rowsplit.cuh"
#include "kernels/spmm/impls.h"

#define RS_THREADS 256
#define RS_WARPS (RS_THREADS / GCN_WARP)
#define RS_SORT_WINDOW 4096 /* default GCN_ROWSPLIT_SORT (H100 sweep, docs/perf.md) */

typedef struct rowsplit_plan {
    gcn_spmm_head head;     /* first member: the product the plan is for */
    int chunk;              /* rows with more non-zeros are cut into chunks */
    int min_blocks[2];      /* resident blocks an SM, per layout (gcn_rowsplit_auto_min_blocks) */
    gcn_feat_layout lay[2]; /* [0] vectorised, [1] scalar for misaligned x or y */
    gcn_rowsplit_shape shape[2];
    int32_t n_short;        /* rows of at most `chunk` non-zeros */
    int4 *rows;             /* [n_short] in the order row warps take them: row, first
                               non-zero, end (one load instead of two dependent ones) */
    gcn_rs_long lr;         /* pieces of the rows longer than `chunk` */
    size_t rows_bytes;
} rowsplit_plan;

/* The warp's lanes form 32 / (G * S) slots of S groups of G lanes; slot q
 * owns row rows[rwarp * (32 / (G * S)) + q], its S groups sum consecutive
 * stretches of the row and combine by butterfly shuffles, and the slot's
 * first group writes the row.  T: the unit X and Y hold. */
template <int G, int V, int K, int S, typename T>
__device__ __forceinline__ void rows_task(const rs_args &a, int64_t rwarp, int lane, int col0,
                                          int nvec)
{
    constexpr int N = V * unit_values<T>;
    const int li = lane % G, grp = lane / G, part = grp % S;
    const int64_t k = rwarp * (32 / (G * S)) + grp / S;
    if (k >= a.n_short)
        return;
    const int4 r = __ldg(a.rows + k);
    const int64_t row = r.x;
    int b = r.y, e = r.z;
    if (S > 1) {
        const int per = (e - b + S - 1) / S;
        b = min(b + part * per, e);
        e = min(b + per, e);
    }
    float acc[K][N];
#pragma unroll
    for (int k = 0; k < K; k++)
        vzero<N>(acc[k]);
    row_sum<G, V, K, T>(a, x_units<T>(a) + col0, b, e, li, group_mask<G>(lane), nvec, acc);
    if (S > 1) {
        const unsigned smask = group_mask<G * S>(lane);
#pragma unroll
        for (int off = G; off < G * S; off *= 2)
#pragma unroll
            for (int k = 0; k < K; k++)
#pragma unroll
                for (int t = 0; t < N; t++)
                    acc[k][t] += __shfl_xor_sync(smask, acc[k][t], off);
        if (part != 0)
            return;
    }
    T *yr = y_units<T>(a) + row * a.feat + col0;
#pragma unroll
    for (int k = 0; k < K; k++)
        if (k * G + li < nvec)
            uwrite<T, V>(yr + (k * G + li) * V, acc[k], a.accumulate);
}

/* Work mapping: blockIdx.y is the feature tile (columns [y * tile, ...));
 * along x, 8 warps per block; warps [0, n_chunks) each take one piece of a
 * long row, the following warps each take the next 32 / G rows of the
 * plan's row order (degree-sorted within windows), one per group of G
 * lanes; lane l of a group owns the tile's vectors l, l + G, ... (K of
 * them, V units each). */
template <int G, int V, int K, int MINB, int S, typename T>
__global__ void __launch_bounds__(RS_THREADS, MINB)
    rowsplit_kernel(const __grid_constant__ rs_args a)
{
    const int lane = threadIdx.x & 31;
    const int64_t warp = (int64_t)blockIdx.x * RS_WARPS + (threadIdx.x / GCN_WARP);
    const int col0 = (int)blockIdx.y * a.tile;
    const int nvec = min(a.tile, a.feat - col0) / V;
    if (warp < a.n_chunks)
        chunk_task<G, V, K, T>(a, (int)warp, lane, col0, nvec, (int)blockIdx.y);
    else
        rows_task<G, V, K, S, T>(a, warp - a.n_chunks, lane, col0, nvec);
}

typedef void (*rs_kernel)(const rs_args);

template <int V, int K, int MINB, typename T>
static rs_kernel pick_group(int group)
{
    switch (group) {
    case 1: return rowsplit_kernel<1, V, K, MINB, 1, T>;
    case 2: return rowsplit_kernel<2, V, K, MINB, 1, T>;
    case 4: return rowsplit_kernel<4, V, K, MINB, 1, T>;
    case 8: return rowsplit_kernel<8, V, K, MINB, 1, T>;
    case 16: return rowsplit_kernel<16, V, K, MINB, 1, T>;
    default: return rowsplit_kernel<32, V, K, MINB, 1, T>;
    }
}

/* K = 8 only with 32-lane groups, and K * V <= GCN_ROWSPLIT_MAX_FLOATS. */
template <int V, int MINB, typename T>
static rs_kernel pick_per_lane(gcn_rowsplit_shape s)
{
    switch (s.per_lane) {
    case 1: return pick_group<V, 1, MINB, T>(s.group);
    case 2: return pick_group<V, 2, MINB, T>(s.group);
    case 4: return pick_group<V, 4, MINB, T>(s.group);
    default: return rowsplit_kernel<32, V, V == 4 ? 4 : 8, MINB, 1, T>; /* 8: V <= 2 only */
    }
}

/* Two groups of G < 32 lanes a row, one vector a lane. */
template <int V, int MINB, typename T>
static rs_kernel pick_split(int group)
{
    switch (group) {
    case 1: return rowsplit_kernel<1, V, 1, MINB, 2, T>;
    case 2: return rowsplit_kernel<2, V, 1, MINB, 2, T>;
    case 4: return rowsplit_kernel<4, V, 1, MINB, 2, T>;
    case 8: return rowsplit_kernel<8, V, 1, MINB, 2, T>;
    default: return rowsplit_kernel<16, V, 1, MINB, 2, T>;
    }
}

/* Single bf16 units come in vectors of 1 only (odd widths). */
template <int MINB, typename T>
static rs_kernel pick_vec(int vec, gcn_rowsplit_shape s)
{
    if constexpr (std::is_same<T, bf16x1>::value) {
        return s.split == 2 ? pick_split<1, MINB, T>(s.group) : pick_per_lane<1, MINB, T>(s);
    } else {
        if (s.split == 2)
            return vec == 4 ? pick_split<4, MINB, T>(s.group)
                   : vec == 2 ? pick_split<2, MINB, T>(s.group)
                              : pick_split<1, MINB, T>(s.group);
        return vec == 4 ? pick_per_lane<4, MINB, T>(s)
                        : vec == 2 ? pick_per_lane<2, MINB, T>(s) : pick_per_lane<1, MINB, T>(s);
    }
}

/* min_blocks: GCN_ROWSPLIT_BLOCKS_FEW or _MANY. */
template <typename T>
static rs_kernel pick_kernel(int vec, gcn_rowsplit_shape s, int min_blocks)
{
    return min_blocks == GCN_ROWSPLIT_BLOCKS_MANY
               ? pick_vec<GCN_ROWSPLIT_BLOCKS_MANY, T>(vec, s)
               : pick_vec<GCN_ROWSPLIT_BLOCKS_FEW, T>(vec, s);
}

/* ---- plan ----------------------------------------------------------------- */

static void rowsplit_free_plan(void *plan)
{
    rowsplit_plan *p = (rowsplit_plan *)plan;
    if (!p)
        return;
    gcn_mem_release(p->head.ctx, p->rows, p->rows_bytes);
    gcn_rs_long_free(p->head.ctx, &p->lr);
    free(p);
}

/* Tile width for vector width vec: GCN_ROWSPLIT_TILE columns when set (> 0),
 * else automatic (gcn_rowsplit_auto_tile). */
static gcn_feat_layout choose_layout(const gcn_csr *a, int feat, int vec, size_t l2_budget,
                                     bool banded)
{
    int widest = gcn_rowsplit_widest_tile(vec);
    int knob = gcn_spmm_knob("GCN_ROWSPLIT_TILE", 0, 0, 1 << 30);
    int tile = knob > 0 ? (knob < widest ? knob : widest)
                        : gcn_rowsplit_auto_tile(feat, vec, a->n_cols,
                                                 (double)a->nnz / (double)a->n_rows, l2_budget,
                                                 banded);
    return gcn_feat_layout_make(feat, vec, tile);
}

/* Feature layouts: the vectorised one and the scalar fallback. */
static gcn_status plan_layouts(gcn_ctx *ctx, const gcn_csr *a, rowsplit_plan *p,
                               const int32_t *row_ptr, size_t l2, int sms)
{
    bool banded;
    GCN_TRY(gcn_spmm_sample_banded(ctx, a, row_ptr, &banded));
    size_t budget = gcn_spmm_l2_budget(l2);
    p->lay[0] = choose_layout(a, p->head.feat, gcn_feat_vec(p->head.feat, 4), budget, banded);
    p->lay[1] = choose_layout(a, p->head.feat, 1, budget, banded);
    double per_row = (double)a->nnz / (double)a->n_rows;
    for (int i = 0; i < 2; i++) {
        gcn_rowsplit_shape s = gcn_rowsplit_shape_for(p->lay[i].vecs);
        int narrow = gcn_spmm_knob(
            "GCN_ROWSPLIT_NARROW",
            gcn_rowsplit_auto_narrow(s, p->lay[i].tile, a->n_rows, per_row, sms), 1, 4);
        s = gcn_rowsplit_shape_narrow(s, p->lay[i].vec, narrow);
        int split = gcn_spmm_knob("GCN_ROWSPLIT_SPLIT",
                                  gcn_rowsplit_auto_split(s, a->n_rows, per_row, sms), 1, 2);
        if (split == 2 && s.per_lane == 1 && s.group < 32)
            s.split = 2;
        p->shape[i] = s;
        int64_t per_warp = gcn_rowsplit_rows_per_warp(s);
        int64_t warps = (int64_t)p->lay[i].n_tiles * ((a->n_rows + per_warp - 1) / per_warp);
        p->min_blocks[i] = gcn_spmm_knob("GCN_ROWSPLIT_MINBLOCKS",
                                         gcn_rowsplit_auto_min_blocks(s, warps, sms),
                                         GCN_ROWSPLIT_BLOCKS_FEW, GCN_ROWSPLIT_BLOCKS_MANY);
    }
    return gcn_spmm_check_tiles(ctx, "rowsplit", p->lay);
}

/* The order row warps take the rows in, as (row, first non-zero, end):
 * the matrix's visit order (a prior-order view's, else natural), sorted by
 * degree within windows of GCN_ROWSPLIT_SORT rows (0 or 1: unsorted). */
static gcn_status upload_rows(gcn_ctx *ctx, const gcn_csr *a, rowsplit_plan *p,
                              const int32_t *row_ptr)
{
    int window = gcn_spmm_knob("GCN_ROWSPLIT_SORT", RS_SORT_WINDOW, 0, INT32_MAX);
    int32_t *order = (int32_t *)malloc(((size_t)a->n_rows + 1) * 4 * sizeof *order);
    if (!order)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "rowsplit: out of host memory for the row order");
    gcn_status st = gcn_rowsplit_order(ctx, row_ptr, a->n_rows, p->chunk, window,
                                       gcn_csr_visit_order(a), order, &p->n_short);
    for (int64_t k = p->n_short - 1; st == GCN_OK && k >= 0; k--) { /* in place, from the back */
        int32_t r = order[k];
        order[4 * k] = r;
        order[4 * k + 1] = row_ptr[r];
        order[4 * k + 2] = row_ptr[r + 1];
        order[4 * k + 3] = 0;
    }
    p->rows_bytes = (size_t)p->n_short * sizeof(int4);
    if (st == GCN_OK)
        st = gcn_spmm_upload(ctx, (void **)&p->rows, order, p->rows_bytes);
    free(order);
    return st;
}

/* Everything a non-empty matrix needs, from the host copy of row_ptr;
 * `values`: the values a unit of x holds (partial rows keep each in fp32). */
static gcn_status build_plan(gcn_ctx *ctx, const gcn_csr *a, rowsplit_plan *p, int values)
{
    const int32_t *row_ptr;
    int sms;
    size_t l2;
    GCN_TRY(gcn_spmm_device_limits(ctx, &sms, &l2));
    p->chunk = gcn_spmm_knob("GCN_ROWSPLIT_CHUNK", gcn_rowsplit_auto_chunk(a->nnz, sms), 1,
                             INT32_MAX);
    GCN_TRY(gcn_csr_host_row_ptr(ctx, a, &row_ptr));
    GCN_TRY(plan_layouts(ctx, a, p, row_ptr, l2, sms));
    GCN_TRY(upload_rows(ctx, a, p, row_ptr));
    return gcn_rs_long_upload(ctx, row_ptr, a->n_rows, p->chunk, p->head.feat * values, p->lay,
                              &p->lr);
}

/* A plan for rows of `units` units of unit_bytes, `values` values each. */
static gcn_status plan_units(gcn_ctx *ctx, const gcn_csr *a, int units, int unit_bytes,
                             int values, void **plan)
{
    rowsplit_plan *p = NULL;
    GCN_TRY(gcn_spmm_plan_new(ctx, a, units, "rowsplit", sizeof *p, plan, (void **)&p));
    p->head.unit_bytes = unit_bytes;
    if (!p->head.empty) {
        gcn_status st = build_plan(ctx, a, p, values);
        if (st != GCN_OK) {
            rowsplit_free_plan(p);
            return st;
        }
    }
    *plan = p;
    return GCN_OK;
}

static gcn_status rowsplit_plan_create(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    return plan_units(ctx, a, feat, 4, 1, plan);
}

/* bf16 rows as units of two bf16 (even widths: the layout of an fp32
 * product of half the width, the same bytes) or of one. */
static gcn_status rowsplit_plan_bf16(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    int values, units = gcn_spmm_bf16_units(feat, &values);
    return plan_units(ctx, a, units, values == 2 ? 4 : 2, values, plan);
}

/* ---- run ------------------------------------------------------------------ */

/* y (+)= A x over rows of feat units T. */
template <typename T>
static gcn_status launch(gcn_ctx *ctx, void *plan, const gcn_csr *a, const void *x, void *y,
                         int feat, bool accumulate)
{
    rowsplit_plan *p = (rowsplit_plan *)plan;
    gcn_cuda_state *cs;
    bool done;
    GCN_TRY(gcn_spmm_run_begin(ctx, p, a, y, feat, accumulate, "rowsplit", &cs, &done));
    if (done)
        return GCN_OK;
    if (std::is_same<T, bf16x2>::value && !(gcn_spmm_aligned(x, 1) && gcn_spmm_aligned(y, 1)))
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "rowsplit SpMM: bf16 rows of even width "
                         "need x and y on 4-byte boundaries");
    int which = gcn_spmm_aligned(x, p->lay[0].vec) && gcn_spmm_aligned(y, p->lay[0].vec) ? 0 : 1;
    const gcn_feat_layout *l = &p->lay[which];
    rs_args args = {a->col_idx, p->rows, a->values, x, y, p->lr.chunks, p->lr.long_info,
                    p->lr.partial, p->lr.counter, p->n_short, p->lr.n_chunks, feat, l->tile,
                    l->n_tiles, accumulate};
    int rows_per_warp = gcn_rowsplit_rows_per_warp(p->shape[which]);
    int64_t warps = p->lr.n_chunks + ((int64_t)p->n_short + rows_per_warp - 1) / rows_per_warp;
    dim3 grid((unsigned)((warps + RS_WARPS - 1) / RS_WARPS), (unsigned)l->n_tiles);
    rs_kernel kernel = pick_kernel<T>(l->vec, p->shape[which], p->min_blocks[which]);
    kernel<<<grid, RS_THREADS, 0, cs->stream>>>(args);
    GCN_LAUNCHED("rowsplit_kernel");
    return GCN_OK;
}

static gcn_status rowsplit_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x,
                               float *y, int feat, bool accumulate)
{
    return launch<float>(ctx, plan, a, x, y, feat, accumulate);
}

static gcn_status rowsplit_run_bf16(gcn_ctx *ctx, void *plan, const gcn_csr *a,
                                    const uint16_t *x, uint16_t *y, int feat, bool accumulate)
{
    int values, units = gcn_spmm_bf16_units(feat, &values);
    return values == 2 ? launch<bf16x2>(ctx, plan, a, x, y, units, accumulate)
                       : launch<bf16x1>(ctx, plan, a, x, y, units, accumulate);
}

const gcn_spmm_impl gcn_spmm_rowsplit = {
    .size = sizeof(gcn_spmm_impl),
    .name = "rowsplit",
    .device = GCN_DEVICE_CUDA,
    .deterministic = true,
    .roles = GCN_SPMM_ROLE_WHOLE | GCN_SPMM_ROLE_PRIOR,
    .supports = gcn_spmm_cuda_supports,
    .plan = rowsplit_plan_create,
    .run = rowsplit_run,
    .free_plan = rowsplit_free_plan,
    .plan_bf16 = rowsplit_plan_bf16,
    .run_bf16 = rowsplit_run_bf16,
};
