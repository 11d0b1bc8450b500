/* The node-order decision (models/order_trial.c) on injected epoch times:
 * a clearly faster reordering is kept, a slower one or one inside the
 * measured noise is not, and only steady epochs are timed. */
#include <criterion/criterion.h>

#include "gcn.h"

/* Epoch times base * (1 +- spread), deterministic (a linear congruential
 * sequence seeded by the caller). */
static double noisy(uint64_t *state, double base, double spread)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(*state >> 11) / (double)(1ull << 53);
    return base * (1.0 + spread * (2.0 * u - 1.0));
}

/* Runs a trial whose loaded order takes `loaded` ms an epoch and its
 * reordering `reordered` ms, each within +-spread; returns the decision's
 * action and leaves the trial in *t. */
static gcn_order_action run_trial(gcn_order_trial *t, double loaded, double reordered,
                                  double spread)
{
    uint64_t state = 42;
    cr_assert_eq(gcn_order_trial_init(t, 20, 2), GCN_OK);
    int epoch = 0, epochs = 500;
    bool reordered_now = false;
    for (; epoch < epochs; epoch++) {
        bool steady = epoch >= 5; /* five profiling epochs first */
        double ms = noisy(&state, reordered_now ? reordered : loaded, spread);
        gcn_order_action a = gcn_order_trial_epoch(t, ms, steady, epoch >= 40, epochs - epoch - 1);
        if (a == GCN_ORDER_TRY) {
            cr_assert_eq(epoch, 40, "tried as soon as the reordering was ready");
            reordered_now = true;
        } else if (a != GCN_ORDER_CONTINUE) {
            return a;
        }
    }
    cr_assert_fail("no decision in %d epochs", epochs);
    return GCN_ORDER_CONTINUE;
}

Test(order_trial, a_faster_reordering_is_kept)
{
    gcn_order_trial t;
    cr_assert_eq(run_trial(&t, 10.0, 9.0, 0.01), GCN_ORDER_KEEP);
    cr_assert_eq(t.phase, GCN_ORDER_DECIDED);
    cr_assert(t.reorder);
    cr_assert_eq(t.n[0], 20);
    cr_assert_eq(t.n[1], 20);
    cr_assert_float_eq(t.median_ms[0], 10.0, 0.1);
    cr_assert_float_eq(t.median_ms[1], 9.0, 0.09);
    cr_assert(t.noise_ms > 0.0 && t.noise_ms < 0.2, "noise %g", t.noise_ms);
}

Test(order_trial, a_slower_reordering_is_left)
{
    gcn_order_trial t;
    cr_assert_eq(run_trial(&t, 10.0, 10.5, 0.01), GCN_ORDER_BACK);
    cr_assert_not(t.reorder);
}

Test(order_trial, a_gain_inside_the_noise_is_left)
{
    /* 0.5 % faster with epochs spread +-5 %: the interquartile range is
     * about 0.5 ms, ten times the gain */
    gcn_order_trial t;
    cr_assert_eq(run_trial(&t, 10.0, 9.95, 0.05), GCN_ORDER_BACK);
    cr_assert(t.noise_ms > 0.2, "noise %g", t.noise_ms);
    /* and without noise the same gain is kept */
    cr_assert_eq(run_trial(&t, 10.0, 9.95, 0.0), GCN_ORDER_KEEP);
    cr_assert_float_eq(t.noise_ms, 0.0, 1e-12);
}

Test(order_trial, noise_band_from_the_quartiles)
{
    gcn_order_trial t;
    cr_assert_eq(gcn_order_trial_init(&t, 4, 0), GCN_OK);
    const double a[] = {10.0, 11.0, 12.0, 13.0}, b[] = {9.0, 9.5, 10.0, 10.5};
    for (int i = 0; i < 4; i++)
        t.ms[0][t.n[0]++] = a[i];
    for (int i = 0; i < 4; i++)
        t.ms[1][t.n[1]++] = b[i];
    cr_assert_eq(gcn_order_trial_decide(&t), GCN_OK);
    /* medians 11.5 and 9.75; quartiles 10.75..12.25 and 9.375..10.125 */
    cr_assert_float_eq(t.median_ms[0], 11.5, 1e-12);
    cr_assert_float_eq(t.median_ms[1], 9.75, 1e-12);
    cr_assert_float_eq(t.noise_ms, 1.5, 1e-12);
    cr_assert(t.reorder, "11.5 - 9.75 > 1.5");
    t.ms[1][3] = 11.5; /* b: 9, 9.5, 10, 11.5: median 9.75, quartiles 9.375..10.375 */
    t.ms[0][0] = 11.2; /* a: 11.2, 11, 12, 13 -> sorted 11, 11.2, 12, 13: median 11.6 */
    cr_assert_eq(gcn_order_trial_decide(&t), GCN_OK);
    cr_assert_float_eq(t.noise_ms, 12.25 - 11.15, 1e-9);
    cr_assert(t.reorder, "11.6 - 9.75 = 1.85 > 1.1");
    t.ms[1][0] = t.ms[1][1] = 10.6; /* b: 10, 10.6, 10.6, 11.5: median 10.6 */
    cr_assert_eq(gcn_order_trial_decide(&t), GCN_OK);
    cr_assert_not(t.reorder, "11.6 - 10.6 = 1.0 is inside the band");
}

Test(order_trial, only_steady_epochs_count_and_short_runs_stay)
{
    gcn_order_trial t;
    cr_assert_eq(gcn_order_trial_init(&t, 5, 2), GCN_OK);
    for (int e = 0; e < 20; e++) /* never steady: nothing timed, never tried */
        cr_assert_eq(gcn_order_trial_epoch(&t, 5.0, false, true, 100), GCN_ORDER_CONTINUE);
    cr_assert_eq(t.n[0], 0);
    for (int e = 0; e < 7; e++) /* 2 warm, then 5 timed: but too few epochs are left */
        cr_assert_eq(gcn_order_trial_epoch(&t, 5.0, true, true, 5), GCN_ORDER_CONTINUE);
    cr_assert_eq(t.n[0], 5);
    cr_assert_eq(gcn_order_trial_epoch(&t, 5.0, true, false, 100), GCN_ORDER_CONTINUE,
                 "not ready yet");
    cr_assert_eq(gcn_order_trial_epoch(&t, 5.0, true, true, 100), GCN_ORDER_TRY);
    /* the run ends after two steady epochs of the reordering: back */
    cr_assert_eq(gcn_order_trial_epoch(&t, 1.0, true, true, 2), GCN_ORDER_CONTINUE);
    cr_assert_eq(gcn_order_trial_epoch(&t, 1.0, true, true, 1), GCN_ORDER_CONTINUE);
    cr_assert_eq(gcn_order_trial_epoch(&t, 1.0, true, true, 0), GCN_ORDER_BACK);
    cr_assert_eq(t.n[1], 1, "two warm epochs skipped");
    cr_assert_eq(gcn_order_trial_epoch(&t, 1.0, true, true, 0), GCN_ORDER_CONTINUE,
                 "decided once");
    cr_assert_eq(gcn_order_trial_init(&t, 2, 0), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_order_trial_init(&t, GCN_ORDER_MAX_SAMPLES + 1, 0), GCN_ERR_INVALID_ARG);
}
