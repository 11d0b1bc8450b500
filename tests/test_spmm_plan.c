/* The host planners of the CUDA SpMM kernels, without a GPU: tuning knobs,
 * feature layouts, rowsplit's long-row chunks, Accel-GCN's degree sort and
 * block partition (every non-zero in exactly one block, the paper's
 * patterns), and the merge-path split (against a step-by-step merge). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "kernels/cuda/plan.h"

/* A row_ptr with the given degrees (caller frees). */
static int32_t *row_ptr_of(const int32_t *deg, int32_t n)
{
    int32_t *rp = malloc(((size_t)n + 1) * sizeof *rp);
    cr_assert_not_null(rp);
    rp[0] = 0;
    for (int32_t i = 0; i < n; i++)
        rp[i + 1] = rp[i] + deg[i];
    return rp;
}

/* Degrees 0..max in a shuffled order, `copies` times each, plus some long
 * rows: every Accel-GCN pattern and both sides of every bound. */
static int32_t *mixed_degrees(int32_t max, int copies, int32_t *n)
{
    static const int32_t longs[] = {385, 768, 769, 1000, 5000};
    int32_t n_long = (int32_t)(sizeof longs / sizeof longs[0]);
    *n = (max + 1) * copies + n_long;
    int32_t *deg = malloc((size_t)*n * sizeof *deg);
    cr_assert_not_null(deg);
    for (int32_t i = 0; i < (max + 1) * copies; i++)
        deg[i] = i % (max + 1);
    for (int32_t i = 0; i < n_long; i++)
        deg[(max + 1) * copies + i] = longs[i];
    uint64_t s = 42;
    for (int32_t i = *n - 1; i > 0; i--) {
        float u;
        test_fill_uniform(&s, &u, 1, 0, 1);
        int32_t j = (int32_t)(u * (float)(i + 1)) % (i + 1), t = deg[i];
        deg[i] = deg[j];
        deg[j] = t;
    }
    return deg;
}

Test(spmm_plan, knobs_parse_or_default)
{
    unsetenv("GCN_TEST_KNOB");
    cr_assert_eq(gcn_spmm_knob("GCN_TEST_KNOB", 7, 1, 100), 7);
    setenv("GCN_TEST_KNOB", "42", 1);
    cr_assert_eq(gcn_spmm_knob("GCN_TEST_KNOB", 7, 1, 100), 42);
    setenv("GCN_TEST_KNOB", "420", 1);
    cr_assert_eq(gcn_spmm_knob("GCN_TEST_KNOB", 7, 1, 100), 7, "out of range");
    setenv("GCN_TEST_KNOB", "12x", 1);
    cr_assert_eq(gcn_spmm_knob("GCN_TEST_KNOB", 7, 1, 100), 7, "trailing junk");
    setenv("GCN_TEST_KNOB", "", 1);
    cr_assert_eq(gcn_spmm_knob("GCN_TEST_KNOB", 7, 1, 100), 7, "empty");
}

Test(spmm_plan, feature_layouts)
{
    cr_assert_eq(gcn_feat_vec(256, 4), 4);
    cr_assert_eq(gcn_feat_vec(250, 4), 2);
    cr_assert_eq(gcn_feat_vec(127, 4), 1);
    cr_assert_eq(gcn_feat_vec(256, 1), 1);
    cr_assert_eq(gcn_feat_vec(12, 2), 2);
    gcn_feat_layout l = gcn_feat_layout_make(250, 2, 0);
    cr_assert(l.tile == 250 && l.n_tiles == 1 && l.vecs == 125);
    l = gcn_feat_layout_make(250, 2, 65);
    cr_assert(l.tile == 64 && l.n_tiles == 4 && l.vecs == 32, "tile rounds down to the vector");
    l = gcn_feat_layout_make(3, 1, 1000);
    cr_assert(l.tile == 3 && l.n_tiles == 1);
    l = gcn_feat_layout_make(16, 4, 2);
    cr_assert(l.tile == 4 && l.n_tiles == 4, "at least one vector per tile");
}

