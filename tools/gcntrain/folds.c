/* gcntrain's cross-validation of a graph-level model (a configuration with
 * a readout) on a collection of graphs: stratified folds drawn from the
 * data seed or read from --folds-file, each outer fold trained from its own
 * seed, and the result under the protocol asked for:
 *   gin     Xu et al. (ICLR'19): train on the other folds, evaluate the test
 *           fold every epoch; the epoch with the best mean test-fold
 *           accuracy over the folds, and the folds' mean and std there;
 *   errica  Errica et al. (ICLR'20): fold K + 1 (mod k) is held out for
 *           validation, the rest trains; each fold's test accuracy at its
 *           best-validation epoch, and their mean and std.
 * Standard deviations are over the folds with divisor k (numpy's default).
 * One fold (--fold K) checkpoints (--save) and resumes (--resume) as a
 * node-level run does; --predict writes each test graph's prediction from
 * the model of its fold the protocol selects. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gcntrain.h"

typedef struct cv {
    int32_t k, first, last; /* folds first..last of k run */
    int32_t *fold;          /* fold of each graph */
    bool errica;
    int epochs;             /* the epochs every fold ran (fewer when stopped) */
    double *test, *valid;   /* [k][cfg.epochs] accuracies per fold and epoch; NAN for the
                             * epochs before a resume but the checkpoint's best so far */
    int resumed_after;      /* --resume: the epochs its checkpoint had trained */
    int resumed_best;       /* and its best epoch so far */
    fold_preds preds;       /* --predict */
} cv;

static const char *protocol_name(const cv *c)
{
    return c->errica ? "errica (Errica et al. 2020: inner validation fold, test at the "
                       "best-validation epoch)"
                     : "gin (Xu et al. 2019: the epoch of the best mean test-fold accuracy)";
}

/* The fold assignment: read from --folds-file when it exists, else drawn
 * (stratified, data seed) and written there when asked. */
static int assign_folds(session *s, cv *c)
{
    gcn_status st;
    if (s->ds->n_graphs == 0 || !s->ds->graph_labels) {
        fprintf(stderr, "gcntrain: dataset %s is not a labelled collection of graphs: a model "
                "with a readout classifies graphs (tu:NAME)\n", s->ds->name);
        return EXIT_INPUT;
    }
    if (!(c->fold = malloc((size_t)s->ds->n_graphs * sizeof *c->fold))) {
        fprintf(stderr, "gcntrain: out of host memory\n");
        return EXIT_RUNTIME;
    }
    const char *path = s->a.folds_file;
    if (path && access(path, F_OK) == 0) {
        if ((st = gcn_graph_folds_read(s->ctx, path, s->ds, &c->k, c->fold)) != GCN_OK)
            return fail(s, st, PHASE_INPUT, "folds");
        if (s->a.folds > 0 && s->a.folds != c->k) {
            fprintf(stderr, "gcntrain: --folds %ld: %s holds %d folds\n", s->a.folds, path, c->k);
            return EXIT_INPUT;
        }
        printf("folds      %d, read from %s\n", c->k, path);
        return 0;
    }
    c->k = s->a.folds > 0 ? (int32_t)s->a.folds : 10;
    if ((st = gcn_graph_folds(s->ctx, s->ds, c->k, s->cfg.data_seed, c->fold)) != GCN_OK)
        return fail(s, st, PHASE_INPUT, "folds");
    if (path) {
        signals_hold(true);
        st = gcn_graph_folds_write(s->ctx, path, s->ds, c->k, c->fold);
        signals_hold(false);
        if (st != GCN_OK)
            return fail(s, st, PHASE_OUTPUT, "folds");
    }
    printf("folds      %d, stratified, drawn from data seed %llu%s%s\n", c->k,
           (unsigned long long)s->cfg.data_seed, path ? ", written to " : "", path ? path : "");
    return 0;
}

static void log_fold_epoch(session *s, int32_t f, const gcn_epoch_stats *e)
{
    if (!s->a.quiet)
        printf("fold %2d epoch %4d  loss %.4f  train %.4f  valid %.4f  test %.4f  %8.2f ms\n",
               f, e->epoch, (double)e->loss, e->train_acc, e->valid_acc, e->test_acc,
               e->train_ms + e->eval_ms);
    log_line(&s->log,
             "{\"fold\":%d,\"epoch\":%d,\"loss\":%.9g,\"train_acc\":%.6f,\"valid_acc\":%.6f,"
             "\"test_acc\":%.6f,\"train_ms\":%.4f,\"eval_ms\":%.4f}",
             f, e->epoch, (double)e->loss, e->train_acc, e->valid_acc, e->test_acc, e->train_ms,
             e->eval_ms);
}

