/* The backends' bf16 products and epilogue against references in higher
 * precision (bf16_ops_check.h).  Tolerances come from bf16's 8-bit
 * significand (one rounding to nearest moves a value by at most 2^-8 of
 * itself) and fp32 accumulation (a sum of k products of bf16 values, each
 * exact in fp32, is within k 2^-24 of the sum of their magnitudes, doubled
 * here for tensor cores, whose adds may truncate). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "bf16_ops_check.h"
#include "core/bf16.h"
#include "helpers.h"

/* ---- buffers on the context's backend --------------------------------- */

static void *put(gcn_ctx *ctx, const void *host, size_t bytes)
{
    void *p = NULL;
    cr_assert_eq(gcn_mem_alloc(ctx, &p, bytes), GCN_OK, "%s", gcn_last_error(ctx));
    if (bytes > 0)
        cr_assert_eq(ctx->be->upload(ctx, p, host, bytes), GCN_OK, "%s", gcn_last_error(ctx));
    return p;
}

static void get(gcn_ctx *ctx, void *host, void *dev, size_t bytes)
{
    if (bytes > 0)
        cr_assert_eq(ctx->be->download(ctx, host, dev, bytes), GCN_OK, "%s",
                     gcn_last_error(ctx));
    gcn_mem_release(ctx, dev, bytes);
}

/* n bf16 values uniform in [lo, hi) times scale. */
static uint16_t *bf16_random(uint64_t *s, int64_t n, float lo, float hi, float scale)
{
    float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
    uint16_t *b = malloc((size_t)(n > 0 ? n : 1) * sizeof *b);
    cr_assert(f && b);
    test_fill_uniform(s, f, n, lo, hi);
    for (int64_t i = 0; i < n; i++)
        b[i] = gcn_bf16_from_float(f[i] * scale);
    free(f);
    return b;
}

/* ---- products ----------------------------------------------------------- */

typedef struct gemm_case {
    int64_t m, n, k;
    bool ta, tb;
    float scale; /* of the operands: 300 makes sums past fp16's 65504 */
} gemm_case;

static void check_gemm_case(gcn_ctx *ctx, const gemm_case *g, bool c_bf16, bool acc,
                            uint64_t seed)
{
    int64_t m = g->m, n = g->n, k = g->k, na = m * k, nb = k * n, nc = m * n;
    int64_t lda = g->ta ? m : k, ldb = g->tb ? k : n;
    uint64_t s = seed;
    uint16_t *a = bf16_random(&s, na, -1, 1, g->scale), *b = bf16_random(&s, nb, -1, 1, g->scale);
    uint16_t *c16 = bf16_random(&s, nc, -1, 1, g->scale * g->scale);
    float *c32 = malloc((size_t)nc * sizeof *c32), *got = malloc((size_t)nc * sizeof *got);
    cr_assert(c32 && got);
    for (int64_t i = 0; i < nc; i++)
        c32[i] = gcn_bf16_to_float(c16[i]);
    size_t c_bytes = (size_t)nc * (c_bf16 ? sizeof *c16 : sizeof *c32);
    void *da = put(ctx, a, (size_t)na * sizeof *a), *db = put(ctx, b, (size_t)nb * sizeof *b);
    void *dc = put(ctx, c_bf16 ? (void *)c16 : (void *)c32, c_bytes);
    float beta = acc ? 1.0f : 0.0f;
    cr_assert_eq(ctx->be->gemm_bf16(ctx, g->ta, g->tb, m, n, k, 1.0f, da, lda, db, ldb, beta, dc,
                                    n, c_bf16),
                 GCN_OK, "%s", gcn_last_error(ctx));
    if (c_bf16) {
        uint16_t *out = malloc((size_t)nc * sizeof *out);
        cr_assert(out);
        get(ctx, out, dc, c_bytes);
        for (int64_t i = 0; i < nc; i++)
            got[i] = gcn_bf16_to_float(out[i]);
        free(out);
    } else {
        get(ctx, got, dc, c_bytes);
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double ref = acc ? c32[i * n + j] : 0.0, mag = fabs(ref);
            for (int64_t l = 0; l < k; l++) {
                double x = gcn_bf16_to_float(a[g->ta ? l * lda + i : i * lda + l]);
                double y = gcn_bf16_to_float(b[g->tb ? j * ldb + l : l * ldb + j]);
                ref += x * y;
                mag += fabs(x * y);
            }
            double tol = 2.0 * (double)(k + 1) * 0x1p-24 * mag;
            if (c_bf16)
                tol += 0x1p-8 * fabs(ref);
            cr_assert(fabs(got[i * n + j] - ref) <= tol,
                      "%lldx%lldx%lld ta %d tb %d %s%s: c[%lld, %lld] = %.9g, float64 %.9g "
                      "(tolerance %.3g)",
                      (long long)m, (long long)n, (long long)k, g->ta, g->tb,
                      c_bf16 ? "bf16" : "fp32", acc ? " +=" : "", (long long)i, (long long)j,
                      (double)got[i * n + j], ref, tol);
        }
    gcn_mem_release(ctx, da, (size_t)na * sizeof *a);
    gcn_mem_release(ctx, db, (size_t)nb * sizeof *b);
    free(a), free(b), free(c16), free(c32), free(got);
}

