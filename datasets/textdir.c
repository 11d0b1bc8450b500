/* The plain-text folder format of shared/data/planetoid/ and attributed/
 * datasets: meta.txt, edges.txt, features.txt (sparse "node col value"), labels.txt,
 * train.txt / val.txt / test.txt. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *const gcn_textdir_files[] = {"meta.txt", "labels.txt", "edges.txt", "features.txt",
                                         "train.txt", "val.txt", "test.txt", NULL};

/* Counts from meta.txt; -1 where absent. */
typedef struct meta {
    int64_t n_nodes, n_features, n_classes;
    char name[64];
} meta;

static gcn_status read_meta(gcn_ctx *ctx, const char *path, meta *m)
{
    m->n_nodes = m->n_features = m->n_classes = -1;
    m->name[0] = '\0';
    if (!gcn_path_is_file(path))
        return GCN_OK;
    gcn_reader r;
    GCN_TRY(gcn_reader_open(ctx, &r, path));
    gcn_status st = GCN_OK;
    char *line;
    for (;;) {
        GCN_CHECK(gcn_reader_line(&r, &line));
        if (!line)
            break;
        char *key = line + strspn(line, " \t");
        if (!*key || *key == '#')
            continue;
        char *value = key + strcspn(key, " \t");
        if (*value)
            *value++ = '\0';
        value += strspn(value, " \t");
        if (!*value) {
            st = gcn_reader_fail(&r, GCN_ERR_FORMAT, "key '%.40s' has no value", key);
            goto cleanup;
        }
        int64_t *slot = strcmp(key, "num_nodes") == 0      ? &m->n_nodes
                        : strcmp(key, "num_features") == 0 ? &m->n_features
                        : strcmp(key, "num_classes") == 0  ? &m->n_classes
                                                           : NULL;
        if (slot)
            GCN_CHECK(gcn_reader_int(&r, value, 2, 0,
                                     slot == &m->n_classes ? GCN_DS_MAX_CLASSES : GCN_DS_MAX_NODES,
                                     key, slot));
        else if (strcmp(key, "name") == 0)
            snprintf(m->name, sizeof m->name, "%s", value);
    }
cleanup:
    gcn_reader_close(&r);
    return st;
}

/* labels.txt: one label per node, -1 = none. */
static gcn_status read_labels(gcn_ctx *ctx, const char *path, const meta *m, gcn_dataset *ds)
{
    gcn_reader r;
    gcn_i32vec v = {0};
    GCN_TRY(gcn_reader_open(ctx, &r, path));
    gcn_status st = GCN_OK;
    int64_t hi = m->n_classes >= 0 ? m->n_classes - 1 : GCN_DS_MAX_CLASSES - 1;
    int32_t max_label = -1;
    char *line, *f[1];
    int nf;
    for (;;) {
        GCN_CHECK(gcn_reader_line(&r, &line));
        if (!line)
            break;
        if (m->n_nodes >= 0 && v.len >= m->n_nodes) {
            st = gcn_reader_fail(&r, GCN_ERR_FORMAT, "more labels than meta.txt's num_nodes %lld",
                                 (long long)m->n_nodes);
            goto cleanup;
        }
        int64_t y;
        GCN_CHECK(gcn_reader_fields(&r, line, 0, f, 1, 1, &nf));
        GCN_CHECK(gcn_reader_int(&r, f[0], 1, -1, hi, "label", &y));
        max_label = (int32_t)y > max_label ? (int32_t)y : max_label;
        GCN_CHECK(gcn_i32vec_push(ctx, &v, (int32_t)y));
        if (v.len > GCN_DS_MAX_NODES) {
            st = gcn_reader_fail(&r, GCN_ERR_UNSUPPORTED, "too many nodes");
            goto cleanup;
        }
    }
    if (v.len == 0 || (m->n_nodes >= 0 && v.len != m->n_nodes)) {
        st = gcn_reader_fail(&r, GCN_ERR_FORMAT, "%s%lld labels, but meta.txt's num_nodes is %lld",
                             v.len ? "" : "empty file: ", (long long)v.len, (long long)m->n_nodes);
        goto cleanup;
    }
    ds->n_nodes = (int32_t)v.len;
    ds->n_classes = m->n_classes >= 0 ? (int32_t)m->n_classes : max_label + 1;
    ds->labels = v.data;
    v.data = NULL;
cleanup:
    free(v.data);
    gcn_reader_close(&r);
    return st;
}

/* edges.txt: "src dst" per line; ids must be below the node count when it
 * is known, else it becomes max id + 1. */
