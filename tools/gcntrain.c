/* gcntrain: trains a model configuration (a models/ JSON file) on a dataset
 * and reports per-epoch progress, the best-validation result of each run
 * and their mean; or evaluates a checkpoint (--eval-only).  Exit codes:
 * gcntrain.h and the usage text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gcntrain/gcntrain.h"

/* The usage text: its head, the options shared with gcnbench train
 * (config_options.h), then the rest. */
static const char usage_head[] =
    "usage: gcntrain CONFIG [options]\n"
    "  --dataset NAME|PATH   dataset name, folder, graph file or generator (default: synthetic)\n";

static const char usage_tail[] =
    "  --no-download         never download: a named dataset missing under the root is an\n"
    "                        error (default: downloaded on first use: ogbn-arxiv, cora,\n"
    "                        tu:NAME, ...; the config's dataset.download)\n"
    "  --download            allow a download over 5 GB\n"
    "  --mirror URL          base address for every download (default: $GCN_DATASET_MIRROR,\n"
    "                        else each publisher's): URL/ogb/arxiv.zip, URL/tu/NAME.zip,\n"
    "                        URL/planetoid/ind.cora.x, ...\n"
    "  --download-timeout S  give up a download after S seconds without data (default 60)\n"
    "  --epochs N --runs R --seed S\n"
    "                        override the configuration (run r uses seed S + r)\n"
    "  --rendezvous FILE     this process is one rank of a job started by a launcher\n"
    "                        (torchrun's RANK, WORLD_SIZE, LOCAL_RANK; else Open MPI's\n"
    "                        OMPI_COMM_WORLD_*; else Slurm's SLURM_PROCID, SLURM_NTASKS,\n"
    "                        SLURM_LOCALID), on GPU LOCAL_RANK; the ranks meet through FILE\n"
    "                        on a folder they share (docs/distributed.md)\n"
    "  --rank-timeout S      with --rendezvous: give up on peers that do not come, or that\n"
    "                        stop beating, after S seconds (default 60)\n"
    "  --reorder-switch-at K start on the order as loaded and switch to --reorder's (auto:\n"
    "                        metis:256,4096) after epoch K, untimed, waiting for it\n"
    "  --spmm-choices FILE   load the selector's choices from FILE if it exists (and skip\n"
    "                        profiling), else write them there once locked; on ranks, each\n"
    "                        rank's (a file of another rank count is noted and left alone)\n"
    "  --log FILE.jsonl      one JSON object per epoch, written as the epoch ends, one per\n"
    "                        run (its best-validation epoch) and a summary; FILE must be new\n"
    "  --force               replace an existing --log FILE\n"
    "  --append              add to an existing --log FILE\n"
    "  --save FILE           checkpoint at the end of each run (and when interrupted); on\n"
    "                        ranks, rank 0 writes the one-context model's file\n"
    "  --save-every N        also checkpoint every N epochs (needs --save)\n"
    "  --resume FILE         continue the first run from a checkpoint, written on any\n"
    "                        number of ranks\n"
    "  --predict FILE        write the class and class probabilities of every node (original\n"
    "                        order) from the best-validation model: CSV, or .npy by extension\n"
    "  --eval-only           with --resume FILE: evaluate its best-validation model on the\n"
    "                        splits (and --predict), no training\n"
    "  --export-data DIR     write the dataset as used (features, edges, labels, split)\n"
    "                        as .npy files, e.g. for tools/compare/pyg_train.py, once setup\n"
    "                        has accepted it\n"
    "graph-level models (a \"readout\" in CONFIG) on collections (--dataset tu:NAME):\n"
    "  --folds K             stratified K-fold cross-validation (default 10)\n"
    "  --fold F              run only outer fold F (0 to K-1)\n"
    "  --folds-file FILE     read the folds from FILE if it exists, else write them there\n"
    "                        (tools/compare/pyg_graph.py reads the same file)\n"
    "  --protocol gin|errica gin (default): the epoch of the best mean test-fold accuracy;\n"
    "                        errica: fold F+1 validates, test at the best-validation epoch\n"
    "  --save, --resume      need --fold F: the checkpoint is fold F's trainer; resuming it\n"
    "                        for another fold, protocol, fold file or data seed is refused\n"
    "  --predict FILE        each test graph of the folds run (of fold F with --fold F) from\n"
    "                        its fold's model the protocol selects (gin: after the protocol's\n"
    "                        epoch; errica: the best-validation one): CSV graph,class,p0,...\n"
    "                        (graph: the 0-based index in the collection), or .npy\n"
    "  --quiet               no per-epoch lines\n"
    "  --help, --version\n"
    "SIGINT or SIGTERM before the first epoch stops at once; during training it ends the\n"
    "epoch, logs, checkpoints (--save) and summarises, and a second one stops at once.\n"
    "exit status: 0 success; 1 runtime failure (CUDA error, out of memory, I/O error while\n"
    "writing); 2 bad usage or bad input (options, configuration, dataset contents, no GPU\n"
    "for --device cuda); 3 the training loss became non-finite; 130 SIGINT, 143 SIGTERM.\n";

