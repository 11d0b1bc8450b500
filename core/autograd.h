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
gcn_status gcn_backward(gcn_ctx *ctx, gcn_tensor *loss);

/* Drops every recorded op without running backward (e.g. after a forward
 * whose loss is not needed). */
void gcn_tape_clear(gcn_ctx *ctx);

/* Number of ops on the tape now. */
int gcn_tape_len(const gcn_ctx *ctx);

/* Enables or disables recording; returns the previous setting, so an
 * evaluation pass is written
 *     bool prev = gcn_set_grad_enabled(ctx, false); ...; gcn_set_grad_enabled(ctx, prev); */
bool gcn_set_grad_enabled(gcn_ctx *ctx, bool enabled);
bool gcn_grad_enabled(const gcn_ctx *ctx);

/* Runs the following statement or block with recording disabled, restoring
 * the previous setting after it:  GCN_NO_GRAD(ctx) { forward for eval; }
 * Leaving the block by return, break or goto skips the restore. */
#define GCN_NO_GRAD(ctx)                                                          \
    for (int gcn_ng_prev_ = gcn_set_grad_enabled((ctx), false), gcn_ng_once_ = 1; \
         gcn_ng_once_; gcn_ng_once_ = 0, gcn_set_grad_enabled((ctx), gcn_ng_prev_))

#ifdef __cplusplus
}
#endif
#endif
