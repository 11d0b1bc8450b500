/* Philox known-answer vectors, stream independence, reproducibility,
 * dropout statistics and the initialisers' ranges. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "helpers.h"

/* Known-answer vectors of Philox4x32-10 published with Random123. */
Test(rng, philox_known_answers)
{
    struct { uint32_t ctr[4], key[2], out[4]; } kat[3] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (int k = 0; k < 3; k++) {
        uint32_t out[4];
        gcn_philox4x32(kat[k].ctr, kat[k].key, out);
        for (int i = 0; i < 4; i++)
            cr_assert_eq(out[i], kat[k].out[i], "vector %d word %d: %08x", k, i, out[i]);
    }
}

/* The context's draws are fixed by the seed alone: key = (seed low word,
 * seed high word), counter = (offset low, offset high, stream, 0), word i of
 * a draw from counter offset + i / 4, 24 bits per float; each draw moves the
 * stream to the next whole counter.  Rebuilt here from the Philox function,
 * whose own outputs are pinned by the known-answer vectors above. */
Test(rng, context_draws_follow_the_seed_layout)
{
    const uint64_t seed = 0x0000000100000002ull;
    gcn_ctx *ctx = test_cpu_ctx(seed);
    const uint32_t key[2] = {2u, 1u};
    float got[10];
    uint64_t offset = 0;
    for (int draw = 0; draw < 2; draw++) {
        cr_assert_eq(gcn_rng_uniform(ctx, GCN_RNG_SPLIT, got, 10), GCN_OK);
        for (uint32_t i = 0; i < 10; i++) {
            uint32_t ctr[4] = {(uint32_t)(offset + i / 4), 0u, GCN_RNG_SPLIT, 0u}, out[4];
            gcn_philox4x32(ctr, key, out);
            float want = (float)(out[i % 4] >> 8) / 16777216.0f;
            cr_assert_eq(got[i], want, "draw %d word %u: %.9g, expected %.9g", draw, i,
                         (double)got[i], (double)want);
        }
        offset += 3; /* 10 words use 3 counters */
    }
    uint64_t off[GCN_RNG_N_STREAMS];
    gcn_rng_get_state(ctx, off);
    cr_assert_eq(off[GCN_RNG_SPLIT], 6);
    cr_assert_eq(off[GCN_RNG_INIT], 0, "other streams do not move");
    gcn_ctx_free(&ctx);
}

Test(rng, same_seed_same_draws_streams_differ)
{
    gcn_ctx *a = test_cpu_ctx(42), *b = test_cpu_ctx(42), *c = test_cpu_ctx(43);
    float x[1000], y[1000], z[1000], w[1000];
    cr_assert_eq(gcn_rng_uniform(a, GCN_RNG_INIT, x, 1000), GCN_OK);
    cr_assert_eq(gcn_rng_uniform(b, GCN_RNG_INIT, y, 1000), GCN_OK);
    cr_assert_eq(gcn_rng_uniform(c, GCN_RNG_INIT, z, 1000), GCN_OK);
    cr_assert_eq(gcn_rng_uniform(a, GCN_RNG_DROPOUT, w, 1000), GCN_OK);
    cr_assert_arr_eq(x, y, sizeof x);
    cr_assert_neq(memcmp(x, z, sizeof x), 0);
    cr_assert_neq(memcmp(x, w, sizeof x), 0);
    /* the stream moved on: a second draw differs from the first */
    cr_assert_eq(gcn_rng_uniform(b, GCN_RNG_INIT, y, 1000), GCN_OK);
    cr_assert_neq(memcmp(x, y, sizeof x), 0);
    /* restoring the offsets replays it */
    uint64_t off[GCN_RNG_N_STREAMS] = {0};
    gcn_rng_set_state(b, off);
    cr_assert_eq(gcn_rng_uniform(b, GCN_RNG_INIT, y, 1000), GCN_OK);
    cr_assert_arr_eq(x, y, sizeof x);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
    gcn_ctx_free(&c);
}

