/* Host-side draws from the context's Philox streams, and the parameter
 * initialisers built on them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "philox.h"

void gcn_philox4x32(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4])
{
    gcn_philox4x32_10(counter, key, out);
}

uint64_t gcn_rng_reserve(gcn_ctx *ctx, gcn_rng_stream stream, uint64_t words)
{
    uint64_t first = ctx->rng_offset[stream];
    ctx->rng_offset[stream] += (words + 3) / 4;
    return first;
}

gcn_draw_offset gcn_rng_reserve_dropout(gcn_ctx *ctx, uint64_t words)
{
    uint64_t first = gcn_rng_reserve(ctx, GCN_RNG_DROPOUT, words);
    return (gcn_draw_offset){.base = ctx->rng_dev, .rel = first - ctx->rng_dev_synced};
}

gcn_draw_offset gcn_rng_reserve_dropout_rows(gcn_ctx *ctx, int64_t rows, int64_t cols)
{
    if (!ctx->node_ids || rows != ctx->node_rows)
        return gcn_rng_reserve_dropout(ctx, (uint64_t)(rows * cols));
    gcn_draw_offset o = gcn_rng_reserve_dropout(ctx, (uint64_t)(ctx->node_total * cols));
    o.row_ids = ctx->node_ids;
    o.cols = cols;
    return o;
}

void gcn_ctx_clear_node_ids(gcn_ctx *ctx)
{
    gcn_mem_release(ctx, ctx->node_ids, (size_t)ctx->node_rows * sizeof *ctx->node_ids);
    ctx->node_ids = NULL;
    ctx->node_rows = ctx->node_total = 0;
}

gcn_status gcn_ctx_set_node_ids(gcn_ctx *ctx, const int32_t *ids, int64_t n_local,
                                int64_t n_total)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    if (ctx->tape_len > 0)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "set_node_ids: the tape holds %d operations whose "
                         "backward may still draw by the present ids", ctx->tape_len);
    GCN_ARG(ctx, n_local >= 0 && n_local <= n_total && n_total <= INT32_MAX);
    GCN_ARG(ctx, ids || n_local == 0);
    for (int64_t i = 0; i < n_local; i++)
        if (ids[i] < 0 || ids[i] >= n_total)
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "set_node_ids: ids[%lld] = %d is not a "
                             "node of %lld", (long long)i, ids[i], (long long)n_total);
    gcn_ctx_clear_node_ids(ctx);
    if (n_local == 0)
        return GCN_OK;
    size_t bytes = (size_t)n_local * sizeof *ctx->node_ids;
    int32_t *dev = NULL;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&dev, bytes));
    gcn_status st = ctx->be->upload(ctx, dev, ids, bytes);
    if (st != GCN_OK) {
        gcn_mem_release(ctx, dev, bytes);
        return st;
    }
    ctx->node_ids = dev;
    ctx->node_rows = n_local;
    ctx->node_total = n_total;
    return GCN_OK;
}

gcn_status gcn_rng_sync_device(gcn_ctx *ctx, uint64_t *advanced)
{
    uint64_t delta = ctx->rng_offset[GCN_RNG_DROPOUT] - ctx->rng_dev_synced;
    *advanced = delta;
    if (delta != 0)
        GCN_TRY(ctx->be->add_u64(ctx, ctx->rng_dev, delta));
    ctx->rng_dev_synced += delta;
    return GCN_OK;
}

void gcn_rng_count_replayed(gcn_ctx *ctx, uint64_t advanced)
{
    ctx->rng_offset[GCN_RNG_DROPOUT] += advanced;
    ctx->rng_dev_synced += advanced;
}

static gcn_status check_draw(gcn_ctx *ctx, gcn_rng_stream stream, const void *host, int64_t n)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, (unsigned)stream < GCN_RNG_N_STREAMS);
    GCN_ARG(ctx, n >= 0);
    GCN_ARG(ctx, host || n == 0);
    return GCN_OK;
}

gcn_status gcn_rng_uniform(gcn_ctx *ctx, gcn_rng_stream stream, float *host, int64_t n)
{
    GCN_TRY(check_draw(ctx, stream, host, n));
    uint64_t off = gcn_rng_reserve(ctx, stream, (uint64_t)n);
    for (int64_t i = 0; i < n; i++)
        host[i] = gcn_philox_uniform(gcn_philox_word(ctx->rng_key, stream, off, (uint64_t)i));
    return GCN_OK;
}

gcn_status gcn_rng_normal(gcn_ctx *ctx, gcn_rng_stream stream, float *host, int64_t n)
{
    GCN_TRY(check_draw(ctx, stream, host, n));
    /* Box-Muller: each pair of words gives two normals. */
    int64_t pairs = (n + 1) / 2;
    uint64_t off = gcn_rng_reserve(ctx, stream, 2 * (uint64_t)pairs);
    const double two_pi = 6.283185307179586476925286766559;
    for (int64_t p = 0; p < pairs; p++) {
        uint32_t w0 = gcn_philox_word(ctx->rng_key, stream, off, 2 * (uint64_t)p);
        uint32_t w1 = gcn_philox_word(ctx->rng_key, stream, off, 2 * (uint64_t)p + 1);
        double u1 = ((double)(w0 >> 8) + 1.0) / 16777216.0; /* (0, 1]: log is finite */
        double u2 = (double)(w1 >> 8) / 16777216.0;
        double r = sqrt(-2.0 * log(u1));
        host[2 * p] = (float)(r * cos(two_pi * u2));
        if (2 * p + 1 < n)
            host[2 * p + 1] = (float)(r * sin(two_pi * u2));
    }
    return GCN_OK;
}

