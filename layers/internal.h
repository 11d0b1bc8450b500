/* Internal to the layers and their tests: the plain forwards, which the
 * models' fused ones (the *_nobias and *_after forwards with an epilogue)
 * replace and the tests check them against, and the GCN layer's cache. */
#ifndef GCN_LAYERS_INTERNAL_H
#define GCN_LAYERS_INTERNAL_H

#include "layers.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = A x W + b. */
gcn_status gcn_gcn_conv_forward(gcn_ctx *ctx, gcn_gcn_conv *conv, const gcn_csr *adj,
                                gcn_tensor *x, gcn_tensor **y);

/* y = MLP((1 + eps) x + A x), the MLP's last bias included. */
gcn_status gcn_gin_conv_forward(gcn_ctx *ctx, const gcn_gin_conv *conv, const gcn_csr *adj,
                                gcn_tensor *x, bool training, gcn_tensor **y);

/* The A x the layer keeps for its constant input, or NULL.  Borrowed. */
const gcn_tensor *gcn_gcn_conv_cached(const gcn_gcn_conv *conv);

#ifdef __cplusplus
}
#endif
#endif
