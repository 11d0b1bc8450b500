/* gcnbench train: epoch times of a model configuration on datasets after
 * warm-up, an epoch's device time by category of work and the memory by
 * purpose; one JSON line per dataset (the definitions: the help text). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

/* The most warm-up epochs run after the selector has locked in, while the
 * trainer has not yet replayed a captured CUDA graph (it captures the
 * second epoch after locking). */
enum { MAX_GRAPH_WARMUP = 3 };

/* Epochs profiled for the breakdown, after the timed ones (fewer when
 * --epochs is smaller). */
enum { BREAKDOWN_EPOCHS = 20 };

/* The help text: its head, the options shared with gcntrain
 * (config_options.h), then the definitions. */
static const char help_head[] =
    "usage: gcnbench train CONFIG --dataset SPEC [--dataset SPEC ...] [--epochs N]\n"
    "                      [--warmup N] [--seed S] [--out FILE.jsonl] [--no-breakdown]\n"
    "                      [OPTIONS]\n"
    "  Trains the model of CONFIG (models/*.json) on each dataset as gcntrain does: W\n"
    "  warm-up epochs (--warmup, default 10; more while the SpMM selector is still\n"
    "  profiling, up to 1000, and up to 3 more until one replays as a CUDA graph:\n"
    "  \"warmup\" says how many ran), then N timed epochs\n"
    "  (--epochs, default 200), and writes one JSON line per dataset on stdout,\n"
    "  appended to --out FILE once every dataset has run.  --seed S and these\n"
    "  OPTIONS override the configuration (--ranks and --gpus exclude each other):\n";

static const char help_tail[] =
    "  In each line, features and labels say where they came from (file, or the\n"
    "  substitute: random:D, degree, random:K), threads is the CPU threads used,\n"
    "  and sparse_input the non-zeros of the input features when the first layer\n"
    "  takes them as a sparse matrix (mostly zeros), else null.\n"
    "  Times are medians over the timed epochs: epoch_ms = train_ms + eval_ms, each\n"
    "  device-synchronised; epoch_ms_min their minimum.  cuda_graph: whether every\n"
    "  timed epoch replayed a captured CUDA graph (the default once the selector has\n"
    "  locked; --cuda-graph off runs them launch by launch).\n"
    "  gpu_ms: device time of an epoch by category, median over up to 20 more epochs\n"
    "  run launch by launch with CUDA events at each change of category (null on the\n"
    "  CPU and with --no-breakdown): gemm (cuBLAS matmuls), spmm (sparse aggregation, with the selector's\n"
    "  runs and plans), optimizer (parameter updates), other (host<->device\n"
    "  transfers, device copies and fills), elementwise (everything else, and the\n"
    "  device's idle time); gpu_span_ms is the epoch from its first event to its\n"
    "  last, which the categories sum to.\n"
    "  Memory, in MiB of the context's allocations: peak_mib the high-water mark of\n"
    "  the whole run, data included; steady_mib what is held at the end of the last\n"
    "  epoch; memory_mib: data (features, labels, split, adjacency matrices),\n"
    "  params (parameters, batch-norm statistics), grads (one per parameter, held\n"
    "  between steps), optimizer (momentum, Adam's m and v, step counts),\n"
    "  workspace (the rest of steady: SpMM plans, selector state, cached products)\n"
    "  and activations (the peak of the epochs after the selector locked, the\n"
    "  captured one included, minus steady: what a step allocates and frees).\n"
    "  test_acc is the test accuracy at the best-validation epoch.\n"
    "  Several ranks (--ranks N on the one device, --gpus N one GPU each over NCCL;\n"
    "  the dataset partitioned by parts:N unless --reorder names another parts:N\n"
    "  spec): epoch_ms is the slowest rank's, peak_mib, steady_mib and memory_mib\n"
    "  are rank 0's, rank_peak_mib each rank's peak, gpu_ms null; \"comm\" gives,\n"
    "  per timed epoch and per rank: exchange_mib and exchange_ms (halo rows sent\n"
    "  and the time of the exchanges), allreduce_mib and allreduce_ms (gradients,\n"
    "  statistics, counts), compute_ms (epoch_ms less both), and \"layers\", for\n"
    "  each model layer with exchanges, its calls, halo_mib and exchange_ms.  Times\n"
    "  are the communicator's (gcn_comm_stats): host time of the copies on the local\n"
    "  transport, a lower bound of a link's; device time between CUDA events over\n"
    "  NCCL, the wait for a later peer included (the rank that waits least is the\n"
    "  closest to the transfer alone).  Single-context lines have \"ranks\":1 and\n"
    "  \"comm\":null.\n"
    "  Exit status: 2 for bad options, configuration or dataset, 1 for failures while\n"
    "  training.\n";

