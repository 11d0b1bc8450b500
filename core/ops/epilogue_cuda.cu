/* The fused epilogue on the GPU (gcn_epilogue_args): batch statistics in one
 * pass, the forward in one pass, and the backward in two (gradient sums,
 * then dx).  Element arithmetic is epilogue_math.h's, as on the CPU; sums
 * are taken in double in a fixed order, so results are deterministic.
 * Each kernel is instantiated for fp32 and for bf16 storage (T = uint16_t:
 * values widened on load, rounded once on store). */
#include "core/bf16.h"
#include "core/comm.h"
#include "cols.cuh"
#include "epilogue_math.h"

__device__ static void load(const float *p, int64_t i, float *v, int n)
{
    if (n == 4) {
        float4 q = *reinterpret_cast<const float4 *>(p + i);
        v[0] = q.x;
        v[1] = q.y;
        v[2] = q.z;
        v[3] = q.w;
    } else {
        v[0] = p[i];
    }
}

/* Four bf16 values are one 8-byte load (i is a multiple of 4). */
__device__ static void load(const uint16_t *p, int64_t i, float *v, int n)
{
    if (n == 4) {
        uint2 q = *reinterpret_cast<const uint2 *>(p + i);
        v[0] = gcn_bf16_to_float((uint16_t)(q.x & 0xffffu));
        v[1] = gcn_bf16_to_float((uint16_t)(q.x >> 16));
        v[2] = gcn_bf16_to_float((uint16_t)(q.y & 0xffffu));
        v[3] = gcn_bf16_to_float((uint16_t)(q.y >> 16));
    } else {
        v[0] = gcn_bf16_to_float(p[i]);
    }
}

__device__ static float value(const float *p, int64_t i) { return p[i]; }
__device__ static float value(const uint16_t *p, int64_t i) { return gcn_bf16_to_float(p[i]); }

__device__ static void store(float *p, int64_t i, const float *v, int n)
{
    if (n == 4)
        *reinterpret_cast<float4 *>(p + i) = make_float4(v[0], v[1], v[2], v[3]);
    else
        p[i] = v[0];
}

__device__ static void store(uint16_t *p, int64_t i, const float *v, int n)
{
    if (n == 4) {
        uint2 q;
        q.x = gcn_bf16_from_float(v[0]) | (uint32_t)gcn_bf16_from_float(v[1]) << 16;
        q.y = gcn_bf16_from_float(v[2]) | (uint32_t)gcn_bf16_from_float(v[3]) << 16;
        *reinterpret_cast<uint2 *>(p + i) = q;
    } else {
        p[i] = gcn_bf16_from_float(v[0]);
    }
}

/* Dropout factors of V elements from flat index i = r cols + c0: 1 without
 * dropout, else 1 / (1 - p) or 0 by the mask (V = 4: cols and c0 are
 * multiples of four, so the row gives the words without a division). */
template <int V>
__device__ static void drop_factors(const gcn_epilogue_args &a, float scale, int64_t i,
                                    int64_t r, int64_t c0, float *f)
{
    if (a.p == 0.0f) {
        for (int v = 0; v < V; v++)
            f[v] = 1.0f;
        return;
    }
    uint32_t w[4];
    if (V == 4)
        gcn_draw_words_row(a.offset, a.key, gcn_draw_first(a.offset), i, r, c0, w);
    else
        gcn_draw_words(a.offset, a.key, gcn_draw_first(a.offset), i - i % 4, a.rows * a.cols,
                       w);
    for (int v = 0; v < V; v++)
        f[v] = gcn_epi_kept(w[(i + v) % 4], a.p) ? scale : 0.0f;
}

/* ---- statistics ---------------------------------------------------------- */

/* (v - K, (v - K)^2) with K the column's first value: a shift that keeps
 * the one-pass variance free of cancellation. */
template <int V, typename T>
struct stats_terms {
    const T *x;
    const float *bias;
    int64_t cols;
    __device__ void operator()(int64_t r, int64_t c0, double (*acc)[V]) const
    {
        float xv[V], k0[V];
        load(x, r * cols + c0, xv, V);
        load(x, c0, k0, V);
        for (int v = 0; v < V; v++) {
            float b = bias ? bias[c0 + v] : 0.0f;
            double d = (double)(xv[v] + b) - (double)(k0[v] + b);
            acc[0][v] += d;
            acc[1][v] += d * d;
        }
    }
};

