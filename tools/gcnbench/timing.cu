/* CUDA-event timing of benchmarked operations (SpMM runs among them) and
 * the device description for benchmarks (see timing.h). */
#include <stdio.h>
#include <stdlib.h>

#include "timing.h"
#include "kernels/cuda/common.cuh"

/* Creates n events into ev (all NULL on entry). */
static gcn_status create_events(gcn_ctx *ctx, cudaEvent_t *ev, int n)
{
    for (int i = 0; i < n; i++)
        GCN_CUDA(cudaEventCreate(&ev[i]));
    return GCN_OK;
}

/* The timed runs, each preceded by the flush when one is given. */
static gcn_status timed_runs(gcn_ctx *ctx, cudaStream_t stream, gcn_bench_fn fn, void *user,
                             int reps, void *flush, size_t flush_bytes, cudaEvent_t *ev,
                             float *ms)
{
    for (int r = 0; r < reps; r++) {
        if (flush)
            GCN_CUDA(cudaMemsetAsync(flush, r & 0xff, flush_bytes, stream));
        GCN_CUDA(cudaEventRecord(ev[2 * r], stream));
        GCN_TRY(fn(ctx, user));
        GCN_CUDA(cudaEventRecord(ev[2 * r + 1], stream));
    }
    GCN_CUDA(cudaEventSynchronize(ev[2 * reps - 1]));
    for (int r = 0; r < reps; r++)
        GCN_CUDA(cudaEventElapsedTime(&ms[r], ev[2 * r], ev[2 * r + 1]));
    return GCN_OK;
}

gcn_status gcn_bench_time(gcn_ctx *ctx, gcn_bench_fn fn, void *user, int warmup, int reps,
                          bool flush_l2, float *ms)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, fn && ms && reps >= 1 && warmup >= 0);
    if (ctx->device != GCN_DEVICE_CUDA)
        return GCN_ERROR(ctx, GCN_ERR_DEVICE, "benchmark timing needs a CUDA context");
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    for (int i = 0; i < warmup; i++)
        GCN_TRY(fn(ctx, user));
    int sms;
    size_t l2 = 0, flush_bytes = 0;
    void *flush = NULL;
    gcn_status st = GCN_OK;
    cudaEvent_t *ev = (cudaEvent_t *)calloc((size_t)reps * 2, sizeof *ev);
    if (!ev)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for %d events", 2 * reps);
    if (flush_l2) {
        GCN_CHECK(gcn_spmm_device_limits(ctx, &sms, &l2));
        flush_bytes = 2 * l2;
        GCN_CHECK(gcn_mem_alloc(ctx, &flush, flush_bytes));
    }
    GCN_CHECK(create_events(ctx, ev, 2 * reps));
    GCN_CHECK(timed_runs(ctx, cs->stream, fn, user, reps, flush, flush_bytes, ev, ms));
cleanup:
    for (int i = 0; i < 2 * reps; i++)
        if (ev[i])
            cudaEventDestroy(ev[i]);
    free(ev);
    gcn_mem_release(ctx, flush, flush_bytes);
    return st;
}

gcn_status gcn_spmm_device_info(gcn_ctx *ctx, char *name, size_t size, int *sms,
                                size_t *l2_bytes)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, name && size > 0 && sms && l2_bytes);
    if (ctx->device != GCN_DEVICE_CUDA)
        return GCN_ERROR(ctx, GCN_ERR_DEVICE, "no GPU on a %s context",
                         gcn_device_name(ctx->device));
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    cudaDeviceProp prop;
    GCN_CUDA(cudaGetDeviceProperties(&prop, cs->device));
    snprintf(name, size, "%s", prop.name);
    return gcn_spmm_device_limits(ctx, sms, l2_bytes);
}
