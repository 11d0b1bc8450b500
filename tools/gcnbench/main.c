/* gcnbench: kernel and training benchmarks (`gcnbench spmm`, `gcnbench
 * matmul`, `gcnbench select`, `gcnbench train`; see docs/perf.md).  The
 * dispatch to the subcommands and the helpers they share (bench.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

double gcnbench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void gcnbench_log(gcn_log_level level, const char *msg, void *user)
{
    (void)user;
    fprintf(stderr, "gcnbench: %s%s\n", level == GCN_LOG_ERROR ? "error: " : "", msg);
}

bool gcnbench_parse_ints(const char *s, int *v, int *n)
{
    char *end;
    for (*n = 0; *s && *n < GCNBENCH_MAX_LIST; s = *end ? end + 1 : end) {
        long x = strtol(s, &end, 10);
        if (end == s || x < 1 || x > 1 << 20 || (*end && *end != ','))
            return false;
        v[(*n)++] = (int)x;
    }
    return *n > 0 && !*s;
}

int gcnbench_run_opt(int argc, char **argv, int *i, gcnbench_run_opts *o)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--flush")) {
        o->flush = true;
        return 1;
    }
    if (strcmp(a, "--reps") && strcmp(a, "--warmup") && strcmp(a, "--out") &&
        strcmp(a, "--tag") && strcmp(a, "--seed"))
        return 0;
    if (*i + 1 >= argc)
        return -1;
    const char *v = argv[++*i];
    if (!strcmp(a, "--reps"))
        o->reps = atoi(v);
    else if (!strcmp(a, "--warmup"))
        o->warmup = atoi(v);
    else if (!strcmp(a, "--out"))
        o->out = v;
    else if (!strcmp(a, "--tag"))
        o->tag = v;
    else
        o->seed = strtoull(v, NULL, 10);
    return 1;
}

gcnbench_graph_opts gcnbench_graph_defaults(const char *reorder)
{
    gcnbench_graph_opts o = {.root = "../shared/data", .reorder = reorder};
    gcnbench_parse_ints("16,32,64,128,256", o.feats, &o.n_feats);
    return o;
}

int gcnbench_graph_opt(int argc, char **argv, int *i, gcnbench_graph_opts *o)
{
    const char *a = argv[*i];
    if (strcmp(a, "--dataset") && strcmp(a, "--root") && strcmp(a, "--cache-dir") &&
        strcmp(a, "--reorder") && strcmp(a, "--feat"))
        return 0;
    if (*i + 1 >= argc)
        return -1;
    const char *v = argv[++*i];
    if (!strcmp(a, "--dataset") && o->n_datasets < GCNBENCH_MAX_LIST)
        o->datasets[o->n_datasets++] = v;
    else if (!strcmp(a, "--root"))
        o->root = v;
    else if (!strcmp(a, "--cache-dir"))
        o->cache_dir = v;
    else if (!strcmp(a, "--reorder"))
        o->reorder = v;
    else if (!strcmp(a, "--dataset") || !gcnbench_parse_ints(v, o->feats, &o->n_feats))
        return -1;
    return 1;
}

bool gcnbench_run_opts_valid(const gcnbench_run_opts *o)
{
    return o->reps >= 1 && o->warmup >= 0;
}

void gcnbench_fill_uniform(float *v, int64_t n, uint64_t state)
{
    uint64_t s = state ? state : 1;
    for (int64_t i = 0; i < n; i++) { /* xorshift64: uniform in [-1, 1) */
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        v[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

void gcnbench_stats(float *ms, int n, double *median, double *min)
{
    qsort(ms, (size_t)n, sizeof *ms, cmp_float);
    *median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    *min = ms[0];
}

int gcnbench_open_gpu(gcn_ctx **gpu, uint64_t seed, bool tf32, char *device, size_t size)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.log_fn = gcnbench_log;
    o.seed = seed;
    o.tf32 = tf32;
    o.device = GCN_DEVICE_CUDA;
    gcn_status st = gcn_ctx_create(gpu, &o);
    int sms;
    size_t l2;
    if (st != GCN_OK || gcn_spmm_device_info(*gpu, device, size, &sms, &l2)) {
        fprintf(stderr, "gcnbench: no usable CUDA device (%s)\n", gcn_status_str(st));
        gcn_ctx_free(gpu);
        return 1;
    }
    fprintf(stderr, "gcnbench: %s, %d SMs, %.0f MB L2, %s matmuls\n", device, sms,
            l2 / 1048576.0, gcn_ctx_tf32(*gpu) ? "TF32" : "FP32");
    return 0;
}

