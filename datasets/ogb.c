/* OGB node-property-prediction folders as OGB ships them: raw/ (edges,
 * node features, labels, counts as .csv.gz) and split/<scheme>/ (train,
 * valid, test .csv.gz). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *const gcn_ogb_files[] = {
    "raw/num-node-list.csv.gz", "raw/num-edge-list.csv.gz", "raw/node-label.csv.gz",
    "raw/edge.csv.gz", "raw/node-feat.csv.gz", NULL};

/* Most comma-separated columns a label line may have. */
#define OGB_MAX_COLUMNS (1 << 20)

/* The raw/ CSV files hold one line per node or edge, blank lines included
 * (a blank label is an unlabelled node); label and feature files take their
 * width from the first line (features: gcn_read_dense_rows). */
static const gcn_record_fmt ogb_edges = {
    .sep = ',', .min_fields = 2, .max_fields = 2, .blank_records = true};
static const gcn_record_fmt ogb_rows = {
    .sep = ',', .min_fields = 1, .max_fields = OGB_MAX_COLUMNS, .blank_records = true};

gcn_status gcn_ogb_scheme(gcn_ctx *ctx, const char *dir, const char *wanted, char **scheme)
{
    *scheme = NULL;
    char *split = NULL;
    GCN_TRY(gcn_path_join(ctx, &split, dir, "split"));
    gcn_status st = GCN_OK;
    if (wanted) {
        char *path = NULL;
        GCN_CHECK(gcn_path_join(ctx, &path, split, wanted));
        bool ok = gcn_path_is_dir(path);
        free(path);
        if (!ok) {
            st = GCN_ERROR(ctx, GCN_ERR_NOT_FOUND, "%s/%s: no such split scheme", split, wanted);
            goto cleanup;
        }
        *scheme = strdup(wanted);
    } else {
        DIR *d = opendir(split);
        if (!d)
            goto cleanup;
        int found = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            found++;
            free(*scheme);
            *scheme = strdup(e->d_name);
        }
        closedir(d);
        if (found > 1) {
            free(*scheme);
            *scheme = NULL;
            st = GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                           "%s: several split schemes; choose one with split_scheme", split);
            goto cleanup;
        }
        if (found == 0)
            goto cleanup;
    }
    if (!*scheme)
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory");
cleanup:
    free(split);
    return st;
}

/* node-label.csv.gz: one line per node.  A single column gives the class
 * (empty or "nan" = unlabelled); several columns (multi-task labels, as in
 * ogbn-proteins) are counted but not kept, with a notice. */
typedef struct label_file {
    int64_t n_nodes;
    int width; /* of the first line; 0 before it */
    int32_t max_label;
    gcn_i32vec labels;
} label_file;

static gcn_status label_record(gcn_reader *r, char **f, void *user)
{
    label_file *l = user;
    int64_t y = -1;
    GCN_TRY(gcn_reader_check_count(r, f, l->labels.len, l->n_nodes, "labels",
                                   "num-node-list.csv.gz"));
    if (!f)
        return GCN_OK;
    if (l->width == 0)
        r->fmt.min_fields = r->fmt.max_fields = l->width = r->n_fields;
    if (l->width == 1 && *f[0] && strcmp(f[0], "nan") != 0 && strcmp(f[0], "NaN") != 0)
        GCN_TRY(gcn_reader_int(r, f[0], 1, -1, GCN_DS_MAX_CLASSES - 1, "label", &y));
    l->max_label = (int32_t)y > l->max_label ? (int32_t)y : l->max_label;
    return gcn_i32vec_push(r->ctx, &l->labels, (int32_t)y);
}

static gcn_status read_labels(gcn_ctx *ctx, const char *path, int64_t n_nodes, gcn_dataset *ds)
{
    label_file l = {n_nodes, 0, -1, {0}};
    gcn_status st = gcn_read_records(ctx, path, &ogb_rows, label_record, &l);
    if (st == GCN_OK && l.width > 1)
        gcn_log(ctx, GCN_LOG_WARN, "%s: %d label columns (multi-task labels): not loaded", path,
                l.width);
    if (st != GCN_OK || l.width > 1) {
        free(l.labels.data);
        return st;
    }
    ds->labels = l.labels.data;
    ds->n_classes = l.max_label + 1;
    return GCN_OK;
}

