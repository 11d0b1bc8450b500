/* The CUDA backend against the CPU reference for the network ops: batch
 * norm, log_softmax, NLL loss, cross-entropy, the accuracy count and their
 * backwards, and a
 * chain of public ops whose every gradient is compared. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_helpers.h"
#include "helpers.h"

/* Both backends accumulate statistics in double and differ only in
 * summation order: 1e-5 of the largest magnitude per op, 1e-4 through the
 * chain of ops. */

#define TOL 1e-5

typedef struct shape {
    int64_t rows, cols;
} shape;

static dual nan_dual(gcn_ctx *gpu, int64_t n)
{
    float *h = host_floats(n);
    for (int64_t i = 0; i < n; i++)
        h[i] = NAN;
    dual d = dual_new(gpu, h, n);
    free(h);
    return d;
}

/* ---- batch norm ------------------------------------------------------------------ */

/* Which outputs a backward call writes, and whether it accumulates. */
typedef struct bn_grads {
    bool dx, dgamma, dbeta, acc;
} bn_grads;

static const bn_grads grad_sets[] = {
    {true, true, true, false}, {true, true, true, true}, {false, true, false, false},
    {true, false, false, true}, {false, false, true, true}};

/* The array a backend works on: h for the CPU (d = 0), d for the GPU. */
static float *side(const dual *v, int d)
{
    return d ? v->d : v->h;
}

static void check_bn_backward(gpu_pair *p, int64_t r, int64_t c, dual *x, dual *gamma,
                              dual *mean, dual *stat, bool eval, uint64_t *s)
{
    for (size_t gi = 0; gi < sizeof grad_sets / sizeof grad_sets[0]; gi++) {
        bn_grads g = grad_sets[gi];
        dual dy = dual_random(p->gpu, s, r * c, -1, 1);
        dual dx = g.acc ? dual_random(p->gpu, s, r * c, -1, 1) : nan_dual(p->gpu, r * c);
        dual dg = g.acc ? dual_random(p->gpu, s, c, -1, 1) : nan_dual(p->gpu, c);
        dual db = g.acc ? dual_random(p->gpu, s, c, -1, 1) : nan_dual(p->gpu, c);
        for (int d = 0; d < 2; d++) {
            gcn_ctx *ctx = d ? p->gpu : p->cpu;
            float *ox = g.dx ? side(&dx, d) : NULL, *og = g.dgamma ? side(&dg, d) : NULL;
            float *ob = g.dbeta ? side(&db, d) : NULL;
            float *xs = side(x, d), *gs = side(gamma, d), *ms = side(mean, d);
            float *ss = side(stat, d), *dys = side(&dy, d);
            gcn_status st =
                eval ? ctx->be->batchnorm_eval_backward(ctx, r, c, xs, gs, ms, ss, 1e-5f, dys, ox,
                                                        og, ob, g.acc, g.acc, g.acc)
                     : ctx->be->batchnorm_backward(ctx, r, c, xs, gs, ms, ss, dys, ox, og, ob,
                                                   g.acc, g.acc, g.acc);
            cr_assert_eq(st, GCN_OK, "%s", gcn_last_error(ctx));
        }
        dual_check(p->gpu, &dx, TOL, eval ? "eval dx" : "dx");
        dual_check(p->gpu, &dg, TOL, eval ? "eval dgamma" : "dgamma");
        dual_check(p->gpu, &db, TOL, eval ? "eval dbeta" : "dbeta");
        dual_free(p->gpu, &dy);
        dual_free(p->gpu, &dx);
        dual_free(p->gpu, &dg);
        dual_free(p->gpu, &db);
    }
}

