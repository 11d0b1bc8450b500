/* The profiler's CUDA clock (prof.h): event i of a profile is the i-th
 * event of a pool in the context's CUDA state, created the first time a
 * profile reaches it and recorded again by every later profile. */
#include <stdlib.h>

#include "cuda_impl.h"
#include "prof.h"

static gcn_status cuda_record(gcn_ctx *ctx, void *user, int i)
{
    (void)user;
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    for (; cs->prof_n_events <= i; cs->prof_n_events++) {
        if (cs->prof_n_events % 64 == 0) {
            size_t n = (size_t)cs->prof_n_events + 64;
            cudaEvent_t *ev = (cudaEvent_t *)realloc(cs->prof_events, n * sizeof *ev);
            if (!ev)
                return GCN_ERROR(ctx, GCN_ERR_NOMEM, "profiling: out of host memory for events");
            cs->prof_events = ev;
        }
        GCN_CUDA(cudaEventCreate(&cs->prof_events[cs->prof_n_events]));
    }
    GCN_CUDA(cudaEventRecord(cs->prof_events[i], cs->stream));
    return GCN_OK;
}

static gcn_status cuda_read(gcn_ctx *ctx, void *user, int n, float *gap_ms, float *span_ms)
{
    (void)user;
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    *span_ms = 0.0f;
    if (n < 2)
        return GCN_OK;
    cudaEvent_t *ev = cs->prof_events;
    GCN_CUDA(cudaEventSynchronize(ev[n - 1]));
    for (int i = 0; i + 1 < n; i++)
        GCN_CUDA(cudaEventElapsedTime(&gap_ms[i], ev[i], ev[i + 1]));
    GCN_CUDA(cudaEventElapsedTime(span_ms, ev[0], ev[n - 1]));
    return GCN_OK;
}

static const gcn_prof_clock cuda_clock = {cuda_record, cuda_read, NULL};

const gcn_prof_clock *gcn_prof_cuda_clock(void)
{
    return &cuda_clock;
}
