/* Stand-ins for the core symbols that live in .cu files, so the fuzz
 * targets link the C core without CUDA.  The fuzzers only create CPU
 * contexts, so none of these is reached except the device count. */
#include "core/cuda.h"
#include "core/prof.h"
#include "kernels/adaptgear/plan.h"

const gcn_backend gcn_backend_cuda = {.name = "cuda (not linked)"};

int gcn_cuda_device_count(void)
{
    return 0;
}

gcn_status gcn_cuda_init(gcn_ctx *ctx, int device_index)
{
    return GCN_ERROR(ctx, GCN_ERR_DEVICE, "fuzz build without CUDA (device %d)", device_index);
}

void gcn_cuda_release(gcn_ctx *ctx)
{
    (void)ctx;
}

gcn_status gcn_cuda_stamp(gcn_ctx *ctx, int slot)
{
    return GCN_ERROR(ctx, GCN_ERR_DEVICE, "fuzz build without CUDA (stamp %d)", slot);
}

gcn_status gcn_cuda_stamp_ms(gcn_ctx *ctx, int from, int to, double *ms)
{
    *ms = 0.0;
    return GCN_ERROR(ctx, GCN_ERR_DEVICE, "fuzz build without CUDA (stamps %d, %d)", from, to);
}

const gcn_prof_clock *gcn_prof_cuda_clock(void)
{
    return NULL;
}

gcn_status gcn_split_cuda(gcn_ctx *ctx, const gcn_csr *a, const gcn_csr_level *lv,
                          gcn_csr **intra, gcn_csr **inter)
{
    (void)a;
    (void)lv;
    *intra = *inter = NULL;
    return GCN_ERROR(ctx, GCN_ERR_DEVICE, "fuzz build without CUDA");
}

gcn_status gcn_cuda_capture_begin(gcn_ctx *ctx)
{
    return GCN_ERROR(ctx, GCN_ERR_DEVICE, "fuzz build without CUDA (graph capture)");
}

gcn_status gcn_cuda_capture_end(gcn_ctx *ctx, bool keep, gcn_graph **out)
{
    (void)keep;
    *out = NULL;
    return GCN_ERROR(ctx, GCN_ERR_DEVICE, "fuzz build without CUDA (graph capture)");
}

gcn_status gcn_cuda_graph_launch(gcn_ctx *ctx, gcn_graph *g)
{
    (void)g;
    return GCN_ERROR(ctx, GCN_ERR_DEVICE, "fuzz build without CUDA (graph launch)");
}

void gcn_cuda_graph_free(gcn_ctx *ctx, gcn_graph **g)
{
    (void)ctx;
    (void)g;
}
