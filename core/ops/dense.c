/* The differentiable dense ops: argument checks, one backend call forward,
 * and the backward rule each records on the tape. */
#include "core/internal.h"

#define NUMEL(t) ((t)->rows * (t)->cols)

static gcn_status shape_error(gcn_ctx *ctx, const char *op, const gcn_tensor *a,
                              const gcn_tensor *b)
{
    return GCN_ERROR(ctx, GCN_ERR_SHAPE, "%s: shapes [%lld, %lld] and [%lld, %lld] do not fit",
                     op, (long long)a->rows, (long long)a->cols, (long long)b->rows,
                     (long long)b->cols);
}

/* dBias (+)= the column sums of dY, for a [1, cols] row added to every row. */
static gcn_status bias_grad(gcn_ctx *ctx, gcn_tensor *bias, const gcn_tensor *dy)
{
    if (!bias->requires_grad)
        return GCN_OK;
    float *buf;
    bool acc;
    GCN_TRY(gcn_grad_slot(ctx, bias, &buf, &acc));
    return ctx->be->col_sum(ctx, dy->rows, dy->cols, dy->data, buf, acc);
}

/* ---- matmul ----------------------------------------------------------- */

/* One product of matmul's backward, c[m,n] (+)= op(a) op(b) into t's
 * gradient buffer: in fp32, or with `half` on the operands' bf16 values
 * (a parameter's bf16 copy), into a gradient of t's dtype. */
static gcn_status grad_product(gcn_ctx *ctx, bool half, gcn_tensor *t, bool ta, bool tb,
                               int64_t m, int64_t n, int64_t k, gcn_tensor *a, int64_t lda,
                               gcn_tensor *b, int64_t ldb)
{
    float *buf;
    bool acc;
    GCN_TRY(gcn_grad_slot(ctx, t, &buf, &acc));
    if (!half)
        return ctx->be->gemm(ctx, ta, tb, m, n, k, 1.0f, a->data, lda, b->data, ldb,
                             acc ? 1.0f : 0.0f, buf, n);
    const uint16_t *a16, *b16;
    GCN_TRY(gcn_tensor_half(ctx, a, &a16));
    GCN_TRY(gcn_tensor_half(ctx, b, &b16));
    return ctx->be->gemm_bf16(ctx, ta, tb, m, n, k, 1.0f, a16, lda, b16, ldb, acc ? 1.0f : 0.0f,
                              buf, n, t->dtype == GCN_DTYPE_BF16);
}

/* A bf16 product (a bf16 output) stores dC in bf16 and computes each
 * gradient from bf16 operands, summing in fp32: dA in a's dtype, and a
 * parameter's dB in fp32. */
static gcn_status matmul_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *a = nd->in[0], *b = nd->in[1], *dc = nd->out->grad;
    bool ta = nd->param[0] != 0, tb = nd->param[1] != 0;
    bool half = nd->out->dtype == GCN_DTYPE_BF16;
    int64_t m = nd->out->rows, n = nd->out->cols, k = ta ? a->rows : a->cols;
    if (a->requires_grad) {
        if (!ta) /* dA[m,k] = dC op(B)^T */
            GCN_TRY(grad_product(ctx, half, a, false, !tb, m, k, n, dc, n, b, b->cols));
        else /* dA[k,m] = op(B) dC^T */
            GCN_TRY(grad_product(ctx, half, a, tb, true, k, m, n, b, b->cols, dc, n));
    }
    if (b->requires_grad) {
        if (!tb) /* dB[k,n] = op(A)^T dC */
            GCN_TRY(grad_product(ctx, half, b, !ta, false, k, n, m, a, a->cols, dc, n));
        else /* dB[n,k] = dC^T op(A) */
            GCN_TRY(grad_product(ctx, half, b, true, ta, n, k, m, dc, n, a, a->cols));
    }
    return GCN_OK;
}

