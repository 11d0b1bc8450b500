/* gcnbench: what its subcommands (spmm.c, matmul.c) share: the entry points
 * main.c dispatches to, and the helpers in main.c for arguments, timing
 * statistics, random operands, the GPU context and JSON-lines output. */
#ifndef GCNBENCH_BENCH_H
#define GCNBENCH_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gcn.h"
#include "kernels/spmm_bench.h"

#define GCNBENCH_MAX_LIST 64

/* The subcommands: argv[0] is the subcommand's name; exit status out. */
int gcnbench_spmm(int argc, char **argv);
int gcnbench_matmul(int argc, char **argv);

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

/* JSON members: "key":"escaped s" (null when s is NULL), and ,"key":v
 * (null when v is not finite). */
void gcnbench_json_str(FILE *f, const char *key, const char *s);
void gcnbench_json_num(FILE *f, const char *key, double v);

#endif
