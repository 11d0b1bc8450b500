/* Device and host helpers shared by the hand-written CUDA SpMM kernels
 * (rowsplit.cu, accel.cu, mergepath.cu): loads and stores of
 * 1, 2 or 4 consecutive floats or of their bf16 units, device limits for
 * the plans, host copies of CSR arrays, and the plan header with the
 * checks every plan and run starts with.  Internal, CUDA C++ only. */
#ifndef GCN_SPMM_CUDA_CUH
#define GCN_SPMM_CUDA_CUH

#include <stdint.h>
#include <stdlib.h>

#include <type_traits>

#include "core/bf16.h"
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

/* ---- N consecutive floats, N a multiple of 4, 2 or 1 ---------------------- */

/* Partial rows in scratch: through L2 only (other SMs wrote them). */
template <int N>
__device__ __forceinline__ void fload_cg(const float *p, float (&r)[N])
{
    constexpr int C = N % 4 == 0 ? 4 : N % 2 == 0 ? 2 : 1;
#pragma unroll
    for (int i = 0; i < N; i += C)
        vload_cg<C>(p + i, *reinterpret_cast<float (*)[C]>(r + i));
}

template <int N>
__device__ __forceinline__ void fstore(float *p, const float (&r)[N])
{
    constexpr int C = N % 4 == 0 ? 4 : N % 2 == 0 ? 2 : 1;
#pragma unroll
    for (int i = 0; i < N; i += C)
        vstore<C>(p + i, *reinterpret_cast<const float (*)[C]>(r + i));
}

/* ---- storage units: what X and Y hold ------------------------------------- */

/* A kernel reads X and writes Y in units of one of these types, and sums
 * in fp32 either way: a float; two adjacent bf16 (the first in the low
 * half), for bf16 rows of even width; or one bf16, for odd widths.
 * unit_values<S> is the values a unit holds. */
struct bf16x2 {
    uint32_t bits;
};
struct bf16x1 {
    uint16_t bits;
};

template <typename S>
constexpr int unit_values = std::is_same<S, bf16x2>::value ? 2 : 1;

__device__ __forceinline__ float bf16_lo(uint32_t w)
{
    return __uint_as_float(w << 16);
}

__device__ __forceinline__ float bf16_hi(uint32_t w)
{
    return __uint_as_float(w & 0xffff0000u);
}

/* Two values rounded to bf16 (core/bf16.h, ties to even) in one word. */
__device__ __forceinline__ uint32_t bf16_pack(float lo, float hi)
{
    return (uint32_t)gcn_bf16_from_float(lo) | ((uint32_t)gcn_bf16_from_float(hi) << 16);
}

/* V bf16 words (V = 1, 2 or 4: 4 to 16 bytes) read-only or plainly. */
template <int V, bool RO>
__device__ __forceinline__ void words_load(const uint32_t *p, uint32_t (&w)[V])
{
    if constexpr (V == 4) {
        uint4 t = RO ? __ldg(reinterpret_cast<const uint4 *>(p)) : *reinterpret_cast<const uint4 *>(p);
        w[0] = t.x, w[1] = t.y, w[2] = t.z, w[3] = t.w;
    } else if constexpr (V == 2) {
        uint2 t = RO ? __ldg(reinterpret_cast<const uint2 *>(p)) : *reinterpret_cast<const uint2 *>(p);
        w[0] = t.x, w[1] = t.y;
    } else {
        w[0] = RO ? __ldg(p) : *p;
    }
}

/* A unit as loaded, kept so until its multiply: a float, or a 32-bit word
 * (two bf16, or one bf16 in the upper half), so the gathers in flight hold
 * as many registers in bf16 as in fp32. */
template <typename S>
using unit_raw = typename std::conditional<std::is_same<S, float>::value, float, uint32_t>::type;

/* V units from p (X, read-only), as loaded. */
template <typename S, int V>
__device__ __forceinline__ void uload_ro(const S *p, unit_raw<S> (&r)[V])
{
    if constexpr (std::is_same<S, float>::value) {
        vload_ro<V>(p, r);
    } else if constexpr (std::is_same<S, bf16x2>::value) {
        words_load<V, true>(reinterpret_cast<const uint32_t *>(p), r);
    } else {
        static_assert(V == 1, "single bf16 units load one at a time");
        r[0] = (uint32_t)__ldg(reinterpret_cast<const unsigned short *>(p)) << 16;
    }
}

