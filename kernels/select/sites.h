/* Internal to the selector's call sites: a site's candidate strategies and
 * the matrices they multiply (candidates.c), shared with the sites'
 * lifecycle, runs and reports (sites.c). */
#ifndef GCN_SPMM_SITE_H
#define GCN_SPMM_SITE_H

#include "select.h"
#include "kernels/adaptgear/communities.h"
#include "kernels/spmm/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GCN_SITE_MAX_CANDIDATES 64

/* Run steps in order, every step after the first accumulating. */
typedef struct strategy {
    char name[64];
    int n_steps;
    const gcn_csr *mat[2];
    const gcn_spmm_impl *impl[2];
    bool dropped;   /* pruned or failed, and its plans freed */
} strategy;

struct gcn_spmm_site {
    int feat;
    gcn_dtype dtype; /* of the features: its candidates have a variant for it */
    char mode[64];  /* the context's kernel setting the site serves */
    bool forced;    /* a strategy named by the user: locked from the start */
    char only[64];  /* a choices file's choice: the one candidate built ("" for all) */
    /* Profiling starts with the second product: the first runs the first
     * whole-matrix kernel, so a product made once (a cached aggregation)
     * builds no split and no selector. */
    bool deferred, first_done;
    bool reported;  /* the lock has been logged */
    int runs;       /* back-to-back runs a timed sample holds (gcn_spmm_sample_runs) */
    double setup_ms; /* host time of its splits and plans until the lock */
    int n_cand;
    strategy cand[GCN_SITE_MAX_CANDIDATES];
    gcn_selector *sel;
    struct gcn_spmm_site *next;
};

/* What the selector keeps on a matrix (GCN_CSR_SLOT_SITES): its call sites
 * and the splits and views their candidates multiply. */
typedef struct gcn_spmm_state {
    gcn_csr *intra[GCN_CSR_MAX_LEVELS], *inter[GCN_CSR_MAX_LEVELS];
    gcn_csr *view[GCN_CSR_MAX_LEVELS];
    gcn_csr *prior; /* the prior-order view */
    gcn_spmm_site *sites, *last;
} gcn_spmm_state;

/* The matrix's selector state, created on first use. */
gcn_status gcn_spmm_state_of(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_state **out);

/* The whole-matrix candidates for (a, t->feat) in the site's mode, unless
 * the site is named after another strategy. */
void gcn_spmm_add_whole(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_site *t);

/* The candidates that come after the whole-matrix ones: each kernel in the
 * prior row order, then each community level's strategies. */
gcn_status gcn_spmm_add_more(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_site *t);

#ifdef __cplusplus
}
#endif
#endif