Test(spmm_plan, rowsplit_shapes_cover_the_tile)
{
    for (int vecs = 1; vecs <= 256; vecs++) {
        gcn_rowsplit_shape s = gcn_rowsplit_shape_for(vecs);
        cr_assert(s.group >= 1 && s.group <= 32 && (s.group & (s.group - 1)) == 0);
        cr_assert(s.per_lane >= 1 && s.per_lane <= GCN_ROWSPLIT_MAX_PER_LANE);
        cr_assert_geq(s.group * s.per_lane, vecs, "vecs %d uncovered", vecs);
        cr_assert(s.per_lane == 1 || s.group == 32, "several vectors a lane only in full warps");
        cr_assert(s.group == 32 || s.group >= vecs);
    }
    cr_assert_eq(gcn_rowsplit_shape_for(4).group, 4, "F = 16 as float4: 4 lanes, 8 rows a warp");
    cr_assert_eq(gcn_rowsplit_widest_tile(1), 256);
    cr_assert_eq(gcn_rowsplit_widest_tile(2), 512);
    cr_assert_eq(gcn_rowsplit_widest_tile(4), 512);
    for (int vec = 1; vec <= 4; vec *= 2) {
        int w = gcn_rowsplit_widest_tile(vec);
        gcn_rowsplit_shape s = gcn_rowsplit_shape_for(w / vec);
        cr_assert_leq(s.per_lane * vec, GCN_ROWSPLIT_MAX_FLOATS);
    }
}

Test(spmm_plan, rowsplit_auto_tile_fits_l2)
{
    size_t budget = 30u << 20;
    cr_assert_eq(gcn_rowsplit_auto_tile(16, 4, 169343, 14.7, budget, false), 16,
                 "X fits: one tile");
    int t = gcn_rowsplit_auto_tile(256, 4, 169343, 14.7, budget, false);
    cr_assert_eq(t, 32, "arxiv at F = 256: a 32-column slice fits in 30 MB");
    cr_assert_leq((double)169343 * t * 4, (double)budget);
    cr_assert_eq(gcn_rowsplit_auto_tile(256, 4, 169343, 14.7, budget, true), 256,
                 "banded: no slices");
    cr_assert_eq(gcn_rowsplit_auto_tile(1024, 4, 1000, 3.0, budget, true), 512,
                 "banded: the widest tile");
    cr_assert_eq(gcn_rowsplit_auto_tile(256, 4, 100000000, 14.7, budget, false), 256,
                 "nothing fits: no slicing");
    cr_assert_eq(gcn_rowsplit_auto_tile(96, 1, 169343, 14.7, budget, false), 32);
}

/* The chunk follows the non-zeros per warp of 16 warps an SM on 132 SMs
 * (2,112 warps): the sizes the H100 sweep measured. */
Test(spmm_plan, rowsplit_auto_chunk)
{
    cr_assert_eq(gcn_rowsplit_auto_chunk(13264, 132), 16, "cora: 6 a warp, the minimum");
    cr_assert_eq(gcn_rowsplit_auto_chunk(108365, 132), 32, "pubmed: 51 a warp");
    cr_assert_eq(gcn_rowsplit_auto_chunk(180507, 132), 64, "facebook: 85 a warp");
    cr_assert_eq(gcn_rowsplit_auto_chunk(2484941, 132), 128, "arxiv: the maximum");
    cr_assert_eq(gcn_rowsplit_auto_chunk(2112 * 64, 132), 64, "exactly 64 a warp");
    cr_assert_eq(gcn_rowsplit_auto_chunk(2112 * 64 - 1, 132), 32);
    cr_assert_eq(gcn_rowsplit_auto_chunk(0, 132), 16);
    cr_assert_eq(gcn_rowsplit_auto_chunk(1000000, 0), 128, "no SM count: one SM");
}