/* matmul's backward, then the bias row's. */
static gcn_status matmul_bias_backward(gcn_ctx *ctx, gcn_node *nd)
{
    GCN_TRY(matmul_backward(ctx, nd));
    return bias_grad(ctx, nd->in[2], nd->out->grad);
}

/* c = op(a) op(b), plus the bias row in[2] when there is one; param = {trans_a, trans_b}. */
static gcn_status matmul_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *c)
{
    gcn_tensor *a = sp->in[0], *b = sp->in[1];
    bool ta = sp->param[0] != 0, tb = sp->param[1] != 0;
    if (c->dtype == GCN_DTYPE_BF16) { /* tensor cores, rounded once into c */
        const uint16_t *a16, *b16;
        GCN_TRY(gcn_tensor_half(ctx, a, &a16));
        GCN_TRY(gcn_tensor_half(ctx, b, &b16));
        return ctx->be->gemm_bf16(ctx, ta, tb, c->rows, c->cols, ta ? a->rows : a->cols, 1.0f, a16,
                                  a->cols, b16, b->cols, 0.0f, c->bf16, c->cols, true);
    }
    GCN_TRY(ctx->be->gemm(ctx, ta, tb, c->rows, c->cols, ta ? a->rows : a->cols, 1.0f, a->data,
                          a->cols, b->data, b->cols, 0.0f, c->data, c->cols));
    if (sp->n_in == 3)
        return ctx->be->add_bias(ctx, c->rows, c->cols, c->data, sp->in[2]->data, c->data);
    return GCN_OK;
}

/* c = op(a) op(b) (+ bias, a [1, n] row added to every row when not NULL).
 * With a bf16 operand the product is bf16 (matmul_forward); with a bias too,
 * it runs on fp32 stand-ins (core/ops/bf16_mixed.c), which round the sum once. */
static gcn_status matmul_op(gcn_ctx *ctx, gcn_tensor *a, gcn_tensor *b, bool trans_a,
                            bool trans_b, gcn_tensor *bias, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor_any(ctx, a, "matmul a"));
    GCN_TRY(gcn_check_tensor_any(ctx, b, "matmul b"));
    int64_t m = trans_a ? a->cols : a->rows, k = trans_a ? a->rows : a->cols;
    int64_t kb = trans_b ? b->cols : b->rows, n = trans_b ? b->rows : b->cols;
    if (k != kb)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE,
                         "matmul: op(a) is [%lld, %lld] but op(b) is [%lld, %lld]", (long long)m,
                         (long long)k, (long long)kb, (long long)n);
    if (bias) {
        GCN_TRY(gcn_check_tensor(ctx, bias, "matmul bias"));
        if (bias->rows != 1 || bias->cols != n)
            return GCN_ERROR(ctx, GCN_ERR_SHAPE, "matmul: bias is [%lld, %lld], not [1, %lld]",
                             (long long)bias->rows, (long long)bias->cols, (long long)n);
    }
    gcn_tensor *in[3] = {a, b, bias};
    bool half = !bias && (a->dtype == GCN_DTYPE_BF16 || b->dtype == GCN_DTYPE_BF16);
    gcn_op_spec spec = {.name = bias ? "matmul_bias" : "matmul",
                        .forward = matmul_forward,
                        .backward = bias ? matmul_bias_backward : matmul_backward,
                        .in = in,
                        .n_in = bias ? 3 : 2,
                        .rows = m,
                        .cols = n,
                        .dtype = half ? GCN_DTYPE_BF16 : GCN_DTYPE_FP32,
                        .param = {trans_a, trans_b},
                        .bf16_in = bias ? 3 : 0,
                        .round_in = bias ? 3 : 0};
    return gcn_op_run(ctx, &spec, out);
}

gcn_status gcn_matmul(gcn_ctx *ctx, gcn_tensor *a, gcn_tensor *b, bool trans_a, bool trans_b,
                      gcn_tensor **out)
{
    return matmul_op(ctx, a, b, trans_a, trans_b, NULL, out);
}

