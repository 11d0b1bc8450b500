/* The products of a rank's block of a partitioned matrix, A = [A_own |
 * A_halo] (its own columns, then its halo's), with the halo exchange under
 * them: Y = A_own X + A_halo X_halo, the rows X_halo fetched from their
 * owners (one all-to-all) while A_own X runs; backward dX = A_own^T dY +
 * the gradients of the rows this rank sent, A_halo^T dY computed first and
 * sent back to the owners while A_own^T dY runs, each owner adding what it
 * receives through one deterministic sparse product. */
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
    gcn_csr *own;                 /* [n_local, n_local]: A_own */
    gcn_csr *halo;                /* [n_local, n_halo]: A_halo, columns from 0 */
};

void gcn_halo_free(gcn_halo *h)
{
    if (!h)
        return;
    gcn_index_free(&h->send_rows);
    gcn_csr_free(&h->scatter);
    gcn_csr_free(&h->own);
    gcn_csr_free(&h->halo);
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

/* A_own and A_halo of the n-row block (rp, ci, v on the host; v NULL:
 * all ones): each row's entries of columns below n, then the others with n
 * taken off their columns. */
static gcn_status split_block(gcn_ctx *ctx, gcn_halo *h, int32_t n, const int32_t *rp,
                              const int32_t *ci, const float *v)
{
    int32_t nnz = rp[n], n_own = 0, n_out = 0;
    size_t m = (size_t)(nnz ? nnz : 1);
    int32_t *orp = calloc((size_t)n + 1, sizeof *orp), *hrp = calloc((size_t)n + 1, sizeof *hrp);
    int32_t *oci = malloc(m * sizeof *oci), *hci = malloc(m * sizeof *hci);
    float *ov = v ? malloc(m * sizeof *ov) : NULL, *hv = v ? malloc(m * sizeof *hv) : NULL;
    gcn_status st = GCN_OK;
    if (!orp || !hrp || !oci || !hci || (v && (!ov || !hv))) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "set_halo: out of host memory splitting the block");
        goto cleanup;
    }
    for (int32_t i = 0; i < n; i++) {
        for (int32_t e = rp[i]; e < rp[i + 1]; e++) {
            if (ci[e] < n) {
                if (v)
                    ov[n_own] = v[e];
                oci[n_own++] = ci[e];
            } else {
                if (v)
                    hv[n_out] = v[e];
                hci[n_out++] = ci[e] - n;
            }
        }
        orp[i + 1] = n_own;
        hrp[i + 1] = n_out;
    }
    GCN_CHECK(gcn_csr_create(ctx, &h->own, n, n, n_own, orp, oci, ov));
    GCN_CHECK(gcn_csr_create(ctx, &h->halo, n, h->n_halo, n_out, hrp, hci, hv));
cleanup:
    free(orp);
    free(hrp);
    free(oci);
    free(hci);
    free(ov);
    free(hv);
    return st;
}

/* The halo of a and its parts from a's arrays on the host, attached to a. */
static gcn_status attach_halo(gcn_ctx *ctx, gcn_csr *a, const int32_t *rp, const int32_t *ci,
                              const float *v, const int32_t *send_rows,
                              const int64_t *send_off, const int64_t *recv_off)
{
    gcn_halo *h = NULL;
    GCN_TRY(halo_new(ctx, a, send_rows, send_off, recv_off, &h));
    gcn_status st = split_block(ctx, h, a->n_rows, rp, ci, v);
    if (st != GCN_OK) {
        gcn_halo_free(h);
        return st;
    }
    a->priv->halo = h;
    a->priv->halo_free = halo_free_hook;
    gcn_csr_free(&a->priv->transpose); /* backward goes through the parts' */
    return GCN_OK;
}

/* The checks set_halo makes of its context and offsets. */
static gcn_status check_halo_args(gcn_ctx *ctx, const int32_t *send_rows,
                                  const int64_t *send_off, const int64_t *recv_off)
{
    GCN_ARG(ctx, send_off && recv_off && (send_rows || send_off[0] == 0));
    if (gcn_ctx_comm_kind(ctx) == 0)
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "set_halo: the context is in no communicator (gcn_comm_init)");
    return GCN_OK;
}

gcn_status gcn_csr_set_halo(gcn_ctx *ctx, gcn_csr *a, const int32_t *send_rows,
                            const int64_t *send_off, const int64_t *recv_off)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, a && a->priv);
    if (a->priv->ctx != ctx)
        return GCN_ERROR(ctx, GCN_ERR_DEVICE, "set_halo: the matrix belongs to another context");
    GCN_TRY(check_halo_args(ctx, send_rows, send_off, recv_off));
    if (a->priv->halo)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "set_halo: the matrix has a halo already");
    if (a->priv->n_levels > 0 || a->priv->kernel)
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "set_halo: a matrix with community levels or a fixed kernel takes no "
                         "halo");
    size_t m = (size_t)(a->nnz ? a->nnz : 1);
    int32_t *rp = malloc(((size_t)a->n_rows + 1) * sizeof *rp), *ci = malloc(m * sizeof *ci);
    float *v = malloc(m * sizeof *v);
    gcn_status st = rp && ci && v ? GCN_OK
                                  : GCN_ERROR(ctx, GCN_ERR_NOMEM, "set_halo: out of host memory");
    if (st == GCN_OK)
        st = gcn_csr_to_host(ctx, a, rp, ci, v);
    if (st == GCN_OK)
        st = attach_halo(ctx, a, rp, ci, v, send_rows, send_off, recv_off);
    free(rp);
    free(ci);
    free(v);
    return st;
}