template <typename S, int V>
__device__ __forceinline__ void uzero(unit_raw<S> (&r)[V])
{
#pragma unroll
    for (int i = 0; i < V; i++)
        r[i] = 0; /* 0.0f as a float or as bf16 bits */
}

/* acc += w * the V units r, widened to fp32. */
template <typename S, int V>
__device__ __forceinline__ void ufma(float w, const unit_raw<S> (&r)[V],
                                     float (&acc)[V * unit_values<S>])
{
#pragma unroll
    for (int i = 0; i < V; i++) {
        if constexpr (std::is_same<S, float>::value) {
            acc[i] = fmaf(w, r[i], acc[i]);
        } else if constexpr (std::is_same<S, bf16x2>::value) {
            acc[2 * i] = fmaf(w, bf16_lo(r[i]), acc[2 * i]);
            acc[2 * i + 1] = fmaf(w, bf16_hi(r[i]), acc[2 * i + 1]);
        } else {
            acc[i] = fmaf(w, __uint_as_float(r[i]), acc[i]);
        }
    }
}

/* y = r, or y += r when accumulate (the caller owns the row: no atomics);
 * a bf16 y gets each sum, old value included, rounded once. */
template <typename S, int V>
__device__ __forceinline__ void uwrite(S *p, float (&r)[V * unit_values<S>], bool accumulate)
{
    if constexpr (std::is_same<S, float>::value) {
        vwrite<V>(p, r, accumulate);
    } else if constexpr (std::is_same<S, bf16x2>::value) {
        uint32_t *q = reinterpret_cast<uint32_t *>(p), w[V];
        if (accumulate) {
            words_load<V, false>(q, w);
#pragma unroll
            for (int i = 0; i < V; i++)
                r[2 * i] += bf16_lo(w[i]), r[2 * i + 1] += bf16_hi(w[i]);
        }
#pragma unroll
        for (int i = 0; i < V; i++)
            w[i] = bf16_pack(r[2 * i], r[2 * i + 1]);
        if constexpr (V == 4)
            __stcs(reinterpret_cast<uint4 *>(q), make_uint4(w[0], w[1], w[2], w[3]));
        else if constexpr (V == 2)
            __stcs(reinterpret_cast<uint2 *>(q), make_uint2(w[0], w[1]));
        else
            __stcs(q, w[0]);
    } else {
        static_assert(V == 1, "single bf16 units store one at a time");
        unsigned short *q = reinterpret_cast<unsigned short *>(p);
        float v = accumulate ? r[0] + __uint_as_float((uint32_t)*q << 16) : r[0];
        __stcs(q, (unsigned short)gcn_bf16_from_float(v));
    }
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

/* y = 0 on the context's stream, for products with no non-zeros: n_rows
 * rows of feat units of unit_bytes (4: floats). */
static inline gcn_status gcn_spmm_clear(gcn_ctx *ctx, void *y, int64_t n_rows, int feat,
                                        size_t unit_bytes = sizeof(float))
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (n_rows > 0 && feat > 0)
        GCN_CUDA(cudaMemsetAsync(y, 0, (size_t)n_rows * (size_t)feat * unit_bytes, cs->stream));
    return GCN_OK;
}

/* A bf16 width in units (bf16x2 pairs when feat is even, else single
 * bf16): their number, *values_per_unit set to 2 or 1. */
static inline int gcn_spmm_bf16_units(int feat, int *values_per_unit)
{
    *values_per_unit = feat % 2 == 0 ? 2 : 1;
    return feat / *values_per_unit;
}

/* ---- the start of every plan and run -------------------------------------- */

/* The product a plan was built for, which every run checks; the first
 * member of each hand-written kernel's plan. */
typedef struct gcn_spmm_head {
    gcn_ctx *ctx;
    const int32_t *row_ptr;
    int32_t n_rows;
    int feat;   /* in units of X's and Y's rows (a bf16 plan's: units of 1 or 2 bf16) */
    bool empty; /* no non-zeros: a run only clears y */
    int unit_bytes; /* bytes a unit: 4, or 2 for single bf16 */
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
    *h = (gcn_spmm_head){ctx, a->row_ptr, a->n_rows, feat, a->nnz == 0 || a->n_rows == 0, 4};
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
                                            void *y, int feat, bool accumulate,
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
    return accumulate ? GCN_OK : gcn_spmm_clear(ctx, y, h->n_rows, feat, (size_t)h->unit_bytes);
}

#endif
