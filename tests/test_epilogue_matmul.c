/* gcn_epilogue_matmul against gcn_apply_epilogue followed by gcn_matmul:
 * the same backend calls with the same arguments, so the output, the
 * running statistics and every gradient agree to the bit, on the CPU and on
 * the GPU, for every combination of stages, with x in fp32 and in bf16
 * (the epilogue's output then rounded once before the product reads it,
 * in both); and its shape errors. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "epilogue_cases.h"
#include "gpu_helpers.h"
#include "helpers.h"

enum { N = 301, F = 37, K = 19, N_TRAINED = 6 };

/* Output, running statistics and the gradients of x, w, bias, gamma, beta. */
typedef struct result {
    float *out, *rm, *rv, *grad[N_TRAINED];
} result;

static gcn_tensor *uniform(gcn_ctx *ctx, uint64_t *s, int64_t r, int64_t c, float lo, float hi,
                           bool trained)
{
    float *h = malloc((size_t)(r * c) * sizeof *h);
    cr_assert_not_null(h);
    test_fill_uniform(s, h, r * c, lo, hi);
    gcn_tensor *t = test_tensor(ctx, h, r, c);
    free(h);
    if (trained)
        cr_assert_eq(gcn_tensor_set_requires_grad(t, true), GCN_OK);
    return t;
}

/* With bf16, x enters (and y leaves) through gcn_cast, whose gradient
 * brings dx back in fp32. */
static result run_side(gcn_ctx *ctx, const spec *c, bool fused, bool bf16)
{
    uint64_t s = 2024;
    gcn_tensor *x = uniform(ctx, &s, N, F, -2, 3, true), *w = uniform(ctx, &s, F, K, -1, 1, true);
    gcn_tensor *bias = uniform(ctx, &s, 1, F, -1, 1, true);
    gcn_tensor *gamma = uniform(ctx, &s, 1, F, 0.5f, 1.5f, true);
    gcn_tensor *beta = uniform(ctx, &s, 1, F, -1, 1, true);
    gcn_tensor *rm = uniform(ctx, &s, 1, F, -0.5f, 0.5f, false);
    gcn_tensor *rv = uniform(ctx, &s, 1, F, 0.5f, 2, false);
    gcn_epilogue e = {.bias = c->bias ? bias : NULL, .act = c->act, .alpha = 0.7f,
                      .dropout = c->p};
    if (c->bn != BN_NONE)
        e = (gcn_epilogue){e.bias, gamma, beta, rm, rv, 0.1f, 1e-5f, c->act, 0.7f, c->p};
    bool training = c->bn != BN_EVAL;
    gcn_rng_seed(ctx, 9);
    gcn_tensor *y = NULL, *r = NULL, *loss = NULL, *xin = NULL, *y32 = NULL;
    gcn_status st = bf16 ? gcn_cast(ctx, x, GCN_DTYPE_BF16, &xin) : GCN_OK;
    if (!bf16)
        xin = gcn_tensor_retain(x);
    if (st == GCN_OK)
        st = fused ? gcn_epilogue_matmul(ctx, xin, &e, training, w, &y)
                   : gcn_apply_epilogue(ctx, xin, &e, training, &r);
    if (st == GCN_OK && !fused)
        st = gcn_matmul(ctx, r, w, false, false, &y);
    cr_assert_eq(st, GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_tensor_dtype(y), bf16 ? GCN_DTYPE_BF16 : GCN_DTYPE_FP32);
    cr_assert_eq(gcn_cast(ctx, y, GCN_DTYPE_FP32, &y32), GCN_OK);
    cr_assert_eq(test_weigh(ctx, y32, &loss), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, loss), GCN_OK, "%s", gcn_last_error(ctx));
    result res = {test_read(ctx, y32), test_read(ctx, rm), test_read(ctx, rv), {0}};
    gcn_tensor *trained[N_TRAINED - 1] = {x, w, bias, gamma, beta};
    for (int i = 0; i < N_TRAINED - 1; i++)
        if (gcn_tensor_grad(trained[i]))
            res.grad[i] = test_read(ctx, gcn_tensor_grad(trained[i]));
    gcn_tensor *all[12] = {x, w, bias, gamma, beta, rm, rv, y, r, loss, xin, y32};
    for (int i = 0; i < 12; i++)
        gcn_tensor_free(&all[i]);
    return res;
}

