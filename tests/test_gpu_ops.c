/* The CUDA backend against the CPU reference through the backend tables:
 * matmuls, element-wise ops, dropout and reductions on awkward shapes;
 * device selection and the memory pool.  The optimisers, which live in
 * optim/ rather than in the tables: test_gpu_optim.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_helpers.h"
#include "helpers.h"

/* Shapes: one row, one column, sizes not multiples of 32, > 65,535 rows.
 * Tolerances: element-wise ops and dropout mirror the CPU's arithmetic and
 * must match bit for bit; sums accumulate in double on both sides (1e-6);
 * FP32 matmuls differ only in summation order (1e-5 of the largest
 * magnitude); TF32 rounds inputs to 10 mantissa bits, a normwise error near
 * 5e-4 (1e-3). */

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

/* An upload from pageable memory returns without waiting for the stream,
 * once the driver holds the bytes: the caller may overwrite its buffer at
 * once, also behind a long queue of work. */
Test(gpu_ctx, upload_buffer_reusable_at_once)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(1, false);
    enum { N = 1 << 22 };
    float *h = host_floats(N), *back = host_floats(N);
    void *d = gpu_alloc(p.gpu, FBYTES(N)), *busy = gpu_alloc(p.gpu, FBYTES(N));
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 50; i++) /* queue work ahead of the copy */
            cr_assert_eq(p.gpu->be->fill(p.gpu, (float *)busy, N, (float)i), GCN_OK);
        for (int64_t i = 0; i < N; i++)
            h[i] = (float)(i % 1000) + (float)round;
        cr_assert_eq(p.gpu->be->upload(p.gpu, d, h, FBYTES(N)), GCN_OK);
        for (int64_t i = 0; i < N; i++)
            h[i] = -1.0f;
        gpu_download(p.gpu, back, d, FBYTES(N));
        for (int64_t i = 0; i < N; i += 4099)
            cr_assert_eq(back[i], (float)(i % 1000) + (float)round, "element %lld, round %d",
                         (long long)i, round);
    }
    gpu_release(p.gpu, d, FBYTES(N));
    gpu_release(p.gpu, busy, FBYTES(N));
    free(h);
    free(back);
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
    float *da = gpu_upload(p->gpu, a, FBYTES(ar * lda));
    float *db = gpu_upload(p->gpu, b, FBYTES(br * ldb));
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

static void check_elementwise(gpu_pair *p, const ew_args *a, ew_fn fn, double tol,
                              const char *what)
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
    if (tol == 0.0)
        expect_same(got, want, a->n, msg);
    else
        expect_close(got, want, a->n, tol, msg);
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
static gcn_status op_elu(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->elu(c, a->n, in[0], 1.3f, out);
}
static gcn_status op_elu_bw(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->elu_backward(c, a->n, in[0], 1.3f, in[1], out, false);
}
static gcn_status op_elu_bw_acc(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->elu_backward(c, a->n, in[0], 0.7f, in[1], out, true);
}
static gcn_status op_scale_by(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->scale_by(c, a->n, in[0], in[1], out, false);
}
static gcn_status op_scale_by_acc(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->scale_by(c, a->n, in[0], in[2], out, true);
}
/* The left cols - 1 columns (at least one) between row strides of cols. */
static gcn_status op_copy_cols(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    int64_t w = a->cols > 1 ? a->cols - 1 : 1;
    return c->be->copy_cols(c, a->rows, w, in[0], a->cols, NULL, out, a->cols, false);
}
static gcn_status op_copy_cols_acc(gcn_ctx *c, const ew_args *a, float *const *in, float *out)
{
    return c->be->copy_cols(c, a->rows, a->cols, in[0], a->cols, NULL, out, a->cols, true);
}