/* (1 - m) r + m s in double, as the CPU updates running statistics. */
__device__ static float running_update(float r, float momentum, double s)
{
    return (float)((1.0 - (double)momentum) * (double)r + (double)momentum * s);
}

template <typename T>
struct stats_out {
    const T *x;
    const float *bias;
    int64_t rows;
    float momentum, eps;
    float *running_mean, *running_var, *mean, *invstd;
    __device__ void operator()(int64_t c, const double *t) const
    {
        double n = (double)rows, k = (double)(value(x, c) + (bias ? bias[c] : 0.0f));
        double d = t[0] / n, var = t[1] / n - d * d;
        var = var > 0.0 ? var : 0.0;
        double m = k + d;
        mean[c] = (float)m;
        invstd[c] = (float)(1.0 / sqrt(var + (double)eps));
        running_mean[c] = running_update(running_mean[c], momentum, m);
        running_var[c] = running_update(running_var[c], momentum, var * n / (n - 1.0));
    }
};

/* A rank's share of statistics taken over several ranks (comm.h): the
 * shifted sums made plain, sums[c] = sum v and sums[cols + c] = sum v^2 in
 * double, and sums[2 cols] = its rows, for the all-reduce.  Plain sums in
 * double lose digits only when a column's mean is thousands of standard
 * deviations from zero, which batch-norm inputs are not. */
template <typename T>
struct moments_out {
    const T *x;
    const float *bias;
    int64_t rows, cols;
    double *sums;
    __device__ void operator()(int64_t c, const double *t) const
    {
        double n = (double)rows;
        double k = rows > 0 ? (double)(value(x, c) + (bias ? bias[c] : 0.0f)) : 0.0;
        sums[c] = t[0] + n * k;
        sums[cols + c] = t[1] + 2.0 * k * t[0] + n * k * k;
        if (c == 0)
            sums[2 * cols] = n;
    }
};

/* The statistics from the ranks' summed moments_out (one thread per
 * column, grid-stride). */
__global__ void shared_stats_kernel(int64_t cols, const double *sums, float momentum, float eps,
                                    float *running_mean, float *running_var, float *mean,
                                    float *invstd)
{
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols;
         c += (int64_t)gridDim.x * blockDim.x) {
        double n = sums[2 * cols], m = sums[c] / n, var = sums[cols + c] / n - m * m;
        var = var > 0.0 ? var : 0.0;
        mean[c] = (float)m;
        invstd[c] = (float)(1.0 / sqrt(var + (double)eps));
        running_mean[c] = running_update(running_mean[c], momentum, m);
        running_var[c] = running_update(running_var[c], momentum, var * n / (n - 1.0));
    }
}

/* The statistics of every rank's rows: each rank's moments, summed over
 * the ranks, then finished on each. */
template <typename T>
static gcn_status shared_stats(gcn_ctx *ctx, cudaStream_t stream, int64_t cols,
                               int64_t n_chunks, const double *partial, const T *x,
                               const float *bias, int64_t rows, float momentum, float eps,
                               float *running_mean, float *running_var, float *mean,
                               float *invstd)
{
    size_t bytes = (size_t)(2 * cols + 1) * sizeof(double);
    double *sums = NULL;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&sums, bytes));
    col_finish_kernel<2><<<col_finish_blocks(cols), GCN_THREADS, 0, stream>>>(
        cols, n_chunks, partial, moments_out<T>{x, bias, rows, cols, sums});
    gcn_status st = GCN_LAUNCHED_ST("col_finish_kernel");
    if (st == GCN_OK)
        st = gcn_comm_allreduce_f64(ctx, sums, 2 * cols + 1);
    if (st == GCN_OK) {
        shared_stats_kernel<<<gcn_blocks(cols, GCN_THREADS), GCN_THREADS, 0, stream>>>(
            cols, sums, momentum, eps, running_mean, running_var, mean, invstd);
        st = GCN_LAUNCHED_ST("shared_stats_kernel");
    }
    gcn_mem_release(ctx, sums, bytes);
    return st;
}

/* One thread per column (grid-stride). */
__global__ void eval_invstd_kernel(int64_t cols, const float *var, float eps, float *invstd)
{
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols;
         c += (int64_t)gridDim.x * blockDim.x)
        invstd[c] = (float)(1.0 / sqrt((double)var[c] + eps));
}

