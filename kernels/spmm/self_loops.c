/* gcn_spmm_self's matrix: A + alpha I, built once from A and kept with it,
 * so that GIN's (1 + eps) x + A x is one product with no pass of its own
 * for the self term. */
#include <stdlib.h>
#include <string.h>

#include "kernels/adaptgear/adaptgear.h"
#include "kernels/adaptgear/communities.h"
#include "internal.h"

/* Rows of A without a diagonal entry: the entries A + alpha I adds. */
static int64_t missing_diagonals(const int32_t *rp, const int32_t *ci, int32_t n)
{
    int64_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        bool has = false;
        for (int32_t e = rp[i]; e < rp[i + 1] && !has; e++)
            has = ci[e] == i;
        m += !has;
    }
    return m;
}

/* The arrays of A + alpha I: alpha added to a row's first diagonal entry,
 * or a new entry (i, alpha) placed where the row's ascending columns pass i
 * (at the end of a row whose columns are not sorted). */
static void add_diagonal(const int32_t *rp, const int32_t *ci, const float *v, int32_t n,
                         bool sorted, float alpha, int32_t *rp2, int32_t *ci2, float *v2)
{
    int32_t k = 0;
    rp2[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t b = rp[i], e = rp[i + 1], diag = -1, at = e;
        for (int32_t j = b; j < e && diag < 0; j++)
            if (ci[j] == i)
                diag = j;
        for (int32_t j = b; sorted && diag < 0 && j < e && at == e; j++)
            if (ci[j] > i)
                at = j;
        for (int32_t j = b; j <= e; j++) {
            if (j == at && diag < 0) {
                ci2[k] = i;
                v2[k++] = alpha;
            }
            if (j < e) {
                ci2[k] = ci[j];
                v2[k++] = j == diag ? v[j] + alpha : v[j];
            }
        }
        rp2[i + 1] = k;
    }
}

/* m gets a's community levels and prior order, so the selector tries the
 * same strategies. */
static gcn_status copy_attached(gcn_ctx *ctx, const gcn_csr *a, gcn_csr *m)
{
    const gcn_communities *p = gcn_communities_of(a);
    GCN_TRY(gcn_csr_set_prior_order(ctx, m, p->prior_order));
    int32_t sizes[GCN_CSR_MAX_LEVELS], n_parts[GCN_CSR_MAX_LEVELS];
    const int32_t *part_ptr[GCN_CSR_MAX_LEVELS];
    for (int l = 0; l < p->n_levels; l++) {
        sizes[l] = p->level[l].size;
        n_parts[l] = p->level[l].n_parts;
        part_ptr[l] = p->level[l].part_ptr;
    }
    return p->n_levels > 0 ? gcn_csr_set_communities(ctx, m, p->n_levels, sizes, n_parts, part_ptr)
                           : GCN_OK;
}

static gcn_status build(gcn_ctx *ctx, const gcn_csr *a, float alpha, gcn_csr **out)
{
    int32_t n = a->n_rows;
    int32_t *rp = malloc(((size_t)n + 1) * sizeof *rp), *ci = NULL, *rp2 = NULL, *ci2 = NULL;
    float *v = NULL, *v2 = NULL;
    int64_t nnz2 = 0;
    gcn_status st = GCN_OK;
    ci = malloc(((size_t)a->nnz + 1) * sizeof *ci);
    v = malloc(((size_t)a->nnz + 1) * sizeof *v);
    if (!rp || !ci || !v) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "spmm_self: out of host memory for a copy of A");
        goto cleanup;
    }
    GCN_CHECK(gcn_csr_to_host(ctx, a, rp, ci, v));
    nnz2 = (int64_t)a->nnz + missing_diagonals(rp, ci, n);
    if (nnz2 > INT32_MAX) {
        st = GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "spmm_self: A + alpha I has over 2^31 entries");
        goto cleanup;
    }
    rp2 = malloc(((size_t)n + 1) * sizeof *rp2);
    ci2 = malloc(((size_t)nnz2 + 1) * sizeof *ci2);
    v2 = malloc(((size_t)nnz2 + 1) * sizeof *v2);
    if (!rp2 || !ci2 || !v2) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "spmm_self: out of host memory for A + alpha I");
        goto cleanup;
    }
    add_diagonal(rp, ci, v, n, gcn_csr_is_sorted(a), alpha, rp2, ci2, v2);
    GCN_CHECK(gcn_csr_create_known(ctx, out, n, n, (int32_t)nnz2, rp2, ci2, v2,
                                   gcn_csr_is_symmetric(a)));
    st = copy_attached(ctx, a, *out);
    if (st != GCN_OK)
        gcn_csr_free(out);
cleanup:
    free(rp);
    free(ci);
    free(v);
    free(rp2);
    free(ci2);
    free(v2);
    return st;
}

/* What this file keeps on a matrix (GCN_CSR_SLOT_SELF). */
typedef struct self_slot {
    gcn_csr *m; /* A + alpha I */
    float alpha;
} self_slot;

static void self_slot_free(void *state)
{
    self_slot *s = state;
    gcn_csr_free(&s->m);
    free(s);
}

gcn_status gcn_spmm_self_matrix(gcn_ctx *ctx, const gcn_csr *a, float alpha, const gcn_csr **out)
{
    *out = NULL;
    self_slot *s = gcn_csr_slot_get(a, GCN_CSR_SLOT_SELF);
    if (!s) {
        gcn_csr *m;
        GCN_TRY(build(ctx, a, alpha, &m));
        s = malloc(sizeof *s);
        if (!s) {
            gcn_csr_free(&m);
            return GCN_ERROR(ctx, GCN_ERR_NOMEM, "spmm_self: out of host memory");
        }
        *s = (self_slot){m, alpha};
        gcn_csr_slot_set(a, GCN_CSR_SLOT_SELF, s, self_slot_free);
    }
    if (s->alpha == alpha)
        *out = s->m;
    return GCN_OK;
}

const gcn_csr *gcn_spmm_self_kept(const gcn_csr *a, float *alpha)
{
    const self_slot *s = gcn_csr_slot_get(a, GCN_CSR_SLOT_SELF);
    if (s)
        *alpha = s->alpha;
    return s ? s->m : NULL;
}
