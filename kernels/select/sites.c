/* The selector's call sites: per (matrix, feature width, dtype, mode), the list of
 * candidate strategies (candidates.c), a selector that profiles them
 * on real calls and locks the fastest, and what it chose. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/halo/halo.h"
#include "sites.h"

/* A product of a few microseconds takes about as long on the GPU as the
 * host's path through the call site and the launch, so a sample bracketing
 * one run would time the host.  So a timed sample holds at least
 * SAMPLE_WORK multiply-adds (non-zeros x F) in back-to-back runs, at most
 * MAX_SAMPLE_RUNS of them (H100: without them the selector picked a kernel
 * 21-27 % slower on two graphs of 5-us products; with 8 runs below 2^24
 * and one above, products of 13-17 us at 2^24 still locked a kernel 8-17 %
 * slower in 3 of 14 graph-runs; docs/perf.md). */
#define SAMPLE_WORK (INT64_C(1) << 26)
#define MAX_SAMPLE_RUNS 8

int gcn_spmm_sample_runs(const gcn_csr *a, int feat)
{
    int64_t work = (int64_t)a->nnz * feat;
    if (work * MAX_SAMPLE_RUNS <= SAMPLE_WORK)
        return MAX_SAMPLE_RUNS;
    return (int)((SAMPLE_WORK + work - 1) / work);
}

static void state_free(void *state)
{
    gcn_spmm_state *s = state;
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

gcn_status gcn_spmm_state_of(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_state **out)
{
    void *state = NULL;
    GCN_TRY(gcn_csr_slot_make(ctx, a, GCN_CSR_SLOT_SITES, sizeof **out, state_free, &state));
    *out = state;
    return GCN_OK;
}

/* The call sites of a, in creation order. */
static gcn_spmm_site *sites_of(const gcn_csr *a)
{
    const gcn_spmm_state *s = gcn_csr_slot_get(a, GCN_CSR_SLOT_SITES);
    return s ? s->sites : NULL;
}

bool gcn_spmm_uses_sites(const char *kernel)
{
    return !strcmp(kernel, "auto") || !strcmp(kernel, "auto-deterministic") ||
           strchr(kernel, '@') != NULL;
}

/* The rest of a deferred site at its second product: the prior-order and
 * levels' candidates and the selector. */
static gcn_status complete(gcn_ctx *ctx, const gcn_csr *a, gcn_spmm_site *t)
{
    GCN_TRY(gcn_spmm_add_more(ctx, a, t));
    if (t->n_cand == 0)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "spmm: no kernel supports this %d x %d "
                         "matrix at width %d in %s on %s", a->n_rows, a->n_cols, t->feat,
                         gcn_dtype_name(t->dtype), gcn_device_name(ctx->device));
    const gcn_select_clock *clock =
        ctx->device == GCN_DEVICE_CUDA ? gcn_select_cuda_clock() : gcn_select_host_clock();
    GCN_TRY(gcn_selector_create(ctx, &t->sel, t->n_cand, NULL, clock));
    t->runs = gcn_spmm_sample_runs(a, t->feat);
    t->deferred = false;
    return GCN_OK;
}

static gcn_status site_new(gcn_ctx *ctx, const gcn_csr *a, int feat, gcn_dtype dtype,
                           const char *mode, const char *only, gcn_spmm_site **out)
{
    gcn_spmm_state *s = NULL;
    GCN_TRY(gcn_spmm_state_of(ctx, a, &s));
    gcn_spmm_site *t = calloc(1, sizeof *t);
    if (!t)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "spmm: out of host memory for a call site");
    t->feat = feat;
    t->dtype = dtype;
    snprintf(t->mode, sizeof t->mode, "%s", mode);
    t->forced = strcmp(mode, "auto") != 0 && strcmp(mode, "auto-deterministic") != 0;
    snprintf(t->only, sizeof t->only, "%s", only ? only : "");
    bool named = t->forced || t->only[0];
    gcn_spmm_add_whole(ctx, a, t);
    t->deferred = !named && t->n_cand > 0;
    gcn_status st = GCN_OK;
    if (!named && !t->deferred)
        st = complete(ctx, a, t);
    if (named) { /* locked from the start: its selector never times */
        st = gcn_spmm_add_more(ctx, a, t);
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

gcn_status gcn_spmm_site_get(gcn_ctx *ctx, const gcn_csr *a, int feat, gcn_dtype dtype,
                             const char *mode, gcn_spmm_site **site)
{
    for (gcn_spmm_site *t = sites_of(a); t; t = t->next)
        if (t->feat == feat && t->dtype == dtype && !strcmp(t->mode, mode)) {
            *site = t;
            return GCN_OK;
        }
    return site_new(ctx, a, feat, dtype, mode, NULL, site);
}

gcn_status gcn_spmm_site_restore(gcn_ctx *ctx, const gcn_csr *a, int feat, gcn_dtype dtype,
                                 const char *mode, const char *strategy)
{
    for (gcn_spmm_site *t = sites_of(a); t; t = t->next)
        if (t->feat == feat && t->dtype == dtype && !strcmp(t->mode, mode))
            return GCN_ERROR(ctx, GCN_ERR_STATE, "spmm: the %s call site of width %d exists "
                             "already", gcn_dtype_name(dtype), feat);
    gcn_spmm_site *t;
    return site_new(ctx, a, feat, dtype, mode, strategy, &t);
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
                     "spmm strategy '%s' is not available for this matrix at width %d in %s "
                     "(candidates: %s)",
                     strategy, t->feat, gcn_dtype_name(t->dtype), list);
}

