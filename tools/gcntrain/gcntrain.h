/* gcntrain's parts: the options, what one invocation holds, the exit-code
 * contract, the JSON-lines log (log.c), signal handling (signals.c), the
 * SpMM selector's report and choices files (spmm_report.c), a rank
 * process of a job (job.c, agree.h) and the
 * cross-validation of graph-level models (folds.c) with its predictions
 * (fold_predict.c). */
#ifndef GCNTRAIN_H
#define GCNTRAIN_H

#include <stdbool.h>
#include <stdio.h>

#include "gcn.h"
#include "tools/common/config_options.h"
#include "tools/gcntrain/agree.h"

/* The exit codes (gcntrain --help, README.md); an interrupted run exits
 * with 128 + the signal's number: 130 for SIGINT, 143 for SIGTERM. */
enum {
    EXIT_RUNTIME = 1, /* CUDA error, out of memory, I/O error while writing */
    EXIT_INPUT = 2,   /* bad usage or bad input */
    EXIT_NUMERIC = 3  /* the training loss became non-finite */
};

/* Where a failure happened decides its exit code: reading input, training,
 * or writing output. */
typedef enum phase { PHASE_INPUT, PHASE_TRAIN, PHASE_OUTPUT } phase;

typedef struct args {
    const char *config, *dataset;
    const char *set[N_CLI_CONFIG]; /* the shared options' values, NULL where not given */
    const char *log, *save, *resume, *export_dir, *spmm_choices, *predict;
    const char *folds_file, *protocol;
    const char *mirror; /* --mirror: the datasets' base address */
    const char *rendezvous; /* --rendezvous FILE: this process is one rank of a job */
    long rank_timeout;      /* --rank-timeout S */
    long epochs, runs, save_every, folds, fold; /* folds, fold: -1 when not given */
    long download_timeout; /* seconds; 0: the library's default */
    long switch_at;       /* --reorder-switch-at K, -1 when not given */
    long long seed;
    bool quiet, force, append, eval_only;
    bool download, no_download; /* allow downloads over 5 GB / forbid any */
} args;

/* The JSON-lines log: checked at the start, created by its first line. */
typedef struct run_log {
    const char *path;  /* NULL: no log */
    bool append, force; /* add to the file, or replace it (else it must be new) */
    FILE *f;           /* open once a line has been written */
    bool failed;       /* a write failed (said once) */
} run_log;

/* Everything one invocation holds, freed in one place. */
typedef struct session {
    args a;
    gcn_model_config cfg;
    gcn_ctx *ctx;
    gcn_ranks *ranks;     /* a run on ranks: their group (NULL on one context) */
    gcn_trainer **trainers; /* and every rank's trainer while a run is on them */
    gcn_job job;          /* --rendezvous: this process's rank in its job */
    gcn_rendezvous *rdv;  /* its rendezvous, once joined */
    int job_epochs;       /* the epochs this rank process trained, over every run */
    gcn_dataset *ds;
    run_log log;
    char error[640];      /* the last failure's message, for the log */
    double t_load, t_prep, t_train, t_eval;
    double *best_test;
    int runs_done;
    int stop;             /* the signal that interrupted the run, else 0 */
    int stop_run, stop_epoch;  /* where it stopped: the run, its epochs done */
    gcn_train_best stop_best;  /* that run's best so far */
    bool spmm_reported;   /* the selector's table has been printed this run */
    char *choices;        /* the first run's locked choices, as a choices file in memory */
    size_t choices_len;
    int32_t *pred_classes; /* --predict: the best-validation model's so far */
    float *pred_probs;
    double pred_valid;     /* its validation accuracy (-1: none yet) */
    gcn_reorder_job *order_job; /* the reordering computed while training (order.c) */
    gcn_dataset *reordered;     /* its dataset while both orders are timed */
    gcn_order_trial trial;
    bool trial_on;              /* the orders are being timed */
} session;

/* Prints "gcntrain: what: the context's last error" (kept for the log) and
 * returns the exit code of st in that phase; in a job, when a peer caused
 * it, the line names that peer instead (job_peer_failed). */
