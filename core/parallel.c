/* The CPU backend's thread counts, fixed reduction chunks and scratch
 * memory (parallel.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parallel.h"

static int affinity_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN); /* more CPUs than a cpu_set_t holds */
    return n > 0 ? (int)n : 1;
}

/* The CPUs a cgroup v2 cpu.max file allows ("QUOTA PERIOD", rounded up),
 * 0 when it is absent or says "max". */
static int quota_of(const char *dir)
{
    char path[1024], quota[32];
    long long period = 0;
    snprintf(path, sizeof path, "%s/cpu.max", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int fields = fscanf(f, "%31s %lld", quota, &period);
    fclose(f);
    long long q = fields == 2 && strcmp(quota, "max") ? atoll(quota) : 0;
    return q > 0 && period > 0 ? (int)((q + period - 1) / period) : 0;
}

/* The smallest quota of this process's cgroup (the "0::PATH" line of
 * /proc/self/cgroup) and the cgroups above it; 0 when none is set. */
static int cgroup_quota(void)
{
    const char root[] = "/sys/fs/cgroup";
    char dir[1024], line[900] = "";
    FILE *f = fopen("/proc/self/cgroup", "r");
    while (f && fgets(line, sizeof line, f) && strncmp(line, "0::", 3))
        line[0] = '\0';
    if (f)
        fclose(f);
    line[strcspn(line, "\n")] = '\0';
    snprintf(dir, sizeof dir, "%s%s", root, strncmp(line, "0::", 3) ? "" : line + 3);
    int best = 0;
    for (;;) {
        size_t len = strlen(dir);
        while (len > sizeof root - 1 && dir[len - 1] == '/')
            dir[--len] = '\0';
        int q = quota_of(dir);
        if (q > 0 && (best == 0 || q < best))
            best = q;
        char *slash = strrchr(dir, '/');
        if (len <= sizeof root - 1 || !slash)
            return best;
        *slash = '\0';
    }
}

int gcn_cpu_count(void)
{
    int n = affinity_count(), quota = cgroup_quota();
    if (quota > 0 && quota < n)
        n = quota;
    return n > 0 ? n : 1;
}

int gcn_par_threads(const gcn_ctx *ctx, int64_t work)
{
    int64_t t = work / GCN_PAR_THREAD_GRAIN;
    if (t <= 1 || ctx->threads <= 1)
        return 1;
    return t < ctx->threads ? (int)t : ctx->threads;
}

int32_t gcn_par_row_start(const int32_t *row_ptr, int32_t n_rows, int64_t nnz, int p,
                          int n_parts)
{
    int64_t target = (nnz + n_rows) * p / n_parts;
    int32_t lo = 0, hi = n_rows;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if ((int64_t)row_ptr[mid] + mid < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int gcn_par_chunks(int64_t n, int64_t item_work)
{
    int64_t c = n * (item_work > 0 ? item_work : 1) / GCN_PAR_GRAIN;
    if (c > n)
        c = n;
    if (c > GCN_PAR_CHUNKS)
        c = GCN_PAR_CHUNKS;
    return c > 1 ? (int)c : 1;
}

void gcn_par_add_rows(const void *user, int64_t lo, int64_t hi, double *acc)
{
    const gcn_par_rows *u = user;
    for (int64_t i = lo; i < hi; i++)
        GCN_SIMD
        for (int64_t j = 0; j < u->cols; j++)
            acc[j] += u->x[i * u->cols + j];
}

void gcn_par_sums(const gcn_ctx *ctx, int64_t n, int64_t width, int64_t item_work,
                  gcn_par_sum_fn *fn, const void *user, double *part, double *out)
{
    int chunks = gcn_par_chunks(n, item_work * width);
    int nt = gcn_par_threads(ctx, n * item_work * width);
    GCN_PAR_FOR(nt < chunks ? nt : chunks)
    for (int c = 0; c < chunks; c++) {
        double *acc = part + (int64_t)c * width;
        for (int64_t j = 0; j < width; j++)
            acc[j] = 0.0;
        fn(user, gcn_par_chunk_start(c, chunks, n), gcn_par_chunk_start(c + 1, chunks, n), acc);
    }
    for (int64_t j = 0; j < width; j++)
        out[j] = 0.0;
    for (int c = 0; c < chunks; c++)
        for (int64_t j = 0; j < width; j++)
            out[j] += part[(int64_t)c * width + j];
}

gcn_status gcn_cpu_scratch(gcn_ctx *ctx, size_t bytes, void **p)
{
    if (bytes > ctx->scratch_size) {
        size_t size = (bytes + 4095) / 4096 * 4096;
        void *q = aligned_alloc(64, size);
        if (!q)
            return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for %zu bytes of scratch",
                             bytes);
        free(ctx->scratch);
        ctx->scratch = q;
        ctx->scratch_size = size;
    }
    *p = ctx->scratch;
    return GCN_OK;
}

void gcn_cpu_scratch_free(gcn_ctx *ctx)
{
    free(ctx->scratch);
    ctx->scratch = NULL;
    ctx->scratch_size = 0;
}

int gcn_blas_threads_set(int n)
{
#ifdef _OPENMP
    int previous = omp_get_max_threads();
    if (previous != n)
        omp_set_num_threads(n);
    return previous;
#else
    (void)n;
    return 1;
#endif
}

void gcn_blas_threads_restore(int previous)
{
#ifdef _OPENMP
    if (omp_get_max_threads() != previous)
        omp_set_num_threads(previous);
#else
    (void)previous;
#endif
}
