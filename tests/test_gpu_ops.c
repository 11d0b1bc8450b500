/* The CUDA backend against the CPU reference, op by op through the backend
 * tables: matmuls (FP32 and TF32), element-wise ops, dropout masks,
 * reductions and optimiser steps, on awkward shapes (one row, one column,
 * sizes that are not multiples of 32, more than 65,535 rows); plus device
 * selection and the memory pool.  Tolerances: element-wise ops and dropout
 * mirror the CPU's arithmetic and must match bit for bit; sums accumulate in
 * double on both sides (1e-6); FP32 matmuls differ only in summation order
 * (1e-5 of the largest magnitude); TF32 rounds inputs to 10 mantissa bits,
 * a normwise error near 5e-4 (1e-3). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_helpers.h"
#include "helpers.h"

typedef struct shape {
    int64_t rows, cols;
} shape;

static const shape shapes[] = {{1, 1}, {1, 33}, {37, 1}, {33, 7}, {257, 130}, {70001, 3}};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

#define FBYTES(n) ((size_t)(n) * sizeof(float))

/* ---- device selection and memory ------------------------------------------------ */

Test(gpu_ctx, device_selection)
{
    GPU_REQUIRED();
    gcn_ctx *ctx = NULL;
    gcn_ctx_opts o = gcn_ctx_default_opts();
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    cr_assert_eq(gcn_ctx_device(ctx), GCN_DEVICE_CUDA, "AUTO must pick the GPU when one exists");
    cr_assert_not(gcn_ctx_tf32(ctx), "FP32 is the default");
    gcn_ctx_free(&ctx);
    o.tf32 = true;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    cr_assert(gcn_ctx_tf32(ctx));
    gcn_ctx_free(&ctx);
    o.device = GCN_DEVICE_CPU;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    cr_assert_eq(gcn_ctx_device(ctx), GCN_DEVICE_CPU);
    cr_assert_not(gcn_ctx_tf32(ctx), "TF32 is a GPU mode");
    gcn_ctx_free(&ctx);
    o.device = GCN_DEVICE_CUDA;
    o.device_index = gcn_cuda_device_count();
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_ERR_DEVICE);
    cr_assert_null(ctx);
}

Test(gpu_ctx, pool_reuses_blocks)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(1, false);
    gcn_memory_stats s0, s1;
    gcn_ctx_memory_stats(p.gpu, &s0);
    void *a = gpu_alloc(p.gpu, 1000), *b = gpu_alloc(p.gpu, 3000);
    gcn_ctx_memory_stats(p.gpu, &s1);
    cr_assert_eq(s1.device_allocs, s0.device_allocs + 2);
    cr_assert_eq(s1.in_use, s0.in_use + 4000);
    cr_assert_geq(s1.reserved, s0.reserved + 4000);
    cr_assert_leq(s1.reserved, s0.reserved + 4000 + 4000 / 8 + 512);
    gpu_release(p.gpu, a, 1000);
    gpu_release(p.gpu, b, 3000);
    /* same size class: served from the free lists */
    for (int i = 0; i < 10; i++) {
        a = gpu_alloc(p.gpu, 1010);
        b = gpu_alloc(p.gpu, 2900);
        gpu_release(p.gpu, a, 1010);
        gpu_release(p.gpu, b, 2900);
    }
    gcn_memory_stats s2;
    gcn_ctx_memory_stats(p.gpu, &s2);
    cr_assert_eq(s2.device_allocs, s1.device_allocs, "a cached block must be reused");
    cr_assert_eq(s2.device_frees, s1.device_frees);
    cr_assert_eq(s2.in_use, s0.in_use);
    cr_assert_eq(s2.peak, s1.peak, "peak is the high-water mark of bytes in use");
    gcn_ctx_reset_peak(p.gpu);
    gcn_ctx_memory_stats(p.gpu, &s2);
    cr_assert_eq(s2.peak, s2.in_use);
    gpu_pair_close(&p);
}

Test(gpu_errors, alloc_failure_reports_the_call)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(1, false);
    void *d = NULL;
    gcn_status st = gcn_mem_alloc(p.gpu, &d, (size_t)1 << 52);
    cr_assert_eq(st, GCN_ERR_NOMEM);
    cr_assert_null(d);
    const char *msg = gcn_last_error(p.gpu);
    cr_assert(strstr(msg, "cudaMalloc") && strstr(msg, "cuda_pool.cu:"), "message: %s", msg);
    /* the context stays usable */
    float one = 1.0f, back = 0.0f;
    void *x = gpu_upload(p.gpu, &one, sizeof one);
    gpu_download(p.gpu, &back, x, sizeof back);
    cr_assert_eq(back, 1.0f);
    gpu_release(p.gpu, x, sizeof one);
    gpu_pair_close(&p);
}

