/* "intra_smem": AdaptGear's community kernel.  One thread block per task (a
 * run of whole communities, or a slice of one too large to stage) copies
 * the task's rows of X (one feature tile) into shared memory, then sums
 * each row: non-zeros whose column lies inside the task from shared memory,
 * the others from global memory.  On the intra part of a split every
 * column lies inside, so X is read once; on the whole matrix seen with a
 * community level it serves both parts in one pass.  Rows longer than a
 * chunk go to rowsplit's long-row pieces in the leading blocks of the same
 * grid.  Blocks of 256 threads stage in 48 KB, four an SM; when the
 * typical part needs more at the widest tile, blocks of 1,024 threads
 * stage it whole in up to the device's opt-in limit, one an SM, so it is
 * read in one pass instead of several narrow tiles.  Deterministic.  Host
 * planning: plan.c; docs/kernels.md. */
#include <stdlib.h>

#include "kernels/spmm/impls.h"
#include "kernels/cuda/rowsplit.cuh"
#include "plan.h"

#define SM_CHUNK 128              /* rows longer than this go to long-row pieces */

typedef struct smem_plan {
    gcn_spmm_head head;
    gcn_feat_layout lay[2]; /* [0] vectorised, [1] scalar for misaligned x or y */
    gcn_rowsplit_shape shape[2];
    int32_t n_tasks;
    int32_t stage_rows;     /* most rows a block can stage */
    int32_t pack_rows;      /* small parts are packed into tasks of up to this many rows */
    size_t smem_bytes;      /* shared memory a block stages in */
    int4 *tasks;            /* first row, end row, staged, 0 */
    int4 *meta;             /* per row: first nz, first staged nz, end staged, end */
    gcn_rs_long lr;
    size_t tasks_bytes, meta_bytes;
} smem_plan;

typedef struct sm_args {
    rs_args rs; /* col_idx, val, x, y, long-row pieces, feat, tile, accumulate */
    const int4 *tasks;
    const int4 *meta;
    int chunk_blocks;
} sm_args;

/* acc += val * sx[col - r0] over the staged non-zeros [b, e), the group's G
 * lanes loading M (column, value) pairs each and broadcasting them with
 * shuffles, like rowsplit's row_sum with shared memory for X. */
template <int G, int V>
__device__ __forceinline__ void staged_sum(const rs_args &a, const float *sx, int r0, int tile,
                                           int b, int e, int li, unsigned gmask, int nvec,
                                           float (&acc)[1][V])
{
    constexpr int M = GCN_WARP / G < 8 ? GCN_WARP / G : 8;
    constexpr int P = M * G;
    for (int base = b; base < e; base += P) {
        const int cnt = min(P, e - base);
        int c[M];
        float v[M];
        load_pairs<G, M>(a, base, cnt, li, r0, c, v);
#pragma unroll
        for (int p = 0; p < P; p++) {
            if (p >= cnt)
                break;
            const int m = p / G, s = p % G;
            const int col = G == 1 ? c[m] : __shfl_sync(gmask, c[m], s, G);
            const float w = G == 1 ? v[m] : __shfl_sync(gmask, v[m], s, G);
            if (li < nvec) {
                const float *xr = sx + col * tile + li * V;
#pragma unroll
                for (int t = 0; t < V; t++)
                    acc[0][t] = fmaf(w, xr[t], acc[0][t]);
            }
        }
    }
}

/* Stages rows [r0, r1) of the tile into sx: vector j of row r at
 * sx[r * tile + j * V]; each thread has SM_STAGE loads in flight. */
#define SM_STAGE 4
template <int T, int V>
__device__ __forceinline__ void stage(const sm_args &a, float *sx, int r0, int r1, int col0,
                                      int nvec)
{
    const int n = (r1 - r0) * nvec;
    for (int k0 = threadIdx.x; k0 < n; k0 += SM_STAGE * T) {
        float t[SM_STAGE][V];
#pragma unroll
        for (int u = 0; u < SM_STAGE; u++) {
            const int k = k0 + u * T, r = k / nvec, j = k - r * nvec;
            if (k < n)
                vload_ro<V>(x_units<float>(a.rs) + (int64_t)(r0 + r) * a.rs.feat + col0 + j * V,
                            t[u]);
        }
#pragma unroll
        for (int u = 0; u < SM_STAGE; u++) {
            const int k = k0 + u * T, r = k / nvec, j = k - r * nvec;
            if (k < n)
                vstore<V>(sx + r * a.rs.tile + j * V, t[u]);
        }
    }
}

