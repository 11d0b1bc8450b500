/* The dataset fuzzing harness: turns arbitrary bytes into dataset files in
 * a scratch folder (optionally gzip-compressed and cut short), loads them
 * through the public API (or the cache reader), exercises the result
 * (batches and folds too for a graph collection) and returns how it went. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "datasets/internal.h"
#include "datasets/pickle.h"
#include "gcn.h"
#include "harness.h"

#define SEP 0x1E
#define MAX_SECTIONS 8

/* A fresh folder, in memory (/dev/shm) where there is one. */
static char *scratch(void)
{
    struct stat sb;
    char tmpl[64];
    snprintf(tmpl, sizeof tmpl, "%s/gcn-fuzz-XXXXXX",
             stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) ? "/dev/shm" : "/tmp");
    char *dir = mkdtemp(tmpl);
    return dir ? strdup(dir) : NULL;
}

static void rmtree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            rmtree(path);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* gzip of n bytes in a new buffer; *out_n is its length. */
static uint8_t *gzip_bytes(const uint8_t *p, size_t n, size_t *out_n)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    size_t cap = deflateBound(&z, (uLong)n) + 64;
    uint8_t *out = malloc(cap);
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (!out || deflate(&z, Z_FINISH) != Z_STREAM_END) {
        free(out);
        deflateEnd(&z);
        return NULL;
    }
    *out_n = z.total_out;
    deflateEnd(&z);
    return out;
}

/* Writes dir/rel, creating its folders; gzip-compressed and then cut by
 * `cut` bytes when gz. */
static void write_file(const char *dir, const char *rel, const uint8_t *p, size_t n, bool gz,
                       unsigned cut)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    for (char *s = path + strlen(dir) + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(path, 0755);
            *s = '/';
        }
    uint8_t *z = NULL;
    if (gz) {
        size_t zn = 0;
        z = gzip_bytes(p, n, &zn);
        if (!z)
            return;
        p = z;
        n = zn > cut ? zn - cut : 0;
    }
    FILE *f = fopen(path, "wb");
    if (f) {
        if (n)
            fwrite(p, 1, n, f);
        fclose(f);
    }
    free(z);
}

static gcn_ctx *new_ctx(void)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CPU;
    o.seed = 1;
    gcn_ctx *ctx = NULL;
    return gcn_ctx_create(&ctx, &o) == GCN_OK ? ctx : NULL;
}

/* What graph classification does with a collection: a batch of all its
 * graphs in reverse order (checked), and two folds when it has two
 * graphs. */
static gcn_status use_graphs(gcn_ctx *ctx, const gcn_dataset *ds)
{
    int32_t n = ds->n_graphs, *ids = malloc((size_t)n * sizeof *ids);
    if (!ids)
        return GCN_ERR_NOMEM;
    for (int32_t g = 0; g < n; g++)
        ids[g] = n - 1 - g;
    gcn_graph_batch *b = NULL;
    gcn_status st = gcn_graph_batch_build(ctx, ds, ids, n, &b);
    if (st == GCN_OK)
        st = gcn_graph_validate(ctx, b->graph);
    if (st == GCN_OK && n >= 2)
        st = gcn_graph_folds(ctx, ds, 2, 1, ids);
    gcn_graph_batch_free(&b);
    free(ids);
    return st;
}

/* What a trainer does with a loaded dataset; the first failure. */
static gcn_status use(gcn_ctx *ctx, const gcn_dataset *ds)
{
    char text[2048];
    gcn_dataset_describe(ds, text, sizeof text);
    gcn_csr *a = NULL;
    gcn_status st = gcn_dataset_adjacency(ctx, ds, GCN_ADJ_GCN, &a);
    gcn_csr_free(&a);
    if (st == GCN_OK)
        st = gcn_dataset_adjacency(ctx, ds, GCN_ADJ_RAW, &a);
    gcn_csr_free(&a);
    gcn_dataset_device dev;
    if (st == GCN_OK && (st = gcn_dataset_upload(ctx, ds, &dev)) == GCN_OK)
        gcn_dataset_device_free(&dev);
    if (st == GCN_OK && ds->n_graphs > 0)
        st = use_graphs(ctx, ds);
    return st;
}

