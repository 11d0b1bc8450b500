/* Optimisers on the quadratic L(p) = 1/2 p^T A p - b^T p (gradient A p - b):
 * first steps against values worked out by hand, then twenty steps against
 * PyTorch's documented update rules evaluated in double; then more
 * parameters than one update launch holds, with seeded gradients, against
 * the same rules, resuming with gcn_optim_set_steps, and the host mirror of
 * the step counts. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "helpers.h"
#include "optim_check.h"

enum { N = 4 };
static const float A[N * N] = {2.0f, 0.5f, 0, 0, 0.5f, 1.0f, 0, 0.1f, 0, 0, 3.0f, 0, 0, 0.1f, 0, 0.5f};
static const float B[N] = {1.0f, -1.0f, 0.5f, 2.0f};
static const float P0[N] = {1.0f, -0.5f, 0.25f, 2.0f};

/* One forward and backward: p->grad = A p - b (A symmetric). */
static void quadratic_grad(gcn_ctx *ctx, gcn_tensor *p, gcn_tensor *a, gcn_tensor *b)
{
    gcn_tensor *ap = NULL, *pap = NULL, *bp = NULL, *half = NULL, *neg = NULL, *l = NULL;
    cr_assert_eq(gcn_matmul(ctx, a, p, false, false, &ap), GCN_OK);
    cr_assert_eq(gcn_matmul(ctx, p, ap, true, false, &pap), GCN_OK);
    cr_assert_eq(gcn_matmul(ctx, b, p, true, false, &bp), GCN_OK);
    cr_assert_eq(gcn_scale(ctx, pap, 0.5f, &half), GCN_OK);
    cr_assert_eq(gcn_scale(ctx, bp, -1.0f, &neg), GCN_OK);
    cr_assert_eq(gcn_add(ctx, half, neg, &l), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, l), GCN_OK);
    gcn_tensor *all[6] = {ap, pap, bp, half, neg, l};
    for (int i = 0; i < 6; i++)
        gcn_tensor_free(&all[i]);
}

/* Runs `steps` updates of a 1-D problem L = p^2 (gradient 2p) from p = 1. */
static void run_scalar(const gcn_optim_opts *o, int steps, float *out)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_tensor *p = test_tensor(ctx, (float[]){1.0f}, 1, 1);
    gcn_tensor *a = test_tensor(ctx, (float[]){2.0f}, 1, 1), *b = test_tensor(ctx, (float[]){0}, 1, 1);
    cr_assert_eq(gcn_tensor_set_requires_grad(p, true), GCN_OK);
    gcn_optim *opt = NULL;
    cr_assert_eq(gcn_optim_create(ctx, &opt, &p, 1, o), GCN_OK);
    for (int s = 0; s < steps; s++) {
        cr_assert_eq(gcn_optim_zero_grad(ctx, opt), GCN_OK);
        quadratic_grad(ctx, p, a, b);
        cr_assert_eq(gcn_optim_step(ctx, opt), GCN_OK);
        cr_assert_eq(gcn_tensor_to_host(ctx, p, &out[s]), GCN_OK);
    }
    cr_assert_eq(gcn_optim_steps(opt), steps);
    gcn_optim_free(&opt);
    gcn_tensor_free(&p);
    gcn_tensor_free(&a);
    gcn_tensor_free(&b);
    gcn_ctx_free(&ctx);
}

Test(optim, sgd_by_hand)
{
    gcn_optim_opts o = gcn_optim_default_opts(GCN_OPTIM_SGD);
    o.lr = 0.1f;
    float p[3];
    run_scalar(&o, 2, p);
    cr_assert_float_eq(p[0], 0.8f, 1e-6);  /* 1 - 0.1 * 2 */
    cr_assert_float_eq(p[1], 0.64f, 1e-6); /* 0.8 - 0.1 * 1.6 */
    o.momentum = 0.9f;
    run_scalar(&o, 3, p);
    cr_assert_float_eq(p[0], 0.8f, 1e-6);  /* buf = 2 */
    cr_assert_float_eq(p[1], 0.46f, 1e-6); /* buf = 0.9 * 2 + 1.6 = 3.4 */
    cr_assert_float_eq(p[2], 0.062f, 1e-6); /* buf = 0.9 * 3.4 + 0.92 = 3.98 */
}

