/* The CPU backend's threads (OpenMP): how many a context runs, when a loop
 * is worth splitting across them, and the fixed chunks of reductions,
 * whose number and bounds depend on the problem's size only, so that a
 * result is the same for any thread count. */
#ifndef GCN_PARALLEL_H
#define GCN_PARALLEL_H

#ifdef _OPENMP
#include <omp.h>
#endif

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Work (elements touched, or multiply-adds) a thread must get before a loop
 * is split across threads: about 100 microseconds.  Waking a team and
 * joining it costs tens of microseconds, and on a machine whose every CPU
 * is in the team a thread the system delays holds up the join, so loops of
 * small graphs such as Cora take few threads or one: with a grain of 32768
 * Cora's epoch took twice as long on 16 threads of a 16-CPU host as on 2
 * (docs/perf.md). */
#define GCN_PAR_THREAD_GRAIN 262144

/* The work of a reduction's chunk (gcn_par_chunks): fixed, since the chunks
 * decide the order of its sums. */
#define GCN_PAR_GRAIN 32768

/* Reductions split their items into at most this many chunks. */
#define GCN_PAR_CHUNKS 64

/* The CPUs this process may run on: its affinity mask, capped by the CPU
 * quota of its cgroup and the cgroups above it (cgroup v2 cpu.max); at
 * least 1. */
int gcn_cpu_count(void);

/* Threads for a loop of `work` units: the context's count, or fewer so that
 * each gets GCN_PAR_THREAD_GRAIN at least; 1 at least. */
int gcn_par_threads(const gcn_ctx *ctx, int64_t work);

/* The chunks of a reduction over n items of `item_work` units each: enough
 * that each holds about GCN_PAR_GRAIN units, at most GCN_PAR_CHUNKS, at
 * least 1.  Chunk c holds items [gcn_par_chunk_start(c), ..(c + 1)). */
int gcn_par_chunks(int64_t n, int64_t item_work);

static inline int64_t gcn_par_chunk_start(int64_t c, int n_chunks, int64_t n)
{
    return n * c / n_chunks;
}

/* The first row of part p of n_parts of a CSR matrix's rows (row_ptr of
 * n_rows + 1 entries, nnz of them stored): where the entries and rows
 * before it, row_ptr[i] + i, reach p / n_parts of their total, so that
 * threads taking parts p get equal work however the entries lie. */
int32_t gcn_par_row_start(const int32_t *row_ptr, int32_t n_rows, int64_t nnz, int p,
                          int n_parts);

/* Runs the next `for` loop on nt threads, iterations split into equal
 * contiguous ranges (OpenMP's static schedule). */
#define GCN_PRAGMA(x) _Pragma(#x)
#define GCN_PAR_FOR(nt) GCN_PRAGMA(omp parallel for num_threads(nt) schedule(static))

/* Asks the compiler to vectorise the next loop (its iterations are
 * independent, or a reduction the pragma names); without it -O2 leaves
 * most loops scalar. */
#define GCN_SIMD GCN_PRAGMA(omp simd)

/* GCN_PAR_FOR and GCN_SIMD on one loop. */
#define GCN_PAR_FOR_SIMD(nt) \
    GCN_PRAGMA(omp parallel for simd num_threads(nt) schedule(static))

/* Inside a parallel region: this thread's number and the team's size. */
static inline int gcn_par_thread(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static inline int gcn_par_team(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

/* Adds the terms of items [lo, hi) into acc[0, width), which starts at 0. */
typedef void gcn_par_sum_fn(const void *user, int64_t lo, int64_t hi, double *acc);

/* Column sums over n items (rows) of `width` terms of item_work units each,
 * in a fixed order: the items are cut into gcn_par_chunks(n, item_work *
 * width) chunks, fn sums each, and out[j] is the sum of the chunks' acc[j]
 * in chunk order, so it does not depend on the thread count.  part holds
 * GCN_PAR_CHUNKS * width doubles (the caller's scratch). */
void gcn_par_sums(const gcn_ctx *ctx, int64_t n, int64_t width, int64_t item_work,
                  gcn_par_sum_fn *fn, const void *user, double *part, double *out);

/* A row-major [n, cols] matrix for gcn_par_add_rows. */
typedef struct gcn_par_rows {
    int64_t cols;
    const float *x;
} gcn_par_rows;

/* The gcn_par_sum_fn of column sums: acc[j] += x[i, j] for rows [lo, hi)
 * of the gcn_par_rows `user`. */
void gcn_par_add_rows(const void *user, int64_t lo, int64_t hi, double *acc);

/* Host scratch memory of the context, for a CPU op's temporaries (partial
 * sums): grown when a call needs more, kept for the next, so the steady
 * state allocates nothing.  Valid until the next call; aligned to 64 bytes. */
gcn_status gcn_cpu_scratch(gcn_ctx *ctx, size_t bytes, void **p);

/* Releases the scratch memory (gcn_ctx_free). */
void gcn_cpu_scratch_free(gcn_ctx *ctx);

/* Runs OpenBLAS on n threads for the calling thread's next products:
 * OpenBLAS's OpenMP build takes its count from omp_get_max_threads().
 * Returns the count it replaced, for gcn_blas_threads_restore. */
int gcn_blas_threads_set(int n);
void gcn_blas_threads_restore(int previous);

#ifdef __cplusplus
}
#endif
#endif
