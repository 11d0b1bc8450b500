/* Layers: GCNConv's two orders agree and its cache is reused; GINConv on a
 * case worked out by hand; Linear and BatchNorm1d shapes and parameters. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "helpers.h"

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
    gcn_tensor *cached = conv.cached_ax;
    cr_assert_not_null(cached);
    cr_assert_eq(gcn_gcn_conv_forward(ctx, &conv, a, x, &y2), GCN_OK);
    cr_assert_eq(conv.cached_ax, cached, "the second forward recomputed A x");
    float *h1 = test_read(ctx, y1), *h2 = test_read(ctx, y2);
    cr_assert_arr_eq(h1, h2, 12 * sizeof *h1);
    /* an input that needs a gradient is never cached */
    gcn_tensor *xg = test_random_tensor(ctx, &s, 3, 2), *y3 = NULL;
    cr_assert_eq(gcn_tensor_set_requires_grad(xg, true), GCN_OK);
    cr_assert_eq(gcn_gcn_conv_forward(ctx, &conv, a, xg, &y3), GCN_OK);
    cr_assert_eq(conv.cached_ax, cached);
    gcn_tape_clear(ctx);
    free(h1); free(h2);
    gcn_tensor_free(&y1); gcn_tensor_free(&y2); gcn_tensor_free(&y3);
    gcn_tensor_free(&x); gcn_tensor_free(&xg);
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
