/* Internals of optim/: the struct behind gcn_optim, the step state it keeps
 * on the device, the batch of parameters one update launch covers, the CPU
 * and CUDA updates optim.c dispatches to, and the trainer's hook for
 * replayed steps.  Not installed. */
#ifndef GCN_OPTIM_IMPL_H
#define GCN_OPTIM_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/internal.h"
#include "optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-parameter step state, in the context's device memory (host memory on
 * the CPU), indexed by the parameter's slot (its position in the list given
 * to gcn_optim_create).  It lives on the device so that a step queues the
 * same kernels with the same arguments every time, as a captured CUDA graph
 * replays them. */
typedef struct gcn_optim_step_state {
    int n_params;
    int64_t *count;   /* [n_params] updates each parameter has received */
    double *pow1;     /* [n_params] beta1^count (Adam, AdamW; NULL for SGD) */
    double *pow2;     /* [n_params] beta2^count (Adam, AdamW; NULL for SGD) */
    int32_t *pending; /* [n_params] 1 once updated this step, until the advance */
    float *lr;        /* [1] the learning rate, so a schedule changes it between
                         replays of a captured step (gcn_optim_set_lr) */
} gcn_optim_step_state;

/* The hyperparameters as the per-element arithmetic uses them, but the
 * learning rate (in the step state); passed by value to every update, so a
 * captured graph keeps the values it was captured with.  AdamW's decay
 * factor is 1 - lr weight_decay, computed by the update from the lr. */
typedef struct gcn_optim_hparams {
    float weight_decay;
    float momentum, one_minus_dampening; /* SGD */
    bool nesterov;                       /* SGD */
    float beta1, beta2, one_minus_beta1, one_minus_beta2, eps; /* Adam, AdamW */
    bool decoupled;                      /* AdamW */
} gcn_optim_hparams;

/* Parameters one update launch holds: the struct is a kernel argument (by
 * value, kept well under the 4 KiB argument limit), so a step over more
 * parameters with a grad queues ceil(n / GCN_OPTIM_LAUNCH_TENSORS) updates. */
#define GCN_OPTIM_LAUNCH_TENSORS 32

typedef struct gcn_optim_batch {
    int n_tensors;
    float *param[GCN_OPTIM_LAUNCH_TENSORS];       /* [numel] each */
    const float *grad[GCN_OPTIM_LAUNCH_TENSORS];  /* [numel] */
    float *state0[GCN_OPTIM_LAUNCH_TENSORS];      /* momentum buffer or m; NULL without one */
    float *state1[GCN_OPTIM_LAUNCH_TENSORS];      /* v; NULL for SGD */
    uint16_t *half[GCN_OPTIM_LAUNCH_TENSORS];     /* the parameter's bf16 copy (core's
                                                   * gcn_tensor_half), rounded from the
                                                   * updated value; NULL without one */
    int64_t numel[GCN_OPTIM_LAUNCH_TENSORS];
    int32_t slot[GCN_OPTIM_LAUNCH_TENSORS];       /* index into gcn_optim_step_state */
    /* CUDA launch geometry, filled in by the launcher: tensor k is updated by
     * blocks first_block[k] .. first_block[k + 1] - 1. */
    uint32_t first_block[GCN_OPTIM_LAUNCH_TENSORS + 1];
} gcn_optim_batch;

/* The update contract both backends keep, and the order a step queues:
 *  1. update (once per batch): every tensor k of the batch reads its slot's
 *     step state as the previous step left it, t - 1 updates, and uses
 *         first_step = count == 0                     (SGD momentum buffer)
 *         p1 = pow1 * beta1,  p2 = pow2 * beta2       (beta^t, in double)
 *         step_size = (float)(lr / (1 - p1)),  bc2_sqrt = (float)sqrt(1 - p2)
 *     then marks the slot pending;
 *  2. advance (once per step, after every update): for each pending slot,
 *     count += 1, pow1 *= beta1, pow2 *= beta2 (the same products), and
 *     clears the mark.
 * The update reads old values and the advance runs after it, rather than
 * the reverse, because the update kernels are what know which parameters
 * had a grad: the marks let one advance launch with fixed arguments cover
 * any number of parameters.  Divisions and square roots are IEEE
 * (correctly rounded) on both devices and the per-element arithmetic runs
 * in the same order, so CPU and GPU produce the same bits. */
typedef gcn_status gcn_optim_update_fn(gcn_ctx *ctx, gcn_optim_kind kind,
                                       const gcn_optim_hparams *h, const gcn_optim_step_state *s,
                                       const gcn_optim_batch *b);
typedef gcn_status gcn_optim_advance_fn(gcn_ctx *ctx, const gcn_optim_hparams *h,
                                        const gcn_optim_step_state *s);
gcn_optim_update_fn gcn_optim_cpu_update, gcn_optim_cuda_update;
gcn_optim_advance_fn gcn_optim_cpu_advance, gcn_optim_cuda_advance;

struct gcn_optim {
    gcn_optim_opts opts;
    gcn_ctx *ctx;
    int n_params;
    gcn_tensor **params;   /* retained */
    gcn_tensor **state[2]; /* per parameter: momentum or m; v */
    gcn_optim_step_state dev;
    /* Host mirror of the device step state, kept by gcn_optim_step and
     * gcn_optim_count_replayed_step, so counts are read without a wait. */
    int64_t *param_steps;  /* per parameter: dev.count's value */
    bool *last_updated;    /* per parameter: it had a grad in the last step */
    int64_t steps;         /* steps taken */
};

/* Advances the host mirror (gcn_optim_steps and the per-parameter counts)
 * exactly as the last gcn_optim_step did, over the parameters that had a
 * grad in it, without queuing anything: for the trainer, after it replays a
 * captured step whose kernels advanced the device state themselves.  A
 * no-op on NULL. */
void gcn_optim_count_replayed_step(gcn_optim *opt);

#ifdef __cplusplus
}
#endif
#endif