static void check_bn(gpu_pair *p, int64_t r, int64_t c)
{
    uint64_t s = 4242 + (uint64_t)(r * 7 + c);
    int64_t n = r * c;
    dual x = dual_random(p->gpu, &s, n, -2, 3), gamma = dual_random(p->gpu, &s, c, 0.5f, 1.5f);
    dual beta = dual_random(p->gpu, &s, c, -1, 1), rm = dual_random(p->gpu, &s, c, -1, 1);
    dual rv = dual_random(p->gpu, &s, c, 0.5f, 2), y = nan_dual(p->gpu, n);
    dual sm = nan_dual(p->gpu, c), si = nan_dual(p->gpu, c);
    cr_assert_eq(p->cpu->be->batchnorm_train(p->cpu, r, c, x.h, gamma.h, beta.h, y.h, sm.h, si.h,
                                             rm.h, rv.h, 0.1f, 1e-5f),
                 GCN_OK);
    cr_assert_eq(p->gpu->be->batchnorm_train(p->gpu, r, c, x.d, gamma.d, beta.d, y.d, sm.d, si.d,
                                             rm.d, rv.d, 0.1f, 1e-5f),
                 GCN_OK, "%s", gcn_last_error(p->gpu));
    dual_check(p->gpu, &y, TOL, "batchnorm y");
    dual_check(p->gpu, &sm, TOL, "save_mean");
    dual_check(p->gpu, &si, TOL, "save_invstd");
    dual_check(p->gpu, &rm, TOL, "running_mean");
    dual_check(p->gpu, &rv, TOL, "running_var");
    check_bn_backward(p, r, c, &x, &gamma, &sm, &si, false, &s);

    cr_assert_eq(p->cpu->be->batchnorm_eval(p->cpu, r, c, x.h, gamma.h, beta.h, rm.h, rv.h, 1e-5f,
                                            y.h),
                 GCN_OK);
    cr_assert_eq(p->gpu->be->batchnorm_eval(p->gpu, r, c, x.d, gamma.d, beta.d, rm.d, rv.d, 1e-5f,
                                            y.d),
                 GCN_OK, "%s", gcn_last_error(p->gpu));
    dual_check(p->gpu, &y, TOL, "batchnorm eval y");
    check_bn_backward(p, r, c, &x, &gamma, &rm, &rv, true, &s);
    dual *all[] = {&x, &gamma, &beta, &rm, &rv, &y, &sm, &si};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        dual_free(p->gpu, all[i]);
}

/* 8,192 and 8,193 rows of 33 columns: 256 and 257 chunks, either side of
 * the bound under which the two-term gradient sums finish in one launch
 * (core/ops/cols.cuh); one-term sums take one launch on both. */
Test(gpu_nn, batchnorm)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(11, false);
    const shape cases[] = {{2, 1}, {2, 33}, {33, 7}, {257, 130}, {8192, 33}, {8193, 33},
                           {70001, 3}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_bn(&p, cases[i].rows, cases[i].cols);
    gpu_pair_close(&p);
}

/* ---- log_softmax ------------------------------------------------------------------ */

Test(gpu_nn, log_softmax)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(12, false);
    const shape cases[] = {{1, 1}, {1, 33}, {37, 1}, {33, 7}, {257, 130}, {70001, 3}, {3, 1000}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t r = cases[i].rows, c = cases[i].cols, n = r * c;
        uint64_t s = 1200 + i;
        dual x = dual_random(p.gpu, &s, n, -5, 5), y = nan_dual(p.gpu, n);
        cr_assert_eq(p.cpu->be->log_softmax(p.cpu, r, c, x.h, y.h), GCN_OK);
        cr_assert_eq(p.gpu->be->log_softmax(p.gpu, r, c, x.d, y.d), GCN_OK, "%s",
                     gcn_last_error(p.gpu));
        dual_check(p.gpu, &y, TOL, "log_softmax");
        /* backward from the same y on both sides */
        dual yy = dual_new(p.gpu, y.h, n), dy = dual_random(p.gpu, &s, n, -1, 1);
        for (int acc = 0; acc < 2; acc++) {
            dual dx = acc ? dual_random(p.gpu, &s, n, -1, 1) : nan_dual(p.gpu, n);
            cr_assert_eq(p.cpu->be->log_softmax_backward(p.cpu, r, c, yy.h, dy.h, dx.h, acc),
                         GCN_OK);
            cr_assert_eq(p.gpu->be->log_softmax_backward(p.gpu, r, c, yy.d, dy.d, dx.d, acc),
                         GCN_OK, "%s", gcn_last_error(p.gpu));
            dual_check(p.gpu, &dx, TOL, acc ? "log_softmax_backward acc" : "log_softmax_backward");
            dual_free(p.gpu, &dx);
        }
        dual_free(p.gpu, &x);
        dual_free(p.gpu, &y);
        dual_free(p.gpu, &yy);
        dual_free(p.gpu, &dy);
    }
    gpu_pair_close(&p);
}

