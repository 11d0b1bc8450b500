/* gcntrain's runs (on one context, on ranks, or as one rank process of a
 * job): epochs with their log lines and checkpoints, stopping cleanly on a
 * signal; the best-validation predictions; the summary; and the
 * evaluation of a checkpoint without training. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gcntrain.h"

void log_epoch(session *s, int run, const gcn_epoch_stats *e)
{
    if (!s->a.quiet)
        printf("run %d epoch %4d  loss %.4f  train %.4f  valid %.4f  test %.4f  %8.2f ms\n",
               run + 1, e->epoch, (double)e->loss, e->train_acc, e->valid_acc, e->test_acc,
               e->train_ms + e->eval_ms);
    log_line(&s->log,
             "{\"run\":%d,\"epoch\":%d,\"loss\":%.9g,\"train_acc\":%.6f,\"valid_acc\":%.6f,"
             "\"test_acc\":%.6f,\"train_ms\":%.4f,\"eval_ms\":%.4f}",
             run + 1, e->epoch, (double)e->loss, e->train_acc, e->valid_acc, e->test_acc,
             e->train_ms, e->eval_ms);
}

static gcn_status save_rank(gcn_ctx *ctx, gcn_trainer *tr, void *path)
{
    return gcn_trainer_save(ctx, tr, path);
}

int save_checkpoint(session *s, const gcn_trainer *tr)
{
    signals_hold(true);
    gcn_status st = s->trainers ? on_every_rank(s, save_rank, (void *)s->a.save)
                                : gcn_trainer_save(s->ctx, tr, s->a.save);
    signals_hold(false);
    return st == GCN_OK ? 0 : fail(s, st, PHASE_OUTPUT, "save");
}

static gcn_status predict_rank(gcn_ctx *ctx, gcn_trainer *tr, void *user)
{
    session *s = user;
    return gcn_trainer_predict(ctx, tr, s->pred_classes, s->pred_probs);
}

int keep_predictions(session *s, gcn_trainer *tr, const gcn_train_best *b)
{
    if (!s->a.predict || b->valid_acc <= s->pred_valid)
        return 0;
    size_t n = (size_t)s->ds->n_nodes, c = (size_t)s->ds->n_classes;
    if (!s->pred_classes)
        s->pred_classes = malloc((n > 0 ? n : 1) * sizeof *s->pred_classes);
    if (!s->pred_probs)
        s->pred_probs = malloc((n * c > 0 ? n * c : 1) * sizeof *s->pred_probs);
    if (!s->pred_classes || !s->pred_probs) {
        fprintf(stderr, "gcntrain: out of host memory for the predictions\n");
        return EXIT_RUNTIME;
    }
    gcn_status st = s->trainers ? on_every_rank(s, predict_rank, s)
                                : gcn_trainer_predict(s->ctx, tr, s->pred_classes, s->pred_probs);
    if (st != GCN_OK)
        return fail(s, st, PHASE_TRAIN, "predict");
    s->pred_valid = b->valid_acc;
    return 0;
}

int write_predictions(session *s)
{
    if (gcn_ctx_rank(s->ctx) > 0) /* a job's rank 0 holds the gathered predictions */
        return 0;
    signals_hold(true);
    gcn_status st = gcn_predictions_write(s->ctx, s->a.predict, s->ds->n_nodes,
                                          s->ds->n_classes, s->pred_classes, s->pred_probs);
    signals_hold(false);
    if (st != GCN_OK)
        return fail(s, st, PHASE_OUTPUT, "predict");
    printf("predictions of %d nodes in %s\n", s->ds->n_nodes, s->a.predict);
    return 0;
}

int check_resumed_epochs(session *s, int done)
{
    if (done <= s->cfg.epochs)
        return 0;
    snprintf(s->error, sizeof s->error, "resume: %s has trained %d epochs, more than the "
             "%d asked for (--epochs)", s->a.resume, done, s->cfg.epochs);
    fprintf(stderr, "gcntrain: %s\n", s->error);
    return EXIT_INPUT;
}

