/* CUDA-side internals shared by the .cu files: the per-context state behind
 * ctx->cuda, the checked-call macros, launch helpers and the declarations of
 * the backend functions spread over several .cu files.  CUDA C++ only. */
#ifndef GCN_CUDA_IMPL_H
#define GCN_CUDA_IMPL_H

#include <pthread.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include "cuda.h"
#include "internal.h"

typedef struct gcn_pool gcn_pool;

/* Everything a CUDA context owns; ctx->cuda points at one of these. */
typedef struct gcn_cuda_state {
    int device;
    cudaStream_t stream;       /* every kernel, copy and library call goes here */
    cublasHandle_t cublas;     /* NULL until the first matmul */
    cusparseHandle_t cusparse; /* NULL until the first cuSPARSE call */
    gcn_pool *pool;
    bool sync_debug;           /* GCN_SYNC_DEBUG=1: synchronise after every launch */
    cudaEvent_t *prof_events;  /* the profiler's pool (prof_cuda.cu), reused by every profile */
    int prof_n_events;
    cudaEvent_t stamps[GCN_STAMPS]; /* gcn_ctx_stamp's events, created on first use */
    bool capturing;            /* between gcn_cuda_capture_begin and _end */
    unsigned *tile_counters;   /* [GCN_TILE_COUNTERS] on the device (ops/cols.cuh) */
    /* cuSPARSE's start, in a thread from the context's creation until the
     * first cuSPARSE call joins it (gcn_cuda_cusparse) */
    pthread_t warm_thread;
    bool warming;
    cusparseHandle_t warm_handle; /* the thread's handle, NULL when it failed */
} gcn_cuda_state;

/* The one-launch column reduction's counters (ops/cols.cuh): blocks done
 * per column tile, zero between kernels.  1,024 tiles are 32 K columns of
 * one float, or 128 K in float4s; wider matrices take two launches. */
#define GCN_TILE_COUNTERS 1024

/* ---- checked calls ------------------------------------------------------ */

/* GCN_OK on success; otherwise records "call failed: library message
 * (file:line)" on the context and returns GCN_ERR_CUDA (GCN_ERR_NOMEM for
 * allocation failures). */
gcn_status gcn_cuda_check(gcn_ctx *ctx, cudaError_t err, const char *call, const char *file,
                          int line);
gcn_status gcn_cublas_check(gcn_ctx *ctx, cublasStatus_t err, const char *call,
                            const char *file, int line);
gcn_status gcn_cusparse_check(gcn_ctx *ctx, cusparseStatus_t err, const char *call,
                              const char *file, int line);

/* Status of a call, for GCN_CHECK in functions with a cleanup label. */
#define GCN_CUDA_ST(call) gcn_cuda_check(ctx, (call), #call, __FILE__, __LINE__)
#define GCN_CUBLAS_ST(call) gcn_cublas_check(ctx, (call), #call, __FILE__, __LINE__)
#define GCN_CUSPARSE_ST(call) gcn_cusparse_check(ctx, (call), #call, __FILE__, __LINE__)

/* Return the failing status from the enclosing function (uses `ctx`). */
#define GCN_CUDA(call) GCN_TRY(GCN_CUDA_ST(call))
#define GCN_CUBLAS(call) GCN_TRY(GCN_CUBLAS_ST(call))
#define GCN_CUSPARSE(call) GCN_TRY(GCN_CUSPARSE_ST(call))

/* After a kernel launch: picks up launch errors, and with GCN_SYNC_DEBUG
 * waits for the kernel so an asynchronous fault is reported at its line. */
gcn_status gcn_cuda_launched(gcn_ctx *ctx, const char *kernel, const char *file, int line);
#define GCN_LAUNCHED(kernel) GCN_TRY(gcn_cuda_launched(ctx, kernel, __FILE__, __LINE__))
#define GCN_LAUNCHED_ST(kernel) gcn_cuda_launched(ctx, kernel, __FILE__, __LINE__)

/* ---- state ---------------------------------------------------------------- */

/* The context's CUDA state, with the context's device made current on the
 * calling thread.  Every backend entry point starts with it. */
gcn_status gcn_cuda_begin(gcn_ctx *ctx, gcn_cuda_state **cs);

/* Library handles, created on first use and bound to the context's stream. */
gcn_status gcn_cuda_cublas(gcn_ctx *ctx, cublasHandle_t *handle);
gcn_status gcn_cuda_cusparse(gcn_ctx *ctx, cusparseHandle_t *handle);

/* ---- memory pool (cuda_pool.cu) --------------------------------------------- */

