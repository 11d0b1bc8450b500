/* Scratch folders, fixture files (plain and gzip), a context that keeps
 * its log, and error-message, graph and reordering checks for the dataset
 * tests. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "dataset_helpers.h"

char *ds_tmpdir(void)
{
    char tmpl[] = "/tmp/gcn-ds-XXXXXX";
    char *dir = mkdtemp(tmpl);
    cr_assert(dir, "mkdtemp failed");
    return strdup(dir);
}

void ds_rmtree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            chmod(path, 0755);
            ds_rmtree(path);
        } else {
            unlink(path);
        }
    }
    closedir(d);
    rmdir(dir);
}

const char *ds_path(const char *dir, const char *rel)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", dir, rel);
    return buf;
}

static void make_parents(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0755);
            *p = '/';
        }
}

void ds_write_bytes(const char *dir, const char *rel, const void *data, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    make_parents(path);
    size_t len = strlen(path);
    if (len > 3 && !strcmp(path + len - 3, ".gz")) {
        gzFile gz = gzopen(path, "wb");
        cr_assert(gz, "gzopen %s", path);
        cr_assert(n == 0 || gzwrite(gz, data, (unsigned)n) == (int)n, "gzwrite %s", path);
        cr_assert(gzclose(gz) == Z_OK);
        return;
    }
    FILE *f = fopen(path, "wb");
    cr_assert(f, "fopen %s", path);
    cr_assert(n == 0 || fwrite(data, 1, n, f) == n);
    fclose(f);
}

void ds_copy(const char *from, const char *dir, const char *rel)
{
    FILE *f = fopen(from, "rb");
    cr_assert(f, "%s", from);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    make_parents(path);
    FILE *g = fopen(path, "wb");
    cr_assert(g, "%s", path);
    char buf[1 << 16];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;)
        cr_assert_eq(fwrite(buf, 1, n, g), n);
    fclose(f);
    fclose(g);
}

void ds_write(const char *dir, const char *rel, const char *text)
{
    ds_write_bytes(dir, rel, text, strlen(text));
}

char ds_notices[8192];

static void capture(gcn_log_level level, const char *msg, void *user)
{
    (void)user;
    strncat(ds_notices, level == GCN_LOG_WARN ? "WARN " : "INFO ",
            sizeof ds_notices - strlen(ds_notices) - 1);
    strncat(ds_notices, msg, sizeof ds_notices - strlen(ds_notices) - 2);
    strcat(ds_notices, "\n");
}

gcn_ctx *ds_logging_ctx(uint64_t seed)
{
    gcn_ctx_opts co = gcn_ctx_default_opts();
    co.device = GCN_DEVICE_CPU;
    co.seed = seed;
    co.log_level = GCN_LOG_INFO;
    co.log_fn = capture;
    gcn_ctx *ctx = NULL;
    cr_assert_eq(gcn_ctx_create(&ctx, &co), GCN_OK);
    ds_notices[0] = '\0';
    return ctx;
}

gcn_dataset_opts ds_opts(const char *dir)
{
    gcn_dataset_opts o = gcn_dataset_default_opts();
    o.root = dir;
    o.cache = false;
    return o;
}

void ds_expect_fail(gcn_ctx *ctx, const char *spec, const gcn_dataset_opts *opts,
                    gcn_status st, ...)
{
    gcn_dataset *ds = NULL;
    gcn_status got = gcn_dataset_load(ctx, &ds, spec, opts);
    const char *msg = gcn_last_error(ctx);
    cr_assert_eq(got, st, "%s: status %s, want %s (%s)", spec, gcn_status_str(got),
                 gcn_status_str(st), msg);
    cr_assert_null(ds);
    va_list ap;
    va_start(ap, st);
    for (const char *needle; (needle = va_arg(ap, const char *)) != NULL;)
        cr_assert(strstr(msg, needle), "%s: message '%s' lacks '%s'", spec, msg, needle);
    va_end(ap);
}

void ds_write_ogb_toy(const char *dir)
{
    ds_write(dir, "ogbn_toy/raw/num-node-list.csv.gz", "5\n");
    ds_write(dir, "ogbn_toy/raw/num-edge-list.csv.gz", "6\n");
    ds_write(dir, "ogbn_toy/raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,4\n4,0\n0,2\n");
    ds_write(dir, "ogbn_toy/raw/node-feat.csv.gz",
             "0.5,-1,2\n1,1,1\n-0.25,0,3.5e-2\n0,0,0\n1e-3,2,-2\n");
    ds_write(dir, "ogbn_toy/raw/node-label.csv.gz", "0\n1\n2\n0\n1\n");
    ds_write(dir, "ogbn_toy/split/time/train.csv.gz", "0\n1\n");
    ds_write(dir, "ogbn_toy/split/time/valid.csv.gz", "2\n");
    ds_write(dir, "ogbn_toy/split/time/test.csv.gz", "3\n4\n");
}

gcn_dataset *ds_load_ok(gcn_ctx *ctx, const char *spec, const gcn_dataset_opts *opts)
{
    gcn_dataset *ds = NULL;
    gcn_status st = gcn_dataset_load(ctx, &ds, spec, opts);
    cr_assert_eq(st, GCN_OK, "%s: %s", spec, gcn_last_error(ctx));
    cr_assert_not_null(ds);
    return ds;
}

void ds_expect_bad_files(gcn_ctx *ctx, void (*fixture)(const char *dir), const char *sub,
                         const char *spec, const ds_bad_file *cases, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        char *dir = ds_tmpdir();
        fixture(dir);
        char rel[128];
        snprintf(rel, sizeof rel, "%s/%s", sub, cases[k].file);
        ds_write(dir, rel, cases[k].text);
        gcn_dataset_opts o = ds_opts(dir);
        ds_expect_fail(ctx, spec, &o, cases[k].st, cases[k].where, cases[k].why, NULL);
        ds_rmtree(dir);
        free(dir);
    }
}

char *ds_random_edges(const char *prefix, int m, int n, int base, char sep, size_t *len)
{
    size_t cap = strlen(prefix) + (size_t)m * 24 + 1;
    char *text = malloc(cap);
    cr_assert(text);
    *len = (size_t)snprintf(text, cap, "%s", prefix);
    unsigned x = 12345;
    for (int e = 0; e < m; e++) {
        x = x * 1103515245u + 12345u;
        *len += (size_t)snprintf(text + *len, cap - *len, "%u%c%u\n",
                                 (x >> 16) % (unsigned)n + (unsigned)base, sep,
                                 (x >> 8) % (unsigned)n + (unsigned)base);
    }
    return text;
}

static void flip(FILE *f, long offset, unsigned char x)
{
    cr_assert_eq(fseek(f, offset, offset < 0 ? SEEK_END : SEEK_SET), 0);
    int c = fgetc(f);
    cr_assert_neq(c, EOF);
    cr_assert_eq(fseek(f, offset, offset < 0 ? SEEK_END : SEEK_SET), 0);
    fputc(c ^ x, f);
}

const char *ds_damage_gzip(const char *path, int kind)
{
    FILE *f = fopen(path, "r+b");
    cr_assert(f, "%s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    cr_assert_gt(size, 200, "%s: too small to damage mid-stream", path);
    if (kind == 1)
        for (long off = 100; off < 140; off++)
            flip(f, off, 0x5a);
    else if (kind == 2)
        flip(f, -6, 0x01); /* the stored CRC-32 */
    fclose(f);
    if (kind == 0)
        cr_assert_eq(truncate(path, size / 2), 0);
    return kind == 0 ? "unexpected end of file"
           : kind == 1 ? "corrupt or truncated gzip"
                       : "incorrect data check";
}

