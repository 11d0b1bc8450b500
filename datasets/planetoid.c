/* Planetoid's raw files (ind.NAME.{x,y,tx,ty,allx,ally,graph,test.index},
 * Python pickles but for the test index) turned into the plain-text folder
 * textdir.c reads, arranged as the GCN reference loader (Kipf & Welling)
 * and PyG arrange them: node i < len(allx) is row i of allx/ally, node
 * test.index[k] row k of tx/ty, the test range's other nodes (CiteSeer's)
 * featureless and unlabelled; train = the first len(y) nodes, validation
 * the next 500, test the sorted test index. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch_impl.h"
#include "internal.h"
#include "pickle.h"

enum { X, Y, TX, TY, ALLX, ALLY, GRAPH, N_PARTS };
static const char *const parts[N_PARTS] = {"x", "y", "tx", "ty", "allx", "ally", "graph"};

typedef struct csr_view {
    int64_t rows, cols, nnz;
    pk_array indptr, indices, data;
} csr_view;

typedef struct planetoid {
    gcn_ctx *ctx;
    const char *dir, *name;
    char path[N_PARTS][1024];
    pk_file f[N_PARTS];
    csr_view tx, allx;
    pk_array y, ty, ally;
    int32_t *test;    /* the test index as listed */
    int64_t n_test;
    int32_t *pos;     /* [n]: the node's row of tx, or -1 */
    int64_t n, n_all; /* nodes; rows of allx and ally */
} planetoid;

static gcn_status csr_of(gcn_ctx *ctx, const char *what, const pk_value *v, csr_view *c)
{
    const pk_value *state = v && v->kind == PK_OBJ ? v->state : NULL;
    const pk_value *shape = pk_dict_get(state, "_shape");
    if ((!pk_is(v, "scipy.sparse.csr.csr_matrix") && !pk_is(v, "scipy.sparse._csr.csr_matrix")) ||
        !shape || shape->kind != PK_TUPLE || shape->n != 2 || shape->items[0]->kind != PK_INT ||
        shape->items[1]->kind != PK_INT || shape->items[0]->i < 0 ||
        shape->items[0]->i > INT32_MAX || shape->items[1]->i < 0 ||
        shape->items[1]->i > INT32_MAX)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: not a SciPy CSR matrix", what);
    c->rows = shape->items[0]->i;
    c->cols = shape->items[1]->i;
    GCN_TRY(pk_array_of(ctx, what, pk_dict_get(state, "indptr"), &c->indptr));
    GCN_TRY(pk_array_of(ctx, what, pk_dict_get(state, "indices"), &c->indices));
    GCN_TRY(pk_array_of(ctx, what, pk_dict_get(state, "data"), &c->data));
    c->nnz = c->indices.rows;
    if (c->indptr.rows != c->rows + 1 || c->indptr.cols != 1 || c->indices.cols != 1 ||
        c->data.rows != c->nnz || c->data.cols != 1 || c->indptr.type == 'f' ||
        c->indices.type == 'f')
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: CSR arrays of inconsistent sizes", what);
    for (int64_t r = 0; r <= c->rows; r++) {
        double at = pk_array_at(&c->indptr, r);
        if (at < (r ? pk_array_at(&c->indptr, r - 1) : 0) || at > (double)c->nnz ||
            (r == 0 && at != 0) || (r == c->rows && at != (double)c->nnz))
            return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: row offsets not ascending to nnz", what);
    }
    for (int64_t k = 0; k < c->nnz; k++) {
        double col = pk_array_at(&c->indices, k);
        if (col < 0 || col >= (double)c->cols)
            return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: column %.0f out of range", what, col);
    }
    return GCN_OK;
}

