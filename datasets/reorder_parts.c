/* The PARTS reordering (gcn_reorder_compute): METIS into one part per rank,
 * nodes without neighbours dealt to the lightest parts, or runs of the
 * nodes in id order; and the edge cut of any reordering's finest level. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Connected sets of fewer than this many nodes a part are cut into runs in
 * id order: on random graphs of 2 to 64 parts, METIS left parts empty or
 * at twice their share below 8 nodes a part, and balanced them from 8 on
 * (with fewer nodes than parts it also prints to stdout). */
#define MIN_METIS_NODES 8

/* One PARTS computation: the graph, the part of each node so far and the
 * weight each part has been given. */
typedef struct parts {
    gcn_ctx *ctx;
    const gcn_graph *g;
    int32_t n_parts;
    bool balance_nnz;
    int32_t node_weight; /* added to a node's entries when balancing them */
    int32_t *part;       /* [n_nodes] */
    int64_t *load; /* [n_parts] */
} parts;

/* What node i weighs in the balance: 1, or its stored entries plus the
 * node weight. */
static int64_t weight_of(const parts *s, int32_t i)
{
    return s->balance_nnz
               ? (int64_t)s->g->row_ptr[i + 1] - s->g->row_ptr[i] + s->node_weight
               : 1;
}

/* Cuts the connected nodes conn[0, n) into runs of about equal weight in
 * id order. */
static void cut_in_runs(parts *s, const int32_t *conn, int32_t n)
{
    int64_t total = 0, before = 0;
    for (int32_t k = 0; k < n; k++)
        total += weight_of(s, conn[k]);
    for (int32_t k = 0; k < n; k++) {
        int32_t q = (int32_t)(before * s->n_parts / total);
        s->part[conn[k]] = q;
        before += weight_of(s, conn[k]);
        s->load[q] += weight_of(s, conn[k]);
    }
}

/* Cuts the connected nodes conn[0, n) (ascending) of sym, A + A^T without
 * self-loops, with one METIS_PartGraphKway call on the graph they induce
 * (all of sym's entries of their rows). */
static gcn_status cut_with_metis(parts *s, const gcn_graph *sym, const int32_t *conn, int32_t n,
                                 uint32_t seed)
{
    int32_t *local = NULL, *xadj = NULL, *adjncy = NULL, *vwgt = NULL, *lpart = NULL;
    int64_t total = 0;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_ds_malloc(s->ctx, (void **)&local, (size_t)sym->n_nodes, sizeof *local));
    GCN_CHECK(gcn_ds_malloc(s->ctx, (void **)&xadj, (size_t)n + 1, sizeof *xadj));
    GCN_CHECK(gcn_ds_malloc(s->ctx, (void **)&adjncy, (size_t)sym->nnz, sizeof *adjncy));
    GCN_CHECK(gcn_ds_malloc(s->ctx, (void **)&lpart, (size_t)n, sizeof *lpart));
    if (s->balance_nnz)
        GCN_CHECK(gcn_ds_malloc(s->ctx, (void **)&vwgt, (size_t)n, sizeof *vwgt));
    for (int32_t k = 0; k < n; k++) {
        local[conn[k]] = k;
        total += weight_of(s, conn[k]);
        if (vwgt)
            vwgt[k] = (int32_t)weight_of(s, conn[k]);
    }
    if (total > INT32_MAX) {
        st = GCN_ERROR(s->ctx, GCN_ERR_UNSUPPORTED,
                       "reorder: node weights sum to %lld, more than METIS's 32-bit counts hold",
                       (long long)total);
        goto cleanup;
    }
    xadj[0] = 0;
    for (int32_t k = 0, w = 0; k < n; k++) {
        for (int32_t e = sym->row_ptr[conn[k]]; e < sym->row_ptr[conn[k] + 1]; e++)
            adjncy[w++] = local[sym->col_idx[e]];
        xadj[k + 1] = w;
    }
    GCN_CHECK(gcn_metis_kway(s->ctx, n, xadj, adjncy, vwgt, s->n_parts, seed, lpart));
    for (int32_t k = 0; k < n; k++) {
        s->part[conn[k]] = lpart[k];
        s->load[lpart[k]] += weight_of(s, conn[k]);
    }
cleanup:
    free(local);
    free(xadj);
    free(adjncy);
    free(vwgt);
    free(lpart);
    return st;
}

/* Whether part a is lighter than part b (ties: the lower id). */
static bool lighter(const parts *s, int32_t a, int32_t b)
{
    return s->load[a] < s->load[b] || (s->load[a] == s->load[b] && a < b);
}

/* Restores the min-heap heap[0, n) by load below slot k. */
static void sift_down(const parts *s, int32_t *heap, int32_t n, int32_t k)
{
    for (;;) {
        int32_t least = k, l = 2 * k + 1, r = l + 1;
        if (l < n && lighter(s, heap[l], heap[least]))
            least = l;
        if (r < n && lighter(s, heap[r], heap[least]))
            least = r;
        if (least == k)
            return;
        int32_t t = heap[k];
        heap[k] = heap[least];
        heap[least] = t;
        k = least;
    }
}

/* Deals out the nodes iso[0, n) in order, giving each to the part that is
 * lightest at that moment. */
