/* The adaptive selector's decisions (kernels/select.c) against a fake clock
 * with per-candidate durations, deterministic noise and delayed completion;
 * and the host wall clock.  CPU only. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "kernels/select.h"

#define MAX_CANDS 8
#define N_TABLE 16
#define MAX_MARKS 4096
#define NO_PRUNE 1e9

typedef struct fake_mark {
    int cand;
    int polls; /* answered so far */
    float ms;
    bool live, stopped;
} fake_mark;

/* The k-th timed run of candidate c takes ms[c][k % N_TABLE]; a mark
 * answers "not done" to its first `delay` polls. */
typedef struct fake_clock {
    int n;
    float ms[MAX_CANDS][N_TABLE];
    int runs[MAX_CANDS];
    int cand; /* the candidate the next start() times: set by the caller */
    int delay;
    int starts, polls, released, outstanding;
    int n_marks;
    fake_mark marks[MAX_MARKS];
} fake_clock;

static gcn_status fake_start(gcn_ctx *ctx, void *user, void **mark)
{
    (void)ctx;
    fake_clock *f = user;
    cr_assert_lt(f->n_marks, MAX_MARKS);
    fake_mark *m = &f->marks[f->n_marks++];
    m->cand = f->cand;
    m->ms = f->ms[f->cand][f->runs[f->cand]++ % N_TABLE];
    m->live = true;
    f->starts++;
    f->outstanding++;
    *mark = m;
    return GCN_OK;
}

static gcn_status fake_stop(gcn_ctx *ctx, void *user, void *mark)
{
    (void)ctx;
    (void)user;
    fake_mark *m = mark;
    cr_assert(m->live && !m->stopped, "stop of a released or stopped mark");
    m->stopped = true;
    return GCN_OK;
}

static gcn_status fake_poll(gcn_ctx *ctx, void *user, void *mark, bool *done, float *ms)
{
    (void)ctx;
    fake_clock *f = user;
    fake_mark *m = mark;
    cr_assert(m->live && m->stopped, "poll of a released or running mark");
    f->polls++;
    *done = m->polls++ >= f->delay;
    if (*done)
        *ms = m->ms;
    return GCN_OK;
}

static void fake_release(void *user, void *mark)
{
    fake_clock *f = user;
    fake_mark *m = mark;
    cr_assert(m->live, "mark released twice");
    m->live = false;
    f->released++;
    f->outstanding--;
}

/* n candidates of the given base times, each sample within +-noise of its
 * base (relative, seeded).  Freed with free(). */
static fake_clock *fake_new(int n, const float *base, float noise)
{
    fake_clock *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    cr_assert_leq(n, MAX_CANDS);
    f->n = n;
    uint64_t seed = 7;
    for (int c = 0; c < n; c++) {
        float u[N_TABLE];
        test_fill_uniform(&seed, u, N_TABLE, -1.0f, 1.0f);
        for (int k = 0; k < N_TABLE; k++)
            f->ms[c][k] = base[c] * (1.0f + noise * u[k]);
    }
    return f;
}

static int live_marks_of(const fake_clock *f, int cand)
{
    int k = 0;
    for (int i = 0; i < f->n_marks; i++)
        k += f->marks[i].live && f->marks[i].cand == cand;
    return k;
}

static gcn_select_opts opts_of(int warmup, int samples, double prune)
{
    gcn_select_opts o = {.warmup = warmup, .samples = samples, .prune = prune, .rounds = 1};
    return o;
}

static gcn_selector *make(gcn_ctx *ctx, fake_clock *f, gcn_select_opts o)
{
    gcn_select_clock clock = {fake_start, fake_stop, fake_poll, fake_release, f};
    gcn_selector *sel = NULL;
    cr_assert_eq(gcn_selector_create(ctx, &sel, f->n, &o, &clock), GCN_OK, "%s",
                 gcn_last_error(ctx));
    return sel;
}

/* One call as the SpMM op makes it: next, then the run, bracketed when
 * timed.  Returns the candidate; *timed (may be NULL) says how it ran. */