Test(spmm_plan, rowsplit_shape_narrow)
{
    static const struct {
        int vecs, vec, narrow, group, per_lane;
        const char *why;
    } cases[] = {
        {32, 4, 2, 16, 2, "128 columns: two rows a warp, 8 floats a lane"},
        {64, 4, 2, 16, 4, "256 columns: 16 floats a lane"},
        {64, 4, 4, 16, 4, "no more than 16 floats a lane"},
        {16, 4, 4, 4, 4, "64 columns narrowed 4 times"},
        {128, 1, 2, 32, 4, "4 vectors a lane at most"},
        {1, 4, 2, 1, 1, "a group of one lane stays"},
        {32, 4, 1, 32, 1, "1: unchanged"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gcn_rowsplit_shape s = gcn_rowsplit_shape_narrow(gcn_rowsplit_shape_for(cases[i].vecs),
                                                         cases[i].vec, cases[i].narrow);
        cr_assert(s.group == cases[i].group && s.per_lane == cases[i].per_lane && s.split == 1,
                  "%s: group %d, %d a lane", cases[i].why, s.group, s.per_lane);
    }
}

/* The rows' lengths (and, under 64 columns, the rows) where two rows a
 * warp measured faster on the H100 (132 SMs). */
Test(spmm_plan, rowsplit_auto_narrow)
{
    gcn_rowsplit_shape f16 = gcn_rowsplit_shape_for(4), f32 = gcn_rowsplit_shape_for(8),
                       f64 = gcn_rowsplit_shape_for(16), f128 = gcn_rowsplit_shape_for(32),
                       f256 = gcn_rowsplit_shape_for(64);
    cr_assert_eq(gcn_rowsplit_auto_narrow(f128, 128, 114599, 3.1, 132), 2, "a road network");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f128, 128, 2708, 4.9, 132), 2, "cora: any size");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f128, 128, 169343, 14.7, 132), 2, "arxiv, 128 columns");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f128, 128, 12008, 20.7, 132), 1, "CA-HepPh");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f256, 256, 169343, 14.7, 132), 1, "arxiv, 256 columns");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f256, 256, 334925, 6.0, 132), 2, "DD");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f64, 64, 65536, 7.0, 132), 2, "delaunay_n16");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f64, 64, 36692, 11.0, 132), 1, "email-Enron");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f64, 64, 1000, GCN_ROWSPLIT_NARROW_ROW, 132), 1,
                 "the limit itself is long");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f32, 32, 114599, 3.1, 132), 2,
                 "32 columns: 14,324 warps of 8 rows");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f16, 16, 334925, 6.0, 132), 2,
                 "16 columns: DD's 20,932 warps of 16 rows");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f16, 16, 114599, 3.1, 132), 2,
                 "16 columns: 7,162 warps, 54 an SM");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f16, 16, 65536, 7.0, 132), 1, "4,096 warps: too few");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f32, 32, 65536, 7.0, 132), 2, "8,192 warps");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f32, 32, 43466, 4.7, 132), 2, "PROTEINS_full");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f32, 32, 26475, 5.0, 132), 1, "as-caida: 25 an SM");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f32, 32, 8 * 132 * GCN_ROWSPLIT_NARROW_WARPS, 5.0, 132),
                 2, "exactly the warps of the limit: narrowed");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f32, 32, 19717, 5.5, 132), 1, "pubmed");
    cr_assert_eq(gcn_rowsplit_auto_narrow(f32, 32, 500000, 9.0, 132), 1, "long rows");
    cr_assert_eq(gcn_rowsplit_auto_narrow(gcn_rowsplit_shape_for(1), 1, 500000, 3.0, 132), 1,
                 "a group of one lane");
}

/* Two groups a row for long rows that leave SMs without warps (132 SMs:
 * fewer than 8,448 warps). */
