/* "accel": Accel-GCN (ICCAD'23).  Rows sorted by degree are cut into blocks
 * by per-degree partition patterns (one int4 of metadata per block); a
 * combined warp of ceil(tile / (32 vec)) warps walks a feature row; warps
 * sharing a row combine in shared memory before one write, and chunks of
 * rows above the degree bound meet in Y through atomics.  Host planning:
 * accel.c; docs/kernels.md. */
#include <stdlib.h>

#include "common.cuh"
#include "kernels/spmm/impls.h"

typedef struct accel_plan {
    gcn_spmm_head head;     /* first member: the product the plan is for */
    gcn_accel_params params;
    gcn_feat_layout lay[2]; /* [0] vectorised, [1] scalar for misaligned x or y */
    gcn_accel_shape shape[2];
    int32_t n_blocks, n_zero, long_begin;
    int4 *meta;
    int2 *rows;             /* sorted rows: original row, first non-zero */
    size_t meta_bytes, rows_bytes;
} accel_plan;

typedef struct ac_args {
    const int4 *meta;
    const int2 *rows;
    const int32_t *col_idx;
    const float *val, *x;
    float *y;
    int feat, tile;
    int bound, long_nzs;   /* degree bound; non-zeros per warp in a chunk */
    int width, per_block;  /* combined warp threads; combined warps per block */
    bool accumulate;
} ac_args;

/* acc = sum over non-zeros [b, e) of val * X[col, vector t of the tile] for
 * one combined warp: each of its warps loads up to 32 (column, value) pairs
 * with one coalesced access and broadcasts them by shuffles, 8 gathers in
 * flight per lane.  b and e are uniform across the combined warp. */
