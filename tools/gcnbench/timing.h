/* Benchmark support (tools/gcnbench/): CUDA-event timing of any operation
 * queued on the context's stream, of SpMM kernel runs in particular, and a
 * description of the context's GPU.  C API, no CUDA types. */
#ifndef GCN_SPMM_BENCH_H
#define GCN_SPMM_BENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/spmm/spmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One run of a benchmarked operation: queues its work on ctx's stream. */
typedef gcn_status (*gcn_bench_fn)(gcn_ctx *ctx, void *user);

/* Runs fn(ctx, user) `warmup` times, then `reps` times with a CUDA event
 * pair around each run; ms[i] receives run i's milliseconds.  With
 * flush_l2, a buffer of twice the L2 size is overwritten before each timed
 * run, outside its events.  CUDA contexts only; the buffer is the only
 * memory it allocates. */
gcn_status gcn_bench_time(gcn_ctx *ctx, gcn_bench_fn fn, void *user, int warmup, int reps,
                          bool flush_l2, float *ms);

/* The context's GPU: name (NUL-terminated, truncated to size), number of
 * multiprocessors and L2 bytes. */
gcn_status gcn_spmm_device_info(gcn_ctx *ctx, char *name, size_t size, int *sms,
                                size_t *l2_bytes);

#ifdef __cplusplus
}
#endif
#endif