static gcn_status deal_isolated(parts *s, const int32_t *iso, int32_t n)
{
    int32_t *heap = NULL;
    GCN_TRY(gcn_ds_malloc(s->ctx, (void **)&heap, (size_t)s->n_parts, sizeof *heap));
    for (int32_t q = 0; q < s->n_parts; q++)
        heap[q] = q;
    for (int32_t q = s->n_parts / 2 - 1; q >= 0; q--)
        sift_down(s, heap, s->n_parts, q);
    for (int32_t k = 0; k < n; k++) {
        s->part[iso[k]] = heap[0];
        s->load[heap[0]] += weight_of(s, iso[k]);
        sift_down(s, heap, s->n_parts, 0);
    }
    free(heap);
    return GCN_OK;
}

/* Sets part[] for every node.  Connected nodes (those with a neighbour
 * other than themselves, in either direction) are split by METIS or cut
 * into runs; the other nodes are then dealt out. */
static gcn_status assign(parts *s, uint32_t seed)
{
    int32_t n = s->g->n_nodes, *set = NULL, n_conn = 0;
    gcn_graph *u = NULL, *sym = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_graph_symmetrize(s->ctx, s->g, &u));
    GCN_CHECK(gcn_graph_remove_self_loops(s->ctx, u, &sym));
    gcn_graph_free(&u);
    GCN_CHECK(gcn_ds_malloc(s->ctx, (void **)&set, (size_t)n, sizeof *set));
    for (int32_t i = 0; i < n; i++)
        if (sym->row_ptr[i + 1] > sym->row_ptr[i])
            set[n_conn++] = i;
    for (int32_t i = 0, w = n_conn; i < n; i++)
        if (sym->row_ptr[i + 1] == sym->row_ptr[i])
            set[w++] = i;
    if (n_conn >= (int64_t)MIN_METIS_NODES * s->n_parts)
        GCN_CHECK(cut_with_metis(s, sym, set, n_conn, seed));
    else if (n_conn > 0)
        cut_in_runs(s, set, n_conn);
    GCN_CHECK(deal_isolated(s, set + n_conn, n - n_conn));
cleanup:
    free(set);
    gcn_graph_free(&u);
    gcn_graph_free(&sym);
    return st;
}

/* Numbers the parts one after the other, ids ascending within each: order
 * receives the numbering, ptr the N + 1 boundaries. */
static gcn_status number(parts *s, int32_t *order, int32_t *ptr)
{
    int32_t n = s->g->n_nodes, N = s->n_parts, *slot = NULL;
    GCN_TRY(gcn_ds_calloc(s->ctx, (void **)&slot, (size_t)N + 1, sizeof *slot));
    for (int32_t i = 0; i < n; i++)
        slot[s->part[i] + 1]++;
    for (int32_t q = 0; q < N; q++)
        slot[q + 1] += slot[q];
    memcpy(ptr, slot, ((size_t)N + 1) * sizeof *ptr);
    for (int32_t i = 0; i < n; i++)
        order[slot[s->part[i]]++] = i;
    free(slot);
    return GCN_OK;
}

/* Every node, in id order, into runs of about equal weight. */
static gcn_status cut_contiguous(parts *s)
{
    int32_t n = s->g->n_nodes, *all = NULL;
    GCN_TRY(gcn_ds_malloc(s->ctx, (void **)&all, (size_t)n, sizeof *all));
    for (int32_t i = 0; i < n; i++)
        all[i] = i;
    cut_in_runs(s, all, n);
    free(all);
    return GCN_OK;
}

gcn_status gcn_reorder_parts(gcn_ctx *ctx, const gcn_graph *g, const gcn_reorder_opts *o,
                             uint32_t seed, gcn_reorder *r)
{
    int32_t n_parts = o->n_parts;
    parts s = {.ctx = ctx, .g = g, .n_parts = n_parts, .balance_nnz = o->balance_nnz,
               .node_weight = o->node_weight > 0 ? o->node_weight : 1};
    int32_t *ptr = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_ds_calloc(ctx, (void **)&s.part, (size_t)g->n_nodes, sizeof *s.part));
    GCN_CHECK(gcn_ds_calloc(ctx, (void **)&s.load, (size_t)n_parts, sizeof *s.load));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&ptr, (size_t)n_parts + 1, sizeof *ptr));
    if (n_parts > 1 && o->contiguous && g->n_nodes > 0)
        GCN_CHECK(cut_contiguous(&s));
    else if (n_parts > 1)
        GCN_CHECK(assign(&s, seed));
    GCN_CHECK(number(&s, r->order, ptr));
    r->n_levels = 1;
    r->size[0] = (int32_t)(((int64_t)g->n_nodes + n_parts - 1) / n_parts);
    r->n_parts[0] = n_parts;
    r->part_ptr[0] = ptr;
    ptr = NULL;
cleanup:
    free(s.part);
    free(s.load);
    free(ptr);
    return st;
}

gcn_status gcn_reorder_count_cut(gcn_ctx *ctx, const gcn_graph *g, gcn_reorder *r)
{
    r->edge_cut = 0;
    if (r->n_levels == 0)
        return GCN_OK;
    int32_t *part = NULL;
    GCN_TRY(gcn_ds_malloc(ctx, (void **)&part, (size_t)g->n_nodes, sizeof *part));
    const int32_t *ptr = r->part_ptr[0];
    for (int32_t q = 0; q < r->n_parts[0]; q++)
        for (int32_t i = ptr[q]; i < ptr[q + 1]; i++)
            part[r->order[i]] = q;
    for (int32_t u = 0; u < g->n_nodes; u++)
        for (int32_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++)
            r->edge_cut += part[u] != part[g->col_idx[e]];
    free(part);
    return GCN_OK;
}
