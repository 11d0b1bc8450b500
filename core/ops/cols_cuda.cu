/* Per-column reductions on the GPU: col_sum and batch normalisation (train,
 * eval, and both backwards). */
#include "cols.cuh"

/* Sums accumulate in double like the CPU reference, in a fixed order
 * (per-chunk partials, then their sum in chunk order), so results are
 * deterministic and use no atomics.  Element-wise arithmetic mirrors
 * core/ops/nn_cpu.c with _rn intrinsics (no fused multiply-add). */

#define ACC(p, acc) ((acc) ? (p) : 0.0f)

/* ---- the column reduction --------------------------------------------------- */

/* A per-element f(r, c, v) as tile_kernel's one-column functor. */
template <int N, class F>
struct per_element {
    F f;
    __device__ void operator()(int64_t r, int64_t c, double (*acc)[1]) const
    {
        double v[N];
        f(r, c, v);
        for (int k = 0; k < N; k++)
            acc[k][0] += v[k];
    }
};

/* fin(c, sum over rows r of f(r, c)) for every column c. */
template <int N, class F, class Fin>
static gcn_status col_reduce(gcn_ctx *ctx, gcn_cuda_state *cs, int64_t rows, int64_t cols, F f,
                             Fin fin)
{
    if (cols <= 0)
        return GCN_OK;
    tiling t = tile_grid(rows, cols, 1);
    size_t bytes = (size_t)(t.n_chunks * cols * N) * sizeof(double);
    double *partial = NULL;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&partial, bytes));
    gcn_status st = reduce_tiles<1, N>(ctx, cs, t, rows, cols, per_element<N, F>{f}, partial,
                                       fin, "col_partial");
    gcn_mem_release(ctx, partial, bytes);
    return st;
}

/* ---- col_sum ----------------------------------------------------------------- */

struct x_value {
    const float *x;
    int64_t cols;
    __device__ void operator()(int64_t r, int64_t c, double *v) const { v[0] = x[r * cols + c]; }
};

struct col_sum_out {
    float *out;
    bool acc;
    __device__ void operator()(int64_t c, const double *t) const
    {
        out[c] = (float)t[0] + ACC(out[c], acc);
    }
};

gcn_status gcn_cuda_col_sum(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x, float *out,
                            bool acc)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    return col_reduce<1>(ctx, cs, rows, cols, x_value{x, cols}, col_sum_out{out, acc});
}

/* ---- batch norm, training ------------------------------------------------------ */

/* stats[c] = mean, stats[cols + c] = invstd (doubles, as the CPU keeps them) */
struct bn_mean_out {
    double *stats;
    int64_t rows;
    __device__ void operator()(int64_t c, const double *t) const
    {
        stats[c] = t[0] / (double)rows;
    }
};

struct bn_sq_dev {
    const float *x;
    const double *stats;
    int64_t cols;
    __device__ void operator()(int64_t r, int64_t c, double *v) const
    {
        double d = __dsub_rn(x[r * cols + c], stats[c]);
        v[0] = __dmul_rn(d, d);
    }
};

/* (1 - m) r + m s in double, as the CPU updates running statistics. */
__device__ static float running_update(float r, float momentum, double s)
{
    return (float)__dadd_rn(__dmul_rn(1.0 - (double)momentum, (double)r),
                            __dmul_rn((double)momentum, s));
}

struct bn_var_out {
    double *stats;
    int64_t rows, cols;
    float *save_mean, *save_invstd, *running_mean, *running_var;
    float momentum, eps;
    __device__ void operator()(int64_t c, const double *t) const
    {
        double mean = stats[c];
        double unbiased = t[0] / (double)(rows - 1);
        double var = t[0] / (double)rows;
        double invstd = 1.0 / sqrt(var + (double)eps);
        stats[cols + c] = invstd;
        save_mean[c] = (float)mean;
        save_invstd[c] = (float)invstd;
        running_mean[c] = running_update(running_mean[c], momentum, mean);
        running_var[c] = running_update(running_var[c], momentum, unbiased);
    }
};

