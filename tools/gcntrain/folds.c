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
 * Standard deviations are over the folds with divisor k (numpy's default). */
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
    double *test, *valid;   /* [k][cfg.epochs] accuracies per fold and epoch */
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

/* Fold f's best-validation epoch (its pick under errica) and its best
 * test-fold epoch (shown for both), 1-based, over the first c->epochs. */
static void pick(const cv *c, int32_t f, int stride, int *by_valid, int *by_test)
{
    const double *v = c->valid + (size_t)f * (size_t)stride;
    const double *t = c->test + (size_t)f * (size_t)stride;
    int bv = 0, bt = 0;
    for (int e = 1; e < c->epochs; e++) {
        bv = v[e] > v[bv] ? e : bv;
        bt = t[e] > t[bt] ? e : bt;
    }
    *by_valid = bv + 1;
    *by_test = bt + 1;
}

/* One outer fold: its split, a fresh model from seed + fold, its epochs
 * (*done of them before a signal). */
static int train_fold(session *s, cv *c, int32_t f, int *done)
{
    gcn_trainer *tr = NULL;
    gcn_status st;
    int rc = 0;
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
    *done = 0;
    for (int e = 0; e < s->cfg.epochs; e++) {
        if ((s->stop = signals_pending()))
            break;
        gcn_epoch_stats es;
        if ((st = gcn_trainer_epoch(s->ctx, tr, &es)) != GCN_OK) {
            rc = fail(s, st, PHASE_TRAIN, "training");
            goto cleanup;
        }
        s->t_train += es.train_ms * 1e-3;
        s->t_eval += es.eval_ms * 1e-3;
        c->test[(size_t)f * (size_t)s->cfg.epochs + (size_t)e] = es.test_acc;
        c->valid[(size_t)f * (size_t)s->cfg.epochs + (size_t)e] = es.valid_acc;
        log_fold_epoch(s, f, &es);
        if (!log_ok(&s->log)) {
            rc = EXIT_RUNTIME;
            goto cleanup;
        }
        if (f == c->first && !s->spmm_reported)
            s->spmm_reported = report_spmm(s, f, tr);
        *done = e + 1;
    }
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

/* Per-fold lines, the protocol's result, the summary line of the log. */
static void report(session *s, const cv *c, int n_folds)
{
    int stride = s->cfg.epochs, gin_epoch = 1;
    double best_mean = -1.0, mean = NAN, std = NAN;
    for (int e = 0; !c->errica && e < c->epochs; e++) {
        double m = 0.0;
        for (int32_t f = c->first; f < c->first + n_folds; f++)
            m += c->test[(size_t)f * (size_t)stride + (size_t)e] / n_folds;
        if (m > best_mean) {
            best_mean = m;
            gin_epoch = e + 1;
        }
    }
    double *acc = malloc((size_t)n_folds * sizeof *acc);
    for (int32_t i = 0; acc && i < n_folds; i++) {
        int32_t f = c->first + i;
        const double *t = c->test + (size_t)f * (size_t)stride;
        int by_valid, by_test;
        pick(c, f, stride, &by_valid, &by_test);
        int epoch = c->errica ? by_valid : gin_epoch;
        acc[i] = t[epoch - 1];
        printf("fold %2d    test %.4f at %s epoch %d (best test %.4f at epoch %d, last %.4f)\n",
               f, acc[i], c->errica ? "its best-validation" : "the protocol's", epoch,
               t[by_test - 1], by_test, t[c->epochs - 1]);
        log_line(&s->log, "{\"fold\":%d,\"test_acc\":%.6f,\"epoch\":%d,\"best_test_acc\":%.6f,"
                 "\"best_test_epoch\":%d,\"last_test_acc\":%.6f}",
                 f, acc[i], epoch, t[by_test - 1], by_test, t[c->epochs - 1]);
    }
    if (acc)
        mean_std(acc, n_folds, &mean, &std);
    free(acc);
    printf("protocol   %s\n", protocol_name(c));
    printf("test accuracy %.4f +- %.4f over %d fold%s", mean, std, n_folds,
           n_folds == 1 ? "" : "s");
    if (c->errica)
        printf("\n");
    else
        printf(" at epoch %d\n", gin_epoch);
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
             c->errica ? "errica" : "gin", c->k, n_folds, c->epochs, c->errica ? 0 : gin_epoch,
             json_number(m, sizeof m, "%.6f", mean), json_number(sd, sizeof sd, "%.6f", std),
             s->t_train, s->t_eval, ms.peak, s->stop ? ",\"interrupted\":true" : "");
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
    int n_folds = 0;
    for (int32_t f = c.first; f <= c.last && rc == 0 && !s->stop; f++) {
        int epochs = 0;
        rc = train_fold(s, &c, f, &epochs);
        if (epochs > 0) { /* a fold a signal cut short counts with the epochs all ran */
            n_folds++;
            c.epochs = epochs < c.epochs ? epochs : c.epochs;
        }
    }
    if (rc == 0 && n_folds > 0)
        report(s, &c, n_folds);
    if (rc == 0 && s->stop)
        rc = 128 + s->stop;
done:
    free(c.fold);
    free(c.test);
    free(c.valid);
    return rc;
}
