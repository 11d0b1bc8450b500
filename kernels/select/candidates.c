/* The selector's candidates at a call site: each whole-matrix kernel, each
 * kernel visiting rows in their prior order on a view, and per community
 * level the community kernel on a level view and each intra kernel then
 * inter kernel on the level's split; and those views and splits, built
 * once per matrix and kept in its selector state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/adaptgear/adaptgear.h"
#include "kernels/adaptgear/plan.h"
#include "sites.h"

/* ---- the parts a strategy multiplies -------------------------------------- */

/* The level's split of a; a stored transpose uses its owner's, transposed
 * (the transpose of a split is the split of the transpose). */
static gcn_status get_split(gcn_ctx *ctx, const gcn_csr *a, int level, const gcn_csr **intra,
                            const gcn_csr **inter)
{
    if (a->priv->owner) {
        const gcn_csr *oi, *oe;
        GCN_TRY(get_split(ctx, a->priv->owner, level, &oi, &oe));
        *intra = gcn_csr_transpose(oi);
        *inter = gcn_csr_transpose(oe);
        return GCN_OK;
    }
    gcn_spmm_state *s = NULL;
    GCN_TRY(gcn_spmm_state_of(ctx, a, &s));
    if (!s->intra[level])
        GCN_TRY(gcn_csr_split(ctx, a, level, &s->intra[level], &s->inter[level]));
    *intra = s->intra[level];
    *inter = s->inter[level];
    return GCN_OK;
}

static gcn_status get_view(gcn_ctx *ctx, const gcn_csr *a, int level, const gcn_csr **view)
{
    gcn_spmm_state *s = NULL;
    GCN_TRY(gcn_spmm_state_of(ctx, a, &s));
    if (!s->view[level])
        GCN_TRY(gcn_communities_level_view(ctx, a, level, &s->view[level]));
    *view = s->view[level];
    return GCN_OK;
}

static gcn_status get_prior_view(gcn_ctx *ctx, const gcn_csr *a, const gcn_csr **view)
{
    gcn_spmm_state *s = NULL;
    GCN_TRY(gcn_spmm_state_of(ctx, a, &s));
    if (!s->prior)
        GCN_TRY(gcn_communities_prior_view(ctx, a, &s->prior));
    *view = s->prior;
    return GCN_OK;
}

/* ---- candidates ---------------------------------------------------------------- */

/* The strategy a site is named after (forced, or from a choices file), or NULL. */
static const char *named_strategy(const gcn_spmm_site *t)
{
    return t->forced ? t->mode : t->only[0] ? t->only : NULL;
}

/* Whether a strategy name is a kernel in the prior row order ("rowsplit@prior"). */
static bool names_prior(const char *name)
{
    const char *at = name ? strchr(name, '@') : NULL;
    return at && !strcmp(at + 1, "prior");
}

static void add(gcn_spmm_site *t, const char *name, const gcn_csr *m0, const gcn_spmm_impl *k0,
                const gcn_csr *m1, const gcn_spmm_impl *k1)
{
    if (t->n_cand == GCN_SITE_MAX_CANDIDATES)
        return;
    strategy *s = &t->cand[t->n_cand++];
    *s = (strategy){.n_steps = k1 ? 2 : 1, .mat = {m0, m1}, .impl = {k0, k1}};
    snprintf(s->name, sizeof s->name, "%s", name);
}

/* Whether impl may serve role on m in this site's mode and dtype. */
static bool fits(const gcn_ctx *ctx, const gcn_spmm_site *t, const gcn_spmm_impl *impl,
                 unsigned role, const gcn_csr *m)
{
    bool det = !strcmp(t->mode, "auto-deterministic");
    bool has_dtype = t->dtype != GCN_DTYPE_BF16 || impl->run_bf16;
    return (impl->roles & role) && impl->device == ctx->device && (!det || impl->deterministic) &&
           has_dtype && impl->supports(m, t->feat);
}

/* The candidates of one community level: the community kernel on the
 * level view, and every intra kernel followed by every inter kernel.  A
 * level whose communities no intra kernel can use at this width (too large
 * to stage, too sparse for dense blocks) is not split at all, nor is any
 * in bf16 (the second product would round each output a second time). */