Test(spmm_plan, rowsplit_auto_split)
{
    gcn_rowsplit_shape f16 = gcn_rowsplit_shape_for(4), f64 = gcn_rowsplit_shape_for(16),
                       f128 = gcn_rowsplit_shape_for(32);
    cr_assert_eq(gcn_rowsplit_auto_split(f16, 14755, 31.1, 132), 2, "ppi, 1,844 warps");
    cr_assert_eq(gcn_rowsplit_auto_split(f64, 14755, 31.1, 132), 2, "ppi, 7,378 warps");
    cr_assert_eq(gcn_rowsplit_auto_split(f64, 50515, 33.4, 132), 1, "artist, 25,258 warps");
    cr_assert_eq(gcn_rowsplit_auto_split(f16, 169343, 14.7, 132), 1, "arxiv fills the GPU");
    cr_assert_eq(gcn_rowsplit_auto_split(f16, 43471, 4.7, 132), 1, "short rows stay whole");
    cr_assert_eq(gcn_rowsplit_auto_split(f16, 1000, GCN_ROWSPLIT_SPLIT_ROW, 132), 2,
                 "the limit itself is long");
    cr_assert_eq(gcn_rowsplit_auto_split(f64, 2 * 132 * GCN_ROWSPLIT_FULL_WARPS, 40.0, 132), 1,
                 "exactly the warps of the limit: whole");
    cr_assert_eq(gcn_rowsplit_auto_split(f128, 1000, 40.0, 132), 1, "a whole warp a row");
    cr_assert_eq(gcn_rowsplit_auto_split(gcn_rowsplit_shape_narrow(f64, 4, 2), 1000, 40.0, 132),
                 1, "two vectors a lane");
    cr_assert_eq(gcn_rowsplit_auto_split(f16, 400, 40.0, 0), 2, "no SM count: one SM, 50 warps");
    cr_assert_eq(gcn_rowsplit_auto_split(f16, 1000, 40.0, 0), 1, "one SM, 125 warps");
}

/* Four resident blocks for 16- and 32-lane groups, and for 8-lane groups
 * with warps to fill them (132 SMs: 14,784 warps). */
Test(spmm_plan, rowsplit_auto_min_blocks)
{
    gcn_rowsplit_shape g8 = gcn_rowsplit_shape_for(8), g16 = gcn_rowsplit_shape_for(16),
                       g32 = gcn_rowsplit_shape_for(32), g4 = gcn_rowsplit_shape_for(4);
    gcn_rowsplit_shape g8x2 = gcn_rowsplit_shape_narrow(g16, 4, 2);
    cr_assert_eq(g8x2.group, 8);
    cr_assert_eq(gcn_rowsplit_auto_min_blocks(g16, 100, 132), GCN_ROWSPLIT_BLOCKS_MANY);
    cr_assert_eq(gcn_rowsplit_auto_min_blocks(g32, 100, 132), GCN_ROWSPLIT_BLOCKS_MANY);
    cr_assert_eq(gcn_rowsplit_auto_min_blocks(g8, 42336, 132), GCN_ROWSPLIT_BLOCKS_MANY,
                 "arxiv at 32 columns");
    cr_assert_eq(gcn_rowsplit_auto_min_blocks(g8x2, 16384, 132), GCN_ROWSPLIT_BLOCKS_MANY,
                 "delaunay_n16 at 64 columns, narrowed");
    cr_assert_eq(gcn_rowsplit_auto_min_blocks(g8, 12629, 132), GCN_ROWSPLIT_BLOCKS_FEW,
                 "artist at 32 columns: 96 an SM");
    cr_assert_eq(gcn_rowsplit_auto_min_blocks(g8, 132 * GCN_ROWSPLIT_DEEP_WARPS, 132),
                 GCN_ROWSPLIT_BLOCKS_MANY, "exactly the limit");
    cr_assert_eq(gcn_rowsplit_auto_min_blocks(g4, 1 << 20, 132), GCN_ROWSPLIT_BLOCKS_FEW,
                 "4-lane groups spill under 64 registers");
    cr_assert_eq(gcn_rowsplit_auto_min_blocks(g8, 200, 0), GCN_ROWSPLIT_BLOCKS_MANY,
                 "no SM count: one SM");
}