static bool same_ints(const int32_t *a, const int32_t *b, int64_t n)
{
    return n == 0 || (a && b && memcmp(a, b, (size_t)n * sizeof *a) == 0);
}

bool ds_same(const gcn_dataset *a, const gcn_dataset *b)
{
    const gcn_graph *g = a->graph, *h = b->graph;
    return a->n_nodes == b->n_nodes && g->nnz == h->nnz && a->n_features == b->n_features &&
           a->n_classes == b->n_classes && (a->labels == NULL) == (b->labels == NULL) &&
           a->n_train == b->n_train && a->n_valid == b->n_valid && a->n_test == b->n_test &&
           same_ints(g->row_ptr, h->row_ptr, g->n_nodes + 1) &&
           same_ints(g->col_idx, h->col_idx, g->nnz) &&
           (a->n_features == 0 ||
            memcmp(a->features, b->features,
                   (size_t)a->n_nodes * (size_t)a->n_features * sizeof(float)) == 0) &&
           (!a->labels || same_ints(a->labels, b->labels, a->n_nodes)) &&
           same_ints(a->train, b->train, a->n_train) && same_ints(a->valid, b->valid, a->n_valid) &&
           same_ints(a->test, b->test, a->n_test) && a->n_graphs == b->n_graphs &&
           a->n_graph_classes == b->n_graph_classes &&
           (a->n_graphs == 0 ||
            (same_ints(a->graph_ptr, b->graph_ptr, a->n_graphs + 1) &&
             same_ints(a->graph_labels, b->graph_labels, a->n_graphs) &&
             same_ints(a->graph_label_values, b->graph_label_values, a->n_graph_classes)));
}