/* One thread per element i (grid-stride), column i % cols. */
__global__ void bn_train_normalise_kernel(int64_t n, int64_t cols, const float *x,
                                          const double *stats, const float *gamma,
                                          const float *beta, float *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t c = i % cols;
        double t = __dmul_rn(__dmul_rn(__dsub_rn(x[i], stats[c]), stats[cols + c]), gamma[c]);
        y[i] = (float)__dadd_rn(t, beta[c]);
    }
}

gcn_status gcn_cuda_batchnorm_train(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                    const float *gamma, const float *beta, float *y,
                                    float *save_mean, float *save_invstd, float *running_mean,
                                    float *running_var, float momentum, float eps)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (cols <= 0)
        return GCN_OK;
    size_t bytes = 2 * (size_t)cols * sizeof(double);
    double *stats = NULL;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&stats, bytes));
    gcn_status st;
    GCN_CHECK(col_reduce<1>(ctx, cs, rows, cols, x_value{x, cols}, bn_mean_out{stats, rows}));
    GCN_CHECK(col_reduce<1>(ctx, cs, rows, cols, bn_sq_dev{x, stats, cols},
                            bn_var_out{stats, rows, cols, save_mean, save_invstd, running_mean,
                                       running_var, momentum, eps}));
    if (rows > 0) {
        bn_train_normalise_kernel<<<gcn_blocks(rows * cols, GCN_THREADS), GCN_THREADS, 0,
                                    cs->stream>>>(rows * cols, cols, x, stats, gamma, beta, y);
        GCN_CHECK(GCN_LAUNCHED_ST("bn_train_normalise_kernel"));
    }
cleanup:
    gcn_mem_release(ctx, stats, bytes);
    return st;
}

/* ---- batch norm, training backward ------------------------------------------------ */

struct bn_grad_terms {
    const float *x, *dy, *save_mean, *save_invstd;
    int64_t cols;
    __device__ void operator()(int64_t r, int64_t c, double *v) const
    {
        double xhat = __dmul_rn(__dsub_rn(x[r * cols + c], save_mean[c]), save_invstd[c]);
        v[0] = dy[r * cols + c];
        v[1] = __dmul_rn(dy[r * cols + c], xhat);
    }
};

/* sums[c] = sum dy, sums[cols + c] = sum dy xhat */
struct bn_grad_out {
    double *sums;
    int64_t cols;
    float *dgamma, *dbeta;
    bool acc_gamma, acc_beta;
    __device__ void operator()(int64_t c, const double *t) const
    {
        sums[c] = t[0];
        sums[cols + c] = t[1];
        if (dgamma)
            dgamma[c] = (float)t[1] + ACC(dgamma[c], acc_gamma);
        if (dbeta)
            dbeta[c] = (float)t[0] + ACC(dbeta[c], acc_beta);
    }
};

/* One thread per element i (grid-stride), column i % cols:
 * dx = gamma invstd / n (n dy - sum dy - xhat sum(dy xhat)). */
__global__ void bn_backward_dx_kernel(int64_t n, int64_t rows, int64_t cols, const float *x,
                                      const float *gamma, const float *save_mean,
                                      const float *save_invstd, const float *dy,
                                      const double *sums, float *dx, bool acc)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t c = i % cols;
        double invstd = save_invstd[c];
        double k = __dmul_rn(gamma[c], invstd) / (double)rows;
        double xhat = __dmul_rn(__dsub_rn(x[i], save_mean[c]), invstd);
        double inner = __dsub_rn(__dsub_rn(__dmul_rn((double)rows, dy[i]), sums[c]),
                                 __dmul_rn(xhat, sums[cols + c]));
        dx[i] = (float)__dmul_rn(k, inner) + ACC(dx[i], acc);
    }
}

