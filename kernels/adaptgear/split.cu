/* The intra/inter split of a symmetric matrix on the GPU (gcn_csr_split's
 * device path): a warp per row counts the row's entries inside its
 * community, a scan turns the counts into the two parts' row pointers, and
 * a warp per row deals the entries into the parts in their order (ballots,
 * so each part keeps the row's column order).  Nothing crosses to the host
 * but the intra part's size.  kernels/adaptgear/adaptgear.c keeps the host path for
 * CPU contexts and matrices with a stored transpose. */
#include <cub/device/device_scan.cuh>
#include <stdlib.h>

#include "kernels/cuda/common.cuh"
#include "plan.h"

#define SP_WARPS (GCN_THREADS / GCN_WARP)

/* The community [lo, hi) of row i: the last p with part_ptr[p] <= i. */
__device__ __forceinline__ int2 community_of(const int32_t *part_ptr, int32_t n_parts, int32_t i)
{
    int32_t lo = 0, hi = n_parts; /* part_ptr[lo] <= i < part_ptr[hi] */
    while (hi - lo > 1) {
        int32_t mid = (lo + hi) / 2;
        if (__ldg(part_ptr + mid) <= i)
            lo = mid;
        else
            hi = mid;
    }
    return make_int2(__ldg(part_ptr + lo), __ldg(part_ptr + lo + 1));
}

/* The row of this thread's warp (one a warp), its entries [b, e) and its
 * community; false past the last row. */
__device__ __forceinline__ bool warp_row(const int32_t *row_ptr, const int32_t *part_ptr,
                                         int32_t n_parts, int32_t n_rows, int32_t *i, int32_t *b,
                                         int32_t *e, int2 *c)
{
    const int64_t row = (int64_t)blockIdx.x * SP_WARPS + (threadIdx.x / GCN_WARP);
    if (row >= n_rows)
        return false;
    *i = (int32_t)row;
    *b = row_ptr[row];
    *e = row_ptr[row + 1];
    *c = community_of(part_ptr, n_parts, *i);
    return true;
}

/* in_ptr[i + 1] and out_ptr[i + 1]: row i's entries inside and outside its
 * community. */
__global__ void __launch_bounds__(GCN_THREADS)
    count_kernel(const int32_t *__restrict__ row_ptr, const int32_t *__restrict__ col_idx,
                 const int32_t *__restrict__ part_ptr, int32_t n_parts, int32_t n_rows,
                 int32_t *__restrict__ in_ptr, int32_t *__restrict__ out_ptr)
{
    const int lane = threadIdx.x % GCN_WARP;
    int32_t i, b, e;
    int2 c;
    if (!warp_row(row_ptr, part_ptr, n_parts, n_rows, &i, &b, &e, &c))
        return;
    int n = 0;
    for (int32_t k = b + lane; k < e; k += GCN_WARP) {
        const int32_t col = col_idx[k];
        n += col >= c.x && col < c.y;
    }
    for (int off = GCN_WARP / 2; off > 0; off /= 2)
        n += __shfl_xor_sync(0xffffffffu, n, off);
    if (lane == 0) {
        in_ptr[i + 1] = n;
        out_ptr[i + 1] = e - b - n;
    }
}

/* Deals row i's entries into the parts, a warp's width at a time, in their order. */
__global__ void __launch_bounds__(GCN_THREADS)
    deal_kernel(const int32_t *__restrict__ row_ptr, const int32_t *__restrict__ col_idx,
                const float *__restrict__ values, const int32_t *__restrict__ part_ptr,
                int32_t n_parts, int32_t n_rows, const int32_t *__restrict__ in_ptr,
                int32_t *__restrict__ in_col, float *__restrict__ in_val,
                const int32_t *__restrict__ out_ptr, int32_t *__restrict__ out_col,
                float *__restrict__ out_val)
{
    const int lane = threadIdx.x % GCN_WARP;
    int32_t i, b, e;
    int2 c;
    if (!warp_row(row_ptr, part_ptr, n_parts, n_rows, &i, &b, &e, &c))
        return;
    const unsigned below = (1u << lane) - 1u;
    int32_t wi = in_ptr[i], wo = out_ptr[i];
    for (int32_t k0 = b; k0 < e; k0 += GCN_WARP) {
        const int32_t k = k0 + lane;
        const bool live = k < e;
        const int32_t col = live ? col_idx[k] : 0;
        const bool intra = live && col >= c.x && col < c.y;
        const unsigned in_mask = __ballot_sync(0xffffffffu, intra);
        const unsigned out_mask = __ballot_sync(0xffffffffu, live && !intra);
        if (intra) {
            const int32_t w = wi + __popc(in_mask & below);
            in_col[w] = col;
            in_val[w] = values[k];
        } else if (live) {
            const int32_t w = wo + __popc(out_mask & below);
            out_col[w] = col;
            out_val[w] = values[k];
        }
        wi += __popc(in_mask);
        wo += __popc(out_mask);
    }
}

/* A matrix header over device arrays allocated here for nnz entries; its
 * row pointers come from the caller. */
