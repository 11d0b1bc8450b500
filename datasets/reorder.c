/* Node reorderings (gcn_reorder_compute): the options and their spec, the
 * identity, descending degree, and METIS communities nested at several
 * sizes.  METIS parts for ranks are in reorder_parts.c, applying a
 * reordering to a graph or a dataset in reorder_apply.c. */
#include <metis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

_Static_assert(sizeof(idx_t) == sizeof(int32_t), "METIS built with 32-bit idx_t");

#define MAX_SIZE (1 << 24)

/* The largest K of parts:N:nnz+K. */
#define MAX_NODE_WEIGHT (1 << 20)

static const int32_t default_sizes[] = {16, 256, 4096};
#define N_DEFAULT_SIZES ((int)(sizeof default_sizes / sizeof *default_sizes))

gcn_reorder_opts gcn_reorder_default_opts(gcn_reorder_method method)
{
    gcn_reorder_opts o = {.size = sizeof o, .method = method};
    if (method == GCN_REORDER_METIS) {
        o.n_sizes = N_DEFAULT_SIZES;
        memcpy(o.sizes, default_sizes, sizeof default_sizes);
    }
    o.n_parts = 2;
    return o;
}

const char *gcn_reorder_method_name(gcn_reorder_method method)
{
    switch (method) {
    case GCN_REORDER_NONE: return "none";
    case GCN_REORDER_DEGREE: return "degree";
    case GCN_REORDER_METIS: return "metis";
    case GCN_REORDER_PARTS: return "parts";
    }
    return "unknown";
}

static gcn_status bad_spec(gcn_ctx *ctx, const char *spec, const char *why)
{
    return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                     "reorder spec '%s': %s (expected none, degree, metis, metis:S[,S...] "
                     "with at most %d ascending sizes in [2, %d], or parts:N[:nnz[+K]][:range] with "
                     "N in [1, %d], K in [1, %d])",
                     spec, why, GCN_REORDER_MAX_LEVELS, MAX_SIZE, GCN_REORDER_MAX_PARTS,
                     MAX_NODE_WEIGHT);
}

/* "parts:N[:nnz[+K]][:range]", spec past "parts". */
static gcn_status parse_parts(gcn_ctx *ctx, const char *spec, const char *p,
                              gcn_reorder_opts *out)
{
    gcn_reorder_opts o = gcn_reorder_default_opts(GCN_REORDER_PARTS);
    if (*p != ':' || p[1] < '0' || p[1] > '9')
        return bad_spec(ctx, spec, "the part count is missing or not a number");
    char *end = NULL;
    long v = strtol(p + 1, &end, 10);
    if (v < 1 || v > GCN_REORDER_MAX_PARTS)
        return bad_spec(ctx, spec, "the part count is out of range");
    o.n_parts = (int32_t)v;
    if (strncmp(end, ":nnz", 4) == 0) {
        o.balance_nnz = true;
        end += 4;
        if (*end == '+') {
            const char *k = end + 1;
            long w = *k >= '0' && *k <= '9' ? strtol(k, &end, 10) : -1;
            if (w < 1 || w > MAX_NODE_WEIGHT)
                return bad_spec(ctx, spec, "the node weight after nnz+ is not in range");
            o.node_weight = (int32_t)w;
        }
    }
    if (strcmp(end, ":range") == 0)
        o.contiguous = true;
    else if (*end != '\0')
        return bad_spec(ctx, spec, "junk after the part count (only :nnz, :nnz+K, :range may "
                                   "follow)");
    *out = o;
    return GCN_OK;
}

