/* Tensor dtypes: bf16 rounding against an independent nearest-even
 * reference, bf16 tensors' lifetime and host transfers, ops refusing a
 * dtype they do not take, and gcn_cast forward and backward. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bf16.h"
#include "core/internal.h"
#include "helpers.h"

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The bf16 nearest to a finite x, chosen by comparing exact distances in
 * double to the two bf16 values around it (ties: the even mantissa); a
 * magnitude at or past the midpoint between the largest bf16 and 2^128 is
 * infinity, as IEEE rounding to nearest has it. */
static float nearest_bf16(float x)
{
    uint32_t u = bits_of(x), sign = u & 0x80000000u, mag = u & 0x7fffffffu;
    double ax = fabs((double)x);
    double top = (double)float_of(0x7f7f0000u), half_ulp = ldexp(1.0, 127 - 8);
    if (ax >= top + half_ulp)
        return float_of(sign | 0x7f800000u);
    uint32_t lo = mag & 0xffff0000u, hi = lo + 0x10000u;
    double dlo = ax - (double)float_of(lo);
    double dhi = hi >= 0x7f800000u ? INFINITY : (double)float_of(hi) - ax;
    uint32_t pick = dlo < dhi ? lo : dhi < dlo ? hi : (((lo >> 16) & 1u) ? hi : lo);
    return float_of(sign | pick);
}

Test(dtype, rounding_is_nearest_even)
{
    enum { N = 4096 + 12 };
    float x[N];
    uint64_t s = 7;
    for (int i = 0; i < 4096; i++) { /* random bit patterns: every exponent, subnormals */
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        uint32_t u = (uint32_t)s;
        x[i] = (u & 0x7f800000u) == 0x7f800000u ? float_of(u & 0xbf7fffffu) : float_of(u);
    }
    float special[12] = {0.0f, -0.0f, 1.0f, 1.0f / 3.0f, float_of(0x3f808000u) /* tie, even below */,
                         float_of(0x3f818000u) /* tie, odd below: up */, float_of(0x7f7fffffu),
                         float_of(0x7f7f7fffu), float_of(0x00000001u), float_of(0x80008000u),
                         65504.0f, 3.0e38f};
    memcpy(x + 4096, special, sizeof special);
    for (int i = 0; i < N; i++)
        cr_assert_eq(bits_of(gcn_bf16_round(x[i])), bits_of(nearest_bf16(x[i])),
                     "x = %a (0x%08x): got 0x%08x, want 0x%08x", (double)x[i], bits_of(x[i]),
                     bits_of(gcn_bf16_round(x[i])), bits_of(nearest_bf16(x[i])));
    cr_assert(isinf(gcn_bf16_round(float_of(0x7f7fffffu))), "past the largest bf16: infinity");
    cr_assert_eq(gcn_bf16_round(float_of(0x3f808000u)), 1.0f, "a tie goes to the even value");
    cr_assert_eq(bits_of(gcn_bf16_round(float_of(0x3f818000u))), 0x3f820000u);
    cr_assert(isnan(gcn_bf16_round(NAN)) && isnan(gcn_bf16_round(float_of(0x7f800001u))),
              "a NaN stays a NaN, even one whose payload is in the low bits only");
    cr_assert(isinf(gcn_bf16_round(INFINITY)) && gcn_bf16_round(-INFINITY) < 0);
}

Test(dtype, every_bf16_widens_and_rounds_back_exactly)
{
    for (uint32_t b = 0; b < 0x10000u; b++) {
        float x = gcn_bf16_to_float((uint16_t)b);
        if (isnan(x))
            continue;
        cr_assert_eq(gcn_bf16_from_float(x), b, "bf16 0x%04x", b);
    }
}

Test(dtype, bf16_tensor_transfers_fill_copy_and_size)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    float h[6] = {1.0f, 1.0f / 3.0f, -2.5e-3f, 70000.5f, 0.0f, 3.0e38f}, back[6];
    gcn_tensor *t = NULL, *c = NULL, *f = NULL;
    cr_assert_eq(gcn_tensor_create_dtype(ctx, &t, 2, 3, GCN_DTYPE_BF16), GCN_OK);
    cr_assert_eq(gcn_tensor_dtype(t), GCN_DTYPE_BF16);
    cr_assert_null(gcn_tensor_data(t), "an fp32 pointer to bf16 storage would be misread");
    cr_assert_not_null(gcn_tensor_data_bf16(t));
    gcn_memory_stats ms;
    gcn_ctx_memory_stats(ctx, &ms);
    cr_assert_eq(ms.in_use, 6 * sizeof(uint16_t), "bf16 stores two bytes a value");
    cr_assert_eq(gcn_tensor_copy_from_host(ctx, t, h), GCN_OK);
    cr_assert_eq(gcn_tensor_to_host(ctx, t, back), GCN_OK);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(bits_of(back[i]), bits_of(nearest_bf16(h[i])), "value %d", i);
    cr_assert_eq(gcn_tensor_clone(ctx, t, &c), GCN_OK);
    cr_assert_eq(gcn_tensor_dtype(c), GCN_DTYPE_BF16);
    cr_assert_eq(gcn_tensor_fill(ctx, c, 0.1f), GCN_OK);
    cr_assert_eq(gcn_tensor_to_host(ctx, c, back), GCN_OK);
    cr_assert_eq(back[5], nearest_bf16(0.1f));
    cr_assert_eq(gcn_tensor_copy(ctx, c, t), GCN_OK);
    cr_assert_eq(gcn_tensor_to_host(ctx, c, back), GCN_OK);
    cr_assert_eq(back[1], nearest_bf16(1.0f / 3.0f));
    cr_assert_eq(gcn_tensor_zeros(ctx, &f, 2, 3), GCN_OK);
    cr_assert_eq(gcn_tensor_copy(ctx, f, t), GCN_ERR_DTYPE);
    cr_assert(strstr(gcn_last_error(ctx), "destination is fp32 but source is bf16"), "%s",
              gcn_last_error(ctx));
    gcn_tensor *bad = NULL;
    cr_assert_eq(gcn_tensor_create_dtype(ctx, &bad, 1, 1, (gcn_dtype)7), GCN_ERR_INVALID_ARG);
    cr_assert_null(bad);
    cr_assert_str_eq(gcn_dtype_name(GCN_DTYPE_BF16), "bf16");
    cr_assert_str_eq(gcn_dtype_name(GCN_DTYPE_FP32), "fp32");
    cr_assert_str_eq(gcn_status_str(GCN_ERR_DTYPE), "dtype mismatch");
    gcn_tensor_free(&t);
    gcn_tensor_free(&c);
    gcn_tensor_free(&f);
    gcn_ctx_memory_stats(ctx, &ms);
    cr_assert_eq(ms.in_use, 0);
    gcn_ctx_free(&ctx);
}

