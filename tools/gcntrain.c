/* gcntrain: trains a model configuration (a models/ JSON file) on a dataset and
 * reports per-epoch progress, the best-validation result of each run and
 * their mean.  Exit codes: 0 success, 1 usage, 2 bad input, 3 runtime. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gcn.h"

enum { EXIT_USAGE = 1, EXIT_INPUT = 2, EXIT_RUNTIME = 3 };

typedef struct args {
    const char *config, *dataset, *root, *device, *spmm, *features, *reorder, *cuda_graph;
    const char *log, *save, *resume, *export_dir, *spmm_plan;
    long epochs, runs;
    long long seed;
    bool quiet;
} args;

static const char usage[] =
    "usage: gcntrain CONFIG [options]\n"
    "  --dataset NAME|PATH   dataset name, folder, graph file or generator (default: synthetic)\n"
    "  --root DIR            where dataset names resolve (default: the config's, else data)\n"
    "  --epochs N --runs R --seed S\n"
    "                        override the configuration (run r uses seed S + r)\n"
    "  --device cpu|cuda|cuda:N|auto\n"
    "  --spmm MODE           auto (the adaptive selector, the default), auto-deterministic,\n"
    "                        a kernel name (rowsplit) or a strategy (intra_smem@256,\n"
    "                        intra_smem+inter_csr@256)\n"
    "  --reorder SPEC        auto (metis on a GPU, none on the CPU), none, degree, metis\n"
    "                        (community sizes 16,256,4096) or metis:S[,S...]\n"
    "  --spmm-plan FILE      load the selector's choices from FILE if it exists (and skip\n"
    "                        profiling), else write them there once locked\n"
    "  --cuda-graph on|off   replay steady-state epochs as one CUDA graph (default: the\n"
    "                        config's cuda_graph, on)\n"
    "  --features random:D|degree|file|none\n"
    "                        substitute node features (e.g. for ogbn-arxiv without node-feat)\n"
    "  --log FILE.jsonl      one JSON object per epoch, one per run (its best-validation\n"
    "                        epoch) and a summary\n"
    "  --save FILE           checkpoint at the end of each run\n"
    "  --resume FILE         continue the first run from a checkpoint\n"
    "  --export-data DIR     write the dataset as used (features, edges, labels, split)\n"
    "                        as .npy files, e.g. for tools/compare/pyg_train.py\n"
    "  --quiet               no per-epoch lines\n"
    "  --help, --version\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* Returns 0 to go on, -1 when --help or --version answered, or an exit code
 * after printing why. */
static int parse_args(int argc, char **argv, args *a)
{
    *a = (args){.epochs = -1, .runs = -1, .seed = -1};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(usage, stdout);
            return -1;
        }
        if (!strcmp(o, "--version")) {
            printf("gcntrain %s\n", GCN_VERSION_STRING);
            return -1;
        }
        if (!strcmp(o, "--quiet")) {
            a->quiet = true;
            continue;
        }
        if (o[0] != '-') {
            if (a->config) {
                fprintf(stderr, "gcntrain: unexpected argument '%s'\n%s", o, usage);
                return EXIT_USAGE;
            }
            a->config = o;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "gcntrain: %s needs a value\n", o);
            return EXIT_USAGE;
        }
        const char *v = argv[++i];
        long n;
        if (!strcmp(o, "--dataset")) a->dataset = v;
        else if (!strcmp(o, "--root")) a->root = v;
        else if (!strcmp(o, "--device")) a->device = v;
        else if (!strcmp(o, "--spmm")) a->spmm = v;
        else if (!strcmp(o, "--reorder")) a->reorder = v;
        else if (!strcmp(o, "--spmm-plan")) a->spmm_plan = v;
        else if (!strcmp(o, "--cuda-graph")) a->cuda_graph = v;
        else if (!strcmp(o, "--features")) a->features = v;
        else if (!strcmp(o, "--log")) a->log = v;
        else if (!strcmp(o, "--save")) a->save = v;
        else if (!strcmp(o, "--resume")) a->resume = v;
        else if (!strcmp(o, "--export-data")) a->export_dir = v;
        else if (!strcmp(o, "--epochs") && parse_long(v, 1, 10000000, &n)) a->epochs = n;
        else if (!strcmp(o, "--runs") && parse_long(v, 1, 1000, &n)) a->runs = n;
        else if (!strcmp(o, "--seed") && parse_long(v, 0, 2147483647, &n)) a->seed = n;
        else {
            fprintf(stderr, "gcntrain: bad option or value: %s %s\n", o, v);
            return EXIT_USAGE;
        }
    }
    if (!a->config) {
        fprintf(stderr, "gcntrain: missing CONFIG\n%s", usage);
        return EXIT_USAGE;
    }
    return 0;
}

