/* The fused block tail: bias, batch norm, activation and dropout as one
 * differentiable op (gcn_apply_epilogue in ops.h). */
#include "core/comm.h"
#include "core/internal.h"

/* param[0] holds which stages the node has, as bits. */
enum { HAS_BIAS = 1, HAS_NORM = 2, BATCH_STATS = 4 };

static gcn_status check_spec(gcn_ctx *ctx, const gcn_tensor *x, const gcn_epilogue *e,
                             bool training)
{
    GCN_TRY(gcn_check_tensor_any(ctx, x, "epilogue input"));
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
        if (training && x->rows < 2 && gcn_ctx_ranks(ctx) == 1)
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

/* The node's inputs are x, then (from index `first`) bias, then gamma and
 * beta, each when present. */
static gcn_epilogue_args node_args(gcn_ctx *ctx, const gcn_node *nd, int first)
{
    int flags = (int)nd->param[0], k = first;
    gcn_tensor *x = nd->in[0];
    gcn_epilogue_args a = {.rows = x->rows,
                           .cols = x->cols,
                           .dtype = x->dtype,
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

/* The gradient buffers of the stage parameters (inputs from `first` on). */
static gcn_status stage_grads(gcn_ctx *ctx, gcn_node *nd, int first, gcn_epilogue_grads *g)
{
    int flags = (int)nd->param[0], k = first;
    if (flags & HAS_BIAS)
        GCN_TRY(gcn_grad_slot_opt(ctx, nd->in[k++], &g->dbias, &g->acc_bias));
    if (flags & HAS_NORM) {
        GCN_TRY(gcn_grad_slot_opt(ctx, nd->in[k], &g->dgamma, &g->acc_gamma));
        GCN_TRY(gcn_grad_slot_opt(ctx, nd->in[k + 1], &g->dbeta, &g->acc_beta));
    }
    return GCN_OK;
}

/* x's gradient buffer into g, taking over donor's when it can. */
static gcn_status dx_slot(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor *donor, gcn_epilogue_grads *g)
{
    float *dx;
    GCN_TRY(gcn_grad_slot_reuse(ctx, x, donor, &dx, &g->acc_x));
    g->dx = dx;
    return GCN_OK;
}

static gcn_status epilogue_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_epilogue_args a = node_args(ctx, nd, 1);
    gcn_epilogue_grads g = {0};
    /* both backends read dout[i] before they write dx[i]: dx may be dout */
    if (nd->in[0]->requires_grad)
        GCN_TRY(dx_slot(ctx, nd->in[0], nd->out->grad, &g));
    GCN_TRY(stage_grads(ctx, nd, 1, &g));
    return ctx->be->epilogue_backward(ctx, &a, nd->out->grad->data, &g);
}

/* The arguments of e on x, its dropout draw reserved, and with batch norm
 * the statistics: *mean and *invstd are new [1, f] tensors (in eval, *mean
 * is the running mean, retained); the caller frees them. */
static gcn_status prepare(gcn_ctx *ctx, gcn_tensor *x, const gcn_epilogue *e, bool training,
                          gcn_epilogue_args *a, gcn_tensor **mean, gcn_tensor **invstd)
{
    float p = training ? e->dropout : 0.0f;
    bool batch_stats = e->gamma && training;
    *a = (gcn_epilogue_args){.rows = x->rows,
                             .cols = x->cols,
                             .dtype = x->dtype,
                             .x = x->data,
                             .bias = e->bias ? e->bias->data : NULL,
                             .batch_stats = batch_stats,
                             .act = e->act,
                             .alpha = e->alpha,
                             .p = p,
                             .key = {ctx->rng_key[0], ctx->rng_key[1]}};
    if (p > 0.0f)
        a->offset = gcn_rng_reserve_dropout_rows(ctx, x->rows, x->cols);
    if (!e->gamma)
        return GCN_OK;
    GCN_TRY(gcn_tensor_create(ctx, invstd, 1, x->cols));
    if (batch_stats)
        GCN_TRY(gcn_tensor_create(ctx, mean, 1, x->cols));
    else
        *mean = gcn_tensor_retain(e->running_mean);
    GCN_TRY(ctx->be->epilogue_stats(ctx, x->rows, x->cols, x->data, x->dtype, a->bias, batch_stats,
                                    e->momentum, e->eps, e->running_mean->data,
                                    e->running_var->data, (*mean)->data, (*invstd)->data));
    a->gamma = e->gamma->data;
    a->beta = e->beta->data;
    a->mean = (*mean)->data;
    a->invstd = (*invstd)->data;
    return GCN_OK;
}

/* Appends e's parameters to in[] from index n (bias, then gamma and beta);
 * returns the new count and sets the node's stage bits in *flags. */
static int stage_inputs(const gcn_epilogue *e, bool batch_stats, gcn_tensor **in, int n,
                        int *flags)
{
    *flags = 0;
    if (e->bias) {
        in[n++] = e->bias;
        *flags |= HAS_BIAS;
    }
    if (e->gamma) {
        in[n++] = e->gamma;
        in[n++] = e->beta;
        *flags |= HAS_NORM | (batch_stats ? BATCH_STATS : 0);
    }
    return n;
}

/* e^T dY into dW (fp32), or with bf16 operands from e and dY's bf16 values
 * and w's bf16 copy, the sums in fp32. */
static gcn_status weight_grad(gcn_ctx *ctx, gcn_tensor *w, const gcn_tensor *e,
                              const gcn_tensor *dy)
{
    float *dw;
    bool acc;
    int64_t rows = e->rows, f = e->cols, n = w->cols;
    GCN_TRY(gcn_grad_slot(ctx, w, &dw, &acc));
    if (e->dtype == GCN_DTYPE_BF16)
        return ctx->be->gemm_bf16(ctx, true, false, f, n, rows, 1.0f, e->bf16, f, dy->bf16, n,
                                  acc ? 1.0f : 0.0f, dw, n, false);
    return ctx->be->gemm(ctx, true, false, f, n, rows, 1.0f, e->data, f, dy->data, n,
                         acc ? 1.0f : 0.0f, dw, n);
}

/* out[rows, n] = e w, e of out's dtype: bf16 on tensor cores (w through
 * its bf16 copy), rounded once. */
static gcn_status product(gcn_ctx *ctx, const gcn_tensor *e, gcn_tensor *w, bool trans_w,
                          gcn_tensor *out)
{
    int64_t k = e->cols;
    if (out->dtype != GCN_DTYPE_BF16)
        return ctx->be->gemm(ctx, false, trans_w, out->rows, out->cols, k, 1.0f, e->data, k,
                             w->data, w->cols, 0.0f, out->data, out->cols);
    const uint16_t *w16;
    GCN_TRY(gcn_tensor_half(ctx, w, &w16));
    return ctx->be->gemm_bf16(ctx, false, trans_w, out->rows, out->cols, k, 1.0f, e->bf16, k, w16,
                              w->cols, 0.0f, out->bf16, out->cols, true);
}

/* Backward recomputes the epilogue's output into the buffer that then takes
 * its gradient: dW = e^T dY first, then de = dY W^T over e, then the
 * epilogue's backward, which may write dx over de.  The same backend calls
 * with the same arguments as matmul's and the epilogue's backward; a bf16
 * x keeps e and de in bf16. */
static gcn_status epilogue_matmul_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *x = nd->in[0], *w = nd->in[1], *dy = nd->out->grad, *de = NULL;
    gcn_epilogue_args a = node_args(ctx, nd, 2);
    gcn_epilogue_grads g = {0};
    gcn_status st;
    GCN_CHECK(gcn_tensor_create_dtype(ctx, &de, x->rows, x->cols, x->dtype));
    if (w->requires_grad) {
        GCN_CHECK(ctx->be->epilogue_forward(ctx, &a, de->data));
        GCN_CHECK(weight_grad(ctx, w, de, dy));
    }
    GCN_CHECK(product(ctx, dy, w, true, de));
    if (x->requires_grad)
        GCN_CHECK(dx_slot(ctx, x, de, &g));
    GCN_CHECK(stage_grads(ctx, nd, 2, &g));
    GCN_CHECK(ctx->be->epilogue_backward(ctx, &a, de->data, &g));
cleanup:
    gcn_tensor_free(&de);
    return st;
}

/* epilogue_op's operands besides the spec's inputs. */
typedef struct epilogue_call {
    const gcn_epilogue *e;
    bool training;
    gcn_tensor *w; /* or NULL */
} epilogue_call;

/* y = epilogue(x), or with w, y = epilogue(x) w through a temporary of x's
 * dtype; puts what backward needs besides the inputs into the spec. */
static gcn_status epilogue_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    const epilogue_call *c = sp->args;
    gcn_tensor *x = sp->in[0], *ex = NULL;
    gcn_epilogue_args a;
    gcn_status st;
    GCN_TRY(prepare(ctx, x, c->e, c->training, &a, &sp->saved[0], &sp->saved[1]));
    sp->param[1] = a.act;
    sp->param[2] = a.alpha;
    sp->param[3] = a.p;
    sp->offset = a.offset;
    if (!c->w)
        return ctx->be->epilogue_forward(ctx, &a, y->data);
    GCN_CHECK(gcn_tensor_create_dtype(ctx, &ex, x->rows, x->cols, x->dtype));
    GCN_CHECK(ctx->be->epilogue_forward(ctx, &a, ex->data));
    GCN_CHECK(product(ctx, ex, c->w, false, y));
cleanup:
    gcn_tensor_free(&ex);
    return st;
}

