/* "intra_dense": the intra-community part as dense diagonal blocks.  Each
 * community's block D_p (s x s, zeros where the graph has no edge) is
 * stored row-major, and Y_p = D_p X_p is one small dense product: a thread
 * block computes 32 rows x 32 columns of Y_p, walking the block's columns
 * in steps of 32 through shared memory.  FP32 FMA (no TF32, so its results
 * equal the sparse kernels' up to rounding).  Deterministic.  Planning:
 * plan.c; docs/kernels.md. */
#include <stdlib.h>

#include "kernels/cuda/common.cuh"
#include "kernels/spmm/impls.h"
#include "plan.h"

#define DN_THREADS 256
#define DN_TILE 32 /* rows and columns of Y a block computes; k step */

typedef struct dense_plan {
    gcn_spmm_head head;
    int64_t n_tasks;
    float *blocks;       /* every part's block, row-major, at offset[p] */
    int64_t *offset;     /* [n_parts + 1] */
    int32_t *part_ptr;   /* [n_parts + 1] */
    int2 *tasks;         /* part, first row */
    size_t blocks_bytes, offset_bytes, part_bytes, tasks_bytes;
} dense_plan;

typedef struct dn_args {
    const float *blocks, *x;
    float *y;
    const int64_t *offset;
    const int32_t *part_ptr;
    const int2 *tasks;
    int feat;
    bool accumulate;
} dn_args;

/* Work mapping: blockIdx.x is a task (part p, rows [r, r + 32) of it),
 * blockIdx.y the 32-column tile of Y.  Thread t computes row t / 8 of the
 * tile and its columns 4 (t % 8) .. + 3.  Per step of 32 block columns the
 * block stages D_p's 32 x 32 piece and X_p's 32 x 32 piece in shared
 * memory. */
__global__ void __launch_bounds__(DN_THREADS) intra_dense_kernel(const __grid_constant__ dn_args a)
{
    __shared__ float sd[DN_TILE][DN_TILE + 1];
    __shared__ float sx[DN_TILE][DN_TILE];
    const int2 task = a.tasks[blockIdx.x];
    const int p0 = a.part_ptr[task.x], s = a.part_ptr[task.x + 1] - p0;
    const float *blk = a.blocks + a.offset[task.x];
    const int r0 = task.y - p0, c0 = (int)blockIdx.y * DN_TILE;
    const int ty = threadIdx.x / 8, tx = (threadIdx.x % 8) * 4;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < s; k0 += DN_TILE) {
        for (int t = threadIdx.x; t < DN_TILE * DN_TILE; t += DN_THREADS) {
            const int i = t / DN_TILE, j = t % DN_TILE;
            const bool in_d = r0 + i < s && k0 + j < s;
            sd[i][j] = in_d ? blk[(int64_t)(r0 + i) * s + k0 + j] : 0.0f;
            const bool in_x = k0 + i < s && c0 + j < a.feat;
            sx[i][j] = in_x ? __ldg(a.x + (int64_t)(p0 + k0 + i) * a.feat + c0 + j) : 0.0f;
        }
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < DN_TILE; k++) {
            const float d = sd[ty][k];
#pragma unroll
            for (int c = 0; c < 4; c++)
                acc[c] = fmaf(d, sx[k][tx + c], acc[c]);
        }
        __syncthreads();
    }
    if (r0 + ty >= s)
        return;
    float *yr = a.y + (int64_t)(p0 + r0 + ty) * a.feat;
#pragma unroll
    for (int c = 0; c < 4; c++)
        if (c0 + tx + c < a.feat)
            yr[c0 + tx + c] = a.accumulate ? yr[c0 + tx + c] + acc[c] : acc[c];
}

/* ---- plan ----------------------------------------------------------------- */

/* Block diagonal at its one level, with dense blocks worth storing. */
static bool dense_supports(const gcn_csr *a, int feat)
{
    if (!gcn_spmm_cuda_supports(a, feat) || gcn_communities_of(a)->n_levels != 1 ||
        !gcn_communities_of(a)->block_diagonal)
        return false;
    const gcn_csr_level *lv = &gcn_communities_of(a)->level[0];
    return gcn_dense_worth(gcn_dense_floats(lv->part_ptr, lv->n_parts), a->nnz);
}

static void dense_free_plan(void *plan)
{
    dense_plan *p = (dense_plan *)plan;
    if (!p)
        return;
    gcn_mem_release(p->head.ctx, p->blocks, p->blocks_bytes);
    gcn_mem_release(p->head.ctx, p->offset, p->offset_bytes);
    gcn_mem_release(p->head.ctx, p->part_ptr, p->part_bytes);
    gcn_mem_release(p->head.ctx, p->tasks, p->tasks_bytes);
    free(p);
}

/* Each row's entries into its part's block (gcn_dense_fill_row), one
 * thread a row; a row's part is the last one starting at or before it. */