/* Finds two epochs of fold f, counted from 1: the one with the best
 * validation accuracy (errica picks it) and the one with the best test
 * accuracy (printed under both protocols).  Only the first c->epochs
 * epochs with known accuracies are searched; a tie goes to the earlier. */
static void pick(const cv *c, int32_t f, int stride, int *by_valid, int *by_test)
{
    const double *v = c->valid + (size_t)f * (size_t)stride;
    const double *t = c->test + (size_t)f * (size_t)stride;
    int bv = -1, bt = -1;
    for (int e = 0; e < c->epochs; e++) {
        if (isnan(t[e]))
            continue;
        bv = bv < 0 || v[e] > v[bv] ? e : bv;
        bt = bt < 0 || t[e] > t[bt] ? e : bt;
    }
    *by_valid = bv + 1;
    *by_test = bt + 1;
}

/* --resume: loads fold f's trainer from the checkpoint.  The checkpoint
 * must come from this fold's split and must not have trained more epochs
 * than asked for.  Of the epochs it trained, only its best so far has
 * known accuracies in the tables (under gin, which has no validation
 * graphs, that is the last one); under gin with --predict, that epoch's
 * predictions are added to the history. */
static int resume_fold(session *s, cv *c, int32_t f, gcn_trainer *tr)
{
    gcn_status st = gcn_trainer_load(s->ctx, tr, s->a.resume);
    if (st != GCN_OK)
        return fail(s, st, PHASE_INPUT, "resume");
    int from = gcn_trainer_epochs_done(tr), rc = check_resumed_epochs(s, from);
    if (rc)
        return rc;
    gcn_train_best b;
    gcn_trainer_best(tr, &b);
    double *t = c->test + (size_t)f * (size_t)s->cfg.epochs;
    double *v = c->valid + (size_t)f * (size_t)s->cfg.epochs;
    for (int e = 0; e < from; e++)
        t[e] = v[e] = NAN;
    if (b.epoch > 0) {
        t[b.epoch - 1] = b.test_acc;
        v[b.epoch - 1] = b.valid_acc;
    }
    c->resumed_after = from;
    c->resumed_best = b.epoch;
    printf("fold %d resumed from %s after epoch %d; its best so far: epoch %d, valid %.4f, "
           "test %.4f\n", f, s->a.resume, from, b.epoch, b.valid_acc, b.test_acc);
    char path[1024];
    log_line(&s->log, "{\"fold\":%d,\"resumed_from\":%s,\"resumed_at_epoch\":%d,"
             "\"best_epoch\":%d,\"best_valid_acc\":%.6f,\"best_test_acc\":%.6f}",
             f, json_string(path, sizeof path, s->a.resume), from, b.epoch, b.valid_acc,
             b.test_acc);
    if (s->a.predict && !c->errica && b.epoch == from && from > 0)
        return fold_preds_epoch(s, &c->preds, tr, from);
    return 0;
}

/* Trains fold f from the trainer's current epoch until the last epoch,
 * or until a signal sets s->stop; *done is then the number of epochs
 * trained.  Saves a checkpoint every --save-every epochs and at the end,
 * and records the predictions --predict needs. */
static int fold_epochs(session *s, cv *c, int32_t f, gcn_trainer *tr, int *done)
{
    int rc, saved = *done = gcn_trainer_epochs_done(tr);
    for (int e = *done; e < s->cfg.epochs; e++) {
        gcn_epoch_stats es;
        if ((rc = next_epoch(s, tr, &es)))
            return rc;
        if (s->stop)
            break;
        c->test[(size_t)f * (size_t)s->cfg.epochs + (size_t)e] = es.test_acc;
        c->valid[(size_t)f * (size_t)s->cfg.epochs + (size_t)e] = es.valid_acc;
        log_fold_epoch(s, f, &es);
        if (!log_ok(&s->log))
            return EXIT_RUNTIME;
        if (s->a.predict && !c->errica && (rc = fold_preds_epoch(s, &c->preds, tr, es.epoch)))
            return rc;
        if (f == c->first && !s->spmm_reported)
            s->spmm_reported = report_spmm(s, f, tr);
        *done = e + 1;
        if ((rc = save_every(s, tr, es.epoch, &saved)))
            return rc;
    }
    return s->a.save && *done > saved ? save_checkpoint(s, tr) : 0;
}

/* Runs one outer fold: sets its split, builds a fresh model from seed +
 * fold (or loads the --resume checkpoint) and trains it; *done is the
 * number of epochs trained before any signal.  Under errica it also keeps
 * the predictions of the fold's best-validation model. */
