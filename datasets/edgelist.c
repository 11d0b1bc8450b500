/* Structure-only graph files: SNAP-style edge lists ("#" comments, two
 * whitespace-separated ids, optional third column) and Matrix Market
 * coordinate files, both optionally gzip-compressed. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Raw ids of both endpoints, interleaved, to be renumbered. */
static gcn_status pair_record(gcn_reader *r, char **f, void *user)
{
    gcn_i64vec *ids = user;
    int64_t s, d;
    float w;
    if (!f)
        return ids->len ? GCN_OK : gcn_reader_fail(r, GCN_ERR_FORMAT, "empty file: no edges");
    GCN_TRY(gcn_reader_int(r, f[0], 1, 0, INT64_MAX, "source node id", &s));
    GCN_TRY(gcn_reader_int(r, f[1], 2, 0, INT64_MAX, "target node id", &d));
    if (r->n_fields == 3)
        GCN_TRY(gcn_reader_float(r, f[2], 3, &w));
    GCN_TRY(gcn_i64vec_push(r->ctx, ids, s));
    return gcn_i64vec_push(r->ctx, ids, d);
}

/* Builds the graph from interleaved 0-based ids. */
static gcn_status set_graph_pairs(gcn_ctx *ctx, gcn_dataset *ds, const gcn_i64vec *ids)
{
    gcn_i32vec src = {0}, dst = {0};
    gcn_status st = GCN_OK;
    int64_t m = ids->len / 2;
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&src.data, (size_t)m, sizeof(int32_t)));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&dst.data, (size_t)m, sizeof(int32_t)));
    for (int64_t e = 0; e < m; e++) {
        src.data[e] = (int32_t)ids->data[2 * e];
        dst.data[e] = (int32_t)ids->data[2 * e + 1];
    }
    src.len = dst.len = m;
    GCN_CHECK(gcn_ds_set_graph(ctx, ds, &src, &dst));
cleanup:
    free(src.data);
    free(dst.data);
    return st;
}

gcn_status gcn_load_edgelist(gcn_ctx *ctx, const char *path, gcn_dataset *ds)
{
    gcn_i64vec ids = {0};
    const gcn_record_fmt fmt = {
        .sep = has_suffix(path, ".csv") || has_suffix(path, ".csv.gz") ? ',' : 0,
        .min_fields = 2,
        .max_fields = 3,
        .comments = "#%",
    };
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_read_records(ctx, path, &fmt, pair_record, &ids));
    GCN_CHECK(gcn_compact_ids(ctx, ids.data, ids.len, &ds->n_nodes));
    GCN_CHECK(set_graph_pairs(ctx, ds, &ids));
cleanup:
    free(ids.data);
    return st;
}

/* A Matrix Market file: its banner, then records with "%" comments: the
 * size line and the entries (2 fields for a pattern matrix, else 3), read
 * into src and dst. */
typedef struct mtx_file {
    bool pattern, symmetric;
    int64_t n, entries, seen; /* n < 0 until the size line */
    gcn_i32vec src, dst;
} mtx_file;

static const gcn_record_fmt mtx_banner = {.min_fields = 5, .max_fields = 5};
static const gcn_record_fmt mtx_size = {.min_fields = 3, .max_fields = 3, .comments = "%"};

/* "%%MatrixMarket matrix coordinate <field> <symmetry>" */
static gcn_status read_banner(gcn_reader *r, mtx_file *m)
{
    char *line;
    GCN_TRY(gcn_reader_line(r, &line));
    if (!line)
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "empty file");
    if (strncasecmp(line, "%%MatrixMarket", 14) != 0)
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "missing the %%%%MatrixMarket banner");
    GCN_TRY(gcn_reader_split(r, line));
    char **f = r->fields;
    if (strcasecmp(f[1], "matrix") != 0 || strcasecmp(f[2], "coordinate") != 0)
        return gcn_reader_fail(r, GCN_ERR_UNSUPPORTED,
                               "only 'matrix coordinate' is supported, not '%.20s %.20s'", f[1],
                               f[2]);
    m->pattern = strcasecmp(f[3], "pattern") == 0;
    if (!m->pattern && strcasecmp(f[3], "real") != 0 && strcasecmp(f[3], "integer") != 0)
        return gcn_reader_fail(r, GCN_ERR_UNSUPPORTED,
                               "field '%.20s': expected pattern, real or integer", f[3]);
    m->symmetric = strcasecmp(f[4], "symmetric") == 0;
    if (!m->symmetric && strcasecmp(f[4], "general") != 0)
        return gcn_reader_fail(r, GCN_ERR_UNSUPPORTED,
                               "symmetry '%.20s': expected general or symmetric", f[4]);
    return GCN_OK;
}