Test(gpu_ops, elementwise_bit_identical)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(3, false);
    /* tol 0: bit for bit; elu calls expm1f, which CUDA and glibc may round
     * differently in the last place */
    const struct {
        ew_fn fn;
        double tol;
        const char *name;
    } ops[] = {{op_fill, 0, "fill"},
               {op_axpby0, 0, "axpby beta=0"},
               {op_axpby, 0, "axpby"},
               {op_add, 0, "add"},
               {op_add_bias, 0, "add_bias"},
               {op_relu, 0, "relu"},
               {op_relu_bw, 0, "relu_backward"},
               {op_relu_bw_acc, 0, "relu_backward acc"},
               {op_elu, 1e-6, "elu"},
               {op_elu_bw, 0, "elu_backward"},
               {op_elu_bw_acc, 0, "elu_backward acc"},
               {op_scale_by, 0, "scale_by"},
               {op_scale_by_acc, 0, "scale_by acc"},
               {op_sum_bw, 0, "sum_backward"},
               {op_sum_bw_acc, 0, "sum_backward acc"},
               {op_copy_cols, 0, "copy_cols"},
               {op_copy_cols_acc, 0, "copy_cols acc"}};
    for (int si = 0; si < N_SHAPES; si++) {
        uint64_t s = 1000 + (uint64_t)si;
        ew_args a = {shapes[si].rows, shapes[si].cols, shapes[si].rows * shapes[si].cols, {0}, 0};
        for (int i = 0; i < 3; i++)
            a.in[i] = host_random(&s, a.n, -2, 2);
        for (int64_t i = 0; i < a.n; i += 5)
            a.in[0][i] = 0.0f; /* relu at exactly zero */
        a.out = host_random(&s, a.n, -1, 1);
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
            check_elementwise(&p, &a, ops[o].fn, ops[o].tol, ops[o].name);
        for (int i = 0; i < 3; i++)
            free(a.in[i]);
        free(a.out);
    }
    gpu_pair_close(&p);
}

/* ---- dropout ------------------------------------------------------------------------- */

Test(gpu_ops, dropout_masks_identical)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(4, false);
    const int64_t sizes[] = {1, 3, 4, 5, 33, 210003};
    const float probs[] = {0.0f, 0.1f, 0.5f, 0.9f};
    const uint64_t offsets[] = {0, 1000003, 0xFFFFFFFFull}; /* the last crosses 2^32 */
    const uint32_t key[2] = {0x12345678u, 0x9abcdef0u};
    /* the GPU reads half of each start from device memory, as a captured step does */
    uint64_t *base = gpu_alloc(p.gpu, sizeof *base);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si];
        uint64_t s = 99 + (uint64_t)n;
        float *x = host_random(&s, n, -1, 1), *y0 = host_random(&s, n, -1, 1);
        float *dx = gpu_upload(p.gpu, x, FBYTES(n)), *dy = gpu_alloc(p.gpu, FBYTES(n));
        float *want = host_floats(n), *got = host_floats(n);
        for (size_t pi = 0; pi < sizeof probs / sizeof probs[0]; pi++)
            for (size_t oi = 0; oi < sizeof offsets / sizeof offsets[0]; oi++)
                for (int acc = 0; acc < 2; acc++) {
                    memcpy(want, y0, FBYTES(n));
                    cr_assert_eq(p.gpu->be->upload(p.gpu, dy, y0, FBYTES(n)), GCN_OK);
                    uint64_t half = offsets[oi] / 2;
                    cr_assert_eq(p.gpu->be->upload(p.gpu, base, &half, sizeof half), GCN_OK);
                    gcn_draw_offset on_host = {.rel = offsets[oi]};
                    gcn_draw_offset on_device = {.base = base, .rel = offsets[oi] - half};
                    cr_assert_eq(p.cpu->be->dropout(p.cpu, n, x, want, probs[pi], key, on_host,
                                                    acc),
                                 GCN_OK);
                    cr_assert_eq(p.gpu->be->dropout(p.gpu, n, dx, dy, probs[pi], key,
                                                    on_device, acc),
                                 GCN_OK, "%s", gcn_last_error(p.gpu));
                    gpu_download(p.gpu, got, dy, FBYTES(n));
                    char what[96];
                    snprintf(what, sizeof what, "dropout n=%lld p=%g offset=%llu acc=%d",
                             (long long)n, (double)probs[pi], (unsigned long long)offsets[oi],
                             acc);
                    expect_same(got, want, n, what);
                }
        gpu_release(p.gpu, dx, FBYTES(n));
        gpu_release(p.gpu, dy, FBYTES(n));
        free(x);
        free(y0);
        free(want);
        free(got);
    }
    gpu_release(p.gpu, base, sizeof *base);
    gpu_pair_close(&p);
}