/* Configuration values overridden by the command line. */
static int apply_args(const args *a, gcn_model_config *cfg)
{
    if (a->epochs > 0) cfg->epochs = (int)a->epochs;
    if (a->runs > 0) cfg->runs = (int)a->runs;
    if (a->seed >= 0) cfg->seed = (uint64_t)a->seed;
    const char *keys[] = {"device", "spmm", "features", "reorder", "root", "cuda_graph"};
    const char *values[] = {a->device,  a->spmm, a->features,
                            a->reorder, a->root, a->cuda_graph};
    char err[512];
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (values[i] && gcn_model_config_set(cfg, keys[i], values[i], err, sizeof err) != GCN_OK) {
            fprintf(stderr, "gcntrain: --%s\n", err);
            return EXIT_USAGE;
        }
    return 0;
}

static int exit_code_for(gcn_status st)
{
    switch (st) {
    case GCN_ERR_IO:
    case GCN_ERR_FORMAT:
    case GCN_ERR_NOT_FOUND:
    case GCN_ERR_INVALID_ARG:
    case GCN_ERR_SHAPE:
        return EXIT_INPUT;
    default:
        return EXIT_RUNTIME;
    }
}

static void log_to_stderr(gcn_log_level level, const char *msg, void *user)
{
    (void)user;
    fprintf(stderr, "gcntrain: %s%s\n", level <= GCN_LOG_WARN ? "warning: " : "", msg);
}

/* Everything one invocation holds, freed in one place. */
typedef struct session {
    args a;
    gcn_model_config cfg;
    gcn_ctx *ctx;
    gcn_dataset *ds;
    FILE *log;
    char log_tmp[4096];
    double t_load, t_prep, t_train, t_eval;
    double *best_test;
    bool spmm_reported; /* the selector's table has been printed this run */
    char *choices;      /* the first run's locked choices, as a plan file in memory */
    size_t choices_len;
} session;

static int fail(session *s, gcn_status st, const char *what)
{
    fprintf(stderr, "gcntrain: %s: %s\n", what, gcn_last_error(s->ctx));
    return exit_code_for(st);
}

static int open_context(session *s)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    if (gcn_model_config_ctx_opts(&s->cfg, &o) != GCN_OK) {
        fprintf(stderr, "gcntrain: --device: expected cpu, cuda, cuda:N or auto\n");
        return EXIT_USAGE;
    }
    o.log_level = s->a.quiet ? GCN_LOG_WARN : GCN_LOG_INFO;
    o.log_fn = log_to_stderr;
    gcn_status st = gcn_ctx_create(&s->ctx, &o);
    if (st != GCN_OK) {
        fprintf(stderr, "gcntrain: cannot use device %s: %s\n", s->cfg.device, gcn_status_str(st));
        return exit_code_for(st) == EXIT_INPUT ? EXIT_INPUT : EXIT_RUNTIME;
    }
    st = gcn_spmm_set_kernel(s->ctx, s->cfg.spmm);
    return st == GCN_OK ? 0 : fail(s, st, "spmm");
}

static int load_dataset(session *s)
{
    double t0 = now_s();
    const char *spec = s->a.dataset ? s->a.dataset : "synthetic";
    gcn_status st = gcn_model_config_load_dataset(s->ctx, &s->cfg, spec, &s->ds);
    s->t_load = now_s() - t0;
    if (st == GCN_OK && s->a.export_dir)
        st = gcn_dataset_export_npy(s->ctx, s->ds, s->a.export_dir);
    return st == GCN_OK ? 0 : fail(s, st, "dataset");
}

