/* A reordering computed on a host thread while the caller trains on the
 * dataset as loaded (gcn_reorder_job_start): the permutation, through the
 * file beside the dataset's cache, and the renumbered copy of the dataset. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct gcn_reorder_job {
    pthread_t thread;
    gcn_ctx *ctx;          /* the thread's own: a CPU context for its errors */
    const gcn_dataset *ds; /* read only, by both threads */
    gcn_reorder_opts o;
    uint32_t seed;
    atomic_bool stop;      /* set by the caller: end at the next METIS call */
    atomic_bool done;      /* set by the thread as its last write */
    gcn_status st;         /* the thread's result, read once done */
    char err[512];
    bool joined;           /* the caller's thread has waited for it */
    gcn_dataset *out;      /* the renumbered copy, once done and successful */
};

static gcn_status compute(gcn_reorder_job *j)
{
    const gcn_dataset *ds = j->ds;
    gcn_reorder *r = NULL;
    gcn_dataset *out = NULL;
    gcn_status st = GCN_OK;
    if (ds->cache_path[0])
        GCN_CHECK(gcn_reorder_cached(j->ctx, ds->graph, &j->o, j->seed, ds->cache_path,
                                     ds->cache_writable, &j->stop, &r));
    else
        GCN_CHECK(gcn_reorder_compute_seeded(j->ctx, ds->graph, &j->o, j->seed, &j->stop, &r));
    GCN_CHECK(gcn_ds_calloc(j->ctx, (void **)&out, 1, sizeof *out));
    GCN_CHECK(gcn_ds_permuted(j->ctx, ds, r, out));
    out->reorder = r;
    r = NULL;
    j->out = out;
    out = NULL;
cleanup:
    gcn_reorder_free(&r);
    free(out);
    return st;
}

static void *job_main(void *arg)
{
    gcn_reorder_job *j = arg;
    j->st = compute(j);
    if (j->st != GCN_OK)
        snprintf(j->err, sizeof j->err, "%s", gcn_last_error(j->ctx));
    atomic_store(&j->done, true);
    return NULL;
}

gcn_status gcn_reorder_job_start(gcn_ctx *ctx, const gcn_dataset *ds, const gcn_reorder_opts *o,
                                 gcn_reorder_job **out)
{
    GCN_ARG(ctx, ds && ds->graph && o && out);
    *out = NULL;
    if (ds->reorder)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "%s: already reordered (by %s)", ds->name,
                         gcn_reorder_method_name(ds->reorder->method));
    if (ds->n_graphs > 0)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "%s: a collection of %d graphs is not reordered", ds->name,
                         ds->n_graphs);
    gcn_reorder_opts ro = gcn_reorder_default_opts(GCN_REORDER_NONE);
    GCN_TRY(gcn_struct_import(ctx, "gcn_reorder_opts", &ro, &ro, sizeof ro, o));
    if (ro.method == GCN_REORDER_NONE || ro.method == GCN_REORDER_PARTS)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "reorder job: expected degree or metis, "
                         "not %s", gcn_reorder_method_name(ro.method));
    gcn_reorder_job *j = calloc(1, sizeof *j);
    if (!j)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for a reorder job");
    j->ds = ds;
    j->o = ro;
    atomic_init(&j->stop, false);
    atomic_init(&j->done, false);
    gcn_ctx_opts co = gcn_ctx_default_opts();
    co.device = GCN_DEVICE_CPU;
    co.threads = 1;
    co.log_level = ctx->log_level; /* its messages (METIS's time) reach the caller's log */
    co.log_fn = ctx->log_fn;
    co.log_user = ctx->log_user;
    gcn_status st = gcn_reorder_seed(ctx, &ro, &j->seed);
    if (st == GCN_OK && (st = gcn_ctx_create(&j->ctx, &co)) != GCN_OK)
        st = GCN_ERROR(ctx, st, "reorder job: cannot create its context");
    int rc = st == GCN_OK ? pthread_create(&j->thread, NULL, job_main, j) : 0;
    if (rc)
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "reorder job: cannot start a thread: %s",
                       strerror(rc));
    if (st != GCN_OK) {
        gcn_ctx_free(&j->ctx);
        free(j);
        return st;
    }
    *out = j;
    return GCN_OK;
}

bool gcn_reorder_job_done(const gcn_reorder_job *j)
{
    return j && atomic_load(&((gcn_reorder_job *)j)->done);
}

gcn_status gcn_reorder_job_take(gcn_ctx *ctx, gcn_reorder_job *j, gcn_dataset **out)
{
    GCN_ARG(ctx, j && out);
    *out = NULL;
    if (!j->joined) {
        pthread_join(j->thread, NULL);
        j->joined = true;
    }
    if (j->st != GCN_OK)
        return GCN_ERROR(ctx, j->st, "%s", j->err);
    if (!j->out)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "reorder job: its dataset was already taken");
    *out = j->out;
    j->out = NULL;
    return GCN_OK;
}

void gcn_reorder_job_free(gcn_reorder_job **job)
{
    if (!job || !*job)
        return;
    gcn_reorder_job *j = *job;
    *job = NULL;
    atomic_store(&j->stop, true);
    if (!j->joined)
        pthread_join(j->thread, NULL);
    gcn_dataset_free(&j->out);
    gcn_ctx_free(&j->ctx);
    free(j);
}
