/* The SpMM in bf16 on the CPU backend (so CI checks the numerics without a
 * GPU): the CPU kernel's bf16 variant on awkward shapes against float64
 * (spmm_bf16_check.c states the bound), the gradient through it against
 * fp32's, call sites keyed by dtype, choices files naming the dtype (old
 * files loading as fp32), and kernels without a bf16 variant refused. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "spmm_bf16_check.h"

static const int feats[] = {1, 2, 3, 7, 8, 9, 16, 33, 64};

Test(spmm_bf16, cpu_kernel_on_awkward_shapes)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    bf16_check_shapes(ctx, feats, sizeof feats / sizeof feats[0]);
    gcn_ctx_free(&ctx);
}

Test(spmm_bf16, cpu_kernel_long_row_past_fp16_range)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    bf16_check_long_row(ctx, 3);
    gcn_ctx_free(&ctx);
}

Test(spmm_bf16, gradient_follows_fp32)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    bf16_check_gradient(ctx, 5);
    bf16_check_gradient(ctx, 16);
    gcn_ctx_free(&ctx);
}

/* A 6 x 6 symmetric ring with self-loops. */
static gcn_csr *ring(gcn_ctx *ctx)
{
    int32_t rp[7], ci[18];
    float v[18];
    for (int r = 0, k = 0; r < 6; r++) {
        rp[r] = k;
        int cols[3] = {(r + 5) % 6, r, (r + 1) % 6};
        for (int i = 0; i < 3; i++)
            for (int j = i + 1; j < 3; j++)
                if (cols[j] < cols[i]) {
                    int t = cols[i];
                    cols[i] = cols[j];
                    cols[j] = t;
                }
        for (int i = 0; i < 3; i++, k++) {
            ci[k] = cols[i];
            v[k] = 0.25f + 0.125f * (float)i;
        }
    }
    rp[6] = 18;
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, 6, 6, 18, rp, ci, v), GCN_OK, "%s", gcn_last_error(ctx));
    return a;
}

/* Products of a in fp32 and in bf16 at width f, `times` each. */
static void products(gcn_ctx *ctx, const gcn_csr *a, int f, int times)
{
    float hx[6 * 64];
    uint64_t s = 3;
    test_fill_uniform(&s, hx, 6 * f, -1.0f, 1.0f);
    gcn_tensor *x = test_tensor(ctx, hx, 6, f), *xb = NULL;
    bool prev = gcn_set_grad_enabled(ctx, false);
    cr_assert_eq(gcn_cast(ctx, x, GCN_DTYPE_BF16, &xb), GCN_OK);
    for (int i = 0; i < times; i++) {
        gcn_tensor *y = NULL, *yb = NULL;
        cr_assert_eq(gcn_spmm(ctx, a, x, &y), GCN_OK, "%s", gcn_last_error(ctx));
        cr_assert_eq(gcn_spmm(ctx, a, xb, &yb), GCN_OK, "%s", gcn_last_error(ctx));
        cr_assert_eq(gcn_tensor_dtype(yb), GCN_DTYPE_BF16);
        gcn_tensor_free(&y);
        gcn_tensor_free(&yb);
    }
    gcn_set_grad_enabled(ctx, prev);
    gcn_tensor_free(&x);
    gcn_tensor_free(&xb);
}

Test(spmm_bf16, call_sites_are_keyed_by_dtype)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_csr *a = ring(ctx);
    products(ctx, a, 4, 3);
    gcn_spmm_site_info s[4];
    cr_assert_eq(gcn_spmm_sites(a, s, 4), 2, "one site per dtype at one width");
    cr_assert_eq(s[0].dtype, GCN_DTYPE_FP32);
    cr_assert_eq(s[1].dtype, GCN_DTYPE_BF16);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(s[i].feat, 4);
        cr_assert(s[i].locked);
        cr_assert_str_eq(s[i].chosen, "cpu");
        cr_assert_geq(s[i].calls, 2, "the first product of a site is not counted");
    }
    cr_assert_eq(s[0].calls, s[1].calls);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

/* Drops every " fp32" from text: a choices file as the format's first
 * version wrote it, before sites named their dtype. */
static void strip_fp32(char *text)
{
    for (char *p; (p = strstr(text, " fp32"));)
        memmove(p, p + 5, strlen(p + 5) + 1);
}

static gcn_status load(gcn_ctx *ctx, char *mem, const gcn_csr *a)
{
    const char *tag = "gcn";
    FILE *f = fmemopen(mem, strlen(mem), "r");
    cr_assert_not_null(f);
    gcn_status st = gcn_spmm_choices_load(ctx, f, "memory", &a, &tag, 1);
    fclose(f);
    return st;
}

