/* gcnbench spmm: times SpMM kernels of the registry on graphs x feature
 * widths with CUDA events after a warm-up, checks each against a float64
 * reference on sampled rows first, and prints a table (stdout) and JSON lines
 * (--out); --export-matrix writes each benchmarked matrix as .npy files. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"

#define MAX_LIST GCNBENCH_MAX_LIST
#define MAX_SAMPLES 4096

typedef struct config {
    gcnbench_graph_opts g;
    const char *kernels, *sweep, *export_dir;
    double case_seconds; /* repetitions are cut so one case takes about this long */
    gcnbench_run_opts run;
} config;

/* One measured (graph, F, kernel, knob) case. */
typedef struct result {
    int graph, feat;
    const char *kernel;
    char knob[96];
    double median_ms, min_ms, plan_ms, speedup, max_err;
    int reps;
    bool valid;
} result;

typedef struct bench {
    config cfg;
    gcn_ctx *gpu, *host;
    FILE *out;
    char device[128];
    const gcn_spmm_impl *impls[MAX_LIST];
    int n_impls;
    result *results;
    int n_results, cap_results;
    char names[MAX_LIST][96];
} bench;

/* The graph under test: host copy (GCN-normalised, with values), device
 * matrix, and the rows whose results are checked. */
typedef struct graph {
    gcn_graph *g;
    gcn_csr *a;
    int32_t *sample;
    int n_sample;
} graph;

static int usage(void)
{
    fprintf(stderr,
            "usage: gcnbench spmm --dataset SPEC [--dataset SPEC ...] [--root DIR]\n"
            "                     [--feat 16,32,64,128,256] [--kernels all|a,b] [--reps N]\n"
            "                     [--warmup N] [--case-seconds S] [--flush] [--out FILE.jsonl]\n"
            "                     [--sweep VAR=v1,v2,...] [--tag TEXT] [--seed S]\n"
            "                     [--cache-dir DIR] [--export-matrix DIR] [--reorder SPEC]\n"
            "  SPEC: a dataset name or path under --root, or a generator such as\n"
            "  chunglu:arxiv or chunglu:products (datasets/dataset.h).  --sweep reruns\n"
            "  every case with each value of an environment knob (\"default\" unsets it).\n"
            "  --export-matrix writes each graph's benchmarked matrix to DIR/NAME/\n"
            "  (shape, row_ptr, col_idx: int64 .npy; values: float32 .npy), NAME the\n"
            "  SPEC with every character outside [A-Za-z0-9._-] replaced by '_'.\n"
            "  --reorder relabels each graph first (none, degree, metis, metis:S,...,\n"
            "  parts:N[:nnz]).\n"
            "  Kernels that do not support a case (subgraph kernels need communities:\n"
            "  gcnbench select) are left out of it.\n");
    return 2;
}

static int parse_args(int argc, char **argv, config *c)
{
    *c = (config){.g = gcnbench_graph_defaults(NULL), .kernels = "all", .case_seconds = 1.5,
                  .run = GCNBENCH_RUN_DEFAULTS};
    for (int i = 1; i < argc; i++) {
        int taken = gcnbench_run_opt(argc, argv, &i, &c->run);
        if (taken == 0)
            taken = gcnbench_graph_opt(argc, argv, &i, &c->g);
        if (taken < 0)
            return usage();
        if (taken)
            continue;
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return usage();
        i++;
        if (!strcmp(a, "--export-matrix"))
            c->export_dir = v;
        else if (!strcmp(a, "--kernels"))
            c->kernels = v;
        else if (!strcmp(a, "--case-seconds"))
            c->case_seconds = atof(v);
        else if (!strcmp(a, "--sweep") && strchr(v, '='))
            c->sweep = v;
        else
            return usage();
    }
    if (c->g.n_datasets == 0 || !gcnbench_run_opts_valid(&c->run))
        return usage();
    return 0;
}

