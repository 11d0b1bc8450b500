/* Sparse-dense products Y = A X: the differentiable op, and the registry of
 * kernel implementations it dispatches to. */
#ifndef GCN_SPMM_H
#define GCN_SPMM_H

#include <stdbool.h>
#include <stdio.h>

#include "../../core/csr.h"
#include "../../core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The parts of a decomposed product a kernel is a candidate for (a bit
 * set): the whole matrix; the intra-community part of a split (block
 * diagonal, its community level attached); the inter-community part; the
 * whole matrix seen with one community level attached (a community
 * kernel that serves both parts in one pass); or the whole matrix with its
 * rows to be visited in the order they had before a relabelling (the
 * kernel follows gcn_csr_visit_order, kernels/adaptgear/adaptgear.h). */
enum {
    GCN_SPMM_ROLE_WHOLE = 1,
    GCN_SPMM_ROLE_INTRA = 2,
    GCN_SPMM_ROLE_INTER = 4,
    GCN_SPMM_ROLE_FUSED = 8,
    GCN_SPMM_ROLE_PRIOR = 16
};

/* One SpMM implementation, built in or a program's own (gcn_spmm_register).
 * `supports` says whether it can take a matrix at a width; `plan` does all
 * preprocessing for a matrix and feature width (built once, cached on the
 * matrix, freed with it by `free_plan`, which may be NULL when plans are
 * always NULL); `run` computes y = A x (or y += A x when accumulate) with x
 * [n_cols, feat] and y [n_rows, feat] row-major on the implementation's
 * device, in the context's stream (gcn_ctx_stream), and allocates nothing.
 * The matrix's arrays are gcn_csr_row_ptr and friends. */
typedef struct gcn_spmm_impl {
    size_t size;        /* sizeof(gcn_spmm_impl) in the describing build */
    const char *name;
    gcn_device device;
    bool deterministic; /* same bits on every run (no float atomics) */
    unsigned roles;     /* GCN_SPMM_ROLE_* the selector tries it in; 0 (built-in
                         * "rowgroup" only): never a candidate, run when named or
                         * by a matrix that fixes it (one-step batch matrices) */
    bool (*supports)(const gcn_csr *a, int feat);
    gcn_status (*plan)(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan);
    gcn_status (*run)(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x, float *y,
                      int feat, bool accumulate);
    void (*free_plan)(void *plan);
} gcn_spmm_impl;

/* The static table of every implementation built into the library, in
 * order of preference.  Tests and benchmarks loop over it. */
GCN_API const gcn_spmm_impl *const *gcn_spmm_registry(int *n_impls);

/* Adds a program's own kernel to this context, after the built-in ones:
 * gcn_spmm_set_kernel can force it by name, choices files can name it, and
 * the selector times it in the roles it lists exactly like a built-in
 * kernel (it must compute the same product up to float rounding).  The
 * description is copied, its name too; the callbacks must stay valid while
 * the context lives.  The name is 1 to 31 characters of [A-Za-z0-9_-], not
 * taken by a built-in or an earlier registration; the device must be the
 * context's; plan, run and supports are required, roles not empty. */
GCN_API gcn_status gcn_spmm_register(gcn_ctx *ctx, const gcn_spmm_impl *kernel);

/* The implementation with this name among the built-in ones and those
 * registered on ctx (NULL: the built-in ones only), or NULL. */
GCN_API const gcn_spmm_impl *gcn_spmm_find(const gcn_ctx *ctx, const char *name);

/* Chooses what gcn_spmm uses on this context:
 *   "auto" (the default): the adaptive selector.  Each call site, a matrix
 *     (A, or the stored A^T a backward multiplies) at one feature width,
 *     times every candidate on its first real calls (CUDA events, read
 *     without stalling the stream), drops clear losers, then locks in the
 *     fastest by median and never times again.  Candidates are the
 *     registry's whole-matrix kernels, and for matrices with community
 *     levels (kernels/adaptgear/adaptgear.h) each level's community kernel on the whole
 *     matrix ("intra_smem@256") and each pair of an intra and an inter
 *     kernel on its split ("intra_smem+inter_csr@256"); for matrices that
 *     carry the order of their rows before a relabelling
 *     (gcn_csr_set_prior_order), the kernels that can follow it visiting
 *     the rows in that order ("rowsplit@prior").  They compute the same
 *     product up to float rounding.
 *   "auto-deterministic": the same over deterministic candidates only.
 *   a registry name ("rowsplit"): that kernel on every call.
 *   a strategy name as above: that strategy on every call (an error at the
 *     first product when the matrix lacks the level).
 * Unknown kernel names and kernels for another device are
 * GCN_ERR_NOT_FOUND. */