Test(optim, adam_and_adamw_by_hand)
{
    gcn_optim_opts o = gcn_optim_default_opts(GCN_OPTIM_ADAM);
    o.lr = 0.1f;
    float p[2];
    run_scalar(&o, 1, p);
    cr_assert_float_eq(p[0], 0.9f, 1e-6); /* bias-corrected m / sqrt(v) = 1 */
    o.weight_decay = 0.1f;
    run_scalar(&o, 1, p);
    cr_assert_float_eq(p[0], 0.9f, 1e-6); /* g = 2.1, still a unit step */
    o = gcn_optim_default_opts(GCN_OPTIM_ADAMW);
    o.lr = 0.1f;
    o.weight_decay = 0.1f;
    run_scalar(&o, 1, p);
    cr_assert_float_eq(p[0], 0.89f, 1e-6); /* 1 * (1 - 0.01) - 0.1 */
}

/* PyTorch's update rule in double: element p with gradient g at the
 * parameter's t-th update (from 1); buf, m, v its state. */
static void rule(const gcn_optim_opts *o, int t, double g, double *p, double *buf, double *m,
                 double *v)
{
    if (o->kind == GCN_OPTIM_SGD) {
        g += o->weight_decay * *p;
        if (o->momentum != 0) {
            *buf = t == 1 ? g : o->momentum * *buf + (1 - o->dampening) * g;
            g = o->nesterov ? g + o->momentum * *buf : *buf;
        }
        *p -= o->lr * g;
        return;
    }
    if (o->kind == GCN_OPTIM_ADAMW)
        *p *= 1 - (double)o->lr * o->weight_decay;
    else
        g += o->weight_decay * *p;
    *m = o->beta1 * *m + (1 - o->beta1) * g;
    *v = o->beta2 * *v + (1 - o->beta2) * g * g;
    double mh = *m / (1 - pow(o->beta1, t)), vh = *v / (1 - pow(o->beta2, t));
    *p -= o->lr * mh / (sqrt(vh) + o->eps);
}

/* PyTorch's update rules in double, from the same starting point. */
static void reference(const gcn_optim_opts *o, int steps, double *p)
{
    double buf[N] = {0}, m[N] = {0}, v[N] = {0};
    for (int i = 0; i < N; i++)
        p[i] = P0[i];
    for (int t = 1; t <= steps; t++) {
        double g[N];
        for (int i = 0; i < N; i++) {
            g[i] = -B[i];
            for (int j = 0; j < N; j++)
                g[i] += (double)A[i * N + j] * p[j];
        }
        for (int i = 0; i < N; i++)
            rule(o, t, g[i], &p[i], &buf[i], &m[i], &v[i]);
    }
}

static void compare(const gcn_optim_opts *o)
{
    enum { STEPS = 20 };
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_tensor *p = test_tensor(ctx, P0, N, 1), *a = test_tensor(ctx, A, N, N);
    gcn_tensor *b = test_tensor(ctx, B, N, 1);
    cr_assert_eq(gcn_tensor_set_requires_grad(p, true), GCN_OK);
    gcn_optim *opt = NULL;
    cr_assert_eq(gcn_optim_create(ctx, &opt, &p, 1, o), GCN_OK);
    for (int s = 0; s < STEPS; s++) {
        cr_assert_eq(gcn_optim_zero_grad(ctx, opt), GCN_OK);
        quadratic_grad(ctx, p, a, b);
        cr_assert_eq(gcn_optim_step(ctx, opt), GCN_OK);
    }
    double want[N];
    reference(o, STEPS, want);
    float got[N];
    cr_assert_eq(gcn_tensor_to_host(ctx, p, got), GCN_OK);
    for (int i = 0; i < N; i++)
        cr_assert(fabs(got[i] - want[i]) <= 1e-6 * (1 + fabs(want[i])),
                  "kind %d element %d: %.9g vs %.9g", o->kind, i, (double)got[i], want[i]);
    gcn_optim_free(&opt);
    gcn_tensor_free(&p);
    gcn_tensor_free(&a);
    gcn_tensor_free(&b);
    gcn_ctx_free(&ctx);
}

Test(optim, sgd_variants_follow_pytorch)
{
    gcn_optim_opts o = gcn_optim_default_opts(GCN_OPTIM_SGD);
    o.lr = 0.05f;
    compare(&o);
    o.momentum = 0.8f;
    o.dampening = 0.3f;
    o.weight_decay = 0.01f;
    compare(&o);
    o.dampening = 0.0f;
    o.nesterov = true;
    compare(&o);
}

Test(optim, adam_variants_follow_pytorch)
{
    gcn_optim_opts o = gcn_optim_default_opts(GCN_OPTIM_ADAM);
    o.lr = 0.01f;
    compare(&o);
    o.weight_decay = 5e-4f;
    compare(&o);
    o = gcn_optim_default_opts(GCN_OPTIM_ADAMW);
    o.lr = 0.01f;
    compare(&o);
}

