/* Datasets fetched on first use, against a local HTTP server (no network):
 * archives in the publishers' layouts built here with libzip, fetched
 * through the mirror override, unpacked, loaded and trained on; the cache
 * makes no second request; a dropped connection resumes with Range; each
 * failure exits 2 with one line and leaves nothing under the root. */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "dataset_helpers.h"
#include "http_server.h"
#include "tool_run.h"

static tool_result r;

/* Adds every file under base/rel to z as rel/..., stored uncompressed as
 * OGB's zips keep their .csv.gz files. */
static void zip_tree(zip_t *z, const char *base, const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", base, rel);
    DIR *d = opendir(path);
    cr_assert_not_null(d, "%s", path);
    cr_assert_geq(zip_dir_add(z, rel, 0), 0);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char sub[512], full[1024];
        snprintf(sub, sizeof sub, "%s/%s", rel, e->d_name);
        snprintf(full, sizeof full, "%s/%s", base, sub);
        struct stat sb;
        cr_assert_eq(stat(full, &sb), 0);
        if (S_ISDIR(sb.st_mode)) {
            zip_tree(z, base, sub);
            continue;
        }
        zip_source_t *src = zip_source_file(z, full, 0, -1);
        cr_assert_not_null(src);
        zip_int64_t i = zip_file_add(z, sub, src, 0);
        cr_assert_geq(i, 0, "%s", zip_strerror(z));
        cr_assert_eq(zip_set_file_compression(z, (zip_uint64_t)i, ZIP_CM_STORE, 0), 0);
    }
    closedir(d);
}

/* A zip of base/top plus the extra (name, text) entries, as bytes. */
static unsigned char *make_zip(const char *base, const char *top, const char *const *extra,
                               size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/built.zip", base);
    int err = 0;
    zip_t *z = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &err);
    cr_assert_not_null(z);
    zip_tree(z, base, top);
    for (int k = 0; extra && extra[k]; k += 2) {
        zip_source_t *src = zip_source_buffer(z, extra[k + 1], strlen(extra[k + 1]), 0);
        cr_assert_geq(zip_file_add(z, extra[k], src, 0), 0, "%s", zip_strerror(z));
    }
    cr_assert_eq(zip_close(z), 0);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    unsigned char *data = malloc(*len);
    cr_assert_eq(fread(data, 1, *len, f), *len);
    fclose(f);
    unlink(path);
    return data;
}

/* The toy OGB dataset as OGB ships a node-property zip (arxiv/raw, ...),
 * under src/arxiv. */
static unsigned char *ogb_zip(const char *src, const char *const *extra, size_t *len)
{
    ds_write_ogb_toy(src);
    char from[1024], to[1024];
    snprintf(from, sizeof from, "%s/ogbn_toy", src);
    snprintf(to, sizeof to, "%s/arxiv", src);
    cr_assert_eq(rename(from, to), 0);
    return make_zip(src, "arxiv", extra, len);
}

static void expect_nothing_under(const char *root)
{
    DIR *d = opendir(root);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));)
        cr_assert(!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."), "%s/%s was left",
                  root, e->d_name);
    closedir(d);
}

/* A test's folder: the archive sources, the root, and the server. */
typedef struct fixture {
    char *dir;
    char src[512], root[512];
    http_server srv;
    unsigned char *zip; /* what open_arxiv serves */
    size_t zip_len;
} fixture;

static void open_fixture(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->dir = ds_tmpdir();
    snprintf(f->src, sizeof f->src, "%s/src", f->dir);
    snprintf(f->root, sizeof f->root, "%s/root", f->dir);
    cr_assert_eq(mkdir(f->src, 0777), 0);
}

/* open_fixture, then the toy arxiv.zip served in mode (HTTP_CUT_ONCE:
 * cut at half its length). */
static void open_arxiv(fixture *f, http_mode mode)
{
    open_fixture(f);
    f->zip = ogb_zip(f->src, NULL, &f->zip_len);
    http_add(&f->srv, "/ogb/arxiv.zip", f->zip, f->zip_len);
    f->srv.cut_at = f->zip_len / 2;
    http_start(&f->srv, mode);
}

static void close_fixture(fixture *f)
{
    free(f->zip);
    http_stop(&f->srv);
    ds_rmtree(f->dir);
    free(f->dir);
}

/* gcntrain CONFIG --dataset spec --root ROOT --mirror URL --device cpu
 * --epochs 1, then the NULL-terminated more. */
