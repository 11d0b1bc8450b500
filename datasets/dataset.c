/* gcn_dataset_load: resolves a name, path, "tu:" name or generator spec,
 * reads the binary cache or parses the sources (and writes the cache), then
 * applies the graph, feature and split options and the reordering. */
#include <ctype.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

gcn_dataset_opts gcn_dataset_default_opts(void)
{
    return (gcn_dataset_opts){
        .size = sizeof(gcn_dataset_opts),
        .root = "data",
        .features = NULL,
        .normalize_features = false,
        .symmetrize = true,
        .remove_self_loops = true,
        .split = "auto",
        .split_scheme = NULL,
        .train_per_class = 20,
        .n_valid = 500,
        .n_test = 1000,
        .cache = true,
        .cache_dir = NULL,
        .reorder = NULL,
        .labels = NULL,
    };
}

typedef enum format { FMT_OGB, FMT_TEXTDIR, FMT_EDGELIST, FMT_MTX, FMT_TU } format;

/* A resolved dataset on disk. */
typedef struct source {
    format fmt;
    char *path;   /* the folder, or the file */
    char *dir;    /* the folder holding the data (path for folder formats) */
    char *base;   /* file name, for single-file formats */
    char *scheme; /* OGB split scheme, or NULL */
    char *prefix; /* TU file names' prefix: the folder's name */
    char name[64];
} source;

static void source_free(source *s)
{
    free(s->path);
    free(s->dir);
    free(s->base);
    free(s->scheme);
    free(s->prefix);
    memset(s, 0, sizeof *s);
}

