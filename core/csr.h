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

typedef struct gcn_csr_priv gcn_csr_priv;

typedef struct gcn_csr {
    int32_t n_rows, n_cols;
    int32_t nnz;
    int32_t *row_ptr;  /* [n_rows + 1], on `device` */
    int32_t *col_idx;  /* [nnz], on `device` */
    float *values;     /* [nnz], on `device` */
    gcn_device device; /* where the three arrays live */
    gcn_csr_priv *priv; /* transpose, kernel plans: owned, not for users */
} gcn_csr;

/* A new matrix on the context's device holding a copy of host arrays.
 * Validates row_ptr (starts at 0, non-decreasing, ends at nnz) and column
 * indices (in [0, n_cols)); duplicates and unsorted columns are allowed.
 * values may be NULL, meaning all ones.  The transpose used by backward is
 * built here, once, and kept unless the matrix equals its transpose.
 * Caller frees with gcn_csr_free. */
gcn_status gcn_csr_create(gcn_ctx *ctx, gcn_csr **out, int32_t n_rows, int32_t n_cols,
                          int32_t nnz, const int32_t *row_ptr, const int32_t *col_idx,
                          const float *values);

/* Copies the three arrays back to host buffers of the right sizes
 * (any may be NULL to skip it). */
gcn_status gcn_csr_to_host(gcn_ctx *ctx, const gcn_csr *a, int32_t *row_ptr, int32_t *col_idx,
                           float *values);

/* The stored transpose (a itself when a is symmetric).  Borrowed. */
const gcn_csr *gcn_csr_transpose(const gcn_csr *a);
bool gcn_csr_is_symmetric(const gcn_csr *a);

/* Whether every row lists its columns in strictly increasing order (sorted,
 * no duplicates).  Kernels that assume this form (cusparse) refuse other
 * matrices through their `supports` test. */
bool gcn_csr_is_sorted(const gcn_csr *a);

/* Frees the matrix, its transpose and every kernel plan built for it.
 * Accepts NULL and sets *a to NULL. */
void gcn_csr_free(gcn_csr **a);

#ifdef __cplusplus
}
#endif
#endif
