/* The binary dataset cache (processed/gcn-v1.bin, format version 2): a
 * checksummed header and the parsed arrays, written atomically (temporary
 * file + fsync + rename, the writer the permutation file shares) and
 * validated in full before use. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

_Static_assert(sizeof(gcn_cache_header) == 144, "cache header layout");

#define N_SECTIONS 10

#define ENDIAN_MARK 0x01020304u

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t gcn_cache_fingerprint(const char *dir, const char *const *files, uint64_t salt)
{
    uint64_t h = fnv1a(0xcbf29ce484222325ull, &salt, sizeof salt);
    for (int k = 0; files[k]; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        struct stat sb;
        int64_t rec[4] = {0, 0, 0, 0};
        if (stat(path, &sb) == 0) {
            rec[0] = 1;
            rec[1] = (int64_t)sb.st_size;
            rec[2] = (int64_t)sb.st_mtim.tv_sec;
            rec[3] = (int64_t)sb.st_mtim.tv_nsec;
        }
        h = fnv1a(h, files[k], strlen(files[k]) + 1);
        h = fnv1a(h, rec, sizeof rec);
    }
    return h;
}

/* The payload arrays in file order, with their byte counts. */
static void sections_of(const gcn_dataset *ds, const gcn_graph *g, gcn_section s[N_SECTIONS])
{
    size_t n_graphs = (size_t)ds->n_graphs;
    s[0] = (gcn_section){g->row_ptr, ((size_t)g->n_nodes + 1) * sizeof(int32_t)};
    s[1] = (gcn_section){g->col_idx, (size_t)g->nnz * sizeof(int32_t)};
    s[2] = (gcn_section){ds->features,
                         (size_t)ds->n_nodes * (size_t)ds->n_features * sizeof(float)};
    s[3] = (gcn_section){ds->labels, ds->labels ? (size_t)ds->n_nodes * sizeof(int32_t) : 0};
    s[4] = (gcn_section){ds->train, (size_t)ds->n_train * sizeof(int32_t)};
    s[5] = (gcn_section){ds->valid, (size_t)ds->n_valid * sizeof(int32_t)};
    s[6] = (gcn_section){ds->test, (size_t)ds->n_test * sizeof(int32_t)};
    s[7] = (gcn_section){ds->graph_ptr, n_graphs ? (n_graphs + 1) * sizeof(int32_t) : 0};
    s[8] = (gcn_section){ds->graph_labels, n_graphs * sizeof(int32_t)};
    s[9] = (gcn_section){ds->graph_label_values,
                         n_graphs ? (size_t)ds->n_graph_classes * sizeof(int32_t) : 0};
}

static uint32_t crc_of(uint32_t crc, const void *data, size_t bytes)
{
    return bytes ? (uint32_t)crc32_z(crc, data, bytes) : crc;
}

static void fill_header(gcn_cache_header *h, uint64_t fingerprint, const gcn_dataset *ds,
                        const gcn_section s[N_SECTIONS])
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, GCN_CACHE_MAGIC, sizeof h->magic);
    h->version = GCN_CACHE_VERSION;
    h->endian = ENDIAN_MARK;
    h->fingerprint = fingerprint;
    snprintf(h->name, sizeof h->name, "%s", ds->name);
    h->n_nodes = ds->n_nodes;
    h->nnz = ds->graph->nnz;
    h->n_features = ds->n_features;
    h->n_classes = ds->n_classes;
    h->n_train = ds->n_train;
    h->n_valid = ds->n_valid;
    h->n_test = ds->n_test;
    h->has_labels = ds->labels != NULL;
    h->n_graphs = ds->n_graphs;
    h->n_graph_classes = ds->n_graphs ? ds->n_graph_classes : 0;
    uint32_t crc = (uint32_t)crc32_z(0, NULL, 0);
    for (int k = 0; k < N_SECTIONS; k++) {
        h->payload_bytes += s[k].bytes;
        crc = crc_of(crc, s[k].data, s[k].bytes);
    }
    h->payload_crc = crc;
    h->header_crc = crc_of(0, h, offsetof(gcn_cache_header, header_crc));
}

/* Removes the folder of path when gcn_file_write_atomic made it. */
static void remove_made_folder(char *path, bool made)
{
    char *slash = strrchr(path, '/');
    if (!made || !slash)
        return;
    *slash = '\0';
    rmdir(path);
    *slash = '/';
}

