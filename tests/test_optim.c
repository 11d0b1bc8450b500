/* Optimisers on the quadratic L(p) = 1/2 p^T A p - b^T p (gradient A p - b):
 * first steps against values worked out by hand, then twenty steps against
 * PyTorch's documented update rules evaluated in double. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "helpers.h"

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
        for (int i = 0; i < N; i++) {
            double gi = g[i];
            if (o->kind == GCN_OPTIM_SGD) {
                gi += o->weight_decay * p[i];
                if (o->momentum != 0) {
                    buf[i] = t == 1 ? gi : o->momentum * buf[i] + (1 - o->dampening) * gi;
                    gi = o->nesterov ? gi + o->momentum * buf[i] : buf[i];
                }
                p[i] -= o->lr * gi;
                continue;
            }
            if (o->kind == GCN_OPTIM_ADAMW)
                p[i] *= 1 - (double)o->lr * o->weight_decay;
            else
                gi += o->weight_decay * p[i];
            m[i] = o->beta1 * m[i] + (1 - o->beta1) * gi;
            v[i] = o->beta2 * v[i] + (1 - o->beta2) * gi * gi;
            double mh = m[i] / (1 - pow(o->beta1, t)), vh = v[i] / (1 - pow(o->beta2, t));
            p[i] -= o->lr * mh / (sqrt(vh) + o->eps);
        }
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