gcn_status gcn_reorder_parse(gcn_ctx *ctx, const char *spec, gcn_reorder_opts *out)
{
    GCN_ARG(ctx, spec && out);
    static const gcn_reorder_method methods[] = {GCN_REORDER_NONE, GCN_REORDER_DEGREE,
                                                 GCN_REORDER_METIS};
    for (size_t m = 0; m < sizeof methods / sizeof *methods; m++)
        if (strcmp(spec, gcn_reorder_method_name(methods[m])) == 0) {
            *out = gcn_reorder_default_opts(methods[m]);
            return GCN_OK;
        }
    if (strncmp(spec, "parts", 5) == 0 && (spec[5] == ':' || spec[5] == '\0'))
        return parse_parts(ctx, spec, spec + 5, out);
    if (strncmp(spec, "metis:", 6) != 0)
        return bad_spec(ctx, spec, "unknown method");
    gcn_reorder_opts o = gcn_reorder_default_opts(GCN_REORDER_METIS);
    o.n_sizes = 0;
    for (const char *p = spec + 6;;) {
        if (o.n_sizes == GCN_REORDER_MAX_LEVELS)
            return bad_spec(ctx, spec, "too many sizes");
        char *end = NULL;
        long v = *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : -1;
        if (v < 0 || (*end != '\0' && *end != ','))
            return bad_spec(ctx, spec, "a size is not a number");
        if (v < 2 || v > MAX_SIZE)
            return bad_spec(ctx, spec, "a size is out of range");
        if (o.n_sizes > 0 && v <= o.sizes[o.n_sizes - 1])
            return bad_spec(ctx, spec, "sizes are not ascending");
        o.sizes[o.n_sizes++] = (int32_t)v;
        if (*end == '\0')
            break;
        p = end + 1;
    }
    *out = o;
    return GCN_OK;
}

/* The METIS sizes o asks for (the defaults when it names none). */
static int sizes_of(const gcn_reorder_opts *o, int32_t sizes[GCN_REORDER_MAX_LEVELS])
{
    int n = o->n_sizes <= 0                      ? N_DEFAULT_SIZES
            : o->n_sizes < GCN_REORDER_MAX_LEVELS ? o->n_sizes
                                                  : GCN_REORDER_MAX_LEVELS;
    memcpy(sizes, o->n_sizes > 0 ? o->sizes : default_sizes, (size_t)n * sizeof *sizes);
    return n;
}

int gcn_reorder_describe(const gcn_reorder_opts *o, char *buf, size_t size)
{
    if (o->method == GCN_REORDER_PARTS)
    {
        char weight[24] = "";
        if (o->balance_nnz && o->node_weight > 1)
            snprintf(weight, sizeof weight, "+%d", (int)o->node_weight);
        return snprintf(buf, size, "parts:%d%s%s%s", o->n_parts, o->balance_nnz ? ":nnz" : "",
                        weight, o->contiguous ? ":range" : "");
    }
    if (o->method != GCN_REORDER_METIS)
        return snprintf(buf, size, "%s", gcn_reorder_method_name(o->method));
    int32_t sizes[GCN_REORDER_MAX_LEVELS];
    int n = sizes_of(o, sizes);
    char text[96];
    int len = snprintf(text, sizeof text, "metis");
    for (int k = 0; k < n; k++)
        len += snprintf(text + len, sizeof text - (size_t)len, "%c%d", k ? ',' : ':', sizes[k]);
    return snprintf(buf, size, "%s", text);
}

gcn_status gcn_reorder_check_opts(gcn_ctx *ctx, const gcn_reorder_opts *o,
                                  int32_t sizes[GCN_REORDER_MAX_LEVELS], int *n_sizes)
{
    GCN_ARG(ctx, o);
    *n_sizes = 0;
    if (o->method != GCN_REORDER_NONE && o->method != GCN_REORDER_DEGREE &&
        o->method != GCN_REORDER_METIS && o->method != GCN_REORDER_PARTS)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "reorder: unknown method %d", (int)o->method);
    if (o->method == GCN_REORDER_PARTS && (o->n_parts < 1 || o->n_parts > GCN_REORDER_MAX_PARTS))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "reorder: %d parts (expected 1 to %d)",
                         o->n_parts, GCN_REORDER_MAX_PARTS);
    if (o->method == GCN_REORDER_PARTS && (o->node_weight < 0 || o->node_weight > MAX_NODE_WEIGHT))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "reorder: node weight %d (expected 0 to %d)",
                         (int)o->node_weight, MAX_NODE_WEIGHT);
    if (o->method != GCN_REORDER_METIS)
        return GCN_OK;
    if (o->n_sizes < 0 || o->n_sizes > GCN_REORDER_MAX_LEVELS)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "reorder: %d sizes (at most %d)", o->n_sizes,
                         GCN_REORDER_MAX_LEVELS);
    *n_sizes = sizes_of(o, sizes);
    for (int k = 0; k < *n_sizes; k++)
        if (sizes[k] < 2 || sizes[k] > MAX_SIZE || (k > 0 && sizes[k] <= sizes[k - 1]))
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                             "reorder: size %d is out of [2, %d] or not ascending", sizes[k],
                             MAX_SIZE);
    return GCN_OK;
}

