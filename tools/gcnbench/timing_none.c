/* gcnbench's GPU timing in a build without CUDA (make CUDA=0): there is no
 * GPU to time, so each call fails as on a machine without one. */
#include "timing.h"
#include "core/internal.h"

#define NO_CUDA(ctx, what) \
    GCN_ERROR((ctx), GCN_ERR_UNSUPPORTED, "%s: this build has no CUDA (make CUDA=0)", (what))

gcn_status gcn_bench_time(gcn_ctx *ctx, gcn_bench_fn fn, void *user, int warmup, int reps,
                          bool flush_l2, float *ms)
{
    (void)fn;
    (void)user;
    (void)warmup;
    (void)reps;
    (void)flush_l2;
    *ms = 0.0f;
    return NO_CUDA(ctx, "GPU timing");
}

gcn_status gcn_spmm_device_info(gcn_ctx *ctx, char *name, size_t size, int *sms,
                                size_t *l2_bytes)
{
    (void)name;
    (void)size;
    *sms = 0;
    *l2_bytes = 0;
    return NO_CUDA(ctx, "device query");
}
