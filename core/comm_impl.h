/* The communicator's internals: the rank's state behind ctx->comm, the
 * table each transport fills (core/comm_local.c, core/comm_nccl.cu), and
 * what core/comm.c gives the transports: the rank threads' barrier and the
 * way a rank's own failure stops the others. */
#ifndef GCN_COMM_IMPL_H
#define GCN_COMM_IMPL_H

#include "comm.h"
#include "internal.h"
#include "job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the ranks share: reference count, barrier, stopped state (comm.c). */
typedef struct gcn_comm_group gcn_comm_group;

/* A transport's collectives run on the calling rank's thread with its
 * context (ctx->comm names the rank and the shared state), after comm.c
 * has checked the arguments.  They return a failure of the rank's own
 * through gcn_comm_fail, so the other ranks stop waiting; a failure every
 * rank sees alike (sizes that do not match) is returned plainly.
 * All-reduce and exchange set *ms to the milliseconds their transfer took
 * as gcn_comm_stats defines them, or leave the 0 comm.c puts there when
 * the transport measures it later (settle); comm.c adds it to the rank's
 * stats when the call succeeds. */
typedef struct gcn_comm_transport {
    /* In-place sum of buf [n], elements of elem bytes (4: float, 8: double). */
    gcn_status (*allreduce)(gcn_ctx *ctx, void *buf, int64_t n, size_t elem, double *ms);
    /* With async the transport may return with the exchange still to run
     * after the work queued so far on the context's stream (NCCL: on a
     * stream of its own); wait_exchange then orders the context's stream
     * after it. */
    gcn_status (*alltoallv)(gcn_ctx *ctx, const float *send, const int64_t *send_off,
                            float *recv, const int64_t *recv_off, bool async, double *ms);
    gcn_status (*wait_exchange)(gcn_ctx *ctx); /* NULL: exchanges complete at once */
    gcn_status (*barrier)(gcn_ctx *ctx);
    /* Aborts the rank's endpoint when the communicator is stopped; NULL
     * when the barrier's stopped flag is enough.  Runs once per rank, never
     * while that rank is inside a transport call. */
    void (*abort_rank)(void *state, int rank);
    /* Frees the shared state once no rank uses it. */
    void (*close)(void *state, int ranks);
    /* Adds the times of rank c->rank's collectives measured since the last
     * call to its stats (gcn_comm_add_time), waiting for them; NULL when
     * the transport times its collectives as they run. */
    void (*settle)(void *state, struct gcn_comm *c);
    /* The asynchronous error of rank's endpoint, NCCL's message in msg:
     * true when there is one; NULL when the transport has none.  Called
     * with the group's lock held, never after the rank's abort_rank. */
    bool (*async_error)(void *state, int rank, char *msg, size_t size);
} gcn_comm_transport;

/* One rank's view, owned by its context (ctx->comm). */
typedef struct gcn_comm {
    gcn_comm_group *group;
    gcn_comm_kind kind;
    int rank, ranks;
    const gcn_comm_transport *tp;
    void *state; /* the transport's, shared by the ranks */
    gcn_comm_stats stats;
    gcn_comm_stats layer_stats[GCN_COMM_MAX_LAYERS]; /* by gcn_ctx_set_layer's label */
    bool exchanging; /* between gcn_comm_alltoallv_begin and _end */
} gcn_comm;

/* Adds ms to the exchange (or all-reduce) time of the rank's stats and of
 * those of the layer the collective was queued in. */
void gcn_comm_add_time(gcn_comm *c, bool exchange, int layer, double ms);

/* Opens a transport over the contexts (rank i is ctxs[i], n >= 1, none in
 * a communicator yet): checks what the kind needs of their devices and
 * fills *tp and *state.  Errors go on ctxs[0]. */
typedef gcn_status gcn_comm_open_fn(gcn_ctx *const *ctxs, int n, const gcn_comm_transport **tp,
                                    void **state);
gcn_comm_open_fn gcn_comm_local_open; /* comm_local.c */
gcn_comm_open_fn gcn_comm_nccl_open;  /* comm_nccl.cu; cuda_none.c: GCN_ERR_UNSUPPORTED */

/* Opens the NCCL transport for ctx as rank `rank` of `ranks` processes
 * (ncclCommInitRank with id); the state holds that rank's endpoint only.
 * comm_nccl.cu; cuda_none.c: GCN_ERR_UNSUPPORTED. */
gcn_status gcn_comm_nccl_join(gcn_ctx *ctx, int rank, int ranks, const gcn_comm_id *id,
                              const gcn_comm_transport **tp, void **state);

/* GCN_OK when the contexts' devices suit the kind (LOCAL: one device;
 * NCCL: a distinct GPU each), else GCN_ERR_DEVICE on ctxs[0]. */
gcn_status gcn_comm_check_devices(gcn_ctx *const *ctxs, int n, gcn_comm_kind kind);

/* Returns once every rank has called it, or GCN_ERR_STATE ("rank R
 * stopped: ...") as soon as the communicator is stopped. */
gcn_status gcn_comm_wait(gcn_ctx *ctx);

/* For a failure st of the calling rank's own, its message on ctx: stops
 * the communicator with that message (as gcn_comm_abort) and returns st. */
gcn_status gcn_comm_fail(gcn_ctx *ctx, gcn_status st);

/* gcn_ctx_free's hook: drops the context's reference to its communicator
 * (the last one closes the transport) and stops the other ranks'
 * collectives.  Accepts a context without one. */
void gcn_comm_detach(gcn_ctx *ctx);

/* y[i] += x[i] for i < n, doubles on a CUDA context's stream
 * (comm_local_cuda.cu; cuda_none.c: GCN_ERR_UNSUPPORTED). */
gcn_status gcn_comm_cuda_add_f64(gcn_ctx *ctx, int64_t n, const double *x, double *y);

#ifdef __cplusplus
}
#endif
#endif
