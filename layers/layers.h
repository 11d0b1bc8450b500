/* Neural-network layers built from the differentiable ops: Linear,
 * BatchNorm1d, activations, GCNConv and GINConv.  A layer owns its parameter
 * tensors; forward returns a new tensor reference the caller frees. */
#ifndef GCN_LAYERS_H
#define GCN_LAYERS_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/csr.h"
#include "../core/ops.h"
#include "../core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bound on the parameter tensors one layer holds (GIN's MLP: 6). */
#define GCN_LAYER_MAX_PARAMS 8

/* y = x W + b: W [in, out] Glorot-uniform, b [1, out] zeros (or absent). */
typedef struct gcn_linear {
    int64_t in, out;
    gcn_tensor *weight, *bias;
} gcn_linear;

GCN_API gcn_status gcn_linear_init(gcn_ctx *ctx, gcn_linear *l, int64_t in, int64_t out, bool bias);
GCN_API gcn_status gcn_linear_forward(gcn_ctx *ctx, const gcn_linear *l, gcn_tensor *x,
                                      gcn_tensor **y);
GCN_API void gcn_linear_release(gcn_linear *l);

/* BatchNorm1d over rows: gamma 1, beta 0, running mean 0 and variance 1,
 * momentum 0.1, eps 1e-5 (PyTorch's defaults). */
typedef struct gcn_batchnorm1d {
    int64_t feat;
    float momentum, eps;
    gcn_tensor *gamma, *beta;               /* parameters */
    gcn_tensor *running_mean, *running_var; /* buffers */
} gcn_batchnorm1d;

GCN_API gcn_status gcn_batchnorm1d_init(gcn_ctx *ctx, gcn_batchnorm1d *bn, int64_t feat);
GCN_API gcn_status gcn_batchnorm1d_forward(gcn_ctx *ctx, const gcn_batchnorm1d *bn,
                                           gcn_tensor *x, bool training, gcn_tensor **y);
GCN_API void gcn_batchnorm1d_release(gcn_batchnorm1d *bn);

/* y = act(x) (ELU with alpha 1); the identity hands back a new reference to x itself. */
GCN_API gcn_status gcn_activate(gcn_ctx *ctx, gcn_activation act, gcn_tensor *x, gcn_tensor **y);

typedef enum gcn_conv_order {
    GCN_ORDER_AUTO = 0,        /* aggregate first when in < out or the input is cached,
                                * else transform first */
    GCN_ORDER_AGGREGATE_FIRST, /* (A X) W: fewer columns through the SpMM when in < out */
    GCN_ORDER_TRANSFORM_FIRST  /* A (X W) */
} gcn_conv_order;

/* GCNConv (Kipf & Welling): y = A x W + b with A the normalised adjacency
 * D^-1/2 (A + I) D^-1/2.  With cache_input set (which makes AUTO aggregate
 * first), A x of a constant input (one that needs no gradient, e.g. the
 * features into the first layer) is computed once and reused while the
 * same x and A are passed. */
typedef struct gcn_gcn_conv {
    gcn_linear lin;        /* W and b */
    gcn_conv_order order;
    bool cache_input;
    struct gcn_gcn_conv_cache *cache; /* the cached A x: the layer's own */
} gcn_gcn_conv;

GCN_API gcn_status gcn_gcn_conv_init(gcn_ctx *ctx, gcn_gcn_conv *conv, int64_t in, int64_t out,
                                     bool bias);
/* Whether the layer aggregates before transforming (resolves AUTO). */
GCN_API bool gcn_gcn_conv_aggregates_first(const gcn_gcn_conv *conv);
/* y = A x W without the bias, for a caller that adds conv->lin.bias in the
 * op that follows (gcn_apply_epilogue), saving a pass over y. */
GCN_API gcn_status gcn_gcn_conv_forward_nobias(gcn_ctx *ctx, gcn_gcn_conv *conv,
                                               const gcn_csr *adj, gcn_tensor *x, gcn_tensor **y);
/* gcn_gcn_conv_forward_nobias of gcn_apply_epilogue(x, in, training) for a
 * layer that transforms first, with the epilogue fused into the product
 * with W (gcn_epilogue_matmul), so that its output is not kept for
 * backward.  GCN_ERR_STATE for a layer that aggregates first. */
GCN_API gcn_status gcn_gcn_conv_forward_after(gcn_ctx *ctx, gcn_gcn_conv *conv,
                                              const gcn_csr *adj, gcn_tensor *x,
                                              const gcn_epilogue *in, bool training,
                                              gcn_tensor **y);
/* gcn_gcn_conv_forward_nobias of dropout_p(x) for a sparse constant input x
 * (gcn_sparse_dropout_matmul), for a layer that transforms first
 * (GCN_ERR_STATE otherwise). */
GCN_API gcn_status gcn_gcn_conv_forward_sparse(gcn_ctx *ctx, gcn_gcn_conv *conv,
                                               const gcn_csr *adj, const gcn_csr *x, float p,
                                               bool training, gcn_tensor **y);
GCN_API void gcn_gcn_conv_release(gcn_gcn_conv *conv);

/* GINConv (Xu et al.): y = MLP((1 + eps) x + sum_{j in N(i)} x_j) with adj
 * the unnormalised adjacency without self-loops and MLP = Linear ->
 * BatchNorm1d -> ReLU -> Linear.  eps is a [1, 1] tensor, trained when
 * train_eps.  The hidden layer's bias, norm and activation are one
 * epilogue fused into the second product (gcn_epilogue_matmul). */
typedef struct gcn_gin_conv {
    gcn_linear lin1, lin2;
    gcn_batchnorm1d bn;
    gcn_tensor *eps;   /* [1, 1]; a parameter when train_eps */
    float eps_fixed;   /* eps when not trained */
    bool train_eps;
} gcn_gin_conv;

GCN_API gcn_status gcn_gin_conv_init(gcn_ctx *ctx, gcn_gin_conv *conv, int64_t in,
                                     int64_t hidden, int64_t out, float eps, bool train_eps);
/* The same without the MLP's last bias (conv->lin2.bias), for the caller to
 * add in the op that follows. */
GCN_API gcn_status gcn_gin_conv_forward_nobias(gcn_ctx *ctx, const gcn_gin_conv *conv,
                                               const gcn_csr *adj, gcn_tensor *x, bool training,
                                               gcn_tensor **y);
GCN_API void gcn_gin_conv_release(gcn_gin_conv *conv);

/* Appends the layer's trainable tensors to params (room for
 * GCN_LAYER_MAX_PARAMS) and returns how many; borrowed references. */
GCN_API int gcn_linear_params(const gcn_linear *l, gcn_tensor **params);
GCN_API int gcn_batchnorm1d_params(const gcn_batchnorm1d *bn, gcn_tensor **params);
GCN_API int gcn_gin_conv_params(const gcn_gin_conv *conv, gcn_tensor **params);

#ifdef __cplusplus
}
#endif
#endif
