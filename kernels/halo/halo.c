/* The products of a rank's block of a partitioned matrix, A = [A_own |
 * A_halo] (its own columns, then its halo's), with the halo exchange under
 * them: Y = A_own X + A_halo X_halo, the rows X_halo fetched from their
 * owners while A_own X runs; backward dX = A_own^T dY + the gradients of
 * the rows this rank sent, A_halo^T dY sent back to the owners while
 * A_own^T dY runs, each owner adding what it receives through a
 * deterministic sparse product.  The exchange runs in K chunks (each the
 * k-th of K equal runs of every peer's block), so that only about two
 * chunks of halo rows are held at a time and a chunk travels while the
 * previous one is multiplied; A_halo is kept as K matrices, one per
 * chunk's columns. */
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "kernels/spmm/spmm.h"
#include "halo.h"
#include "kernels/adaptgear/adaptgear.h"
#include "kernels/spmm/internal.h"

/* One chunk of the exchange: of each peer's block of rows, sent or
 * received, the k-th of K equal runs. */
typedef struct halo_chunk {
    int64_t *send_off, *recv_off; /* host [n_ranks + 1], in rows */
    int64_t *send_f, *recv_f;     /* the same in floats at the halo's width, or of the
                                   * bf16 wire (gcn_halo_set_wire) */
    int32_t n_send, n_halo;
    gcn_index *send_rows;         /* [n_send] local rows to pack, peer by peer */
    gcn_csr *part;                /* [n_local, n_halo]: A_halo's columns of the chunk */
    gcn_csr *scatter;             /* [n_local, n_send]: row r has a 1 at each send slot of r */
} halo_chunk;

struct gcn_halo {
    int n_ranks, n_chunks;
    int32_t n_local, n_halo;
    int64_t width;                /* the width of the last call, 0 before the first */
    bool wire_bf16;               /* rows travel as bf16 (gcn_halo_set_wire) */
    bool scaled_bf16;             /* the offsets are the bf16 wire's at `width` */
    gcn_csr *own;                 /* [n_local, n_local]: A_own */
    halo_chunk *chunk;            /* [n_chunks] */
};

void gcn_halo_free(gcn_halo *h)
{
    if (!h)
        return;
    for (int k = 0; h->chunk && k < h->n_chunks; k++) {
        halo_chunk *c = &h->chunk[k];
        gcn_index_free(&c->send_rows);
        gcn_csr_free(&c->part);
        gcn_csr_free(&c->scatter);
        free(c->send_off);
        free(c->recv_off);
        free(c->send_f);
        free(c->recv_f);
    }
    free(h->chunk);
    gcn_csr_free(&h->own);
    free(h);
}

static void halo_free_hook(void *h)
{
    gcn_halo_free(h);
}

gcn_halo *gcn_halo_of(const gcn_csr *a)
{
    return gcn_csr_slot_get(a, GCN_CSR_SLOT_HALO);
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

/* The scatter matrix of n local rows: row r lists, in slot order, the
 * send slots (of m) holding r. */
static gcn_status build_scatter(gcn_ctx *ctx, int32_t n, int32_t m, const int32_t *send_rows,
                                gcn_csr **out)
{
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
    st = gcn_csr_create(ctx, out, n, m, m, row_ptr, col_idx, NULL);
cleanup:
    free(row_ptr);
    free(col_idx);
    free(fill);
    return st;
}

/* The first row of run k of K equal runs of a block [lo, hi). */
static int64_t run_start(int64_t lo, int64_t hi, int k, int n_chunks)
{
    return lo + (hi - lo) * k / n_chunks;
}

/* Chunk k's offsets (rows) from the whole exchange's off: the k-th run of
 * each peer's block. */
static void chunk_offsets(const int64_t *off, int ranks, int k, int n_chunks, int64_t *out)
{
    out[0] = 0;
    for (int p = 0; p < ranks; p++)
        out[p + 1] = out[p] + run_start(off[p], off[p + 1], k + 1, n_chunks) -
                     run_start(off[p], off[p + 1], k, n_chunks);
}

/* Chunk k's send side: offsets, the rows it packs and their scatter matrix. */
static gcn_status chunk_send(gcn_ctx *ctx, gcn_halo *h, int k, const int32_t *send_rows,
                             const int64_t *send_off)
{
    halo_chunk *c = &h->chunk[k];
    int ranks = h->n_ranks;
    chunk_offsets(send_off, ranks, k, h->n_chunks, c->send_off);
    c->n_send = (int32_t)c->send_off[ranks];
    int32_t *rows = malloc((size_t)(c->n_send > 0 ? c->n_send : 1) * sizeof *rows);
    if (!rows)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "set_halo: out of host memory");
    for (int p = 0, w = 0; p < ranks; p++)
        for (int64_t i = run_start(send_off[p], send_off[p + 1], k, h->n_chunks);
             i < run_start(send_off[p], send_off[p + 1], k + 1, h->n_chunks); i++)
            rows[w++] = send_rows[i];
    gcn_status st = gcn_index_from_host(ctx, &c->send_rows, rows, c->n_send);
    if (st == GCN_OK)
        st = build_scatter(ctx, h->n_local, c->n_send, rows, &c->scatter);
    free(rows);
    return st;
}