static gcn_status read_test_index(planetoid *p)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/raw/ind.%s.test.index", p->dir, p->name);
    gcn_i32vec v = {0};
    gcn_reader r;
    GCN_TRY(gcn_reader_open(p->ctx, &r, path, NULL));
    gcn_status st = GCN_OK;
    char *line = NULL;
    while ((st = gcn_reader_line(&r, &line)) == GCN_OK && line) {
        if (!line[strspn(line, " \t\r")])
            continue;
        char *end;
        errno = 0;
        long id = strtol(line, &end, 10);
        end += strspn(end, " \t\r");
        if (errno || end == line || *end || id < 0 || id >= INT32_MAX) {
            st = GCN_ERROR(p->ctx, GCN_ERR_FORMAT, "%s:%lld: expected a node id", path,
                           (long long)r.line_no);
            break;
        }
        if ((st = gcn_i32vec_push(p->ctx, &v, (int32_t)id)) != GCN_OK)
            break;
    }
    gcn_reader_close(&r);
    p->test = v.data;
    p->n_test = v.len;
    if (st == GCN_OK && v.len == 0)
        st = GCN_ERROR(p->ctx, GCN_ERR_FORMAT, "%s: no node ids", path);
    return st;
}

/* Reads every pickle and checks its shape against the others. */
static gcn_status load_parts(planetoid *p)
{
    for (int k = 0; k < N_PARTS; k++) {
        snprintf(p->path[k], sizeof p->path[k], "%s/raw/ind.%s.%s", p->dir, p->name, parts[k]);
        GCN_TRY(pk_load(p->ctx, p->path[k], &p->f[k]));
    }
    GCN_TRY(csr_of(p->ctx, p->path[TX], p->f[TX].root, &p->tx));
    GCN_TRY(csr_of(p->ctx, p->path[ALLX], p->f[ALLX].root, &p->allx));
    GCN_TRY(pk_array_of(p->ctx, p->path[Y], p->f[Y].root, &p->y));
    GCN_TRY(pk_array_of(p->ctx, p->path[TY], p->f[TY].root, &p->ty));
    GCN_TRY(pk_array_of(p->ctx, p->path[ALLY], p->f[ALLY].root, &p->ally));
    if (p->f[GRAPH].root->kind != PK_DICT)
        return GCN_ERROR(p->ctx, GCN_ERR_FORMAT, "%s: not a dict of neighbour lists",
                         p->path[GRAPH]);
    GCN_TRY(read_test_index(p));
    p->n_all = p->ally.rows;
    int64_t lo = INT32_MAX, hi = -1;
    for (int64_t k = 0; k < p->n_test; k++) {
        lo = p->test[k] < lo ? p->test[k] : lo;
        hi = p->test[k] > hi ? p->test[k] : hi;
    }
    p->n = hi + 1 > p->n_all ? hi + 1 : p->n_all;
    const char *why = p->allx.rows != p->n_all ? "allx and ally have different row counts"
                      : p->tx.rows != p->n_test || p->ty.rows != p->n_test
                          ? "tx, ty and the test index have different lengths"
                      : p->tx.cols != p->allx.cols ? "tx and allx have different widths"
                      : p->ty.cols != p->ally.cols ? "ty and ally have different widths"
                      : p->y.rows > p->n_all ? "y is longer than ally"
                      : lo < p->n_all ? "the test index overlaps allx's nodes"
                                      : NULL;
    if (why)
        return GCN_ERROR(p->ctx, GCN_ERR_FORMAT, "%s/raw: %s", p->dir, why);
    GCN_TRY(gcn_ds_malloc(p->ctx, (void **)&p->pos, (size_t)p->n, sizeof *p->pos));
    for (int64_t v = 0; v < p->n; v++)
        p->pos[v] = -1;
    for (int64_t k = 0; k < p->n_test; k++) {
        if (p->pos[p->test[k]] >= 0)
            return GCN_ERROR(p->ctx, GCN_ERR_FORMAT, "%s/raw/ind.%s.test.index: node %d listed "
                             "twice", p->dir, p->name, p->test[k]);
        p->pos[p->test[k]] = (int32_t)k;
    }
    return GCN_OK;
}

