/* Layers: GCNConv's two orders agree (outputs and gradients) and its cache
 * is reused; GINConv on cases worked out by hand. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "helpers.h"
#include "layers/internal.h"

/* Path 0 - 1 - 2 with self-loops, normalised: a_ij = 1/sqrt(d_i d_j). */
static gcn_csr *path3_normalised(gcn_ctx *ctx)
{
    const float d[3] = {2, 3, 2};
    const int32_t rp[4] = {0, 2, 5, 7}, ci[7] = {0, 1, 0, 1, 2, 1, 2};
    const int32_t ri[7] = {0, 0, 1, 1, 1, 2, 2};
    float v[7];
    for (int e = 0; e < 7; e++)
        v[e] = 1.0f / sqrtf(d[ri[e]] * d[ci[e]]);
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, 3, 3, 7, rp, ci, v), GCN_OK);
    return a;
}

Test(layers, gcn_conv_orders_agree_and_match_reference)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_csr *a = path3_normalised(ctx);
    uint64_t s = 3;
    for (int shape = 0; shape < 2; shape++) {
        int64_t in = shape ? 6 : 2, out = shape ? 2 : 6;
        gcn_gcn_conv conv;
        cr_assert_eq(gcn_gcn_conv_init(ctx, &conv, in, out, true), GCN_OK);
        cr_assert_eq(gcn_gcn_conv_aggregates_first(&conv), in < out);
        gcn_tensor *x = test_random_tensor(ctx, &s, 3, in), *y[2] = {NULL, NULL};
        gcn_tensor *b = test_tensor(ctx, (float[]){0.5f, -1, 2, 0, 1, -0.25f}, 1, out);
        cr_assert_eq(gcn_tensor_copy(ctx, conv.lin.bias, b), GCN_OK);
        for (int o = 0; o < 2; o++) {
            conv.order = o ? GCN_ORDER_TRANSFORM_FIRST : GCN_ORDER_AGGREGATE_FIRST;
            cr_assert_eq(gcn_gcn_conv_forward(ctx, &conv, a, x, &y[o]), GCN_OK);
        }
        /* reference in double: A X W + b */
        float *xh = test_read(ctx, x), *wh = test_read(ctx, conv.lin.weight);
        float *y0 = test_read(ctx, y[0]), *y1 = test_read(ctx, y[1]);
        int32_t rp[4], ci[7];
        float v[7];
        cr_assert_eq(gcn_csr_to_host(ctx, a, rp, ci, v), GCN_OK);
        double ref[3 * 6];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < out; j++) {
                double acc = 0.5 * (j == 0) - 1.0 * (j == 1) + 2.0 * (j == 2) + 1.0 * (j == 4) -
                             0.25 * (j == 5);
                for (int e = rp[i]; e < rp[i + 1]; e++)
                    for (int k = 0; k < in; k++)
                        acc += (double)v[e] * xh[ci[e] * in + k] * wh[k * out + j];
                ref[i * out + j] = acc;
            }
        cr_assert_leq(test_rel_err(y0, ref, 3 * out), 1e-6);
        cr_assert_leq(test_rel_err(y1, ref, 3 * out), 1e-6);
        free(xh); free(wh); free(y0); free(y1);
        gcn_tensor_free(&y[0]);
        gcn_tensor_free(&y[1]);
        gcn_tensor_free(&x);
        gcn_tensor_free(&b);
        gcn_gcn_conv_release(&conv);
    }
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

/* Gradients of W, b and x after one log-softmax + NLL backward, in the given
 * order; returns them concatenated in a new array (caller frees). */
static float *conv_grads(gcn_ctx *ctx, gcn_gcn_conv *conv, gcn_conv_order order,
                         const gcn_csr *a, gcn_tensor *x)
{
    gcn_tensor *params[3] = {conv->lin.weight, conv->lin.bias, x};
    gcn_tensor *y = NULL, *logp = NULL, *loss = NULL;
    gcn_index *labels = test_index(ctx, (int32_t[]){1, 0, 1}, 3);
    gcn_index *rows = test_index(ctx, (int32_t[]){0, 1, 2}, 3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(gcn_tensor_zero_grad(ctx, params[i]), GCN_OK);
    conv->order = order;
    cr_assert_eq(gcn_gcn_conv_forward(ctx, conv, a, x, &y), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_log_softmax(ctx, y, &logp), GCN_OK);
    cr_assert_eq(gcn_nll_loss(ctx, logp, labels, rows, &loss), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, loss), GCN_OK, "%s", gcn_last_error(ctx));
    int64_t n = 0, off = 0;
    for (int i = 0; i < 3; i++)
        n += gcn_tensor_numel(params[i]);
    float *g = malloc((size_t)n * sizeof *g);
    for (int i = 0; i < 3; i++) {
        gcn_tensor *grad = gcn_tensor_grad(params[i]);
        cr_assert_not_null(grad, "parameter %d got no gradient", i);
        cr_assert_eq(gcn_tensor_to_host(ctx, grad, g + off), GCN_OK);
        off += gcn_tensor_numel(params[i]);
    }
    gcn_tensor_free(&y);
    gcn_tensor_free(&logp);
    gcn_tensor_free(&loss);
    gcn_index_free(&labels);
    gcn_index_free(&rows);
    return g;
}