/* Work mapping, blocks of T threads: blockIdx.y is the feature tile.
 * Blocks [0, chunk_blocks) give each of their T / 32 warps one long-row
 * piece (rowsplit's chunk_task).  Each later block takes task blockIdx.x -
 * chunk_blocks: it stages the task's rows when the task is staged, then
 * its T / G groups of G lanes take the task's rows in turn (group g: rows
 * r0 + g, r0 + g + T / G, ...), lane l of a group owning vector l of the
 * tile (tile <= 32 V). */
template <int T, int G, int V>
__global__ void __launch_bounds__(T) intra_smem_kernel(const __grid_constant__ sm_args a)
{
    extern __shared__ float4 smem_raw[];
    float *sx = reinterpret_cast<float *>(smem_raw);
    const int lane = threadIdx.x % GCN_WARP;
    const int col0 = (int)blockIdx.y * a.rs.tile;
    const int nvec = min(a.rs.tile, a.rs.feat - col0) / V;
    if ((int)blockIdx.x < a.chunk_blocks) {
        const int warp = (int)blockIdx.x * (T / GCN_WARP) + (threadIdx.x / GCN_WARP);
        if (warp < a.rs.n_chunks)
            chunk_task<G, V, 1>(a.rs, warp, lane, col0, nvec, (int)blockIdx.y);
        return;
    }
    const int4 task = a.tasks[blockIdx.x - a.chunk_blocks];
    if (task.z)
        stage<T, V>(a, sx, task.x, task.y, col0, nvec);
    __syncthreads();
    const int li = lane % G, grp = threadIdx.x / G;
    const unsigned gmask = group_mask<G>(lane);
    for (int row = task.x + grp; row < task.y; row += T / G) {
        const int4 m = __ldg(a.meta + row);
        if (m.x < 0)
            continue;
        float acc[1][V];
        vzero<V>(acc[0]);
        const float *xt = x_units<float>(a.rs) + col0;
        row_sum<G, V, 1>(a.rs, xt, m.x, m.y, li, gmask, nvec, acc);
        staged_sum<G, V>(a.rs, sx, task.x, a.rs.tile, m.y, m.z, li, gmask, nvec, acc);
        row_sum<G, V, 1>(a.rs, xt, m.z, m.w, li, gmask, nvec, acc);
        if (li < nvec)
            vwrite<V>(y_units<float>(a.rs) + (int64_t)row * a.rs.feat + col0 + li * V, acc[0],
                      a.rs.accumulate);
    }
}

typedef void (*sm_kernel)(const sm_args);

template <int T, int V>
static sm_kernel pick_group(int group)
{
    switch (group) {
    case 1: return intra_smem_kernel<T, 1, V>;
    case 2: return intra_smem_kernel<T, 2, V>;
    case 4: return intra_smem_kernel<T, 4, V>;
    case 8: return intra_smem_kernel<T, 8, V>;
    case 16: return intra_smem_kernel<T, 16, V>;
    default: return intra_smem_kernel<T, 32, V>;
    }
}

template <int T>
static sm_kernel pick_vec(int vec, int group)
{
    return vec == 4 ? pick_group<T, 4>(group)
                    : vec == 2 ? pick_group<T, 2>(group) : pick_group<T, 1>(group);
}

static sm_kernel pick_kernel(int threads, int vec, int group)
{
    return threads == GCN_SMEM_WIDE_THREADS ? pick_vec<GCN_SMEM_WIDE_THREADS>(vec, group)
                                            : pick_vec<GCN_SMEM_THREADS>(vec, group);
}

/* ---- plan ----------------------------------------------------------------- */

/* A community level attached whose typical community fits shared memory
 * at a useful width, and columns sorted where they are searched. */
static bool smem_supports(const gcn_csr *a, int feat)
{
    if (!gcn_spmm_cuda_supports(a, feat) || gcn_communities_of(a)->n_levels != 1 ||
        a->n_rows != a->n_cols || !(gcn_communities_of(a)->block_diagonal || a->priv->sorted))
        return false;
    const gcn_csr_level *lv = &gcn_communities_of(a)->level[0];
    return gcn_smem_useful(feat, gcn_smem_ref_rows(lv->part_ptr, lv->n_parts, lv->size),
                           GCN_SMEM_BYTES);
}

