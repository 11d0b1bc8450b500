/* The NCCL transport: NCCL loaded at run time (libnccl.so.2, or the file
 * GCN_NCCL_LIBRARY names) and nothing of it linked, one communicator per
 * rank from ncclCommInitAll (the ranks of this process) or ncclCommInitRank
 * (one rank of a job of processes), the collectives queued on each rank's
 * stream. */
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_impl.h"
#include "cuda_impl.h"

/* The functions taken from the library; nccl.h gives their types only. */
typedef struct nccl_lib {
    void *handle;
    decltype(&::ncclGetErrorString) GetErrorString;
    decltype(&::ncclCommInitAll) CommInitAll;
    decltype(&::ncclCommInitRank) CommInitRank;
    decltype(&::ncclGetUniqueId) GetUniqueId;
    decltype(&::ncclCommGetAsyncError) CommGetAsyncError;
    decltype(&::ncclCommDestroy) CommDestroy;
    decltype(&::ncclCommAbort) CommAbort;
    decltype(&::ncclAllReduce) AllReduce;
    decltype(&::ncclSend) Send;
    decltype(&::ncclRecv) Recv;
    decltype(&::ncclGroupStart) GroupStart;
    decltype(&::ncclGroupEnd) GroupEnd;
} nccl_lib;

/* One timed collective: events on the rank's stream before and after it. */
typedef struct nccl_timing {
    cudaEvent_t start, end;
    int layer;     /* the context's layer label when it was queued */
    bool exchange; /* else an all-reduce */
} nccl_timing;

/* A rank's collectives timed and not yet added to its stats (settle). */
typedef struct nccl_pending {
    nccl_timing *t;
    int n, cap;
} nccl_pending;

/* Timed collectives a rank keeps before it waits for the oldest. */
enum { MAX_PENDING = 256 };

/* A rank's own stream for the exchanges begun with gcn_comm_alltoallv_begin,
 * made on its first one: it waits for `ready` (recorded on the context's
 * stream), exchanges, and records `done` for the context's stream. */
typedef struct nccl_side {
    cudaStream_t stream;
    cudaEvent_t ready, done;
} nccl_side;

typedef struct nccl_state {
    nccl_lib lib;
    ncclComm_t *comms;     /* [ranks]; NULL once aborted, and for the other
                            * processes' ranks of a joined communicator */
    double *barrier;       /* joined: one value on the device for the barrier */
    nccl_pending *pending; /* [ranks] */
    nccl_side *side;       /* [ranks] */
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
    RESOLVE(CommInitRank);
    RESOLVE(GetUniqueId);
    RESOLVE(CommGetAsyncError);
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

/* ---- timing --------------------------------------------------------------------- */

/* Adds the times of the rank's timed collectives to its stats, waiting for
 * each to finish, and frees their events. */
static void settle_rank(nccl_pending *p, gcn_comm *c)
{
    for (int i = 0; i < p->n; i++) {
        nccl_timing *t = &p->t[i];
        float ms = 0.0f;
        if (cudaEventSynchronize(t->end) == cudaSuccess &&
            cudaEventElapsedTime(&ms, t->start, t->end) == cudaSuccess)
            gcn_comm_add_time(c, t->exchange, t->layer, ms);
        cudaEventDestroy(t->start);
        cudaEventDestroy(t->end);
    }
    p->n = 0;
}

static void nccl_settle(void *state, gcn_comm *c)
{
    nccl_state *s = (nccl_state *)state;
    settle_rank(&s->pending[c->rank], c);
}

/* Records the event before a collective on the stream into a new slot
 * *out, or sets *out NULL when the stream is being captured (no timing
 * then).  Past MAX_PENDING slots the older ones are settled first. */
static gcn_status time_begin(gcn_ctx *ctx, nccl_state *s, cudaStream_t stream, bool exchange,
                             nccl_timing **out)
{
    *out = NULL;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    GCN_CUDA(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone)
        return GCN_OK;
    nccl_pending *p = &s->pending[ctx->comm->rank];
    if (p->n == MAX_PENDING)
        settle_rank(p, ctx->comm);
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        nccl_timing *t = (nccl_timing *)realloc(p->t, (size_t)cap * sizeof *t);
        if (!t)
            return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory timing NCCL calls");
        p->t = t;
        p->cap = cap;
    }
    nccl_timing *t = &p->t[p->n];
    *t = (nccl_timing){NULL, NULL, ctx->layer, exchange};
    gcn_status st = GCN_CUDA_ST(cudaEventCreate(&t->start));
    if (st == GCN_OK && (st = GCN_CUDA_ST(cudaEventCreate(&t->end))) != GCN_OK)
        cudaEventDestroy(t->start);
    if (st == GCN_OK && (st = GCN_CUDA_ST(cudaEventRecord(t->start, stream))) != GCN_OK) {
        cudaEventDestroy(t->start);
        cudaEventDestroy(t->end);
    }
    if (st == GCN_OK)
        *out = t;
    return st;
}

