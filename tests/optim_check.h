/* Optimisers over many parameters of awkward sizes, on any context, shared
 * by test_optim.c (CPU) and test_gpu_optim.c (GPU against CPU): parameters
 * and gradients are seeded and set directly (no autograd), so two rigs on
 * two contexts see the same values step after step. */
#ifndef GCN_TEST_OPTIM_CHECK_H
#define GCN_TEST_OPTIM_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "optim/optim_impl.h"

/* The many-parameter layout: more parameters than one update launch holds,
 * of sizes 1, 1000, odd ones and one that needs several passes of its
 * blocks on the GPU (rig_many_size). */
#define RIG_MANY (GCN_OPTIM_LAUNCH_TENSORS + 9)
int64_t rig_many_size(int i);

/* Whether parameter i has a grad at step s (from 0) when some are skipped:
 * every tenth from the fourth never has one; every tenth from the seventh
 * misses steps 0 and 2, so its update count lags the optimiser's. */
bool rig_has_grad(int i, int s);

/* The options the many-parameter tests run, c < RIG_KIND_CASES: SGD with
 * momentum, dampening and decay (its first update copies the gradient, so
 * parameters that join late test the per-parameter count), Nesterov, Adam
 * with L2 and AdamW. */
#define RIG_KIND_CASES 4
gcn_optim_opts rig_kind_case(int c);

typedef struct optim_rig {
    gcn_ctx *ctx;
    int n_params;
    gcn_tensor **params; /* [size, 1] each */
    gcn_optim *opt;
} optim_rig;

/* Initial values of parameter i: uniform in [-1, 1), seeded by i. */
void rig_init(int i, int64_t n, float *out);

/* n parameters of the given sizes with rig_init's values, and an optimiser
 * over them (test fails on error). */
void rig_open(optim_rig *r, gcn_ctx *ctx, const gcn_optim_opts *o, int n, const int64_t *sizes);
void rig_close(optim_rig *r);

/* Gradient values of parameter i at step s: uniform in [-1, 1), seeded by
 * both, the same on every context. */
void rig_grad(int i, int s, int64_t n, float *out);

/* Releases the grads, gives every parameter (skip: those rig_has_grad
 * lists) its step-s gradient and takes one optimiser step. */
void rig_step(optim_rig *r, int s, bool skip);

/* Parameter i (slot -1) or its optimiser state (slot 0, 1) on the host;
 * caller frees. */
float *rig_read(optim_rig *r, int i, int slot);

/* The device step state on the host: counts, and for Adam the powers of
 * the betas (pow1, pow2 untouched for SGD).  Arrays of n_params. */
void rig_read_steps(optim_rig *r, int64_t *count, double *pow1, double *pow2);

/* Fails unless the n values are the same bits. */
void expect_bits(const void *got, const void *want, int64_t n, size_t elem, const char *what);

/* Resuming: a rig that takes k steps, then a fresh rig given its
 * parameters and state and gcn_optim_set_steps(k), must continue bit for
 * bit as the first does, step after step (all parameters with grads). */
void check_resume(gcn_ctx *ctx, const gcn_optim_opts *o, int k);

#endif