static void smem_free_plan(void *plan)
{
    smem_plan *p = (smem_plan *)plan;
    if (!p)
        return;
    gcn_mem_release(p->head.ctx, p->tasks, p->tasks_bytes);
    gcn_mem_release(p->head.ctx, p->meta, p->meta_bytes);
    gcn_rs_long_free(p->head.ctx, &p->lr);
    free(p);
}

static int block_threads(const smem_plan *p)
{
    return p->smem_bytes > GCN_SMEM_BYTES ? GCN_SMEM_WIDE_THREADS : GCN_SMEM_THREADS;
}

/* The block's shared memory (gcn_smem_block_bytes, up to the device's
 * opt-in limit) and tiles for both layouts from the level's part sizes;
 * the scalar tile is at most the vector one, so the tasks of the vector
 * tile fit both.  Kernels of wide blocks are allowed their shared memory. */
static gcn_status plan_layouts(gcn_ctx *ctx, const gcn_csr *a, smem_plan *p)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    int optin = 0;
    GCN_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, cs->device));
    const gcn_csr_level *lv = &gcn_communities_of(a)->level[0];
    int32_t ref = gcn_smem_ref_rows(lv->part_ptr, lv->n_parts, lv->size);
    int feat = p->head.feat, vec = gcn_feat_vec(feat, 4);
    p->smem_bytes = gcn_smem_block_bytes(feat, vec, ref, (size_t)(optin > 0 ? optin : 0));
    int tile = gcn_smem_tile(feat, vec, ref, p->smem_bytes);
    int scalar = tile < GCN_WARP ? tile : GCN_WARP;
    p->lay[0] = gcn_feat_layout_make(feat, vec, tile);
    p->lay[1] = gcn_feat_layout_make(feat, 1, scalar);
    p->stage_rows = gcn_smem_task_rows(tile, p->smem_bytes);
    for (int i = 0; i < 2; i++)
        p->shape[i] = gcn_rowsplit_shape_for(p->lay[i].vecs);
    p->pack_rows = gcn_smem_pack_rows(block_threads(p) / p->shape[0].group, ref, p->stage_rows);
    if (p->smem_bytes > GCN_SMEM_BYTES)
        for (int i = 0; i < 2; i++)
            GCN_CUDA(cudaFuncSetAttribute(
                pick_kernel(block_threads(p), p->lay[i].vec, p->shape[i].group),
                cudaFuncAttributeMaxDynamicSharedMemorySize, (int)p->smem_bytes));
    return GCN_OK;
}

/* Each row's staged range (gcn_smem_row_meta), one thread a row; the tasks
 * cover the rows in order, so a row's task is the last one starting at or
 * before it. */
__global__ void smem_meta_kernel(const int32_t *row_ptr, const int32_t *col_idx,
                                 const int4 *tasks, int32_t n_tasks, int32_t n_rows,
                                 bool block_diag, int4 *meta)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_rows;
         i += (int64_t)gridDim.x * blockDim.x) {
        int32_t lo = 0, hi = n_tasks - 1;
        while (lo < hi) {
            int32_t mid = lo + (hi - lo + 1) / 2;
            if (tasks[mid].x <= i)
                lo = mid;
            else
                hi = mid - 1;
        }
        const int4 t = tasks[lo];
        int32_t m[4];
        gcn_smem_row_meta(row_ptr, col_idx, t.x, t.y, t.z != 0, SM_CHUNK, block_diag,
                          (int32_t)i, m);
        meta[i] = make_int4(m[0], m[1], m[2], m[3]);
    }
}

/* The tasks, packed on the host from the level's parts, and the per-row
 * ranges, found on the GPU. */
