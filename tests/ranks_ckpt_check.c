/* Checkpoints and predictions over ranks against one context, on either
 * device (ranks_ckpt_check.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "ranks_ckpt_check.h"

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
    gcn_ctx *one;     /* n == 1: the context on the device */
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

static void open_run(run_on *r, gcn_device device, gcn_comm_kind kind, const char *json, int n)
{
    memset(r, 0, sizeof *r);
    r->n = n;
    r->ctx = test_cpu_ctx(9);
    r->ds = sbm(r->ctx);
    gcn_model_config cfg;
    char err[256];
    cr_assert_eq(gcn_model_config_parse(&cfg, json, "test", err, sizeof err), GCN_OK, "%s", err);
    if (n == 1) {
        gcn_ctx_opts o = gcn_ctx_default_opts();
        o.device = device;
        o.seed = 9;
        o.threads = 1;
        cr_assert_eq(gcn_ctx_create(&r->one, &o), GCN_OK);
        cr_assert_eq(gcn_trainer_create(r->one, &r->tr[0], &cfg, r->ds), GCN_OK, "%s",
                     gcn_last_error(r->one));
        return;
    }
    char spec[32];
    gcn_reorder_opts ro;
    snprintf(spec, sizeof spec, "parts:%d", n);
    cr_assert_eq(gcn_reorder_parse(r->ctx, spec, &ro), GCN_OK);
    cr_assert_eq(gcn_dataset_reorder(r->ctx, r->ds, &ro), GCN_OK, "%s", gcn_last_error(r->ctx));
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = device;
    o.seed = 9;
    o.threads = 1;
    gcn_status st = gcn_ranks_create(r->ctx, &r->g, n, kind, &o);
    if (st == GCN_ERR_UNSUPPORTED && kind == GCN_COMM_NCCL)
        cr_skip_test("%s", gcn_last_error(r->ctx));
    cr_assert_eq(st, GCN_OK, "%s", gcn_last_error(r->ctx));
    cr_assert_eq(gcn_trainer_create_ranks(r->ctx, r->g, &cfg, r->ds, r->tr), GCN_OK, "%s",
                 gcn_last_error(r->ctx));
}

static void close_run(run_on *r)
{
    for (int k = 0; k < r->n; k++)
        gcn_trainer_free(&r->tr[k]);
    gcn_ranks_free(&r->g);
    gcn_dataset_free(&r->ds);
    gcn_ctx_free(&r->one);
    gcn_ctx_free(&r->ctx);
}

/* Where on_all's and epoch's errors are. */
static const char *error_of(const run_on *r)
{
    return gcn_last_error(r->n == 1 ? r->one : r->ctx);
}

static float epoch(run_on *r)
{
    gcn_epoch_stats es;
    gcn_status st = r->n == 1 ? gcn_trainer_epoch(r->one, r->tr[0], &es)
                              : gcn_trainer_epoch_ranks(r->ctx, r->g, r->tr, &es);
    cr_assert_eq(st, GCN_OK, "%s", error_of(r));
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
    return fn(r->one, 0, r);
}

void ranks_ckpt_round_trip(gcn_device device, gcn_comm_kind kind, int straight, int from,
                           int to, double rel_tol)
{
    char path[] = "/tmp/gcn-rank-ckpt-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    float want[EPOCHS];
    run_on r;
    open_run(&r, device, kind, bn_json, straight);
    for (int e = 0; e < EPOCHS; e++)
        want[e] = epoch(&r);
    close_run(&r);
    open_run(&r, device, kind, bn_json, from);
    for (int e = 0; e < SAVED_AT; e++) {
        float got = epoch(&r);
        cr_assert(fabs((double)got - want[e]) <= rel_tol * fabs((double)want[e]),
                  "epoch %d on %d", e + 1, from);
    }
    r.path = path;
    cr_assert_eq(on_all(&r, save_rank), GCN_OK, "%s", error_of(&r));
    close_run(&r);
    open_run(&r, device, kind, bn_json, to);
    r.path = path;
    cr_assert_eq(on_all(&r, load_rank), GCN_OK, "%s", error_of(&r));
    for (int k = 0; k < to; k++)
        cr_assert_eq(gcn_trainer_epochs_done(r.tr[k]), SAVED_AT);
    for (int e = SAVED_AT; e < EPOCHS; e++) {
        float got = epoch(&r);
        cr_assert(fabs((double)got - want[e]) <= rel_tol * fabs((double)want[e]),
                  "epoch %d: %.9g resumed on %d from %d, %.9g straight on %d", e + 1,
                  (double)got, to, from, (double)want[e], straight);
    }
    close_run(&r);
    unlink(path);
}

void ranks_ckpt_same_file(gcn_device device, gcn_comm_kind kind, int n)
{
    char a[] = "/tmp/gcn-rank-ckpt-XXXXXX", b[] = "/tmp/gcn-rank-ckpt-XXXXXX";
    close(mkstemp(a));
    close(mkstemp(b));
    run_on r;
    open_run(&r, device, kind, bn_json, 1);
    epoch(&r);
    r.path = a;
    cr_assert_eq(on_all(&r, save_rank), GCN_OK, "%s", error_of(&r));
    close_run(&r);
    open_run(&r, device, kind, bn_json, n);
    epoch(&r);
    r.path = b;
    cr_assert_eq(on_all(&r, save_rank), GCN_OK, "%s", error_of(&r));
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

void ranks_ckpt_bad_file(gcn_device device, gcn_comm_kind kind, int n)
{
    run_on r;
    open_run(&r, device, kind, bn_json, n);
    r.path = "/nonexistent/model.ckpt";
    cr_assert_eq(on_all(&r, load_rank), GCN_ERR_IO);
    cr_assert(strstr(gcn_last_error(r.ctx), "rank 0: /nonexistent/model.ckpt: cannot open"),
              "%s", gcn_last_error(r.ctx));
    close_run(&r);
}

void ranks_ckpt_predictions(gcn_device device, gcn_comm_kind kind, int n_ranks, float tol)
{
    run_on one, three;
    open_run(&one, device, kind, plain_json, 1);
    open_run(&three, device, kind, plain_json, n_ranks);
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
    cr_assert_eq(on_all(&one, predict_rank), GCN_OK, "%s", error_of(&one));
    cr_assert_eq(on_all(&three, predict_rank), GCN_OK, "%s", error_of(&three));
    int same = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t k = 0; k < c; k++)
            cr_assert_float_eq(pb[i * c + k], pa[i * c + k], tol, "node %lld class %lld",
                               (long long)i, (long long)k);
        same += ca[i] == cb[i];
        cr_assert(ca[i] == cb[i] || fabsf(pa[i * c + ca[i]] - pa[i * c + cb[i]]) < tol,
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
