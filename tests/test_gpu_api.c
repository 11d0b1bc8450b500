/* The embedding API on the GPU: the context's stream and a program's own
 * CUDA kernel, forced and timed by the selector. */
#include <criterion/criterion.h>
#include <cuda_runtime.h>
#include <math.h>

#include "gpu_helpers.h"
#include "gpu_user_kernel.h"
#include "helpers.h"
#include "spmm_check.h"

/* y = A x through the context's kernel choice, on the host. */
static float *spmm_to_host(gcn_ctx *ctx, const gcn_csr *a, gcn_tensor *x)
{
    gcn_tensor *y = NULL;
    cr_assert_eq(gcn_spmm(ctx, a, x, &y), GCN_OK, "%s", gcn_last_error(ctx));
    float *h = test_read(ctx, y);
    gcn_tensor_free(&y);
    return h;
}

/* The number of candidates the selector timed for (a, x) on ctx. */
static int candidates(gcn_ctx *ctx, const gcn_csr *a, gcn_tensor *x)
{
    for (int call = 0; call < 200; call++)
        free(spmm_to_host(ctx, a, x));
    gcn_spmm_site_info site;
    cr_assert_eq(gcn_spmm_sites(a, &site, 1), 1);
    cr_assert(site.locked, "the site locks within 200 products");
    return site.n_candidates;
}

Test(gpu_api, a_registered_cuda_kernel_is_forced_and_selected)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(11, false);
    cudaStream_t s = (cudaStream_t)gcn_ctx_stream(p.gpu);
    cr_assert_not_null(s, "a CUDA context has a stream");
    cr_assert_eq(cudaStreamQuery(s) == cudaSuccess || cudaStreamQuery(s) == cudaErrorNotReady,
                 true, "a live stream");

    uint64_t st = 5;
    int32_t *deg = degrees_uniform(3000, 16, 5);
    hmat h = mat_random(3000, 3000, deg, true, 6);
    gcn_csr *a = NULL, *b = NULL;
    cr_assert_eq(gcn_csr_create(p.gpu, &a, h.n_rows, h.n_cols, h.nnz, h.row_ptr, h.col_idx,
                                h.values), GCN_OK);
    cr_assert_eq(gcn_csr_create(p.gpu, &b, h.n_rows, h.n_cols, h.nnz, h.row_ptr, h.col_idx,
                                h.values), GCN_OK);
    gcn_tensor *x = test_random_tensor(p.gpu, &st, 3000, 40);
    int built_in = candidates(p.gpu, b, x);

    cr_assert_eq(gcn_spmm_register(p.gpu, &user_cuda_kernel), GCN_OK, "%s",
                 gcn_last_error(p.gpu));
    cr_assert_eq(gcn_spmm_set_kernel(p.gpu, "rowsplit"), GCN_OK);
    float *ref = spmm_to_host(p.gpu, a, x);
    cr_assert_eq(gcn_spmm_set_kernel(p.gpu, "thread_per_entry"), GCN_OK);
    user_kernel_launches = 0;
    float *mine = spmm_to_host(p.gpu, a, x);
    cr_assert_eq(user_kernel_launches, 1);
    for (int64_t i = 0; i < 3000 * 40; i++)
        cr_assert_float_eq(mine[i], ref[i], 1e-4f * (1.0f + fabsf(ref[i])), "element %lld",
                           (long long)i);

    cr_assert_eq(gcn_spmm_set_kernel(p.gpu, "auto"), GCN_OK);
    user_kernel_launches = 0;
    cr_assert_eq(candidates(p.gpu, a, x), built_in + 1, "one candidate more");
    cr_assert_gt(user_kernel_launches, 0, "the selector timed it");
    free(ref);
    free(mine);
    mat_free(&h);
    free(deg);
    gcn_tensor_free(&x);
    gcn_csr_free(&a);
    gcn_csr_free(&b);
    gpu_pair_close(&p);
}
