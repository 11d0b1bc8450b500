/* SGD, Adam and AdamW over a parameter list: options, state, the step state
 * kept on the device with its host mirror, and the dispatch of each step to
 * the CPU (optim_cpu.c) or CUDA (optim_cuda.cu) update. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/prof.h"
#include "optim_impl.h"

gcn_optim_opts gcn_optim_default_opts(gcn_optim_kind kind)
{
    gcn_optim_opts o = {.size = sizeof o, .kind = kind};
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

/* beta^steps as the advances compute it, one multiplication in double per
 * step from 1.0, so a run resumed at `steps` continues with the same bits
 * as one that took them.  Once the product underflows to 0 it stays 0, so
 * the loop stops there. */
static double beta_pow(float beta, int64_t steps)
{
    double p = 1.0;
    for (int64_t t = 0; t < steps && p != 0.0; t++)
        p *= (double)beta;
    return p;
}

/* Writes the device step state of `steps` updates for every parameter,
 * nothing pending. */
static gcn_status write_step_state(gcn_ctx *ctx, gcn_optim *o, int64_t steps)
{
    size_t n = (size_t)o->n_params;
    if (n == 0)
        return GCN_OK;
    gcn_status st = GCN_OK;
    int64_t *count = malloc(n * sizeof *count);
    int32_t *pending = calloc(n, sizeof *pending);
    double *pows = malloc(2 * n * sizeof *pows);
    if (!count || !pending || !pows) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "optimiser: out of host memory");
        goto cleanup;
    }
    double pow1 = beta_pow(o->opts.beta1, steps), pow2 = beta_pow(o->opts.beta2, steps);
    for (size_t i = 0; i < n; i++) {
        count[i] = steps;
        pows[i] = pow1;
        pows[n + i] = pow2;
    }
    GCN_CHECK(ctx->be->upload(ctx, o->dev.count, count, n * sizeof *count));
    GCN_CHECK(ctx->be->upload(ctx, o->dev.pending, pending, n * sizeof *pending));
    GCN_CHECK(ctx->be->upload(ctx, o->dev.lr, &o->opts.lr, sizeof o->opts.lr));
    if (o->dev.pow1) {
        GCN_CHECK(ctx->be->upload(ctx, o->dev.pow1, pows, n * sizeof *pows));
        GCN_CHECK(ctx->be->upload(ctx, o->dev.pow2, pows + n, n * sizeof *pows));
    }
cleanup:
    free(count);
    free(pending);
    free(pows);
    return st;
}

/* The step state on the device: counts and marks for every kind, the
 * powers of the betas for Adam and AdamW. */
static gcn_status alloc_step_state(gcn_ctx *ctx, gcn_optim *o)
{
    size_t n = (size_t)o->n_params;
    o->dev.n_params = o->n_params;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&o->dev.count, n * sizeof *o->dev.count));
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&o->dev.pending, n * sizeof *o->dev.pending));
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&o->dev.lr, sizeof *o->dev.lr));
    if (o->opts.kind != GCN_OPTIM_SGD) {
        GCN_TRY(gcn_mem_alloc(ctx, (void **)&o->dev.pow1, n * sizeof *o->dev.pow1));
        GCN_TRY(gcn_mem_alloc(ctx, (void **)&o->dev.pow2, n * sizeof *o->dev.pow2));
    }
    return write_step_state(ctx, o, 0);
}

gcn_status gcn_optim_create(gcn_ctx *ctx, gcn_optim **out, gcn_tensor *const *params,
                            int n_params, const gcn_optim_opts *caller_opts)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, out && caller_opts && n_params >= 0 && (params || n_params == 0));
    *out = NULL;
    gcn_optim_opts def = gcn_optim_default_opts(GCN_OPTIM_ADAM), oo;
    GCN_TRY(gcn_struct_import(ctx, "gcn_optim_opts", &oo, &def, sizeof oo, caller_opts));
    const gcn_optim_opts *opts = &oo;
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
    o->last_updated = calloc(n, sizeof *o->last_updated);
    if (!o->params || !o->state[0] || !o->state[1] || !o->param_steps || !o->last_updated) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "optimiser: out of host memory");
        goto cleanup;
    }
    int slots = opts->kind == GCN_OPTIM_SGD ? (opts->momentum != 0.0f) : 2;
    for (int i = 0; i < n_params; i++) {
        o->params[i] = gcn_tensor_retain(params[i]);
        for (int s = 0; s < slots; s++)
            GCN_CHECK(gcn_tensor_zeros(ctx, &o->state[s][i], params[i]->rows, params[i]->cols));
    }
    GCN_CHECK(alloc_step_state(ctx, o));
    *out = o;
    return GCN_OK;
cleanup:
    gcn_optim_free(&o);
    return st;
}

/* The options as the updates use them, read at every step so that
 * gcn_optim_set_lr takes effect on the next one. */
static gcn_optim_hparams hparams(const gcn_optim_opts *o)
{
    gcn_optim_hparams h = {0};
    h.weight_decay = o->weight_decay;
    h.momentum = o->momentum;
    h.one_minus_dampening = 1.0f - o->dampening;
    h.nesterov = o->nesterov;
    h.beta1 = o->beta1;
    h.beta2 = o->beta2;
    h.one_minus_beta1 = 1.0f - o->beta1;
    h.one_minus_beta2 = 1.0f - o->beta2;
    h.eps = o->eps;
    h.decoupled = o->kind == GCN_OPTIM_ADAMW;
    return h;
}

