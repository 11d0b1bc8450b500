/* The embedding API: ops with a program's own forward and backward, host
 * copies into existing tensors, the context's stream, caller-filled structs
 * that carry their size, and SpMM kernels registered by the program. */
#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "helpers.h"

#define TOL 2e-3
#define N 7
#define F 5

/* ---- gcn_custom ------------------------------------------------------- */

/* y = a * b element-wise, on host pointers (a CPU context). */
static gcn_status mul_forward(gcn_ctx *ctx, gcn_tensor *const *in, int n_in, gcn_tensor *y,
                              void *user)
{
    (void)ctx;
    (void)n_in;
    int *calls = user;
    ++*calls;
    const float *a = gcn_tensor_cdata(in[0]), *b = gcn_tensor_cdata(in[1]);
    float *out = gcn_tensor_data(y);
    for (int64_t i = 0; i < gcn_tensor_numel(y); i++)
        out[i] = a[i] * b[i];
    return GCN_OK;
}

static gcn_status mul_backward(gcn_ctx *ctx, gcn_tensor *const *in, int n_in,
                               const gcn_tensor *y, const gcn_tensor *dy,
                               gcn_tensor *const *dx, void *user)
{
    (void)ctx;
    (void)n_in;
    (void)user;
    const float *g = gcn_tensor_cdata(dy);
    for (int k = 0; k < 2; k++)
        if (dx[k]) {
            const float *other = gcn_tensor_cdata(in[1 - k]);
            float *d = gcn_tensor_data(dx[k]);
            for (int64_t i = 0; i < gcn_tensor_numel(y); i++)
                d[i] = g[i] * other[i];
        }
    return GCN_OK;
}

static int mul_calls;
static const gcn_custom_op mul_op = {
    .size = sizeof(gcn_custom_op),
    .name = "mul",
    .forward = mul_forward,
    .backward = mul_backward,
    .user = &mul_calls,
};

/* in[0] * in[1], or in[0] * in[0] when user is non-NULL (the same tensor
 * twice: its gradient gathers both terms). */
static gcn_status lib_mul(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss)
{
    gcn_tensor *ins[2] = {in[0], user ? in[0] : in[1]}, *y = NULL;
    gcn_status st = gcn_custom(ctx, &mul_op, ins, 2, N, F, &y);
    if (st == GCN_OK)
        st = test_weigh(ctx, y, loss);
    gcn_tensor_free(&y);
    return st;
}

static double ref_mul(double **in, void *user)
{
    double y[N * F];
    for (int i = 0; i < N * F; i++)
        y[i] = in[0][i] * (user ? in[0][i] : in[1][i]);
    return test_weigh_ref(y, N, F);
}

Test(api, custom_op_gradients_match_finite_differences)
{
    gcn_ctx *ctx = test_cpu_ctx(3);
    const test_input in[2] = {{N, F, -1, 1}, {N, F, -1, 1}};
    test_gradcheck(ctx, in, 2, lib_mul, ref_mul, NULL, TOL);
    int twice = 1;
    test_gradcheck(ctx, in, 1, lib_mul, ref_mul, &twice, TOL);
    gcn_ctx_free(&ctx);
}

Test(api, custom_op_gradient_adds_to_an_existing_one)
{
    gcn_ctx *ctx = test_cpu_ctx(4);
    uint64_t s = 9;
    gcn_tensor *a = test_random_tensor(ctx, &s, N, F), *b = test_random_tensor(ctx, &s, N, F);
    cr_assert_eq(gcn_tensor_set_requires_grad(a, true), GCN_OK);
    gcn_tensor *y1 = NULL, *y2 = NULL, *sum = NULL, *loss = NULL, *ins[2] = {a, b};
    /* loss = sum(a * b) + sum(a): a's gradient is b + 1, the custom op's
     * term added to what gcn_sum left (or the other way round) */
    cr_assert_eq(gcn_custom(ctx, &mul_op, ins, 2, N, F, &y1), GCN_OK);
    cr_assert_eq(gcn_add(ctx, y1, a, &y2), GCN_OK);
    cr_assert_eq(gcn_sum(ctx, y2, &loss), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, loss), GCN_OK);
    float *ga = test_read(ctx, gcn_tensor_grad(a)), *hb = test_read(ctx, b);
    for (int i = 0; i < N * F; i++)
        cr_assert_float_eq(ga[i], hb[i] + 1.0f, 1e-6f, "element %d", i);
    cr_assert_null(gcn_tensor_grad(b), "b does not require a gradient");
    free(ga);
    free(hb);
    gcn_tensor *t[] = {a, b, y1, y2, sum, loss};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        gcn_tensor_free(&t[i]);
    gcn_ctx_free(&ctx);
}

