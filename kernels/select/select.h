/* The adaptive kernel selector's decision logic, independent of what the
 * candidates are and of how they are timed: a candidate's runs are timed
 * through an injectable clock (CUDA events on the GPU, a fake clock in the
 * tests), and after enough samples the fastest by median is locked in and
 * never timed again.  Internal: kernels/spmm/spmm.c drives one selector per SpMM
 * call site. */
#ifndef GCN_SELECT_H
#define GCN_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Times runs queued on a context's stream without stalling it: start() is
 * called just before a run is queued, stop() just after, and poll() later
 * tells whether the run has finished and how long it took on the device.
 * A mark is released exactly once, by release(). */
typedef struct gcn_select_clock {
    gcn_status (*start)(gcn_ctx *ctx, void *user, void **mark);
    gcn_status (*stop)(gcn_ctx *ctx, void *user, void *mark);
    /* Never blocks; *done false leaves *ms untouched. */
    gcn_status (*poll)(gcn_ctx *ctx, void *user, void *mark, bool *done, float *ms);
    void (*release)(void *user, void *mark);
    void *user;
} gcn_select_clock;

typedef struct gcn_select_opts {
    int warmup;   /* untimed runs of each candidate first (plans, caches): 1 */
    int samples;  /* timed samples of each candidate in a round: 5 */
    /* A candidate whose fastest sample is slower than `prune` times the
     * best score so far is dropped: 1.5 */
    double prune;
    /* Rounds over the candidates still active, the second in reverse order
     * (1 or 2: 2).  A candidate's score is its lowest median over the
     * rounds, so one timed while the GPU's clocks were still rising (after
     * host work that left it idle) is not judged by that round alone. */
    int rounds;
} gcn_select_opts;

/* The largest `samples` a selector accepts. */
#define GCN_SELECT_MAX_SAMPLES 64

gcn_select_opts gcn_select_default_opts(void);

/* Clocks for real runs, static and never freed.  The host clock reads
 * CLOCK_MONOTONIC at start and stop (CPU kernels run synchronously), so its
 * marks are done at once.  The CUDA clock (clock_cuda.cu) records a pair of
 * events on the context's stream; its marks are done when the stop event
 * has completed. */
const gcn_select_clock *gcn_select_host_clock(void);
const gcn_select_clock *gcn_select_cuda_clock(void);

typedef enum gcn_select_state {
    GCN_CAND_ACTIVE = 0, /* still being profiled, or the locked one */
    GCN_CAND_PRUNED,     /* dropped as clearly slower */
    GCN_CAND_FAILED      /* its plan or run failed: never picked again */
} gcn_select_state;

typedef struct gcn_selector gcn_selector;

/* A selector over n_candidates >= 1 candidates, numbered 0..n-1, timed with
 * `clock` (copied).  opts NULL: the defaults.  Free with gcn_selector_free. */
gcn_status gcn_selector_create(gcn_ctx *ctx, gcn_selector **out, int n_candidates,
                               const gcn_select_opts *opts, const gcn_select_clock *clock);

/* Releases every mark still pending.  Accepts NULL and sets *sel to NULL. */
void gcn_selector_free(gcn_selector **sel);

/* The candidate to run for this call: the locked one, or the one being
 * profiled (each candidate's warm-up and timed runs come one after another,
 * then the next candidate's).
 * Polls finished marks first, and locks when every active candidate has
 * `samples` samples.  *timed says whether the caller must bracket the run
 * with gcn_selector_start / gcn_selector_stop.  GCN_ERR_UNSUPPORTED when
 * every candidate has failed. */
gcn_status gcn_selector_next(gcn_ctx *ctx, gcn_selector *sel, int *cand, bool *timed);

/* Bracket one timed sample of cand (the one gcn_selector_next returned):
 * `runs` >= 1 back-to-back runs of it, the sample being the bracket's time
 * over runs (several runs hide the launch gap of a run of a few
 * microseconds, which a bracket around one launch would time too). */
gcn_status gcn_selector_start(gcn_ctx *ctx, gcn_selector *sel, int cand);
gcn_status gcn_selector_stop(gcn_ctx *ctx, gcn_selector *sel, int cand, int runs);

/* The candidate could not run (after gcn_selector_next, possibly after
 * gcn_selector_start, whose mark is then discarded): it is never picked
 * again. */
void gcn_selector_fail(gcn_selector *sel, int cand);

/* Locks a candidate without profiling (a choice read from a choices file). */
gcn_status gcn_selector_lock(gcn_ctx *ctx, gcn_selector *sel, int cand);

/* Whether the selector has locked; *cand receives the choice (may be NULL). */
bool gcn_selector_locked(const gcn_selector *sel, int *cand);

/* Per candidate: state; number of timed samples in the current round;
 * score (the lowest median of its rounds) and fastest sample in ms (NAN
 * without samples). */
gcn_select_state gcn_selector_state(const gcn_selector *sel, int cand);
int gcn_selector_samples(const gcn_selector *sel, int cand);
double gcn_selector_median(const gcn_selector *sel, int cand);
double gcn_selector_min(const gcn_selector *sel, int cand);

/* Calls gcn_selector_next has answered (profiling runs and locked runs). */
int64_t gcn_selector_calls(const gcn_selector *sel);
/* Calls answered before the lock (0 when locked from a choices file). */
int64_t gcn_selector_profiled_calls(const gcn_selector *sel);

#ifdef __cplusplus
}
#endif
#endif
