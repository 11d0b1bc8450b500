/* The node order chosen by measurement: a run trains on the order as
 * loaded while a reordering is computed, then on the reordering for as
 * many steady epochs, and keeps whichever trains a whole epoch faster by
 * more than the noise measured in both (order_trial.c). */
#ifndef GCN_ORDER_TRIAL_H
#define GCN_ORDER_TRIAL_H

#include <stdbool.h>

#include "../core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GCN_ORDER_MAX_SAMPLES 64

/* What the caller does after an epoch. */
typedef enum gcn_order_action {
    GCN_ORDER_CONTINUE = 0, /* train on as now */
    GCN_ORDER_TRY,          /* switch to the reordering, to time it */
    GCN_ORDER_KEEP,         /* decided: stay on the reordering */
    GCN_ORDER_BACK          /* decided: switch back to the order as loaded */
} gcn_order_action;

typedef enum gcn_order_phase {
    GCN_ORDER_TIMING_LOADED = 0, /* timing the order as loaded (and waiting for the other) */
    GCN_ORDER_TIMING_REORDERED,  /* timing the reordering */
    GCN_ORDER_DECIDED
} gcn_order_phase;

typedef struct gcn_order_trial {
    int samples;         /* steady epochs timed on each order */
    int warm;            /* steady epochs skipped after each start (a capture, caches) */
    gcn_order_phase phase;
    int run_in;          /* consecutive steady epochs of the current phase so far */
    int n[2];            /* samples held: [0] the order as loaded, [1] the reordering */
    double ms[2][GCN_ORDER_MAX_SAMPLES]; /* [0]: the latest, a ring */
    /* the decision, once phase is GCN_ORDER_DECIDED */
    bool reorder;        /* the reordering trains faster */
    double median_ms[2]; /* the median epoch of each order */
    double noise_ms;     /* the larger interquartile range of the two */
} gcn_order_trial;

/* samples in [3, GCN_ORDER_MAX_SAMPLES] steady epochs timed on each order,
 * after skipping warm in [0, 100] steady epochs. */
GCN_API gcn_status gcn_order_trial_init(gcn_order_trial *t, int samples, int warm);

/* One epoch of the order in use: its time (ms); steady when it ran as the
 * kernels' steady state (replayed as a CUDA graph, or every SpMM call site
 * locked), anything else breaks the run of steady epochs; ready when the
 * reordering is there to switch to; epochs_left the epochs still to run.
 * While timing the order as loaded: TRY once `samples` steady epochs are
 * held, the reordering is ready and epochs_left leaves room to time it
 * (3 samples + warm + 10 epochs for its profiling).  While timing the
 * reordering: once it has `samples`, KEEP when its median is below the
 * loaded order's by more than noise_ms, else BACK. */
GCN_API gcn_order_action gcn_order_trial_epoch(gcn_order_trial *t, double ms, bool steady,
                                               bool ready, int epochs_left);

/* Decides from the samples held (both orders need 3 or more): fills
 * reorder, median_ms and noise_ms and sets phase to GCN_ORDER_DECIDED. */
GCN_API gcn_status gcn_order_trial_decide(gcn_order_trial *t);

#ifdef __cplusplus
}
#endif
#endif
