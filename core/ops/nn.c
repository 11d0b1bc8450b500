/* The differentiable ops specific to neural networks (batch norm,
 * log_softmax, NLL loss), column concatenation, reductions and accuracy. */
#include <string.h>

#include "core/comm.h"
#include "core/internal.h"

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
    GCN_TRY(gcn_check_tensor_any(ctx, x, "batchnorm input"));
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
                        .cols = x->cols, .args = &args, .param = {training, eps},
                        .bf16_in = 1};
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

/* ---- segment pooling and the readout ----------------------------------------- */

/* The pooling of the inputs in[0 .. n - 1] side by side over offsets. */
static gcn_pool_args pool_args(gcn_pooling kind, const gcn_index *offsets, gcn_tensor *const *in,
                               int n)
{
    gcn_pool_args a = {.kind = kind, .n_seg = offsets->n - 1, .offsets = offsets->data, .n = n};
    for (int k = 0; k < n; k++) {
        a.cols[k] = in[k]->cols;
        a.width += in[k]->cols;
    }
    return a;
}

/* The pooled inputs' gradients from dpooled: nd->in[0 .. n - 1] pooled
 * over index[0] (argmax index[1]). */
static gcn_status pool_backward(gcn_ctx *ctx, gcn_node *nd, int n, const float *dpooled)
{
    gcn_pool_args a = pool_args((gcn_pooling)nd->param[0], nd->index[0], nd->in, n);
    float *dx[GCN_READOUT_MAX];
    bool acc[GCN_READOUT_MAX];
    for (int k = 0; k < n; k++)
        GCN_TRY(gcn_grad_slot_opt(ctx, nd->in[k], &dx[k], &acc[k]));
    const gcn_index *argmax = nd->index[1];
    return ctx->be->segment_pool_backward(ctx, &a, argmax ? argmax->data : NULL, dpooled, dx,
                                          acc);
}

static gcn_status segment_pool_backward(gcn_ctx *ctx, gcn_node *nd)
{
    return pool_backward(ctx, nd, 1, nd->out->grad->data);
}

static gcn_status segment_pool_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    const gcn_index *argmax = sp->index[1];
    gcn_pool_args a = pool_args((gcn_pooling)sp->param[0], sp->index[0], sp->in, 1);
    const float *x = sp->in[0]->data;
    return ctx->be->segment_pool(ctx, &a, &x, y->data, argmax ? argmax->data : NULL);
}

/* Checks the pooling's kind and offsets for inputs of `rows` rows. */
static gcn_status check_pooling(gcn_ctx *ctx, const char *op, const gcn_index *offsets,
                                gcn_pooling kind, int64_t rows)
{
    GCN_TRY(gcn_check_index(ctx, offsets, op));
    if (kind != GCN_POOL_SUM && kind != GCN_POOL_MEAN && kind != GCN_POOL_MAX)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s: unknown pooling %d", op, (int)kind);
    if (offsets->n < 1 || !offsets->ascending || offsets->min != 0 || offsets->max != rows)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s: offsets must ascend from 0 "
                         "to the input's %lld rows", op, (long long)rows);
    return GCN_OK;
}

gcn_status gcn_segment_pool(gcn_ctx *ctx, gcn_tensor *x, const gcn_index *offsets,
                            gcn_pooling kind, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(gcn_check_tensor(ctx, x, "segment_pool input"));
    GCN_TRY(check_pooling(ctx, "segment_pool", offsets, kind, x->rows));
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

/* gcn_readout's node: in = h[0 .. n - 1], w[0 .. n - 1], then b[0 .. n - 1]
 * when it has biases; param = {kind, p, n, biases}; saved[0] the pooled
 * inputs [graphs, width], index = {offsets, argmax}. */
static gcn_heads_args heads_args(gcn_ctx *ctx, gcn_tensor *const *in, int n, bool biases,
                                 int64_t classes, float p, gcn_draw_offset offset)
{
    gcn_heads_args h = {.classes = classes, .p = p, .offset = offset,
                        .key = {ctx->rng_key[0], ctx->rng_key[1]}};
    for (int k = 0; k < n; k++) {
        h.w[k] = in[n + k]->data;
        h.b[k] = biases ? in[2 * n + k]->data : NULL;
    }
    return h;
}

static gcn_status readout_backward(gcn_ctx *ctx, gcn_node *nd)
{
    int n = (int)nd->param[2];
    bool biases = nd->param[3] != 0;
    gcn_pool_args a = pool_args((gcn_pooling)nd->param[0], nd->index[0], nd->in, n);
    gcn_heads_args h = heads_args(ctx, nd->in, n, biases, nd->out->cols, (float)nd->param[1],
                                  nd->offset);
    gcn_heads_grads g;
    memset(&g, 0, sizeof g);
    bool inputs = false;
    for (int k = 0; k < n; k++) {
        GCN_TRY(gcn_grad_slot_opt(ctx, nd->in[n + k], &g.dw[k], &g.acc_w[k]));
        if (biases)
            GCN_TRY(gcn_grad_slot_opt(ctx, nd->in[2 * n + k], &g.db[k], &g.acc_b[k]));
        inputs |= nd->in[k]->requires_grad;
    }
    size_t bytes = inputs ? (size_t)(a.n_seg * a.width) * sizeof(float) : 0;
    float *dpooled = NULL;
    if (inputs)
        GCN_TRY(gcn_mem_alloc(ctx, (void **)&dpooled, bytes));
    gcn_status st = ctx->be->heads_backward(ctx, &a, &h, nd->saved[0]->data,
                                            nd->out->grad->data, dpooled, &g);
    if (st == GCN_OK && inputs)
        st = pool_backward(ctx, nd, n, dpooled);
    gcn_mem_release(ctx, dpooled, bytes);
    return st;
}

static gcn_status readout_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    int n = (int)sp->param[2];
    gcn_pool_args a = pool_args((gcn_pooling)sp->param[0], sp->index[0], sp->in, n);
    gcn_heads_args h = heads_args(ctx, sp->in, n, sp->param[3] != 0, y->cols,
                                  (float)sp->param[1], sp->offset);
    const float *x[GCN_READOUT_MAX];
    for (int k = 0; k < n; k++)
        x[k] = sp->in[k]->data;
    const gcn_index *argmax = sp->index[1];
    gcn_tensor *pooled = NULL;
    GCN_TRY(gcn_tensor_create(ctx, &pooled, a.n_seg, a.width));
    gcn_status st = ctx->be->segment_pool(ctx, &a, x, pooled->data, argmax ? argmax->data : NULL);
    if (st == GCN_OK)
        st = ctx->be->heads(ctx, &a, &h, pooled->data, y->data);
    sp->saved[0] = pooled;
    return st;
}