Test(rng, distributions)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    enum { N = 200000 };
    float *u = malloc(N * sizeof *u);
    cr_assert_eq(gcn_rng_uniform(ctx, GCN_RNG_DATA, u, N), GCN_OK);
    double mean = 0, var = 0;
    for (int i = 0; i < N; i++) {
        cr_assert(u[i] >= 0.0f && u[i] < 1.0f);
        mean += u[i] / N;
    }
    cr_assert(fabs(mean - 0.5) < 0.005, "uniform mean %g", mean);
    cr_assert_eq(gcn_rng_normal(ctx, GCN_RNG_DATA, u, N - 1), GCN_OK);
    mean = 0;
    for (int i = 0; i < N - 1; i++)
        mean += u[i] / (N - 1);
    for (int i = 0; i < N - 1; i++)
        var += (u[i] - mean) * (u[i] - mean) / (N - 2);
    cr_assert(fabs(mean) < 0.01 && fabs(var - 1.0) < 0.02, "normal mean %g var %g", mean, var);
    uint32_t *k = malloc(N * sizeof *k);
    int hist[7] = {0};
    cr_assert_eq(gcn_rng_below(ctx, GCN_RNG_SPLIT, 7, k, N), GCN_OK);
    for (int i = 0; i < N; i++) {
        cr_assert(k[i] < 7);
        hist[k[i]]++;
    }
    for (int b = 0; b < 7; b++)
        cr_assert(fabs(hist[b] - N / 7.0) < 5 * sqrt(N / 7.0), "bucket %d holds %d", b, hist[b]);
    free(k);
    free(u);
    gcn_ctx_free(&ctx);
}

static float *dropout_mask(uint64_t seed, float p, int64_t n)
{
    gcn_ctx *ctx = test_cpu_ctx(seed);
    float *ones = malloc((size_t)n * sizeof *ones);
    for (int64_t i = 0; i < n; i++)
        ones[i] = 1.0f;
    gcn_tensor *x = test_tensor(ctx, ones, n, 1), *y = NULL;
    cr_assert_eq(gcn_dropout(ctx, x, p, true, &y), GCN_OK);
    float *mask = test_read(ctx, y);
    gcn_tensor_free(&x);
    gcn_tensor_free(&y);
    gcn_ctx_free(&ctx);
    free(ones);
    return mask;
}

Test(rng, dropout_keeps_expected_fraction_and_is_reproducible)
{
    enum { N = 100003 };
    float *m1 = dropout_mask(11, 0.3f, N), *m2 = dropout_mask(11, 0.3f, N);
    float *m3 = dropout_mask(12, 0.3f, N);
    cr_assert_arr_eq(m1, m2, N * sizeof *m1);
    cr_assert_neq(memcmp(m1, m3, N * sizeof *m1), 0);
    int kept = 0;
    for (int i = 0; i < N; i++) {
        cr_assert(m1[i] == 0.0f || fabsf(m1[i] - 1.0f / 0.7f) < 1e-6f);
        kept += m1[i] != 0.0f;
    }
    double frac = (double)kept / N, sd = sqrt(0.7 * 0.3 / N);
    cr_assert(fabs(frac - 0.7) < 5 * sd, "kept %g of the elements", frac);
    free(m1);
    free(m2);
    free(m3);
}

/* The device copy of the dropout offset: draws start where the host's
 * offset says, the copy follows the host at each sync, and a replayed step
 * moves the host's offset as the device's moved. */
