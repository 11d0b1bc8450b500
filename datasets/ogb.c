/* OGB node-property-prediction folders as OGB ships them: raw/ (edges,
 * node features, labels, counts as .csv.gz) and split/<scheme>/ (train,
 * valid, test .csv.gz). */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *const gcn_ogb_files[] = {
    "raw/num-node-list.csv.gz", "raw/num-edge-list.csv.gz", "raw/node-label.csv.gz",
    "raw/edge.csv.gz", "raw/node-feat.csv.gz", NULL};

#define OGB_MAX_FEATURES (1 << 20)

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
static gcn_status read_labels(gcn_ctx *ctx, const char *path, int64_t n_nodes, gcn_dataset *ds)
{
    gcn_reader r;
    gcn_i32vec v = {0};
    GCN_TRY(gcn_reader_open(ctx, &r, path));
    gcn_status st = GCN_OK;
    char *line, *f[1];
    int nf, width = 0;
    int32_t max_label = -1;
    for (;;) {
        GCN_CHECK(gcn_reader_line(&r, &line));
        if (!line)
            break;
        if (v.len >= n_nodes) {
            st = gcn_reader_fail(&r, GCN_ERR_FORMAT,
                                 "more labels than the %lld nodes of num-node-list.csv.gz",
                                 (long long)n_nodes);
            goto cleanup;
        }
        int cols = 1;
        for (const char *p = line; *p; p++)
            cols += *p == ',';
        if (width == 0)
            width = cols;
        if (cols != width) {
            st = gcn_reader_fail(&r, GCN_ERR_FORMAT, "expected %d columns, found %d", width, cols);
            goto cleanup;
        }
        int64_t y = -1;
        if (width == 1) {
            GCN_CHECK(gcn_reader_fields(&r, line, ',', f, 1, 1, &nf));
            if (*f[0] && strcmp(f[0], "nan") != 0 && strcmp(f[0], "NaN") != 0)
                GCN_CHECK(gcn_reader_int(&r, f[0], 1, -1, GCN_DS_MAX_CLASSES - 1, "label", &y));
        }
        max_label = (int32_t)y > max_label ? (int32_t)y : max_label;
        GCN_CHECK(gcn_i32vec_push(ctx, &v, (int32_t)y));
    }
    if (v.len != n_nodes) {
        st = gcn_reader_fail(&r, GCN_ERR_FORMAT,
                             v.len ? "%lld labels, but num-node-list.csv.gz says %lld nodes"
                                   : "empty file: %lld labels, num-node-list.csv.gz says %lld",
                             (long long)v.len, (long long)n_nodes);
        goto cleanup;
    }
    if (width > 1) {
        gcn_log(ctx, GCN_LOG_WARN, "%s: %d label columns (multi-task labels): not loaded", path,
                width);
        goto cleanup;
    }
    ds->labels = v.data;
    ds->n_classes = max_label + 1;
    v.data = NULL;
cleanup:
    free(v.data);
    gcn_reader_close(&r);
    return st;
}

static gcn_status read_edges(gcn_ctx *ctx, const char *path, int64_t n_edges, gcn_dataset *ds)
{
    gcn_reader r;
    gcn_i32vec src = {0}, dst = {0};
    GCN_TRY(gcn_reader_open(ctx, &r, path));
    gcn_status st = GCN_OK;
    char *line, *f[2];
    int nf;
    int64_t hi = (int64_t)ds->n_nodes - 1;
    for (;;) {
        GCN_CHECK(gcn_reader_line(&r, &line));
        if (!line)
            break;
        if (src.len >= n_edges) {
            st = gcn_reader_fail(&r, GCN_ERR_FORMAT,
                                 "more edges than the %lld of num-edge-list.csv.gz",
                                 (long long)n_edges);
            goto cleanup;
        }
        int64_t s, d;
        GCN_CHECK(gcn_reader_fields(&r, line, ',', f, 2, 2, &nf));
        GCN_CHECK(gcn_reader_int(&r, f[0], 1, 0, hi, "source node id", &s));
        GCN_CHECK(gcn_reader_int(&r, f[1], 2, 0, hi, "target node id", &d));
        GCN_CHECK(gcn_i32vec_push(ctx, &src, (int32_t)s));
        GCN_CHECK(gcn_i32vec_push(ctx, &dst, (int32_t)d));
    }
    if (src.len != n_edges) {
        st = gcn_reader_fail(&r, GCN_ERR_FORMAT,
                             src.len ? "%lld edges, but num-edge-list.csv.gz says %lld"
                                     : "empty file: %lld edges, num-edge-list.csv.gz says %lld",
                             (long long)src.len, (long long)n_edges);
        goto cleanup;
    }
    GCN_CHECK(gcn_ds_set_graph(ctx, ds, &src, &dst));
cleanup:
    free(src.data);
    free(dst.data);
    gcn_reader_close(&r);
    return st;
}

/* node-feat.csv.gz: n_nodes lines of D comma-separated finite floats. */
static gcn_status read_features(gcn_ctx *ctx, const char *path, gcn_dataset *ds)
{
    gcn_reader r;
    char **f = NULL;
    int width = 0;
    int64_t row = 0;
    GCN_TRY(gcn_reader_open(ctx, &r, path));
    gcn_status st = GCN_OK;
    char *line;
    int nf;
    for (;;) {
        GCN_CHECK(gcn_reader_line(&r, &line));
        if (!line)
            break;
        if (row >= ds->n_nodes) {
            st = gcn_reader_fail(&r, GCN_ERR_FORMAT, "more rows than the %d nodes", ds->n_nodes);
            goto cleanup;
        }
        if (width == 0) {
            width = 1;
            for (const char *p = line; *p && width <= OGB_MAX_FEATURES; p++)
                width += *p == ',';
            if (width > OGB_MAX_FEATURES ||
                (int64_t)width * ds->n_nodes > GCN_DS_MAX_FEATURE_VALUES) {
                st = gcn_reader_fail(&r, GCN_ERR_UNSUPPORTED, "too many feature columns");
                goto cleanup;
            }
            GCN_CHECK(gcn_ds_malloc(ctx, (void **)&f, (size_t)width, sizeof *f));
            GCN_CHECK(gcn_ds_malloc(ctx, (void **)&ds->features,
                                    (size_t)ds->n_nodes * (size_t)width, sizeof(float)));
        }
        GCN_CHECK(gcn_reader_fields(&r, line, ',', f, width, width, &nf));
        float *out = ds->features + row * width;
        for (int k = 0; k < width; k++)
            GCN_CHECK(gcn_reader_float(&r, f[k], k + 1, &out[k]));
        row++;
    }
    if (row != ds->n_nodes) {
        st = gcn_reader_fail(&r, GCN_ERR_FORMAT, "%s%lld rows, but num-node-list.csv.gz says %d",
                             row ? "" : "empty file: ", (long long)row, ds->n_nodes);
        goto cleanup;
    }
    ds->n_features = width;
    strcpy(ds->feature_source, "file");
cleanup:
    if (st != GCN_OK) {
        free(ds->features);
        ds->features = NULL;
    }
    free(f);
    gcn_reader_close(&r);
    return st;
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
