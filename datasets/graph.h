/* gcn_graph: a square sparse matrix in CSR form in host memory, and the
 * preprocessing a GCN needs on it: COO -> CSR, symmetrisation, self-loops,
 * GCN normalisation, transposition, degree statistics, upload as gcn_csr. */
#ifndef GCN_GRAPH_H
#define GCN_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/csr.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rows are nodes; row i lists the targets of i's edges in ascending column
 * order, each at most once (every function here returns graphs in that
 * form).  All arrays are malloc-owned by the graph. */
typedef struct gcn_graph {
    int32_t n_nodes;
    int32_t nnz;      /* stored entries, < 2^31 */
    int32_t *row_ptr; /* [n_nodes + 1] */
    int32_t *col_idx; /* [nnz] */
    float *values;    /* [nnz], or NULL: every entry is 1 */
} gcn_graph;

/* A graph with n_nodes rows and room for nnz entries; row_ptr is zeroed,
 * col_idx (and values, when with_values) are uninitialised.  Caller frees. */
GCN_API gcn_status gcn_graph_create(gcn_ctx *ctx, gcn_graph **out, int32_t n_nodes, int64_t nnz,
                                    bool with_values);

/* Builds the unweighted CSR of n_edges directed edges src[e] -> dst[e]:
 * sorted, duplicates merged, self-loops kept.  Ids outside [0, n_nodes)
 * are GCN_ERR_INVALID_ARG.  Caller frees. */
GCN_API gcn_status gcn_graph_from_coo(gcn_ctx *ctx, gcn_graph **out, int32_t n_nodes,
                                      int64_t n_edges, const int32_t *src, const int32_t *dst);

/* Checks that g is well formed (row_ptr monotone from 0 to nnz, columns in
 * range, strictly ascending within each row); GCN_ERR_FORMAT otherwise. */
GCN_API gcn_status gcn_graph_validate(gcn_ctx *ctx, const gcn_graph *g);

GCN_API gcn_status gcn_graph_clone(gcn_ctx *ctx, const gcn_graph *g, gcn_graph **out);

/* A^T.  Values move with their entries. */
GCN_API gcn_status gcn_graph_transpose(gcn_ctx *ctx, const gcn_graph *g, gcn_graph **out);

/* The structure of A + B, both n x n (unweighted: the result has no
 * values). */
GCN_API gcn_status gcn_graph_union(gcn_ctx *ctx, const gcn_graph *a, const gcn_graph *b,
                                   gcn_graph **out);

/* The structure of A + A^T (unweighted: the result has no values). */
GCN_API gcn_status gcn_graph_symmetrize(gcn_ctx *ctx, const gcn_graph *g, gcn_graph **out);

/* A without its diagonal entries. */
GCN_API gcn_status gcn_graph_remove_self_loops(gcn_ctx *ctx, const gcn_graph *g, gcn_graph **out);

/* A with every diagonal entry present: existing ones are kept with their
 * value, missing ones are added with value 1. */
GCN_API gcn_status gcn_graph_add_self_loops(gcn_ctx *ctx, const gcn_graph *g, gcn_graph **out);

/* The GCN propagation matrix D^-1/2 (A + I) D^-1/2 of Kipf & Welling as CSR
 * values: self-loops are added where missing (existing ones keep their
 * weight), d_i is the row sum of A + I, and entry (i, j) becomes
 * a_ij / sqrt(d_i d_j).  Symmetric when A is. */
GCN_API gcn_status gcn_graph_gcn_norm(gcn_ctx *ctx, const gcn_graph *g, gcn_graph **out);

/* Whether A equals A^T in structure and values. */
GCN_API bool gcn_graph_is_symmetric(const gcn_graph *g);

/* Number of diagonal entries. */
GCN_API int64_t gcn_graph_count_self_loops(const gcn_graph *g);

#define GCN_DEGREE_BUCKETS 33

/* Out-degrees (row lengths).  hist[0] counts degree 0 and hist[k], k >= 1,
 * counts degrees in [2^(k-1), 2^k). */
typedef struct gcn_degree_stats {
    int32_t min, max;
    double mean;
    double median;
    int32_t n_isolated; /* rows with no entry */
    int64_t hist[GCN_DEGREE_BUCKETS];
} gcn_degree_stats;

GCN_API void gcn_graph_degree_stats(const gcn_graph *g, gcn_degree_stats *stats);

/* Uploads g as a gcn_csr on the context's device (values NULL: all ones).
 * Caller frees with gcn_csr_free. */
GCN_API gcn_status gcn_graph_to_csr(gcn_ctx *ctx, const gcn_graph *g, gcn_csr **out);

/* Accepts NULL and sets *g to NULL. */
GCN_API void gcn_graph_free(gcn_graph **g);

#ifdef __cplusplus
}
#endif
#endif
