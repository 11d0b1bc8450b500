/* Tensor and index-array lifetime, host transfers and argument checks. */
#include <stdlib.h>
#include <string.h>

#include "asan.h"
#include "bf16.h"
#include "internal.h"

/* Tensor and index headers come from free lists on the context, so that a
 * training step, which creates and frees its intermediates, calls no
 * malloc once one step has run.  A free header holds the next one's
 * address in its first bytes; under AddressSanitizer it is poisoned. */
static void *header_take(void **list, size_t size)
{
    void *h = *list;
    if (!h)
        return calloc(1, size);
    GCN_UNPOISON(h, size);
    memcpy(list, h, sizeof h);
    memset(h, 0, size);
    return h;
}

static void header_give(void **list, void *h, size_t size)
{
    memcpy(h, list, sizeof *list);
    *list = h;
    GCN_POISON(h, size);
}

static void headers_drop(void **list, size_t size)
{
    while (*list) {
        void *h = *list;
        GCN_UNPOISON(h, size);
        memcpy(list, h, sizeof h);
        free(h);
    }
}

void gcn_ctx_free_headers(gcn_ctx *ctx)
{
    headers_drop((void **)&ctx->free_tensors, sizeof(gcn_tensor));
    headers_drop((void **)&ctx->free_indices, sizeof(gcn_index));
}

const char *gcn_dtype_name(gcn_dtype dtype)
{
    switch (dtype) {
    case GCN_DTYPE_FP32: return "fp32";
    case GCN_DTYPE_BF16: return "bf16";
    }
    return "?";
}

size_t gcn_dtype_size(gcn_dtype dtype)
{
    return dtype == GCN_DTYPE_BF16 ? sizeof(uint16_t) : sizeof(float);
}

static size_t tensor_bytes(int64_t rows, int64_t cols, gcn_dtype dtype)
{
    return (size_t)rows * (size_t)cols * gcn_dtype_size(dtype);
}

gcn_status gcn_tensor_create_dtype(gcn_ctx *ctx, gcn_tensor **out, int64_t rows, int64_t cols,
                                   gcn_dtype dtype)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, out);
    *out = NULL;
    if (dtype != GCN_DTYPE_FP32 && dtype != GCN_DTYPE_BF16)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "tensor dtype %d is not fp32 or bf16",
                         (int)dtype);
    if (rows < 0 || cols < 0 || (cols > 0 && rows > INT64_MAX / 4 / cols))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "tensor shape [%lld, %lld] is invalid",
                         (long long)rows, (long long)cols);
    gcn_tensor *t = header_take((void **)&ctx->free_tensors, sizeof *t);
    if (!t)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for a tensor header");
    size_t bytes = tensor_bytes(rows, cols, dtype);
    gcn_status st = gcn_mem_alloc(ctx, (void **)&t->data, bytes);
    if (st != GCN_OK) {
        header_give((void **)&ctx->free_tensors, t, sizeof *t);
        return st == GCN_ERR_NOMEM
                   ? gcn_error_prefix(ctx, st, "a [%lld, %lld] %stensor (%zu bytes)",
                                      (long long)rows, (long long)cols,
                                      dtype == GCN_DTYPE_BF16 ? "bf16 " : "", bytes)
                   : st;
    }
    t->rows = rows;
    t->cols = cols;
    t->dtype = dtype;
    t->ctx = ctx;
    t->device = ctx->device;
    t->refs = 1;
    t->is_leaf = true;
    *out = t;
    return GCN_OK;
}

gcn_status gcn_tensor_create(gcn_ctx *ctx, gcn_tensor **out, int64_t rows, int64_t cols)
{
    return gcn_tensor_create_dtype(ctx, out, rows, cols, GCN_DTYPE_FP32);
}

gcn_status gcn_tensor_zeros(gcn_ctx *ctx, gcn_tensor **out, int64_t rows, int64_t cols)
{
    GCN_TRY(gcn_tensor_create(ctx, out, rows, cols));
    gcn_status st = gcn_tensor_fill(ctx, *out, 0.0f);
    if (st != GCN_OK)
        gcn_tensor_free(out);
    return st;
}

gcn_status gcn_tensor_from_host(gcn_ctx *ctx, gcn_tensor **out, const float *host, int64_t rows,
                                int64_t cols)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, host || rows * cols == 0);
    GCN_TRY(gcn_tensor_create(ctx, out, rows, cols));
    gcn_status st = GCN_OK;
    if (rows * cols > 0)
        st = ctx->be->upload(ctx, (*out)->data, host, tensor_bytes(rows, cols, GCN_DTYPE_FP32));
    if (st != GCN_OK)
        gcn_tensor_free(out);
    return st;
}

