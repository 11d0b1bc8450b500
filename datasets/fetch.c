/* gcn_dataset_fetch: a named dataset downloaded, unpacked and loaded once
 * with the loader's checks inside a temporary folder beside its
 * destination, then renamed into place; a failure leaves nothing. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch_impl.h"
#include "internal.h"

gcn_fetch_opts gcn_fetch_default_opts(void)
{
    return (gcn_fetch_opts){.size = sizeof(gcn_fetch_opts), .timeout_s = 60};
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The folders make_dirs created, removed again when the fetch fails. */
typedef struct made_dirs {
    char path[8][PATH_MAX];
    int n;
} made_dirs;

/* mkdir -p dir, remembering what it created. */
static gcn_status make_dirs(gcn_ctx *ctx, const char *dir, made_dirs *m)
{
    char path[PATH_MAX];
    int len = snprintf(path, sizeof path, "%s", dir);
    if (len < 0 || (size_t)len >= sizeof path)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s: path too long", dir);
    for (int k = 1; k <= len; k++) {
        if (k < len && path[k] != '/')
            continue;
        char c = path[k];
        path[k] = '\0';
        if (mkdir(path, 0777) == 0) {
            if (m->n < 8)
                snprintf(m->path[m->n++], PATH_MAX, "%s", path);
        } else if (errno != EEXIST || !gcn_path_is_dir(path)) {
            return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot create the folder: %s", path,
                             errno == EEXIST ? "a file has that name" : strerror(errno));
        }
        path[k] = c;
    }
    return GCN_OK;
}

static void undo_dirs(made_dirs *m)
{
    while (m->n > 0)
        rmdir(m->path[--m->n]);
}

/* Renames the archive's top folder to files/<dest>, the name the loader
 * reads (a TU collection's files are named after their folder). */
static gcn_status stage(gcn_ctx *ctx, const gcn_catalog_entry *e, const char *files,
                        char *staged, size_t size)
{
    char top[PATH_MAX + 128];
    snprintf(top, sizeof top, "%s/%s", files, e->top);
    snprintf(staged, size, "%s/%s", files, e->dest);
    if (!gcn_path_is_dir(top))
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: holds no folder '%s/' (the publisher's "
                         "layout)", e->file, e->top);
    if (strcmp(e->top, e->dest) != 0 && rename(top, staged) != 0)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot rename to %s: %s", top, staged,
                         strerror(errno));
    return GCN_OK;
}

/* Loads the staged folder once: the loader checks its counts, ids and
 * split, and writes the binary cache the first real load will read. */
static gcn_status check_loads(gcn_ctx *ctx, const gcn_catalog_entry *e, const char *staged)
{
    gcn_dataset_opts lo = gcn_dataset_default_opts();
    lo.features = "none";
    gcn_dataset *ds = NULL;
    gcn_status st = gcn_dataset_load(ctx, &ds, staged, &lo);
    if (st != GCN_OK)
        return gcn_error_prefix(ctx, st, "%s from %s fails the loader's checks", e->name,
                                e->file);
    gcn_log(ctx, GCN_LOG_INFO, "%s: %d nodes, %lld stored edges: checked", e->name,
            ds->n_nodes, (long long)ds->n_raw_edges);
    gcn_dataset_free(&ds);
    return GCN_OK;
}

/* Creates tmp/files, the folder the data is staged in. */
static gcn_status files_dir(gcn_ctx *ctx, const char *tmp, char *files, size_t size)
{
    snprintf(files, size, "%s/files", tmp);
    if (mkdir(files, 0777) != 0)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: %s", files, strerror(errno));
    return GCN_OK;
}

/* Downloads the archive into tmp, unpacks it into tmp/files and deletes
 * it; staged receives the folder to rename into place. */
static gcn_status fetch_zip(gcn_ctx *ctx, const gcn_catalog_entry *e, const gcn_fetch_opts *o,
                            const char *tmp, char *staged, size_t size, int64_t *bytes)
{
    char path[PATH_MAX], files[PATH_MAX / 2 + 256];
    snprintf(path, sizeof path, "%s/%s", tmp, e->file);
    GCN_TRY(gcn_transfer(ctx, e->url, path, o, bytes));
    GCN_TRY(files_dir(ctx, tmp, files, sizeof files));
    GCN_TRY(gcn_archive_unpack(ctx, path, e->file, files, e->max_unpacked));
    unlink(path);
    return stage(ctx, e, files, staged, size);
}

