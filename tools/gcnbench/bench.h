/* gcnbench: what its subcommands (spmm.c, matmul.c, select.c, train.c) share: the entry points
 * main.c dispatches to, and the helpers in main.c for arguments, timing
 * statistics, random operands, the GPU context and JSON-lines output. */
#ifndef GCNBENCH_BENCH_H
#define GCNBENCH_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gcn.h"
#include "timing.h"

#define GCNBENCH_MAX_LIST 64

/* The subcommands: argv[0] is the subcommand's name; exit status out. */
int gcnbench_spmm(int argc, char **argv);
int gcnbench_matmul(int argc, char **argv);
int gcnbench_select(int argc, char **argv);
int gcnbench_train(int argc, char **argv);

/* The options every subcommand takes: --reps N (timed runs), --warmup N,
 * --flush (L2 flushed before each run), --out FILE.jsonl, --tag TEXT and
 * --seed S. */
typedef struct gcnbench_run_opts {
    int reps, warmup;
    bool flush;
    const char *out, *tag;
    uint64_t seed;
} gcnbench_run_opts;

#define GCNBENCH_RUN_DEFAULTS {.reps = 50, .warmup = 5, .seed = 1}

/* When argv[*i] is one of those options, stores it (and its value, moving
 * *i past it) and returns 1; 0 when it is another option; -1 when its value
 * is missing. */
int gcnbench_run_opt(int argc, char **argv, int *i, gcnbench_run_opts *o);

/* The graphs and widths of the SpMM subcommands: --dataset SPEC (repeated),
 * --root DIR, --cache-dir DIR, --reorder SPEC and --feat F,F,...; the same
 * contract as gcnbench_run_opt, -1 also for a bad --feat list. */
typedef struct gcnbench_graph_opts {
    const char *datasets[GCNBENCH_MAX_LIST];
    int n_datasets;
    const char *root, *cache_dir, *reorder;
    int feats[GCNBENCH_MAX_LIST], n_feats;
} gcnbench_graph_opts;

/* Root ../shared/data, F = 16, 32, 64, 128, 256, the given reordering. */
gcnbench_graph_opts gcnbench_graph_defaults(const char *reorder);
int gcnbench_graph_opt(int argc, char **argv, int *i, gcnbench_graph_opts *o);

/* Whether the counts make sense: reps >= 1 and warmup >= 0. */
bool gcnbench_run_opts_valid(const gcnbench_run_opts *o);

/* Monotonic wall clock in milliseconds. */
double gcnbench_now_ms(void);

/* The contexts' log sink: one "gcnbench: ..." line on stderr. */
void gcnbench_log(gcn_log_level level, const char *msg, void *user);

/* A comma-separated list of integers in [1, 2^20] into v (at most
 * GCNBENCH_MAX_LIST); false on anything else. */
bool gcnbench_parse_ints(const char *s, int *v, int *n);

/* n floats uniform in [-1, 1) from the xorshift64 stream that starts at
 * state (0 is taken as 1). */
void gcnbench_fill_uniform(float *v, int64_t n, uint64_t state);

/* Sorts the n timings in place; their median and minimum. */
void gcnbench_stats(float *ms, int n, double *median, double *min);

/* A context on the GPU (TF32 matmuls when tf32) and the GPU's name into
 * device[size].  Without a usable GPU it says so in one line on stderr and
 * returns non-zero. */
int gcnbench_open_gpu(gcn_ctx **gpu, uint64_t seed, bool tf32, char *device, size_t size);

/* Rows of g checked against a float64 reference: up to max spread over all
 * rows, the longest row first; *n receives their number (caller frees;
 * NULL when out of memory). */
int32_t *gcnbench_sample_rows(const gcn_graph *g, int max, int *n);

/* ref and mag [n, feat]: those rows of A x in float64 and their summed
 * magnitudes sum |a x|, for x [n_cols, feat] on the host. */
void gcnbench_reference(const gcn_graph *g, const int32_t *rows, int n, const float *x, int feat,
                        double *ref, double *mag);

/* The largest |y - ref| / mag over the sampled rows of y [n_rows, feat]
 * (infinite for NaN). */
double gcnbench_max_error(const float *y, const int32_t *rows, int n, int feat, const double *ref,
                          const double *mag);

/* A CPU context (host) and an FP32 GPU context (gpu) with the same seed,
 * for the SpMM subcommands; non-zero, with nothing left open, when either
 * cannot be made. */
int gcnbench_open_pair(uint64_t seed, gcn_ctx **host, gcn_ctx **gpu, char *device, size_t size);

/* *out = path opened for appending JSON lines (NULL when path is NULL);
 * non-zero, after saying why on stderr, when it cannot be opened. */
int gcnbench_open_out(const char *path, FILE **out);

/* JSON members: "key":"escaped s" (null when s is NULL), and ,"key":v
 * (null when v is not finite). */
void gcnbench_json_str(FILE *f, const char *key, const char *s);
void gcnbench_json_num(FILE *f, const char *key, double v);

#endif
