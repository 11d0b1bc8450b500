/* gcnbench matmul: achieved TFLOP/s of gcn_matmul (cuBLAS) for Y = X W in
 * FP32 and in TF32 mode, timed with CUDA events after a warm-up once one
 * result has matched a float64 reference on sampled rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MAX_SHAPES 16
#define MAX_SAMPLES 1024

/* Y [m, n] = X [m, k] . W [k, n]. */
typedef struct shape {
    int64_t m, k, n;
} shape;

typedef struct config {
    shape shapes[MAX_SHAPES];
    int n_shapes;
    gcnbench_run_opts run;
} config;

/* Tolerances on |got - ref| / sum_k |x_ik w_kj|: in FP32 each of the K
 * additions rounds by up to 2^-24, and errors of random sign grow like
 * sqrt(K) 2^-24 ~ 1e-6 at K = 256; TF32 rounds both inputs to 10 mantissa
 * bits, so a product is off by up to about 2^-10 ~ 1e-3 of its magnitude. */
typedef struct precision {
    const char *name;
    bool tf32;
    double tol;
} precision;

static const precision precisions[2] = {{"fp32", false, 1e-5}, {"tf32", true, 1e-3}};

/* One shape's host data: X, W, the downloaded Y, the sampled rows and their
 * float64 reference values and summed magnitudes. */
typedef struct operands {
    shape s;
    float *hx, *hw, *hy;
    int64_t sample[MAX_SAMPLES];
    int n_sample;
    double *ref, *mag;
} operands;

typedef struct result {
    double median_ms, min_ms, max_err;
    int reps;
    bool valid;
} result;

static int usage(void)
{
    fprintf(stderr,
            "usage: gcnbench matmul [--shapes MxKxN,...] [--reps N] [--warmup N] [--flush]\n"
            "                       [--out FILE.jsonl] [--tag TEXT] [--seed S]\n"
            "  times Y = X W, X [M, K], W [K, N], through gcn_matmul in FP32 and TF32;\n"
            "  default shapes 169343x128x256,169343x256x256 (ogbn-arxiv's layers).\n");
    return 2;
}

static bool parse_shapes(const char *s, config *c)
{
    for (c->n_shapes = 0; *s && c->n_shapes < MAX_SHAPES;) {
        int64_t v[3];
        for (int d = 0; d < 3; d++) {
            char *end;
            long long x = strtoll(s, &end, 10);
            if (end == s || x < 1 || x > (1ll << 30) || (d < 2 && *end != 'x'))
                return false;
            v[d] = x;
            s = end + (d < 2);
        }
        if (*s && *s++ != ',')
            return false;
        c->shapes[c->n_shapes++] = (shape){v[0], v[1], v[2]};
    }
    return c->n_shapes > 0 && !*s;
}

static int parse_args(int argc, char **argv, config *c)
{
    *c = (config){.run = GCNBENCH_RUN_DEFAULTS};
    parse_shapes("169343x128x256,169343x256x256", c);
    for (int i = 1; i < argc; i++) {
        int taken = gcnbench_run_opt(argc, argv, &i, &c->run);
        if (taken < 0)
            return usage();
        if (taken)
            continue;
        if (!strcmp(argv[i], "--shapes") && i + 1 < argc && parse_shapes(argv[i + 1], c))
            i++;
        else
            return usage();
    }
    return gcnbench_run_opts_valid(&c->run) ? 0 : usage();
}

static void free_operands(operands *op)
{
    free(op->hx);
    free(op->hw);
    free(op->hy);
    free(op->ref);
    free(op->mag);
    memset(op, 0, sizeof *op);
}