int next_epoch(session *s, gcn_trainer *tr, gcn_epoch_stats *es)
{
    signals_training();
    s->stop = signals_pending();
    gcn_status st = job_agree(s, AGREE_ANY, &s->stop); /* a job's ranks stop together */
    if (st != GCN_OK)
        return fail(s, st, PHASE_TRAIN, "training");
    if (s->stop)
        return 0;
    st = s->trainers ? gcn_trainer_epoch_ranks(s->ctx, s->ranks, s->trainers, es)
                     : gcn_trainer_epoch(s->ctx, tr, es);
    if (st != GCN_OK)
        return fail(s, st, PHASE_TRAIN, "training");
    s->t_train += es->train_ms * 1e-3;
    s->t_eval += es->eval_ms * 1e-3;
    return 0;
}

int save_every(session *s, const gcn_trainer *tr, int epoch, int *saved)
{
    if (s->a.save_every <= 0 || epoch % s->a.save_every)
        return 0;
    *saved = epoch;
    return save_checkpoint(s, tr);
}

/* Once every call site has locked (in a job, on every rank: ranks lock at
 * their own epochs, and writing the choices is a collective): the
 * selector's table and the choices saved. */
static int spmm_epoch(session *s, int run, gcn_trainer *tr, bool from_file)
{
    int locked = spmm_locked(s, tr);
    gcn_status st = job_agree(s, AGREE_ALL, &locked);
    if (st != GCN_OK)
        return fail(s, st, PHASE_TRAIN, "spmm plan");
    if (!locked || !(s->spmm_reported = report_spmm(s, run, tr)))
        return 0;
    st = save_choices(s, tr, from_file);
    return st == GCN_OK ? 0 : fail(s, st, PHASE_OUTPUT, "spmm plan");
}

int train_epochs(session *s, int run, gcn_trainer *tr, bool from_file)
{
    int rc, saved = gcn_trainer_epochs_done(tr);
    for (int e = saved; e < s->cfg.epochs; e++) {
        gcn_epoch_stats es;
        if ((rc = next_epoch(s, tr, &es)))
            return rc;
        if (s->stop)
            break;
        log_epoch(s, run, &es);
        if (!log_ok(&s->log))
            return EXIT_RUNTIME;
        if ((rc = order_epoch(s, run, tr, &es)))
            return rc;
        if (!s->spmm_reported && (rc = spmm_epoch(s, run, tr, from_file)))
            return rc;
        if ((rc = save_every(s, tr, es.epoch, &saved)))
            return rc;
    }
    return s->a.save && gcn_trainer_epochs_done(tr) > saved ? save_checkpoint(s, tr) : 0;
}

void finish_run(session *s, int run, const gcn_train_best *b, int epochs_done)
{
    if (s->stop) {
        s->stop_run = run;
        s->stop_epoch = epochs_done;
        s->stop_best = *b;
        return;
    }
    s->best_test[s->runs_done++] = b->test_acc;
    printf("run %d best valid %.4f at epoch %d: test %.4f\n", run + 1, b->valid_acc, b->epoch,
           b->test_acc);
    log_line(&s->log,
             "{\"run\":%d,\"best_epoch\":%d,\"best_train_acc\":%.6f,\"best_valid_acc\":%.6f,"
             "\"best_test_acc\":%.6f}",
             run + 1, b->epoch, b->train_acc, b->valid_acc, b->test_acc);
}

static gcn_status load_rank(gcn_ctx *ctx, gcn_trainer *tr, void *path)
{
    return gcn_trainer_load(ctx, tr, path);
}

/* --resume's checkpoint into tr (every rank's trainer on ranks). */
static int load_checkpoint(session *s, gcn_trainer *tr)
{
    gcn_status st = s->trainers ? on_every_rank(s, load_rank, (void *)s->a.resume)
                                : gcn_trainer_load(s->ctx, tr, s->a.resume);
    return st == GCN_OK ? 0 : fail(s, st, PHASE_INPUT, "resume");
}

int resume(session *s, gcn_trainer *tr)
{
    int rc = load_checkpoint(s, tr);
    if (rc || (rc = check_resumed_epochs(s, gcn_trainer_epochs_done(tr))))
        return rc;
    char path[1024];
    log_line(&s->log, "{\"run\":1,\"resumed_from\":%s,\"resumed_at_epoch\":%d}",
             json_string(path, sizeof path, s->a.resume), gcn_trainer_epochs_done(tr));
    return 0;
}

/* The run's trainer: the whole model's, or in a job this rank's. */
static gcn_status create_trainer(session *s, gcn_trainer **tr)
{
    return s->rdv ? job_trainer_create(s, tr) : gcn_trainer_create(s->ctx, tr, &s->cfg, s->ds);
}