static gcn_status failing_forward(gcn_ctx *ctx, gcn_tensor *const *in, int n_in, gcn_tensor *y,
                                  void *user)
{
    (void)in;
    (void)n_in;
    (void)y;
    (void)user;
    return gcn_tensor_fill(ctx, NULL, 0.0f);
}

Test(api, custom_op_misuse_and_failure)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    uint64_t s = 1;
    gcn_tensor *a = test_random_tensor(ctx, &s, N, F), *y = NULL, *ins[2] = {a, a};
    cr_assert_eq(gcn_tensor_set_requires_grad(a, true), GCN_OK);

    gcn_custom_op no_backward = mul_op;
    no_backward.backward = NULL;
    cr_assert_eq(gcn_custom(ctx, &no_backward, ins, 2, N, F, &y), GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "mul") != NULL, "%s", gcn_last_error(ctx));
    GCN_NO_GRAD(ctx)
    {
        cr_assert_eq(gcn_custom(ctx, &no_backward, ins, 2, N, F, &y), GCN_OK,
                     "no backward is fine while nothing records");
    }
    cr_assert_eq(gcn_tape_len(ctx), 0);
    gcn_tensor_free(&y);

    gcn_custom_op failing = mul_op;
    failing.forward = failing_forward;
    cr_assert_neq(gcn_custom(ctx, &failing, ins, 2, N, F, &y), GCN_OK);
    cr_assert_null(y, "a failed forward leaves *out untouched");
    cr_assert_eq(gcn_tape_len(ctx), 0, "and records nothing");

    gcn_custom_op unsized = mul_op;
    unsized.size = 0;
    cr_assert_eq(gcn_custom(ctx, &unsized, ins, 2, N, F, &y), GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "gcn_custom_op") != NULL, "%s", gcn_last_error(ctx));
    gcn_tensor_free(&a);
    gcn_ctx_free(&ctx);
}

/* ---- tensors and the context ------------------------------------------ */

Test(api, copy_from_host_overwrites_in_place)
{
    gcn_ctx *ctx = test_cpu_ctx(6);
    gcn_tensor *t = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &t, 3, 4), GCN_OK);
    const float *before = gcn_tensor_cdata(t);
    float host[12], back[12];
    for (int i = 0; i < 12; i++)
        host[i] = (float)i * 0.5f - 2.0f;
    cr_assert_eq(gcn_tensor_copy_from_host(ctx, t, host), GCN_OK);
    cr_assert_eq(gcn_tensor_cdata(t), before, "the same storage");
    cr_assert_eq(gcn_tensor_to_host(ctx, t, back), GCN_OK);
    cr_assert_arr_eq(back, host, sizeof host);
    cr_assert_eq(gcn_tensor_copy_from_host(ctx, t, NULL), GCN_ERR_INVALID_ARG);
    gcn_tensor_free(&t);
    cr_assert_null(gcn_ctx_stream(ctx), "a CPU context has no stream");
    gcn_ctx_free(&ctx);
}

/* ---- caller-filled structs -------------------------------------------- */

