/* gcn_partition_rows: one rank's block of a graph split into contiguous
 * node blocks, its halo (the other ranks' nodes it reads) and its send
 * lists (its rows the other ranks read), all from one graph in O(nnz). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "partition.h"

static gcn_status check_args(gcn_ctx *ctx, const gcn_graph *g, const int32_t *part_ptr,
                             int n_ranks, int rank)
{
    if (n_ranks < 1 || rank < 0 || rank >= n_ranks)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "partition: rank %d of %d ranks (expected 0 <= rank < n_ranks)", rank,
                         n_ranks);
    if (part_ptr[0] != 0 || part_ptr[n_ranks] != g->n_nodes)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "partition: part_ptr runs from %d to %d, not from 0 to the graph's %d "
                         "nodes",
                         part_ptr[0], part_ptr[n_ranks], g->n_nodes);
    for (int p = 0; p < n_ranks; p++)
        if (part_ptr[p + 1] < part_ptr[p])
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                             "partition: part_ptr decreases at rank %d (%d, then %d)", p,
                             part_ptr[p], part_ptr[p + 1]);
    return gcn_graph_validate(ctx, g);
}

/* Finds the halo of p's rows: fills halo_ids (ascending) and recv_off,
 * and sets map[c] to the halo index of each halo node c (the other entries
 * stay -1). */
static gcn_status find_halo(gcn_ctx *ctx, const gcn_graph *g, const int32_t *part_ptr,
                            gcn_part_rows *p, int32_t *map)
{
    int32_t lo = p->row0, hi = p->row0 + p->n_local, n_halo = 0;
    for (int32_t e = g->row_ptr[lo]; e < g->row_ptr[hi]; e++) {
        int32_t c = g->col_idx[e];
        if ((c < lo || c >= hi) && map[c] < 0) {
            map[c] = 0;
            n_halo++;
        }
    }
    p->n_halo = n_halo;
    p->n_cols = p->n_local + n_halo;
    GCN_TRY(gcn_ds_malloc(ctx, (void **)&p->halo_ids, (size_t)n_halo, sizeof *p->halo_ids));
    GCN_TRY(gcn_ds_malloc(ctx, (void **)&p->recv_off, (size_t)p->n_ranks + 1,
                          sizeof *p->recv_off));
    for (int32_t c = 0, h = 0; h < n_halo; c++)
        if (map[c] == 0) {
            p->halo_ids[h] = c;
            map[c] = h++;
        }
    for (int q = 0; q <= p->n_ranks; q++)
        p->recv_off[q] = gcn_lower_bound(p->halo_ids, 0, n_halo, part_ptr[q]);
    return GCN_OK;
}

/* Copies entries [from, to) of g's row into the block at *w, columns
 * renumbered by shift (own nodes) or map (halo nodes). */
static void copy_entries(const gcn_graph *g, int32_t from, int32_t to, const int32_t *map,
                         int32_t shift, gcn_graph *local, int32_t *w)
{
    for (int32_t e = from; e < to; e++, (*w)++) {
        int32_t c = g->col_idx[e];
        local->col_idx[*w] = map ? shift + map[c] : c - shift;
        if (g->values)
            local->values[*w] = g->values[e];
    }
}

/* Builds the rank's block with its columns renumbered.  Each row of g has
 * entries before the rank's own columns, inside them and after them; they
 * are moved so the own ones come first, which keeps the row ascending
 * because halo indices ascend with global ids. */
static gcn_status build_local(gcn_ctx *ctx, const gcn_graph *g, gcn_part_rows *p,
                              const int32_t *map)
{
    int32_t lo = p->row0, hi = p->row0 + p->n_local, *rp = g->row_ptr;
    GCN_TRY(gcn_graph_create(ctx, &p->local, p->n_local, (int64_t)rp[hi] - rp[lo],
                             g->values != NULL));
    gcn_graph *local = p->local;
    int32_t w = 0;
    for (int32_t i = lo; i < hi; i++) {
        int32_t a = rp[i], b, end = rp[i + 1];
        while (a < end && g->col_idx[a] < lo)
            a++;
        b = a;
        while (b < end && g->col_idx[b] < hi)
            b++;
        copy_entries(g, a, b, NULL, lo, local, &w);
        copy_entries(g, rp[i], a, map, p->n_local, local, &w);
        copy_entries(g, b, end, map, p->n_local, local, &w);
        p->local_nnz_cut += (a - rp[i]) + (end - b);
        local->row_ptr[i - lo + 1] = w;
    }
    return GCN_OK;
}