Test(rng, device_offset_follows_the_host)
{
    gcn_ctx *ctx = test_cpu_ctx(3);
    gcn_draw_offset o = gcn_rng_reserve_dropout(ctx, 10);
    cr_assert_not_null(o.base);
    cr_assert_eq(gcn_draw_first(o), 0);
    uint64_t moved = 0;
    cr_assert_eq(gcn_rng_sync_device(ctx, &moved), GCN_OK);
    cr_assert_eq(moved, 3, "10 words took 3 counters");
    cr_assert_eq(*o.base, 3);
    o = gcn_rng_reserve_dropout(ctx, 8);
    cr_assert_eq(o.rel, 0, "relative to the synced copy");
    cr_assert_eq(gcn_draw_first(o), 3);
    cr_assert_eq(gcn_rng_sync_device(ctx, &moved), GCN_OK);
    cr_assert_eq(moved, 2);
    cr_assert_eq(*o.base, 5);
    /* a replay of that step: the device adds 2 on its own, the host counts it */
    *ctx->rng_dev += moved;
    gcn_rng_count_replayed(ctx, moved);
    uint64_t off[GCN_RNG_N_STREAMS];
    gcn_rng_get_state(ctx, off);
    cr_assert_eq(off[GCN_RNG_DROPOUT], 7);
    cr_assert_eq(gcn_draw_first(gcn_rng_reserve_dropout(ctx, 4)), 7);
    /* restoring an earlier state (a checkpoint) keeps the sum exact */
    off[GCN_RNG_DROPOUT] = 1;
    gcn_rng_set_state(ctx, off);
    cr_assert_eq(gcn_draw_first(gcn_rng_reserve_dropout(ctx, 4)), 1);
    gcn_ctx_free(&ctx);
}

Test(rng, initialisers_respect_bounds)
{
    gcn_ctx *ctx = test_cpu_ctx(9);
    gcn_tensor *w = NULL;
    cr_assert_eq(gcn_tensor_create(ctx, &w, 300, 100), GCN_OK);
    cr_assert_eq(gcn_init_glorot_uniform(ctx, w, 300, 100, 1.0f), GCN_OK);
    float *h = test_read(ctx, w), b = sqrtf(6.0f / 400.0f), mx = 0;
    for (int i = 0; i < 30000; i++) {
        cr_assert(fabsf(h[i]) <= b);
        mx = fabsf(h[i]) > mx ? fabsf(h[i]) : mx;
    }
    cr_assert(mx > 0.99f * b, "Glorot draws should fill their range");
    free(h);
    cr_assert_eq(gcn_init_kaiming_uniform(ctx, w, 300, sqrtf(5.0f)), GCN_OK);
    h = test_read(ctx, w);
    for (int i = 0; i < 30000; i++)
        cr_assert(fabsf(h[i]) <= 1.0f / sqrtf(300.0f) + 1e-7f);
    free(h);
    gcn_tensor_free(&w);
    gcn_ctx_free(&ctx);
}

/* Dropout then the fused epilogue's dropout and ReLU over x [rows, cols],
 * their sum's backward: the output and x's gradient, read back. */
static void drop_twice(gcn_ctx *ctx, const float *x, int64_t rows, int64_t cols, float **y,
                       float **dx)
{
    gcn_tensor *t = test_tensor(ctx, x, rows, cols), *a = NULL, *b = NULL, *s = NULL;
    gcn_epilogue e = {.act = GCN_ACT_RELU, .dropout = 0.5f};
    cr_assert_eq(gcn_tensor_set_requires_grad(t, true), GCN_OK);
    cr_assert_eq(gcn_dropout(ctx, t, 0.4f, true, &a), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_apply_epilogue(ctx, a, &e, true, &b), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_sum(ctx, b, &s), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, s), GCN_OK, "%s", gcn_last_error(ctx));
    *y = test_read(ctx, b);
    *dx = test_read(ctx, gcn_tensor_grad(t));
    gcn_tape_clear(ctx);
    gcn_tensor_free(&t);
    gcn_tensor_free(&a);
    gcn_tensor_free(&b);
    gcn_tensor_free(&s);
}

/* With the context's node ids set, a reordered tensor's masks are the
 * original order's, row by row and bit for bit, for widths that are and
 * are not multiples of 4 (rows that do and do not start on a counter); a
 * context holding some of the nodes (one rank's) draws those rows of the
 * whole. */