/* Records the event after the collective and keeps the slot; a collective
 * that failed (st) frees it instead. */
static gcn_status time_end(gcn_ctx *ctx, nccl_state *s, cudaStream_t stream, nccl_timing *t,
                           gcn_status st)
{
    if (!t)
        return st;
    if (st == GCN_OK)
        st = GCN_CUDA_ST(cudaEventRecord(t->end, stream));
    if (st == GCN_OK) {
        s->pending[ctx->comm->rank].n++;
    } else {
        cudaEventDestroy(t->start);
        cudaEventDestroy(t->end);
    }
    return st;
}

/* ---- the transport --------------------------------------------------------------- */

/* The collectives are queued on the stream, not waited for: they leave
 * *ms at 0 and their events tell the time at settle (gcn_comm_stats). */
static gcn_status nccl_allreduce(gcn_ctx *ctx, void *buf, int64_t n, size_t elem, double *)
{
    nccl_state *s = (nccl_state *)ctx->comm->state;
    gcn_cuda_state *cs;
    nccl_timing *t = NULL;
    gcn_status st = gcn_cuda_begin(ctx, &cs);
    if (st == GCN_OK && n > 0)
        st = time_begin(ctx, s, cs->stream, false, &t);
    if (st == GCN_OK && n > 0)
        st = time_end(ctx, s, cs->stream, t,
                      NCCL_ST(&s->lib, AllReduce,
                              (buf, buf, (size_t)n,
                               elem == sizeof(float) ? ncclFloat32 : ncclFloat64, ncclSum,
                               s->comms[ctx->comm->rank], cs->stream)));
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

/* The rank's side stream and events, made on first use (on its device,
 * current here). */
static gcn_status side_of(gcn_ctx *ctx, nccl_state *s, nccl_side **out)
{
    nccl_side *d = &s->side[ctx->comm->rank];
    if (!d->stream) {
        GCN_CUDA(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking));
        gcn_status st = GCN_CUDA_ST(cudaEventCreateWithFlags(&d->ready, cudaEventDisableTiming));
        if (st == GCN_OK)
            st = GCN_CUDA_ST(cudaEventCreateWithFlags(&d->done, cudaEventDisableTiming));
        if (st != GCN_OK) {
            if (d->ready)
                cudaEventDestroy(d->ready);
            cudaStreamDestroy(d->stream);
            *d = (nccl_side){};
            return st;
        }
    }
    *out = d;
    return GCN_OK;
}

/* The exchange on `stream`, the rank's own block copied there too, timed. */
static gcn_status timed_exchange(gcn_ctx *ctx, nccl_state *s, cudaStream_t stream,
                                 const float *send, const int64_t *send_off, float *recv,
                                 const int64_t *recv_off)
{
    int me = ctx->comm->rank;
    int64_t own = send_off[me + 1] - send_off[me];
    nccl_timing *t = NULL;
    GCN_TRY(time_begin(ctx, s, stream, true, &t));
    gcn_status moved = GCN_OK;
    if (own > 0)
        moved = GCN_CUDA_ST(cudaMemcpyAsync(recv + recv_off[me], send + send_off[me],
                                            (size_t)own * sizeof *send,
                                            cudaMemcpyDeviceToDevice, stream));
    if (moved == GCN_OK && ctx->comm->ranks > 1)
        moved = exchange(ctx, s, stream, send, send_off, recv, recv_off);
    return time_end(ctx, s, stream, t, moved);
}

