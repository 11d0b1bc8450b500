/* "inter_csr": AdaptGear's row-parallel kernel for the sparse
 * inter-community part.  A thread block takes a run of rows holding at most
 * 1024 non-zeros, copies their column indices and values into shared memory
 * with coalesced loads, and its groups of lanes then sum one row each,
 * gathering X rows from global memory.  A row of more than 1024 non-zeros
 * has a block to itself that stages it piece by piece, every group taking a
 * share, and sums the groups' parts in a fixed order.  Deterministic.
 * Planning: plan.c; docs/kernels.md. */
#include <stdlib.h>

#include "kernels/cuda/common.cuh"
#include "kernels/spmm/impls.h"
#include "plan.h"

#define IC_THREADS 256
#define IC_NZ 1024  /* non-zeros staged at a time */
#define IC_ROWS 256 /* most rows a block task holds */

typedef struct inter_plan {
    gcn_spmm_head head;
    gcn_feat_layout lay[2]; /* [0] vectorised, [1] scalar for misaligned x or y */
    int group[2];           /* lanes a row: the smallest power of two >= the tile's vectors */
    int64_t n_tasks;
    int4 *tasks;            /* first row, end row, first non-zero, end non-zero */
    size_t tasks_bytes;
} inter_plan;

typedef struct ic_args {
    const int32_t *row_ptr, *col_idx;
    const float *val, *x;
    float *y;
    const int4 *tasks;
    int feat, tile;
    bool accumulate;
} ic_args;

/* Copies non-zeros [b, e) (at most IC_NZ) into shared memory. */
__device__ __forceinline__ void stage_nz(const ic_args &a, int *sc, float *sv, int b, int e)
{
    for (int k = threadIdx.x; k < e - b; k += IC_THREADS) {
        sc[k] = __ldg(a.col_idx + b + k);
        sv[k] = __ldg(a.val + b + k);
    }
}

/* acc += sum over staged non-zeros [b, e) (indices into sc / sv) of
 * val * X[col, this lane's vector], four gathers in flight. */
template <int V>
__device__ __forceinline__ void staged_gather(const ic_args &a, const int *sc, const float *sv,
                                              const float *xt, int b, int e, float (&acc)[V])
{
    int k = b;
    for (; k + 4 <= e; k += 4) {
        float xv[4][V];
#pragma unroll
        for (int u = 0; u < 4; u++)
            vload_ro<V>(xt + (int64_t)sc[k + u] * a.feat, xv[u]);
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int t = 0; t < V; t++)
                acc[t] = fmaf(sv[k + u], xv[u][t], acc[t]);
    }
    for (; k < e; k++) {
        float xv[V];
        vload_ro<V>(xt + (int64_t)sc[k] * a.feat, xv);
#pragma unroll
        for (int t = 0; t < V; t++)
            acc[t] = fmaf(sv[k], xv[t], acc[t]);
    }
}

/* One row too long to stage at once: every group sums a share of each
 * staged piece, then the groups' sums are added in group order. */
template <int G, int V>
__device__ __forceinline__ void long_row(const ic_args &a, int4 task, int *sc, float *sv,
                                         float *red, int col0, int nvec)
{
    const int li = threadIdx.x % G, grp = threadIdx.x / G, groups = IC_THREADS / G;
    float acc[V];
    vzero<V>(acc);
    for (int b = task.z; b < task.w; b += IC_NZ) {
        const int e = min(b + IC_NZ, task.w), per = (e - b + groups - 1) / groups;
        __syncthreads();
        stage_nz(a, sc, sv, b, e);
        __syncthreads();
        const int lo = min(grp * per, e - b), hi = min(lo + per, e - b);
        if (li < nvec)
            staged_gather<V>(a, sc, sv, a.x + col0 + li * V, lo, hi, acc);
    }
    vstore<V>(red + threadIdx.x * V, acc);
    __syncthreads();
    if (grp != 0 || li >= nvec)
        return;
    for (int g = 1; g < groups; g++)
#pragma unroll
        for (int t = 0; t < V; t++)
            acc[t] += red[(g * G + li) * V + t];
    vwrite<V>(a.y + (int64_t)task.x * a.feat + col0 + li * V, acc, a.accumulate);
}

/* Work mapping: blockIdx.x is a task, blockIdx.y the feature tile.  A task
 * of several rows stages their non-zeros, then its IC_THREADS / G groups of
 * G lanes take rows r0 + g, r0 + g + IC_THREADS / G, ...; lane l of a group
 * owns vector l of the tile (tile <= 32 V).  A one-row task over IC_NZ
 * non-zeros goes to long_row. */
template <int G, int V>
__global__ void __launch_bounds__(IC_THREADS) inter_csr_kernel(const __grid_constant__ ic_args a)
{
    __shared__ int sc[IC_NZ];
    __shared__ float sv[IC_NZ];
    __shared__ __align__(16) float red[IC_THREADS * 4];
    const int4 task = a.tasks[blockIdx.x];
    const int col0 = (int)blockIdx.y * a.tile;
    const int nvec = min(a.tile, a.feat - col0) / V;
    if (task.w - task.z > IC_NZ) {
        long_row<G, V>(a, task, sc, sv, red, col0, nvec);
        return;
    }
    stage_nz(a, sc, sv, task.z, task.w);
    __syncthreads();
    const int li = threadIdx.x % G, grp = threadIdx.x / G;
    if (li >= nvec)
        return;
    for (int row = task.x + grp; row < task.y; row += IC_THREADS / G) {
        float acc[V];
        vzero<V>(acc);
        const int b = __ldg(a.row_ptr + row) - task.z, e = __ldg(a.row_ptr + row + 1) - task.z;
        staged_gather<V>(a, sc, sv, a.x + col0 + li * V, b, e, acc);
        vwrite<V>(a.y + (int64_t)row * a.feat + col0 + li * V, acc, a.accumulate);
    }
}

