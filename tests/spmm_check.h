/* Checking CUDA SpMM kernels against a float64 CPU reference, shared by
 * the kernel tests (test_gpu_spmm_kernels.c, test_gpu_adaptgear.c): host
 * matrices, seeded operands, the comparison, and one kernel's run from a
 * fresh plan (overwrite from NaN, accumulate, overwrite again bit for bit
 * when deterministic, no allocation in a run).  An element passes when
 * |GPU - ref| <= 1e-5 times the magnitude it sums, sum |a||x| (+ |y0|). */
#ifndef GCN_TEST_SPMM_CHECK_H
#define GCN_TEST_SPMM_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu_helpers.h"

typedef struct hmat {
    int32_t n_rows, n_cols, nnz;
    int32_t *row_ptr, *col_idx;
    float *values;
} hmat;

/* A matrix with the given degrees (columns and values uninitialised). */
hmat mat_alloc(int32_t n_rows, int32_t n_cols, const int32_t *deg);
void mat_free(hmat *m);

/* Values in [-1, 1); distinct columns in increasing order (deg <= n_cols)
 * or, unsorted, random with repeats. */
hmat mat_random(int32_t n_rows, int32_t n_cols, const int32_t *deg, bool sorted, uint64_t seed);

/* Uniform degrees in [0, max_deg] (caller frees). */
int32_t *degrees_uniform(int32_t n, int32_t max_deg, uint64_t seed);

hmat mat_transpose(const hmat *a);

/* A host copy of a device matrix. */
hmat mat_download(gcn_ctx *gpu, const gcn_csr *a);

/* One product of one matrix at one width, shared by every kernel. */
typedef struct product {
    const hmat *m;
    const gcn_csr *dev;
    int f;
    float *x, *y0;    /* host [n_cols, f], [n_rows, f] */
    double *ref, *mag;
    size_t pad;       /* floats x and y sit past the start of their buffers */
    float *xbuf, *ybuf;
    const char *name;
} product;

void product_init(product *p, gcn_ctx *gpu, const hmat *m, const gcn_csr *dev, int f,
                  size_t pad, const char *name);
void product_free(product *p, gcn_ctx *gpu);

/* One kernel from a fresh plan on the product, checked three ways. */
void run_kernel(gcn_ctx *gpu, const gcn_spmm_impl *impl, const product *p);

/* Every CUDA kernel of the registry that supports the product; returns how
 * many ran. */
int run_all(gcn_ctx *gpu, const product *p);

#endif