/* The halo of block a, its exchange in n_chunks chunks (the count every
 * rank passes alike), without the parts of A yet. */
static gcn_status halo_new(gcn_ctx *ctx, const gcn_csr *a, const int32_t *send_rows,
                           const int64_t *send_off, const int64_t *recv_off, int n_chunks,
                           gcn_halo **out)
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
    if (n_chunks < 1 || n_chunks > GCN_HALO_MAX_CHUNKS)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "set_halo: %d chunks (1 to %d)", n_chunks,
                         GCN_HALO_MAX_CHUNKS);
    for (int64_t i = 0; i < n_send; i++)
        if (send_rows[i] < 0 || send_rows[i] >= a->n_rows)
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                             "set_halo: send_rows[%lld] = %d is not a row of the %d-row block",
                             (long long)i, send_rows[i], a->n_rows);
    gcn_halo *h = calloc(1, sizeof *h);
    size_t off_bytes = (size_t)(ranks + 1) * sizeof(int64_t);
    gcn_status st = GCN_OK;
    if (!h || !(h->chunk = calloc((size_t)n_chunks, sizeof *h->chunk))) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "set_halo: out of host memory");
        goto cleanup;
    }
    h->n_ranks = ranks;
    h->n_chunks = n_chunks;
    h->n_local = a->n_rows;
    h->n_halo = (int32_t)n_halo;
    for (int k = 0; k < n_chunks; k++) {
        halo_chunk *c = &h->chunk[k];
        if (!(c->send_off = malloc(off_bytes)) || !(c->recv_off = malloc(off_bytes)) ||
            !(c->send_f = malloc(off_bytes)) || !(c->recv_f = malloc(off_bytes))) {
            st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "set_halo: out of host memory");
            goto cleanup;
        }
        chunk_offsets(recv_off, ranks, k, n_chunks, c->recv_off);
        c->n_halo = (int32_t)c->recv_off[ranks];
        GCN_CHECK(chunk_send(ctx, h, k, send_rows, send_off));
    }
    *out = h;
    return GCN_OK;
cleanup:
    gcn_halo_free(h);
    return st;
}

/* A_own and the chunks' parts of A_halo of the n-row block (rp, ci, v on
 * the host; v NULL: all ones): each row's entries of columns below n, then
 * the others, each in its chunk's matrix with the column renumbered within
 * the chunk (halo column j of peer p's block lies in the chunk whose run of
 * that block holds it). */