Test(spmm_plan, rowsplit_auto_tile_l1_reach)
{
    size_t budget = 30u << 20;
    cr_assert_eq(gcn_rowsplit_auto_tile(256, 4, 10312, 65.8, budget, false), 128,
                 "dense rows, X in L2: 128 columns");
    cr_assert_eq(gcn_rowsplit_auto_tile(512, 4, 10312, 65.8, budget, false), 128);
    cr_assert_eq(gcn_rowsplit_auto_tile(256, 4, 22687, 5.8, budget, false), 256,
                 "sparse rows, X in L2: 256 columns");
    cr_assert_eq(gcn_rowsplit_auto_tile(512, 4, 22687, 5.8, budget, false), 256);
    cr_assert_eq(gcn_rowsplit_auto_tile(1024, 4, 1000, 3.0, budget, false), 256);
    cr_assert_eq(gcn_rowsplit_auto_tile(128, 4, 10312, 65.8, budget, false), 128,
                 "F within the cap: one tile");
    cr_assert_eq(gcn_rowsplit_auto_tile(250, 2, 10312, 65.8, budget, false), 128);
    cr_assert_eq(gcn_rowsplit_auto_tile(250, 1, 10312, 65.8, budget, false), 128);
    cr_assert_eq(gcn_rowsplit_auto_tile(GCN_ROWSPLIT_L1_TILE + 1, 1, 10312,
                                        GCN_ROWSPLIT_DENSE_ROW, budget, false),
                 GCN_ROWSPLIT_L1_TILE, "the threshold counts as dense");
}

Test(spmm_plan, banded_matrices)
{
    enum { N = 10000 };
    int32_t *rp = malloc((N + 1) * sizeof *rp), *band = malloc(3 * N * sizeof *band);
    int32_t *spread = malloc(3 * N * sizeof *spread);
    rp[0] = 0;
    for (int32_t i = 0; i < N; i++) { /* a tridiagonal band, and the same degrees spread out */
        rp[i + 1] = rp[i] + 3;
        for (int k = 0; k < 3; k++) {
            band[3 * i + k] = (i + k - 1 + N) % N;
            spread[3 * i + k] = (int32_t)(((int64_t)i * 7919 + k * 3331) % N);
        }
    }
    cr_assert(gcn_spmm_banded(rp, N, N, 1, band, 3 * N));
    cr_assert_not(gcn_spmm_banded(rp, N, N, 1, spread, 3 * N));
    int32_t sample[100];
    for (int k = 0; k < 100; k++) /* every 300th non-zero */
        sample[k] = band[300 * k];
    cr_assert(gcn_spmm_banded(rp, N, N, 300, sample, 100));
    cr_assert_not(gcn_spmm_banded(rp, N, N, 1, band, 0), "no samples: not banded");
    free(rp);
    free(band);
    free(spread);
}

/* Windows of the visit order (natural, or every third row then the rest
 * backwards), sorted by degree, ties in visit order. */
Test(spmm_plan, rowsplit_order_sorts_windows)
{
    int32_t n, chunk = 100;
    int32_t *deg = mixed_degrees(150, 4, &n);
    int32_t *rp = row_ptr_of(deg, n), *perm = malloc((size_t)n * sizeof *perm), n_short;
    int32_t *visit = malloc((size_t)n * sizeof *visit), *rank = malloc((size_t)n * sizeof *rank);
    char *seen = calloc((size_t)n, 1);
    int32_t m = 0;
    for (int32_t i = 0; i < n; i += 3)
        visit[m++] = i;
    for (int32_t i = n - 1; i >= 0; i--)
        if (i % 3)
            visit[m++] = i;
    gcn_ctx *ctx = test_cpu_ctx(4);
    static const int32_t windows[] = {0, 1, 7, 64, 1 << 30};
    for (int v = 0; v < 2; v++)
        for (int w = 0; w < 5; w++) {
            const int32_t *vis = v ? visit : NULL;
            for (int32_t k = 0; k < n; k++)
                rank[vis ? vis[k] : k] = k;
            cr_assert_eq(gcn_rowsplit_order(ctx, rp, n, chunk, windows[w], vis, perm, &n_short),
                         GCN_OK);
            int32_t expect = 0;
            for (int32_t i = 0; i < n; i++)
                expect += deg[i] <= chunk;
            cr_assert_eq(n_short, expect);
            memset(seen, 0, (size_t)n);
            for (int32_t k = 0; k < n_short; k++) {
                cr_assert(deg[perm[k]] <= chunk && !seen[perm[k]], "window %d, row %d",
                          windows[w], perm[k]);
                seen[perm[k]] = 1;
                bool same_window = windows[w] > 1 && k % windows[w] != 0;
                if (k > 0 && same_window)
                    cr_assert(deg[perm[k - 1]] < deg[perm[k]] ||
                                  (deg[perm[k - 1]] == deg[perm[k]] &&
                                   rank[perm[k - 1]] < rank[perm[k]]),
                              "visit %d, window %d not sorted at %d", v, windows[w], k);
                if (k > 0 && windows[w] <= 1)
                    cr_assert_lt(rank[perm[k - 1]], rank[perm[k]], "visit %d: its order", v);
            }
        }
    gcn_ctx_free(&ctx);
    free(seen);
    free(rank);
    free(visit);
    free(perm);
    free(rp);
    free(deg);
}