/* The first largest entry of a one-hot row, or -1 when it is all zero. */
static int32_t label_of(const pk_array *a, int64_t row)
{
    int32_t best = -1;
    double top = 0;
    for (int64_t c = 0; c < a->cols; c++) {
        double v = pk_array_at(a, row * a->cols + c);
        if (v != 0 && (best < 0 || v > top)) {
            best = (int32_t)c;
            top = v;
        }
    }
    return best;
}

static FILE *create(planetoid *p, const char *file, gcn_status *st)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", p->dir, file);
    FILE *f = fopen(path, "w");
    if (!f)
        *st = GCN_ERROR(p->ctx, GCN_ERR_IO, "%s: %s", path, strerror(errno));
    return f;
}

static gcn_status finish(planetoid *p, FILE *f, const char *file)
{
    if (ferror(f) | fclose(f))
        return GCN_ERROR(p->ctx, GCN_ERR_IO, "%s/%s: write failed", p->dir, file);
    return GCN_OK;
}

typedef struct entry {
    int32_t col;
    float value;
} entry;

static int by_col(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    return (x->col > y->col) - (x->col < y->col);
}

/* features.txt: each node's non-zeros, columns ascending. */
static gcn_status write_features(planetoid *p)
{
    gcn_status st = GCN_OK;
    entry *row = NULL;
    GCN_TRY(gcn_ds_malloc(p->ctx, (void **)&row, (size_t)p->allx.cols + 1, sizeof *row));
    FILE *f = create(p, "features.txt", &st);
    for (int64_t v = 0; f && v < p->n; v++) {
        const csr_view *m = v < p->n_all ? &p->allx : p->pos[v] >= 0 ? &p->tx : NULL;
        int64_t r = v < p->n_all ? v : p->pos[v];
        if (!m)
            continue;
        int64_t a = (int64_t)pk_array_at(&m->indptr, r), b = (int64_t)pk_array_at(&m->indptr, r + 1);
        if (b - a > m->cols) {
            st = GCN_ERROR(p->ctx, GCN_ERR_FORMAT, "%s: row %lld holds more entries than columns",
                           m == &p->tx ? p->path[TX] : p->path[ALLX], (long long)r);
            break;
        }
        for (int64_t k = a; k < b; k++)
            row[k - a] = (entry){(int32_t)pk_array_at(&m->indices, k),
                                 (float)pk_array_at(&m->data, k)};
        qsort(row, (size_t)(b - a), sizeof *row, by_col);
        for (int64_t k = 0; k < b - a; k++)
            if (row[k].value != 0)
                fprintf(f, "%lld %d %.9g\n", (long long)v, row[k].col, (double)row[k].value);
    }
    free(row);
    if (f) {
        gcn_status closed = finish(p, f, "features.txt");
        st = st == GCN_OK ? closed : st;
    }
    return st;
}

static gcn_status write_labels(planetoid *p)
{
    gcn_status st = GCN_OK;
    FILE *f = create(p, "labels.txt", &st);
    for (int64_t v = 0; f && v < p->n; v++)
        fprintf(f, "%d\n", v < p->n_all   ? label_of(&p->ally, v)
                           : p->pos[v] >= 0 ? label_of(&p->ty, p->pos[v])
                                            : -1);
    return f ? finish(p, f, "labels.txt") : st;
}

typedef struct adjacency {
    int64_t node;
    const pk_value *list;
} adjacency;

static int by_node(const void *a, const void *b)
{
    const adjacency *x = a, *y = b;
    return (x->node > y->node) - (x->node < y->node);
}

/* edges.txt: "src dst" for every neighbour of the graph dict, nodes
 * ascending, each list in its order. */
