/* bf16 storage on the GPU against the CPU backend: conversions, fills and
 * cast gradients must agree bit for bit (both round with core/bf16.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_helpers.h"
#include "helpers.h"

/* Random values over many binades, plus ties, overflow, NaN, infinity,
 * subnormals and zeros of both signs. */
static float *awkward_values(int64_t n)
{
    static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x3f808000u, 0x3f818000u,
                                       0x7f7fffffu, 0xff7fffffu, 0x7fc00000u, 0x7f800001u,
                                       0x7f800000u, 0xff800000u, 0x00000001u, 0x80008000u};
    float *x = host_floats(n);
    uint64_t s = 11;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        uint32_t u = i < (int64_t)(sizeof special / sizeof special[0])
                         ? special[i]
                         : (uint32_t)(0x20000000u + s % 0x3f000000u) | (uint32_t)(s >> 63) << 31;
        memcpy(&x[i], &u, sizeof u);
    }
    return x;
}

/* Widened floats must match bit for bit, NaN meeting NaN. */
static void expect_bits(const float *got, const float *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        if (isnan(want[i])) {
            cr_assert(isnan(got[i]), "%s[%lld]: want NaN", what, (long long)i);
            continue;
        }
        cr_assert_eq(memcmp(&got[i], &want[i], sizeof(float)), 0, "%s[%lld]: %a != %a", what,
                     (long long)i, (double)got[i], (double)want[i]);
    }
}

/* x -> bf16 -> fp32 on each backend, then loss = sum(0.1 (y + y')) with y'
 * a second cast of the bf16 tensor, so backward adds into a bf16 gradient. */
static void cast_both(gcn_ctx *ctx, const float *h, int64_t rows, int64_t cols, float *fwd,
                      float *grad)
{
    gcn_tensor *x = test_tensor(ctx, h, rows, cols), *a = NULL, *b = NULL, *c = NULL, *d = NULL,
               *e = NULL, *loss = NULL;
    cr_assert_eq(gcn_tensor_set_requires_grad(x, true), GCN_OK);
    cr_assert_eq(gcn_cast(ctx, x, GCN_DTYPE_BF16, &a), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_cast(ctx, a, GCN_DTYPE_FP32, &b), GCN_OK);
    cr_assert_eq(gcn_tensor_to_host(ctx, a, fwd), GCN_OK);
    cr_assert_eq(gcn_cast(ctx, a, GCN_DTYPE_FP32, &c), GCN_OK);
    cr_assert_eq(gcn_add(ctx, b, c, &d), GCN_OK);
    cr_assert_eq(gcn_scale(ctx, d, 0.1f, &e), GCN_OK);
    cr_assert_eq(gcn_sum(ctx, e, &loss), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, loss), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_tensor_to_host(ctx, gcn_tensor_grad(x), grad), GCN_OK);
    gcn_tensor *all[] = {x, a, b, c, d, e, loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gcn_tensor_free(&all[i]);
}

Test(gpu_dtype, cast_and_its_gradient_match_the_cpu_bit_for_bit)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(1, false);
    static const int64_t shapes[][2] = {{1, 1}, {37, 1}, {33, 7}, {70001, 3}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int64_t n = shapes[k][0] * shapes[k][1];
        float *h = awkward_values(n), *f_cpu = host_floats(n), *f_gpu = host_floats(n),
              *g_cpu = host_floats(n), *g_gpu = host_floats(n);
        cast_both(p.cpu, h, shapes[k][0], shapes[k][1], f_cpu, g_cpu);
        cast_both(p.gpu, h, shapes[k][0], shapes[k][1], f_gpu, g_gpu);
        expect_bits(f_gpu, f_cpu, n, "cast to bf16");
        expect_bits(g_gpu, g_cpu, n, "cast gradient");
        free(h), free(f_cpu), free(f_gpu), free(g_cpu), free(g_gpu);
    }
    gpu_pair_close(&p);
}

Test(gpu_dtype, bf16_fill_and_transfers)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(1, false);
    const float values[] = {0.0f, 0.1f, -3.0e38f};
    float got[5], want[5];
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
        gcn_tensor *c = NULL, *g = NULL;
        cr_assert_eq(gcn_tensor_create_dtype(p.cpu, &c, 1, 5, GCN_DTYPE_BF16), GCN_OK);
        cr_assert_eq(gcn_tensor_create_dtype(p.gpu, &g, 1, 5, GCN_DTYPE_BF16), GCN_OK);
        cr_assert_eq(gcn_tensor_fill(p.cpu, c, values[k]), GCN_OK);
        cr_assert_eq(gcn_tensor_fill(p.gpu, g, values[k]), GCN_OK);
        cr_assert_eq(gcn_tensor_to_host(p.cpu, c, want), GCN_OK);
        cr_assert_eq(gcn_tensor_to_host(p.gpu, g, got), GCN_OK);
        expect_bits(got, want, 5, "fill");
        gcn_tensor_free(&c);
        gcn_tensor_free(&g);
    }
    gpu_pair_close(&p);
}
