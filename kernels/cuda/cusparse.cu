/* The cuSPARSE baseline SpMM, "cusparse": y (+)= A x through the generic
 * cusparseSpMM on a CSR matrix with row-major dense operands. */
#include <stdlib.h>

#include "core/cuda_impl.h"
#include "kernels/spmm/impls.h"

/* The plan, built once per (matrix, feature width), holds the descriptors,
 * the algorithm chosen by timing CUSPARSE_SPMM_ALG_DEFAULT, CSR_ALG1 and
 * CSR_ALG2, and that algorithm's external buffer; a run only points the
 * dense descriptors at x and y.  Backward runs this on the matrix's stored
 * transpose, never with opA = TRANSPOSE, which cuSPARSE documents as not
 * deterministic.  Plain products are not deterministic either: measured on
 * an H100 with CUDA 13, all three algorithms split long rows across blocks
 * and combine the parts atomically, so the outputs of a row with thousands
 * of non-zeros differ in the last bits from run to run. */

#define TIMED_RUNS 5 /* runs of each close candidate */
/* A candidate is close when its single timed run is within PROBE_KEEP of
 * the best one's, or within PROBE_SLACK_MS of it: a product of a few
 * microseconds is not judged on one launch. */
#define PROBE_KEEP 1.25f
#define PROBE_SLACK_MS 0.05f

typedef struct cusparse_plan {
    gcn_ctx *ctx;             /* owns the buffer; outlives the plan */
    const int32_t *row_ptr;   /* the matrix the plan describes */
    int64_t n_rows;
    int feat;
    bool empty;               /* nothing to multiply: run only clears y */
    cusparseSpMatDescr_t mat;
    cusparseDnMatDescr_t x, y;
    cusparseSpMMAlg_t alg;
    void *buffer;
    size_t buffer_bytes;
} cusparse_plan;

typedef struct candidate {
    cusparseSpMMAlg_t alg;
    const char *name;
} candidate;

#define N_CANDIDATES 3
static const candidate candidates[N_CANDIDATES] = {
    {CUSPARSE_SPMM_ALG_DEFAULT, "ALG_DEFAULT"},
    {CUSPARSE_SPMM_CSR_ALG1, "CSR_ALG1"},
    {CUSPARSE_SPMM_CSR_ALG2, "CSR_ALG2"},
};

/* cuSPARSE documents CSR as sorted within rows with each (row, column) pair
 * once; matrices with unsorted or repeated columns go to the other kernels. */
static bool cusparse_supports(const gcn_csr *a, int feat)
{
    return a && a->device == GCN_DEVICE_CUDA && feat >= 0 && (a->nnz == 0 || a->values) &&
           gcn_csr_is_sorted(a);
}

static void cusparse_free_plan(void *plan)
{
    cusparse_plan *p = (cusparse_plan *)plan;
    if (!p)
        return;
    if (p->mat)
        cusparseDestroySpMat(p->mat);
    if (p->x)
        cusparseDestroyDnMat(p->x);
    if (p->y)
        cusparseDestroyDnMat(p->y);
    gcn_mem_release(p->ctx, p->buffer, p->buffer_bytes);
    free(p);
}

/* One product with algorithm alg on the plan's scratch operands; *refused
 * when cuSPARSE does not take alg for this case. */
static gcn_status run_alg(gcn_ctx *ctx, cusparseHandle_t h, cusparse_plan *p,
                          cusparseSpMMAlg_t alg, void *buffer, bool *refused)
{
    const float one = 1.0f, zero = 0.0f;
    cusparseStatus_t err =
        cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                     p->mat, p->x, &zero, p->y, CUDA_R_32F, alg, buffer);
    *refused = err == CUSPARSE_STATUS_NOT_SUPPORTED || err == CUSPARSE_STATUS_INVALID_VALUE;
    return *refused ? GCN_OK : GCN_CUSPARSE_ST(err);
}

/* Queues `runs` products of every candidate still in between its pair of
 * events, waits once, and reads each one's milliseconds a run into ms. */