Test(optim, rejects_bad_options_and_skips_params_without_grad)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_tensor *p = test_tensor(ctx, (float[]){1, 2}, 2, 1);
    gcn_optim *opt = NULL;
    gcn_optim_opts o = gcn_optim_default_opts(GCN_OPTIM_ADAM);
    o.beta1 = 1.0f;
    cr_assert_eq(gcn_optim_create(ctx, &opt, &p, 1, &o), GCN_ERR_INVALID_ARG);
    o = gcn_optim_default_opts(GCN_OPTIM_SGD);
    o.nesterov = true;
    cr_assert_eq(gcn_optim_create(ctx, &opt, &p, 1, &o), GCN_ERR_INVALID_ARG);
    cr_assert_null(opt);
    o = gcn_optim_default_opts(GCN_OPTIM_SGD);
    cr_assert_eq(gcn_optim_create(ctx, &opt, &p, 1, &o), GCN_OK);
    cr_assert_eq(gcn_optim_step(ctx, opt), GCN_OK); /* no grad yet: unchanged */
    float h[2];
    cr_assert_eq(gcn_tensor_to_host(ctx, p, h), GCN_OK);
    cr_assert(h[0] == 1.0f && h[1] == 2.0f);
    gcn_optim_free(&opt);
    gcn_optim_free(&opt);
    gcn_tensor_free(&p);
    gcn_ctx_free(&ctx);
}

/* ---- many parameters, resuming, the host mirror ------------------------------ */

/* Parameter i of the rig after `steps` steps with skipping, by the rule in
 * double, counting only the steps it had a grad in. */
static double *many_reference(const gcn_optim_opts *o, int i, int steps)
{
    int64_t n = rig_many_size(i);
    double *p = malloc((size_t)n * sizeof *p), *st = calloc((size_t)(3 * n), sizeof *st);
    float *h = malloc((size_t)n * sizeof *h);
    cr_assert(p && st && h);
    rig_init(i, n, h);
    for (int64_t e = 0; e < n; e++)
        p[e] = h[e];
    for (int s = 0, t = 0; s < steps; s++) {
        if (!rig_has_grad(i, s))
            continue;
        t++;
        rig_grad(i, s, n, h);
        for (int64_t e = 0; e < n; e++)
            rule(o, t, h[e], &p[e], &st[e], &st[n + e], &st[2 * n + e]);
    }
    free(st);
    free(h);
    return p;
}

/* Five steps over RIG_MANY parameters (two update launches), some without
 * grads.  The float32 results carry a few roundings a step: within 1e-6 of
 * the double rule relative to 1 + |p|.  Each parameter's update count, on
 * the device and in the host mirror, is the number of its steps with a
 * grad. */
Test(optim, many_parameters_follow_pytorch)
{
    enum { STEPS = 5 };
    gcn_ctx *ctx = test_cpu_ctx(0);
    int64_t sizes[RIG_MANY];
    for (int i = 0; i < RIG_MANY; i++)
        sizes[i] = rig_many_size(i);
    for (int c = 0; c < RIG_KIND_CASES; c++) {
        gcn_optim_opts o = rig_kind_case(c);
        optim_rig r;
        rig_open(&r, ctx, &o, RIG_MANY, sizes);
        for (int s = 0; s < STEPS; s++)
            rig_step(&r, s, true);
        cr_assert_eq(gcn_optim_steps(r.opt), STEPS);
        int64_t count[RIG_MANY];
        double pow1[RIG_MANY], pow2[RIG_MANY];
        rig_read_steps(&r, count, pow1, pow2);
        for (int i = 0; i < RIG_MANY; i++) {
            int t = 0;
            for (int s = 0; s < STEPS; s++)
                t += rig_has_grad(i, s);
            cr_assert_eq(count[i], t, "case %d parameter %d: device count", c, i);
            cr_assert_eq(r.opt->param_steps[i], t, "case %d parameter %d: host mirror", c, i);
            if (o.kind != GCN_OPTIM_SGD)
                cr_assert(fabs(pow1[i] - pow(o.beta1, t)) <= 1e-15 &&
                              fabs(pow2[i] - pow(o.beta2, t)) <= 1e-15,
                          "case %d parameter %d: beta^%d", c, i, t);
            float *got = rig_read(&r, i, -1);
            double *want = many_reference(&o, i, STEPS);
            for (int64_t e = 0; e < sizes[i]; e++)
                cr_assert(fabs(got[e] - want[e]) <= 1e-6 * (1 + fabs(want[e])),
                          "case %d parameter %d element %lld: %.9g vs %.9g", c, i, (long long)e,
                          (double)got[e], want[e]);
            free(got);
            free(want);
        }
        rig_close(&r);
    }
    gcn_ctx_free(&ctx);
}

