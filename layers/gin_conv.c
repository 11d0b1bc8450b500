/* GINConv: y = MLP((1 + eps) x + sum of neighbour rows), MLP = Linear ->
 * BatchNorm1d -> ReLU -> Linear, the middle three as one epilogue fused
 * into the second product. */
#include "../core/internal.h"
#include "../kernels/spmm/spmm.h"
#include "internal.h"

gcn_status gcn_gin_conv_init(gcn_ctx *ctx, gcn_gin_conv *conv, int64_t in, int64_t hidden,
                             int64_t out, float eps, bool train_eps)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, conv);
    gcn_status st;
    *conv = (gcn_gin_conv){.eps_fixed = eps, .train_eps = train_eps};
    GCN_CHECK(gcn_linear_init(ctx, &conv->lin1, in, hidden, true));
    GCN_CHECK(gcn_batchnorm1d_init(ctx, &conv->bn, hidden));
    GCN_CHECK(gcn_linear_init(ctx, &conv->lin2, hidden, out, true));
    GCN_CHECK(gcn_tensor_from_host(ctx, &conv->eps, &eps, 1, 1));
    if (train_eps)
        GCN_CHECK(gcn_tensor_set_requires_grad(conv->eps, true));
    return GCN_OK;
cleanup:
    gcn_gin_conv_release(conv);
    return st;
}

/* h = (1 + eps) x + A x: one fused op for a fixed eps; a trained eps goes
 * through scale_by (x + eps x) so that it receives a gradient. */
static gcn_status combine(gcn_ctx *ctx, const gcn_gin_conv *conv, const gcn_csr *adj,
                          gcn_tensor *x, gcn_tensor **h)
{
    if (!conv->train_eps)
        return gcn_spmm_self(ctx, adj, x, 1.0f + conv->eps_fixed, h);
    gcn_status st;
    gcn_tensor *ax = NULL, *ex = NULL, *xe = NULL;
    GCN_CHECK(gcn_spmm(ctx, adj, x, &ax));
    GCN_CHECK(gcn_scale_by(ctx, x, conv->eps, &ex));
    GCN_CHECK(gcn_add(ctx, x, ex, &xe));
    GCN_CHECK(gcn_add(ctx, xe, ax, h));
cleanup:
    gcn_tensor_free(&ax);
    gcn_tensor_free(&ex);
    gcn_tensor_free(&xe);
    return st;
}

/* z = h W1 of h = combine(x), and in *e the hidden layer's bias, norm and
 * activation, which the second product applies (gcn_epilogue_matmul). */
static gcn_status hidden(gcn_ctx *ctx, const gcn_gin_conv *conv, const gcn_csr *adj,
                         gcn_tensor *x, gcn_tensor **z, gcn_epilogue *e)
{
    *e = (gcn_epilogue){.bias = conv->lin1.bias,
                        .gamma = conv->bn.gamma,
                        .beta = conv->bn.beta,
                        .running_mean = conv->bn.running_mean,
                        .running_var = conv->bn.running_var,
                        .momentum = conv->bn.momentum,
                        .eps = conv->bn.eps,
                        .act = GCN_ACT_RELU};
    gcn_tensor *h = NULL;
    GCN_TRY(combine(ctx, conv, adj, x, &h));
    gcn_status st = gcn_matmul(ctx, h, conv->lin1.weight, false, false, z);
    gcn_tensor_free(&h);
    return st;
}

gcn_status gcn_gin_conv_forward_nobias(gcn_ctx *ctx, const gcn_gin_conv *conv,
                                       const gcn_csr *adj, gcn_tensor *x, bool training,
                                       gcn_tensor **y)
{
    GCN_TRY(gcn_op_begin(ctx, y));
    GCN_ARG(ctx, conv && adj);
    gcn_tensor *z = NULL;
    gcn_epilogue e;
    GCN_TRY(hidden(ctx, conv, adj, x, &z, &e));
    gcn_status st = gcn_epilogue_matmul(ctx, z, &e, training, conv->lin2.weight, y);
    gcn_tensor_free(&z);
    return st;
}

gcn_status gcn_gin_conv_forward(gcn_ctx *ctx, const gcn_gin_conv *conv, const gcn_csr *adj,
                                gcn_tensor *x, bool training, gcn_tensor **y)
{
    GCN_TRY(gcn_op_begin(ctx, y));
    GCN_ARG(ctx, conv && adj);
    gcn_tensor *t = NULL;
    GCN_TRY(gcn_gin_conv_forward_nobias(ctx, conv, adj, x, training, &t));
    gcn_status st = gcn_add_bias(ctx, t, conv->lin2.bias, y);
    gcn_tensor_free(&t);
    return st;
}

void gcn_gin_conv_release(gcn_gin_conv *conv)
{
    if (!conv)
        return;
    gcn_linear_release(&conv->lin1);
    gcn_batchnorm1d_release(&conv->bn);
    gcn_linear_release(&conv->lin2);
    gcn_tensor_free(&conv->eps);
}

int gcn_gin_conv_params(const gcn_gin_conv *conv, gcn_tensor **params)
{
    int n = gcn_linear_params(&conv->lin1, params);
    n += gcn_batchnorm1d_params(&conv->bn, params + n);
    n += gcn_linear_params(&conv->lin2, params + n);
    if (conv->train_eps)
        params[n++] = conv->eps;
    return n;
}
