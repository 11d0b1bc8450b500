/* Device and host helpers shared by the hand-written CUDA SpMM kernels
 * (rowsplit.cu, accel.cu, mergepath.cu): loads and stores of
 * 1, 2 or 4 consecutive floats, device limits for the plans, host
 * copies of CSR arrays, and the plan header with the checks every plan and
 * run starts with.  Internal, CUDA C++ only. */
#ifndef GCN_SPMM_CUDA_CUH
#define GCN_SPMM_CUDA_CUH

#include <stdint.h>
#include <stdlib.h>

#include "core/cuda_impl.h"
#include "plan.h"

/* ---- vectors of V floats in registers ------------------------------------ */

template <int V>
__device__ __forceinline__ void vzero(float (&r)[V])
{
#pragma unroll
    for (int i = 0; i < V; i++)
        r[i] = 0.0f;
}

/* Read-only path (X, partial sums never written by this launch's reader). */
template <int V>
__device__ __forceinline__ void vload_ro(const float *p, float (&r)[V])
{
    if constexpr (V == 4) {
        float4 t = __ldg(reinterpret_cast<const float4 *>(p));
        r[0] = t.x, r[1] = t.y, r[2] = t.z, r[3] = t.w;
    } else if constexpr (V == 2) {
        float2 t = __ldg(reinterpret_cast<const float2 *>(p));
        r[0] = t.x, r[1] = t.y;
    } else {
        r[0] = __ldg(p);
    }
}

/* Through L2 only, skipping a possibly stale L1 line (data other SMs wrote
 * during this launch). */
template <int V>
__device__ __forceinline__ void vload_cg(const float *p, float (&r)[V])
{
    if constexpr (V == 4) {
        float4 t = __ldcg(reinterpret_cast<const float4 *>(p));
        r[0] = t.x, r[1] = t.y, r[2] = t.z, r[3] = t.w;
    } else if constexpr (V == 2) {
        float2 t = __ldcg(reinterpret_cast<const float2 *>(p));
        r[0] = t.x, r[1] = t.y;
    } else {
        r[0] = __ldcg(p);
    }
}

template <int V>
__device__ __forceinline__ void vstore(float *p, const float (&r)[V])
{
    if constexpr (V == 4)
        *reinterpret_cast<float4 *>(p) = make_float4(r[0], r[1], r[2], r[3]);
    else if constexpr (V == 2)
        *reinterpret_cast<float2 *>(p) = make_float2(r[0], r[1]);
    else
        *p = r[0];
}

/* Streaming store for Y, written once: evict-first keeps X in L2. */
template <int V>
__device__ __forceinline__ void vstore_cs(float *p, const float (&r)[V])
{
    if constexpr (V == 4)
        __stcs(reinterpret_cast<float4 *>(p), make_float4(r[0], r[1], r[2], r[3]));
    else if constexpr (V == 2)
        __stcs(reinterpret_cast<float2 *>(p), make_float2(r[0], r[1]));
    else
        __stcs(p, r[0]);
}

/* y = r, or y += r when accumulate (the caller owns the row: no atomics). */
template <int V>
__device__ __forceinline__ void vwrite(float *p, float (&r)[V], bool accumulate)
{
    if (accumulate) {
        float old[V];
        if constexpr (V == 4) {
            float4 t = *reinterpret_cast<const float4 *>(p);
            old[0] = t.x, old[1] = t.y, old[2] = t.z, old[3] = t.w;
        } else if constexpr (V == 2) {
            float2 t = *reinterpret_cast<const float2 *>(p);
            old[0] = t.x, old[1] = t.y;
        } else {
            old[0] = *p;
        }
#pragma unroll
        for (int i = 0; i < V; i++)
            r[i] += old[i];
    }
    vstore_cs<V>(p, r);
}

/* y += r with one atomic per element (or per vector where the GPU has
 * vector float atomics). */
template <int V>
__device__ __forceinline__ void vatomic_add(float *p, const float (&r)[V])
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (V == 4) {
        atomicAdd(reinterpret_cast<float4 *>(p), make_float4(r[0], r[1], r[2], r[3]));
    } else if constexpr (V == 2) {
        atomicAdd(reinterpret_cast<float2 *>(p), make_float2(r[0], r[1]));
    } else {
        atomicAdd(p, r[0]);
    }
#else
#pragma unroll
    for (int i = 0; i < V; i++)
        atomicAdd(p + i, r[i]);
#endif
}

/* ---- host side ------------------------------------------------------------ */

/* Multiprocessors and L2 bytes of the context's device. */
static inline gcn_status gcn_spmm_device_limits(gcn_ctx *ctx, int *sms, size_t *l2_bytes)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    int n = 0, l2 = 0;
    GCN_CUDA(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, cs->device));
    GCN_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, cs->device));
    *sms = n > 0 ? n : 1;
    *l2_bytes = (size_t)(l2 > 0 ? l2 : 0);
    return GCN_OK;
}

/* The L2 bytes a plan may count on for X: GCN_SPMM_L2_PERCENT (default 90)
 * percent of the device's L2. */
static inline size_t gcn_spmm_l2_budget(size_t l2_bytes)
{
    return l2_bytes / 100 * (size_t)gcn_spmm_knob("GCN_SPMM_L2_PERCENT", 90, 1, 1000);
}

#define GCN_SPMM_BAND_SAMPLES 4096