static gcn_status split_block(gcn_ctx *ctx, gcn_halo *h, const int64_t *recv_off,
                              const int32_t *rp, const int32_t *ci, const float *v)
{
    int32_t n = h->n_local, nnz = rp[n], K = h->n_chunks;
    size_t m = (size_t)(nnz ? nnz : 1);
    int32_t *orp = calloc((size_t)n + 1, sizeof *orp), *oci = malloc(m * sizeof *oci);
    size_t nh = (size_t)(h->n_halo > 0 ? h->n_halo : 1);
    int32_t *where = malloc(nh * sizeof *where), *which = malloc(nh * sizeof *which);
    int32_t *hrp = calloc((size_t)K * ((size_t)n + 1), sizeof *hrp), *hci = malloc(m * sizeof *hci);
    int32_t *fill = calloc((size_t)K, sizeof *fill), *base = calloc((size_t)K + 1, sizeof *base);
    float *ov = v ? malloc(m * sizeof *ov) : NULL, *hv = v ? malloc(m * sizeof *hv) : NULL;
    gcn_status st = GCN_OK;
    if (!orp || !oci || !where || !which || !hrp || !hci || !fill || !base ||
        (v && (!ov || !hv))) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "set_halo: out of host memory splitting the block");
        goto cleanup;
    }
    /* halo column j: its chunk which[j] and its column there where[j] */
    for (int k = 0; k < K; k++) {
        const halo_chunk *c = &h->chunk[k];
        for (int p = 0; p < h->n_ranks; p++) {
            int64_t lo = run_start(recv_off[p], recv_off[p + 1], k, K);
            int64_t hi = run_start(recv_off[p], recv_off[p + 1], k + 1, K);
            for (int64_t j = lo; j < hi; j++) {
                where[j] = (int32_t)(c->recv_off[p] + (j - lo));
                which[j] = k;
            }
        }
    }
    /* entries of each chunk, counted per row, then placed */
    for (int32_t i = 0; i < n; i++)
        for (int32_t e = rp[i]; e < rp[i + 1]; e++)
            if (ci[e] >= n)
                hrp[(size_t)which[ci[e] - n] * (n + 1) + i + 1]++;
    for (int k = 0; k < K; k++) {
        int32_t *r = hrp + (size_t)k * (n + 1);
        for (int32_t i = 0; i < n; i++)
            r[i + 1] += r[i];
        base[k + 1] = base[k] + r[n];
    }
    int32_t n_own = 0;
    for (int32_t i = 0; i < n; i++) {
        for (int32_t e = rp[i]; e < rp[i + 1]; e++) {
            if (ci[e] < n) {
                if (v)
                    ov[n_own] = v[e];
                oci[n_own++] = ci[e];
                continue;
            }
            int k = which[ci[e] - n];
            int32_t at = base[k] + hrp[(size_t)k * (n + 1) + i] + fill[k]++;
            hci[at] = where[ci[e] - n];
            if (v)
                hv[at] = v[e];
        }
        orp[i + 1] = n_own;
        for (int k = 0; k < K; k++)
            fill[k] = 0;
    }
    GCN_CHECK(gcn_csr_create(ctx, &h->own, n, n, n_own, orp, oci, ov));
    for (int k = 0; k < K; k++)
        GCN_CHECK(gcn_csr_create(ctx, &h->chunk[k].part, n, h->chunk[k].n_halo,
                                 base[k + 1] - base[k], hrp + (size_t)k * (n + 1),
                                 hci + base[k], hv ? hv + base[k] : NULL));
cleanup:
    free(orp);
    free(oci);
    free(where);
    free(which);
    free(hrp);
    free(hci);
    free(fill);
    free(base);
    free(ov);
    free(hv);
    return st;
}

/* The halo of a and its parts from a's arrays on the host, attached to a. */
static gcn_status attach_halo(gcn_ctx *ctx, gcn_csr *a, const int32_t *rp, const int32_t *ci,
                              const float *v, const int32_t *send_rows,
                              const int64_t *send_off, const int64_t *recv_off, int n_chunks)
{
    gcn_halo *h = NULL;
    GCN_TRY(halo_new(ctx, a, send_rows, send_off, recv_off, n_chunks, &h));
    gcn_status st = split_block(ctx, h, recv_off, rp, ci, v);
    if (st != GCN_OK) {
        gcn_halo_free(h);
        return st;
    }
    gcn_csr_slot_set(a, GCN_CSR_SLOT_HALO, h, halo_free_hook);
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
    if (gcn_halo_of(a))
        return GCN_ERROR(ctx, GCN_ERR_STATE, "set_halo: the matrix has a halo already");
    if (gcn_csr_community_levels(a) > 0 || gcn_spmm_fixed_kernel(a))
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
        st = attach_halo(ctx, a, rp, ci, v, send_rows, send_off, recv_off, 1);
    free(rp);
    free(ci);
    free(v);
    return st;
}

