/* Sparse-dense products Y = A X: the differentiable op, and the registry of
 * kernel implementations it dispatches to. */
#ifndef GCN_SPMM_H
#define GCN_SPMM_H

#include <stdbool.h>

#include "../core/csr.h"
#include "../core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One SpMM implementation.  `plan` does all preprocessing for a matrix and
 * feature width (built once, cached on the matrix, freed with it); `run`
 * computes y = A x (or y += A x when accumulate) with x [n_cols, feat] and
 * y [n_rows, feat] row-major on the implementation's device, and allocates
 * nothing. */
typedef struct gcn_spmm_impl {
    const char *name;
    gcn_device device;
    bool deterministic; /* same bits on every run (no float atomics) */
    bool (*supports)(const gcn_csr *a, int feat);
    gcn_status (*plan)(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan);
    gcn_status (*run)(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x, float *y,
                      int feat, bool accumulate);
    void (*free_plan)(void *plan);
} gcn_spmm_impl;

/* The static table of every implementation built into the library, in
 * order of preference.  Tests and benchmarks loop over it. */
const gcn_spmm_impl *const *gcn_spmm_registry(int *n_impls);

/* The implementation with this name, or NULL. */
const gcn_spmm_impl *gcn_spmm_find(const char *name);

/* Chooses the kernel gcn_spmm uses on this context: a registry name for the
 * context's device, or "auto" (the default: the preferred kernel that
 * supports each call).  Unknown names and kernels for another device are
 * GCN_ERR_NOT_FOUND. */
gcn_status gcn_spmm_set_kernel(gcn_ctx *ctx, const char *name);
const char *gcn_spmm_kernel(const gcn_ctx *ctx);

/* Runs one implementation directly, not differentiable: y (+)= A x with
 * raw device pointers.  The plan is built on first use and cached. */
gcn_status gcn_spmm_run(gcn_ctx *ctx, const gcn_spmm_impl *impl, const gcn_csr *a,
                        const float *x, float *y, int feat, bool accumulate);

/* The differentiable op: a [n, m] CSR, x [m, f] -> out [n, f].  Backward
 * gives dX = A^T dY through the matrix's stored transpose. */
gcn_status gcn_spmm(gcn_ctx *ctx, const gcn_csr *a, gcn_tensor *x, gcn_tensor **out);

/* GIN's aggregation with its self term in one op: a square [n, n], x [n, f]
 * -> out = A x + alpha x.  One output tensor where A x, alpha x and their
 * sum would be three (all kept for backward); dX = A^T dY + alpha dY. */
gcn_status gcn_spmm_self(gcn_ctx *ctx, const gcn_csr *a, gcn_tensor *x, float alpha,
                         gcn_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