/* One line on stderr; the exit status of bad input. */
static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gcnbench train: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (gcnbench train --help)\n");
    va_end(ap);
    return EXIT_INPUT;
}

/* An integer in [lo, 1000000] (epoch counts). */
static bool parse_count(const char *s, long lo, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > MAX_EPOCHS)
        return false;
    *out = v;
    return true;
}

/* The value v of option --name; 0 or an exit status. */
static int take_value(train_opts *o, const char *name, const char *v)
{
    if (!strcmp(name, "dataset")) {
        if (o->n_datasets == GCNBENCH_MAX_LIST)
            return bad("more than %d datasets", GCNBENCH_MAX_LIST);
        o->datasets[o->n_datasets++] = v;
    } else if (!strcmp(name, "out")) {
        o->out = v;
    } else if (!strcmp(name, "seed")) {
        char *end;
        errno = 0;
        o->seed = strtoll(v, &end, 10);
        if (errno || end == v || *end || o->seed < 0)
            return bad("--seed '%s': expected an integer >= 0", v);
    } else if (!strcmp(name, "epochs")) {
        if (!parse_count(v, 1, &o->epochs))
            return bad("--epochs '%s': expected an integer in [1, %d]", v, MAX_EPOCHS);
    } else if (!parse_count(v, 0, &o->warmup)) {
        return bad("--warmup '%s': expected an integer in [0, %d]", v, MAX_EPOCHS);
    }
    return 0;
}

/* The options of gcnbench train's own that take a value. */
static bool takes_value(const char *a)
{
    static const char *const names[] = {"--dataset", "--out", "--seed", "--epochs", "--warmup"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(a, names[i]))
            return true;
    return false;
}

/* Returns 0 to go on, -1 when --help answered, or an exit status. */
static int parse_args(int argc, char **argv, train_opts *o)
{
    *o = (train_opts){.epochs = 200, .warmup = 10, .seed = -1, .breakdown = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help_head, stdout);
            cli_config_options_help(stdout);
            fputs(help_tail, stdout);
            return -1;
        }
        int k = cli_config_option_find(a);
        if (!strcmp(a, "--no-breakdown"))
            o->breakdown = false;
        else if (a[0] != '-' && !o->config)
            o->config = a;
        else if (a[0] != '-')
            rc = bad("unexpected argument '%s'", a);
        else if (k < 0 && !takes_value(a))
            rc = bad("unknown option '%s'", a);
        else if (i + 1 >= argc)
            rc = bad("%s needs a value", a);
        else if (k >= 0)
            o->set[k] = argv[++i];
        else
            rc = take_value(o, a + 2, argv[++i]);
        if (rc)
            return rc;
    }
    if (!o->config)
        return bad("missing CONFIG");
    if (o->n_datasets == 0)
        return bad("missing --dataset SPEC");
    if (o->set[CLI_RANKS] && o->set[CLI_GPUS])
        return bad("--ranks runs every rank on one device, --gpus one rank per GPU; give one");
    return 0;
}

/* Loads the configuration, applies the command line over it and opens
 * its context. */