static gcn_status write_edges(planetoid *p)
{
    const pk_value *g = p->f[GRAPH].root;
    size_t n_keys = g->n / 2;
    adjacency *adj = NULL;
    GCN_TRY(gcn_ds_malloc(p->ctx, (void **)&adj, n_keys + 1, sizeof *adj));
    gcn_status st = GCN_OK;
    for (size_t k = 0; k < n_keys && st == GCN_OK; k++) {
        const pk_value *key = g->items[2 * k], *list = g->items[2 * k + 1];
        if (key->kind != PK_INT || key->i < 0 || key->i >= p->n || list->kind != PK_LIST)
            st = GCN_ERROR(p->ctx, GCN_ERR_FORMAT, "%s: entry %zu: expected a node id (below "
                           "%lld) and a list", p->path[GRAPH], k, (long long)p->n);
        adj[k] = (adjacency){key->i, list};
    }
    if (st == GCN_OK)
        qsort(adj, n_keys, sizeof *adj, by_node);
    FILE *f = st == GCN_OK ? create(p, "edges.txt", &st) : NULL;
    for (size_t k = 0; f && k < n_keys && st == GCN_OK; k++)
        for (size_t j = 0; j < adj[k].list->n; j++) {
            const pk_value *d = adj[k].list->items[j];
            if (d->kind != PK_INT || d->i < 0 || d->i >= p->n) {
                st = GCN_ERROR(p->ctx, GCN_ERR_FORMAT, "%s: node %lld: a neighbour that is not "
                               "a node id below %lld", p->path[GRAPH], (long long)adj[k].node,
                               (long long)p->n);
                break;
            }
            fprintf(f, "%lld %lld\n", (long long)adj[k].node, (long long)d->i);
        }
    free(adj);
    if (f) {
        gcn_status closed = finish(p, f, "edges.txt");
        st = st == GCN_OK ? closed : st;
    }
    return st;
}

static int ascending(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* train.txt, val.txt, test.txt and meta.txt. */
static gcn_status write_split_and_meta(planetoid *p)
{
    gcn_status st = GCN_OK;
    FILE *f = create(p, "train.txt", &st);
    for (int64_t v = 0; f && v < p->y.rows; v++)
        fprintf(f, "%lld\n", (long long)v);
    if (f)
        GCN_TRY(finish(p, f, "train.txt"));
    f = st == GCN_OK ? create(p, "val.txt", &st) : NULL;
    for (int64_t v = p->y.rows; f && v < p->y.rows + 500 && v < p->n; v++)
        fprintf(f, "%lld\n", (long long)v);
    if (f)
        GCN_TRY(finish(p, f, "val.txt"));
    qsort(p->test, (size_t)p->n_test, sizeof *p->test, ascending);
    f = st == GCN_OK ? create(p, "test.txt", &st) : NULL;
    for (int64_t k = 0; f && k < p->n_test; k++)
        fprintf(f, "%d\n", p->test[k]);
    if (f)
        GCN_TRY(finish(p, f, "test.txt"));
    f = st == GCN_OK ? create(p, "meta.txt", &st) : NULL;
    if (f) {
        fprintf(f, "name %s\nnum_nodes %lld\nnum_features %lld\nnum_classes %lld\n", p->name,
                (long long)p->n, (long long)p->allx.cols, (long long)p->ally.cols);
        st = finish(p, f, "meta.txt");
    }
    return st;
}

gcn_status gcn_planetoid_convert(gcn_ctx *ctx, const char *dir, const char *name)
{
    planetoid p = {.ctx = ctx, .dir = dir, .name = name};
    gcn_status st = load_parts(&p);
    if (st == GCN_OK)
        st = write_labels(&p);
    if (st == GCN_OK)
        st = write_features(&p);
    if (st == GCN_OK)
        st = write_edges(&p);
    if (st == GCN_OK)
        st = write_split_and_meta(&p);
    for (int k = 0; k < N_PARTS; k++)
        pk_free(&p.f[k]);
    free(p.test);
    free(p.pos);
    return st;
}