void ds_check_reorder(const gcn_reorder *r, int32_t n)
{
    cr_assert_eq(r->n_nodes, n);
    for (int32_t i = 0; i < n; i++) {
        cr_assert(r->order[i] >= 0 && r->order[i] < n);
        cr_assert_eq(r->position[r->order[i]], i, "position is not the inverse of order");
    }
    for (int k = 0; k < r->n_levels; k++) {
        const int32_t *p = r->part_ptr[k];
        cr_assert_geq(r->n_parts[k], 2, "level %d has one part", k);
        cr_assert_eq(p[0], 0);
        cr_assert_eq(p[r->n_parts[k]], n);
        for (int32_t q = 0; q < r->n_parts[k]; q++)
            cr_assert_lt(p[q], p[q + 1], "level %d part %d is empty", k, q);
        if (k == 0)
            continue;
        cr_assert_gt(r->size[k], r->size[k - 1]);
        for (int32_t q = 0, j = 0; q <= r->n_parts[k]; q++) {
            while (r->part_ptr[k - 1][j] < p[q])
                j++;
            cr_assert_eq(r->part_ptr[k - 1][j], p[q], "level %d boundary %d is not nested", k,
                         p[q]);
        }
    }
}

void ds_expect_same_graph(const gcn_graph *a, const gcn_graph *b)
{
    cr_assert_eq(a->n_nodes, b->n_nodes);
    cr_assert_eq(a->nnz, b->nnz);
    cr_assert_arr_eq(a->row_ptr, b->row_ptr, ((size_t)a->n_nodes + 1) * sizeof(int32_t));
    cr_assert_arr_eq(a->col_idx, b->col_idx, (size_t)a->nnz * sizeof(int32_t));
    cr_assert_eq(a->values == NULL, b->values == NULL);
    if (a->values)
        cr_assert_arr_eq(a->values, b->values, (size_t)a->nnz * sizeof(float));
}

ds_fixture ds_fixture_open(void (*write)(const char *dir), const char *spec)
{
    ds_fixture f = {.dir = ds_tmpdir()};
    write(f.dir);
    f.ctx = ds_logging_ctx(1);
    f.o = ds_opts(f.dir);
    f.ds = ds_load_ok(f.ctx, spec, &f.o);
    return f;
}

void ds_fixture_close(ds_fixture *f)
{
    gcn_dataset_free(&f->ds);
    gcn_ctx_free(&f->ctx);
    ds_rmtree(f->dir);
    free(f->dir);
}

gcn_dataset *ds_load_tu(gcn_ctx *ctx, const char *name, const char *cache_dir)
{
    char path[256], spec[64];
    snprintf(path, sizeof path, SHARED_DATA "/tu/%s", name);
    if (access(path, R_OK) != 0)
        return NULL;
    gcn_dataset_opts o = ds_opts(SHARED_DATA);
    o.cache = cache_dir != NULL;
    o.cache_dir = cache_dir;
    snprintf(spec, sizeof spec, "tu:%s", name);
    return ds_load_ok(ctx, spec, &o);
}

void ds_write_tu_shapes(const char *dir, int n_graphs)
{
    size_t cap = (size_t)n_graphs * 400 + 64;
    char *a = malloc(cap), *ind = malloc(cap), *nl = malloc(cap), *gl = malloc(cap);
    cr_assert(a && ind && nl && gl);
    size_t la = 0, li = 0, ln = 0, lg = 0;
    int node = 1; /* TU ids are 1-based */
    for (int g = 0; g < n_graphs; g++) {
        int n = 5 + (g / 2) % 6;
        bool star = g % 2;
        for (int v = 0; v < n; v++) {
            li += (size_t)snprintf(ind + li, cap - li, "%d\n", g + 1);
            ln += (size_t)snprintf(nl + ln, cap - ln, "1\n");
        }
        for (int v = 0; v < n; v++) { /* both directions, as TU stores them */
            int u = star ? (v == 0 ? -1 : 0) : (v + 1) % n;
            if (u < 0)
                continue;
            la += (size_t)snprintf(a + la, cap - la, "%d, %d\n%d, %d\n", node + v, node + u,
                                   node + u, node + v);
        }
        lg += (size_t)snprintf(gl + lg, cap - lg, "%d\n", star ? 2 : 1);
        node += n;
    }
    ds_write(dir, "tu/shapes/shapes_A.txt", a);
    ds_write(dir, "tu/shapes/shapes_graph_indicator.txt", ind);
    ds_write(dir, "tu/shapes/shapes_node_labels.txt", nl);
    ds_write(dir, "tu/shapes/shapes_graph_labels.txt", gl);
    free(a);
    free(ind);
    free(nl);
    free(gl);
}