static gcn_status part_new(gcn_ctx *ctx, const gcn_csr *a, int32_t nnz, int32_t *row_ptr,
                           gcn_csr **out)
{
    gcn_csr *m = (gcn_csr *)calloc(1, sizeof *m);
    gcn_csr_priv *p = (gcn_csr_priv *)calloc(1, sizeof *p);
    if (!m || !p) {
        free(m);
        free(p);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "split: out of host memory for a matrix header");
    }
    m->priv = p;
    p->ctx = ctx;
    p->sorted = a->priv->sorted;
    p->symmetric = true;
    m->n_rows = a->n_rows;
    m->n_cols = a->n_cols;
    m->nnz = nnz;
    m->device = a->device;
    m->row_ptr = row_ptr;
    *out = m;
    gcn_status st;
    GCN_CHECK(gcn_mem_alloc(ctx, (void **)&m->col_idx, (size_t)nnz * sizeof(int32_t)));
    GCN_CHECK(gcn_mem_alloc(ctx, (void **)&m->values, (size_t)nnz * sizeof(float)));
    return GCN_OK;
cleanup:
    m->row_ptr = NULL; /* still the caller's */
    gcn_csr_free(out);
    return st;
}

gcn_status gcn_split_cuda(gcn_ctx *ctx, const gcn_csr *a, const gcn_csr_level *lv,
                          gcn_csr **intra, gcn_csr **inter)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    const int32_t n = a->n_rows;
    const size_t ptr_bytes = ((size_t)n + 1) * sizeof(int32_t);
    const size_t parts_bytes = ((size_t)lv->n_parts + 1) * sizeof(int32_t);
    int32_t *in_ptr = NULL, *out_ptr = NULL, *part_ptr = NULL;
    void *scan_tmp = NULL;
    size_t scan_bytes = 0;
    int32_t n_in = 0;
    const unsigned blocks = (unsigned)(((int64_t)n + SP_WARPS - 1) / SP_WARPS);
    gcn_status st;
    GCN_CHECK(gcn_mem_alloc(ctx, (void **)&in_ptr, ptr_bytes));
    GCN_CHECK(gcn_mem_alloc(ctx, (void **)&out_ptr, ptr_bytes));
    GCN_CHECK(gcn_spmm_upload(ctx, (void **)&part_ptr, lv->part_ptr, parts_bytes));
    GCN_CHECK(GCN_CUDA_ST(cudaMemsetAsync(in_ptr, 0, sizeof(int32_t), cs->stream)));
    GCN_CHECK(GCN_CUDA_ST(cudaMemsetAsync(out_ptr, 0, sizeof(int32_t), cs->stream)));
    if (n > 0) {
        count_kernel<<<blocks, GCN_THREADS, 0, cs->stream>>>(a->row_ptr, a->col_idx, part_ptr,
                                                             lv->n_parts, n, in_ptr, out_ptr);
        GCN_CHECK(GCN_LAUNCHED_ST("count_kernel"));
        GCN_CHECK(GCN_CUDA_ST(cub::DeviceScan::InclusiveSum(NULL, scan_bytes, in_ptr + 1,
                                                            in_ptr + 1, n, cs->stream)));
        GCN_CHECK(gcn_mem_alloc(ctx, &scan_tmp, scan_bytes));
        GCN_CHECK(GCN_CUDA_ST(cub::DeviceScan::InclusiveSum(scan_tmp, scan_bytes, in_ptr + 1,
                                                            in_ptr + 1, n, cs->stream)));
        GCN_CHECK(GCN_CUDA_ST(cub::DeviceScan::InclusiveSum(scan_tmp, scan_bytes, out_ptr + 1,
                                                            out_ptr + 1, n, cs->stream)));
        GCN_CHECK(GCN_CUDA_ST(cudaMemcpyAsync(&n_in, in_ptr + n, sizeof n_in,
                                              cudaMemcpyDeviceToHost, cs->stream)));
        GCN_CHECK(GCN_CUDA_ST(cudaStreamSynchronize(cs->stream)));
    }
    GCN_CHECK(part_new(ctx, a, n_in, in_ptr, intra));
    in_ptr = NULL;
    GCN_CHECK(part_new(ctx, a, a->nnz - n_in, out_ptr, inter));
    out_ptr = NULL;
    if (n > 0) {
        deal_kernel<<<blocks, GCN_THREADS, 0, cs->stream>>>(
            a->row_ptr, a->col_idx, a->values, part_ptr, lv->n_parts, n, (*intra)->row_ptr,
            (*intra)->col_idx, (*intra)->values, (*inter)->row_ptr, (*inter)->col_idx,
            (*inter)->values);
        GCN_CHECK(GCN_LAUNCHED_ST("deal_kernel"));
    }
cleanup:
    if (st != GCN_OK) {
        gcn_csr_free(intra);
        gcn_csr_free(inter);
    }
    gcn_mem_release(ctx, in_ptr, ptr_bytes);
    gcn_mem_release(ctx, out_ptr, ptr_bytes);
    gcn_mem_release(ctx, part_ptr, parts_bytes);
    gcn_mem_release(ctx, scan_tmp, scan_bytes);
    return st;
}