/* A bf16 tensor's transfer: through n bf16 values on the host, rounded
 * from from_host before the upload or widened into to_host after the
 * download. */
static gcn_status host_copy_bf16(gcn_ctx *ctx, const gcn_tensor *t, float *to_host,
                                 const float *from_host)
{
    int64_t n = t->rows * t->cols;
    uint16_t *tmp = malloc((size_t)n * sizeof *tmp);
    if (!tmp)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory staging %lld bf16 values",
                         (long long)n);
    gcn_status st;
    if (from_host) {
        for (int64_t i = 0; i < n; i++)
            tmp[i] = gcn_bf16_from_float(from_host[i]);
        st = ctx->be->upload(ctx, t->bf16, tmp, (size_t)n * sizeof *tmp);
    } else {
        st = ctx->be->download(ctx, tmp, t->bf16, (size_t)n * sizeof *tmp);
        for (int64_t i = 0; st == GCN_OK && i < n; i++)
            to_host[i] = gcn_bf16_to_float(tmp[i]);
    }
    free(tmp);
    return st;
}

/* Copies t's values into to_host, or from_host's into t (the other NULL). */
static gcn_status host_copy(gcn_ctx *ctx, const gcn_tensor *t, float *to_host,
                            const float *from_host)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_TRY(gcn_check_tensor_any(ctx, t, "tensor"));
    GCN_ARG(ctx, to_host || from_host || t->rows * t->cols == 0);
    if (t->rows * t->cols == 0)
        return GCN_OK;
    if (t->dtype == GCN_DTYPE_BF16)
        return host_copy_bf16(ctx, t, to_host, from_host);
    size_t bytes = tensor_bytes(t->rows, t->cols, t->dtype);
    return from_host ? ctx->be->upload(ctx, t->data, from_host, bytes)
                     : ctx->be->download(ctx, to_host, t->data, bytes);
}

gcn_status gcn_tensor_to_host(gcn_ctx *ctx, const gcn_tensor *t, float *host)
{
    return host_copy(ctx, t, host, NULL);
}

gcn_status gcn_tensor_copy_from_host(gcn_ctx *ctx, gcn_tensor *t, const float *host)
{
    if (t)
        t->half_fresh = false;
    return host_copy(ctx, t, NULL, host);
}

gcn_status gcn_tensor_clone(gcn_ctx *ctx, const gcn_tensor *src, gcn_tensor **out)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_TRY(gcn_check_tensor_any(ctx, src, "source"));
    GCN_TRY(gcn_tensor_create_dtype(ctx, out, src->rows, src->cols, src->dtype));
    gcn_status st = gcn_tensor_copy(ctx, *out, src);
    if (st != GCN_OK)
        gcn_tensor_free(out);
    return st;
}

gcn_status gcn_tensor_copy(gcn_ctx *ctx, gcn_tensor *dst, const gcn_tensor *src)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_TRY(gcn_check_tensor_any(ctx, dst, "destination"));
    GCN_TRY(gcn_check_tensor_any(ctx, src, "source"));
    if (dst->rows != src->rows || dst->cols != src->cols)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "copy: destination [%lld, %lld] != source [%lld, %lld]",
                         (long long)dst->rows, (long long)dst->cols, (long long)src->rows,
                         (long long)src->cols);
    if (dst->dtype != src->dtype)
        return GCN_ERROR(ctx, GCN_ERR_DTYPE, "copy: destination is %s but source is %s (gcn_cast "
                         "converts)", gcn_dtype_name(dst->dtype), gcn_dtype_name(src->dtype));
    if (dst == src || src->rows * src->cols == 0)
        return GCN_OK;
    dst->half_fresh = false;
    return ctx->be->copy(ctx, dst->data, src->data,
                         tensor_bytes(src->rows, src->cols, src->dtype));
}

gcn_status gcn_tensor_fill(gcn_ctx *ctx, gcn_tensor *t, float value)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_TRY(gcn_check_tensor_any(ctx, t, "tensor"));
    if (t->rows * t->cols == 0)
        return GCN_OK;
    if (t->dtype == GCN_DTYPE_BF16)
        return ctx->be->fill_bf16(ctx, t->bf16, t->rows * t->cols, gcn_bf16_from_float(value));
    t->half_fresh = false;
    return ctx->be->fill(ctx, t->data, t->rows * t->cols, value);
}

gcn_tensor *gcn_tensor_retain(gcn_tensor *t)
{
    if (t)
        t->refs++;
    return t;
}

