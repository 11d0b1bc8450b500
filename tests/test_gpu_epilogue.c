/* The fused epilogue's CUDA backend against the CPU reference: statistics,
 * forward and backward on awkward shapes (one column, widths that are and
 * are not multiples of four, many rows, sizes either side of the one-launch
 * column sums' bound), every stage combination, with and without
 * accumulation. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "epilogue_cases.h"
#include "gpu_helpers.h"
#include "helpers.h"

/* Statistics and gradient sums are taken in double on both sides, in
 * different orders: 1e-5 of the largest magnitude.  Given the same
 * statistics the forward is the same arithmetic, bit for bit, except
 * ELU's expm1f (device and C library differ in the last bit). */
#define TOL 1e-5

typedef struct operands {
    dual x, bias, gamma, beta, rm, rv, mean, invstd;
} operands;

static float *side(const dual *v, int d)
{
    return d ? v->d : v->h;
}

/* The arguments for backend d (0 CPU, 1 GPU); the statistics are the CPU's
 * on both, so forward and backward are compared on equal inputs. */
static gcn_epilogue_args args_of(const operands *o, int64_t r, int64_t c, bool bias, int bn,
                                 gcn_activation act, float p, int d)
{
    gcn_epilogue_args a = {.rows = r, .cols = c, .x = side(&o->x, d),
                           .bias = bias ? side(&o->bias, d) : NULL, .batch_stats = bn == BN_TRAIN,
                           .act = act, .alpha = 0.7f, .p = p, .key = {5, 9},
                           .offset = {NULL, 12345}};
    if (bn != BN_NONE) {
        a.gamma = side(&o->gamma, d);
        a.beta = side(&o->beta, d);
        a.mean = side(&o->mean, d);
        a.invstd = side(&o->invstd, d);
    }
    return a;
}

/* Replaces the GPU copy with the CPU one. */
static void to_gpu(gcn_ctx *gpu, dual *v)
{
    gpu_release(gpu, v->d, (size_t)v->n * sizeof(float));
    v->d = gpu_upload(gpu, v->h, (size_t)v->n * sizeof(float));
}

/* Runs the statistics on both backends, checks them, then gives the GPU the
 * CPU's mean and invstd. */
static void check_stats(gpu_pair *p, operands *o, int64_t r, int64_t c, bool bias, int bn)
{
    for (int d = 0; d < 2; d++) {
        gcn_ctx *ctx = d ? p->gpu : p->cpu;
        cr_assert_eq(ctx->be->epilogue_stats(ctx, r, c, side(&o->x, d), GCN_DTYPE_FP32,
                                             bias ? side(&o->bias, d) : NULL, bn == BN_TRAIN,
                                             0.1f, 1e-5f, side(&o->rm, d), side(&o->rv, d),
                                             side(&o->mean, d), side(&o->invstd, d)),
                     GCN_OK, "%s", gcn_last_error(ctx));
    }
    if (bn == BN_TRAIN) {
        dual_check(p->gpu, &o->mean, TOL, "mean");
        dual_check(p->gpu, &o->rm, TOL, "running_mean");
        dual_check(p->gpu, &o->rv, TOL, "running_var");
    } else {
        memcpy(o->mean.h, o->rm.h, (size_t)c * sizeof(float));
    }
    dual_check(p->gpu, &o->invstd, TOL, "invstd");
    to_gpu(p->gpu, &o->mean);
    to_gpu(p->gpu, &o->invstd);
}

static void check_backward(gpu_pair *p, const operands *o, int64_t r, int64_t c, bool bias,
                           int bn, gcn_activation act, float pd, uint64_t *s)
{
    for (int set = 0; set < 3; set++) {
        bool acc = set == 1, only_params = set == 2;
        dual dy = dual_random(p->gpu, s, r * c, -1, 1);
        dual g[4] = {dual_random(p->gpu, s, r * c, -1, 1), dual_random(p->gpu, s, c, -1, 1),
                     dual_random(p->gpu, s, c, -1, 1), dual_random(p->gpu, s, c, -1, 1)};
        for (int d = 0; d < 2; d++) {
            gcn_ctx *ctx = d ? p->gpu : p->cpu;
            gcn_epilogue_args a = args_of(o, r, c, bias, bn, act, pd, d);
            gcn_epilogue_grads gr = {only_params ? NULL : side(&g[0], d),
                                     bias ? side(&g[1], d) : NULL,
                                     bn != BN_NONE ? side(&g[2], d) : NULL,
                                     bn != BN_NONE ? side(&g[3], d) : NULL,
                                     acc, acc, acc, acc};
            cr_assert_eq(ctx->be->epilogue_backward(ctx, &a, side(&dy, d), &gr), GCN_OK, "%s",
                         gcn_last_error(ctx));
        }
        const char *names[4] = {"dx", "dbias", "dgamma", "dbeta"};
        for (int i = 0; i < 4; i++) {
            /* dbias under batch statistics is rounding noise around zero */
            if (!(i == 1 && bn == BN_TRAIN))
                dual_check(p->gpu, &g[i], TOL, names[i]);
            dual_free(p->gpu, &g[i]);
        }
        dual_free(p->gpu, &dy);
    }
}

