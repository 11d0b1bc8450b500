/* Parsing steps shared by the loaders: count files, node-id lists and
 * splits, line counts, dense float rows, renumbering of sparse node ids,
 * and building the graph from the edges read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Count files and node-id lists: one number a line, blank lines skipped. */
static const gcn_record_fmt one_number = {.sep = ',', .min_fields = 1, .max_fields = 1};

typedef struct count_file {
    int64_t max, *count;
    bool found;
} count_file;

static gcn_status count_record(gcn_reader *r, char **f, void *user)
{
    count_file *c = user;
    if (!f)
        return c->found ? GCN_OK
                        : gcn_reader_fail(r, GCN_ERR_FORMAT, "empty file, expected a count");
    if (c->found)
        return gcn_reader_fail(r, GCN_ERR_FORMAT,
                               "expected a single count (one graph), found a second line");
    c->found = true;
    return gcn_reader_int(r, f[0], 1, 0, c->max, "count", c->count);
}

gcn_status gcn_read_count(gcn_ctx *ctx, const char *path, int64_t max, int64_t *count)
{
    count_file c = {max, count, false};
    return gcn_read_records(ctx, path, &one_number, count_record, &c);
}

gcn_status gcn_reader_check_count(gcn_reader *r, char **f, int64_t n, int64_t count,
                                  const char *what, const char *source)
{
    if (f && n >= count)
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "more %s than the %lld of %s", what,
                               (long long)count, source);
    if (!f && n == 0 && count > 0)
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "empty file: 0 %s, %s says %lld", what,
                               source, (long long)count);
    if (!f && n != count)
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "%lld %s, but %s says %lld", (long long)n,
                               what, source, (long long)count);
    return GCN_OK;
}

gcn_status gcn_ds_check_dense(gcn_ctx *ctx, const char *where, int64_t n, int64_t d)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double gib = (double)n * (double)d * sizeof(float) / (double)(1 << 30);
    double have = pages > 0 && page > 0 ? (double)pages * (double)page / (double)(1 << 30) : 0;
    if (d > GCN_DS_MAX_FEATURES)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "%s: %lld feature columns, more than the "
                         "%lld supported", where, (long long)d, (long long)GCN_DS_MAX_FEATURES);
    if (n * d > GCN_DS_MAX_FEATURE_VALUES || (have > 0 && gib > have))
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "%s: %lld x %lld features (%.1f GiB): more "
                         "than this machine's %.1f GiB of memory", where, (long long)n,
                         (long long)d, gib, have);
    return GCN_OK;
}

/* Values a dense matrix may have before its size is checked against its
 * file (16 MiB of floats). */
#define DENSE_TRUSTED_VALUES ((uint64_t)1 << 22)

/* One line a row, blank lines included (a blank row is an error). */
static const gcn_record_fmt dense_fmt = {
    .sep = ',', .min_fields = 1, .max_fields = GCN_DS_MAX_FEATURES, .blank_records = true};

typedef struct dense_file {
    int64_t n_rows, row;
    const char *source;
    float *x;
    int width; /* of the first line; 0 before it */
} dense_file;

static gcn_status dense_record(gcn_reader *r, char **f, void *user)
{
    dense_file *d = user;
    GCN_TRY(gcn_reader_check_count(r, f, d->row, d->n_rows, "rows", d->source));
    if (!f)
        return GCN_OK;
    if (d->width == 0) {
        r->fmt.min_fields = r->fmt.max_fields = d->width = r->n_fields;
        /* A large matrix is allocated only when the file can hold it: each
         * value takes a character and a separator or line end.  (A small one
         * is, and the rows are counted as they come.) */
        uint64_t values = (uint64_t)d->width * (uint64_t)d->n_rows;
        if (values > DENSE_TRUSTED_VALUES && values > (gcn_reader_max_bytes(r) + 1) / 2)
            return gcn_reader_fail(r, GCN_ERR_FORMAT,
                                   "%lld rows of %d values (%s) are more than this file of "
                                   "%llu bytes can hold", (long long)d->n_rows, d->width,
                                   d->source, (unsigned long long)r->file_bytes);
        char where[4200];
        snprintf(where, sizeof where, "%s:%ld", r->path, r->line_no);
        GCN_TRY(gcn_ds_check_dense(r->ctx, where, d->n_rows, d->width));
        GCN_TRY(gcn_ds_malloc(r->ctx, (void **)&d->x, (size_t)d->n_rows * (size_t)d->width,
                              sizeof(float)));
    }
    float *out = d->x + d->row++ * d->width;
    for (int k = 0; k < d->width; k++)
        GCN_TRY(gcn_reader_float(r, f[k], k + 1, &out[k]));
    return GCN_OK;
}