/* On the context's stream, or (async) on the side stream after the work
 * queued so far; nccl_wait_exchange orders the context's stream after it. */
static gcn_status nccl_alltoallv(gcn_ctx *ctx, const float *send, const int64_t *send_off,
                                 float *recv, const int64_t *recv_off, bool async, double *)
{
    nccl_state *s = (nccl_state *)ctx->comm->state;
    int me = ctx->comm->rank;
    int64_t own = send_off[me + 1] - send_off[me];
    gcn_cuda_state *cs;
    nccl_side *d = NULL;
    gcn_status st = gcn_cuda_begin(ctx, &cs);
    if (st == GCN_OK && own != recv_off[me + 1] - recv_off[me])
        st = GCN_ERROR(ctx, GCN_ERR_SHAPE, "exchange sizes differ: rank %d sends %lld floats to "
                       "itself and expects %lld", me, (long long)own,
                       (long long)(recv_off[me + 1] - recv_off[me]));
    if (st == GCN_OK && async)
        st = side_of(ctx, s, &d);
    if (st == GCN_OK && d) {
        st = GCN_CUDA_ST(cudaEventRecord(d->ready, cs->stream));
        if (st == GCN_OK)
            st = GCN_CUDA_ST(cudaStreamWaitEvent(d->stream, d->ready, 0));
    }
    if (st == GCN_OK)
        st = timed_exchange(ctx, s, d ? d->stream : cs->stream, send, send_off, recv, recv_off);
    if (st == GCN_OK && d)
        st = GCN_CUDA_ST(cudaEventRecord(d->done, d->stream));
    return st == GCN_OK ? GCN_OK : gcn_comm_fail(ctx, st);
}

static gcn_status nccl_wait_exchange(gcn_ctx *ctx)
{
    nccl_state *s = (nccl_state *)ctx->comm->state;
    nccl_side *d = &s->side[ctx->comm->rank];
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    return d->stream ? GCN_CUDA_ST(cudaStreamWaitEvent(cs->stream, d->done, 0)) : GCN_OK;
}

/* The ranks are threads of this process: their host barrier is enough. */
static gcn_status nccl_barrier(gcn_ctx *ctx)
{
    return gcn_comm_wait(ctx);
}

/* A rank of a job of processes: an all-reduce of one value, waited for. */
static gcn_status nccl_joined_barrier(gcn_ctx *ctx)
{
    nccl_state *s = (nccl_state *)ctx->comm->state;
    gcn_cuda_state *cs;
    gcn_status st = gcn_cuda_begin(ctx, &cs);
    if (st == GCN_OK)
        st = NCCL_ST(&s->lib, AllReduce, (s->barrier, s->barrier, 1, ncclFloat64, ncclSum,
                                          s->comms[ctx->comm->rank], cs->stream));
    if (st == GCN_OK)
        st = GCN_CUDA_ST(cudaStreamSynchronize(cs->stream));
    return st == GCN_OK ? GCN_OK : gcn_comm_fail(ctx, st);
}

static void nccl_abort_rank(void *state, int rank)
{
    nccl_state *s = (nccl_state *)state;
    if (s->comms[rank])
        s->lib.CommAbort(s->comms[rank]);
    s->comms[rank] = NULL;
}

static bool nccl_async_error(void *state, int rank, char *msg, size_t size)
{
    nccl_state *s = (nccl_state *)state;
    ncclResult_t r = ncclSuccess;
    if (!s->comms[rank] || s->lib.CommGetAsyncError(s->comms[rank], &r) != ncclSuccess ||
        r == ncclSuccess || r == ncclInProgress)
        return false;
    snprintf(msg, size, "NCCL reports an error: %s", s->lib.GetErrorString(r));
    return true;
}

static void nccl_close(void *state, int ranks)
{
    nccl_state *s = (nccl_state *)state;
    for (int i = 0; i < ranks; i++) {
        if (s->comms[i])
            s->lib.CommDestroy(s->comms[i]);
        for (int k = 0; k < s->pending[i].n; k++) {
            cudaEventDestroy(s->pending[i].t[k].start);
            cudaEventDestroy(s->pending[i].t[k].end);
        }
        free(s->pending[i].t);
        if (s->side[i].stream) {
            cudaEventDestroy(s->side[i].ready);
            cudaEventDestroy(s->side[i].done);
            cudaStreamDestroy(s->side[i].stream);
        }
    }
    if (s->barrier)
        cudaFree(s->barrier);
    dlclose(s->lib.handle);
    free(s->comms);
    free(s->pending);
    free(s->side);
    free(s);
}