int fail(session *s, gcn_status st, phase p, const char *what);

double now_s(void);

/* The library's log messages on stderr (gcn_ctx_opts.log_fn). */
void gcntrain_log(gcn_log_level level, const char *msg, void *user);

/* ---- run.c ---- */

/* One epoch's line on stdout (unless --quiet) and in the log. */
void log_epoch(session *s, int run, const gcn_epoch_stats *e);

/* --save: the trainer's checkpoint (on ranks: rank 0's, which holds the
 * whole model), with a second signal held until the file is in place.
 * Returns 0 or an exit code after saying why. */
int save_checkpoint(session *s, const gcn_trainer *tr);

/* --resume: the checkpoint into tr (into every rank's trainer on ranks),
 * its epochs checked against --epochs and logged.  0 or an exit code. */
int resume(session *s, gcn_trainer *tr);

/* The epochs of one run, from where the trainer is (on ranks, tr is rank
 * 0's and every rank trains), until the last or a signal (s->stop); a
 * checkpoint every --save-every epochs and at the end. */
int train_epochs(session *s, int run, gcn_trainer *tr, bool from_file);

/* --predict: the predictions of the run's best-validation model when it
 * beats the earlier runs' on validation; then the file. */
int keep_predictions(session *s, gcn_trainer *tr, const gcn_train_best *b);
int write_predictions(session *s);

/* A --resume checkpoint that has trained `done` epochs fits --epochs;
 * else says so, naming both, and returns EXIT_INPUT. */
int check_resumed_epochs(session *s, int done);

/* --export-data DIR, once the run's setup has accepted the dataset: the
 * dataset as used, written through a temporary folder.  0 or an exit
 * code after saying why. */
int export_data(session *s);

/* Trains one epoch of tr and adds its times to the session's.  When a
 * signal is pending it sets s->stop instead and runs no epoch.  Returns 0
 * or an exit status. */
int next_epoch(session *s, gcn_trainer *tr, gcn_epoch_stats *es);

/* Writes the --save-every checkpoint after `epoch` when one is due, and
 * then sets *saved to epoch.  Returns 0 or an exit status. */
int save_every(session *s, const gcn_trainer *tr, int epoch, int *saved);

/* A run's end: where a signal stopped it, or its best-validation result
 * printed, logged and kept for the summary. */
void finish_run(session *s, int run, const gcn_train_best *b, int epochs_done);

/* Every run (each from seed + run, the first from --resume), the summary
 * and --predict; 128 + the signal when one stopped it.  In a job, this
 * rank's trainer, with rank 0's lines on every rank's partition and
 * traffic. */
int train_runs(session *s);

/* --eval-only: the checkpoint's best-validation model on the splits, and
 * its predictions; eval_trainer does it with a trainer made (on ranks,
 * every rank's, tr rank 0's). */
int eval_only(session *s);
int eval_trainer(session *s, gcn_trainer *tr);

/* The summary on stdout and as the log's last line (marked interrupted
 * when a signal stopped the run). */
void print_results(session *s);

/* ---- order.c ---- */

/* Under --reorder auto on a GPU (or with --reorder-switch-at): applies a
 * saved decision, or starts computing the reordering on a host thread for
 * the first run to time.  0 or an exit code. */
int order_begin(session *s);

/* After each epoch of a run: switches order when the trial (or
 * --reorder-switch-at) says so, and reports the decision.  0 or an exit
 * code. */
int order_epoch(session *s, int run, gcn_trainer *tr, const gcn_epoch_stats *es);

/* At a run's end (and on every exit): stops a reordering still being
 * computed and frees what the trial holds. */
void order_end(session *s);

/* ---- ranks.c ---- */

/* --gpus N (one NCCL rank per GPU): checks that the context is on a GPU
 * and that N GPUs exist counting from that one; else says why and returns
 * EXIT_INPUT. */
int check_gpus(session *s);

/* Every run on the configuration's ranks (--ranks N, --gpus N), then the
 * summary; or --eval-only's evaluation on them.  128 + the signal when one
 * stopped it. */
int train_ranks(session *s);

