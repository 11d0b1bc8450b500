/* The GPU split of a build without CUDA (make CUDA=0, and the fuzz
 * targets): no context is on a GPU, so it answers as such a machine would. */
#include "plan.h"

#define NO_CUDA(ctx, what) \
    GCN_ERROR((ctx), GCN_ERR_UNSUPPORTED, "%s: this build has no CUDA (make CUDA=0)", (what))

gcn_status gcn_split_cuda(gcn_ctx *ctx, const gcn_csr *a, const gcn_csr_level *lv,
                          gcn_csr **intra, gcn_csr **inter)
{
    (void)a;
    (void)lv;
    *intra = *inter = NULL;
    return NO_CUDA(ctx, "community split");
}