/* The kernels to run, cusparse first so the others have their speed-up. */
static int select_kernels(bench *b)
{
    int n = 0;
    const gcn_spmm_impl *const *reg = gcn_spmm_registry(&n);
    const char *want = b->cfg.kernels;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < n; k++) {
            const char *name = reg[k]->name;
            size_t len = strlen(name);
            bool cus = !strcmp(name, "cusparse"), listed = !strcmp(want, "all");
            for (const char *p = want; !listed && (p = strstr(p, name)); p += len)
                listed = (p == want || p[-1] == ',') && (p[len] == ',' || p[len] == '\0');
            if (reg[k]->device == GCN_DEVICE_CUDA && listed && cus == (pass == 0))
                b->impls[b->n_impls++] = reg[k];
        }
    if (b->n_impls == 0) {
        fprintf(stderr, "gcnbench: no CUDA SpMM kernel matches --kernels %s\n", want);
        return 2;
    }
    return 0;
}

/* ---- graphs --------------------------------------------------------------- */

/* Writes the matrix benchmarked for spec to export_dir/NAME (see usage). */
static int export_matrix(bench *b, const char *spec, const gcn_graph *g)
{
    char dir[4096];
    int len = snprintf(dir, sizeof dir, "%s/", b->cfg.export_dir);
    if (len < 0 || len >= (int)sizeof dir - 1) {
        fprintf(stderr, "gcnbench: --export-matrix %s: path too long\n", b->cfg.export_dir);
        return 1;
    }
    for (const char *p = spec; *p && len < (int)sizeof dir - 1; p++)
        dir[len++] = isalnum((unsigned char)*p) || strchr("._-", *p) ? *p : '_';
    dir[len] = '\0';
    if (mkdir(b->cfg.export_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "gcnbench: %s: %s\n", b->cfg.export_dir, strerror(errno));
        return 1;
    }
    if (gcn_graph_export_npy(b->host, g, dir) != GCN_OK) {
        fprintf(stderr, "gcnbench: %s\n", gcn_last_error(b->host));
        return 1;
    }
    fprintf(stderr, "gcnbench: %s: matrix written to %s\n", spec, dir);
    return 0;
}

static int load_graph(bench *b, const char *spec, graph *gr)
{
    gcn_dataset_opts o = gcn_dataset_default_opts();
    o.root = b->cfg.g.root;
    o.features = "none";
    o.cache_dir = b->cfg.g.cache_dir;
    o.cache = b->cfg.g.cache_dir != NULL;
    o.reorder = b->cfg.g.reorder;
    gcn_dataset *ds = NULL;
    double t0 = gcnbench_now_ms();
    gcn_status st = gcn_dataset_load(b->host, &ds, spec, &o);
    if (st == GCN_OK)
        st = gcn_graph_gcn_norm(b->host, ds->graph, &gr->g);
    gcn_dataset_free(&ds);
    if (st == GCN_OK && b->cfg.export_dir && export_matrix(b, spec, gr->g))
        return 1;
    if (st == GCN_OK)
        st = gcn_csr_create(b->gpu, &gr->a, gr->g->n_nodes, gr->g->n_nodes, gr->g->nnz,
                            gr->g->row_ptr, gr->g->col_idx, gr->g->values);
    if (st != GCN_OK) {
        fprintf(stderr, "gcnbench: %s: %s\n", spec,
                gcn_last_error(gr->g && !gr->a ? b->gpu : b->host));
        return 1;
    }
    gr->sample = gcnbench_sample_rows(gr->g, MAX_SAMPLES, &gr->n_sample);
    fprintf(stderr, "gcnbench: %s: %d nodes, %d non-zeros, ready in %.0f ms\n", spec,
            gr->g->n_nodes, gr->g->nnz, gcnbench_now_ms() - t0);
    return 0;
}

static void free_graph(graph *gr)
{
    gcn_csr_free(&gr->a);
    gcn_graph_free(&gr->g);
    free(gr->sample);
    memset(gr, 0, sizeof *gr);
}

/* ---- one width ------------------------------------------------------------ */

/* Operands for one F: random X on host and device, Y, and the reference
 * rows in float64 (value and summed magnitude). */
typedef struct operands {
    int feat;
    float *hx, *hy;
    gcn_tensor *x, *y;
    double *ref, *mag;
} operands;

