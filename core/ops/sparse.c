/* The product of a constant sparse matrix, with dropout, and a dense
 * weight: the first layer of a model whose input features are mostly zeros
 * (bag-of-words), without multiplying, or drawing masks for, the zeros. */
#include "core/internal.h"

/* c (+)= dropout_p(op(x)) b, op(x) = x, or its stored transpose with the
 * mask still drawn for x's own elements. */
static gcn_status product(gcn_ctx *ctx, const gcn_csr *x, bool transposed, float p,
                          gcn_draw_offset offset, const float *b, int64_t n, float *c, bool acc)
{
    const gcn_csr *a = transposed ? gcn_csr_transpose(x) : x;
    gcn_sparse_mm_args args = {.rows = a->n_rows,
                               .nnz = a->nnz,
                               .row_ptr = a->row_ptr,
                               .col_idx = a->col_idx,
                               .values = a->values,
                               .transposed = transposed,
                               .draw_cols = x->n_cols,
                               .p = p,
                               .key = {ctx->rng_key[0], ctx->rng_key[1]},
                               .offset = offset,
                               .n = n,
                               .b = b,
                               .c = c,
                               .acc = acc};
    return ctx->be->sparse_mm(ctx, &args);
}

/* dW (+)= dropout(x)^T dY, through x's stored transpose. */
static gcn_status sparse_matmul_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *w = nd->in[0], *dy = nd->out->grad;
    float *buf;
    bool acc;
    GCN_TRY(gcn_grad_slot(ctx, w, &buf, &acc));
    return product(ctx, nd->matrix, true, (float)nd->param[0], nd->offset, dy->data, dy->cols,
                   buf, acc);
}

static gcn_status sparse_matmul_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    return product(ctx, sp->matrix, false, (float)sp->param[0], sp->offset, sp->in[0]->data,
                   y->cols, y->data, false);
}

gcn_status gcn_sparse_dropout_matmul(gcn_ctx *ctx, const gcn_csr *x, float p, bool training,
                                     gcn_tensor *w, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_ARG(ctx, x);
    GCN_TRY(gcn_check_tensor(ctx, w, "sparse_dropout_matmul w"));
    if (x->priv->ctx != ctx || x->device != ctx->device)
        return GCN_ERROR(ctx, GCN_ERR_DEVICE,
                         "sparse_dropout_matmul: the matrix belongs to another context");
    if (!(p >= 0.0f && p < 1.0f))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "sparse_dropout_matmul: p = %g is not in [0, 1)", (double)p);
    if (x->n_cols != w->rows)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE,
                         "sparse_dropout_matmul: x is %d x %d but w is [%lld, %lld]", x->n_rows,
                         x->n_cols, (long long)w->rows, (long long)w->cols);
    bool drops = training && p > 0.0f;
    gcn_op_spec spec = {.name = "sparse_dropout_matmul",
                        .forward = sparse_matmul_forward,
                        .backward = sparse_matmul_backward,
                        .in = &w,
                        .n_in = 1,
                        .rows = x->n_rows,
                        .cols = w->cols,
                        .param = {drops ? p : 0.0f},
                        .matrix = x};
    if (drops) /* the draws of gcn_dropout on x's dense form */
        spec.offset = gcn_rng_reserve_dropout_rows(ctx, x->n_rows, x->n_cols);
    return gcn_op_run(ctx, &spec, out);
}
