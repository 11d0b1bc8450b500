/* "rowgroup": row-parallel CSR SpMM that needs no plan.  A group of G lanes
 * (a power of two, sized to the feature row) owns each row in natural
 * order, walks its non-zeros in order and writes the row once: no atomics,
 * deterministic.  Planning reads nothing from the matrix, so it suits
 * matrices that live for one step (a batch of graphs), where rowsplit's
 * degree sort and long-row chunks would cost a host copy of row_ptr each
 * time.  Feature rows wider than the group's vectors are done in passes. */
#include "common.cuh"
#include "kernels/spmm/impls.h"

#define RG_THREADS 256

typedef struct rowgroup_plan {
    gcn_spmm_head head; /* the only state: the product the plan is for */
} rowgroup_plan;

/* Lane li of the group owning `row` sums vectors li, li + G, ... of each
 * pass of G * V columns. */
template <int G, int V>
__global__ void __launch_bounds__(RG_THREADS)
    rowgroup_kernel(const int32_t *__restrict__ row_ptr, const int32_t *__restrict__ col_idx,
                    const float *__restrict__ values, const float *__restrict__ x,
                    float *__restrict__ y, int32_t n_rows, int feat, bool accumulate)
{
    const int64_t t = blockIdx.x * (int64_t)RG_THREADS + threadIdx.x;
    const int64_t row = t / G;
    const int li = (int)(t % G);
    if (row >= n_rows)
        return;
    const int b = __ldg(row_ptr + row), e = __ldg(row_ptr + row + 1);
    float *yr = y + row * (int64_t)feat;
    for (int col = li * V; col < feat; col += G * V) {
        float acc[V];
        vzero<V>(acc);
        for (int k = b; k < e; k++) {
            const float a = __ldg(values + k);
            float xv[V];
            vload_ro<V>(x + (int64_t)__ldg(col_idx + k) * feat + col, xv);
#pragma unroll
            for (int i = 0; i < V; i++)
                acc[i] = fmaf(a, xv[i], acc[i]);
        }
        vwrite<V>(yr + col, acc, accumulate);
    }
}

/* The smallest power-of-two group covering vecs vectors, at most a warp. */
static int group_for(int vecs)
{
    int g = 1;
    while (g < vecs && g < GCN_WARP)
        g *= 2;
    return g;
}

template <int V>
static void launch(int g, dim3 grid, cudaStream_t s, const gcn_csr *a, const float *x, float *y,
                   int feat, bool accumulate)
{
#define RG_CASE(G)                                                                              \
    case G:                                                                                     \
        rowgroup_kernel<G, V><<<grid, RG_THREADS, 0, s>>>(a->row_ptr, a->col_idx, a->values, x, \
                                                          y, a->n_rows, feat, accumulate);      \
        break;
    switch (g) {
        RG_CASE(1)
        RG_CASE(2)
        RG_CASE(4)
        RG_CASE(8)
        RG_CASE(16)
        RG_CASE(32)
    }
#undef RG_CASE
}

static gcn_status rowgroup_plan_create(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    rowgroup_plan *p = NULL;
    GCN_TRY(gcn_spmm_plan_new(ctx, a, feat, "rowgroup", sizeof *p, plan, (void **)&p));
    *plan = p;
    return GCN_OK;
}

static gcn_status rowgroup_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x,
                               float *y, int feat, bool accumulate)
{
    gcn_cuda_state *cs;
    bool done;
    GCN_TRY(gcn_spmm_run_begin(ctx, plan, a, y, feat, accumulate, "rowgroup", &cs, &done));
    if (done)
        return GCN_OK;
    int vec = gcn_feat_vec(feat, 4);
    if (!gcn_spmm_aligned(x, vec) || !gcn_spmm_aligned(y, vec))
        vec = 1;
    int g = group_for(feat / vec);
    int64_t threads = (int64_t)a->n_rows * g;
    dim3 grid((unsigned)((threads + RG_THREADS - 1) / RG_THREADS));
    if (vec == 4)
        launch<4>(g, grid, cs->stream, a, x, y, feat, accumulate);
    else if (vec == 2)
        launch<2>(g, grid, cs->stream, a, x, y, feat, accumulate);
    else
        launch<1>(g, grid, cs->stream, a, x, y, feat, accumulate);
    GCN_LAUNCHED("rowgroup_kernel");
    return GCN_OK;
}

static void rowgroup_free_plan(void *plan)
{
    free(plan);
}

const gcn_spmm_impl gcn_spmm_rowgroup = {
    .size = sizeof(gcn_spmm_impl),
    .name = "rowgroup",
    .device = GCN_DEVICE_CUDA,
    .deterministic = true,
    .roles = 0, /* rowsplit does the same walk better where a plan pays */
    .supports = gcn_spmm_cuda_supports,
    .plan = rowgroup_plan_create,
    .run = rowgroup_run,
    .free_plan = rowgroup_free_plan,
};