/* The public op on two contexts with one seed: same masks forward and
 * backward, and the dropout stream advances alike. */
Test(gpu_ops, dropout_op_same_seed)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(5, false);
    uint64_t s = 5;
    float *h = host_random(&s, 70001 * 3, -1, 1);
    gcn_ctx *c[2] = {p.cpu, p.gpu};
    float *out[2], *grad[2];
    uint64_t offs[2][GCN_RNG_N_STREAMS];
    for (int d = 0; d < 2; d++) {
        gcn_tensor *x = test_tensor(c[d], h, 70001, 3), *y1 = NULL, *y2 = NULL, *sum = NULL;
        cr_assert_eq(gcn_tensor_set_requires_grad(x, true), GCN_OK);
        cr_assert_eq(gcn_dropout(c[d], x, 0.3f, true, &y1), GCN_OK);
        cr_assert_eq(gcn_dropout(c[d], y1, 0.6f, true, &y2), GCN_OK);
        cr_assert_eq(gcn_sum(c[d], y2, &sum), GCN_OK);
        cr_assert_eq(gcn_backward(c[d], sum), GCN_OK, "%s", gcn_last_error(c[d]));
        out[d] = test_read(c[d], y2);
        grad[d] = test_read(c[d], gcn_tensor_grad(x));
        gcn_rng_get_state(c[d], offs[d]);
        gcn_tensor_free(&x);
        gcn_tensor_free(&y1);
        gcn_tensor_free(&y2);
        gcn_tensor_free(&sum);
    }
    expect_same(out[1], out[0], 70001 * 3, "dropout forward");
    expect_same(grad[1], grad[0], 70001 * 3, "dropout backward");
    cr_assert_eq(memcmp(offs[0], offs[1], sizeof offs[0]), 0);
    for (int d = 0; d < 2; d++) {
        free(out[d]);
        free(grad[d]);
    }
    free(h);
    gpu_pair_close(&p);
}

/* With node ids set (a reordered graph, a rank's rows), the GPU's masks,
 * plain and fused, forward and backward, are the CPU's, for widths whose
 * rows do and do not start on a Philox counter. */
Test(gpu_ops, dropout_by_node_ids_identical)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(8, false);
    enum { N = 3001, LOCAL = 1999 };
    int32_t *ids = malloc(N * sizeof *ids);
    for (int32_t i = 0; i < N; i++)
        ids[i] = (int32_t)(((int64_t)i * 1237 + 11) % N);
    const int64_t widths[] = {1, 7, 8, 13, 256};
    gcn_ctx *c[2] = {p.cpu, p.gpu};
    for (size_t k = 0; k < sizeof widths / sizeof *widths; k++) {
        int64_t w = widths[k];
        uint64_t s = 800 + (uint64_t)w;
        float *h = host_random(&s, LOCAL * w, -1, 1), *out[2], *grad[2];
        for (int d = 0; d < 2; d++) {
            cr_assert_eq(gcn_ctx_set_node_ids(c[d], ids + N - LOCAL, LOCAL, N), GCN_OK);
            gcn_tensor *x = test_tensor(c[d], h, LOCAL, w), *a = NULL, *b = NULL, *sum = NULL;
            gcn_epilogue e = {.act = GCN_ACT_RELU, .dropout = 0.5f};
            cr_assert_eq(gcn_tensor_set_requires_grad(x, true), GCN_OK);
            cr_assert_eq(gcn_dropout(c[d], x, 0.3f, true, &a), GCN_OK);
            cr_assert_eq(gcn_apply_epilogue(c[d], a, &e, true, &b), GCN_OK, "%s",
                         gcn_last_error(c[d]));
            cr_assert_eq(gcn_sum(c[d], b, &sum), GCN_OK);
            cr_assert_eq(gcn_backward(c[d], sum), GCN_OK, "%s", gcn_last_error(c[d]));
            out[d] = test_read(c[d], b);
            grad[d] = test_read(c[d], gcn_tensor_grad(x));
            gcn_tape_clear(c[d]);
            cr_assert_eq(gcn_ctx_set_node_ids(c[d], NULL, 0, 0), GCN_OK);
            gcn_tensor_free(&x);
            gcn_tensor_free(&a);
            gcn_tensor_free(&b);
            gcn_tensor_free(&sum);
        }
        char what[64];
        snprintf(what, sizeof what, "dropouts by node ids, width %lld", (long long)w);
        expect_same(out[1], out[0], LOCAL * w, what);
        expect_same(grad[1], grad[0], LOCAL * w, what);
        for (int d = 0; d < 2; d++) {
            free(out[d]);
            free(grad[d]);
        }
        free(h);
    }
    free(ids);
    gpu_pair_close(&p);
}