static int step(gcn_ctx *ctx, gcn_selector *sel, fake_clock *f, bool *timed)
{
    int cand = -1;
    bool t = true;
    cr_assert_eq(gcn_selector_next(ctx, sel, &cand, &t), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert(cand >= 0 && cand < f->n, "candidate %d", cand);
    cr_assert_eq(gcn_selector_state(sel, cand), GCN_CAND_ACTIVE);
    if (t) {
        f->cand = cand;
        cr_assert_eq(gcn_selector_start(ctx, sel, cand), GCN_OK, "%s", gcn_last_error(ctx));
        cr_assert_eq(gcn_selector_stop(ctx, sel, cand, 1), GCN_OK, "%s", gcn_last_error(ctx));
    }
    if (timed)
        *timed = t;
    return cand;
}

/* Steps until the selector locks; returns the locked candidate. */
static int run_until_locked(gcn_ctx *ctx, gcn_selector *sel, fake_clock *f, int max_calls)
{
    int cand = -1;
    for (int i = 0; !gcn_selector_locked(sel, &cand); i++) {
        cr_assert_lt(i, max_calls, "no lock after %d calls", max_calls);
        step(ctx, sel, f, NULL);
    }
    return cand;
}

Test(select, default_opts)
{
    gcn_select_opts o = gcn_select_default_opts();
    cr_assert_eq(o.warmup, 1);
    cr_assert_eq(o.samples, 5);
    cr_assert_float_eq(o.prune, 1.5, 1e-12);
    cr_assert_eq(o.rounds, 2);
}

static gcn_select_opts two_rounds(int warmup, int samples, double prune)
{
    gcn_select_opts o = opts_of(warmup, samples, prune);
    o.rounds = 2;
    return o;
}

/* Candidate 0 is timed first while the clocks are still low (its first
 * five runs take 2 ms, later ones 1 ms); candidate 1 takes 1.5 ms.  One
 * round locks 1; a second round, in reverse order, re-times 0 at 1 ms and
 * locks it, with its score the lower of its two medians. */
static fake_clock *rising_clock(void)
{
    const float base[] = {1.0f, 1.5f};
    fake_clock *f = fake_new(2, base, 0.0f);
    for (int k = 0; k < 5; k++)
        f->ms[0][k] = 2.0f;
    return f;
}

Test(select, one_round_is_misled_by_rising_clocks)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    fake_clock *f = rising_clock();
    gcn_selector *sel = make(ctx, f, opts_of(0, 5, NO_PRUNE));
    cr_assert_eq(run_until_locked(ctx, sel, f, 100), 1);
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, a_second_round_in_reverse_order_corrects_it)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    fake_clock *f = rising_clock();
    gcn_selector *sel = make(ctx, f, two_rounds(1, 5, NO_PRUNE));
    /* round 1: 0 then 1; round 2: 1 then 0, each a warm-up and 5 samples */
    const int order[] = {0, 1, 1, 0};
    for (int i = 0; i < 24; i++)
        cr_assert_eq(step(ctx, sel, f, NULL), order[i / 6], "call %d", i);
    cr_assert_eq(run_until_locked(ctx, sel, f, 10), 0);
    cr_assert_eq(gcn_selector_profiled_calls(sel), 24);
    cr_assert_float_eq(gcn_selector_median(sel, 0), 1.0, 1e-9);
    cr_assert_float_eq(gcn_selector_median(sel, 1), 1.5, 1e-9);
    cr_assert_float_eq(gcn_selector_min(sel, 0), 1.0, 1e-9);
    cr_assert_eq(f->outstanding, 0, "every sample polled and released");
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