static void print_summary(session *s)
{
    char text[2048];
    gcn_dataset_describe(s->ds, text, sizeof text);
    printf("dataset    %s\n", text);
    gcn_model_config_describe(&s->cfg, text, sizeof text);
    const char *lead = "model      ";
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"), lead = "           ")
        printf("%s%s\n", lead, line);
    const gcn_optim_opts *o = &s->cfg.optim;
    printf("optimiser  %s lr %g weight_decay %g, %d epochs x %d runs, seed %llu\n",
           o->kind == GCN_OPTIM_SGD ? "sgd" : o->kind == GCN_OPTIM_ADAM ? "adam" : "adamw",
           (double)o->lr, (double)o->weight_decay, s->cfg.epochs, s->cfg.runs,
           (unsigned long long)s->cfg.seed);
    printf("device     %s, %s matmuls, spmm %s (", gcn_device_name(gcn_ctx_device(s->ctx)),
           gcn_ctx_tf32(s->ctx) ? "tf32" : "fp32", gcn_spmm_kernel(s->ctx));
    int n;
    const gcn_spmm_impl *const *reg = gcn_spmm_registry(&n);
    for (int i = 0, first = 1; i < n; i++)
        if (reg[i]->device == gcn_ctx_device(s->ctx)) {
            printf("%s%s", first ? "" : ", ", reg[i]->name);
            first = 0;
        }
    printf(" available)\n");
    fflush(stdout);
}

static void log_epoch(session *s, int run, const gcn_epoch_stats *e)
{
    if (!s->a.quiet)
        printf("run %d epoch %4d  loss %.4f  train %.4f  valid %.4f  test %.4f  %8.2f ms\n",
               run + 1, e->epoch, (double)e->loss, e->train_acc, e->valid_acc, e->test_acc,
               e->train_ms + e->eval_ms);
    if (s->log)
        fprintf(s->log,
                "{\"run\":%d,\"epoch\":%d,\"loss\":%.6g,\"train_acc\":%.6f,\"valid_acc\":%.6f,"
                "\"test_acc\":%.6f,\"train_ms\":%.4f,\"eval_ms\":%.4f}\n",
                run + 1, e->epoch, (double)e->loss, e->train_acc, e->valid_acc, e->test_acc,
                e->train_ms, e->eval_ms);
}

/* The trainer's adjacency matrices, tagged for plan files. */
static int trainer_mats(const gcn_trainer *tr, const gcn_csr *mats[2], const char *tags[2])
{
    int n = 0;
    static const char *const names[2] = {"gcn", "raw"};
    const gcn_adjacency kinds[2] = {GCN_ADJ_GCN, GCN_ADJ_RAW};
    for (int k = 0; k < 2; k++)
        if (gcn_trainer_adjacency(tr, kinds[k])) {
            mats[n] = gcn_trainer_adjacency(tr, kinds[k]);
            tags[n++] = names[k];
        }
    return n;
}

#define MAX_SITES 16

static void json_ms(FILE *f, const char *key, double v)
{
    fprintf(f, isnan(v) ? ",\"%s\":null" : ",\"%s\":%.6g", key, v);
}

/* Once every call site has locked: one table line per site (and a JSON
 * line per site in the log), when some site had a choice to make.
 * Returns whether the sites are all locked. */
static bool report_spmm(session *s, int run, const gcn_trainer *tr)
{
    const gcn_csr *mats[2];
    const char *tags[2];
    gcn_spmm_site_info info[2][MAX_SITES];
    if (!gcn_trainer_spmm_locked(tr))
        return false;
    int n_mats = trainer_mats(tr, mats, tags), n[2] = {0, 0};
    for (int m = 0; m < n_mats; m++)
        n[m] = gcn_spmm_sites(mats[m], info[m], MAX_SITES);
    bool choice = false;
    for (int m = 0; m < n_mats; m++)
        for (int i = 0; i < n[m] && i < MAX_SITES; i++)
            choice |= info[m][i].n_candidates > 1;
    if (!choice)
        return true;
    printf("spmm       %-14s %-30s %9s  %-30s %9s %11s\n", "call site", "chosen", "ms",
           "runner-up", "ms", "cusparse ms");
    for (int m = 0; m < n_mats; m++)
        for (int i = 0; i < n[m] && i < MAX_SITES; i++) {
            const gcn_spmm_site_info *t = &info[m][i];
            char site[32];
            snprintf(site, sizeof site, "%s%s x %d", tags[m], t->transposed ? "^T" : "", t->feat);
            printf("           %-14s %-30s %9.4f  %-30s %9.4f %11.4f%s\n", site, t->chosen,
                   t->chosen_ms, t->runner_up[0] ? t->runner_up : "-", t->runner_up_ms,
                   t->cusparse_ms,
                   !t->locked ? "  (one product: not profiled)"
                              : t->profiled_calls ? "" : "  (a loaded choice)");
            if (!s->log)
                continue;
            fprintf(s->log,
                    "{\"run\":%d,\"spmm_site\":\"%s\",\"feat\":%d,\"transposed\":%s,"
                    "\"mode\":\"%s\",\"chosen\":\"%s\",\"runner_up\":\"%s\","
                    "\"candidates\":%d,\"profiled_calls\":%lld",
                    run + 1, tags[m], t->feat, t->transposed ? "true" : "false", t->mode,
                    t->chosen, t->runner_up, t->n_candidates, (long long)t->profiled_calls);
            json_ms(s->log, "chosen_ms", t->chosen_ms);
            json_ms(s->log, "runner_up_ms", t->runner_up_ms);
            json_ms(s->log, "cusparse_ms", t->cusparse_ms);
            json_ms(s->log, "setup_ms", t->setup_ms);
            fputs("}\n", s->log);
        }
    fflush(stdout);
    return true;
}

