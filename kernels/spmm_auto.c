/* The selector's call sites: per (matrix, feature width, mode), the list of
 * candidate strategies (one kernel on the whole matrix, a community kernel
 * on a level view, or an intra kernel then an inter kernel on a level's
 * split), a selector that profiles them on real calls and locks the
 * fastest, and what it chose. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adaptgear.h"
#include "adaptgear/plan.h"
#include "select.h"
#include "spmm_auto.h"
#include "spmm_halo.h"

#define MAX_CANDIDATES 64
/* A product of fewer multiply-adds (non-zeros x F) than SMALL_WORK takes a
 * few microseconds on the GPU, about as long as the gap between the start
 * event and the kernel's launch, so each timed sample of it holds
 * SMALL_RUNS back-to-back runs (H100: without them the selector picked a
 * kernel 21-27 % slower on two such graphs, docs/perf.md). */
#define SMALL_WORK (1 << 24)
#define SMALL_RUNS 8

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
    char mode[64];  /* the context's kernel setting the site serves */
    bool forced;    /* a strategy named by the user: locked from the start */
    char only[64];  /* a plan file's choice: the one candidate built ("" for all) */
    /* Profiling starts with the second product: the first runs the first
     * whole-matrix kernel, so a product made once (a cached aggregation)
     * builds no split and no selector. */
    bool deferred, first_done;
    bool reported;  /* the lock has been logged */
    int runs;       /* back-to-back runs a timed sample holds (1 or SMALL_RUNS) */
    double setup_ms; /* host time of its splits and plans until the lock */
    int n_cand;
    strategy cand[MAX_CANDIDATES];
    gcn_selector *sel;
    struct gcn_spmm_site *next;
};

struct gcn_spmm_state {
    gcn_csr *intra[GCN_CSR_MAX_LEVELS], *inter[GCN_CSR_MAX_LEVELS];
    gcn_csr *view[GCN_CSR_MAX_LEVELS];
    gcn_csr *prior; /* the prior-order view */
    gcn_spmm_site *sites, *last;
};

static void state_free(gcn_spmm_state *s)
{
    for (gcn_spmm_site *t = s->sites, *next; t; t = next) {
        next = t->next;
        gcn_selector_free(&t->sel);
        free(t);
    }
    gcn_csr_free(&s->prior);
    for (int l = 0; l < GCN_CSR_MAX_LEVELS; l++) {
        gcn_csr_free(&s->view[l]);
        gcn_csr_free(&s->intra[l]);
        gcn_csr_free(&s->inter[l]);
    }
    free(s);
}

static gcn_status state_of(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_state **out)
{
    if (!a->priv->spmm) {
        a->priv->spmm = calloc(1, sizeof *a->priv->spmm);
        if (!a->priv->spmm)
            return GCN_ERROR(ctx, GCN_ERR_NOMEM, "spmm: out of host memory for call sites");
        a->priv->spmm_free = state_free;
    }
    *out = a->priv->spmm;
    return GCN_OK;
}

bool gcn_spmm_uses_sites(const char *kernel)
{
    return !strcmp(kernel, "auto") || !strcmp(kernel, "auto-deterministic") ||
           strchr(kernel, '@') != NULL;
}

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
    GCN_TRY(state_of(ctx, a, &s));
    if (!s->intra[level])
        GCN_TRY(gcn_csr_split(ctx, a, level, &s->intra[level], &s->inter[level]));
    *intra = s->intra[level];
    *inter = s->inter[level];
    return GCN_OK;
}

static gcn_status get_view(gcn_ctx *ctx, const gcn_csr *a, int level, const gcn_csr **view)
{
    gcn_spmm_state *s = NULL;
    GCN_TRY(state_of(ctx, a, &s));
    if (!s->view[level])
        GCN_TRY(gcn_csr_level_view(ctx, a, level, &s->view[level]));
    *view = s->view[level];
    return GCN_OK;
}