static gcn_status load(const char *spec, const gcn_dataset_opts *o)
{
    gcn_ctx *ctx = new_ctx();
    if (!ctx)
        return GCN_ERR_NOMEM;
    gcn_dataset *ds = NULL;
    gcn_status st = gcn_dataset_load(ctx, &ds, spec, o);
    if (st == GCN_OK)
        st = use(ctx, ds);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    return st;
}

/* Splits at SEP into at most MAX_SECTIONS sections; returns how many. */
static int sections(const uint8_t *data, size_t size, const uint8_t **sec, size_t *len)
{
    int n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= size && n < MAX_SECTIONS; i++)
        if (i == size || data[i] == SEP) {
            sec[n] = data + start;
            len[n++] = i - start;
            start = i + 1;
        }
    return n;
}

static gcn_dataset_opts opts_from(uint8_t flags)
{
    gcn_dataset_opts o = gcn_dataset_default_opts();
    o.cache = false;
    o.features = flags & 1 ? "degree" : NULL;
    o.symmetrize = !(flags & 2);
    o.normalize_features = flags & 4;
    o.split = flags & 8 ? "random" : "auto";
    o.train_per_class = 2;
    o.n_valid = 3;
    o.n_test = 3;
    return o;
}

static gcn_status one_file(const uint8_t *data, size_t size, const char *name,
                           const char *csv_name)
{
    if (size < 1)
        return GCN_ERR_INVALID_ARG;
    char *dir = scratch();
    if (!dir)
        return GCN_ERR_IO;
    uint8_t flags = data[0];
    const char *rel = flags & 32 ? csv_name : name;
    write_file(dir, rel, data + 1, size - 1, flags & 1, (flags >> 1) & 15);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    gcn_dataset_opts o = opts_from(0);
    gcn_status st = load(path, &o);
    rmtree(dir);
    free(dir);
    return st;
}

gcn_status gcn_fuzz_edgelist(const uint8_t *data, size_t size)
{
    return one_file(data, size, "g.txt", "g.csv");
}

gcn_status gcn_fuzz_mtx(const uint8_t *data, size_t size)
{
    return one_file(data, size, "g.mtx", "g.mtx.gz");
}

/* Writes the sections of body (separated by SEP) as files[k] under a
 * scratch folder, file k gzip'd and then cut by `cut` bytes when bit k of
 * gz is set, and loads <scratch>/folder with o. */
static gcn_status load_folder(const uint8_t *body, size_t size, const char *const *files,
                              int n_files, unsigned gz, unsigned cut, const char *folder,
                              const gcn_dataset_opts *o)
{
    char *dir = scratch();
    if (!dir)
        return GCN_ERR_IO;
    const uint8_t *sec[MAX_SECTIONS];
    size_t len[MAX_SECTIONS];
    int n = sections(body, size, sec, len);
    for (int k = 0; k < n && k < n_files; k++)
        write_file(dir, files[k], sec[k], len[k], (gz >> k) & 1, cut);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, folder);
    gcn_status st = load(path, o);
    rmtree(dir);
    free(dir);
    return st;
}

gcn_status gcn_fuzz_textdir(const uint8_t *data, size_t size)
{
    static const char *const files[] = {"d/meta.txt",  "d/edges.txt", "d/labels.txt",
                                        "d/features.txt", "d/train.txt", "d/val.txt",
                                        "d/test.txt"};
    if (size < 1)
        return GCN_ERR_INVALID_ARG;
    gcn_dataset_opts o = opts_from(data[0]);
    return load_folder(data + 1, size - 1, files, 7, 0, 0, "d", &o);
}