void gcn_tensor_free(gcn_tensor **pt)
{
    if (!pt || !*pt)
        return;
    gcn_tensor *t = *pt;
    *pt = NULL;
    if (--t->refs > 0)
        return;
    gcn_tensor_free(&t->grad);
    gcn_tensor_free(&t->half);
    gcn_mem_release(t->ctx, t->data, tensor_bytes(t->rows, t->cols, t->dtype));
    header_give((void **)&t->ctx->free_tensors, t, sizeof *t);
}

void gcn_tensor_drop_values(gcn_tensor *t)
{
    if (!t || !t->data)
        return;
    gcn_tensor_free(&t->half);
    t->half_fresh = false;
    gcn_mem_release(t->ctx, t->data, tensor_bytes(t->rows, t->cols, t->dtype));
    t->data = NULL;
}

int64_t gcn_tensor_rows(const gcn_tensor *t) { return t ? t->rows : 0; }
int64_t gcn_tensor_cols(const gcn_tensor *t) { return t ? t->cols : 0; }
int64_t gcn_tensor_numel(const gcn_tensor *t) { return t ? t->rows * t->cols : 0; }
gcn_device gcn_tensor_device(const gcn_tensor *t) { return t ? t->device : GCN_DEVICE_CPU; }
gcn_dtype gcn_tensor_dtype(const gcn_tensor *t) { return t ? t->dtype : GCN_DTYPE_FP32; }

/* The caller may write through the pointer: t's bf16 copy is stale. */
float *gcn_tensor_data(gcn_tensor *t)
{
    if (!t || t->dtype != GCN_DTYPE_FP32)
        return NULL;
    t->half_fresh = false;
    return t->data;
}

const float *gcn_tensor_cdata(const gcn_tensor *t)
{
    return t && t->dtype == GCN_DTYPE_FP32 ? t->data : NULL;
}

uint16_t *gcn_tensor_data_bf16(gcn_tensor *t)
{
    return t && t->dtype == GCN_DTYPE_BF16 ? t->bf16 : NULL;
}
bool gcn_tensor_requires_grad(const gcn_tensor *t) { return t && t->requires_grad; }
gcn_tensor *gcn_tensor_grad(const gcn_tensor *t) { return t ? t->grad : NULL; }

gcn_status gcn_tensor_half(gcn_ctx *ctx, gcn_tensor *t, const uint16_t **bf16)
{
    if (t->dtype == GCN_DTYPE_BF16) {
        *bf16 = t->bf16;
        return GCN_OK;
    }
    if (!t->half)
        GCN_TRY(gcn_tensor_create_dtype(ctx, &t->half, t->rows, t->cols, GCN_DTYPE_BF16));
    if (!t->half_fresh)
        GCN_TRY(ctx->be->to_bf16(ctx, t->rows * t->cols, t->data, t->half->bf16, false));
    t->half_fresh = true;
    *bf16 = t->half->bf16;
    return GCN_OK;
}

gcn_status gcn_tensor_set_requires_grad(gcn_tensor *t, bool requires_grad)
{
    if (!t)
        return GCN_ERR_INVALID_ARG;
    if (!t->is_leaf)
        return GCN_ERROR(t->ctx, GCN_ERR_STATE,
                         "requires_grad can only be set on a leaf tensor, not an op's output");
    t->requires_grad = requires_grad;
    return GCN_OK;
}

gcn_status gcn_tensor_zero_grad(gcn_ctx *ctx, gcn_tensor *t)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_TRY(gcn_check_tensor_any(ctx, t, "tensor"));
    return t->grad ? gcn_tensor_fill(ctx, t->grad, 0.0f) : GCN_OK;
}

gcn_status gcn_op_begin(gcn_ctx *ctx, gcn_tensor **out)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    if (!out)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "output pointer is NULL");
    *out = NULL;
    return GCN_OK;
}

gcn_status gcn_check_tensor_any(gcn_ctx *ctx, const gcn_tensor *t, const char *what)
{
    if (!t)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s is NULL", what);
    if (t->ctx != ctx || t->device != ctx->device)
        return GCN_ERROR(ctx, GCN_ERR_DEVICE, "%s lives on %s, not on this context's %s", what,
                         t->ctx == ctx ? gcn_device_name(t->device) : "another context",
                         gcn_device_name(ctx->device));
    if (!t->data && t->rows * t->cols > 0)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "%s had its values dropped after use", what);
    return GCN_OK;
}

gcn_status gcn_check_tensor_dtype(gcn_ctx *ctx, const gcn_tensor *t, const char *what,
                                  gcn_dtype dtype)
{
    GCN_TRY(gcn_check_tensor_any(ctx, t, what));
    if (t->dtype != dtype)
        return GCN_ERROR(ctx, GCN_ERR_DTYPE, "%s is %s, but the op takes %s (gcn_cast converts)",
                         what, gcn_dtype_name(t->dtype), gcn_dtype_name(dtype));
    return GCN_OK;
}