double now_s(void)
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

static int usage_error(const char *fmt, const char *what)
{
    fprintf(stderr, "gcntrain: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, " (gcntrain --help lists the options)\n");
    return EXIT_INPUT;
}

/* The options without a value; false when o is none of them. */
static bool parse_flag(const char *o, args *a)
{
    bool *flag = !strcmp(o, "--quiet")       ? &a->quiet
                 : !strcmp(o, "--force")     ? &a->force
                 : !strcmp(o, "--append")    ? &a->append
                 : !strcmp(o, "--eval-only") ? &a->eval_only
                 : !strcmp(o, "--download")  ? &a->download
                 : !strcmp(o, "--no-download") ? &a->no_download
                                             : NULL;
    if (flag)
        *flag = true;
    return flag != NULL;
}

/* The options with a value; false for an unknown option or a bad value. */
static bool parse_value(const char *o, const char *v, args *a)
{
    int k = cli_config_option_find(o);
    if (k >= 0) {
        a->set[k] = v;
        return true;
    }
    static const char *const names[] = {"--dataset", "--spmm-choices", "--log", "--save",
                                        "--resume", "--export-data", "--predict",
                                        "--folds-file", "--protocol", "--mirror",
                                        "--rendezvous"};
    const char **fields[] = {&a->dataset, &a->spmm_choices, &a->log, &a->save, &a->resume,
                             &a->export_dir, &a->predict, &a->folds_file, &a->protocol,
                             &a->mirror, &a->rendezvous};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(o, names[i])) {
            *fields[i] = v;
            return true;
        }
    long n;
    if (!strcmp(o, "--epochs") && parse_long(v, 1, 10000000, &n)) a->epochs = n;
    else if (!strcmp(o, "--runs") && parse_long(v, 1, 1000, &n)) a->runs = n;
    else if (!strcmp(o, "--seed") && parse_long(v, 0, 2147483647, &n)) a->seed = n;
    else if (!strcmp(o, "--save-every") && parse_long(v, 1, 10000000, &n)) a->save_every = n;
    else if (!strcmp(o, "--folds") && parse_long(v, 2, 1000000, &n)) a->folds = n;
    else if (!strcmp(o, "--fold") && parse_long(v, 0, 1000000, &n)) a->fold = n;
    else if (!strcmp(o, "--download-timeout") && parse_long(v, 1, 86400, &n))
        a->download_timeout = n;
    else if (!strcmp(o, "--reorder-switch-at") && parse_long(v, 1, 10000000, &n))
        a->switch_at = n;
    else if (!strcmp(o, "--rank-timeout") && parse_long(v, 1, 86400, &n)) a->rank_timeout = n;
    else return false;
    return true;
}