static gcn_status get_prior_view(gcn_ctx *ctx, const gcn_csr *a, const gcn_csr **view)
{
    gcn_spmm_state *s = NULL;
    GCN_TRY(state_of(ctx, a, &s));
    if (!s->prior)
        GCN_TRY(gcn_csr_prior_view(ctx, a, &s->prior));
    *view = s->prior;
    return GCN_OK;
}

/* ---- candidates ---------------------------------------------------------------- */

/* The strategy a site is named after (forced, or from a plan file), or NULL. */
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
    if (t->n_cand == MAX_CANDIDATES)
        return;
    strategy *s = &t->cand[t->n_cand++];
    *s = (strategy){.n_steps = k1 ? 2 : 1, .mat = {m0, m1}, .impl = {k0, k1}};
    snprintf(s->name, sizeof s->name, "%s", name);
}

/* Whether impl may serve role on m in this site's mode. */
static bool fits(const gcn_ctx *ctx, const gcn_spmm_site *t, const gcn_spmm_impl *impl,
                 unsigned role, const gcn_csr *m)
{
    bool det = !strcmp(t->mode, "auto-deterministic");
    return (impl->roles & role) && impl->device == ctx->device && (!det || impl->deterministic) &&
           impl->supports(m, t->feat);
}

/* The candidates of one community level: the community kernel on the
 * level view, and every intra kernel followed by every inter kernel.  A
 * level whose communities no intra kernel can use at this width (too large
 * to stage, too sparse for dense blocks) is not split at all. */