Test(spmm_plan, rowsplit_chunks_cover_long_rows)
{
    int32_t n, chunk = 100;
    int32_t *deg = mixed_degrees(400, 2, &n);
    int32_t *rp = row_ptr_of(deg, n);
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_rowsplit_chunks c;
    cr_assert_eq(gcn_rowsplit_chunks_build(ctx, rp, n, chunk, &c), GCN_OK);
    int32_t expect_long = 0, expect_chunks = 0;
    for (int32_t i = 0; i < n; i++)
        if (deg[i] > chunk) {
            expect_long++;
            expect_chunks += (deg[i] + chunk - 1) / chunk;
        }
    cr_assert_eq(c.n_long, expect_long);
    cr_assert_eq(c.n_chunks, expect_chunks);
    for (int32_t l = 0; l < c.n_long; l++) {
        int32_t first = c.long_info[2 * l], count = c.long_info[2 * l + 1];
        int32_t row = c.chunk[4 * first];
        cr_assert_gt(deg[row], chunk);
        int32_t at = rp[row];
        for (int32_t k = first; k < first + count; k++) {
            const int32_t *q = c.chunk + 4 * k;
            cr_assert(q[0] == row && q[3] == l && q[1] == at, "chunk %d of row %d", k, row);
            cr_assert(q[2] > q[1] && q[2] - q[1] <= chunk);
            at = q[2];
        }
        cr_assert_eq(at, rp[row + 1], "row %d not covered to its end", row);
    }
    gcn_rowsplit_chunks_free(&c);
    cr_assert_null(c.chunk);
    cr_assert_eq(gcn_rowsplit_chunks_build(ctx, rp, n, 0, &c), GCN_ERR_INVALID_ARG);
    gcn_rowsplit_chunks_free(&c);
    gcn_ctx_free(&ctx);
    free(rp);
    free(deg);
}

Test(spmm_plan, accel_row_warps_match_the_paper)
{
    gcn_accel_params p = {12, 32};
    static const int32_t d[] = {1, 32, 33, 64, 65, 96, 97, 128, 129, 192, 193, 384};
    static const int32_t f[] = {1, 1, 2, 2, 3, 3, 4, 4, 6, 6, 12, 12};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        cr_assert_eq(gcn_accel_row_warps(&p, d[i]), f[i], "degree %d", d[i]);
    for (int32_t deg = 1; deg <= 384; deg++) {
        int fw = gcn_accel_row_warps(&p, deg);
        cr_assert(12 % fw == 0 && fw * 32 >= deg, "degree %d: %d warps", deg, fw);
        for (int g = 1; g < fw; g++)
            cr_assert(12 % g != 0 || g * 32 < deg, "degree %d: %d warps would do", deg, g);
    }
}

/* Checks one normal block's rows and marks its non-zeros. */
static void check_block(const gcn_accel_params *p, const int32_t *rp,
                        const gcn_accel_partition *part, const int32_t *m, char *seen)
{
    int32_t d = m[0], rows = m[3] & 0xffff, warp_nzs = m[3] >> 16;
    int32_t f = gcn_accel_row_warps(p, d);
    cr_assert_eq(warp_nzs, (d + f - 1) / f, "degree %d", d);
    cr_assert(rows >= 1 && rows <= p->block_warps / f, "degree %d: %d rows", d, rows);
    cr_assert_eq(m[2], part->rows[2 * m[1] + 1]);
    for (int32_t r = 0; r < rows; r++) {
        int32_t orig = part->rows[2 * (m[1] + r)];
        cr_assert_eq(rp[orig + 1] - rp[orig], d);
        for (int32_t e = rp[orig]; e < rp[orig + 1]; e++) {
            cr_assert_not(seen[e], "non-zero %d twice", e);
            seen[e] = 1;
        }
    }
}

