/* Dense products on the CPU: OpenBLAS's sgemm on the context's threads, and
 * a path of its own for a left operand that is mostly zeros (bag-of-words
 * input features, and their dropout), which skips the zeros instead of
 * multiplying them: on CiteSeer's features (99% zeros) it is several times
 * faster than sgemm, which packs and multiplies every element.  tests/
 * checks both against a double-precision reference. */
#include <cblas.h>
#include <limits.h>
#include <stdatomic.h>
#include <strings.h>

#include "cpu.h"
#include "core/parallel.h"

/* OpenBLAS chooses its kernels once, when it loads, from the CPU's model.
 * A model it does not know (virtual machines often hide it) gets the
 * kernels of a core without AVX: on the GPU host's AVX-512 CPU, OpenBLAS
 * took Prescott's, and arxiv's GCN epoch ran 1.8x slower at 2 threads than
 * with OPENBLAS_CORETYPE=SkylakeX (docs/perf.md).  Cores older than AVX,
 * by OpenBLAS's names: */
static const char *const pre_avx_cores[] = {"Katmai", "Coppermine", "Northwood", "Prescott",
                                            "Banias", "Atom", "Core2", "Penryn", "Dunnington",
                                            "Nehalem", "Opteron", "Opteron_SSE3", "Barcelona"};

const char *gcn_cpu_blas_coretype_advice(const char *corename, bool avx2, bool avx512f)
{
    if (!corename || !avx2)
        return NULL;
    for (size_t i = 0; i < sizeof pre_avx_cores / sizeof *pre_avx_cores; i++)
        if (strcasecmp(corename, pre_avx_cores[i]) == 0)
            return avx512f ? "SkylakeX" : "Haswell";
    return NULL;
}

/* Says once a process, at the first product OpenBLAS runs (not when a
 * context is made: a run that stops at bad input has no use for it), when
 * gcn_cpu_blas_coretype_advice has advice for its kernels on this CPU. */
static void check_blas_kernels(gcn_ctx *ctx)
{
    static atomic_flag checked = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&checked))
        return;
#if defined(__x86_64__) || defined(__i386__)
    const char *core = openblas_get_corename();
    const char *advice = gcn_cpu_blas_coretype_advice(core, __builtin_cpu_supports("avx2"),
                                                      __builtin_cpu_supports("avx512f"));
    if (advice)
        gcn_log(ctx, GCN_LOG_WARN, "OpenBLAS chose its %s kernels, which do not use this CPU's "
                "AVX: it does not know the CPU's model; OPENBLAS_CORETYPE=%s in the environment "
                "gives it the kernels that do (arxiv's epoch 1.8x faster on an AVX-512 CPU)",
                core, advice);
#else
    (void)ctx;
#endif
}

/* Multiply-adds are cheaper than the element-wise work
 * GCN_PAR_THREAD_GRAIN counts: a thread of OpenBLAS gets GEMM_GRAIN times
 * as many, about a million.  OpenBLAS would itself split a product of a few
 * hundred thousand (Cora's second layer) over every thread, which costs
 * more than it saves. */
#define GEMM_GRAIN 4

/* Elements of A sampled to tell a sparse operand, and the share of
 * non-zeros below which it is one. */
#define SAMPLES 1024
#define SPARSE_SHARE 16 /* at most 1 in 16 non-zero */

/* Whether A (rows x cols, rows lda apart) looks mostly zeros, from SAMPLES
 * elements spread evenly over it: a rule on the data alone, so every run
 * takes the same path. */
static bool mostly_zeros(const float *a, int64_t rows, int64_t cols, int64_t lda)
{
    int64_t n = rows * cols, step = n / SAMPLES > 0 ? n / SAMPLES : 1, samples = 0, nonzero = 0;
    for (int64_t i = 0; i < n; i += step, samples++)
        nonzero += a[(i / cols) * lda + i % cols] != 0.0f;
    return nonzero * SPARSE_SHARE < samples;
}

/* c[i, :] += alpha a[i, l] b[l, :] over the non-zero a[i, l], l in order:
 * each thread takes whole rows of c. */
static void sparse_nn(gcn_ctx *ctx, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                      int64_t ldc)
{
    GCN_PAR_FOR(gcn_par_threads(ctx, m * k))
    for (int64_t i = 0; i < m; i++) {
        float *restrict ci = c + i * ldc;
        for (int64_t l = 0; l < k; l++) {
            if (l % 8 == 0 && l + 8 <= k && gcn_cpu_zeros8(a + i * lda + l)) {
                l += 7;
                continue;
            }
            float av = alpha * a[i * lda + l];
            if (av == 0.0f)
                continue;
            const float *restrict bl = b + l * ldb;
            GCN_SIMD
            for (int64_t j = 0; j < n; j++)
                ci[j] += av * bl[j];
        }
    }
}

/* a transposed: c[i, :] += alpha a[l, i] b[l, :] over the non-zero a[l, i],
 * l in order: each thread takes a range of c's rows and walks every row of
 * a over its columns of that range. */
static void sparse_tn(gcn_ctx *ctx, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                      int64_t ldc)
{
#pragma omp parallel num_threads(gcn_par_threads(ctx, m * k))
    {
        int64_t t = gcn_par_thread(), team = gcn_par_team();
        int64_t lo = m * t / team, hi = m * (t + 1) / team;
        for (int64_t l = 0; l < k; l++) {
            const float *al = a + l * lda, *restrict bl = b + l * ldb;
            for (int64_t i = lo; i < hi; i++) {
                if ((i - lo) % 8 == 0 && i + 8 <= hi && gcn_cpu_zeros8(al + i)) {
                    i += 7;
                    continue;
                }
                float av = alpha * al[i];
                if (av == 0.0f)
                    continue;
                float *restrict ci = c + i * ldc;
                GCN_SIMD
                for (int64_t j = 0; j < n; j++)
                    ci[j] += av * bl[j];
            }
        }
    }
}

gcn_status gcn_cpu_gemm(gcn_ctx *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n,
                        int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                        int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (m == 0 || n == 0)
        return GCN_OK;
    bool sparse = k > 0 && !trans_b && mostly_zeros(a, trans_a ? k : m, trans_a ? m : k, lda);
    if (k == 0 || sparse) {
        GCN_PAR_FOR(gcn_par_threads(ctx, m * n))
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        if (sparse && trans_a)
            sparse_tn(ctx, m, n, k, alpha, a, lda, b, ldb, c, ldc);
        else if (sparse)
            sparse_nn(ctx, m, n, k, alpha, a, lda, b, ldb, c, ldc);
        return GCN_OK;
    }
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
        ldc > INT_MAX)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "gemm: %lld x %lld x %lld exceeds BLAS's 32-bit sizes", (long long)m,
                         (long long)n, (long long)k);
    /* BLAS's bounds (it would print and return rather than fail). */
    GCN_ARG(ctx, lda >= (trans_a ? m : k) && ldb >= (trans_b ? k : n) && ldc >= n);
    check_blas_kernels(ctx);
    int previous = gcn_blas_threads_set(gcn_par_threads(ctx, m * n * k / GEMM_GRAIN));
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, a, (int)lda,
                b, (int)ldb, beta, c, (int)ldc);
    gcn_blas_threads_restore(previous);
    return GCN_OK;
}
