/* The permutation file beside the dataset cache
 * (<cache>.metis-16-256-4096-s<seed>.perm, <cache>.parts-4-nnz-s<seed>.perm,
 * <cache>.degree.perm): a checksummed header, order[] and each level's
 * part_ptr[], written atomically and validated in full before use. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

#define PERM_MAGIC "GCNPERM1"
#define PERM_VERSION 1u
#define ENDIAN_MARK 0x01020304u

/* File layout: this header, then order [n_nodes] and part_ptr of each level
 * [n_parts + 1], finest first.  All little-endian host order. */
typedef struct perm_header {
    char magic[8];
    uint32_t version;
    uint32_t endian;    /* 0x01020304 as written */
    int32_t method;
    int32_t sizes[GCN_REORDER_MAX_LEVELS]; /* asked for (METIS), 0 past the last;
                                              PARTS: N, then the node weight (1 for
                                              plain nnz) when balancing entries, then 1
                                              for contiguous runs */
    uint32_t seed;      /* METIS's (METIS and PARTS), 0 for the other methods */
    int32_t n_nodes, nnz;
    uint32_t graph_crc; /* crc32 of row_ptr then col_idx of the graph reordered */
    int32_t n_levels;
    int32_t level_size[GCN_REORDER_MAX_LEVELS];
    int32_t n_parts[GCN_REORDER_MAX_LEVELS];
    uint64_t payload_bytes;
    uint32_t payload_crc;
    uint32_t header_crc; /* crc32 of every byte above */
} perm_header;

_Static_assert(sizeof(perm_header) == 104, "permutation header layout");

static uint32_t crc_of(uint32_t crc, const void *data, size_t bytes)
{
    return bytes ? (uint32_t)crc32_z(crc, data, bytes) : crc;
}

/* What a file must match to be used: the header fields up to nnz and the
 * graph's checksum. */
static void key_of(const gcn_graph *g, gcn_reorder_method method, const int32_t *sizes,
                   int n_sizes, uint32_t seed, perm_header *k)
{
    memset(k, 0, sizeof *k);
    memcpy(k->magic, PERM_MAGIC, sizeof k->magic);
    k->version = PERM_VERSION;
    k->endian = ENDIAN_MARK;
    k->method = (int32_t)method;
    memcpy(k->sizes, sizes, (size_t)n_sizes * sizeof *sizes);
    k->seed = seed;
    k->n_nodes = g->n_nodes;
    k->nnz = g->nnz;
    k->graph_crc = crc_of(crc_of(0, g->row_ptr, ((size_t)g->n_nodes + 1) * sizeof(int32_t)),
                          g->col_idx, (size_t)g->nnz * sizeof(int32_t));
}

/* "<cache>.<method>[-<sizes>-s<seed>].perm" ("-N[-nnz[K]][-range]-s<seed>"
 * for PARTS); caller frees. */
static gcn_status perm_path(gcn_ctx *ctx, const char *cache, const perm_header *k, char **out)
{
    char tail[128];
    int len = snprintf(tail, sizeof tail, ".%s", gcn_reorder_method_name(k->method));
    if (k->method == GCN_REORDER_PARTS) {
        len += snprintf(tail + len, sizeof tail - (size_t)len, "-%d%s", k->sizes[0],
                        k->sizes[1] ? "-nnz" : "");
        if (k->sizes[1] > 1)
            len += snprintf(tail + len, sizeof tail - (size_t)len, "%d", k->sizes[1]);
        if (k->sizes[2])
            len += snprintf(tail + len, sizeof tail - (size_t)len, "-range");
    } else
        for (int i = 0; i < GCN_REORDER_MAX_LEVELS && k->sizes[i]; i++)
            len += snprintf(tail + len, sizeof tail - (size_t)len, "-%d", k->sizes[i]);
    if (k->method == GCN_REORDER_METIS || k->method == GCN_REORDER_PARTS)
        snprintf(tail + len, sizeof tail - (size_t)len, "-s%u", k->seed);
    size_t n = strlen(cache) + strlen(tail) + sizeof ".perm";
    GCN_TRY(gcn_ds_malloc(ctx, (void **)out, n, 1));
    snprintf(*out, n, "%s%s.perm", cache, tail);
    return GCN_OK;
}

/* The payload sections of r in file order. */
static int sections_of(const gcn_reorder *r, gcn_section s[1 + GCN_REORDER_MAX_LEVELS])
{
    s[0] = (gcn_section){r->order, (size_t)r->n_nodes * sizeof(int32_t)};
    for (int k = 0; k < r->n_levels; k++)
        s[k + 1] = (gcn_section){r->part_ptr[k], ((size_t)r->n_parts[k] + 1) * sizeof(int32_t)};
    return 1 + r->n_levels;
}

