/* The communicator: N ranks, each one context driven by one thread of this
 * process, joined for collectives (all-reduce, all-to-all exchange, barrier)
 * over a transport that moves bytes in this process (LOCAL) or over NCCL. */
#ifndef GCN_COMM_H
#define GCN_COMM_H

#include <stdint.h>

#include "ctx.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gcn_comm_kind {
    GCN_COMM_LOCAL = 1, /* N ranks in this process on one device: bytes moved with memcpy
                         * (CPU) or device copies queued on each rank's stream (one GPU) */
    GCN_COMM_NCCL       /* one GPU per rank, NCCL loaded at run time */
} gcn_comm_kind;

/* Joins n contexts (ctxs[i] becomes rank i) into one communicator of the
 * given kind and attaches it to each of them; n == 1 is allowed (the
 * collectives are copies, and on NCCL still go through it).
 *  - LOCAL: every context on the same device (all CPU, or all CUDA with the
 *    same index), else GCN_ERR_DEVICE.
 *  - NCCL: NCCL is loaded first, with dlopen("libnccl.so.2") or the file
 *    the environment variable GCN_NCCL_LIBRARY names; when it cannot be,
 *    GCN_ERR_UNSUPPORTED (also in a build without CUDA).  Then every
 *    context must be on CUDA, each on its own device (GCN_ERR_DEVICE), and
 *    ncclCommInitAll connects them.
 * A context already in a communicator: GCN_ERR_STATE; one given twice, or
 * NULL: GCN_ERR_INVALID_ARG.  Errors are recorded on ctxs[0] (n < 1 is
 * GCN_ERR_INVALID_ARG with no message).  On failure nothing is attached.
 * The communicator lives until its last member context is freed
 * (gcn_ctx_free); freeing a member also stops the others' collectives as
 * gcn_comm_abort does ("rank R stopped: its context was freed"), so free
 * them once no rank calls collectives any more. */
GCN_API gcn_status gcn_comm_init(gcn_ctx *const *ctxs, int n, gcn_comm_kind kind);

GCN_API int gcn_ctx_rank(const gcn_ctx *ctx);                /* 0 without a communicator */
GCN_API int gcn_ctx_ranks(const gcn_ctx *ctx);               /* 1 without a communicator */
GCN_API gcn_comm_kind gcn_ctx_comm_kind(const gcn_ctx *ctx); /* 0 without one */

/* Collectives: every rank's thread calls the same sequence with matching
 * sizes (LOCAL checks the sizes and the sequence: GCN_ERR_SHAPE or
 * GCN_ERR_STATE on every rank, with the ranks named, and nothing moved).
 * Pointers are device memory of the calling context (host memory on a CPU
 * context).  On return the result is ready for any work queued afterwards
 * on the context's stream (NCCL queues on gcn_ctx_stream and does not wait;
 * LOCAL on CUDA synchronises the stream), and the send buffers may be
 * reused by later work on the stream.
 * A rank whose collective fails on its own (a bad argument, a CUDA or NCCL
 * error) stops the communicator as gcn_comm_abort does, so the others
 * return GCN_ERR_STATE instead of waiting for it. */

/* In-place sum over the ranks of buf [n]; every rank gets the same bits.
 * LOCAL adds rank 0's buffer, then rank 1's, ... in rank order, in float
 * (double for the f64 version). */
GCN_API gcn_status gcn_comm_allreduce(gcn_ctx *ctx, float *buf, int64_t n);
GCN_API gcn_status gcn_comm_allreduce_f64(gcn_ctx *ctx, double *buf, int64_t n);

/* Each rank sends send[send_off[p] .. send_off[p + 1]) to rank p and
 * receives rank p's block for it into recv[recv_off[p] .. recv_off[p + 1]).
 * send_off and recv_off are host arrays of ranks + 1 offsets in floats,
 * non-decreasing from 0; send and recv must not overlap.  What p sends to q
 * must be what q expects from p: LOCAL checks it (GCN_ERR_SHAPE naming both
 * ranks, on every rank); NCCL checks only the block a rank sends itself (a
 * failure of that rank's own, see above).  The block a rank sends itself is
 * copied locally; empty blocks move nothing (NCCL: one
 * ncclGroupStart/End around an ncclSend and ncclRecv per non-empty block). */
GCN_API gcn_status gcn_comm_alltoallv(gcn_ctx *ctx, const float *send, const int64_t *send_off,
                                      float *recv, const int64_t *recv_off);

