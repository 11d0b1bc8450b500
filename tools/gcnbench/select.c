/* gcnbench select: compares the AdaptGear selector, run as training runs
 * it, with an exhaustive oracle.  Each graph is reordered (by METIS
 * communities by default) and its community levels attached.  For each
 * width F, the selector's call site runs real products until it locks in;
 * then every candidate is checked against a float64 reference and timed
 * in three passes, keeping the lowest median.  A sample of a product that
 * takes a few microseconds holds several back-to-back runs, as the
 * selector's samples do.  The result is the pick's time over the oracle's,
 * and over cuSPARSE's on the original order; cuSPARSE is timed in two
 * passes, each with its own plan, one before the selector runs and one
 * after the oracle. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kernels/spmm/internal.h"

#define MAX_SAMPLES 1024
/* Training waits for the GPU when it reads the loss and the accuracies,
 * twice an epoch; in between its products queue behind other kernels.  The
 * benchmark waits once every few epochs' products (a GCN layer's call site
 * runs forward, backward and evaluation) so that, as in training, few timed
 * runs start on an idle GPU, whose events would add the launch to the
 * kernel. */
#define CALLS_PER_SYNC 15

typedef struct sel_config {
    gcnbench_graph_opts g;
    int max_calls;
    gcnbench_run_opts run;
} sel_config;

/* One graph in both orders, with what the checks need. */
typedef struct sel_graph {
    const char *name;
    gcn_graph *orig, *re;  /* GCN-normalised, original and reordered */
    gcn_csr *a_orig, *a_re;
    int32_t *sample;
    int n_sample;
    double reorder_s;
    int n_levels;
} sel_graph;

/* One (graph, F) case. */
typedef struct sel_case {
    int feat, n_cand, calls, pick, best;
    double cusparse_orig, rowsplit_orig, pick_ms, best_ms, profile_ms, max_err;
} sel_case;

typedef struct sel_bench {
    sel_config cfg;
    gcn_ctx *gpu, *host;
    FILE *out;
    char device[128];
    double log_speedup;
    int n_cases, within_3, min_case;
    double worst_ratio, min_speedup;
} sel_bench;

static int usage(void)
{
    fprintf(stderr,
            "usage: gcnbench select --dataset SPEC [--dataset SPEC ...] [--root DIR]\n"
            "                       [--feat 16,32,64,128,256] [--reorder metis|metis:S,..]\n"
            "                       [--max-calls N] [--reps N] [--warmup N] [--flush]\n"
            "                       [--out FILE.jsonl] [--tag TEXT] [--seed S] [--cache-dir DIR]\n"
            "  Runs the selector on each graph's reordered GCN adjacency as training does\n"
            "  (products until its call site locks, at most --max-calls), then times every\n"
            "  candidate (the oracle) and cuSPARSE and rowsplit on the original order.\n");
    return 2;
}

static int parse_args(int argc, char **argv, sel_config *c)
{
    *c = (sel_config){.g = gcnbench_graph_defaults("metis"), .max_calls = 600,
                      .run = GCNBENCH_RUN_DEFAULTS};
    c->run.reps = 20;
    for (int i = 1; i < argc; i++) {
        int taken = gcnbench_run_opt(argc, argv, &i, &c->run);
        if (taken == 0)
            taken = gcnbench_graph_opt(argc, argv, &i, &c->g);
        if (taken < 0)
            return usage();
        if (taken)
            continue;
        if (strcmp(argv[i], "--max-calls") || i + 1 >= argc || atoi(argv[i + 1]) < 1)
            return usage();
        c->max_calls = atoi(argv[++i]);
    }
    return c->g.n_datasets == 0 || !gcnbench_run_opts_valid(&c->run) ? usage() : 0;
}

/* ---- graphs --------------------------------------------------------------- */

static void free_graph(sel_graph *g)
{
    gcn_csr_free(&g->a_orig);
    gcn_csr_free(&g->a_re);
    gcn_graph_free(&g->orig);
    gcn_graph_free(&g->re);
    free(g->sample);
    memset(g, 0, sizeof *g);
}