static int make_operands(bench *b, const graph *gr, int feat, operands *op)
{
    memset(op, 0, sizeof *op);
    op->feat = feat;
    int64_t n = gr->g->n_nodes, nx = n * feat;
    op->hx = malloc((size_t)(nx > 0 ? nx : 1) * sizeof(float));
    op->hy = malloc((size_t)(nx > 0 ? nx : 1) * sizeof(float));
    op->ref = calloc((size_t)gr->n_sample * feat + 1, sizeof(double));
    op->mag = calloc((size_t)gr->n_sample * feat + 1, sizeof(double));
    if (!op->hx || !op->hy || !op->ref || !op->mag) {
        fprintf(stderr, "gcnbench: out of host memory for F = %d\n", feat);
        return 1;
    }
    gcnbench_fill_uniform(op->hx, nx, b->cfg.run.seed * 0x9E3779B97F4A7C15ull + (uint64_t)feat);
    gcnbench_reference(gr->g, gr->sample, gr->n_sample, op->hx, feat, op->ref, op->mag);
    gcn_status st = gcn_tensor_from_host(b->gpu, &op->x, op->hx, n, feat);
    if (st == GCN_OK)
        st = gcn_tensor_create(b->gpu, &op->y, n, feat);
    if (st != GCN_OK) {
        fprintf(stderr, "gcnbench: F = %d: %s\n", feat, gcn_last_error(b->gpu));
        return 1;
    }
    return 0;
}

static void free_operands(operands *op)
{
    gcn_tensor_free(&op->x);
    gcn_tensor_free(&op->y);
    free(op->hx);
    free(op->hy);
    free(op->ref);
    free(op->mag);
}

/* Y from NaN, one run, then the sampled rows against the reference:
 * largest |got - ref| / summed magnitude. */
static gcn_status validate(bench *b, const gcn_spmm_impl *impl, void *plan, const graph *gr,
                           operands *op, double *err)
{
    gcn_status st = gcn_tensor_fill(b->gpu, op->y, NAN);
    if (st == GCN_OK)
        st = impl->run(b->gpu, plan, gr->a, gcn_tensor_cdata(op->x), gcn_tensor_data(op->y),
                       op->feat, false);
    if (st == GCN_OK)
        st = gcn_tensor_to_host(b->gpu, op->y, op->hy);
    *err = st == GCN_OK ? gcnbench_max_error(op->hy, gr->sample, gr->n_sample, op->feat, op->ref,
                                             op->mag)
                        : 0.0;
    return st;
}

/* Plan, validation and timing of one kernel on one case. */
static int measure(bench *b, const gcn_spmm_impl *impl, const graph *gr, operands *op,
                   result *r)
{
    void *plan = NULL;
    float *ms = malloc((size_t)b->cfg.run.reps * sizeof *ms);
    const float *x = gcn_tensor_cdata(op->x);
    float *y = gcn_tensor_data(op->y);
    double t0 = gcnbench_now_ms();
    gcn_status st = impl->plan(b->gpu, gr->a, op->feat, &plan);
    if (st == GCN_OK)
        st = gcn_ctx_sync(b->gpu);
    r->plan_ms = gcnbench_now_ms() - t0;
    if (st == GCN_OK)
        st = validate(b, impl, plan, gr, op, &r->max_err);
    r->valid = r->max_err <= 1e-5;
    float est = 0.0f;
    if (st == GCN_OK)
        st = gcn_spmm_time(b->gpu, impl, plan, gr->a, x, y, op->feat, false, b->cfg.run.warmup, 1,
                           b->cfg.run.flush, &est);
    double fit = est > 0 ? b->cfg.case_seconds * 1e3 / est : b->cfg.run.reps;
    r->reps = fit < b->cfg.run.reps ? (fit > 5 ? (int)fit : 5) : b->cfg.run.reps;
    if (st == GCN_OK)
        st = gcn_spmm_time(b->gpu, impl, plan, gr->a, x, y, op->feat, false, 0, r->reps,
                           b->cfg.run.flush, ms);
    if (plan)
        impl->free_plan(plan);
    if (st != GCN_OK) {
        fprintf(stderr, "gcnbench: %s, F = %d: %s\n", impl->name, op->feat,
                gcn_last_error(b->gpu));
        free(ms);
        return 1;
    }
    gcnbench_stats(ms, r->reps, &r->median_ms, &r->min_ms);
    free(ms);
    return 0;
}