void bf16_check_gemm(gcn_ctx *ctx)
{
    static const gemm_case cases[] = {
        {1, 1, 1, false, false, 1.0f},      {37, 13, 9, false, false, 1.0f},
        {9, 37, 13, true, false, 1.0f},     {13, 9, 37, false, true, 1.0f},
        {7, 5, 3, true, true, 1.0f},        {3, 1, 1000, false, false, 300.0f},
        {40, 24, 1000, true, false, 300.0f}, {33, 17, 0, false, false, 1.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int v = 0; v < 4; v++)
            check_gemm_case(ctx, &cases[i], v & 1, v & 2, 7 + i * 4 + (uint64_t)v);
}

/* ---- epilogue ----------------------------------------------------------- */

/* The fused epilogue's operands on one context, x and dout as bf16 values
 * (or their fp32 widening: wide). */
typedef struct epi_side {
    void *x, *dout, *dx, *bias, *gamma, *beta, *rm, *rv, *mean, *invstd, *out;
    float *dbias, *dgamma, *dbeta;
} epi_side;

typedef struct epi_host {
    int64_t r, c;
    uint16_t *x, *dout, *dx; /* bf16 */
    float *xw, *doutw, *dxw; /* widened */
    float *bias, *gamma, *beta, *rm, *rv;
} epi_host;

static float *widened(const uint16_t *b, int64_t n)
{
    float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
    cr_assert(f);
    for (int64_t i = 0; i < n; i++)
        f[i] = gcn_bf16_to_float(b[i]);
    return f;
}

static epi_side side_on(gcn_ctx *ctx, const epi_host *h, bool wide)
{
    int64_t n = h->r * h->c;
    size_t vb = (size_t)n * (wide ? sizeof(float) : sizeof(uint16_t)), cb = (size_t)h->c * 4;
    epi_side s = {.x = put(ctx, wide ? (void *)h->xw : (void *)h->x, vb),
                  .dout = put(ctx, wide ? (void *)h->doutw : (void *)h->dout, vb),
                  .dx = put(ctx, wide ? (void *)h->dxw : (void *)h->dx, vb),
                  .bias = put(ctx, h->bias, cb), .gamma = put(ctx, h->gamma, cb),
                  .beta = put(ctx, h->beta, cb), .rm = put(ctx, h->rm, cb),
                  .rv = put(ctx, h->rv, cb), .mean = put(ctx, h->rm, cb),
                  .invstd = put(ctx, h->rv, cb),
                  .out = put(ctx, wide ? (void *)h->xw : (void *)h->x, vb),
                  .dbias = put(ctx, h->bias, cb), .dgamma = put(ctx, h->gamma, cb),
                  .dbeta = put(ctx, h->beta, cb)};
    return s;
}

/* Statistics, forward and backward (dx accumulated) on one side; the
 * results come back into `res` as floats: out, dx, then mean, invstd,
 * running mean and variance, dbias, dgamma, dbeta. */
static void run_side(gcn_ctx *ctx, const epi_host *h, bool wide, bool bn, gcn_activation act,
                     float p, float *res)
{
    int64_t n = h->r * h->c, c = h->c;
    gcn_dtype dt = wide ? GCN_DTYPE_FP32 : GCN_DTYPE_BF16;
    epi_side s = side_on(ctx, h, wide);
    if (bn)
        cr_assert_eq(ctx->be->epilogue_stats(ctx, h->r, c, s.x, dt, s.bias, true, 0.1f, 1e-5f,
                                             s.rm, s.rv, s.mean, s.invstd),
                     GCN_OK, "%s", gcn_last_error(ctx));
    gcn_epilogue_args a = {.rows = h->r, .cols = c, .dtype = dt, .x = s.x, .bias = s.bias,
                           .gamma = bn ? s.gamma : NULL, .beta = bn ? s.beta : NULL,
                           .mean = bn ? s.mean : NULL, .invstd = bn ? s.invstd : NULL,
                           .batch_stats = bn, .act = act, .alpha = 1.0f, .p = p, .key = {3, 4},
                           .offset = {NULL, 777}};
    cr_assert_eq(ctx->be->epilogue_forward(ctx, &a, s.out), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_epilogue_grads g = {.dx = s.dx, .dbias = s.dbias, .dgamma = bn ? s.dgamma : NULL,
                            .dbeta = bn ? s.dbeta : NULL, .acc_x = true};
    cr_assert_eq(ctx->be->epilogue_backward(ctx, &a, s.dout, &g), GCN_OK, "%s",
                 gcn_last_error(ctx));
    size_t vb = (size_t)n * (wide ? 4 : 2), cb = (size_t)c * 4;
    void *vals[2] = {s.out, s.dx};
    for (int i = 0; i < 2; i++) {
        if (wide) {
            get(ctx, res + i * n, vals[i], vb);
            continue;
        }
        uint16_t *t = malloc(vb > 0 ? vb : 1);
        cr_assert(t);
        get(ctx, t, vals[i], vb);
        for (int64_t j = 0; j < n; j++)
            res[i * n + j] = gcn_bf16_to_float(t[j]);
        free(t);
    }
    void *cols[7] = {s.mean, s.invstd, s.rm, s.rv, s.dbias, s.dgamma, s.dbeta};
    for (int i = 0; i < 7; i++)
        get(ctx, res + 2 * n + i * c, cols[i], cb);
    void *rest[5] = {s.x, s.dout, s.bias, s.gamma, s.beta};
    size_t rest_bytes[5] = {vb, vb, cb, cb, cb};
    for (int i = 0; i < 5; i++)
        gcn_mem_release(ctx, rest[i], rest_bytes[i]);
}

static void check_epilogue_case(gcn_ctx *ctx, gcn_ctx *cpu, bool exact, int64_t r, int64_t c,
                                bool bn, gcn_activation act, float p)
{
    uint64_t s = 31 + (uint64_t)(r * 7 + c);
    int64_t n = r * c;
    epi_host h = {.r = r, .c = c, .x = bf16_random(&s, n, -2, 3, 1.0f),
                  .dout = bf16_random(&s, n, -1, 1, 1.0f), .dx = bf16_random(&s, n, -1, 1, 1.0f)};
    h.xw = widened(h.x, n);
    h.doutw = widened(h.dout, n);
    h.dxw = widened(h.dx, n);
    float **cols[5] = {&h.bias, &h.gamma, &h.beta, &h.rm, &h.rv};
    for (int i = 0; i < 5; i++) {
        *cols[i] = malloc((size_t)c * sizeof(float));
        test_fill_uniform(&s, *cols[i], c, 0.5f, 1.5f);
    }
    int64_t len = 2 * n + 7 * c;
    float *got = malloc((size_t)len * sizeof *got), *want = malloc((size_t)len * sizeof *want);
    cr_assert(got && want);
    run_side(ctx, &h, false, bn, act, p, got);
    run_side(cpu, &h, true, bn, act, p, want);
    for (int64_t i = 0; i < 2 * n; i++) /* out and dx are stored once, rounded */
        want[i] = gcn_bf16_round(want[i]);
    const char *names[9] = {"out", "dx", "mean", "invstd", "running_mean", "running_var",
                            "dbias", "dgamma", "dbeta"};
    for (int i = 0; i < 9; i++) {
        int64_t off = i < 2 ? i * n : 2 * n + (i - 2) * c, cnt = i < 2 ? n : c;
        if (!bn && i >= 2 && i != 6)
            continue;
        if (exact) {
            for (int64_t j = 0; j < cnt; j++)
                cr_assert(got[off + j] == want[off + j] ||
                              (isnan(got[off + j]) && isnan(want[off + j])),
                          "%lldx%lld bn %d act %d p %g: %s[%lld] = %.9g, fp32 path %.9g",
                          (long long)r, (long long)c, bn, (int)act, (double)p, names[i],
                          (long long)j, (double)got[off + j], (double)want[off + j]);
            continue;
        }
        /* sums in another order move fp32 results by about 1e-5 of the
         * largest, which may move a bf16 rounding by one step (2^-7);
         * dbias under batch statistics is rounding noise around zero */
        if (i == 6 && bn)
            continue;
        double big = 0.0;
        for (int64_t j = 0; j < cnt; j++)
            big = fmax(big, fabs(want[off + j]));
        for (int64_t j = 0; j < cnt; j++) {
            double tol = 1e-5 * big + (i < 2 ? 0x1p-7 * fabs(want[off + j]) : 0.0);
            cr_assert(fabs(got[off + j] - want[off + j]) <= tol,
                      "%lldx%lld bn %d act %d p %g: %s[%lld] = %.9g, fp32 path %.9g",
                      (long long)r, (long long)c, bn, (int)act, (double)p, names[i],
                      (long long)j, (double)got[off + j], (double)want[off + j]);
        }
    }
    free(got), free(want);
    free(h.x), free(h.dout), free(h.dx), free(h.xw), free(h.doutw), free(h.dxw);
    for (int i = 0; i < 5; i++)
        free(*cols[i]);
}

void bf16_check_epilogue(gcn_ctx *ctx, gcn_ctx *cpu, bool exact)
{
    static const int64_t shapes[][2] = {{2, 1}, {37, 13}, {65, 36}, {1000, 64}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int v = 0; v < 4; v++)
            check_epilogue_case(ctx, cpu, exact, shapes[i][0], shapes[i][1], v & 1,
                                v & 2 ? GCN_ACT_RELU : GCN_ACT_NONE, v == 3 ? 0.5f : 0.0f);
}

/* ---- the weights' bf16 copies ------------------------------------------- */

/* w's bf16 copy equals w rounded, bit for bit. */
static void expect_copy_fresh(gcn_ctx *ctx, gcn_tensor *w, const char *when)
{
    int64_t n = gcn_tensor_numel(w);
    float *v = malloc((size_t)n * sizeof *v);
    uint16_t *c = malloc((size_t)n * sizeof *c);
    const uint16_t *half;
    cr_assert(v && c);
    cr_assert_eq(gcn_tensor_to_host(ctx, w, v), GCN_OK);
    cr_assert_eq(gcn_tensor_half(ctx, w, &half), GCN_OK);
    cr_assert_eq(ctx->be->download(ctx, c, half, (size_t)n * sizeof *c), GCN_OK);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(c[i], gcn_bf16_from_float(v[i]), "%s: element %lld", when, (long long)i);
    free(v);
    free(c);
}

void bf16_check_weight_copy(gcn_ctx *ctx)
{
    for (int kind = 0; kind < 2; kind++) {
        uint64_t s = 17;
        gcn_tensor *x32 = test_random_tensor(ctx, &s, 29, 12);
        gcn_tensor *w = test_random_tensor(ctx, &s, 12, 7);
        gcn_tensor *x = NULL;
        cr_assert_eq(gcn_cast(ctx, x32, GCN_DTYPE_BF16, &x), GCN_OK);
        cr_assert_eq(gcn_tensor_set_requires_grad(w, true), GCN_OK);
        gcn_optim_opts o = gcn_optim_default_opts(kind ? GCN_OPTIM_ADAM : GCN_OPTIM_SGD);
        o.lr = 0.1f;
        gcn_optim *opt = NULL;
        cr_assert_eq(gcn_optim_create(ctx, &opt, &w, 1, &o), GCN_OK);
        for (int step = 0; step < 3; step++) {
            gcn_tensor *y = NULL, *y32 = NULL, *loss = NULL;
            cr_assert_eq(gcn_matmul(ctx, x, w, false, false, &y), GCN_OK, "%s",
                         gcn_last_error(ctx));
            expect_copy_fresh(ctx, w, "after a product");
            cr_assert_eq(gcn_cast(ctx, y, GCN_DTYPE_FP32, &y32), GCN_OK);
            cr_assert_eq(test_weigh(ctx, y32, &loss), GCN_OK);
            cr_assert_eq(gcn_backward(ctx, loss), GCN_OK, "%s", gcn_last_error(ctx));
            cr_assert_eq(gcn_optim_step(ctx, opt), GCN_OK, "%s", gcn_last_error(ctx));
            expect_copy_fresh(ctx, w, "after a step");
            cr_assert_eq(gcn_optim_zero_grad(ctx, opt), GCN_OK);
            gcn_tensor_free(&y), gcn_tensor_free(&y32), gcn_tensor_free(&loss);
        }
        cr_assert_eq(gcn_tensor_fill(ctx, w, 0.3f), GCN_OK);
        expect_copy_fresh(ctx, w, "after a fill");
        gcn_optim_free(&opt);
        gcn_tensor_free(&x), gcn_tensor_free(&x32), gcn_tensor_free(&w);
    }
}
