/* Internal glue between the SpMM op (spmm.c), the decomposition
 * (kernels/adaptgear/adaptgear.c) and the selector's call sites (kernels/select/sites.c). */
#ifndef GCN_SPMM_AUTO_H
#define GCN_SPMM_AUTO_H

#include "core/internal.h"
#include "spmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A matrix sharing a's arrays with a's community level `level` as its only
 * level (the whole product as a community kernel sees it).  Caller frees
 * with gcn_csr_free, before a. */
gcn_status gcn_communities_level_view(gcn_ctx *ctx, const gcn_csr *a, int level, gcn_csr **view);

/* A matrix sharing a's arrays whose visit order (gcn_csr_visit_order) is
 * a's prior order, which a must have.  Caller frees with gcn_csr_free,
 * before a. */
gcn_status gcn_communities_prior_view(gcn_ctx *ctx, const gcn_csr *a, gcn_csr **view);

/* The kernels ctx can run, i in [0, gcn_spmm_count(ctx)): the built-in
 * registry in its order, then the program's registered ones. */
int gcn_spmm_count(const gcn_ctx *ctx);
const gcn_spmm_impl *gcn_spmm_at(const gcn_ctx *ctx, int i);

/* The kernel for matrices that live one step (gcn_spmm_borrow): one that
 * plans without reading the matrix ("rowgroup" on CUDA, "cpu"). */
const gcn_spmm_impl *gcn_spmm_one_step_kernel(const gcn_ctx *ctx);

/* Points a matrix of gcn_spmm_borrow at another n x n matrix's arrays (the
 * next step's batch), keeping its header and plan records, each plan built
 * again for the new arrays: with the CPU's one-step kernel this allocates
 * nothing. */
gcn_status gcn_spmm_reborrow(gcn_ctx *ctx, gcn_csr *a, int32_t n, int32_t nnz, int32_t *row_ptr,
                             int32_t *col_idx, float *values);

/* A + alpha I of a square matrix, built on the first call and kept with a
 * (self_loops.c); *out is NULL when a keeps it for another alpha. */
gcn_status gcn_spmm_self_matrix(gcn_ctx *ctx, const gcn_csr *a, float alpha, const gcn_csr **out);

/* The plan of impl's variant for dtype at width feat on a, built and
 * cached on first use. */
gcn_status gcn_spmm_get_plan(gcn_ctx *ctx, const gcn_spmm_impl *impl, const gcn_csr *a, int feat,
                             gcn_dtype dtype, void **plan);

/* Whether a holds the plan (impl, feat, dtype); frees it if so. */
bool gcn_spmm_has_plan(const gcn_csr *a, const gcn_spmm_impl *impl, int feat, gcn_dtype dtype);
void gcn_spmm_drop_plan(const gcn_csr *a, const gcn_spmm_impl *impl, int feat, gcn_dtype dtype);

/* gcn_spmm_run or gcn_spmm_run_bf16 by dtype, x and y of that dtype. */
gcn_status gcn_spmm_run_dtype(gcn_ctx *ctx, const gcn_spmm_impl *impl, const gcn_csr *a,
                              gcn_dtype dtype, const void *x, void *y, int feat, bool accumulate);

/* A symmetric n x n matrix with sorted rows over device arrays the caller
 * keeps alive until the matrix is freed, for matrices that change every
 * step (a batch of graphs), where the selector's profiling makes no sense:
 * while the context's mode is the selector's or a strategy, its products
 * run `kernel` (which must need no host work to plan); a context forced to
 * a registry kernel runs that one. */
gcn_status gcn_spmm_borrow(gcn_ctx *ctx, int32_t n, int32_t nnz, int32_t *row_ptr, int32_t *col_idx,
                           float *values, const gcn_spmm_impl *kernel, gcn_csr **out);

/* The kernel a matrix of gcn_spmm_borrow fixes, or NULL. */
const gcn_spmm_impl *gcn_spmm_fixed_kernel(const gcn_csr *a);

/* The A + alpha I that gcn_spmm_self_matrix keeps with a, and its alpha, or
 * NULL. */
const gcn_csr *gcn_spmm_self_kept(const gcn_csr *a, float *alpha);

/* Whether a kernel name of the context ("auto", "auto-deterministic", or a
 * strategy "k@size" / "k1+k2@size") goes through a call site. */
bool gcn_spmm_uses_sites(const char *kernel);

/* y (+)= A x through the call site (a, feat, dtype) of the context's
 * mode: the selector's choice, or the forced strategy; x and y of dtype. */
gcn_status gcn_spmm_site_apply(gcn_ctx *ctx, const gcn_csr *a, gcn_dtype dtype, const void *x,
                               void *y, int feat, bool accumulate);

/* Whether the selector keeps call sites on a (NULL: no); inline, so that
 * code built without the selector (the fuzz targets) can ask. */
static inline bool gcn_spmm_has_sites(const gcn_csr *a)
{
    return gcn_csr_slot_get(a, GCN_CSR_SLOT_SITES) != NULL;
}

/* The call site of (a, feat, dtype, mode), created with its candidates on
 * first use; for choices files. */
typedef struct gcn_spmm_site gcn_spmm_site;
gcn_status gcn_spmm_site_get(gcn_ctx *ctx, const gcn_csr *a, int feat, gcn_dtype dtype,
                             const char *mode, gcn_spmm_site **site);

/* A new call site of (a, feat, dtype, mode) holding only the named
 * strategy, locked (a choices file's choice): no other candidate is
 * planned or split. */
gcn_status gcn_spmm_site_restore(gcn_ctx *ctx, const gcn_csr *a, int feat, gcn_dtype dtype,
                                 const char *mode, const char *strategy);

/* Locks a site to the candidate of that strategy name; GCN_ERR_NOT_FOUND
 * naming the candidates when there is none. */
gcn_status gcn_spmm_site_lock(gcn_ctx *ctx, gcn_spmm_site *site, const char *strategy);

/* A site's candidates, for benchmarks that time them all: their number,
 * one's name, and one run of it (plans built first, not timed). */
int gcn_spmm_site_candidates(const gcn_spmm_site *site);
const char *gcn_spmm_site_candidate_name(const gcn_spmm_site *site, int cand);
gcn_status gcn_spmm_site_prepare(gcn_ctx *ctx, const gcn_spmm_site *site, int cand);
gcn_status gcn_spmm_site_run(gcn_ctx *ctx, const gcn_spmm_site *site, int cand, const void *x,
                             void *y, bool accumulate);

/* Back-to-back runs one timed sample of a's product at width feat holds,
 * so that a product of a few microseconds is timed without the launch gap:
 * the selector's samples, and benchmarks that compare with them. */
int gcn_spmm_sample_runs(const gcn_csr *a, int feat);

/* Whether the site has locked, and on which candidate. */
bool gcn_spmm_site_locked(const gcn_spmm_site *site, int *cand);

/* Candidates the selector has pruned or failed while profiling, and of
 * those, how many still hold a plan that no live candidate shares (0: their
 * plans were freed as soon as they lost).  Both 0 before profiling starts. */
void gcn_spmm_site_losers(const gcn_spmm_site *site, int *losers, int *holding);

#ifdef __cplusplus
}
#endif
#endif
