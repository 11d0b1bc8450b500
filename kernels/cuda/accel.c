/* Accel-GCN planning on the host: the stable O(n) count sort of rows by
 * degree, the block partition with its int4 metadata, and the combined-warp
 * shape (see plan.h and docs/kernels.md). */
#include <stdlib.h>
#include <string.h>

#include "plan.h"

int gcn_accel_row_warps(const gcn_accel_params *p, int d)
{
    for (int f = 1; f < p->block_warps; f++)
        if (p->block_warps % f == 0 && (int64_t)f * p->warp_nzs >= d)
            return f;
    return p->block_warps;
}

void gcn_accel_partition_free(gcn_accel_partition *part)
{
    free(part->rows);
    free(part->meta);
    memset(part, 0, sizeof *part);
}

/* Stable counting sort of the rows by degree, O(n_rows + max degree):
 * rows[2k] = original row of sorted row k, rows[2k + 1] = its first
 * non-zero. */
static gcn_status sort_rows(gcn_ctx *ctx, const int32_t *row_ptr, int32_t n_rows, int32_t *rows)
{
    int32_t max_deg = 0;
    for (int32_t i = 0; i < n_rows; i++)
        if (row_ptr[i + 1] - row_ptr[i] > max_deg)
            max_deg = row_ptr[i + 1] - row_ptr[i];
    int64_t *start = calloc((size_t)max_deg + 2, sizeof *start);
    if (!start)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "accel: out of host memory for the degree sort");
    for (int32_t i = 0; i < n_rows; i++)
        start[row_ptr[i + 1] - row_ptr[i] + 1]++;
    for (int32_t d = 0; d <= max_deg; d++)
        start[d + 1] += start[d];
    for (int32_t i = 0; i < n_rows; i++) {
        int64_t k = start[row_ptr[i + 1] - row_ptr[i]]++;
        rows[2 * k] = i;
        rows[2 * k + 1] = row_ptr[i];
    }
    free(start);
    return GCN_OK;
}

/* Degree of sorted row k. */
static int32_t sorted_deg(const int32_t *row_ptr, const int32_t *rows, int64_t k)
{
    return row_ptr[rows[2 * k] + 1] - rows[2 * k + 1];
}

/* Number of blocks the partition will need. */
static int64_t count_blocks(const int32_t *row_ptr, const int32_t *rows, int32_t n_rows,
                            const gcn_accel_params *p)
{
    int32_t bound = p->block_warps * p->warp_nzs;
    int64_t n = 0;
    for (int32_t k = 0; k < n_rows;) {
        int32_t d = sorted_deg(row_ptr, rows, k);
        if (d == 0) {
            k++;
        } else if (d > bound) {
            n += (d + bound - 1) / bound;
            k++;
        } else {
            int32_t per = p->block_warps / gcn_accel_row_warps(p, d), j = 0;
            while (k < n_rows && j < per && sorted_deg(row_ptr, rows, k) == d) {
                k++;
                j++;
            }
            n++;
        }
    }
    return n;
}

static void emit_blocks(const int32_t *row_ptr, gcn_accel_partition *part,
                        const gcn_accel_params *p)
{
    int32_t bound = p->block_warps * p->warp_nzs, b = 0;
    const int32_t *rows = part->rows;
    for (int32_t k = 0; k < part->n_rows;) {
        int32_t first = rows[2 * k + 1], d = sorted_deg(row_ptr, rows, k);
        int32_t *m = part->meta + 4 * (int64_t)b;
        if (d == 0) {
            k++;
            continue;
        }
        if (d > bound) {
            for (int32_t s = 0; s < d; s += bound, m += 4, b++) {
                m[0] = d;
                m[1] = k;
                m[2] = first + s;
                m[3] = d - s < bound ? d - s : bound;
            }
            k++;
            continue;
        }
        int32_t f = gcn_accel_row_warps(p, d), per = p->block_warps / f, j = 0;
        int32_t warp_nzs = (d + f - 1) / f;
        int32_t k0 = k;
        while (k < part->n_rows && j < per && sorted_deg(row_ptr, rows, k) == d) {
            k++;
            j++;
        }
        m[0] = d;
        m[1] = k0;
        m[2] = first;
        m[3] = warp_nzs << 16 | j;
        b++;
    }
}

gcn_status gcn_accel_partition_build(gcn_ctx *ctx, const int32_t *row_ptr, int32_t n_rows,
                                     const gcn_accel_params *p, gcn_accel_partition *out)
{
    memset(out, 0, sizeof *out);
    int64_t bound = (int64_t)p->block_warps * p->warp_nzs;
    if (p->block_warps < 1 || p->block_warps > 32 || p->warp_nzs < 1 || bound > 32767)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "accel: max_block_warps %d must be in [1, 32] and max_warp_nzs %d such "
                         "that their product is in [1, 32767]",
                         p->block_warps, p->warp_nzs);
    out->n_rows = n_rows;
    out->rows = malloc((size_t)(n_rows > 0 ? n_rows : 1) * 2 * sizeof(int32_t));
    if (!out->rows)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "accel: out of host memory for %d rows", n_rows);
    GCN_TRY(sort_rows(ctx, row_ptr, n_rows, out->rows));
    int32_t k = 0;
    while (k < n_rows && sorted_deg(row_ptr, out->rows, k) == 0)
        k++;
    out->n_zero = k;
    out->long_begin = n_rows;
    while (out->long_begin > 0 && sorted_deg(row_ptr, out->rows, out->long_begin - 1) > bound)
        out->long_begin--;
    int64_t n_blocks = count_blocks(row_ptr, out->rows, n_rows, p);
    if (n_blocks > INT32_MAX)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "accel: %lld blocks exceed the grid",
                         (long long)n_blocks);
    out->n_blocks = (int32_t)n_blocks;
    out->meta = malloc((size_t)(n_blocks > 0 ? n_blocks : 1) * 4 * sizeof(int32_t));
    if (!out->meta)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "accel: out of host memory for %lld blocks",
                         (long long)n_blocks);
    emit_blocks(row_ptr, out, p);
    return GCN_OK;
}

gcn_accel_shape gcn_accel_shape_for(int vecs, int block_warps)
{
    gcn_accel_shape s;
    s.width = 32 * ((vecs + 31) / 32);
    s.per_block = 1;
    for (int c = block_warps; c >= 1; c--)
        if (block_warps % c == 0 && c * s.width <= 1024) {
            s.per_block = c;
            break;
        }
    return s;
}

int gcn_accel_max_tile(int feat, int vec, int block_warps, size_t smem_bytes)
{
    int shared_rows = block_warps / 2 > 1 ? block_warps / 2 : 1;
    int64_t by_smem = (int64_t)(smem_bytes / sizeof(float)) / shared_rows;
    int64_t tile = 1024 * (int64_t)vec;
    if (by_smem < tile)
        tile = by_smem - by_smem % vec;
    if (tile < vec)
        tile = vec;
    return tile < feat ? (int)tile : feat;
}

int gcn_accel_vec(int feat, int max_vec)
{
    int best = 1;
    for (int v = 2; v <= 4 && v <= max_vec; v *= 2)
        if (feat % v == 0 && (feat + 32 * v - 1) / (32 * v) < (feat + 32 * best - 1) / (32 * best))
            best = v;
    return best;
}