/* Both orders give the same gradients for W, b and the input (float32
 * summation order differs, so 1e-5 relative). */
Test(layers, gcn_conv_orders_agree_in_gradients)
{
    gcn_ctx *ctx = test_cpu_ctx(11);
    gcn_csr *a = path3_normalised(ctx);
    uint64_t s = 17;
    for (int shape = 0; shape < 2; shape++) {
        int64_t in = shape ? 7 : 3, out = shape ? 2 : 5;
        gcn_gcn_conv conv;
        cr_assert_eq(gcn_gcn_conv_init(ctx, &conv, in, out, true), GCN_OK);
        gcn_tensor *x = test_random_tensor(ctx, &s, 3, in);
        cr_assert_eq(gcn_tensor_set_requires_grad(x, true), GCN_OK);
        float *g0 = conv_grads(ctx, &conv, GCN_ORDER_AGGREGATE_FIRST, a, x);
        float *g1 = conv_grads(ctx, &conv, GCN_ORDER_TRANSFORM_FIRST, a, x);
        int64_t n = in * out + out + 3 * in;
        double *ref = malloc((size_t)n * sizeof *ref);
        for (int64_t i = 0; i < n; i++)
            ref[i] = g1[i];
        cr_assert_leq(test_rel_err(g0, ref, n), 1e-5, "in %lld out %lld", (long long)in,
                      (long long)out);
        free(g0); free(g1); free(ref);
        gcn_tensor_free(&x);
        gcn_gcn_conv_release(&conv);
    }
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

Test(layers, gcn_conv_caches_constant_input)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_csr *a = path3_normalised(ctx);
    gcn_gcn_conv conv;
    cr_assert_eq(gcn_gcn_conv_init(ctx, &conv, 2, 4, true), GCN_OK);
    conv.cache_input = true;
    uint64_t s = 9;
    gcn_tensor *x = test_random_tensor(ctx, &s, 3, 2), *y1 = NULL, *y2 = NULL;
    cr_assert_eq(gcn_gcn_conv_forward(ctx, &conv, a, x, &y1), GCN_OK);
    const gcn_tensor *cached = gcn_gcn_conv_cached(&conv);
    cr_assert_not_null(cached);
    cr_assert_eq(gcn_gcn_conv_forward(ctx, &conv, a, x, &y2), GCN_OK);
    cr_assert_eq(gcn_gcn_conv_cached(&conv), cached, "the second forward recomputed A x");
    float *h1 = test_read(ctx, y1), *h2 = test_read(ctx, y2);
    cr_assert_arr_eq(h1, h2, 12 * sizeof *h1);
    /* an input that needs a gradient is never cached */
    gcn_tensor *xg = test_random_tensor(ctx, &s, 3, 2), *y3 = NULL;
    cr_assert_eq(gcn_tensor_set_requires_grad(xg, true), GCN_OK);
    cr_assert_eq(gcn_gcn_conv_forward(ctx, &conv, a, xg, &y3), GCN_OK);
    cr_assert_eq(gcn_gcn_conv_cached(&conv), cached);
    gcn_tape_clear(ctx);
    free(h1); free(h2);
    gcn_tensor_free(&y1); gcn_tensor_free(&y2); gcn_tensor_free(&y3);
    gcn_tensor_free(&x); gcn_tensor_free(&xg);
    gcn_gcn_conv_release(&conv);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

/* A cached input makes AUTO aggregate first even when in > out (no SpMM is
 * left per epoch), with the same result as transforming first. */
Test(layers, gcn_conv_cached_wide_input_aggregates_first)
{
    gcn_ctx *ctx = test_cpu_ctx(6);
    gcn_csr *a = path3_normalised(ctx);
    gcn_gcn_conv conv;
    cr_assert_eq(gcn_gcn_conv_init(ctx, &conv, 5, 2, true), GCN_OK);
    cr_assert_not(gcn_gcn_conv_aggregates_first(&conv));
    conv.cache_input = true;
    cr_assert(gcn_gcn_conv_aggregates_first(&conv));
    uint64_t s = 4;
    gcn_tensor *x = test_random_tensor(ctx, &s, 3, 5), *y[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 2; i++)
        cr_assert_eq(gcn_gcn_conv_forward(ctx, &conv, a, x, &y[i]), GCN_OK);
    cr_assert_not_null(gcn_gcn_conv_cached(&conv));
    cr_assert_eq(gcn_tensor_rows(gcn_gcn_conv_cached(&conv)), 3);
    cr_assert_eq(gcn_tensor_cols(gcn_gcn_conv_cached(&conv)), 5);
    conv.order = GCN_ORDER_TRANSFORM_FIRST;
    cr_assert_eq(gcn_gcn_conv_forward(ctx, &conv, a, x, &y[2]), GCN_OK);
    float *h[3];
    double ref[6];
    for (int i = 0; i < 3; i++)
        h[i] = test_read(ctx, y[i]);
    for (int i = 0; i < 6; i++)
        ref[i] = h[2][i];
    cr_assert_arr_eq(h[0], h[1], 6 * sizeof *h[0], "the cached forward differs");
    cr_assert_leq(test_rel_err(h[0], ref, 6), 1e-6);
    for (int i = 0; i < 3; i++) {
        free(h[i]);
        gcn_tensor_free(&y[i]);
    }
    gcn_tensor_free(&x);
    gcn_gcn_conv_release(&conv);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

/* Star 0 - {1, 2}, x = [1, 2, 3] (one feature), eps = 0.5:
 * h = 1.5 x + neighbour sum = [1.5 + 5, 3 + 1, 4.5 + 1] = [6.5, 4, 5.5].
 * With lin1 = [[1, -1]] (bias 0), eval-mode batch norm with running mean 0,
 * var 1 and gamma 1, beta 0 is (almost) the identity, relu keeps the
 * positive column, lin2 = [[2], [3]] (bias 1): y = 2 h + 1 = [14, 9, 12]. */
Test(layers, gin_conv_by_hand)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, 3, 3, 4, (int32_t[]){0, 2, 3, 4},
                                (int32_t[]){1, 2, 0, 0}, NULL), GCN_OK);
    for (int trained = 0; trained < 2; trained++) {
        gcn_gin_conv conv;
        cr_assert_eq(gcn_gin_conv_init(ctx, &conv, 1, 2, 1, 0.5f, trained), GCN_OK);
        gcn_tensor *w1 = test_tensor(ctx, (float[]){1, -1}, 1, 2);
        gcn_tensor *w2 = test_tensor(ctx, (float[]){2, 3}, 2, 1);
        gcn_tensor *b2 = test_tensor(ctx, (float[]){1}, 1, 1);
        cr_assert_eq(gcn_tensor_copy(ctx, conv.lin1.weight, w1), GCN_OK);
        cr_assert_eq(gcn_tensor_copy(ctx, conv.lin2.weight, w2), GCN_OK);
        cr_assert_eq(gcn_tensor_copy(ctx, conv.lin2.bias, b2), GCN_OK);
        gcn_tensor *x = test_tensor(ctx, (float[]){1, 2, 3}, 3, 1), *y = NULL;
        cr_assert_eq(gcn_gin_conv_forward(ctx, &conv, a, x, false, &y), GCN_OK);
        float *h = test_read(ctx, y), k = 1.0f / sqrtf(1.0f + 1e-5f);
        cr_assert_float_eq(h[0], 2 * 6.5f * k + 1, 1e-5);
        cr_assert_float_eq(h[1], 2 * 4.0f * k + 1, 1e-5);
        cr_assert_float_eq(h[2], 2 * 5.5f * k + 1, 1e-5);
        gcn_tensor *p[GCN_LAYER_MAX_PARAMS];
        cr_assert_eq(gcn_gin_conv_params(&conv, p), 6 + trained, "eps is a parameter only when trained");
        free(h);
        gcn_tape_clear(ctx);
        gcn_tensor_free(&y); gcn_tensor_free(&x);
        gcn_tensor_free(&w1); gcn_tensor_free(&w2); gcn_tensor_free(&b2);
        gcn_gin_conv_release(&conv);
    }
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

