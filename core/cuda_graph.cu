/* Capture of a context's queued work as a CUDA graph and its replay: the
 * trainer records one steady-state epoch and launches it as one graph from
 * then on, so the host no longer issues each kernel (core/cuda.h). */
#include <stdlib.h>

#include "cuda_impl.h"

struct gcn_graph {
    cudaGraphExec_t exec;
    gcn_pool_held *held; /* the pool blocks the graph works in */
};

gcn_status gcn_cuda_capture_begin(gcn_ctx *ctx)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (cs->sync_debug)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "GCN_SYNC_DEBUG waits after every launch, which a graph capture cannot");
    GCN_TRY(gcn_pool_capture_begin(ctx, cs->pool));
    /* relaxed: a pool miss may still cudaMalloc while the step is captured */
    gcn_status st = GCN_CUDA_ST(cudaStreamBeginCapture(cs->stream, cudaStreamCaptureModeRelaxed));
    if (st != GCN_OK) {
        gcn_pool_held *held = gcn_pool_capture_end(cs->pool);
        gcn_pool_held_free(cs->pool, &held);
        return st;
    }
    cs->capturing = true;
    return GCN_OK;
}

gcn_status gcn_cuda_capture_end(gcn_ctx *ctx, bool keep, gcn_graph **out)
{
    gcn_cuda_state *cs;
    *out = NULL;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (!cs->capturing)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "no graph capture to end");
    cudaGraph_t graph = NULL;
    cudaError_t err = cudaStreamEndCapture(cs->stream, &graph);
    cs->capturing = false;
    gcn_pool_held *held = gcn_pool_capture_end(cs->pool);
    gcn_graph *g = NULL;
    gcn_status st = GCN_CUDA_ST(err);
    if (st == GCN_OK && keep) {
        g = (gcn_graph *)calloc(1, sizeof *g);
        if (!g)
            st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for a CUDA graph");
    }
    if (g)
        st = GCN_CUDA_ST(cudaGraphInstantiate(&g->exec, graph, 0));
    if (graph)
        cudaGraphDestroy(graph);
    if (st != GCN_OK || !keep) {
        cudaGetLastError();
        free(g);
        gcn_pool_held_free(cs->pool, &held);
        return st;
    }
    g->held = held;
    *out = g;
    return GCN_OK;
}

gcn_status gcn_cuda_graph_launch(gcn_ctx *ctx, gcn_graph *g)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    GCN_CUDA(cudaGraphLaunch(g->exec, cs->stream));
    return GCN_OK;
}

void gcn_cuda_graph_free(gcn_ctx *ctx, gcn_graph **graph)
{
    gcn_graph *g = graph ? *graph : NULL;
    gcn_cuda_state *cs;
    if (!g || gcn_cuda_begin(ctx, &cs) != GCN_OK)
        return;
    /* a replay may still be queued: its blocks go back only after it ran */
    cudaStreamSynchronize(cs->stream);
    cudaGraphExecDestroy(g->exec);
    cudaGetLastError();
    gcn_pool_held_free(cs->pool, &g->held);
    free(g);
    *graph = NULL;
}
