/* A reordering computed on a host thread (datasets/reorder_job.c): the
 * dataset gcn_dataset_reorder gives, an error inside METIS reported to the
 * caller, and a job freed while METIS runs stopping at its next call.  The
 * test binary wraps METIS_PartGraphKway (Makefile: --wrap) to count and
 * fail the library's calls; the tests that need it skip where the calls
 * bypass the wrap. */
#include <criterion/criterion.h>
#include <metis.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "helpers.h"

int __real_METIS_PartGraphKway(idx_t *nvtxs, idx_t *ncon, idx_t *xadj, idx_t *adjncy,
                               idx_t *vwgt, idx_t *vsize, idx_t *adjwgt, idx_t *nparts,
                               real_t *tpwgts, real_t *ubvec, idx_t *options, idx_t *objval,
                               idx_t *part);
int __wrap_METIS_PartGraphKway(idx_t *nvtxs, idx_t *ncon, idx_t *xadj, idx_t *adjncy,
                               idx_t *vwgt, idx_t *vsize, idx_t *adjwgt, idx_t *nparts,
                               real_t *tpwgts, real_t *ubvec, idx_t *options, idx_t *objval,
                               idx_t *part);

/* Visible to the shared library too, whose METIS calls the wrap also takes. */
__attribute__((visibility("default"))) int __wrap_METIS_PartGraphKway(
    idx_t *nvtxs, idx_t *ncon, idx_t *xadj, idx_t *adjncy, idx_t *vwgt, idx_t *vsize,
    idx_t *adjwgt, idx_t *nparts, real_t *tpwgts, real_t *ubvec, idx_t *options,
    idx_t *objval, idx_t *part);

static atomic_int metis_calls;
static atomic_int fail_from = -1; /* the call (0-based) from which METIS fails; -1: never */

