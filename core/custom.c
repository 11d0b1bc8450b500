/* gcn_custom: ops whose forward and backward the program supplies, on the
 * tape like the library's own. */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* What the tape node keeps of the op: its callbacks and a copy of its name. */
struct gcn_custom_node {
    gcn_custom_op op;
    char name[48];
};

/* Hands backward each input's gradient to overwrite: the input's own
 * gradient buffer when it has none yet, else a scratch tensor added to it
 * afterwards. */
static gcn_status custom_backward(gcn_ctx *ctx, gcn_node *nd)
{
    const gcn_custom_op *op = &nd->custom->op;
    gcn_tensor **dx = calloc((size_t)nd->n_in, sizeof *dx);
    bool *scratch = calloc((size_t)nd->n_in, sizeof *scratch);
    gcn_status st = GCN_OK;
    if (!dx || !scratch) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory in %s's backward", nd->op);
        goto cleanup;
    }
    for (int i = 0; i < nd->n_in; i++) {
        gcn_tensor *x = nd->in[i];
        if (!x->requires_grad)
            continue;
        scratch[i] = x->grad != NULL;
        if (scratch[i]) {
            GCN_CHECK(gcn_tensor_create(ctx, &dx[i], x->rows, x->cols));
        } else {
            GCN_CHECK(gcn_tensor_create(ctx, &x->grad, x->rows, x->cols));
            dx[i] = gcn_tensor_retain(x->grad);
        }
    }
    bool prev = gcn_set_grad_enabled(ctx, false);
    st = op->backward(ctx, nd->in, nd->n_in, nd->out, nd->out->grad, dx, op->user);
    gcn_set_grad_enabled(ctx, prev);
    if (st != GCN_OK)
        goto cleanup;
    for (int i = 0; i < nd->n_in; i++)
        if (scratch[i])
            GCN_CHECK(ctx->be->axpby(ctx, dx[i]->rows * dx[i]->cols, 1.0f, dx[i]->data, 1.0f,
                                     nd->in[i]->grad->data));
cleanup:
    for (int i = 0; dx && i < nd->n_in; i++)
        gcn_tensor_free(&dx[i]);
    free(dx);
    free(scratch);
    return st;
}

/* The program's forward, with recording off. */
static gcn_status custom_forward(gcn_ctx *ctx, gcn_op_spec *sp, gcn_tensor *y)
{
    const gcn_custom_op *op = &sp->custom->op;
    bool prev = gcn_set_grad_enabled(ctx, false);
    gcn_status st = op->forward(ctx, sp->in, sp->n_in, y, op->user);
    gcn_set_grad_enabled(ctx, prev);
    return st;
}

gcn_status gcn_custom(gcn_ctx *ctx, const gcn_custom_op *desc, gcn_tensor *const *in, int n_in,
                      int64_t rows, int64_t cols, gcn_tensor **out)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, desc && out && n_in >= 0 && (in || n_in == 0) && rows >= 0 && cols >= 0);
    gcn_custom_op op = {.size = sizeof op};
    GCN_TRY(gcn_struct_import(ctx, "gcn_custom_op", &op, &op, sizeof op, desc));
    GCN_ARG(ctx, op.name && op.forward);
    for (int i = 0; i < n_in; i++)
        GCN_TRY(gcn_check_tensor(ctx, in[i], "custom op input"));
    if (!op.backward && gcn_tape_wants(ctx, in, n_in))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "custom op '%s' has no backward, but an input "
                         "requires a gradient", op.name);
    struct gcn_custom_node *cn = malloc(sizeof *cn);
    if (!cn)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory running %s", op.name);
    cn->op = op;
    snprintf(cn->name, sizeof cn->name, "%s", op.name);
    gcn_op_spec spec = {.name = cn->name, .forward = custom_forward, .backward = custom_backward,
                        .in = in, .n_in = n_in, .rows = rows, .cols = cols, .custom = cn};
    return gcn_op_run(ctx, &spec, out);
}
