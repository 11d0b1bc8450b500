/* Optimisers: SGD with momentum, Adam and AdamW, with PyTorch's update
 * rules, over a list of parameter tensors. */
#ifndef GCN_OPTIM_H
#define GCN_OPTIM_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gcn_optim_kind {
    GCN_OPTIM_SGD = 0,
    GCN_OPTIM_ADAM,  /* weight_decay added to the gradient (L2) */
    GCN_OPTIM_ADAMW  /* weight_decay applied to the parameter (decoupled) */
} gcn_optim_kind;

typedef struct gcn_optim_opts {
    size_t size; /* sizeof in the caller's build, set by gcn_optim_default_opts */
    gcn_optim_kind kind;
    float lr;
    float weight_decay;
    float momentum;   /* SGD */
    float dampening;  /* SGD */
    bool nesterov;    /* SGD */
    float beta1, beta2, eps; /* Adam, AdamW */
} gcn_optim_opts;

/* PyTorch's defaults for the kind: SGD lr 0.01 (no momentum); Adam lr 1e-3,
 * betas (0.9, 0.999), eps 1e-8, no weight decay; AdamW the same with
 * weight_decay 0.01. */
GCN_API gcn_optim_opts gcn_optim_default_opts(gcn_optim_kind kind);

typedef struct gcn_optim gcn_optim;

/* An optimiser over n_params parameters (each retained until free).  The
 * state buffers and the per-parameter step state (update counts and, for
 * Adam and AdamW, the powers of the betas) are allocated on the context's
 * device.  Caller frees. */
GCN_API gcn_status gcn_optim_create(gcn_ctx *ctx, gcn_optim **out, gcn_tensor *const *params,
                                    int n_params, const gcn_optim_opts *opts);

/* One update of every parameter from its grad; parameters without a grad
 * are skipped, as in PyTorch, and their update counts (Adam's bias
 * correction, SGD's first momentum step) stay where they are.  The step
 * counts live on the device and the kernels read them there, so a step
 * queues the same kernels with the same arguments every time and can be
 * captured in a CUDA graph and replayed.  The host keeps a mirror of the
 * counts (gcn_optim_steps) without reading the device. */
GCN_API gcn_status gcn_optim_step(gcn_ctx *ctx, gcn_optim *opt);

/* Clears every parameter's grad by releasing it, as PyTorch's
 * zero_grad(set_to_none=True) does: the next backward allocates it again.
 * Every training step then allocates and frees in the same order, so from
 * the first step on the GPU pool serves a step with no cudaMalloc. */
GCN_API gcn_status gcn_optim_zero_grad(gcn_ctx *ctx, gcn_optim *opt);

/* Learning rate, for schedules: it lives in the optimiser's device memory
 * and the updates read it there, so it applies from the next gcn_optim_step
 * on, a captured CUDA graph's replays included.  GCN_ERR_INVALID_ARG for a
 * negative or non-finite lr. */
GCN_API gcn_status gcn_optim_set_lr(gcn_optim *opt, float lr);

/* State for checkpoints: number of steps taken, and the per-parameter
 * state tensors (slot 0: SGD momentum buffer or Adam first moment; slot 1:
 * Adam second moment).  Borrowed; NULL where the kind has no such slot. */
GCN_API int gcn_optim_n_params(const gcn_optim *opt);
GCN_API int64_t gcn_optim_steps(const gcn_optim *opt);
GCN_API gcn_tensor *gcn_optim_state(const gcn_optim *opt, int param, int slot);

/* Resumes at `steps` (>= 0) steps taken: gcn_optim_steps and every
 * parameter's update count become `steps`, on the host and on the device,
 * and for Adam and AdamW the device's beta1^t and beta2^t become
 * beta^steps, computed by the same repeated multiplication in double that
 * the steps perform.  With the parameters and state tensors restored, a
 * resumed run then continues bit for bit as an uninterrupted one in which
 * every parameter had a grad at every step.  Writes the optimiser's
 * context's device memory and waits for it; errors are recorded there. */
GCN_API gcn_status gcn_optim_set_steps(gcn_optim *opt, int64_t steps);

GCN_API void gcn_optim_free(gcn_optim **opt);

#ifdef __cplusplus
}
#endif
#endif
