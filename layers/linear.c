/* Linear, BatchNorm1d and the activations. */
#include "../core/internal.h"
#include "layers.h"

gcn_status gcn_linear_init(gcn_ctx *ctx, gcn_linear *l, int64_t in, int64_t out, bool bias)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, l && in >= 1 && out >= 1);
    gcn_status st;
    *l = (gcn_linear){.in = in, .out = out};
    GCN_CHECK(gcn_tensor_create(ctx, &l->weight, in, out));
    GCN_CHECK(gcn_init_glorot_uniform(ctx, l->weight, in, out, 1.0f));
    GCN_CHECK(gcn_tensor_set_requires_grad(l->weight, true));
    if (bias) {
        GCN_CHECK(gcn_tensor_zeros(ctx, &l->bias, 1, out));
        GCN_CHECK(gcn_tensor_set_requires_grad(l->bias, true));
    }
    return GCN_OK;
cleanup:
    gcn_linear_release(l);
    return st;
}

gcn_status gcn_linear_forward(gcn_ctx *ctx, const gcn_linear *l, gcn_tensor *x, gcn_tensor **y)
{
    if (!l || !l->bias)
        return gcn_matmul(ctx, x, l ? l->weight : NULL, false, false, y);
    return gcn_matmul_bias(ctx, x, l->weight, l->bias, y);
}

void gcn_linear_release(gcn_linear *l)
{
    if (!l)
        return;
    gcn_tensor_free(&l->weight);
    gcn_tensor_free(&l->bias);
}

int gcn_linear_params(const gcn_linear *l, gcn_tensor **params)
{
    int n = 0;
    params[n++] = l->weight;
    if (l->bias)
        params[n++] = l->bias;
    return n;
}

gcn_status gcn_batchnorm1d_init(gcn_ctx *ctx, gcn_batchnorm1d *bn, int64_t feat)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, bn && feat >= 1);
    gcn_status st;
    *bn = (gcn_batchnorm1d){.feat = feat, .momentum = 0.1f, .eps = 1e-5f};
    GCN_CHECK(gcn_tensor_create(ctx, &bn->gamma, 1, feat));
    GCN_CHECK(gcn_tensor_fill(ctx, bn->gamma, 1.0f));
    GCN_CHECK(gcn_tensor_zeros(ctx, &bn->beta, 1, feat));
    GCN_CHECK(gcn_tensor_zeros(ctx, &bn->running_mean, 1, feat));
    GCN_CHECK(gcn_tensor_create(ctx, &bn->running_var, 1, feat));
    GCN_CHECK(gcn_tensor_fill(ctx, bn->running_var, 1.0f));
    GCN_CHECK(gcn_tensor_set_requires_grad(bn->gamma, true));
    GCN_CHECK(gcn_tensor_set_requires_grad(bn->beta, true));
    return GCN_OK;
cleanup:
    gcn_batchnorm1d_release(bn);
    return st;
}

gcn_status gcn_batchnorm1d_forward(gcn_ctx *ctx, const gcn_batchnorm1d *bn, gcn_tensor *x,
                                   bool training, gcn_tensor **y)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, bn);
    return gcn_batchnorm(ctx, x, bn->gamma, bn->beta, bn->running_mean, bn->running_var,
                         training, bn->momentum, bn->eps, y);
}

void gcn_batchnorm1d_release(gcn_batchnorm1d *bn)
{
    if (!bn)
        return;
    gcn_tensor_free(&bn->gamma);
    gcn_tensor_free(&bn->beta);
    gcn_tensor_free(&bn->running_mean);
    gcn_tensor_free(&bn->running_var);
}

int gcn_batchnorm1d_params(const gcn_batchnorm1d *bn, gcn_tensor **params)
{
    params[0] = bn->gamma;
    params[1] = bn->beta;
    return 2;
}

gcn_status gcn_activate(gcn_ctx *ctx, gcn_activation act, gcn_tensor *x, gcn_tensor **y)
{
    switch (act) {
    case GCN_ACT_NONE:
        GCN_TRY(gcn_op_begin(ctx, y));
        GCN_TRY(gcn_check_tensor(ctx, x, "activation input"));
        *y = gcn_tensor_retain(x);
        return GCN_OK;
    case GCN_ACT_RELU:
        return gcn_relu(ctx, x, y);
    case GCN_ACT_ELU:
        return gcn_elu(ctx, x, 1.0f, y);
    }
    return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "unknown activation %d", (int)act);
}
