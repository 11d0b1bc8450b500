/* The profiler behind gcn_ctx_profile_begin/end (ctx.h): the category
 * regions ops put around their device work, and the clock that records one
 * event at each change of category.  Internal. */
#ifndef GCN_PROF_H
#define GCN_PROF_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Records the events of one profile: record() queues event i (0, 1, ... in
 * order) behind the work queued so far; read() waits for the n events of
 * the profile and gives the time between event i and i + 1 in gap_ms[i]
 * (n - 1 values) and from the first to the last in *span_ms. */
typedef struct gcn_prof_clock {
    gcn_status (*record)(gcn_ctx *ctx, void *user, int i);
    gcn_status (*read)(gcn_ctx *ctx, void *user, int n, float *gap_ms, float *span_ms);
    void *user;
} gcn_prof_clock;

/* CUDA events on the context's stream, from a pool in the CUDA state
 * (prof_cuda.cu); static. */
const gcn_prof_clock *gcn_prof_cuda_clock(void);

/* gcn_ctx_profile_begin with the given clock (copied): the CUDA clock on a
 * CUDA context, a fake one in the tests. */
gcn_status gcn_prof_begin(gcn_ctx *ctx, const gcn_prof_clock *clock);

/* Frees the profiler's state (gcn_ctx_free). */
void gcn_prof_free(gcn_ctx *ctx);

/* The out-of-line halves of gcn_prof_enter / gcn_prof_leave. */
gcn_prof_category gcn_prof_switch(gcn_ctx *ctx, gcn_prof_category cat);
void gcn_prof_restore(gcn_ctx *ctx, gcn_prof_category prev);

/* Opens a region of category cat around the work queued until the matching
 * gcn_prof_leave(ctx, returned value).  Regions nest; the outermost one
 * names the work.  Not profiling: one branch, nothing recorded. */
static inline gcn_prof_category gcn_prof_enter(gcn_ctx *ctx, gcn_prof_category cat)
{
    return ctx->profiling ? gcn_prof_switch(ctx, cat) : GCN_PROF_ELEMENTWISE;
}

static inline void gcn_prof_leave(gcn_ctx *ctx, gcn_prof_category prev)
{
    if (ctx->profiling)
        gcn_prof_restore(ctx, prev);
}

#ifdef __cplusplus
}
#endif
#endif