/* fn(rank's context, rank's trainer, user) on every rank of s->ranks at
 * once (s->trainers). */
gcn_status on_every_rank(session *s, gcn_status (*fn)(gcn_ctx *, gcn_trainer *, void *),
                         void *user);

/* ---- job.c ---- */
/* --rendezvous: the rank from the launcher's environment, its GPU (its
 * local rank, modulo the GPUs it sees) and "devices" set in the
 * configuration; ranks other than 0 print nothing on stdout and write no
 * log.  0 or an exit code after saying why. */
int job_begin(session *s);
/* The rendezvous (rank 0 makes NCCL's id) and the communicator. */
int job_join(session *s);
/* Rank 0 loads the dataset, and with it computes and caches the
 * partition, before the others: called before (before = true) and after
 * load_dataset, it waits for the others' turn.  0 without a job. */
int job_load_turn(session *s, bool before);
/* This rank's trainer: its blocks of the adjacency that the partition
 * cut (train_runs and eval_only use it in a job). */
gcn_status job_trainer_create(session *s, gcn_trainer **tr);
/* Rank 0's lines on how the graph was cut, each rank's numbers gathered
 * (tr is this rank's trainer); and at the end, each rank's peak memory
 * and halo traffic over s->job_epochs.  Collectives; 0 without a job, else
 * 0 or an exit code. */
int job_partition(session *s, const gcn_trainer *tr);
int job_traffic(session *s);
/* *value replaced by the value the job's ranks agree on (agree.h; a
 * collective of every rank); without a job it stays. */
gcn_status job_agree(session *s, agreement how, int *value);
/* A failure in a job that a peer caused (the watcher names a failed peer,
 * waiting for it up to the timeout when the error came from the
 * communicator): prints the one line naming that peer and returns
 * EXIT_RUNTIME; else 0 (the rank's own error).  fail() calls it. */
int job_peer_failed(session *s, gcn_status st);
/* Closes the rendezvous: peers see this rank finished (rc 0) or failed. */
void job_end(session *s, int rc);

/* ---- folds.c ---- */

/* Cross-validation of a graph-level model: every fold (or --fold K, which
 * --save checkpoints and --resume continues), the per-fold results, the
 * protocol's mean and std, and --predict. */
int train_folds(session *s);

/* ---- fold_predict.c ---- */

/* --predict of a cross-validation: a prediction for every test graph of
 * the folds that ran, each made by the model the protocol selects for the
 * fold that tests it. */
typedef struct fold_preds {
    int32_t n_graphs, n_classes;
    int32_t *classes;          /* [n_graphs]: the predictions to write */
    float *probs;              /* [n_graphs * n_classes] */
    int epochs;                /* gin: the history's epochs (the configuration's) */
    int32_t *hist_classes;     /* gin: [epochs][n_graphs] each epoch's predictions of the
                                * test graphs */
    float *hist_probs;         /* gin: [epochs][n_graphs][n_classes] */
    int32_t *scratch_classes;  /* [n_graphs]: a trainer's rows, then the rows written */
    float *scratch_probs;      /* [n_graphs * n_classes] */
    int32_t *ids;              /* [n_graphs]: the graphs written */
} fold_preds;

/* Sizes p for s's collection, with every epoch's history (the gin
 * protocol's epoch is known once every fold has run).  Returns 0 or an
 * exit code after saying why. */
int fold_preds_init(session *s, fold_preds *p, bool every_epoch);

/* gin: the current model's predictions of the fold's test graphs (s->ds's
 * split) after epoch `epoch` (1-based), into the history. */
int fold_preds_epoch(session *s, fold_preds *p, gcn_trainer *tr, int epoch);

/* errica: the fold's best-validation model's predictions of its test
 * graphs. */
int fold_preds_best(session *s, fold_preds *p, gcn_trainer *tr);

/* gin: the test graphs of folds first..last as the history has them after
 * epoch `epoch` (1-based). */
void fold_preds_pick(fold_preds *p, const int32_t *fold, int32_t first, int32_t last, int epoch);

/* Writes the graphs of folds first..last to --predict FILE, ascending by
 * graph id, and says so (`which` names their model). */
