/* Checkpoints and predictions over ranks on the CPU: a checkpoint written
 * by N ranks resumes on M ranks or on one context (and one context's on N
 * ranks) to the losses of the run that never stopped, and the ranks'
 * predictions are one context's, in the original node order.  The losses
 * agree within 1e-5 relative, not to the bit: each rank sums its rows'
 * neighbours and the gradients in another order than one context does
 * (docs/distributed.md, "Agreement"). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

enum { MAX_R = 8, EPOCHS = 8, SAVED_AT = 4 };

static const char bn_json[] =
    "{\"layers\": [{\"type\": \"gcn\", \"out\": 16, \"norm\": \"batch\", \"activation\": "
    "\"relu\", \"dropout\": 0.2}, {\"type\": \"gcn\", \"out\": \"classes\", \"dropout\": 0.5}], "
    "\"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}";

/* Without batch norm: evaluation-mode scores follow the parameters
 * closely (a bias before batch norm wanders by rounding, test_ranks.c). */
static const char plain_json[] =
    "{\"layers\": [{\"type\": \"gcn\", \"out\": 16, \"activation\": \"relu\", \"dropout\": 0.2}, "
    "{\"type\": \"gcn\", \"out\": \"classes\", \"dropout\": 0.5}], "
    "\"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}";

/* A model trained on one context (n == 1, the dataset in its original
 * order) or on n ranks (the dataset reordered by parts:n). */
typedef struct run_on {
    int n;
    gcn_ctx *ctx;     /* the one context, or the group's caller */
    gcn_ranks *g;
    gcn_dataset *ds;
    gcn_trainer *tr[MAX_R];
    const char *path; /* what save_rank and load_rank use */
    int32_t *classes;
    float *probs;
} run_on;

static gcn_dataset *sbm(gcn_ctx *ctx)
{
    gcn_sbm_opts so = gcn_sbm_default_opts();
    so.n_nodes = 600;
    so.n_features = 16;
    so.n_valid = 150;
    so.n_test = 200;
    gcn_dataset *ds = NULL;
    cr_assert_eq(gcn_dataset_sbm(ctx, &ds, &so), GCN_OK, "%s", gcn_last_error(ctx));
    return ds;
}

static void open_run(run_on *r, const char *json, int n)
{
    memset(r, 0, sizeof *r);
    r->n = n;
    r->ctx = test_cpu_ctx(9);
    r->ds = sbm(r->ctx);
    gcn_model_config cfg;
    char err[256];
    cr_assert_eq(gcn_model_config_parse(&cfg, json, "test", err, sizeof err), GCN_OK, "%s", err);
    if (n == 1) {
        cr_assert_eq(gcn_trainer_create(r->ctx, &r->tr[0], &cfg, r->ds), GCN_OK, "%s",
                     gcn_last_error(r->ctx));
        return;
    }
    char spec[32];
    gcn_reorder_opts ro;
    snprintf(spec, sizeof spec, "parts:%d", n);
    cr_assert_eq(gcn_reorder_parse(r->ctx, spec, &ro), GCN_OK);
    cr_assert_eq(gcn_dataset_reorder(r->ctx, r->ds, &ro), GCN_OK, "%s", gcn_last_error(r->ctx));
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CPU;
    o.seed = 9;
    o.threads = 1;
    cr_assert_eq(gcn_ranks_create(r->ctx, &r->g, n, GCN_COMM_LOCAL, &o), GCN_OK, "%s",
                 gcn_last_error(r->ctx));
    cr_assert_eq(gcn_trainer_create_ranks(r->ctx, r->g, &cfg, r->ds, r->tr), GCN_OK, "%s",
                 gcn_last_error(r->ctx));
}

static void close_run(run_on *r)
{
    for (int k = 0; k < r->n; k++)
        gcn_trainer_free(&r->tr[k]);
    gcn_ranks_free(&r->g);
    gcn_dataset_free(&r->ds);
    gcn_ctx_free(&r->ctx);
}

static float epoch(run_on *r)
{
    gcn_epoch_stats es;
    gcn_status st = r->n == 1 ? gcn_trainer_epoch(r->ctx, r->tr[0], &es)
                              : gcn_trainer_epoch_ranks(r->ctx, r->g, r->tr, &es);
    cr_assert_eq(st, GCN_OK, "%s", gcn_last_error(r->ctx));
    return es.loss;
}

static gcn_status save_rank(gcn_ctx *ctx, int rank, void *user)
{
    run_on *r = user;
    return gcn_trainer_save(ctx, r->tr[rank], r->path);
}

static gcn_status load_rank(gcn_ctx *ctx, int rank, void *user)
{
    run_on *r = user;
    return gcn_trainer_load(ctx, r->tr[rank], r->path);
}

static gcn_status predict_rank(gcn_ctx *ctx, int rank, void *user)
{
    run_on *r = user;
    return gcn_trainer_predict(ctx, r->tr[rank], r->classes, r->probs);
}

/* Saves, loads or predicts on every rank at once (or on the one context). */
static gcn_status on_all(run_on *r, gcn_rank_fn fn)
{
    if (r->n > 1)
        return gcn_ranks_run(r->ctx, r->g, fn, r);
    return fn(r->ctx, 0, r);
}

/* Trains EPOCHS epochs straight on `straight` ranks, then SAVED_AT
 * epochs on `from` ranks, saves, resumes on `to` ranks and trains the
 * rest: every loss after the resume is the straight run's. */