gcn_status gcn_reorder_seed(gcn_ctx *ctx, const gcn_reorder_opts *o, uint32_t *seed)
{
    int32_t sizes[GCN_REORDER_MAX_LEVELS];
    int n_sizes;
    GCN_TRY(gcn_reorder_check_opts(ctx, o, sizes, &n_sizes));
    *seed = 0;
    if (o->method == GCN_REORDER_METIS || o->method == GCN_REORDER_PARTS)
        GCN_TRY(gcn_rng_below(ctx, GCN_RNG_PARTITION, INT32_MAX, seed, 1));
    return GCN_OK;
}

gcn_status gcn_reorder_alloc(gcn_ctx *ctx, gcn_reorder_method method, int32_t n_nodes,
                             gcn_reorder **out)
{
    gcn_reorder *r = calloc(1, sizeof *r);
    if (!r)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for a reordering");
    r->method = method;
    r->n_nodes = n_nodes;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&r->order, (size_t)n_nodes, sizeof *r->order));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&r->position, (size_t)n_nodes, sizeof *r->position));
    *out = r;
    return GCN_OK;
cleanup:
    gcn_reorder_free(&r);
    return st;
}

void gcn_reorder_free(gcn_reorder **r)
{
    if (!r || !*r)
        return;
    free((*r)->order);
    free((*r)->position);
    for (int k = 0; k < GCN_REORDER_MAX_LEVELS; k++)
        free((*r)->part_ptr[k]);
    free(*r);
    *r = NULL;
}

/* Descending row length, ties in id order: a counting sort on
 * max_degree - degree, which is stable. */
static gcn_status degree_order(gcn_ctx *ctx, const gcn_graph *g, int32_t *order)
{
    const int32_t *rp = g->row_ptr;
    int32_t max = 0, *start = NULL;
    for (int32_t i = 0; i < g->n_nodes; i++)
        max = rp[i + 1] - rp[i] > max ? rp[i + 1] - rp[i] : max;
    GCN_TRY(gcn_ds_calloc(ctx, (void **)&start, (size_t)max + 2, sizeof *start));
    for (int32_t i = 0; i < g->n_nodes; i++)
        start[max - (rp[i + 1] - rp[i]) + 1]++;
    for (int32_t b = 0; b <= max; b++)
        start[b + 1] += start[b];
    for (int32_t i = 0; i < g->n_nodes; i++)
        order[start[max - (rp[i + 1] - rp[i])]++] = i;
    free(start);
    return GCN_OK;
}

/* ---- nested METIS communities ------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A graph of more than CUT_FACTOR * CUT_FACTOR / 4 times the coarsest
 * community size nodes is first cut into parts CUT_FACTOR times that size
 * (and those, if needed, into parts CUT_FACTOR times smaller...): levels
 * only for cutting, not kept.  On chunglu:products (2.45 M nodes) one
 * METIS call into 598 parts of 4,096 nodes took 25 minutes on one core;
 * cutting into 38 parts of 65,536 first made the whole nesting 14-16 minutes
 * (docs/perf.md).  Graphs of up to 262,144 nodes (arxiv) are cut as
 * before. */
#define CUT_FACTOR 16
#define MAX_CUT_LEVELS 2

/* The state of one nested partitioning: the order is written depth first,
 * each level recording where its parts start. */
typedef struct nest {
    gcn_ctx *ctx;
    const gcn_graph *sym; /* A + A^T without self-loops */
    int32_t *local;       /* [n_nodes]: id in the set being cut, or -1 */
    idx_t seed;
    const int32_t *size;  /* nominal part size of each level, finest first */
    gcn_i32vec ptr[GCN_REORDER_MAX_LEVELS + MAX_CUT_LEVELS]; /* part starts of each level */
    int32_t *order;
    int32_t pos;          /* next slot of order */
    const atomic_bool *stop; /* polled before each cut; NULL: never stopped */
    double metis_s[GCN_REORDER_MAX_LEVELS + MAX_CUT_LEVELS]; /* METIS's time at each level */
    int32_t calls[GCN_REORDER_MAX_LEVELS + MAX_CUT_LEVELS];  /* and its calls */
} nest;

