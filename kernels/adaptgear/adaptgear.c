/* Community levels on matrices, the intra/inter split, and the level views
 * (a matrix's arrays seen with one level attached) that the community
 * kernels plan on. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "adaptgear.h"
#include "plan.h"
#include "kernels/spmm/internal.h"

_Static_assert(GCN_MAX_COMMUNITY_LEVELS == GCN_CSR_MAX_LEVELS, "one bound for both headers");

static void communities_free(void *state)
{
    gcn_communities *c = state;
    for (int l = 0; l < c->n_levels; l++)
        free(c->level[l].part_ptr);
    free(c->prior_order);
    free(c);
}

const gcn_communities *gcn_communities_of(const gcn_csr *a)
{
    static const gcn_communities none;
    const gcn_communities *c = gcn_csr_slot_get(a, GCN_CSR_SLOT_COMMUNITIES);
    return c ? c : &none;
}

/* m's communities, made empty on first use. */
static gcn_status communities_get(gcn_ctx *ctx, const gcn_csr *m, gcn_communities **out)
{
    void *state = NULL;
    GCN_TRY(gcn_csr_slot_make(ctx, m, GCN_CSR_SLOT_COMMUNITIES, sizeof **out, communities_free,
                              &state));
    *out = state;
    return GCN_OK;
}

/* Sets m's block_diagonal (m has communities). */
static void set_block_diagonal(const gcn_csr *m, bool block_diagonal)
{
    gcn_communities *c = gcn_csr_slot_get(m, GCN_CSR_SLOT_COMMUNITIES);
    c->block_diagonal = block_diagonal;
}

/* A host copy of a matrix's three arrays. */
typedef struct host_mat {
    int32_t *row_ptr, *col_idx;
    float *values;
} host_mat;

static void host_mat_free(host_mat *h)
{
    free(h->row_ptr);
    free(h->col_idx);
    free(h->values);
    memset(h, 0, sizeof *h);
}

static gcn_status host_mat_get(gcn_ctx *ctx, const gcn_csr *a, host_mat *h)
{
    h->row_ptr = malloc(((size_t)a->n_rows + 1) * sizeof *h->row_ptr);
    h->col_idx = malloc(((size_t)a->nnz + 1) * sizeof *h->col_idx);
    h->values = malloc(((size_t)a->nnz + 1) * sizeof *h->values);
    if (!h->row_ptr || !h->col_idx || !h->values) {
        host_mat_free(h);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "communities: out of host memory for a %d-row copy",
                         a->n_rows);
    }
    gcn_status st = gcn_csr_to_host(ctx, a, h->row_ptr, h->col_idx, h->values);
    if (st != GCN_OK)
        host_mat_free(h);
    return st;
}

/* Copies a level into dst (dst->part_ptr is then owned by the caller). */
static gcn_status level_copy(gcn_ctx *ctx, gcn_csr_level *dst, int32_t size, int32_t n_parts,
                             const int32_t *part_ptr)
{
    dst->part_ptr = malloc(((size_t)n_parts + 1) * sizeof *dst->part_ptr);
    if (!dst->part_ptr)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "communities: out of host memory for %d parts",
                         n_parts);
    memcpy(dst->part_ptr, part_ptr, ((size_t)n_parts + 1) * sizeof *part_ptr);
    dst->size = size;
    dst->n_parts = n_parts;
    dst->max_part = 0;
    for (int32_t p = 0; p < n_parts; p++)
        if (part_ptr[p + 1] - part_ptr[p] > dst->max_part)
            dst->max_part = part_ptr[p + 1] - part_ptr[p];
    return GCN_OK;
}

/* Replaces m's levels with copies of the given ones. */
static gcn_status attach_levels(gcn_ctx *ctx, gcn_csr *m, int n_levels, const gcn_csr_level *lv)
{
    gcn_communities *p = NULL;
    GCN_TRY(communities_get(ctx, m, &p));
    for (int l = 0; l < p->n_levels; l++)
        free(p->level[l].part_ptr);
    p->n_levels = 0;
    for (int l = 0; l < n_levels; l++) {
        GCN_TRY(level_copy(ctx, &p->level[l], lv[l].size, lv[l].n_parts, lv[l].part_ptr));
        p->n_levels = l + 1;
    }
    return GCN_OK;
}