/* The second round times only the candidates the first did not prune. */
Test(select, the_second_round_skips_pruned_candidates)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {1.0f, 5.0f, 1.1f};
    fake_clock *f = fake_new(3, base, 0.0f);
    gcn_selector *sel = make(ctx, f, two_rounds(0, 2, 1.5));
    cr_assert_eq(run_until_locked(ctx, sel, f, 100), 0);
    cr_assert_eq(gcn_selector_state(sel, 1), GCN_CAND_PRUNED);
    cr_assert_eq(f->runs[1], 1, "timed once, then pruned");
    cr_assert_eq(f->runs[0], 4);
    cr_assert_eq(f->runs[2], 4);
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, each_candidate_runs_in_one_block)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {3.0f, 1.0f, 2.0f};
    fake_clock *f = fake_new(3, base, 0.0f);
    gcn_selector *sel = make(ctx, f, opts_of(2, 2, NO_PRUNE));
    /* each candidate's two warm-ups then two timed runs, in candidate order */
    for (int i = 0; i < 12; i++) {
        bool timed;
        int cand = step(ctx, sel, f, &timed);
        cr_assert_eq(cand, i / 4, "call %d", i);
        cr_assert_eq(timed, i % 4 >= 2, "call %d", i);
    }
    int cand = step(ctx, sel, f, NULL);
    cr_assert_eq(cand, 1);
    cr_assert_eq(gcn_selector_profiled_calls(sel), 12);
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, locks_the_fastest_by_median)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {3.0f, 1.0f, 2.0f};
    fake_clock *f = fake_new(3, base, 0.05f);
    gcn_selector *sel = make(ctx, f, opts_of(1, 5, NO_PRUNE));
    cr_assert_not(gcn_selector_locked(sel, NULL));
    cr_assert_eq(run_until_locked(ctx, sel, f, 100), 1);
    /* 3 candidates x (1 warm-up + 5 timed), then the call that locks */
    cr_assert_eq(gcn_selector_profiled_calls(sel), 18);
    cr_assert_eq(gcn_selector_calls(sel), 19);
    cr_assert_eq(f->starts, 15);
    cr_assert_eq(f->outstanding, 0, "every sample polled and released");
    for (int c = 0; c < 3; c++) {
        cr_assert_eq(gcn_selector_samples(sel, c), 5);
        cr_assert_eq(gcn_selector_state(sel, c), GCN_CAND_ACTIVE);
        cr_assert(fabs(gcn_selector_median(sel, c) - base[c]) <= 0.05 * base[c] + 1e-6);
    }
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, locked_choice_is_final_and_untimed)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {2.0f, 3.0f, 1.0f};
    fake_clock *f = fake_new(3, base, 0.1f);
    gcn_selector *sel = make(ctx, f, gcn_select_default_opts());
    int locked = run_until_locked(ctx, sel, f, 100);
    cr_assert_eq(locked, 2);
    int starts = f->starts, polls = f->polls;
    int64_t profiled = gcn_selector_profiled_calls(sel), calls = gcn_selector_calls(sel);
    for (int i = 0; i < 1000; i++) {
        bool timed;
        cr_assert_eq(step(ctx, sel, f, &timed), locked);
        cr_assert_not(timed);
    }
    cr_assert_eq(f->starts, starts, "no timing after the lock");
    cr_assert_eq(f->polls, polls, "no polling after the lock");
    cr_assert_eq(gcn_selector_profiled_calls(sel), profiled);
    cr_assert_eq(gcn_selector_calls(sel), calls + 1000);
    cr_assert_eq(gcn_selector_start(ctx, sel, locked), GCN_ERR_STATE);
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, prunes_a_clearly_slower_candidate)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {1.0f, 3.0f, 1.1f};
    fake_clock *f = fake_new(3, base, 0.0f);
    gcn_selector *sel = make(ctx, f, gcn_select_default_opts());
    cr_assert_eq(run_until_locked(ctx, sel, f, 100), 0);
    cr_assert_eq(gcn_selector_state(sel, 1), GCN_CAND_PRUNED);
    cr_assert_eq(gcn_selector_samples(sel, 1), 1, "dropped after its first sample");
    cr_assert_eq(gcn_selector_state(sel, 2), GCN_CAND_ACTIVE);
    /* round 1: candidate 0 warm-up + 5 samples, candidate 1 warm-up + 1
     * sample, candidate 2 warm-up + 5 samples; round 2: 2 and 0 again;
     * against 36 without pruning */
    cr_assert_eq(gcn_selector_profiled_calls(sel), 26);
    cr_assert_eq(f->outstanding, 0);
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, pruning_to_one_candidate_locks_it)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {1.0f, 3.0f};
    fake_clock *f = fake_new(2, base, 0.0f);
    gcn_selector *sel = make(ctx, f, gcn_select_default_opts());
    cr_assert_eq(run_until_locked(ctx, sel, f, 100), 0);
    cr_assert_eq(gcn_selector_profiled_calls(sel), 8,
                 "the first candidate's warm-up and 5 samples, the second's warm-up and 1");
    cr_assert_eq(gcn_selector_samples(sel, 0), 5);
    cr_assert_eq(gcn_selector_state(sel, 1), GCN_CAND_PRUNED);
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, ties_go_to_the_lowest_index_and_are_not_pruned)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {2.0f, 2.0f, 2.0f};
    fake_clock *f = fake_new(3, base, 0.0f);
    gcn_selector *sel = make(ctx, f, opts_of(1, 3, 1.0));
    cr_assert_eq(run_until_locked(ctx, sel, f, 100), 0);
    for (int c = 0; c < 3; c++)
        cr_assert_eq(gcn_selector_state(sel, c), GCN_CAND_ACTIVE, "candidate %d", c);
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, the_best_is_never_pruned)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {2.0f, 2.0f, 2.0f, 2.0f};
    fake_clock *f = fake_new(4, base, 0.3f);
    gcn_selector *sel = make(ctx, f, opts_of(0, 5, 1.0));
    int locked = run_until_locked(ctx, sel, f, 100);
    cr_assert_eq(gcn_selector_state(sel, locked), GCN_CAND_ACTIVE);
    int pruned = 0;
    for (int c = 0; c < 4; c++) {
        pruned += gcn_selector_state(sel, c) == GCN_CAND_PRUNED;
        if (c != locked && gcn_selector_state(sel, c) == GCN_CAND_ACTIVE)
            cr_assert_geq(gcn_selector_median(sel, c), gcn_selector_median(sel, locked));
    }
    cr_assert_gt(pruned, 0, "prune 1.0 with 30%% noise drops some");
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, an_outlier_does_not_hide_the_fastest_median)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {1.0f, 1.2f};
    fake_clock *f = fake_new(2, base, 0.0f);
    f->ms[0][2] = 100.0f; /* mean of candidate 0: 20.8 ms */
    f->ms[1][0] = 0.5f;   /* minimum of candidate 1 below every sample of 0 */
    /* no pruning: a first sample of 0.5 would drop candidate 0 at 1.5x */
    gcn_selector *sel = make(ctx, f, opts_of(1, 5, NO_PRUNE));
    cr_assert_eq(run_until_locked(ctx, sel, f, 100), 0);
    cr_assert_float_eq(gcn_selector_median(sel, 0), 1.0, 1e-6);
    cr_assert_float_eq(gcn_selector_min(sel, 1), 0.5, 1e-6);
    cr_assert_float_eq(gcn_selector_median(sel, 1), 1.2, 1e-6);
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, median_of_an_even_count_and_without_samples)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {1.0f, 10.0f};
    fake_clock *f = fake_new(2, base, 0.0f);
    const float times[] = {4.0f, 1.0f, 3.0f, 2.0f};
    memcpy(f->ms[0], times, sizeof times);
    gcn_selector *sel = make(ctx, f, opts_of(0, 4, NO_PRUNE));
    cr_assert(isnan(gcn_selector_median(sel, 0)));
    cr_assert(isnan(gcn_selector_min(sel, 0)));
    cr_assert_eq(run_until_locked(ctx, sel, f, 100), 0);
    cr_assert_float_eq(gcn_selector_median(sel, 0), 2.5, 1e-6);
    cr_assert_float_eq(gcn_selector_min(sel, 0), 1.0, 1e-6);
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, pending_marks_never_stall_the_caller)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {2.0f, 1.0f, 3.0f};
    fake_clock *f = fake_new(3, base, 0.0f);
    f->delay = 1000000;
    gcn_selector *sel = make(ctx, f, opts_of(1, 5, NO_PRUNE));
    for (int i = 0; i < 18; i++)
        step(ctx, sel, f, NULL);
    cr_assert_eq(f->starts, 15, "every timed run handed out before any finished");
    for (int i = 0; i < 50; i++) {
        bool timed;
        step(ctx, sel, f, &timed);
        cr_assert_not(timed, "everything is pending: run untimed");
    }
    cr_assert_eq(f->starts, 15);
    cr_assert_not(gcn_selector_locked(sel, NULL));
    cr_assert_eq(gcn_selector_samples(sel, 1), 0);
    f->delay = 0; /* the stream catches up */
    cr_assert_eq(step(ctx, sel, f, NULL), 1);
    cr_assert(gcn_selector_locked(sel, NULL));
    for (int c = 0; c < 3; c++)
        cr_assert_eq(gcn_selector_samples(sel, c), 5);
    cr_assert_eq(f->outstanding, 0);
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, marks_finishing_later_are_counted)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {2.0f, 1.0f, 3.0f};
    fake_clock *f = fake_new(3, base, 0.1f);
    f->delay = 3;
    gcn_selector *sel = make(ctx, f, opts_of(1, 5, NO_PRUNE));
    cr_assert_eq(run_until_locked(ctx, sel, f, 1000), 1);
    cr_assert_gt(gcn_selector_profiled_calls(sel), 18, "some calls ran untimed while waiting");
    cr_assert_eq(f->starts, 15, "no more timed runs than samples");
    for (int c = 0; c < 3; c++)
        cr_assert_eq(gcn_selector_samples(sel, c), 5);
    gcn_selector_free(&sel);
    cr_assert_eq(f->outstanding, 0);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, a_failed_candidate_is_dropped_with_its_marks)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {1.0f, 2.0f, 3.0f};
    fake_clock *f = fake_new(3, base, 0.0f);
    f->delay = 5; /* the first timed run of 0 is still pending at its second */
    gcn_selector *sel = make(ctx, f, opts_of(1, 5, NO_PRUNE));
    int timed_runs_of_0 = 0;
    for (;;) {
        int cand;
        bool timed;
        cr_assert_eq(gcn_selector_next(ctx, sel, &cand, &timed), GCN_OK);
        if (timed) {
            f->cand = cand;
            cr_assert_eq(gcn_selector_start(ctx, sel, cand), GCN_OK);
            if (cand == 0 && ++timed_runs_of_0 == 2) {
                cr_assert_eq(live_marks_of(f, 0), 2, "one pending, one started");
                gcn_selector_fail(sel, 0);
                break;
            }
            cr_assert_eq(gcn_selector_stop(ctx, sel, cand, 1), GCN_OK);
        }
    }
    cr_assert_eq(gcn_selector_state(sel, 0), GCN_CAND_FAILED);
    cr_assert_eq(live_marks_of(f, 0), 0);
    for (int i = 0; i < 200 && !gcn_selector_locked(sel, NULL); i++)
        cr_assert_neq(step(ctx, sel, f, NULL), 0);
    int locked = -1;
    cr_assert(gcn_selector_locked(sel, &locked));
    cr_assert_eq(locked, 1);
    gcn_selector_free(&sel);
    cr_assert_eq(f->outstanding, 0);
    cr_assert_eq(f->released, f->starts);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, all_failed_is_unsupported)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {1.0f, 2.0f, 3.0f};
    fake_clock *f = fake_new(3, base, 0.0f);
    gcn_selector *sel = make(ctx, f, gcn_select_default_opts());
    for (int c = 0; c < 3; c++)
        gcn_selector_fail(sel, c);
    int cand;
    bool timed;
    cr_assert_eq(gcn_selector_next(ctx, sel, &cand, &timed), GCN_ERR_UNSUPPORTED);
    cr_assert(strstr(gcn_last_error(ctx), "failed"), "%s", gcn_last_error(ctx));
    cr_assert_not(gcn_selector_locked(sel, NULL));
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