static void gcntrain(fixture *f, const char *config, const char *spec, const char *const *more)
{
    const char *args[30] = {config, "--dataset", spec, "--root", f->root, "--mirror",
                            f->srv.url, "--device", "cpu", "--epochs", "1"};
    int n = 11;
    for (int i = 0; more && more[i]; i++)
        args[n++] = more[i];
    args[n] = NULL;
    tool_run(&r, "gcntrain", args);
}

Test(fetch, ogb_downloaded_trained_then_cached, .timeout = 60)
{
    fixture f;
    open_arxiv(&f, HTTP_NORMAL);
    gcntrain(&f, "models/gcn.json", "ogbn-arxiv", NULL);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.err, "arxiv.zip: 100% ("), "a progress line every 10%%: %s", r.err);
    cr_assert(strstr(r.out, "dataset    ogbn-arxiv: 5 nodes"), "%s", r.out);
    cr_assert(strstr(r.out, "run 1 epoch    1"), "%s", r.out);
    cr_assert_eq(atomic_load(&f.srv.requests), 1);
    char b[700];
    snprintf(b, sizeof b, "%s/ogbn_arxiv/raw/edge.csv.gz", f.root);
    cr_assert(tool_exists(b), "the loader's folder is ogbn_arxiv");
    /* the second run reads the cache the check wrote and asks for nothing */
    gcntrain(&f, "models/gcn.json", "ogbn-arxiv", NULL);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "read from the cache"), "%s", r.out);
    cr_assert_eq(atomic_load(&f.srv.requests), 1, "no request once the data is there");
    close_fixture(&f);
}

Test(fetch, tu_collection_downloaded_and_trained, .timeout = 60)
{
    fixture f;
    open_fixture(&f);
    ds_write_tu_shapes(f.src, 24);
    char base[600];
    snprintf(base, sizeof base, "%s/tu", f.src);
    size_t len;
    unsigned char *zip = make_zip(base, "shapes", NULL, &len);
    http_add(&f.srv, "/tu/shapes.zip", zip, len);
    http_start(&f.srv, HTTP_NORMAL);
    ds_write(f.dir, "gin.json",
             "{\"layers\": [{\"type\": \"gin\", \"out\": 8}], \"readout\": {}, \"batch_size\": 8}");
    char cfg[600];
    snprintf(cfg, sizeof cfg, "%s/gin.json", f.dir);
    gcntrain(&f, cfg, "tu:shapes", (const char *[]){"--folds", "2", "--quiet", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "dataset    shapes: "), "%s", r.out);
    cr_assert(strstr(r.out, "test accuracy "), "%s", r.out);
    cr_assert_eq(atomic_load(&f.srv.requests), 1);
    char path[700];
    snprintf(path, sizeof path, "%s/tu/shapes/shapes_A.txt", f.root);
    cr_assert(tool_exists(path));
    gcntrain(&f, cfg, "tu:shapes", (const char *[]){"--folds", "2", "--quiet", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert_eq(atomic_load(&f.srv.requests), 1);
    free(zip);
    close_fixture(&f);
}

static bool same_file(const char *a, const char *b)
{
    static char x[1 << 16], y[1 << 16];
    tool_slurp(a, x, sizeof x);
    tool_slurp(b, y, sizeof y);
    return x[0] && strcmp(x, y) == 0;
}

Test(fetch, dropped_connection_resumes_with_range, .timeout = 60)
{
    fixture f;
    open_arxiv(&f, HTTP_CUT_ONCE);
    gcntrain(&f, "models/gcn.json", "ogbn-arxiv", NULL);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.err, "connection lost after"), "%s", r.err);
    cr_assert_eq(atomic_load(&f.srv.requests), 2);
    cr_assert_eq(atomic_load(&f.srv.range_requests), 1, "the rest came with a Range request");
    static const char *const files[] = {"raw/edge.csv.gz", "raw/node-feat.csv.gz",
                                        "raw/node-label.csv.gz", "split/time/test.csv.gz"};
    for (int i = 0; i < 4; i++) {
        char a[700], b[700];
        snprintf(a, sizeof a, "%s/arxiv/%s", f.src, files[i]);
        snprintf(b, sizeof b, "%s/ogbn_arxiv/%s", f.root, files[i]);
        cr_assert(same_file(a, b), "%s differs from what was served", b);
    }
    close_fixture(&f);
}

