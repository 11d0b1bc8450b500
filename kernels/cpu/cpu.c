/* The CPU SpMM, Y (+)= A X, on the context's threads.
 *
 * Work mapping: the rows are cut into one contiguous range per thread with
 * equal shares of non-zeros plus rows (an empty row still costs its write;
 * a row is never split), and each row is summed by one thread in non-zero
 * order, so the result is the same bits for any thread count.  A row's
 * output is built TILE columns at a time in a local accumulator the
 * compiler keeps in vector registers (8 SSE registers), while the X rows
 * of the non-zeros PREFETCH ahead are fetched into the cache.  Each X row
 * is read whole, TILE columns after TILE columns, which the hardware
 * prefetcher follows: slicing X's columns so a slice stays in the cache
 * measured slower on ogbn-arxiv (F = 128, 256), so X is not sliced.
 * The bf16 variant is the same loop over widened bf16 values, each output
 * rounded once (core/bf16.h), as the CUDA kernels round theirs. */
#include "core/bf16.h"
#include "core/internal.h"
#include "core/parallel.h"
#include "kernels/spmm/impls.h"

#define TILE 32
#define PREFETCH 4

/* acc[0, w) += the sum over non-zeros e in [e0, e1) of values[e] *
 * x[col_idx[e] * feat + (0, w)], in non-zero order.  W is TILE in the
 * full tiles, a constant the loop is unrolled and vectorised for. */
#define SUM_ROW(W)                                                                    \
    for (int32_t e = e0; e < e1; e++) {                                               \
        const float *restrict xr = x + (int64_t)col_idx[e] * feat;                    \
        if (e + PREFETCH < nnz)                                                       \
            __builtin_prefetch(x + (int64_t)col_idx[e + PREFETCH] * feat);            \
        float v = values[e];                                                          \
        GCN_SIMD                                                                      \
        for (int j = 0; j < (W); j++)                                                 \
            acc[j] += v * xr[j];                                                      \
    }

/* y[0, w) (+)= row i of A times columns [0, w) of x, w <= TILE. */
static inline void row_tile(const gcn_csr *a, int32_t i, const float *restrict x, int64_t feat,
                            float *restrict y, int w, bool accumulate)
{
    const int32_t *restrict col_idx = a->col_idx;
    const float *restrict values = a->values;
    int32_t e0 = a->row_ptr[i], e1 = a->row_ptr[i + 1], nnz = a->nnz;
    float acc[TILE];
    for (int j = 0; j < w; j++)
        acc[j] = accumulate ? y[j] : 0.0f;
    if (w == TILE)
        SUM_ROW(TILE)
    else
        SUM_ROW(w)
    for (int j = 0; j < w; j++)
        y[j] = acc[j];
}

/* Rows [r0, r1) of y. */
static void rows(const gcn_csr *a, const float *x, float *y, int feat, bool accumulate,
                 int32_t r0, int32_t r1)
{
    for (int32_t i = r0; i < r1; i++)
        for (int c = 0; c < feat; c += TILE)
            row_tile(a, i, x + c, feat, y + (int64_t)i * feat + c,
                     feat - c < TILE ? feat - c : TILE, accumulate);
}

/* The bf16 variant of row_tile: the row's sum in fp32 over widened x,
 * plus y's old value when accumulating, rounded once into y. */
static inline void row_tile_bf16(const gcn_csr *a, int32_t i, const uint16_t *restrict x,
                                 int64_t feat, uint16_t *restrict y, int w, bool accumulate)
{
    const int32_t *restrict col_idx = a->col_idx;
    const float *restrict values = a->values;
    float acc[TILE] = {0};
    for (int32_t e = a->row_ptr[i], e1 = a->row_ptr[i + 1]; e < e1; e++) {
        const uint16_t *restrict xr = x + (int64_t)col_idx[e] * feat;
        if (e + PREFETCH < a->nnz)
            __builtin_prefetch(x + (int64_t)col_idx[e + PREFETCH] * feat);
        float v = values[e];
        GCN_SIMD
        for (int j = 0; j < w; j++)
            acc[j] += v * gcn_bf16_to_float(xr[j]);
    }
    for (int j = 0; j < w; j++)
        y[j] = gcn_bf16_from_float(accumulate ? acc[j] + gcn_bf16_to_float(y[j]) : acc[j]);
}

static void rows_bf16(const gcn_csr *a, const uint16_t *x, uint16_t *y, int feat,
                      bool accumulate, int32_t r0, int32_t r1)
{
    for (int32_t i = r0; i < r1; i++)
        for (int c = 0; c < feat; c += TILE)
            row_tile_bf16(a, i, x + c, feat, y + (int64_t)i * feat + c,
                          feat - c < TILE ? feat - c : TILE, accumulate);
}

static bool cpu_supports(const gcn_csr *a, int feat)
{
    return a->device == GCN_DEVICE_CPU && feat >= 1;
}

static gcn_status cpu_plan(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    (void)ctx;
    (void)a;
    (void)feat;
    *plan = NULL;
    return GCN_OK;
}

static gcn_status cpu_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x, float *y,
                          int feat, bool accumulate)
{
    (void)plan;
#pragma omp parallel num_threads(gcn_par_threads(ctx, ((int64_t)a->nnz + a->n_rows) * feat))
    {
        int t = gcn_par_thread(), team = gcn_par_team();
        rows(a, x, y, feat, accumulate, gcn_par_row_start(a->row_ptr, a->n_rows, a->nnz, t, team),
             gcn_par_row_start(a->row_ptr, a->n_rows, a->nnz, t + 1, team));
    }
    return GCN_OK;
}

static gcn_status cpu_run_bf16(gcn_ctx *ctx, void *plan, const gcn_csr *a, const uint16_t *x,
                               uint16_t *y, int feat, bool accumulate)
{
    (void)plan;
#pragma omp parallel num_threads(gcn_par_threads(ctx, ((int64_t)a->nnz + a->n_rows) * feat))
    {
        int t = gcn_par_thread(), team = gcn_par_team();
        rows_bf16(a, x, y, feat, accumulate,
                  gcn_par_row_start(a->row_ptr, a->n_rows, a->nnz, t, team),
                  gcn_par_row_start(a->row_ptr, a->n_rows, a->nnz, t + 1, team));
    }
    return GCN_OK;
}

static void cpu_free_plan(void *plan)
{
    (void)plan;
}

const gcn_spmm_impl gcn_spmm_cpu = {
    .size = sizeof(gcn_spmm_impl),
    .name = "cpu",
    .device = GCN_DEVICE_CPU,
    .deterministic = true,
    .roles = GCN_SPMM_ROLE_WHOLE,
    .supports = cpu_supports,
    .plan = cpu_plan,
    .run = cpu_run,
    .free_plan = cpu_free_plan,
    .plan_bf16 = cpu_plan,
    .run_bf16 = cpu_run_bf16,
};