/* A locked candidate that fails hands over to the next best, and pruned
 * candidates come back when nothing else is left. */
Test(select, failures_after_the_lock_fall_back)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {1.0f, 3.0f, 1.1f};
    fake_clock *f = fake_new(3, base, 0.0f);
    gcn_selector *sel = make(ctx, f, gcn_select_default_opts());
    cr_assert_eq(run_until_locked(ctx, sel, f, 100), 0);
    cr_assert_eq(gcn_selector_state(sel, 1), GCN_CAND_PRUNED);
    gcn_selector_fail(sel, 0);
    cr_assert_not(gcn_selector_locked(sel, NULL));
    cr_assert_eq(step(ctx, sel, f, NULL), 2);
    cr_assert(gcn_selector_locked(sel, NULL));
    gcn_selector_fail(sel, 2);
    cr_assert_eq(gcn_selector_state(sel, 1), GCN_CAND_ACTIVE, "revived");
    cr_assert_eq(step(ctx, sel, f, NULL), 1);
    gcn_selector_fail(sel, 1);
    int cand;
    bool timed;
    cr_assert_eq(gcn_selector_next(ctx, sel, &cand, &timed), GCN_ERR_UNSUPPORTED);
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, lock_from_a_plan_file)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {1.0f, 2.0f, 3.0f};
    fake_clock *f = fake_new(3, base, 0.0f);
    gcn_selector *sel = make(ctx, f, gcn_select_default_opts());
    cr_assert_eq(gcn_selector_lock(ctx, sel, 3), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_selector_lock(ctx, sel, -1), GCN_ERR_INVALID_ARG);
    gcn_selector_fail(sel, 1);
    cr_assert_eq(gcn_selector_lock(ctx, sel, 1), GCN_ERR_INVALID_ARG, "failed");
    cr_assert_not(gcn_selector_locked(sel, NULL));
    cr_assert_eq(gcn_selector_lock(ctx, sel, 2), GCN_OK);
    int cand = -1;
    cr_assert(gcn_selector_locked(sel, &cand));
    cr_assert_eq(cand, 2);
    for (int i = 0; i < 10; i++) {
        bool timed;
        cr_assert_eq(step(ctx, sel, f, &timed), 2);
        cr_assert_not(timed);
    }
    cr_assert_eq(gcn_selector_profiled_calls(sel), 0);
    cr_assert_eq(gcn_selector_calls(sel), 10);
    cr_assert_eq(f->starts, 0);
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