gcn_status gcn_cuda_batchnorm_backward(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                       const float *gamma, const float *save_mean,
                                       const float *save_invstd, const float *dy, float *dx,
                                       float *dgamma, float *dbeta, bool acc_x, bool acc_gamma,
                                       bool acc_beta)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (cols <= 0 || (!dx && !dgamma && !dbeta))
        return GCN_OK;
    size_t bytes = 2 * (size_t)cols * sizeof(double);
    double *sums = NULL;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&sums, bytes));
    gcn_status st;
    GCN_CHECK(col_reduce<2>(ctx, cs, rows, cols, bn_grad_terms{x, dy, save_mean, save_invstd, cols},
                            bn_grad_out{sums, cols, dgamma, dbeta, acc_gamma, acc_beta}));
    if (dx && rows > 0) {
        bn_backward_dx_kernel<<<gcn_blocks(rows * cols, GCN_THREADS), GCN_THREADS, 0,
                                cs->stream>>>(rows * cols, rows, cols, x, gamma, save_mean,
                                              save_invstd, dy, sums, dx, acc_x);
        GCN_CHECK(GCN_LAUNCHED_ST("bn_backward_dx_kernel"));
    }
cleanup:
    gcn_mem_release(ctx, sums, bytes);
    return st;
}

/* ---- batch norm, evaluation and its backward ------------------------------------------ */

__device__ static double eval_invstd(const float *var, int64_t c, float eps)
{
    return 1.0 / sqrt(__dadd_rn((double)var[c], (double)eps));
}

/* One thread per element i (grid-stride), column i % cols. */
__global__ void bn_eval_kernel(int64_t n, int64_t cols, const float *x, const float *gamma,
                               const float *beta, const float *mean, const float *var, float eps,
                               float *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t c = i % cols;
        float d = x[i] - mean[c];
        double t = __dmul_rn(__dmul_rn(d, eval_invstd(var, c, eps)), gamma[c]);
        y[i] = (float)__dadd_rn(t, beta[c]);
    }
}

gcn_status gcn_cuda_batchnorm_eval(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                   const float *gamma, const float *beta, const float *mean,
                                   const float *var, float eps, float *y)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    int64_t n = rows * cols;
    if (n <= 0)
        return GCN_OK;
    bn_eval_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(
        n, cols, x, gamma, beta, mean, var, eps, y);
    GCN_LAUNCHED("bn_eval_kernel");
    return GCN_OK;
}

struct bn_eval_grad_terms {
    const float *x, *dy, *mean, *var;
    float eps;
    int64_t cols;
    __device__ void operator()(int64_t r, int64_t c, double *v) const
    {
        double g = dy[r * cols + c];
        float d = x[r * cols + c] - mean[c];
        v[0] = g;
        v[1] = __dmul_rn(__dmul_rn(g, d), eval_invstd(var, c, eps));
    }
};

struct bn_eval_grad_out {
    float *dgamma, *dbeta;
    bool acc_gamma, acc_beta;
    __device__ void operator()(int64_t c, const double *t) const
    {
        if (dgamma)
            dgamma[c] = (float)t[1] + ACC(dgamma[c], acc_gamma);
        if (dbeta)
            dbeta[c] = (float)t[0] + ACC(dbeta[c], acc_beta);
    }
};

/* One thread per element i (grid-stride), column i % cols. */
__global__ void bn_eval_dx_kernel(int64_t n, int64_t cols, const float *gamma, const float *var,
                                  float eps, const float *dy, float *dx, bool acc)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t c = i % cols;
        double g = __dmul_rn(__dmul_rn((double)dy[i], gamma[c]), eval_invstd(var, c, eps));
        dx[i] = (float)g + ACC(dx[i], acc);
    }
}

gcn_status gcn_cuda_batchnorm_eval_backward(gcn_ctx *ctx, int64_t rows, int64_t cols,
                                            const float *x, const float *gamma,
                                            const float *mean, const float *var, float eps,
                                            const float *dy, float *dx, float *dgamma,
                                            float *dbeta, bool acc_x, bool acc_gamma,
                                            bool acc_beta)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (cols <= 0)
        return GCN_OK;
    if (dgamma || dbeta)
        GCN_TRY(col_reduce<2>(ctx, cs, rows, cols, bn_eval_grad_terms{x, dy, mean, var, eps, cols},
                              bn_eval_grad_out{dgamma, dbeta, acc_gamma, acc_beta}));
    int64_t n = rows * cols;
    if (dx && n > 0) {
        bn_eval_dx_kernel<<<gcn_blocks(n, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(
            n, cols, gamma, var, eps, dy, dx, acc_x);
        GCN_LAUNCHED("bn_eval_dx_kernel");
    }
    return GCN_OK;
}