/* ---- output --------------------------------------------------------------- */

static void report(bench *b, const graph *gr, const result *r)
{
    const gcn_graph *g = gr->g;
    double flops = 2.0 * g->nnz * r->feat;
    double bytes = 4.0 * (g->n_nodes + 1) + 8.0 * g->nnz + 8.0 * (double)g->n_nodes * r->feat;
    double gflops = flops / (r->median_ms * 1e6), gbps = bytes / (r->median_ms * 1e6);
    printf("%-22.22s %9d %10d %5d %-10s %-22.22s %9.4f %9.4f %8.1f %7.1f %8.2f %7.2f %s\n",
           b->names[r->graph], g->n_nodes, g->nnz, r->feat, r->kernel,
           r->knob[0] ? r->knob : "-", r->median_ms, r->min_ms, gflops, gbps, r->plan_ms,
           r->speedup, r->valid ? "ok" : "INVALID");
    fflush(stdout);
    if (!b->out)
        return;
    FILE *f = b->out;
    fputc('{', f);
    gcnbench_json_str(f, "bench", "spmm");
    fputc(',', f);
    gcnbench_json_str(f, "graph", b->names[r->graph]);
    fprintf(f, ",\"n_rows\":%d,\"nnz\":%d,\"feat\":%d,", g->n_nodes, g->nnz, r->feat);
    gcnbench_json_str(f, "kernel", r->kernel);
    fputc(',', f);
    gcnbench_json_str(f, "knob", r->knob[0] ? r->knob : NULL);
    gcnbench_json_num(f, "median_ms", r->median_ms);
    gcnbench_json_num(f, "min_ms", r->min_ms);
    gcnbench_json_num(f, "gflops", gflops);
    gcnbench_json_num(f, "gbps", gbps);
    gcnbench_json_num(f, "plan_ms", r->plan_ms);
    gcnbench_json_num(f, "speedup_vs_cusparse", r->speedup > 0 ? r->speedup : NAN);
    gcnbench_json_num(f, "max_err", r->max_err);
    fprintf(f, ",\"valid\":%s,\"reps\":%d,\"flush\":%s,", r->valid ? "true" : "false", r->reps,
            b->cfg.run.flush ? "true" : "false");
    gcnbench_json_str(f, "device", b->device);
    fputc(',', f);
    gcnbench_json_str(f, "tag", b->cfg.run.tag);
    fputs("}\n", f);
    fflush(f);
}

/* The largest speed-up of any kernel on r's case (default knobs). */
static double case_best(const bench *b, const result *r)
{
    double best = 0.0;
    for (int j = 0; j < b->n_results; j++) {
        const result *q = &b->results[j];
        if (!q->knob[0] && q->valid && q->graph == r->graph && q->feat == r->feat &&
            q->speedup > best)
            best = q->speedup;
    }
    return best;
}

/* Whether r is the first default-knob result of its case. */
static bool case_first(const bench *b, int i)
{
    for (int j = 0; j < i; j++)
        if (!b->results[j].knob[0] && b->results[j].graph == b->results[i].graph &&
            b->results[j].feat == b->results[i].feat)
            return false;
    return !b->results[i].knob[0];
}

/* Geometric mean of the speed-ups over cusparse per kernel, and of the best
 * kernel per case, over the default-knob results. */
static void summary(bench *b)
{
    printf("\nspeed-up over cusparse (median times), geometric mean over (graph, F) cases:\n");
    for (int k = 0; k <= b->n_impls; k++) {
        const char *name = k < b->n_impls ? b->impls[k]->name : "best";
        double logsum = 0.0, lo = INFINITY;
        int n = 0;
        for (int i = 0; i < b->n_results; i++) {
            const result *r = &b->results[i];
            double s = k < b->n_impls ? r->speedup : case_best(b, r);
            bool take = k < b->n_impls ? !r->knob[0] && r->valid && !strcmp(r->kernel, name)
                                       : case_first(b, i);
            if (!take || s <= 0)
                continue;
            logsum += log(s);
            lo = fmin(lo, s);
            n++;
        }
        if (n == 0)
            continue;
        printf("  %-10s %6.2fx over %d cases, lowest %.2fx\n", name, exp(logsum / n), n, lo);
        if (b->out)
            fprintf(b->out,
                    "{\"bench\":\"spmm_summary\",\"kernel\":\"%s\",\"geomean_speedup\":%.6g,"
                    "\"cases\":%d,\"min_speedup\":%.6g}\n",
                    name, exp(logsum / n), n, lo);
    }
}

