/* The autograd tape: ops append a node during forward; gcn_backward walks the
 * nodes in reverse (the order they were recorded is a topological order) and
 * each node's backward adds its inputs' gradients. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

bool gcn_set_grad_enabled(gcn_ctx *ctx, bool enabled)
{
    if (!ctx)
        return false;
    bool prev = ctx->grad_enabled;
    ctx->grad_enabled = enabled;
    return prev;
}

bool gcn_grad_enabled(const gcn_ctx *ctx)
{
    return ctx && ctx->grad_enabled;
}

int gcn_tape_len(const gcn_ctx *ctx)
{
    return ctx ? ctx->tape_len : 0;
}

bool gcn_tape_wants(const gcn_ctx *ctx, gcn_tensor *const *in, int n_in)
{
    if (!ctx->grad_enabled)
        return false;
    for (int i = 0; i < n_in; i++)
        if (in[i] && in[i]->requires_grad)
            return true;
    return false;
}

gcn_status gcn_tape_record(gcn_ctx *ctx, const char *op, gcn_backward_fn backward,
                           gcn_tensor *const *in, int n_in, gcn_tensor *out, gcn_node **node)
{
    *node = NULL;
    if (!gcn_tape_wants(ctx, in, n_in))
        return GCN_OK;
    if (ctx->tape_len == ctx->tape_cap) {
        int cap = ctx->tape_cap ? 2 * ctx->tape_cap : 64;
        gcn_node *t = realloc(ctx->tape, (size_t)cap * sizeof *t);
        if (!t)
            return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory growing the tape");
        memset(t + ctx->tape_cap, 0, (size_t)(cap - ctx->tape_cap) * sizeof *t);
        ctx->tape = t;
        ctx->tape_cap = cap;
    }
    /* The slot's input array outlives its node, for the next step's. */
    gcn_node *nd = &ctx->tape[ctx->tape_len];
    gcn_tensor **slots = nd->in;
    int cap = nd->in_cap;
    if (n_in > cap) {
        cap = n_in > 4 ? n_in : 4;
        if (!(slots = realloc(slots, (size_t)cap * sizeof *slots)))
            return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory recording %s", op);
    }
    memset(nd, 0, sizeof *nd);
    nd->in = slots;
    nd->in_cap = cap;
    for (int i = 0; i < n_in; i++)
        nd->in[i] = gcn_tensor_retain(in[i]);
    nd->n_in = n_in;
    nd->op = op;
    nd->backward = backward;
    nd->layer = ctx->layer;
    nd->out = gcn_tensor_retain(out);
    out->requires_grad = true;
    out->is_leaf = false;
    ctx->tape_len++;
    *node = nd;
    return GCN_OK;
}

gcn_status gcn_op_run(gcn_ctx *ctx, gcn_op_spec *spec, gcn_tensor **out)
{
    gcn_tensor *y = NULL;
    gcn_node *nd;
    gcn_status st;
    bool mixed = gcn_mixed_wanted(spec);
    GCN_CHECK(gcn_tensor_create_dtype(ctx, &y, spec->rows, spec->cols,
                                      mixed ? GCN_DTYPE_BF16 : spec->dtype));
    GCN_CHECK(mixed ? gcn_mixed_forward(ctx, spec, y) : spec->forward(ctx, spec, y));
    GCN_CHECK(gcn_tape_record(ctx, spec->name, spec->backward, spec->in, spec->n_in, y, &nd));
    if (nd) {
        memcpy(nd->param, spec->param, sizeof nd->param);
        nd->offset = spec->offset;
        nd->matrix = spec->matrix;
        for (size_t i = 0; i < sizeof nd->index / sizeof nd->index[0]; i++)
            nd->index[i] = gcn_index_retain((gcn_index *)spec->index[i]);
        for (size_t i = 0; i < sizeof nd->saved / sizeof nd->saved[0]; i++) {
            nd->saved[i] = spec->saved[i];
            spec->saved[i] = NULL;
        }
        nd->custom = spec->custom;
        spec->custom = NULL;
        nd->mixed = mixed;
        nd->round_in = spec->round_in;
    }
    *out = y;
    y = NULL;
cleanup:
    for (size_t i = 0; i < sizeof spec->saved / sizeof spec->saved[0]; i++)
        gcn_tensor_free(&spec->saved[i]);
    free(spec->custom);
    spec->custom = NULL;
    gcn_tensor_free(&y);
    return st;
}

