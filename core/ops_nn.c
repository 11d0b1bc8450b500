/* The differentiable ops specific to neural networks (batch norm,
 * log_softmax, NLL loss), column concatenation, reductions and accuracy. */
#include "comm.h"
#include "internal.h"

#define NUMEL(t) ((t)->rows * (t)->cols)

/* ---- batch norm ---------------------------------------------------------- */

/* in = {x, gamma, beta}; saved = {mean, invstd} in training, {running_mean,
 * running_var} in eval; param = {training, eps}. */
static gcn_status batchnorm_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *x = nd->in[0], *gamma = nd->in[1], *beta = nd->in[2];
    float *dx, *dg, *db;
    bool ax, ag, ab;
    GCN_TRY(gcn_grad_slot_opt(ctx, x, &dx, &ax));
    GCN_TRY(gcn_grad_slot_opt(ctx, gamma, &dg, &ag));
    GCN_TRY(gcn_grad_slot_opt(ctx, beta, &db, &ab));
    const float *dy = nd->out->grad->data;
    if (nd->param[0] != 0)
        return ctx->be->batchnorm_backward(ctx, x->rows, x->cols, x->data, gamma->data,
                                           nd->saved[0]->data, nd->saved[1]->data, dy, dx, dg,
                                           db, ax, ag, ab);
    return ctx->be->batchnorm_eval_backward(ctx, x->rows, x->cols, x->data, gamma->data,
                                            nd->saved[0]->data, nd->saved[1]->data,
                                            (float)nd->param[1], dy, dx, dg, db, ax, ag, ab);
}

/* batchnorm's operands besides in and param. */
typedef struct batchnorm_args {
    gcn_tensor *running_mean, *running_var;
    float momentum;
} batchnorm_args;

static gcn_status batchnorm_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    const batchnorm_args *r = sp->args;
    gcn_tensor *x = sp->in[0], *gamma = sp->in[1], *beta = sp->in[2];
    float eps = (float)sp->param[1];
    if (sp->param[0] == 0) {
        GCN_TRY(ctx->be->batchnorm_eval(ctx, x->rows, x->cols, x->data, gamma->data, beta->data,
                                        r->running_mean->data, r->running_var->data, eps,
                                        y->data));
        sp->saved[0] = gcn_tensor_retain(r->running_mean);
        sp->saved[1] = gcn_tensor_retain(r->running_var);
        return GCN_OK;
    }
    GCN_TRY(gcn_tensor_create(ctx, &sp->saved[0], 1, x->cols));
    GCN_TRY(gcn_tensor_create(ctx, &sp->saved[1], 1, x->cols));
    return ctx->be->batchnorm_train(ctx, x->rows, x->cols, x->data, gamma->data, beta->data,
                                    y->data, sp->saved[0]->data, sp->saved[1]->data,
                                    r->running_mean->data, r->running_var->data, r->momentum, eps);
}

gcn_status gcn_batchnorm(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor *gamma, gcn_tensor *beta,
                         gcn_tensor *running_mean, gcn_tensor *running_var, bool training,
                         float momentum, float eps, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor(ctx, x, "batchnorm input"));
    GCN_TRY(gcn_check_row_vector(ctx, gamma, "batchnorm", "gamma", x->cols));
    GCN_TRY(gcn_check_row_vector(ctx, beta, "batchnorm", "beta", x->cols));
    GCN_TRY(gcn_check_row_vector(ctx, running_mean, "batchnorm", "running_mean", x->cols));
    GCN_TRY(gcn_check_row_vector(ctx, running_var, "batchnorm", "running_var", x->cols));
    if (!(eps > 0.0f) || !(momentum >= 0.0f && momentum <= 1.0f))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "batchnorm: eps = %g must be > 0 and momentum = %g in [0, 1]",
                         (double)eps, (double)momentum);
    if (training && gcn_ctx_ranks(ctx) > 1) { /* statistics over every rank's rows */
        gcn_epilogue e = {.gamma = gamma, .beta = beta, .running_mean = running_mean,
                          .running_var = running_var, .momentum = momentum, .eps = eps};
        return gcn_apply_epilogue(ctx, x, &e, true, out);
    }
    if (training && x->rows < 2)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE,
                         "batchnorm: training needs at least 2 rows, got %lld", (long long)x->rows);
    gcn_tensor *in[3] = {x, gamma, beta};
    batchnorm_args args = {running_mean, running_var, momentum};
    gcn_op_spec spec = {.name = "batchnorm", .forward = batchnorm_forward,
                        .backward = batchnorm_backward, .in = in, .n_in = 3, .rows = x->rows,
                        .cols = x->cols, .args = &args, .param = {training, eps}};
    return gcn_op_run(ctx, &spec, out);
}

