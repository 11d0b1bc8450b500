/* Thread-test fixtures (threads_check.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "threads_check.h"

const int thread_counts[N_COUNTS] = {1, 2, 3, 8};

gcn_ctx *threads_ctx(int threads, uint64_t seed)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CPU;
    o.seed = seed;
    o.threads = threads;
    gcn_ctx *ctx = NULL;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    cr_assert_eq(gcn_ctx_threads(ctx), threads);
    return ctx;
}

void expect_near(const float *got, const double *want, const double *scale, int64_t n,
                 double tol, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        double bound = tol * (scale ? scale[i] : 1.0 + fabs(want[i]));
        cr_assert(fabs(got[i] - want[i]) <= bound, "%s: element %lld is %.9g, expected %.9g",
                  what, (long long)i, (double)got[i], want[i]);
    }
}

void expect_same_bits(const void *a, const void *b, size_t bytes, const char *what, int count_a,
                      int count_b)
{
    cr_assert(memcmp(a, b, bytes) == 0, "%s: %d and %d threads give different bits", what,
              count_a, count_b);
}

float *random_floats(int64_t n, float lo, float hi, uint64_t seed)
{
    float *x = malloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    cr_assert_not_null(x);
    test_fill_uniform(&seed, x, n, lo, hi);
    return x;
}

float *copy_floats(const float *x, int64_t n)
{
    float *y = malloc((size_t)(n > 0 ? n : 1) * sizeof *y);
    cr_assert_not_null(y);
    memcpy(y, x, (size_t)n * sizeof *y);
    return y;
}
