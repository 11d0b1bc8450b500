/* The plain-text folder format of shared/data/planetoid/ and attributed/
 * datasets: meta.txt, edges.txt, features.txt (sparse "node col value"), labels.txt,
 * train.txt / val.txt / test.txt. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *const gcn_textdir_files[] = {"meta.txt", "labels.txt", "edges.txt", "features.txt",
                                         "train.txt", "val.txt", "test.txt", NULL};

/* The records of each file: "key value" lines with "#" comments; one label
 * a line, blank lines included (the line is the node); "src dst" edges;
 * "node col value" feature entries. */
static const gcn_record_fmt meta_fmt = {
    .min_fields = 1, .max_fields = 2, .rest = true, .comments = "#"};
static const gcn_record_fmt labels_fmt = {
    .min_fields = 1, .max_fields = 1, .blank_records = true};
static const gcn_record_fmt edges_fmt = {.min_fields = 2, .max_fields = 2};
static const gcn_record_fmt features_fmt = {.min_fields = 3, .max_fields = 3};

/* Counts from meta.txt; -1 where absent. */
typedef struct meta {
    int64_t n_nodes, n_features, n_classes;
    char name[64];
} meta;

static gcn_status meta_record(gcn_reader *r, char **f, void *user)
{
    meta *m = user;
    if (!f)
        return GCN_OK;
    if (r->n_fields < 2)
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "key '%.40s' has no value", f[0]);
    int64_t *slot = strcmp(f[0], "num_nodes") == 0      ? &m->n_nodes
                    : strcmp(f[0], "num_features") == 0 ? &m->n_features
                    : strcmp(f[0], "num_classes") == 0  ? &m->n_classes
                                                        : NULL;
    if (slot)
        return gcn_reader_int(r, f[1], 2, 0,
                              slot == &m->n_classes    ? GCN_DS_MAX_CLASSES
                              : slot == &m->n_features ? GCN_DS_MAX_FEATURES
                                                       : GCN_DS_MAX_NODES,
                              f[0], slot);
    if (strcmp(f[0], "name") == 0)
        snprintf(m->name, sizeof m->name, "%s", f[1]);
    return GCN_OK;
}

static gcn_status read_meta(gcn_ctx *ctx, const char *path, meta *m)
{
    m->n_nodes = m->n_features = m->n_classes = -1;
    m->name[0] = '\0';
    if (!gcn_path_is_file(path))
        return GCN_OK;
    return gcn_read_records(ctx, path, &meta_fmt, meta_record, m);
}

/* labels.txt: one label per node, -1 = none. */
typedef struct label_file {
    const meta *m;
    gcn_i32vec labels;
    int32_t max_label;
} label_file;

static gcn_status label_record(gcn_reader *r, char **f, void *user)
{
    label_file *l = user;
    const meta *m = l->m;
    int64_t n = l->labels.len, y;
    if (!f)
        return n > 0 && (m->n_nodes < 0 || n == m->n_nodes)
                   ? GCN_OK
                   : gcn_reader_fail(r, GCN_ERR_FORMAT,
                                     "%s%lld labels, but meta.txt's num_nodes is %lld",
                                     n ? "" : "empty file: ", (long long)n,
                                     (long long)m->n_nodes);
    if (m->n_nodes >= 0 && n >= m->n_nodes)
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "more labels than meta.txt's num_nodes %lld",
                               (long long)m->n_nodes);
    if (n >= GCN_DS_MAX_NODES)
        return gcn_reader_fail(r, GCN_ERR_UNSUPPORTED, "too many nodes");
    GCN_TRY(gcn_reader_int(r, f[0], 1, -1,
                           m->n_classes >= 0 ? m->n_classes - 1 : GCN_DS_MAX_CLASSES - 1, "label",
                           &y));
    l->max_label = (int32_t)y > l->max_label ? (int32_t)y : l->max_label;
    return gcn_i32vec_push(r->ctx, &l->labels, (int32_t)y);
}

