/* Collectives over host memory, for what a run keeps on the host
 * (checkpoints, predictions, the selector's choices): the bytes are staged
 * through the context's device memory and moved by gcn_comm_alltoallv and
 * gcn_comm_allreduce_f64, so they work over any transport. */
#ifndef GCN_COMM_HOST_H
#define GCN_COMM_HOST_H

#include "comm.h"

/* Root's buf[bytes] to every rank; bytes must be the same on every rank. */
gcn_status gcn_comm_broadcast_host(gcn_ctx *ctx, void *buf, int64_t bytes, int root);

/* Every rank's send[bytes] to root: on root *recv is a new buffer (caller
 * frees) of the ranks' bytes one after another in rank order, and
 * lens[ranks] (on every rank) each rank's count; *recv is NULL elsewhere. */
gcn_status gcn_comm_gather_host(gcn_ctx *ctx, const void *send, int64_t bytes, int root,
                                void **recv, int64_t *lens);

/* The reverse: root's send holds lens[r] bytes for each rank r, one after
 * another (lens and send are read on root only); each rank's *recv is a
 * new buffer of its *recv_len bytes (caller frees; NULL when 0). */
gcn_status gcn_comm_scatter_host(gcn_ctx *ctx, const void *send, const int64_t *lens, int root,
                                 void **recv, int64_t *recv_len);

#endif
