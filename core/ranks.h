/* A group of ranks in one process: one context per rank, joined in one
 * communicator, and one thread per rank that runs the caller's function on
 * every rank at once. */
#ifndef GCN_RANKS_H
#define GCN_RANKS_H

#include "comm.h"
#include "ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GCN_MAX_RANKS 64

typedef struct gcn_ranks gcn_ranks;

/* n ranks (1 .. GCN_MAX_RANKS) joined by a communicator of the given kind.
 * Each rank's context is created from opts (NULL: the defaults) with
 *  - LOCAL: every rank on opts' device;
 *  - NCCL: rank i on CUDA device opts->device_index + i;
 *  - threads 0 (the default) shared out: each rank gets the CPUs the
 *    process may use divided by n (at least 1).
 * Errors are recorded on ctx, which is not part of the group.  Caller frees
 * with gcn_ranks_free. */
GCN_API gcn_status gcn_ranks_create(gcn_ctx *ctx, gcn_ranks **out, int n, gcn_comm_kind kind,
                                    const gcn_ctx_opts *opts);

GCN_API int gcn_ranks_count(const gcn_ranks *g);

/* Rank r's context (borrowed, owned by the group). */
GCN_API gcn_ctx *gcn_ranks_ctx(const gcn_ranks *g, int r);

/* What gcn_ranks_run runs on each rank. */
typedef gcn_status (*gcn_rank_fn)(gcn_ctx *ctx, int rank, void *user);

/* Runs fn(rank's context, rank, user) on every rank at once, rank 0 on the
 * calling thread and each other rank on the group's thread for it, and
 * returns when all have returned.  A rank whose fn fails aborts the
 * communicator (gcn_comm_abort), so the others return from their
 * collectives instead of waiting for it; the first rank to fail gives the
 * status and, on ctx, "rank R: its message".  After a failure the group's
 * communicator is stopped: later runs are GCN_ERR_STATE. */
GCN_API gcn_status gcn_ranks_run(gcn_ctx *ctx, gcn_ranks *g, gcn_rank_fn fn, void *user);

/* Sums the gradients of params[n] over the ranks of ctx's communicator,
 * in place, in one all-reduce of one buffer (a collective: every rank
 * calls it with its copies of the same parameters).  Parameters without a
 * gradient are skipped; every rank must have gradients for the same ones. */
GCN_API gcn_status gcn_comm_allreduce_grads(gcn_ctx *ctx, gcn_tensor *const *params, int n);

/* Stops the threads and frees the contexts.  Accepts NULL and sets *g to
 * NULL. */
GCN_API void gcn_ranks_free(gcn_ranks **g);

#ifdef __cplusplus
}
#endif
#endif
