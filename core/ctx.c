/* Context lifetime, device selection and memory accounting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm_impl.h"
#include "cuda.h"
#include "internal.h"
#include "ops/cpu.h"
#include "parallel.h"
#include "prof.h"

gcn_ctx_opts gcn_ctx_default_opts(void)
{
    gcn_ctx_opts o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.device = GCN_DEVICE_AUTO;
    o.log_level = GCN_LOG_WARN;
    return o;
}

void gcn_ctx_temp(gcn_ctx *ctx, bool on)
{
    if (ctx && ctx->temp_fn)
        ctx->temp_fn(on, ctx->temp_user);
}

const char *gcn_device_name(gcn_device d)
{
    switch (d) {
    case GCN_DEVICE_AUTO: return "auto";
    case GCN_DEVICE_CPU: return "cpu";
    case GCN_DEVICE_CUDA: return "cuda";
    }
    return "unknown";
}

gcn_status gcn_device_parse(const char *spec, gcn_device *device, int *index)
{
    int idx = 0, end = 0;
    if (!spec || !device || !index)
        return GCN_ERR_INVALID_ARG;
    if (!strcmp(spec, "auto"))
        *device = GCN_DEVICE_AUTO;
    else if (!strcmp(spec, "cpu"))
        *device = GCN_DEVICE_CPU;
    else if (!strcmp(spec, "cuda") ||
             (sscanf(spec, "cuda:%d%n", &idx, &end) == 1 && spec[end] == '\0' && idx >= 0))
        *device = GCN_DEVICE_CUDA;
    else
        return GCN_ERR_INVALID_ARG;
    *index = idx;
    return GCN_OK;
}

/* Resolves AUTO and checks that a requested GPU exists. */
static gcn_status choose_device(gcn_ctx *ctx, const gcn_ctx_opts *o)
{
    if (o->device == GCN_DEVICE_CPU) {
        ctx->device = GCN_DEVICE_CPU;
        return GCN_OK;
    }
    int n = gcn_cuda_device_count();
    if (n == 0) {
        if (o->device == GCN_DEVICE_CUDA)
            return GCN_ERROR(ctx, GCN_ERR_DEVICE, "device cuda requested but no CUDA device is usable");
        gcn_log(ctx, GCN_LOG_INFO, "no usable CUDA device (cudaGetDeviceCount failed or found "
                                   "none); running on the CPU backend");
        ctx->device = GCN_DEVICE_CPU;
        return GCN_OK;
    }
    if (o->device_index < 0 || o->device_index >= n)
        return GCN_ERROR(ctx, GCN_ERR_DEVICE, "CUDA device %d requested but only %d present",
                         o->device_index, n);
    ctx->device = GCN_DEVICE_CUDA;
    ctx->device_index = o->device_index;
    return GCN_OK;
}

gcn_status gcn_ctx_create(gcn_ctx **out, const gcn_ctx_opts *opts)
{
    if (!out)
        return GCN_ERR_INVALID_ARG;
    *out = NULL;
    gcn_ctx_opts o = gcn_ctx_default_opts();
    if (opts && gcn_struct_import(NULL, "gcn_ctx_opts", &o, &o, sizeof o, opts) != GCN_OK)
        return GCN_ERR_INVALID_ARG;
    if (o.device != GCN_DEVICE_AUTO && o.device != GCN_DEVICE_CPU && o.device != GCN_DEVICE_CUDA)
        return GCN_ERR_INVALID_ARG;
    if (o.threads < 0 || o.threads > GCN_MAX_THREADS)
        return GCN_ERR_INVALID_ARG;
    gcn_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return GCN_ERR_NOMEM;
    ctx->log_level = o.log_level;
    ctx->log_fn = o.log_fn;
    ctx->log_user = o.log_user;
    ctx->temp_fn = o.temp_fn;
    ctx->temp_user = o.temp_user;
    ctx->threads = o.threads > 0 ? o.threads : gcn_cpu_count();
    gcn_rng_seed(ctx, o.seed);
    ctx->grad_enabled = true;
    strcpy(ctx->spmm_kernel, "auto");
    gcn_status st = choose_device(ctx, &o);
    if (st == GCN_OK && ctx->device == GCN_DEVICE_CUDA) {
        ctx->tf32 = o.tf32;
        ctx->be = &gcn_backend_cuda;
        st = gcn_cuda_init(ctx, ctx->device_index);
    } else {
        ctx->be = &gcn_backend_cpu;
        ctx->rng_dev = &ctx->rng_dev_cpu;
    }
    if (st != GCN_OK) {
        gcn_ctx_free(&ctx);
        return st;
    }
    *out = ctx;
    return GCN_OK;
}

