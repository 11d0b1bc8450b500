/* Host planning shared by the CUDA SpMM kernels: tuning knobs from the
 * environment, feature-tile layouts, and rowsplit's lane groups, automatic
 * tile and long-row chunks (see plan.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

int gcn_spmm_knob(const char *name, int def, int lo, int hi)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return def;
    return (int)v;
}

int gcn_feat_vec(int feat, int max_vec)
{
    for (int v = 4; v > 1; v /= 2)
        if (v <= max_vec && feat % v == 0)
            return v;
    return 1;
}

gcn_feat_layout gcn_feat_layout_make(int feat, int vec, int tile)
{
    gcn_feat_layout l;
    l.feat = feat;
    l.vec = vec;
    if (tile <= 0 || tile > feat)
        tile = feat;
    tile -= tile % vec;
    l.tile = tile < vec ? vec : tile;
    l.n_tiles = (feat + l.tile - 1) / l.tile;
    l.vecs = l.tile / vec;
    return l;
}

static int pow2_ceil(int x)
{
    int p = 1;
    while (p < x)
        p *= 2;
    return p;
}

/* The SMs a rule counts with: sms, or 1 when the count is unknown (0). */
static int64_t sm_count(int sms)
{
    return sms > 0 ? sms : 1;
}

int gcn_rowsplit_auto_chunk(int64_t nnz, int sms)
{
    int64_t per_warp = nnz / (sm_count(sms) * GCN_ROWSPLIT_CHUNK_WARPS);
    int chunk = GCN_ROWSPLIT_CHUNK_MIN;
    while (chunk < GCN_ROWSPLIT_CHUNK_MAX && 2 * (int64_t)chunk <= per_warp)
        chunk *= 2;
    return chunk;
}

gcn_rowsplit_shape gcn_rowsplit_shape_for(int vecs)
{
    gcn_rowsplit_shape s;
    s.group = vecs >= 32 ? 32 : pow2_ceil(vecs);
    s.per_lane = pow2_ceil((vecs + s.group - 1) / s.group);
    s.split = 1;
    return s;
}

gcn_rowsplit_shape gcn_rowsplit_shape_narrow(gcn_rowsplit_shape s, int vec, int narrow)
{
    for (; narrow > 1 && s.group > 1 && s.per_lane < 4 &&
           2 * s.per_lane * vec <= GCN_ROWSPLIT_MAX_FLOATS;
         narrow /= 2) {
        s.group /= 2;
        s.per_lane *= 2;
    }
    return s;
}

int gcn_rowsplit_auto_narrow(gcn_rowsplit_shape s, int tile_floats, int64_t n_rows,
                             double nnz_per_row, int sms)
{
    if (tile_floats >= 64) {
        double limit = s.group == 32 && s.per_lane == 1 ? GCN_ROWSPLIT_NARROW_ROW_WIDE
                                                        : GCN_ROWSPLIT_NARROW_ROW;
        return nnz_per_row < limit ? 2 : 1;
    }
    if (nnz_per_row >= GCN_ROWSPLIT_NARROW_ROW || s.group < 2)
        return 1;
    int64_t warps = n_rows / (64 / s.group); /* two rows a group's worth */
    return warps >= sm_count(sms) * GCN_ROWSPLIT_NARROW_WARPS ? 2 : 1;
}

int gcn_rowsplit_auto_min_blocks(gcn_rowsplit_shape s, int64_t warps, int sms)
{
    bool deep = s.group == 8 && warps >= sm_count(sms) * GCN_ROWSPLIT_DEEP_WARPS;
    return s.group >= 16 || deep ? GCN_ROWSPLIT_BLOCKS_MANY : GCN_ROWSPLIT_BLOCKS_FEW;
}

int gcn_rowsplit_auto_split(gcn_rowsplit_shape s, int64_t n_rows, double nnz_per_row, int sms)
{
    if (s.per_lane != 1 || s.group >= 32 || s.split != 1 ||
        nnz_per_row < GCN_ROWSPLIT_SPLIT_ROW)
        return 1;
    int64_t warps = n_rows / (32 / s.group);
    return warps < sm_count(sms) * GCN_ROWSPLIT_FULL_WARPS ? 2 : 1;
}

int gcn_rowsplit_widest_tile(int vec)
{
    int floats = GCN_ROWSPLIT_MAX_PER_LANE * vec;
    return 32 * (floats < GCN_ROWSPLIT_MAX_FLOATS ? floats : GCN_ROWSPLIT_MAX_FLOATS);
}

