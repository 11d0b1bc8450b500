/* The profiler (core/prof.c) on the CPU: which events the category regions
 * record and how the intervals between them are summed, through a fake
 * clock; the CPU context refusing to profile; a failing clock. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/prof.h"
#include "helpers.h"
#include "sbm_train.h"

/* Event i is i + 1 ms after event i - 1, so every sum names its intervals. */
typedef struct fake {
    int records;
    int fail_at; /* record() fails for this event (-1: never) */
} fake;

static gcn_status fake_record(gcn_ctx *ctx, void *user, int i)
{
    fake *f = user;
    cr_assert_eq(i, f->records, "event %d recorded after %d", i, f->records);
    if (i == f->fail_at)
        return GCN_ERROR(ctx, GCN_ERR_CUDA, "fake clock fails at event %d", i);
    f->records++;
    return GCN_OK;
}

static gcn_status fake_read(gcn_ctx *ctx, void *user, int n, float *gap_ms, float *span_ms)
{
    (void)ctx;
    fake *f = user;
    cr_assert_eq(n, f->records);
    *span_ms = 0.0f;
    for (int i = 0; i + 1 < n; i++)
        *span_ms += gap_ms[i] = (float)(i + 1);
    return GCN_OK;
}

static gcn_prof_clock clock_of(fake *f)
{
    gcn_prof_clock c = {fake_record, fake_read, f};
    return c;
}

Test(prof, category_names)
{
    const char *want[] = {"gemm", "spmm", "elementwise", "optimizer", "other"};
    for (int c = 0; c < GCN_PROF_N_CATEGORIES; c++)
        cr_assert_str_eq(gcn_prof_category_name((gcn_prof_category)c), want[c]);
    cr_assert_str_eq(gcn_prof_category_name(GCN_PROF_N_CATEGORIES), "?");
}

/* A CPU context refuses to profile; regions then record nothing. */
Test(prof, cpu_context_refuses_and_regions_stay_off)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    cr_assert_eq(gcn_ctx_profile_begin(ctx), GCN_ERR_UNSUPPORTED);
    cr_assert(strstr(gcn_last_error(ctx), "CUDA"), "%s", gcn_last_error(ctx));
    gcn_prof_times t;
    cr_assert_eq(gcn_ctx_profile_end(ctx, &t), GCN_ERR_STATE);
    cr_assert_eq(gcn_prof_enter(ctx, GCN_PROF_SPMM), GCN_PROF_ELEMENTWISE);
    gcn_prof_leave(ctx, GCN_PROF_ELEMENTWISE);
    cr_assert_not(ctx->profiling);
    cr_assert_null(ctx->prof, "state allocated without a profile");
    gcn_ctx_free(&ctx);
}

/* Events at each change of category only: the outer region names nested
 * work, and a region of the current category records nothing. */
Test(prof, intervals_go_to_the_outermost_region)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    fake f = {.fail_at = -1};
    gcn_prof_clock c = clock_of(&f);
    cr_assert_eq(gcn_prof_begin(ctx, &c), GCN_OK);             /* event 0: elementwise */
    cr_assert_eq(gcn_prof_begin(ctx, &c), GCN_ERR_STATE);
    gcn_prof_leave(ctx, gcn_prof_enter(ctx, GCN_PROF_ELEMENTWISE)); /* nothing */
    gcn_prof_category outer = gcn_prof_enter(ctx, GCN_PROF_SPMM); /* event 1 */
    cr_assert_eq(outer, GCN_PROF_ELEMENTWISE);
    gcn_prof_category inner = gcn_prof_enter(ctx, GCN_PROF_OTHER); /* nested: nothing */
    cr_assert_eq(inner, GCN_PROF_SPMM);
    gcn_prof_leave(ctx, gcn_prof_enter(ctx, GCN_PROF_GEMM));
    gcn_prof_leave(ctx, inner);
    gcn_prof_leave(ctx, outer);                                    /* event 2: elementwise */
    gcn_prof_leave(ctx, gcn_prof_enter(ctx, GCN_PROF_OPTIMIZER)); /* events 3, 4 */
    gcn_prof_times t;
    cr_assert_eq(gcn_ctx_profile_end(ctx, &t), GCN_OK, "%s", gcn_last_error(ctx)); /* event 5 */
    cr_assert_eq(t.events, 6);
    cr_assert_eq(t.ms[GCN_PROF_ELEMENTWISE], 1 + 3 + 5);
    cr_assert_eq(t.ms[GCN_PROF_SPMM], 2);
    cr_assert_eq(t.ms[GCN_PROF_OPTIMIZER], 4);
    cr_assert_eq(t.ms[GCN_PROF_GEMM] + t.ms[GCN_PROF_OTHER], 0);
    cr_assert_eq(t.span_ms, 15);
    cr_assert_not(ctx->profiling);
    /* the next profile starts over */
    f.records = 0;
    cr_assert_eq(gcn_prof_begin(ctx, &c), GCN_OK);
    cr_assert_eq(gcn_ctx_profile_end(ctx, &t), GCN_OK);
    cr_assert_eq(t.events, 2);
    cr_assert_eq(t.ms[GCN_PROF_ELEMENTWISE], 1);
    gcn_ctx_free(&ctx);
}