/* snprintf that reports truncation. */
static bool format_path(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool format_path(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < size;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The first existing candidate for a dataset name under root. */
static gcn_status find_by_name(gcn_ctx *ctx, const char *spec, const char *root, char **path)
{
    static const char *const patterns[] = {
        "%s/%s",          "%s/planetoid/%s",      "%s/attributed/%s",
        "%s/graphs/%s",   "%s/graphs/%s.txt.gz",  "%s/graphs/%s.txt",
        "%s/graphs/%s.mtx.gz", "%s/graphs/%s.mtx", NULL};
    char buf[PATH_MAX];
    *path = NULL;
    if (strncmp(spec, "ogbn-", 5) == 0 || strncmp(spec, "ogbn_", 5) == 0) {
        if (format_path(buf, sizeof buf, "%s/ogbn_%s", root, spec + 5) && gcn_path_is_dir(buf))
            *path = strdup(buf);
    }
    for (int k = 0; !*path && patterns[k]; k++) {
        int n = snprintf(buf, sizeof buf, patterns[k], root, spec);
        if (n >= 0 && (size_t)n < sizeof buf && (gcn_path_is_dir(buf) || gcn_path_is_file(buf)))
            *path = strdup(buf);
    }
    if (*path)
        return GCN_OK;
    return GCN_ERROR(ctx, GCN_ERR_NOT_FOUND,
                     "dataset '%s' not found: no such file or folder, and nothing under root "
                     "'%s' (tried ogbn_*, planetoid/, attributed/, graphs/)",
                     spec, root);
}

/* Whether a (possibly gzip) file starts with a Matrix Market banner. */
static bool sniff_mtx(gcn_ctx *ctx, const char *path)
{
    gcn_reader r;
    char *line = NULL;
    if (gcn_reader_open(ctx, &r, path, NULL) != GCN_OK)
        return false;
    bool mtx = gcn_reader_line(&r, &line) == GCN_OK && line &&
               strncmp(line, "%%MatrixMarket", 14) == 0;
    gcn_reader_close(&r);
    return mtx;
}

/* The last part of path, without trailing slashes, cut to size - 1 bytes. */
static void last_part(const char *path, char *out, size_t size)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    size_t n = strlen(tmp);
    while (n > 1 && tmp[n - 1] == '/')
        tmp[--n] = '\0';
    const char *b = strrchr(tmp, '/') ? strrchr(tmp, '/') + 1 : tmp;
    size_t len = strlen(b) < size - 1 ? strlen(b) : size - 1;
    memcpy(out, b, len);
    out[len] = '\0';
}

static void set_name(source *s)
{
    last_part(s->path, s->name, sizeof s->name);
    if (s->fmt == FMT_OGB && strncmp(s->name, "ogbn_", 5) == 0)
        s->name[4] = '-';
    if (s->fmt == FMT_EDGELIST || s->fmt == FMT_MTX) {
        if (ends_with(s->name, ".gz"))
            s->name[strlen(s->name) - 3] = '\0';
        char *dot = strrchr(s->name, '.');
        if (dot && dot != s->name)
            *dot = '\0';
    }
}

/* "tu:NAME": the folder NAME, else <root>/tu/NAME. */
static gcn_status find_tu(gcn_ctx *ctx, const char *name, const char *root, char **path)
{
    char buf[PATH_MAX];
    *path = NULL;
    if (gcn_path_is_dir(name))
        *path = strdup(name);
    else if (format_path(buf, sizeof buf, "%s/tu/%s", root, name) && gcn_path_is_dir(buf))
        *path = strdup(buf);
    else
        return GCN_ERROR(ctx, GCN_ERR_NOT_FOUND,
                         "dataset 'tu:%s' not found: no folder %s, nor %s/tu/%s", name, name,
                         root, name);
    return GCN_OK;
}

static gcn_status resolve(gcn_ctx *ctx, const char *spec, const gcn_dataset_opts *o, source *s)
{
    if (strncmp(spec, "tu:", 3) == 0)
        GCN_TRY(find_tu(ctx, spec + 3, o->root, &s->path));
    else if (gcn_path_is_dir(spec) || gcn_path_is_file(spec))
        s->path = strdup(spec);
    else
        GCN_TRY(find_by_name(ctx, spec, o->root, &s->path));
    if (!s->path)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory");
    if (gcn_path_is_dir(s->path)) {
        char probe[PATH_MAX], prefix[PATH_MAX];
        last_part(s->path, prefix, sizeof prefix);
        bool ogb = format_path(probe, sizeof probe, "%s/raw/num-node-list.csv.gz", s->path) &&
                   gcn_path_is_file(probe);
        bool text = format_path(probe, sizeof probe, "%s/edges.txt", s->path) &&
                    gcn_path_is_file(probe);
        bool tu = gcn_tu_is_folder(s->path, prefix);
        if (!ogb && !text && !tu)
            return GCN_ERROR(ctx, GCN_ERR_FORMAT,
                             "%s: not a dataset folder (none of raw/num-node-list.csv.gz, "
                             "edges.txt, %s_A.txt)",
                             s->path, prefix);
        s->fmt = ogb ? FMT_OGB : text ? FMT_TEXTDIR : FMT_TU;
        s->dir = strdup(s->path);
        if (tu && !(s->prefix = strdup(prefix)))
            return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory");
        if (ogb)
            GCN_TRY(gcn_ogb_scheme(ctx, s->path, o->split_scheme, &s->scheme));
    } else {
        bool mtx = ends_with(s->path, ".mtx") || ends_with(s->path, ".mtx.gz") ||
                   sniff_mtx(ctx, s->path);
        s->fmt = mtx ? FMT_MTX : FMT_EDGELIST;
        const char *slash = strrchr(s->path, '/');
        s->base = strdup(slash ? slash + 1 : s->path);
        size_t dir_len = slash ? (size_t)(slash - s->path) + (slash == s->path) : 0;
        s->dir = slash ? strndup(s->path, dir_len) : strdup(".");
    }
    if (!s->dir || ((s->fmt == FMT_EDGELIST || s->fmt == FMT_MTX) && !s->base))
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory");
    set_name(s);
    return GCN_OK;
}

static uint64_t source_fingerprint(const source *s)
{
    uint64_t salt = (uint64_t)s->fmt * 0x9e3779b97f4a7c15ull;
    if (s->fmt == FMT_TEXTDIR)
        return gcn_cache_fingerprint(s->dir, gcn_textdir_files, salt);
    if (s->fmt == FMT_TU)
        return gcn_tu_fingerprint(s->dir, s->prefix, salt);
    if (s->fmt != FMT_OGB) {
        const char *files[2] = {s->base, NULL};
        return gcn_cache_fingerprint(s->dir, files, salt);
    }
    char split[3][PATH_MAX];
    const char *files[9];
    int n = 0;
    for (; gcn_ogb_files[n]; n++)
        files[n] = gcn_ogb_files[n];
    static const char *const parts[3] = {"train", "valid", "test"};
    for (int k = 0; s->scheme && k < 3; k++) {
        snprintf(split[k], PATH_MAX, "split/%s/%s.csv.gz", s->scheme, parts[k]);
        files[n++] = split[k];
    }
    files[n] = NULL;
    for (const char *p = s->scheme; p && *p; p++)
        salt = (salt ^ (unsigned char)*p) * 0x100000001b3ull;
    return gcn_cache_fingerprint(s->dir, files, salt);
}

/* Writable for this process and not marked read-only: a folder without
 * any write permission bit counts as read-only even for root. */
static bool writable_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0222) &&
           access(path, W_OK) == 0;
}