static void free_result(result *r)
{
    free(r->out);
    free(r->rm);
    free(r->rv);
    for (int i = 0; i < N_TRAINED; i++)
        free(r->grad[i]);
}

static void expect_identical(gcn_ctx *ctx, bool bf16)
{
    const int64_t sizes[N_TRAINED - 1] = {N * F, F * K, F, F, F};
    const char *names[N_TRAINED - 1] = {"dx", "dw", "dbias", "dgamma", "dbeta"};
    const gcn_activation acts[3] = {GCN_ACT_NONE, GCN_ACT_RELU, GCN_ACT_ELU};
    for (int bias = 0; bias < 2; bias++)
        for (int bn = BN_NONE; bn <= BN_EVAL; bn++)
            for (int a = 0; a < 3; a++)
                for (int d = 0; d < 2; d++) {
                    spec c = {bias, bn, acts[a], d ? 0.4f : 0.0f};
                    result f = run_side(ctx, &c, true, bf16), u = run_side(ctx, &c, false, bf16);
                    char what[80];
                    snprintf(what, sizeof what, "bias %d, bn %d, act %d, p %g", bias, bn, a,
                             (double)c.p);
                    cr_assert_arr_eq(f.out, u.out, N * K * sizeof(float), "%s: output", what);
                    cr_assert_arr_eq(f.rm, u.rm, F * sizeof(float), "%s: running mean", what);
                    cr_assert_arr_eq(f.rv, u.rv, F * sizeof(float), "%s: running var", what);
                    for (int i = 0; i < N_TRAINED - 1; i++) {
                        cr_assert_eq(!f.grad[i], !u.grad[i], "%s: %s", what, names[i]);
                        if (f.grad[i])
                            cr_assert_arr_eq(f.grad[i], u.grad[i],
                                             (size_t)sizes[i] * sizeof(float), "%s: %s", what,
                                             names[i]);
                    }
                    free_result(&f);
                    free_result(&u);
                }
}

Test(epilogue_matmul, equals_epilogue_then_matmul)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    expect_identical(ctx, false);
    gcn_ctx_free(&ctx);
}

Test(epilogue_matmul, bf16_equals_epilogue_then_matmul)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    expect_identical(ctx, true);
    gcn_ctx_free(&ctx);
}

Test(epilogue_matmul, rejects_a_weight_of_the_wrong_height)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    uint64_t s = 3;
    gcn_tensor *x = uniform(ctx, &s, 4, 3, -1, 1, false), *w = uniform(ctx, &s, 5, 2, -1, 1, false);
    gcn_tensor *y = NULL;
    gcn_epilogue e = {.act = GCN_ACT_RELU};
    cr_assert_eq(gcn_epilogue_matmul(ctx, x, &e, true, w, &y), GCN_ERR_SHAPE);
    cr_assert(strstr(gcn_last_error(ctx), "epilogue_matmul: x is [4, 3] but the weight is [5, 2]"),
              "%s", gcn_last_error(ctx));
    cr_assert_null(y);
    gcn_tensor_free(&x);
    gcn_tensor_free(&w);
    gcn_ctx_free(&ctx);
}

Test(gpu_epilogue_matmul, equals_epilogue_then_matmul)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(1, false);
    expect_identical(p.gpu, false);
    gpu_pair_close(&p);
}

Test(gpu_epilogue_matmul, bf16_equals_epilogue_then_matmul)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(1, false);
    expect_identical(p.gpu, true);
    gpu_pair_close(&p);
}