/* Options that only make sense together. */
static int check_combinations(const args *a)
{
    if (a->save_every > 0 && !a->save)
        return usage_error("%s needs --save FILE", "--save-every");
    if (a->eval_only && !a->resume)
        return usage_error("%s needs --resume CHECKPOINT", "--eval-only");
    if (a->eval_only && a->save)
        return usage_error("%s trains nothing to --save", "--eval-only");
    if (a->set[CLI_RANKS] && a->set[CLI_GPUS])
        return usage_error("%s: --ranks runs every rank on one device, --gpus one rank per "
                           "GPU; give one", "--ranks with --gpus");
    if (a->rendezvous && (a->set[CLI_RANKS] || a->set[CLI_GPUS]))
        return usage_error("%s: the launcher gives the job's size; --ranks and --gpus run the "
                           "ranks in this process", "--rendezvous");
    if (a->rank_timeout > 0 && !a->rendezvous)
        return usage_error("%s needs --rendezvous FILE", "--rank-timeout");
    if (a->download && a->no_download)
        return usage_error("%s: give one", "--download with --no-download");
    if (a->protocol && strcmp(a->protocol, "gin") && strcmp(a->protocol, "errica"))
        return usage_error("--protocol %s: expected gin or errica", a->protocol);
    return 0;
}

/* Returns 0 to go on, -1 when --help or --version answered, or an exit code
 * after printing why. */
static int parse_args(int argc, char **argv, args *a)
{
    *a = (args){.epochs = -1, .runs = -1, .seed = -1, .folds = -1, .fold = -1,
                .switch_at = -1};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(usage_head, stdout);
            cli_config_options_help(stdout);
            fputs(usage_tail, stdout);
            return -1;
        }
        if (!strcmp(o, "--version")) {
            printf("gcntrain %s\n", GCN_VERSION_STRING);
            return -1;
        }
        if (parse_flag(o, a))
            continue;
        if (o[0] != '-') {
            if (a->config)
                return usage_error("unexpected argument '%s'", o);
            a->config = o;
            continue;
        }
        if (i + 1 >= argc)
            return usage_error("%s needs a value", o);
        if (!parse_value(o, argv[i + 1], a)) {
            fprintf(stderr, "gcntrain: bad option or value: %s %s (gcntrain --help lists the "
                            "options)\n", o, argv[i + 1]);
            return EXIT_INPUT;
        }
        i++;
    }
    if (!a->config)
        return usage_error("missing %s", "CONFIG");
    return check_combinations(a);
}

/* Configuration values overridden by the command line. */
static int apply_args(const args *a, gcn_model_config *cfg)
{
    if (a->epochs > 0) cfg->epochs = (int)a->epochs;
    if (a->runs > 0) cfg->runs = (int)a->runs;
    if (a->seed >= 0) cfg->seed = (uint64_t)a->seed;
    return cli_config_options_apply(cfg, a->set, "gcntrain") ? 0 : EXIT_INPUT;
}

/* Options for one kind of model only: cross-validation for graph-level
 * ones; runs, evaluation and data export for node-level ones.  A
 * graph-level checkpoint is one fold's trainer. */
static int check_model_kind(const args *a, const gcn_model_config *cfg)
{
    const char *graph_only[] = {a->folds > 0 ? "--folds" : NULL, a->fold >= 0 ? "--fold" : NULL,
                                a->folds_file ? "--folds-file" : NULL,
                                a->protocol ? "--protocol" : NULL};
    const char *node_only[] = {a->runs > 0 ? "--runs" : NULL,
                               a->eval_only ? "--eval-only" : NULL,
                               a->export_dir ? "--export-data" : NULL};
    const char *one_fold[] = {a->save ? "--save" : NULL, a->resume ? "--resume" : NULL};
    for (int i = 0; i < 4 && !cfg->readout.enabled; i++)
        if (graph_only[i])
            return usage_error("%s applies to graph-level models (a \"readout\" in the "
                               "configuration)", graph_only[i]);
    for (int i = 0; i < 3 && cfg->readout.enabled; i++)
        if (node_only[i])
            return usage_error("%s applies to node-level models; a graph-level model is "
                               "cross-validated (--folds, --fold)", node_only[i]);
    for (int i = 0; i < 2 && cfg->readout.enabled && a->fold < 0; i++)
        if (one_fold[i])
            return usage_error("%s: a graph-level checkpoint holds one fold's model; choose "
                               "the fold with --fold F", one_fold[i]);
    return 0;
}

/* The outputs, before any work: each can be written where it is asked
 * for (the cache folder too), no two name the same path, and the log is
 * new unless --force or --append says otherwise.  --spmm-choices and
 * --folds-file are read when they exist, else written. */
