/* The adaptive selector's decisions (kernels/select/select.c) against a fake clock
 * (fake_clock.h): the order candidates run in, locking by median, pruning,
 * the second round.  CPU only. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fake_clock.h"
#include "helpers.h"

Test(select, default_opts)
{
    gcn_select_opts o = gcn_select_default_opts();
    cr_assert_eq(o.warmup, 1);
    cr_assert_eq(o.samples, 5);
    cr_assert_float_eq(o.prune, 1.5, 1e-12);
    cr_assert_eq(o.rounds, 2);
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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
}