/* edge.csv.gz: as many "src,dst" lines as num-edge-list.csv.gz says. */
typedef struct edge_file {
    int64_t n_edges;
    gcn_edge_list edges;
} edge_file;

static gcn_status edge_record(gcn_reader *r, char **f, void *user)
{
    edge_file *e = user;
    GCN_TRY(gcn_reader_check_count(r, f, e->edges.src.len, e->n_edges, "edges",
                                   "num-edge-list.csv.gz"));
    return f ? gcn_edge_list_add(r, f, &e->edges) : GCN_OK;
}

static gcn_status read_edges(gcn_ctx *ctx, const char *path, int64_t n_edges, gcn_dataset *ds)
{
    edge_file e = {n_edges, {.hi = (int64_t)ds->n_nodes - 1, .max_id = -1}};
    gcn_status st = gcn_read_records(ctx, path, &ogb_edges, edge_record, &e);
    if (st == GCN_OK)
        st = gcn_ds_set_graph(ctx, ds, &e.edges.src, &e.edges.dst);
    free(e.edges.src.data);
    free(e.edges.dst.data);
    return st;
}

/* node-feat.csv.gz: n_nodes lines of D comma-separated finite floats. */
static gcn_status read_features(gcn_ctx *ctx, const char *path, gcn_dataset *ds)
{
    GCN_TRY(gcn_read_dense_rows(ctx, path, ds->n_nodes, "num-node-list.csv.gz", &ds->features,
                                &ds->n_features));
    strcpy(ds->feature_source, "file");
    return GCN_OK;
}

static gcn_status ogb_split(gcn_ctx *ctx, const char *dir, const char *scheme, gcn_dataset *ds)
{
    static const char *const names[3] = {"train.csv.gz", "valid.csv.gz", "test.csv.gz"};
    char *paths[3] = {NULL, NULL, NULL};
    char *sub = NULL, *split = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_path_join(ctx, &split, dir, "split"));
    GCN_CHECK(gcn_path_join(ctx, &sub, split, scheme));
    for (int k = 0; k < 3; k++)
        GCN_CHECK(gcn_path_join(ctx, &paths[k], sub, names[k]));
    GCN_CHECK(gcn_read_split(ctx, ds, (const char *const *)paths, true));
cleanup:
    for (int k = 0; k < 3; k++)
        free(paths[k]);
    free(sub);
    free(split);
    return st;
}

gcn_status gcn_load_ogb(gcn_ctx *ctx, const char *dir, const char *scheme, gcn_dataset *ds)
{
    char *p[6] = {NULL};
    gcn_status st = GCN_OK;
    for (int k = 0; k < 5; k++)
        GCN_CHECK(gcn_path_join(ctx, &p[k], dir, gcn_ogb_files[k]));
    GCN_CHECK(gcn_path_join(ctx, &p[5], dir, "raw/edge-feat.csv.gz"));
    int64_t n_nodes, n_edges;
    GCN_CHECK(gcn_read_count(ctx, p[0], GCN_DS_MAX_NODES, &n_nodes));
    GCN_CHECK(gcn_read_count(ctx, p[1], INT32_MAX, &n_edges));
    GCN_CHECK(read_labels(ctx, p[2], n_nodes, ds));
    ds->n_nodes = (int32_t)n_nodes;
    GCN_CHECK(read_edges(ctx, p[3], n_edges, ds));
    if (gcn_path_is_file(p[4]))
        GCN_CHECK(read_features(ctx, p[4], ds));
    if (gcn_path_is_file(p[5]))
        gcn_log(ctx, GCN_LOG_WARN, "%s: edge features are ignored", p[5]);
    if (scheme)
        GCN_CHECK(ogb_split(ctx, dir, scheme, ds));
cleanup:
    for (int k = 0; k < 6; k++)
        free(p[k]);
    return st;
}
