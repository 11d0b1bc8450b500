/* gcn_tensor: a 2-D row-major float32 matrix on one device, and gcn_index,
 * a 1-D int32 array on one device (labels, row lists).  Both are reference
 * counted; every function that returns one hands the caller one reference. */
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

/* A new [rows, cols] tensor on the context's device.  Contents are
 * unspecified for _create and zero for _zeros.  rows, cols >= 1 is not
 * required: an empty tensor (0 rows) is valid.  Caller frees. */
GCN_API gcn_status gcn_tensor_create(gcn_ctx *ctx, gcn_tensor **out, int64_t rows, int64_t cols);
GCN_API gcn_status gcn_tensor_zeros(gcn_ctx *ctx, gcn_tensor **out, int64_t rows, int64_t cols);

/* A new tensor holding a copy of rows*cols floats from host memory. */
GCN_API gcn_status gcn_tensor_from_host(gcn_ctx *ctx, gcn_tensor **out, const float *host,
                                        int64_t rows, int64_t cols);

/* Copies the tensor's rows*cols floats into host memory. */
GCN_API gcn_status gcn_tensor_to_host(gcn_ctx *ctx, const gcn_tensor *t, float *host);

/* Overwrites t's values with rows * cols row-major floats from host, in
 * order with the work queued before it; host may be reused on return. */
GCN_API gcn_status gcn_tensor_copy_from_host(gcn_ctx *ctx, gcn_tensor *t, const float *host);

/* A new tensor with a copy of src's data (no grad, not on the tape). */
GCN_API gcn_status gcn_tensor_clone(gcn_ctx *ctx, const gcn_tensor *src, gcn_tensor **out);

/* dst <- src; shapes must match.  Not recorded on the tape. */
GCN_API gcn_status gcn_tensor_copy(gcn_ctx *ctx, gcn_tensor *dst, const gcn_tensor *src);

/* Every element <- value.  Not recorded on the tape. */
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

/* Device pointer to the rows*cols floats (host memory on the CPU). */
GCN_API float *gcn_tensor_data(gcn_tensor *t);
GCN_API const float *gcn_tensor_cdata(const gcn_tensor *t);

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