static const gcn_comm_transport nccl_transport = {
    nccl_allreduce,  nccl_alltoallv, nccl_wait_exchange, nccl_barrier,
    nccl_abort_rank, nccl_close,     nccl_settle,        nccl_async_error,
};

static const gcn_comm_transport nccl_joined_transport = {
    nccl_allreduce,  nccl_alltoallv, nccl_wait_exchange, nccl_joined_barrier,
    nccl_abort_rank, nccl_close,     nccl_settle,        nccl_async_error,
};

/* The per-rank arrays of n ranks. */
static gcn_status alloc_ranks(gcn_ctx *ctx, nccl_state *s, int n)
{
    s->comms = (ncclComm_t *)calloc((size_t)n, sizeof *s->comms);
    s->pending = (nccl_pending *)calloc((size_t)n, sizeof *s->pending);
    s->side = (nccl_side *)calloc((size_t)n, sizeof *s->side);
    if (!s->comms || !s->pending || !s->side)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for %d NCCL ranks", n);
    return GCN_OK;
}

/* Frees a state whose transport did not open. */
static void discard(nccl_state *s)
{
    if (s->lib.handle)
        dlclose(s->lib.handle);
    free(s->comms);
    free(s->pending);
    free(s->side);
    free(s);
}

/* ncclCommInitAll over the contexts' devices, restoring the current one. */
static gcn_status init_all(gcn_ctx *const *ctxs, int n, nccl_state *s)
{
    gcn_ctx *ctx = ctxs[0];
    GCN_TRY(alloc_ranks(ctx, s, n));
    int *devices = (int *)malloc((size_t)n * sizeof *devices);
    if (!devices)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for %d NCCL ranks", n);
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
        discard(s);
        return st;
    }
    *tp = &nccl_transport;
    *state = s;
    return GCN_OK;
}

gcn_status gcn_comm_new_id(gcn_ctx *ctx, gcn_comm_id *id)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, id);
    static_assert(sizeof(ncclUniqueId) == GCN_COMM_ID_BYTES, "NCCL's id is 128 bytes");
    nccl_lib lib = {};
    GCN_TRY(load(ctx, &lib));
    ncclUniqueId u;
    gcn_status st = NCCL_ST(&lib, GetUniqueId, (&u));
    if (st == GCN_OK)
        memcpy(id->bytes, u.internal, GCN_COMM_ID_BYTES);
    dlclose(lib.handle);
    return st;
}

gcn_status gcn_comm_nccl_join(gcn_ctx *ctx, int rank, int ranks, const gcn_comm_id *id,
                              const gcn_comm_transport **tp, void **state)
{
    nccl_state *s = (nccl_state *)calloc(1, sizeof *s);
    if (!s)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for the NCCL state");
    ncclUniqueId u;
    memcpy(u.internal, id->bytes, GCN_COMM_ID_BYTES);
    gcn_status st = load(ctx, &s->lib);
    if (st == GCN_OK)
        st = alloc_ranks(ctx, s, ranks);
    int current = 0;
    if (st == GCN_OK)
        st = GCN_CUDA_ST(cudaGetDevice(&current));
    if (st == GCN_OK) {
        st = GCN_CUDA_ST(cudaSetDevice(ctx->device_index));
        if (st == GCN_OK)
            st = GCN_CUDA_ST(cudaMalloc((void **)&s->barrier, sizeof *s->barrier));
        if (st == GCN_OK)
            st = NCCL_ST(&s->lib, CommInitRank, (&s->comms[rank], ranks, u, rank));
        cudaSetDevice(current);
    }
    if (st != GCN_OK) {
        if (s->barrier)
            cudaFree(s->barrier);
        discard(s);
        return st;
    }
    *tp = &nccl_joined_transport;
    *state = s;
    return GCN_OK;
}
