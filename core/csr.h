/* gcn_csr: a sparse matrix in compressed sparse row form on one device,
 * the only graph type the core knows.  Indices are int32 (up to 2^31 - 1
 * non-zeros); row_ptr has n_rows + 1 entries. */
#ifndef GCN_CSR_H
#define GCN_CSR_H

#include <stdbool.h>
#include <stdint.h>

#include "ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gcn_csr gcn_csr;

/* Its shape, stored entries and the device its arrays live on. */
GCN_API int32_t gcn_csr_rows(const gcn_csr *a);
GCN_API int32_t gcn_csr_cols(const gcn_csr *a);
GCN_API int32_t gcn_csr_nnz(const gcn_csr *a);
GCN_API gcn_device gcn_csr_device(const gcn_csr *a);

/* The arrays themselves, on the matrix's device (what a user SpMM kernel
 * reads): row_ptr [rows + 1], col_idx [nnz], values [nnz].  Borrowed, valid
 * until the matrix is freed; the library never changes them. */
GCN_API const int32_t *gcn_csr_row_ptr(const gcn_csr *a);
GCN_API const int32_t *gcn_csr_col_idx(const gcn_csr *a);
GCN_API const float *gcn_csr_values(const gcn_csr *a);

/* A new matrix on the context's device holding a copy of host arrays.
 * Validates row_ptr (starts at 0, non-decreasing, ends at nnz) and column
 * indices (in [0, n_cols)); duplicates and unsorted columns are allowed.
 * values may be NULL, meaning all ones.  The transpose used by backward is
 * built here, once, and kept unless the matrix equals its transpose.
 * Caller frees with gcn_csr_free. */
GCN_API gcn_status gcn_csr_create(gcn_ctx *ctx, gcn_csr **out, int32_t n_rows, int32_t n_cols,
                                  int32_t nnz, const int32_t *row_ptr, const int32_t *col_idx,
                                  const float *values);

/* Copies the three arrays back to host buffers of the right sizes
 * (any may be NULL to skip it). */
GCN_API gcn_status gcn_csr_to_host(gcn_ctx *ctx, const gcn_csr *a, int32_t *row_ptr,
                                   int32_t *col_idx, float *values);

/* The stored transpose (a itself when a is symmetric).  Borrowed. */
GCN_API const gcn_csr *gcn_csr_transpose(const gcn_csr *a);
GCN_API bool gcn_csr_is_symmetric(const gcn_csr *a);

/* Whether every row lists its columns in strictly increasing order (sorted,
 * no duplicates).  Kernels that assume this form (cusparse) refuse other
 * matrices through their `supports` test. */
GCN_API bool gcn_csr_is_sorted(const gcn_csr *a);

/* Frees the matrix, its transpose and every kernel plan built for it.
 * Accepts NULL and sets *a to NULL. */
GCN_API void gcn_csr_free(gcn_csr **a);

#ifdef __cplusplus
}
#endif
#endif