gcn_status gcn_fuzz_ogb(const uint8_t *data, size_t size)
{
    static const char *const files[] = {
        "ogbn_f/raw/num-node-list.csv.gz", "ogbn_f/raw/num-edge-list.csv.gz",
        "ogbn_f/raw/edge.csv.gz",          "ogbn_f/raw/node-label.csv.gz",
        "ogbn_f/raw/node-feat.csv.gz",     "ogbn_f/split/s/train.csv.gz",
        "ogbn_f/split/s/valid.csv.gz",     "ogbn_f/split/s/test.csv.gz"};
    if (size < 2)
        return GCN_ERR_INVALID_ARG;
    gcn_dataset_opts o = opts_from(data[1] & 15);
    return load_folder(data + 2, size - 2, files, 8, data[0], data[1] >> 4, "ogbn_f", &o);
}

gcn_status gcn_fuzz_tu(const uint8_t *data, size_t size)
{
    static const char *const files[] = {"t/t_graph_indicator.txt", "t/t_A.txt",
                                        "t/t_graph_labels.txt",    "t/t_node_labels.txt",
                                        "t/t_node_attributes.txt", "t/t_edge_labels.txt"};
    if (size < 1)
        return GCN_ERR_INVALID_ARG;
    gcn_dataset_opts o = opts_from(0);
    o.features = data[0] & 2 ? "degree" : NULL;
    o.symmetrize = !(data[0] & 4);
    return load_folder(data + 1, size - 1, files, 6, data[0] & 1 ? 0xffu : 0u, 0, "t", &o);
}

gcn_status gcn_fuzz_cache(const uint8_t *data, size_t size)
{
    char *dir = scratch();
    gcn_ctx *ctx = new_ctx();
    uint8_t *buf = malloc(size ? size : 1);
    gcn_cache_header h;
    memset(&h, 0, sizeof h);
    gcn_status st = GCN_ERR_NOMEM;
    if (!dir || !ctx || !buf)
        goto cleanup;
    if (size)
        memcpy(buf, data, size);
    if (size >= sizeof h) {
        memcpy(&h, buf, sizeof h);
        h.payload_crc = (uint32_t)crc32_z(0, buf + sizeof h, size - sizeof h);
        h.header_crc =
            (uint32_t)crc32_z(0, (const Bytef *)&h, offsetof(gcn_cache_header, header_crc));
        memcpy(buf, &h, sizeof h);
    }
    write_file(dir, "c.bin", buf, size, false, 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/c.bin", dir);
    gcn_dataset ds;
    memset(&ds, 0, sizeof ds);
    bool hit = false;
    st = gcn_cache_read(ctx, path, h.fingerprint, &ds, &hit);
    if (st == GCN_OK)
        st = hit ? use(ctx, &ds) : GCN_ERR_FORMAT;
    gcn_ds_clear(&ds);
cleanup:
    free(buf);
    gcn_ctx_free(&ctx);
    if (dir)
        rmtree(dir);
    free(dir);
    return st;
}

gcn_status gcn_fuzz_pickle(const uint8_t *data, size_t size)
{
    char *dir = scratch();
    if (!dir)
        return GCN_ERR_IO;
    write_file(dir, "p.pkl", data, size, false, 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/p.pkl", dir);
    pk_file f;
    pk_array a;
    gcn_status st = pk_load(NULL, path, &f);
    if (st == GCN_OK && pk_is(f.root, "numpy.core.multiarray._reconstruct")) {
        gcn_status arr = pk_array_of(NULL, "fuzz", f.root, &a);
        for (int64_t k = 0; arr == GCN_OK && k < a.rows * a.cols; k++)
            (void)pk_array_at(&a, k);
        pk_free(&f);
        st = arr;
    } else if (st == GCN_OK) {
        pk_free(&f);
    }
    rmtree(dir);
    free(dir);
    return st;
}