int gcn_rowsplit_auto_tile(int feat, int vec, int64_t n_cols, double nnz_per_row,
                           size_t l2_budget, bool banded)
{
    int widest = gcn_rowsplit_widest_tile(vec);
    int tile = feat < widest ? feat : widest;
    if (banded)
        return tile;
    if ((double)n_cols * (double)tile * sizeof(float) <= (double)l2_budget) {
        int cap = nnz_per_row >= GCN_ROWSPLIT_DENSE_ROW ? GCN_ROWSPLIT_L1_TILE
                                                        : 2 * GCN_ROWSPLIT_L1_TILE;
        return tile > cap && cap % vec == 0 ? cap : tile;
    }
    for (int t = 1024; t >= 32; t /= 2)
        if (t < tile && t % vec == 0 && (double)n_cols * t * sizeof(float) <= (double)l2_budget)
            return t;
    return tile;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

bool gcn_spmm_banded(const int32_t *row_ptr, int32_t n_rows, int32_t n_cols, int64_t stride,
                     const int32_t *cols, int n_samples)
{
    if (n_samples <= 0)
        return false;
    int64_t *dist = malloc((size_t)n_samples * sizeof *dist);
    if (!dist)
        return false;
    int32_t row = 0;
    for (int k = 0; k < n_samples; k++) {
        int64_t e = k * stride;
        while (row < n_rows - 1 && row_ptr[row + 1] <= e)
            row++;
        dist[k] = cols[k] > row ? (int64_t)cols[k] - row : (int64_t)row - cols[k];
    }
    qsort(dist, (size_t)n_samples, sizeof *dist, cmp_i64);
    bool banded = dist[n_samples / 2] * 64 <= n_cols;
    free(dist);
    return banded;
}

void gcn_rowsplit_chunks_free(gcn_rowsplit_chunks *c)
{
    free(c->chunk);
    free(c->long_info);
    memset(c, 0, sizeof *c);
}

gcn_status gcn_rowsplit_chunks_build(gcn_ctx *ctx, const int32_t *row_ptr, int32_t n_rows,
                                     int32_t chunk, gcn_rowsplit_chunks *out)
{
    memset(out, 0, sizeof *out);
    if (chunk < 1)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "rowsplit: chunk size %d < 1", chunk);
    int64_t n_chunks = 0, n_long = 0;
    for (int32_t i = 0; i < n_rows; i++) {
        int32_t d = row_ptr[i + 1] - row_ptr[i];
        if (d > chunk) {
            n_long++;
            n_chunks += (d + chunk - 1) / chunk;
        }
    }
    out->chunk = malloc((size_t)(n_chunks > 0 ? n_chunks : 1) * 4 * sizeof(int32_t));
    out->long_info = malloc((size_t)(n_long > 0 ? n_long : 1) * 2 * sizeof(int32_t));
    if (!out->chunk || !out->long_info)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "rowsplit: out of host memory for %lld chunks",
                         (long long)n_chunks);
    int32_t c = 0, l = 0;
    for (int32_t i = 0; i < n_rows; i++) {
        int32_t b = row_ptr[i], e = row_ptr[i + 1];
        if (e - b <= chunk)
            continue;
        out->long_info[2 * l] = c;
        out->long_info[2 * l + 1] = (e - b + chunk - 1) / chunk;
        for (int32_t s = b; s < e; s += chunk, c++) {
            int32_t *q = out->chunk + 4 * (int64_t)c;
            q[0] = i;
            q[1] = s;
            q[2] = e - s > chunk ? s + chunk : e;
            q[3] = l;
        }
        l++;
    }
    out->n_chunks = c;
    out->n_long = l;
    return GCN_OK;
}

/* Degrees above this share the last bucket of the window sort. */
#define ORDER_BUCKETS 1024

gcn_status gcn_rowsplit_order(gcn_ctx *ctx, const int32_t *row_ptr, int32_t n_rows, int32_t chunk,
                              int32_t window, const int32_t *visit, int32_t *perm,
                              int32_t *n_short)
{
    int32_t n = 0;
    for (int32_t k = 0; k < n_rows; k++) {
        int32_t i = visit ? visit[k] : k;
        if (row_ptr[i + 1] - row_ptr[i] <= chunk)
            perm[n++] = i;
    }
    *n_short = n;
    if (window <= 1)
        return GCN_OK;
    int32_t nb = chunk < ORDER_BUCKETS ? chunk + 1 : ORDER_BUCKETS;
    int32_t *count = malloc(((size_t)nb + 1) * sizeof *count);
    int32_t *tmp = malloc((size_t)(window < n ? window : n) * sizeof *tmp + 1);
    if (!count || !tmp) {
        free(count);
        free(tmp);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "rowsplit: out of host memory for the row order");
    }
    for (int32_t w0 = 0; w0 < n; w0 += window) {
        int32_t len = n - w0 < window ? n - w0 : window;
        memset(count, 0, ((size_t)nb + 1) * sizeof *count);
        for (int32_t k = 0; k < len; k++) {
            int32_t d = row_ptr[perm[w0 + k] + 1] - row_ptr[perm[w0 + k]];
            count[(d < nb - 1 ? d : nb - 1) + 1]++;
        }
        for (int32_t b = 0; b < nb; b++)
            count[b + 1] += count[b];
        for (int32_t k = 0; k < len; k++) {
            int32_t d = row_ptr[perm[w0 + k] + 1] - row_ptr[perm[w0 + k]];
            tmp[count[d < nb - 1 ? d : nb - 1]++] = perm[w0 + k];
        }
        memcpy(perm + w0, tmp, (size_t)len * sizeof *tmp);
    }
    free(count);
    free(tmp);
    return GCN_OK;
}
