/* Fixtures shared by the GPU tests: the skip check, a CPU and a CUDA context
 * side by side, device buffers through the CUDA backend, and comparisons of
 * GPU results with the CPU reference.  Nothing here touches CUDA unless a
 * test body calls it (Criterion forks per test; CUDA must start in the
 * child). */
#ifndef GCN_TEST_GPU_HELPERS_H
#define GCN_TEST_GPU_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"
#include "gcn.h"

/* First statement of every GPU test. */
#define GPU_REQUIRED()                          \
    do {                                        \
        if (gcn_cuda_device_count() <= 0)       \
            cr_skip_test("no CUDA device");     \
    } while (0)

/* A CPU and a CUDA context created with the same seed. */
typedef struct gpu_pair {
    gcn_ctx *cpu, *gpu;
} gpu_pair;

gpu_pair gpu_pair_open(uint64_t seed, bool tf32);
void gpu_pair_close(gpu_pair *p);

/* Device memory on a CUDA context (test fails on error); `bytes` may be 0. */
void *gpu_alloc(gcn_ctx *gpu, size_t bytes);
void *gpu_upload(gcn_ctx *gpu, const void *host, size_t bytes);
void gpu_download(gcn_ctx *gpu, void *host, const void *dev, size_t bytes);
void gpu_release(gcn_ctx *gpu, void *dev, size_t bytes);

/* Host arrays: malloc of n elements (at least one), failing the test on NULL. */
float *host_floats(int64_t n);
float *host_random(uint64_t *state, int64_t n, float lo, float hi);
float *host_copy(const float *src, int64_t n);

/* One array on both backends: h for the CPU backend, d on the GPU, both
 * starting from the same values. */
typedef struct dual {
    float *h, *d;
    int64_t n;
} dual;

dual dual_new(gcn_ctx *gpu, const float *init, int64_t n);
/* n uniform values in [lo, hi) from the xorshift state, on both sides. */
dual dual_random(gcn_ctx *gpu, uint64_t *state, int64_t n, float lo, float hi);
/* Downloads d and compares it with h (expect_close; tol 0 means bit for bit). */
void dual_check(gcn_ctx *gpu, const dual *x, double tol, const char *what);
void dual_free(gcn_ctx *gpu, dual *x);

/* Fails unless max_i |got - want| <= tol * max_i |want| (the infinity-norm
 * relative error); NaN must meet NaN. */
void expect_close(const float *got, const float *want, int64_t n, double tol, const char *what);

/* Fails unless every element is the same float (NaN meets NaN). */
void expect_same(const float *got, const float *want, int64_t n, const char *what);

#endif