/* One run: a fresh model from seed + run, optionally resumed. */
static int train_run(session *s, int run)
{
    gcn_trainer *tr = NULL;
    gcn_status st;
    int rc = 0;
    gcn_rng_seed(s->ctx, s->cfg.seed + (uint64_t)run);
    double t0 = now_s();
    if ((st = create_trainer(s, &tr)) != GCN_OK)
        return fail(s, st, PHASE_INPUT, "setup");
    if (run == 0 && s->a.resume && (rc = resume(s, tr)))
        goto done;
    if (run == 0 && ((rc = export_data(s)) || (rc = job_partition(s, tr))))
        goto done;
    bool from_file = false;
    if ((st = load_choices(s, tr, &from_file)) != GCN_OK) {
        rc = fail(s, st, PHASE_INPUT, "spmm plan");
        goto done;
    }
    s->t_prep += now_s() - t0;
    s->spmm_reported = false;
    const gcn_model *model = gcn_trainer_model(tr);
    const gcn_csr *xs = gcn_model_sparse_input(model);
    if (run == 0)
        printf("params     %lld\n", (long long)gcn_model_param_count(model));
    if (run == 0 && xs)
        printf("input      sparse: %d non-zeros of %d x %d (%.2f %%); the first layer's "
               "dropout and product skip the zeros\n",
               gcn_csr_nnz(xs), gcn_csr_rows(xs), gcn_csr_cols(xs),
               100.0 * gcn_csr_nnz(xs) / ((double)gcn_csr_rows(xs) * gcn_csr_cols(xs)));
    int first = gcn_trainer_epochs_done(tr);
    rc = train_epochs(s, run, tr, from_file);
    s->job_epochs += gcn_trainer_epochs_done(tr) - first;
    order_end(s);
    if (rc)
        goto done;
    gcn_train_best b;
    gcn_trainer_best(tr, &b);
    finish_run(s, run, &b, gcn_trainer_epochs_done(tr));
    if (!s->stop)
        rc = keep_predictions(s, tr, &b);
done:
    gcn_trainer_free(&tr);
    return rc;
}

/* Logs the summary of an interrupted run, followed by where it stopped
 * (run and epoch) and its best result so far. */
static void log_interrupted(session *s, const char *summary)
{
    char extra[512] = "";
    if (s->stop_epoch > 0)
        snprintf(extra, sizeof extra,
                 ",\"interrupted_run\":%d,\"interrupted_after_epoch\":%d,\"best_epoch\":%d,"
                 "\"best_valid_acc\":%.6f,\"best_test_acc\":%.6f",
                 s->stop_run + 1, s->stop_epoch, s->stop_best.epoch, s->stop_best.valid_acc,
                 s->stop_best.test_acc);
    log_line(&s->log, "%s,\"interrupted\":true,\"signal\":\"%s\"%s}", summary,
             signal_name(s->stop), extra);
}

void print_results(session *s)
{
    int r = s->runs_done;
    double mean = r > 0 ? 0.0 : NAN, var = 0.0;
    for (int i = 0; i < r; i++)
        mean += s->best_test[i] / r;
    for (int i = 0; i < r; i++)
        var += (s->best_test[i] - mean) * (s->best_test[i] - mean) / (r > 1 ? r - 1 : 1);
    gcn_memory_stats ms;
    gcn_ctx_memory_stats(s->ctx, &ms);
    for (int k = 0; k < gcn_ranks_count(s->ranks); k++) { /* the busiest rank's */
        gcn_memory_stats rs;
        gcn_ctx_memory_stats(gcn_ranks_ctx(s->ranks, k), &rs);
        ms.peak = k == 0 || rs.peak > ms.peak ? rs.peak : ms.peak;
        ms.reserved = k == 0 || rs.reserved > ms.reserved ? rs.reserved : ms.reserved;
    }
    if (s->stop && s->stop_epoch > 0)
        printf("interrupted by %s after epoch %d of run %d: best valid %.4f at epoch %d: "
               "test %.4f\n", signal_name(s->stop), s->stop_epoch, s->stop_run + 1,
               s->stop_best.valid_acc, s->stop_best.epoch, s->stop_best.test_acc);
    else if (s->stop)
        printf("interrupted by %s before run %d trained an epoch\n", signal_name(s->stop),
               r + 1);
    if (r > 0)
        printf("test accuracy %.4f +- %.4f over %d run%s (at the best validation epoch)\n",
               mean, sqrt(var), r, r == 1 ? "" : "s");
    printf("time load %.3f s, preprocess %.3f s, train %.3f s, eval %.3f s; peak %s memory %.1f MiB\n",
           s->t_load, s->t_prep, s->t_train, s->t_eval, gcn_device_name(gcn_ctx_device(s->ctx)),
           (double)ms.peak / (1 << 20));
    char summary[1024], m[32], sd[32];
    snprintf(summary, sizeof summary,
             "{\"summary\":true,\"runs\":%d,\"test_acc_mean\":%s,\"test_acc_std\":%s,"
             "\"load_s\":%.4f,\"preprocess_s\":%.4f,\"train_s\":%.4f,\"eval_s\":%.4f,"
             "\"peak_bytes\":%zu,\"reserved_bytes\":%zu,\"device\":\"%s\"",
             r, json_number(m, sizeof m, "%.6f", mean),
             json_number(sd, sizeof sd, "%.6f", r > 0 ? sqrt(var) : NAN), s->t_load, s->t_prep,
             s->t_train, s->t_eval, ms.peak, ms.reserved, gcn_device_name(gcn_ctx_device(s->ctx)));
    if (s->stop)
        log_interrupted(s, summary);
    else
        log_line(&s->log, "%s}", summary);
}

