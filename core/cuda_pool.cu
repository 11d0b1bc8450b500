/* The caching device allocator behind a CUDA context: size classes over
 * cudaMalloc with a free list per class, and the statistics in ctx->mem
 * (reserved bytes, cudaMalloc and cudaFree calls; gcn_mem_alloc keeps in_use). */
#include <stdlib.h>

#include "cuda_impl.h"
#include "pool_classes.h"

/* A released block stays on its class's free list for the next request of
 * the class instead of going back to the driver.  One context uses one
 * stream, so a block released while kernels that use it are queued can be
 * handed out again at once: its next user is queued behind them.  Size
 * classes: pool_classes.h. */

/* The free blocks of one class; cap never falls below the number of blocks
 * of the class in existence, so a release never needs host memory. */
typedef struct bin {
    void **free;
    int64_t n_free, cap, n_blocks;
} bin;

/* A block obtained from cudaMalloc and its size class. */
typedef struct block {
    void *ptr;
    int cls;
} block;

/* The blocks a captured CUDA graph works in.  Its kernels keep writing the
 * addresses they were captured with on every replay, so a block released
 * while the graph is captured must not serve anyone else until the graph
 * is gone: it goes on this list, which serves later requests of the same
 * capture and goes back to the shared lists with gcn_pool_held_free. */
struct gcn_pool_held {
    block *blocks;
    int64_t n, cap; /* cap >= the pool's n_all during capture: a release never allocates */
};

struct gcn_pool {
    bin bins[GCN_POOL_CLASSES];
    block *all; /* every block currently obtained from cudaMalloc */
    int64_t n_all, cap_all;
    gcn_pool_held *held; /* while a graph is captured */
};

gcn_status gcn_pool_create(gcn_ctx *ctx, gcn_pool **pool)
{
    *pool = (gcn_pool *)calloc(1, sizeof **pool);
    if (!*pool)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for the device memory pool");
    return GCN_OK;
}

static bool grow(void **arr, int64_t *cap, int64_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    int64_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *p = realloc(*arr, (size_t)c * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = c;
    return true;
}

/* Removes a block from the registry of cudaMalloc blocks (searching from
 * the newest, which is where gcn_pool_destroy takes them). */
static void forget(gcn_pool *pool, void *p)
{
    for (int64_t i = pool->n_all - 1; i >= 0; i--) {
        if (pool->all[i].ptr == p) {
            pool->all[i] = pool->all[--pool->n_all];
            return;
        }
    }
}

static void free_block(gcn_ctx *ctx, gcn_pool *pool, void *p, int cls)
{
    cudaFree(p);
    cudaGetLastError();
    forget(pool, p);
    pool->bins[cls].n_blocks--;
    ctx->mem.reserved -= gcn_pool_class_bytes(cls);
    ctx->mem.device_frees++;
}

/* Gives every cached block back to the driver (after cudaMalloc ran out). */
static void trim(gcn_ctx *ctx, gcn_pool *pool)
{
    for (int c = 0; c < GCN_POOL_CLASSES; c++) {
        bin *b = &pool->bins[c];
        while (b->n_free > 0)
            free_block(ctx, pool, b->free[--b->n_free], c);
    }
}

/* Takes a block of class cls from the capture's own list (the newest). */
static bool take_held(gcn_pool_held *h, int cls, void **p)
{
    for (int64_t i = h->n - 1; i >= 0; i--) {
        if (h->blocks[i].cls == cls) {
            *p = h->blocks[i].ptr;
            h->blocks[i] = h->blocks[--h->n];
            return true;
        }
    }
    return false;
}

static double gib(size_t bytes)
{
    return (double)bytes / (double)(1ull << 30);
}

/* cudaMalloc of `rounded` bytes ran out even after the cached blocks went
 * back: one line with the request, the device's free memory (after that
 * trim) and what this context holds. */
static gcn_status out_of_memory(gcn_ctx *ctx, size_t rounded)
{
    size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
        cudaGetLastError();
        return GCN_ERROR(ctx, GCN_ERR_NOMEM,
                         "out of GPU memory: cudaMalloc of %zu bytes (%.2f GiB) failed on CUDA "
                         "device %d (its free memory unknown); this context holds %.2f GiB",
                         rounded, gib(rounded), ctx->device_index, gib(ctx->mem.reserved));
    }
    return GCN_ERROR(ctx, GCN_ERR_NOMEM,
                     "out of GPU memory: cudaMalloc of %zu bytes (%.2f GiB) failed with %zu "
                     "bytes (%.2f GiB) free of %.2f GiB on CUDA device %d; this context holds "
                     "%.2f GiB",
                     rounded, gib(rounded), free_bytes, gib(free_bytes), gib(total),
                     ctx->device_index, gib(ctx->mem.reserved));
}