/* ---- log_softmax and NLL ------------------------------------------------- */

static gcn_status log_softmax_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *x = nd->in[0];
    float *buf;
    bool acc;
    GCN_TRY(gcn_grad_slot(ctx, x, &buf, &acc));
    return ctx->be->log_softmax_backward(ctx, x->rows, x->cols, nd->out->data,
                                         nd->out->grad->data, buf, acc);
}

static gcn_status log_softmax_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    return ctx->be->log_softmax(ctx, y->rows, y->cols, sp->in[0]->data, y->data);
}

gcn_status gcn_log_softmax(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor(ctx, x, "log_softmax input"));
    if (x->cols < 1)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "log_softmax: input has no columns");
    gcn_op_spec spec = {.name = "log_softmax", .forward = log_softmax_forward,
                        .backward = log_softmax_backward, .in = &x, .n_in = 1, .rows = x->rows,
                        .cols = x->cols};
    return gcn_op_run(ctx, &spec, out);
}

static gcn_status nll_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *logp = nd->in[0];
    float *buf;
    bool acc;
    GCN_TRY(gcn_grad_slot(ctx, logp, &buf, &acc));
    const gcn_index *labels = nd->index[0], *rows = nd->index[1];
    return ctx->be->nll_backward(ctx, logp->rows, logp->cols, labels->data, rows->data, rows->n,
                                 nd->out->grad->data, buf, acc);
}

/* Range checks that need no device round trip: index extremes are known. */
static gcn_status check_labels(gcn_ctx *ctx, const gcn_tensor *scores, const gcn_index *labels,
                               const gcn_index *rows, const char *op)
{
    GCN_TRY(gcn_check_tensor(ctx, scores, op));
    GCN_TRY(gcn_check_index(ctx, labels, "labels"));
    GCN_TRY(gcn_check_index(ctx, rows, "rows"));
    if (labels->n != scores->rows)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "%s: %lld labels for %lld rows", op,
                         (long long)labels->n, (long long)scores->rows);
    if (rows->n > 0 && (rows->min < 0 || rows->max >= scores->rows))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s: row ids span [%d, %d], outside [0, %lld)",
                         op, rows->min, rows->max, (long long)scores->rows);
    if (labels->n > 0 && labels->max >= scores->cols)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s: label %d is not below %lld classes", op,
                         labels->max, (long long)scores->cols);
    return GCN_OK;
}

/* index = {labels, rows} */
static gcn_status nll_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    gcn_tensor *logp = sp->in[0];
    const gcn_index *labels = sp->index[0], *rows = sp->index[1];
    return ctx->be->nll(ctx, logp->cols, logp->data, labels->data, rows->data, rows->n, y->data);
}

gcn_status gcn_nll_loss(gcn_ctx *ctx, gcn_tensor *logp, const gcn_index *labels,
                        const gcn_index *rows, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(check_labels(ctx, logp, labels, rows, "nll_loss"));
    if (rows->n == 0)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "nll_loss: the row list is empty");
    gcn_op_spec spec = {.name = "nll_loss", .forward = nll_forward, .backward = nll_backward,
                        .in = &logp, .n_in = 1, .rows = 1, .cols = 1,
                        .index = {labels, rows}};
    return gcn_op_run(ctx, &spec, out);
}

static gcn_status cross_entropy_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *x = nd->in[0];
    float *buf;
    bool acc;
    GCN_TRY(gcn_grad_slot(ctx, x, &buf, &acc));
    const gcn_index *labels = nd->index[0], *rows = nd->index[1];
    return ctx->be->cross_entropy_backward(ctx, x->rows, x->cols, x->data, labels->data,
                                           rows->data, rows->n, nd->saved[0]->data,
                                           nd->out->grad->data, buf, acc);
}

/* index = {labels, rows}; saved = {lse} */
static gcn_status cross_entropy_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    gcn_tensor *x = sp->in[0];
    const gcn_index *labels = sp->index[0], *rows = sp->index[1];
    GCN_TRY(gcn_tensor_create(ctx, &sp->saved[0], rows->n, 1));
    return ctx->be->cross_entropy(ctx, x->cols, x->data, labels->data, rows->data, rows->n,
                                  sp->saved[0]->data, y->data);
}

