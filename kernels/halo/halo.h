/* Halo exchange for multi-rank training.  A rank holds a block of rows of a
 * partitioned matrix; the columns it does not own are its halo
 * (gcn_csr_set_halo).  The products here fetch the halo rows from the
 * ranks that own them and multiply the block; gcn_spmm calls them. */
#ifndef GCN_SPMM_HALO_H
#define GCN_SPMM_HALO_H

#include "core/internal.h"

typedef struct gcn_halo gcn_halo;

/* y = (A_own + alpha I) x + A_halo x_halo, x [n_local, f], y [n_local, f]
 * (overwritten): the halo rows x_halo are fetched from their owners while
 * the first product runs. */
gcn_status gcn_halo_spmm(gcn_ctx *ctx, const gcn_csr *a, const gcn_tensor *x, float alpha,
                         float *y);

/* The reverse: dx (+)= (A_own + alpha I)^T dy, plus, for each row this
 * rank sent, the gradients the ranks that received it computed for it
 * (A_halo^T dy, sent back to their owners while the first product runs).
 * acc adds into dx instead of overwriting it. */
gcn_status gcn_halo_spmm_grad(gcn_ctx *ctx, const gcn_csr *a, const gcn_tensor *dy,
                              float alpha, float *dx, bool acc);

/* The block's parts, A_own and then each chunk's part of A_halo, as far
 * as max into parts; returns their number (gcn_spmm_sites lists their
 * call sites). */
int gcn_halo_parts(const gcn_csr *a, const gcn_csr **parts, int max);

/* One product y (+)= A x with the context's kernel choice: a forced kernel
 * or the matrix's call site of dtype (counted as SpMM time when
 * profiling); x and y of dtype.  Defined in kernels/spmm/spmm.c. */
gcn_status gcn_spmm_apply(gcn_ctx *ctx, const gcn_csr *a, gcn_dtype dtype, const void *x,
                          void *y, int feat, bool accumulate);

/* The chunks a block of n_local rows that sends n_send rows and receives
 * n_halo asks for: 1 until those outnumber half its rows, then enough that a
 * chunk's rows stay below about half of them, at most GCN_HALO_MAX_CHUNKS.
 * The ranks must agree: take the most any rank asks for (the trainer
 * does). */
int gcn_halo_chunks_for(int64_t n_local, int64_t n_send, int64_t n_halo);

/* Whether the rows (and in backward their gradients) travel as bf16,
 * halving the exchange: what is sent is rounded to bf16 and what arrives
 * widened to fp32 before its product (a no-op on NULL).  Off by default. */
void gcn_halo_set_wire(gcn_halo *h, bool bf16);

/* The halo of a rank's block (gcn_csr_set_halo), or NULL. */
gcn_halo *gcn_halo_of(const gcn_csr *a);

void gcn_halo_free(gcn_halo *h);

#endif
