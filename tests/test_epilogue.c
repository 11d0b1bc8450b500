/* The fused epilogue (gcn_apply_epilogue) on the CPU: against the chain of
 * separately tested ops it replaces, against finite differences, and on bad
 * input. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "epilogue_cases.h"
#include "gpu_helpers.h"
#include "helpers.h"

#define TOL 2e-3    /* analytic float32 gradient vs double central differences */
#define CHAIN 2e-5  /* fused vs unfused: same maths, statistics summed differently */

/* The tensors of one case: x [n, f] and the [1, f] vectors, all trainable
 * but the running statistics. */
typedef struct operands {
    gcn_tensor *x, *bias, *gamma, *beta, *rm, *rv;
} operands;

static operands make_operands(gcn_ctx *ctx, int64_t n, int64_t f, uint64_t seed)
{
    uint64_t s = seed;
    float *h = malloc((size_t)(n * f) * sizeof *h);
    cr_assert_not_null(h);
    operands o;
    test_fill_uniform(&s, h, n * f, -2, 3);
    o.x = test_tensor(ctx, h, n, f);
    test_fill_uniform(&s, h, f, -1, 1);
    o.bias = test_tensor(ctx, h, 1, f);
    test_fill_uniform(&s, h, f, 0.5f, 1.5f);
    o.gamma = test_tensor(ctx, h, 1, f);
    test_fill_uniform(&s, h, f, -1, 1);
    o.beta = test_tensor(ctx, h, 1, f);
    test_fill_uniform(&s, h, f, -0.5f, 0.5f);
    o.rm = test_tensor(ctx, h, 1, f);
    test_fill_uniform(&s, h, f, 0.5f, 2);
    o.rv = test_tensor(ctx, h, 1, f);
    free(h);
    gcn_tensor *trained[4] = {o.x, o.bias, o.gamma, o.beta};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(gcn_tensor_set_requires_grad(trained[i], true), GCN_OK);
    return o;
}

static void free_operands(operands *o)
{
    gcn_tensor **all[6] = {&o->x, &o->bias, &o->gamma, &o->beta, &o->rm, &o->rv};
    for (int i = 0; i < 6; i++)
        gcn_tensor_free(all[i]);
}

static gcn_epilogue epilogue_of(const spec *c, const operands *o)
{
    gcn_epilogue e = {.bias = c->bias ? o->bias : NULL, .act = c->act, .alpha = 0.7f,
                      .dropout = c->p};
    if (c->bn != BN_NONE) {
        e.gamma = o->gamma;
        e.beta = o->beta;
        e.running_mean = o->rm;
        e.running_var = o->rv;
        e.momentum = 0.1f;
        e.eps = 1e-5f;
    }
    return e;
}

/* out = dropout(act(bn(x + bias))) through the separate ops; BN_EVAL
 * evaluates (running statistics, no dropout), the others train. */
static gcn_status unfused(gcn_ctx *ctx, const spec *c, const operands *o, gcn_tensor **out)
{
    gcn_tensor *t[4] = {0};
    gcn_status st = c->bias ? gcn_add_bias(ctx, o->x, o->bias, &t[0])
                            : gcn_scale(ctx, o->x, 1, &t[0]);
    if (st == GCN_OK)
        st = c->bn == BN_NONE ? gcn_scale(ctx, t[0], 1, &t[1])
                              : gcn_batchnorm(ctx, t[0], o->gamma, o->beta, o->rm, o->rv,
                                              c->bn == BN_TRAIN, 0.1f, 1e-5f, &t[1]);
    if (st == GCN_OK)
        st = c->act == GCN_ACT_RELU  ? gcn_relu(ctx, t[1], &t[2])
             : c->act == GCN_ACT_ELU ? gcn_elu(ctx, t[1], 0.7f, &t[2])
                                     : gcn_scale(ctx, t[1], 1, &t[2]);
    if (st == GCN_OK)
        st = gcn_dropout(ctx, t[2], c->p, c->bn != BN_EVAL, out);
    for (int i = 0; i < 4; i++)
        gcn_tensor_free(&t[i]);
    return st;
}

/* Output, running statistics and the four gradients of one side. */
typedef struct result {
    float *out, *rm, *rv, *grad[4];
} result;

static result run_side(const spec *c, int64_t n, int64_t f, bool fused)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    operands o = make_operands(ctx, n, f, 77 + (uint64_t)f);
    gcn_tensor *y = NULL, *loss = NULL;
    gcn_epilogue e = epilogue_of(c, &o);
    gcn_status st = fused ? gcn_apply_epilogue(ctx, o.x, &e, c->bn != BN_EVAL, &y)
                          : unfused(ctx, c, &o, &y);
    cr_assert_eq(st, GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(test_weigh(ctx, y, &loss), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, loss), GCN_OK, "%s", gcn_last_error(ctx));
    result r = {test_read(ctx, y), test_read(ctx, o.rm), test_read(ctx, o.rv), {0}};
    gcn_tensor *trained[4] = {o.x, o.bias, o.gamma, o.beta};
    for (int i = 0; i < 4; i++)
        if (gcn_tensor_grad(trained[i]))
            r.grad[i] = test_read(ctx, gcn_tensor_grad(trained[i]));
    gcn_tensor_free(&y);
    gcn_tensor_free(&loss);
    free_operands(&o);
    gcn_ctx_free(&ctx);
    return r;
}

