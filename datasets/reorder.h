/* Node reorderings for the AdaptGear pipeline: METIS communities nested at
 * several sizes, descending degree, or none; METIS parts, one per rank of a
 * multi-rank run; the permutation applied to a graph, to feature rows, or
 * to a whole dataset, and undone on outputs. */
#ifndef GCN_REORDER_H
#define GCN_REORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gcn_reorder_method {
    GCN_REORDER_NONE = 0, /* the identity */
    GCN_REORDER_DEGREE,   /* descending degree, ties in id order */
    GCN_REORDER_METIS,    /* METIS communities made contiguous */
    GCN_REORDER_PARTS     /* N METIS parts made contiguous (one per rank) */
} gcn_reorder_method;

#define GCN_REORDER_MAX_LEVELS 4
#define GCN_REORDER_MAX_PARTS 4096

typedef struct gcn_reorder_opts {
    size_t size; /* sizeof in the caller's build, set by gcn_reorder_default_opts */
    gcn_reorder_method method;
    /* METIS: the community sizes (nodes a part), ascending; n_sizes 0 means
     * 16, 256 and 4096.  The levels are nested: each part of a size is the
     * union of consecutive parts of the next smaller size, so one order
     * serves every size. */
    int n_sizes;
    int32_t sizes[GCN_REORDER_MAX_LEVELS];
    /* PARTS: the number of parts, in [1, GCN_REORDER_MAX_PARTS] (default 2),
     * and whether they hold about equal stored entries instead of equal
     * nodes: with balance_nnz a node weighs its row's entries plus
     * node_weight (0 means 1), so node_weight trades the per-entry work of
     * the sparse products against the per-node work of the dense ones.
     * contiguous: no METIS; the nodes stay in their order and are cut into
     * N runs of about equal weight (for graphs too large for METIS, or
     * whose ids already follow their structure). */
    int32_t n_parts;
    bool balance_nnz;
    int32_t node_weight;
    bool contiguous;
} gcn_reorder_opts;

/* A permutation of n_nodes nodes and, for METIS, the community levels it
 * makes contiguous (PARTS: one level, its N parts, some possibly empty).
 * All arrays are malloc-owned. */
typedef struct gcn_reorder {
    gcn_reorder_method method;
    int32_t n_nodes;
    int32_t *order;    /* [n_nodes]: order[new id] = original id */
    int32_t *position; /* [n_nodes]: position[original id] = new id */
    int n_levels;      /* community levels, finest first; 0 unless METIS or PARTS */
    int32_t size[GCN_REORDER_MAX_LEVELS];      /* nominal nodes a part */
    int32_t n_parts[GCN_REORDER_MAX_LEVELS];
    int32_t *part_ptr[GCN_REORDER_MAX_LEVELS]; /* [n_parts + 1]: part p holds the new ids
                                                  [part_ptr[p], part_ptr[p + 1]) */
    double seconds;    /* wall time of computing it (0 when read from a cache) */
    bool from_cache;
    int64_t edge_cut;  /* stored entries (i, j) of the graph reordered with i and j in
                          different parts of the finest level; 0 without levels */
} gcn_reorder;

GCN_API gcn_reorder_opts gcn_reorder_default_opts(gcn_reorder_method method);

/* Parses "none", "degree", "metis" (the default sizes), "metis:S[,S...]"
 * (sizes in [2, 2^24], ascending), "parts:N[:nnz[+K]][:range]" (N in
 * [1, 4096]; nnz: balance stored entries, each node weighing its entries
 * plus K, default 1, K in [1, 2^20]; range: contiguous runs, no METIS);
 * GCN_ERR_INVALID_ARG with a message naming the spec otherwise (ctx may be
 * NULL). */
GCN_API gcn_status gcn_reorder_parse(gcn_ctx *ctx, const char *spec, gcn_reorder_opts *out);

/* Writes the spec that gcn_reorder_parse reads back ("metis:16,256,4096",
 * "parts:4:nnz", "parts:2:nnz+20:range"). */
GCN_API int gcn_reorder_describe(const gcn_reorder_opts *o, char *buf, size_t size);

/* Computes the reordering of g.  METIS partitions the structure of A + A^T
 * without self-loops (the graph may be directed or carry self-loops);
 * nodes with no neighbours go last, in id order.  The coarsest size is cut
 * with METIS_PartGraphKway, each of its parts again into the next smaller
 * size, and so on; within a part nodes keep their relative order.  METIS's
 * seed comes from the context's GCN_RNG_PARTITION stream.
 *
 * PARTS cuts the same structure into exactly N parts with one
 * METIS_PartGraphKway call (N = 1: the identity, one part) and numbers the
 * parts one after the other, part 0 first, nodes in id order within a part:
 * n_levels 1, size[0] = ceil(n_nodes / N), n_parts[0] = N, part_ptr[0] the
 * N + 1 boundaries.  METIS balances nodes, or with balance_nnz the weights
 * row length + node_weight, so that parts hold about equal stored entries.
 * With contiguous, METIS is not called: part p is the p-th run of nodes in
 * id order, the runs of about equal weight (the identity permutation).  Nodes
 * without neighbours are dealt one at a time to the lightest part (ties to
 * the lowest); a set of connected nodes smaller than 8 N, which METIS
 * balances poorly, is cut into runs of equal weight in id order instead.
 * Parts may be empty (some always are when n_nodes < N).  METIS's seed is
 * drawn as for METIS.
 *
 * Caller frees. */
GCN_API gcn_status gcn_reorder_compute(gcn_ctx *ctx, const gcn_graph *g,
                                       const gcn_reorder_opts *o, gcn_reorder **out);

/* The permuted graph: row and column new = order-mapped, columns sorted in
 * each row, values moved with their entries.  Caller frees. */
GCN_API gcn_status gcn_graph_permute(gcn_ctx *ctx, const gcn_graph *g, const gcn_reorder *r,
                                     gcn_graph **out);

/* dst[new] = src[order[new]] for rows of `cols` floats (src, dst distinct). */
GCN_API void gcn_reorder_rows(const gcn_reorder *r, const float *src, int64_t cols, float *dst);

/* The inverse: dst[original] = src[position[original]]. */
GCN_API void gcn_reorder_rows_back(const gcn_reorder *r, const float *src, int64_t cols,
                                   float *dst);

/* Attaches r's community levels and its prior order (gcn_csr_set_prior_order
 * with r's position) to a, a matrix of the reordered graph (n_nodes x
 * n_nodes), so the selector also tries the subgraph kernels and rowsplit
 * visiting the rows in their original order (kernels/adaptgear/adaptgear.h); PARTS
 * attaches nothing (its parts are rank blocks, far too large for community
 * kernels). */
GCN_API gcn_status gcn_reorder_attach(gcn_ctx *ctx, const gcn_reorder *r, gcn_csr *a);

/* Accepts NULL and sets *r to NULL. */
GCN_API void gcn_reorder_free(gcn_reorder **r);

/* gcn_dataset_reorder (dataset.h) applies a reordering to a whole dataset. */

#ifdef __cplusplus
}
#endif
#endif
