/* The CUDA side of a context: device selection, the stream, lazily created
 * cuBLAS/cuSPARSE handles bound to it, and the checked-call helpers that turn
 * library errors into a gcn_status with "call, message, file:line". */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"

/* ---- error reporting ------------------------------------------------------ */

gcn_status gcn_cuda_check(gcn_ctx *ctx, cudaError_t err, const char *call, const char *file,
                          int line)
{
    if (err == cudaSuccess)
        return GCN_OK;
    cudaGetLastError(); /* clear the non-sticky error so later calls start clean */
    gcn_status st = err == cudaErrorMemoryAllocation ? GCN_ERR_NOMEM : GCN_ERR_CUDA;
    return gcn_set_error(ctx, st, file, line, "%s failed: %s (%s)", call, cudaGetErrorName(err),
                         cudaGetErrorString(err));
}

gcn_status gcn_cublas_check(gcn_ctx *ctx, cublasStatus_t err, const char *call, const char *file,
                            int line)
{
    if (err == CUBLAS_STATUS_SUCCESS)
        return GCN_OK;
    gcn_status st = err == CUBLAS_STATUS_ALLOC_FAILED ? GCN_ERR_NOMEM : GCN_ERR_CUDA;
    return gcn_set_error(ctx, st, file, line, "%s failed: %s", call, cublasGetStatusString(err));
}

gcn_status gcn_cusparse_check(gcn_ctx *ctx, cusparseStatus_t err, const char *call,
                              const char *file, int line)
{
    if (err == CUSPARSE_STATUS_SUCCESS)
        return GCN_OK;
    gcn_status st = err == CUSPARSE_STATUS_ALLOC_FAILED ? GCN_ERR_NOMEM : GCN_ERR_CUDA;
    return gcn_set_error(ctx, st, file, line, "%s failed: %s (%s)", call,
                         cusparseGetErrorName(err), cusparseGetErrorString(err));
}

gcn_status gcn_cuda_launched(gcn_ctx *ctx, const char *kernel, const char *file, int line)
{
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess && ((gcn_cuda_state *)ctx->cuda)->sync_debug)
        err = cudaStreamSynchronize(((gcn_cuda_state *)ctx->cuda)->stream);
    return gcn_cuda_check(ctx, err, kernel, file, line);
}

/* ---- device and state ----------------------------------------------------- */

int gcn_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

gcn_status gcn_cuda_begin(gcn_ctx *ctx, gcn_cuda_state **cs)
{
    gcn_cuda_state *s = (gcn_cuda_state *)ctx->cuda;
    if (!s)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "CUDA backend used on a context without CUDA state");
    int cur = -1;
    GCN_CUDA(cudaGetDevice(&cur));
    if (cur != s->device)
        GCN_CUDA(cudaSetDevice(s->device));
    *cs = s;
    return GCN_OK;
}

gcn_status gcn_cuda_cublas(gcn_ctx *ctx, cublasHandle_t *handle)
{
    gcn_cuda_state *cs = (gcn_cuda_state *)ctx->cuda;
    if (!cs->cublas) {
        cublasHandle_t h = NULL;
        GCN_CUBLAS(cublasCreate(&h));
        gcn_status st = GCN_CUBLAS_ST(cublasSetStream(h, cs->stream));
        if (st != GCN_OK) {
            cublasDestroy(h);
            return st;
        }
        cs->cublas = h;
    }
    *handle = cs->cublas;
    return GCN_OK;
}

/* ---- cuSPARSE's start, in the background ------------------------------------ */

/* With lazy module loading (CUDA's default), the first cusparseSpMM of each
 * CSR algorithm loads that algorithm's kernels: 15-25 ms each on an H100,
 * which the selector's first cuSPARSE plan used to pay in the middle of
 * training.  A thread started with the context creates the handle and runs
 * one product of each algorithm on a small matrix on its own stream, while
 * the caller loads data and builds the model. */
enum { WARM_N = 512, WARM_DEG = 8, WARM_FEAT = 64 };