gcn_dataset *ds_load_shapes_fold(gcn_ctx *ctx, const char *dir, int32_t k, uint64_t seed,
                                 int32_t outer, bool inner_valid, int32_t *fold)
{
    gcn_dataset_opts o = ds_opts(dir);
    gcn_dataset *ds = ds_load_ok(ctx, "tu:shapes", &o);
    int32_t *f = malloc((size_t)ds->n_graphs * sizeof *f);
    cr_assert(f);
    cr_assert_eq(gcn_graph_folds(ctx, ds, k, seed, f), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_graph_fold_split(ctx, ds, f, k, outer, inner_valid), GCN_OK, "%s",
                 gcn_last_error(ctx));
    if (fold)
        memcpy(fold, f, (size_t)ds->n_graphs * sizeof *f);
    free(f);
    return ds;
}

gcn_trainer *ds_train_graphs(gcn_ctx *ctx, const char *json, const gcn_dataset *ds,
                             uint64_t seed, int epochs, float *loss, double *valid, double *test)
{
    gcn_model_config cfg;
    char err[512] = "";
    cr_assert_eq(gcn_model_config_parse(&cfg, json, "test", err, sizeof err), GCN_OK, "%s", err);
    gcn_trainer *tr = NULL;
    gcn_rng_seed(ctx, seed);
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, ds), GCN_OK, "%s", gcn_last_error(ctx));
    for (int e = 0; e < epochs; e++) {
        gcn_epoch_stats es;
        cr_assert_eq(gcn_trainer_epoch(ctx, tr, &es), GCN_OK, "%s", gcn_last_error(ctx));
        cr_assert(es.train_acc >= 0 && es.train_acc <= 1);
        if (loss)
            loss[e] = es.loss;
        if (valid)
            valid[e] = es.valid_acc;
        if (test)
            test[e] = es.test_acc;
    }
    return tr;
}

void ds_expect_follows(const gcn_dataset *a, const gcn_dataset *b)
{
    const gcn_reorder *r = b->reorder;
    cr_assert_not_null(r);
    ds_check_reorder(r, a->n_nodes);
    for (int32_t v = 0; v < a->n_nodes; v++) {
        int32_t p = r->position[v];
        cr_assert_arr_eq(b->features + (int64_t)p * b->n_features,
                         a->features + (int64_t)v * a->n_features,
                         (size_t)a->n_features * sizeof(float));
        cr_assert_eq(b->labels[p], a->labels[v]);
    }
    const int32_t *la[3] = {a->train, a->valid, a->test}, *lb[3] = {b->train, b->valid, b->test};
    const int32_t na[3] = {a->n_train, a->n_valid, a->n_test},
                  nb[3] = {b->n_train, b->n_valid, b->n_test};
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(na[k], nb[k]);
        uint8_t *in = calloc((size_t)a->n_nodes, 1);
        for (int32_t i = 0; i < nb[k]; i++) {
            cr_assert(i == 0 || lb[k][i] > lb[k][i - 1], "list %d not ascending", k);
            in[lb[k][i]] = 1;
        }
        for (int32_t i = 0; i < na[k]; i++)
            cr_assert(in[r->position[la[k][i]]], "list %d lost node %d", k, la[k][i]);
        free(in);
    }
    gcn_graph *p = NULL;
    cr_assert_eq(gcn_graph_permute(NULL, a->graph, r, &p), GCN_OK);
    ds_expect_same_graph(b->graph, p);
    gcn_graph_free(&p);
}

gcn_graph *ds_coo(gcn_ctx *ctx, int32_t n, int64_t m, const int32_t *src, const int32_t *dst)
{
    gcn_graph *g = NULL;
    cr_assert_eq(gcn_graph_from_coo(ctx, &g, n, m, src, dst), GCN_OK, "%s", gcn_last_error(ctx));
    return g;
}

gcn_reorder *ds_compute_reorder(gcn_ctx *ctx, const gcn_graph *g, const char *spec)
{
    gcn_reorder_opts o;
    gcn_reorder *r = NULL;
    cr_assert_eq(gcn_reorder_parse(ctx, spec, &o), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_reorder_compute(ctx, g, &o, &r), GCN_OK, "%s: %s", spec,
                 gcn_last_error(ctx));
    return r;
}