/* Whether every entry of h lies in its row's part of lv. */
static bool block_diagonal(const gcn_csr *a, const host_mat *h, const gcn_csr_level *lv)
{
    for (int32_t p = 0; p < lv->n_parts; p++)
        for (int32_t i = lv->part_ptr[p]; i < lv->part_ptr[p + 1]; i++)
            for (int32_t e = h->row_ptr[i]; e < h->row_ptr[i + 1]; e++)
                if (h->col_idx[e] < lv->part_ptr[p] || h->col_idx[e] >= lv->part_ptr[p + 1])
                    return false;
    return a->n_rows == lv->part_ptr[lv->n_parts];
}

static gcn_status check_level(gcn_ctx *ctx, const gcn_csr *a, int l, int32_t size,
                              int32_t n_parts, const int32_t *part_ptr)
{
    if (size < 1 || n_parts < 1 || !part_ptr)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "communities: level %d needs a size >= 1, parts >= 1 and part_ptr", l);
    if (part_ptr[0] != 0 || part_ptr[n_parts] != a->n_rows)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "communities: level %d must cover nodes 0..%d (part_ptr runs %d..%d)", l,
                         a->n_rows, part_ptr[0], part_ptr[n_parts]);
    for (int32_t p = 0; p < n_parts; p++)
        if (part_ptr[p + 1] < part_ptr[p])
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                             "communities: level %d: part_ptr decreases at part %d", l, p);
    return GCN_OK;
}

gcn_status gcn_csr_set_communities(gcn_ctx *ctx, gcn_csr *a, int n_levels, const int32_t *sizes,
                                   const int32_t *n_parts, const int32_t *const *part_ptr)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, a && a->priv && a->priv->ctx == ctx && !a->priv->owner);
    GCN_ARG(ctx, n_levels >= 0 && n_levels <= GCN_CSR_MAX_LEVELS);
    GCN_ARG(ctx, n_levels == 0 || (sizes && n_parts && part_ptr));
    if (a->n_rows != a->n_cols)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "communities need a square matrix, not %d x %d",
                         a->n_rows, a->n_cols);
    if (gcn_spmm_has_sites(a) || gcn_spmm_has_sites(a->priv->transpose))
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "communities: set them before the matrix's first product");
    gcn_csr_level lv[GCN_CSR_MAX_LEVELS];
    for (int l = 0; l < n_levels; l++) {
        GCN_TRY(check_level(ctx, a, l, sizes[l], n_parts[l], part_ptr[l]));
        lv[l] = (gcn_csr_level){sizes[l], n_parts[l], 0, (int32_t *)part_ptr[l]};
    }
    GCN_TRY(attach_levels(ctx, a, n_levels, lv));
    if (a->priv->transpose)
        GCN_TRY(attach_levels(ctx, a->priv->transpose, n_levels, lv));
    set_block_diagonal(a, false);
    if (n_levels == 0)
        return GCN_OK;
    host_mat h = {0};
    GCN_TRY(host_mat_get(ctx, a, &h));
    bool diagonal = block_diagonal(a, &h, &gcn_communities_of(a)->level[0]);
    set_block_diagonal(a, diagonal);
    if (a->priv->transpose)
        set_block_diagonal(a->priv->transpose, diagonal);
    host_mat_free(&h);
    return GCN_OK;
}

int gcn_csr_community_levels(const gcn_csr *a)
{
    return gcn_communities_of(a)->n_levels;
}

int32_t gcn_csr_community_size(const gcn_csr *a, int level)
{
    const gcn_communities *c = gcn_communities_of(a);
    if (level < 0 || level >= c->n_levels)
        return 0;
    return c->level[level].size;
}

/* Number of entries whose row and column share a part. */
static int64_t count_intra(const host_mat *h, const gcn_csr_level *lv)
{
    int64_t n = 0;
    for (int32_t p = 0; p < lv->n_parts; p++)
        for (int32_t i = lv->part_ptr[p]; i < lv->part_ptr[p + 1]; i++)
            for (int32_t e = h->row_ptr[i]; e < h->row_ptr[i + 1]; e++)
                n += h->col_idx[e] >= lv->part_ptr[p] && h->col_idx[e] < lv->part_ptr[p + 1];
    return n;
}