/* gcn_spmm_banded on up to 4096 evenly spaced non-zeros, their columns
 * fetched with one strided copy. */
static inline gcn_status gcn_spmm_sample_banded(gcn_ctx *ctx, const gcn_csr *a,
                                                const int32_t *row_ptr, bool *banded)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    int n = a->nnz < GCN_SPMM_BAND_SAMPLES ? a->nnz : GCN_SPMM_BAND_SAMPLES;
    int64_t stride = n > 0 ? a->nnz / n : 1;
    int32_t cols[GCN_SPMM_BAND_SAMPLES];
    *banded = false;
    if (n == 0)
        return GCN_OK;
    GCN_CUDA(cudaMemcpy2DAsync(cols, sizeof(int32_t), a->col_idx, (size_t)stride * sizeof(int32_t),
                               sizeof(int32_t), (size_t)n, cudaMemcpyDeviceToHost, cs->stream));
    GCN_CUDA(cudaStreamSynchronize(cs->stream));
    *banded = gcn_spmm_banded(row_ptr, a->n_rows, a->n_cols, stride, cols, n);
    return GCN_OK;
}

/* Whether p is aligned for vec-float accesses. */
static inline bool gcn_spmm_aligned(const void *p, int vec)
{
    return ((uintptr_t)p % ((uintptr_t)vec * sizeof(float))) == 0;
}

/* Device memory for `bytes` holding a copy of host data (bytes may be 0). */
static inline gcn_status gcn_spmm_upload(gcn_ctx *ctx, void **dst, const void *host, size_t bytes)
{
    GCN_TRY(gcn_mem_alloc(ctx, dst, bytes));
    return bytes > 0 ? ctx->be->upload(ctx, *dst, host, bytes) : GCN_OK;
}

/* y = 0 on the context's stream, for products with no non-zeros. */
static inline gcn_status gcn_spmm_clear(gcn_ctx *ctx, float *y, int64_t n_rows, int feat)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n_rows > 0 && feat > 0)
        GCN_CUDA(cudaMemsetAsync(y, 0, (size_t)n_rows * (size_t)feat * sizeof(float), cs->stream));
    return GCN_OK;
}

/* ---- the start of every plan and run -------------------------------------- */

/* The product a plan was built for, which every run checks; the first
 * member of each hand-written kernel's plan. */
typedef struct gcn_spmm_head {
    gcn_ctx *ctx;
    const int32_t *row_ptr;
    int32_t n_rows;
    int feat;
    bool empty; /* no non-zeros: a run only clears y */
} gcn_spmm_head;

/* What the hand-written kernels multiply: a CUDA matrix with values (or no
 * non-zeros) by a dense matrix of feat >= 1 columns. */
static inline bool gcn_spmm_cuda_supports(const gcn_csr *a, int feat)
{
    return a && a->device == GCN_DEVICE_CUDA && feat >= 1 && (a->nnz == 0 || a->values);
}

/* *out = a zeroed plan of `size` bytes, which starts with a gcn_spmm_head,
 * its head describing (ctx, a, feat); *plan is cleared first.  `kernel`
 * names the kernel in errors. */
static inline gcn_status gcn_spmm_plan_new(gcn_ctx *ctx, const gcn_csr *a, int feat,
                                           const char *kernel, size_t size, void **plan,
                                           void **out)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, plan);
    *plan = NULL;
    if (!gcn_spmm_cuda_supports(a, feat))
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "%s SpMM needs a CUDA matrix with values and feat >= 1", kernel);
    gcn_spmm_head *h = (gcn_spmm_head *)calloc(1, size);
    if (!h)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for the %s plan", kernel);
    *h = (gcn_spmm_head){ctx, a->row_ptr, a->n_rows, feat, a->nnz == 0 || a->n_rows == 0};
    *out = h;
    return GCN_OK;
}

/* Whether the feature tiles of both layouts (vectorised and scalar) fit
 * the grid's y dimension; an error naming `kernel` if not. */
static inline gcn_status gcn_spmm_check_tiles(gcn_ctx *ctx, const char *kernel,
                                              const gcn_feat_layout lay[2])
{
    for (int i = 0; i < 2; i++)
        if (lay[i].n_tiles > 65535)
            return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "%s: %d feature tiles exceed the grid",
                             kernel, lay[i].n_tiles);
    return GCN_OK;
}

/* The context's stream for a run of `plan` (a plan starting with a
 * gcn_spmm_head), after checking that the plan was built for (ctx, a,
 * feat).  *done is set when the run has nothing more to do: the matrix has
 * no non-zeros, and y has been cleared unless accumulating. */
static inline gcn_status gcn_spmm_run_begin(gcn_ctx *ctx, const void *plan, const gcn_csr *a,
                                            float *y, int feat, bool accumulate,
                                            const char *kernel, gcn_cuda_state **cs, bool *done)
{
    const gcn_spmm_head *h = (const gcn_spmm_head *)plan;
    *done = false;
    GCN_TRY(gcn_cuda_begin(ctx, cs));
    if (!h || h->ctx != ctx || h->row_ptr != a->row_ptr || h->feat != feat)
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "%s SpMM: plan built for another matrix, context or width", kernel);
    if (!h->empty)
        return GCN_OK;
    *done = true;
    return accumulate ? GCN_OK : gcn_spmm_clear(ctx, y, h->n_rows, feat);
}

#endif
