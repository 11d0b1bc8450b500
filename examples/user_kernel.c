/* A sparse-dense product kernel of one's own, registered on a context so
 * that gcn_spmm can run it and the adaptive selector times it against the
 * built-in kernels like one of them.
 *
 *     make examples && build/examples/user_kernel
 *
 * The kernel here runs on the CPU (so the example runs on any machine): it
 * walks each row's non-zeros like the built-in CPU kernel, but keeps the
 * output row's first 64 sums in a local array.  A CUDA kernel registers
 * the same way, with .device = GCN_DEVICE_CUDA, launching on the stream
 * gcn_ctx_stream returns. */
#include <stdio.h>
#include <string.h>

#include <gcn.h>

#define N 2000   /* nodes of a ring with chords */
#define FEAT 64

static bool local_supports(const gcn_csr *a, int feat)
{
    return gcn_csr_device(a) == GCN_DEVICE_CPU && feat >= 1;
}

static gcn_status local_plan(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    (void)ctx;
    (void)a;
    (void)feat;
    *plan = NULL; /* nothing to precompute */
    return GCN_OK;
}

/* y = A x, or y += A x when accumulating.  The sums of up to 64 columns at
 * a time are kept in a local array. */
static gcn_status local_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x, float *y,
                            int feat, bool accumulate)
{
    (void)ctx;
    (void)plan;
    const int32_t *row_ptr = gcn_csr_row_ptr(a), *col_idx = gcn_csr_col_idx(a);
    const float *values = gcn_csr_values(a);
    for (int32_t i = 0; i < gcn_csr_rows(a); i++)
        for (int c0 = 0; c0 < feat; c0 += 64) {
            int w = feat - c0 < 64 ? feat - c0 : 64;
            float sum[64];
            float *yi = y + (int64_t)i * feat + c0;
            for (int c = 0; c < w; c++)
                sum[c] = accumulate ? yi[c] : 0.0f;
            for (int32_t e = row_ptr[i]; e < row_ptr[i + 1]; e++) {
                const float *xr = x + (int64_t)col_idx[e] * feat + c0;
                for (int c = 0; c < w; c++)
                    sum[c] += values[e] * xr[c];
            }
            memcpy(yi, sum, (size_t)w * sizeof *sum);
        }
    return GCN_OK;
}

#define CHECK(call)                                                               \
    do {                                                                          \
        if ((st = (call)) != GCN_OK) {                                            \
            fprintf(stderr, "user_kernel: %s: %s\n", #call, gcn_last_error(ctx)); \
            goto done;                                                            \
        }                                                                         \
    } while (0)

/* Computes y = A x with the kernel the context currently chooses, and
 * copies y to the host. */
static gcn_status product(gcn_ctx *ctx, const gcn_csr *a, gcn_tensor *x, float *host)
{
    gcn_tensor *y = NULL;
    gcn_status st = gcn_spmm(ctx, a, x, &y);
    if (st == GCN_OK)
        st = gcn_tensor_to_host(ctx, y, host);
    gcn_tensor_free(&y);
    return st;
}

int main(void)
{
    static int32_t row_ptr[N + 1], col_idx[3 * N];
    static float values[3 * N], xh[N * FEAT], y_user[N * FEAT], y_auto[N * FEAT];
    gcn_ctx *ctx = NULL;
    gcn_csr *a = NULL;
    gcn_tensor *x = NULL;
    gcn_status st;

    gcn_ctx_opts opts = gcn_ctx_default_opts();
    opts.device = GCN_DEVICE_CPU;
    if ((st = gcn_ctx_create(&ctx, &opts)) != GCN_OK) {
        fprintf(stderr, "user_kernel: no context: %s\n", gcn_status_str(st));
        return 1;
    }
    gcn_spmm_impl mine = {
        .size = sizeof mine,
        .name = "local_rows",
        .device = GCN_DEVICE_CPU,
        .deterministic = true,
        .roles = GCN_SPMM_ROLE_WHOLE,
        .supports = local_supports,
        .plan = local_plan,
        .run = local_run,
    };
    CHECK(gcn_spmm_register(ctx, &mine));

    /* each node averages itself, its ring neighbours and one chord (columns
     * in any order: kernels must not assume sorted rows unless they say so) */
    int32_t nnz = 0;
    for (int32_t i = 0; i < N; i++) {
        row_ptr[i] = nnz;
        const int32_t cols[3] = {i, (i + 1) % N, (int32_t)((i * 7919L) % N)};
        for (int k = 0; k < 3; k++) {
            col_idx[nnz] = cols[k];
            values[nnz++] = 1.0f / 3.0f;
        }
    }
    row_ptr[N] = nnz;
    for (int i = 0; i < N * FEAT; i++)
        xh[i] = (float)((i * 37) % 101) / 101.0f;
    CHECK(gcn_csr_create(ctx, &a, N, N, nnz, row_ptr, col_idx, values));
    CHECK(gcn_tensor_from_host(ctx, &x, xh, N, FEAT));

    /* forced by name */
    CHECK(gcn_spmm_set_kernel(ctx, "local_rows"));
    CHECK(product(ctx, a, x, y_user));

    /* chosen by the selector, which times every candidate on the first calls */
    CHECK(gcn_spmm_set_kernel(ctx, "auto"));
    for (int call = 0; call < 60; call++)
        CHECK(product(ctx, a, x, y_auto));
    double worst = 0.0;
    for (int i = 0; i < N * FEAT; i++) {
        double d = y_user[i] - y_auto[i];
        worst = d > worst ? d : -d > worst ? -d : worst;
    }
    printf("local_rows and the selector's pick agree to %.2g\n", worst);

    gcn_spmm_site_info site;
    if (gcn_spmm_sites(a, &site, 1) == 1)
        printf("selector: %d candidates, %s; chose %s (%.4f ms), runner-up %s (%.4f ms)\n",
               site.n_candidates, site.locked ? "locked" : "still timing", site.chosen,
               site.chosen_ms, site.runner_up, site.runner_up_ms);
    if (worst > 1e-5) {
        fprintf(stderr, "user_kernel: the products differ by %g\n", worst);
        st = GCN_ERR_NUMERIC;
    }

done:
    gcn_tensor_free(&x);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
    return st == GCN_OK ? 0 : 1;
}