/* Deals h's entries, row by row in order, into the two halves. */
static void fill_split(const host_mat *h, const gcn_csr_level *lv, host_mat *in, host_mat *out)
{
    int32_t ni = 0, no = 0;
    in->row_ptr[0] = out->row_ptr[0] = 0;
    for (int32_t p = 0; p < lv->n_parts; p++) {
        int32_t lo = lv->part_ptr[p], hi = lv->part_ptr[p + 1];
        for (int32_t i = lo; i < hi; i++) {
            for (int32_t e = h->row_ptr[i]; e < h->row_ptr[i + 1]; e++) {
                bool intra = h->col_idx[e] >= lo && h->col_idx[e] < hi;
                host_mat *d = intra ? in : out;
                int32_t *k = intra ? &ni : &no;
                d->col_idx[*k] = h->col_idx[e];
                d->values[*k] = h->values[e];
                (*k)++;
            }
            in->row_ptr[i + 1] = ni;
            out->row_ptr[i + 1] = no;
        }
    }
}

static gcn_status alloc_half(gcn_ctx *ctx, int32_t n_rows, int64_t nnz, host_mat *m)
{
    m->row_ptr = malloc(((size_t)n_rows + 1) * sizeof *m->row_ptr);
    m->col_idx = malloc(((size_t)nnz + 1) * sizeof *m->col_idx);
    m->values = malloc(((size_t)nnz + 1) * sizeof *m->values);
    if (m->row_ptr && m->col_idx && m->values)
        return GCN_OK;
    host_mat_free(m);
    return GCN_ERROR(ctx, GCN_ERR_NOMEM, "split: out of host memory for %lld entries",
                     (long long)nnz);
}

/* The split through host copies: CPU contexts, and matrices with a stored
 * transpose (whose parts need theirs). */
static gcn_status split_on_host(gcn_ctx *ctx, const gcn_csr *a, const gcn_csr_level *lv,
                                gcn_csr **intra, gcn_csr **inter)
{
    host_mat h = {0}, in = {0}, out = {0};
    gcn_status st;
    GCN_CHECK(host_mat_get(ctx, a, &h));
    int64_t n_in = count_intra(&h, lv);
    GCN_CHECK(alloc_half(ctx, a->n_rows, n_in, &in));
    GCN_CHECK(alloc_half(ctx, a->n_rows, (int64_t)a->nnz - n_in, &out));
    fill_split(&h, lv, &in, &out);
    /* Rows and columns share the parts, so the parts of a symmetric matrix
     * are symmetric: no transposes to build and compare. */
    bool sym = a->priv->symmetric;
    GCN_CHECK(gcn_csr_create_known(ctx, intra, a->n_rows, a->n_cols, (int32_t)n_in, in.row_ptr,
                                   in.col_idx, in.values, sym));
    GCN_CHECK(gcn_csr_create_known(ctx, inter, a->n_rows, a->n_cols, a->nnz - (int32_t)n_in,
                                   out.row_ptr, out.col_idx, out.values, sym));
cleanup:
    host_mat_free(&h);
    host_mat_free(&in);
    host_mat_free(&out);
    return st;
}

gcn_status gcn_csr_split(gcn_ctx *ctx, const gcn_csr *a, int level, gcn_csr **intra,
                         gcn_csr **inter)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, a && a->priv && a->priv->ctx == ctx && intra && inter);
    *intra = *inter = NULL;
    const gcn_communities *c = gcn_communities_of(a);
    if (level < 0 || level >= c->n_levels)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "split: the matrix has no community level %d",
                         level);
    const gcn_csr_level *lv = &c->level[level];
    gcn_status st;
    if (a->device == GCN_DEVICE_CUDA && a->priv->symmetric)
        GCN_CHECK(gcn_split_cuda(ctx, a, lv, intra, inter));
    else
        GCN_CHECK(split_on_host(ctx, a, lv, intra, inter));
    GCN_CHECK(attach_levels(ctx, *intra, 1, lv));
    set_block_diagonal(*intra, true);
    if ((*intra)->priv->transpose) {
        GCN_CHECK(attach_levels(ctx, (*intra)->priv->transpose, 1, lv));
        set_block_diagonal((*intra)->priv->transpose, true);
    }
cleanup:
    if (st != GCN_OK) {
        gcn_csr_free(intra);
        gcn_csr_free(inter);
    }
    return st;
}

/* The first index at which order stops being a permutation of 0..n - 1:
 * n when it is one, -1 when out of host memory. */
static int32_t permutation_break(const int32_t *order, int32_t n)
{
    unsigned char *seen = calloc((size_t)n + 1, 1);
    if (!seen)
        return -1;
    int32_t k = 0;
    for (; k < n && order[k] >= 0 && order[k] < n && !seen[order[k]]; k++)
        seen[order[k]] = 1;
    free(seen);
    return k;
}