/* ---- gemm --------------------------------------------------------------------------- */

typedef struct gemm_case {
    int64_t m, n, k, pad;
} gemm_case;

/* c = 0.75 op(a) op(b) + beta c on both backends, with row strides of
 * width + pad; beta = 0 starts from NaN, which must not leak through. */
static void check_gemm(gpu_pair *p, gemm_case g, bool ta, bool tb, float beta, double tol,
                       bool normwise)
{
    uint64_t s = 77 + (uint64_t)(g.m * 131 + g.n * 17 + g.k) + ta * 2 + tb;
    int64_t ar = ta ? g.k : g.m, ac = ta ? g.m : g.k, br = tb ? g.n : g.k, bc = tb ? g.k : g.n;
    int64_t lda = ac + g.pad, ldb = bc + g.pad, ldc = g.n + g.pad;
    float *a = host_random(&s, ar * lda, -1, 1), *b = host_random(&s, br * ldb, -1, 1);
    float *c = host_random(&s, g.m * ldc, -1, 1);
    if (beta == 0.0f)
        for (int64_t i = 0; i < g.m * ldc; i++)
            c[i] = NAN;
    float *want = host_copy(c, g.m * ldc), *got = host_floats(g.m * ldc);
    cr_assert_eq(p->cpu->be->gemm(p->cpu, ta, tb, g.m, g.n, g.k, 0.75f, a, lda, b, ldb, beta,
                                  want, ldc),
                 GCN_OK);
    float *da = gpu_upload(p->gpu, a, FBYTES(ar * lda)), *db = gpu_upload(p->gpu, b, FBYTES(br * ldb));
    float *dc = gpu_upload(p->gpu, c, FBYTES(g.m * ldc));
    cr_assert_eq(p->gpu->be->gemm(p->gpu, ta, tb, g.m, g.n, g.k, 0.75f, da, lda, db, ldb, beta,
                                  dc, ldc),
                 GCN_OK, "%s", gcn_last_error(p->gpu));
    gpu_download(p->gpu, got, dc, FBYTES(g.m * ldc));
    char what[128];
    snprintf(what, sizeof what, "gemm m=%lld n=%lld k=%lld pad=%lld ta=%d tb=%d beta=%g",
             (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.pad, ta, tb,
             (double)beta);
    if (normwise) {
        double *w = malloc((size_t)(g.m * ldc) * sizeof *w);
        for (int64_t i = 0; i < g.m * ldc; i++)
            w[i] = want[i];
        double err = test_rel_err(got, w, g.m * ldc);
        cr_assert(err <= tol, "%s: normwise error %.3g > %.1e", what, err, tol);
        free(w);
    } else {
        expect_close(got, want, g.m * ldc, tol, what);
    }
    gpu_release(p->gpu, da, FBYTES(ar * lda));
    gpu_release(p->gpu, db, FBYTES(br * ldb));
    gpu_release(p->gpu, dc, FBYTES(g.m * ldc));
    free(a);
    free(b);
    free(c);
    free(want);
    free(got);
}

Test(gpu_ops, gemm_fp32)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(2, false);
    const gemm_case cases[] = {{1, 1, 1, 0},   {1, 37, 5, 0},   {37, 1, 5, 3},   {5, 7, 1, 0},
                               {33, 65, 130, 0}, {33, 65, 130, 5}, {70001, 16, 7, 0},
                               {7, 3, 0, 0},   {7, 3, 0, 2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int t = 0; t < 4; t++)
            for (int bi = 0; bi < 2; bi++)
                check_gemm(&p, cases[i], t & 1, t >> 1, bi ? 0.5f : 0.0f, 1e-5, false);
    gpu_pair_close(&p);
}

Test(gpu_ops, gemm_tf32)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(2, true);
    cr_assert(gcn_ctx_tf32(p.gpu));
    const gemm_case cases[] = {{33, 65, 130, 0}, {70001, 16, 64, 0}, {128, 128, 256, 3}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int t = 0; t < 4; t++)
            check_gemm(&p, cases[i], t & 1, t >> 1, 0.5f, 1e-3, true);
    gpu_pair_close(&p);
}

/* ---- element-wise ---------------------------------------------------------------------- */

/* Runs `op` on the CPU over host arrays and on the GPU over uploaded copies,
 * then compares the n-element output bit for bit. */