gcn_status gcn_cross_entropy(gcn_ctx *ctx, gcn_tensor *logits, const gcn_index *labels,
                             const gcn_index *rows, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(check_labels(ctx, logits, labels, rows, "cross_entropy"));
    if (rows->n == 0)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "cross_entropy: the row list is empty");
    if (logits->cols < 1)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "cross_entropy: the scores have no columns");
    gcn_op_spec spec = {.name = "cross_entropy", .forward = cross_entropy_forward,
                        .backward = cross_entropy_backward, .in = &logits, .n_in = 1, .rows = 1,
                        .cols = 1, .index = {labels, rows}};
    return gcn_op_run(ctx, &spec, out);
}

gcn_status gcn_count_correct(gcn_ctx *ctx, const gcn_tensor *scores, const gcn_index *labels,
                             const gcn_index *rows, double *count)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, count);
    GCN_TRY(check_labels(ctx, scores, labels, rows, "accuracy"));
    return ctx->be->count_correct(ctx, scores->cols, scores->data, labels->data, rows->data,
                                  rows->n, count);
}

gcn_status gcn_accuracy(gcn_ctx *ctx, const gcn_tensor *scores, const gcn_index *labels,
                        const gcn_index *rows, double *acc)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, acc);
    *acc = 0.0;
    GCN_TRY(check_labels(ctx, scores, labels, rows, "accuracy"));
    if (rows->n == 0)
        return GCN_OK;
    double *count = NULL, host = 0.0;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&count, sizeof *count));
    gcn_status st = gcn_count_correct(ctx, scores, labels, rows, count);
    if (st == GCN_OK)
        st = ctx->be->download(ctx, &host, count, sizeof host);
    gcn_mem_release(ctx, count, sizeof *count);
    *acc = host / (double)rows->n;
    return st;
}

gcn_status gcn_gather_rows(gcn_ctx *ctx, gcn_tensor *x, const gcn_index *rows, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor(ctx, x, "gather_rows input"));
    GCN_TRY(gcn_check_index(ctx, rows, "gather_rows rows"));
    if (rows->n > 0 && (rows->min < 0 || rows->max >= x->rows))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "gather_rows: row ids span [%d, %d], outside [0, %lld)", rows->min,
                         rows->max, (long long)x->rows);
    if (gcn_tape_wants(ctx, &x, 1))
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "gather_rows is not differentiable: its input requires a gradient");
    gcn_tensor *y;
    GCN_TRY(gcn_tensor_create(ctx, &y, rows->n, x->cols));
    gcn_status st = rows->n > 0 && x->cols > 0
                        ? ctx->be->copy_cols(ctx, rows->n, x->cols, x->data, x->cols, rows->data,
                                             y->data, y->cols, false)
                        : GCN_OK;
    if (st != GCN_OK)
        gcn_tensor_free(&y);
    *out = y;
    return st;
}

/* ---- concatenation and reductions ----------------------------------------- */

static gcn_status concat_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *dy = nd->out->grad;
    int64_t col = 0;
    for (int i = 0; i < nd->n_in; i++) {
        gcn_tensor *p = nd->in[i];
        if (p->requires_grad) {
            float *buf;
            bool acc;
            GCN_TRY(gcn_grad_slot(ctx, p, &buf, &acc));
            GCN_TRY(ctx->be->copy_cols(ctx, p->rows, p->cols, dy->data + col, dy->cols, NULL, buf,
                                       p->cols, acc));
        }
        col += p->cols;
    }
    return GCN_OK;
}

static gcn_status concat_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    int64_t col = 0;
    for (int i = 0; i < sp->n_in; i++) {
        gcn_tensor *p = sp->in[i];
        GCN_TRY(ctx->be->copy_cols(ctx, y->rows, p->cols, p->data, p->cols, NULL, y->data + col,
                                   y->cols, false));
        col += p->cols;
    }
    return GCN_OK;
}