static void free_result(result *r)
{
    free(r->out);
    free(r->rm);
    free(r->rv);
    for (int i = 0; i < 4; i++)
        free(r->grad[i]);
}

static float max_abs(const float *v, int64_t n)
{
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++)
        m = fmaxf(m, fabsf(v[i]));
    return m;
}

/* Both bias gradients are below 1e-5 of the gradient of beta (the sum of the
 * same per-element gradients). */
static void expect_negligible(const float *a, const float *b, const float *dbeta, int64_t f)
{
    float scale = max_abs(dbeta, f);
    cr_assert(max_abs(a, f) <= 1e-5f * scale && max_abs(b, f) <= 1e-5f * scale,
              "dbias %g (fused) and %g (unfused) against dbeta %g", (double)max_abs(a, f),
              (double)max_abs(b, f), (double)scale);
}

Test(epilogue, equals_the_ops_it_fuses)
{
    const int64_t n = 37, f = 6;
    const gcn_activation acts[3] = {GCN_ACT_NONE, GCN_ACT_RELU, GCN_ACT_ELU};
    const char *names[4] = {"dx", "dbias", "dgamma", "dbeta"};
    const int64_t sizes[4] = {n * f, f, f, f};
    for (int k = 0; k < 2 * 3 * 3 * 2; k++) {
        spec c = {k & 1, (k >> 1) % 3, acts[(k / 6) % 3], k >= 18 ? 0.4f : 0.0f};
        result a = run_side(&c, n, f, true), b = run_side(&c, n, f, false);
        cr_log_info("case %d: bias %d, batch norm %d, activation %d, p %g", k, c.bias, c.bn,
                    (int)c.act, (double)c.p);
        expect_close(a.out, b.out, n * f, CHAIN, "out");
        expect_close(a.rm, b.rm, f, CHAIN, "running_mean");
        expect_close(a.rv, b.rv, f, CHAIN, "running_var");
        for (int i = 0; i < 4; i++) {
            cr_assert_eq(a.grad[i] == NULL, b.grad[i] == NULL, "case %d: %s present on one side",
                         k, names[i]);
            if (i == 1 && a.grad[1] && c.bn == BN_TRAIN) /* batch norm cancels the bias */
                expect_negligible(a.grad[1], b.grad[1], a.grad[3], f);
            else if (a.grad[i])
                expect_close(a.grad[i], b.grad[i], sizes[i], CHAIN, names[i]);
        }
        free_result(&a);
        free_result(&b);
    }
}

/* ---- finite differences --------------------------------------------------------- */

/* Inputs x, then gamma and beta with batch norm, then the bias when it
 * has one; running statistics fixed per column.  (With batch statistics
 * the bias's gradient is zero but for rounding: left to the chain test.) */
typedef struct fd_case {
    int bn;
    gcn_activation act;
    float p;
    int64_t n, f;
    bool bias;
} fd_case;

static float fd_rm(int64_t j) { return 0.1f * (float)j; }
static float fd_rv(int64_t j) { return 0.5f + 0.25f * (float)j; }
static int fd_bias_slot(const fd_case *c) { return c->bn == BN_NONE ? 1 : 3; }

static gcn_status lib_epilogue(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    fd_case *c = user;
    float m[8], v[8];
    for (int64_t j = 0; j < c->f; j++) {
        m[j] = fd_rm(j);
        v[j] = fd_rv(j);
    }
    gcn_tensor *rm = test_tensor(ctx, m, 1, c->f), *rv = test_tensor(ctx, v, 1, c->f), *y = NULL;
    gcn_epilogue e = {.bias = c->bias ? in[fd_bias_slot(c)] : NULL, .act = c->act, .alpha = 0.7f,
                      .dropout = c->p};
    if (c->bn != BN_NONE) {
        e.gamma = in[1];
        e.beta = in[2];
        e.running_mean = rm;
        e.running_var = rv;
        e.momentum = 0.1f;
        e.eps = 1e-5f;
    }
    gcn_status st = gcn_apply_epilogue(ctx, in[0], &e, c->bn != BN_EVAL, &y);
    if (st == GCN_OK)
        st = test_weigh(ctx, y, loss);
    gcn_tensor_free(&y);
    gcn_tensor_free(&rm);
    gcn_tensor_free(&rv);
    return st;
}

