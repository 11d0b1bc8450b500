/* gcnbench spmm: times SpMM kernels of the registry on graphs x feature
 * widths x dtypes with CUDA events after a warm-up, checks each against a
 * float64 reference on sampled rows first, and prints a table (stdout), the
 * best bf16 kernel against the best fp32 one, and JSON lines (--out);
 * --export-matrix writes each benchmarked matrix as .npy files. */
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
    bool dtype[2];       /* indexed by gcn_dtype: the products to time */
    double case_seconds; /* repetitions are cut so one case takes about this long */
    gcnbench_run_opts run;
} config;

/* One measured (graph, F, kernel, knob) case. */
typedef struct result {
    int graph, feat;
    gcn_dtype dtype;
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
            "                     [--dtype fp32|bf16|fp32,bf16]\n"
            "  SPEC: a dataset name or path under --root, or a generator such as\n"
            "  chunglu:arxiv or chunglu:products (datasets/dataset.h).  --sweep reruns\n"
            "  every case with each value of an environment knob (\"default\" unsets it).\n"
            "  --export-matrix writes each graph's benchmarked matrix to DIR/NAME/\n"
            "  (shape, row_ptr, col_idx: int64 .npy; values: float32 .npy), NAME the\n"
            "  SPEC with every character outside [A-Za-z0-9._-] replaced by '_'.\n"
            "  --reorder relabels each graph first (none, degree, metis, metis:S,...,\n"
            "  parts:N[:nnz]).\n"
            "  --dtype times the kernels' variants for fp32 and/or bf16 features (bf16:\n"
            "  the kernels with a bf16 variant; x rounded from the same fp32 values).\n"
            "  Kernels that do not support a case (subgraph kernels need communities:\n"
            "  gcnbench select) are left out of it.\n");
    return 2;
}

/* "fp32", "bf16" or both, comma-separated, into want[dtype]. */
static bool parse_dtypes(const char *v, bool want[2])
{
    want[GCN_DTYPE_FP32] = want[GCN_DTYPE_BF16] = false;
    char list[64];
    snprintf(list, sizeof list, "%s", v);
    char *save = NULL;
    for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (strcmp(w, "fp32") && strcmp(w, "bf16"))
            return false;
        want[strcmp(w, "fp32") ? GCN_DTYPE_BF16 : GCN_DTYPE_FP32] = true;
    }
    return want[GCN_DTYPE_FP32] || want[GCN_DTYPE_BF16];
}

