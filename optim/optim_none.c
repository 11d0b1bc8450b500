/* The optimisers' CUDA step in a build without CUDA (make CUDA=0): no
 * context is on a GPU, so it answers as such a machine would. */
#include "optim_impl.h"

#define NO_CUDA(ctx, what) \
    GCN_ERROR((ctx), GCN_ERR_UNSUPPORTED, "%s: this build has no CUDA (make CUDA=0)", (what))

gcn_status gcn_optim_cuda_update(gcn_ctx *ctx, gcn_optim_kind kind, const gcn_optim_hparams *h,
                                 const gcn_optim_step_state *s, const gcn_optim_batch *b)
{
    (void)kind;
    (void)h;
    (void)s;
    (void)b;
    return NO_CUDA(ctx, "optimiser step");
}

gcn_status gcn_optim_cuda_advance(gcn_ctx *ctx, const gcn_optim_hparams *h,
                                  const gcn_optim_step_state *s)
{
    (void)h;
    (void)s;
    return NO_CUDA(ctx, "optimiser step");
}