Test(api, options_of_an_older_build_take_defaults_for_the_rest)
{
    /* a caller built when gcn_optim_opts ended before beta1: the library
     * must not read past its size (poisoned here), but use the defaults */
    gcn_optim_opts old;
    memset(&old, 0xff, sizeof old); /* NaN in every float field */
    gcn_optim_opts cur = gcn_optim_default_opts(GCN_OPTIM_ADAM);
    memcpy(&old, &cur, offsetof(gcn_optim_opts, beta1));
    old.size = offsetof(gcn_optim_opts, beta1);
    old.lr = 0.1f;

    gcn_ctx *ctx = test_cpu_ctx(7);
    float w0 = 1.0f, g0 = 0.5f, w;
    gcn_tensor *p = test_tensor(ctx, &w0, 1, 1), *params[] = {p}, *loss = NULL;
    cr_assert_eq(gcn_tensor_set_requires_grad(p, true), GCN_OK);
    gcn_optim *opt = NULL;
    cr_assert_eq(gcn_optim_create(ctx, &opt, params, 1, &old), GCN_OK, "%s",
                 gcn_last_error(ctx));
    gcn_tensor *scale = test_tensor(ctx, &g0, 1, 1);
    cr_assert_eq(gcn_scale_by(ctx, p, scale, &loss), GCN_OK); /* dloss/dp = 0.5 */
    cr_assert_eq(gcn_backward(ctx, loss), GCN_OK);
    cr_assert_eq(gcn_optim_step(ctx, opt), GCN_OK);
    cr_assert_eq(gcn_tensor_to_host(ctx, p, &w), GCN_OK);
    /* Adam's first step moves by lr * g / (|g| + eps'), whatever the betas:
     * finite only if beta1, beta2 and eps came from the defaults */
    cr_assert_float_eq(w, 1.0f - 0.1f, 1e-5f, "w = %g", w);

    gcn_optim *bad = NULL;
    old.size = 0;
    cr_assert_eq(gcn_optim_create(ctx, &bad, params, 1, &old), GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "gcn_optim_opts") != NULL, "%s", gcn_last_error(ctx));
    old.size = sizeof old + 8; /* a newer build than the library */
    cr_assert_eq(gcn_optim_create(ctx, &bad, params, 1, &old), GCN_ERR_INVALID_ARG);
    cr_assert_null(bad);
    gcn_optim_free(&opt);
    gcn_tensor_free(&p);
    gcn_tensor_free(&scale);
    gcn_tensor_free(&loss);
    gcn_ctx_free(&ctx);

    gcn_ctx_opts co = gcn_ctx_default_opts();
    co.size = 0;
    cr_assert_eq(gcn_ctx_create(&ctx, &co), GCN_ERR_INVALID_ARG);
    cr_assert_null(ctx);
}

/* ---- registered SpMM kernels ------------------------------------------ */

static int slow_runs;

static bool slow_supports(const gcn_csr *a, int feat)
{
    return gcn_csr_device(a) == GCN_DEVICE_CPU && feat >= 1;
}

static gcn_status slow_plan(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    (void)ctx;
    (void)a;
    (void)feat;
    *plan = NULL;
    return GCN_OK;
}

/* y (+)= A x column by column, the product computed 30 times over so that
 * the selector measures it clearly slower than the built-in kernel. */
static gcn_status slow_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x, float *y,
                           int feat, bool accumulate)
{
    (void)ctx;
    (void)plan;
    slow_runs++;
    const int32_t *rp = gcn_csr_row_ptr(a), *ci = gcn_csr_col_idx(a);
    const float *v = gcn_csr_values(a);
    for (int rep = 0; rep < 30; rep++)
        for (int c = 0; c < feat; c++)
            for (int32_t i = 0; i < gcn_csr_rows(a); i++) {
                volatile float s = accumulate && rep == 29 ? y[(int64_t)i * feat + c] : 0.0f;
                for (int32_t e = rp[i]; e < rp[i + 1]; e++)
                    s += v[e] * x[(int64_t)ci[e] * feat + c];
                if (rep == 29)
                    y[(int64_t)i * feat + c] = s;
            }
    return GCN_OK;
}

static const gcn_spmm_impl slow = {
    .size = sizeof(gcn_spmm_impl),
    .name = "slow_columns",
    .device = GCN_DEVICE_CPU,
    .deterministic = true,
    .roles = GCN_SPMM_ROLE_WHOLE,
    .supports = slow_supports,
    .plan = slow_plan,
    .run = slow_run,
};