/* The subgraph of sym induced by set[0, n), in local ids. */
static gcn_status induce(nest *t, const int32_t *set, int32_t n, idx_t **xadj, idx_t **adjncy)
{
    const gcn_graph *g = t->sym;
    gcn_status st = GCN_OK;
    int64_t m = 0;
    for (int32_t i = 0; i < n; i++)
        t->local[set[i]] = i;
    for (int32_t i = 0; i < n; i++)
        for (int32_t e = g->row_ptr[set[i]]; e < g->row_ptr[set[i] + 1]; e++)
            m += t->local[g->col_idx[e]] >= 0;
    GCN_CHECK(gcn_ds_malloc(t->ctx, (void **)xadj, (size_t)n + 1, sizeof **xadj));
    GCN_CHECK(gcn_ds_malloc(t->ctx, (void **)adjncy, (size_t)m, sizeof **adjncy));
    (*xadj)[0] = 0;
    for (int32_t i = 0, w = 0; i < n; i++) {
        for (int32_t e = g->row_ptr[set[i]]; e < g->row_ptr[set[i] + 1]; e++)
            if (t->local[g->col_idx[e]] >= 0)
                (*adjncy)[w++] = t->local[g->col_idx[e]];
        (*xadj)[i + 1] = w;
    }
cleanup:
    for (int32_t i = 0; i < n; i++)
        t->local[set[i]] = -1;
    return st;
}

static const char *metis_code(int rc)
{
    switch (rc) {
    case METIS_ERROR_INPUT: return "METIS_ERROR_INPUT";
    case METIS_ERROR_MEMORY: return "METIS_ERROR_MEMORY";
    case METIS_ERROR: return "METIS_ERROR";
    }
    return "an unknown code";
}

gcn_status gcn_metis_error(gcn_ctx *ctx, int rc, int32_t n, int32_t edges, int32_t nparts)
{
    gcn_status st = rc == METIS_ERROR_MEMORY  ? GCN_ERR_NOMEM
                    : rc == METIS_ERROR_INPUT ? GCN_ERR_INVALID_ARG
                                              : GCN_ERR_UNSUPPORTED;
    return GCN_ERROR(ctx, st,
                     "METIS_PartGraphKway returned %s (%d) cutting a graph of %d nodes and %d "
                     "edges into %d parts",
                     metis_code(rc), rc, n, edges, nparts);
}

int gcn_metis_run(int32_t n, int32_t *xadj, int32_t *adjncy, int32_t *vwgt, int32_t nparts,
                  uint32_t seed, int32_t *part)
{
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = (idx_t)seed;
    options[METIS_OPTION_NUMBERING] = 0;
    idx_t nvtxs = n, ncon = 1, np = nparts, objval = 0;
    return METIS_PartGraphKway(&nvtxs, &ncon, xadj, adjncy, vwgt, NULL, NULL, &np, NULL, NULL,
                               options, &objval, part);
}

gcn_status gcn_metis_kway(gcn_ctx *ctx, int32_t n, int32_t *xadj, int32_t *adjncy,
                          int32_t *vwgt, int32_t nparts, uint32_t seed, int32_t *part)
{
    int rc = gcn_metis_run(n, xadj, adjncy, vwgt, nparts, seed, part);
    return rc == METIS_OK ? GCN_OK : gcn_metis_error(ctx, rc, n, xadj[n], nparts);
}

/* Stable counting sort of set by part: sorted[start[p], start[p + 1]) holds
 * part p in the order of set. */
static void group(const int32_t *set, const int32_t *part, int32_t n, int32_t nparts,
                  int32_t *sorted, int32_t *start)
{
    for (int32_t i = 0; i < n; i++)
        start[part[i] + 1]++;
    for (int32_t p = 0; p < nparts; p++)
        start[p + 1] += start[p];
    for (int32_t i = 0; i < n; i++)
        sorted[start[part[i]]++] = set[i];
    for (int32_t p = nparts; p > 0; p--)
        start[p] = start[p - 1];
    start[0] = 0;
}