/* One candidate has nothing to be compared with: it is locked at once. */
Test(select, a_single_candidate_locks_without_timing)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {1.0f};
    fake_clock *f = fake_new(1, base, 0.0f);
    gcn_selector *sel = make(ctx, f, gcn_select_default_opts());
    bool timed;
    cr_assert_eq(step(ctx, sel, f, &timed), 0);
    cr_assert_not(timed);
    cr_assert(gcn_selector_locked(sel, NULL));
    cr_assert_eq(gcn_selector_profiled_calls(sel), 0);
    cr_assert_eq(f->starts, 0);
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

/* A bracket of several runs is a sample of its time over the runs: four
 * runs of candidate 0 in 4 ms beat one run of candidate 1 in 1.5 ms. */
Test(select, a_bracket_of_several_runs_counts_per_run)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {4.0f, 1.5f};
    fake_clock *f = fake_new(2, base, 0.0f);
    gcn_selector *sel = make(ctx, f, opts_of(0, 3, NO_PRUNE));
    int cand;
    bool timed;
    while (!gcn_selector_locked(sel, NULL)) {
        cr_assert_eq(gcn_selector_next(ctx, sel, &cand, &timed), GCN_OK);
        if (!timed)
            continue;
        f->cand = cand;
        cr_assert_eq(gcn_selector_start(ctx, sel, cand), GCN_OK);
        cr_assert_eq(gcn_selector_stop(ctx, sel, cand, cand == 0 ? 4 : 1), GCN_OK);
    }
    cr_assert(gcn_selector_locked(sel, &cand));
    cr_assert_eq(cand, 0);
    cr_assert_float_eq(gcn_selector_median(sel, 0), 1.0, 1e-9);
    cr_assert_float_eq(gcn_selector_median(sel, 1), 1.5, 1e-9);
    gcn_selector_free(&sel);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, misuse_of_start_and_stop)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {1.0f, 2.0f};
    fake_clock *f = fake_new(2, base, 0.0f);
    gcn_selector *sel = make(ctx, f, opts_of(0, 5, NO_PRUNE));
    cr_assert_eq(gcn_selector_stop(ctx, sel, 0, 1), GCN_ERR_STATE, "stop without start");
    cr_assert_eq(gcn_selector_start(ctx, sel, 0), GCN_OK);
    cr_assert_eq(gcn_selector_stop(ctx, sel, 0, 0), GCN_ERR_INVALID_ARG, "a bracket of no runs");
    cr_assert_eq(gcn_selector_start(ctx, sel, 0), GCN_ERR_STATE, "started twice");
    cr_assert_eq(gcn_selector_start(ctx, sel, 2), GCN_ERR_INVALID_ARG);
    gcn_selector_free(&sel);
    cr_assert_eq(f->outstanding, 0, "the started mark is released");
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, bad_options_and_arguments_are_rejected)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float base[] = {1.0f, 2.0f};
    fake_clock *f = fake_new(2, base, 0.0f);
    gcn_select_clock clock = {fake_start, fake_stop, fake_poll, fake_release, f};
    const gcn_select_opts bad[] = {
        opts_of(-1, 5, 1.5), opts_of(1, 0, 1.5), opts_of(1, GCN_SELECT_MAX_SAMPLES + 1, 1.5),
        opts_of(1, 5, 0.99), opts_of(1, 5, NAN),
        {.warmup = 1, .samples = 5, .prune = 1.5, .rounds = 0},
        {.warmup = 1, .samples = 5, .prune = 1.5, .rounds = 3},
    };
    gcn_selector *sel = (gcn_selector *)&clock; /* stale: cleared on failure */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(gcn_selector_create(ctx, &sel, 2, &bad[i], &clock), GCN_ERR_INVALID_ARG,
                     "options %zu", i);
        cr_assert_null(sel);
    }
    gcn_select_opts edge = opts_of(0, GCN_SELECT_MAX_SAMPLES, 1.0);
    cr_assert_eq(gcn_selector_create(ctx, &sel, 2, &edge, &clock), GCN_OK);
    gcn_selector_free(&sel);
    cr_assert_eq(gcn_selector_create(ctx, &sel, 0, NULL, &clock), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_selector_create(ctx, &sel, 2, NULL, NULL), GCN_ERR_INVALID_ARG);
    gcn_select_clock partial = clock;
    partial.poll = NULL;
    cr_assert_eq(gcn_selector_create(ctx, &sel, 2, NULL, &partial), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_selector_create(ctx, NULL, 2, NULL, &clock), GCN_ERR_INVALID_ARG);
    int cand;
    bool timed;
    cr_assert_eq(gcn_selector_next(ctx, NULL, &cand, &timed), GCN_ERR_INVALID_ARG);
    free(f);
    gcn_ctx_free(&ctx);
}