void gcn_ctx_free(gcn_ctx **pctx)
{
    if (!pctx || !*pctx)
        return;
    gcn_ctx *ctx = *pctx;
    gcn_comm_detach(ctx);
    gcn_tape_free(ctx);
    gcn_ctx_clear_node_ids(ctx);
    if (ctx->mem.in_use != 0)
        gcn_log(ctx, GCN_LOG_WARN, "context freed with %zu bytes still held by live objects",
                ctx->mem.in_use);
    gcn_prof_free(ctx);
    gcn_cpu_scratch_free(ctx);
    gcn_cpu_pool_free(ctx);
    for (int i = 0; i < ctx->n_spmm_user; i++)
        free(ctx->spmm_user[i]);
    free(ctx->spmm_user);
    if (ctx->device == GCN_DEVICE_CUDA)
        gcn_cuda_release(ctx);
    gcn_ctx_free_headers(ctx);
    free(ctx);
    *pctx = NULL;
}

gcn_device gcn_ctx_device(const gcn_ctx *ctx)
{
    return ctx ? ctx->device : GCN_DEVICE_CPU;
}

void *gcn_ctx_stream(const gcn_ctx *ctx)
{
    return ctx && ctx->device == GCN_DEVICE_CUDA ? gcn_cuda_stream(ctx) : NULL;
}

int gcn_ctx_set_layer(gcn_ctx *ctx, int layer)
{
    if (!ctx)
        return 0;
    int prev = ctx->layer;
    ctx->layer = layer > 0 ? layer : 0;
    return prev;
}

int gcn_ctx_threads(const gcn_ctx *ctx)
{
    return ctx ? ctx->threads : 1;
}

bool gcn_ctx_tf32(const gcn_ctx *ctx)
{
    return ctx && ctx->tf32;
}

gcn_status gcn_ctx_check_bf16(gcn_ctx *ctx)
{
    return ctx->device == GCN_DEVICE_CUDA ? gcn_cuda_check_bf16(ctx) : GCN_OK;
}

gcn_status gcn_ctx_sync(gcn_ctx *ctx)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    return ctx->be->sync(ctx);
}

void gcn_ctx_memory_stats(const gcn_ctx *ctx, gcn_memory_stats *stats)
{
    if (ctx && stats)
        *stats = ctx->mem;
}

void gcn_ctx_reset_peak(gcn_ctx *ctx)
{
    if (ctx)
        ctx->mem.peak = ctx->mem.in_use;
}

gcn_status gcn_mem_alloc(gcn_ctx *ctx, void **p, size_t bytes)
{
    *p = NULL;
    if (bytes == 0)
        return GCN_OK;
    GCN_TRY(ctx->be->alloc(ctx, p, bytes));
    ctx->mem.in_use += bytes;
    if (ctx->mem.in_use > ctx->mem.peak)
        ctx->mem.peak = ctx->mem.in_use;
    return GCN_OK;
}

void gcn_mem_release(gcn_ctx *ctx, void *p, size_t bytes)
{
    if (!p)
        return;
    ctx->be->release(ctx, p, bytes);
    ctx->mem.in_use -= bytes;
}

gcn_status gcn_ctx_stamp(gcn_ctx *ctx, int slot)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, slot >= 0 && slot < GCN_STAMPS);
    if (ctx->device == GCN_DEVICE_CUDA)
        return gcn_cuda_stamp(ctx, slot);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ctx->stamp[slot] = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
    return GCN_OK;
}

gcn_status gcn_ctx_stamp_ms(gcn_ctx *ctx, int from, int to, double *ms)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, ms && from >= 0 && from < GCN_STAMPS && to >= 0 && to < GCN_STAMPS);
    if (ctx->device == GCN_DEVICE_CUDA)
        return gcn_cuda_stamp_ms(ctx, from, to, ms);
    *ms = ctx->stamp[to] - ctx->stamp[from];
    return GCN_OK;
}