/* Whether folder can be written, or made in a writable folder. */
static bool can_create(const char *folder)
{
    if (gcn_path_is_dir(folder))
        return writable_dir(folder);
    char parent[PATH_MAX];
    size_t len = strlen(folder);
    while (len > 1 && folder[len - 1] == '/')
        len--;
    while (len > 0 && folder[len - 1] != '/')
        len--;
    while (len > 1 && folder[len - 1] == '/')
        len--;
    snprintf(parent, sizeof parent, "%.*s", len ? (int)len : 1, len ? folder : ".");
    return writable_dir(parent);
}

/* A generated graph has no cache of its own, but with cache_dir its
 * reorderings are kept there: "<cache_dir>/generated-<spec>" is the prefix
 * of their files (characters other than letters, digits and "=,.:_-" as
 * "_"; each file also holds the graph's checksum, so a file of another
 * graph is recomputed). */
static gcn_status generated_cache(gcn_ctx *ctx, const char *spec, const char *cache_dir,
                                  char **path, bool *can_write)
{
    char name[160], buf[PATH_MAX];
    size_t n = 0;
    for (const char *c = spec; *c && n + 1 < sizeof name; c++)
        name[n++] = isalnum((unsigned char)*c) || strchr("=,.:_-", *c) ? *c : '_';
    name[n] = '\0';
    if (!format_path(buf, sizeof buf, "%s/generated-%s", cache_dir, name))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s: cache path too long", cache_dir);
    *can_write = can_create(cache_dir);
    if (!(*path = strdup(buf)))
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory");
    return GCN_OK;
}

/* Decides where the cache lives (the permutation file goes beside it).
 * *can_write says whether the cache may be written or rewritten there; the
 * folder is created if needed. */