/* "rows cols entries"; the records after it are entries. */
static gcn_status size_record(gcn_reader *r, char **f, mtx_file *m)
{
    int64_t rows, cols;
    GCN_TRY(gcn_reader_int(r, f[0], 1, 0, GCN_DS_MAX_NODES, "row count", &rows));
    GCN_TRY(gcn_reader_int(r, f[1], 2, 0, GCN_DS_MAX_NODES, "column count", &cols));
    GCN_TRY(gcn_reader_int(r, f[2], 3, 0, INT64_MAX, "entry count", &m->entries));
    if (rows != cols)
        return gcn_reader_fail(r, GCN_ERR_UNSUPPORTED,
                               "%lld x %lld matrix: a graph needs a square one", (long long)rows,
                               (long long)cols);
    if (m->entries == 0)
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "no edges: the size line declares 0 entries");
    /* the shortest entry line, "1 1\n", has 4 bytes */
    if ((uint64_t)m->entries > gcn_reader_max_bytes(r) / 4)
        return gcn_reader_fail(r, GCN_ERR_FORMAT,
                               "%lld entries: more than this file of %llu bytes can hold",
                               (long long)m->entries, (unsigned long long)r->file_bytes);
    m->n = rows;
    r->fmt.min_fields = r->fmt.max_fields = m->pattern ? 2 : 3;
    return GCN_OK;
}

/* "row col [value]", 1-based; a symmetric matrix stores one triangle. */
static gcn_status mtx_record(gcn_reader *r, char **f, void *user)
{
    mtx_file *m = user;
    int64_t i, j;
    float v;
    if (!f && m->n < 0)
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "file ends before the size line");
    if (!f)
        return m->seen == m->entries
                   ? GCN_OK
                   : gcn_reader_fail(r, GCN_ERR_FORMAT, "file ends after %lld of %lld entries",
                                     (long long)m->seen, (long long)m->entries);
    if (m->n < 0)
        return size_record(r, f, m);
    if (m->seen++ == m->entries)
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "more entries than the %lld of the size line",
                               (long long)m->entries);
    GCN_TRY(gcn_reader_int(r, f[0], 1, 1, m->n, "row index", &i));
    GCN_TRY(gcn_reader_int(r, f[1], 2, 1, m->n, "column index", &j));
    if (!m->pattern)
        GCN_TRY(gcn_reader_float(r, f[2], 3, &v));
    GCN_TRY(gcn_i32vec_push(r->ctx, &m->src, (int32_t)(i - 1)));
    GCN_TRY(gcn_i32vec_push(r->ctx, &m->dst, (int32_t)(j - 1)));
    if (!m->symmetric || i == j)
        return GCN_OK;
    GCN_TRY(gcn_i32vec_push(r->ctx, &m->src, (int32_t)(j - 1)));
    return gcn_i32vec_push(r->ctx, &m->dst, (int32_t)(i - 1));
}

gcn_status gcn_load_mtx(gcn_ctx *ctx, const char *path, gcn_dataset *ds)
{
    gcn_reader r;
    mtx_file m = {.n = -1};
    GCN_TRY(gcn_reader_open(ctx, &r, path, &mtx_banner));
    gcn_status st = GCN_OK;
    GCN_CHECK(read_banner(&r, &m));
    r.fmt = mtx_size;
    GCN_CHECK(gcn_reader_each(&r, mtx_record, &m));
    ds->n_nodes = (int32_t)m.n;
    GCN_CHECK(gcn_ds_set_graph(ctx, ds, &m.src, &m.dst));
cleanup:
    free(m.src.data);
    free(m.dst.data);
    gcn_reader_close(&r);
    return st;
}