/* Before training: the selector's choices from --spmm-plan FILE when it
 * exists, else from an earlier run of this invocation, so that only the
 * first run profiles.  *from_file says whether FILE was read. */
static gcn_status load_choices(session *s, const gcn_trainer *tr, bool *from_file)
{
    const gcn_csr *mats[2];
    const char *tags[2];
    int n = trainer_mats(tr, mats, tags);
    *from_file = s->a.spmm_plan && access(s->a.spmm_plan, F_OK) == 0;
    if (*from_file)
        return gcn_spmm_plan_read(s->ctx, s->a.spmm_plan, mats, tags, n);
    FILE *f = s->choices ? fmemopen(s->choices, s->choices_len, "r") : NULL;
    if (!f)
        return GCN_OK;
    gcn_status st = gcn_spmm_plan_load(s->ctx, f, "the first run's choices", mats, tags, n);
    fclose(f);
    return st;
}

/* Once every site has locked: --spmm-plan FILE (unless it was read) and the
 * copy in memory for the next runs. */
static gcn_status save_choices(session *s, const gcn_trainer *tr, bool from_file)
{
    const gcn_csr *mats[2];
    const char *tags[2];
    int n = trainer_mats(tr, mats, tags);
    gcn_status st = s->a.spmm_plan && !from_file
                        ? gcn_spmm_plan_write(s->ctx, s->a.spmm_plan, mats, tags, n)
                        : GCN_OK;
    FILE *f = st != GCN_OK || s->choices ? NULL : open_memstream(&s->choices, &s->choices_len);
    if (!f)
        return st;
    st = gcn_spmm_plan_save(s->ctx, f, mats, tags, n);
    fclose(f);
    if (st != GCN_OK) {
        free(s->choices);
        s->choices = NULL;
    }
    return st;
}

/* One run: a fresh model from seed + run, optionally resumed. */
static int train_run(session *s, int run)
{
    gcn_trainer *tr = NULL;
    gcn_status st;
    int rc = 0;
    gcn_rng_seed(s->ctx, s->cfg.seed + (uint64_t)run);
    double t0 = now_s();
    if ((st = gcn_trainer_create(s->ctx, &tr, &s->cfg, s->ds)) != GCN_OK)
        return fail(s, st, "setup");
    if (run == 0 && s->a.resume && (st = gcn_trainer_load(s->ctx, tr, s->a.resume)) != GCN_OK) {
        rc = fail(s, st, "resume");
        goto done;
    }
    bool from_file = false;
    if ((st = load_choices(s, tr, &from_file)) != GCN_OK) {
        rc = fail(s, st, "spmm plan");
        goto done;
    }
    s->t_prep += now_s() - t0;
    s->spmm_reported = false;
    if (run == 0)
        printf("params     %lld\n", (long long)gcn_model_param_count(gcn_trainer_model(tr)));
    for (int e = gcn_trainer_epochs_done(tr); e < s->cfg.epochs; e++) {
        gcn_epoch_stats es;
        if ((st = gcn_trainer_epoch(s->ctx, tr, &es)) != GCN_OK) {
            rc = fail(s, st, "training");
            goto done;
        }
        s->t_train += es.train_ms * 1e-3;
        s->t_eval += es.eval_ms * 1e-3;
        log_epoch(s, run, &es);
        if (!s->spmm_reported && (s->spmm_reported = report_spmm(s, run, tr)) &&
            (st = save_choices(s, tr, from_file)) != GCN_OK) {
            rc = fail(s, st, "spmm plan");
            goto done;
        }
    }
    gcn_train_best b;
    gcn_trainer_best(tr, &b);
    s->best_test[run] = b.test_acc;
    printf("run %d best valid %.4f at epoch %d: test %.4f\n", run + 1, b.valid_acc, b.epoch,
           b.test_acc);
    if (s->log)
        fprintf(s->log,
                "{\"run\":%d,\"best_epoch\":%d,\"best_train_acc\":%.6f,\"best_valid_acc\":%.6f,"
                "\"best_test_acc\":%.6f}\n",
                run + 1, b.epoch, b.train_acc, b.valid_acc, b.test_acc);
    if (s->a.save && (st = gcn_trainer_save(s->ctx, tr, s->a.save)) != GCN_OK)
        rc = fail(s, st, "save");
done:
    gcn_trainer_free(&tr);
    return rc;
}

