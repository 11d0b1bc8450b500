/* Halo exchange around the products of a rank's block of a partitioned
 * matrix: before Y = A X the rows of X that other ranks own are fetched
 * from them (one all-to-all), and after dX = A^T dY the gradients of those
 * rows go back to their owners, which add them in (the same all-to-all
 * reversed, then one deterministic sparse product). */
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"
#include "spmm.h"
#include "spmm_halo.h"
#include "spmm_auto.h"

struct gcn_halo {
    int n_ranks;
    int32_t n_local, n_halo, n_send;
    int64_t *send_off, *recv_off; /* host [n_ranks + 1], in rows */
    int64_t *send_f, *recv_f;     /* the same in floats at the width of the last call */
    int64_t width;                /* that width, 0 before the first call */
    gcn_index *send_rows;         /* [n_send] local rows, peer by peer */
    gcn_csr *scatter;             /* [n_local, n_send]: row r has a 1 at each send slot of r */
};

void gcn_halo_free(gcn_halo *h)
{
    if (!h)
        return;
    gcn_index_free(&h->send_rows);
    gcn_csr_free(&h->scatter);
    free(h->send_off);
    free(h->recv_off);
    free(h->send_f);
    free(h->recv_f);
    free(h);
}

static void halo_free_hook(struct gcn_halo *h)
{
    gcn_halo_free(h);
}

/* Checks an offset list: ranks + 1 non-decreasing values from 0, with the
 * rank's own block empty; its total in *total. */
static gcn_status check_offsets(gcn_ctx *ctx, const int64_t *off, int ranks, int rank,
                                const char *what, int64_t *total)
{
    if (off[0] != 0)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "set_halo: %s[0] is %lld, not 0", what,
                         (long long)off[0]);
    for (int p = 0; p < ranks; p++)
        if (off[p + 1] < off[p])
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "set_halo: %s decreases at rank %d", what,
                             p + 1);
    if (off[rank + 1] != off[rank])
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "set_halo: %s lists %lld rows for rank %d itself", what,
                         (long long)(off[rank + 1] - off[rank]), rank);
    *total = off[ranks];
    return GCN_OK;
}

/* The scatter matrix: row r lists, in slot order, the send slots holding r. */
static gcn_status build_scatter(gcn_ctx *ctx, gcn_halo *h, const int32_t *send_rows)
{
    int32_t n = h->n_local, m = h->n_send;
    int32_t *row_ptr = calloc((size_t)n + 1, sizeof *row_ptr);
    int32_t *col_idx = malloc((size_t)(m > 0 ? m : 1) * sizeof *col_idx);
    int32_t *fill = malloc((size_t)(n > 0 ? n : 1) * sizeof *fill);
    gcn_status st = GCN_OK;
    if (!row_ptr || !col_idx || !fill) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "set_halo: out of host memory");
        goto cleanup;
    }
    for (int32_t i = 0; i < m; i++)
        row_ptr[send_rows[i] + 1]++;
    for (int32_t r = 0; r < n; r++)
        row_ptr[r + 1] += row_ptr[r];
    memcpy(fill, row_ptr, (size_t)n * sizeof *fill);
    for (int32_t i = 0; i < m; i++)
        col_idx[fill[send_rows[i]]++] = i;
    st = gcn_csr_create(ctx, &h->scatter, n, m, m, row_ptr, col_idx, NULL);
cleanup:
    free(row_ptr);
    free(col_idx);
    free(fill);
    return st;
}

static gcn_status halo_new(gcn_ctx *ctx, const gcn_csr *a, const int32_t *send_rows,
                           const int64_t *send_off, const int64_t *recv_off, gcn_halo **out)
{
    int ranks = gcn_ctx_ranks(ctx), rank = gcn_ctx_rank(ctx);
    int64_t n_send, n_halo;
    GCN_TRY(check_offsets(ctx, send_off, ranks, rank, "send_off", &n_send));
    GCN_TRY(check_offsets(ctx, recv_off, ranks, rank, "recv_off", &n_halo));
    if (n_halo != (int64_t)a->n_cols - a->n_rows)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE,
                         "set_halo: the matrix is %d x %d, so %d halo columns, but recv_off "
                         "lists %lld halo rows", a->n_rows, a->n_cols, a->n_cols - a->n_rows,
                         (long long)n_halo);
    if (n_send > INT32_MAX)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "set_halo: %lld rows to send",
                         (long long)n_send);
    for (int64_t i = 0; i < n_send; i++)
        if (send_rows[i] < 0 || send_rows[i] >= a->n_rows)
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                             "set_halo: send_rows[%lld] = %d is not a row of the %d-row block",
                             (long long)i, send_rows[i], a->n_rows);
    gcn_halo *h = calloc(1, sizeof *h);
    size_t off_bytes = (size_t)(ranks + 1) * sizeof(int64_t);
    gcn_status st = GCN_OK;
    if (!h || !(h->send_off = malloc(off_bytes)) || !(h->recv_off = malloc(off_bytes)) ||
        !(h->send_f = malloc(off_bytes)) || !(h->recv_f = malloc(off_bytes))) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "set_halo: out of host memory");
        goto cleanup;
    }
    h->n_ranks = ranks;
    h->n_local = a->n_rows;
    h->n_halo = (int32_t)n_halo;
    h->n_send = (int32_t)n_send;
    memcpy(h->send_off, send_off, off_bytes);
    memcpy(h->recv_off, recv_off, off_bytes);
    GCN_CHECK(gcn_index_from_host(ctx, &h->send_rows, send_rows, n_send));
    GCN_CHECK(build_scatter(ctx, h, send_rows));
    *out = h;
    return GCN_OK;
