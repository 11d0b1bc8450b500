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
static gcn_status read_pairs(gcn_reader *r, char sep, gcn_i64vec *ids)
{
    char *line, *f[3];
    int nf;
    for (;;) {
        GCN_TRY(gcn_reader_line(r, &line));
        if (!line)
            return GCN_OK;
        const char *p = line + strspn(line, " \t");
        if (!*p || *p == '#' || *p == '%')
            continue;
        int64_t s, d;
        float w;
        GCN_TRY(gcn_reader_fields(r, line, sep, f, 2, 3, &nf));
        GCN_TRY(gcn_reader_int(r, f[0], 1, 0, INT64_MAX, "source node id", &s));
        GCN_TRY(gcn_reader_int(r, f[1], 2, 0, INT64_MAX, "target node id", &d));
        if (nf == 3)
            GCN_TRY(gcn_reader_float(r, f[2], 3, &w));
        GCN_TRY(gcn_i64vec_push(r->ctx, ids, s));
        GCN_TRY(gcn_i64vec_push(r->ctx, ids, d));
    }
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
    gcn_reader r;
    gcn_i64vec ids = {0};
    GCN_TRY(gcn_reader_open(ctx, &r, path));
    gcn_status st = GCN_OK;
    char sep = has_suffix(path, ".csv") || has_suffix(path, ".csv.gz") ? ',' : 0;
    GCN_CHECK(read_pairs(&r, sep, &ids));
    if (ids.len == 0) {
        st = gcn_reader_fail(&r, GCN_ERR_FORMAT, "empty file: no edges");
        goto cleanup;
    }
    GCN_CHECK(gcn_compact_ids(ctx, ids.data, ids.len, &ds->n_nodes));
    GCN_CHECK(set_graph_pairs(ctx, ds, &ids));
cleanup:
    free(ids.data);
    gcn_reader_close(&r);
    return st;
}

typedef struct mtx_header {
    bool pattern, symmetric;
    int64_t n, entries;
} mtx_header;

/* "%%MatrixMarket matrix coordinate <field> <symmetry>" */
static gcn_status read_banner(gcn_reader *r, mtx_header *h)
{
    char *line, *f[6];
    int nf;
    GCN_TRY(gcn_reader_line(r, &line));
    if (!line)
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "empty file");
    if (strncasecmp(line, "%%MatrixMarket", 14) != 0)
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "missing the %%%%MatrixMarket banner");
    GCN_TRY(gcn_reader_fields(r, line, 0, f, 5, 5, &nf));
    if (strcasecmp(f[1], "matrix") != 0 || strcasecmp(f[2], "coordinate") != 0)
        return gcn_reader_fail(r, GCN_ERR_UNSUPPORTED,
                               "only 'matrix coordinate' is supported, not '%.20s %.20s'", f[1],
                               f[2]);
    h->pattern = strcasecmp(f[3], "pattern") == 0;
    if (!h->pattern && strcasecmp(f[3], "real") != 0 && strcasecmp(f[3], "integer") != 0)
        return gcn_reader_fail(r, GCN_ERR_UNSUPPORTED,
                               "field '%.20s': expected pattern, real or integer", f[3]);
    h->symmetric = strcasecmp(f[4], "symmetric") == 0;
    if (!h->symmetric && strcasecmp(f[4], "general") != 0)
        return gcn_reader_fail(r, GCN_ERR_UNSUPPORTED,
                               "symmetry '%.20s': expected general or symmetric", f[4]);
    return GCN_OK;
}

static gcn_status read_size(gcn_reader *r, mtx_header *h)
{
    char *line, *f[3];
    int nf;
    for (;;) {
        GCN_TRY(gcn_reader_line(r, &line));
        if (!line)
            return gcn_reader_fail(r, GCN_ERR_FORMAT, "file ends before the size line");
        if (line[0] != '%' && !gcn_line_blank(line))
            break;
    }
    int64_t rows, cols;
    GCN_TRY(gcn_reader_fields(r, line, 0, f, 3, 3, &nf));
    GCN_TRY(gcn_reader_int(r, f[0], 1, 0, GCN_DS_MAX_NODES, "row count", &rows));
    GCN_TRY(gcn_reader_int(r, f[1], 2, 0, GCN_DS_MAX_NODES, "column count", &cols));
    GCN_TRY(gcn_reader_int(r, f[2], 3, 0, INT64_MAX, "entry count", &h->entries));
    if (rows != cols)
        return gcn_reader_fail(r, GCN_ERR_UNSUPPORTED,
                               "%lld x %lld matrix: a graph needs a square one", (long long)rows,
                               (long long)cols);
    h->n = rows;
    return GCN_OK;
}

static gcn_status read_entries(gcn_reader *r, const mtx_header *h, gcn_i32vec *src,
                               gcn_i32vec *dst)
{
    char *line, *f[3];
    int nf, want = h->pattern ? 2 : 3;
    int64_t seen = 0;
    for (;;) {
        GCN_TRY(gcn_reader_line(r, &line));
        if (!line)
            break;
        if (line[0] == '%' || gcn_line_blank(line))
            continue;
        if (seen == h->entries)
            return gcn_reader_fail(r, GCN_ERR_FORMAT, "more entries than the %lld of the size line",
                                   (long long)h->entries);
        int64_t i, j;
        float v;
        GCN_TRY(gcn_reader_fields(r, line, 0, f, want, want, &nf));
        GCN_TRY(gcn_reader_int(r, f[0], 1, 1, h->n, "row index", &i));
        GCN_TRY(gcn_reader_int(r, f[1], 2, 1, h->n, "column index", &j));
        if (!h->pattern)
            GCN_TRY(gcn_reader_float(r, f[2], 3, &v));
        GCN_TRY(gcn_i32vec_push(r->ctx, src, (int32_t)(i - 1)));
        GCN_TRY(gcn_i32vec_push(r->ctx, dst, (int32_t)(j - 1)));
        if (h->symmetric && i != j) {
            GCN_TRY(gcn_i32vec_push(r->ctx, src, (int32_t)(j - 1)));
            GCN_TRY(gcn_i32vec_push(r->ctx, dst, (int32_t)(i - 1)));
        }
        seen++;
    }
    if (seen != h->entries)
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "file ends after %lld of %lld entries",
                               (long long)seen, (long long)h->entries);
    return GCN_OK;
}

gcn_status gcn_load_mtx(gcn_ctx *ctx, const char *path, gcn_dataset *ds)
{
    gcn_reader r;
    gcn_i32vec src = {0}, dst = {0};
    mtx_header h;
    GCN_TRY(gcn_reader_open(ctx, &r, path));
    gcn_status st = GCN_OK;
    GCN_CHECK(read_banner(&r, &h));
    GCN_CHECK(read_size(&r, &h));
    GCN_CHECK(read_entries(&r, &h, &src, &dst));
    ds->n_nodes = (int32_t)h.n;
    GCN_CHECK(gcn_ds_set_graph(ctx, ds, &src, &dst));
cleanup:
    free(src.data);
    free(dst.data);
    gcn_reader_close(&r);
    return st;
}