static void print_results(session *s)
{
    int r = s->cfg.runs;
    double mean = 0.0, var = 0.0;
    for (int i = 0; i < r; i++)
        mean += s->best_test[i] / r;
    for (int i = 0; i < r; i++)
        var += (s->best_test[i] - mean) * (s->best_test[i] - mean) / (r > 1 ? r - 1 : 1);
    gcn_memory_stats ms;
    gcn_ctx_memory_stats(s->ctx, &ms);
    printf("test accuracy %.4f +- %.4f over %d run%s (at the best validation epoch)\n", mean,
           sqrt(var), r, r == 1 ? "" : "s");
    printf("time load %.3f s, preprocess %.3f s, train %.3f s, eval %.3f s; peak %s memory %.1f MiB\n",
           s->t_load, s->t_prep, s->t_train, s->t_eval, gcn_device_name(gcn_ctx_device(s->ctx)),
           (double)ms.peak / (1 << 20));
    if (s->log)
        fprintf(s->log,
                "{\"summary\":true,\"runs\":%d,\"test_acc_mean\":%.6f,\"test_acc_std\":%.6f,"
                "\"load_s\":%.4f,\"preprocess_s\":%.4f,\"train_s\":%.4f,\"eval_s\":%.4f,"
                "\"peak_bytes\":%zu,\"reserved_bytes\":%zu,\"device\":\"%s\"}\n",
                r, mean, sqrt(var), s->t_load, s->t_prep, s->t_train, s->t_eval, ms.peak,
                ms.reserved, gcn_device_name(gcn_ctx_device(s->ctx)));
}

/* The log is written beside its final name and renamed on success, so a
 * failed run leaves no partial file. */
static int open_log(session *s)
{
    if (!s->a.log)
        return 0;
    if ((size_t)snprintf(s->log_tmp, sizeof s->log_tmp, "%s.tmp", s->a.log) >= sizeof s->log_tmp ||
        !(s->log = fopen(s->log_tmp, "w"))) {
        fprintf(stderr, "gcntrain: %s: cannot write: %s\n", s->a.log, strerror(errno));
        return EXIT_INPUT;
    }
    return 0;
}

static int close_log(session *s, int rc)
{
    if (!s->log)
        return rc;
    bool ok = fclose(s->log) == 0;
    s->log = NULL;
    if (rc == 0 && ok && rename(s->log_tmp, s->a.log) == 0)
        return 0;
    unlink(s->log_tmp);
    if (rc == 0)
        fprintf(stderr, "gcntrain: %s: cannot write the log\n", s->a.log);
    return rc ? rc : EXIT_RUNTIME;
}

int main(int argc, char **argv)
{
    session s = {0};
    char err[512];
    int rc = parse_args(argc, argv, &s.a);
    if (rc)
        return rc < 0 ? 0 : rc;
    gcn_status st = gcn_model_config_load(&s.cfg, s.a.config, err, sizeof err);
    if (st != GCN_OK) {
        fprintf(stderr, "gcntrain: %s\n", err);
        return EXIT_INPUT;
    }
    if ((rc = apply_args(&s.a, &s.cfg)) || (rc = open_context(&s)) || (rc = load_dataset(&s)))
        goto done;
    if (!(s.best_test = calloc((size_t)s.cfg.runs, sizeof *s.best_test))) {
        rc = EXIT_RUNTIME;
        goto done;
    }
    if ((rc = open_log(&s)))
        goto done;
    print_summary(&s);
    for (int r = 0; r < s.cfg.runs && rc == 0; r++)
        rc = train_run(&s, r);
    if (rc == 0)
        print_results(&s);
    rc = close_log(&s, rc);
done:
    if (s.log)
        rc = close_log(&s, rc ? rc : EXIT_RUNTIME);
    free(s.best_test);
    free(s.choices);
    gcn_dataset_free(&s.ds);
    gcn_ctx_free(&s.ctx);
    return rc;
}