gcn_status gcn_pool_alloc(gcn_ctx *ctx, gcn_pool *pool, void **p, size_t bytes)
{
    size_t rounded;
    int cls = gcn_pool_size_class(bytes, &rounded);
    bin *b = &pool->bins[cls];
    if (pool->held && take_held(pool->held, cls, p))
        return GCN_OK;
    if (b->n_free > 0) {
        *p = b->free[--b->n_free];
        return GCN_OK;
    }
    /* Host bookkeeping first, so a failure leaves nothing half done. */
    if (!grow((void **)&b->free, &b->cap, b->n_blocks + 1, sizeof *b->free) ||
        !grow((void **)&pool->all, &pool->cap_all, pool->n_all + 1, sizeof *pool->all) ||
        (pool->held && !grow((void **)&pool->held->blocks, &pool->held->cap, pool->n_all + 1,
                             sizeof *pool->held->blocks)))
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for the pool's free lists");
    cudaError_t err = cudaMalloc(p, rounded);
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        trim(ctx, pool);
        err = cudaMalloc(p, rounded);
    }
    if (err != cudaSuccess) {
        *p = NULL;
        cudaGetLastError();
        if (err == cudaErrorMemoryAllocation)
            return out_of_memory(ctx, rounded);
        return GCN_ERROR(ctx, GCN_ERR_CUDA,
                         "cudaMalloc(%zu bytes, for a request of %zu) failed: %s (%s); "
                         "%zu bytes in use, %zu reserved",
                         rounded, bytes, cudaGetErrorName(err), cudaGetErrorString(err),
                         ctx->mem.in_use, ctx->mem.reserved);
    }
    pool->all[pool->n_all].ptr = *p;
    pool->all[pool->n_all].cls = cls;
    pool->n_all++;
    b->n_blocks++;
    ctx->mem.reserved += rounded;
    ctx->mem.device_allocs++;
    return GCN_OK;
}

void gcn_pool_release(gcn_ctx *ctx, gcn_pool *pool, void *p, size_t bytes)
{
    (void)ctx;
    if (!p)
        return;
    size_t rounded;
    int cls = gcn_pool_size_class(bytes, &rounded);
    if (pool->held) {
        pool->held->blocks[pool->held->n++] = (block){p, cls};
        return;
    }
    bin *b = &pool->bins[cls];
    b->free[b->n_free++] = p;
}

gcn_status gcn_pool_capture_begin(gcn_ctx *ctx, gcn_pool *pool)
{
    if (pool->held)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "the memory pool is already in a capture");
    gcn_pool_held *h = (gcn_pool_held *)calloc(1, sizeof *h);
    if (!h || !grow((void **)&h->blocks, &h->cap, pool->n_all + 1, sizeof *h->blocks)) {
        free(h);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for a captured graph's blocks");
    }
    pool->held = h;
    return GCN_OK;
}

gcn_pool_held *gcn_pool_capture_end(gcn_pool *pool)
{
    gcn_pool_held *h = pool->held;
    pool->held = NULL;
    return h;
}

void gcn_pool_held_free(gcn_pool *pool, gcn_pool_held **held)
{
    gcn_pool_held *h = held ? *held : NULL;
    if (!h)
        return;
    for (int64_t i = 0; i < h->n; i++) {
        bin *b = &pool->bins[h->blocks[i].cls];
        b->free[b->n_free++] = h->blocks[i].ptr;
    }
    free(h->blocks);
    free(h);
    *held = NULL;
}

void gcn_pool_destroy(gcn_ctx *ctx, gcn_pool **pool)
{
    gcn_pool *pl = pool ? *pool : NULL;
    if (!pl)
        return;
    while (pl->n_all > 0)
        free_block(ctx, pl, pl->all[pl->n_all - 1].ptr, pl->all[pl->n_all - 1].cls);
    for (int c = 0; c < GCN_POOL_CLASSES; c++)
        free(pl->bins[c].free);
    free(pl->all);
    free(pl);
    *pool = NULL;
}
