/* Reverse-mode automatic differentiation over the context's tape. */
#ifndef GCN_AUTOGRAD_H
#define GCN_AUTOGRAD_H

#include <stdbool.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Propagates d(loss)/d(.) backwards through every op recorded since the tape
 * was last cleared, adding into the grad of each parameter
 * (gcn_tensor_set_requires_grad) that the loss depends on.  loss must be
 * [1, 1] and produced by a recorded op.  Afterwards the tape, its saved
 * tensors and the gradients of intermediate tensors are released. */
GCN_API gcn_status gcn_backward(gcn_ctx *ctx, gcn_tensor *loss);

/* Drops every recorded op without running backward (e.g. after a forward
 * whose loss is not needed). */
GCN_API void gcn_tape_clear(gcn_ctx *ctx);

/* Number of ops on the tape now. */
GCN_API int gcn_tape_len(const gcn_ctx *ctx);

/* Enables or disables recording; returns the previous setting, so an
 * evaluation pass is written
 *     bool prev = gcn_set_grad_enabled(ctx, false); ...; gcn_set_grad_enabled(ctx, prev); */
GCN_API bool gcn_set_grad_enabled(gcn_ctx *ctx, bool enabled);
GCN_API bool gcn_grad_enabled(const gcn_ctx *ctx);

/* Runs the following statement or block with recording disabled, restoring
 * the previous setting after it:  GCN_NO_GRAD(ctx) { forward for eval; }
 * Leaving the block by return, break or goto skips the restore. */
/* A differentiable op of the program's own.  forward fills y, a new
 * [rows, cols] tensor on the context's device, from the inputs.  backward
 * receives the inputs, y and its gradient dy, and dx[i] for each input that
 * needs a gradient (NULL for the others): a tensor of in[i]'s shape that it
 * must overwrite completely with dL/d in[i]; the library adds it to what
 * the input has accumulated.  Both run with recording off, so they may use
 * the library's ops (gcn_tensor_copy writes a result into dx[i]) or their
 * own kernels on gcn_ctx_stream.  `user` is passed to both, borrowed: it
 * must outlive the tape that records the op.  backward may be NULL for an
 * op whose inputs never require gradients. */
typedef struct gcn_custom_op {
    size_t size; /* sizeof(gcn_custom_op) in the caller's build */
    const char *name; /* copied; in errors and profiles */
    gcn_status (*forward)(gcn_ctx *ctx, gcn_tensor *const *in, int n_in, gcn_tensor *y,
                          void *user);
    gcn_status (*backward)(gcn_ctx *ctx, gcn_tensor *const *in, int n_in, const gcn_tensor *y,
                           const gcn_tensor *dy, gcn_tensor *const *dx, void *user);
    void *user;
} gcn_custom_op;

/* Runs op on n_in inputs into a new [rows, cols] *out and, when recording
 * and an input requires a gradient, records it on the tape like a built-in
 * op.  A failing forward leaves *out untouched and records nothing. */
GCN_API gcn_status gcn_custom(gcn_ctx *ctx, const gcn_custom_op *op, gcn_tensor *const *in,
                              int n_in, int64_t rows, int64_t cols, gcn_tensor **out);

#define GCN_NO_GRAD(ctx)                                                          \
    for (int gcn_ng_prev_ = gcn_set_grad_enabled((ctx), false), gcn_ng_once_ = 1; \
         gcn_ng_once_; gcn_ng_once_ = 0, gcn_set_grad_enabled((ctx), gcn_ng_prev_))

#ifdef __cplusplus
}
#endif
#endif
