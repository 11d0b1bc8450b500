/* A two-layer GCN trained end to end on a generated stochastic block model:
 * the fixture test_train.c and test_gpu_train.c share; and a trainer of any
 * configuration on the library's SBM (test_prof.c, test_gpu_prof.c). */
#ifndef GCN_TESTS_SBM_TRAIN_H
#define GCN_TESTS_SBM_TRAIN_H

#include "gcn.h"

enum { NODES = 1200, CLASSES = 4, FEAT = 16, HIDDEN = 16, EPOCHS = 200, TRAIN_PER_CLASS = 20 };

typedef struct run_result {
    float losses[EPOCHS];
    double acc;
    int steady_epoch;              /* the first epoch after which every SpMM call site
                                      had locked (0-based; -1: never) */
    gcn_memory_stats steady, at_end;
} run_result;

/* Trains on a new context of the given device from `seed`: the loss of every
 * epoch, the final test accuracy, and the pool counters once the SpMM
 * selector has locked every call site (the end of its profiling; on the
 * CPU, after the first step) and at the end.  Asserts (Criterion) on any failure, and that the
 * context holds no memory once everything is freed. */
void sbm_train(gcn_device device, bool tf32, uint64_t seed, run_result *res);

/* A trainer of the model configuration `json` (as in models/) on a
 * gcn_dataset_sbm graph of n_nodes nodes with n_features features, drawn
 * from ctx's streams; *ds receives the dataset.  The caller frees both; the
 * test fails on any error. */
gcn_trainer *sbm_trainer(gcn_ctx *ctx, int32_t n_nodes, int32_t n_features, const char *json,
                         gcn_dataset **ds);

/* A gcn_dataset_sbm graph of 400 nodes, 4 classes, 100 validation and 200
 * test nodes; sparse: its 200 features a bag of words (about 6 words a
 * node, counts 1 or 2, each row normalised to sum 1), else 16 dense
 * features. */
gcn_dataset *sbm_bag_of_words(gcn_ctx *ctx, bool sparse);

#endif