Test(spmm_bf16, choices_name_the_dtype_and_old_files_load_as_fp32)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_csr *a = ring(ctx);
    products(ctx, a, 4, 3);
    char *mem = NULL;
    size_t len = 0;
    const char *tag = "gcn";
    FILE *f = open_memstream(&mem, &len);
    cr_assert_eq(gcn_spmm_choices_save(ctx, f, (const gcn_csr *const *)&a, &tag, 1), GCN_OK);
    fclose(f);
    cr_assert(strstr(mem, "gcn-spmm-choices 2\n") == mem, "%s", mem);
    cr_assert(strstr(mem, "site gcn A 4 fp32 auto cpu\n"), "%s", mem);
    cr_assert(strstr(mem, "site gcn A 4 bf16 auto cpu\n"), "%s", mem);

    gcn_csr *b = ring(ctx);
    cr_assert_eq(load(ctx, mem, b), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_spmm_site_info s[4];
    cr_assert_eq(gcn_spmm_sites(b, s, 4), 2);
    cr_assert(s[0].dtype == GCN_DTYPE_FP32 && s[1].dtype == GCN_DTYPE_BF16);
    cr_assert(s[0].locked && s[1].locked && s[1].profiled_calls == 0);
    gcn_csr_free(&b);

    /* version 1: no dtype, every site fp32 (the bf16 line dropped) */
    char old[1024];
    snprintf(old, sizeof old, "%s", mem);
    *strstr(old, "site gcn A 4 bf16") = '\0';
    memcpy(old, "gcn-spmm-choices 1", 18);
    strip_fp32(old);
    gcn_csr *c = ring(ctx);
    cr_assert_eq(load(ctx, old, c), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_spmm_sites(c, s, 4), 1);
    cr_assert(s[0].dtype == GCN_DTYPE_FP32 && s[0].locked);
    gcn_csr_free(&c);

    char *bad = strstr(mem, "bf16 auto");
    memcpy(bad, "bf17", 4);
    gcn_csr *d = ring(ctx);
    cr_assert_eq(load(ctx, mem, d), GCN_ERR_FORMAT);
    cr_assert(strstr(gcn_last_error(ctx), "memory:4:"), "%s", gcn_last_error(ctx));
    gcn_csr_free(&d);
    free(mem);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

static bool any_matrix(const gcn_csr *a, int feat)
{
    (void)a;
    return feat >= 1;
}

static gcn_status no_plan(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    (void)ctx, (void)a, (void)feat;
    *plan = NULL;
    return GCN_OK;
}

static gcn_status zero_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x, float *y,
                           int feat, bool accumulate)
{
    (void)ctx, (void)plan, (void)x;
    if (!accumulate)
        memset(y, 0, (size_t)a->n_rows * (size_t)feat * sizeof *y);
    return GCN_OK;
}

/* A program's kernel without a bf16 variant, forced: precision bf16 is
 * refused naming it, and a product of bf16 features fails the same way;
 * the selector's bf16 sites leave it out. */
Test(spmm_bf16, kernels_without_a_bf16_variant_are_refused)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_spmm_impl k = {.size = sizeof k, .name = "fp32_only", .device = GCN_DEVICE_CPU,
                       .roles = GCN_SPMM_ROLE_WHOLE, .supports = any_matrix, .plan = no_plan,
                       .run = zero_run};
    cr_assert_eq(gcn_spmm_register(ctx, &k), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_spmm_check_dtype(ctx, GCN_DTYPE_BF16), GCN_OK, "auto");
    cr_assert_eq(gcn_spmm_set_kernel(ctx, "fp32_only"), GCN_OK);
    cr_assert_eq(gcn_spmm_check_dtype(ctx, GCN_DTYPE_FP32), GCN_OK);
    cr_assert_eq(gcn_spmm_check_dtype(ctx, GCN_DTYPE_BF16), GCN_ERR_UNSUPPORTED);
    cr_assert(strstr(gcn_last_error(ctx), "'fp32_only' has no bf16 variant"), "%s",
              gcn_last_error(ctx));
    cr_assert(strstr(gcn_last_error(ctx), "cpu"), "names the kernels that have one: %s",
              gcn_last_error(ctx));
    gcn_csr *a = ring(ctx);
    gcn_tensor *x = NULL, *y = NULL;
    cr_assert_eq(gcn_tensor_create_dtype(ctx, &x, 6, 4, GCN_DTYPE_BF16), GCN_OK);
    cr_assert_eq(gcn_tensor_fill(ctx, x, 1.0f), GCN_OK);
    cr_assert_eq(gcn_spmm(ctx, a, x, &y), GCN_ERR_UNSUPPORTED);
    cr_assert(strstr(gcn_last_error(ctx), "fp32_only"), "%s", gcn_last_error(ctx));
    cr_assert_null(y);
    gcn_spmm_impl bad = k;
    bad.name = "half_bf16";
    bad.plan_bf16 = no_plan;
    cr_assert_eq(gcn_spmm_register(ctx, &bad), GCN_ERR_INVALID_ARG, "plan_bf16 without run_bf16");
    cr_assert_eq(gcn_spmm_set_kernel(ctx, "auto"), GCN_OK);
    products(ctx, a, 4, 3);
    gcn_spmm_site_info s[4];
    cr_assert_eq(gcn_spmm_sites(a, s, 4), 2);
    cr_assert_eq(s[0].n_candidates, 2, "fp32: cpu and fp32_only");
    cr_assert_eq(s[1].n_candidates, 1, "bf16: cpu only");
    cr_assert_eq(gcn_spmm_set_kernel(ctx, "cpu+fp32_only@16"), GCN_OK);
    cr_assert_eq(gcn_spmm_check_dtype(ctx, GCN_DTYPE_BF16), GCN_ERR_UNSUPPORTED);
    cr_assert(strstr(gcn_last_error(ctx), "round its output twice"), "%s", gcn_last_error(ctx));
    gcn_tensor_free(&x);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}