gcn_status gcn_rng_below(gcn_ctx *ctx, gcn_rng_stream stream, uint32_t bound, uint32_t *host,
                         int64_t n)
{
    GCN_TRY(check_draw(ctx, stream, host, n));
    GCN_ARG(ctx, bound >= 1);
    /* Rejection of the low (2^32 mod bound) words removes modulo bias; the
     * stream advances by exactly the words consumed. */
    uint32_t threshold = (uint32_t)(-bound) % bound;
    uint64_t base = ctx->rng_offset[stream], used = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t w;
        do
            w = gcn_philox_word(ctx->rng_key, stream, base, used++);
        while (w < threshold);
        host[i] = w % bound;
    }
    ctx->rng_offset[stream] = base + (used + 3) / 4;
    return GCN_OK;
}

void gcn_rng_seed(gcn_ctx *ctx, uint64_t seed)
{
    ctx->seed = seed;
    ctx->rng_key[0] = (uint32_t)seed;
    ctx->rng_key[1] = (uint32_t)(seed >> 32);
    memset(ctx->rng_offset, 0, sizeof ctx->rng_offset);
}

void gcn_rng_get_state(const gcn_ctx *ctx, uint64_t offsets[GCN_RNG_N_STREAMS])
{
    memcpy(offsets, ctx->rng_offset, sizeof ctx->rng_offset);
}

void gcn_rng_set_state(gcn_ctx *ctx, const uint64_t offsets[GCN_RNG_N_STREAMS])
{
    memcpy(ctx->rng_offset, offsets, sizeof ctx->rng_offset);
}

gcn_status gcn_init_uniform(gcn_ctx *ctx, gcn_tensor *t, float lo, float hi)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_TRY(gcn_check_tensor(ctx, t, "tensor"));
    GCN_ARG(ctx, lo <= hi);
    int64_t n = t->rows * t->cols;
    float *host = malloc((size_t)(n > 0 ? n : 1) * sizeof *host);
    if (!host)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for initial values");
    gcn_status st = gcn_rng_uniform(ctx, GCN_RNG_INIT, host, n);
    for (int64_t i = 0; st == GCN_OK && i < n; i++)
        host[i] = lo + (hi - lo) * host[i];
    if (st == GCN_OK && n > 0)
        st = ctx->be->upload(ctx, t->data, host, (size_t)n * sizeof *host);
    free(host);
    return st;
}

gcn_status gcn_init_glorot_uniform(gcn_ctx *ctx, gcn_tensor *t, int64_t fan_in, int64_t fan_out,
                                   float gain)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, fan_in > 0 && fan_out > 0);
    float b = gain * (float)sqrt(6.0 / (double)(fan_in + fan_out));
    return gcn_init_uniform(ctx, t, -b, b);
}

gcn_status gcn_init_kaiming_uniform(gcn_ctx *ctx, gcn_tensor *t, int64_t fan_in, float a)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, fan_in > 0);
    float b = (float)sqrt(6.0 / ((1.0 + (double)a * a) * (double)fan_in));
    return gcn_init_uniform(ctx, t, -b, b);
}
