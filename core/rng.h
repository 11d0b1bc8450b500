/* Counter-based random numbers (Philox4x32-10).  A draw is a pure function
 * of (seed, stream, offset), so the CPU and the CUDA backend produce the same
 * bits, and a run is reproduced from its seed and the streams' offsets. */
#ifndef GCN_RNG_H
#define GCN_RNG_H

#include <stdint.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Independent streams, one per purpose, all derived from the context seed. */
typedef enum gcn_rng_stream {
    GCN_RNG_INIT = 0,  /* parameter initialisation */
    GCN_RNG_DROPOUT,   /* dropout masks */
    GCN_RNG_SPLIT,     /* train/valid/test splits */
    GCN_RNG_PARTITION, /* graph partitioning */
    GCN_RNG_DATA,      /* synthetic data and substitute features */
    GCN_RNG_SHUFFLE,   /* per-epoch orders of training examples (batches of graphs) */
    GCN_RNG_N_STREAMS
} gcn_rng_stream;

/* The four 32-bit words Philox4x32-10 gives for a counter and key. */
GCN_API void gcn_philox4x32(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

/* n uniform floats in [0, 1) (24 random bits each) or standard normal floats
 * (Box-Muller) into host memory, from the stream's current offset, which
 * advances past the words used. */
GCN_API gcn_status gcn_rng_uniform(gcn_ctx *ctx, gcn_rng_stream stream, float *host, int64_t n);
GCN_API gcn_status gcn_rng_normal(gcn_ctx *ctx, gcn_rng_stream stream, float *host, int64_t n);

/* Uniform integers in [0, bound), bound >= 1, without modulo bias. */
GCN_API gcn_status gcn_rng_below(gcn_ctx *ctx, gcn_rng_stream stream, uint32_t bound,
                                 uint32_t *host, int64_t n);

/* Restarts every stream from offset 0 under a new seed (e.g. one run of
 * several, each with its own seed). */
GCN_API void gcn_rng_seed(gcn_ctx *ctx, uint64_t seed);

/* Saves or restores the offsets of every stream (checkpoints). */
GCN_API void gcn_rng_get_state(const gcn_ctx *ctx, uint64_t offsets[GCN_RNG_N_STREAMS]);
GCN_API void gcn_rng_set_state(gcn_ctx *ctx, const uint64_t offsets[GCN_RNG_N_STREAMS]);

/* Fills t from U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out))
 * (Glorot/Xavier uniform), drawn from GCN_RNG_INIT. */
GCN_API gcn_status gcn_init_glorot_uniform(gcn_ctx *ctx, gcn_tensor *t, int64_t fan_in,
                                           int64_t fan_out, float gain);

/* Fills t from U(-b, b) with b = sqrt(6 / ((1 + a^2) fan_in)) (Kaiming/He
 * uniform for leaky ReLU slope a; a = sqrt(5) is PyTorch's Linear default). */
GCN_API gcn_status gcn_init_kaiming_uniform(gcn_ctx *ctx, gcn_tensor *t, int64_t fan_in, float a);

/* Fills t from U(lo, hi) drawn from GCN_RNG_INIT. */
GCN_API gcn_status gcn_init_uniform(gcn_ctx *ctx, gcn_tensor *t, float lo, float hi);

#ifdef __cplusplus
}
#endif
#endif