static gcn_status upload(gcn_ctx *gpu, const gcn_graph *g, gcn_csr **a)
{
    return gcn_csr_create(gpu, a, g->n_nodes, g->n_nodes, g->nnz, g->row_ptr, g->col_idx,
                          g->values);
}

static int load_graph(sel_bench *b, const char *spec, sel_graph *g)
{
    gcn_dataset_opts o = gcn_dataset_default_opts();
    o.root = b->cfg.g.root;
    o.features = "none";
    o.cache_dir = b->cfg.g.cache_dir;
    o.cache = b->cfg.g.cache_dir != NULL;
    gcn_dataset *ds = NULL;
    gcn_reorder_opts ro;
    g->name = spec;
    gcn_status st = gcn_reorder_parse(b->host, b->cfg.g.reorder, &ro);
    if (st == GCN_OK)
        st = gcn_dataset_load(b->host, &ds, spec, &o);
    if (st == GCN_OK)
        st = gcn_graph_gcn_norm(b->host, ds->graph, &g->orig);
    double t0 = gcnbench_now_ms();
    if (st == GCN_OK)
        st = gcn_dataset_reorder(b->host, ds, &ro);
    g->reorder_s = (gcnbench_now_ms() - t0) * 1e-3;
    if (st == GCN_OK)
        st = gcn_graph_gcn_norm(b->host, ds->graph, &g->re);
    gcn_ctx *failed = b->host;
    if (st == GCN_OK && (failed = b->gpu) && (st = upload(b->gpu, g->orig, &g->a_orig)) == GCN_OK &&
        (st = upload(b->gpu, g->re, &g->a_re)) == GCN_OK && ds->reorder)
        st = gcn_reorder_attach(b->gpu, ds->reorder, g->a_re);
    g->n_levels = st == GCN_OK ? gcn_csr_community_levels(g->a_re) : 0;
    if (st == GCN_OK)
        g->sample = gcnbench_sample_rows(g->re, MAX_SAMPLES, &g->n_sample);
    gcn_dataset_free(&ds);
    if (st != GCN_OK || !g->sample) {
        fprintf(stderr, "gcnbench: %s: %s\n", spec, st != GCN_OK ? gcn_last_error(failed)
                                                                 : "out of host memory");
        return 1;
    }
    fprintf(stderr, "gcnbench: %s: %d nodes, %d non-zeros, reordered (%s, %d levels) in %.2f s\n",
            spec, g->re->n_nodes, g->re->nnz, b->cfg.g.reorder, g->n_levels, g->reorder_s);
    return 0;
}

/* ---- timing --------------------------------------------------------------- */

typedef struct site_call {
    const gcn_spmm_site *site;
    int cand;
    const float *x;
    float *y;
} site_call;

static gcn_status run_candidate(gcn_ctx *ctx, void *user)
{
    const site_call *c = user;
    return gcn_spmm_site_run(ctx, c->site, c->cand, c->x, c->y, false);
}

/* The operands of one width: X on host and device, Y, the reference rows. */
typedef struct sel_ops {
    int feat;
    float *hx, *hy;
    gcn_tensor *x, *y;
    double *ref, *mag;
} sel_ops;

static void free_ops(sel_ops *op)
{
    gcn_tensor_free(&op->x);
    gcn_tensor_free(&op->y);
    free(op->hx);
    free(op->hy);
    free(op->ref);
    free(op->mag);
}