static bool aligned(const void *p)
{
    return p == NULL || (uintptr_t)p % 16 == 0;
}

/* Training statistics of x (stored as T). */
template <typename T>
static gcn_status batch_stats(gcn_ctx *ctx, gcn_cuda_state *cs, int64_t rows, int64_t cols,
                              const T *x, const float *bias, float momentum, float eps,
                              float *running_mean, float *running_var, float *mean, float *invstd)
{
    bool vec = cols % 4 == 0 && aligned(x);
    tiling t = tile_grid(rows, cols, vec ? 4 : 1);
    size_t bytes = (size_t)(t.n_chunks * cols * 2) * sizeof(double);
    double *partial = NULL;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&partial, bytes));
    gcn_status st;
    if (gcn_ctx_ranks(ctx) > 1) {
        /* the all-reduce sits between the passes: always two launches */
        st = vec ? launch_tiles<4, 2>(ctx, cs->stream, t, rows, cols,
                                      stats_terms<4, T>{x, bias, cols}, partial, "stats_4")
                 : launch_tiles<1, 2>(ctx, cs->stream, t, rows, cols,
                                      stats_terms<1, T>{x, bias, cols}, partial, "stats_1");
        if (st == GCN_OK)
            st = shared_stats(ctx, cs->stream, cols, t.n_chunks, partial, x, bias, rows,
                              momentum, eps, running_mean, running_var, mean, invstd);
    } else {
        stats_out<T> fin = {x, bias, rows, momentum, eps, running_mean, running_var, mean, invstd};
        st = vec ? reduce_tiles<4, 2>(ctx, cs, t, rows, cols, stats_terms<4, T>{x, bias, cols},
                                      partial, fin, "stats_4")
                 : reduce_tiles<1, 2>(ctx, cs, t, rows, cols, stats_terms<1, T>{x, bias, cols},
                                      partial, fin, "stats_1");
    }
    gcn_mem_release(ctx, partial, bytes);
    return st;
}

gcn_status gcn_cuda_epilogue_stats(gcn_ctx *ctx, int64_t rows, int64_t cols, const void *x,
                                   gcn_dtype dtype, const float *bias, bool training,
                                   float momentum, float eps, float *running_mean,
                                   float *running_var, float *mean, float *invstd)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (cols <= 0)
        return GCN_OK;
    if (!training) {
        eval_invstd_kernel<<<gcn_blocks(cols, GCN_THREADS), GCN_THREADS, 0, cs->stream>>>(
            cols, running_var, eps, invstd);
        GCN_LAUNCHED("eval_invstd_kernel");
        return GCN_OK;
    }
    if (dtype == GCN_DTYPE_BF16)
        return batch_stats(ctx, cs, rows, cols, static_cast<const uint16_t *>(x), bias, momentum,
                           eps, running_mean, running_var, mean, invstd);
    return batch_stats(ctx, cs, rows, cols, static_cast<const float *>(x), bias, momentum, eps,
                       running_mean, running_var, mean, invstd);
}

/* ---- forward ------------------------------------------------------------- */

template <int V, typename T>
struct forward_elems {
    gcn_epilogue_args a;
    const T *x;
    float scale;
    T *out;
    __device__ void operator()(int64_t r, int64_t c0, double (*)[V]) const
    {
        int64_t i = r * a.cols + c0;
        float xv[V], f[V], y[V];
        load(x, i, xv, V);
        drop_factors<V>(a, scale, i, r, c0, f);
        for (int v = 0; v < V; v++) {
            gcn_epi_col k = gcn_epi_column(a.bias, a.gamma, a.beta, a.mean, a.invstd, c0 + v);
            float act = gcn_epi_act(gcn_epi_pre(xv[v], k), a.act, a.alpha);
            y[v] = a.p == 0.0f ? act : f[v] != 0.0f ? __fmul_rn(act, f[v]) : 0.0f;
        }
        store(out, i, y, V);
    }
};

static bool vectorised(const gcn_epilogue_args *a, const void *p, const void *q)
{
    return a->cols % 4 == 0 && aligned(a->x) && aligned(p) && aligned(q);
}

