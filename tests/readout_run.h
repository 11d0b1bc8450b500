/* gcn_readout's fixture for test_pool.c and test_gpu_pool.c: one case of
 * heads over a batch of graphs, run on a context either as the one op or
 * as the ops it replaces (segment_pool, matmul_bias, dropout, add), with
 * the scores and every input's gradient read back. */
#ifndef GCN_TESTS_READOUT_RUN_H
#define GCN_TESTS_READOUT_RUN_H

#include "gcn.h"

enum { READOUT_HEADS = 3 };

typedef struct readout_case {
    int64_t segs, rows, classes;
    const int32_t *offsets;              /* [segs + 1] */
    int64_t cols[READOUT_HEADS];
    const float *h[READOUT_HEADS];       /* [rows, cols[k]] */
    const float *w[READOUT_HEADS];       /* [cols[k], classes] */
    const float *b[READOUT_HEADS];       /* [classes] */
    gcn_pooling kind;
    float p;
    bool training;
} readout_case;

/* Malloc'd host copies: scores [segs, classes], and the gradients of
 * loss = test_weigh(scores) for each h, w and b (NULL without training). */
typedef struct readout_result {
    float *scores;
    float *dh[READOUT_HEADS], *dw[READOUT_HEADS], *db[READOUT_HEADS];
} readout_result;

/* Runs the case on ctx (gcn_readout when `fused`, else the ops in turn);
 * the test fails on any error. */
void readout_run(gcn_ctx *ctx, const readout_case *c, bool fused, readout_result *r);
void readout_result_free(readout_result *r);

/* A random case of `segs` graphs of 0 to 63 nodes (every 7th empty) with
 * heads of widths cols[0..2]; free the arrays with readout_case_free. */
readout_case readout_case_random(uint64_t *state, int64_t segs, const int64_t cols[3],
                                 int64_t classes, gcn_pooling kind, float p, bool training);
void readout_case_free(readout_case *c);

#endif