int fold_preds_write(session *s, fold_preds *p, const int32_t *fold, int32_t first,
                     int32_t last, const char *which);
void fold_preds_free(fold_preds *p);

/* ---- log.c ---- */

/* How an output path is written: a file replaced through a temporary one
 * beside it, a file opened in place (the log), or a folder. */
typedef enum output_kind { OUTPUT_FILE, OUTPUT_IN_PLACE, OUTPUT_DIR } output_kind;

/* Checks, before any work, that an output can be written where it is
 * asked for: the path is not empty, its folder exists and takes new files,
 * and what is there already is of the right kind (and writable, for one
 * opened in place).  Returns 0 or EXIT_INPUT after saying why in one
 * line. */
int check_output_path(const char *option, const char *path, output_kind kind);

/* Checks --log, --force and --append before anything runs: an existing
 * file needs one of them.  Returns 0 or an exit code after saying why. */
int log_check(run_log *l, const args *a);

/* Writes one line (a JSON object, without the newline) and flushes it,
 * creating the file with the first line.  A failed write is said once and
 * makes log_ok false. */
void log_line(run_log *l, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
bool log_ok(const run_log *l);

/* s as a JSON string literal (quotes included) into buf. */
const char *json_string(char *buf, size_t size, const char *s);

/* v printed with fmt into buf, or null when it is not finite. */
const char *json_number(char *buf, size_t size, const char *fmt, double v);

/* Closes the log; false when closing it failed. */
bool log_close(run_log *l);

/* ---- fetch.c ---- */

/* A named dataset missing under the root is downloaded (unless --no-download
 * or "download": false), with progress on stderr.  Returns 0, an exit code
 * after saying why, or 128 + the signal that interrupted it. */
int fetch_dataset(session *s, const char *spec);

/* A failed load's message and exit code; when the dataset could have been
 * downloaded but downloads are off, the message says how. */
int fetch_load_failed(session *s, const char *spec, gcn_status st);

/* ---- signals.c ---- */

/* SIGINT and SIGTERM: before signals_training, the first exits at once with
 * 128 + its number (there is no epoch to finish); after it, the first asks
 * the run to stop after the current epoch (signals_pending) and a second
 * exits at once, after writing an "interrupted" line to the log when it is
 * open.  An exit waits for every hold to end. */
void signals_install(void);

/* The first epoch is about to run: from now on the first signal waits for
 * the epoch to end. */
void signals_training(void);

/* The log's file descriptor once it is open (-1: none), for that line. */
void signals_log_fd(int fd);

/* The first SIGINT or SIGTERM received, else 0. */
int signals_pending(void);

/* Holds an exit back (on) while a file is written through a temporary
 * one, so that no signal leaves it behind; the last off delivers it.
 * Holds nest and may come from any thread. */
void signals_hold(bool on);

/* signals_hold as the library's gcn_ctx_opts.temp_fn. */
void signals_temp(bool writing, void *user);

const char *signal_name(int sig);

/* ---- spmm_report.c ---- */

/* Whether every call site of tr (on ranks, of every rank's trainer) has
 * locked its choice. */
bool spmm_locked(const session *s, const gcn_trainer *tr);

/* Once every call site has locked: one table line per site (and a JSON
 * line per site in the log), when some site had a choice to make.
 * Returns whether the sites are all locked. */
bool report_spmm(session *s, int run, const gcn_trainer *tr);

/* Before training: the selector's choices from --spmm-choices FILE when it
 * exists, else from an earlier run of this invocation, so that only the
 * first run profiles (on ranks, each rank's lines of FILE, read by rank 0
 * and sent through the communicator; without FILE each run profiles).
 * *from_file says whether FILE was read. */
gcn_status load_choices(session *s, const gcn_trainer *tr, bool *from_file);

/* Once every site has locked (on every rank): --spmm-choices FILE (unless
 * it was read; on ranks, every rank's lines, written by rank 0) and, on one
 * context, the copy in memory for the next runs. */
gcn_status save_choices(session *s, const gcn_trainer *tr, bool from_file);

#endif