static gcn_status add_level(gcn_ctx *ctx, const gcn_csr *a, int level, gcn_spmm_site *t)
{
    int n = gcn_spmm_count(ctx);
    const gcn_csr *view, *intra, *inter;
    const gcn_csr_level *lv = &a->priv->level[level];
    char name[64];
    GCN_TRY(get_view(ctx, a, level, &view));
    for (int i = 0; i < n; i++) {
        const gcn_spmm_impl *k = gcn_spmm_at(ctx, i);
        if (fits(ctx, t, k, GCN_SPMM_ROLE_FUSED, view)) {
            snprintf(name, sizeof name, "%s@%d", k->name, lv->size);
            add(t, name, view, k, NULL, NULL);
        }
    }
    if (ctx->device != GCN_DEVICE_CUDA ||
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

/* The whole-matrix candidates for (a, feat) in the site's mode, unless the
 * site is named after a level's strategy. */
static void add_whole(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_site *t)
{
    int n = gcn_spmm_count(ctx);
    const char *named = named_strategy(t);
    for (int i = 0; i < n && !(named && strchr(named, '@')); i++)
        if (fits(ctx, t, gcn_spmm_at(ctx, i), GCN_SPMM_ROLE_WHOLE, a))
            add(t, gcn_spmm_at(ctx, i)->name, a, gcn_spmm_at(ctx, i), NULL, NULL);
}

/* The community levels' candidates; for a named strategy (forced, or from
 * a plan file) only the level it names, so no other level's split is
 * built. */
static gcn_status add_levels(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_site *t)
{
    const char *named = named_strategy(t);
    const char *at = named ? strchr(named, '@') : NULL;
    for (int l = 0; a->n_rows == a->n_cols && l < a->priv->n_levels && (!named || at) &&
                    !names_prior(named);
         l++)
        if (!at || atoi(at + 1) == a->priv->level[l].size)
            GCN_TRY(add_level(ctx, a, l, t));
    return GCN_OK;
}

/* For a matrix that carries its rows' prior order, each kernel that can
 * follow it on the prior-order view ("rowsplit@prior"); for a named
 * strategy only when it names one of these. */
static gcn_status add_prior(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_site *t)
{
    const char *named = named_strategy(t);
    if (!a->priv->prior_order || (named && !names_prior(named)))
        return GCN_OK;
    const gcn_csr *view;
    char name[64];
    GCN_TRY(get_prior_view(ctx, a, &view));
    for (int i = 0; i < gcn_spmm_count(ctx); i++) {
        const gcn_spmm_impl *k = gcn_spmm_at(ctx, i);
        if (fits(ctx, t, k, GCN_SPMM_ROLE_PRIOR, view)) {
            snprintf(name, sizeof name, "%s@prior", k->name);
            add(t, name, view, k, NULL, NULL);
        }
    }
    return GCN_OK;
}

/* The candidates that come after the whole-matrix ones. */
static gcn_status add_more(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_site *t)
{
    GCN_TRY(add_prior(ctx, a, t));
    return add_levels(ctx, a, t);
}

/* The rest of a deferred site at its second product: the prior-order and
 * levels' candidates and the selector. */
static gcn_status complete(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_site *t)
{
    GCN_TRY(add_more(ctx, a, t));
    if (t->n_cand == 0)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "spmm: no kernel supports this %d x %d "
                         "matrix at width %d on %s", a->n_rows, a->n_cols, t->feat,
                         gcn_device_name(ctx->device));
    const gcn_select_clock *clock =
        ctx->device == GCN_DEVICE_CUDA ? gcn_select_cuda_clock() : gcn_select_host_clock();
    GCN_TRY(gcn_selector_create(ctx, &t->sel, t->n_cand, NULL, clock));
    t->runs = (int64_t)a->nnz * t->feat < SMALL_WORK ? SMALL_RUNS : 1;
    t->deferred = false;
    return GCN_OK;
}

static gcn_status site_new(gcn_ctx *ctx, const gcn_csr *a, int feat, const char *mode,
                           const char *only, gcn_spmm_site **out)
{
    gcn_spmm_state *s = NULL;
    GCN_TRY(state_of(ctx, a, &s));
    gcn_spmm_site *t = calloc(1, sizeof *t);
    if (!t)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "spmm: out of host memory for a call site");
    t->feat = feat;
    snprintf(t->mode, sizeof t->mode, "%s", mode);
    t->forced = strcmp(mode, "auto") != 0 && strcmp(mode, "auto-deterministic") != 0;
    snprintf(t->only, sizeof t->only, "%s", only ? only : "");
    bool named = t->forced || t->only[0];
    add_whole(ctx, a, t);
    t->deferred = !named && t->n_cand > 0;
    gcn_status st = GCN_OK;
    if (!named && !t->deferred)
        st = complete(ctx, a, t);
    if (named) { /* locked from the start: its selector never times */
        st = add_more(ctx, a, t);
        if (st == GCN_OK && t->n_cand > 0)
            st = gcn_selector_create(ctx, &t->sel, t->n_cand, NULL, gcn_select_host_clock());
        if (st == GCN_OK)
            st = gcn_spmm_site_lock(ctx, t, t->forced ? mode : t->only);
    }
    if (st != GCN_OK) {
        gcn_selector_free(&t->sel);
        free(t);
        return st;
    }
    if (s->last)
        s->last->next = t;
    else
        s->sites = t;
    s->last = t;
    *out = t;
    return GCN_OK;
}

gcn_status gcn_spmm_site_get(gcn_ctx *ctx, const gcn_csr *a, int feat, const char *mode,
                             gcn_spmm_site **site)
{
    for (gcn_spmm_site *t = a->priv->spmm ? a->priv->spmm->sites : NULL; t; t = t->next)
        if (t->feat == feat && !strcmp(t->mode, mode)) {
            *site = t;
            return GCN_OK;
        }
    return site_new(ctx, a, feat, mode, NULL, site);
}

gcn_status gcn_spmm_site_restore(gcn_ctx *ctx, const gcn_csr *a, int feat, const char *mode,
                                 const char *strategy)
{
    for (gcn_spmm_site *t = a->priv->spmm ? a->priv->spmm->sites : NULL; t; t = t->next)
        if (t->feat == feat && !strcmp(t->mode, mode))
            return GCN_ERROR(ctx, GCN_ERR_STATE, "spmm: the call site of width %d exists already",
                             feat);
    gcn_spmm_site *t;
    return site_new(ctx, a, feat, mode, strategy, &t);
}

