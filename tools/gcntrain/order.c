/* gcntrain's node order under --reorder auto: training starts on the order
 * as loaded while METIS runs on a host thread; once it is ready the run
 * times a whole epoch on each order and keeps the faster (models/
 * order_trial.h).  The decision is printed, logged and saved beside the
 * dataset cache, so a later run applies it at once. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcntrain.h"

#define DECISION_MAGIC "gcn-order 1"

/* Steady epochs timed on each order, and those skipped first. */
enum { TRIAL_SAMPLES = 20, TRIAL_WARM = 2 };

/* The reordering auto times: METIS communities of 256 and 4,096 nodes.
 * The finest default level (16) costs two thirds of METIS's time on
 * ogbn-arxiv, one call per part of 256, for an epoch no faster
 * (docs/perf.md, "Node order chosen by measurement"). */
#define AUTO_SPEC "metis:256,4096"

/* The reordering auto stands for, or the configuration's own. */
static const char *metis_spec(const session *s)
{
    return strcmp(s->cfg.reorder, "auto") ? s->cfg.reorder : AUTO_SPEC;
}

/* "<cache>.order-<hash>": the hash of what the decision depends on (the
 * reordering, the model, the features, the kernels, the device kind, and
 * substitute labels, which set the classes). */
static int decision_path(const session *s, char *path, size_t size)
{
    if (!s->ds->cache_path[0])
        return -1;
    char key[512];
    snprintf(key, sizeof key, "%s|%08x|%s|%s|%s|%d%s%s", metis_spec(s),
             (unsigned)gcn_model_config_hash(&s->cfg), s->ds->feature_source, s->cfg.spmm,
             gcn_device_name(gcn_ctx_device(s->ctx)), (int)s->cfg.cuda_graph,
             s->ds->label_source[0] ? "|" : "", s->ds->label_source);
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = key; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    int n = snprintf(path, size, "%s.order-%016llx", s->ds->cache_path, (unsigned long long)h);
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* A saved decision: 1 reordered, 0 the order as loaded, -1 none. */
static int read_decision(const session *s, double ms[2])
{
    char path[1200], magic[32] = "", which[16] = "";
    if (decision_path(s, path, sizeof path))
        return -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int got = fscanf(f, "%31[^\n] %15s %lf %lf", magic, which, &ms[0], &ms[1]);
    fclose(f);
    if (got != 4 || strcmp(magic, DECISION_MAGIC) ||
        (strcmp(which, "reordered") && strcmp(which, "loaded"))) {
        fprintf(stderr, "gcntrain: warning: %s is not an order decision: timing the orders "
                "again\n", path);
        return -1;
    }
    return which[0] == 'r';
}

static void write_decision(session *s, bool reorder, const double ms[2])
{
    char path[1200], tmp[1300];
    if (decision_path(s, path, sizeof path)) {
        printf("order      decision not saved: the dataset has no cache folder\n");
        return;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    signals_hold(true);
    FILE *f = fopen(tmp, "w");
    bool ok = f && fprintf(f, "%s\n%s %.6f %.6f\n", DECISION_MAGIC,
                           reorder ? "reordered" : "loaded", ms[0], ms[1]) > 0;
    ok = f && fclose(f) == 0 && ok && rename(tmp, path) == 0;
    if (!ok) {
        remove(tmp);
        fprintf(stderr, "gcntrain: warning: cannot save the order decision to %s\n", path);
    }
    signals_hold(false);
}

/* Waits for the reordering job and gives the dataset it renumbered,
 * which is to replace the session's.  Returns 0 or an exit code. */
static int take_reordered(session *s, gcn_dataset **out)
{
    gcn_status st = gcn_reorder_job_take(s->ctx, s->order_job, out);
    gcn_reorder_job_free(&s->order_job);
    return st == GCN_OK ? 0 : fail(s, st, PHASE_TRAIN, "reorder");
}

int order_begin(session *s)
{
    const gcn_model_config *c = &s->cfg;
    bool timed = !strcmp(c->reorder, "auto") && gcn_ctx_device(s->ctx) == GCN_DEVICE_CUDA;
    if (s->a.switch_at < 0 && !timed)
        return 0;
    if (c->readout.enabled || c->ranks > 1 || c->nccl || s->a.eval_only || s->a.resume)
        return 0;
    gcn_reorder_opts o;
    gcn_status st = gcn_reorder_parse(s->ctx, metis_spec(s), &o);
    if (st != GCN_OK)
        return fail(s, st, PHASE_INPUT, "reorder");
    if (o.method == GCN_REORDER_NONE || o.method == GCN_REORDER_PARTS) {
        fprintf(stderr, "gcntrain: --reorder-switch-at needs --reorder auto, degree or "
                "metis[:S,...], not %s\n", c->reorder);
        return EXIT_INPUT;
    }
    double ms[2];
    int saved = s->a.switch_at < 0 ? read_decision(s, ms) : -1;
    if (saved == 0) {
        printf("order      as loaded (saved decision: an epoch %.3f ms, %.3f ms reordered by "
               "%s)\n", ms[0], ms[1], metis_spec(s));
        return 0;
    }
    if ((st = gcn_reorder_job_start(s->ctx, s->ds, &o, &s->order_job)) != GCN_OK)
        return fail(s, st, PHASE_INPUT, "reorder");
    if (s->a.switch_at >= 0)
        return 0;
    if (saved == 1) {
        gcn_dataset *re = NULL;
        double t0 = now_s();
        int rc = take_reordered(s, &re);
        s->t_load += now_s() - t0;
        if (rc)
            return rc;
        gcn_dataset_free(&s->ds);
        s->ds = re;
        printf("order      %s (saved decision: an epoch %.3f ms, %.3f ms as loaded)\n",
               metis_spec(s), ms[1], ms[0]);
        return 0;
    }
    gcn_order_trial_init(&s->trial, TRIAL_SAMPLES, TRIAL_WARM);
    s->trial_on = true;
    printf("order      as loaded while %s is computed on a host thread\n", metis_spec(s));
    return 0;
}

/* Switches the trainer to the reordered dataset (staging it first). */
static int switch_to_reordered(session *s, gcn_trainer *tr)
{
    int rc = take_reordered(s, &s->reordered);
    gcn_status st = GCN_OK;
    if (!rc && ((st = gcn_trainer_stage_order(s->ctx, tr, s->reordered)) != GCN_OK ||
                (st = gcn_trainer_switch_order(s->ctx, tr)) != GCN_OK))
        rc = fail(s, st, PHASE_TRAIN, "reorder");
    return rc;
}

/* Acts on the decision: the trainer drops the order it no longer needs,
 * the session keeps the dataset in the chosen order (later runs start on
 * it), and the decision is printed, logged and saved.  The selector's
 * choices will be saved again for the final matrices. */
static int decided(session *s, int run, gcn_trainer *tr, int epoch, bool reorder)
{
    gcn_status st;
    if (!reorder && (st = gcn_trainer_switch_order(s->ctx, tr)) != GCN_OK)
        return fail(s, st, PHASE_TRAIN, "reorder");
    gcn_trainer_drop_order(tr);
    if (reorder) {
        gcn_dataset_free(&s->ds);
        s->ds = s->reordered;
        s->reordered = NULL;
    }
    gcn_dataset_free(&s->reordered);
    const gcn_order_trial *t = &s->trial;
    printf("order      %s after epoch %d: an epoch %.3f ms as loaded, %.3f ms reordered by "
           "%s (median of %d and %d steady epochs, noise %.3f ms)\n",
           reorder ? "reordered" : "as loaded", epoch, t->median_ms[0], t->median_ms[1],
           metis_spec(s), t->n[0], t->n[1], t->noise_ms);
    char spec[96];
    log_line(&s->log, "{\"run\":%d,\"epoch\":%d,\"order\":\"%s\",\"reorder\":%s,"
             "\"loaded_ms\":%.6f,\"reordered_ms\":%.6f,\"noise_ms\":%.6f,\"samples\":[%d,%d]}",
             run + 1, epoch, reorder ? "reordered" : "loaded",
             json_string(spec, sizeof spec, metis_spec(s)), t->median_ms[0], t->median_ms[1],
             t->noise_ms, t->n[0], t->n[1]);
    write_decision(s, reorder, t->median_ms);
    s->spmm_reported = false; /* print the selector's table again for the final matrices */
    free(s->choices);
    s->choices = NULL;
    s->trial_on = false;
    return 0;
}

int order_epoch(session *s, int run, gcn_trainer *tr, const gcn_epoch_stats *es)
{
    if (s->a.switch_at >= 0 && s->order_job && es->epoch == s->a.switch_at) {
        int rc = switch_to_reordered(s, tr);
        if (!rc)
            printf("order      %s from epoch %d on (--reorder-switch-at)\n", metis_spec(s),
                   es->epoch + 1);
        return rc;
    }
    if (!s->trial_on)
        return 0;
    bool steady = es->graph || (gcn_ctx_device(s->ctx) != GCN_DEVICE_CUDA &&
                                gcn_trainer_spmm_locked(tr));
    gcn_order_action a = gcn_order_trial_epoch(&s->trial, es->train_ms + es->eval_ms, steady,
                                               gcn_reorder_job_done(s->order_job),
                                               s->cfg.epochs - es->epoch);
    if (a == GCN_ORDER_TRY) {
        int rc = switch_to_reordered(s, tr);
        if (!rc)
            printf("order      timing %s from epoch %d on (as loaded: %.3f ms an epoch)\n",
                   metis_spec(s), es->epoch + 1, s->trial.ms[0][s->trial.n[0] - 1]);
        return rc;
    }
    if (a == GCN_ORDER_KEEP || a == GCN_ORDER_BACK)
        return decided(s, run, tr, es->epoch, a == GCN_ORDER_KEEP);
    return 0;
}

void order_end(session *s)
{
    if (s->order_job && !gcn_reorder_job_done(s->order_job))
        printf("order      as loaded: the run ended before %s was ready (stopped)\n",
               metis_spec(s));
    else if (s->trial_on && s->order_job)
        printf("order      as loaded: the run ended before enough steady epochs to time %s\n",
               metis_spec(s));
    gcn_reorder_job_free(&s->order_job);
    gcn_dataset_free(&s->reordered);
    s->trial_on = false;
}
