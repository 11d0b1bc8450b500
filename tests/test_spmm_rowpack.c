/* rowpack's units (kernels/cuda/rowpack.c): a hand-computed case, coverage,
 * row-end masks and pieces over random degrees, the automatic unit size,
 * and bad unit sizes.  The kernel itself is checked on the GPU with every other
 * kernel (test_gpu_spmm_kernels.c). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "helpers.h"
#include "kernels/cuda/plan.h"

Test(spmm_rowpack, hand_computed_units)
{
    /* Degrees 3, 2, 0, 5, 40, 1, 1, 30, 100 with units of 32: rows 0-1 share
     * a unit, the empty row 2 has its own, row 3 cannot take row 4, which is
     * cut into two pieces of 20 (slots 0-1, long row 0), rows 5-7 fill 32
     * exactly, and row 8 is four pieces of 25 (slots 2-5, long row 1). */
    static const int32_t rp[] = {0, 3, 5, 5, 10, 50, 51, 52, 82, 182};
    static const int32_t unit[][4] = {
        {0, 2, 0, 5},      {2, 1, 5, 5},       {3, 1, 5, 10},      {4, -1, 10, 30},
        {4, -2, 30, 50},   {5, 3, 50, 82},     {8, -3, 82, 107},   {8, -4, 107, 132},
        {8, -5, 132, 157}, {8, -6, 157, 182}};
    static const uint64_t ends[] = {0x14, 0, 0x10, 0, 0, 0x80000003, 1, 1, 1, 1};
    static const int32_t long_info[] = {0, 2, 2, 4};
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_rowpack_units u;
    cr_assert_eq(gcn_rowpack_units_build(ctx, rp, 9, 32, &u), GCN_OK);
    cr_assert_eq(u.n_units, 10);
    cr_assert(u.n_long == 2 && u.n_pieces == 6);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(u.long_info[i], long_info[i]);
    for (int k = 0; k < 10; k++) {
        for (int i = 0; i < 4; i++)
            cr_assert_eq(u.unit[4 * k + i], unit[k][i], "unit %d field %d", k, i);
        cr_assert_eq(u.ends[2 * k], ends[k], "unit %d mask %#llx", k,
                     (unsigned long long)u.ends[2 * k]);
        cr_assert_eq(u.ends[2 * k + 1], 0, "unit %d: no bit past 63", k);
    }
    gcn_rowpack_units_free(&u);
    cr_assert_null(u.unit);
    gcn_ctx_free(&ctx);
}

/* Units of 96: degrees 60, 30 and 5 share one unit, their ends at non-zeros
 * 59, 89 and 94 (bits 25 and 30 of the second word); row 3 (2) does not fit. */
Test(spmm_rowpack, mask_past_64)
{
    static const int32_t rp[] = {0, 60, 90, 95, 97};
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_rowpack_units u;
    cr_assert_eq(gcn_rowpack_units_build(ctx, rp, 4, 96, &u), GCN_OK);
    cr_assert_eq(u.n_units, 2);
    cr_assert(u.unit[0] == 0 && u.unit[1] == 3 && u.unit[2] == 0 && u.unit[3] == 95);
    cr_assert_eq(u.ends[0], (uint64_t)1 << 59);
    cr_assert_eq(u.ends[1], ((uint64_t)1 << 25) | ((uint64_t)1 << 30));
    cr_assert(u.ends[2] == 2 && u.ends[3] == 0, "row 3 alone, ending at its second");
    gcn_rowpack_units_free(&u);
    gcn_ctx_free(&ctx);
}

/* The pieces of the long row starting at unit k: the fewest of at most cap,
 * equal to within one, covering the row in order. */
static int32_t check_pieces(const gcn_rowpack_units *u, const int32_t *rp, int32_t k, int cap)
{
    const int32_t *q = u->unit + 4 * (int64_t)k;
    int32_t row = q[0], lid = (int32_t)u->ends[2 * k], d = rp[row + 1] - rp[row];
    int32_t first = u->long_info[2 * lid], n = u->long_info[2 * lid + 1];
    cr_assert(d > cap && n == (d + cap - 1) / cap, "row %d: %d pieces", row, n);
    int32_t at = rp[row];
    for (int32_t j = 0; j < n; j++, q += 4) {
        cr_assert(q[0] == row && q[1] == -1 - (first + j) && q[2] == at, "row %d piece %d", row, j);
        cr_assert(q[3] - q[2] >= d / n && q[3] - q[2] <= cap, "row %d piece %d", row, j);
        cr_assert(u->ends[2 * (k + j)] == (uint64_t)lid && u->ends[2 * (k + j) + 1] == 0,
                  "row %d piece %d", row, j);
        at = q[3];
    }
    cr_assert_eq(at, rp[row + 1], "row %d not covered to its end", row);
    return n;
}