static int make_ops(sel_bench *b, const sel_graph *g, int feat, sel_ops *op)
{
    *op = (sel_ops){.feat = feat};
    int64_t n = (int64_t)g->re->n_nodes * feat;
    op->hx = malloc(((size_t)n + 1) * sizeof *op->hx);
    op->hy = malloc(((size_t)n + 1) * sizeof *op->hy);
    op->ref = malloc(((size_t)g->n_sample * feat + 1) * sizeof *op->ref);
    op->mag = malloc(((size_t)g->n_sample * feat + 1) * sizeof *op->mag);
    if (!op->hx || !op->hy || !op->ref || !op->mag) {
        fprintf(stderr, "gcnbench: out of host memory for F = %d\n", feat);
        return 1;
    }
    gcnbench_fill_uniform(op->hx, n, b->cfg.run.seed * 0x9E3779B97F4A7C15ull + (uint64_t)feat);
    gcnbench_reference(g->re, g->sample, g->n_sample, op->hx, feat, op->ref, op->mag);
    gcn_status st = gcn_tensor_from_host(b->gpu, &op->x, op->hx, g->re->n_nodes, feat);
    if (st == GCN_OK)
        st = gcn_tensor_create(b->gpu, &op->y, g->re->n_nodes, feat);
    if (st != GCN_OK) {
        fprintf(stderr, "gcnbench: F = %d: %s\n", feat, gcn_last_error(b->gpu));
        return 1;
    }
    return 0;
}

/* `runs` back-to-back runs of fn, timed as one sample. */
typedef struct batch_call {
    gcn_bench_fn fn;
    void *user;
    int runs;
} batch_call;

static gcn_status run_batch(gcn_ctx *ctx, void *user)
{
    const batch_call *c = user;
    for (int r = 0; r < c->runs; r++)
        GCN_TRY(c->fn(ctx, c->user));
    return GCN_OK;
}

/* Times `reps` samples of fn and returns the median milliseconds per run.
 * Each sample holds as many back-to-back runs as the selector's samples of
 * a's product at width feat (gcn_spmm_sample_runs), so that the oracle and
 * the selector time a product of a few microseconds the same way.  With
 * --flush, which flushes L2 before each sample, a sample is one run. */
static gcn_status median_ms(sel_bench *b, const gcn_csr *a, int feat, gcn_bench_fn fn,
                            void *user, double *ms)
{
    batch_call c = {fn, user, b->cfg.run.flush ? 1 : gcn_spmm_sample_runs(a, feat)};
    float *t = malloc((size_t)b->cfg.run.reps * sizeof *t);
    if (!t)
        return GCN_ERROR(b->gpu, GCN_ERR_NOMEM, "out of host memory for timings");
    gcn_status st = gcn_bench_time(b->gpu, run_batch, &c, b->cfg.run.warmup, b->cfg.run.reps,
                                   b->cfg.run.flush, t);
    double min;
    *ms = NAN;
    if (st == GCN_OK)
        gcnbench_stats(t, b->cfg.run.reps, ms, &min);
    *ms /= c.runs;
    free(t);
    return st;
}

/* One candidate: planned, checked once against the reference, timed. */
static gcn_status time_candidate(sel_bench *b, const sel_graph *g, sel_ops *op, site_call *c,
                                 double *ms, double *err)
{
    GCN_TRY(gcn_spmm_site_prepare(b->gpu, c->site, c->cand));
    GCN_TRY(gcn_tensor_fill(b->gpu, op->y, NAN));
    GCN_TRY(run_candidate(b->gpu, c));
    GCN_TRY(gcn_tensor_to_host(b->gpu, op->y, op->hy));
    *err = gcnbench_max_error(op->hy, g->sample, g->n_sample, op->feat, op->ref, op->mag);
    return median_ms(b, g->a_re, op->feat, run_candidate, c, ms);
}

/* A whole-matrix kernel on the original order (the baselines). */
typedef struct kernel_call {
    const gcn_spmm_impl *impl;
    void *plan;
    const gcn_csr *a;
    const float *x;
    float *y;
    int feat;
} kernel_call;

static gcn_status run_kernel(gcn_ctx *ctx, void *user)
{
    const kernel_call *k = user;
    return k->impl->run(ctx, k->plan, k->a, k->x, k->y, k->feat, false);
}