static gcn_status time_round(gcn_ctx *ctx, cusparseHandle_t h, cusparse_plan *p, void *buffer,
                             const bool *in, int runs, const cudaEvent_t *ev, float *ms)
{
    gcn_cuda_state *cs = (gcn_cuda_state *)ctx->cuda;
    bool refused;
    for (int c = 0; c < N_CANDIDATES; c++) {
        if (!in[c])
            continue;
        GCN_CUDA(cudaEventRecord(ev[2 * c], cs->stream));
        for (int i = 0; i < runs; i++)
            GCN_TRY(run_alg(ctx, h, p, candidates[c].alg, buffer, &refused));
        GCN_CUDA(cudaEventRecord(ev[2 * c + 1], cs->stream));
    }
    GCN_CUDA(cudaStreamSynchronize(cs->stream));
    for (int c = 0; c < N_CANDIDATES; c++)
        if (in[c]) {
            GCN_CUDA(cudaEventElapsedTime(&ms[c], ev[2 * c], ev[2 * c + 1]));
            ms[c] /= (float)runs;
        }
    return GCN_OK;
}

/* Times the candidates cuSPARSE takes on scratch operands and keeps the
 * fastest, with a buffer of exactly the size it asks for: a warm-up run of
 * each (loading its kernels if the context's start has not), one timed run
 * of each, then TIMED_RUNS more of the close ones (on arxiv at F = 256,
 * CSR_ALG1 runs 8x slower than the others: it gets two runs instead of
 * seven). */
static gcn_status choose_alg(gcn_ctx *ctx, cusparseHandle_t h, cusparse_plan *p)
{
    const float one = 1.0f, zero = 0.0f;
    size_t sizes[N_CANDIDATES], max_size = 0;
    bool in[N_CANDIDATES], refused = false;
    for (int c = 0; c < N_CANDIDATES; c++) {
        cusparseStatus_t err = cusparseSpMM_bufferSize(
            h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, p->mat,
            p->x, &zero, p->y, CUDA_R_32F, candidates[c].alg, &sizes[c]);
        in[c] = err == CUSPARSE_STATUS_SUCCESS;
        if (in[c] && sizes[c] > max_size)
            max_size = sizes[c];
    }
    void *buffer = NULL;
    cudaEvent_t ev[2 * N_CANDIDATES] = {};
    float ms[N_CANDIDATES] = {-1.0f, -1.0f, -1.0f}, probe_best = -1.0f;
    int best = -1;
    gcn_status st;
    GCN_CHECK(gcn_mem_alloc(ctx, &buffer, max_size));
    for (int e = 0; e < 2 * N_CANDIDATES; e++)
        GCN_CHECK(GCN_CUDA_ST(cudaEventCreate(&ev[e])));
    for (int c = 0; c < N_CANDIDATES; c++)
        if (in[c]) {
            GCN_CHECK(run_alg(ctx, h, p, candidates[c].alg, buffer, &refused));
            in[c] = !refused;
        }
    GCN_CHECK(time_round(ctx, h, p, buffer, in, 1, ev, ms));
    for (int c = 0; c < N_CANDIDATES; c++)
        if (in[c] && (probe_best < 0.0f || ms[c] < probe_best))
            probe_best = ms[c];
    for (int c = 0; c < N_CANDIDATES; c++)
        in[c] = in[c] && (ms[c] <= PROBE_KEEP * probe_best || ms[c] - probe_best <= PROBE_SLACK_MS);
    GCN_CHECK(time_round(ctx, h, p, buffer, in, TIMED_RUNS, ev, ms));
    for (int c = 0; c < N_CANDIDATES; c++)
        if (in[c] && (best < 0 || ms[c] < ms[best]))
            best = c;
    if (best < 0) {
        st = GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                       "cusparse SpMM: no algorithm accepts this %lld-row CSR matrix with %d "
                       "features",
                       (long long)p->n_rows, p->feat);
        goto cleanup;
    }
    gcn_log(ctx, GCN_LOG_DEBUG,
            "cusparse SpMM %lld rows, f = %d: %s chosen (ms a run: default %.3f, alg1 %.3f, "
            "alg2 %.3f; negative = refused)",
            (long long)p->n_rows, p->feat, candidates[best].name, ms[0], ms[1], ms[2]);
    p->alg = candidates[best].alg;
    p->buffer_bytes = sizes[best];
    GCN_CHECK(gcn_mem_alloc(ctx, &p->buffer, p->buffer_bytes));
cleanup:
    for (int e = 0; e < 2 * N_CANDIDATES; e++)
        if (ev[e])
            cudaEventDestroy(ev[e]);
    gcn_mem_release(ctx, buffer, max_size);
    return st;
}