/* Random X and W, and the reference rows in float64. */
static int make_operands(const config *c, shape s, operands *op)
{
    memset(op, 0, sizeof *op);
    op->s = s;
    op->n_sample = s.m < MAX_SAMPLES ? (int)s.m : MAX_SAMPLES;
    op->hx = malloc((size_t)(s.m * s.k) * sizeof(float));
    op->hw = malloc((size_t)(s.k * s.n) * sizeof(float));
    op->hy = malloc((size_t)(s.m * s.n) * sizeof(float));
    op->ref = calloc((size_t)op->n_sample * (size_t)s.n, sizeof(double));
    op->mag = calloc((size_t)op->n_sample * (size_t)s.n, sizeof(double));
    if (!op->hx || !op->hw || !op->hy || !op->ref || !op->mag) {
        fprintf(stderr, "gcnbench: out of host memory for %lldx%lldx%lld\n", (long long)s.m,
                (long long)s.k, (long long)s.n);
        return 1;
    }
    uint64_t seed = c->run.seed * 0x9E3779B97F4A7C15ull;
    gcnbench_fill_uniform(op->hx, s.m * s.k, seed + (uint64_t)s.k);
    gcnbench_fill_uniform(op->hw, s.k * s.n, seed + (uint64_t)s.n + 1);
    for (int i = 0; i < op->n_sample; i++) { /* spread over all rows, the last one included */
        op->sample[i] = op->n_sample > 1 ? (int64_t)i * (s.m - 1) / (op->n_sample - 1) : 0;
        double *ref = op->ref + (int64_t)i * s.n, *mag = op->mag + (int64_t)i * s.n;
        for (int64_t kk = 0; kk < s.k; kk++) {
            double x = op->hx[op->sample[i] * s.k + kk];
            for (int64_t j = 0; j < s.n; j++) {
                double t = x * op->hw[kk * s.n + j];
                ref[j] += t;
                mag[j] += fabs(t);
            }
        }
    }
    return 0;
}

/* Largest |got - ref| / summed magnitude over the sampled rows of hy. */
static double max_error(const operands *op)
{
    double err = 0.0;
    for (int i = 0; i < op->n_sample; i++)
        for (int64_t j = 0; j < op->s.n; j++) {
            int64_t k = (int64_t)i * op->s.n + j;
            double got = op->hy[op->sample[i] * op->s.n + j];
            double m = op->mag[k] > 0 ? op->mag[k] : 1e-30;
            double e = isnan(got) ? INFINITY : fabs(got - op->ref[k]) / m;
            err = e > err ? e : err;
        }
    return err;
}

/* One timed run: Y = X W through the public op, Y released again. */
typedef struct mm_call {
    gcn_tensor *x, *w;
} mm_call;

static gcn_status mm_run(gcn_ctx *ctx, void *user)
{
    mm_call *c = user;
    gcn_tensor *y = NULL;
    gcn_status st = gcn_matmul(ctx, c->x, c->w, false, false, &y);
    gcn_tensor_free(&y);
    return st;
}

/* Uploads X and W, checks one product, then times reps of them (only when
 * the check passed). */
static int measure(const config *c, gcn_ctx *gpu, const precision *p, operands *op, result *r)
{
    const shape s = op->s;
    mm_call call = {0};
    gcn_tensor *y = NULL;
    float *ms = malloc((size_t)c->run.reps * sizeof *ms);
    gcn_status st = ms ? GCN_OK : GCN_ERR_NOMEM;
    if (st == GCN_OK)
        st = gcn_tensor_from_host(gpu, &call.x, op->hx, s.m, s.k);
    if (st == GCN_OK)
        st = gcn_tensor_from_host(gpu, &call.w, op->hw, s.k, s.n);
    if (st == GCN_OK)
        st = gcn_matmul(gpu, call.x, call.w, false, false, &y);
    if (st == GCN_OK)
        st = gcn_tensor_to_host(gpu, y, op->hy);
    gcn_tensor_free(&y);
    r->max_err = st == GCN_OK ? max_error(op) : INFINITY;
    r->valid = r->max_err <= p->tol;
    r->reps = c->run.reps;
    if (st == GCN_OK && r->valid)
        st = gcn_bench_time(gpu, mm_run, &call, c->run.warmup, c->run.reps, c->run.flush, ms);
    if (st == GCN_OK && r->valid)
        gcnbench_stats(ms, c->run.reps, &r->median_ms, &r->min_ms);
    else
        r->median_ms = r->min_ms = NAN;
    if (st != GCN_OK)
        fprintf(stderr, "gcnbench: matmul %lldx%lldx%lld %s: %s\n", (long long)s.m,
                (long long)s.k, (long long)s.n, p->name,
                ms ? gcn_last_error(gpu) : "out of host memory");
    gcn_tensor_free(&call.x);
    gcn_tensor_free(&call.w);
    free(ms);
    return st != GCN_OK;
}

