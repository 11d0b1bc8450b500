/* Training the same model in fp32 and in bf16 on a generated graph, for
 * the CPU (test_train_bf16.c) and GPU (test_gpu_train_bf16.c) tests. */
#ifndef GCN_TESTS_BF16_TRAIN_H
#define GCN_TESTS_BF16_TRAIN_H

#include <stdbool.h>

#include "gcn.h"

enum { BF16_EPOCHS = 50 };

typedef struct bf16_run {
    float losses[BF16_EPOCHS];
    double test_acc;  /* after the last epoch */
    size_t peak;      /* the context's peak bytes */
} bf16_run;

/* The two-layer GCN and GIN the tests train (batch norm, ReLU, dropout). */
extern const char *const bf16_gcn_json, *const bf16_gin_json;

/* BF16_EPOCHS epochs of `json` at `precision` ("fp32" or "bf16") on a new
 * context of `device` seeded 5, on a 1,200-node SBM graph with 32
 * features; fails the test on any error. */
void bf16_train(gcn_device device, const char *json, const char *precision, bf16_run *out);

/* Fails unless the bf16 run follows the fp32 one: every epoch's loss
 * within 0.01 + 5% of fp32's, and both runs' losses down by half. */
void bf16_expect_close(const bf16_run *bf16, const bf16_run *fp32, const char *what);

#endif
