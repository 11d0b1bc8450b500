/* gcn_ctx: the device, memory, random streams, autograd tape and last error
 * of one computation.  Everything that allocates takes a context; there is
 * no global state, so independent contexts may live in one process. */
#ifndef GCN_CTX_H
#define GCN_CTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gcn_ctx gcn_ctx;

typedef enum gcn_device {
    GCN_DEVICE_AUTO = 0, /* CUDA when a usable GPU exists, else CPU */
    GCN_DEVICE_CPU,
    GCN_DEVICE_CUDA
} gcn_device;

typedef enum gcn_log_level {
    GCN_LOG_ERROR = 0,
    GCN_LOG_WARN,
    GCN_LOG_INFO,
    GCN_LOG_DEBUG
} gcn_log_level;

/* Receives every message the library logs at or below the chosen level.
 * The library itself never writes to stdout or stderr. */
typedef void (*gcn_log_fn)(gcn_log_level level, const char *msg, void *user);

/* Called with true before the library creates a temporary file that it
 * renames into place (a dataset cache, a reordering, a checkpoint, an
 * export folder) and with false once it is in place or removed, on the
 * thread that writes it.  A program that exits from a signal handler holds
 * that exit in between, so that no temporary file is left behind. */
typedef void (*gcn_temp_fn)(bool writing, void *user);

#define GCN_MAX_THREADS 1024

typedef struct gcn_ctx_opts {
    size_t size; /* sizeof in the caller's build, set by gcn_ctx_default_opts */
    gcn_device device;     /* GCN_DEVICE_AUTO by default */
    int device_index;      /* CUDA ordinal; ignored on the CPU */
    uint64_t seed;         /* root of every random stream */
    bool tf32;             /* allow TF32 tensor-core matmuls on the GPU */
    gcn_log_level log_level;
    gcn_log_fn log_fn;     /* NULL: messages are dropped */
    void *log_user;
    int threads;           /* threads of the CPU backend (OpenMP and OpenBLAS), at most
                            * GCN_MAX_THREADS; 0, the default: the CPUs the process may
                            * use (its affinity mask, capped by its cgroup's CPU quota) */
    gcn_temp_fn temp_fn;   /* NULL: not called */
    void *temp_user;
} gcn_ctx_opts;

/* Defaults: AUTO device, index 0, seed 0, FP32, WARN level, no log sink,
 * threads 0 (as many as the process may use). */
GCN_API gcn_ctx_opts gcn_ctx_default_opts(void);

/* Creates a context.  opts may be NULL for the defaults.  On failure *ctx is
 * NULL; the reason cannot be kept on a context that does not exist, so it is
 * only in the status.  Free with gcn_ctx_free. */
GCN_API gcn_status gcn_ctx_create(gcn_ctx **ctx, const gcn_ctx_opts *opts);

/* Frees the context, its tape, random state and device memory pool.
 * Tensors and matrices created on it must be freed first.  Accepts NULL and
 * sets *ctx to NULL. */
GCN_API void gcn_ctx_free(gcn_ctx **ctx);

/* A device as configurations and command lines name it: "auto", "cpu",
 * "cuda" or "cuda:N" (N >= 0; plain "cuda" is index 0).  GCN_ERR_INVALID_ARG
 * for anything else. */
GCN_API gcn_status gcn_device_parse(const char *spec, gcn_device *device, int *index);

/* The device the context actually runs on (never GCN_DEVICE_AUTO). */
GCN_API gcn_device gcn_ctx_device(const gcn_ctx *ctx);

/* The CUDA stream (a cudaStream_t) every operation of a CUDA context is
 * queued on, so a program can order its own kernels with the library's;
 * NULL on the CPU.  Owned by the context: do not destroy it. */
GCN_API void *gcn_ctx_stream(const gcn_ctx *ctx);
GCN_API const char *gcn_device_name(gcn_device d);

/* The message of the last failure on this context: the failing call or the
 * bad input, with file:line.  Empty string when nothing failed yet.
 * Valid until the next failing call on the context. */
GCN_API const char *gcn_last_error(const gcn_ctx *ctx);

/* Memory handed out through the context (device memory on the GPU, heap on
 * the CPU).  device_allocs counts calls to the underlying allocator
 * (cudaMalloc or malloc): with the caching pool it stops growing once a
 * training loop reaches its steady state. */
typedef struct gcn_memory_stats {
    size_t in_use;          /* bytes held by live tensors and plans */
    size_t peak;            /* high-water mark of in_use */
    size_t reserved;        /* bytes the pool holds from the allocator */
    uint64_t device_allocs; /* underlying allocations so far */
    uint64_t device_frees;  /* underlying frees so far */
} gcn_memory_stats;