Test(rng, node_ids_draw_each_row_by_its_node)
{
    enum { N = 37, LO = 10, LOCAL = 20 };
    int32_t order[N];
    for (int32_t i = 0; i < N; i++)
        order[i] = (i * 11 + 5) % N;
    const int64_t widths[] = {1, 7, 8, 13};
    for (size_t k = 0; k < sizeof widths / sizeof *widths; k++) {
        int64_t c = widths[k];
        uint64_t state = 40 + (uint64_t)c;
        float *x = malloc(N * c * sizeof *x), *xp = malloc(N * c * sizeof *xp);
        test_fill_uniform(&state, x, N * c, -1.0f, 1.0f);
        for (int32_t i = 0; i < N; i++)
            memcpy(xp + i * c, x + order[i] * c, c * sizeof *x);
        gcn_ctx *plain = test_cpu_ctx(7), *moved = test_cpu_ctx(7), *part = test_cpu_ctx(7);
        cr_assert_eq(gcn_ctx_set_node_ids(moved, order, N, N), GCN_OK);
        cr_assert_eq(gcn_ctx_set_node_ids(part, order + LO, LOCAL, N), GCN_OK);
        float *y, *dx, *yp, *dxp, *ys, *dxs;
        drop_twice(plain, x, N, c, &y, &dx);
        drop_twice(moved, xp, N, c, &yp, &dxp);
        drop_twice(part, xp + LO * c, LOCAL, c, &ys, &dxs);
        for (int32_t i = 0; i < N; i++) {
            size_t bytes = (size_t)c * sizeof *y;
            cr_assert_eq(memcmp(yp + i * c, y + order[i] * c, bytes), 0, "width %lld row %d",
                         (long long)c, i);
            cr_assert_eq(memcmp(dxp + i * c, dx + order[i] * c, bytes), 0, "gradient row %d", i);
            if (i >= LO && i < LO + LOCAL) {
                cr_assert_eq(memcmp(ys + (i - LO) * c, yp + i * c, bytes), 0, "rank row %d", i);
                cr_assert_eq(memcmp(dxs + (i - LO) * c, dxp + i * c, bytes), 0);
            }
        }
        int32_t kept = 0;
        for (int64_t i = 0; i < N * c; i++)
            kept += y[i] != 0.0f;
        cr_assert(kept > 0 && kept < N * c, "width %lld: %d of %lld kept", (long long)c, kept,
                  (long long)(N * c));
        free(x);
        free(xp);
        free(y);
        free(dx);
        free(yp);
        free(dxp);
        free(ys);
        free(dxs);
        gcn_ctx_free(&plain);
        gcn_ctx_free(&moved);
        gcn_ctx_free(&part);
    }
}

/* Ids outside the graph, and new ids while the tape holds operations
 * that draw by the present ones, are refused. */
Test(rng, node_ids_are_checked)
{
    gcn_ctx *ctx = test_cpu_ctx(7);
    int32_t ids[3] = {0, 2, 3};
    cr_assert_eq(gcn_ctx_set_node_ids(ctx, ids, 3, 3), GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "ids[2] = 3"), "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_ctx_set_node_ids(ctx, ids, 3, 4), GCN_OK);
    float h[3] = {1, 2, 3};
    gcn_tensor *t = test_tensor(ctx, h, 3, 1), *y = NULL;
    cr_assert_eq(gcn_tensor_set_requires_grad(t, true), GCN_OK);
    cr_assert_eq(gcn_dropout(ctx, t, 0.5f, true, &y), GCN_OK);
    cr_assert_eq(gcn_ctx_set_node_ids(ctx, NULL, 0, 0), GCN_ERR_STATE);
    gcn_tape_clear(ctx);
    cr_assert_eq(gcn_ctx_set_node_ids(ctx, NULL, 0, 0), GCN_OK);
    gcn_tensor_free(&t);
    gcn_tensor_free(&y);
    gcn_ctx_free(&ctx);
}