static gcn_status perm_write(gcn_ctx *ctx, const char *path, const perm_header *key,
                             const gcn_reorder *r)
{
    gcn_section s[2 + GCN_REORDER_MAX_LEVELS];
    perm_header h = *key;
    int n = sections_of(r, s + 1);
    h.n_levels = r->n_levels;
    uint32_t crc = crc_of(0, NULL, 0);
    for (int k = 0; k < r->n_levels; k++) {
        h.level_size[k] = r->size[k];
        h.n_parts[k] = r->n_parts[k];
    }
    for (int k = 1; k <= n; k++) {
        h.payload_bytes += s[k].bytes;
        crc = crc_of(crc, s[k].data, s[k].bytes);
    }
    h.payload_crc = crc;
    h.header_crc = crc_of(0, &h, offsetof(perm_header, header_crc));
    s[0] = (gcn_section){&h, sizeof h};
    return gcn_file_write_atomic(ctx, path, s, n + 1);
}

/* Whether size is one of the sizes asked for. */
static bool asked_for(const perm_header *key, int32_t size)
{
    for (int k = 0; k < GCN_REORDER_MAX_LEVELS; k++)
        if (key->sizes[k] == size && size >= 2)
            return true;
    return false;
}

/* Header checks that need no payload; returns why the file is unusable, or
 * NULL.  *stale tells a file for other options or another graph from a
 * damaged one. */
static const char *check_header(const perm_header *h, const perm_header *key, int64_t file_size,
                                bool *stale)
{
    *stale = false;
    if (memcmp(h->magic, PERM_MAGIC, sizeof h->magic) != 0)
        return "bad magic";
    *stale = h->version != PERM_VERSION || h->endian != ENDIAN_MARK;
    if (*stale)
        return "written by another version or byte order";
    if (h->header_crc != crc_of(0, h, offsetof(perm_header, header_crc)))
        return "header checksum mismatch";
    *stale = h->method != key->method || h->seed != key->seed ||
             memcmp(h->sizes, key->sizes, sizeof h->sizes) != 0;
    if (*stale)
        return "computed with other options or another seed";
    *stale = h->n_nodes != key->n_nodes || h->nnz != key->nnz || h->graph_crc != key->graph_crc;
    if (*stale)
        return "computed for another graph";
    if (h->n_levels < 0 || h->n_levels > GCN_REORDER_MAX_LEVELS)
        return "level count out of range";
    if (h->method == GCN_REORDER_PARTS &&
        (h->n_levels != 1 || h->n_parts[0] != key->sizes[0] ||
         h->level_size[0] != (h->n_nodes + (int64_t)key->sizes[0] - 1) / key->sizes[0]))
        return "parts out of range";
    uint64_t want = (uint64_t)h->n_nodes;
    for (int k = 0; k < h->n_levels; k++) {
        if (h->method != GCN_REORDER_PARTS &&
            (h->n_parts[k] < 2 || h->n_parts[k] > h->n_nodes ||
             !asked_for(key, h->level_size[k]) ||
             (k > 0 && h->level_size[k] <= h->level_size[k - 1])))
            return "levels out of range";
        want += (uint64_t)h->n_parts[k] + 1;
    }
    want *= sizeof(int32_t);
    if (h->payload_bytes != want || (uint64_t)file_size != sizeof *h + want)
        return "size does not match its header (truncated?)";
    return NULL;
}

/* Whether every boundary of the coarse level is one of the fine level. */
static bool nested(const int32_t *fine, int32_t n_fine, const int32_t *coarse, int32_t n_coarse)
{
    int32_t j = 0;
    for (int32_t i = 0; i <= n_coarse; i++) {
        while (j < n_fine && fine[j] < coarse[i])
            j++;
        if (fine[j] != coarse[i])
            return false;
    }
    return true;
}

/* Content checks on a payload whose checksum matched; fills position. */
static const char *check_content(gcn_reorder *r)
{
    for (int32_t i = 0; i < r->n_nodes; i++)
        r->position[i] = -1;
    for (int32_t i = 0; i < r->n_nodes; i++) {
        int32_t v = r->order[i];
        if (v < 0 || v >= r->n_nodes || r->position[v] >= 0)
            return "order is not a permutation";
        r->position[v] = i;
    }
    for (int k = 0; k < r->n_levels; k++) {
        const int32_t *p = r->part_ptr[k];
        if (p[0] != 0 || p[r->n_parts[k]] != r->n_nodes)
            return "part_ptr does not run from 0 to n_nodes";
        for (int32_t q = 0; q < r->n_parts[k]; q++)
            if (p[q + 1] < p[q])
                return "part_ptr decreases";
        if (k > 0 && !nested(r->part_ptr[k - 1], r->n_parts[k - 1], p, r->n_parts[k]))
            return "levels are not nested";
    }
    return NULL;
}