static void report(const config *c, FILE *out, const char *device, const precision *p,
                   shape s, const result *r)
{
    double flop = 2.0 * (double)s.m * (double)s.k * (double)s.n;
    double tflops = flop / (r->median_ms * 1e9), best = flop / (r->min_ms * 1e9);
    char name[64];
    snprintf(name, sizeof name, "%lldx%lldx%lld", (long long)s.m, (long long)s.k,
             (long long)s.n);
    printf("%-22s %-5s %9.4f %9.4f %8.2f %8.2f %9.2e %s\n", name, p->name, r->median_ms,
           r->min_ms, tflops, best, r->max_err, r->valid ? "ok" : "INVALID");
    fflush(stdout);
    if (!out)
        return;
    fputc('{', out);
    gcnbench_json_str(out, "bench", "matmul");
    fprintf(out, ",\"m\":%lld,\"k\":%lld,\"n\":%lld,", (long long)s.m, (long long)s.k,
            (long long)s.n);
    gcnbench_json_str(out, "precision", p->name);
    gcnbench_json_num(out, "median_ms", r->median_ms);
    gcnbench_json_num(out, "min_ms", r->min_ms);
    gcnbench_json_num(out, "tflops", tflops);
    gcnbench_json_num(out, "tflops_best", best);
    gcnbench_json_num(out, "max_err", r->max_err);
    gcnbench_json_num(out, "tolerance", p->tol);
    fprintf(out, ",\"valid\":%s,\"reps\":%d,\"flush\":%s,", r->valid ? "true" : "false",
            r->reps, c->run.flush ? "true" : "false");
    gcnbench_json_str(out, "device", device);
    fputc(',', out);
    gcnbench_json_str(out, "tag", c->run.tag);
    fputs("}\n", out);
    fflush(out);
}

/* Every shape in both precisions; 1 on any failure or INVALID result. */
static int run(const config *c, gcn_ctx *const gpu[2], const char *device, FILE *out)
{
    int rc = 0;
    printf("%-22s %-5s %9s %9s %8s %8s %9s %s\n", "MxKxN", "prec", "median_ms", "min_ms",
           "TFLOP/s", "best", "max_err", "check");
    for (int si = 0; si < c->n_shapes; si++) {
        operands op;
        if (make_operands(c, c->shapes[si], &op)) {
            free_operands(&op);
            return 1;
        }
        for (int pi = 0; pi < 2; pi++) {
            result r = {0};
            if (measure(c, gpu[pi], &precisions[pi], &op, &r)) {
                free_operands(&op);
                return 1;
            }
            report(c, out, device, &precisions[pi], op.s, &r);
            rc |= !r.valid;
        }
        free_operands(&op);
    }
    return rc;
}

int gcnbench_matmul(int argc, char **argv)
{
    config c;
    int rc = parse_args(argc, argv, &c);
    if (rc)
        return rc;
    gcn_ctx *gpu[2] = {NULL, NULL};
    char device[128];
    FILE *out = NULL;
    for (int pi = 0; pi < 2 && !rc; pi++) {
        rc = gcnbench_open_gpu(&gpu[pi], c.run.seed, precisions[pi].tf32, device, sizeof device);
        if (!rc)
            gcn_set_grad_enabled(gpu[pi], false);
    }
    if (!rc)
        rc = gcnbench_open_out(c.run.out, &out);
    if (!rc)
        rc = run(&c, gpu, device, out);
    if (out)
        fclose(out);
    gcn_ctx_free(&gpu[0]);
    gcn_ctx_free(&gpu[1]);
    return rc;
}
