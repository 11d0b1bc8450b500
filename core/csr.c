/* CSR matrices: validation, the host-side transpose built once at creation,
 * upload to the context's device, and the slots where the modules above
 * core keep their state on a matrix. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct host_csr {
    int32_t n_rows, n_cols, nnz;
    int32_t *row_ptr, *col_idx;
    float *values;
} host_csr;

static gcn_status validate(gcn_ctx *ctx, int32_t n_rows, int32_t n_cols, int32_t nnz,
                           const int32_t *row_ptr, const int32_t *col_idx)
{
    if (n_rows < 0 || n_cols < 0 || nnz < 0)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "csr: negative size (%d x %d, %d non-zeros)",
                         n_rows, n_cols, nnz);
    if (!row_ptr || (nnz > 0 && !col_idx))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "csr: row_ptr or col_idx is NULL");
    if (row_ptr[0] != 0 || row_ptr[n_rows] != nnz)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "csr: row_ptr must run from 0 to nnz = %d (got %d..%d)",
                         nnz, row_ptr[0], row_ptr[n_rows]);
    for (int32_t i = 0; i < n_rows; i++)
        if (row_ptr[i + 1] < row_ptr[i])
            return GCN_ERROR(ctx, GCN_ERR_FORMAT, "csr: row_ptr decreases at row %d", i);
    for (int32_t e = 0; e < nnz; e++)
        if (col_idx[e] < 0 || col_idx[e] >= n_cols)
            return GCN_ERROR(ctx, GCN_ERR_FORMAT,
                             "csr: column index %d at non-zero %d is outside [0, %d)", col_idx[e],
                             e, n_cols);
    return GCN_OK;
}

static void host_csr_free(host_csr *h)
{
    free(h->row_ptr);
    free(h->col_idx);
    free(h->values);
    memset(h, 0, sizeof *h);
}

/* Counting sort by column; stable, so each row of the result lists its
 * columns (the original rows) in increasing order. */
static gcn_status host_transpose(gcn_ctx *ctx, const host_csr *a, host_csr *t)
{
    t->n_rows = a->n_cols;
    t->n_cols = a->n_rows;
    t->nnz = a->nnz;
    t->row_ptr = calloc((size_t)a->n_cols + 1, sizeof *t->row_ptr);
    t->col_idx = malloc((size_t)(a->nnz > 0 ? a->nnz : 1) * sizeof *t->col_idx);
    t->values = malloc((size_t)(a->nnz > 0 ? a->nnz : 1) * sizeof *t->values);
    int32_t *next = malloc((size_t)(a->n_cols > 0 ? a->n_cols : 1) * sizeof *next);
    if (!t->row_ptr || !t->col_idx || !t->values || !next) {
        free(next);
        host_csr_free(t);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "csr: out of host memory for the transpose");
    }
    for (int32_t e = 0; e < a->nnz; e++)
        t->row_ptr[a->col_idx[e] + 1]++;
    for (int32_t j = 0; j < a->n_cols; j++)
        t->row_ptr[j + 1] += t->row_ptr[j];
    memcpy(next, t->row_ptr, (size_t)a->n_cols * sizeof *next);
    for (int32_t i = 0; i < a->n_rows; i++)
        for (int32_t e = a->row_ptr[i]; e < a->row_ptr[i + 1]; e++) {
            int32_t dst = next[a->col_idx[e]]++;
            t->col_idx[dst] = i;
            t->values[dst] = a->values[e];
        }
    free(next);
    return GCN_OK;
}

static bool host_equal(const host_csr *a, const host_csr *b)
{
    return a->n_rows == b->n_rows && a->n_cols == b->n_cols && a->nnz == b->nnz &&
           !memcmp(a->row_ptr, b->row_ptr, ((size_t)a->n_rows + 1) * sizeof *a->row_ptr) &&
           !memcmp(a->col_idx, b->col_idx, (size_t)a->nnz * sizeof *a->col_idx) &&
           !memcmp(a->values, b->values, (size_t)a->nnz * sizeof *a->values);
}

/* Whether every row lists its columns in strictly increasing order, the
 * canonical form some libraries (cuSPARSE) assume. */
static bool host_sorted(const host_csr *h)
{
    for (int32_t i = 0; i < h->n_rows; i++)
        for (int32_t e = h->row_ptr[i] + 1; e < h->row_ptr[i + 1]; e++)
            if (h->col_idx[e] <= h->col_idx[e - 1])
                return false;
    return true;
}

/* A zeroed matrix with its zeroed private part, on ctx. */
static gcn_status header_new(gcn_ctx *ctx, gcn_csr **out)
{
    gcn_csr *a = calloc(1, sizeof *a);
    gcn_csr_priv *p = calloc(1, sizeof *p);
    if (!a || !p) {
        free(a);
        free(p);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "csr: out of host memory for a matrix header");
    }
    a->priv = p;
    p->ctx = ctx;
    *out = a;
    return GCN_OK;
}