/* ---- reductions ------------------------------------------------------------------------ */

Test(gpu_ops, sums)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(6, false);
    for (int si = 0; si < N_SHAPES; si++) {
        int64_t r = shapes[si].rows, c = shapes[si].cols, n = r * c;
        uint64_t s = 600 + (uint64_t)si;
        float *x = host_random(&s, n, -1, 3), *o0 = host_random(&s, c, -1, 1);
        float *dx = gpu_upload(p.gpu, x, FBYTES(n)), *dout = gpu_alloc(p.gpu, FBYTES(c));
        float *want = host_floats(c), *got = host_floats(c);
        for (int acc = 0; acc < 2; acc++) {
            memcpy(want, o0, FBYTES(c));
            cr_assert_eq(p.gpu->be->upload(p.gpu, dout, o0, FBYTES(c)), GCN_OK);
            cr_assert_eq(p.cpu->be->col_sum(p.cpu, r, c, x, want, acc), GCN_OK);
            cr_assert_eq(p.gpu->be->col_sum(p.gpu, r, c, dx, dout, acc), GCN_OK, "%s",
                         gcn_last_error(p.gpu));
            gpu_download(p.gpu, got, dout, FBYTES(c));
            expect_close(got, want, c, 1e-6, acc ? "col_sum acc" : "col_sum");
        }
        cr_assert_eq(p.cpu->be->sum(p.cpu, n, x, want), GCN_OK);
        cr_assert_eq(p.gpu->be->sum(p.gpu, n, dx, dout), GCN_OK, "%s", gcn_last_error(p.gpu));
        gpu_download(p.gpu, got, dout, FBYTES(1));
        expect_close(got, want, 1, 1e-6, "sum");
        for (int acc = 0; acc < 2; acc++) { /* x . x[reversed] */
            float *xr = host_floats(n);
            for (int64_t i = 0; i < n; i++)
                xr[i] = x[n - 1 - i];
            float *dxr = gpu_upload(p.gpu, xr, FBYTES(n));
            want[0] = got[0] = 0.25f;
            cr_assert_eq(p.gpu->be->upload(p.gpu, dout, got, FBYTES(1)), GCN_OK);
            cr_assert_eq(p.cpu->be->dot(p.cpu, n, x, xr, want, acc), GCN_OK);
            cr_assert_eq(p.gpu->be->dot(p.gpu, n, dx, dxr, dout, acc), GCN_OK, "%s",
                         gcn_last_error(p.gpu));
            gpu_download(p.gpu, got, dout, FBYTES(1));
            expect_close(got, want, 1, 1e-6, acc ? "dot acc" : "dot");
            gpu_release(p.gpu, dxr, FBYTES(n));
            free(xr);
        }
        gpu_release(p.gpu, dx, FBYTES(n));
        gpu_release(p.gpu, dout, FBYTES(c));
        free(x);
        free(o0);
        free(want);
        free(got);
    }
    gpu_pair_close(&p);
}
