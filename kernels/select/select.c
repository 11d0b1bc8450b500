/* The adaptive selector's state machine (see select.h): warm-up and timed
 * runs of one candidate after another, pruning of clear losers, locking by
 * median; and the host wall clock that times runs on CPU contexts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "select.h"

typedef struct candidate {
    gcn_select_state state;
    int warm;                              /* untimed warm-up runs handed out */
    int n_samples;                         /* of the current round */
    float samples[GCN_SELECT_MAX_SAMPLES]; /* ms, in completion order */
    double kept;                           /* lowest median of the finished rounds, or NAN */
    float fastest;                         /* fastest sample of any round, or NAN */
    void *current;                         /* started, not yet stopped */
    void *pending[GCN_SELECT_MAX_SAMPLES]; /* stopped, not yet done: a ring, oldest at head */
    int runs[GCN_SELECT_MAX_SAMPLES];      /* runs each pending bracket holds */
    int head, n_pending;
} candidate;

struct gcn_selector {
    gcn_select_opts opts;
    gcn_select_clock clock;
    int n;
    int last;   /* the candidate handed out last for profiling */
    int round;  /* 0, then 1 (candidates in reverse order) */
    int locked; /* -1 until locked */
    int64_t calls, profiled_calls;
    candidate c[];
};

gcn_select_opts gcn_select_default_opts(void)
{
    gcn_select_opts o = {.warmup = 1, .samples = 5, .prune = 1.5, .rounds = 2};
    return o;
}

gcn_status gcn_selector_create(gcn_ctx *ctx, gcn_selector **out, int n_candidates,
                               const gcn_select_opts *opts, const gcn_select_clock *clock)
{
    GCN_ARG(ctx, out);
    *out = NULL;
    GCN_ARG(ctx, n_candidates >= 1);
    GCN_ARG(ctx, clock && clock->start && clock->stop && clock->poll && clock->release);
    gcn_select_opts o = opts ? *opts : gcn_select_default_opts();
    if (o.warmup < 0 || o.samples < 1 || o.samples > GCN_SELECT_MAX_SAMPLES ||
        !(o.prune >= 1.0) || o.rounds < 1 || o.rounds > 2)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "selector options warmup %d, samples %d, prune %g, rounds %d: need "
                         "warmup >= 0, samples in [1, %d], prune >= 1, rounds 1 or 2",
                         o.warmup, o.samples, o.prune, o.rounds, GCN_SELECT_MAX_SAMPLES);
    gcn_selector *s = calloc(1, sizeof *s + (size_t)n_candidates * sizeof s->c[0]);
    if (!s)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for a selector of %d candidates",
                         n_candidates);
    s->opts = o;
    s->clock = *clock;
    s->n = n_candidates;
    s->last = 0;
    s->locked = -1;
    for (int i = 0; i < n_candidates; i++)
        s->c[i].kept = s->c[i].fastest = NAN;
    *out = s;
    return GCN_OK;
}

/* Releases a candidate's started and pending marks. */
static void release_marks(gcn_selector *s, candidate *c)
{
    if (c->current)
        s->clock.release(s->clock.user, c->current);
    c->current = NULL;
    for (int k = 0; k < c->n_pending; k++)
        s->clock.release(s->clock.user, c->pending[(c->head + k) % GCN_SELECT_MAX_SAMPLES]);
    c->head = 0;
    c->n_pending = 0;
}

void gcn_selector_free(gcn_selector **sel)
{
    if (!sel || !*sel)
        return;
    for (int i = 0; i < (*sel)->n; i++)
        release_marks(*sel, &(*sel)->c[i]);
    free(*sel);
    *sel = NULL;
}

/* Records every finished mark as a sample, oldest first per candidate,
 * stopping at a candidate's first unfinished mark. */
static gcn_status poll_marks(gcn_ctx *ctx, gcn_selector *s)
{
    for (int i = 0; i < s->n; i++) {
        candidate *c = &s->c[i];
        while (c->n_pending > 0) {
            void *mark = c->pending[c->head];
            bool done = false;
            float ms = 0.0f;
            GCN_TRY(s->clock.poll(ctx, s->clock.user, mark, &done, &ms));
            if (!done)
                break;
            float v = ms / (float)c->runs[c->head];
            if (c->n_samples < s->opts.samples)
                c->samples[c->n_samples++] = v;
            c->fastest = isnan(c->fastest) || v < c->fastest ? v : c->fastest;
            s->clock.release(s->clock.user, mark);
            c->head = (c->head + 1) % GCN_SELECT_MAX_SAMPLES;
            c->n_pending--;
        }
    }
    return GCN_OK;
}

static double median_of(const candidate *c)
{
    int n = c->n_samples;
    if (n == 0)
        return NAN;
    float v[GCN_SELECT_MAX_SAMPLES];
    memcpy(v, c->samples, (size_t)n * sizeof v[0]);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            float t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + v[n / 2]);
}