/* Times one pass of a baseline with a plan of its own; *ms keeps the lower
 * of its median and the earlier passes' (NAN before the first).  A case
 * runs two passes at different times: cuSPARSE's plan picks its algorithm
 * by timing, and one disturbed pick, or one disturbed stretch of time,
 * must not make the baseline look slower than it is. */
static gcn_status baseline(sel_bench *b, const char *name, const sel_graph *g, sel_ops *op,
                           double *ms)
{
    kernel_call k = {gcn_spmm_find(NULL, name), NULL, g->a_orig, gcn_tensor_cdata(op->x),
                     gcn_tensor_data(op->y), op->feat};
    if (!k.impl || !k.impl->supports(g->a_orig, op->feat))
        return GCN_OK;
    double t;
    GCN_TRY(k.impl->plan(b->gpu, g->a_orig, op->feat, &k.plan));
    gcn_status st = median_ms(b, g->a_orig, op->feat, run_kernel, &k, &t);
    k.impl->free_plan(k.plan);
    GCN_TRY(st);
    if (isnan(*ms) || t < *ms)
        *ms = t;
    return GCN_OK;
}

static gcn_status baselines(sel_bench *b, const sel_graph *g, sel_ops *op, sel_case *c)
{
    GCN_TRY(baseline(b, "cusparse", g, op, &c->cusparse_orig));
    return baseline(b, "rowsplit", g, op, &c->rowsplit_orig);
}

/* Raises the GPU's clocks before a case: rowsplit products on the original
 * order for SPIN_UP_MS of wall time (an idle GPU runs its first
 * microsecond kernels slower).  Counting products from one timed run
 * instead gave graphs of a few thousand nodes 10-15 ms: their first
 * widths' candidates were then timed up to 40 % slow. */
#define SPIN_UP_MS 100.0
#define SPIN_UP_BATCH 200 /* products queued between two checks of the clock */

static gcn_status spin_up(sel_bench *b, const sel_graph *g, sel_ops *op)
{
    kernel_call k = {gcn_spmm_find(NULL, "rowsplit"), NULL, g->a_orig, gcn_tensor_cdata(op->x),
                     gcn_tensor_data(op->y), op->feat};
    float ms = 0.0f;
    GCN_TRY(k.impl->plan(b->gpu, g->a_orig, op->feat, &k.plan));
    double t0 = gcnbench_now_ms();
    gcn_status st = GCN_OK;
    while (st == GCN_OK && gcnbench_now_ms() - t0 < SPIN_UP_MS)
        st = gcn_bench_time(b->gpu, run_kernel, &k, SPIN_UP_BATCH, 1, false, &ms);
    k.impl->free_plan(k.plan);
    return st;
}

/* Runs the selector as training does: products through the call site
 * until it locks in.  *calls and *ms receive how many products and how
 * much wall time (synchronised) that took. */
static gcn_status profile(sel_bench *b, const sel_graph *g, sel_ops *op, gcn_spmm_site **site,
                          int *calls, double *ms)
{
    double t0 = gcnbench_now_ms();
    GCN_TRY(gcn_spmm_set_kernel(b->gpu, "auto"));
    GCN_TRY(gcn_spmm_site_get(b->gpu, g->a_re, op->feat, GCN_DTYPE_FP32, "auto", site));
    int cand;
    for (*calls = 0; *calls < b->cfg.max_calls && !gcn_spmm_site_locked(*site, &cand); (*calls)++) {
        GCN_TRY(gcn_spmm_site_apply(b->gpu, g->a_re, GCN_DTYPE_FP32,
                                    gcn_tensor_cdata(op->x), gcn_tensor_data(op->y), op->feat,
                                    false));
        if (*calls % CALLS_PER_SYNC == CALLS_PER_SYNC - 1)
            GCN_TRY(gcn_ctx_sync(b->gpu));
    }
    GCN_TRY(gcn_ctx_sync(b->gpu));
    *ms = gcnbench_now_ms() - t0;
    return GCN_OK;
}

/* ---- one case ---------------------------------------------------------------- */

