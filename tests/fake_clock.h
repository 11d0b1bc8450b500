/* A fake clock for the selector's tests (test_select.c,
 * test_select_lifecycle.c): per-candidate durations with deterministic
 * noise, marks that finish after a set number of polls; and the steps the
 * SpMM op takes through a selector. */
#ifndef GCN_TEST_FAKE_CLOCK_H
#define GCN_TEST_FAKE_CLOCK_H

#include <stdbool.h>

#include "kernels/select/select.h"

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

/* n candidates of the given base times, each sample within +-noise of its
 * base (relative, seeded).  Freed with free(). */
fake_clock *fake_new(int n, const float *base, float noise);
/* Marks of cand not yet released. */
int live_marks_of(const fake_clock *f, int cand);
/* The selector clock that f answers for. */
gcn_select_clock fake_clock_of(fake_clock *f);

/* Options of one round (two_rounds: of two). */
gcn_select_opts opts_of(int warmup, int samples, double prune);
gcn_select_opts two_rounds(int warmup, int samples, double prune);
/* A selector over f's candidates timed by f (the test fails on error). */
gcn_selector *make(gcn_ctx *ctx, fake_clock *f, gcn_select_opts o);

/* One call as the SpMM op makes it: next, then the run, bracketed when
 * timed.  Returns the candidate; *timed (may be NULL) says how it ran. */
int step(gcn_ctx *ctx, gcn_selector *sel, fake_clock *f, bool *timed);
/* Frees a test's selector, clock and context. */
void fake_done(gcn_ctx **ctx, gcn_selector **sel, fake_clock *f);
/* Steps until the selector locks; returns the locked candidate. */
int run_until_locked(gcn_ctx *ctx, gcn_selector *sel, fake_clock *f, int max_calls);

#endif