int __wrap_METIS_PartGraphKway(idx_t *nvtxs, idx_t *ncon, idx_t *xadj, idx_t *adjncy,
                               idx_t *vwgt, idx_t *vsize, idx_t *adjwgt, idx_t *nparts,
                               real_t *tpwgts, real_t *ubvec, idx_t *options, idx_t *objval,
                               idx_t *part)
{
    int call = atomic_fetch_add(&metis_calls, 1), from = atomic_load(&fail_from);
    if (from >= 0 && call >= from)
        return METIS_ERROR_MEMORY;
    return __real_METIS_PartGraphKway(nvtxs, ncon, xadj, adjncy, vwgt, vsize, adjwgt, nparts,
                                      tpwgts, ubvec, options, objval, part);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static gcn_dataset *sbm(gcn_ctx *ctx, int32_t n)
{
    gcn_sbm_opts o = gcn_sbm_default_opts();
    o.n_nodes = n;
    o.n_features = 4;
    o.n_valid = 50;
    o.n_test = 50;
    gcn_dataset *ds = NULL;
    gcn_rng_seed(ctx, 9);
    cr_assert_eq(gcn_dataset_sbm(ctx, &ds, &o), GCN_OK, "%s", gcn_last_error(ctx));
    return ds;
}

/* Skips unless the library's METIS calls reach the wrap. */
static void require_wrap(gcn_ctx *ctx)
{
    gcn_dataset *ds = sbm(ctx, 300);
    gcn_reorder_opts o;
    cr_assert_eq(gcn_reorder_parse(ctx, "metis:64", &o), GCN_OK);
    atomic_store(&metis_calls, 0);
    cr_assert_eq(gcn_dataset_reorder(ctx, ds, &o), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_dataset_free(&ds);
    if (atomic_load(&metis_calls) == 0)
        cr_skip_test("the library is a shared object: its METIS calls are not wrapped");
}

Test(reorder_job, gives_the_dataset_reorder_gives)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset *ds = sbm(ctx, 800), *want = sbm(ctx, 800), *got = NULL;
    gcn_reorder_opts o;
    cr_assert_eq(gcn_reorder_parse(ctx, "metis:16,64", &o), GCN_OK);
    gcn_rng_seed(ctx, 5);
    cr_assert_eq(gcn_dataset_reorder(ctx, want, &o), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_reorder_job *job = NULL;
    gcn_rng_seed(ctx, 5); /* the same METIS seed */
    cr_assert_eq(gcn_reorder_job_start(ctx, ds, &o, &job), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_reorder_job_take(ctx, job, &got), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert(gcn_reorder_job_done(job));
    cr_assert_not_null(got->reorder);
    size_t n = (size_t)ds->n_nodes;
    cr_assert_arr_eq(got->reorder->order, want->reorder->order, n * sizeof(int32_t));
    cr_assert_arr_eq(got->features, want->features, n * (size_t)ds->n_features * sizeof(float));
    cr_assert_arr_eq(got->labels, want->labels, n * sizeof(int32_t));
    cr_assert_arr_eq(got->train, want->train, (size_t)ds->n_train * sizeof(int32_t));
    cr_assert_eq(got->graph->nnz, want->graph->nnz);
    cr_assert_arr_eq(got->graph->col_idx, want->graph->col_idx,
                     (size_t)got->graph->nnz * sizeof(int32_t));
    gcn_dataset *again = NULL;
    cr_assert_eq(gcn_reorder_job_take(ctx, job, &again), GCN_ERR_STATE, "taken once");
    gcn_reorder_job_free(&job);
    cr_assert_null(job);
    gcn_reorder_job_free(&job);
    gcn_dataset_free(&got);
    gcn_dataset_free(&want);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

Test(reorder_job, refuses_what_it_cannot_reorder)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset *ds = sbm(ctx, 200);
    gcn_reorder_job *job = NULL;
    gcn_reorder_opts o = gcn_reorder_default_opts(GCN_REORDER_PARTS);
    cr_assert_eq(gcn_reorder_job_start(ctx, ds, &o, &job), GCN_ERR_INVALID_ARG);
    cr_assert_null(job);
    o = gcn_reorder_default_opts(GCN_REORDER_DEGREE);
    cr_assert_eq(gcn_dataset_reorder(ctx, ds, &o), GCN_OK);
    cr_assert_eq(gcn_reorder_job_start(ctx, ds, &o, &job), GCN_ERR_STATE);
    cr_assert(strstr(gcn_last_error(ctx), "already reordered"), "%s", gcn_last_error(ctx));
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

Test(reorder_job, an_error_in_metis_reaches_the_caller)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    require_wrap(ctx);
    gcn_dataset *ds = sbm(ctx, 2000), *got = NULL;
    gcn_reorder_opts o;
    cr_assert_eq(gcn_reorder_parse(ctx, "metis:16,256", &o), GCN_OK);
    atomic_store(&metis_calls, 0);
    atomic_store(&fail_from, 3); /* a call of the finer level */
    gcn_reorder_job *job = NULL;
    cr_assert_eq(gcn_reorder_job_start(ctx, ds, &o, &job), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_reorder_job_take(ctx, job, &got), GCN_ERR_NOMEM);
    cr_assert_null(got);
    cr_assert(strstr(gcn_last_error(ctx), "METIS_PartGraphKway returned METIS_ERROR_MEMORY"),
              "%s", gcn_last_error(ctx));
    cr_assert_eq(atomic_load(&metis_calls), 4, "METIS is not called after its error");
    gcn_reorder_job_free(&job);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

Test(reorder_job, freed_while_metis_runs_it_stops_at_the_next_call, .timeout = 60)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    require_wrap(ctx);
    gcn_dataset *ds = sbm(ctx, 12000);
    gcn_reorder_opts o;
    cr_assert_eq(gcn_reorder_parse(ctx, "metis:16,256", &o), GCN_OK);
    atomic_store(&metis_calls, 0);
    gcn_reorder_job *job = NULL;
    cr_assert_eq(gcn_reorder_job_start(ctx, ds, &o, &job), GCN_OK, "%s", gcn_last_error(ctx));
    double t0 = now_s();
    while (atomic_load(&metis_calls) < 3 && now_s() - t0 < 30.0)
        ;
    int calls = atomic_load(&metis_calls);
    cr_assert(calls >= 3 && !gcn_reorder_job_done(job), "METIS ran %d calls", calls);
    gcn_reorder_job_free(&job);
    /* the coarse level makes 47 parts, each cut again: stopping skips most */
    int total = atomic_load(&metis_calls);
    cr_assert(total < 30, "%d METIS calls of 48 after the stop was asked at %d", total, calls);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}
