/* The communicator tests' harness: a thread per rank running a function on
 * its context, the rank-dependent data the collectives move, and the sums
 * and blocks they must give. */
#ifndef GCN_TEST_COMM_CHECK_H
#define GCN_TEST_COMM_CHECK_H

#include <stdint.h>

#include "gcn.h"

#define COMM_MAX_RANKS 4

/* What a rank's thread runs; it must not assert (Criterion's asserts end
 * the test from the main thread only): it records, the test checks. */
typedef void (*comm_rank_fn)(gcn_ctx *ctx, int rank, void *user);

/* Runs fn(ctxs[r], r, user) on a thread per rank and joins them. */
void comm_run(gcn_ctx *const *ctxs, int n, comm_rank_fn fn, void *user);

/* n CPU contexts of `threads` threads each, joined by a LOCAL communicator. */
void comm_cpu_ranks(gcn_ctx **ctxs, int n, int threads);
void comm_free(gcn_ctx **ctxs, int n);

/* Rank r's value i: magnitudes spread over 2^-20 .. 2^20, so the order of
 * a sum shows in its rounding. */
float comm_value(int rank, int64_t i);
double comm_value_f64(int rank, int64_t i);
/* out[i] = value(0, i) + value(1, i) + ... added in rank order. */
void comm_sum(int ranks, int64_t n, float *out);
void comm_sum_f64(int ranks, int64_t n, double *out);

/* The exchange's layout: the floats rank p sends rank q (0 for some pairs,
 * the self block included), the offsets of rank r's send and receive
 * buffers, and element i of the block p sends q. */
int64_t comm_block(int p, int q);
void comm_offsets(int rank, int ranks, int64_t *send_off, int64_t *recv_off);
float comm_block_value(int p, int q, int64_t i);

#endif