gcn_status gcn_read_dense_rows(gcn_ctx *ctx, const char *path, int64_t n_rows,
                               const char *source, float **x, int32_t *width)
{
    dense_file d = {n_rows, 0, source, NULL, 0};
    gcn_status st = gcn_read_records(ctx, path, &dense_fmt, dense_record, &d);
    if (st != GCN_OK) {
        free(d.x);
        return st;
    }
    *x = d.x;
    *width = d.width;
    return GCN_OK;
}

typedef struct id_list {
    int32_t n_nodes;
    uint8_t *seen; /* [n_nodes]: the tag of the list holding each node, or 0 */
    uint8_t tag;
    gcn_i32vec ids;
} id_list;

static gcn_status id_record(gcn_reader *r, char **f, void *user)
{
    static const char *const list_name[] = {"", "train", "valid", "test"};
    id_list *l = user;
    int64_t id;
    if (!f)
        return l->ids.len ? GCN_OK
                          : gcn_reader_fail(r, GCN_ERR_FORMAT, "empty file, expected node ids");
    GCN_TRY(gcn_reader_int(r, f[0], 1, 0, (int64_t)l->n_nodes - 1, "node id", &id));
    if (l->seen[id])
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "node %lld is listed twice (also in %s)",
                               (long long)id, list_name[l->seen[id] & 3]);
    l->seen[id] = l->tag;
    return gcn_i32vec_push(r->ctx, &l->ids, (int32_t)id);
}

gcn_status gcn_read_id_list(gcn_ctx *ctx, const char *path, int32_t n_nodes, uint8_t *seen,
                            uint8_t tag, int32_t **ids, int32_t *n_ids)
{
    id_list l = {n_nodes, seen, tag, {0}};
    gcn_status st = gcn_read_records(ctx, path, &one_number, id_record, &l);
    if (st != GCN_OK) {
        free(l.ids.data);
        l.ids = (gcn_i32vec){0};
    }
    *ids = l.ids.data;
    *n_ids = (int32_t)l.ids.len;
    return st;
}

gcn_status gcn_read_split(gcn_ctx *ctx, gcn_dataset *ds, const char *const paths[3],
                          bool required)
{
    uint8_t *seen = NULL;
    int32_t **lists[3] = {&ds->train, &ds->valid, &ds->test};
    int32_t *counts[3] = {&ds->n_train, &ds->n_valid, &ds->n_test};
    GCN_TRY(gcn_ds_calloc(ctx, (void **)&seen, (size_t)ds->n_nodes, 1));
    gcn_status st = GCN_OK;
    for (int k = 0; k < 3; k++) {
        if (!required && !gcn_path_is_file(paths[k]))
            continue;
        GCN_CHECK(gcn_read_id_list(ctx, paths[k], ds->n_nodes, seen, (uint8_t)(k + 1),
                                   lists[k], counts[k]));
    }
cleanup:
    free(seen);
    return st;
}

