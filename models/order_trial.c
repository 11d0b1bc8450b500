/* The node-order decision (order_trial.h): steady epochs of each order
 * timed in turn, medians compared against the spread measured in both. */
#include <stdlib.h>
#include <string.h>

#include "order_trial.h"

/* Epochs of the reordering's first steps the selector may spend profiling
 * its new matrices before they are steady. */
enum { PROFILING_EPOCHS = 10 };

gcn_status gcn_order_trial_init(gcn_order_trial *t, int samples, int warm)
{
    if (!t || samples < 3 || samples > GCN_ORDER_MAX_SAMPLES || warm < 0 || warm > 100)
        return GCN_ERR_INVALID_ARG;
    memset(t, 0, sizeof *t);
    t->samples = samples;
    t->warm = warm;
    return GCN_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The value at fraction q of sorted v[n], interpolated linearly. */
static double quantile(const double *v, int n, double q)
{
    double at = q * (n - 1);
    int lo = (int)at;
    return lo + 1 < n ? v[lo] + (at - lo) * (v[lo + 1] - v[lo]) : v[lo];
}

gcn_status gcn_order_trial_decide(gcn_order_trial *t)
{
    if (!t || t->n[0] < 3 || t->n[1] < 3)
        return GCN_ERR_STATE;
    double iqr[2];
    for (int k = 0; k < 2; k++) {
        double v[GCN_ORDER_MAX_SAMPLES];
        memcpy(v, t->ms[k], (size_t)t->n[k] * sizeof *v);
        qsort(v, (size_t)t->n[k], sizeof *v, cmp_double);
        t->median_ms[k] = quantile(v, t->n[k], 0.5);
        iqr[k] = quantile(v, t->n[k], 0.75) - quantile(v, t->n[k], 0.25);
    }
    t->noise_ms = iqr[0] > iqr[1] ? iqr[0] : iqr[1];
    t->reorder = t->median_ms[1] < t->median_ms[0] - t->noise_ms;
    t->phase = GCN_ORDER_DECIDED;
    return GCN_OK;
}

/* Adds a sample of order k, the oldest making room once `samples` are held. */
static void add(gcn_order_trial *t, int k, double ms)
{
    if (t->n[k] == t->samples)
        memmove(t->ms[k], t->ms[k] + 1, (size_t)(t->samples - 1) * sizeof *t->ms[k]);
    else
        t->n[k]++;
    t->ms[k][t->n[k] - 1] = ms;
}

gcn_order_action gcn_order_trial_epoch(gcn_order_trial *t, double ms, bool steady, bool ready,
                                       int epochs_left)
{
    if (!t || t->phase == GCN_ORDER_DECIDED)
        return GCN_ORDER_CONTINUE;
    int k = t->phase == GCN_ORDER_TIMING_REORDERED;
    t->run_in = steady ? t->run_in + 1 : 0;
    if (steady && t->run_in > t->warm)
        add(t, k, ms);
    if (k == 0) {
        if (t->n[0] < t->samples || !ready ||
            epochs_left < t->samples + t->warm + PROFILING_EPOCHS)
            return GCN_ORDER_CONTINUE;
        t->phase = GCN_ORDER_TIMING_REORDERED;
        t->run_in = 0;
        return GCN_ORDER_TRY;
    }
    if (t->n[1] < t->samples && epochs_left > 0)
        return GCN_ORDER_CONTINUE;
    if (t->n[1] < 3) { /* the run ends before the reordering steadied: the order as loaded */
        t->phase = GCN_ORDER_DECIDED;
        t->reorder = false;
        return GCN_ORDER_BACK;
    }
    gcn_order_trial_decide(t);
    return t->reorder ? GCN_ORDER_KEEP : GCN_ORDER_BACK;
}