/* The lowest median over the candidate's rounds (NAN without samples). */
static double score_of(const candidate *c)
{
    double m = median_of(c);
    return isnan(c->kept) || m < c->kept ? m : c->kept;
}

/* The active candidate with the lowest score (ties: the lowest index; one
 * without samples only when no active one has any); -1 when none is active. */
static int best_active(const gcn_selector *s)
{
    int best = -1;
    double best_score = INFINITY;
    for (int i = 0; i < s->n; i++) {
        if (s->c[i].state != GCN_CAND_ACTIVE)
            continue;
        double m = score_of(&s->c[i]);
        m = isnan(m) ? INFINITY : m;
        if (best < 0 || m < best_score) {
            best = i;
            best_score = m;
        }
    }
    return best;
}

static int n_active(const gcn_selector *s)
{
    int k = 0;
    for (int i = 0; i < s->n; i++)
        k += s->c[i].state == GCN_CAND_ACTIVE;
    return k;
}

/* Whether every active candidate has at least k samples. */
static bool all_sampled(const gcn_selector *s, int k)
{
    for (int i = 0; i < s->n; i++)
        if (s->c[i].state == GCN_CAND_ACTIVE && s->c[i].n_samples < k)
            return false;
    return true;
}

/* Drops every active candidate that has a sample and whose fastest sample
 * is slower than prune times the best score so far; never the best. */
static void prune(gcn_selector *s)
{
    int best = -1;
    for (int i = 0; i < s->n; i++)
        if (s->c[i].state == GCN_CAND_ACTIVE && !isnan(score_of(&s->c[i])) &&
            (best < 0 || score_of(&s->c[i]) < score_of(&s->c[best])))
            best = i;
    if (best < 0)
        return;
    double limit = s->opts.prune * score_of(&s->c[best]);
    for (int i = 0; i < s->n; i++) {
        candidate *c = &s->c[i];
        if (i != best && c->state == GCN_CAND_ACTIVE && c->fastest > limit) {
            c->state = GCN_CAND_PRUNED;
            release_marks(s, c);
        }
    }
}

/* Ends the first round: each active candidate keeps its median and starts
 * the second round afresh (warm-up included), the last candidate first. */
static void next_round(gcn_selector *s)
{
    for (int i = 0; i < s->n; i++) {
        candidate *c = &s->c[i];
        if (c->state != GCN_CAND_ACTIVE)
            continue;
        release_marks(s, c);
        c->kept = score_of(c);
        c->n_samples = 0;
        c->warm = 0;
    }
    s->round = 1;
    s->last = s->n - 1;
}

static void lock_on(gcn_selector *s, int cand)
{
    s->locked = cand;
    s->c[cand].state = GCN_CAND_ACTIVE;
    for (int i = 0; i < s->n; i++)
        release_marks(s, &s->c[i]);
}

/* The candidate handed out last while it still needs a warm-up or a timed
 * run, else the next active one that does: a candidate's runs come one
 * after another, as its runs will once it is locked in (the state it leaves
 * in the caches, atomics still draining, weigh on its own next run, not on
 * another candidate's).  When every remaining run is pending, the best so
 * far, untimed, so the stream never waits on the selector. */
static int pick(gcn_selector *s, bool *timed)
{
    for (int k = 0; k < s->n; k++) {
        int i = s->round ? (s->last - k + s->n) % s->n : (s->last + k) % s->n;
        candidate *c = &s->c[i];
        if (c->state != GCN_CAND_ACTIVE)
            continue;
        if (c->warm < s->opts.warmup)
            c->warm++;
        else if (c->n_samples + c->n_pending < s->opts.samples)
            *timed = true;
        else
            continue;
        s->last = i;
        return i;
    }
    return best_active(s);
}

gcn_status gcn_selector_next(gcn_ctx *ctx, gcn_selector *sel, int *cand, bool *timed)
{
    GCN_ARG(ctx, sel && cand && timed);
    *timed = false;
    if (sel->locked < 0) {
        GCN_TRY(poll_marks(ctx, sel));
        if (n_active(sel) == 0)
            return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "selector: all %d candidates failed",
                             sel->n);
        prune(sel);
        if (n_active(sel) > 1 && all_sampled(sel, sel->opts.samples) &&
            sel->round + 1 < sel->opts.rounds) {
            next_round(sel);
        } else if (n_active(sel) == 1 || all_sampled(sel, sel->opts.samples)) {
            lock_on(sel, best_active(sel));
            sel->profiled_calls = sel->calls;
        }
    }
    *cand = sel->locked >= 0 ? sel->locked : pick(sel, timed);
    sel->calls++;
    return GCN_OK;
}