/* y = epilogue(x), or with w, y = epilogue(x) w without keeping epilogue(x). */
static gcn_status epilogue_op(gcn_ctx *ctx, gcn_tensor *x, const gcn_epilogue *e, bool training,
                              gcn_tensor *w, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_ARG(ctx, e);
    GCN_TRY(check_spec(ctx, x, e, training));
    if (w) {
        GCN_TRY(gcn_check_tensor(ctx, w, "epilogue_matmul weight"));
        if (w->rows != x->cols)
            return GCN_ERROR(ctx, GCN_ERR_SHAPE,
                             "epilogue_matmul: x is [%lld, %lld] but the weight is [%lld, %lld]",
                             (long long)x->rows, (long long)x->cols, (long long)w->rows,
                             (long long)w->cols);
    }
    gcn_tensor *in[5] = {x, w};
    int flags, n_in = stage_inputs(e, e->gamma && training, in, w ? 2 : 1, &flags);
    epilogue_call call = {e, training, w};
    gcn_op_spec spec = {.name = w ? "epilogue_matmul" : "epilogue",
                        .forward = epilogue_forward,
                        .backward = w ? epilogue_matmul_backward : epilogue_backward,
                        .in = in,
                        .n_in = n_in,
                        .rows = x->rows,
                        .cols = w ? w->cols : x->cols,
                        .dtype = x->dtype,
                        .args = &call,
                        .param = {flags}};
    return gcn_op_run(ctx, &spec, out);
}

gcn_status gcn_apply_epilogue(gcn_ctx *ctx, gcn_tensor *x, const gcn_epilogue *e, bool training,
                              gcn_tensor **out)
{
    return epilogue_op(ctx, x, e, training, NULL, out);
}

gcn_status gcn_epilogue_matmul(gcn_ctx *ctx, gcn_tensor *x, const gcn_epilogue *e, bool training,
                               gcn_tensor *w, gcn_tensor **out)
{
    return epilogue_op(ctx, x, e, training, w, out);
}
