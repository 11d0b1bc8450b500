/* The CUDA bridge of a build without CUDA (make CUDA=0, and the fuzz
 * targets): no device is ever found, so no context is on a GPU and every
 * path below is unreachable from the library's own code; each answers as a
 * machine without a usable GPU would.  The folders above core stand in for
 * their own CUDA files the same way (kernels/select/clock_none.c,
 * kernels/adaptgear/split_none.c, optim/optim_none.c); the CUDA kernels are
 * absent from the SpMM registry (kernels/spmm/spmm.c), not stood in for. */
#include "core/comm_impl.h"
#include "core/cuda.h"
#include "core/prof.h"

#define NO_CUDA(ctx, what) \
    GCN_ERROR((ctx), GCN_ERR_UNSUPPORTED, "%s: this build has no CUDA (make CUDA=0)", (what))

const gcn_backend gcn_backend_cuda = {.name = "cuda (not in this build)"};

int gcn_cuda_device_count(void)
{
    return 0;
}

gcn_status gcn_cuda_init(gcn_ctx *ctx, int device_index)
{
    (void)device_index;
    return NO_CUDA(ctx, "CUDA context");
}

void gcn_cuda_release(gcn_ctx *ctx)
{
    (void)ctx;
}

void *gcn_cuda_stream(const gcn_ctx *ctx)
{
    (void)ctx;
    return NULL;
}

gcn_status gcn_cuda_stamp(gcn_ctx *ctx, int slot)
{
    (void)slot;
    return NO_CUDA(ctx, "stamp");
}

gcn_status gcn_cuda_stamp_ms(gcn_ctx *ctx, int from, int to, double *ms)
{
    (void)from;
    (void)to;
    *ms = 0.0;
    return NO_CUDA(ctx, "stamp");
}

gcn_status gcn_cuda_capture_begin(gcn_ctx *ctx)
{
    return NO_CUDA(ctx, "graph capture");
}

gcn_status gcn_cuda_capture_end(gcn_ctx *ctx, bool keep, gcn_graph **out)
{
    (void)keep;
    *out = NULL;
    return NO_CUDA(ctx, "graph capture");
}

gcn_status gcn_cuda_graph_launch(gcn_ctx *ctx, gcn_graph *g)
{
    (void)g;
    return NO_CUDA(ctx, "graph launch");
}

void gcn_cuda_graph_free(gcn_ctx *ctx, gcn_graph **g)
{
    (void)ctx;
    (void)g;
}

const gcn_prof_clock *gcn_prof_cuda_clock(void)
{
    return NULL;
}

gcn_status gcn_comm_nccl_open(gcn_ctx *const *ctxs, int n, const gcn_comm_transport **tp,
                              void **state)
{
    (void)n;
    (void)tp;
    (void)state;
    return NO_CUDA(ctxs[0], "NCCL communicator");
}

gcn_status gcn_comm_nccl_join(gcn_ctx *ctx, int rank, int ranks, const gcn_comm_id *id,
                              const gcn_comm_transport **tp, void **state)
{
    (void)rank;
    (void)ranks;
    (void)id;
    (void)tp;
    (void)state;
    return NO_CUDA(ctx, "NCCL communicator");
}

gcn_status gcn_comm_new_id(gcn_ctx *ctx, gcn_comm_id *id)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    (void)id;
    return NO_CUDA(ctx, "NCCL communicator");
}

gcn_status gcn_comm_cuda_add_f64(gcn_ctx *ctx, int64_t n, const double *x, double *y)
{
    (void)n;
    (void)x;
    (void)y;
    return NO_CUDA(ctx, "all-reduce on the GPU");
}