/* Cuts set[0, n) (ascending ids) into parts of level k and each part into
 * the levels below; level -1 writes the nodes to the order. */
static gcn_status cut(nest *t, const int32_t *set, int32_t n, int k)
{
    if (n == 0)
        return GCN_OK;
    if (t->stop && atomic_load(t->stop))
        return gcn_reorder_stopped(t->ctx);
    if (k < 0) {
        memcpy(t->order + t->pos, set, (size_t)n * sizeof *set);
        t->pos += n;
        return GCN_OK;
    }
    int32_t size = t->size[k], nparts = (int32_t)(((int64_t)n + size - 1) / size);
    int32_t *part = NULL, *sorted = NULL, *start = NULL;
    idx_t *xadj = NULL, *adjncy = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_ds_calloc(t->ctx, (void **)&part, (size_t)n, sizeof *part));
    if (nparts >= 2) {
        GCN_CHECK(induce(t, set, n, &xadj, &adjncy));
        if (xadj[n] == 0)
            for (int32_t i = 0; i < n; i++)
                part[i] = i / size;
        else {
            double t0 = now_s();
            if (t->stop && n >= GCN_METIS_CHILD_NODES)
                GCN_CHECK(gcn_metis_kway_child(t->ctx, n, xadj, adjncy, nparts,
                                               (uint32_t)t->seed, t->stop, part));
            else
                GCN_CHECK(gcn_metis_kway(t->ctx, n, xadj, adjncy, NULL, nparts,
                                         (uint32_t)t->seed, part));
            t->metis_s[k] += now_s() - t0;
            t->calls[k]++;
        }
        free(xadj);
        free(adjncy);
        xadj = adjncy = NULL;
    } else {
        nparts = 1;
    }
    GCN_CHECK(gcn_ds_malloc(t->ctx, (void **)&sorted, (size_t)n, sizeof *sorted));
    GCN_CHECK(gcn_ds_calloc(t->ctx, (void **)&start, (size_t)nparts + 1, sizeof *start));
    group(set, part, n, nparts, sorted, start);
    for (int32_t p = 0; p < nparts; p++) {
        if (start[p + 1] == start[p])
            continue;
        GCN_CHECK(gcn_i32vec_push(t->ctx, &t->ptr[k], t->pos));
        GCN_CHECK(cut(t, sorted + start[p], start[p + 1] - start[p], k - 1));
    }
cleanup:
    free(part);
    free(sorted);
    free(start);
    free(xadj);
    free(adjncy);
    return st;
}

/* Closes each level's part_ptr and moves the levels with two or more parts
 * into r. */
static gcn_status keep_levels(nest *t, int n_levels, gcn_reorder *r)
{
    for (int k = 0; k < n_levels; k++) {
        GCN_TRY(gcn_i32vec_push(t->ctx, &t->ptr[k], r->n_nodes));
        int32_t n_parts = (int32_t)t->ptr[k].len - 1;
        if (n_parts < 2)
            continue;
        r->size[r->n_levels] = t->size[k];
        r->n_parts[r->n_levels] = n_parts;
        r->part_ptr[r->n_levels++] = t->ptr[k].data;
        t->ptr[k].data = NULL;
    }
    return GCN_OK;
}

/* Orders the connected nodes first, cutting them level by level, starting
 * from the coarsest size that gives two or more parts.  The isolated nodes
 * follow, cut level by level in the same way. */