/* ---- NLL and accuracy ------------------------------------------------------------- */

/* Labels in [0, c) and a row list of about half the rows, some repeated. */
static void make_labels(uint64_t *s, int64_t r, int64_t c, int32_t *labels, int32_t *rows,
                        int64_t n_rows)
{
    float *u = host_random(s, r + n_rows, 0, 1);
    for (int64_t i = 0; i < r; i++)
        labels[i] = (int32_t)(u[i] * (float)c) % (int32_t)c;
    for (int64_t i = 0; i < n_rows; i++)
        rows[i] = (int32_t)(u[r + i] * (float)r) % (int32_t)r;
    free(u);
}

/* The fused cross-entropy on both backends: loss, lse and the gradient
 * with and without accumulation. */
static void check_cross_entropy(gpu_pair *p, int64_t r, int64_t c, const dual *x,
                                const int32_t *labels, const int32_t *rows, const int32_t *dl,
                                const int32_t *drows, int64_t nr, uint64_t *s)
{
    dual loss = nan_dual(p->gpu, 1), lse = nan_dual(p->gpu, nr);
    dual dy = dual_random(p->gpu, s, 1, 0.5f, 2);
    cr_assert_eq(p->cpu->be->cross_entropy(p->cpu, c, x->h, labels, rows, nr, lse.h, loss.h),
                 GCN_OK, "%s", gcn_last_error(p->cpu));
    cr_assert_eq(p->gpu->be->cross_entropy(p->gpu, c, x->d, dl, drows, nr, lse.d, loss.d), GCN_OK,
                 "%s", gcn_last_error(p->gpu));
    dual_check(p->gpu, &loss, TOL, "cross_entropy");
    dual_check(p->gpu, &lse, TOL, "cross_entropy lse");
    for (int acc = 0; acc < 2; acc++) {
        dual dx = acc ? dual_random(p->gpu, s, r * c, -1, 1) : nan_dual(p->gpu, r * c);
        cr_assert_eq(p->cpu->be->cross_entropy_backward(p->cpu, r, c, x->h, labels, rows, nr,
                                                        lse.h, dy.h, dx.h, acc),
                     GCN_OK);
        cr_assert_eq(p->gpu->be->cross_entropy_backward(p->gpu, r, c, x->d, dl, drows, nr, lse.d,
                                                        dy.d, dx.d, acc),
                     GCN_OK, "%s", gcn_last_error(p->gpu));
        dual_check(p->gpu, &dx, TOL, acc ? "cross_entropy dx acc" : "cross_entropy dx");
        dual_free(p->gpu, &dx);
    }
    dual_free(p->gpu, &loss);
    dual_free(p->gpu, &lse);
    dual_free(p->gpu, &dy);
}

