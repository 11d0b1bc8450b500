/* The NCCL transport: NCCL loaded at run time (libnccl.so.2, or the file
 * GCN_NCCL_LIBRARY names) and nothing of it linked, one communicator per
 * rank from ncclCommInitAll, the collectives queued on each rank's stream. */
#include <dlfcn.h>
#include <nccl.h>
#include <stdlib.h>

#include "comm_impl.h"
#include "cuda_impl.h"

/* The functions taken from the library; nccl.h gives their types only. */
typedef struct nccl_lib {
    void *handle;
    decltype(&::ncclGetErrorString) GetErrorString;
    decltype(&::ncclCommInitAll) CommInitAll;
    decltype(&::ncclCommDestroy) CommDestroy;
    decltype(&::ncclCommAbort) CommAbort;
    decltype(&::ncclAllReduce) AllReduce;
    decltype(&::ncclSend) Send;
    decltype(&::ncclRecv) Recv;
    decltype(&::ncclGroupStart) GroupStart;
    decltype(&::ncclGroupEnd) GroupEnd;
} nccl_lib;

typedef struct nccl_state {
    nccl_lib lib;
    ncclComm_t *comms; /* [ranks]; NULL once aborted */
} nccl_state;

/* GCN_OK, or "nccl<name> failed: NCCL's message (file:line)". */
static gcn_status nccl_check(gcn_ctx *ctx, const nccl_lib *lib, ncclResult_t r, const char *name,
                             const char *file, int line)
{
    if (r == ncclSuccess)
        return GCN_OK;
    return gcn_set_error(ctx, GCN_ERR_CUDA, file, line, "nccl%s failed: %s", name,
                         lib->GetErrorString(r));
}