static gcn_status read_labels(gcn_ctx *ctx, const char *path, const meta *m, gcn_dataset *ds)
{
    label_file l = {m, {0}, -1};
    gcn_status st = gcn_read_records(ctx, path, &labels_fmt, label_record, &l);
    if (st != GCN_OK) {
        free(l.labels.data);
        return st;
    }
    ds->n_nodes = (int32_t)l.labels.len;
    ds->n_classes = m->n_classes >= 0 ? (int32_t)m->n_classes : l.max_label + 1;
    ds->labels = l.labels.data;
    return GCN_OK;
}

/* edges.txt: "src dst" per line; ids must be below the node count when it
 * is known, else it becomes max id + 1. */
static gcn_status edge_record(gcn_reader *r, char **f, void *user)
{
    gcn_edge_list *e = user;
    if (!f)
        return e->src.len ? GCN_OK
                          : gcn_reader_fail(r, GCN_ERR_FORMAT, "empty file, expected edges");
    return gcn_edge_list_add(r, f, e);
}

static gcn_status read_edges(gcn_ctx *ctx, const char *path, gcn_dataset *ds, bool n_known)
{
    gcn_edge_list e = {.hi = n_known ? (int64_t)ds->n_nodes - 1 : GCN_DS_MAX_NODES - 1,
                       .max_id = -1};
    gcn_status st = gcn_read_records(ctx, path, &edges_fmt, edge_record, &e);
    if (st == GCN_OK && !n_known)
        ds->n_nodes = (int32_t)(e.max_id + 1);
    if (st == GCN_OK)
        st = gcn_ds_set_graph(ctx, ds, &e.src, &e.dst);
    free(e.src.data);
    free(e.dst.data);
    return st;
}

/* features.txt: sparse "node col value" entries of a dense n x d matrix,
 * d from meta.txt or the largest column + 1 (then read in two passes). */
static gcn_status column_record(gcn_reader *r, char **f, void *user)
{
    int64_t *max_col = user, col;
    if (!f)
        return GCN_OK;
    GCN_TRY(gcn_reader_int(r, f[1], 2, 0, GCN_DS_MAX_FEATURES - 1, "feature column", &col));
    *max_col = col > *max_col ? col : *max_col;
    return GCN_OK;
}

typedef struct feature_file {
    gcn_dataset *ds;
    int64_t entries;
} feature_file;

/* Stores one entry, checking it against the matrix size. */
static gcn_status feature_record(gcn_reader *r, char **f, void *user)
{
    feature_file *ff = user;
    gcn_dataset *ds = ff->ds;
    int64_t node, col;
    float value;
    if (!f)
        return ff->entries ? GCN_OK
                           : gcn_reader_fail(r, GCN_ERR_FORMAT,
                                             "empty file, expected feature entries");
    GCN_TRY(gcn_reader_int(r, f[0], 1, 0, (int64_t)ds->n_nodes - 1, "node id", &node));
    GCN_TRY(gcn_reader_int(r, f[1], 2, 0, (int64_t)ds->n_features - 1, "feature column", &col));
    GCN_TRY(gcn_reader_float(r, f[2], 3, &value));
    ds->features[node * ds->n_features + col] = value;
    ff->entries++;
    return GCN_OK;
}

static gcn_status read_features(gcn_ctx *ctx, const char *path, const meta *m, gcn_dataset *ds)
{
    int64_t d = m->n_features, max_col = -1;
    if (d < 0) {
        GCN_TRY(gcn_read_records(ctx, path, &features_fmt, column_record, &max_col));
        d = max_col + 1;
    }
    GCN_TRY(gcn_ds_check_dense(ctx, path, ds->n_nodes, d));
    GCN_TRY(gcn_ds_calloc(ctx, (void **)&ds->features, (size_t)ds->n_nodes * (size_t)d,
                          sizeof(float)));
    ds->n_features = (int32_t)d;
    feature_file ff = {ds, 0};
    gcn_status st = gcn_read_records(ctx, path, &features_fmt, feature_record, &ff);
    if (st != GCN_OK) {
        free(ds->features);
        ds->features = NULL;
        ds->n_features = 0;
        return st;
    }
    strcpy(ds->feature_source, "file");
    return GCN_OK;
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
