/* The halo of one rank's block of a partitioned matrix (gcn_csr_set_halo):
 * what spmm.c's op calls to fetch the halo rows before a product and to
 * return their gradients after the transposed one. */
#ifndef GCN_SPMM_HALO_H
#define GCN_SPMM_HALO_H

#include "../core/internal.h"

typedef struct gcn_halo gcn_halo;

/* x [n_local, f] -> a new [n_local + n_halo, f] tensor: x's rows, then the
 * halo rows received from their owners. */
gcn_status gcn_halo_gather(gcn_ctx *ctx, const gcn_csr *a, const gcn_tensor *x,
                           gcn_tensor **ext);

/* The reverse: dext [n_local + n_halo, f] holds A^T dY; its first n_local
 * rows go into dx, and each halo row is sent to its owner, which adds it to
 * the row it sent.  acc adds into dx instead of overwriting it. */
gcn_status gcn_halo_scatter(gcn_ctx *ctx, const gcn_csr *a, const gcn_tensor *dext, float *dx,
                            bool acc);

void gcn_halo_free(gcn_halo *h);

#endif