static void round_trip(int straight, int from, int to)
{
    char path[] = "/tmp/gcn-rank-ckpt-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    float want[EPOCHS];
    run_on r;
    open_run(&r, bn_json, straight);
    for (int e = 0; e < EPOCHS; e++)
        want[e] = epoch(&r);
    close_run(&r);
    open_run(&r, bn_json, from);
    for (int e = 0; e < SAVED_AT; e++) {
        float got = epoch(&r);
        cr_assert_float_eq(got, want[e], 1e-5f * fabsf(want[e]), "epoch %d on %d", e + 1, from);
    }
    r.path = path;
    cr_assert_eq(on_all(&r, save_rank), GCN_OK, "%s", gcn_last_error(r.ctx));
    close_run(&r);
    open_run(&r, bn_json, to);
    r.path = path;
    cr_assert_eq(on_all(&r, load_rank), GCN_OK, "%s", gcn_last_error(r.ctx));
    for (int k = 0; k < to; k++)
        cr_assert_eq(gcn_trainer_epochs_done(r.tr[k]), SAVED_AT);
    for (int e = SAVED_AT; e < EPOCHS; e++) {
        float got = epoch(&r);
        cr_assert_float_eq(got, want[e], 1e-5f * fabsf(want[e]),
                           "epoch %d: %.9g resumed on %d from %d, %.9g straight on %d", e + 1,
                           (double)got, to, from, (double)want[e], straight);
    }
    close_run(&r);
    unlink(path);
}

Test(ranks_checkpoint, saved_on_2_resumes_on_3)
{
    round_trip(2, 2, 3);
}

Test(ranks_checkpoint, saved_on_3_resumes_on_one_context)
{
    round_trip(1, 3, 1);
}

Test(ranks_checkpoint, one_contexts_resumes_on_4)
{
    round_trip(1, 1, 4);
}

/* The file N ranks write is the one a context writes: the same size, and
 * one context loads it. */
Test(ranks_checkpoint, ranks_write_one_contexts_file)
{
    char a[] = "/tmp/gcn-rank-ckpt-XXXXXX", b[] = "/tmp/gcn-rank-ckpt-XXXXXX";
    close(mkstemp(a));
    close(mkstemp(b));
    run_on r;
    open_run(&r, bn_json, 1);
    epoch(&r);
    r.path = a;
    cr_assert_eq(on_all(&r, save_rank), GCN_OK, "%s", gcn_last_error(r.ctx));
    close_run(&r);
    open_run(&r, bn_json, 3);
    epoch(&r);
    r.path = b;
    cr_assert_eq(on_all(&r, save_rank), GCN_OK, "%s", gcn_last_error(r.ctx));
    close_run(&r);
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    cr_assert(fa && fb);
    fseek(fa, 0, SEEK_END);
    fseek(fb, 0, SEEK_END);
    cr_assert_eq(ftell(fa), ftell(fb));
    /* magic, version, architecture hash and epoch: the same bytes */
    char ha[20], hb[20];
    rewind(fa);
    rewind(fb);
    cr_assert_eq(fread(ha, 1, sizeof ha, fa), sizeof ha);
    cr_assert_eq(fread(hb, 1, sizeof hb, fb), sizeof hb);
    cr_assert(memcmp(ha, hb, sizeof ha) == 0);
    fclose(fa);
    fclose(fb);
    unlink(a);
    unlink(b);
}

/* A file rank 0 cannot read stops every rank, with rank 0's message. */
Test(ranks_checkpoint, a_bad_file_stops_every_rank_with_rank_0s_message)
{
    run_on r;
    open_run(&r, bn_json, 3);
    r.path = "/nonexistent/model.ckpt";
    cr_assert_eq(on_all(&r, load_rank), GCN_ERR_IO);
    cr_assert(strstr(gcn_last_error(r.ctx), "rank 0: /nonexistent/model.ckpt: cannot open"),
              "%s", gcn_last_error(r.ctx));
    close_run(&r);
}

/* Predictions of 3 ranks against one context's, node by node in the
 * original order: the same class wherever the two largest probabilities
 * are more than rounding apart, probabilities within 1e-5. */
Test(ranks_checkpoint, predictions_on_ranks_are_one_contexts)
{
    run_on one, three;
    open_run(&one, plain_json, 1);
    open_run(&three, plain_json, 3);
    for (int e = 0; e < 6; e++) {
        epoch(&one);
        epoch(&three);
    }
    int64_t n = one.ds->n_nodes, c = one.ds->n_classes;
    int32_t *ca = malloc((size_t)n * sizeof *ca), *cb = malloc((size_t)n * sizeof *cb);
    float *pa = malloc((size_t)(n * c) * sizeof *pa), *pb = malloc((size_t)(n * c) * sizeof *pb);
    one.classes = ca;
    one.probs = pa;
    three.classes = cb;
    three.probs = pb;
    cr_assert_eq(on_all(&one, predict_rank), GCN_OK, "%s", gcn_last_error(one.ctx));
    cr_assert_eq(on_all(&three, predict_rank), GCN_OK, "%s", gcn_last_error(three.ctx));
    int same = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t k = 0; k < c; k++)
            cr_assert_float_eq(pb[i * c + k], pa[i * c + k], 1e-5f, "node %lld class %lld",
                               (long long)i, (long long)k);
        same += ca[i] == cb[i];
        cr_assert(ca[i] == cb[i] || fabsf(pa[i * c + ca[i]] - pa[i * c + cb[i]]) < 1e-5f,
                  "node %lld: class %d on one context, %d on ranks", (long long)i, ca[i], cb[i]);
    }
    cr_assert_geq(same, n - 2);
    free(ca);
    free(cb);
    free(pa);
    free(pb);
    close_run(&one);
    close_run(&three);
}