gcn_status gcn_pool_create(gcn_ctx *ctx, gcn_pool **pool);
/* A block of at least `bytes` (> 0), 256-byte aligned, from the free list of
 * its size class or, when that is empty, from cudaMalloc. */
gcn_status gcn_pool_alloc(gcn_ctx *ctx, gcn_pool *pool, void **p, size_t bytes);
/* Returns a block to its free list; `bytes` is the size it was asked for. */
void gcn_pool_release(gcn_ctx *ctx, gcn_pool *pool, void *p, size_t bytes);
/* cudaFree of every block, cached or still handed out.  Accepts NULL. */
void gcn_pool_destroy(gcn_ctx *ctx, gcn_pool **pool);

/* While a CUDA graph is captured, released blocks are kept for the graph
 * (they serve the capture's later requests first) instead of returning to
 * the shared lists; capture_end hands them over, and held_free returns them
 * once the graph is destroyed.  Accepts NULL. */
typedef struct gcn_pool_held gcn_pool_held;
gcn_status gcn_pool_capture_begin(gcn_ctx *ctx, gcn_pool *pool);
gcn_pool_held *gcn_pool_capture_end(gcn_pool *pool);
void gcn_pool_held_free(gcn_pool *pool, gcn_pool_held **held);

/* ---- launch geometry -------------------------------------------------------- */

#define GCN_THREADS 256       /* threads of a block, unless a kernel needs another shape */
#define GCN_WARP 32           /* threads of a warp */
#define GCN_MAX_THREADS 1024  /* the most threads a block may have */
#define GCN_MAX_BLOCKS 65536  /* gcn_blocks' cap */

/* Blocks for a grid-stride loop over n items, capped so huge n reuse threads. */
static inline unsigned gcn_blocks(int64_t n, int threads)
{
    int64_t b = (n + threads - 1) / threads;
    if (b < 1)
        b = 1;
    return (unsigned)(b < GCN_MAX_BLOCKS ? b : GCN_MAX_BLOCKS);
}

/* ---- backend functions, by file (types and semantics: gcn_be_*_fn in internal.h) */

/* ops/bf16_cuda.cu */
gcn_be_fill_bf16_fn gcn_cuda_fill_bf16;
gcn_be_to_bf16_fn gcn_cuda_to_bf16;
gcn_be_from_bf16_fn gcn_cuda_from_bf16;
gcn_be_gemm_bf16_fn gcn_cuda_gemm_bf16;
/* ops/cuda.cu: c[m,n] = alpha op(a) op(b) + beta c for row-major operands
 * of ab_type and c of c_type through cublasGemmEx, k > 0. */
gcn_status gcn_cuda_gemm_ex(gcn_ctx *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n,
                            int64_t k, float alpha, const void *a, int64_t lda, const void *b,
                            int64_t ldb, cudaDataType_t ab_type, float beta, void *c,
                            int64_t ldc, cudaDataType_t c_type, cublasComputeType_t compute);

/* ops/cols_cuda.cu */
gcn_be_col_sum_fn gcn_cuda_col_sum;
gcn_be_batchnorm_train_fn gcn_cuda_batchnorm_train;
gcn_be_batchnorm_eval_fn gcn_cuda_batchnorm_eval;
gcn_be_batchnorm_backward_fn gcn_cuda_batchnorm_backward;
gcn_be_batchnorm_eval_backward_fn gcn_cuda_batchnorm_eval_backward;

/* ops/nn_cuda.cu */
gcn_be_sum_fn gcn_cuda_sum;
gcn_be_dot_fn gcn_cuda_dot;
gcn_be_nll_fn gcn_cuda_nll;
gcn_be_count_correct_fn gcn_cuda_count_correct;
gcn_be_cross_entropy_fn gcn_cuda_cross_entropy;
gcn_be_cross_entropy_backward_fn gcn_cuda_cross_entropy_backward;
gcn_be_sum_backward_fn gcn_cuda_sum_backward;
gcn_be_log_softmax_fn gcn_cuda_log_softmax;
gcn_be_log_softmax_backward_fn gcn_cuda_log_softmax_backward;
gcn_be_nll_backward_fn gcn_cuda_nll_backward;
gcn_be_segment_pool_fn gcn_cuda_segment_pool;
gcn_be_segment_pool_backward_fn gcn_cuda_segment_pool_backward;
gcn_be_heads_fn gcn_cuda_heads;
gcn_be_heads_backward_fn gcn_cuda_heads_backward;

/* ops/epilogue_cuda.cu */
gcn_be_epilogue_stats_fn gcn_cuda_epilogue_stats;
gcn_be_epilogue_forward_fn gcn_cuda_epilogue_forward;
gcn_be_epilogue_backward_fn gcn_cuda_epilogue_backward;

#endif