static gcn_status cache_location(gcn_ctx *ctx, const source *s, const gcn_dataset_opts *o,
                                 char **path, bool *can_write)
{
    char buf[PATH_MAX], folder[PATH_MAX];
    bool fits;
    if (o->cache_dir) {
        /* Named after the data's absolute path, so that one cache folder
         * serves datasets of the same name under different roots. */
        char abs[PATH_MAX] = "";
        if (s->path[0] != '/' && !getcwd(abs, sizeof abs))
            abs[0] = '\0';
        uint64_t h = 0xcbf29ce484222325ull;
        for (int part = 0; part < 2; part++)
            for (const char *p = part ? s->path : abs; *p; p++)
                h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
        fits = format_path(folder, sizeof folder, "%s", o->cache_dir) &&
               format_path(buf, sizeof buf, "%s/%s-%08x.gcn-v1.bin", folder, s->name,
                           (unsigned)(h >> 32));
    } else {
        fits = format_path(folder, sizeof folder, "%s/processed", s->dir) &&
               format_path(buf, sizeof buf, "%s/%s%sgcn-v1.bin", folder, s->base ? s->base : "",
                           s->base ? "." : "");
    }
    if (!fits)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s: cache path too long", s->path);
    /* The folder is made when the cache is written (gcn_file_write_atomic),
     * so that a load that fails leaves nothing behind. */
    *can_write = can_create(folder);
    *path = strdup(buf);
    return *path ? GCN_OK : GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory");
}

static gcn_status parse_source(gcn_ctx *ctx, const source *s, gcn_dataset *ds)
{
    snprintf(ds->name, sizeof ds->name, "%s", s->name);
    switch (s->fmt) {
    case FMT_OGB: return gcn_load_ogb(ctx, s->dir, s->scheme, ds);
    case FMT_TEXTDIR: return gcn_load_textdir(ctx, s->dir, ds);
    case FMT_MTX: return gcn_load_mtx(ctx, s->path, ds);
    case FMT_TU: return gcn_load_tu(ctx, s->dir, s->prefix, ds);
    default: return gcn_load_edgelist(ctx, s->path, ds);
    }
}

/* Reads the dataset from its cache when the cache is current; otherwise
 * parses the source files and writes the cache.  cache is NULL when no
 * cache is used. */
static gcn_status read_source(gcn_ctx *ctx, const source *s, const char *cache, bool can_write,
                              gcn_dataset *ds)
{
    bool hit = false;
    uint64_t fp = source_fingerprint(s);
    if (cache)
        GCN_TRY(gcn_cache_read(ctx, cache, fp, ds, &hit));
    ds->from_cache = hit;
    if (hit)
        return GCN_OK;
    GCN_TRY(parse_source(ctx, s, ds));
    if (cache && !can_write)
        gcn_log(ctx, GCN_LOG_INFO,
                "%s not written: the folder is read-only (set cache_dir to cache elsewhere)",
                cache);
    else if (cache && gcn_cache_write(ctx, cache, fp, ds) != GCN_OK)
        gcn_log(ctx, GCN_LOG_WARN, "%s", gcn_last_error(ctx));
    return GCN_OK;
}

static gcn_status apply_graph_opts(gcn_ctx *ctx, gcn_dataset *ds, const gcn_dataset_opts *o)
{
    gcn_graph *g = NULL;
    if (o->symmetrize) {
        GCN_TRY(gcn_graph_symmetrize(ctx, ds->graph, &g));
        gcn_graph_free(&ds->graph);
        ds->graph = g;
    }
    if (o->remove_self_loops && gcn_graph_count_self_loops(ds->graph) > 0) {
        GCN_TRY(gcn_graph_remove_self_loops(ctx, ds->graph, &g));
        gcn_graph_free(&ds->graph);
        ds->graph = g;
    }
    return GCN_OK;
}

static gcn_status apply_feature_opts(gcn_ctx *ctx, gcn_dataset *ds, const source *s,
                                     const gcn_dataset_opts *o)
{
    const char *how = o->features;
    if (how && strcmp(how, "file") != 0)
        GCN_TRY(gcn_dataset_substitute_features(ctx, ds, how));
    else if (ds->n_features == 0 && s && (s->fmt == FMT_OGB || s->fmt == FMT_TEXTDIR))
        return GCN_ERROR(ctx, GCN_ERR_IO,
                         "%s/%s: missing, so %s has no node features; to substitute them, set "
                         "the features option to \"random:D\" (D seeded Gaussian columns, e.g. "
                         "random:128) or \"degree\"",
                         s->dir, s->fmt == FMT_OGB ? "raw/node-feat.csv.gz" : "features.txt",
                         ds->name);
    else if (ds->n_features == 0)
        snprintf(ds->feature_source, sizeof ds->feature_source, "none");
    if (o->normalize_features)
        GCN_TRY(gcn_dataset_normalize_features(ctx, ds));
    if (o->labels && strcmp(o->labels, "file") != 0)
        GCN_TRY(gcn_dataset_substitute_labels(ctx, ds, o->labels));
    return GCN_OK;
}

