/* Shared by the thread tests (test_threads.c, test_threads_ops.c): CPU
 * contexts of a given thread count, the counts every threaded op is run at,
 * and comparisons with double-precision references and across counts. */
#ifndef GCN_TESTS_THREADS_CHECK_H
#define GCN_TESTS_THREADS_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "gcn.h"

/* The thread counts compared: one, the two of CI's machines, one that
 * does not divide the work evenly, and more threads than CPUs. */
#define N_COUNTS 4
extern const int thread_counts[N_COUNTS];

/* A CPU context running `threads` threads, seeded with seed. */
gcn_ctx *threads_ctx(int threads, uint64_t seed);

/* Fails unless |got[i] - want[i]| <= tol * scale[i] for every i (scale
 * NULL: tol * (1 + |want[i]|)), naming `what` and the element. */
void expect_near(const float *got, const double *want, const double *scale, int64_t n,
                 double tol, const char *what);

/* Fails unless a and b hold the same bits, naming `what` and the counts. */
void expect_same_bits(const void *a, const void *b, size_t bytes, const char *what, int count_a,
                      int count_b);

/* n floats of a new array, uniform in [lo, hi) from seed (caller frees). */
float *random_floats(int64_t n, float lo, float hi, uint64_t seed);

/* A copy of n floats (caller frees). */
float *copy_floats(const float *x, int64_t n);

#endif