__global__ void dense_fill_kernel(const int32_t *row_ptr, const int32_t *col_idx,
                                  const float *values, const int32_t *part_ptr, int32_t n_parts,
                                  const int64_t *offset, int32_t n_rows, float *blocks)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_rows;
         i += (int64_t)gridDim.x * blockDim.x) {
        int32_t lo = 0, hi = n_parts - 1;
        while (lo < hi) {
            int32_t mid = lo + (hi - lo + 1) / 2;
            if (part_ptr[mid] <= i)
                lo = mid;
            else
                hi = mid - 1;
        }
        gcn_dense_fill_row(row_ptr, col_idx, values, (int32_t)i, part_ptr[lo],
                           part_ptr[lo + 1] - part_ptr[lo], blocks + offset[lo]);
    }
}

/* The blocks, filled on the GPU from the matrix, and the tasks and offsets,
 * from the level's parts on the host. */
static gcn_status build_plan(gcn_ctx *ctx, const gcn_csr *a, dense_plan *p)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    const gcn_csr_level *lv = &gcn_communities_of(a)->level[0];
    int64_t floats = gcn_dense_floats(lv->part_ptr, lv->n_parts);
    p->n_tasks = gcn_dense_tasks(lv->part_ptr, lv->n_parts, DN_TILE, NULL);
    int64_t *offset = (int64_t *)malloc(((size_t)lv->n_parts + 1) * sizeof(int64_t));
    int32_t(*tasks)[2] = (int32_t(*)[2])malloc(((size_t)p->n_tasks + 1) * sizeof *tasks);
    gcn_status st = GCN_OK;
    if (!offset || !tasks) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "intra_dense: out of host memory for %d parts",
                       lv->n_parts);
        goto cleanup;
    }
    gcn_dense_offsets(lv->part_ptr, lv->n_parts, offset);
    gcn_dense_tasks(lv->part_ptr, lv->n_parts, DN_TILE, tasks);
    p->blocks_bytes = (size_t)floats * sizeof(float);
    p->offset_bytes = ((size_t)lv->n_parts + 1) * sizeof(int64_t);
    p->part_bytes = ((size_t)lv->n_parts + 1) * sizeof(int32_t);
    p->tasks_bytes = (size_t)p->n_tasks * sizeof(int2);
    GCN_CHECK(gcn_spmm_upload(ctx, (void **)&p->offset, offset, p->offset_bytes));
    GCN_CHECK(gcn_spmm_upload(ctx, (void **)&p->part_ptr, lv->part_ptr, p->part_bytes));
    GCN_CHECK(gcn_spmm_upload(ctx, (void **)&p->tasks, tasks, p->tasks_bytes));
    GCN_CHECK(gcn_mem_alloc(ctx, (void **)&p->blocks, p->blocks_bytes));
    GCN_CHECK(GCN_CUDA_ST(cudaMemsetAsync(p->blocks, 0, p->blocks_bytes, cs->stream)));
    if (lv->n_parts > 0) {
        dense_fill_kernel<<<gcn_blocks(a->n_rows, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(
            a->row_ptr, a->col_idx, a->values, p->part_ptr, lv->n_parts, p->offset, a->n_rows,
            p->blocks);
        GCN_CHECK(GCN_LAUNCHED_ST("dense_fill_kernel"));
    }
cleanup:
    free(offset);
    free(tasks);
    return st;
}

static gcn_status dense_plan_create(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    dense_plan *p = NULL;
    GCN_TRY(gcn_spmm_plan_new(ctx, a, feat, "intra_dense", sizeof *p, plan, (void **)&p));
    if (!dense_supports(a, feat)) {
        free(p);
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "intra_dense needs a block-diagonal matrix with one community level "
                         "and blocks dense enough to store");
    }
    if (!p->head.empty) {
        gcn_status st = build_plan(ctx, a, p);
        if (st != GCN_OK) {
            dense_free_plan(p);
            return st;
        }
    }
    *plan = p;
    return GCN_OK;
}

static gcn_status dense_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x, float *y,
                            int feat, bool accumulate)
{
    dense_plan *p = (dense_plan *)plan;
    gcn_cuda_state *cs;
    bool done;
    GCN_TRY(gcn_spmm_run_begin(ctx, p, a, y, feat, accumulate, "intra_dense", &cs, &done));
    if (done || p->n_tasks == 0)
        return GCN_OK;
    dn_args args = {p->blocks, x, y, p->offset, p->part_ptr, p->tasks, feat, accumulate};
    int64_t tiles = (feat + DN_TILE - 1) / DN_TILE;
    if (tiles > 65535 || p->n_tasks > INT32_MAX)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "intra_dense: grid of %lld x %lld too large",
                         (long long)p->n_tasks, (long long)tiles);
    dim3 grid((unsigned)p->n_tasks, (unsigned)tiles);
    intra_dense_kernel<<<grid, DN_THREADS, 0, cs->stream>>>(args);
    GCN_LAUNCHED("intra_dense_kernel");
    return GCN_OK;
}

const gcn_spmm_impl gcn_spmm_intra_dense = {
    .size = sizeof(gcn_spmm_impl),
    .name = "intra_dense",
    .device = GCN_DEVICE_CUDA,
    .deterministic = true,
    .roles = GCN_SPMM_ROLE_INTRA,
    .supports = dense_supports,
    .plan = dense_plan_create,
    .run = dense_run,
    .free_plan = dense_free_plan,
};