static gcn_status metis_order(gcn_ctx *ctx, const gcn_graph *g, const int32_t *sizes,
                              int n_sizes, uint32_t seed, const atomic_bool *stop,
                              gcn_reorder *r)
{
    int32_t n = g->n_nodes, *set = NULL, n_conn = 0;
    int32_t all[GCN_REORDER_MAX_LEVELS + MAX_CUT_LEVELS];
    int n_levels = 0, n_cut;
    while (n_levels < n_sizes && sizes[n_levels] < n)
        n_levels++;
    memcpy(all, sizes, (size_t)n_levels * sizeof *all);
    for (n_cut = n_levels; n_cut > 0 && n_cut < n_levels + MAX_CUT_LEVELS &&
                           (int64_t)all[n_cut - 1] * CUT_FACTOR * CUT_FACTOR / 4 < n;
         n_cut++)
        all[n_cut] = all[n_cut - 1] * CUT_FACTOR;
    nest t = {.ctx = ctx, .seed = (idx_t)seed, .size = all, .order = r->order, .stop = stop};
    gcn_graph *u = NULL, *sym = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_graph_symmetrize(ctx, g, &u));
    GCN_CHECK(gcn_graph_remove_self_loops(ctx, u, &sym));
    t.sym = sym;
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&t.local, (size_t)n, sizeof *t.local));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&set, (size_t)n, sizeof *set));
    for (int32_t i = 0; i < n; i++) {
        t.local[i] = -1;
        if (sym->row_ptr[i + 1] > sym->row_ptr[i])
            set[n_conn++] = i;
    }
    for (int32_t i = 0, w = n_conn; i < n; i++)
        if (sym->row_ptr[i + 1] == sym->row_ptr[i])
            set[w++] = i;
    GCN_CHECK(cut(&t, set, n_conn, n_cut - 1));
    GCN_CHECK(cut(&t, set + n_conn, n - n_conn, n_cut - 1));
    GCN_CHECK(keep_levels(&t, n_levels, r));
    for (int k = n_cut - 1; k >= 0; k--)
        gcn_log(ctx, GCN_LOG_INFO, "metis: parts of %d nodes: %d call%s, %.3f s", all[k],
                t.calls[k], t.calls[k] == 1 ? "" : "s", t.metis_s[k]);
cleanup:
    for (int k = 0; k < GCN_REORDER_MAX_LEVELS + MAX_CUT_LEVELS; k++)
        free(t.ptr[k].data);
    free(t.local);
    free(set);
    gcn_graph_free(&u);
    gcn_graph_free(&sym);
    return st;
}

gcn_status gcn_reorder_compute_seeded(gcn_ctx *ctx, const gcn_graph *g,
                                      const gcn_reorder_opts *o, uint32_t seed,
                                      const atomic_bool *stop, gcn_reorder **out)
{
    GCN_ARG(ctx, g && o && out);
    *out = NULL;
    int32_t sizes[GCN_REORDER_MAX_LEVELS];
    int n_sizes;
    GCN_TRY(gcn_reorder_check_opts(ctx, o, sizes, &n_sizes));
    GCN_TRY(gcn_graph_validate(ctx, g));
    double t0 = now_s();
    gcn_reorder *r = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_reorder_alloc(ctx, o->method, g->n_nodes, &r));
    if (o->method == GCN_REORDER_DEGREE)
        GCN_CHECK(degree_order(ctx, g, r->order));
    else if (o->method == GCN_REORDER_METIS)
        GCN_CHECK(metis_order(ctx, g, sizes, n_sizes, seed, stop, r));
    else if (o->method == GCN_REORDER_PARTS)
        GCN_CHECK(gcn_reorder_parts(ctx, g, o, seed, r));
    else
        for (int32_t i = 0; i < g->n_nodes; i++)
            r->order[i] = i;
    for (int32_t i = 0; i < g->n_nodes; i++)
        r->position[r->order[i]] = i;
    GCN_CHECK(gcn_reorder_count_cut(ctx, g, r));
    r->seconds = now_s() - t0;
    *out = r;
    return GCN_OK;
cleanup:
    gcn_reorder_free(&r);
    return st;
}

gcn_status gcn_reorder_compute(gcn_ctx *ctx, const gcn_graph *g, const gcn_reorder_opts *o,
                               gcn_reorder **out)
{
    GCN_ARG(ctx, g && o && out);
    *out = NULL;
    gcn_reorder_opts ro = gcn_reorder_default_opts(GCN_REORDER_NONE);
    GCN_TRY(gcn_struct_import(ctx, "gcn_reorder_opts", &ro, &ro, sizeof ro, o));
    uint32_t seed;
    GCN_TRY(gcn_reorder_seed(ctx, &ro, &seed));
    return gcn_reorder_compute_seeded(ctx, g, &ro, seed, NULL, out);
}