template <typename T>
static gcn_status forward_pass(gcn_ctx *ctx, gcn_cuda_state *cs, const gcn_epilogue_args *a,
                               const T *x, T *out)
{
    float scale = a->p > 0.0f ? 1.0f / (1.0f - a->p) : 1.0f;
    if (vectorised(a, out, NULL))
        return launch_tiles<4, 1>(ctx, cs->stream, tile_grid(a->rows, a->cols, 4), a->rows,
                                  a->cols, forward_elems<4, T>{*a, x, scale, out}, NULL,
                                  "forward_4");
    return launch_tiles<1, 1>(ctx, cs->stream, tile_grid(a->rows, a->cols, 1), a->rows, a->cols,
                              forward_elems<1, T>{*a, x, scale, out}, NULL, "forward_1");
}

gcn_status gcn_cuda_epilogue_forward(gcn_ctx *ctx, const gcn_epilogue_args *a, void *out)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (a->dtype == GCN_DTYPE_BF16)
        return forward_pass(ctx, cs, a, a->x_bf16, static_cast<uint16_t *>(out));
    return forward_pass(ctx, cs, a, a->x, static_cast<float *>(out));
}

/* ---- backward ------------------------------------------------------------ */

/* The gradient at pre of V elements from flat index i, and their xhat
 * ((v - mean) invstd, in double; 0 without batch norm). */
template <int V, typename T>
__device__ static void pre_grads(const gcn_epilogue_args &a, const T *x, float scale,
                                 const T *dout, int64_t i, int64_t r, int64_t c0, float *g,
                                 double *xhat)
{
    float xv[V], dv[V], f[V];
    load(x, i, xv, V);
    load(dout, i, dv, V);
    drop_factors<V>(a, scale, i, r, c0, f);
    for (int v = 0; v < V; v++) {
        gcn_epi_col k = gcn_epi_column(a.bias, a.gamma, a.beta, a.mean, a.invstd, c0 + v);
        float pre = gcn_epi_pre(xv[v], k);
        float gy = a.p == 0.0f ? dv[v] : f[v] != 0.0f ? __fmul_rn(dv[v], f[v]) : 0.0f;
        g[v] = gcn_epi_act_grad(gy, pre, gcn_epi_act(pre, a.act, a.alpha), a.act, a.alpha);
        xhat[v] = k.norm ? ((double)__fadd_rn(xv[v], k.bias) - (double)k.mean) *
                               (double)a.invstd[c0 + v]
                         : 0.0;
    }
}

/* (g, g xhat) per column. */
template <int V, typename T>
struct grad_terms {
    gcn_epilogue_args a;
    const T *x;
    float scale;
    const T *dout;
    __device__ void operator()(int64_t r, int64_t c0, double (*acc)[V]) const
    {
        float g[V];
        double xhat[V];
        pre_grads<V>(a, x, scale, dout, r * a.cols + c0, r, c0, g, xhat);
        for (int v = 0; v < V; v++) {
            acc[0][v] += g[v];
            acc[1][v] += (double)g[v] * xhat[v];
        }
    }
};

/* sums[c] = sum g, sums[cols + c] = sum g xhat, sums[2 cols] = the rows
 * summed over; dgamma and dbeta from them. */
struct grad_out {
    double *sums;
    int64_t cols, rows;
    gcn_epilogue_grads g;
    __device__ void operator()(int64_t c, const double *t) const
    {
        sums[c] = t[0];
        sums[cols + c] = t[1];
        if (c == 0)
            sums[2 * cols] = (double)rows;
        if (g.dgamma)
            g.dgamma[c] = (float)t[1] + (g.acc_gamma ? g.dgamma[c] : 0.0f);
        if (g.dbeta)
            g.dbeta[c] = (float)t[0] + (g.acc_beta ? g.dbeta[c] : 0.0f);
    }
};

/* dx per element (written when dx is set), and its column sum for dbias:
 * training batch norm gamma invstd / n (n g - sum g - xhat sum(g xhat)),
 * eval batch norm g gamma invstd, else g. */
