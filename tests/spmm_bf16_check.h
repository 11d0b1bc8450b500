/* Checking the bf16 variants of the SpMM kernels (CPU and CUDA) against a
 * float64 reference on the fp32 operands, and gradients through the bf16
 * product against the fp32 one; shared by test_spmm_bf16.c (CPU, in CI)
 * and test_gpu_spmm_bf16.c.  The bounds are stated in spmm_bf16_check.c. */
#ifndef GCN_TEST_SPMM_BF16_CHECK_H
#define GCN_TEST_SPMM_BF16_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "spmm_check.h"

/* One kernel's bf16 variant on A (host copy m, on ctx as a) at width f,
 * x uniform in [-scale, scale): overwrite from NaN, accumulate onto a
 * random y, and overwrite again bit for bit when deterministic.  Returns
 * false when the kernel does not take the product (its supports, or its
 * plan refusing it with GCN_ERR_UNSUPPORTED). */
bool bf16_check_kernel(gcn_ctx *ctx, const gcn_spmm_impl *impl, const hmat *m, const gcn_csr *a,
                       int f, float scale, uint64_t seed);

/* Every kernel of ctx's device with a bf16 variant, on A and, when A is
 * not symmetric, on its stored transpose; returns how many ran on A. */
int bf16_check_all(gcn_ctx *ctx, const hmat *m, int f, float scale, uint64_t seed);

/* The awkward shapes at the given widths: rows with every fifth empty,
 * rectangular, a single column, and an all-empty matrix. */
void bf16_check_shapes(gcn_ctx *ctx, const int *feats, int n_feats);

/* A 3 x 100,000 matrix: one row of 100,000 entries (values in [0, 1)),
 * an empty row and a row of 3.  Caller frees with mat_free. */
hmat mat_long_row(void);

/* mat_long_row's product with x up to 1,000, whose sums pass fp16's
 * range, at width f. */
void bf16_check_long_row(gcn_ctx *ctx, int f);

/* d loss / d x through y = A x in bf16 (x cast to bf16, y cast back)
 * against the same through the fp32 product, on a non-symmetric A (its
 * stored transpose) at width f. */
void bf16_check_gradient(gcn_ctx *ctx, int f);

#endif