GCN_API gcn_status gcn_spmm_set_kernel(gcn_ctx *ctx, const char *name);
GCN_API const char *gcn_spmm_kernel(const gcn_ctx *ctx);

/* What a call site of the selector measured and chose. */
typedef struct gcn_spmm_site_info {
    int feat;
    bool transposed;        /* a site of the stored A^T (backward of a non-symmetric A) */
    bool locked;
    char mode[24];          /* "auto", "auto-deterministic" or "forced" */
    int n_candidates;
    int64_t calls;          /* products it has run */
    int64_t profiled_calls; /* calls before the lock (0 when forced or loaded) */
    char chosen[64];        /* the strategy running (or leading, before the lock) */
    double chosen_ms;       /* its median, NAN when never timed */
    char runner_up[64];     /* the fastest other candidate timed, "" if none */
    double runner_up_ms;
    double cusparse_ms;     /* the "cusparse" candidate's median, NAN if not timed */
    double setup_ms;        /* host time of its splits and candidates' plans until the lock */
    float self_alpha;       /* a site of A + self_alpha I (gcn_spmm_self), else 0 */
    int block_part;         /* a rank's block (gcn_csr_set_halo): 1 for its own columns'
                             * part, 2 for its halo's; 0 for any other matrix */
} gcn_spmm_site_info;

/* The call sites of a and of its stored transpose, then those of the
 * A + alpha I that gcn_spmm_self keeps with a and of its transpose, each in
 * creation order, at most max of them into out (may be NULL to count);
 * returns their number.  For a rank's block, those of its own columns'
 * part (and its A + alpha I), then those of its halo's part. */
GCN_API int gcn_spmm_sites(const gcn_csr *a, gcn_spmm_site_info *out, int max);

/* Choices files: the locked choices of the call sites of n matrices (tagged
 * by name, e.g. "gcn" and "raw"), written as text, so a later run skips
 * profiling.  Reading checks each tagged matrix against the file (shape,
 * non-zeros and a fingerprint of its structure): a file for another graph
 * is GCN_ERR_FORMAT naming the file and line; then it locks the listed
 * sites.  Sites the file does not list are profiled as usual.  A rank's
 * block (gcn_csr_set_halo) is listed as its parts, TAG:own and TAG:halo1,
 * TAG:halo2, ... (one per chunk of its exchange).
 * On a context of several ranks, _write and _read are collectives (every
 * rank calls them with its own matrices): rank 0 gathers every rank's lines
 * through the communicator and writes one file ("ranks N", then each
 * rank's lines after "rank R"), and reading, rank 0 reads the file and
 * sends each rank its lines.  A file of another rank count (one context's
 * included, and a ranks' file on one context) is not used: a note is
 * logged, nothing is locked, and GCN_OK is returned.  A failure of rank 0's
 * (the file cannot be read or written) returns on rank 0; reading, before
 * anything is sent, so its caller stops the communicator (gcn_comm_abort).
 * _save and _load, on streams, hold the calling context's matrices only. */
GCN_API gcn_status gcn_spmm_choices_write(gcn_ctx *ctx, const char *path,
                                          const gcn_csr *const *mats, const char *const *tags,
                                          int n);
GCN_API gcn_status gcn_spmm_choices_read(gcn_ctx *ctx, const char *path, const gcn_csr *const *mats,
                                         const char *const *tags, int n);

/* The same through a stream the caller opened and closes (a memory stream
 * carries one run's choices to the next); `name` labels it in messages. */
GCN_API gcn_status gcn_spmm_choices_save(gcn_ctx *ctx, FILE *f, const gcn_csr *const *mats,
                                         const char *const *tags, int n);
GCN_API gcn_status gcn_spmm_choices_load(gcn_ctx *ctx, FILE *f, const char *name,
                                         const gcn_csr *const *mats, const char *const *tags,
                                         int n);

/* Runs one implementation directly, not differentiable: y (+)= A x with
 * raw device pointers.  The plan is built on first use and cached. */