static int open_bench(train_bench *b)
{
    char err[512];
    if (gcn_model_config_load(&b->cfg, b->o.config, err, sizeof err) != GCN_OK) {
        fprintf(stderr, "gcnbench train: %s\n", err);
        return EXIT_INPUT;
    }
    if (!cli_config_options_apply(&b->cfg, b->o.set, "gcnbench train"))
        return EXIT_INPUT;
    if (b->o.seed >= 0)
        b->cfg.seed = (uint64_t)b->o.seed;
    const char *base = strrchr(b->o.config, '/') ? strrchr(b->o.config, '/') + 1 : b->o.config;
    snprintf(b->name, sizeof b->name, "%.*s", (int)strcspn(base, "."), base);
    if (b->cfg.name[0])
        snprintf(b->name, sizeof b->name, "%s", b->cfg.name);
    gcn_ctx_opts co = gcn_ctx_default_opts();
    co.log_fn = gcnbench_log;
    gcn_status st = gcn_model_config_ctx_opts(&b->cfg, &co);
    if (st == GCN_OK)
        st = gcn_ctx_create(&b->ctx, &co);
    if (st != GCN_OK) {
        fprintf(stderr, "gcnbench train: cannot use device %s: %s\n", b->cfg.device,
                gcn_status_str(st));
        return EXIT_RUNTIME;
    }
    if ((st = gcn_spmm_set_kernel(b->ctx, b->cfg.spmm)) != GCN_OK ||
        (b->cfg.bf16 && (st = gcn_spmm_check_dtype(b->ctx, GCN_DTYPE_BF16)) != GCN_OK)) {
        fprintf(stderr, "gcnbench train: %s: %s\n", st == GCN_ERR_UNSUPPORTED ? "precision bf16"
                : "--spmm", gcn_last_error(b->ctx));
        return EXIT_INPUT;
    }
    int sms;
    size_t l2;
    if (gcn_ctx_device(b->ctx) != GCN_DEVICE_CUDA ||
        gcn_spmm_device_info(b->ctx, b->device, sizeof b->device, &sms, &l2) != GCN_OK)
        snprintf(b->device, sizeof b->device, "%s", gcn_device_name(gcn_ctx_device(b->ctx)));
    if (!(b->lines_f = open_memstream(&b->lines, &b->lines_len))) {
        fprintf(stderr, "gcnbench train: out of host memory\n");
        return EXIT_RUNTIME;
    }
    return 0;
}

static void free_measured(measured *m)
{
    free(m->train_ms);
    free(m->eval_ms);
    free(m->epoch_ms);
    free(m->span_ms);
    for (int c = 0; c < GCN_PROF_N_CATEGORIES; c++)
        free(m->cat_ms[c]);
}

static bool alloc_measured(measured *m, int n)
{
    bool ok = (m->train_ms = calloc((size_t)n, sizeof(float))) &&
              (m->eval_ms = calloc((size_t)n, sizeof(float))) &&
              (m->epoch_ms = calloc((size_t)n, sizeof(float))) &&
              (m->span_ms = calloc((size_t)n, sizeof(float)));
    for (int c = 0; ok && c < GCN_PROF_N_CATEGORIES; c++)
        ok = (m->cat_ms[c] = calloc((size_t)n, sizeof(float))) != NULL;
    return ok;
}

/* Runs one epoch: a warm-up epoch when e < 0, else timed epoch e, or,
 * with profile, profiled epoch e. */
static gcn_status epoch(train_bench *b, gcn_trainer *tr, measured *m, int e, bool profile,
                        gcn_epoch_stats *stats)
{
    gcn_epoch_stats es;
    gcn_prof_times t;
    gcn_status st = profile ? gcn_ctx_profile_begin(b->ctx) : GCN_OK;
    if (st != GCN_OK)
        return st;
    st = gcn_trainer_epoch(b->ctx, tr, &es);
    if (profile) {
        gcn_status pst = gcn_ctx_profile_end(b->ctx, &t);
        st = st != GCN_OK ? st : pst;
    }
    *stats = es;
    if (st != GCN_OK || e < 0)
        return st;
    if (profile) {
        for (int c = 0; c < GCN_PROF_N_CATEGORIES; c++)
            m->cat_ms[c][e] = (float)t.ms[c];
        m->span_ms[e] = (float)t.span_ms;
        return GCN_OK;
    }
    m->train_ms[e] = (float)es.train_ms;
    m->eval_ms[e] = (float)es.eval_ms;
    m->epoch_ms[e] = (float)(es.train_ms + es.eval_ms);
    m->n_graph += es.graph;
    return GCN_OK;
}

/* Trains on the dataset: warm-up, then the timed epochs, then the memory
 * figures.  Returns an exit status after saying why on failure. */