/* Replaces m's prior order with a copy of order (NULL: none). */
static gcn_status attach_prior(gcn_ctx *ctx, gcn_csr *m, const int32_t *order)
{
    gcn_communities *c = NULL;
    GCN_TRY(communities_get(ctx, m, &c));
    free(c->prior_order);
    c->prior_order = NULL;
    if (!order)
        return GCN_OK;
    c->prior_order = malloc(((size_t)m->n_rows + 1) * sizeof *order);
    if (!c->prior_order)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "prior order: out of host memory for %d rows",
                         m->n_rows);
    memcpy(c->prior_order, order, (size_t)m->n_rows * sizeof *order);
    return GCN_OK;
}

gcn_status gcn_csr_set_prior_order(gcn_ctx *ctx, gcn_csr *a, const int32_t *order)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, a && a->priv && a->priv->ctx == ctx && !a->priv->owner);
    if (a->n_rows != a->n_cols)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "a prior order needs a square matrix, not %d x %d",
                         a->n_rows, a->n_cols);
    if (gcn_spmm_has_sites(a) || gcn_spmm_has_sites(a->priv->transpose))
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "prior order: set it before the matrix's first product");
    int32_t bad = order ? permutation_break(order, a->n_rows) : a->n_rows;
    if (bad < 0)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "prior order: out of host memory for %d rows",
                         a->n_rows);
    if (bad < a->n_rows)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "prior order: entry %d (%d) is outside 0..%d or repeated", bad,
                         order[bad], a->n_rows - 1);
    GCN_TRY(attach_prior(ctx, a, order));
    return a->priv->transpose ? attach_prior(ctx, a->priv->transpose, order) : GCN_OK;
}

const int32_t *gcn_csr_visit_order(const gcn_csr *a)
{
    const gcn_communities *c = gcn_communities_of(a);
    return c->visit_prior ? c->prior_order : NULL;
}

/* A header over a's arrays, with a copy of a's host row_ptr when a has
 * one (its plans then need no download); the caller adds the rest. */
static gcn_status new_view(gcn_ctx *ctx, const gcn_csr *a, gcn_csr **out)
{
    gcn_csr *v = calloc(1, sizeof *v);
    gcn_csr_priv *p = calloc(1, sizeof *p);
    size_t rp_bytes = ((size_t)a->n_rows + 1) * sizeof(int32_t);
    int32_t *rp = a->priv->host_row_ptr ? malloc(rp_bytes) : NULL;
    if (!v || !p || (a->priv->host_row_ptr && !rp)) {
        free(v);
        free(p);
        free(rp);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for a matrix view");
    }
    if (rp)
        memcpy(rp, a->priv->host_row_ptr, rp_bytes);
    p->host_row_ptr = rp;
    *v = *a;
    v->priv = p;
    p->ctx = ctx;
    p->sorted = a->priv->sorted;
    p->borrowed = true;
    *out = v;
    return GCN_OK;
}

gcn_status gcn_communities_prior_view(gcn_ctx *ctx, const gcn_csr *a, gcn_csr **view)
{
    GCN_ARG(ctx, a && a->priv && gcn_communities_of(a)->prior_order && view);
    gcn_csr *v;
    GCN_TRY(new_view(ctx, a, &v));
    gcn_status st = attach_prior(ctx, v, gcn_communities_of(a)->prior_order);
    if (st != GCN_OK) {
        gcn_csr_free(&v);
        return st;
    }
    ((gcn_communities *)gcn_csr_slot_get(v, GCN_CSR_SLOT_COMMUNITIES))->visit_prior = true;
    *view = v;
    return GCN_OK;
}

gcn_status gcn_communities_level_view(gcn_ctx *ctx, const gcn_csr *a, int level, gcn_csr **view)
{
    const gcn_communities *c = gcn_communities_of(a);
    GCN_ARG(ctx, a && a->priv && view && level >= 0 && level < c->n_levels);
    gcn_csr *v;
    GCN_TRY(new_view(ctx, a, &v));
    gcn_status st = attach_levels(ctx, v, 1, &c->level[level]);
    if (st != GCN_OK) {
        gcn_csr_free(&v);
        return st;
    }
    set_block_diagonal(v, level == 0 && c->block_diagonal);
    *view = v;
    return GCN_OK;
}