/* The status of lib->name args (uses ctx). */
#define NCCL_ST(lib, name, args) \
    nccl_check(ctx, (lib), (lib)->name args, #name, __FILE__, __LINE__)

/* ---- loading ------------------------------------------------------------------ */

static gcn_status resolve(gcn_ctx *ctx, nccl_lib *lib, const char *path)
{
    const char *missing = NULL;
#define RESOLVE(name)                                                                     \
    if (!missing && !(lib->name = (decltype(lib->name))dlsym(lib->handle, "nccl" #name))) \
    missing = "nccl" #name
    RESOLVE(GetErrorString);
    RESOLVE(CommInitAll);
    RESOLVE(CommDestroy);
    RESOLVE(CommAbort);
    RESOLVE(AllReduce);
    RESOLVE(Send);
    RESOLVE(Recv);
    RESOLVE(GroupStart);
    RESOLVE(GroupEnd);
#undef RESOLVE
    if (missing)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "NCCL from %s has no %s: training on several GPUs needs NCCL 2.7 or "
                         "later; set GCN_NCCL_LIBRARY", path, missing);
    return GCN_OK;
}

/* dlopen with RTLD_NODELETE: NCCL's threads and handlers may outlive its
 * last communicator, so the library stays mapped after dlclose. */
static gcn_status load(gcn_ctx *ctx, nccl_lib *lib)
{
    const char *env = getenv("GCN_NCCL_LIBRARY");
    const char *path = env && *env ? env : "libnccl.so.2";
    lib->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib->handle) {
        const char *why = dlerror();
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "NCCL cannot be loaded (%s: %s): training on several GPUs needs it; set "
                         "GCN_NCCL_LIBRARY", path, why ? why : "unknown error");
    }
    gcn_status st = resolve(ctx, lib, path);
    if (st != GCN_OK) {
        dlclose(lib->handle);
        lib->handle = NULL;
    }
    return st;
}

/* ---- the transport --------------------------------------------------------------- */

/* The collectives are queued on the stream, not waited for: they leave
 * *ms at 0 (gcn_comm_stats). */
static gcn_status nccl_allreduce(gcn_ctx *ctx, void *buf, int64_t n, size_t elem, double *)
{
    nccl_state *s = (nccl_state *)ctx->comm->state;
    gcn_cuda_state *cs;
    gcn_status st = gcn_cuda_begin(ctx, &cs);
    if (st == GCN_OK && n > 0)
        st = NCCL_ST(&s->lib, AllReduce,
                     (buf, buf, (size_t)n, elem == sizeof(float) ? ncclFloat32 : ncclFloat64,
                      ncclSum, s->comms[ctx->comm->rank], cs->stream));
    return st == GCN_OK ? GCN_OK : gcn_comm_fail(ctx, st);
}

/* Sends and receives of the blocks of other ranks, in one group. */
static gcn_status exchange(gcn_ctx *ctx, nccl_state *s, cudaStream_t stream, const float *send,
                           const int64_t *send_off, float *recv, const int64_t *recv_off)
{
    int me = ctx->comm->rank;
    ncclComm_t comm = s->comms[me];
    GCN_TRY(NCCL_ST(&s->lib, GroupStart, ()));
    gcn_status st = GCN_OK;
    for (int p = 0; st == GCN_OK && p < ctx->comm->ranks; p++) {
        int64_t out = send_off[p + 1] - send_off[p], in = recv_off[p + 1] - recv_off[p];
        if (p != me && out > 0)
            st = NCCL_ST(&s->lib, Send,
                         (send + send_off[p], (size_t)out, ncclFloat32, p, comm, stream));
        if (st == GCN_OK && p != me && in > 0)
            st = NCCL_ST(&s->lib, Recv,
                         (recv + recv_off[p], (size_t)in, ncclFloat32, p, comm, stream));
    }
    gcn_status end = NCCL_ST(&s->lib, GroupEnd, ());
    return st != GCN_OK ? st : end;
}

static gcn_status nccl_alltoallv(gcn_ctx *ctx, const float *send, const int64_t *send_off,
                                 float *recv, const int64_t *recv_off, double *)
{
    nccl_state *s = (nccl_state *)ctx->comm->state;
    int me = ctx->comm->rank;
    int64_t own = send_off[me + 1] - send_off[me];
    gcn_cuda_state *cs;
    gcn_status st = gcn_cuda_begin(ctx, &cs);
    if (st == GCN_OK && own != recv_off[me + 1] - recv_off[me])
        st = GCN_ERROR(ctx, GCN_ERR_SHAPE, "exchange sizes differ: rank %d sends %lld floats to "
                       "itself and expects %lld", me, (long long)own,
                       (long long)(recv_off[me + 1] - recv_off[me]));
    if (st == GCN_OK && own > 0)
        st = ctx->be->copy(ctx, recv + recv_off[me], send + send_off[me],
                           (size_t)own * sizeof *send);
    if (st == GCN_OK && ctx->comm->ranks > 1)
        st = exchange(ctx, s, cs->stream, send, send_off, recv, recv_off);
    return st == GCN_OK ? GCN_OK : gcn_comm_fail(ctx, st);
}

/* The ranks are threads of this process: their host barrier is enough. */
static gcn_status nccl_barrier(gcn_ctx *ctx)
{
    return gcn_comm_wait(ctx);
}

static void nccl_abort_rank(void *state, int rank)
{
    nccl_state *s = (nccl_state *)state;
    s->lib.CommAbort(s->comms[rank]);
    s->comms[rank] = NULL;
}

static void nccl_close(void *state, int ranks)
{
    nccl_state *s = (nccl_state *)state;
    for (int i = 0; i < ranks; i++)
        if (s->comms[i])
            s->lib.CommDestroy(s->comms[i]);
    dlclose(s->lib.handle);
    free(s->comms);
    free(s);
}

static const gcn_comm_transport nccl_transport = {
    nccl_allreduce, nccl_alltoallv, nccl_barrier, nccl_abort_rank, nccl_close,
};

/* ncclCommInitAll over the contexts' devices, restoring the current one. */
static gcn_status init_all(gcn_ctx *const *ctxs, int n, nccl_state *s)
{
    gcn_ctx *ctx = ctxs[0];
    int *devices = (int *)malloc((size_t)n * sizeof *devices);
    s->comms = (ncclComm_t *)calloc((size_t)n, sizeof *s->comms);
    if (!devices || !s->comms) {
        free(devices);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for %d NCCL ranks", n);
    }
    for (int i = 0; i < n; i++)
        devices[i] = ctxs[i]->device_index;
    int current = 0;
    gcn_status st = GCN_CUDA_ST(cudaGetDevice(&current));
    if (st == GCN_OK) {
        st = NCCL_ST(&s->lib, CommInitAll, (s->comms, n, devices));
        cudaSetDevice(current);
    }
    free(devices);
    return st;
}

gcn_status gcn_comm_nccl_open(gcn_ctx *const *ctxs, int n, const gcn_comm_transport **tp,
                              void **state)
{
    nccl_state *s = (nccl_state *)calloc(1, sizeof *s);
    if (!s)
        return GCN_ERROR(ctxs[0], GCN_ERR_NOMEM, "out of host memory for the NCCL state");
    gcn_status st = load(ctxs[0], &s->lib);
    if (st == GCN_OK)
        st = gcn_comm_check_devices(ctxs, n, GCN_COMM_NCCL);
    if (st == GCN_OK)
        st = init_all(ctxs, n, s);
    if (st != GCN_OK) {
        if (s->lib.handle)
            dlclose(s->lib.handle);
        free(s->comms);
        free(s);
        return st;
    }
    *tp = &nccl_transport;
    *state = s;
    return GCN_OK;
}