template <int V, typename T>
struct dx_elems {
    gcn_epilogue_args a;
    const T *x;
    float scale;
    const T *dout;
    const double *sums;
    T *dx;
    bool acc;
    __device__ void operator()(int64_t r, int64_t c0, double (*acc_sum)[V]) const
    {
        int64_t i = r * a.cols + c0;
        float g[V], out[V], old[V];
        double xhat[V];
        pre_grads<V>(a, x, scale, dout, i, r, c0, g, xhat);
        if (dx && acc)
            load(dx, i, old, V);
        for (int v = 0; v < V; v++) {
            int64_t c = c0 + v;
            double d = g[v];
            if (a.gamma && a.batch_stats) {
                double n = sums[2 * a.cols], invstd = a.invstd[c];
                d = a.gamma[c] * invstd / n * (n * g[v] - sums[c] - xhat[v] * sums[a.cols + c]);
            } else if (a.gamma) {
                d = (double)g[v] * (double)__fmul_rn(a.gamma[c], a.invstd[c]);
            }
            out[v] = (float)d;
            acc_sum[0][v] += out[v];
            if (acc)
                out[v] += old[v];
        }
        if (dx)
            store(dx, i, out, V);
    }
};

struct dbias_out {
    gcn_epilogue_grads g;
    __device__ void operator()(int64_t c, const double *t) const
    {
        g.dbias[c] = (float)t[0] + (g.acc_bias ? g.dbias[c] : 0.0f);
    }
};

template <int V, typename T>
static gcn_status backward_passes(gcn_ctx *ctx, gcn_cuda_state *cs, const gcn_epilogue_args *a,
                                  const T *x, const T *dout, const gcn_epilogue_grads *g,
                                  double *sums, double *partial)
{
    float scale = a->p > 0.0f ? 1.0f / (1.0f - a->p) : 1.0f;
    tiling t = tile_grid(a->rows, a->cols, V);
    if (a->gamma) {
        GCN_TRY((reduce_tiles<V, 2>(ctx, cs, t, a->rows, a->cols,
                                    grad_terms<V, T>{*a, x, scale, dout}, partial,
                                    grad_out{sums, a->cols, a->rows, *g}, "grad_terms")));
        /* training batch norm over several ranks: dx needs every rank's sums */
        if (a->batch_stats && gcn_ctx_ranks(ctx) > 1)
            GCN_TRY(gcn_comm_allreduce_f64(ctx, sums, 2 * a->cols + 1));
    }
    dx_elems<V, T> f = {*a, x, scale, dout, sums, static_cast<T *>(g->dx), g->acc_x};
    if (g->dbias)
        return reduce_tiles<V, 1>(ctx, cs, t, a->rows, a->cols, f, partial, dbias_out{*g},
                                  "dx_elems");
    if (g->dx)
        return launch_tiles<V, 1>(ctx, cs->stream, t, a->rows, a->cols, f, NULL, "dx_elems");
    return GCN_OK;
}

template <int V>
static gcn_status backward_typed(gcn_ctx *ctx, gcn_cuda_state *cs, const gcn_epilogue_args *a,
                                 const void *dout, const gcn_epilogue_grads *g, double *sums,
                                 double *partial)
{
    if (a->dtype == GCN_DTYPE_BF16)
        return backward_passes<V>(ctx, cs, a, a->x_bf16, static_cast<const uint16_t *>(dout), g,
                                  sums, partial);
    return backward_passes<V>(ctx, cs, a, a->x, static_cast<const float *>(dout), g, sums,
                              partial);
}

gcn_status gcn_cuda_epilogue_backward(gcn_ctx *ctx, const gcn_epilogue_args *a,
                                      const void *dout, const gcn_epilogue_grads *g)
{
    gcn_cuda_state *cs;
    GCN_TRY(gcn_cuda_begin(ctx, &cs));
    if (a->cols <= 0)
        return GCN_OK;
    bool vec = vectorised(a, dout, g->dx);
    tiling t = tile_grid(a->rows, a->cols, vec ? 4 : 1);
    size_t sum_bytes = (size_t)(2 * a->cols + 1) * sizeof(double);
    size_t part_bytes = (size_t)(t.n_chunks * a->cols * 2) * sizeof(double);
    double *sums = NULL, *partial = NULL;
    gcn_status st;
    GCN_CHECK(gcn_mem_alloc(ctx, (void **)&sums, sum_bytes));
    GCN_CHECK(gcn_mem_alloc(ctx, (void **)&partial, part_bytes));
    st = vec ? backward_typed<4>(ctx, cs, a, dout, g, sums, partial)
             : backward_typed<1>(ctx, cs, a, dout, g, sums, partial);
cleanup:
    gcn_mem_release(ctx, partial, part_bytes);
    gcn_mem_release(ctx, sums, sum_bytes);
    return st;
}