gcn_status gcn_selector_start(gcn_ctx *ctx, gcn_selector *sel, int cand)
{
    GCN_ARG(ctx, sel && cand >= 0 && cand < sel->n);
    candidate *c = &sel->c[cand];
    if (sel->locked >= 0 || c->state != GCN_CAND_ACTIVE || c->current ||
        c->n_pending == GCN_SELECT_MAX_SAMPLES)
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "selector: candidate %d is not being profiled or is already timed", cand);
    void *mark = NULL;
    GCN_TRY(sel->clock.start(ctx, sel->clock.user, &mark));
    c->current = mark;
    return GCN_OK;
}

gcn_status gcn_selector_stop(gcn_ctx *ctx, gcn_selector *sel, int cand, int runs)
{
    GCN_ARG(ctx, sel && cand >= 0 && cand < sel->n && runs >= 1);
    candidate *c = &sel->c[cand];
    void *mark = c->current;
    if (!mark)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "selector: stop of candidate %d without a start",
                         cand);
    c->current = NULL;
    gcn_status st = sel->clock.stop(ctx, sel->clock.user, mark);
    if (st != GCN_OK) {
        sel->clock.release(sel->clock.user, mark);
        return st;
    }
    int slot = (c->head + c->n_pending) % GCN_SELECT_MAX_SAMPLES;
    c->pending[slot] = mark;
    c->runs[slot] = runs;
    c->n_pending++;
    return GCN_OK;
}

void gcn_selector_fail(gcn_selector *sel, int cand)
{
    if (!sel || cand < 0 || cand >= sel->n)
        return;
    sel->c[cand].state = GCN_CAND_FAILED;
    release_marks(sel, &sel->c[cand]);
    if (sel->locked == cand)
        sel->locked = -1;
    if (n_active(sel) == 0)
        for (int i = 0; i < sel->n; i++)
            if (sel->c[i].state == GCN_CAND_PRUNED)
                sel->c[i].state = GCN_CAND_ACTIVE;
}

gcn_status gcn_selector_lock(gcn_ctx *ctx, gcn_selector *sel, int cand)
{
    GCN_ARG(ctx, sel && cand >= 0 && cand < sel->n);
    if (sel->c[cand].state == GCN_CAND_FAILED)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "selector: candidate %d has failed and cannot be locked", cand);
    lock_on(sel, cand);
    return GCN_OK;
}

bool gcn_selector_locked(const gcn_selector *sel, int *cand)
{
    if (!sel || sel->locked < 0)
        return false;
    if (cand)
        *cand = sel->locked;
    return true;
}

static const candidate *get(const gcn_selector *sel, int cand)
{
    return sel && cand >= 0 && cand < sel->n ? &sel->c[cand] : NULL;
}

gcn_select_state gcn_selector_state(const gcn_selector *sel, int cand)
{
    const candidate *c = get(sel, cand);
    return c ? c->state : GCN_CAND_FAILED;
}

int gcn_selector_samples(const gcn_selector *sel, int cand)
{
    const candidate *c = get(sel, cand);
    return c ? c->n_samples : 0;
}

double gcn_selector_median(const gcn_selector *sel, int cand)
{
    const candidate *c = get(sel, cand);
    return c ? score_of(c) : NAN;
}

double gcn_selector_min(const gcn_selector *sel, int cand)
{
    const candidate *c = get(sel, cand);
    return c ? c->fastest : NAN;
}

int64_t gcn_selector_calls(const gcn_selector *sel)
{
    return sel ? sel->calls : 0;
}

int64_t gcn_selector_profiled_calls(const gcn_selector *sel)
{
    return sel ? sel->profiled_calls : 0;
}

/* ---- the host wall clock ------------------------------------------------ */

typedef struct host_mark {
    struct timespec start, stop;
} host_mark;

static gcn_status host_start(gcn_ctx *ctx, void *user, void **mark)
{
    (void)user;
    host_mark *m = malloc(sizeof *m);
    if (!m)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "selector: out of host memory for a clock mark");
    clock_gettime(CLOCK_MONOTONIC, &m->start);
    m->stop = m->start;
    *mark = m;
    return GCN_OK;
}

static gcn_status host_stop(gcn_ctx *ctx, void *user, void *mark)
{
    (void)ctx;
    (void)user;
    clock_gettime(CLOCK_MONOTONIC, &((host_mark *)mark)->stop);
    return GCN_OK;
}

static gcn_status host_poll(gcn_ctx *ctx, void *user, void *mark, bool *done, float *ms)
{
    (void)ctx;
    (void)user;
    const host_mark *m = mark;
    *ms = (float)((double)(m->stop.tv_sec - m->start.tv_sec) * 1e3 +
                  (double)(m->stop.tv_nsec - m->start.tv_nsec) * 1e-6);
    *done = true;
    return GCN_OK;
}

static void host_release(void *user, void *mark)
{
    (void)user;
    free(mark);
}

static const gcn_select_clock host_clock = {host_start, host_stop, host_poll, host_release, NULL};

const gcn_select_clock *gcn_select_host_clock(void)
{
    return &host_clock;
}