static int train_fold(session *s, cv *c, int32_t f, int *done)
{
    gcn_trainer *tr = NULL;
    gcn_status st;
    int rc = 0;
    *done = 0;
    if ((st = gcn_graph_fold_split(s->ctx, s->ds, c->fold, c->k, f, c->errica)) != GCN_OK)
        return fail(s, st, PHASE_INPUT, "folds");
    gcn_rng_seed(s->ctx, s->cfg.seed + (uint64_t)f);
    double t0 = now_s();
    if ((st = gcn_trainer_create(s->ctx, &tr, &s->cfg, s->ds)) != GCN_OK)
        return fail(s, st, PHASE_INPUT, "setup");
    s->t_prep += now_s() - t0;
    if (f == c->first)
        printf("params     %lld\nbatches    %d graphs each; their products run %s (a batch's "
               "matrix lives one step: no profiling); the evaluation batch's products go "
               "through the spmm mode\n",
               (long long)gcn_model_param_count(gcn_trainer_model(tr)), s->cfg.batch_size,
               gcn_ctx_device(s->ctx) == GCN_DEVICE_CUDA ? "rowgroup" : "cpu");
    printf("fold %d of %d: %d training, %d validation, %d test graphs\n", f, c->k,
           s->ds->n_train, s->ds->n_valid, s->ds->n_test);
    s->spmm_reported = false;
    if (s->a.resume && (rc = resume_fold(s, c, f, tr)))
        goto cleanup;
    if ((rc = fold_epochs(s, c, f, tr, done)))
        goto cleanup;
    if (!s->stop && s->a.predict && c->errica)
        rc = fold_preds_best(s, &c->preds, tr);
cleanup:
    gcn_trainer_free(&tr);
    return rc;
}

static void mean_std(const double *v, int n, double *mean, double *std)
{
    double m = 0.0, var = 0.0;
    for (int i = 0; i < n; i++)
        m += v[i] / n;
    for (int i = 0; i < n; i++)
        var += (v[i] - m) * (v[i] - m) / n;
    *mean = m;
    *std = sqrt(var);
}

/* The epoch the gin protocol reports, counted from 1: the one with the
 * best test accuracy averaged over the folds that ran.  A tie goes to the
 * earlier epoch, and epochs a resumed fold has no accuracy for never win. */
static int gin_epoch(const session *s, const cv *c, int n_folds)
{
    int stride = s->cfg.epochs, best = 1;
    double best_mean = -1.0;
    for (int e = 0; e < c->epochs; e++) {
        double m = 0.0;
        for (int32_t f = c->first; f < c->first + n_folds; f++)
            m += c->test[(size_t)f * (size_t)stride + (size_t)e] / n_folds;
        if (m > best_mean) {
            best_mean = m;
            best = e + 1;
        }
    }
    return best;
}

/* Fold f's line on stdout and in the log: its test accuracy at the
 * protocol's epoch, returned. */
static double report_fold(session *s, const cv *c, int32_t f, int protocol_epoch)
{
    const double *t = c->test + (size_t)f * (size_t)s->cfg.epochs;
    int by_valid, by_test;
    pick(c, f, s->cfg.epochs, &by_valid, &by_test);
    int epoch = c->errica ? by_valid : protocol_epoch;
    double acc = t[epoch - 1], last = t[c->epochs - 1];
    printf("fold %2d    test %.4f at %s epoch %d (best test %.4f at epoch %d, last %.4f)", f,
           acc, c->errica ? "its best-validation" : "the protocol's", epoch, t[by_test - 1],
           by_test, last);
    if (c->resumed_after > 0)
        printf("; resumed after epoch %d: of epochs 1-%d only epoch %d's accuracies (the "
               "checkpoint's best so far) are known", c->resumed_after, c->resumed_after,
               c->resumed_best);
    printf("\n");
    char l[32], resumed[64] = "";
    if (c->resumed_after > 0)
        snprintf(resumed, sizeof resumed, ",\"resumed_after_epoch\":%d", c->resumed_after);
    log_line(&s->log, "{\"fold\":%d,\"test_acc\":%.6f,\"epoch\":%d,\"best_test_acc\":%.6f,"
             "\"best_test_epoch\":%d,\"last_test_acc\":%s%s}",
             f, acc, epoch, t[by_test - 1], by_test, json_number(l, sizeof l, "%.6f", last),
             resumed);
    return acc;
}