/* gcn_comm_alltoallv in two halves, so that a rank can queue work that
 * does not read the received rows while they travel.  _begin checks and
 * queues the exchange as gcn_comm_alltoallv does; NCCL queues it on a
 * stream of the communicator's own, after the work queued on the
 * context's stream so far, so the work the rank queues next runs beside
 * it.  _end makes the context's stream wait for it: work queued after
 * _end may read recv and reuse send.  Between the two the rank calls no
 * other collective (GCN_ERR_STATE), and leaves send and recv alone.  The
 * LOCAL transport completes the exchange in _begin.  _end without a
 * _begin is GCN_ERR_STATE. */
GCN_API gcn_status gcn_comm_alltoallv_begin(gcn_ctx *ctx, const float *send,
                                            const int64_t *send_off, float *recv,
                                            const int64_t *recv_off);
GCN_API gcn_status gcn_comm_alltoallv_end(gcn_ctx *ctx);

/* Returns once every rank has entered it: a host barrier of the rank
 * threads, which does not wait for the work queued on their streams. */
GCN_API gcn_status gcn_comm_barrier(gcn_ctx *ctx);

/* Marks the communicator failed: a rank whose step failed calls it on its
 * own context, from its thread, so the others do not wait for it forever
 * (its collectives do it themselves when they fail on their own): every rank
 * waiting in or later entering a collective returns GCN_ERR_STATE with
 * "rank R stopped: <R's last error message>".  NCCL: ncclCommAbort on every
 * rank's communicator (a rank inside an NCCL call aborts its own as it
 * returns).  Idempotent: the first call's rank and message stay.  Accepts
 * NULL and a context without a communicator (no-op). */
GCN_API void gcn_comm_abort(gcn_ctx *ctx);

/* Traffic of this rank so far, by kind of collective, counting the calls
 * that succeeded: all-reduce counts the buffer's bytes once per call;
 * the exchange (alltoallv) the bytes of the blocks sent to other ranks,
 * not the block a rank sends itself.
 * The _ms fields are the time of the transfers, in milliseconds:
 *  - LOCAL: host wall time (monotonic clock) from the moment every rank
 *    has published its buffers (the rank's own earlier work on its stream
 *    finished, the wait for its peers over) until the rank's copies and
 *    adds are finished (its stream synchronised).  All-reduce: the sum of
 *    the ranks' buffers into new memory and its copy back into buf,
 *    without the wait between the two for the others to finish reading
 *    buf; exchange: the copies of the blocks the rank receives, its own
 *    included.  On one device this is a lower bound of the exchange's
 *    cost over a link: a device-local copy.
 *  - NCCL: device time between CUDA events recorded on the rank's stream
 *    around each collective (the copy of the rank's own block included):
 *    from when the stream reaches it, the rank's earlier work done, until
 *    it completes, so it includes the wait for a peer that reaches the
 *    same collective later.  The rank that arrives last waits least: the
 *    smallest time over the ranks is the closest to the transfer alone.
 *    The times are read when the stats are asked for, which waits for the
 *    collectives queued so far: ask from the rank's thread, or while it
 *    queues nothing (between epochs).  Collectives queued while the stream
 *    is being captured into a CUDA graph are not timed.
 * All zero without a communicator. */
typedef struct gcn_comm_stats {
    int64_t allreduce_calls, allreduce_bytes;
    int64_t exchange_calls, exchange_bytes;
    double allreduce_ms, exchange_ms;
} gcn_comm_stats;

GCN_API void gcn_comm_get_stats(const gcn_ctx *ctx, gcn_comm_stats *stats);

/* The layers gcn_comm_get_layer_stats tells apart. */
#define GCN_COMM_MAX_LAYERS 32

/* The part of gcn_comm_get_stats's traffic queued while the context's
 * layer label (gcn_ctx_set_layer) was `layer`: layer 0 holds what was
 * queued outside any layer (the gradient all-reduce, the evaluation
 * counts) and in layers GCN_COMM_MAX_LAYERS and up, so the stats of layers
 * 0 to GCN_COMM_MAX_LAYERS - 1 sum to gcn_comm_get_stats's.  All zero for
 * a layer out of that range or without a communicator. */
GCN_API void gcn_comm_get_layer_stats(const gcn_ctx *ctx, int layer, gcn_comm_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