gcn_status gcn_spmm_site_lock(gcn_ctx *ctx, gcn_spmm_site *t, const char *strategy)
{
    for (int c = 0; c < t->n_cand; c++)
        if (!strcmp(t->cand[c].name, strategy))
            return gcn_selector_lock(ctx, t->sel, c);
    char list[512] = "";
    for (int c = 0; c < t->n_cand; c++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", c ? ", " : "",
                 t->cand[c].name);
    return GCN_ERROR(ctx, GCN_ERR_NOT_FOUND,
                     "spmm strategy '%s' is not available for this matrix at width %d "
                     "(candidates: %s)",
                     strategy, t->feat, list);
}

/* ---- running ------------------------------------------------------------------ */

/* Plans of every step, built before any timing starts. */
static gcn_status ensure_plans(gcn_ctx *ctx, const strategy *s, int feat)
{
    void *plan;
    for (int i = 0; i < s->n_steps; i++)
        if (s->mat[i]->n_rows > 0)
            GCN_TRY(gcn_spmm_get_plan(ctx, s->impl[i], s->mat[i], feat, &plan));
    return GCN_OK;
}

static gcn_status run_strategy(gcn_ctx *ctx, const strategy *s, const float *x, float *y,
                               int feat, bool accumulate)
{
    for (int i = 0; i < s->n_steps; i++)
        GCN_TRY(gcn_spmm_run(ctx, s->impl[i], s->mat[i], x, y, feat, accumulate || i > 0));
    return GCN_OK;
}

/* The fastest timed candidate other than `skip`, or -1. */
static int runner_up(const gcn_spmm_site *t, int skip)
{
    int best = -1;
    for (int c = 0; c < t->n_cand; c++) {
        double m = gcn_selector_median(t->sel, c);
        if (c != skip && !isnan(m) && (best < 0 || m < gcn_selector_median(t->sel, best)))
            best = c;
    }
    return best;
}

static int find_named(const gcn_spmm_site *t, const char *name)
{
    for (int c = 0; c < t->n_cand; c++)
        if (!strcmp(t->cand[c].name, name))
            return c;
    return -1;
}

/* On the lock: frees the losers' plans (the winner's steps keep theirs)
 * and logs the choice once. */
static void on_lock(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_site *t, int win)
{
    const strategy *w = &t->cand[win];
    for (int c = 0; c < t->n_cand; c++)
        for (int i = 0; c != win && i < t->cand[c].n_steps; i++) {
            const strategy *s = &t->cand[c];
            bool shared = false;
            for (int j = 0; j < w->n_steps; j++)
                shared |= w->mat[j] == s->mat[i] && w->impl[j] == s->impl[i];
            if (!shared)
                gcn_csr_drop_plan((gcn_csr *)s->mat[i], s->impl[i], t->feat);
        }
    t->reported = true;
    if (t->forced || gcn_selector_profiled_calls(t->sel) == 0)
        return;
    int r = runner_up(t, win), cu = find_named(t, "cusparse");
    gcn_log(ctx, GCN_LOG_INFO,
            "spmm %d x %d%s, F = %d: %s locked at %.4f ms (runner-up %s %.4f ms, cusparse "
            "%.4f ms; %d candidates, %lld calls profiled, %.1f ms of splits and plans)",
            a->n_rows, a->n_cols, a->priv->owner ? " (A^T)" : "", t->feat, w->name,
            gcn_selector_median(t->sel, win), r >= 0 ? t->cand[r].name : "-",
            r >= 0 ? gcn_selector_median(t->sel, r) : NAN, cu >= 0 ? gcn_selector_median(t->sel, cu) : NAN,
            t->n_cand, (long long)gcn_selector_profiled_calls(t->sel), t->setup_ms);
}

/* Whether a candidate the selector may still run has step (m, k). */
static bool live_step(const gcn_spmm_site *t, const gcn_csr *m, const gcn_spmm_impl *k)
{
    for (int c = 0; c < t->n_cand; c++)
        for (int i = 0; i < t->cand[c].n_steps; i++)
            if (gcn_selector_state(t->sel, c) == GCN_CAND_ACTIVE && t->cand[c].mat[i] == m &&
                t->cand[c].impl[i] == k)
                return true;
    return false;
}