static int check_outputs(session *s)
{
    const args *a = &s->a;
    const struct {
        const char *option, *path;
        output_kind kind;
        bool read_first;
    } out[] = {{"--log", a->log, OUTPUT_IN_PLACE, false},
               {"--save", a->save, OUTPUT_FILE, false},
               {"--predict", a->predict, OUTPUT_FILE, false},
               {"--spmm-choices", a->spmm_choices, OUTPUT_FILE, true},
               {"--folds-file", a->folds_file, OUTPUT_FILE, true},
               {"--export-data", a->export_dir, OUTPUT_DIR, false},
               {"--cache-dir", a->set[CLI_CACHE_DIR], OUTPUT_DIR, false}};
    enum { N = sizeof out / sizeof *out };
    for (int i = 0; i < N; i++) {
        struct stat st;
        if (!out[i].path || out[i].kind == OUTPUT_IN_PLACE || /* log_check's */
            (out[i].read_first && stat(out[i].path, &st) == 0 && S_ISREG(st.st_mode)))
            continue;
        int rc = check_output_path(out[i].option, out[i].path, out[i].kind);
        if (rc)
            return rc;
    }
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            if (out[i].path && out[j].path && !strcmp(out[i].path, out[j].path)) {
                fprintf(stderr, "gcntrain: %s and %s both name %s\n", out[i].option,
                        out[j].option, out[i].path);
                return EXIT_INPUT;
            }
    return log_check(&s->log, a);
}

static int exit_code(gcn_status st, phase p)
{
    switch (st) {
    case GCN_ERR_NOMEM:
    case GCN_ERR_CUDA:
    case GCN_ERR_STATE:
        return EXIT_RUNTIME;
    case GCN_ERR_NUMERIC:
        return p == PHASE_TRAIN ? EXIT_NUMERIC : EXIT_INPUT;
    case GCN_ERR_IO:
    case GCN_ERR_DEVICE:
        return p == PHASE_INPUT ? EXIT_INPUT : EXIT_RUNTIME;
    default:
        return p == PHASE_OUTPUT ? EXIT_RUNTIME : EXIT_INPUT;
    }
}

int fail(session *s, gcn_status st, phase p, const char *what)
{
    int rc = s->rdv ? job_peer_failed(s, st) : 0;
    if (rc)
        return rc;
    snprintf(s->error, sizeof s->error, "%s: %s", what, gcn_last_error(s->ctx));
    fprintf(stderr, "gcntrain: %s\n", s->error);
    return exit_code(st, p);
}

void gcntrain_log(gcn_log_level level, const char *msg, void *user)
{
    (void)user;
    fprintf(stderr, "gcntrain: %s%s\n", level <= GCN_LOG_WARN ? "warning: " : "", msg);
}

static int open_context(session *s)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    if (gcn_model_config_ctx_opts(&s->cfg, &o) != GCN_OK) {
        fprintf(stderr, "gcntrain: device %s: expected cpu, cuda, cuda:N or auto\n",
                s->cfg.device);
        return EXIT_INPUT;
    }
    o.log_level = s->a.quiet ? GCN_LOG_WARN : GCN_LOG_INFO;
    o.log_fn = gcntrain_log;
    o.temp_fn = signals_temp;
    gcn_status st = gcn_ctx_create(&s->ctx, &o);
    int n_gpus = st == GCN_ERR_DEVICE ? gcn_cuda_device_count() : 0;
    if (st == GCN_ERR_DEVICE && n_gpus <= 0) {
        fprintf(stderr, "gcntrain: device %s: no GPU was found (no usable CUDA device)\n",
                s->cfg.device);
        return EXIT_INPUT;
    }
    if (st == GCN_ERR_DEVICE) {
        fprintf(stderr, "gcntrain: device %s: this machine has %d CUDA device%s\n",
                s->cfg.device, n_gpus, n_gpus == 1 ? "" : "s");
        return EXIT_INPUT;
    }
    if (st != GCN_OK) {
        fprintf(stderr, "gcntrain: cannot use device %s: %s\n", s->cfg.device,
                gcn_status_str(st));
        return exit_code(st, PHASE_INPUT);
    }
    st = gcn_spmm_set_kernel(s->ctx, s->cfg.spmm);
    if (st == GCN_OK && s->cfg.bf16)
        st = gcn_spmm_check_dtype(s->ctx, GCN_DTYPE_BF16);
    return st == GCN_OK ? 0 : fail(s, st, PHASE_INPUT, s->cfg.bf16 ? "precision bf16" : "spmm");
}

