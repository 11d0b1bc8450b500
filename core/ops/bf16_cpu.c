/* bf16 operands on the CPU: each widened exactly to fp32 into the context's
 * host pool, the fp32 function run on the copies, and what is stored bf16
 * rounded once at the end, so the values match a GPU kernel that reads
 * bf16, computes in fp32 and rounds its output. */
#include "core/bf16.h"
#include "cpu.h"
#include "core/parallel.h"

/* The [rows, cols] matrix x (rows ld apart) widened into a new packed
 * fp32 block *out of *bytes bytes from the pool (release with
 * gcn_cpu_release). */
static gcn_status widen(gcn_ctx *ctx, const uint16_t *x, int64_t rows, int64_t cols, int64_t ld,
                        float **out, size_t *bytes)
{
    *bytes = (size_t)rows * (size_t)cols * sizeof **out;
    GCN_TRY(gcn_cpu_alloc(ctx, (void **)out, *bytes));
    float *w = *out;
    GCN_PAR_FOR(gcn_par_threads(ctx, rows * cols))
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            w[r * cols + c] = gcn_bf16_to_float(x[r * ld + c]);
    return GCN_OK;
}

gcn_status gcn_cpu_widen(gcn_ctx *ctx, const uint16_t *x, int64_t n, float **out)
{
    size_t bytes;
    return widen(ctx, x, 1, n, n, out, &bytes);
}

gcn_status gcn_cpu_gemm_bf16(gcn_ctx *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n,
                             int64_t k, float alpha, const uint16_t *a, int64_t lda,
                             const uint16_t *b, int64_t ldb, float beta, void *c, int64_t ldc,
                             bool c_bf16)
{
    if (m <= 0 || n <= 0)
        return GCN_OK;
    int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
    int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
    float *wa = NULL, *wb = NULL, *wc = NULL;
    size_t a_bytes = 0, b_bytes = 0, c_bytes = 0;
    gcn_status st;
    GCN_CHECK(widen(ctx, a, a_rows, a_cols, lda, &wa, &a_bytes));
    GCN_CHECK(widen(ctx, b, b_rows, b_cols, ldb, &wb, &b_bytes));
    if (!c_bf16) {
        st = gcn_cpu_gemm(ctx, trans_a, trans_b, m, n, k, alpha, wa, a_cols, wb, b_cols, beta,
                          c, ldc);
        goto cleanup;
    }
    uint16_t *c16 = c;
    if (beta != 0.0f) {
        GCN_CHECK(widen(ctx, c16, m, n, ldc, &wc, &c_bytes));
    } else {
        c_bytes = (size_t)m * (size_t)n * sizeof *wc;
        GCN_CHECK(gcn_cpu_alloc(ctx, (void **)&wc, c_bytes));
    }
    GCN_CHECK(gcn_cpu_gemm(ctx, trans_a, trans_b, m, n, k, alpha, wa, a_cols, wb, b_cols, beta,
                           wc, n));
    GCN_PAR_FOR(gcn_par_threads(ctx, m * n))
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            c16[i * ldc + j] = gcn_bf16_from_float(wc[i * n + j]);
cleanup:
    if (wc)
        gcn_cpu_release(ctx, wc, c_bytes);
    if (wb)
        gcn_cpu_release(ctx, wb, b_bytes);
    if (wa)
        gcn_cpu_release(ctx, wa, a_bytes);
    return st;
}