/* The same star in training mode: the MLP's batch norm uses the batch
 * statistics of z = h [1, -1] (biased variance), so after ReLU node 1 keeps
 * only the negated column and nodes 0 and 2 only the first:
 * y = 2 relu(n) + 3 relu(-n) + 1 with n = (h - mean h) / sqrt(var h + 1e-5). */
Test(layers, gin_conv_by_hand_in_training_mode)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, 3, 3, 4, (int32_t[]){0, 2, 3, 4},
                                (int32_t[]){1, 2, 0, 0}, NULL), GCN_OK);
    gcn_gin_conv conv;
    cr_assert_eq(gcn_gin_conv_init(ctx, &conv, 1, 2, 1, 0.5f, false), GCN_OK);
    gcn_tensor *w1 = test_tensor(ctx, (float[]){1, -1}, 1, 2);
    gcn_tensor *w2 = test_tensor(ctx, (float[]){2, 3}, 2, 1);
    gcn_tensor *b2 = test_tensor(ctx, (float[]){1}, 1, 1);
    cr_assert_eq(gcn_tensor_copy(ctx, conv.lin1.weight, w1), GCN_OK);
    cr_assert_eq(gcn_tensor_copy(ctx, conv.lin2.weight, w2), GCN_OK);
    cr_assert_eq(gcn_tensor_copy(ctx, conv.lin2.bias, b2), GCN_OK);
    gcn_tensor *x = test_tensor(ctx, (float[]){1, 2, 3}, 3, 1), *y = NULL;
    cr_assert_eq(gcn_gin_conv_forward(ctx, &conv, a, x, true, &y), GCN_OK);
    const double h[3] = {6.5, 4.0, 5.5};
    double mean = (h[0] + h[1] + h[2]) / 3, var = 0, ref[3];
    for (int i = 0; i < 3; i++)
        var += (h[i] - mean) * (h[i] - mean) / 3;
    for (int i = 0; i < 3; i++) {
        double n = (h[i] - mean) / sqrt(var + 1e-5);
        ref[i] = 2 * fmax(n, 0) + 3 * fmax(-n, 0) + 1;
    }
    float *got = test_read(ctx, y);
    cr_assert_leq(test_rel_err(got, ref, 3), 1e-5, "got %g %g %g, want %g %g %g", (double)got[0],
                  (double)got[1], (double)got[2], ref[0], ref[1], ref[2]);
    free(got);
    gcn_tape_clear(ctx);
    gcn_tensor_free(&y); gcn_tensor_free(&x);
    gcn_tensor_free(&w1); gcn_tensor_free(&w2); gcn_tensor_free(&b2);
    gcn_gin_conv_release(&conv);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