int32_t *gcnbench_sample_rows(const gcn_graph *g, int max, int *n)
{
    int32_t rows = g->n_nodes, top = 0;
    *n = rows < max ? rows : max;
    int32_t *sample = malloc(((size_t)*n + 1) * sizeof *sample);
    if (!sample)
        return NULL;
    for (int32_t i = 0; i < rows; i++)
        if (g->row_ptr[i + 1] - g->row_ptr[i] > g->row_ptr[top + 1] - g->row_ptr[top])
            top = i;
    for (int i = 0; i < *n; i++) /* spread over all rows, the longest row first */
        sample[i] = i == 0 ? top : (int32_t)((int64_t)i * rows / *n);
    return sample;
}

void gcnbench_reference(const gcn_graph *g, const int32_t *rows, int n, const float *x, int feat,
                        double *ref, double *mag)
{
    memset(ref, 0, (size_t)n * (size_t)feat * sizeof *ref);
    memset(mag, 0, (size_t)n * (size_t)feat * sizeof *mag);
    for (int i = 0; i < n; i++)
        for (int32_t e = g->row_ptr[rows[i]]; e < g->row_ptr[rows[i] + 1]; e++)
            for (int j = 0; j < feat; j++) {
                double t = (double)g->values[e] * x[(int64_t)g->col_idx[e] * feat + j];
                ref[(int64_t)i * feat + j] += t;
                mag[(int64_t)i * feat + j] += fabs(t);
            }
}

double gcnbench_max_error(const float *y, const int32_t *rows, int n, int feat, const double *ref,
                          const double *mag)
{
    double worst = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < feat; j++) {
            int64_t k = (int64_t)i * feat + j;
            double got = y[(int64_t)rows[i] * feat + j];
            double e = isnan(got) ? INFINITY : fabs(got - ref[k]) / (mag[k] > 0 ? mag[k] : 1e-30);
            worst = e > worst ? e : worst;
        }
    return worst;
}

int gcnbench_open_pair(uint64_t seed, gcn_ctx **host, gcn_ctx **gpu, char *device, size_t size)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.log_fn = gcnbench_log;
    o.seed = seed;
    o.device = GCN_DEVICE_CPU;
    if (gcn_ctx_create(host, &o) != GCN_OK)
        return 1;
    if (gcnbench_open_gpu(gpu, seed, false, device, size)) {
        gcn_ctx_free(host);
        return 1;
    }
    return 0;
}

int gcnbench_open_out(const char *path, FILE **out)
{
    *out = NULL;
    if (path && !(*out = fopen(path, "a"))) {
        perror(path);
        return 1;
    }
    return 0;
}

void gcnbench_json_str(FILE *f, const char *key, const char *s)
{
    fprintf(f, "\"%s\":", key);
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (; *s; s++)
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    fputc('"', f);
}

void gcnbench_json_num(FILE *f, const char *key, double v)
{
    if (isfinite(v))
        fprintf(f, ",\"%s\":%.6g", key, v);
    else
        fprintf(f, ",\"%s\":null", key);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "spmm"))
        return gcnbench_spmm(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "matmul"))
        return gcnbench_matmul(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "select"))
        return gcnbench_select(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "train"))
        return gcnbench_train(argc - 1, argv + 1);
    fprintf(stderr, "usage: gcnbench spmm|matmul|select|train [OPTIONS]   (gcnbench spmm --help, "
                    "gcnbench matmul --help, gcnbench select --help, gcnbench train --help)\n");
    return 2;
}
