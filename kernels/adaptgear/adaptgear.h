/* AdaptGear's graph decomposition: community levels attached to a square
 * matrix (consecutive node ranges, as a METIS reordering makes them), and
 * the split of a matrix into its intra-community part (block diagonal) and
 * its inter-community part, so that A X = A_intra X + A_inter X. */
#ifndef GCN_ADAPTGEAR_H
#define GCN_ADAPTGEAR_H

#include <stdint.h>

#include "../../core/csr.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GCN_MAX_COMMUNITY_LEVELS 4

/* Attaches n_levels (0..4) community levels to a square matrix and to its
 * stored transpose: level l has n_parts[l] parts, part p holding nodes
 * [part_ptr[l][p], part_ptr[l][p + 1]) (non-decreasing from 0 to n_rows;
 * empty parts allowed), of nominal size sizes[l].  The arrays are copied.
 * The selector then also tries the subgraph kernels at each level.  Must
 * come before the matrix's first product (GCN_ERR_STATE after). */
GCN_API gcn_status gcn_csr_set_communities(gcn_ctx *ctx, gcn_csr *a, int n_levels,
                                           const int32_t *sizes, const int32_t *n_parts,
                                           const int32_t *const *part_ptr);

/* Number of community levels attached (0 when none). */
GCN_API int gcn_csr_community_levels(const gcn_csr *a);

/* The nominal part size of a level, or 0 when there is no such level. */
GCN_API int32_t gcn_csr_community_size(const gcn_csr *a, int level);

/* Attaches to a square matrix, and to its stored transpose, the order its
 * rows had before a relabelling: order[k] is the current id of the row
 * that came k-th (a permutation of 0..n_rows - 1; a gcn_reorder's
 * `position`), NULL to remove it.  The array is copied.  The selector then
 * also times the kernels with GCN_SPMM_ROLE_PRIOR visiting the rows in
 * that order ("rowsplit@prior"): communities made contiguous help most
 * graphs, but where the old ids already followed the structure (a crawl
 * order, degree order), visiting rows as before can be faster.  Must come
 * before the matrix's first product (GCN_ERR_STATE after). */
GCN_API gcn_status gcn_csr_set_prior_order(gcn_ctx *ctx, gcn_csr *a, const int32_t *order);

/* The order in which a kernel should visit a's rows (host, [n_rows]), or
 * NULL for any order: set on the views the selector runs the
 * GCN_SPMM_ROLE_PRIOR kernels on, NULL on every matrix a program makes. */
GCN_API const int32_t *gcn_csr_visit_order(const gcn_csr *a);

/* Splits a at a community level into two new matrices of a's shape:
 * *intra holds the entries whose row and column lie in one part (block
 * diagonal; the level is attached to it as its only level), *inter the
 * others.  Entries keep their order within rows, so intra + inter = A
 * exactly.  Caller frees both with gcn_csr_free. */
GCN_API gcn_status gcn_csr_split(gcn_ctx *ctx, const gcn_csr *a, int level, gcn_csr **intra,
                                 gcn_csr **inter);

#ifdef __cplusplus
}
#endif
#endif