/* A device copy of a host matrix, with no transpose attached. */
static gcn_status upload(gcn_ctx *ctx, const host_csr *h, gcn_csr **out)
{
    gcn_status st = GCN_OK;
    gcn_csr *a;
    GCN_TRY(header_new(ctx, &a));
    gcn_csr_priv *p = a->priv;
    p->sorted = host_sorted(h);
    a->n_rows = h->n_rows;
    a->n_cols = h->n_cols;
    a->nnz = h->nnz;
    a->device = ctx->device;
    size_t rp = ((size_t)h->n_rows + 1) * sizeof(int32_t), ci = (size_t)h->nnz * sizeof(int32_t);
    size_t va = (size_t)h->nnz * sizeof(float);
    GCN_CHECK(gcn_mem_alloc(ctx, (void **)&a->row_ptr, rp));
    GCN_CHECK(gcn_mem_alloc(ctx, (void **)&a->col_idx, ci));
    GCN_CHECK(gcn_mem_alloc(ctx, (void **)&a->values, va));
    GCN_CHECK(ctx->be->upload(ctx, a->row_ptr, h->row_ptr, rp));
    if (h->nnz > 0) {
        GCN_CHECK(ctx->be->upload(ctx, a->col_idx, h->col_idx, ci));
        GCN_CHECK(ctx->be->upload(ctx, a->values, h->values, va));
    }
    *out = a;
    return GCN_OK;
cleanup:
    gcn_csr_free(&a);
    return st;
}

gcn_status gcn_csr_create(gcn_ctx *ctx, gcn_csr **out, int32_t n_rows, int32_t n_cols,
                          int32_t nnz, const int32_t *row_ptr, const int32_t *col_idx,
                          const float *values)
{
    return gcn_csr_create_known(ctx, out, n_rows, n_cols, nnz, row_ptr, col_idx, values, false);
}

gcn_status gcn_csr_create_known(gcn_ctx *ctx, gcn_csr **out, int32_t n_rows, int32_t n_cols,
                                int32_t nnz, const int32_t *row_ptr, const int32_t *col_idx,
                                const float *values, bool symmetric)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, out);
    *out = NULL;
    GCN_TRY(validate(ctx, n_rows, n_cols, nnz, row_ptr, col_idx));
    gcn_status st = GCN_OK;
    host_csr a = {n_rows, n_cols, nnz, (int32_t *)row_ptr, (int32_t *)col_idx, NULL};
    host_csr t = {0};
    float *ones = NULL;
    gcn_csr *dev = NULL;
    if (!values) {
        ones = malloc((size_t)(nnz > 0 ? nnz : 1) * sizeof *ones);
        if (!ones)
            return GCN_ERROR(ctx, GCN_ERR_NOMEM, "csr: out of host memory for unit values");
        for (int32_t e = 0; e < nnz; e++)
            ones[e] = 1.0f;
    }
    a.values = values ? (float *)values : ones;
    if (!symmetric)
        GCN_CHECK(host_transpose(ctx, &a, &t));
    GCN_CHECK(upload(ctx, &a, &dev));
    if (symmetric || host_equal(&a, &t)) {
        dev->priv->symmetric = true;
    } else {
        GCN_CHECK(upload(ctx, &t, &dev->priv->transpose));
        dev->priv->transpose->priv->owner = dev;
    }
    *out = dev;
    dev = NULL;
cleanup:
    gcn_csr_free(&dev);
    host_csr_free(&t);
    free(ones);
    return st;
}

gcn_status gcn_csr_wrap(gcn_ctx *ctx, int32_t n, int32_t nnz, int32_t *row_ptr, int32_t *col_idx,
                        float *values, gcn_csr **out)
{
    GCN_ARG(ctx, out && n >= 0 && nnz >= 0 && row_ptr && (nnz == 0 || (col_idx && values)));
    gcn_csr *a;
    GCN_TRY(header_new(ctx, &a));
    *a = (gcn_csr){.n_rows = n, .n_cols = n, .nnz = nnz, .row_ptr = row_ptr,
                   .col_idx = col_idx, .values = values, .device = ctx->device, .priv = a->priv};
    *a->priv = (gcn_csr_priv){.ctx = ctx, .symmetric = true, .sorted = true, .borrowed = true};
    *out = a;
    return GCN_OK;
}

gcn_status gcn_csr_shell(gcn_ctx *ctx, int32_t n_rows, int32_t n_cols, int32_t nnz,
                         const int32_t *row_ptr, const int32_t *col_idx, gcn_csr **out)
{
    GCN_TRY(validate(ctx, n_rows, n_cols, nnz, row_ptr, col_idx));
    GCN_TRY(header_new(ctx, out));
    gcn_csr *a = *out;
    host_csr h = {n_rows, n_cols, nnz, (int32_t *)row_ptr, (int32_t *)col_idx, NULL};
    a->n_rows = n_rows;
    a->n_cols = n_cols;
    a->nnz = nnz;
    a->device = ctx->device;
    a->priv->sorted = host_sorted(&h);
    a->priv->borrowed = true; /* nothing to release */
    a->priv->parts_only = true;
    return GCN_OK;
}