gcn_status gcn_file_write_atomic(gcn_ctx *ctx, const char *path, const gcn_section *s, int n)
{
    size_t len = strlen(path);
    char *tmp = NULL;
    GCN_TRY(gcn_ds_malloc(ctx, (void **)&tmp, len + 16, 1));
    snprintf(tmp, len + 16, "%s.tmp.XXXXXX", path);
    gcn_ctx_temp(ctx, true);
    char *slash = strrchr(tmp, '/');
    bool made = false;
    if (slash && slash > tmp) { /* the folder, made now if missing */
        *slash = '\0';
        made = mkdir(tmp, 0777) == 0;
        *slash = '/';
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        gcn_status st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        remove_made_folder(tmp, made);
        gcn_ctx_temp(ctx, false);
        free(tmp);
        return st;
    }
    FILE *f = fchmod(fd, 0644) == 0 ? fdopen(fd, "wb") : NULL;
    bool ok = f != NULL;
    for (int k = 0; ok && k < n; k++)
        ok = s[k].bytes == 0 || fwrite(s[k].data, 1, s[k].bytes, f) == s[k].bytes;
    ok = ok && fflush(f) == 0 && fsync(fd) == 0;
    int err = errno;
    if (f)
        ok = fclose(f) == 0 && ok;
    else
        close(fd);
    if (ok && rename(tmp, path) != 0) {
        err = errno;
        ok = false;
    }
    gcn_status st = GCN_OK;
    if (!ok) {
        unlink(tmp);
        remove_made_folder(tmp, made);
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot write: %s", path, strerror(err));
    }
    gcn_ctx_temp(ctx, false);
    free(tmp);
    return st;
}

gcn_status gcn_cache_write(gcn_ctx *ctx, const char *path, uint64_t fingerprint,
                           const gcn_dataset *ds)
{
    GCN_ARG(ctx, path && ds && ds->graph);
    gcn_section s[N_SECTIONS + 1];
    gcn_cache_header h;
    sections_of(ds, ds->graph, s + 1);
    fill_header(&h, fingerprint, ds, s + 1);
    s[0] = (gcn_section){&h, sizeof h};
    return gcn_file_write_atomic(ctx, path, s, N_SECTIONS + 1);
}

/* Header checks that need no payload; returns why the file is unusable, or
 * NULL.  *stale tells a cache of other sources from a damaged one. */
static const char *check_header(const gcn_cache_header *h, uint64_t fingerprint, int64_t file_size,
                                bool *stale)
{
    *stale = false;
    if (memcmp(h->magic, GCN_CACHE_MAGIC, sizeof h->magic) != 0)
        return "bad magic";
    if (h->version != GCN_CACHE_VERSION || h->endian != ENDIAN_MARK) {
        *stale = true;
        return "written by another version or byte order";
    }
    if (h->header_crc != crc_of(0, h, offsetof(gcn_cache_header, header_crc)))
        return "header checksum mismatch";
    if (h->fingerprint != fingerprint) {
        *stale = true;
        return "source files or settings changed";
    }
    if (h->n_nodes < 0 || h->n_nodes > GCN_DS_MAX_NODES || h->nnz < 0 || h->n_features < 0 ||
        h->n_classes < 0 || h->n_classes > GCN_DS_MAX_CLASSES || h->n_train < 0 ||
        h->n_valid < 0 || h->n_test < 0 ||
        (int64_t)h->n_train + h->n_valid + h->n_test > h->n_nodes ||
        (int64_t)h->n_features * h->n_nodes > GCN_DS_MAX_FEATURE_VALUES ||
        h->n_graphs < 0 || h->n_graphs > h->n_nodes ||
        (h->n_graphs > 0 ? h->n_graph_classes < 1 || h->n_graph_classes > h->n_graphs
                         : h->n_graph_classes != 0))
        return "sizes out of range";
    uint64_t graphs = h->n_graphs ? 2 * (uint64_t)h->n_graphs + 1 + (uint64_t)h->n_graph_classes
                                  : 0;
    uint64_t want = ((uint64_t)h->n_nodes + 1 + (uint64_t)h->nnz +
                     (uint64_t)h->n_nodes * (uint64_t)h->n_features +
                     (h->has_labels ? (uint64_t)h->n_nodes : 0) + (uint64_t)h->n_train +
                     (uint64_t)h->n_valid + (uint64_t)h->n_test + graphs) * 4;
    if (h->payload_bytes != want || (uint64_t)file_size != sizeof *h + want)
        return "size does not match its header (truncated?)";
    return NULL;
}

/* Allocates ds's arrays from the header and reads the payload into them;
 * returns the reason it is unusable, or NULL. */