typedef void (*ic_kernel)(const ic_args);

template <int V>
static ic_kernel pick_group(int group)
{
    switch (group) {
    case 1: return inter_csr_kernel<1, V>;
    case 2: return inter_csr_kernel<2, V>;
    case 4: return inter_csr_kernel<4, V>;
    case 8: return inter_csr_kernel<8, V>;
    case 16: return inter_csr_kernel<16, V>;
    default: return inter_csr_kernel<32, V>;
    }
}

static ic_kernel pick_kernel(int vec, int group)
{
    return vec == 4 ? pick_group<4>(group) : vec == 2 ? pick_group<2>(group) : pick_group<1>(group);
}

/* The smallest power of two >= vecs (at most a warp). */
static int group_for(int vecs)
{
    int g = 1;
    while (g < vecs && g < GCN_WARP)
        g *= 2;
    return g;
}

/* ---- plan ----------------------------------------------------------------- */

static void inter_free_plan(void *plan)
{
    inter_plan *p = (inter_plan *)plan;
    if (!p)
        return;
    gcn_mem_release(p->head.ctx, p->tasks, p->tasks_bytes);
    free(p);
}

static gcn_status build_plan(gcn_ctx *ctx, const gcn_csr *a, inter_plan *p)
{
    int feat = p->head.feat, vec = gcn_feat_vec(feat, 4);
    p->lay[0] = gcn_feat_layout_make(feat, vec, GCN_WARP * vec);
    p->lay[1] = gcn_feat_layout_make(feat, 1, GCN_WARP);
    for (int i = 0; i < 2; i++)
        p->group[i] = group_for(p->lay[i].vecs);
    GCN_TRY(gcn_spmm_check_tiles(ctx, "inter_csr", p->lay));
    const int32_t *row_ptr;
    int32_t(*tasks)[4] = NULL;
    gcn_status st;
    GCN_CHECK(gcn_csr_host_row_ptr(ctx, a, &row_ptr));
    p->n_tasks = gcn_inter_tasks(row_ptr, a->n_rows, IC_NZ, IC_ROWS, NULL);
    tasks = (int32_t(*)[4])malloc(((size_t)p->n_tasks + 1) * sizeof *tasks);
    if (!tasks) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "inter_csr: out of host memory for the tasks");
        goto cleanup;
    }
    gcn_inter_tasks(row_ptr, a->n_rows, IC_NZ, IC_ROWS, tasks);
    p->tasks_bytes = (size_t)p->n_tasks * sizeof(int4);
    GCN_CHECK(gcn_spmm_upload(ctx, (void **)&p->tasks, tasks, p->tasks_bytes));
cleanup:
    free(tasks);
    return st;
}

static gcn_status inter_plan_create(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    inter_plan *p = NULL;
    GCN_TRY(gcn_spmm_plan_new(ctx, a, feat, "inter_csr", sizeof *p, plan, (void **)&p));
    if (!p->head.empty) {
        gcn_status st = build_plan(ctx, a, p);
        if (st != GCN_OK) {
            inter_free_plan(p);
            return st;
        }
    }
    *plan = p;
    return GCN_OK;
}

static gcn_status inter_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x,
                            float *y, int feat, bool accumulate)
{
    inter_plan *p = (inter_plan *)plan;
    gcn_cuda_state *cs;
    bool done;
    GCN_TRY(gcn_spmm_run_begin(ctx, p, a, y, feat, accumulate, "inter_csr", &cs, &done));
    if (done)
        return GCN_OK;
    if (p->n_tasks > INT32_MAX)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "inter_csr: %lld tasks exceed the grid",
                         (long long)p->n_tasks);
    int which = gcn_spmm_aligned(x, p->lay[0].vec) && gcn_spmm_aligned(y, p->lay[0].vec) ? 0 : 1;
    const gcn_feat_layout *l = &p->lay[which];
    ic_args args = {a->row_ptr, a->col_idx, a->values, x, y, p->tasks, feat, l->tile, accumulate};
    dim3 grid((unsigned)p->n_tasks, (unsigned)l->n_tiles);
    pick_kernel(l->vec, p->group[which])<<<grid, IC_THREADS, 0, cs->stream>>>(args);
    GCN_LAUNCHED("inter_csr_kernel");
    return GCN_OK;
}

const gcn_spmm_impl gcn_spmm_inter_csr = {
    .size = sizeof(gcn_spmm_impl),
    .name = "inter_csr",
    .device = GCN_DEVICE_CUDA,
    .deterministic = true,
    .roles = GCN_SPMM_ROLE_INTER,
    .supports = gcn_spmm_cuda_supports,
    .plan = inter_plan_create,
    .run = inter_run,
    .free_plan = inter_free_plan,
};
