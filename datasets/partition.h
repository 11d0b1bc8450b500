/* One rank's rows of a graph split into contiguous blocks of nodes (a PARTS
 * reordering's parts): the block with its columns renumbered locally, the
 * halo nodes it reads from other ranks, and the rows it sends them. */
#ifndef GCN_PARTITION_H
#define GCN_PARTITION_H

#include <stdint.h>

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rank `rank`'s block of a matrix g whose nodes are numbered by a
 * partition (rank p owns the nodes [part_ptr[p], part_ptr[p + 1])): the
 * rows [row0, row0 + n_local) of g, with their columns renumbered locally.
 * Local column c < n_local is the rank's own node row0 + c; column
 * n_local + h is the halo node halo_ids[h], a node of another rank that
 * some row of the block references.  A feature matrix of the block is then
 * [own rows; halo rows]: n_cols = n_local + n_halo rows, the halo rows in
 * halo_ids order, received from their owners.
 *
 * The matrix need not be symmetric: what rank r sends to rank p is
 * computed from p's rows (which of r's nodes they reference), and is
 * exactly p's halo block for r, node for node and in the same order.
 * Every array is malloc-owned and allocated (also when empty). */
typedef struct gcn_part_rows {
    int rank, n_ranks;
    int32_t row0;    /* the first node (row of g) the rank owns */
    int32_t n_local; /* nodes the rank owns (0 for an empty part) */
    int32_t n_halo;  /* other ranks' nodes its rows reference */
    int32_t n_cols;  /* n_local + n_halo */
    /* The block: n_local rows x n_cols columns.  gcn_graph is square by
     * definition, so here n_nodes = n_local counts rows only and column ids
     * run up to n_cols - 1 (gcn_graph_validate would reject it).  Columns
     * ascend in each row (own nodes first, then the halo in halo_ids
     * order); values are g's, NULL when g's are NULL. */
    gcn_graph *local;
    int32_t *halo_ids; /* [n_halo]: global ids (g's numbering), ascending, so grouped by
                        * owner rank in rank order */
    int64_t *recv_off; /* [n_ranks + 1]: the halo nodes owned by rank p are
                        * halo_ids[recv_off[p], recv_off[p + 1]) (empty for p = rank) */
    int32_t *send_rows; /* local rows (0 .. n_local - 1) this rank sends: to rank p the
                         * rows send_rows[send_off[p], send_off[p + 1]), ascending, exactly
                         * p's halo block for this rank in p's halo order */
    int64_t *send_off;  /* [n_ranks + 1] (empty for p = rank) */
    int64_t local_nnz_cut; /* entries of the block whose column is a halo node */
} gcn_part_rows;

/* Builds rank `rank`'s gcn_part_rows of g, a graph numbered so that each of
 * the n_ranks ranks owns a contiguous block of nodes: part_ptr [n_ranks + 1]
 * runs from 0 to g->n_nodes without decreasing (empty blocks allowed), as a
 * PARTS reordering's part_ptr[0] does.  Checks g (gcn_graph_validate) and
 * the arguments: n_ranks >= 1, rank in [0, n_ranks), part_ptr as above;
 * GCN_ERR_INVALID_ARG otherwise.  Costs O(n_nodes + nnz) time and
 * O(n_nodes) scratch memory.  Caller frees with gcn_part_rows_free. */
GCN_API gcn_status gcn_partition_rows(gcn_ctx *ctx, const gcn_graph *g, const int32_t *part_ptr,
                                      int n_ranks, int rank, gcn_part_rows **out);

/* Frees the block and its arrays; accepts NULL and sets *p to NULL. */
GCN_API void gcn_part_rows_free(gcn_part_rows **p);

#ifdef __cplusplus
}
#endif
#endif
