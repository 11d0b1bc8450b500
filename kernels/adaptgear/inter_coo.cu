/* "inter_coo": AdaptGear's edge-parallel kernel for the sparse
 * inter-community part.  The non-zeros, in row order with their row ids
 * (COO), are cut into runs of 32; a group of lanes walks one run, keeps a
 * running sum while the row stays the same and adds it into Y atomically
 * when the row changes.  Balanced whatever the degrees, but float atomics
 * make it non-deterministic.  docs/kernels.md. */
#include <stdlib.h>

#include "kernels/cuda/common.cuh"
#include "kernels/spmm/impls.h"

#define CO_THREADS 256
#define CO_RUN 32 /* non-zeros a group walks */

typedef struct coo_plan {
    gcn_spmm_head head;
    gcn_feat_layout lay[2]; /* [0] vectorised, [1] scalar for misaligned x or y */
    int group[2];
    int32_t *rows;          /* [nnz] row of each non-zero */
    size_t rows_bytes;
} coo_plan;

typedef struct co_args {
    const int32_t *rows, *col_idx;
    const float *val, *x;
    float *y;
    int64_t nnz;
    int feat, tile;
} co_args;

/* Work mapping: blockIdx.y is the feature tile; along x each group of G
 * lanes takes the run of non-zeros [CO_RUN k, CO_RUN (k + 1)), lane l
 * owning vector l of the tile (tile <= 32 V). */
template <int G, int V>
__global__ void __launch_bounds__(CO_THREADS) inter_coo_kernel(const __grid_constant__ co_args a)
{
    const int li = threadIdx.x % G;
    const int64_t run = ((int64_t)blockIdx.x * CO_THREADS + threadIdx.x) / G;
    const int col0 = (int)blockIdx.y * a.tile;
    const int nvec = min(a.tile, a.feat - col0) / V;
    const int64_t b = run * CO_RUN, e = min(b + CO_RUN, a.nnz);
    if (b >= a.nnz || li >= nvec)
        return;
    const float *xt = a.x + col0 + li * V;
    float acc[V];
    vzero<V>(acc);
    int32_t row = __ldg(a.rows + b);
    for (int64_t k = b; k < e; k++) {
        const int32_t r = __ldg(a.rows + k);
        if (r != row) {
            vatomic_add<V>(a.y + (int64_t)row * a.feat + col0 + li * V, acc);
            vzero<V>(acc);
            row = r;
        }
        float xv[V];
        vload_ro<V>(xt + (int64_t)__ldg(a.col_idx + k) * a.feat, xv);
        const float w = __ldg(a.val + k);
#pragma unroll
        for (int t = 0; t < V; t++)
            acc[t] = fmaf(w, xv[t], acc[t]);
    }
    vatomic_add<V>(a.y + (int64_t)row * a.feat + col0 + li * V, acc);
}

typedef void (*co_kernel)(const co_args);

template <int V>
static co_kernel pick_group(int group)
{
    switch (group) {
    case 1: return inter_coo_kernel<1, V>;
    case 2: return inter_coo_kernel<2, V>;
    case 4: return inter_coo_kernel<4, V>;
    case 8: return inter_coo_kernel<8, V>;
    case 16: return inter_coo_kernel<16, V>;
    default: return inter_coo_kernel<32, V>;
    }
}

static co_kernel pick_kernel(int vec, int group)
{
    return vec == 4 ? pick_group<4>(group) : vec == 2 ? pick_group<2>(group) : pick_group<1>(group);
}

/* ---- plan ----------------------------------------------------------------- */

/* rows[e] = i for every non-zero e of row i: one thread a row. */
__global__ void coo_rows_kernel(const int32_t *row_ptr, int32_t n_rows, int32_t *rows)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_rows;
         i += (int64_t)gridDim.x * blockDim.x)
        for (int32_t e = row_ptr[i]; e < row_ptr[i + 1]; e++)
            rows[e] = (int32_t)i;
}

static void coo_free_plan(void *plan)
{
    coo_plan *p = (coo_plan *)plan;
    if (!p)
        return;
    gcn_mem_release(p->head.ctx, p->rows, p->rows_bytes);
    free(p);
}

/* The row id of every non-zero, written on the GPU. */
static gcn_status build_plan(gcn_ctx *ctx, const gcn_csr *a, coo_plan *p)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    int feat = p->head.feat, vec = gcn_feat_vec(feat, 4);
    p->lay[0] = gcn_feat_layout_make(feat, vec, GCN_WARP * vec);
    p->lay[1] = gcn_feat_layout_make(feat, 1, GCN_WARP);
    for (int i = 0; i < 2; i++) {
        p->group[i] = 1;
        while (p->group[i] < p->lay[i].vecs && p->group[i] < GCN_WARP)
            p->group[i] *= 2;
    }
    GCN_TRY(gcn_spmm_check_tiles(ctx, "inter_coo", p->lay));
    p->rows_bytes = (size_t)a->nnz * sizeof(int32_t);
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&p->rows, p->rows_bytes));
    coo_rows_kernel<<<gcn_blocks(a->n_rows, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(
        a->row_ptr, a->n_rows, p->rows);
    GCN_LAUNCHED("coo_rows_kernel");
    return GCN_OK;
}

static gcn_status coo_plan_create(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    coo_plan *p = NULL;
    GCN_TRY(gcn_spmm_plan_new(ctx, a, feat, "inter_coo", sizeof *p, plan, (void **)&p));
    if (!p->head.empty) {
        gcn_status st = build_plan(ctx, a, p);
        if (st != GCN_OK) {
            coo_free_plan(p);
            return st;
        }
    }
    *plan = p;
    return GCN_OK;
}

static gcn_status coo_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x, float *y,
                          int feat, bool accumulate)
{
    coo_plan *p = (coo_plan *)plan;
    gcn_cuda_state *cs;
    bool done;
    GCN_TRY(gcn_spmm_run_begin(ctx, p, a, y, feat, accumulate, "inter_coo", &cs, &done));
    if (done)
        return GCN_OK;
    if (!accumulate)
        GCN_TRY(gcn_spmm_clear(ctx, y, a->n_rows, feat));
    int which = gcn_spmm_aligned(x, p->lay[0].vec) && gcn_spmm_aligned(y, p->lay[0].vec) ? 0 : 1;
    const gcn_feat_layout *l = &p->lay[which];
    co_args args = {p->rows, a->col_idx, a->values, x, y, a->nnz, feat, l->tile};
    int64_t runs = ((int64_t)a->nnz + CO_RUN - 1) / CO_RUN;
    int64_t blocks = (runs * p->group[which] + CO_THREADS - 1) / CO_THREADS;
    dim3 grid((unsigned)blocks, (unsigned)l->n_tiles);
    pick_kernel(l->vec, p->group[which])<<<grid, CO_THREADS, 0, cs->stream>>>(args);
    GCN_LAUNCHED("inter_coo_kernel");
    return GCN_OK;
}

const gcn_spmm_impl gcn_spmm_inter_coo = {
    .size = sizeof(gcn_spmm_impl),
    .name = "inter_coo",
    .device = GCN_DEVICE_CUDA,
    .deterministic = false,
    .roles = GCN_SPMM_ROLE_INTER,
    .supports = gcn_spmm_cuda_supports,
    .plan = coo_plan_create,
    .run = coo_run,
    .free_plan = coo_free_plan,
};
