/* A two-layer GCN trained end to end on a generated stochastic block model:
 * the fixture test_train.c and test_gpu_train.c share. */
#ifndef GCN_TESTS_SBM_TRAIN_H
#define GCN_TESTS_SBM_TRAIN_H

#include "gcn.h"

enum { NODES = 1200, CLASSES = 4, FEAT = 16, HIDDEN = 16, EPOCHS = 200, TRAIN_PER_CLASS = 20 };

typedef struct run_result {
    float losses[EPOCHS];
    double acc;
    gcn_memory_stats after_first, at_end;
} run_result;

/* Trains on a new context of the given device from `seed`: the loss of every
 * epoch, the final test accuracy, and the pool counters after the first
 * step and at the end.  Asserts (Criterion) on any failure, and that the
 * context holds no memory once everything is freed. */
void sbm_train(gcn_device device, bool tf32, uint64_t seed, run_result *res);

#endif