Test(spmm_plan, accel_partition_covers_every_nonzero_once)
{
    gcn_accel_params p = {12, 32};
    int32_t n;
    int32_t *deg = mixed_degrees(400, 3, &n);
    int32_t *rp = row_ptr_of(deg, n);
    gcn_ctx *ctx = test_cpu_ctx(2);
    gcn_accel_partition part;
    cr_assert_eq(gcn_accel_partition_build(ctx, rp, n, &p, &part), GCN_OK);
    cr_assert_eq(part.n_zero, 3, "three empty rows");
    for (int32_t k = 0; k < n; k++) {
        int32_t orig = part.rows[2 * k], dk = rp[orig + 1] - rp[orig];
        cr_assert_eq(part.rows[2 * k + 1], rp[orig]);
        cr_assert_eq(dk > 384, k >= part.long_begin);
        if (k > 0) {
            int32_t prev = part.rows[2 * (k - 1)], dp = rp[prev + 1] - rp[prev];
            cr_assert(dp < dk || (dp == dk && prev < orig), "sort not stable at %d", k);
        }
    }
    char *seen = calloc((size_t)rp[n], 1);
    for (int32_t b = 0; b < part.n_blocks; b++) {
        const int32_t *m = part.meta + 4 * b;
        if (m[0] <= 384) {
            check_block(&p, rp, &part, m, seen);
            continue;
        }
        cr_assert(m[3] >= 1 && m[3] <= 384, "chunk of %d non-zeros", m[3]);
        for (int32_t e = m[2]; e < m[2] + m[3]; e++) {
            cr_assert_not(seen[e], "non-zero %d twice", e);
            seen[e] = 1;
        }
    }
    for (int32_t e = 0; e < rp[n]; e++)
        cr_assert(seen[e], "non-zero %d in no block", e);
    free(seen);
    gcn_accel_partition_free(&part);
    gcn_ctx_free(&ctx);
    free(rp);
    free(deg);
}

Test(spmm_plan, accel_blocks_are_full_within_a_degree)
{
    gcn_accel_params p = {12, 32};
    int32_t deg[40];
    for (int i = 0; i < 40; i++)
        deg[i] = i < 25 ? 5 : 40; /* 25 rows of degree 5 (12 a block), 15 of 40 (6 a block) */
    int32_t *rp = row_ptr_of(deg, 40);
    gcn_ctx *ctx = test_cpu_ctx(3);
    gcn_accel_partition part;
    cr_assert_eq(gcn_accel_partition_build(ctx, rp, 40, &p, &part), GCN_OK);
    static const int32_t rows[] = {12, 12, 1, 6, 6, 3};
    cr_assert_eq(part.n_blocks, 6);
    for (int b = 0; b < 6; b++) {
        cr_assert_eq(part.meta[4 * b + 3] & 0xffff, rows[b], "block %d", b);
        cr_assert_eq(part.meta[4 * b + 3] >> 16, b < 3 ? 5 : 20, "warp_nzs of block %d", b);
    }
    gcn_accel_partition_free(&part);
    p.block_warps = 0;
    cr_assert_eq(gcn_accel_partition_build(ctx, rp, 40, &p, &part), GCN_ERR_INVALID_ARG);
    gcn_accel_partition_free(&part);
    gcn_ctx_free(&ctx);
    free(rp);
}