static gcn_status add_level(gcn_ctx *ctx, const gcn_csr *a, int level, gcn_spmm_site *t)
{
    int n = gcn_spmm_count(ctx);
    const gcn_csr *view, *intra, *inter;
    const gcn_csr_level *lv = &gcn_communities_of(a)->level[level];
    char name[64];
    GCN_TRY(get_view(ctx, a, level, &view));
    for (int i = 0; i < n; i++) {
        const gcn_spmm_impl *k = gcn_spmm_at(ctx, i);
        if (fits(ctx, t, k, GCN_SPMM_ROLE_FUSED, view)) {
            snprintf(name, sizeof name, "%s@%d", k->name, lv->size);
            add(t, name, view, k, NULL, NULL);
        }
    }
    if (ctx->device != GCN_DEVICE_CUDA || t->dtype == GCN_DTYPE_BF16 ||
        !gcn_level_worth_split(lv->part_ptr, lv->n_parts, lv->size, a->nnz, t->feat,
                               GCN_SMEM_BYTES))
        return GCN_OK;
    GCN_TRY(get_split(ctx, a, level, &intra, &inter));
    for (int i = 0; i < n; i++) {
        const gcn_spmm_impl *ki = gcn_spmm_at(ctx, i);
        for (int j = 0; j < n && fits(ctx, t, ki, GCN_SPMM_ROLE_INTRA, intra); j++) {
            const gcn_spmm_impl *kj = gcn_spmm_at(ctx, j);
            if (fits(ctx, t, kj, GCN_SPMM_ROLE_INTER, inter)) {
                snprintf(name, sizeof name, "%s+%s@%d", ki->name, kj->name, lv->size);
                add(t, name, intra, ki, inter, kj);
            }
        }
    }
    return GCN_OK;
}

void gcn_spmm_add_whole(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_site *t)
{
    int n = gcn_spmm_count(ctx);
    const char *named = named_strategy(t);
    for (int i = 0; i < n && !(named && strchr(named, '@')); i++)
        if (fits(ctx, t, gcn_spmm_at(ctx, i), GCN_SPMM_ROLE_WHOLE, a))
            add(t, gcn_spmm_at(ctx, i)->name, a, gcn_spmm_at(ctx, i), NULL, NULL);
}

/* The community levels' candidates; for a named strategy (forced, or from
 * a choices file) only the level it names, so no other level's split is
 * built. */
static gcn_status add_levels(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_site *t)
{
    const char *named = named_strategy(t);
    const char *at = named ? strchr(named, '@') : NULL;
    if (a->n_rows != a->n_cols || (named && (!at || names_prior(named))))
        return GCN_OK;
    const gcn_communities *c = gcn_communities_of(a);
    for (int l = 0; l < c->n_levels; l++)
        if (!at || atoi(at + 1) == c->level[l].size)
            GCN_TRY(add_level(ctx, a, l, t));
    return GCN_OK;
}

/* For a matrix that carries its rows' prior order, each kernel that can
 * follow it on the prior-order view ("rowsplit@prior"), the view built only
 * when the context has such a kernel; for a named strategy only when it
 * names one of these. */
static gcn_status add_prior(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_site *t)
{
    const char *named = named_strategy(t);
    if (!gcn_communities_of(a)->prior_order || (named && !names_prior(named)))
        return GCN_OK;
    char name[64];
    for (int i = 0; i < gcn_spmm_count(ctx); i++) {
        const gcn_spmm_impl *k = gcn_spmm_at(ctx, i);
        const gcn_csr *view;
        if (!(k->roles & GCN_SPMM_ROLE_PRIOR) || k->device != ctx->device)
            continue;
        GCN_TRY(get_prior_view(ctx, a, &view));
        if (fits(ctx, t, k, GCN_SPMM_ROLE_PRIOR, view)) {
            snprintf(name, sizeof name, "%s@prior", k->name);
            add(t, name, view, k, NULL, NULL);
        }
    }
    return GCN_OK;
}

gcn_status gcn_spmm_add_more(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_site *t)
{
    GCN_TRY(add_prior(ctx, a, t));
    return add_levels(ctx, a, t);
}