Test(optim, set_steps_resumes_bit_for_bit)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    for (int c = 0; c < RIG_KIND_CASES; c++) {
        gcn_optim_opts o = rig_kind_case(c);
        check_resume(ctx, &o, 7);
    }
    gcn_optim_opts o = rig_kind_case(2);
    optim_rig r;
    int64_t size = 1;
    rig_open(&r, ctx, &o, 1, &size);
    cr_assert_eq(gcn_optim_set_steps(r.opt, -1), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_optim_set_steps(NULL, 3), GCN_ERR_INVALID_ARG);
    rig_close(&r);
    gcn_ctx_free(&ctx);
}

/* A replayed step counts on the host as the step it repeats: after one
 * step and one gcn_optim_count_replayed_step, the mirror equals that of a
 * rig that took the same step twice (and that rig's device counts). */
Test(optim, count_replayed_step_advances_like_a_step)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    int64_t sizes[RIG_MANY];
    for (int i = 0; i < RIG_MANY; i++)
        sizes[i] = rig_many_size(i);
    gcn_optim_opts o = rig_kind_case(2);
    optim_rig once, twice;
    rig_open(&once, ctx, &o, RIG_MANY, sizes);
    rig_open(&twice, ctx, &o, RIG_MANY, sizes);
    rig_step(&once, 0, true);
    gcn_optim_count_replayed_step(once.opt);
    rig_step(&twice, 0, true);
    rig_step(&twice, 0, true);
    cr_assert_eq(gcn_optim_steps(once.opt), 2);
    cr_assert_eq(gcn_optim_steps(twice.opt), 2);
    int64_t count[RIG_MANY];
    double pow1[RIG_MANY], pow2[RIG_MANY];
    rig_read_steps(&twice, count, pow1, pow2);
    for (int i = 0; i < RIG_MANY; i++) {
        int64_t want = rig_has_grad(i, 0) ? 2 : 0;
        cr_assert_eq(once.opt->param_steps[i], want, "parameter %d", i);
        cr_assert_eq(twice.opt->param_steps[i], want, "parameter %d", i);
        cr_assert_eq(count[i], want, "parameter %d", i);
    }
    gcn_optim_count_replayed_step(NULL);
    rig_close(&once);
    rig_close(&twice);
    gcn_ctx_free(&ctx);
}

/* A step schedule's change of lr applies from the next step on: SGD on
 * L = p^2 from p = 1, lr 0.1 for one step, then 0.05. */
Test(optim, set_lr_applies_from_the_next_step)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_tensor *p = test_tensor(ctx, (float[]){1.0f}, 1, 1);
    gcn_tensor *a = test_tensor(ctx, (float[]){2.0f}, 1, 1), *b = test_tensor(ctx, (float[]){0}, 1, 1);
    cr_assert_eq(gcn_tensor_set_requires_grad(p, true), GCN_OK);
    gcn_optim_opts o = gcn_optim_default_opts(GCN_OPTIM_SGD);
    o.lr = 0.1f;
    gcn_optim *opt = NULL;
    cr_assert_eq(gcn_optim_create(ctx, &opt, &p, 1, &o), GCN_OK);
    float got[2];
    for (int s = 0; s < 2; s++) {
        cr_assert_eq(gcn_optim_zero_grad(ctx, opt), GCN_OK);
        quadratic_grad(ctx, p, a, b);
        cr_assert_eq(gcn_optim_step(ctx, opt), GCN_OK);
        cr_assert_eq(gcn_tensor_to_host(ctx, p, &got[s]), GCN_OK);
        cr_assert_eq(gcn_optim_set_lr(opt, 0.05f), GCN_OK);
    }
    cr_assert_float_eq(got[0], 0.8f, 1e-6);  /* 1 - 0.1 * 2 */
    cr_assert_float_eq(got[1], 0.72f, 1e-6); /* 0.8 - 0.05 * 1.6 */
    cr_assert_eq(gcn_optim_set_lr(opt, -1.0f), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_optim_set_lr(opt, NAN), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_optim_set_lr(NULL, 0.1f), GCN_ERR_INVALID_ARG);
    gcn_optim_free(&opt);
    gcn_tensor_free(&p);
    gcn_tensor_free(&a);
    gcn_tensor_free(&b);
    gcn_ctx_free(&ctx);
}
