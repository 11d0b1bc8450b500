/* The CPU backend's memory: a caching allocator like the GPU's
 * (cuda_pool.cu), size classes over aligned_alloc with a free list per
 * class, so that once a training loop has run a step, its later steps take
 * every buffer from the lists and call no malloc, and their pages are
 * already mapped. */
#include <stdlib.h>
#include <string.h>

#include "ops_cpu.h"
#include "pool_classes.h"

/* Under AddressSanitizer a free block is poisoned, so a use after release
 * is still reported although the memory is not given back. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GCN_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(GCN_ASAN)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* The head of each class's free list; a free block holds the next one's
 * address in its first bytes, so releasing needs no memory. */
struct gcn_cpu_pool {
    void *free[GCN_POOL_CLASSES];
};

/* Returns every free block to the system. */
static void trim(gcn_ctx *ctx)
{
    for (int c = 0; ctx->cpu_pool && c < GCN_POOL_CLASSES; c++)
        while (ctx->cpu_pool->free[c]) {
            void *b = ctx->cpu_pool->free[c];
            UNPOISON(b, gcn_pool_class_bytes(c));
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
        UNPOISON(*p, rounded);
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
    POISON(p, rounded);
}

void gcn_cpu_pool_free(gcn_ctx *ctx)
{
    trim(ctx);
    free(ctx->cpu_pool);
    ctx->cpu_pool = NULL;
}