static void report(sel_bench *b, const sel_graph *g, const gcn_spmm_site *site, const sel_case *c,
                   const double *ms)
{
    const char *pick = c->pick >= 0 ? gcn_spmm_site_candidate_name(site, c->pick) : "-";
    const char *best = gcn_spmm_site_candidate_name(site, c->best);
    double ratio = c->pick_ms / c->best_ms, speedup = c->cusparse_orig / c->pick_ms;
    printf("%-20.20s %5d %4d %-28.28s %8.4f %-28.28s %8.4f %6.3f %9.4f %6.2f %5d %8.1f %s\n",
           g->name, c->feat, c->n_cand, pick, c->pick_ms, best, c->best_ms, ratio,
           c->cusparse_orig, speedup, c->calls, c->profile_ms, c->max_err <= 1e-5 ? "ok" : "BAD");
    fflush(stdout);
    if (!b->out)
        return;
    FILE *f = b->out;
    fputc('{', f);
    gcnbench_json_str(f, "bench", "select");
    fputc(',', f);
    gcnbench_json_str(f, "graph", g->name);
    fprintf(f, ",\"n_rows\":%d,\"nnz\":%d,\"feat\":%d,\"candidates\":%d,\"levels\":%d,",
            g->re->n_nodes, g->re->nnz, c->feat, c->n_cand, g->n_levels);
    gcnbench_json_str(f, "reorder", b->cfg.g.reorder);
    fputc(',', f);
    gcnbench_json_str(f, "pick", pick);
    fputc(',', f);
    gcnbench_json_str(f, "oracle", best);
    gcnbench_json_num(f, "pick_ms", c->pick_ms);
    gcnbench_json_num(f, "oracle_ms", c->best_ms);
    gcnbench_json_num(f, "pick_over_oracle", ratio);
    gcnbench_json_num(f, "cusparse_original_ms", c->cusparse_orig);
    gcnbench_json_num(f, "rowsplit_original_ms", c->rowsplit_orig);
    gcnbench_json_num(f, "speedup_vs_cusparse_original", speedup);
    gcnbench_json_num(f, "profile_calls", c->calls);
    gcnbench_json_num(f, "profile_ms", c->profile_ms);
    gcnbench_json_num(f, "reorder_s", g->reorder_s);
    gcnbench_json_num(f, "max_err", c->max_err);
    fputc(',', f);
    gcnbench_json_str(f, "device", b->device);
    fputc(',', f);
    gcnbench_json_str(f, "tag", b->cfg.run.tag);
    fputs(",\"candidates_ms\":{", f);
    for (int k = 0; k < c->n_cand; k++)
        fprintf(f, "%s\"%s\":%.6g", k ? "," : "", gcn_spmm_site_candidate_name(site, k), ms[k]);
    fputs("}}\n", f);
    fflush(f);
}

