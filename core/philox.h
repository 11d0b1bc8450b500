/* Philox4x32-10 (Salmon et al., SC'11) as inline functions that compile for
 * both the host and CUDA devices, so every backend draws the same bits. */
#ifndef GCN_PHILOX_H
#define GCN_PHILOX_H

#include <stdint.h>

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
 * captured CUDA graph; unsigned wrap-around keeps the sum exact. */
typedef struct gcn_draw_offset {
    const uint64_t *base;
    uint64_t rel;
} gcn_draw_offset;

GCN_HD uint64_t gcn_draw_first(gcn_draw_offset o)
{
    return o.rel + (o.base ? *o.base : 0u);
}

/* 24 random bits as a float in [0, 1). */
GCN_HD float gcn_philox_uniform(uint32_t word)
{
    return (float)(word >> 8) * (1.0f / 16777216.0f);
}

#endif