/* While profiling: frees the plans of candidates the selector has pruned or
 * failed (but steps a live candidate shares), so a site holds the plans of
 * its contenders only, not of every candidate it has tried. */
static void drop_losers(gcn_spmm_site *t)
{
    for (int c = 0; c < t->n_cand; c++) {
        strategy *s = &t->cand[c];
        if (s->dropped || gcn_selector_state(t->sel, c) == GCN_CAND_ACTIVE)
            continue;
        s->dropped = true;
        for (int i = 0; i < s->n_steps; i++)
            if (!live_step(t, s->mat[i], s->impl[i]))
                gcn_csr_drop_plan((gcn_csr *)s->mat[i], s->impl[i], t->feat);
    }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* Splits and plans of the call site until it locks (complete and
 * ensure_plans), with their host time added to t->setup_ms. */
static gcn_status setup(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_site *t, int cand)
{
    double t0 = now_ms();
    gcn_status st = cand < 0 ? complete(ctx, a, t) : ensure_plans(ctx, &t->cand[cand], t->feat);
    t->setup_ms += now_ms() - t0;
    return st;
}

gcn_status gcn_spmm_site_apply(gcn_ctx *ctx, const gcn_csr *a, const float *x, float *y,
                               int feat, bool accumulate)
{
    gcn_spmm_site *t;
    GCN_TRY(gcn_spmm_site_get(ctx, a, feat, ctx->spmm_kernel, &t));
    if (t->deferred && !t->first_done) {
        t->first_done = true;
        GCN_TRY(ensure_plans(ctx, &t->cand[0], feat));
        return run_strategy(ctx, &t->cand[0], x, y, feat, accumulate);
    }
    if (t->deferred)
        GCN_TRY(setup(ctx, a, t, -1));
    for (;;) {
        int c;
        bool timed;
        GCN_TRY(gcn_selector_next(ctx, t->sel, &c, &timed));
        if (!t->reported)
            drop_losers(t);
        gcn_status st = t->reported ? ensure_plans(ctx, &t->cand[c], feat) : setup(ctx, a, t, c);
        if (st != GCN_OK && st != GCN_ERR_CUDA && !t->forced) {
            gcn_log(ctx, GCN_LOG_DEBUG, "spmm: candidate %s dropped: %s", t->cand[c].name,
                    gcn_last_error(ctx));
            gcn_selector_fail(t->sel, c);
            continue;
        }
        GCN_TRY(st);
        /* Repeating a product that does not accumulate leaves Y the same. */
        int runs = timed && !accumulate ? t->runs : 1;
        if (timed)
            GCN_TRY(gcn_selector_start(ctx, t->sel, c));
        for (int r = 0; st == GCN_OK && r < runs; r++)
            st = run_strategy(ctx, &t->cand[c], x, y, feat, accumulate);
        if (st != GCN_OK) {
            gcn_selector_fail(t->sel, c);
            return st;
        }
        if (timed)
            GCN_TRY(gcn_selector_stop(ctx, t->sel, c, runs));
        int win;
        if (!t->reported && gcn_selector_locked(t->sel, &win))
            on_lock(ctx, a, t, win);
        return GCN_OK;
    }
}

int gcn_spmm_site_candidates(const gcn_spmm_site *site)
{
    return site->n_cand;
}

const char *gcn_spmm_site_candidate_name(const gcn_spmm_site *site, int cand)
{
    return cand >= 0 && cand < site->n_cand ? site->cand[cand].name : NULL;
}

gcn_status gcn_spmm_site_prepare(gcn_ctx *ctx, const gcn_spmm_site *site, int cand)
{
    GCN_ARG(ctx, cand >= 0 && cand < site->n_cand);
    return ensure_plans(ctx, &site->cand[cand], site->feat);
}

gcn_status gcn_spmm_site_run(gcn_ctx *ctx, const gcn_spmm_site *site, int cand, const float *x,
                             float *y, bool accumulate)
{
    GCN_ARG(ctx, cand >= 0 && cand < site->n_cand);
    return run_strategy(ctx, &site->cand[cand], x, y, site->feat, accumulate);
}

bool gcn_spmm_site_locked(const gcn_spmm_site *site, int *cand)
{
    return gcn_selector_locked(site->sel, cand);
}

/* Whether m holds a plan of impl at width feat. */
static bool has_plan(const gcn_csr *m, const gcn_spmm_impl *impl, int feat)
{
    for (const gcn_csr_plan *pl = m->priv->plans; pl; pl = pl->next)
        if (pl->impl == impl && pl->feat == feat)
            return true;
    return false;
}

void gcn_spmm_site_losers(const gcn_spmm_site *site, int *losers, int *holding)
{
    *losers = *holding = 0;
    for (int c = 0; site->sel && c < site->n_cand; c++) {
        const strategy *s = &site->cand[c];
        if (gcn_selector_state(site->sel, c) == GCN_CAND_ACTIVE)
            continue;
        ++*losers;
        bool holds = false;
        for (int i = 0; i < s->n_steps; i++)
            holds |= !live_step(site, s->mat[i], s->impl[i]) &&
                     has_plan(s->mat[i], s->impl[i], site->feat);
        *holding += holds;
    }
}

/* ---- what the sites chose ------------------------------------------------------ */

static void site_info(const gcn_spmm_site *t, bool transposed, float self_alpha,
                      gcn_spmm_site_info *o)
{
    int win = -1;
    bool locked = gcn_selector_locked(t->sel, &win);
    if (!locked)
        win = runner_up(t, -1);
    int r = runner_up(t, win), cu = find_named(t, "cusparse");
    *o = (gcn_spmm_site_info){.feat = t->feat, .transposed = transposed, .locked = locked,
                              .n_candidates = t->n_cand, .calls = gcn_selector_calls(t->sel),
                              .profiled_calls = gcn_selector_profiled_calls(t->sel),
                              .chosen_ms = win >= 0 ? gcn_selector_median(t->sel, win) : NAN,
                              .runner_up_ms = r >= 0 ? gcn_selector_median(t->sel, r) : NAN,
                              .cusparse_ms = cu >= 0 ? gcn_selector_median(t->sel, cu) : NAN,
                              .setup_ms = t->setup_ms,
                              .self_alpha = self_alpha};
    snprintf(o->mode, sizeof o->mode, "%s", t->forced ? "forced" : t->mode[5] ? "auto-deterministic" : "auto");
    snprintf(o->chosen, sizeof o->chosen, "%s", win >= 0 ? t->cand[win].name : "");
    snprintf(o->runner_up, sizeof o->runner_up, "%s", r >= 0 ? t->cand[r].name : "");
}

/* The sites of a, its transpose, its A + alpha I and that one's transpose,
 * from out[n] on (as far as max), marked as block part `part`; returns n
 * past them. */
static int matrix_sites(const gcn_csr *a, int part, gcn_spmm_site_info *out, int max, int n)
{
    const gcn_csr *s = a->priv->self_loops;
    const gcn_csr *mats[4] = {a, a->priv->transpose, s, s ? s->priv->transpose : NULL};
    for (int m = 0; m < 4; m++)
        for (gcn_spmm_site *t = mats[m] && mats[m]->priv->spmm ? mats[m]->priv->spmm->sites
                                                                : NULL;
             t; t = t->next, n++)
            if (out && n < max) {
                site_info(t, m % 2 == 1, m >= 2 ? a->priv->self_alpha : 0.0f, &out[n]);
                out[n].block_part = part;
            }
    return n;
}

int gcn_spmm_sites(const gcn_csr *a, gcn_spmm_site_info *out, int max)
{
    if (!a || !a->priv)
        return 0;
    if (!a->priv->halo)
        return matrix_sites(a, 0, out, max, 0);
    const gcn_csr *parts[GCN_HALO_MAX_CHUNKS + 1];
    int n_parts = gcn_halo_parts(a, parts, GCN_HALO_MAX_CHUNKS + 1), n = 0;
    for (int k = 0; k < n_parts; k++)
        n = matrix_sites(parts[k], k == 0 ? 1 : 2, out, max, n);
    return n;
}