/* The readout's checks: shapes, and no tensor twice (backward writes each
 * input's gradient once). */
static gcn_status check_readout(gcn_ctx *ctx, gcn_tensor *const *in, int n, bool biases,
                                int64_t classes)
{
    for (int k = 0; k < n; k++) {
        GCN_TRY(gcn_check_tensor(ctx, in[k], "readout h"));
        GCN_TRY(gcn_check_tensor(ctx, in[n + k], "readout w"));
        if (in[k]->rows != in[0]->rows || in[n + k]->rows != in[k]->cols ||
            in[n + k]->cols != classes)
            return GCN_ERROR(ctx, GCN_ERR_SHAPE, "readout: h[%d] is [%lld, %lld] and w[%d] "
                             "[%lld, %lld], for h[0]'s %lld rows and w[0]'s %lld columns", k,
                             (long long)in[k]->rows, (long long)in[k]->cols, k,
                             (long long)in[n + k]->rows, (long long)in[n + k]->cols,
                             (long long)in[0]->rows, (long long)classes);
        if (biases) {
            GCN_TRY(gcn_check_tensor(ctx, in[2 * n + k], "readout b"));
            if (in[2 * n + k]->rows != 1 || in[2 * n + k]->cols != classes)
                return GCN_ERROR(ctx, GCN_ERR_SHAPE, "readout: b[%d] is [%lld, %lld], not "
                                 "[1, %lld]", k, (long long)in[2 * n + k]->rows,
                                 (long long)in[2 * n + k]->cols, (long long)classes);
        }
    }
    for (int i = 0; i < (biases ? 3 : 2) * n; i++)
        for (int j = 0; j < i; j++)
            if (in[i] == in[j])
                return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "readout: input %d is input %d "
                                 "again (h, then w, then b)", i, j);
    return GCN_OK;
}

gcn_status gcn_readout(gcn_ctx *ctx, gcn_tensor *const *h, gcn_tensor *const *w,
                       gcn_tensor *const *b, int n, const gcn_index *offsets, gcn_pooling kind,
                       float p, bool training, gcn_tensor **scores)
{
    GCN_TRY(gcn_op_begin(ctx, scores));
    GCN_ARG(ctx, h && w && n >= 1 && n <= GCN_READOUT_MAX);
    if (!(p >= 0.0f && p < 1.0f))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "readout: p = %g is not in [0, 1)", (double)p);
    gcn_tensor *in[3 * GCN_READOUT_MAX];
    for (int k = 0; k < n; k++) {
        in[k] = h[k];
        in[n + k] = w[k];
        in[2 * n + k] = b ? b[k] : NULL;
    }
    GCN_TRY(gcn_check_tensor(ctx, w[0], "readout w"));
    int64_t classes = w[0]->cols;
    GCN_TRY(check_readout(ctx, in, n, b != NULL, classes));
    GCN_TRY(check_pooling(ctx, "readout", offsets, kind, h[0]->rows));
    int64_t n_seg = offsets->n - 1, width = 0;
    for (int k = 0; k < n; k++)
        width += h[k]->cols;
    float drop = training ? p : 0.0f;
    gcn_draw_offset offset = {0};
    if (drop > 0.0f) /* n draws of [n_seg, classes] in turn, as n dropouts would take */
        offset = gcn_rng_reserve_dropout(ctx, 4 * (uint64_t)n *
                                                  (uint64_t)((n_seg * classes + 3) / 4));
    gcn_index *argmax = NULL;
    if (kind == GCN_POOL_MAX)
        GCN_TRY(gcn_index_alloc(ctx, &argmax, n_seg * width));
    gcn_op_spec spec = {.name = "readout", .forward = readout_forward,
                        .backward = readout_backward, .in = in, .n_in = (b ? 3 : 2) * n,
                        .rows = n_seg, .cols = classes, .param = {kind, drop, n, b != NULL},
                        .offset = offset, .index = {offsets, argmax}};
    gcn_status st = gcn_op_run(ctx, &spec, scores);
    gcn_index_free(&argmax);
    return st;
}
