/* Optimiser rigs shared by the CPU and GPU optimiser tests (see
 * optim_check.h). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "optim_check.h"

int64_t rig_many_size(int i)
{
    /* 300001 > 1024 blocks x 256 threads: the big tensor's blocks stride */
    static const int64_t sizes[] = {1, 1000, 33, 7, 1, 257, 64, 1000, 300001, 3};
    return sizes[i % (int)(sizeof sizes / sizeof sizes[0])];
}

bool rig_has_grad(int i, int s)
{
    return i % 10 != 3 && !(i % 10 == 6 && (s == 0 || s == 2));
}

gcn_optim_opts rig_kind_case(int c)
{
    gcn_optim_opts o = gcn_optim_default_opts(c < 2 ? GCN_OPTIM_SGD : c == 2 ? GCN_OPTIM_ADAM
                                                                          : GCN_OPTIM_ADAMW);
    o.lr = 0.01f;
    o.weight_decay = 1e-2f;
    if (c < 2)
        o.momentum = 0.9f;
    if (c == 0)
        o.dampening = 0.1f;
    o.nesterov = c == 1;
    return o;
}

void rig_init(int i, int64_t n, float *out)
{
    uint64_t state = 0x9E3779B97F4A7C15ull + (uint64_t)i;
    test_fill_uniform(&state, out, n, -1.0f, 1.0f);
}

void rig_open(optim_rig *r, gcn_ctx *ctx, const gcn_optim_opts *o, int n, const int64_t *sizes)
{
    r->ctx = ctx;
    r->n_params = n;
    r->params = calloc((size_t)n, sizeof *r->params);
    cr_assert_not_null(r->params);
    for (int i = 0; i < n; i++) {
        float *h = malloc((size_t)sizes[i] * sizeof *h);
        cr_assert_not_null(h);
        rig_init(i, sizes[i], h);
        r->params[i] = test_tensor(ctx, h, sizes[i], 1);
        cr_assert_eq(gcn_tensor_set_requires_grad(r->params[i], true), GCN_OK);
        free(h);
    }
    r->opt = NULL;
    cr_assert_eq(gcn_optim_create(ctx, &r->opt, r->params, n, o), GCN_OK, "%s",
                 gcn_last_error(ctx));
}

void rig_close(optim_rig *r)
{
    gcn_optim_free(&r->opt);
    for (int i = 0; i < r->n_params; i++)
        gcn_tensor_free(&r->params[i]);
    free(r->params);
    r->params = NULL;
}

void rig_grad(int i, int s, int64_t n, float *out)
{
    uint64_t state = 0xD1B54A32D192ED03ull ^ ((uint64_t)i << 20) ^ (uint64_t)(s + 1);
    test_fill_uniform(&state, out, n, -1.0f, 1.0f);
}

void rig_step(optim_rig *r, int s, bool skip)
{
    cr_assert_eq(gcn_optim_zero_grad(r->ctx, r->opt), GCN_OK);
    for (int i = 0; i < r->n_params; i++) {
        if (skip && !rig_has_grad(i, s))
            continue;
        gcn_tensor *p = r->params[i];
        int64_t n = gcn_tensor_numel(p);
        float *h = malloc((size_t)n * sizeof *h), *buf;
        bool acc;
        cr_assert_not_null(h);
        rig_grad(i, s, n, h);
        cr_assert_eq(gcn_grad_slot(r->ctx, p, &buf, &acc), GCN_OK);
        cr_assert_eq(r->ctx->be->upload(r->ctx, buf, h, (size_t)n * sizeof *h), GCN_OK);
        free(h);
    }
    cr_assert_eq(gcn_optim_step(r->ctx, r->opt), GCN_OK, "%s", gcn_last_error(r->ctx));
}

float *rig_read(optim_rig *r, int i, int slot)
{
    const gcn_tensor *t = slot < 0 ? r->params[i] : gcn_optim_state(r->opt, i, slot);
    cr_assert_not_null(t, "parameter %d has no state slot %d", i, slot);
    return test_read(r->ctx, t);
}