static int parse_args(int argc, char **argv, config *c)
{
    *c = (config){.g = gcnbench_graph_defaults(NULL), .kernels = "all", .case_seconds = 1.5,
                  .dtype = {true, false}, .run = GCNBENCH_RUN_DEFAULTS};
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
        else if (!strcmp(a, "--dtype") && parse_dtypes(v, c->dtype))
            continue;
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

/* Operands for one F: random X on host and on the device in each dtype
 * timed (bf16: rounded from the same values), Y, and the reference rows in
 * float64 on the fp32 X (value and summed magnitude). */
typedef struct operands {
    int feat;
    float *hx, *hy;
    gcn_tensor *x[2], *y[2]; /* by gcn_dtype */
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
    gcn_status st = GCN_OK;
    for (int d = 0; d < 2 && st == GCN_OK; d++) {
        if (!b->cfg.dtype[d])
            continue;
        st = gcn_tensor_create_dtype(b->gpu, &op->x[d], n, feat, (gcn_dtype)d);
        if (st == GCN_OK)
            st = gcn_tensor_copy_from_host(b->gpu, op->x[d], op->hx);
        if (st == GCN_OK)
            st = gcn_tensor_create_dtype(b->gpu, &op->y[d], n, feat, (gcn_dtype)d);
    }
    if (st != GCN_OK) {
        fprintf(stderr, "gcnbench: F = %d: %s\n", feat, gcn_last_error(b->gpu));
        return 1;
    }
    return 0;
}

static void free_operands(operands *op)
{
    for (int d = 0; d < 2; d++) {
        gcn_tensor_free(&op->x[d]);
        gcn_tensor_free(&op->y[d]);
    }
    free(op->hx);
    free(op->hy);
    free(op->ref);
    free(op->mag);
}

/* One kernel's run in one dtype, for gcn_bench_time. */
typedef struct kernel_run {
    const gcn_spmm_impl *impl;
    void *plan;
    const gcn_csr *a;
    gcn_tensor *x, *y;
    int feat;
} kernel_run;

static gcn_status run_once(gcn_ctx *ctx, void *user)
{
    const kernel_run *k = user;
    if (gcn_tensor_dtype(k->x) == GCN_DTYPE_BF16)
        return k->impl->run_bf16(ctx, k->plan, k->a, gcn_tensor_data_bf16(k->x),
                                 gcn_tensor_data_bf16(k->y), k->feat, false);
    return k->impl->run(ctx, k->plan, k->a, gcn_tensor_cdata(k->x), gcn_tensor_data(k->y),
                        k->feat, false);
}

/* Y from NaN, one run, then the sampled rows against the reference:
 * largest |got - ref| / summed magnitude. */
static gcn_status validate(bench *b, kernel_run *k, const graph *gr, operands *op, double *err)
{
    gcn_status st = gcn_tensor_fill(b->gpu, k->y, NAN);
    if (st == GCN_OK)
        st = run_once(b->gpu, k);
    if (st == GCN_OK)
        st = gcn_tensor_to_host(b->gpu, k->y, op->hy);
    *err = st == GCN_OK ? gcnbench_max_error(op->hy, gr->sample, gr->n_sample, op->feat, op->ref,
                                             op->mag)
                        : 0.0;
    return st;
}

/* The largest error / magnitude a valid result may have: fp32 summation
 * (1e-5); in bf16 also x's rounding and the output's, 2^-8 each of at most
 * the magnitude. */
static double allowed_error(gcn_dtype dtype)
{
    return dtype == GCN_DTYPE_BF16 ? 2.0 / 256.0 + 1e-5 : 1e-5;
}

/* Plan, validation and timing of one kernel on one case; *skipped (and 0)
 * when its plan refuses the case (GCN_ERR_UNSUPPORTED, said on stderr). */
static int measure(bench *b, const gcn_spmm_impl *impl, const graph *gr, operands *op,
                   result *r, bool *skipped)
{
    kernel_run k = {impl, NULL, gr->a, op->x[r->dtype], op->y[r->dtype], op->feat};
    float *ms = malloc((size_t)b->cfg.run.reps * sizeof *ms);
    double t0 = gcnbench_now_ms();
    gcn_status st = r->dtype == GCN_DTYPE_BF16 ? impl->plan_bf16(b->gpu, gr->a, op->feat, &k.plan)
                                               : impl->plan(b->gpu, gr->a, op->feat, &k.plan);
    *skipped = st == GCN_ERR_UNSUPPORTED;
    if (*skipped) {
        fprintf(stderr, "gcnbench: %s %s, F = %d: left out: %s\n", impl->name,
                gcn_dtype_name(r->dtype), op->feat, gcn_last_error(b->gpu));
        free(ms);
        return 0;
    }
    if (st == GCN_OK)
        st = gcn_ctx_sync(b->gpu);
    r->plan_ms = gcnbench_now_ms() - t0;
    if (st == GCN_OK)
        st = validate(b, &k, gr, op, &r->max_err);
    r->valid = r->max_err <= allowed_error(r->dtype);
    float est = 0.0f;
    if (st == GCN_OK)
        st = gcn_bench_time(b->gpu, run_once, &k, b->cfg.run.warmup, 1, b->cfg.run.flush, &est);
    double fit = est > 0 ? b->cfg.case_seconds * 1e3 / est : b->cfg.run.reps;
    r->reps = fit < b->cfg.run.reps ? (fit > 5 ? (int)fit : 5) : b->cfg.run.reps;
    if (st == GCN_OK)
        st = gcn_bench_time(b->gpu, run_once, &k, 0, r->reps, b->cfg.run.flush, ms);
    if (k.plan)
        impl->free_plan(k.plan);
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
    double flops = 2.0 * g->nnz * r->feat, elem = r->dtype == GCN_DTYPE_BF16 ? 2.0 : 4.0;
    double bytes = 4.0 * (g->n_nodes + 1) + 8.0 * g->nnz +
                   2.0 * elem * (double)g->n_nodes * r->feat;
    double gflops = flops / (r->median_ms * 1e6), gbps = bytes / (r->median_ms * 1e6);
    printf("%-22.22s %9d %10d %5d %-5s %-12s %-22.22s %9.4f %9.4f %8.1f %7.1f %8.2f %7.2f %s\n",
           b->names[r->graph], g->n_nodes, g->nnz, r->feat, gcn_dtype_name(r->dtype), r->kernel,
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
    gcnbench_json_str(f, "dtype", gcn_dtype_name(r->dtype));
    fputc(',', f);
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

static bool same_case(const result *q, const result *r)
{
    return q->graph == r->graph && q->feat == r->feat && q->dtype == r->dtype;
}

/* The largest speed-up of any kernel on r's case (default knobs). */
static double case_best(const bench *b, const result *r)
{
    double best = 0.0;
    for (int j = 0; j < b->n_results; j++) {
        const result *q = &b->results[j];
        if (!q->knob[0] && q->valid && same_case(q, r) && q->speedup > best)
            best = q->speedup;
    }
    return best;
}

/* Whether r is the first default-knob result of its case. */
static bool case_first(const bench *b, int i)
{
    for (int j = 0; j < i; j++)
        if (!b->results[j].knob[0] && same_case(&b->results[j], &b->results[i]))
            return false;
    return !b->results[i].knob[0];
}

/* The fastest valid default-knob result of (graph, feat, dtype), or NULL. */
static const result *fastest(const bench *b, int graph, int feat, gcn_dtype dtype)
{
    const result *best = NULL;
    for (int j = 0; j < b->n_results; j++) {
        const result *q = &b->results[j];
        if (!q->knob[0] && q->valid && q->graph == graph && q->feat == feat &&
            q->dtype == dtype && (!best || q->median_ms < best->median_ms))
            best = q;
    }
    return best;
}

/* Per (graph, F) timed in both dtypes: the fastest bf16 kernel's median
 * over the fastest fp32 kernel's (what the selector locks on, within the
 * few percent of its sampling). */
static void dtype_summary(const bench *b)
{
    bool header = false;
    for (int i = 0; i < b->n_results; i++) {
        const result *r = &b->results[i];
        if (r->dtype != GCN_DTYPE_FP32 || !case_first(b, i))
            continue;
        const result *f = fastest(b, r->graph, r->feat, GCN_DTYPE_FP32);
        const result *h = fastest(b, r->graph, r->feat, GCN_DTYPE_BF16);
        if (!f || !h)
            continue;
        if (!header)
            printf("\nbf16 against fp32, fastest kernel of each (median ms):\n");
        header = true;
        printf("  %-22.22s F = %4d: fp32 %-12s %9.4f  bf16 %-12s %9.4f  ratio %.3f\n",
               b->names[r->graph], r->feat, f->kernel, f->median_ms, h->kernel, h->median_ms,
               h->median_ms / f->median_ms);
        if (b->out) {
            fputc('{', b->out);
            gcnbench_json_str(b->out, "bench", "spmm_dtype");
            fputc(',', b->out);
            gcnbench_json_str(b->out, "graph", b->names[r->graph]);
            fprintf(b->out, ",\"feat\":%d,", r->feat);
            gcnbench_json_str(b->out, "fp32_kernel", f->kernel);
            gcnbench_json_num(b->out, "fp32_ms", f->median_ms);
            fputc(',', b->out);
            gcnbench_json_str(b->out, "bf16_kernel", h->kernel);
            gcnbench_json_num(b->out, "bf16_ms", h->median_ms);
            gcnbench_json_num(b->out, "ratio", h->median_ms / f->median_ms);
            fputc(',', b->out);
            gcnbench_json_str(b->out, "device", b->device);
            fputs("}\n", b->out);
        }
    }
}

/* Geometric mean of the speed-ups over cusparse per kernel, and of the best
 * kernel per case, over the default-knob results; then bf16 against fp32. */
static void summary(bench *b)
{
    printf("\nspeed-up over cusparse (median times), geometric mean over (graph, F, dtype) "
           "cases:\n");
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
    dtype_summary(b);
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
    double cusparse_ms[2] = {0.0, 0.0};
    char *save = NULL;
    for (char *v = strtok_r(vals, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
        bool dflt = !strcmp(v, "default");
        if (var[0] && dflt)
            unsetenv(var);
        else if (var[0])
            setenv(var, v, 1);
        for (int d = 0; d < 2; d++)
            for (int k = 0; b->cfg.dtype[d] && k < b->n_impls; k++) {
                const gcn_spmm_impl *impl = b->impls[k];
                if (!impl->supports(gr->a, op->feat) ||
                    (d == GCN_DTYPE_BF16 && !impl->run_bf16))
                    continue;
                result r = {.graph = gi, .feat = op->feat, .dtype = (gcn_dtype)d,
                            .kernel = impl->name};
                if (var[0] && !dflt)
                    snprintf(r.knob, sizeof r.knob, "%s=%s", var, v);
                bool skipped;
                if (measure(b, impl, gr, op, &r, &skipped))
                    return 1;
                if (skipped)
                    continue;
                if (!strcmp(r.kernel, "cusparse") && cusparse_ms[d] == 0.0)
                    cusparse_ms[d] = r.median_ms;
                r.speedup = cusparse_ms[d] > 0 ? cusparse_ms[d] / r.median_ms : 0.0;
                report(b, gr, &r);
                if (add_result(b, &r))
                    return 1;
            }
    }
    return 0;
}

static int run(bench *b)
{
    printf("%-22s %9s %10s %5s %-5s %-12s %-22s %9s %9s %8s %7s %8s %7s %s\n", "graph",
           "n_rows", "nnz", "F", "dtype", "kernel", "knob", "median_ms", "min_ms", "GFLOP/s",
           "GB/s", "plan_ms", "vs_cusp", "check");
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