static void warm_products(cusparseHandle_t h, cudaStream_t s)
{
    static const cusparseSpMMAlg_t algs[] = {CUSPARSE_SPMM_ALG_DEFAULT, CUSPARSE_SPMM_CSR_ALG1,
                                              CUSPARSE_SPMM_CSR_ALG2};
    enum { NNZ = WARM_N * WARM_DEG, STRIDE = WARM_N / WARM_DEG };
    int32_t row_ptr[WARM_N + 1], col[NNZ];
    for (int i = 0; i <= WARM_N; i++)
        row_ptr[i] = i * WARM_DEG;
    for (int e = 0; e < NNZ; e++) /* row i: columns i % STRIDE + k STRIDE, ascending */
        col[e] = (e / WARM_DEG) % STRIDE + (e % WARM_DEG) * STRIDE;
    size_t dense = (size_t)WARM_N * WARM_FEAT * sizeof(float), buf = 0;
    size_t bytes = sizeof row_ptr + sizeof col + NNZ * sizeof(float) + 2 * dense;
    char *mem = NULL;
    cusparseSpMatDescr_t a = NULL;
    cusparseDnMatDescr_t x = NULL, y = NULL;
    void *work = NULL;
    const float one = 1.0f, zero = 0.0f;
    if (cudaMallocAsync((void **)&mem, bytes, s) != cudaSuccess)
        return;
    int32_t *d_row = (int32_t *)mem, *d_col = d_row + WARM_N + 1;
    float *d_val = (float *)(d_col + NNZ), *d_x = d_val + NNZ, *d_y = d_x + WARM_N * WARM_FEAT;
    bool ok = cudaMemcpyAsync(d_row, row_ptr, sizeof row_ptr, cudaMemcpyHostToDevice, s) == cudaSuccess &&
              cudaMemcpyAsync(d_col, col, sizeof col, cudaMemcpyHostToDevice, s) == cudaSuccess &&
              cudaMemsetAsync(d_val, 0, NNZ * sizeof(float) + 2 * dense, s) == cudaSuccess &&
              cusparseCreateCsr(&a, WARM_N, WARM_N, NNZ, d_row, d_col, d_val, CUSPARSE_INDEX_32I,
                                CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                CUDA_R_32F) == CUSPARSE_STATUS_SUCCESS &&
              cusparseCreateDnMat(&x, WARM_N, WARM_FEAT, WARM_FEAT, d_x, CUDA_R_32F,
                                  CUSPARSE_ORDER_ROW) == CUSPARSE_STATUS_SUCCESS &&
              cusparseCreateDnMat(&y, WARM_N, WARM_FEAT, WARM_FEAT, d_y, CUDA_R_32F,
                                  CUSPARSE_ORDER_ROW) == CUSPARSE_STATUS_SUCCESS;
    for (size_t i = 0; ok && i < sizeof algs / sizeof algs[0]; i++) {
        size_t need = 0;
        if (cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                    CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, x, &zero, y,
                                    CUDA_R_32F, algs[i], &need) != CUSPARSE_STATUS_SUCCESS)
            continue;
        if (need > buf) {
            if (work)
                cudaFreeAsync(work, s);
            work = NULL;
            buf = 0;
            if (cudaMallocAsync(&work, need, s) != cudaSuccess)
                break;
            buf = need;
        }
        cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a,
                     x, &zero, y, CUDA_R_32F, algs[i], work);
    }
    if (a)
        cusparseDestroySpMat(a);
    if (x)
        cusparseDestroyDnMat(x);
    if (y)
        cusparseDestroyDnMat(y);
    if (work)
        cudaFreeAsync(work, s);
    cudaFreeAsync(mem, s);
}

static void *warm_main(void *arg)
{
    gcn_cuda_state *cs = (gcn_cuda_state *)arg;
    cudaStream_t s = NULL;
    cusparseHandle_t h = NULL;
    if (cudaSetDevice(cs->device) == cudaSuccess &&
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess &&
        cusparseCreate(&h) == CUSPARSE_STATUS_SUCCESS &&
        cusparseSetStream(h, s) == CUSPARSE_STATUS_SUCCESS)
        warm_products(h, s);
    if (s) {
        cudaStreamSynchronize(s);
        if (h)
            cusparseSetStream(h, NULL);
        cudaStreamDestroy(s);
    }
    cudaGetLastError(); /* this thread's: the context's own calls start clean */
    cs->warm_handle = h;
    return NULL;
}

/* Starts the thread with every signal blocked, so that the program's
 * signals keep going to its own threads. */
static bool warm_start(gcn_cuda_state *cs)
{
    sigset_t all, old;
    sigfillset(&all);
    if (pthread_sigmask(SIG_SETMASK, &all, &old) != 0)
        return false;
    bool started = pthread_create(&cs->warm_thread, NULL, warm_main, cs) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return started;
}

/* The thread's handle (NULL if it failed), once it has finished. */
static cusparseHandle_t warm_join(gcn_cuda_state *cs)
{
    if (!cs->warming)
        return NULL;
    pthread_join(cs->warm_thread, NULL);
    cs->warming = false;
    cusparseHandle_t h = cs->warm_handle;
    cs->warm_handle = NULL;
    return h;
}

gcn_status gcn_cuda_cusparse(gcn_ctx *ctx, cusparseHandle_t *handle)
{
    gcn_cuda_state *cs = (gcn_cuda_state *)ctx->cuda;
    if (!cs->cusparse) {
        cusparseHandle_t h = warm_join(cs);
        if (!h)
            GCN_CUSPARSE(cusparseCreate(&h));
        gcn_status st = GCN_CUSPARSE_ST(cusparseSetStream(h, cs->stream));
        if (st != GCN_OK) {
            cusparseDestroy(h);
            return st;
        }
        cs->cusparse = h;
    }
    *handle = cs->cusparse;
    return GCN_OK;
}