static gcn_status read_edges(gcn_ctx *ctx, const char *path, gcn_dataset *ds, bool n_known)
{
    gcn_reader r;
    gcn_i32vec src = {0}, dst = {0};
    GCN_TRY(gcn_reader_open(ctx, &r, path));
    gcn_status st = GCN_OK;
    int64_t hi = n_known ? (int64_t)ds->n_nodes - 1 : GCN_DS_MAX_NODES - 1, max_id = -1;
    char *line, *f[2];
    int nf;
    for (;;) {
        GCN_CHECK(gcn_reader_line(&r, &line));
        if (!line)
            break;
        if (gcn_line_blank(line))
            continue;
        int64_t s, d;
        GCN_CHECK(gcn_reader_fields(&r, line, 0, f, 2, 2, &nf));
        GCN_CHECK(gcn_reader_int(&r, f[0], 1, 0, hi, "source node id", &s));
        GCN_CHECK(gcn_reader_int(&r, f[1], 2, 0, hi, "target node id", &d));
        max_id = s > max_id ? s : max_id;
        max_id = d > max_id ? d : max_id;
        GCN_CHECK(gcn_i32vec_push(ctx, &src, (int32_t)s));
        GCN_CHECK(gcn_i32vec_push(ctx, &dst, (int32_t)d));
    }
    if (src.len == 0) {
        st = gcn_reader_fail(&r, GCN_ERR_FORMAT, "empty file, expected edges");
        goto cleanup;
    }
    if (!n_known)
        ds->n_nodes = (int32_t)(max_id + 1);
    GCN_CHECK(gcn_ds_set_graph(ctx, ds, &src, &dst));
cleanup:
    free(src.data);
    free(dst.data);
    gcn_reader_close(&r);
    return st;
}

/* Stores one features.txt entry, checking it against the matrix size. */
static gcn_status put_feature(gcn_reader *r, char **f, gcn_dataset *ds)
{
    int64_t node, col;
    float value;
    GCN_TRY(gcn_reader_int(r, f[0], 1, 0, (int64_t)ds->n_nodes - 1, "node id", &node));
    GCN_TRY(gcn_reader_int(r, f[1], 2, 0, (int64_t)ds->n_features - 1, "feature column", &col));
    GCN_TRY(gcn_reader_float(r, f[2], 3, &value));
    ds->features[node * ds->n_features + col] = value;
    return GCN_OK;
}

/* features.txt: sparse "node col value" entries of a dense n x d matrix,
 * d from meta.txt or the largest column + 1 (then read in two passes). */
static gcn_status read_features(gcn_ctx *ctx, const char *path, const meta *m, gcn_dataset *ds)
{
    gcn_reader r;
    gcn_status st = GCN_OK;
    char *line, *f[3];
    int nf;
    int64_t d = m->n_features, max_col = -1, entries = 0;
    if (d < 0) {
        GCN_TRY(gcn_reader_open(ctx, &r, path));
        for (;;) {
            GCN_CHECK(gcn_reader_line(&r, &line));
            if (!line)
                break;
            if (gcn_line_blank(line))
                continue;
            int64_t col;
            GCN_CHECK(gcn_reader_fields(&r, line, 0, f, 3, 3, &nf));
            GCN_CHECK(gcn_reader_int(&r, f[1], 2, 0, INT32_MAX - 1, "feature column", &col));
            max_col = col > max_col ? col : max_col;
        }
        gcn_reader_close(&r);
        d = max_col + 1;
    }
    if (d * (int64_t)ds->n_nodes > GCN_DS_MAX_FEATURE_VALUES)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "%s: %lld x %lld features: too large", path,
                         (long long)ds->n_nodes, (long long)d);
    ds->n_features = (int32_t)d;
    GCN_TRY(gcn_ds_calloc(ctx, (void **)&ds->features, (size_t)ds->n_nodes * (size_t)d,
                          sizeof(float)));
    GCN_CHECK(gcn_reader_open(ctx, &r, path));
    for (;;) {
        GCN_CHECK(gcn_reader_line(&r, &line));
        if (!line)
            break;
        if (gcn_line_blank(line))
            continue;
        GCN_CHECK(gcn_reader_fields(&r, line, 0, f, 3, 3, &nf));
        GCN_CHECK(put_feature(&r, f, ds));
        entries++;
    }
    if (entries == 0)
        st = gcn_reader_fail(&r, GCN_ERR_FORMAT, "empty file, expected feature entries");
    else
        strcpy(ds->feature_source, "file");
cleanup:
    gcn_reader_close(&r);
    if (st != GCN_OK) {
        free(ds->features);
        ds->features = NULL;
        ds->n_features = 0;
    }
    return st;
}

gcn_status gcn_load_textdir(gcn_ctx *ctx, const char *dir, gcn_dataset *ds)
{
    char *p[7] = {NULL};
    gcn_status st = GCN_OK;
    meta m;
    for (int k = 0; k < 7; k++)
        GCN_CHECK(gcn_path_join(ctx, &p[k], dir, gcn_textdir_files[k]));
    GCN_CHECK(read_meta(ctx, p[0], &m));
    if (m.name[0])
        snprintf(ds->name, sizeof ds->name, "%s", m.name);
    bool have_labels = gcn_path_is_file(p[1]);
    if (have_labels)
        GCN_CHECK(read_labels(ctx, p[1], &m, ds));
    else if (m.n_nodes >= 0)
        ds->n_nodes = (int32_t)m.n_nodes;
    GCN_CHECK(read_edges(ctx, p[2], ds, have_labels || m.n_nodes >= 0));
    if (gcn_path_is_file(p[3]))
        GCN_CHECK(read_features(ctx, p[3], &m, ds));
    GCN_CHECK(gcn_read_split(ctx, ds, (const char *const *)&p[4], false));
cleanup:
    for (int k = 0; k < 7; k++)
        free(p[k]);
    return st;
}