static void check_case(gpu_pair *p, int64_t r, int64_t c, bool bias, int bn, gcn_activation act,
                       float pd)
{
    cr_log_info("%lld x %lld: bias %d, batch norm %d, activation %d, p %g", (long long)r,
                (long long)c, bias, bn, (int)act, (double)pd);
    uint64_t s = 99 + (uint64_t)(r * 31 + c);
    operands o = {dual_random(p->gpu, &s, r * c, -2, 3), dual_random(p->gpu, &s, c, -1, 1),
                  dual_random(p->gpu, &s, c, 0.5f, 1.5f), dual_random(p->gpu, &s, c, -1, 1),
                  dual_random(p->gpu, &s, c, -0.5f, 0.5f), dual_random(p->gpu, &s, c, 0.5f, 2),
                  dual_random(p->gpu, &s, c, 0, 1), dual_random(p->gpu, &s, c, 0, 1)};
    if (bn != BN_NONE)
        check_stats(p, &o, r, c, bias, bn);
    dual y = dual_random(p->gpu, &s, r * c, 0, 1);
    for (int d = 0; d < 2; d++) {
        gcn_ctx *ctx = d ? p->gpu : p->cpu;
        gcn_epilogue_args a = args_of(&o, r, c, bias, bn, act, pd, d);
        cr_assert_eq(ctx->be->epilogue_forward(ctx, &a, side(&y, d)), GCN_OK, "%s",
                     gcn_last_error(ctx));
    }
    dual_check(p->gpu, &y, act == GCN_ACT_ELU ? TOL : 0.0, "out");
    check_backward(p, &o, r, c, bias, bn, act, pd, &s);
    dual *all[] = {&o.x, &o.bias, &o.gamma, &o.beta, &o.rm, &o.rv, &o.mean, &o.invstd, &y};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        dual_free(p->gpu, all[i]);
}

Test(gpu_epilogue, every_stage_combination_on_small_shapes)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(21, false);
    const gcn_activation acts[3] = {GCN_ACT_NONE, GCN_ACT_RELU, GCN_ACT_ELU};
    const int64_t shapes[3][2] = {{2, 1}, {33, 7}, {65, 36}};
    for (int sh = 0; sh < 3; sh++)
        for (int k = 0; k < 36; k++)
            check_case(&p, shapes[sh][0], shapes[sh][1], k & 1, (k >> 1) % 3, acts[(k / 6) % 3],
                       k >= 18 ? 0.5f : 0.0f);
    gpu_pair_close(&p);
}

Test(gpu_epilogue, network_sized_operands)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(22, false);
    check_case(&p, 20011, 256, true, BN_TRAIN, GCN_ACT_RELU, 0.5f);
    check_case(&p, 20011, 256, true, BN_EVAL, GCN_ACT_RELU, 0.0f);
    check_case(&p, 70001, 3, false, BN_TRAIN, GCN_ACT_ELU, 0.2f);
    check_case(&p, 4099, 40, true, BN_NONE, GCN_ACT_NONE, 0.0f);
    gpu_pair_close(&p);
}

/* Column sums finish in the tile kernel's last block when the partials are
 * few (core/ops/cols.cuh, FUSED_FINISH_DOUBLES = 16K doubles), else in a
 * second launch.  Shapes around that: a graph-classification batch; 64
 * chunks of 32 rows in float4s, the bound for two terms, over two column
 * tiles, the second of four columns; one chunk more, where the statistics
 * and gradient sums take two launches and dbias one; 128 chunks of single
 * floats over a tile of 32 columns and one of 1; 33 tiles of one chunk.
 * One context runs them all, so a tile counter left non-zero would show. */
Test(gpu_epilogue, one_and_two_launch_reductions)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(23, false);
    const int64_t shapes[5][2] = {{1250, 64}, {2048, 132}, {2049, 132}, {4096, 33}, {32, 4100}};
    for (int sh = 0; sh < 5; sh++) {
        int64_t r = shapes[sh][0], c = shapes[sh][1];
        check_case(&p, r, c, true, BN_TRAIN, GCN_ACT_RELU, 0.5f);
        check_case(&p, r, c, true, BN_EVAL, GCN_ACT_NONE, 0.0f);
        check_case(&p, r, c, true, BN_NONE, GCN_ACT_ELU, 0.0f);
    }
    gpu_pair_close(&p);
}