gcn_status gcn_concat_cols(gcn_ctx *ctx, gcn_tensor *const *parts, int n_parts, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_ARG(ctx, parts && n_parts >= 1);
    int64_t cols = 0;
    for (int i = 0; i < n_parts; i++) {
        GCN_TRY(gcn_check_tensor(ctx, parts[i], "concat part"));
        if (parts[i]->rows != parts[0]->rows)
            return GCN_ERROR(ctx, GCN_ERR_SHAPE, "concat_cols: part %d has %lld rows, part 0 %lld",
                             i, (long long)parts[i]->rows, (long long)parts[0]->rows);
        cols += parts[i]->cols;
    }
    gcn_op_spec spec = {.name = "concat_cols", .forward = concat_forward,
                        .backward = concat_backward, .in = parts, .n_in = n_parts,
                        .rows = parts[0]->rows, .cols = cols};
    return gcn_op_run(ctx, &spec, out);
}

static gcn_status sum_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *x = nd->in[0];
    float *buf;
    bool acc;
    GCN_TRY(gcn_grad_slot(ctx, x, &buf, &acc));
    return ctx->be->sum_backward(ctx, NUMEL(x), nd->out->grad->data, (float)nd->param[0], buf,
                                 acc);
}

/* param = {scale} */
static gcn_status sum_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    float scale = (float)sp->param[0];
    GCN_TRY(ctx->be->sum(ctx, NUMEL(sp->in[0]), sp->in[0]->data, y->data));
    if (scale != 1.0f)
        return ctx->be->axpby(ctx, 1, scale, y->data, 0.0f, y->data);
    return GCN_OK;
}

/* out = scale * sum(x). */
static gcn_status scaled_sum(gcn_ctx *ctx, gcn_tensor *x, float scale, const char *op,
                             gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor(ctx, x, op));
    gcn_op_spec spec = {.name = op, .forward = sum_forward, .backward = sum_backward, .in = &x,
                        .n_in = 1, .rows = 1, .cols = 1, .param = {scale}};
    return gcn_op_run(ctx, &spec, out);
}

gcn_status gcn_sum(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor **out)
{
    return scaled_sum(ctx, x, 1.0f, "sum", out);
}

gcn_status gcn_mean(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor(ctx, x, "mean"));
    if (NUMEL(x) == 0)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "mean of an empty tensor");
    return scaled_sum(ctx, x, 1.0f / (float)NUMEL(x), "mean", out);
}

/* ---- segment pooling ------------------------------------------------------- */

static gcn_status segment_pool_backward(gcn_ctx *ctx, gcn_node *nd)
{
    gcn_tensor *x = nd->in[0];
    float *buf;
    bool acc;
    GCN_TRY(gcn_grad_slot(ctx, x, &buf, &acc));
    const gcn_index *offsets = nd->index[0], *argmax = nd->index[1];
    return ctx->be->segment_pool_backward(ctx, (gcn_pooling)nd->param[0], offsets->n - 1, x->cols,
                                          offsets->data, argmax ? argmax->data : NULL,
                                          nd->out->grad->data, buf, acc);
}

static gcn_status segment_pool_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    const gcn_index *offsets = sp->index[0], *argmax = sp->index[1];
    return ctx->be->segment_pool(ctx, (gcn_pooling)sp->param[0], y->rows, y->cols, offsets->data,
                                 sp->in[0]->data, y->data, argmax ? argmax->data : NULL);
}

gcn_status gcn_segment_pool(gcn_ctx *ctx, gcn_tensor *x, const gcn_index *offsets,
                            gcn_pooling kind, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor(ctx, x, "segment_pool input"));
    GCN_TRY(gcn_check_index(ctx, offsets, "segment_pool offsets"));
    if (kind != GCN_POOL_SUM && kind != GCN_POOL_MEAN && kind != GCN_POOL_MAX)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "segment_pool: unknown pooling %d", (int)kind);
    if (offsets->n < 1 || !offsets->ascending || offsets->min != 0 || offsets->max != x->rows)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "segment_pool: offsets must ascend from 0 "
                         "to the input's %lld rows", (long long)x->rows);
    int64_t n_seg = offsets->n - 1;
    gcn_index *argmax = NULL;
    if (kind == GCN_POOL_MAX)
        GCN_TRY(gcn_index_alloc(ctx, &argmax, n_seg * x->cols));
    gcn_op_spec spec = {.name = "segment_pool", .forward = segment_pool_forward,
                        .backward = segment_pool_backward, .in = &x, .n_in = 1, .rows = n_seg,
                        .cols = x->cols, .param = {kind}, .index = {offsets, argmax}};
    gcn_status st = gcn_op_run(ctx, &spec, out);
    gcn_index_free(&argmax); /* the tape holds its own reference when it needs one */
    return st;
}