template <int V>
__device__ __forceinline__ void warp_sum(const ac_args &a, const float *xt, int b, int e,
                                         bool active, float (&acc)[V])
{
    const int lane = threadIdx.x & 31;
    for (int base = b; base < e; base += 32) {
        const int cnt = min(32, e - base);
        const int c = lane < cnt ? __ldg(a.col_idx + base + lane) : 0;
        const float v = lane < cnt ? __ldg(a.val + base + lane) : 0.0f;
        for (int j0 = 0; j0 < cnt; j0 += 8) {
            float xv[8][V], w[8];
#pragma unroll
            for (int u = 0; u < 8; u++) {
                const int j = j0 + u;
                const int col = __shfl_sync(0xffffffffu, c, j & 31);
                w[u] = __shfl_sync(0xffffffffu, v, j & 31);
                if (active && j < cnt)
                    vload_ro<V>(xt + (int64_t)col * a.feat, xv[u]);
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
}

/* Work mapping: blockIdx.x is one metadata block, blockIdx.y the feature
 * tile.  A degree-d block holds `rows` sorted rows of that degree, each
 * served by f = ceil(d / warp_nzs) logical warps (warp w: row w / f,
 * non-zeros [(w % f) warp_nzs, ...)); a chunk block holds up to `bound`
 * non-zeros of one long row, warp_nzs = bound / block_warps per logical
 * warp.  Logical warps run on the block's combined warps in turn (combined
 * warp i takes i, i + per_block, ...); thread t of a combined warp owns the
 * tile's vector t (V floats), threads past the tile idle.  With f = 1 the
 * warp writes its row; otherwise partial rows meet in shared memory by
 * block-scope atomics, and the block writes them (atomically into Y for
 * chunks). */
template <int V, int MAX_THREADS, int MIN_BLOCKS>
__global__ void __launch_bounds__(MAX_THREADS, MIN_BLOCKS)
    accel_kernel(const __grid_constant__ ac_args a)
{
    extern __shared__ float sm[];
    const int4 m = a.meta[blockIdx.x];
    const int col0 = (int)blockIdx.y * a.tile, ncols = min(a.tile, a.feat - col0);
    const int nvec = ncols / V;
    const bool chunk = m.x > a.bound;
    const int rows = chunk ? 1 : (m.w & 0xffff);
    const int wnz = chunk ? a.long_nzs : (m.w >> 16);
    const int nzs = chunk ? m.w : m.x;
    const int f = (nzs + wnz - 1) / wnz;
    const bool combine = chunk || f > 1;
    const int t = threadIdx.x % a.width;
    if (combine) {
        for (int i = threadIdx.x; i < rows * ncols; i += blockDim.x)
            sm[i] = 0.0f;
        __syncthreads();
    }
    for (int w = threadIdx.x / a.width; w < rows * f; w += a.per_block) {
        const int r = w / f;
        const int2 ri = a.rows[m.y + r];
        const int start = chunk ? m.z : ri.y;
        const int b = start + (w % f) * wnz, e = min(b + wnz, start + nzs);
        float acc[V];
        vzero<V>(acc);
        warp_sum<V>(a, a.x + col0 + t * V, b, e, t < nvec, acc);
        if (t >= nvec)
            continue;
        if (!combine) {
            vwrite<V>(a.y + (int64_t)ri.x * a.feat + col0 + t * V, acc, a.accumulate);
        } else {
#pragma unroll
            for (int i = 0; i < V; i++)
                atomicAdd(&sm[r * ncols + t * V + i], acc[i]);
        }
    }
    if (!combine)
        return;
    __syncthreads();
    for (int i = threadIdx.x; i < rows * nvec; i += blockDim.x) {
        const int r = i / nvec, vi = i % nvec;
        float v[V];
#pragma unroll
        for (int j = 0; j < V; j++)
            v[j] = sm[r * ncols + vi * V + j];
        float *yp = a.y + (int64_t)a.rows[m.y + r].x * a.feat + col0 + vi * V;
        if (chunk)
            vatomic_add<V>(yp, v);
        else
            vwrite<V>(yp, v, a.accumulate);
    }
}

/* Work mapping: a grid-stride loop over (sorted row, column) pairs of the
 * empty rows [0, n_zero) and the long rows [long_begin, n_rows). */
__global__ void accel_zero_rows(const int2 *rows, int32_t n_zero, int32_t long_begin,
                                int32_t n_rows, float *y, int feat)
{
    const int64_t n = ((int64_t)n_zero + (n_rows - long_begin)) * feat;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t k = i / feat;
        const int64_t sorted = k < n_zero ? k : long_begin + (k - n_zero);
        y[(int64_t)rows[sorted].x * feat + i % feat] = 0.0f;
    }
}

#define ACCEL_SMALL_BLOCK 384

/* ---- plan ----------------------------------------------------------------- */

static void accel_free_plan(void *plan)
{
    accel_plan *p = (accel_plan *)plan;
    if (!p)
        return;
    gcn_mem_release(p->head.ctx, p->meta, p->meta_bytes);
    gcn_mem_release(p->head.ctx, p->rows, p->rows_bytes);
    free(p);
}

#define ACCEL_SMEM_BYTES (48 * 1024)
#define ACCEL_TILE 128 /* default GCN_ACCEL_TILE (H100 sweep, docs/perf.md) */

/* GCN_ACCEL_TILE columns per tile (default 128), within what one combined
 * warp and 48 KB of shared rows can hold; a large value keeps all of F in
 * one tile as the paper does. */
static void choose_layout(accel_plan *p, int i, int vec)
{
    int widest = gcn_accel_max_tile(p->head.feat, vec, p->params.block_warps, ACCEL_SMEM_BYTES);
    int knob = gcn_spmm_knob("GCN_ACCEL_TILE", ACCEL_TILE, 1, 1 << 30);
    int tile = knob < widest ? knob : widest;
    p->lay[i] = gcn_feat_layout_make(p->head.feat, vec, tile);
    p->shape[i] = gcn_accel_shape_for(p->lay[i].vecs, p->params.block_warps);
}

/* The degree sort and block metadata, built on the host and uploaded. */
static gcn_status build_partition(gcn_ctx *ctx, const gcn_csr *a, accel_plan *p)
{
    const int32_t *row_ptr;
    gcn_accel_partition part = {0};
    gcn_status st;
    GCN_CHECK(gcn_csr_host_row_ptr(ctx, a, &row_ptr));
    GCN_CHECK(gcn_accel_partition_build(ctx, row_ptr, a->n_rows, &p->params, &part));
    p->n_blocks = part.n_blocks;
    p->n_zero = part.n_zero;
    p->long_begin = part.long_begin;
    p->meta_bytes = (size_t)part.n_blocks * sizeof(int4);
    p->rows_bytes = (size_t)part.n_rows * sizeof(int2);
    GCN_CHECK(gcn_spmm_upload(ctx, (void **)&p->meta, part.meta, p->meta_bytes));
    GCN_CHECK(gcn_spmm_upload(ctx, (void **)&p->rows, part.rows, p->rows_bytes));
cleanup:
    gcn_accel_partition_free(&part);
    return st;
}

static gcn_status accel_plan_create(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    accel_plan *p = NULL;
    GCN_TRY(gcn_spmm_plan_new(ctx, a, feat, "accel", sizeof *p, plan, (void **)&p));
    p->params.block_warps =
        gcn_spmm_knob("GCN_ACCEL_BLOCK_WARPS", 12, 1, GCN_MAX_THREADS / GCN_WARP);
    p->params.warp_nzs = gcn_spmm_knob("GCN_ACCEL_WARP_NZS", 32, 1, 1024);
    gcn_status st = GCN_OK;
    if (!p->head.empty) {
        choose_layout(p, 0, gcn_accel_vec(feat, gcn_spmm_knob("GCN_ACCEL_VEC", 4, 1, 4)));
        choose_layout(p, 1, 1);
        GCN_CHECK(gcn_spmm_check_tiles(ctx, "accel", p->lay));
        GCN_CHECK(build_partition(ctx, a, p));
    }
    *plan = p;
    return GCN_OK;
cleanup:
    accel_free_plan(p);
    return st;
}

/* ---- run ------------------------------------------------------------------ */

static gcn_status accel_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x,
                            float *y, int feat, bool accumulate)
{
    accel_plan *p = (accel_plan *)plan;
    gcn_cuda_state *cs;
    bool done;
    GCN_TRY(gcn_spmm_run_begin(ctx, p, a, y, feat, accumulate, "accel", &cs, &done));
    if (done)
        return GCN_OK;
    int n_clear = p->n_zero + (p->head.n_rows - p->long_begin);
    if (!accumulate && n_clear > 0) {
        accel_zero_rows<<<gcn_blocks((int64_t)n_clear * feat, GCN_THREADS), GCN_THREADS, 0,
                          cs->stream>>>(p->rows, p->n_zero, p->long_begin, p->head.n_rows, y, feat);
        GCN_LAUNCHED("accel_zero_rows");
    }
    if (p->n_blocks == 0)
        return GCN_OK;
    int which = gcn_spmm_aligned(x, p->lay[0].vec) && gcn_spmm_aligned(y, p->lay[0].vec) ? 0 : 1;
    const gcn_feat_layout *l = &p->lay[which];
    const gcn_accel_shape *s = &p->shape[which];
    int bound = p->params.block_warps * p->params.warp_nzs;
    ac_args args = {p->meta, p->rows, a->col_idx, a->values, x, y, feat, l->tile, bound,
                    (bound + p->params.block_warps - 1) / p->params.block_warps, s->width,
                    s->per_block, accumulate};
    int shared_rows = p->params.block_warps / 2 > 1 ? p->params.block_warps / 2 : 1;
    size_t smem = (size_t)shared_rows * (size_t)l->tile * sizeof(float);
    dim3 grid((unsigned)p->n_blocks, (unsigned)l->n_tiles);
    unsigned threads = (unsigned)(s->width * s->per_block);
    if (threads <= ACCEL_SMALL_BLOCK && l->vec == 1) /* 40 registers: 4 blocks an SM */
        accel_kernel<1, ACCEL_SMALL_BLOCK, 4><<<grid, threads, smem, cs->stream>>>(args);
    else if (l->vec == 4)
        accel_kernel<4, GCN_MAX_THREADS, 1><<<grid, threads, smem, cs->stream>>>(args);
    else if (l->vec == 2)
        accel_kernel<2, GCN_MAX_THREADS, 1><<<grid, threads, smem, cs->stream>>>(args);
    else
        accel_kernel<1, GCN_MAX_THREADS, 1><<<grid, threads, smem, cs->stream>>>(args);
    GCN_LAUNCHED("accel_kernel");
    return GCN_OK;
}

const gcn_spmm_impl gcn_spmm_accel = {
    .size = sizeof(gcn_spmm_impl),
    .name = "accel",
    .device = GCN_DEVICE_CUDA,
    .deterministic = false,
    .roles = GCN_SPMM_ROLE_WHOLE,
    .supports = gcn_spmm_cuda_supports,
    .plan = accel_plan_create,
    .run = accel_run,
    .free_plan = accel_free_plan,
};