Test(gpu_nn, nll_and_accuracy)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(13, false);
    const shape cases[] = {{1, 1}, {1, 33}, {37, 1}, {33, 7}, {257, 130}, {70001, 3}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t r = cases[i].rows, c = cases[i].cols, n = r * c, nr = r / 2 + 1;
        uint64_t s = 1300 + i;
        int32_t *labels = malloc((size_t)r * sizeof *labels), *rows = malloc((size_t)nr * 4);
        make_labels(&s, r, c, labels, rows, nr);
        int32_t *dl = gpu_upload(p.gpu, labels, (size_t)r * 4);
        int32_t *drows = gpu_upload(p.gpu, rows, (size_t)nr * 4);
        float *h = host_random(&s, n, -4, 0);
        for (int64_t k = 0; k < n; k += 3)
            h[k] = floorf(h[k]); /* ties for argmax */
        dual logp = dual_new(p.gpu, h, n), out = nan_dual(p.gpu, 1);
        cr_assert_eq(p.cpu->be->nll(p.cpu, c, logp.h, labels, rows, nr, out.h), GCN_OK);
        cr_assert_eq(p.gpu->be->nll(p.gpu, c, logp.d, dl, drows, nr, out.d), GCN_OK, "%s",
                     gcn_last_error(p.gpu));
        dual_check(p.gpu, &out, 1e-6, "nll");
        float g = 0.7f;
        dual dy = dual_new(p.gpu, &g, 1);
        for (int acc = 0; acc < 2; acc++) {
            dual dlp = acc ? dual_random(p.gpu, &s, n, -1, 1) : nan_dual(p.gpu, n);
            cr_assert_eq(p.cpu->be->nll_backward(p.cpu, r, c, labels, rows, nr, dy.h, dlp.h, acc),
                         GCN_OK);
            cr_assert_eq(p.gpu->be->nll_backward(p.gpu, r, c, dl, drows, nr, dy.d, dlp.d, acc),
                         GCN_OK, "%s", gcn_last_error(p.gpu));
            dual_check(p.gpu, &dlp, 0.0, acc ? "nll_backward acc" : "nll_backward");
            dual_free(p.gpu, &dlp);
        }
        double want = -1, got = -2, *dcount = gpu_alloc(p.gpu, sizeof got);
        cr_assert_eq(p.cpu->be->count_correct(p.cpu, c, logp.h, labels, rows, nr, &want), GCN_OK);
        cr_assert_eq(p.gpu->be->count_correct(p.gpu, c, logp.d, dl, drows, nr, dcount), GCN_OK,
                     "%s", gcn_last_error(p.gpu));
        gpu_download(p.gpu, &got, dcount, sizeof got);
        gpu_release(p.gpu, dcount, sizeof got);
        cr_assert_eq(got, want, "count_correct [%lld, %lld]: GPU %g, CPU %g", (long long)r,
                     (long long)c, got, want);
        check_cross_entropy(&p, r, c, &logp, labels, rows, dl, drows, nr, &s);
        dual_free(p.gpu, &logp);
        dual_free(p.gpu, &out);
        dual_free(p.gpu, &dy);
        gpu_release(p.gpu, dl, (size_t)r * 4);
        gpu_release(p.gpu, drows, (size_t)nr * 4);
        free(labels);
        free(rows);
        free(h);
    }
    gpu_pair_close(&p);
}

/* ---- a chain of public ops, forward and every gradient --------------------------------- */

typedef struct chain_out {
    float loss;
    float *grad[5];
    double acc;
} chain_out;

enum { CN = 3001, CF = 37, CH = 33, CC = 7 };

/* loss = nll(log_softmax(concat(bn(relu(x W + b)), 0.5 x W) ...)) built from
 * the public ops, plus mean and scale, so that every backward path runs. */