/* Whether to stop before the next run: a signal came (in a job, to any
 * rank, so that they all stop); *rc is set when agreeing failed. */
static bool stop_before_run(session *s, int *rc)
{
    if (!s->stop)
        s->stop = signals_pending();
    gcn_status st = job_agree(s, AGREE_ANY, &s->stop);
    if (st != GCN_OK)
        *rc = fail(s, st, PHASE_TRAIN, "training");
    return s->stop || *rc;
}

int train_runs(session *s)
{
    int rc = 0;
    for (int r = 0; r < s->cfg.runs && rc == 0 && !stop_before_run(s, &rc); r++)
        rc = train_run(s, r);
    if (rc || (rc = job_traffic(s)))
        return rc;
    print_results(s);
    if (s->stop)
        return 128 + s->stop;
    return s->a.predict ? write_predictions(s) : 0;
}

static gcn_status evaluate_rank(gcn_ctx *ctx, gcn_trainer *tr, void *user)
{
    gcn_train_best b;
    gcn_status st = gcn_trainer_evaluate(ctx, tr, &b);
    if (st == GCN_OK && gcn_ctx_rank(ctx) == 0) /* every rank has the same */
        *(gcn_train_best *)user = b;
    return st;
}

int eval_trainer(session *s, gcn_trainer *tr)
{
    gcn_train_best b;
    gcn_status st;
    int rc = load_checkpoint(s, tr);
    if (rc || (rc = export_data(s)))
        return rc;
    st = s->trainers ? on_every_rank(s, evaluate_rank, &b) : gcn_trainer_evaluate(s->ctx, tr, &b);
    if (st != GCN_OK)
        return fail(s, st, PHASE_TRAIN, "evaluate");
    printf("eval       %s after epoch %d: the best-validation model (epoch %d): train %.4f  "
           "valid %.4f  test %.4f\n", s->a.resume, gcn_trainer_epochs_done(tr), b.epoch,
           b.train_acc, b.valid_acc, b.test_acc);
    char path[1024];
    log_line(&s->log,
             "{\"eval\":%s,\"epochs_done\":%d,\"best_epoch\":%d,\"train_acc\":%.6f,"
             "\"valid_acc\":%.6f,\"test_acc\":%.6f}",
             json_string(path, sizeof path, s->a.resume), gcn_trainer_epochs_done(tr), b.epoch,
             b.train_acc, b.valid_acc, b.test_acc);
    if (!log_ok(&s->log))
        rc = EXIT_RUNTIME;
    else if (s->a.predict && !(rc = keep_predictions(s, tr, &b)))
        rc = write_predictions(s);
    return rc;
}

int eval_only(session *s)
{
    gcn_trainer *tr = NULL;
    gcn_rng_seed(s->ctx, s->cfg.seed);
    gcn_status st = create_trainer(s, &tr);
    int rc = st == GCN_OK ? eval_trainer(s, tr) : fail(s, st, PHASE_INPUT, "setup");
    gcn_trainer_free(&tr);
    return rc;
}