static int run_dataset(train_bench *b, const char *spec, measured *m)
{
    gcn_dataset *ds = NULL;
    gcn_trainer *tr = NULL;
    gcn_memory_stats ms;
    gcn_epoch_stats es = {0};
    int rc = 0;
    gcn_ctx_reset_peak(b->ctx);
    gcn_status st = gcn_model_config_load_dataset(b->ctx, &b->cfg, spec, &ds);
    if (st == GCN_OK) {
        gcn_rng_seed(b->ctx, b->cfg.seed);
        st = gcn_trainer_create(b->ctx, &tr, &b->cfg, ds);
    }
    if (st != GCN_OK) {
        fprintf(stderr, "gcnbench train: %s: %s\n", spec, gcn_last_error(b->ctx));
        rc = st == GCN_ERR_NOMEM || st == GCN_ERR_CUDA ? EXIT_RUNTIME : EXIT_INPUT;
        goto done;
    }
    snprintf(m->dataset, sizeof m->dataset, "%s", ds->name);
    train_sources(ds, m);
    const gcn_csr *adj = gcn_trainer_adjacency(tr, GCN_ADJ_GCN);
    adj = adj ? adj : gcn_trainer_adjacency(tr, GCN_ADJ_RAW);
    m->n_nodes = ds->n_nodes;
    m->nnz = adj ? gcn_csr_nnz(adj) : 0;
    const gcn_csr *xs = gcn_model_sparse_input(gcn_trainer_model(tr));
    m->sparse_nnz = xs ? gcn_csr_nnz(xs) : -1;
    for (m->warmup = 0; st == GCN_OK && (m->warmup < b->o.warmup ||
                                         (!gcn_trainer_spmm_locked(tr) &&
                                          m->warmup < b->o.warmup + MAX_EXTRA_WARMUP));
         m->warmup++)
        st = epoch(b, tr, m, -1, false, &es);
    gcn_ctx_memory_stats(b->ctx, &ms);
    m->peak = ms.peak;
    gcn_ctx_reset_peak(b->ctx);
    /* the step peak includes the captured epoch: replays allocate nothing */
    for (int k = 0; st == GCN_OK && b->cfg.cuda_graph && gcn_ctx_device(b->ctx) == GCN_DEVICE_CUDA &&
                    !es.graph && k < MAX_GRAPH_WARMUP;
         k++, m->warmup++)
        st = epoch(b, tr, m, -1, false, &es);
    for (int e = 0; e < b->o.epochs && st == GCN_OK; e++)
        st = epoch(b, tr, m, e, false, &es);
    gcn_ctx_memory_stats(b->ctx, &ms);
    m->peak_timed = ms.peak;
    m->peak = ms.peak > m->peak ? ms.peak : m->peak;
    m->steady = ms.in_use;
    if (b->o.breakdown && gcn_ctx_device(b->ctx) == GCN_DEVICE_CUDA)
        for (; m->n_profiled < b->o.epochs && m->n_profiled < BREAKDOWN_EPOCHS && st == GCN_OK;
             m->n_profiled++)
            st = epoch(b, tr, m, m->n_profiled, true, &es);
    if (st != GCN_OK) {
        fprintf(stderr, "gcnbench train: %s: %s\n", spec, gcn_last_error(b->ctx));
        rc = EXIT_RUNTIME;
        goto done;
    }
    gcn_trainer_memory(tr, &m->mem);
    gcn_trainer_best(tr, &m->best);
done:
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
    return rc;
}

static double median_of(float *v, int n)
{
    double med, min;
    gcnbench_stats(v, n, &med, &min);
    return med;
}

void train_sources(const gcn_dataset *ds, measured *m)
{
    snprintf(m->features, sizeof m->features, "%s", ds->feature_source);
    snprintf(m->labels, sizeof m->labels, "%s",
             ds->label_source[0] ? ds->label_source : ds->labels ? "file" : "none");
}