static gcn_status apply_split_opts(gcn_ctx *ctx, gcn_dataset *ds, const gcn_dataset_opts *o)
{
    const char *mode = o->split ? o->split : "auto";
    bool shipped = ds->n_train + ds->n_valid + ds->n_test > 0;
    if (strcmp(mode, "random") == 0 || (strcmp(mode, "auto") == 0 && !shipped && ds->labels))
        return gcn_dataset_draw_split(ctx, ds, o->train_per_class, o->n_valid, o->n_test);
    if (strcmp(mode, "file") == 0 && !shipped)
        return GCN_ERROR(ctx, GCN_ERR_NOT_FOUND,
                         "%s: no split is shipped with the dataset (split = auto or random "
                         "draws one)",
                         ds->name);
    if (strcmp(mode, "auto") != 0 && strcmp(mode, "file") != 0)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "split option '%s': expected auto, file or random", mode);
    return GCN_OK;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

gcn_status gcn_dataset_load(gcn_ctx *ctx, gcn_dataset **out, const char *spec,
                            const gcn_dataset_opts *opts)
{
    GCN_ARG(ctx, out && spec && spec[0]);
    *out = NULL;
    gcn_dataset_opts o = gcn_dataset_default_opts();
    if (opts)
        GCN_TRY(gcn_struct_import(ctx, "gcn_dataset_opts", &o, &o, sizeof o, opts));
    if (!o.root)
        o.root = "data";
    gcn_reorder_opts reorder = gcn_reorder_default_opts(GCN_REORDER_NONE);
    if (o.reorder)
        GCN_TRY(gcn_reorder_parse(ctx, o.reorder, &reorder));
    double t0 = now_ms();
    source s = {0};
    char *cache = NULL;
    gcn_status st = GCN_OK;
    bool generated = false, can_write = false;
    gcn_dataset *ds = calloc(1, sizeof *ds);
    if (!ds)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory");
    GCN_CHECK(gcn_ds_generate(ctx, spec, ds, &generated));
    if (generated && o.cache && o.cache_dir)
        GCN_CHECK(generated_cache(ctx, spec, o.cache_dir, &cache, &can_write));
    if (!generated) {
        GCN_CHECK(resolve(ctx, spec, &o, &s));
        if (o.cache)
            GCN_CHECK(cache_location(ctx, &s, &o, &cache, &can_write));
        GCN_CHECK(read_source(ctx, &s, cache, can_write, ds));
    }
    GCN_CHECK(apply_graph_opts(ctx, ds, &o));
    GCN_CHECK(apply_feature_opts(ctx, ds, generated ? NULL : &s, &o));
    GCN_CHECK(apply_split_opts(ctx, ds, &o));
    if (cache && strlen(cache) < sizeof ds->cache_path) {
        strcpy(ds->cache_path, cache);
        ds->cache_writable = can_write;
    }
    GCN_CHECK(gcn_ds_reorder(ctx, ds, &reorder, cache, can_write));
    gcn_log(ctx, GCN_LOG_INFO, "%s: loaded in %.0f ms (%s)", ds->name, now_ms() - t0,
            generated ? "generated" : ds->from_cache ? "from the cache" : "parsed");
    *out = ds;
    ds = NULL;
cleanup:
    gcn_dataset_free(&ds);
    source_free(&s);
    free(cache);
    return st;
}