static int run_case(sel_bench *b, const sel_graph *g, sel_ops *op)
{
    sel_case c = {.feat = op->feat, .pick = -1, .best = -1, .cusparse_orig = NAN,
                  .rowsplit_orig = NAN};
    gcn_spmm_site *site = NULL;
    gcn_status st = spin_up(b, g, op);
    if (st == GCN_OK)
        st = baselines(b, g, op, &c);
    if (st == GCN_OK)
        st = profile(b, g, op, &site, &c.calls, &c.profile_ms);
    if (st == GCN_OK && !gcn_spmm_site_locked(site, &c.pick))
        c.pick = -1;
    c.n_cand = st == GCN_OK ? gcn_spmm_site_candidates(site) : 0;
    /* Three passes over the candidates, forwards, backwards, forwards; each
     * keeps its lowest median, so a stretch of disturbed time must cover a
     * candidate's turn in all three to slow it (with two, products of a few
     * microseconds were timed up to 20 % slow now and then). */
    double *ms = calloc((size_t)c.n_cand + 1, sizeof *ms);
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; st == GCN_OK && i < c.n_cand; i++) {
            int k = pass == 1 ? c.n_cand - 1 - i : i;
            site_call call = {site, k, gcn_tensor_cdata(op->x), gcn_tensor_data(op->y)};
            double err = 0.0, t;
            st = time_candidate(b, g, op, &call, &t, &err);
            c.max_err = err > c.max_err ? err : c.max_err;
            ms[k] = pass == 0 || t < ms[k] ? t : ms[k];
        }
    if (st == GCN_OK)
        st = baselines(b, g, op, &c);
    for (int k = 0; st == GCN_OK && k < c.n_cand; k++)
        if (c.best < 0 || ms[k] < c.best_ms) {
            c.best = k;
            c.best_ms = ms[k];
        }
    c.pick_ms = c.pick >= 0 ? ms[c.pick] : NAN;
    if (st != GCN_OK) {
        fprintf(stderr, "gcnbench: %s, F = %d: %s\n", g->name, op->feat, gcn_last_error(b->gpu));
        free(ms);
        return 1;
    }
    report(b, g, site, &c, ms);
    free(ms);
    double ratio = c.pick_ms / c.best_ms, speedup = c.cusparse_orig / c.pick_ms;
    b->n_cases++;
    b->within_3 += ratio <= 1.03;
    b->worst_ratio = ratio > b->worst_ratio ? ratio : b->worst_ratio;
    b->log_speedup += log(speedup);
    b->min_speedup = b->n_cases == 1 || speedup < b->min_speedup ? speedup : b->min_speedup;
    return 0;
}

static void summary(sel_bench *b)
{
    if (b->n_cases == 0)
        return;
    double geo = exp(b->log_speedup / b->n_cases);
    printf("\n%d cases: pick within 3%% of the oracle in %d (%.0f%%), worst pick / oracle %.3f; "
           "speed-up over cuSPARSE on the original order: geometric mean %.2fx, lowest %.2fx\n",
           b->n_cases, b->within_3, 100.0 * b->within_3 / b->n_cases, b->worst_ratio, geo,
           b->min_speedup);
    if (!b->out)
        return;
    fprintf(b->out, "{\"bench\":\"select_summary\",\"cases\":%d,\"within_3pct\":%d",
            b->n_cases, b->within_3);
    gcnbench_json_num(b->out, "worst_pick_over_oracle", b->worst_ratio);
    gcnbench_json_num(b->out, "geomean_speedup_vs_cusparse_original", geo);
    gcnbench_json_num(b->out, "min_speedup_vs_cusparse_original", b->min_speedup);
    fputs("}\n", b->out);
}

static int run(sel_bench *b)
{
    printf("%-20s %5s %4s %-28s %8s %-28s %8s %6s %9s %6s %5s %8s %s\n", "graph", "F", "cand",
           "pick", "ms", "oracle", "ms", "ratio", "cusp_orig", "speed", "calls", "prof_ms",
           "check");
    for (int gi = 0; gi < b->cfg.g.n_datasets; gi++) {
        sel_graph g = {0};
        int rc = load_graph(b, b->cfg.g.datasets[gi], &g);
        for (int fi = 0; !rc && fi < b->cfg.g.n_feats; fi++) {
            sel_ops op;
            rc = make_ops(b, &g, b->cfg.g.feats[fi], &op);
            if (!rc)
                rc = run_case(b, &g, &op);
            free_ops(&op);
        }
        free_graph(&g);
        if (rc)
            return rc;
    }
    summary(b);
    return 0;
}

int gcnbench_select(int argc, char **argv)
{
    sel_bench b = {0};
    int rc = parse_args(argc, argv, &b.cfg);
    if (rc)
        return rc;
    if (gcnbench_open_pair(b.cfg.run.seed, &b.host, &b.gpu, b.device, sizeof b.device))
        return 1;
    rc = gcnbench_open_out(b.cfg.run.out, &b.out);
    if (!rc)
        rc = run(&b);
    if (b.out)
        fclose(b.out);
    gcn_ctx_free(&b.gpu);
    gcn_ctx_free(&b.host);
    return rc;
}
