/* What AdaptGear keeps on a matrix, in its slot (GCN_CSR_SLOT_COMMUNITIES):
 * the community levels (consecutive node ranges, as a METIS reordering
 * makes them) and the rows' prior order.  Internal. */
#ifndef GCN_ADAPTGEAR_COMMUNITIES_H
#define GCN_ADAPTGEAR_COMMUNITIES_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GCN_CSR_MAX_LEVELS 4

/* One level of communities of a square matrix. */
typedef struct gcn_csr_level {
    int32_t size;      /* nominal nodes a part */
    int32_t n_parts;
    int32_t max_part;  /* nodes in the largest part */
    int32_t *part_ptr; /* host [n_parts + 1], from 0 to n_rows */
} gcn_csr_level;

typedef struct gcn_communities {
    int n_levels;        /* finest first */
    gcn_csr_level level[GCN_CSR_MAX_LEVELS];
    bool block_diagonal; /* every entry lies in its row's part of level 0 */
    int32_t *prior_order; /* host [n_rows] or NULL: the rows in the order they had
                           * before a relabelling (gcn_csr_set_prior_order) */
    bool visit_prior;     /* a view whose ordered kernels visit rows in prior_order */
} gcn_communities;

/* a's communities: an empty record (no levels, no prior order) when it has
 * none.  Borrowed from a. */
const gcn_communities *gcn_communities_of(const gcn_csr *a);

#ifdef __cplusplus
}
#endif
#endif