Test(select, free_and_accessors_accept_null)
{
    gcn_selector_free(NULL);
    gcn_selector *sel = NULL;
    gcn_selector_free(&sel);
    cr_assert_null(sel);
    gcn_selector_fail(NULL, 0);
    cr_assert_not(gcn_selector_locked(NULL, NULL));
    cr_assert_eq(gcn_selector_samples(NULL, 0), 0);
    cr_assert(isnan(gcn_selector_median(NULL, 0)));
    cr_assert_eq(gcn_selector_calls(NULL), 0);
}

Test(select, host_clock_times_a_run)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const gcn_select_clock *clock = gcn_select_host_clock();
    void *mark = NULL;
    cr_assert_eq(clock->start(ctx, clock->user, &mark), GCN_OK);
    cr_assert_not_null(mark);
    volatile double x = 0;
    for (int i = 0; i < 100000; i++)
        x += i;
    cr_assert_eq(clock->stop(ctx, clock->user, mark), GCN_OK);
    bool done = false;
    float ms = -1.0f;
    cr_assert_eq(clock->poll(ctx, clock->user, mark, &done, &ms), GCN_OK);
    cr_assert(done);
    cr_assert(ms >= 0.0f && ms < 10000.0f, "%g ms", ms);
    clock->release(clock->user, mark);
    gcn_ctx_free(&ctx);
}