/* Appends to rows the own nodes that rank q's rows reference, ascending.
 * stamp [n_local] holds the last rank that referenced each own node. */
static gcn_status send_list(gcn_ctx *ctx, const gcn_graph *g, const int32_t *part_ptr, int q,
                            const gcn_part_rows *p, int32_t *stamp, gcn_i32vec *rows)
{
    int32_t lo = p->row0, hi = p->row0 + p->n_local;
    bool found = false;
    for (int32_t e = g->row_ptr[part_ptr[q]]; e < g->row_ptr[part_ptr[q + 1]]; e++) {
        int32_t c = g->col_idx[e];
        if (c >= lo && c < hi) {
            stamp[c - lo] = q;
            found = true;
        }
    }
    for (int32_t l = 0; found && l < p->n_local; l++)
        if (stamp[l] == q)
            GCN_TRY(gcn_i32vec_push(ctx, rows, l));
    return GCN_OK;
}

/* Fills send_off and send_rows with the list for every other rank, in
 * rank order.  stamp [n_local] is scratch space, -1 on entry. */
static gcn_status build_send(gcn_ctx *ctx, const gcn_graph *g, const int32_t *part_ptr,
                             gcn_part_rows *p, int32_t *stamp)
{
    gcn_i32vec rows = {0};
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&p->send_off, (size_t)p->n_ranks + 1,
                            sizeof *p->send_off));
    p->send_off[0] = 0;
    for (int q = 0; q < p->n_ranks; q++) {
        if (q != p->rank && p->n_local > 0)
            GCN_CHECK(send_list(ctx, g, part_ptr, q, p, stamp, &rows));
        p->send_off[q + 1] = rows.len;
    }
    if (!rows.data)
        GCN_CHECK(gcn_ds_malloc(ctx, (void **)&rows.data, 0, sizeof *rows.data));
    p->send_rows = rows.data;
    return GCN_OK;
cleanup:
    free(rows.data);
    return st;
}

gcn_status gcn_partition_rows(gcn_ctx *ctx, const gcn_graph *g, const int32_t *part_ptr,
                              int n_ranks, int rank, gcn_part_rows **out)
{
    GCN_ARG(ctx, g && part_ptr && out);
    *out = NULL;
    GCN_TRY(check_args(ctx, g, part_ptr, n_ranks, rank));
    gcn_part_rows *p = calloc(1, sizeof *p);
    if (!p)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for a rank's rows");
    p->rank = rank;
    p->n_ranks = n_ranks;
    p->row0 = part_ptr[rank];
    p->n_local = part_ptr[rank + 1] - part_ptr[rank];
    int32_t *map = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&map, (size_t)g->n_nodes, sizeof *map));
    memset(map, 0xff, (size_t)g->n_nodes * sizeof *map);
    GCN_CHECK(find_halo(ctx, g, part_ptr, p, map));
    GCN_CHECK(build_local(ctx, g, p, map));
    /* map's first n_local entries become the stamps of the own nodes */
    memset(map, 0xff, (size_t)p->n_local * sizeof *map);
    GCN_CHECK(build_send(ctx, g, part_ptr, p, map));
    *out = p;
    p = NULL;
cleanup:
    free(map);
    gcn_part_rows_free(&p);
    return st;
}

void gcn_part_rows_free(gcn_part_rows **p)
{
    if (!p || !*p)
        return;
    gcn_graph_free(&(*p)->local);
    free((*p)->halo_ids);
    free((*p)->recv_off);
    free((*p)->send_rows);
    free((*p)->send_off);
    free(*p);
    *p = NULL;
}