gcn_status gcn_csr_check_arrays(gcn_ctx *ctx, const gcn_csr *a, const char *what)
{
    if (!a->priv->parts_only)
        return GCN_OK;
    return GCN_ERROR(ctx, GCN_ERR_STATE, "%s: the block was made by gcn_csr_create_block and "
                     "keeps only the parts its products use, no arrays of its own", what);
}

gcn_status gcn_csr_to_host(gcn_ctx *ctx, const gcn_csr *a, int32_t *row_ptr, int32_t *col_idx,
                           float *values)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, a && a->priv && a->priv->ctx == ctx);
    GCN_TRY(gcn_csr_check_arrays(ctx, a, "gcn_csr_to_host"));
    if (row_ptr)
        GCN_TRY(ctx->be->download(ctx, row_ptr, a->row_ptr, ((size_t)a->n_rows + 1) * sizeof(int32_t)));
    if (col_idx && a->nnz > 0)
        GCN_TRY(ctx->be->download(ctx, col_idx, a->col_idx, (size_t)a->nnz * sizeof(int32_t)));
    if (values && a->nnz > 0)
        GCN_TRY(ctx->be->download(ctx, values, a->values, (size_t)a->nnz * sizeof(float)));
    return GCN_OK;
}

gcn_status gcn_csr_host_row_ptr(gcn_ctx *ctx, const gcn_csr *a, const int32_t **out)
{
    gcn_csr_priv *p = a->priv;
    GCN_TRY(gcn_csr_check_arrays(ctx, a, "csr"));
    if (a->device == GCN_DEVICE_CPU) {
        *out = a->row_ptr;
        return GCN_OK;
    }
    if (!p->host_row_ptr) {
        size_t bytes = ((size_t)a->n_rows + 1) * sizeof(int32_t);
        int32_t *h = malloc(bytes);
        if (!h)
            return GCN_ERROR(ctx, GCN_ERR_NOMEM, "csr: out of host memory for a copy of row_ptr");
        gcn_status st = ctx->be->download(ctx, h, a->row_ptr, bytes);
        if (st != GCN_OK) {
            free(h);
            return st;
        }
        p->host_row_ptr = h;
    }
    *out = p->host_row_ptr;
    return GCN_OK;
}

const gcn_csr *gcn_csr_transpose(const gcn_csr *a)
{
    if (!a || !a->priv)
        return NULL;
    if (a->priv->symmetric)
        return a;
    return a->priv->owner ? a->priv->owner : a->priv->transpose;
}

bool gcn_csr_is_symmetric(const gcn_csr *a)
{
    return a && a->priv && a->priv->symmetric;
}

bool gcn_csr_is_sorted(const gcn_csr *a)
{
    return a && a->priv && a->priv->sorted;
}

int32_t gcn_csr_rows(const gcn_csr *a)
{
    return a->n_rows;
}

int32_t gcn_csr_cols(const gcn_csr *a)
{
    return a->n_cols;
}

int32_t gcn_csr_nnz(const gcn_csr *a)
{
    return a->nnz;
}

gcn_device gcn_csr_device(const gcn_csr *a)
{
    return a->device;
}

const int32_t *gcn_csr_row_ptr(const gcn_csr *a)
{
    return a->row_ptr;
}

const int32_t *gcn_csr_col_idx(const gcn_csr *a)
{
    return a->col_idx;
}

const float *gcn_csr_values(const gcn_csr *a)
{
    return a->values;
}

gcn_status gcn_csr_slot_make(gcn_ctx *ctx, const gcn_csr *a, gcn_csr_slot_id id, size_t size,
                             void (*free_state)(void *state), void **out)
{
    void *state = gcn_csr_slot_get(a, id);
    if (!state) {
        state = calloc(1, size);
        if (!state)
            return GCN_ERROR(ctx, GCN_ERR_NOMEM, "csr: out of host memory for a matrix's state");
        gcn_csr_slot_set(a, id, state, free_state);
    }
    *out = state;
    return GCN_OK;
}

void gcn_csr_free(gcn_csr **pa)
{
    if (!pa || !*pa)
        return;
    gcn_csr *a = *pa;
    *pa = NULL;
    gcn_csr_priv *p = a->priv;
    if (p) {
        gcn_ctx *ctx = p->ctx;
        /* The transpose's call sites may use this matrix's splits: they go first. */
        gcn_csr_free(&p->transpose);
        for (int i = 0; i < GCN_CSR_N_SLOTS; i++)
            if (p->slot[i].state)
                p->slot[i].free_state(p->slot[i].state);
        if (!p->borrowed) {
            gcn_mem_release(ctx, a->row_ptr, ((size_t)a->n_rows + 1) * sizeof(int32_t));
            gcn_mem_release(ctx, a->col_idx, (size_t)a->nnz * sizeof(int32_t));
            gcn_mem_release(ctx, a->values, (size_t)a->nnz * sizeof(float));
        }
        free(p->host_row_ptr);
        free(p);
    }
    free(a);
}