void rig_read_steps(optim_rig *r, int64_t *count, double *pow1, double *pow2)
{
    const gcn_optim_step_state *s = &r->opt->dev;
    size_t n = (size_t)r->n_params;
    cr_assert_eq(r->ctx->be->download(r->ctx, count, s->count, n * sizeof *count), GCN_OK);
    if (!s->pow1)
        return;
    cr_assert_eq(r->ctx->be->download(r->ctx, pow1, s->pow1, n * sizeof *pow1), GCN_OK);
    cr_assert_eq(r->ctx->be->download(r->ctx, pow2, s->pow2, n * sizeof *pow2), GCN_OK);
}

void expect_bits(const void *got, const void *want, int64_t n, size_t elem, const char *what)
{
    const char *g = got, *w = want;
    for (int64_t i = 0; i < n; i++)
        cr_assert(memcmp(g + i * elem, w + i * elem, elem) == 0,
                  "%s: element %lld differs in its bits", what, (long long)i);
}

/* Copies parameter i and its state from one rig to another. */
static void copy_param(optim_rig *from, optim_rig *to, int i)
{
    gcn_tensor *dst[3] = {to->params[i], gcn_optim_state(to->opt, i, 0),
                          gcn_optim_state(to->opt, i, 1)};
    for (int slot = -1; slot < 2; slot++) {
        if (!dst[slot + 1])
            continue;
        float *h = rig_read(from, i, slot);
        size_t bytes = (size_t)gcn_tensor_numel(dst[slot + 1]) * sizeof *h;
        cr_assert_eq(to->ctx->be->upload(to->ctx, gcn_tensor_data(dst[slot + 1]), h, bytes),
                     GCN_OK);
        free(h);
    }
}

void check_resume(gcn_ctx *ctx, const gcn_optim_opts *o, int k)
{
    enum { AFTER = 3 };
    int64_t sizes[RIG_MANY];
    for (int i = 0; i < RIG_MANY; i++)
        sizes[i] = rig_many_size(i);
    optim_rig a, b;
    rig_open(&a, ctx, o, RIG_MANY, sizes);
    rig_open(&b, ctx, o, RIG_MANY, sizes);
    for (int s = 0; s < k; s++)
        rig_step(&a, s, false);
    for (int i = 0; i < RIG_MANY; i++)
        copy_param(&a, &b, i);
    cr_assert_eq(gcn_optim_set_steps(b.opt, k), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_optim_steps(b.opt), k);
    for (int s = k; s < k + AFTER; s++) {
        rig_step(&a, s, false);
        rig_step(&b, s, false);
        for (int i = 0; i < RIG_MANY; i++)
            for (int slot = -1; slot < 2; slot++) {
                if (slot >= 0 && !gcn_optim_state(a.opt, i, slot))
                    continue;
                float *got = rig_read(&b, i, slot), *want = rig_read(&a, i, slot);
                char what[96];
                snprintf(what, sizeof what, "kind %d step %d parameter %d slot %d", (int)o->kind,
                         s, i, slot);
                expect_bits(got, want, sizes[i], sizeof *got, what);
                free(got);
                free(want);
            }
    }
    cr_assert_eq(gcn_optim_steps(b.opt), k + AFTER);
    int64_t count[2][RIG_MANY];
    double pow1[2][RIG_MANY] = {{0}}, pow2[2][RIG_MANY] = {{0}};
    rig_read_steps(&a, count[0], pow1[0], pow2[0]);
    rig_read_steps(&b, count[1], pow1[1], pow2[1]);
    expect_bits(count[1], count[0], RIG_MANY, sizeof count[0][0], "update counts");
    expect_bits(pow1[1], pow1[0], RIG_MANY, sizeof pow1[0][0], "beta1^t");
    expect_bits(pow2[1], pow2[0], RIG_MANY, sizeof pow2[0][0], "beta2^t");
    rig_close(&a);
    rig_close(&b);
}