gcn_status gcn_matmul_bias(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor *w, gcn_tensor *bias,
                           gcn_tensor **out)
{
    if (ctx && !bias)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "matmul_bias: bias is NULL");
    return matmul_op(ctx, x, w, false, false, bias, out);
}

/* ---- dtype conversion -------------------------------------------------- */

/* dst (+)= src for n values, converting between their dtypes. */
static gcn_status convert(gcn_ctx *ctx, int64_t n, const gcn_tensor *src, gcn_tensor *dst,
                          bool acc)
{
    if (src->dtype == GCN_DTYPE_FP32 && dst->dtype == GCN_DTYPE_BF16)
        return ctx->be->to_bf16(ctx, n, src->data, dst->bf16, acc);
    if (src->dtype == GCN_DTYPE_BF16 && dst->dtype == GCN_DTYPE_FP32)
        return ctx->be->from_bf16(ctx, n, src->bf16, dst->data, acc);
    if (src->dtype == GCN_DTYPE_FP32)
        return ctx->be->axpby(ctx, n, 1.0f, src->data, acc ? 1.0f : 0.0f, dst->data);
    if (!acc) /* bf16 to bf16: the bits */
        return ctx->be->copy(ctx, dst->bf16, src->bf16, (size_t)n * sizeof *src->bf16);
    /* bf16 into bf16: the sum in fp32, rounded once */
    gcn_tensor *wide;
    GCN_TRY(gcn_tensor_create(ctx, &wide, src->rows, src->cols));
    gcn_status st = ctx->be->from_bf16(ctx, n, src->bf16, wide->data, false);
    if (st == GCN_OK)
        st = ctx->be->to_bf16(ctx, n, wide->data, dst->bf16, true);
    gcn_tensor_free(&wide);
    return st;
}

/* dX (+)= dY converted to x's dtype; a first gradient of x's dtype is dY's
 * tensor itself, released by the tape right after. */
static gcn_status cast_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *x = nd->in[0], *dy = nd->out->grad;
    if (!x->grad && x->dtype == dy->dtype) {
        x->grad = gcn_tensor_retain(dy);
        return GCN_OK;
    }
    float *buf;
    bool acc;
    GCN_TRY(gcn_grad_slot(ctx, x, &buf, &acc));
    return convert(ctx, NUMEL(x), dy, x->grad, acc);
}

static gcn_status cast_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    return convert(ctx, NUMEL(y), sp->in[0], y, false);
}

gcn_status gcn_cast(gcn_ctx *ctx, gcn_tensor *x, gcn_dtype dtype, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor_any(ctx, x, "cast input"));
    if (dtype != GCN_DTYPE_FP32 && dtype != GCN_DTYPE_BF16)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "cast: dtype %d is not fp32 or bf16",
                         (int)dtype);
    gcn_op_spec spec = {.name = "cast", .forward = cast_forward, .backward = cast_backward,
                        .in = &x, .n_in = 1, .rows = x->rows, .cols = x->cols, .dtype = dtype};
    return gcn_op_run(ctx, &spec, out);
}

/* ---- element-wise ------------------------------------------------------ */

/* dX (+)= alpha dY for one input. */
static gcn_status pass_grad(gcn_ctx *ctx, gcn_tensor *x, const gcn_tensor *dy, float alpha)
{
    if (!x->requires_grad)
        return GCN_OK;
    float *buf;
    bool acc;
    GCN_TRY(gcn_grad_slot(ctx, x, &buf, &acc));
    return ctx->be->axpby(ctx, NUMEL(x), alpha, dy->data, acc ? 1.0f : 0.0f, buf);
}

static gcn_status add_backward(gcn_ctx *ctx, gcn_node *nd)
{
    GCN_TRY(pass_grad(ctx, nd->in[0], nd->out->grad, 1.0f));
    return pass_grad(ctx, nd->in[1], nd->out->grad, 1.0f);
}

