/* SGD, Adam and AdamW over a parameter list; the per-element update runs in
 * the context's backend (one call per parameter). */
#include <stdlib.h>

#include "../core/internal.h"
#include "../core/prof.h"
#include "optim.h"

struct gcn_optim {
    gcn_optim_opts opts;
    gcn_ctx *ctx;
    int n_params;
    gcn_tensor **params;   /* retained */
    gcn_tensor **state[2]; /* per parameter: momentum or m; v */
    int64_t *param_steps;  /* updates each parameter has received */
    int64_t steps;
};

gcn_optim_opts gcn_optim_default_opts(gcn_optim_kind kind)
{
    gcn_optim_opts o = {0};
    o.kind = kind;
    o.lr = kind == GCN_OPTIM_SGD ? 0.01f : 1e-3f;
    o.beta1 = 0.9f;
    o.beta2 = 0.999f;
    o.eps = 1e-8f;
    o.weight_decay = kind == GCN_OPTIM_ADAMW ? 0.01f : 0.0f;
    return o;
}

static gcn_status check_opts(gcn_ctx *ctx, const gcn_optim_opts *o)
{
    if (o->kind != GCN_OPTIM_SGD && o->kind != GCN_OPTIM_ADAM && o->kind != GCN_OPTIM_ADAMW)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "optimiser: unknown kind %d", (int)o->kind);
    if (!(o->lr >= 0.0f) || !(o->weight_decay >= 0.0f))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "optimiser: lr %g and weight_decay %g must be >= 0",
                         (double)o->lr, (double)o->weight_decay);
    if (o->kind == GCN_OPTIM_SGD && (!(o->momentum >= 0.0f) || (o->nesterov && (o->momentum <= 0.0f || o->dampening != 0.0f))))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "optimiser: momentum must be >= 0; Nesterov needs momentum > 0 and zero dampening");
    if (o->kind != GCN_OPTIM_SGD &&
        (!(o->beta1 >= 0.0f && o->beta1 < 1.0f) || !(o->beta2 >= 0.0f && o->beta2 < 1.0f) || !(o->eps >= 0.0f)))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "optimiser: betas must be in [0, 1) and eps >= 0");
    return GCN_OK;
}

gcn_status gcn_optim_create(gcn_ctx *ctx, gcn_optim **out, gcn_tensor *const *params,
                            int n_params, const gcn_optim_opts *opts)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, out && opts && n_params >= 0 && (params || n_params == 0));
    *out = NULL;
    GCN_TRY(check_opts(ctx, opts));
    for (int i = 0; i < n_params; i++)
        GCN_TRY(gcn_check_tensor(ctx, params[i], "parameter"));
    gcn_status st = GCN_OK;
    gcn_optim *o = calloc(1, sizeof *o);
    if (!o)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "optimiser: out of host memory");
    o->opts = *opts;
    o->ctx = ctx;
    o->n_params = n_params;
    size_t n = (size_t)(n_params > 0 ? n_params : 1);
    o->params = calloc(n, sizeof *o->params);
    o->state[0] = calloc(n, sizeof *o->state[0]);
    o->state[1] = calloc(n, sizeof *o->state[1]);
    o->param_steps = calloc(n, sizeof *o->param_steps);
    if (!o->params || !o->state[0] || !o->state[1] || !o->param_steps) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "optimiser: out of host memory");
        goto cleanup;
    }
    int slots = opts->kind == GCN_OPTIM_SGD ? (opts->momentum != 0.0f) : 2;
    for (int i = 0; i < n_params; i++) {
        o->params[i] = gcn_tensor_retain(params[i]);
        for (int s = 0; s < slots; s++)
            GCN_CHECK(gcn_tensor_zeros(ctx, &o->state[s][i], params[i]->rows, params[i]->cols));
    }
    *out = o;
    return GCN_OK;
cleanup:
    gcn_optim_free(&o);
    return st;
}

gcn_status gcn_optim_step(gcn_ctx *ctx, gcn_optim *opt)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, opt && opt->ctx == ctx);
    const gcn_optim_opts *o = &opt->opts;
    gcn_status st = GCN_OK;
    gcn_prof_category prev = gcn_prof_enter(ctx, GCN_PROF_OPTIMIZER);
    for (int i = 0; i < opt->n_params && st == GCN_OK; i++) {
        gcn_tensor *p = opt->params[i];
        if (!p->grad)
            continue;
        int64_t n = p->rows * p->cols, t = ++opt->param_steps[i];
        float *s0 = opt->state[0][i] ? opt->state[0][i]->data : NULL;
        if (o->kind == GCN_OPTIM_SGD)
            st = ctx->be->sgd_step(ctx, n, p->data, p->grad->data, s0, o->lr, o->momentum,
                                   o->dampening, o->weight_decay, o->nesterov, t == 1);
        else
            st = ctx->be->adam_step(ctx, n, p->data, p->grad->data, s0, opt->state[1][i]->data,
                                    o->lr, o->beta1, o->beta2, o->eps, o->weight_decay,
                                    o->kind == GCN_OPTIM_ADAMW, t);
    }
    gcn_prof_leave(ctx, prev);
    if (st == GCN_OK)
        opt->steps++;
    return st;
}

gcn_status gcn_optim_zero_grad(gcn_ctx *ctx, gcn_optim *opt)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, opt && opt->ctx == ctx);
    for (int i = 0; i < opt->n_params; i++)
        gcn_tensor_free(&opt->params[i]->grad);
    return GCN_OK;
}

void gcn_optim_set_lr(gcn_optim *opt, float lr)
{
    if (opt)
        opt->opts.lr = lr;
}

int gcn_optim_n_params(const gcn_optim *opt)
{
    return opt ? opt->n_params : 0;
}

int64_t gcn_optim_steps(const gcn_optim *opt)
{
    return opt ? opt->steps : 0;
}

void gcn_optim_set_steps(gcn_optim *opt, int64_t steps)
{
    if (!opt)
        return;
    opt->steps = steps;
    for (int i = 0; i < opt->n_params; i++)
        opt->param_steps[i] = steps;
}

gcn_tensor *gcn_optim_state(const gcn_optim *opt, int param, int slot)
{
    if (!opt || param < 0 || param >= opt->n_params || slot < 0 || slot > 1)
        return NULL;
    return opt->state[slot][param];
}

void gcn_optim_free(gcn_optim **popt)
{
    if (!popt || !*popt)
        return;
    gcn_optim *o = *popt;
    *popt = NULL;
    for (int i = 0; o->params && i < o->n_params; i++) {
        gcn_tensor_free(&o->params[i]);
        gcn_tensor_free(&o->state[0][i]);
        gcn_tensor_free(&o->state[1][i]);
    }
    free(o->params);
    free(o->state[0]);
    free(o->state[1]);
    free(o->param_steps);
    free(o);
}
