/* The fused block tail: bias, batch norm, activation and dropout as one
 * differentiable op (gcn_apply_epilogue in ops.h). */
#include "internal.h"

/* param[0] holds which stages the node has, as bits. */
enum { HAS_BIAS = 1, HAS_NORM = 2, BATCH_STATS = 4 };

static gcn_status check_spec(gcn_ctx *ctx, const gcn_tensor *x, const gcn_epilogue *e,
                             bool training)
{
    GCN_TRY(gcn_check_tensor(ctx, x, "epilogue input"));
    if (e->bias)
        GCN_TRY(gcn_check_row_vector(ctx, e->bias, "epilogue", "bias", x->cols));
    if (e->gamma) {
        const gcn_tensor *v[4] = {e->gamma, e->beta, e->running_mean, e->running_var};
        const char *names[4] = {"gamma", "beta", "running_mean", "running_var"};
        for (int i = 0; i < 4; i++)
            GCN_TRY(gcn_check_row_vector(ctx, v[i], "epilogue", names[i], x->cols));
        if (!(e->eps > 0.0f) || !(e->momentum >= 0.0f && e->momentum <= 1.0f))
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                             "epilogue: batch norm eps = %g must be > 0 and momentum = %g in "
                             "[0, 1]", (double)e->eps, (double)e->momentum);
        if (training && x->rows < 2)
            return GCN_ERROR(ctx, GCN_ERR_SHAPE,
                             "epilogue: batch norm in training needs at least 2 rows, got %lld",
                             (long long)x->rows);
    }
    if (e->act != GCN_ACT_NONE && e->act != GCN_ACT_RELU && e->act != GCN_ACT_ELU)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "epilogue: unknown activation %d",
                         (int)e->act);
    if (e->act == GCN_ACT_ELU && !(e->alpha > 0.0f))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "epilogue: ELU alpha = %g must be > 0",
                         (double)e->alpha);
    if (!(e->dropout >= 0.0f && e->dropout < 1.0f))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "epilogue: dropout p = %g is not in [0, 1)",
                         (double)e->dropout);
    return GCN_OK;
}

/* The node's inputs are x, then bias, then gamma and beta, each when present. */
static gcn_epilogue_args node_args(gcn_ctx *ctx, const gcn_node *nd)
{
    int flags = (int)nd->param[0], k = 1;
    gcn_tensor *x = nd->in[0];
    gcn_epilogue_args a = {.rows = x->rows,
                           .cols = x->cols,
                           .x = x->data,
                           .batch_stats = flags & BATCH_STATS,
                           .act = (gcn_activation)(int)nd->param[1],
                           .alpha = (float)nd->param[2],
                           .p = (float)nd->param[3],
                           .key = {ctx->rng_key[0], ctx->rng_key[1]},
                           .offset = nd->offset};
    if (flags & HAS_BIAS)
        a.bias = nd->in[k++]->data;
    if (flags & HAS_NORM) {
        a.gamma = nd->in[k]->data;
        a.beta = nd->in[k + 1]->data;
        a.mean = nd->saved[0]->data;
        a.invstd = nd->saved[1]->data;
    }
    return a;
}

static gcn_status epilogue_backward(gcn_ctx *ctx, gcn_node *nd)
{
    int flags = (int)nd->param[0], k = 1;
    gcn_epilogue_args a = node_args(ctx, nd);
    gcn_epilogue_grads g = {0};
    /* both backends read dout[i] before they write dx[i]: dx may be dout */
    if (nd->in[0]->requires_grad)
        GCN_TRY(gcn_grad_slot_reuse(ctx, nd->in[0], nd->out->grad, &g.dx, &g.acc_x));
    if (flags & HAS_BIAS)
        GCN_TRY(gcn_grad_slot_opt(ctx, nd->in[k++], &g.dbias, &g.acc_bias));
    if (flags & HAS_NORM) {
        GCN_TRY(gcn_grad_slot_opt(ctx, nd->in[k], &g.dgamma, &g.acc_gamma));
        GCN_TRY(gcn_grad_slot_opt(ctx, nd->in[k + 1], &g.dbeta, &g.acc_beta));
    }
    return ctx->be->epilogue_backward(ctx, &a, nd->out->grad->data, &g);
}

gcn_status gcn_apply_epilogue(gcn_ctx *ctx, gcn_tensor *x, const gcn_epilogue *e, bool training,
                              gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_ARG(ctx, e);
    GCN_TRY(check_spec(ctx, x, e, training));
    float p = training ? e->dropout : 0.0f;
    bool batch_stats = e->gamma && training;
    gcn_epilogue_args a = {.rows = x->rows,
                           .cols = x->cols,
                           .x = x->data,
                           .bias = e->bias ? e->bias->data : NULL,
                           .batch_stats = batch_stats,
                           .act = e->act,
                           .alpha = e->alpha,
                           .p = p,
                           .key = {ctx->rng_key[0], ctx->rng_key[1]}};
    gcn_tensor *y = NULL, *mean = NULL, *invstd = NULL;
    gcn_node *nd;
    gcn_status st;
    if (p > 0.0f)
        a.offset = gcn_rng_reserve_dropout(ctx, (uint64_t)(x->rows * x->cols));
    if (e->gamma) {
        GCN_CHECK(gcn_tensor_create(ctx, &invstd, 1, x->cols));
        if (batch_stats)
            GCN_CHECK(gcn_tensor_create(ctx, &mean, 1, x->cols));
        else
            mean = gcn_tensor_retain(e->running_mean);
        GCN_CHECK(ctx->be->epilogue_stats(ctx, x->rows, x->cols, x->data, a.bias, batch_stats,
                                          e->momentum, e->eps, e->running_mean->data,
                                          e->running_var->data, mean->data, invstd->data));
        a.gamma = e->gamma->data;
        a.beta = e->beta->data;
        a.mean = mean->data;
        a.invstd = invstd->data;
    }
    GCN_CHECK(gcn_tensor_create(ctx, &y, x->rows, x->cols));
    GCN_CHECK(ctx->be->epilogue_forward(ctx, &a, y->data));
    gcn_tensor *in[4] = {x};
    int n_in = 1, flags = 0;
    if (e->bias) {
        in[n_in++] = e->bias;
        flags |= HAS_BIAS;
    }
    if (e->gamma) {
        in[n_in++] = e->gamma;
        in[n_in++] = e->beta;
        flags |= HAS_NORM | (batch_stats ? BATCH_STATS : 0);
    }
    GCN_CHECK(gcn_tape_record(ctx, "epilogue", epilogue_backward, in, n_in, y, &nd));
    if (nd) {
        nd->saved[0] = mean;
        nd->saved[1] = invstd;
        mean = invstd = NULL;
        nd->param[0] = flags;
        nd->param[1] = e->act;
        nd->param[2] = e->alpha;
        nd->param[3] = p;
        nd->offset = a.offset;
    }
    *out = y;
    y = NULL;
cleanup:
    gcn_tensor_free(&mean);
    gcn_tensor_free(&invstd);
    gcn_tensor_free(&y);
    return st;
}