/* A 200-node ring with self-loops, weights 1/3. */
static gcn_csr *ring(gcn_ctx *ctx)
{
    enum { R = 200 };
    int32_t rp[R + 1], ci[3 * R];
    float v[3 * R];
    for (int32_t i = 0; i < R; i++) {
        rp[i] = 3 * i;
        int32_t c[3] = {(i + R - 1) % R, i, (i + 1) % R};
        for (int k = 0; k < 3; k++) {
            ci[3 * i + k] = c[k];
            v[3 * i + k] = 1.0f / 3.0f;
        }
    }
    rp[R] = 3 * R;
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, R, R, 3 * R, rp, ci, v), GCN_OK);
    return a;
}

Test(api, a_registered_kernel_is_forced_and_selected_like_a_built_in_one)
{
    gcn_ctx *ctx = test_cpu_ctx(8);
    cr_assert_null(gcn_spmm_find(ctx, "slow_columns"));
    cr_assert_eq(gcn_spmm_register(ctx, &slow), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_not_null(gcn_spmm_find(ctx, "slow_columns"));
    cr_assert_null(gcn_spmm_find(NULL, "slow_columns"), "not a built-in kernel");

    gcn_csr *a = ring(ctx);
    uint64_t s = 2;
    gcn_tensor *x = test_random_tensor(ctx, &s, 200, 16), *y_ref = NULL, *y = NULL;
    cr_assert_eq(gcn_spmm_set_kernel(ctx, "cpu"), GCN_OK);
    cr_assert_eq(gcn_spmm(ctx, a, x, &y_ref), GCN_OK);
    cr_assert_eq(gcn_spmm_set_kernel(ctx, "slow_columns"), GCN_OK);
    slow_runs = 0;
    cr_assert_eq(gcn_spmm(ctx, a, x, &y), GCN_OK);
    cr_assert_eq(slow_runs, 1, "forced by name, it runs");
    float *r = test_read(ctx, y_ref), *u = test_read(ctx, y);
    for (int i = 0; i < 200 * 16; i++)
        cr_assert_float_eq(u[i], r[i], 1e-6f, "element %d", i);
    free(r);
    free(u);

    /* the selector times both candidates, then keeps the faster one */
    cr_assert_eq(gcn_spmm_set_kernel(ctx, "auto"), GCN_OK);
    for (int call = 0; call < 60; call++) {
        gcn_tensor_free(&y);
        cr_assert_eq(gcn_spmm(ctx, a, x, &y), GCN_OK, "%s", gcn_last_error(ctx));
    }
    gcn_spmm_site_info site[2];
    int n = gcn_spmm_sites(a, site, 2);
    cr_assert_eq(n, 1);
    cr_assert(site[0].locked);
    cr_assert_eq(site[0].n_candidates, 2, "the built-in cpu kernel and the registered one");
    cr_assert_str_eq(site[0].chosen, "cpu", "30 products a run lose");
    cr_assert_str_eq(site[0].runner_up, "slow_columns");
    gcn_tensor_free(&x);
    gcn_tensor_free(&y);
    gcn_tensor_free(&y_ref);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

Test(api, registrations_that_are_refused)
{
    gcn_ctx *ctx = test_cpu_ctx(9);
    gcn_spmm_impl k = slow;
    const char *bad_names[] = {"", "cpu", "auto", "a+b", "x@16", "has space",
                               "a_name_of_more_than_31_characters"};
    for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++) {
        k.name = bad_names[i];
        cr_assert_eq(gcn_spmm_register(ctx, &k), GCN_ERR_INVALID_ARG, "name '%s'", k.name);
    }
    k = slow;
    k.device = GCN_DEVICE_CUDA;
    cr_assert_eq(gcn_spmm_register(ctx, &k), GCN_ERR_DEVICE);
    k = slow;
    k.run = NULL;
    cr_assert_eq(gcn_spmm_register(ctx, &k), GCN_ERR_INVALID_ARG);
    k = slow;
    k.roles = 0;
    cr_assert_eq(gcn_spmm_register(ctx, &k), GCN_ERR_INVALID_ARG);
    k = slow;
    cr_assert_eq(gcn_spmm_register(ctx, &k), GCN_OK);
    cr_assert_eq(gcn_spmm_register(ctx, &k), GCN_ERR_INVALID_ARG, "registered twice");
    cr_assert(strstr(gcn_last_error(ctx), "exists") != NULL, "%s", gcn_last_error(ctx));
    gcn_ctx_free(&ctx);
}