/* ---- running ------------------------------------------------------------------ */

/* Plans of every step, built before any timing starts. */
static gcn_status ensure_plans(gcn_ctx *ctx, const gcn_spmm_site *t, const strategy *s)
{
    void *plan;
    for (int i = 0; i < s->n_steps; i++)
        if (s->mat[i]->n_rows > 0)
            GCN_TRY(gcn_spmm_get_plan(ctx, s->impl[i], s->mat[i], t->feat, t->dtype, &plan));
    return GCN_OK;
}

static gcn_status run_strategy(gcn_ctx *ctx, const gcn_spmm_site *t, const strategy *s,
                               const void *x, void *y, bool accumulate)
{
    for (int i = 0; i < s->n_steps; i++)
        GCN_TRY(gcn_spmm_run_dtype(ctx, s->impl[i], s->mat[i], t->dtype, x, y, t->feat,
                                   accumulate || i > 0));
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
                gcn_spmm_drop_plan(s->mat[i], s->impl[i], t->feat, t->dtype);
        }
    t->reported = true;
    if (t->forced || gcn_selector_profiled_calls(t->sel) == 0)
        return;
    int r = runner_up(t, win), cu = find_named(t, "cusparse");
    gcn_log(ctx, GCN_LOG_INFO,
            "spmm %d x %d%s, F = %d, %s: %s locked at %.4f ms (runner-up %s %.4f ms, cusparse "
            "%.4f ms; %d candidates, %lld calls profiled, %.1f ms of splits and plans)",
            a->n_rows, a->n_cols, a->priv->owner ? " (A^T)" : "", t->feat,
            gcn_dtype_name(t->dtype), w->name,
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
                gcn_spmm_drop_plan(s->mat[i], s->impl[i], t->feat, t->dtype);
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
    gcn_status st = cand < 0 ? complete(ctx, a, t) : ensure_plans(ctx, t, &t->cand[cand]);
    t->setup_ms += now_ms() - t0;
    return st;
}

gcn_status gcn_spmm_site_apply(gcn_ctx *ctx, const gcn_csr *a, gcn_dtype dtype, const void *x,
                               void *y, int feat, bool accumulate)
{
    gcn_spmm_site *t;
    GCN_TRY(gcn_spmm_site_get(ctx, a, feat, dtype, ctx->spmm_kernel, &t));
    if (t->deferred && !t->first_done) {
        t->first_done = true;
        GCN_TRY(ensure_plans(ctx, t, &t->cand[0]));
        return run_strategy(ctx, t, &t->cand[0], x, y, accumulate);
    }
    if (t->deferred)
        GCN_TRY(setup(ctx, a, t, -1));
    for (;;) {
        int c;
        bool timed;
        GCN_TRY(gcn_selector_next(ctx, t->sel, &c, &timed));
        if (!t->reported)
            drop_losers(t);
        gcn_status st = t->reported ? ensure_plans(ctx, t, &t->cand[c]) : setup(ctx, a, t, c);
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
            st = run_strategy(ctx, t, &t->cand[c], x, y, accumulate);
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
    return ensure_plans(ctx, site, &site->cand[cand]);
}

gcn_status gcn_spmm_site_run(gcn_ctx *ctx, const gcn_spmm_site *site, int cand, const void *x,
                             void *y, bool accumulate)
{
    GCN_ARG(ctx, cand >= 0 && cand < site->n_cand);
    return run_strategy(ctx, site, &site->cand[cand], x, y, accumulate);
}

bool gcn_spmm_site_locked(const gcn_spmm_site *site, int *cand)
{
    return gcn_selector_locked(site->sel, cand);
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
                     gcn_spmm_has_plan(s->mat[i], s->impl[i], site->feat, site->dtype);
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
                              .self_alpha = self_alpha,
                              .dtype = t->dtype};
    snprintf(o->mode, sizeof o->mode, "%s", t->forced ? "forced" : t->mode[5] ? "auto-deterministic" : "auto");
    snprintf(o->chosen, sizeof o->chosen, "%s", win >= 0 ? t->cand[win].name : "");
    snprintf(o->runner_up, sizeof o->runner_up, "%s", r >= 0 ? t->cand[r].name : "");
}

/* The sites of a, its transpose, its A + alpha I and that one's transpose,
 * from out[n] on (as far as max), marked as block part `part`; returns n
 * past them. */
static int matrix_sites(const gcn_csr *a, int part, gcn_spmm_site_info *out, int max, int n)
{
    float alpha = 0.0f;
    const gcn_csr *s = gcn_spmm_self_kept(a, &alpha);
    const gcn_csr *mats[4] = {a, a->priv->transpose, s, s ? s->priv->transpose : NULL};
    for (int m = 0; m < 4; m++)
        for (gcn_spmm_site *t = sites_of(mats[m]); t; t = t->next, n++)
            if (out && n < max) {
                site_info(t, m % 2 == 1, m >= 2 ? alpha : 0.0f, &out[n]);
                out[n].block_part = part;
            }
    return n;
}

int gcn_spmm_sites(const gcn_csr *a, gcn_spmm_site_info *out, int max)
{
    if (!a || !a->priv)
        return 0;
    if (!gcn_halo_of(a))
        return matrix_sites(a, 0, out, max, 0);
    const gcn_csr *parts[GCN_HALO_MAX_CHUNKS + 1];
    int n_parts = gcn_halo_parts(a, parts, GCN_HALO_MAX_CHUNKS + 1), n = 0;
    for (int k = 0; k < n_parts; k++)
        n = matrix_sites(parts[k], k == 0 ? 1 : 2, out, max, n);
    return n;
}