gcn_status gcn_ds_check_split(gcn_ctx *ctx, const gcn_dataset *ds, const char *what)
{
    const int32_t *lists[3] = {ds->train, ds->valid, ds->test};
    const int32_t counts[3] = {ds->n_train, ds->n_valid, ds->n_test};
    uint8_t *seen = NULL;
    GCN_TRY(gcn_ds_calloc(ctx, (void **)&seen, (size_t)ds->n_nodes, 1));
    gcn_status st = GCN_OK;
    for (int k = 0; k < 3 && st == GCN_OK; k++)
        for (int32_t i = 0; i < counts[k]; i++) {
            int32_t id = lists[k][i];
            if (id < 0 || id >= ds->n_nodes || seen[id]) {
                st = GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: split node id %d out of range or repeated",
                               what, id);
                break;
            }
            seen[id] = 1;
        }
    free(seen);
    return st;
}

/* LSD radix sort of n keys, 16 bits per pass, skipping passes in which
 * every key has the same digit.  tmp holds n keys. */
static gcn_status radix_sort_u64(gcn_ctx *ctx, uint64_t *keys, int64_t n)
{
    uint64_t *tmp = NULL;
    int64_t *count = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&tmp, (size_t)n, sizeof *tmp));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&count, 65536, sizeof *count));
    for (int shift = 0; shift < 64; shift += 16) {
        memset(count, 0, 65536 * sizeof *count);
        for (int64_t i = 0; i < n; i++)
            count[(keys[i] >> shift) & 0xffff]++;
        if (n > 0 && count[(keys[0] >> shift) & 0xffff] == n)
            continue;
        int64_t sum = 0;
        for (int d = 0; d < 65536; d++) {
            int64_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++)
            tmp[count[(keys[i] >> shift) & 0xffff]++] = keys[i];
        memcpy(keys, tmp, (size_t)n * sizeof *keys);
    }
cleanup:
    free(tmp);
    free(count);
    return st;
}

gcn_status gcn_compact_ids(gcn_ctx *ctx, int64_t *ids, int64_t n, int32_t *n_nodes)
{
    uint64_t *sorted = NULL;
    GCN_TRY(gcn_ds_malloc(ctx, (void **)&sorted, (size_t)n, sizeof *sorted));
    for (int64_t i = 0; i < n; i++)
        sorted[i] = (uint64_t)ids[i];
    gcn_status st = radix_sort_u64(ctx, sorted, n);
    if (st != GCN_OK) {
        free(sorted);
        return st;
    }
    int64_t u = 0;
    for (int64_t i = 0; i < n; i++)
        if (i == 0 || sorted[i] != sorted[u - 1])
            sorted[u++] = sorted[i];
    if (u > GCN_DS_MAX_NODES) {
        free(sorted);
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "%lld distinct node ids: too many nodes",
                         (long long)u);
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t lo = 0, hi = u;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (sorted[mid] < (uint64_t)ids[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        ids[i] = lo;
    }
    free(sorted);
    *n_nodes = (int32_t)u;
    return GCN_OK;
}

gcn_status gcn_ds_set_graph(gcn_ctx *ctx, gcn_dataset *ds, const gcn_i32vec *src,
                            const gcn_i32vec *dst)
{
    GCN_TRY(gcn_graph_from_coo(ctx, &ds->graph, ds->n_nodes, src->len, src->data, dst->data));
    ds->n_raw_edges = ds->graph->nnz;
    return GCN_OK;
}

gcn_status gcn_edge_list_add(gcn_reader *r, char **f, gcn_edge_list *e)
{
    int64_t s, d;
    GCN_TRY(gcn_reader_int(r, f[0], 1, 0, e->hi, "source node id", &s));
    GCN_TRY(gcn_reader_int(r, f[1], 2, 0, e->hi, "target node id", &d));
    e->max_id = s > e->max_id ? s : e->max_id;
    e->max_id = d > e->max_id ? d : e->max_id;
    GCN_TRY(gcn_i32vec_push(r->ctx, &e->src, (int32_t)s));
    return gcn_i32vec_push(r->ctx, &e->dst, (int32_t)d);
}