static int add_result(bench *b, const result *r)
{
    if (b->n_results == b->cap_results) {
        int cap = b->cap_results ? 2 * b->cap_results : 256;
        result *p = realloc(b->results, (size_t)cap * sizeof *p);
        if (!p)
            return 1;
        b->results = p;
        b->cap_results = cap;
    }
    b->results[b->n_results++] = *r;
    return 0;
}

/* ---- driver --------------------------------------------------------------- */

/* Every kernel (and every knob value of --sweep) on one (graph, F). */
static int run_case(bench *b, int gi, const graph *gr, operands *op)
{
    char var[64] = "", vals[512] = "default";
    if (b->cfg.sweep) {
        const char *eq = strchr(b->cfg.sweep, '=');
        snprintf(var, sizeof var, "%.*s", (int)(eq - b->cfg.sweep), b->cfg.sweep);
        snprintf(vals, sizeof vals, "%s", eq + 1);
    }
    double cusparse_ms = 0.0;
    char *save = NULL;
    for (char *v = strtok_r(vals, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
        bool dflt = !strcmp(v, "default");
        if (var[0] && dflt)
            unsetenv(var);
        else if (var[0])
            setenv(var, v, 1);
        for (int k = 0; k < b->n_impls; k++) {
            if (!b->impls[k]->supports(gr->a, op->feat))
                continue;
            result r = {.graph = gi, .feat = op->feat, .kernel = b->impls[k]->name};
            if (var[0] && !dflt)
                snprintf(r.knob, sizeof r.knob, "%s=%s", var, v);
            if (measure(b, b->impls[k], gr, op, &r))
                return 1;
            if (!strcmp(r.kernel, "cusparse") && cusparse_ms == 0.0)
                cusparse_ms = r.median_ms;
            r.speedup = cusparse_ms > 0 ? cusparse_ms / r.median_ms : 0.0;
            report(b, gr, &r);
            if (add_result(b, &r))
                return 1;
        }
    }
    return 0;
}

static int run(bench *b)
{
    printf("%-22s %9s %10s %5s %-10s %-22s %9s %9s %8s %7s %8s %7s %s\n", "graph", "n_rows",
           "nnz", "F", "kernel", "knob", "median_ms", "min_ms", "GFLOP/s", "GB/s", "plan_ms",
           "vs_cusp", "check");
    for (int gi = 0; gi < b->cfg.g.n_datasets; gi++) {
        graph gr = {0};
        snprintf(b->names[gi], sizeof b->names[gi], "%s", b->cfg.g.datasets[gi]);
        if (load_graph(b, b->cfg.g.datasets[gi], &gr)) {
            free_graph(&gr);
            return 1;
        }
        for (int fi = 0; fi < b->cfg.g.n_feats; fi++) {
            operands op;
            int rc = make_operands(b, &gr, b->cfg.g.feats[fi], &op);
            if (!rc)
                rc = run_case(b, gi, &gr, &op);
            free_operands(&op);
            if (rc) {
                free_graph(&gr);
                return 1;
            }
        }
        free_graph(&gr);
    }
    summary(b);
    return 0;
}

int gcnbench_spmm(int argc, char **argv)
{
    bench b = {0};
    int rc = parse_args(argc, argv, &b.cfg);
    if (rc)
        return rc;
    if (gcnbench_open_pair(b.cfg.run.seed, &b.host, &b.gpu, b.device, sizeof b.device))
        return 1;
    rc = select_kernels(&b);
    if (!rc)
        rc = gcnbench_open_out(b.cfg.run.out, &b.out);
    if (!rc)
        rc = run(&b);
    if (b.out)
        fclose(b.out);
    free(b.results);
    gcn_ctx_free(&b.gpu);
    gcn_ctx_free(&b.host);
    return rc;
}