/* Every row is covered once in order: packed units hold at most cap
 * non-zeros and mark exactly the non-zeros that end a row, an empty row is
 * a unit alone, longer rows are pieces. */
static void check_cover(const int32_t *rp, int32_t n, int cap)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_rowpack_units u;
    cr_assert_eq(gcn_rowpack_units_build(ctx, rp, n, cap, &u), GCN_OK);
    int32_t next = 0, slots = 0;
    for (int32_t k = 0; k < u.n_units;) {
        const int32_t *q = u.unit + 4 * (int64_t)k;
        cr_assert_eq(q[0], next, "cap %d: unit %d starts at row %d", cap, k, q[0]);
        if (q[1] < 0) {
            cr_assert_eq(-1 - q[1], slots, "cap %d: unit %d", cap, k);
            int32_t pieces = check_pieces(&u, rp, k, cap);
            slots += pieces;
            k += pieces;
            next++;
            continue;
        }
        cr_assert(q[1] >= 1 && q[2] == rp[q[0]] && q[3] == rp[q[0] + q[1]]);
        cr_assert_leq(q[3] - q[2], cap);
        uint64_t want[2] = {0, 0};
        for (int32_t r = q[0]; r < q[0] + q[1]; r++) {
            cr_assert(rp[r + 1] > rp[r] || q[1] == 1, "cap %d: empty row %d in unit %d", cap, r, k);
            if (rp[r + 1] > rp[r]) {
                int32_t bit = rp[r + 1] - 1 - q[2];
                want[bit / 64] |= (uint64_t)1 << (bit % 64);
            }
        }
        cr_assert(u.ends[2 * k] == want[0] && u.ends[2 * k + 1] == want[1], "cap %d: unit %d",
                  cap, k);
        next = q[0] + q[1];
        k++;
    }
    cr_assert_eq(next, n, "cap %d: rows from %d in no unit", cap, next);
    cr_assert_eq(slots, u.n_pieces);
    gcn_rowpack_units_free(&u);
    gcn_ctx_free(&ctx);
}

Test(spmm_rowpack, units_cover_every_row_once)
{
    const int32_t n = 3000;
    int32_t *rp = malloc(((size_t)n + 1) * sizeof *rp);
    cr_assert_not_null(rp);
    uint64_t s = 7;
    rp[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        float f;
        test_fill_uniform(&s, &f, 1, 0, 1);
        /* Mostly short rows, some empty, some longer than a unit. */
        int32_t d = f < 0.1f    ? 0
                    : f < 0.9f  ? (int32_t)(f * 40.0f)
                    : f < 0.99f ? (int32_t)(f * 300.0f)
                                : 5000;
        rp[i + 1] = rp[i] + d;
    }
    for (int cap = 1; cap <= GCN_ROWPACK_MAX_UNIT; cap = cap < 32 ? cap * 2 : cap + 16)
        check_cover(rp, n, cap);
    check_cover(rp, 0, 32);
    free(rp);
}

Test(spmm_rowpack, auto_min_blocks)
{
    cr_assert_eq(gcn_rowpack_auto_min_blocks(32), GCN_ROWPACK_BLOCKS_MANY);
    for (int g = 4; g < 32; g *= 2)
        cr_assert_eq(gcn_rowpack_auto_min_blocks(g), GCN_ROWPACK_BLOCKS_FEW);
}

Test(spmm_rowpack, auto_unit)
{
    cr_assert_eq(gcn_rowpack_auto_unit(32, 14.7), 64);
    cr_assert_eq(gcn_rowpack_auto_unit(GCN_ROWPACK_WIDE_GROUP, 10.0), 64);
    cr_assert_eq(gcn_rowpack_auto_unit(32, 9.9), 32);
    cr_assert_eq(gcn_rowpack_auto_unit(8, 50.0), 32);
}

Test(spmm_rowpack, bad_unit_sizes_fail)
{
    static const int32_t rp[] = {0, 1};
    static const int sizes[] = {0, -1, GCN_ROWPACK_MAX_UNIT + 1};
    gcn_ctx *ctx = test_cpu_ctx(1);
    for (int i = 0; i < 3; i++) {
        gcn_rowpack_units u;
        cr_assert_eq(gcn_rowpack_units_build(ctx, rp, 1, sizes[i], &u), GCN_ERR_INVALID_ARG,
                     "unit %d", sizes[i]);
        gcn_rowpack_units_free(&u);
    }
    gcn_ctx_free(&ctx);
}