/* A clock that fails stops the recording, not the work; the end reports it. */
Test(prof, a_failing_clock_is_reported_at_the_end)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    fake f = {.fail_at = 2};
    gcn_prof_clock c = clock_of(&f);
    cr_assert_eq(gcn_prof_begin(ctx, &c), GCN_OK);
    gcn_prof_leave(ctx, gcn_prof_enter(ctx, GCN_PROF_SPMM)); /* event 2 fails */
    gcn_prof_leave(ctx, gcn_prof_enter(ctx, GCN_PROF_GEMM)); /* not recorded */
    cr_assert_eq(f.records, 2);
    gcn_prof_times t;
    cr_assert_eq(gcn_ctx_profile_end(ctx, &t), GCN_ERR_CUDA);
    cr_assert(strstr(gcn_last_error(ctx), "fake clock fails at event 2"), "%s",
              gcn_last_error(ctx));
    cr_assert_eq(t.events, 0);
    cr_assert_not(ctx->profiling);
    gcn_ctx_free(&ctx);
}

/* A training epoch on the CPU backend: the SpMM op and the optimiser mark
 * their work (matmuls and transfers are marked by the CUDA backend only), and
 * the categories sum to the span. */
Test(prof, a_training_epoch_marks_spmm_and_optimizer, .timeout = 60)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_dataset *ds = NULL;
    gcn_trainer *tr = sbm_trainer(ctx, 400, 64,
                                  "{\"layers\": [{\"type\": \"gcn\", \"out\": 16,"
                                  " \"activation\": \"relu\"}, {\"type\": \"gcn\","
                                  " \"out\": \"classes\"}]}",
                                  &ds);
    fake f = {.fail_at = -1};
    gcn_prof_clock c = clock_of(&f);
    for (int e = 0; e < 2; e++) {
        f.records = 0;
        gcn_epoch_stats es;
        gcn_prof_times t;
        cr_assert_eq(gcn_prof_begin(ctx, &c), GCN_OK);
        cr_assert_eq(gcn_trainer_epoch(ctx, tr, &es), GCN_OK, "%s", gcn_last_error(ctx));
        cr_assert_eq(gcn_ctx_profile_end(ctx, &t), GCN_OK, "%s", gcn_last_error(ctx));
        cr_assert_gt(t.ms[GCN_PROF_SPMM], 0);
        cr_assert_gt(t.ms[GCN_PROF_OPTIMIZER], 0);
        cr_assert_eq(t.ms[GCN_PROF_GEMM] + t.ms[GCN_PROF_OTHER], 0);
        double sum = 0;
        for (int k = 0; k < GCN_PROF_N_CATEGORIES; k++)
            sum += t.ms[k];
        cr_assert_eq(sum, t.span_ms);
        /* the second layer aggregates forward and backward in training and
         * forward in evaluation (the first reuses its cached product), the
         * optimiser steps once: four regions of two events, and the first
         * and last */
        cr_assert_geq(t.events, 2 * 4 + 2, "%d events", t.events);
    }
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}
