/* bf16 storage around fp32 arithmetic: an op given bf16 operands runs its
 * fp32 forward and backward on widened copies and rounds what it stores,
 * so each stored bf16 tensor holds what a kernel reading bf16, computing
 * in fp32 and rounding its output once would store. */
#include "core/internal.h"

/* An fp32 stand-in for t: t itself when it is fp32 and not to be rounded;
 * else a new tensor of t's values widened (bf16) or rounded to bf16 and
 * widened (`round`: a product's fp32 operand, read as bf16 as a tensor
 * core reads it).  Values dropped after use stay dropped.  The stand-in
 * requires a gradient when t does. */
static gcn_status stand_in(gcn_ctx *ctx, gcn_tensor *t, bool round, gcn_tensor **out)
{
    if (!t || (t->dtype == GCN_DTYPE_FP32 && !round)) {
        *out = gcn_tensor_retain(t);
        return GCN_OK;
    }
    int64_t n = t->rows * t->cols;
    gcn_tensor *w = NULL;
    gcn_status st;
    GCN_CHECK(gcn_tensor_create(ctx, &w, t->rows, t->cols));
    if (!t->data && n > 0) {
        gcn_tensor_drop_values(w);
    } else if (t->dtype == GCN_DTYPE_BF16) {
        GCN_CHECK(ctx->be->from_bf16(ctx, n, t->bf16, w->data, false));
    } else {
        GCN_CHECK(ctx->be->copy(ctx, w->data, t->data, (size_t)n * sizeof(float)));
        GCN_CHECK(gcn_mixed_round(ctx, w));
    }
    w->requires_grad = t->requires_grad;
    *out = w;
    w = NULL;
cleanup:
    gcn_tensor_free(&w);
    return st;
}

gcn_status gcn_mixed_round(gcn_ctx *ctx, gcn_tensor *t)
{
    gcn_tensor *b = NULL;
    int64_t n = t->rows * t->cols;
    GCN_TRY(gcn_tensor_create_dtype(ctx, &b, t->rows, t->cols, GCN_DTYPE_BF16));
    gcn_status st = ctx->be->to_bf16(ctx, n, t->data, b->bf16, false);
    if (st == GCN_OK)
        st = ctx->be->from_bf16(ctx, n, b->bf16, t->data, false);
    gcn_tensor_free(&b);
    return st;
}

bool gcn_mixed_wanted(const gcn_op_spec *spec)
{
    for (int i = 0; i < spec->n_in && i < GCN_MIXED_MAX_IN; i++)
        if ((spec->bf16_in >> i & 1u) && spec->in[i] && spec->in[i]->dtype == GCN_DTYPE_BF16)
            return true;
    return false;
}

gcn_status gcn_mixed_forward(gcn_ctx *ctx, gcn_op_spec *spec, gcn_tensor *y)
{
    gcn_tensor *sh[GCN_MIXED_MAX_IN] = {0}, *y32 = NULL;
    gcn_tensor *const *in = spec->in;
    int n = spec->n_in;
    gcn_status st = GCN_OK;
    if (n > GCN_MIXED_MAX_IN)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "%s: more than %d inputs in bf16", spec->name,
                         GCN_MIXED_MAX_IN);
    for (int i = 0; i < n; i++)
        GCN_CHECK(stand_in(ctx, in[i], spec->round_in >> i & 1u, &sh[i]));
    GCN_CHECK(gcn_tensor_create(ctx, &y32, y->rows, y->cols));
    spec->in = sh;
    st = spec->forward(ctx, spec, y32);
    spec->in = in;
    GCN_CHECK(st);
    GCN_CHECK(ctx->be->to_bf16(ctx, y->rows * y->cols, y32->data, y->bf16, false));
cleanup:
    for (int i = 0; i < n; i++)
        gcn_tensor_free(&sh[i]);
    gcn_tensor_free(&y32);
    return st;
}

/* dst's gradient (+)= src's, converting to dst's dtype. */
static gcn_status add_grad(gcn_ctx *ctx, gcn_tensor *dst, const gcn_tensor *src)
{
    float *buf;
    bool acc;
    GCN_TRY(gcn_grad_slot(ctx, dst, &buf, &acc));
    int64_t n = dst->rows * dst->cols;
    if (dst->dtype == GCN_DTYPE_BF16)
        return ctx->be->to_bf16(ctx, n, src->grad->data, dst->grad->bf16, acc);
    return ctx->be->axpby(ctx, n, 1.0f, src->grad->data, acc ? 1.0f : 0.0f, buf);
}

gcn_status gcn_mixed_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *sh[GCN_MIXED_MAX_IN] = {0}, *real[GCN_MIXED_MAX_IN] = {0};
    gcn_tensor *out = nd->out, *out32 = NULL;
    int n = nd->n_in;
    gcn_status st;
    for (int i = 0; i < n; i++) {
        real[i] = nd->in[i];
        GCN_CHECK(stand_in(ctx, real[i], nd->round_in >> i & 1u, &sh[i]));
    }
    GCN_CHECK(stand_in(ctx, out, false, &out32));
    GCN_CHECK(stand_in(ctx, out->grad, false, &out32->grad));
    out32->is_leaf = false;
    for (int i = 0; i < n; i++)
        nd->in[i] = sh[i];
    nd->out = out32;
    st = nd->backward(ctx, nd);
    nd->out = out;
    for (int i = 0; i < n; i++)
        nd->in[i] = real[i];
    GCN_CHECK(st);
    for (int i = 0; i < n; i++)
        if (sh[i] && sh[i] != real[i] && sh[i]->grad)
            GCN_CHECK(add_grad(ctx, real[i], sh[i]));
cleanup:
    for (int i = 0; i < n; i++)
        gcn_tensor_free(&sh[i]);
    gcn_tensor_free(&out32);
    return st;
}