static gcn_status plan_tasks(gcn_ctx *ctx, const gcn_csr *a, smem_plan *p)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    const gcn_csr_level *lv = &gcn_communities_of(a)->level[0];
    int64_t max_tasks = gcn_smem_max_tasks(lv->n_parts, a->n_rows, p->pack_rows);
    int32_t(*tasks)[4] = (int32_t(*)[4])malloc((size_t)max_tasks * sizeof *tasks);
    if (!tasks)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "intra_smem: out of host memory for the tasks");
    p->n_tasks = gcn_smem_tasks(lv->part_ptr, lv->n_parts, p->pack_rows, p->stage_rows, tasks);
    p->tasks_bytes = (size_t)p->n_tasks * sizeof(int4);
    gcn_status st = gcn_spmm_upload(ctx, (void **)&p->tasks, tasks, p->tasks_bytes);
    free(tasks);
    GCN_TRY(st);
    p->meta_bytes = (size_t)a->n_rows * sizeof(int4);
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&p->meta, p->meta_bytes));
    if (p->n_tasks == 0)
        return GCN_OK;
    smem_meta_kernel<<<gcn_blocks(a->n_rows, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(
        a->row_ptr, a->col_idx, p->tasks, p->n_tasks, a->n_rows,
        gcn_communities_of(a)->block_diagonal, p->meta);
    GCN_LAUNCHED("smem_meta_kernel");
    return GCN_OK;
}

static gcn_status build_plan(gcn_ctx *ctx, const gcn_csr *a, smem_plan *p)
{
    const int32_t *row_ptr;
    GCN_TRY(plan_layouts(ctx, a, p));
    GCN_TRY(gcn_spmm_check_tiles(ctx, "intra_smem", p->lay));
    GCN_TRY(gcn_csr_host_row_ptr(ctx, a, &row_ptr));
    GCN_TRY(plan_tasks(ctx, a, p));
    return gcn_rs_long_upload(ctx, row_ptr, a->n_rows, SM_CHUNK, p->head.feat, p->lay, &p->lr);
}

static gcn_status smem_plan_create(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    smem_plan *p = NULL;
    GCN_TRY(gcn_spmm_plan_new(ctx, a, feat, "intra_smem", sizeof *p, plan, (void **)&p));
    if (!smem_supports(a, feat)) {
        free(p);
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "intra_smem needs one community level that fits shared memory and "
                         "sorted columns");
    }
    if (!p->head.empty) {
        gcn_status st = build_plan(ctx, a, p);
        if (st != GCN_OK) {
            smem_free_plan(p);
            return st;
        }
    }
    *plan = p;
    return GCN_OK;
}

/* ---- run ------------------------------------------------------------------ */

static gcn_status smem_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x, float *y,
                           int feat, bool accumulate)
{
    smem_plan *p = (smem_plan *)plan;
    gcn_cuda_state *cs;
    bool done;
    GCN_TRY(gcn_spmm_run_begin(ctx, p, a, y, feat, accumulate, "intra_smem", &cs, &done));
    if (done)
        return GCN_OK;
    int which = gcn_spmm_aligned(x, p->lay[0].vec) && gcn_spmm_aligned(y, p->lay[0].vec) ? 0 : 1;
    const gcn_feat_layout *l = &p->lay[which];
    sm_args args;
    args.rs = (rs_args){a->col_idx, NULL, a->values, x, y, p->lr.chunks, p->lr.long_info,
                        p->lr.partial, p->lr.counter, 0, p->lr.n_chunks, feat, l->tile,
                        l->n_tiles, accumulate};
    args.tasks = p->tasks;
    args.meta = p->meta;
    const int threads = block_threads(p), warps = threads / GCN_WARP;
    args.chunk_blocks = (p->lr.n_chunks + warps - 1) / warps;
    size_t smem = (size_t)p->stage_rows * (size_t)l->tile * sizeof(float);
    if (smem > p->smem_bytes)
        smem = p->smem_bytes;
    dim3 grid((unsigned)(args.chunk_blocks + p->n_tasks), (unsigned)l->n_tiles);
    pick_kernel(threads, l->vec, p->shape[which].group)<<<grid, threads, smem, cs->stream>>>(args);
    GCN_LAUNCHED("intra_smem_kernel");
    return GCN_OK;
}

const gcn_spmm_impl gcn_spmm_intra_smem = {
    .size = sizeof(gcn_spmm_impl),
    .name = "intra_smem",
    .device = GCN_DEVICE_CUDA,
    .deterministic = true,
    .roles = GCN_SPMM_ROLE_INTRA | GCN_SPMM_ROLE_FUSED,
    .supports = smem_supports,
    .plan = smem_plan_create,
    .run = smem_run,
    .free_plan = smem_free_plan,
};