gcn_status gcn_csr_create_block(gcn_ctx *ctx, gcn_csr **out, int32_t n_local, int32_t n_cols,
                                int32_t nnz, const int32_t *row_ptr, const int32_t *col_idx,
                                const float *values, const int32_t *send_rows,
                                const int64_t *send_off, const int64_t *recv_off)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, out);
    *out = NULL;
    GCN_TRY(check_halo_args(ctx, send_rows, send_off, recv_off));
    gcn_csr *a = NULL;
    GCN_TRY(gcn_csr_shell(ctx, n_local, n_cols, nnz, row_ptr, col_idx, &a));
    gcn_status st = attach_halo(ctx, a, row_ptr, col_idx, values, send_rows, send_off, recv_off);
    if (st != GCN_OK)
        gcn_csr_free(&a);
    *out = a;
    return st;
}

void gcn_halo_parts(const gcn_csr *a, const gcn_csr **own, const gcn_csr **halo)
{
    *own = a->priv->halo->own;
    *halo = a->priv->halo->halo;
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

/* A_own, or A_own + alpha I (kept with A_own, as gcn_spmm_self keeps it). */
static gcn_status own_part(gcn_ctx *ctx, const gcn_halo *h, float alpha, const gcn_csr **out)
{
    *out = h->own;
    return alpha != 0.0f ? gcn_csr_self_loops(ctx, h->own, alpha, out) : GCN_OK;
}

gcn_status gcn_halo_spmm(gcn_ctx *ctx, const gcn_csr *a, const gcn_tensor *x, float alpha,
                         float *y)
{
    gcn_halo *h = a->priv->halo;
    int64_t f = x->cols;
    const gcn_csr *own;
    gcn_tensor *send = NULL, *halo = NULL;
    gcn_status st;
    scale_offsets(h, f);
    GCN_CHECK(own_part(ctx, h, alpha, &own));
    GCN_CHECK(gcn_tensor_create(ctx, &send, h->n_send, f));
    GCN_CHECK(gcn_tensor_create(ctx, &halo, h->n_halo, f));
    if (h->n_send > 0 && f > 0)
        GCN_CHECK(ctx->be->copy_cols(ctx, h->n_send, f, x->data, f, h->send_rows->data,
                                     send->data, f, false));
    GCN_CHECK(gcn_comm_alltoallv_begin(ctx, send->data, h->send_f, halo->data, h->recv_f));
    if (f > 0)
        st = gcn_spmm_apply(ctx, own, x->data, y, (int)f, false);
    gcn_status end = gcn_comm_alltoallv_end(ctx);
    GCN_CHECK(st != GCN_OK ? st : end);
    if (h->n_halo > 0 && f > 0)
        GCN_CHECK(gcn_spmm_apply(ctx, h->halo, halo->data, y, (int)f, true));
cleanup:
    gcn_tensor_free(&send);
    gcn_tensor_free(&halo);
    return st;
}

gcn_status gcn_halo_spmm_grad(gcn_ctx *ctx, const gcn_csr *a, const gcn_tensor *dy,
                              float alpha, float *dx, bool acc)
{
    gcn_halo *h = a->priv->halo;
    int64_t f = dy->cols;
    const gcn_csr *own;
    gcn_tensor *dhalo = NULL, *back = NULL;
    gcn_status st;
    scale_offsets(h, f);
    GCN_CHECK(own_part(ctx, h, alpha, &own));
    GCN_CHECK(gcn_tensor_create(ctx, &dhalo, h->n_halo, f));
    GCN_CHECK(gcn_tensor_create(ctx, &back, h->n_send, f));
    if (h->n_halo > 0 && f > 0)
        GCN_CHECK(gcn_spmm_apply(ctx, gcn_csr_transpose(h->halo), dy->data, dhalo->data, (int)f,
                                 false));
    GCN_CHECK(gcn_comm_alltoallv_begin(ctx, dhalo->data, h->recv_f, back->data, h->send_f));
    if (f > 0 && h->n_local > 0)
        st = gcn_spmm_apply(ctx, gcn_csr_transpose(own), dy->data, dx, (int)f, acc);
    gcn_status end = gcn_comm_alltoallv_end(ctx);
    GCN_CHECK(st != GCN_OK ? st : end);
    if (h->n_send > 0 && f > 0)
        GCN_CHECK(gcn_spmm_run(ctx, gcn_spmm_one_step_kernel(ctx), h->scatter, back->data, dx,
                               (int)f, true));
cleanup:
    gcn_tensor_free(&dhalo);
    gcn_tensor_free(&back);
    return st;
}