/* Releases what the node holds; its slot keeps the input array. */
static void node_release(gcn_node *nd)
{
    for (int i = 0; i < nd->n_in; i++)
        gcn_tensor_free(&nd->in[i]);
    nd->n_in = 0;
    for (size_t i = 0; i < sizeof nd->saved / sizeof nd->saved[0]; i++)
        gcn_tensor_free(&nd->saved[i]);
    for (size_t i = 0; i < sizeof nd->index / sizeof nd->index[0]; i++)
        gcn_index_free(&nd->index[i]);
    gcn_tensor_free(&nd->out);
    free(nd->custom);
}

void gcn_tape_clear(gcn_ctx *ctx)
{
    if (!ctx)
        return;
    for (int i = ctx->tape_len - 1; i >= 0; i--) {
        gcn_node *nd = &ctx->tape[i];
        if (!nd->out->is_leaf)
            gcn_tensor_free(&nd->out->grad);
        node_release(nd);
    }
    ctx->tape_len = 0;
}

void gcn_tape_free(gcn_ctx *ctx)
{
    gcn_tape_clear(ctx);
    for (int i = 0; i < ctx->tape_cap; i++)
        free(ctx->tape[i].in);
    free(ctx->tape);
    ctx->tape = NULL;
    ctx->tape_cap = 0;
}

gcn_status gcn_grad_slot(gcn_ctx *ctx, gcn_tensor *t, float **buf, bool *acc)
{
    *acc = t->grad != NULL;
    if (!t->grad)
        GCN_TRY(gcn_tensor_create_dtype(ctx, &t->grad, t->rows, t->cols, t->dtype));
    *buf = t->grad->data;
    return GCN_OK;
}

gcn_status gcn_grad_slot_opt(gcn_ctx *ctx, gcn_tensor *t, float **buf, bool *acc)
{
    *buf = NULL;
    *acc = false;
    return t->requires_grad ? gcn_grad_slot(ctx, t, buf, acc) : GCN_OK;
}

gcn_status gcn_grad_slot_reuse(gcn_ctx *ctx, gcn_tensor *t, gcn_tensor *donor, float **buf,
                               bool *acc)
{
    if (t->grad || !donor || donor->refs != 1 || donor->rows != t->rows ||
        donor->cols != t->cols || donor->dtype != t->dtype)
        return gcn_grad_slot(ctx, t, buf, acc);
    t->grad = gcn_tensor_retain(donor);
    *buf = t->grad->data;
    *acc = false;
    return GCN_OK;
}

gcn_status gcn_backward(gcn_ctx *ctx, gcn_tensor *loss)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_TRY(gcn_check_tensor(ctx, loss, "loss"));
    if (loss->rows != 1 || loss->cols != 1)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "backward: loss must be [1, 1], got [%lld, %lld]",
                         (long long)loss->rows, (long long)loss->cols);
    if (loss->is_leaf || ctx->tape_len == 0)
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "backward: the loss was not produced by a recorded op");
    gcn_status st = GCN_OK;
    int layer = ctx->layer;
    gcn_tensor_free(&loss->grad);
    GCN_CHECK(gcn_tensor_create(ctx, &loss->grad, 1, 1));
    GCN_CHECK(gcn_tensor_fill(ctx, loss->grad, 1.0f));
    for (int i = ctx->tape_len - 1; i >= 0; i--) {
        gcn_node *nd = &ctx->tape[i];
        ctx->layer = nd->layer;
        if (nd->out->grad) /* else the loss does not depend on this op */
            GCN_CHECK(nd->mixed ? gcn_mixed_backward(ctx, nd) : nd->backward(ctx, nd));
        /* Every consumer of nd->out came later on the tape and is done, so
         * its gradient is complete and now used: release it, and what the
         * node holds, at once rather than after the walk.  Activations and
         * gradients are then freed as backward passes them, which bounds
         * the peak memory of a step by about one copy of the activations. */
        gcn_tensor_free(&nd->out->grad);
        node_release(nd);
        ctx->tape_len = i;
    }
cleanup:
    ctx->layer = layer;
    gcn_tape_clear(ctx);
    return st;
}