static int load_dataset(session *s)
{
    double t0 = now_s();
    const char *spec = s->a.dataset ? s->a.dataset : "synthetic";
    int rc = fetch_dataset(s, spec);
    if (rc)
        return rc;
    gcn_model_config cfg = s->cfg;
    if (s->a.switch_at >= 0) /* the order as loaded first */
        snprintf(cfg.reorder, sizeof cfg.reorder, "none");
    gcn_status st = gcn_model_config_load_dataset(s->ctx, &cfg, spec, &s->ds);
    s->t_load = now_s() - t0;
    if (st != GCN_OK)
        return fetch_load_failed(s, spec, st);
    return 0;
}

int export_data(session *s)
{
    if (!s->a.export_dir || gcn_ctx_rank(s->ctx) > 0) /* a job's rank 0 writes it */
        return 0;
    gcn_status st = gcn_dataset_export_npy(s->ctx, s->ds, s->a.export_dir);
    return st == GCN_OK ? 0 : fail(s, st, PHASE_OUTPUT, "export");
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
    const char *matmuls = s->cfg.bf16 ? "bf16 storage, bf16-input fp32-accumulating"
                          : gcn_ctx_tf32(s->ctx) ? "tf32"
                          : "fp32";
    printf("device     %s, %s matmuls, %d CPU thread%s, spmm %s (",
           gcn_device_name(gcn_ctx_device(s->ctx)), matmuls,
           gcn_ctx_threads(s->ctx), gcn_ctx_threads(s->ctx) == 1 ? "" : "s",
           gcn_spmm_kernel(s->ctx));
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

int main(int argc, char **argv)
{
    session s = {.pred_valid = -1.0};
    char err[512];
    signals_install();
    int rc = parse_args(argc, argv, &s.a);
    if (rc)
        return rc < 0 ? 0 : rc;
    gcn_status st = gcn_model_config_load(&s.cfg, s.a.config, err, sizeof err);
    if (st != GCN_OK) {
        fprintf(stderr, "gcntrain: %s\n", err);
        return EXIT_INPUT;
    }
    if ((rc = apply_args(&s.a, &s.cfg)) || (s.a.rendezvous && (rc = job_begin(&s))) ||
        (rc = check_model_kind(&s.a, &s.cfg)) ||
        (rc = check_outputs(&s)))
        return rc;
    if ((rc = open_context(&s)) || (rc = s.a.rendezvous ? job_join(&s) : check_gpus(&s)) ||
        (rc = job_load_turn(&s, true)) || (rc = load_dataset(&s)) ||
        (rc = job_load_turn(&s, false)))
        goto done;
    if (!(s.best_test = calloc((size_t)s.cfg.runs, sizeof *s.best_test))) {
        fprintf(stderr, "gcntrain: out of host memory\n");
        rc = EXIT_RUNTIME;
        goto done;
    }
    print_summary(&s);
    if ((rc = order_begin(&s)))
        goto done;
    /* A rank process of a job trains its own trainer as one context does. */
    bool in_process = !s.a.rendezvous && (s.cfg.ranks > 1 || s.cfg.nccl);
    rc = s.cfg.readout.enabled ? train_folds(&s)
         : in_process          ? train_ranks(&s)
         : s.a.eval_only       ? eval_only(&s)
                               : train_runs(&s);
done:
    if (rc && rc != 128 + s.stop && s.log.f) {
        char error[sizeof s.error + 8];
        log_line(&s.log, "{\"failed\":true,\"exit_code\":%d,\"error\":%s}", rc,
                 json_string(error, sizeof error, s.error));
    }
    if ((!log_close(&s.log) || !log_ok(&s.log)) && rc == 0)
        rc = EXIT_RUNTIME;
    order_end(&s);
    job_end(&s, rc);
    free(s.best_test);
    free(s.choices);
    free(s.pred_classes);
    free(s.pred_probs);
    gcn_dataset_free(&s.ds);
    gcn_ctx_free(&s.ctx);
    return rc;
}