gcn_status gcn_check_tensor(gcn_ctx *ctx, const gcn_tensor *t, const char *what)
{
    return gcn_check_tensor_dtype(ctx, t, what, GCN_DTYPE_FP32);
}

gcn_status gcn_check_row_vector(gcn_ctx *ctx, const gcn_tensor *v, const char *op,
                                const char *what, int64_t cols)
{
    GCN_TRY(gcn_check_tensor(ctx, v, what));
    if (v->rows != 1 || v->cols != cols)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "%s: %s is [%lld, %lld], expected [1, %lld]", op,
                         what, (long long)v->rows, (long long)v->cols, (long long)cols);
    return GCN_OK;
}

gcn_status gcn_check_index(gcn_ctx *ctx, const gcn_index *idx, const char *what)
{
    if (!idx)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s is NULL", what);
    if (idx->ctx != ctx || idx->device != ctx->device)
        return GCN_ERROR(ctx, GCN_ERR_DEVICE, "%s lives on %s, not on this context's %s", what,
                         idx->ctx == ctx ? gcn_device_name(idx->device) : "another context",
                         gcn_device_name(ctx->device));
    return GCN_OK;
}

gcn_status gcn_index_alloc(gcn_ctx *ctx, gcn_index **out, int64_t n)
{
    *out = NULL;
    gcn_index *idx = header_take((void **)&ctx->free_indices, sizeof *idx);
    if (!idx)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for an index header");
    idx->n = n;
    idx->max = -1;
    idx->ctx = ctx;
    idx->device = ctx->device;
    idx->refs = 1;
    gcn_status st = gcn_mem_alloc(ctx, (void **)&idx->data, (size_t)n * sizeof(int32_t));
    if (st != GCN_OK) {
        gcn_index_free(&idx);
        return st;
    }
    *out = idx;
    return GCN_OK;
}

gcn_status gcn_index_from_host(gcn_ctx *ctx, gcn_index **out, const int32_t *host, int64_t n)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, out);
    GCN_ARG(ctx, n >= 0);
    GCN_ARG(ctx, host || n == 0);
    gcn_index *idx;
    GCN_TRY(gcn_index_alloc(ctx, &idx, n));
    gcn_status st = n > 0 ? ctx->be->upload(ctx, idx->data, host, (size_t)n * sizeof(int32_t))
                          : GCN_OK;
    idx->ascending = true;
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || host[i] < idx->min)
            idx->min = host[i];
        if (i == 0 || host[i] > idx->max)
            idx->max = host[i];
        if (i > 0 && host[i] < host[i - 1])
            idx->ascending = false;
    }
    if (st != GCN_OK) {
        gcn_index_free(&idx);
        return st;
    }
    *out = idx;
    return GCN_OK;
}

gcn_status gcn_index_to_host(gcn_ctx *ctx, const gcn_index *idx, int32_t *host)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_TRY(gcn_check_index(ctx, idx, "index"));
    GCN_ARG(ctx, host || idx->n == 0);
    if (idx->n == 0)
        return GCN_OK;
    return ctx->be->download(ctx, host, idx->data, (size_t)idx->n * sizeof(int32_t));
}

int64_t gcn_index_len(const gcn_index *idx) { return idx ? idx->n : 0; }

gcn_index *gcn_index_retain(gcn_index *idx)
{
    if (idx)
        idx->refs++;
    return idx;
}

void gcn_index_free(gcn_index **pidx)
{
    if (!pidx || !*pidx)
        return;
    gcn_index *idx = *pidx;
    *pidx = NULL;
    if (--idx->refs > 0)
        return;
    if (idx->base)
        gcn_index_free(&idx->base);
    else
        gcn_mem_release(idx->ctx, idx->data, (size_t)idx->n * sizeof(int32_t));
    header_give((void **)&idx->ctx->free_indices, idx, sizeof *idx);
}

gcn_status gcn_index_view(gcn_ctx *ctx, gcn_index *base, int64_t offset, int64_t n, int32_t min,
                          int32_t max, bool ascending, gcn_index **out)
{
    GCN_ARG(ctx, base && out && offset >= 0 && n >= 0 && offset + n <= base->n);
    gcn_index *idx = header_take((void **)&ctx->free_indices, sizeof *idx);
    if (!idx)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for an index header");
    *idx = (gcn_index){.n = n, .data = base->data + offset, .min = n ? min : 0,
                       .max = n ? max : -1, .ascending = ascending,
                       .base = gcn_index_retain(base), .ctx = ctx, .device = base->device,
                       .refs = 1};
    *out = idx;
    return GCN_OK;
}
