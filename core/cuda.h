/* Internal bridge between the C core and the CUDA backend: per-context
 * device state (device, stream, library handles, memory pool).  Only C types
 * here, so C files include it without the CUDA headers. */
#ifndef GCN_CUDA_BRIDGE_H
#define GCN_CUDA_BRIDGE_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Selects the device, creates the stream and the memory pool, and stores
 * them in ctx->cuda.  Library handles are created on first use. */
gcn_status gcn_cuda_init(gcn_ctx *ctx, int device_index);

/* The context's stream, as a cudaStream_t. */
void *gcn_cuda_stream(const gcn_ctx *ctx);

/* GCN_ERR_UNSUPPORTED naming the device when it lacks bf16 arithmetic
 * (compute capability below 8.0). */
gcn_status gcn_cuda_check_bf16(gcn_ctx *ctx);

/* Releases everything gcn_cuda_init and later calls created. */
void gcn_cuda_release(gcn_ctx *ctx);

/* gcn_ctx_stamp and gcn_ctx_stamp_ms on a CUDA context. */
gcn_status gcn_cuda_stamp(gcn_ctx *ctx, int slot);
gcn_status gcn_cuda_stamp_ms(gcn_ctx *ctx, int from, int to, double *ms);

/* Capture of the work queued on the context's stream as a CUDA graph.
 * Between begin and end nothing runs: kernels, copies and event records are
 * recorded, and pool blocks released meanwhile are kept for the graph.  end
 * with keep instantiates the graph (*out); without keep, or when the capture
 * failed (a wait or another call that cannot be captured), it is dropped
 * and the error returned.  A graph's launch replays the captured work with
 * the captured arguments and addresses.  graph_free waits for the stream. */
typedef struct gcn_graph gcn_graph;
gcn_status gcn_cuda_capture_begin(gcn_ctx *ctx);
gcn_status gcn_cuda_capture_end(gcn_ctx *ctx, bool keep, gcn_graph **out);
gcn_status gcn_cuda_graph_launch(gcn_ctx *ctx, gcn_graph *g);
void gcn_cuda_graph_free(gcn_ctx *ctx, gcn_graph **g);

#ifdef __cplusplus
}
#endif
#endif
