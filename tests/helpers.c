/* Shared test fixtures (see helpers.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "helpers.h"

gcn_ctx *test_cpu_ctx(uint64_t seed)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CPU;
    o.seed = seed;
    gcn_ctx *ctx = NULL;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    return ctx;
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

void test_fill_uniform(uint64_t *state, float *x, int64_t n, float lo, float hi)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)((xorshift(state) >> 40) * (1.0 / 16777216.0));
}

gcn_tensor *test_tensor(gcn_ctx *ctx, const float *host, int64_t rows, int64_t cols)
{
    gcn_tensor *t = NULL;
    cr_assert_eq(gcn_tensor_from_host(ctx, &t, host, rows, cols), GCN_OK, "%s",
                 gcn_last_error(ctx));
    return t;
}

gcn_index *test_index(gcn_ctx *ctx, const int32_t *host, int64_t n)
{
    gcn_index *idx = NULL;
    cr_assert_eq(gcn_index_from_host(ctx, &idx, host, n), GCN_OK, "%s", gcn_last_error(ctx));
    return idx;
}

gcn_tensor *test_random_tensor(gcn_ctx *ctx, uint64_t *state, int64_t rows, int64_t cols)
{
    float *h = malloc((size_t)(rows * cols > 0 ? rows * cols : 1) * sizeof *h);
    test_fill_uniform(state, h, rows * cols, -1.0f, 1.0f);
    gcn_tensor *t = test_tensor(ctx, h, rows, cols);
    free(h);
    return t;
}

float *test_read(gcn_ctx *ctx, const gcn_tensor *t)
{
    int64_t n = gcn_tensor_numel(t);
    float *h = malloc((size_t)(n > 0 ? n : 1) * sizeof *h);
    cr_assert_eq(gcn_tensor_to_host(ctx, t, h), GCN_OK, "%s", gcn_last_error(ctx));
    return h;
}

double test_rel_err(const float *a, const double *b, int64_t n)
{
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        if (isnan(d))
            return INFINITY;
        num += d * d;
        den += b[i] * b[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* Central difference of ref with respect to every element of input k. */
static void numeric_grad(double **in, const test_input *inputs, int k, test_ref_loss ref,
                         void *user, double *g)
{
    int64_t n = inputs[k].rows * inputs[k].cols;
    for (int64_t i = 0; i < n; i++) {
        double keep = in[k][i], h = 1e-6 * (fabs(keep) > 1.0 ? fabs(keep) : 1.0);
        in[k][i] = keep + h;
        double up = ref(in, user);
        in[k][i] = keep - h;
        double down = ref(in, user);
        in[k][i] = keep;
        g[i] = (up - down) / (2.0 * h);
    }
}

void test_gradcheck(gcn_ctx *ctx, const test_input *inputs, int n_inputs, test_lib_loss lib,
                    test_ref_loss ref, void *user, double tol)
{
    uint64_t state = 0x5eed0000u + (uint64_t)n_inputs;
    gcn_tensor *t[8] = {0};
    double *d[8] = {0};
    cr_assert(n_inputs <= 8);
    for (int k = 0; k < n_inputs; k++) {
        int64_t n = inputs[k].rows * inputs[k].cols;
        float *h = malloc((size_t)(n > 0 ? n : 1) * sizeof *h);
        test_fill_uniform(&state, h, n, inputs[k].lo, inputs[k].hi);
        d[k] = malloc((size_t)(n > 0 ? n : 1) * sizeof *d[k]);
        for (int64_t i = 0; i < n; i++)
            d[k][i] = h[i];
        t[k] = test_tensor(ctx, h, inputs[k].rows, inputs[k].cols);
        cr_assert_eq(gcn_tensor_set_requires_grad(t[k], true), GCN_OK);
        free(h);
    }
    gcn_tensor *loss = NULL;
    cr_assert_eq(lib(ctx, t, user, &loss), GCN_OK, "%s", gcn_last_error(ctx));
    float lval;
    cr_assert_eq(gcn_tensor_to_host(ctx, loss, &lval), GCN_OK);
    double rval = ref(d, user);
    cr_assert(fabs(lval - rval) <= 1e-4 * (1.0 + fabs(rval)), "loss %g vs reference %g",
              (double)lval, rval);
    cr_assert_eq(gcn_backward(ctx, loss), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_tape_len(ctx), 0);
    for (int k = 0; k < n_inputs; k++) {
        int64_t n = inputs[k].rows * inputs[k].cols;
        double *g = malloc((size_t)(n > 0 ? n : 1) * sizeof *g);
        numeric_grad(d, inputs, k, ref, user, g);
        cr_assert_not_null(gcn_tensor_grad(t[k]), "input %d received no gradient", k);
        float *a = test_read(ctx, gcn_tensor_grad(t[k]));
        double scale = 1e-12;
        for (int64_t i = 0; i < n; i++)
            scale = fabs(g[i]) > scale ? fabs(g[i]) : scale;
        for (int64_t i = 0; i < n; i++)
            cr_assert(fabs(a[i] - g[i]) <= tol * scale,
                      "input %d element %lld: analytic %.8g vs numeric %.8g", k, (long long)i,
                      (double)a[i], g[i]);
        free(a);
        free(g);
    }
    gcn_tensor_free(&loss);
    for (int k = 0; k < n_inputs; k++) {
        gcn_tensor_free(&t[k]);
        free(d[k]);
    }
}

/* ---- weighted losses for gradient checks ---- */

static double row_w(int64_t i) { return 0.5 + 0.25 * (double)(i % 5) - 0.1 * (double)(i % 3); }
static double col_w(int64_t j) { return cos(1.0 + (double)j); }

gcn_status test_weigh(gcn_ctx *ctx, gcn_tensor *y, gcn_tensor **loss)
{
    int64_t n = gcn_tensor_rows(y), f = gcn_tensor_cols(y);
    float *r = malloc((size_t)(n + f + 1) * sizeof *r), *w = r + n;
    cr_assert_not_null(r);
    for (int64_t i = 0; i < n; i++)
        r[i] = (float)row_w(i);
    for (int64_t j = 0; j < f; j++)
        w[j] = (float)col_w(j);
    gcn_tensor *rt = NULL, *wt = NULL, *yw = NULL;
    gcn_status st = gcn_tensor_from_host(ctx, &rt, r, n, 1);
    if (st == GCN_OK)
        st = gcn_tensor_from_host(ctx, &wt, w, f, 1);
    if (st == GCN_OK)
        st = gcn_matmul(ctx, y, wt, false, false, &yw);
    if (st == GCN_OK)
        st = gcn_matmul(ctx, rt, yw, true, false, loss);
    gcn_tensor_free(&rt);
    gcn_tensor_free(&wt);
    gcn_tensor_free(&yw);
    free(r);
    return st;
}

double test_weigh_ref(const double *y, int64_t n, int64_t f)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < f; j++)
            s += row_w(i) * y[i * f + j] * col_w(j);
    return s;
}