/* The one place a step picks its device's implementation. */
static gcn_status device_update(gcn_ctx *ctx, const gcn_optim *opt, const gcn_optim_hparams *h,
                                const gcn_optim_batch *b)
{
    if (ctx->device == GCN_DEVICE_CUDA)
        return gcn_optim_cuda_update(ctx, opt->opts.kind, h, &opt->dev, b);
    return gcn_optim_cpu_update(ctx, opt->opts.kind, h, &opt->dev, b);
}

static gcn_status device_advance(gcn_ctx *ctx, const gcn_optim *opt, const gcn_optim_hparams *h)
{
    if (ctx->device == GCN_DEVICE_CUDA)
        return gcn_optim_cuda_advance(ctx, h, &opt->dev);
    return gcn_optim_cpu_advance(ctx, h, &opt->dev);
}

/* The host mirror of one step over the parameters last_updated marks. */
static void count_step(gcn_optim *opt)
{
    for (int i = 0; i < opt->n_params; i++)
        if (opt->last_updated[i])
            opt->param_steps[i]++;
    opt->steps++;
}

/* Batches the parameters that have a grad in list order, queues one update
 * per full batch and one for the rest, then one advance of their step
 * state.  The same grads give the same launches with the same arguments,
 * step after step. */
gcn_status gcn_optim_step(gcn_ctx *ctx, gcn_optim *opt)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, opt && opt->ctx == ctx);
    gcn_optim_hparams h = hparams(&opt->opts);
    gcn_optim_batch b;
    memset(&b, 0, sizeof b);
    gcn_status st = GCN_OK;
    bool any = false;
    gcn_prof_category prev = gcn_prof_enter(ctx, GCN_PROF_OPTIMIZER);
    for (int i = 0; i < opt->n_params && st == GCN_OK; i++) {
        gcn_tensor *p = opt->params[i];
        opt->last_updated[i] = p->grad != NULL;
        if (!p->grad)
            continue;
        any = true;
        int k = b.n_tensors++;
        b.param[k] = p->data;
        b.grad[k] = p->grad->data;
        b.state0[k] = opt->state[0][i] ? opt->state[0][i]->data : NULL;
        b.state1[k] = opt->state[1][i] ? opt->state[1][i]->data : NULL;
        b.half[k] = p->half ? p->half->bf16 : NULL; /* rewritten with the parameter */
        p->half_fresh = p->half != NULL;
        b.numel[k] = p->rows * p->cols;
        b.slot[k] = i;
        if (b.n_tensors == GCN_OPTIM_LAUNCH_TENSORS) {
            st = device_update(ctx, opt, &h, &b);
            memset(&b, 0, sizeof b);
        }
    }
    if (st == GCN_OK && b.n_tensors > 0)
        st = device_update(ctx, opt, &h, &b);
    if (st == GCN_OK && any)
        st = device_advance(ctx, opt, &h);
    gcn_prof_leave(ctx, prev);
    if (st == GCN_OK)
        count_step(opt);
    return st;
}

void gcn_optim_count_replayed_step(gcn_optim *opt)
{
    if (opt)
        count_step(opt);
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

gcn_status gcn_optim_set_lr(gcn_optim *opt, float lr)
{
    if (!opt)
        return GCN_ERR_INVALID_ARG;
    if (!(lr >= 0.0f) || !isfinite(lr))
        return GCN_ERROR(opt->ctx, GCN_ERR_INVALID_ARG, "optimiser: lr %g must be finite and >= 0",
                         (double)lr);
    opt->opts.lr = lr;
    return opt->ctx->be->upload(opt->ctx, opt->dev.lr, &opt->opts.lr, sizeof opt->opts.lr);
}

int gcn_optim_n_params(const gcn_optim *opt)
{
    return opt ? opt->n_params : 0;
}

int64_t gcn_optim_steps(const gcn_optim *opt)
{
    return opt ? opt->steps : 0;
}

/* The record of which parameters the last step updated stays: a graph
 * captured before the resume replays that step, and its replays must keep
 * counting the same parameters. */
gcn_status gcn_optim_set_steps(gcn_optim *opt, int64_t steps)
{
    if (!opt)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(opt->ctx, steps >= 0);
    GCN_TRY(write_step_state(opt->ctx, opt, steps));
    opt->steps = steps;
    for (int i = 0; i < opt->n_params; i++)
        opt->param_steps[i] = steps;
    return GCN_OK;
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
    size_t n = (size_t)o->n_params;
    gcn_mem_release(o->ctx, o->dev.count, n * sizeof *o->dev.count);
    gcn_mem_release(o->ctx, o->dev.pending, n * sizeof *o->dev.pending);
    gcn_mem_release(o->ctx, o->dev.lr, sizeof *o->dev.lr);
    gcn_mem_release(o->ctx, o->dev.pow1, n * sizeof *o->dev.pow1);
    gcn_mem_release(o->ctx, o->dev.pow2, n * sizeof *o->dev.pow2);
    free(o->params);
    free(o->state[0]);
    free(o->state[1]);
    free(o->param_steps);
    free(o->last_updated);
    free(o);
}