typedef struct ew_args {
    int64_t rows, cols, n;
    float *in[3];  /* host inputs, n elements each (unused may be NULL) */
    float *out;    /* initial output contents, n elements */
} ew_args;

typedef gcn_status (*ew_fn)(gcn_ctx *ctx, const ew_args *a, float *const *in, float *out);

static void check_elementwise(gpu_pair *p, const ew_args *a, ew_fn fn, const char *what)
{
    float *want = host_copy(a->out, a->n), *got = host_floats(a->n);
    cr_assert_eq(fn(p->cpu, a, a->in, want), GCN_OK);
    float *din[3] = {0};
    for (int i = 0; i < 3; i++)
        if (a->in[i])
            din[i] = gpu_upload(p->gpu, a->in[i], FBYTES(a->n));
    float *dout = gpu_upload(p->gpu, a->out, FBYTES(a->n));
    cr_assert_eq(fn(p->gpu, a, din, dout), GCN_OK, "%s: %s", what, gcn_last_error(p->gpu));
    gpu_download(p->gpu, got, dout, FBYTES(a->n));
    char msg[96];
    snprintf(msg, sizeof msg, "%s [%lld, %lld]", what, (long long)a->rows, (long long)a->cols);
    expect_same(got, want, a->n, msg);
    for (int i = 0; i < 3; i++)
        gpu_release(p->gpu, din[i], din[i] ? FBYTES(a->n) : 0);
    gpu_release(p->gpu, dout, FBYTES(a->n));
    free(want);
    free(got);
}

static gcn_status op_fill(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    (void)in;
    return c->be->fill(c, out, a->n, -2.5f);
}
static gcn_status op_axpby0(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->axpby(c, a->n, 1.5f, in[0], 0.0f, out);
}
static gcn_status op_axpby(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->axpby(c, a->n, 0.3f, in[0], -0.7f, out);
}
static gcn_status op_add(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->add(c, a->n, in[0], in[1], out);
}
static gcn_status op_add_bias(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->add_bias(c, a->rows, a->cols, in[0], in[1], out);
}
static gcn_status op_relu(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->relu(c, a->n, in[0], out);
}
static gcn_status op_relu_bw(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->relu_backward(c, a->n, in[0], in[1], out, false);
}
static gcn_status op_relu_bw_acc(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->relu_backward(c, a->n, in[0], in[1], out, true);
}
static gcn_status op_sum_bw(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->sum_backward(c, a->n, in[0], 0.25f, out, false);
}
static gcn_status op_sum_bw_acc(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->sum_backward(c, a->n, in[0], -3.0f, out, true);
}
/* The left cols - 1 columns (at least one) between row strides of cols. */
static gcn_status op_copy_cols(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    int64_t w = a->cols > 1 ? a->cols - 1 : 1;
    return c->be->copy_cols(c, a->rows, w, in[0], a->cols, out, a->cols, false);
}
static gcn_status op_copy_cols_acc(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->copy_cols(c, a->rows, a->cols, in[0], a->cols, out, a->cols, true);
}

Test(gpu_ops, elementwise_bit_identical)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(3, false);
    const struct {
        ew_fn fn;
        const char *name;
    } ops[] = {{op_fill, "fill"},         {op_axpby0, "axpby beta=0"}, {op_axpby, "axpby"},
               {op_add, "add"},           {op_add_bias, "add_bias"},   {op_relu, "relu"},
               {op_relu_bw, "relu_backward"}, {op_relu_bw_acc, "relu_backward acc"},
               {op_sum_bw, "sum_backward"}, {op_sum_bw_acc, "sum_backward acc"},
               {op_copy_cols, "copy_cols"}, {op_copy_cols_acc, "copy_cols acc"}};
    for (int si = 0; si < N_SHAPES; si++) {
        uint64_t s = 1000 + (uint64_t)si;
        ew_args a = {shapes[si].rows, shapes[si].cols, shapes[si].rows * shapes[si].cols, {0}, 0};
        for (int i = 0; i < 3; i++)
            a.in[i] = host_random(&s, a.n, -2, 2);
        for (int64_t i = 0; i < a.n; i += 5)
            a.in[0][i] = 0.0f; /* relu at exactly zero */
        a.out = host_random(&s, a.n, -1, 1);
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
            check_elementwise(&p, &a, ops[o].fn, ops[o].name);
        for (int i = 0; i < 3; i++)
            free(a.in[i]);
        free(a.out);
    }
    gpu_pair_close(&p);
}