static gcn_status add_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *c)
{
    return ctx->be->add(ctx, NUMEL(c), sp->in[0]->data, sp->in[1]->data, c->data);
}

gcn_status gcn_add(gcn_ctx *ctx, gcn_tensor *a, gcn_tensor *b, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor_any(ctx, a, "add a"));
    GCN_TRY(gcn_check_tensor_any(ctx, b, "add b"));
    if (a->rows != b->rows || a->cols != b->cols)
        return shape_error(ctx, "add", a, b);
    gcn_tensor *in[2] = {a, b};
    gcn_op_spec spec = {.name = "add", .forward = add_forward, .backward = add_backward,
                        .in = in, .n_in = 2, .rows = a->rows, .cols = a->cols, .bf16_in = 3};
    return gcn_op_run(ctx, &spec, out);
}

static gcn_status add_bias_backward(gcn_ctx *ctx, gcn_node *nd)
{
    GCN_TRY(pass_grad(ctx, nd->in[0], nd->out->grad, 1.0f));
    return bias_grad(ctx, nd->in[1], nd->out->grad);
}

static gcn_status add_bias_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    return ctx->be->add_bias(ctx, y->rows, y->cols, sp->in[0]->data, sp->in[1]->data, y->data);
}

gcn_status gcn_add_bias(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor *bias, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor_any(ctx, x, "add_bias x"));
    GCN_TRY(gcn_check_tensor(ctx, bias, "add_bias bias"));
    if (bias->rows != 1 || bias->cols != x->cols)
        return shape_error(ctx, "add_bias (bias must be [1, cols of x])", x, bias);
    gcn_tensor *in[2] = {x, bias};
    gcn_op_spec spec = {.name = "add_bias", .forward = add_bias_forward,
                        .backward = add_bias_backward, .in = in, .n_in = 2, .rows = x->rows,
                        .cols = x->cols, .bf16_in = 1};
    return gcn_op_run(ctx, &spec, out);
}

static gcn_status scale_backward(gcn_ctx *ctx, gcn_node *nd)
{
    return pass_grad(ctx, nd->in[0], nd->out->grad, (float)nd->param[0]);
}

static gcn_status scale_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    return ctx->be->axpby(ctx, NUMEL(y), (float)sp->param[0], sp->in[0]->data, 0.0f, y->data);
}

gcn_status gcn_scale(gcn_ctx *ctx, gcn_tensor *x, float alpha, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor_any(ctx, x, "scale input"));
    gcn_op_spec spec = {.name = "scale", .forward = scale_forward, .backward = scale_backward,
                        .in = &x, .n_in = 1, .rows = x->rows, .cols = x->cols,
                        .param = {alpha}, .bf16_in = 1};
    return gcn_op_run(ctx, &spec, out);
}

static gcn_status relu_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *x = nd->in[0];
    float *buf;
    bool acc;
    GCN_TRY(gcn_grad_slot(ctx, x, &buf, &acc));
    return ctx->be->relu_backward(ctx, NUMEL(x), nd->out->data, nd->out->grad->data, buf, acc);
}

static gcn_status relu_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    return ctx->be->relu(ctx, NUMEL(y), sp->in[0]->data, y->data);
}

gcn_status gcn_relu(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor_any(ctx, x, "relu input"));
    gcn_op_spec spec = {.name = "relu", .forward = relu_forward, .backward = relu_backward,
                        .in = &x, .n_in = 1, .rows = x->rows, .cols = x->cols,
                        .bf16_in = 1};
    return gcn_op_run(ctx, &spec, out);
}

static gcn_status elu_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *x = nd->in[0];
    float *buf;
    bool acc;
    GCN_TRY(gcn_grad_slot(ctx, x, &buf, &acc));
    return ctx->be->elu_backward(ctx, NUMEL(x), nd->out->data, (float)nd->param[0],
                                 nd->out->grad->data, buf, acc);
}

