/* The CPU backend's memory: a caching allocator like the GPU's
 * (cuda_pool.cu), size classes over aligned_alloc with a free list per
 * class, so that once a training loop has run a step, its later steps take
 * every buffer from the lists and call no malloc, and their pages are
 * already mapped; steps on batches of varying size take blocks sized for
 * the largest batch (gcn_mem_batch_rows). */
#include <stdlib.h>
#include <string.h>

#include "asan.h"
#include "ops/cpu.h"
#include "pool_classes.h"

/* Two sets of free lists, a head for each class: the blocks of batches'
 * requests (gcn_mem_batch_rows) and the others', which do not mix, so
 * that what a batch's step leaves allocated (the parameters' gradients)
 * never holds a block the evaluation between steps needs.  A free block
 * holds the next one's address in its first bytes, so releasing needs no
 * memory; each block follows a header naming its list.  Under
 * AddressSanitizer a free block, and every header, is poisoned (asan.h). */
enum { N_LISTS = 2 * GCN_POOL_CLASSES, BATCH = GCN_POOL_CLASSES };

struct gcn_cpu_pool {
    void *free[N_LISTS];    /* list l holds blocks of class l % GCN_POOL_CLASSES */
    int64_t rows, max_rows; /* gcn_mem_batch_rows's; rows 0: no batch */
};

enum { HEADER = 64 }; /* bytes before a block: its list, and the alignment kept */

static size_t list_bytes(int l)
{
    return gcn_pool_class_bytes(l % GCN_POOL_CLASSES);
}

static int block_list(void *p)
{
    int64_t l; /* a whole shadow granule of ASan's */
    GCN_UNPOISON((char *)p - HEADER, sizeof l);
    memcpy(&l, (char *)p - HEADER, sizeof l);
    GCN_POISON((char *)p - HEADER, sizeof l);
    return (int)l;
}

/* Returns every free block to the system. */
static void trim(gcn_ctx *ctx)
{
    for (int l = 0; ctx->cpu_pool && l < N_LISTS; l++)
        while (ctx->cpu_pool->free[l]) {
            void *b = ctx->cpu_pool->free[l];
            GCN_UNPOISON(b, list_bytes(l));
            memcpy(&ctx->cpu_pool->free[l], b, sizeof b);
            GCN_UNPOISON((char *)b - HEADER, HEADER);
            free((char *)b - HEADER);
            ctx->mem.device_frees++;
            ctx->mem.reserved -= list_bytes(l);
        }
}

static gcn_status make_pool(gcn_ctx *ctx)
{
    if (!ctx->cpu_pool && !(ctx->cpu_pool = calloc(1, sizeof *ctx->cpu_pool)))
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for the memory pool");
    return GCN_OK;
}

/* A new block on list l for a request of `bytes`. */
static gcn_status new_block(gcn_ctx *ctx, int l, size_t bytes, void **p)
{
    size_t rounded = list_bytes(l);
    char *b = aligned_alloc(64, HEADER + rounded);
    if (!b) {
        trim(ctx);
        b = aligned_alloc(64, HEADER + rounded);
    }
    if (!b)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory allocating %zu bytes", bytes);
    int64_t list = l;
    memcpy(b, &list, sizeof list);
    GCN_POISON(b, HEADER);
    *p = b + HEADER;
    ctx->mem.device_allocs++;
    ctx->mem.reserved += rounded;
    return GCN_OK;
}

gcn_status gcn_cpu_alloc(gcn_ctx *ctx, void **p, size_t bytes)
{
    GCN_TRY(make_pool(ctx));
    struct gcn_cpu_pool *pool = ctx->cpu_pool;
    size_t rounded, want = bytes;
    int c = gcn_pool_size_class(bytes, &rounded), base = 0, top = c;
    if (pool->rows > 0) { /* a batch's: the smallest free batch block that fits, or a
                           * new one for the request at the largest batch (a row-sized
                           * one grows with the rows, any other less) */
        base = BATCH;
        top = GCN_POOL_CLASSES - 1;
        if (bytes <= SIZE_MAX / (size_t)pool->max_rows)
            want = (bytes * (size_t)pool->max_rows + (size_t)pool->rows - 1) / (size_t)pool->rows;
    }
    for (int k = c; k <= top; k++)
        if (pool->free[base + k]) {
            *p = pool->free[base + k];
            GCN_UNPOISON(*p, gcn_pool_class_bytes(k));
            memcpy(&pool->free[base + k], *p, sizeof *p);
            return GCN_OK;
        }
    return new_block(ctx, base + gcn_pool_size_class(want, &rounded), bytes, p);
}

void gcn_cpu_release(gcn_ctx *ctx, void *p, size_t bytes)
{
    (void)bytes; /* the header names the block's list */
    int l = block_list(p);
    memcpy(p, &ctx->cpu_pool->free[l], sizeof p);
    ctx->cpu_pool->free[l] = p;
    GCN_POISON(p, list_bytes(l));
}

gcn_status gcn_mem_batch_rows(gcn_ctx *ctx, int64_t rows, int64_t max_rows)
{
    GCN_ARG(ctx, rows >= 0 && (rows == 0 || max_rows >= rows));
    if (ctx->device != GCN_DEVICE_CPU)
        return GCN_OK;
    GCN_TRY(make_pool(ctx));
    ctx->cpu_pool->rows = rows;
    ctx->cpu_pool->max_rows = rows > 0 ? max_rows : 0;
    return GCN_OK;
}

void gcn_cpu_pool_free(gcn_ctx *ctx)
{
    trim(ctx);
    free(ctx->cpu_pool);
    ctx->cpu_pool = NULL;
}