gcn_status gcn_csr_create_block(gcn_ctx *ctx, gcn_csr **out, int32_t n_local, int32_t n_cols,
                                int32_t nnz, const int32_t *row_ptr, const int32_t *col_idx,
                                const float *values, const int32_t *send_rows,
                                const int64_t *send_off, const int64_t *recv_off, int n_chunks)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, out);
    *out = NULL;
    GCN_TRY(check_halo_args(ctx, send_rows, send_off, recv_off));
    gcn_csr *a = NULL;
    GCN_TRY(gcn_csr_shell(ctx, n_local, n_cols, nnz, row_ptr, col_idx, &a));
    gcn_status st = attach_halo(ctx, a, row_ptr, col_idx, values, send_rows, send_off, recv_off,
                                n_chunks);
    if (st != GCN_OK)
        gcn_csr_free(&a);
    *out = a;
    return st;
}

int gcn_halo_chunks_for(int64_t n_local, int64_t n_send, int64_t n_halo)
{
    int64_t k = n_local > 0 ? (2 * (n_send + n_halo) + n_local - 1) / n_local : 1;
    return k < 1 ? 1 : k > GCN_HALO_MAX_CHUNKS ? GCN_HALO_MAX_CHUNKS : (int)k;
}

int gcn_halo_parts(const gcn_csr *a, const gcn_csr **parts, int max)
{
    const gcn_halo *h = gcn_halo_of(a);
    for (int k = 0; k <= h->n_chunks && k < max; k++)
        parts[k] = k == 0 ? h->own : h->chunk[k - 1].part;
    return h->n_chunks + 1;
}

void gcn_halo_set_wire(gcn_halo *h, bool bf16)
{
    if (h)
        h->wire_bf16 = bf16;
}

/* The float offsets of peer runs off[] of rows of width f: f floats a row,
 * or on the bf16 wire f bf16 values a row, each peer's run padded to a
 * whole float so that it starts on one. */
static void wire_offsets(const int64_t *off, int ranks, int64_t f, bool bf16, int64_t *out)
{
    out[0] = 0;
    for (int p = 0; p < ranks; p++) {
        int64_t n = (off[p + 1] - off[p]) * f;
        out[p + 1] = out[p] + (bf16 ? (n + 1) / 2 : n);
    }
}

/* The chunks' offsets in floats at width f, kept for the next call at the
 * same width and wire. */
static void scale_offsets(gcn_halo *h, int64_t f)
{
    if (h->width == f && h->scaled_bf16 == h->wire_bf16)
        return;
    for (int k = 0; k < h->n_chunks; k++) {
        halo_chunk *c = &h->chunk[k];
        wire_offsets(c->send_off, h->n_ranks, f, h->wire_bf16, c->send_f);
        wire_offsets(c->recv_off, h->n_ranks, f, h->wire_bf16, c->recv_f);
    }
    h->width = f;
    h->scaled_bf16 = h->wire_bf16;
}

/* On the bf16 wire, *t (rows of width f by peer runs rows[]) is replaced
 * by its bf16 rounding laid out by the float offsets wire[]. */
static gcn_status to_wire(gcn_ctx *ctx, const gcn_halo *h, const int64_t *rows,
                          const int64_t *wire, gcn_tensor **t)
{
    if (!h->wire_bf16)
        return GCN_OK;
    int64_t f = (*t)->cols;
    gcn_tensor *w = NULL;
    GCN_TRY(gcn_tensor_create(ctx, &w, 1, wire[h->n_ranks]));
    uint16_t *dst = (uint16_t *)w->data;
    gcn_status st = GCN_OK;
    for (int p = 0; p < h->n_ranks && st == GCN_OK; p++)
        st = ctx->be->to_bf16(ctx, (rows[p + 1] - rows[p]) * f, (*t)->data + rows[p] * f,
                              dst + 2 * wire[p], false);
    gcn_tensor_free(t);
    *t = w;
    return st;
}

/* The reverse of to_wire: *t, received on the bf16 wire, is replaced by
 * its rows of width f widened to fp32. */