static gcn_status elu_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    return ctx->be->elu(ctx, NUMEL(y), sp->in[0]->data, (float)sp->param[0], y->data);
}

gcn_status gcn_elu(gcn_ctx *ctx, gcn_tensor *x, float alpha, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor_any(ctx, x, "elu input"));
    if (!(alpha > 0.0f))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "elu: alpha = %g must be > 0", (double)alpha);
    gcn_op_spec spec = {.name = "elu", .forward = elu_forward, .backward = elu_backward,
                        .in = &x, .n_in = 1, .rows = x->rows, .cols = x->cols,
                        .param = {alpha}, .bf16_in = 1};
    return gcn_op_run(ctx, &spec, out);
}

/* d x = s dy;  d s = sum(x * dy). */
static gcn_status scale_by_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *x = nd->in[0], *s = nd->in[1], *dy = nd->out->grad;
    float *buf;
    bool acc;
    if (x->requires_grad) {
        GCN_TRY(gcn_grad_slot(ctx, x, &buf, &acc));
        GCN_TRY(ctx->be->scale_by(ctx, NUMEL(x), dy->data, s->data, buf, acc));
    }
    if (s->requires_grad) {
        GCN_TRY(gcn_grad_slot(ctx, s, &buf, &acc));
        GCN_TRY(ctx->be->dot(ctx, NUMEL(x), x->data, dy->data, buf, acc));
    }
    return GCN_OK;
}

static gcn_status scale_by_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    return ctx->be->scale_by(ctx, NUMEL(y), sp->in[0]->data, sp->in[1]->data, y->data, false);
}

gcn_status gcn_scale_by(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor *s, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor_any(ctx, x, "scale_by x"));
    GCN_TRY(gcn_check_tensor(ctx, s, "scale_by s"));
    if (s->rows != 1 || s->cols != 1)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "scale_by: s must be [1, 1], got [%lld, %lld]",
                         (long long)s->rows, (long long)s->cols);
    gcn_tensor *in[2] = {x, s};
    gcn_op_spec spec = {.name = "scale_by", .forward = scale_by_forward,
                        .backward = scale_by_backward, .in = in, .n_in = 2, .rows = x->rows,
                        .cols = x->cols, .bf16_in = 1};
    return gcn_op_run(ctx, &spec, out);
}

/* Backward regenerates the mask from the saved stream offset: no mask is
 * stored between forward and backward. */
static gcn_status dropout_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *x = nd->in[0];
    float *buf;
    bool acc;
    GCN_TRY(gcn_grad_slot(ctx, x, &buf, &acc));
    return ctx->be->dropout(ctx, NUMEL(x), nd->out->grad->data, buf, (float)nd->param[0],
                            ctx->rng_key, nd->offset, acc);
}

static gcn_status dropout_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    return ctx->be->dropout(ctx, NUMEL(y), sp->in[0]->data, y->data, (float)sp->param[0],
                            ctx->rng_key, sp->offset, false);
}

gcn_status gcn_dropout(gcn_ctx *ctx, gcn_tensor *x, float p, bool training, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor_any(ctx, x, "dropout input"));
    if (!(p >= 0.0f && p < 1.0f))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "dropout: p = %g is not in [0, 1)", (double)p);
    if (!training || p == 0.0f)
        return gcn_scale(ctx, x, 1.0f, out);
    gcn_op_spec spec = {.name = "dropout", .forward = dropout_forward,
                        .backward = dropout_backward, .in = &x, .n_in = 1, .rows = x->rows,
                        .cols = x->cols, .param = {p}, .bf16_in = 1,
                        .offset = gcn_rng_reserve_dropout_rows(ctx, x->rows, x->cols)};
    return gcn_op_run(ctx, &spec, out);
}