/* Per-fold lines, the protocol's result, the summary line of the log. */
static void report(session *s, const cv *c, int n_folds, int protocol_epoch)
{
    double mean = NAN, std = NAN;
    double *acc = malloc((size_t)n_folds * sizeof *acc);
    for (int32_t i = 0; acc && i < n_folds; i++)
        acc[i] = report_fold(s, c, c->first + i, protocol_epoch);
    if (acc)
        mean_std(acc, n_folds, &mean, &std);
    free(acc);
    printf("protocol   %s\n", protocol_name(c));
    printf("test accuracy %.4f +- %.4f over %d fold%s", mean, std, n_folds,
           n_folds == 1 ? "" : "s");
    if (c->errica)
        printf("\n");
    else
        printf(" at epoch %d\n", protocol_epoch);
    gcn_memory_stats ms;
    gcn_ctx_memory_stats(s->ctx, &ms);
    printf("time load %.3f s, preprocess %.3f s, train %.3f s, eval %.3f s; peak %s memory "
           "%.1f MiB\n", s->t_load, s->t_prep, s->t_train, s->t_eval,
           gcn_device_name(gcn_ctx_device(s->ctx)), (double)ms.peak / (1 << 20));
    char m[32], sd[32];
    log_line(&s->log,
             "{\"summary\":true,\"protocol\":\"%s\",\"folds\":%d,\"folds_run\":%d,"
             "\"epochs\":%d,\"epoch\":%d,\"test_acc_mean\":%s,\"test_acc_std\":%s,"
             "\"train_s\":%.4f,\"eval_s\":%.4f,\"peak_bytes\":%zu%s}",
             c->errica ? "errica" : "gin", c->k, n_folds, c->epochs,
             c->errica ? 0 : protocol_epoch, json_number(m, sizeof m, "%.6f", mean),
             json_number(sd, sizeof sd, "%.6f", std), s->t_train, s->t_eval, ms.peak,
             s->stop ? ",\"interrupted\":true" : "");
}

/* --predict, once every fold has run: writes the predictions of the
 * models the protocol selects. */
static int write_fold_predictions(session *s, cv *c, int protocol_epoch)
{
    char which[96];
    if (c->errica) {
        snprintf(which, sizeof which, "its fold's best-validation model");
    } else {
        fold_preds_pick(&c->preds, c->fold, c->first, c->last, protocol_epoch);
        snprintf(which, sizeof which, "its fold's model after epoch %d (the protocol's)",
                 protocol_epoch);
    }
    return fold_preds_write(s, &c->preds, c->fold, c->first, c->last, which);
}

int train_folds(session *s)
{
    cv c = {.errica = s->a.protocol && !strcmp(s->a.protocol, "errica"),
            .epochs = s->cfg.epochs};
    int rc = assign_folds(s, &c);
    if (rc)
        goto done;
    if (s->a.fold >= c.k) {
        fprintf(stderr, "gcntrain: --fold %ld: expected 0 to %d\n", s->a.fold, c.k - 1);
        rc = EXIT_INPUT;
        goto done;
    }
    c.first = s->a.fold >= 0 ? (int32_t)s->a.fold : 0;
    c.last = s->a.fold >= 0 ? (int32_t)s->a.fold : c.k - 1;
    size_t cells = (size_t)c.k * (size_t)s->cfg.epochs;
    c.test = calloc(cells, sizeof *c.test);
    c.valid = calloc(cells, sizeof *c.valid);
    if (!c.test || !c.valid) {
        fprintf(stderr, "gcntrain: out of host memory\n");
        rc = EXIT_RUNTIME;
        goto done;
    }
    if (s->a.predict && (rc = fold_preds_init(s, &c.preds, !c.errica)))
        goto done;
    int n_folds = 0;
    for (int32_t f = c.first; f <= c.last && rc == 0 && !s->stop; f++) {
        int epochs = 0;
        rc = train_fold(s, &c, f, &epochs);
        if (epochs > 0) { /* a fold cut short by a signal counts, over the epochs all folds ran */
            n_folds++;
            c.epochs = epochs < c.epochs ? epochs : c.epochs;
        }
    }
    int epoch = rc == 0 && n_folds > 0 && !c.errica ? gin_epoch(s, &c, n_folds) : 0;
    if (rc == 0 && n_folds > 0)
        report(s, &c, n_folds, epoch);
    if (rc == 0 && s->stop)
        rc = 128 + s->stop;
    else if (rc == 0 && s->a.predict && n_folds > 0)
        rc = write_fold_predictions(s, &c, epoch);
done:
    fold_preds_free(&c.preds);
    free(c.fold);
    free(c.test);
    free(c.valid);
    return rc;
}