cleanup:
    gcn_halo_free(h);
    return st;
}

gcn_status gcn_csr_set_halo(gcn_ctx *ctx, gcn_csr *a, const int32_t *send_rows,
                            const int64_t *send_off, const int64_t *recv_off)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, a && a->priv && send_off && recv_off && (send_rows || send_off[0] == 0));
    if (a->priv->ctx != ctx)
        return GCN_ERROR(ctx, GCN_ERR_DEVICE, "set_halo: the matrix belongs to another context");
    if (gcn_ctx_comm_kind(ctx) == 0)
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "set_halo: the context is in no communicator (gcn_comm_init)");
    if (a->priv->halo)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "set_halo: the matrix has a halo already");
    if (a->priv->n_levels > 0 || a->priv->kernel)
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "set_halo: a matrix with community levels or a fixed kernel takes no "
                         "halo");
    gcn_halo *h = NULL;
    GCN_TRY(halo_new(ctx, a, send_rows, send_off, recv_off, &h));
    a->priv->halo = h;
    a->priv->halo_free = halo_free_hook;
    return GCN_OK;
}

/* Offsets in floats at width f, kept for the next call at the same width. */
static void scale_offsets(gcn_halo *h, int64_t f)
{
    if (h->width == f)
        return;
    for (int p = 0; p <= h->n_ranks; p++) {
        h->send_f[p] = h->send_off[p] * f;
        h->recv_f[p] = h->recv_off[p] * f;
    }
    h->width = f;
}

gcn_status gcn_halo_gather(gcn_ctx *ctx, const gcn_csr *a, const gcn_tensor *x, gcn_tensor **ext)
{
    gcn_halo *h = a->priv->halo;
    int64_t f = x->cols;
    gcn_tensor *y = NULL, *send = NULL;
    gcn_status st;
    scale_offsets(h, f);
    GCN_CHECK(gcn_tensor_create(ctx, &y, (int64_t)h->n_local + h->n_halo, f));
    GCN_CHECK(gcn_tensor_create(ctx, &send, h->n_send, f));
    if (h->n_send > 0 && f > 0)
        GCN_CHECK(ctx->be->copy_cols(ctx, h->n_send, f, x->data, f, h->send_rows->data,
                                     send->data, f, false));
    GCN_CHECK(gcn_comm_alltoallv(ctx, send->data, h->send_f, y->data + (int64_t)h->n_local * f,
                                 h->recv_f));
    GCN_CHECK(ctx->be->copy(ctx, y->data, x->data, (size_t)(h->n_local * f) * sizeof(float)));
    *ext = y;
    y = NULL;
cleanup:
    gcn_tensor_free(&send);
    gcn_tensor_free(&y);
    return st;
}

gcn_status gcn_halo_scatter(gcn_ctx *ctx, const gcn_csr *a, const gcn_tensor *dext, float *dx,
                            bool acc)
{
    gcn_halo *h = a->priv->halo;
    int64_t f = dext->cols, local = (int64_t)h->n_local * f;
    gcn_tensor *back = NULL;
    gcn_status st;
    scale_offsets(h, f);
    GCN_CHECK(gcn_tensor_create(ctx, &back, h->n_send, f));
    GCN_CHECK(gcn_comm_alltoallv(ctx, dext->data + local, h->recv_f, back->data, h->send_f));
    if (acc)
        GCN_CHECK(ctx->be->axpby(ctx, local, 1.0f, dext->data, 1.0f, dx));
    else
        GCN_CHECK(ctx->be->copy(ctx, dx, dext->data, (size_t)local * sizeof(float)));
    if (h->n_send > 0 && f > 0)
        GCN_CHECK(gcn_spmm_run(ctx, gcn_spmm_one_step_kernel(ctx), h->scatter, back->data, dx,
                               (int)f, true));
cleanup:
    gcn_tensor_free(&back);
    return st;
}