/* Downloads Planetoid's eight files into tmp/files/NAME/raw and converts
 * them into the plain-text folder tmp/files/NAME. */
static gcn_status fetch_planetoid(gcn_ctx *ctx, const gcn_catalog_entry *e,
                                  const gcn_fetch_opts *o, const char *tmp, char *staged,
                                  size_t size, int64_t *bytes)
{
    char files[PATH_MAX / 2 + 256], raw[PATH_MAX + 128], url[sizeof e->url + 128], path[PATH_MAX + 256];
    GCN_TRY(files_dir(ctx, tmp, files, sizeof files));
    snprintf(staged, size, "%s/%s", files, e->dest);
    snprintf(raw, sizeof raw, "%s/raw", staged);
    if (mkdir(staged, 0777) != 0 || mkdir(raw, 0777) != 0)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: %s", raw, strerror(errno));
    *bytes = 0;
    for (int k = 0; k < 8; k++) {
        int64_t got = 0;
        snprintf(url, sizeof url, "%s/%s.%s", e->url, e->file, gcn_planetoid_parts[k]);
        snprintf(path, sizeof path, "%s/%s.%s", raw, e->file, gcn_planetoid_parts[k]);
        GCN_TRY(gcn_transfer(ctx, url, path, o, &got));
        *bytes += got;
    }
    return gcn_planetoid_convert(ctx, staged, e->dest);
}

gcn_status gcn_dataset_fetch(gcn_ctx *ctx, const char *spec, const char *root,
                             const gcn_fetch_opts *opts, bool *fetched)
{
    GCN_ARG(ctx, spec);
    if (fetched)
        *fetched = false;
    gcn_fetch_opts o = gcn_fetch_default_opts();
    if (opts)
        GCN_TRY(gcn_struct_import(ctx, "gcn_fetch_opts", &o, &o, sizeof o, opts));
    if (!root || !root[0])
        root = "data";
    gcn_catalog_entry e;
    if (!gcn_catalog_find(spec, gcn_catalog_mirror(&o), &e))
        return GCN_ERROR(ctx, GCN_ERR_NOT_FOUND,
                         "'%s': no download is known for this name (known: ogbn-arxiv, "
                         "ogbn-products, ogbn-proteins, cora, citeseer, pubmed, tu:NAME)", spec);
    /* parent is short enough for every path built below it to fit. */
    char parent[PATH_MAX / 2], dest[PATH_MAX], tmp[PATH_MAX / 2 + 128] = "", staged[PATH_MAX];
    int n = snprintf(parent, sizeof parent, "%s%s%s", root, e.subdir[0] ? "/" : "", e.subdir);
    if (n < 0 || (size_t)n >= sizeof parent)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s: path too long", root);
    snprintf(dest, sizeof dest, "%s/%s", parent, e.dest);
    if (gcn_path_is_dir(dest))
        return GCN_OK;
    made_dirs made = {.n = 0};
    gcn_status st = GCN_OK;
    int64_t bytes = 0;
    GCN_CHECK(make_dirs(ctx, parent, &made));
    snprintf(tmp, sizeof tmp, "%s/.gcn-fetch-%s-XXXXXX", parent, e.dest);
    if (!mkdtemp(tmp)) {
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot create a temporary folder: %s", parent,
                       strerror(errno));
        tmp[0] = '\0';
        goto cleanup;
    }
    gcn_log(ctx, GCN_LOG_INFO, "%s: downloading %s into %s", e.name, e.url, dest);
    GCN_CHECK(e.kind == GCN_FETCH_ZIP ? fetch_zip(ctx, &e, &o, tmp, staged, sizeof staged, &bytes)
                                      : fetch_planetoid(ctx, &e, &o, tmp, staged, sizeof staged,
                                                        &bytes));
    GCN_CHECK(check_loads(ctx, &e, staged));
    if (rename(staged, dest) != 0 && !((errno == EEXIST || errno == ENOTEMPTY) &&
                                       gcn_path_is_dir(dest))) {
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot rename to %s: %s", staged, dest,
                       strerror(errno));
        goto cleanup;
    }
    gcn_log(ctx, GCN_LOG_INFO, "%s: %.1f MB downloaded into %s", e.name, bytes / 1e6, dest);
    if (fetched)
        *fetched = true;
cleanup:
    if (tmp[0])
        remove_tree(tmp);
    if (st != GCN_OK)
        undo_dirs(&made);
    return st;
}