GCN_API void gcn_ctx_memory_stats(const gcn_ctx *ctx, gcn_memory_stats *stats);
GCN_API void gcn_ctx_reset_peak(gcn_ctx *ctx);

/* The threads the context's CPU work runs on (opts.threads, or the CPUs
 * the process may use).  Results do not depend on it beyond float
 * rounding, and for a given count are the same from run to run. */
GCN_API int gcn_ctx_threads(const gcn_ctx *ctx);

/* Labels the work queued from now on as model layer `layer` (1, 2, ...;
 * 0, the default, for none; a negative value is taken as 0) and returns the
 * label it replaces.  An op recorded for backward keeps the label it was
 * recorded under, and gcn_backward computes its gradients under it.  The
 * communicator counts its traffic by it (gcn_comm_get_layer_stats);
 * gcn_model_forward labels its blocks 1 to n.  Accepts NULL (returns 0). */
GCN_API int gcn_ctx_set_layer(gcn_ctx *ctx, int layer);

/* Which node of a graph of n_total nodes each row of the context's node
 * tensors is: a tensor of n_local rows is then taken as the rows ids[0],
 * ids[1], ... of the graph's [n_total, f] tensor, and dropout on it draws
 * for row r the mask a tensor of the graph in its original order draws for
 * node ids[r].  So training on a reordered graph, or on one rank's nodes of
 * several (comm.h), uses the original graph's masks.  ids (host memory,
 * distinct, each in [0, n_total)) are copied; n_local 0 clears them.  Set
 * them with an empty tape (gcn_backward's operations draw by them). */
GCN_API gcn_status gcn_ctx_set_node_ids(gcn_ctx *ctx, const int32_t *ids, int64_t n_local,
                                        int64_t n_total);

/* Whether matmuls may use TF32 tensor cores (opts.tf32 on a GPU context). */
GCN_API bool gcn_ctx_tf32(const gcn_ctx *ctx);

/* Blocks until all work queued on the context's device has finished. */
GCN_API gcn_status gcn_ctx_sync(gcn_ctx *ctx);

/* Number of usable CUDA devices; 0 when the driver or device is absent. */
GCN_API int gcn_cuda_device_count(void);

/* ---- GPU time by category of work (core/prof.c) ---------------------------
 * Between gcn_ctx_profile_begin and gcn_ctx_profile_end the library records a
 * CUDA event on the context's stream whenever the category of the work it
 * queues changes; the device time from one event to the next counts for the
 * first one's category.  Work queued inside another category's region counts
 * for the outer region (the selector's copies inside an SpMM are SpMM), and
 * the device's idle time (waiting for the host) for the category current at
 * the time, mostly ELEMENTWISE.  Off by default, when each place that could
 * record costs one branch on a context flag and no event. */
typedef enum gcn_prof_category {
    GCN_PROF_GEMM = 0,    /* dense matmuls (cuBLAS) */
    GCN_PROF_SPMM,        /* sparse aggregation: the chosen kernel, the selector's
                           * profiling runs, plans built on first use */
    GCN_PROF_ELEMENTWISE, /* the rest of the work: activations, normalisation,
                           * dropout, losses, bias and gradient sums, idle time */
    GCN_PROF_OPTIMIZER,   /* optimiser updates */
    GCN_PROF_OTHER,       /* host<->device transfers, device copies and fills */
    GCN_PROF_N_CATEGORIES
} gcn_prof_category;

/* "gemm", "spmm", "elementwise", "optimizer", "other"; "?" out of range. */
GCN_API const char *gcn_prof_category_name(gcn_prof_category c);

typedef struct gcn_prof_times {
    double ms[GCN_PROF_N_CATEGORIES]; /* device time by category */
    double span_ms;                   /* first event to last, as one interval: the
                                       * categories sum to it up to rounding */
    int events;                       /* events recorded, the first and last included */
} gcn_prof_times;

/* Starts attributing device time.  GCN_ERR_UNSUPPORTED on a CPU context,
 * GCN_ERR_STATE when already profiling.  Events come from a pool on the
 * context that later profiles reuse. */
GCN_API gcn_status gcn_ctx_profile_begin(gcn_ctx *ctx);

/* Stops, waits for the last event and fills *times.  GCN_ERR_STATE when not
 * profiling; a failure to record an event on the way (recording then
 * stopped, the work itself went on) is reported here. */
GCN_API gcn_status gcn_ctx_profile_end(gcn_ctx *ctx, gcn_prof_times *times);

#ifdef __cplusplus
}
#endif
#endif
