/* gcn_tensor: a 2-D row-major matrix of fp32 or bf16 values on one device,
 * and gcn_index, a 1-D int32 array on one device (labels, row lists).  Both
 * are reference counted; every function that returns one hands the caller
 * one reference. */
#ifndef GCN_TENSOR_H
#define GCN_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gcn_tensor gcn_tensor;
typedef struct gcn_index gcn_index;

/* How a tensor stores its values.  bf16 (bfloat16: fp32's sign, 8-bit
 * exponent and upper 7 mantissa bits) halves what is streamed; it is for
 * features, activations and their gradients.  Parameters, optimiser
 * state, statistics and losses are fp32.  Ops take fp32 unless their
 * comment says otherwise, and reject other dtypes with GCN_ERR_DTYPE. */
typedef enum gcn_dtype {
    GCN_DTYPE_FP32 = 0,
    GCN_DTYPE_BF16
} gcn_dtype;

/* "fp32", "bf16" (the config's spelling), or "?" for another value. */
GCN_API const char *gcn_dtype_name(gcn_dtype dtype);

/* A new [rows, cols] tensor on the context's device.  Contents are
 * unspecified for _create and zero for _zeros.  rows, cols >= 1 is not
 * required: an empty tensor (0 rows) is valid.  Caller frees. */
GCN_API gcn_status gcn_tensor_create(gcn_ctx *ctx, gcn_tensor **out, int64_t rows, int64_t cols);
GCN_API gcn_status gcn_tensor_zeros(gcn_ctx *ctx, gcn_tensor **out, int64_t rows, int64_t cols);

/* gcn_tensor_create for a tensor of the given dtype (the others make fp32). */
GCN_API gcn_status gcn_tensor_create_dtype(gcn_ctx *ctx, gcn_tensor **out, int64_t rows,
                                           int64_t cols, gcn_dtype dtype);

/* Host transfers always speak fp32: a bf16 tensor rounds the floats it
 * receives to the nearest bf16 (ties to even, as the GPU rounds) and
 * widens its values exactly on the way out. */

/* A new fp32 tensor holding a copy of rows*cols floats from host memory. */
GCN_API gcn_status gcn_tensor_from_host(gcn_ctx *ctx, gcn_tensor **out, const float *host,
                                        int64_t rows, int64_t cols);

/* Copies the tensor's rows*cols floats into host memory. */
GCN_API gcn_status gcn_tensor_to_host(gcn_ctx *ctx, const gcn_tensor *t, float *host);

/* Overwrites t's values with rows * cols row-major floats from host, in
 * order with the work queued before it; host may be reused on return. */
GCN_API gcn_status gcn_tensor_copy_from_host(gcn_ctx *ctx, gcn_tensor *t, const float *host);

/* A new tensor with a copy of src's data and dtype (no grad, not on the tape). */
GCN_API gcn_status gcn_tensor_clone(gcn_ctx *ctx, const gcn_tensor *src, gcn_tensor **out);

/* dst <- src; shapes and dtypes must match.  Not recorded on the tape. */
GCN_API gcn_status gcn_tensor_copy(gcn_ctx *ctx, gcn_tensor *dst, const gcn_tensor *src);

/* Every element <- value (rounded to bf16 in a bf16 tensor).  Not recorded
 * on the tape. */
GCN_API gcn_status gcn_tensor_fill(gcn_ctx *ctx, gcn_tensor *t, float value);

/* Adds a reference; returns t. */
GCN_API gcn_tensor *gcn_tensor_retain(gcn_tensor *t);

/* Drops one reference and frees the tensor (and its grad) with the last.
 * Accepts NULL and sets *t to NULL. */
GCN_API void gcn_tensor_free(gcn_tensor **t);

GCN_API int64_t gcn_tensor_rows(const gcn_tensor *t);
GCN_API int64_t gcn_tensor_cols(const gcn_tensor *t);
GCN_API int64_t gcn_tensor_numel(const gcn_tensor *t);
GCN_API gcn_device gcn_tensor_device(const gcn_tensor *t);
GCN_API gcn_dtype gcn_tensor_dtype(const gcn_tensor *t);

/* Device pointer to an fp32 tensor's rows*cols floats (host memory on the
 * CPU); NULL for a bf16 tensor. */
GCN_API float *gcn_tensor_data(gcn_tensor *t);
GCN_API const float *gcn_tensor_cdata(const gcn_tensor *t);

/* Device pointer to a bf16 tensor's rows*cols bf16 bit patterns; NULL for
 * an fp32 tensor. */
GCN_API uint16_t *gcn_tensor_data_bf16(gcn_tensor *t);

/* Marks a leaf tensor as a parameter: backward accumulates into its grad.
 * Fails with GCN_ERR_STATE on a tensor produced by a recorded op. */
GCN_API gcn_status gcn_tensor_set_requires_grad(gcn_tensor *t, bool requires_grad);
GCN_API bool gcn_tensor_requires_grad(const gcn_tensor *t);

/* The accumulated gradient, same shape as t, or NULL before the first
 * backward that reached t.  Borrowed: owned by t. */
GCN_API gcn_tensor *gcn_tensor_grad(const gcn_tensor *t);

/* Zeroes the gradient in place if one exists (keeps its memory). */
GCN_API gcn_status gcn_tensor_zero_grad(gcn_ctx *ctx, gcn_tensor *t);

/* A new index array of n int32 values copied from host memory. */
GCN_API gcn_status gcn_index_from_host(gcn_ctx *ctx, gcn_index **out, const int32_t *host,
                                       int64_t n);
GCN_API gcn_status gcn_index_to_host(gcn_ctx *ctx, const gcn_index *idx, int32_t *host);
GCN_API int64_t gcn_index_len(const gcn_index *idx);
GCN_API gcn_index *gcn_index_retain(gcn_index *idx);
GCN_API void gcn_index_free(gcn_index **idx);

#ifdef __cplusplus
}
#endif
#endif