static chain_out run_chain(gcn_ctx *ctx, uint64_t seed)
{
    uint64_t s = seed;
    float *hx = host_random(&s, CN * CF, -1, 1), *hw = host_random(&s, CF * CH, -0.3f, 0.3f);
    float *hb = host_random(&s, CH, -0.1f, 0.1f), *hg = host_random(&s, 2 * CH, 0.5f, 1.5f);
    float *hw2 = host_random(&s, 2 * CH * CC, -0.3f, 0.3f);
    int32_t *labels = malloc(CN * sizeof *labels), *rows = malloc(CN / 2 * sizeof *rows);
    make_labels(&s, CN, CC, labels, rows, CN / 2);
    gcn_tensor *p[5] = {test_tensor(ctx, hx, CN, CF), test_tensor(ctx, hw, CF, CH),
                        test_tensor(ctx, hb, 1, CH), test_tensor(ctx, hg, 1, 2 * CH),
                        test_tensor(ctx, hw2, 2 * CH, CC)};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(gcn_tensor_set_requires_grad(p[i], true), GCN_OK);
    gcn_tensor *beta = NULL, *rm = NULL, *rv = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &beta, 1, 2 * CH), GCN_OK);
    cr_assert_eq(gcn_tensor_zeros(ctx, &rm, 1, 2 * CH), GCN_OK);
    cr_assert_eq(gcn_tensor_zeros(ctx, &rv, 1, 2 * CH), GCN_OK);
    cr_assert_eq(gcn_tensor_fill(ctx, rv, 1.0f), GCN_OK);
    gcn_index *il = test_index(ctx, labels, CN), *ir = test_index(ctx, rows, CN / 2);
    gcn_tensor *t[12] = {0};
    cr_assert_eq(gcn_matmul(ctx, p[0], p[1], false, false, &t[0]), GCN_OK);
    cr_assert_eq(gcn_add_bias(ctx, t[0], p[2], &t[1]), GCN_OK);
    cr_assert_eq(gcn_relu(ctx, t[1], &t[2]), GCN_OK);
    cr_assert_eq(gcn_scale(ctx, t[0], 0.5f, &t[3]), GCN_OK);
    gcn_tensor *parts[2] = {t[2], t[3]};
    cr_assert_eq(gcn_concat_cols(ctx, parts, 2, &t[4]), GCN_OK);
    cr_assert_eq(gcn_batchnorm(ctx, t[4], p[3], beta, rm, rv, true, 0.1f, 1e-5f, &t[5]), GCN_OK);
    cr_assert_eq(gcn_matmul(ctx, t[5], p[4], false, false, &t[6]), GCN_OK);
    cr_assert_eq(gcn_log_softmax(ctx, t[6], &t[7]), GCN_OK);
    cr_assert_eq(gcn_nll_loss(ctx, t[7], il, ir, &t[8]), GCN_OK);
    cr_assert_eq(gcn_mean(ctx, t[5], &t[9]), GCN_OK);
    cr_assert_eq(gcn_add(ctx, t[8], t[9], &t[10]), GCN_OK);
    chain_out o = {0};
    cr_assert_eq(gcn_tensor_to_host(ctx, t[10], &o.loss), GCN_OK);
    cr_assert_eq(gcn_accuracy(ctx, t[6], il, ir, &o.acc), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, t[10]), GCN_OK, "%s", gcn_last_error(ctx));
    for (int i = 0; i < 5; i++) {
        o.grad[i] = test_read(ctx, gcn_tensor_grad(p[i]));
        gcn_tensor_free(&p[i]);
    }
    for (int i = 0; i < 12; i++)
        gcn_tensor_free(&t[i]);
    gcn_tensor_free(&beta);
    gcn_tensor_free(&rm);
    gcn_tensor_free(&rv);
    gcn_index_free(&il);
    gcn_index_free(&ir);
    free(hx);
    free(hw);
    free(hb);
    free(hg);
    free(hw2);
    free(labels);
    free(rows);
    return o;
}

Test(gpu_nn, public_op_chain_gradients)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(14, false);
    chain_out c = run_chain(p.cpu, 99), g = run_chain(p.gpu, 99);
    cr_assert(fabsf(g.loss - c.loss) <= 1e-5f * fmaxf(1.0f, fabsf(c.loss)),
              "loss GPU %.8g, CPU %.8g", (double)g.loss, (double)c.loss);
    cr_assert(fabs(g.acc - c.acc) <= 1.0 / (CN / 2) + 1e-12, "accuracy GPU %.6f, CPU %.6f",
              g.acc, c.acc);
    const int64_t sizes[5] = {CN * CF, CF * CH, CH, 2 * CH, 2 * CH * CC};
    const char *names[5] = {"dx", "dW", "db", "dgamma", "dW2"};
    for (int i = 0; i < 5; i++) {
        expect_close(g.grad[i], c.grad[i], sizes[i], 1e-4, names[i]);
        free(c.grad[i]);
        free(g.grad[i]);
    }
    gpu_pair_close(&p);
}
