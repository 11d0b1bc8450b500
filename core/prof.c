/* Device time by category of work: the category regions, the events they
 * record at each change of category (through a gcn_prof_clock), and their
 * sum per category at the end of a profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof.h"

struct gcn_prof {
    gcn_prof_clock clock;
    gcn_prof_category cat; /* of the work queued now */
    int n, cap;            /* events recorded in this profile; room below */
    unsigned char *cats;   /* [cap] category of the interval from event i to i + 1 */
    float *gaps;           /* [cap] their lengths, read at the end */
    gcn_status failed;     /* the first failure to record: recording stopped */
    char why[256];         /* its message (later errors may replace the context's) */
};

const char *gcn_prof_category_name(gcn_prof_category c)
{
    static const char *const names[GCN_PROF_N_CATEGORIES] = {"gemm", "spmm", "elementwise",
                                                             "optimizer", "other"};
    return c >= 0 && c < GCN_PROF_N_CATEGORIES ? names[c] : "?";
}

static gcn_status grow(gcn_ctx *ctx, struct gcn_prof *p)
{
    int cap = p->cap ? 2 * p->cap : 256;
    unsigned char *cats = realloc(p->cats, (size_t)cap);
    if (cats)
        p->cats = cats;
    float *gaps = cats ? realloc(p->gaps, (size_t)cap * sizeof *gaps) : NULL;
    if (!gaps)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "profiling: out of host memory for %d events", cap);
    p->gaps = gaps;
    p->cap = cap;
    return GCN_OK;
}

/* Event n, which starts an interval of category cat; a failure stops the
 * recording (the work goes on) and is kept for gcn_ctx_profile_end. */
static void record(gcn_ctx *ctx, gcn_prof_category cat)
{
    struct gcn_prof *p = ctx->prof;
    p->cat = cat;
    if (p->failed != GCN_OK)
        return;
    gcn_status st = p->n < p->cap ? GCN_OK : grow(ctx, p);
    if (st == GCN_OK)
        st = p->clock.record(ctx, p->clock.user, p->n);
    if (st != GCN_OK) {
        p->failed = st;
        snprintf(p->why, sizeof p->why, "%s", gcn_last_error(ctx));
        return;
    }
    p->cats[p->n++] = (unsigned char)cat;
}

gcn_prof_category gcn_prof_switch(gcn_ctx *ctx, gcn_prof_category cat)
{
    gcn_prof_category prev = ctx->prof->cat;
    if (prev == GCN_PROF_ELEMENTWISE && cat != prev)
        record(ctx, cat);
    return prev;
}

void gcn_prof_restore(gcn_ctx *ctx, gcn_prof_category prev)
{
    if (ctx->prof->cat != prev)
        record(ctx, prev);
}

gcn_status gcn_prof_begin(gcn_ctx *ctx, const gcn_prof_clock *clock)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, clock && clock->record && clock->read);
    if (ctx->profiling)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "profiling: already started");
    if (!ctx->prof && !(ctx->prof = calloc(1, sizeof *ctx->prof)))
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "profiling: out of host memory");
    struct gcn_prof *p = ctx->prof;
    p->clock = *clock;
    p->n = 0;
    p->failed = GCN_OK;
    ctx->profiling = true;
    record(ctx, GCN_PROF_ELEMENTWISE);
    return GCN_OK;
}

gcn_status gcn_ctx_profile_begin(gcn_ctx *ctx)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    if (ctx->device != GCN_DEVICE_CUDA)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "profiling: device time by category needs a CUDA context, not %s",
                         gcn_device_name(ctx->device));
    return gcn_prof_begin(ctx, gcn_prof_cuda_clock());
}

gcn_status gcn_ctx_profile_end(gcn_ctx *ctx, gcn_prof_times *times)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, times);
    memset(times, 0, sizeof *times);
    if (!ctx->profiling)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "profiling: not started");
    struct gcn_prof *p = ctx->prof;
    record(ctx, p->cat); /* closes the last interval */
    ctx->profiling = false;
    if (p->failed != GCN_OK)
        return GCN_ERROR(ctx, p->failed, "profiling stopped: %s", p->why);
    float span = 0.0f;
    GCN_TRY(p->clock.read(ctx, p->clock.user, p->n, p->gaps, &span));
    for (int i = 0; i + 1 < p->n; i++)
        times->ms[p->cats[i]] += p->gaps[i];
    times->span_ms = span;
    times->events = p->n;
    return GCN_OK;
}

void gcn_prof_free(gcn_ctx *ctx)
{
    if (!ctx->prof)
        return;
    free(ctx->prof->cats);
    free(ctx->prof->gaps);
    free(ctx->prof);
    ctx->prof = NULL;
    ctx->profiling = false;
}
