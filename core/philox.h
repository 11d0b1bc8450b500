/* Philox4x32-10 (Salmon et al., SC'11) as inline functions that compile for
 * both the host and CUDA devices, so every backend draws the same bits. */
#ifndef GCN_PHILOX_H
#define GCN_PHILOX_H

#include <stdint.h>

#include "rng.h"

#ifdef __CUDACC__
#define GCN_HD __host__ __device__ __forceinline__
#else
#define GCN_HD static inline
#endif

#define GCN_PHILOX_M0 0xD2511F53u
#define GCN_PHILOX_M1 0xCD9E8D57u
#define GCN_PHILOX_W0 0x9E3779B9u
#define GCN_PHILOX_W1 0xBB67AE85u

GCN_HD void gcn_philox_round(uint32_t c[4], const uint32_t k[2])
{
    uint64_t p0 = (uint64_t)GCN_PHILOX_M0 * c[0];
    uint64_t p1 = (uint64_t)GCN_PHILOX_M1 * c[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t n0 = hi1 ^ c[1] ^ k[0];
    uint32_t n2 = hi0 ^ c[3] ^ k[1];
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
}

/* out = Philox4x32-10(counter, key). */
GCN_HD void gcn_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c[4] = {counter[0], counter[1], counter[2], counter[3]};
    uint32_t k[2] = {key[0], key[1]};
#if defined(__GNUC__) && !defined(__CUDACC__) && !defined(__clang__)
#pragma GCC unroll 10 /* nvcc unrolls it by itself; unrolled, a CPU draw is ~1.5x faster */
#endif
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k[0] += GCN_PHILOX_W0;
            k[1] += GCN_PHILOX_W1;
        }
        gcn_philox_round(c, k);
    }
    out[0] = c[0];
    out[1] = c[1];
    out[2] = c[2];
    out[3] = c[3];
}

/* Word i of the sequence that starts at `offset` on `stream`: counter
 * offset + i / 4, word i % 4. */
GCN_HD uint32_t gcn_philox_word(const uint32_t key[2], uint32_t stream, uint64_t offset,
                                uint64_t i)
{
    uint64_t ctr = offset + i / 4;
    uint32_t counter[4] = {(uint32_t)ctr, (uint32_t)(ctr >> 32), stream, 0u};
    uint32_t out[4];
    gcn_philox4x32_10(counter, key, out);
    return out[i % 4];
}

/* Where a draw's counters start: *base + rel, base being the device copy of
 * the stream's offset (gcn_rng_sync_device) or NULL (rel alone).  Kernels
 * that read the start from memory draw fresh masks on every replay of a
 * captured CUDA graph; unsigned wrap-around keeps the sum exact.
 *
 * Element i of the draw takes draw word i, or, with row_ids (backend memory,
 * one per row of a [rows, cols] tensor), element (r, c) takes draw word
 * row_ids[r] cols + c: the word of row row_ids[r] in a tensor of every
 * node's rows (gcn_ctx_set_node_ids). */
typedef struct gcn_draw_offset {
    const uint64_t *base;
    uint64_t rel;
    const int32_t *row_ids;
    int64_t cols;
} gcn_draw_offset;

GCN_HD uint64_t gcn_draw_first(gcn_draw_offset o)
{
    return o.rel + (o.base ? *o.base : 0u);
}

/* The four words of Philox counter ctr on the dropout stream. */
GCN_HD void gcn_draw_counter(const uint32_t key[2], uint64_t ctr, uint32_t w[4])
{
    uint32_t counter[4] = {(uint32_t)ctr, (uint32_t)(ctr >> 32), GCN_RNG_DROPOUT, 0u};
    gcn_philox4x32_10(counter, key, w);
}

/* The mask words of elements i .. i + 3 (i a multiple of 4) of a draw of n
 * elements that starts at counter first: draw word j is word j % 4 of
 * counter first + j / 4.  Words past n are left as they are. */
GCN_HD void gcn_draw_words(gcn_draw_offset o, const uint32_t key[2], uint64_t first, int64_t i,
                           int64_t n, uint32_t w[4])
{
    if (!o.row_ids || o.cols % 4 == 0) { /* the four share one counter */
        int64_t j = o.row_ids ? (int64_t)o.row_ids[i / o.cols] * o.cols + i % o.cols : i;
        gcn_draw_counter(key, first + (uint64_t)j / 4, w);
        return;
    }
    for (int k = 0; k < 4 && i + k < n; k++) {
        int64_t e = i + k, j = (int64_t)o.row_ids[e / o.cols] * o.cols + e % o.cols;
        uint32_t all[4];
        gcn_draw_counter(key, first + (uint64_t)j / 4, all);
        w[k] = all[j % 4];
    }
}

/* gcn_draw_words for elements c0 .. c0 + 3 of row r (flat index i = r cols
 * + c0, with cols and c0 multiples of four), from the row and column the
 * caller has: no division of the flat index by cols, which in 64 bits
 * costs an elementwise kernel more than its loads. */
GCN_HD void gcn_draw_words_row(gcn_draw_offset o, const uint32_t key[2], uint64_t first,
                               int64_t i, int64_t r, int64_t c0, uint32_t w[4])
{
    int64_t j = o.row_ids ? (int64_t)o.row_ids[r] * o.cols + c0 : i;
    gcn_draw_counter(key, first + (uint64_t)j / 4, w);
}

/* The mask word of element (r, c) of a [rows, cols] draw that starts at
 * counter first: the word gcn_draw_words gives that element (row r taking
 * row_ids[r]'s words when the offset has them). */
GCN_HD uint32_t gcn_draw_word_at(gcn_draw_offset o, const uint32_t key[2], uint64_t first,
                                 int64_t r, int64_t c, int64_t cols)
{
    int64_t j = (o.row_ids ? (int64_t)o.row_ids[r] : r) * cols + c;
    uint32_t w[4];
    gcn_draw_counter(key, first + (uint64_t)j / 4, w);
    return w[j % 4];
}

/* 24 random bits as a float in [0, 1). */
GCN_HD float gcn_philox_uniform(uint32_t word)
{
    return (float)(word >> 8) * (1.0f / 16777216.0f);
}

#endif