Test(spmm_plan, accel_shapes)
{
    for (int vecs = 1; vecs <= 1024; vecs++) {
        gcn_accel_shape s = gcn_accel_shape_for(vecs, 12);
        cr_assert(s.width >= vecs && s.width % 32 == 0 && s.width < vecs + 32);
        cr_assert(12 % s.per_block == 0 && s.per_block * s.width <= 1024, "vecs %d", vecs);
    }
    cr_assert_eq(gcn_accel_shape_for(8, 12).per_block, 12, "the paper's 12 warps a block");
    cr_assert_eq(gcn_accel_shape_for(250, 12).per_block, 4, "F = 250 scalar: 4 x 256 threads");
    cr_assert_eq(gcn_accel_shape_for(125, 12).per_block, 6, "F = 250 as float2: 6 x 128");
    cr_assert_eq(gcn_accel_vec(16, 4), 1, "one warp either way: scalar lanes");
    cr_assert_eq(gcn_accel_vec(64, 4), 2);
    cr_assert_eq(gcn_accel_vec(96, 4), 4);
    cr_assert_eq(gcn_accel_vec(256, 4), 4);
    cr_assert_eq(gcn_accel_vec(250, 4), 2);
    cr_assert_eq(gcn_accel_vec(256, 1), 1);
    cr_assert_eq(gcn_accel_max_tile(256, 4, 12, 48 * 1024), 256);
    cr_assert_eq(gcn_accel_max_tile(8192, 4, 12, 48 * 1024), 2048, "six shared rows in 48 KB");
    cr_assert_eq(gcn_accel_max_tile(8192, 1, 12, 48 * 1024), 1024, "1024 threads");
}

Test(spmm_plan, mergepath_costs_from_the_paper)
{
    static const int f[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 1024};
    static const int c[] = {50, 50, 15, 15, 20, 30, 35, 50, 50, 50};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        cr_assert_eq(gcn_mergepath_default_cost(f[i]), c[i], "F = %d", f[i]);
    cr_assert_eq(gcn_mergepath_default_cost(3), 30, "log-linear between 50 and 15");
    cr_assert_eq(gcn_mergepath_default_cost(24), 26);
    cr_assert_eq(gcn_mergepath_default_cost(96), 44);
    cr_assert_eq(gcn_mergepath_cost(16, 1000000, 100, 0), 20, "enough workers already");
    cr_assert_eq(gcn_mergepath_cost(16, 1000, 100, 0), 10, "raised to 100 workers");
    cr_assert_eq(gcn_mergepath_cost(16, 10, 100, 0), 1);
    cr_assert_eq(gcn_mergepath_cost(16, 1000, 100, 7), 7, "the knob wins");
    cr_assert_eq(gcn_mergepath_lanes(3), 3);
    cr_assert_eq(gcn_mergepath_lanes(32), 32);
    cr_assert_eq(gcn_mergepath_lanes(33), 64);
    cr_assert_eq(gcn_mergepath_lanes(250), 256);
}

/* The merge walked item by item: where each diagonal lands. */
static void walk(const int32_t *rp, int32_t n, int32_t *row, int32_t *nz)
{
    int32_t i = 0, j = 0, d = 0;
    row[0] = nz[0] = 0;
    while (i < n || j < rp[n]) {
        if (i < n && j >= rp[i + 1])
            i++;
        else
            j++;
        d++;
        row[d] = i;
        nz[d] = j;
    }
}

Test(spmm_plan, merge_path_search_matches_a_walk)
{
    int32_t n;
    int32_t *deg = mixed_degrees(40, 3, &n);
    int32_t *rp = row_ptr_of(deg, n);
    int64_t items = (int64_t)n + rp[n];
    int32_t *row = malloc((size_t)(items + 1) * sizeof *row);
    int32_t *nz = malloc((size_t)(items + 1) * sizeof *nz);
    walk(rp, n, row, nz);
    cr_assert(row[items] == n && nz[items] == rp[n]);
    for (int64_t d = 0; d <= items; d++) {
        int32_t r, z;
        gcn_merge_path_search(d, rp, n, rp[n], &r, &z);
        cr_assert(r == row[d] && z == nz[d], "diagonal %lld: (%d, %d), walk (%d, %d)",
                  (long long)d, r, z, row[d], nz[d]);
        cr_assert(z >= rp[r] && (r == n || z <= rp[r + 1]));
    }
    int32_t empty_rp[4] = {0, 0, 0, 0}, r, z;
    gcn_merge_path_search(2, empty_rp, 3, 0, &r, &z);
    cr_assert(r == 2 && z == 0, "rows without non-zeros: only row ends");
    free(row);
    free(nz);
    free(rp);
    free(deg);
}