gcn_status gcn_cuda_init(gcn_ctx *ctx, int device_index)
{
    gcn_cuda_state *cs = (gcn_cuda_state *)calloc(1, sizeof *cs);
    if (!cs)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for the CUDA state");
    cs->device = device_index;
    ctx->cuda = cs;
    const char *dbg = getenv("GCN_SYNC_DEBUG");
    cs->sync_debug = dbg && *dbg && strcmp(dbg, "0") != 0;
    GCN_CUDA(cudaSetDevice(device_index));
    GCN_CUDA(cudaStreamCreateWithFlags(&cs->stream, cudaStreamNonBlocking));
    GCN_TRY(gcn_pool_create(ctx, &cs->pool));
    /* the dropout offset's device copy, outside the pool: the context's own */
    GCN_CUDA(cudaMalloc((void **)&ctx->rng_dev, sizeof *ctx->rng_dev));
    GCN_CUDA(cudaMemset(ctx->rng_dev, 0, sizeof *ctx->rng_dev));
    /* zeroed once on the context's stream, so before any kernel; every
     * kernel that counts on them leaves them zero, graph replays included */
    size_t counter_bytes = GCN_TILE_COUNTERS * sizeof *cs->tile_counters;
    GCN_CUDA(cudaMalloc((void **)&cs->tile_counters, counter_bytes));
    GCN_CUDA(cudaMemsetAsync(cs->tile_counters, 0, counter_bytes, cs->stream));
    cudaDeviceProp prop;
    GCN_CUDA(cudaGetDeviceProperties(&prop, device_index));
    cs->warming = warm_start(cs);
    gcn_log(ctx, GCN_LOG_INFO, "CUDA device %d: %s (sm_%d%d, %.1f GiB), matmuls in %s%s",
            device_index, prop.name, prop.major, prop.minor,
            (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), ctx->tf32 ? "TF32" : "FP32",
            cs->sync_debug ? ", GCN_SYNC_DEBUG on" : "");
    return GCN_OK;
}

gcn_status gcn_cuda_check_bf16(gcn_ctx *ctx)
{
    gcn_cuda_state *cs = NULL;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    cudaDeviceProp prop;
    GCN_CUDA(cudaGetDeviceProperties(&prop, cs->device));
    if (prop.major >= 8)
        return GCN_OK;
    return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "CUDA device %d (%s, compute capability %d.%d) "
                     "has no bf16 arithmetic: precision bf16 needs 8.0 or later", cs->device,
                     prop.name, prop.major, prop.minor);
}

void *gcn_cuda_stream(const gcn_ctx *ctx)
{
    return ((const gcn_cuda_state *)ctx->cuda)->stream;
}

void gcn_cuda_release(gcn_ctx *ctx)
{
    gcn_cuda_state *cs = ctx ? (gcn_cuda_state *)ctx->cuda : NULL;
    if (!cs)
        return;
    cusparseHandle_t warm = warm_join(cs);
    if (warm)
        cusparseDestroy(warm);
    if (cudaSetDevice(cs->device) == cudaSuccess && cs->stream)
        cudaStreamSynchronize(cs->stream);
    if (cs->cusparse)
        cusparseDestroy(cs->cusparse);
    if (cs->cublas)
        cublasDestroy(cs->cublas);
    for (int i = 0; i < cs->prof_n_events; i++)
        cudaEventDestroy(cs->prof_events[i]);
    free(cs->prof_events);
    for (int i = 0; i < GCN_STAMPS; i++)
        if (cs->stamps[i])
            cudaEventDestroy(cs->stamps[i]);
    gcn_pool_destroy(ctx, &cs->pool);
    if (ctx->rng_dev)
        cudaFree(ctx->rng_dev);
    ctx->rng_dev = NULL;
    if (cs->tile_counters)
        cudaFree(cs->tile_counters);
    if (cs->stream)
        cudaStreamDestroy(cs->stream);
    cudaGetLastError();
    free(cs);
    ctx->cuda = NULL;
}

/* ---- stamps ------------------------------------------------------------------ */

gcn_status gcn_cuda_stamp(gcn_ctx *ctx, int slot)
{
    gcn_cuda_state *cs = NULL;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (!cs->stamps[slot])
        GCN_CUDA(cudaEventCreate(&cs->stamps[slot]));
    /* in a capture, an external record becomes a node that records on replay */
    GCN_CUDA(cudaEventRecordWithFlags(cs->stamps[slot], cs->stream,
                                      cs->capturing ? cudaEventRecordExternal : 0));
    return GCN_OK;
}

gcn_status gcn_cuda_stamp_ms(gcn_ctx *ctx, int from, int to, double *ms)
{
    gcn_cuda_state *cs = NULL;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (!cs->stamps[from] || !cs->stamps[to])
        return GCN_ERROR(ctx, GCN_ERR_STATE, "stamp %d or %d was never recorded", from, to);
    float t = 0.0f;
    GCN_CUDA(cudaEventSynchronize(cs->stamps[to]));
    GCN_CUDA(cudaEventElapsedTime(&t, cs->stamps[from], cs->stamps[to]));
    *ms = t;
    return GCN_OK;
}