static gcn_status from_wire(gcn_ctx *ctx, const gcn_halo *h, const int64_t *rows,
                            const int64_t *wire, int64_t f, gcn_tensor **t)
{
    if (!h->wire_bf16)
        return GCN_OK;
    gcn_tensor *w = NULL;
    GCN_TRY(gcn_tensor_create(ctx, &w, rows[h->n_ranks], f));
    const uint16_t *src = (const uint16_t *)(*t)->data;
    gcn_status st = GCN_OK;
    for (int p = 0; p < h->n_ranks && st == GCN_OK; p++)
        st = ctx->be->from_bf16(ctx, (rows[p + 1] - rows[p]) * f, src + 2 * wire[p],
                                w->data + rows[p] * f, false);
    gcn_tensor_free(t);
    *t = w;
    return st;
}

/* A_own, or A_own + alpha I (kept with A_own, as gcn_spmm_self keeps it). */
static gcn_status own_part(gcn_ctx *ctx, const gcn_halo *h, float alpha, const gcn_csr **out)
{
    *out = h->own;
    return alpha != 0.0f ? gcn_spmm_self_matrix(ctx, h->own, alpha, out) : GCN_OK;
}

/* Packs chunk k's rows of x (width f) into a new tensor *send. */
static gcn_status pack(gcn_ctx *ctx, const halo_chunk *c, const gcn_tensor *x, gcn_tensor **send)
{
    int64_t f = x->cols;
    GCN_TRY(gcn_tensor_create(ctx, send, c->n_send, f));
    if (c->n_send > 0 && f > 0)
        return ctx->be->copy_cols(ctx, c->n_send, f, x->data, f, c->send_rows->data,
                                  (*send)->data, f, false);
    return GCN_OK;
}

/* Starts chunk k's exchange of send into a new tensor *recv of the
 * chunk's halo rows (reverse: recv holds its send rows, send its halo's),
 * or on the bf16 wire of their bf16 values. */
static gcn_status begin(gcn_ctx *ctx, const gcn_halo *h, const halo_chunk *c,
                        const gcn_tensor *send, bool reverse, int64_t f, gcn_tensor **recv)
{
    const int64_t *in = reverse ? c->send_f : c->recv_f;
    if (h->wire_bf16)
        GCN_TRY(gcn_tensor_create(ctx, recv, 1, in[h->n_ranks]));
    else
        GCN_TRY(gcn_tensor_create(ctx, recv, reverse ? c->n_send : c->n_halo, f));
    return gcn_comm_alltoallv_begin(ctx, send->data, reverse ? c->recv_f : c->send_f,
                                    (*recv)->data, reverse ? c->send_f : c->recv_f);
}

/* Chunk k's product of its halo rows (A_halo_k h) added into y. */
static gcn_status use_halo(gcn_ctx *ctx, const halo_chunk *c, const gcn_tensor *halo, float *y)
{
    if (c->n_halo == 0 || halo->cols == 0)
        return GCN_OK;
    return gcn_spmm_apply(ctx, c->part, GCN_DTYPE_FP32, halo->data, y, (int)halo->cols, true);
}

/* A_halo_k^T dy into a new tensor *dhalo of chunk k's halo rows. */
static gcn_status halo_grad(gcn_ctx *ctx, const halo_chunk *c, const gcn_tensor *dy,
                            gcn_tensor **dhalo)
{
    int64_t f = dy->cols;
    GCN_TRY(gcn_tensor_create(ctx, dhalo, c->n_halo, f));
    if (c->n_halo > 0 && f > 0)
        return gcn_spmm_apply(ctx, gcn_csr_transpose(c->part), GCN_DTYPE_FP32, dy->data,
                              (*dhalo)->data, (int)f, false);
    return GCN_OK;
}

/* Chunk k's returned gradients of the rows this rank sent added into dx. */
static gcn_status use_back(gcn_ctx *ctx, const halo_chunk *c, const gcn_tensor *back, float *dx)
{
    if (c->n_send == 0 || back->cols == 0)
        return GCN_OK;
    return gcn_spmm_run(ctx, gcn_spmm_one_step_kernel(ctx), c->scatter, back->data, dx,
                        (int)back->cols, true);
}

/* What one direction of the chunked exchange does with each chunk: make
 * what this rank sends from src, and use what it receives on dst. */