Test(dtype, fp32_ops_refuse_bf16_naming_the_operand)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_tensor *b = NULL, *w = NULL, *y = NULL;
    cr_assert_eq(gcn_tensor_create_dtype(ctx, &b, 3, 2, GCN_DTYPE_BF16), GCN_OK);
    cr_assert_eq(gcn_tensor_zeros(ctx, &w, 3, 2), GCN_OK);
    cr_assert_eq(gcn_log_softmax(ctx, b, &y), GCN_ERR_DTYPE);
    cr_assert_null(y);
    cr_assert(strstr(gcn_last_error(ctx), "log_softmax input is bf16, but the op takes fp32"),
              "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_sum(ctx, b, &y), GCN_ERR_DTYPE);
    gcn_tensor *parts[2] = {w, b};
    cr_assert_eq(gcn_concat_cols(ctx, parts, 2, &y), GCN_ERR_DTYPE);
    cr_assert(strstr(gcn_last_error(ctx), "concat part is bf16"), "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_cast(ctx, b, (gcn_dtype)9, &y), GCN_ERR_INVALID_ARG);
    gcn_tensor_free(&b);
    gcn_tensor_free(&w);
    gcn_ctx_free(&ctx);
}

/* loss = sum(0.1 cast(cast(x, bf16), fp32) [+ the same through a second
 * cast of the bf16 tensor]): dL/dy = 0.1f everywhere, so the gradient
 * reaching x is 0.1f rounded to bf16 once per bf16 store it crosses. */
static void cast_chain(bool twice)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    enum { R = 5, C = 3 };
    float h[R * C], back[R * C];
    uint64_t s = 3;
    test_fill_uniform(&s, h, R * C, -4.0f, 4.0f);
    gcn_tensor *x = test_tensor(ctx, h, R, C), *a = NULL, *b = NULL, *c = NULL, *d = NULL,
               *e = NULL, *loss = NULL;
    cr_assert_eq(gcn_tensor_set_requires_grad(x, true), GCN_OK);
    cr_assert_eq(gcn_cast(ctx, x, GCN_DTYPE_BF16, &a), GCN_OK);
    cr_assert_eq(gcn_tensor_dtype(a), GCN_DTYPE_BF16);
    cr_assert_eq(gcn_cast(ctx, a, GCN_DTYPE_FP32, &b), GCN_OK);
    cr_assert_eq(gcn_tensor_to_host(ctx, b, back), GCN_OK);
    for (int i = 0; i < R * C; i++)
        cr_assert_eq(back[i], nearest_bf16(h[i]));
    if (twice) {
        cr_assert_eq(gcn_cast(ctx, a, GCN_DTYPE_FP32, &c), GCN_OK);
        cr_assert_eq(gcn_add(ctx, b, c, &d), GCN_OK);
    } else {
        d = gcn_tensor_retain(b);
    }
    cr_assert_eq(gcn_scale(ctx, d, 0.1f, &e), GCN_OK);
    cr_assert_eq(gcn_sum(ctx, e, &loss), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, loss), GCN_OK);
    cr_assert_eq(gcn_tensor_dtype(gcn_tensor_grad(x)), GCN_DTYPE_FP32);
    cr_assert_eq(gcn_tensor_to_host(ctx, gcn_tensor_grad(x), back), GCN_OK);
    float once = nearest_bf16(0.1f), want = twice ? nearest_bf16(once + 0.1f) : once;
    for (int i = 0; i < R * C; i++)
        cr_assert_eq(back[i], want, "grad %d: %a, want %a", i, (double)back[i], (double)want);
    gcn_tensor *all[] = {x, a, b, c, d, e, loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gcn_tensor_free(&all[i]);
    gcn_memory_stats ms;
    gcn_ctx_memory_stats(ctx, &ms);
    cr_assert_eq(ms.in_use, 0);
    gcn_ctx_free(&ctx);
}

Test(dtype, cast_rounds_forward_and_backward) { cast_chain(false); }
Test(dtype, cast_gradients_accumulate_in_fp32_rounding_once) { cast_chain(true); }