/* Builds the descriptors on a scratch dense operand, chooses the algorithm,
 * then leaves the dense descriptors to be pointed at each run's x and y.
 * x and y share the scratch, zeros: the timed products read and write as
 * much memory as on separate operands and keep it zero, and the plan, built
 * during the first product while a step's activations are held, adds one
 * [n, feat] block to the peak instead of two. */
static gcn_status build_plan(gcn_ctx *ctx, const gcn_csr *a, cusparse_plan *p)
{
    gcn_cuda_state *cs;
    cusparseHandle_t h;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    GCN_TRY(gcn_cuda_cusparse(ctx, &h));
    int32_t n = a->n_rows > a->n_cols ? a->n_rows : a->n_cols;
    size_t bytes = (size_t)n * (size_t)p->feat * sizeof(float);
    float *scratch = NULL;
    gcn_status st;
    GCN_CHECK(gcn_mem_alloc(ctx, (void **)&scratch, bytes));
    GCN_CHECK(GCN_CUDA_ST(cudaMemsetAsync(scratch, 0, bytes, cs->stream)));
    GCN_CHECK(GCN_CUSPARSE_ST(cusparseCreateCsr(
        &p->mat, a->n_rows, a->n_cols, a->nnz, a->row_ptr, a->col_idx, a->values,
        CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F)));
    GCN_CHECK(GCN_CUSPARSE_ST(cusparseCreateDnMat(&p->x, a->n_cols, p->feat, p->feat, scratch,
                                                  CUDA_R_32F, CUSPARSE_ORDER_ROW)));
    GCN_CHECK(GCN_CUSPARSE_ST(cusparseCreateDnMat(&p->y, a->n_rows, p->feat, p->feat, scratch,
                                                  CUDA_R_32F, CUSPARSE_ORDER_ROW)));
    GCN_CHECK(choose_alg(ctx, h, p));
cleanup:
    gcn_mem_release(ctx, scratch, bytes);
    return st;
}

static gcn_status cusparse_plan_create(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, plan);
    *plan = NULL;
    if (!cusparse_supports(a, feat))
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "cusparse SpMM needs a CUDA matrix with values, columns sorted "
                         "without duplicates in every row, and feat >= 0");
    cusparse_plan *p = (cusparse_plan *)calloc(1, sizeof *p);
    if (!p)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for a cusparse plan");
    p->ctx = ctx;
    p->row_ptr = a->row_ptr;
    p->n_rows = a->n_rows;
    p->feat = feat;
    p->empty = a->nnz == 0 || a->n_rows == 0 || a->n_cols == 0 || feat == 0;
    if (!p->empty) {
        gcn_status st = build_plan(ctx, a, p);
        if (st != GCN_OK) {
            cusparse_free_plan(p);
            return st;
        }
    }
    *plan = p;
    return GCN_OK;
}

static gcn_status cusparse_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x,
                               float *y, int feat, bool accumulate)
{
    cusparse_plan *p = (cusparse_plan *)plan;
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (!p || p->ctx != ctx || p->row_ptr != a->row_ptr || p->feat != feat)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "cusparse SpMM: plan built for another matrix, "
                                             "context or feature width");
    if (p->empty) {
        if (!accumulate && p->n_rows * feat > 0)
            GCN_CUDA(cudaMemsetAsync(y, 0, (size_t)(p->n_rows * feat) * sizeof *y, cs->stream));
        return GCN_OK;
    }
    cusparseHandle_t h;
    GCN_TRY(gcn_cuda_cusparse(ctx, &h));
    GCN_CUSPARSE(cusparseDnMatSetValues(p->x, (void *)x));
    GCN_CUSPARSE(cusparseDnMatSetValues(p->y, y));
    const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    GCN_CUSPARSE(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                              CUSPARSE_OPERATION_NON_TRANSPOSE, &one, p->mat, p->x, &beta, p->y,
                              CUDA_R_32F, p->alg, p->buffer));
    return GCN_OK;
}

const gcn_spmm_impl gcn_spmm_cusparse = {
    .size = sizeof(gcn_spmm_impl),
    .name = "cusparse",
    .device = GCN_DEVICE_CUDA,
    .deterministic = false,
    .roles = GCN_SPMM_ROLE_WHOLE,
    .supports = cusparse_supports,
    .plan = cusparse_plan_create,
    .run = cusparse_run,
    .free_plan = cusparse_free_plan,
};