/* A failing fetch: exit 2, one line holding `needle`, nothing under root. */
static void expect_failure(fixture *f, http_mode mode, const char *needle)
{
    http_start(&f->srv, mode);
    gcntrain(f, "models/gcn.json", "ogbn-arxiv",
             (const char *[]){"--quiet", "--download-timeout", "1", NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    tool_expect_one_line(r.err);
    cr_assert(strstr(r.err, needle), "'%s' not in: %s", needle, r.err);
    expect_nothing_under(f->root);
}

Test(fetch, not_found, .timeout = 30)
{
    fixture f;
    open_fixture(&f);
    char needle[128];
    expect_failure(&f, HTTP_NORMAL, "");
    snprintf(needle, sizeof needle, "%s/ogb/arxiv.zip: The requested URL returned error: 404",
             f.srv.url);
    cr_assert(strstr(r.err, needle), "%s", r.err);
    close_fixture(&f);
}

/* What is done to the toy arxiv.zip before it is served. */
typedef enum damage {
    INTACT,
    HALF,     /* only its first half */
    FLIP_EDGE /* one byte of the stored edge file changed: its CRC-32 no longer holds */
} damage;

/* The toy arxiv.zip with the extra (name, text) entries, damaged as asked
 * and served in mode: the fetch must fail with needle in its one line. */
static void expect_archive_failure(http_mode mode, const char *const *extra, damage d,
                                   const char *needle)
{
    fixture f;
    open_fixture(&f);
    size_t len;
    unsigned char *zip = ogb_zip(f.src, extra, &len);
    if (d == FLIP_EDGE) {
        char path[700];
        static char edges[4096];
        snprintf(path, sizeof path, "%s/arxiv/raw/edge.csv.gz", f.src);
        FILE *e = fopen(path, "rb");
        cr_assert_not_null(e);
        size_t n = fread(edges, 1, sizeof edges, e);
        fclose(e);
        unsigned char *at = memmem(zip, len, edges, n);
        cr_assert_not_null(at);
        at[n / 2] ^= 0x20;
    }
    http_add(&f.srv, "/ogb/arxiv.zip", zip, d == HALF ? len / 2 : len);
    expect_failure(&f, mode, needle);
    char evil[700];
    snprintf(evil, sizeof evil, "%s/evil.txt", f.dir);
    cr_assert(!tool_exists(evil));
    free(zip);
    close_fixture(&f);
}

Test(fetch, stalled_server_times_out, .timeout = 30)
{
    expect_archive_failure(HTTP_STALL, NULL, INTACT, "/ogb/arxiv.zip: Operation too slow");
}

Test(fetch, truncated_archive, .timeout = 30)
{
    expect_archive_failure(HTTP_NORMAL, NULL, HALF, "arxiv.zip: not a readable zip archive");
}

Test(fetch, checksum_mismatch, .timeout = 30)
{
    expect_archive_failure(HTTP_NORMAL, NULL, FLIP_EDGE,
                           "arxiv.zip: entry 'arxiv/raw/edge.csv.gz': CRC error");
}

Test(fetch, entry_leaving_the_folder, .timeout = 30)
{
    expect_archive_failure(HTTP_NORMAL, (const char *[]){"arxiv/../../evil.txt", "x", NULL},
                           INTACT, "arxiv.zip: entry 'arxiv/../../evil.txt': a '..' component");
}

Test(fetch, entry_with_absolute_path, .timeout = 30)
{
    expect_archive_failure(HTTP_NORMAL, (const char *[]){"/tmp/gcn-fetch-evil.txt", "x", NULL},
                           INTACT, "arxiv.zip: entry '/tmp/gcn-fetch-evil.txt': an absolute path");
    cr_assert(!tool_exists("/tmp/gcn-fetch-evil.txt"));
}

Test(fetch, over_5_gb_needs_download, .timeout = 30)
{
    fixture f;
    open_fixture(&f);
    http_add(&f.srv, "/ogb/arxiv.zip", "x", 1);
    expect_failure(&f, HTTP_HUGE, "6.0 GB: a download over 5 GB must be asked for");
    close_fixture(&f);
}

Test(fetch, sigint_during_download, .timeout = 30)
{
    fixture f;
    open_arxiv(&f, HTTP_STALL);
    tool_proc p;
    tool_start(&p, "gcntrain",
               (const char *[]){"models/gcn.json", "--dataset", "ogbn-arxiv", "--root", f.root,
                                "--mirror", f.srv.url, "--device", "cpu", NULL});
    for (int i = 0; i < 2000 && atomic_load(&f.srv.requests) == 0; i++)
        usleep(5000);
    cr_assert_eq(atomic_load(&f.srv.requests), 1, "the download started");
    kill(p.pid, SIGINT);
    tool_wait(&p, &r);
    cr_assert_eq(r.code, 130, "%s", r.err);
    cr_assert(strstr(r.err, "download interrupted; nothing kept"), "%s", r.err);
    expect_nothing_under(f.root);
    close_fixture(&f);
}

Test(fetch, no_download, .timeout = 30)
{
    fixture f;
    open_fixture(&f);
    http_start(&f.srv, HTTP_NORMAL);
    gcntrain(&f, "models/gcn.json", "ogbn-arxiv", (const char *[]){"--no-download", NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    tool_expect_one_line(r.err);
    char needle[1400];
    snprintf(needle, sizeof needle, "downloads are off (--no-download or \"download\": false): "
             "without them, gcntrain CONFIG --dataset ogbn-arxiv --root %s fetches it from "
             "%s/ogb/arxiv.zip", f.root, f.srv.url);
    cr_assert(strstr(r.err, needle), "%s", r.err);
    /* the configuration's key does the same */
    ds_write(f.dir, "off.json", "{\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\"}], "
                                "\"dataset\": {\"download\": false}}");
    char cfg[600];
    snprintf(cfg, sizeof cfg, "%s/off.json", f.dir);
    gcntrain(&f, cfg, "ogbn-arxiv", NULL);
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert(strstr(r.err, needle), "%s", r.err);
    cr_assert_eq(atomic_load(&f.srv.requests), 0);
    expect_nothing_under(f.root);
    close_fixture(&f);
}

typedef struct seen {
    int calls;
    int64_t done, total;
    bool cancel;
} seen;

static int count_progress(int64_t done, int64_t total, void *user)
{
    seen *s = user;
    s->calls++;
    s->done = done;
    s->total = total;
    return s->cancel;
}

Test(fetch, api_with_progress_and_mirror_variable, .timeout = 30)
{
    fixture f;
    open_arxiv(&f, HTTP_NORMAL);
    cr_assert_eq(setenv("GCN_DATASET_MIRROR", f.srv.url, 1), 0);
    gcn_ctx *ctx = ds_logging_ctx(0);
    seen s = {.cancel = true};
    gcn_fetch_opts o = gcn_fetch_default_opts();
    o.progress = count_progress;
    o.user = &s;
    bool fetched = true;
    cr_assert_eq(gcn_dataset_fetch(ctx, "ogbn-arxiv", f.root, &o, &fetched), GCN_ERR_STATE);
    cr_assert(strstr(gcn_last_error(ctx), "/ogb/arxiv.zip: download cancelled"), "%s",
              gcn_last_error(ctx));
    cr_assert(!fetched);
    expect_nothing_under(f.root);
    s = (seen){.cancel = false};
    int before = atomic_load(&f.srv.requests);
    cr_assert_eq(gcn_dataset_fetch(ctx, "ogbn_arxiv", f.root, &o, &fetched), GCN_OK, "%s",
                 gcn_last_error(ctx));
    cr_assert(fetched);
    cr_assert_gt(s.calls, 0);
    cr_assert_eq(s.done, (int64_t)f.zip_len);
    cr_assert_eq(s.total, (int64_t)f.zip_len);
    cr_assert_eq(gcn_dataset_fetch(ctx, "ogbn-arxiv", f.root, &o, &fetched), GCN_OK);
    cr_assert(!fetched, "already there");
    cr_assert_eq(atomic_load(&f.srv.requests), before + 1);
    gcn_dataset_opts lo = ds_opts(f.root);
    gcn_dataset *ds = ds_load_ok(ctx, "ogbn-arxiv", &lo);
    cr_assert_eq(ds->n_nodes, 5);
    cr_assert_eq(ds->n_features, 3);
    gcn_dataset_free(&ds);
    unsetenv("GCN_DATASET_MIRROR");
    gcn_ctx_free(&ctx);
    close_fixture(&f);
}

Test(fetch, publishers_addresses)
{
    char url[256];
    cr_assert_gt(gcn_dataset_fetch_url("ogbn-arxiv", NULL, url, sizeof url), 0);
    cr_assert_str_eq(url, "http://snap.stanford.edu/ogb/data/nodeproppred/arxiv.zip");
    gcn_dataset_fetch_url("ogbn_products", NULL, url, sizeof url);
    cr_assert_str_eq(url, "http://snap.stanford.edu/ogb/data/nodeproppred/products.zip");
    gcn_dataset_fetch_url("tu:PROTEINS", NULL, url, sizeof url);
    cr_assert_str_eq(url, "https://www.chrsmrrs.com/graphkerneldatasets/PROTEINS.zip");
    gcn_fetch_opts o = gcn_fetch_default_opts();
    o.mirror = "http://mirror.example/data//";
    gcn_dataset_fetch_url("ogbn-proteins", &o, url, sizeof url);
    cr_assert_str_eq(url, "http://mirror.example/data/ogb/proteins.zip");
    gcn_dataset_fetch_url("cora", NULL, url, sizeof url);
    cr_assert_str_eq(url, "https://github.com/kimiyoung/planetoid/raw/master/data/"
                          "ind.cora.{x,y,tx,ty,allx,ally,graph,test.index}");
    cr_assert(!gcn_dataset_fetchable("Wiki-Vote"));
    cr_assert(!gcn_dataset_fetchable("tu:../x"));
    cr_assert(!gcn_dataset_fetchable("ogbn-mag"));
    cr_assert_eq(gcn_dataset_fetch_url("synthetic", NULL, url, sizeof url), -1);
}

/* Serves the real Planetoid raw files of the shared data under
 * /planetoid/; false when they are absent. */
static bool serve_planetoid(http_server *srv, const char *name, const char *cut_part)
{
    for (int k = 0; k < 8; k++) {
        static const char *const parts[8] = {"x", "y", "tx", "ty", "allx", "ally", "graph",
                                             "test.index"};
        char path[256], url[128];
        snprintf(path, sizeof path, SHARED_DATA "/planetoid/%s/raw/ind.%s.%s", name, name,
                 parts[k]);
        FILE *f = fopen(path, "rb");
        if (!f)
            return false;
        static unsigned char buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        if (cut_part && strcmp(parts[k], cut_part) == 0)
            n /= 2;
        snprintf(url, sizeof url, "/planetoid/ind.%s.%s", name, parts[k]);
        http_add(srv, url, buf, n);
    }
    return true;
}

Test(fetch, planetoid_converted_as_the_reference_loader, .timeout = 60)
{
    fixture f;
    open_fixture(&f);
    if (!serve_planetoid(&f.srv, "citeseer", NULL)) {
        ds_rmtree(f.dir);
        free(f.dir);
        cr_skip_test("no Planetoid raw files under " SHARED_DATA);
    }
    http_start(&f.srv, HTTP_NORMAL);
    gcntrain(&f, "models/gcn-cora.json", "citeseer", (const char *[]){"--quiet", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert_eq(atomic_load(&f.srv.requests), 8);
    /* what the pickles became is what numpy and scipy made of them */
    gcn_ctx *ctx = ds_logging_ctx(0);
    gcn_dataset_opts o = ds_opts(f.root);
    gcn_dataset *got = ds_load_ok(ctx, "citeseer", &o);
    o.root = SHARED_DATA;
    gcn_dataset *want = ds_load_ok(ctx, "citeseer", &o);
    cr_assert(ds_same(got, want));
    cr_assert_eq(got->n_nodes, 3327);
    gcn_dataset_free(&got);
    gcn_dataset_free(&want);
    gcn_ctx_free(&ctx);
    close_fixture(&f);
}

Test(fetch, planetoid_damaged_pickle, .timeout = 30)
{
    fixture f;
    open_fixture(&f);
    if (!serve_planetoid(&f.srv, "cora", "allx")) {
        ds_rmtree(f.dir);
        free(f.dir);
        cr_skip_test("no Planetoid raw files under " SHARED_DATA);
    }
    http_start(&f.srv, HTTP_NORMAL);
    gcntrain(&f, "models/gcn-cora.json", "cora", (const char *[]){"--quiet", NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    tool_expect_one_line(r.err);
    cr_assert(strstr(r.err, "/raw/ind.cora.allx: byte "), "%s", r.err);
    expect_nothing_under(f.root);
    close_fixture(&f);
}