/* The same loss in double; the mask is the first draw of a fresh context
 * with seed 3 (key {3, 0}, stream offset 0). */
static double ref_epilogue(double **in, void *user)
{
    fd_case *c = user;
    double y[64];
    const uint32_t key[2] = {3, 0};
    for (int64_t j = 0; j < c->f; j++) {
        double mean = fd_rm(j), var = fd_rv(j), b = c->bias ? in[fd_bias_slot(c)][j] : 0.0;
        if (c->bn == BN_TRAIN) {
            mean = var = 0.0;
            for (int64_t i = 0; i < c->n; i++)
                mean += (in[0][i * c->f + j] + b) / (double)c->n;
            for (int64_t i = 0; i < c->n; i++)
                var += pow(in[0][i * c->f + j] + b - mean, 2) / (double)c->n;
        }
        for (int64_t i = 0; i < c->n; i++) {
            int64_t e = i * c->f + j;
            double v = in[0][e] + b;
            if (c->bn != BN_NONE)
                v = (v - mean) / sqrt(var + 1e-5) * in[1][j] + in[2][j];
            if (c->act == GCN_ACT_RELU)
                v = v > 0 ? v : 0;
            else if (c->act == GCN_ACT_ELU)
                v = v > 0 ? v : 0.7 * expm1(v);
            uint32_t ctr[4] = {(uint32_t)(e / 4), 0, GCN_RNG_DROPOUT, 0}, w[4];
            gcn_philox4x32_10(ctr, key, w);
            if (c->p > 0)
                v = (double)(w[e % 4] >> 8) / 16777216.0 >= c->p ? v / (1.0 - c->p) : 0.0;
            y[e] = v;
        }
    }
    return test_weigh_ref(y, c->n, c->f);
}

static void gradcheck(fd_case c)
{
    gcn_ctx *ctx = test_cpu_ctx(3);
    test_input vec = {1, c.f, -1, 1}, gamma = {1, c.f, 0.5f, 1.5f};
    test_input in[4] = {{c.n, c.f, -2, 2}, c.bn == BN_NONE ? vec : gamma, vec, vec};
    int n_in = (c.bn == BN_NONE ? 1 : 3) + (c.bias ? 1 : 0);
    test_gradcheck(ctx, in, n_in, lib_epilogue, ref_epilogue, &c, TOL);
    gcn_ctx_free(&ctx);
}

Test(epilogue, gradients_with_batch_statistics_elu_and_dropout)
{
    gradcheck((fd_case){BN_TRAIN, GCN_ACT_ELU, 0.4f, 9, 4, false});
}

Test(epilogue, gradients_with_running_statistics_bias_and_relu)
{
    gradcheck((fd_case){BN_EVAL, GCN_ACT_RELU, 0.0f, 6, 3, true});
}

Test(epilogue, gradients_of_bias_activation_and_dropout_alone)
{
    gradcheck((fd_case){BN_NONE, GCN_ACT_ELU, 0.3f, 8, 5, true});
}

/* ---- bad input ---------------------------------------------------------------- */

Test(epilogue, rejects_bad_operands_with_a_message)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    operands o = make_operands(ctx, 4, 3, 9);
    gcn_tensor *y = NULL, *wide = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &wide, 1, 4), GCN_OK);
    spec bn = {true, BN_TRAIN, GCN_ACT_RELU, 0};
    struct {
        gcn_epilogue e;
        gcn_status st;
        const char *needle;
    } bad[] = {
        {{.bias = wide}, GCN_ERR_SHAPE, "bias is [1, 4], expected [1, 3]"},
        {{.act = (gcn_activation)9}, GCN_ERR_INVALID_ARG, "unknown activation"},
        {{.act = GCN_ACT_ELU}, GCN_ERR_INVALID_ARG, "ELU alpha"},
        {{.dropout = 1.0f}, GCN_ERR_INVALID_ARG, "dropout p = 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(gcn_apply_epilogue(ctx, o.x, &bad[i].e, true, &y), bad[i].st);
        cr_assert_not_null(strstr(gcn_last_error(ctx), bad[i].needle), "%s", gcn_last_error(ctx));
        cr_assert_null(y);
    }
    gcn_epilogue e = epilogue_of(&bn, &o);
    e.running_var = NULL;
    cr_assert_neq(gcn_apply_epilogue(ctx, o.x, &e, true, &y), GCN_OK);
    gcn_tensor *one = test_tensor(ctx, (float[3]){1, 2, 3}, 1, 3);
    e = epilogue_of(&bn, &o);
    cr_assert_eq(gcn_apply_epilogue(ctx, one, &e, true, &y), GCN_ERR_SHAPE);
    cr_assert_not_null(strstr(gcn_last_error(ctx), "at least 2 rows"));
    gcn_tensor_free(&one);
    gcn_tensor_free(&wide);
    free_operands(&o);
    gcn_ctx_free(&ctx);
}