Test(layers, trained_eps_receives_gradient)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, 2, 2, 2, (int32_t[]){0, 1, 2}, (int32_t[]){1, 0}, NULL),
                 GCN_OK);
    gcn_gin_conv conv;
    cr_assert_eq(gcn_gin_conv_init(ctx, &conv, 3, 4, 2, 0.0f, true), GCN_OK);
    uint64_t s = 1;
    gcn_tensor *x = test_random_tensor(ctx, &s, 2, 3), *y = NULL, *l = NULL;
    cr_assert_eq(gcn_gin_conv_forward(ctx, &conv, a, x, true, &y), GCN_OK);
    cr_assert_eq(gcn_sum(ctx, y, &l), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, l), GCN_OK);
    cr_assert_not_null(gcn_tensor_grad(conv.eps));
    gcn_tensor_free(&l); gcn_tensor_free(&y); gcn_tensor_free(&x);
    gcn_gin_conv_release(&conv);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

/* Transform first, the product x W is needed only until the SpMM has read
 * it: after the forward the layer holds nothing but its output, and the
 * backward still reaches W and x. */
Test(layers, gcn_conv_transform_first_keeps_only_its_output)
{
    gcn_ctx *ctx = test_cpu_ctx(2);
    gcn_csr *a = path3_normalised(ctx);
    uint64_t s = 5;
    gcn_gcn_conv conv;
    cr_assert_eq(gcn_gcn_conv_init(ctx, &conv, 6, 4, false), GCN_OK);
    conv.order = GCN_ORDER_TRANSFORM_FIRST;
    gcn_tensor *x = test_random_tensor(ctx, &s, 3, 6), *y = NULL, *loss = NULL;
    cr_assert_eq(gcn_tensor_set_requires_grad(x, true), GCN_OK);
    gcn_memory_stats before, after;
    gcn_ctx_memory_stats(ctx, &before);
    cr_assert_eq(gcn_gcn_conv_forward_nobias(ctx, &conv, a, x, &y), GCN_OK, "%s",
                 gcn_last_error(ctx));
    gcn_ctx_memory_stats(ctx, &after);
    cr_assert_eq(after.in_use - before.in_use, 3 * 4 * sizeof(float), "only y is new");
    cr_assert_eq(gcn_sum(ctx, y, &loss), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, loss), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_not_null(gcn_tensor_grad(conv.lin.weight));
    cr_assert_not_null(gcn_tensor_grad(x));
    gcn_tensor_free(&y);
    gcn_tensor_free(&loss);
    gcn_tensor_free(&x);
    gcn_gcn_conv_release(&conv);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}