static const char *read_payload(gcn_ctx *ctx, FILE *f, const gcn_cache_header *h,
                                gcn_dataset *ds, gcn_status *st)
{
    *st = gcn_graph_create(ctx, &ds->graph, h->n_nodes, h->nnz, false);
    ds->n_nodes = h->n_nodes;
    ds->n_features = h->n_features;
    ds->n_train = h->n_train;
    ds->n_valid = h->n_valid;
    ds->n_test = h->n_test;
    ds->n_classes = h->n_classes;
    ds->n_graphs = h->n_graphs;
    ds->n_graph_classes = h->n_graph_classes;
    size_t n = (size_t)h->n_nodes, n_graphs = (size_t)h->n_graphs;
    if (*st == GCN_OK && h->n_features > 0)
        *st = gcn_ds_malloc(ctx, (void **)&ds->features, n * (size_t)h->n_features, sizeof(float));
    if (*st == GCN_OK && h->has_labels)
        *st = gcn_ds_malloc(ctx, (void **)&ds->labels, n, sizeof(int32_t));
    int32_t **lists[3] = {&ds->train, &ds->valid, &ds->test};
    const int32_t counts[3] = {h->n_train, h->n_valid, h->n_test};
    for (int k = 0; k < 3 && *st == GCN_OK; k++)
        if (counts[k] > 0)
            *st = gcn_ds_malloc(ctx, (void **)lists[k], (size_t)counts[k], sizeof(int32_t));
    if (*st == GCN_OK && n_graphs > 0)
        *st = gcn_ds_malloc(ctx, (void **)&ds->graph_ptr, n_graphs + 1, sizeof(int32_t));
    if (*st == GCN_OK && n_graphs > 0)
        *st = gcn_ds_malloc(ctx, (void **)&ds->graph_labels, n_graphs, sizeof(int32_t));
    if (*st == GCN_OK && n_graphs > 0)
        *st = gcn_ds_malloc(ctx, (void **)&ds->graph_label_values, (size_t)h->n_graph_classes,
                            sizeof(int32_t));
    if (*st != GCN_OK)
        return "out of memory";
    gcn_section s[N_SECTIONS];
    sections_of(ds, ds->graph, s);
    uint32_t crc = (uint32_t)crc32_z(0, NULL, 0);
    for (int k = 0; k < N_SECTIONS; k++) {
        if (s[k].bytes && fread(s[k].data, 1, s[k].bytes, f) != s[k].bytes)
            return "short read";
        crc = crc_of(crc, s[k].data, s[k].bytes);
    }
    return crc == h->payload_crc ? NULL : "payload checksum mismatch";
}

/* Content checks on a payload whose checksum matched. */
static const char *check_content(gcn_ctx *ctx, const gcn_dataset *ds)
{
    if (gcn_graph_validate(ctx, ds->graph) != GCN_OK)
        return "malformed graph";
    for (int32_t i = 0; ds->labels && i < ds->n_nodes; i++)
        if (ds->labels[i] < -1 || ds->labels[i] >= ds->n_classes)
            return "label out of range";
    for (int64_t i = 0; i < (int64_t)ds->n_nodes * ds->n_features; i++)
        if (!isfinite(ds->features[i]))
            return "non-finite feature";
    if (gcn_ds_check_split(ctx, ds, "cache") != GCN_OK)
        return "bad split";
    if (ds->n_graphs > 0 && gcn_ds_check_graphs(ctx, ds, "cache") != GCN_OK)
        return "bad graph collection";
    return NULL;
}

gcn_status gcn_cache_read(gcn_ctx *ctx, const char *path, uint64_t fingerprint, gcn_dataset *ds,
                          bool *hit)
{
    *hit = false;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno != ENOENT)
            gcn_log(ctx, GCN_LOG_WARN, "cache %s unreadable (%s): parsing the sources", path,
                    strerror(errno));
        return GCN_OK;
    }
    gcn_cache_header h;
    struct stat sb;
    bool stale = false;
    gcn_status st = GCN_OK;
    const char *why = NULL;
    if (fstat(fileno(f), &sb) != 0 || fread(&h, sizeof h, 1, f) != 1)
        why = "shorter than its header";
    if (!why)
        why = check_header(&h, fingerprint, (int64_t)sb.st_size, &stale);
    if (!why)
        why = read_payload(ctx, f, &h, ds, &st);
    if (!why)
        why = check_content(ctx, ds);
    fclose(f);
    if (why) {
        gcn_ds_clear(ds);
        gcn_log(ctx, stale ? GCN_LOG_INFO : GCN_LOG_WARN, "cache %s %s (%s): rebuilding", path,
                stale ? "is stale" : "is corrupt", why);
        return st == GCN_ERR_NOMEM ? st : GCN_OK;
    }
    memcpy(ds->name, h.name, sizeof ds->name);
    ds->name[sizeof ds->name - 1] = '\0';
    ds->n_raw_edges = ds->graph->nnz;
    if (ds->n_features > 0)
        strcpy(ds->feature_source, "file");
    *hit = true;
    return GCN_OK;
}