GCN_API gcn_status gcn_spmm_run(gcn_ctx *ctx, const gcn_spmm_impl *impl, const gcn_csr *a,
                                const float *x, float *y, int feat, bool accumulate);

/* The differentiable op: a [n, m] CSR, x [m, f] -> out [n, f].  Backward
 * gives dX = A^T dY through the matrix's stored transpose. */
GCN_API gcn_status gcn_spmm(gcn_ctx *ctx, const gcn_csr *a, gcn_tensor *x, gcn_tensor **out);

/* Makes a one rank's block of a partitioned square matrix, on a context in a
 * communicator (gcn_comm_init): a [n_local, n_local + n_halo] whose first
 * n_local columns are the rank's own nodes and the rest its halo, nodes of
 * other ranks (gcn_part_rows describes such a block).  gcn_spmm and
 * gcn_spmm_self then take x [n_local, f], the rank's rows only: they fetch
 * the halo rows from their owners before the product, and backward sends
 * the halo rows' gradients back to be added there, so every rank's
 * gradient is what the whole matrix would give.  Every rank must run the
 * same products in the same order (they are collectives).
 *   send_rows: the rank's rows the other ranks need, rank p's block
 *     [send_off[p], send_off[p + 1]) in the order p lists them in its halo;
 *   recv_off [ranks + 1]: the halo columns owned by rank p are n_local +
 *     [recv_off[p], recv_off[p + 1]); recv_off[ranks] = n_halo.
 * Host arrays, copied.  Blocks for the rank itself must be empty.
 * The products run on two parts built here from a's arrays (copies, a's
 * own stay as they are): A_own, the own columns, and A_halo, the halo's,
 * so that the halo rows travel while A_own x runs (and in backward the
 * halo rows' gradients while A_own^T dy does).  a's stored transpose is
 * dropped (gcn_csr_transpose(a) is then NULL): backward uses the parts'. */
GCN_API gcn_status gcn_csr_set_halo(gcn_ctx *ctx, gcn_csr *a, const int32_t *send_rows,
                                    const int64_t *send_off, const int64_t *recv_off);

/* The most chunks a block's exchange runs in (gcn_csr_create_block). */
#define GCN_HALO_MAX_CHUNKS 4

/* gcn_csr_create and gcn_csr_set_halo in one, from host arrays (the
 * block's n_local rows of n_cols columns, as gcn_csr_create takes them),
 * for a block that only gcn_spmm and gcn_spmm_self multiply: the parts
 * are built straight from the host arrays and the block keeps no device
 * arrays of its own, one copy of its entries less.  gcn_csr_row_ptr,
 * _col_idx and _values then return NULL, and gcn_spmm_run and
 * gcn_csr_to_host refuse it (GCN_ERR_STATE); shape, nnz and call sites
 * (gcn_spmm_sites) are there as for any block.
 * n_chunks (1 to GCN_HALO_MAX_CHUNKS; gcn_csr_set_halo's is 1): each
 * exchange runs as that many exchanges, the k-th moving the k-th of
 * n_chunks equal runs of every peer's block, and A_halo is kept as one
 * matrix per chunk: only about two chunks of halo rows are held at a time,
 * a chunk travels while the one before it is multiplied, and each chunk
 * adds one pass over the product's output.  Every rank must pass the same
 * n_chunks (the exchanges are collectives). */
GCN_API gcn_status gcn_csr_create_block(gcn_ctx *ctx, gcn_csr **out, int32_t n_local,
                                        int32_t n_cols, int32_t nnz, const int32_t *row_ptr,
                                        const int32_t *col_idx, const float *values,
                                        const int32_t *send_rows, const int64_t *send_off,
                                        const int64_t *recv_off, int n_chunks);

/* GIN's aggregation with its self term in one op: a square [n, n], x [n, f]
 * -> out = A x + alpha x.  One output tensor where A x, alpha x and their
 * sum would be three (all kept for backward); dX = A^T dY + alpha dY.  The
 * first call builds A + alpha I and keeps it with A (one alpha per matrix),
 * and the products go through it: no pass for the self term.  Its call
 * sites are reported with A's (self_alpha in gcn_spmm_site_info). */
GCN_API gcn_status gcn_spmm_self(gcn_ctx *ctx, const gcn_csr *a, gcn_tensor *x, float alpha,
                                 gcn_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