typedef struct halo_step {
    bool reverse; /* backward: the halo rows' gradients go back to their owners */
    gcn_status (*make)(gcn_ctx *ctx, const halo_chunk *c, const gcn_tensor *src,
                       gcn_tensor **out);
    gcn_status (*use)(gcn_ctx *ctx, const halo_chunk *c, const gcn_tensor *in, float *dst);
} halo_step;

/* What chunk c sends: step->make's rows, put on the wire. */
static gcn_status make_sent(gcn_ctx *ctx, const gcn_halo *h, const halo_chunk *c,
                            const halo_step *step, const gcn_tensor *src, gcn_tensor **out)
{
    GCN_TRY(step->make(ctx, c, src, out));
    return to_wire(ctx, h, step->reverse ? c->recv_off : c->send_off,
                   step->reverse ? c->recv_f : c->send_f, out);
}

/* dst (+)= first src (acc), then each chunk's use: chunk 0 starts before
 * the first product, and chunk k + 1 is made and travels while chunk k is
 * used. */
static gcn_status run_chunks(gcn_ctx *ctx, gcn_halo *h, const halo_step *step,
                             const gcn_tensor *src, const gcn_csr *first, bool acc, float *dst)
{
    int K = h->n_chunks;
    int64_t f = src->cols;
    gcn_tensor *out = NULL, *next = NULL, *in = NULL;
    bool started = false;
    gcn_status st;
    scale_offsets(h, f);
    GCN_CHECK(make_sent(ctx, h, &h->chunk[0], step, src, &out));
    GCN_CHECK(begin(ctx, h, &h->chunk[0], out, step->reverse, f, &in));
    started = true;
    if (f > 0 && first->n_rows > 0)
        GCN_CHECK(gcn_spmm_apply(ctx, first, GCN_DTYPE_FP32, src->data, dst, (int)f, acc));
    for (int k = 0; k < K; k++) {
        if (k + 1 < K)
            GCN_CHECK(make_sent(ctx, h, &h->chunk[k + 1], step, src, &next));
        started = false;
        GCN_CHECK(gcn_comm_alltoallv_end(ctx));
        gcn_tensor_free(&out);
        gcn_tensor *mine = in;
        in = NULL;
        st = GCN_OK;
        if (k + 1 < K) {
            out = next;
            next = NULL;
            st = begin(ctx, h, &h->chunk[k + 1], out, step->reverse, f, &in);
            started = st == GCN_OK;
        }
        const halo_chunk *c = &h->chunk[k];
        if (st == GCN_OK) /* received: the halo's rows, or back: the sent rows' */
            st = from_wire(ctx, h, step->reverse ? c->send_off : c->recv_off,
                           step->reverse ? c->send_f : c->recv_f, f, &mine);
        if (st == GCN_OK)
            st = step->use(ctx, c, mine, dst);
        gcn_tensor_free(&mine);
        GCN_CHECK(st);
    }
cleanup:
    if (started) /* a product failed with an exchange in flight: it still ends */
        gcn_comm_alltoallv_end(ctx);
    gcn_tensor_free(&out);
    gcn_tensor_free(&next);
    gcn_tensor_free(&in);
    return st;
}

gcn_status gcn_halo_spmm(gcn_ctx *ctx, const gcn_csr *a, const gcn_tensor *x, float alpha,
                         float *y)
{
    static const halo_step forward = {false, pack, use_halo};
    gcn_halo *h = gcn_halo_of(a);
    const gcn_csr *own;
    GCN_TRY(own_part(ctx, h, alpha, &own));
    return run_chunks(ctx, h, &forward, x, own, false, y);
}

gcn_status gcn_halo_spmm_grad(gcn_ctx *ctx, const gcn_csr *a, const gcn_tensor *dy,
                              float alpha, float *dx, bool acc)
{
    static const halo_step backward = {true, halo_grad, use_back};
    gcn_halo *h = gcn_halo_of(a);
    const gcn_csr *own;
    GCN_TRY(own_part(ctx, h, alpha, &own));
    return run_chunks(ctx, h, &backward, dy, gcn_csr_transpose(own), acc, dx);
}
