/* rowpack planning on the host: rows in order as units of packed short
 * rows, empty rows and pieces of long rows (plan.h).  The kernel and
 * the plan's upload are in rowpack.cu; docs/kernels.md. */
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#define UNIT_WIDE_ROWS 10 /* mean non-zeros a row from which units hold 64 */

int gcn_rowpack_auto_unit(int group, double per_row)
{
    return group >= GCN_ROWPACK_WIDE_GROUP && per_row >= UNIT_WIDE_ROWS ? 64 : 32;
}

int gcn_rowpack_auto_min_blocks(int group)
{
    return group >= 32 ? GCN_ROWPACK_BLOCKS_MANY : GCN_ROWPACK_BLOCKS_FEW;
}

static void put_unit(gcn_rowpack_units *u, int32_t row, int32_t rows, int32_t b, int32_t e,
                     uint64_t lo, uint64_t hi)
{
    int64_t k = u->n_units++;
    int32_t *q = u->unit + 4 * k;
    q[0] = row;
    q[1] = rows;
    q[2] = b;
    q[3] = e;
    u->ends[2 * k] = lo;
    u->ends[2 * k + 1] = hi;
}

/* Rows [r0, r1) as one unit, with the mask of where they end. */
static void put_packed(gcn_rowpack_units *u, const int32_t *row_ptr, int32_t r0, int32_t r1)
{
    uint64_t ends[2] = {0, 0};
    for (int32_t r = r0; r < r1; r++) {
        int32_t bit = row_ptr[r + 1] - 1 - row_ptr[r0];
        ends[bit / 64] |= (uint64_t)1 << (bit % 64);
    }
    put_unit(u, r0, r1 - r0, row_ptr[r0], row_ptr[r1], ends[0], ends[1]);
}

/* Row r's equal pieces of at most cap, their scratch slots next in line. */
static void put_pieces(gcn_rowpack_units *u, const int32_t *row_ptr, int32_t r, int cap)
{
    int32_t b = row_ptr[r], d = row_ptr[r + 1] - b, n = (d + cap - 1) / cap;
    u->long_info[2 * u->n_long] = u->n_pieces;
    u->long_info[2 * u->n_long + 1] = n;
    for (int32_t k = 0; k < n; k++)
        put_unit(u, r, -1 - u->n_pieces++, b + (int32_t)((int64_t)d * k / n),
                 b + (int32_t)((int64_t)d * (k + 1) / n), (uint64_t)u->n_long, 0);
    u->n_long++;
}

gcn_status gcn_rowpack_units_build(gcn_ctx *ctx, const int32_t *row_ptr, int32_t n_rows, int cap,
                                   gcn_rowpack_units *out)
{
    memset(out, 0, sizeof *out);
    if (cap < 1 || cap > GCN_ROWPACK_MAX_UNIT)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "rowpack: unit of %d non-zeros outside [1, %d]",
                         cap, GCN_ROWPACK_MAX_UNIT);
    int64_t n_units = 0, n_long = 0;
    for (int32_t r = 0; r < n_rows; r++) {
        int32_t d = row_ptr[r + 1] - row_ptr[r];
        n_units += d > cap ? (d + cap - 1) / cap : 1;
        n_long += d > cap;
    }
    out->unit = malloc((size_t)(n_units > 0 ? n_units : 1) * 4 * sizeof(int32_t));
    out->ends = malloc((size_t)(n_units > 0 ? n_units : 1) * 2 * sizeof(uint64_t));
    out->long_info = malloc((size_t)(n_long > 0 ? n_long : 1) * 2 * sizeof(int32_t));
    if (!out->unit || !out->ends || !out->long_info)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "rowpack: out of host memory for %lld units",
                         (long long)n_units);
    int32_t r = 0;
    while (r < n_rows) {
        int32_t b = row_ptr[r], d = row_ptr[r + 1] - b, r1 = r + 1;
        if (d > cap) {
            put_pieces(out, row_ptr, r, cap);
        } else if (d == 0) {
            put_unit(out, r, 1, b, b, 0, 0);
        } else {
            while (r1 < n_rows && row_ptr[r1 + 1] > row_ptr[r1] && row_ptr[r1 + 1] - b <= cap)
                r1++;
            put_packed(out, row_ptr, r, r1);
        }
        r = r1;
    }
    return GCN_OK;
}

void gcn_rowpack_units_free(gcn_rowpack_units *u)
{
    free(u->unit);
    free(u->ends);
    free(u->long_info);
    memset(u, 0, sizeof *u);
}
