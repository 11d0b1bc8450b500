/* Shared test fixtures: contexts, seeded host data, tensor read-back, and a
 * finite-difference gradient checker against double-precision references. */
#ifndef GCN_TEST_HELPERS_H
#define GCN_TEST_HELPERS_H

#include <stdint.h>

#include "gcn.h"

/* A CPU context with the given seed; the test fails if it cannot be made. */
gcn_ctx *test_cpu_ctx(uint64_t seed);

/* n floats from a small xorshift generator, uniform in [lo, hi). */
void test_fill_uniform(uint64_t *state, float *x, int64_t n, float lo, float hi);

/* A tensor from host values (test fails on error). */
gcn_tensor *test_tensor(gcn_ctx *ctx, const float *host, int64_t rows, int64_t cols);
gcn_index *test_index(gcn_ctx *ctx, const int32_t *host, int64_t n);

/* A [rows, cols] tensor of uniform values in [-1, 1). */
gcn_tensor *test_random_tensor(gcn_ctx *ctx, uint64_t *state, int64_t rows, int64_t cols);

/* Copies a tensor to a new malloc'd host array (caller frees). */
float *test_read(gcn_ctx *ctx, const gcn_tensor *t);

/* Normwise relative error ||a - b||_2 / ||b||_2 (absolute when b is 0);
 * NaN anywhere gives infinity. */
double test_rel_err(const float *a, const double *b, int64_t n);

/* Gradient check.  `lib` builds a [1, 1] loss from the library inputs;
 * `ref` computes the same loss in double from host copies of the inputs.
 * The checker sets requires_grad on every input, runs backward, and compares
 * each gradient with central differences of `ref` (step 1e-6 in double).
 * Fails the test when any element's error exceeds tol relative to the
 * largest gradient magnitude of that input. */
typedef gcn_status (*test_lib_loss)(gcn_ctx *ctx, gcn_tensor **in, void *user, gcn_tensor **loss);
typedef double (*test_ref_loss)(double **in, void *user);

typedef struct test_input {
    int64_t rows, cols;
    float lo, hi; /* range of the random values */
} test_input;

void test_gradcheck(gcn_ctx *ctx, const test_input *inputs, int n_inputs, test_lib_loss lib,
                    test_ref_loss ref, void *user, double tol);

/* loss = r^T y w with fixed row weights r and column weights w, built from
 * recorded ops, and the same loss in double precision: reduce an op's
 * output to the scalar a gradient check differentiates. */
gcn_status test_weigh(gcn_ctx *ctx, gcn_tensor *y, gcn_tensor **loss);
double test_weigh_ref(const double *y, int64_t n, int64_t f);

#endif
