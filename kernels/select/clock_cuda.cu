/* The selector's CUDA clock (see select.h): a mark is a pair of events
 * recorded on the context's stream around one run and polled without
 * blocking, so profiling never stalls the stream. */
#include <stdlib.h>

#include "core/cuda_impl.h"
#include "select.h"

typedef struct event_mark {
    cudaEvent_t start, stop;
} event_mark;

static void cuda_release(void *user, void *mark)
{
    (void)user;
    event_mark *m = (event_mark *)mark;
    if (m->start)
        cudaEventDestroy(m->start);
    if (m->stop)
        cudaEventDestroy(m->stop);
    free(m);
}

static gcn_status cuda_start(gcn_ctx *ctx, void *user, void **mark)
{
    (void)user;
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    event_mark *m = (event_mark *)calloc(1, sizeof *m);
    if (!m)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "selector: out of host memory for a clock mark");
    gcn_status st;
    GCN_CHECK(GCN_CUDA_ST(cudaEventCreate(&m->start)));
    GCN_CHECK(GCN_CUDA_ST(cudaEventCreate(&m->stop)));
    GCN_CHECK(GCN_CUDA_ST(cudaEventRecord(m->start, cs->stream)));
    *mark = m;
    return GCN_OK;
cleanup:
    cuda_release(NULL, m);
    return st;
}

static gcn_status cuda_stop(gcn_ctx *ctx, void *user, void *mark)
{
    (void)user;
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    GCN_CUDA(cudaEventRecord(((event_mark *)mark)->stop, cs->stream));
    return GCN_OK;
}

static gcn_status cuda_poll(gcn_ctx *ctx, void *user, void *mark, bool *done, float *ms)
{
    (void)user;
    const event_mark *m = (const event_mark *)mark;
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    *done = false;
    cudaError_t err = cudaEventQuery(m->stop);
    if (err == cudaErrorNotReady) {
        cudaGetLastError(); /* not an error: leave no trace of it */
        return GCN_OK;
    }
    GCN_TRY(gcn_cuda_check(ctx, err, "cudaEventQuery(stop)", __FILE__, __LINE__));
    GCN_CUDA(cudaEventElapsedTime(ms, m->start, m->stop));
    *done = true;
    return GCN_OK;
}

static const gcn_select_clock cuda_clock = {cuda_start, cuda_stop, cuda_poll, cuda_release, NULL};

const gcn_select_clock *gcn_select_cuda_clock(void)
{
    return &cuda_clock;
}