static void write_line(const train_bench *b, measured *m, FILE *f)
{
    int n = (int)b->o.epochs;
    double med_train = median_of(m->train_ms, n), med_eval = median_of(m->eval_ms, n), med, min;
    gcnbench_stats(m->epoch_ms, n, &med, &min);
    fprintf(f, "{\"bench\":\"train\",\"framework\":\"gcn\",");
    gcnbench_json_str(f, "config", b->name);
    fputc(',', f);
    gcnbench_json_str(f, "dataset", m->dataset);
    fputc(',', f);
    gcnbench_json_str(f, "features", m->features);
    fputc(',', f);
    gcnbench_json_str(f, "labels", m->labels);
    fputc(',', f);
    gcnbench_json_str(f, "device", b->device);
    fprintf(f, ",\"precision\":\"%s\",\"adjacency\":\"csr\",",
            b->cfg.bf16 ? "bf16" : gcn_ctx_tf32(b->ctx) ? "tf32" : "fp32");
    gcnbench_json_str(f, "spmm", b->cfg.spmm);
    fprintf(f, ",\"epochs\":%d,\"warmup\":%d,\"n_nodes\":%lld,\"nnz\":%lld", n, m->warmup,
            (long long)m->n_nodes, (long long)m->nnz);
    fprintf(f, ",\"cuda_graph\":%s,\"threads\":%d", m->n_graph == n ? "true" : "false",
            gcn_ctx_threads(b->ctx));
    if (m->sparse_nnz >= 0)
        fprintf(f, ",\"sparse_input\":%lld", (long long)m->sparse_nnz);
    else
        fputs(",\"sparse_input\":null", f);
    gcnbench_json_num(f, "epoch_ms", med);
    gcnbench_json_num(f, "train_ms", med_train);
    gcnbench_json_num(f, "eval_ms", med_eval);
    gcnbench_json_num(f, "epoch_ms_min", min);
    gcnbench_json_num(f, "peak_mib", train_mib((double)m->peak));
    gcnbench_json_num(f, "steady_mib", train_mib((double)m->steady));
    const gcn_train_memory *t = &m->mem;
    double held = (double)t->data + (double)t->params + (double)t->grads + (double)t->optimizer;
    fprintf(f, ",\"memory_mib\":{\"data\":%.6g", train_mib((double)t->data));
    gcnbench_json_num(f, "params", train_mib((double)t->params));
    gcnbench_json_num(f, "grads", train_mib((double)t->grads));
    gcnbench_json_num(f, "optimizer", train_mib((double)t->optimizer));
    gcnbench_json_num(f, "activations", train_mib((double)(m->peak_timed - m->steady)));
    gcnbench_json_num(f, "workspace", train_mib((double)m->steady > held ? (double)m->steady - held : 0));
    fputc('}', f);
    if (m->n_profiled > 0) {
        for (int c = 0; c < GCN_PROF_N_CATEGORIES; c++)
            fprintf(f, "%s\"%s\":%.6g", c ? "," : ",\"gpu_ms\":{", gcn_prof_category_name(c),
                    median_of(m->cat_ms[c], m->n_profiled));
        fputc('}', f);
        gcnbench_json_num(f, "gpu_span_ms", median_of(m->span_ms, m->n_profiled));
    } else {
        fputs(",\"gpu_ms\":null,\"gpu_span_ms\":null", f);
    }
    gcnbench_json_num(f, "test_acc", m->best.test_acc);
    train_write_comm(b, m, f);
    fputs("}\n", f);
}

/* Every dataset; each line is kept for --out and goes to stdout as soon as
 * its dataset is done. */
static int run(train_bench *b)
{
    for (int i = 0; i < b->o.n_datasets; i++) {
        measured m = {.n_ranks = 1};
        int rc = alloc_measured(&m, (int)b->o.epochs) ? 0 : EXIT_RUNTIME;
        if (rc)
            fprintf(stderr, "gcnbench train: out of host memory for %ld epochs\n", b->o.epochs);
        else if (b->cfg.ranks > 1 || b->cfg.nccl)
            rc = train_run_ranks(b, b->o.datasets[i], &m);
        else
            rc = run_dataset(b, b->o.datasets[i], &m);
        size_t start = b->lines_len;
        if (rc == 0) {
            write_line(b, &m, b->lines_f);
            if (fflush(b->lines_f) != 0) {
                fprintf(stderr, "gcnbench train: out of host memory\n");
                rc = EXIT_RUNTIME;
            }
        }
        if (rc == 0) {
            fwrite(b->lines + start, 1, b->lines_len - start, stdout);
            fflush(stdout);
        }
        free_measured(&m);
        if (rc)
            return rc;
    }
    return 0;
}

/* Appends the lines to --out once every dataset has run. */
static int write_out(train_bench *b)
{
    if (!b->o.out)
        return 0;
    FILE *f = fopen(b->o.out, "a");
    bool ok = f && fwrite(b->lines, 1, b->lines_len, f) == b->lines_len;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok) {
        fprintf(stderr, "gcnbench train: %s: cannot write: %s\n", b->o.out, strerror(errno));
        return EXIT_RUNTIME;
    }
    return 0;
}

int gcnbench_train(int argc, char **argv)
{
    train_bench b = {0};
    int rc = parse_args(argc, argv, &b.o);
    if (rc)
        return rc < 0 ? 0 : rc;
    if ((rc = open_bench(&b)) == 0 && (rc = run(&b)) == 0)
        rc = write_out(&b);
    if (b.lines_f)
        fclose(b.lines_f);
    free(b.lines);
    gcn_ctx_free(&b.ctx);
    return rc;
}
