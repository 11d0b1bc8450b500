/* The adaptive selector (kernels/select/select.c) over a run's life: samples still
 * in flight, failed candidates, locks from choices files, brackets of several
 * runs, misuse and bad options; and the host wall clock.  CPU only. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fake_clock.h"
#include "helpers.h"

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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
}

Test(select, lock_from_a_choices_file)
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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
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
    fake_done(&ctx, &sel, f);
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
    gcn_select_clock clock = fake_clock_of(f);
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
