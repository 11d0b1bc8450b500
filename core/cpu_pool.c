/* The CPU backend's memory: a caching allocator like the GPU's
 * (cuda_pool.cu), size classes over aligned_alloc with a free list per
 * class, so that once a training loop has run a step, its later steps take
 * every buffer from the lists and call no malloc, and their pages are
 * already mapped. */
#include <stdlib.h>
#include <string.h>

#include "asan.h"
#include "ops_cpu.h"
#include "pool_classes.h"

/* The head of each class's free list; a free block holds the next one's
 * address in its first bytes, so releasing needs no memory.  Under
 * AddressSanitizer a free block is poisoned (asan.h). */
struct gcn_cpu_pool {
    void *free[GCN_POOL_CLASSES];
};

/* Returns every free block to the system. */
static void trim(gcn_ctx *ctx)
{
    for (int c = 0; ctx->cpu_pool && c < GCN_POOL_CLASSES; c++)
        while (ctx->cpu_pool->free[c]) {
            void *b = ctx->cpu_pool->free[c];
            GCN_UNPOISON(b, gcn_pool_class_bytes(c));
            memcpy(&ctx->cpu_pool->free[c], b, sizeof b);
            free(b);
            ctx->mem.device_frees++;
            ctx->mem.reserved -= gcn_pool_class_bytes(c);
        }
}

gcn_status gcn_cpu_alloc(gcn_ctx *ctx, void **p, size_t bytes)
{
    size_t rounded;
    int c = gcn_pool_size_class(bytes, &rounded);
    if (!ctx->cpu_pool && !(ctx->cpu_pool = calloc(1, sizeof *ctx->cpu_pool)))
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for the memory pool");
    if (ctx->cpu_pool->free[c]) {
        *p = ctx->cpu_pool->free[c];
        GCN_UNPOISON(*p, rounded);
        memcpy(&ctx->cpu_pool->free[c], *p, sizeof *p);
        return GCN_OK;
    }
    *p = aligned_alloc(64, rounded);
    if (!*p) {
        trim(ctx);
        *p = aligned_alloc(64, rounded);
    }
    if (!*p)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory allocating %zu bytes", bytes);
    ctx->mem.device_allocs++;
    ctx->mem.reserved += rounded;
    return GCN_OK;
}

void gcn_cpu_release(gcn_ctx *ctx, void *p, size_t bytes)
{
    size_t rounded;
    int c = gcn_pool_size_class(bytes, &rounded);
    memcpy(p, &ctx->cpu_pool->free[c], sizeof p);
    ctx->cpu_pool->free[c] = p;
    GCN_POISON(p, rounded);
}

void gcn_cpu_pool_free(gcn_ctx *ctx)
{
    trim(ctx);
    free(ctx->cpu_pool);
    ctx->cpu_pool = NULL;
}