/* Allocates r from the header, reads the payload into it; returns the
 * reason it is unusable, or NULL. */
static const char *read_payload(gcn_ctx *ctx, FILE *f, const perm_header *h, gcn_reorder **out,
                                gcn_status *st)
{
    *st = gcn_reorder_alloc(ctx, (gcn_reorder_method)h->method, h->n_nodes, out);
    gcn_reorder *r = *out;
    for (int k = 0; *st == GCN_OK && k < h->n_levels; k++) {
        r->size[k] = h->level_size[k];
        r->n_parts[k] = h->n_parts[k];
        *st = gcn_ds_malloc(ctx, (void **)&r->part_ptr[k], (size_t)h->n_parts[k] + 1,
                            sizeof(int32_t));
        r->n_levels = k + 1;
    }
    if (*st != GCN_OK)
        return "out of memory";
    gcn_section s[1 + GCN_REORDER_MAX_LEVELS];
    int n = sections_of(r, s);
    uint32_t crc = crc_of(0, NULL, 0);
    for (int k = 0; k < n; k++) {
        if (s[k].bytes && fread(s[k].data, 1, s[k].bytes, f) != s[k].bytes)
            return "short read";
        crc = crc_of(crc, s[k].data, s[k].bytes);
    }
    if (crc != h->payload_crc)
        return "payload checksum mismatch";
    return check_content(r);
}

/* *out is the file's reordering when it is valid and current; otherwise
 * NULL, with the reason logged.  Only running out of memory fails. */
static gcn_status perm_read(gcn_ctx *ctx, const char *path, const perm_header *key,
                            gcn_reorder **out)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        gcn_log(ctx, errno == ENOENT ? GCN_LOG_INFO : GCN_LOG_WARN,
                "permutation %s %s: computing it", path,
                errno == ENOENT ? "not cached yet" : strerror(errno));
        return GCN_OK;
    }
    perm_header h;
    struct stat sb;
    bool stale = false;
    gcn_status st = GCN_OK;
    const char *why = NULL;
    if (fstat(fileno(f), &sb) != 0 || fread(&h, sizeof h, 1, f) != 1)
        why = "shorter than its header";
    if (!why)
        why = check_header(&h, key, (int64_t)sb.st_size, &stale);
    if (!why)
        why = read_payload(ctx, f, &h, out, &st);
    fclose(f);
    if (!why)
        return GCN_OK;
    gcn_reorder_free(out);
    gcn_log(ctx, stale ? GCN_LOG_INFO : GCN_LOG_WARN, "permutation %s %s (%s): recomputing it",
            path, stale ? "is stale" : "is corrupt", why);
    return st == GCN_ERR_NOMEM ? st : GCN_OK;
}

gcn_status gcn_reorder_cached(gcn_ctx *ctx, const gcn_graph *g, const gcn_reorder_opts *o,
                              uint32_t seed, const char *cache, bool can_write,
                              const atomic_bool *stop, gcn_reorder **out)
{
    GCN_ARG(ctx, g && o && cache && out);
    *out = NULL;
    int32_t sizes[GCN_REORDER_MAX_LEVELS];
    int n_sizes;
    GCN_TRY(gcn_reorder_check_opts(ctx, o, sizes, &n_sizes));
    GCN_TRY(gcn_graph_validate(ctx, g));
    perm_header key;
    char *path = NULL;
    gcn_status st = GCN_OK;
    if (o->method == GCN_REORDER_PARTS) {
        sizes[0] = o->n_parts;
        sizes[1] = !o->balance_nnz ? 0 : o->node_weight > 1 ? o->node_weight : 1;
        sizes[2] = o->contiguous;
        n_sizes = 3;
    }
    key_of(g, o->method, sizes, n_sizes, seed, &key);
    GCN_CHECK(perm_path(ctx, cache, &key, &path));
    GCN_CHECK(perm_read(ctx, path, &key, out));
    if (*out) {
        (*out)->from_cache = true;
        if ((st = gcn_reorder_count_cut(ctx, g, *out)) != GCN_OK)
            gcn_reorder_free(out);
        goto cleanup;
    }
    GCN_CHECK(gcn_reorder_compute_seeded(ctx, g, o, seed, stop, out));
    if (!can_write)
        gcn_log(ctx, GCN_LOG_INFO, "%s not written: the folder is read-only", path);
    else if (perm_write(ctx, path, &key, *out) != GCN_OK)
        gcn_log(ctx, GCN_LOG_WARN, "%s", gcn_last_error(ctx));
cleanup:
    free(path);
    return st;
}
