/* The CUDA kernels' bf16 variants against float64 on the fp32 operands
 * (spmm_bf16_check.c states the bound): awkward widths (1, odd, not a
 * multiple of 8), empty rows, rectangular and single-column matrices, one
 * row of 100,000 entries past fp16's range, misaligned operands; the
 * gradient through the bf16 product against fp32's; the CPU and GPU bf16
 * products agreeing; the selector's bf16 sites; and a kernel without a
 * bf16 variant forced under precision bf16 refused with exit 2. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_helpers.h"
#include "helpers.h"
#include "spmm_bf16_check.h"
#include "tool_run.h"

static const int feats[] = {1, 2, 3, 7, 8, 9, 15, 16, 33, 64, 100, 127, 128, 250, 256, 512};

Test(gpu_spmm_bf16, kernels_on_awkward_shapes, .timeout = 120)
{
    GPU_REQUIRED();
    gpu_pair g = gpu_pair_open(1, false);
    bf16_check_shapes(g.gpu, feats, sizeof feats / sizeof feats[0]);
    gpu_pair_close(&g);
}

Test(gpu_spmm_bf16, kernels_long_row_past_fp16_range, .timeout = 120)
{
    GPU_REQUIRED();
    gpu_pair g = gpu_pair_open(1, false);
    const int widths[] = {1, 3, 8, 64, 128};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
        bf16_check_long_row(g.gpu, widths[i]);
    gpu_pair_close(&g);
}

/* Rows of 16 to 2,000 entries on a graph large enough that the kernels cut
 * long rows into pieces and pack short ones into units. */
Test(gpu_spmm_bf16, kernels_on_a_skewed_graph, .timeout = 120)
{
    GPU_REQUIRED();
    gpu_pair g = gpu_pair_open(1, false);
    enum { N = 20000 };
    int32_t *deg = degrees_uniform(N, 16, 5);
    for (int i = 0; i < N; i += 997)
        deg[i] = 2000;
    hmat m = mat_random(N, N, deg, true, 6);
    const int widths[] = {2, 64, 128, 256};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
        cr_assert_geq(bf16_check_all(g.gpu, &m, widths[i], 1.0f, 40 + i), 2,
                      "rowsplit and rowpack at least, at F = %d", widths[i]);
    mat_free(&m);
    free(deg);
    gpu_pair_close(&g);
}

/* Operands 2 bytes past an aligned start: odd widths run on single bf16
 * units; even widths need 4-byte rows, and the kernels say so. */
Test(gpu_spmm_bf16, misaligned_operands)
{
    GPU_REQUIRED();
    gpu_pair g = gpu_pair_open(1, false);
    int32_t deg[50];
    for (int i = 0; i < 50; i++)
        deg[i] = i % 7;
    hmat m = mat_random(50, 50, deg, true, 3);
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(g.gpu, &a, 50, 50, m.nnz, m.row_ptr, m.col_idx, m.values),
                 GCN_OK);
    uint16_t *x = gpu_alloc(g.gpu, 2 * 50 * 9 + 2), *y = gpu_alloc(g.gpu, 2 * 50 * 9 + 2);
    cr_assert_eq(gcn_spmm_run_bf16(g.gpu, gcn_spmm_find(NULL, "rowsplit"), a, x + 1, y + 1, 8,
                                   false),
                 GCN_ERR_UNSUPPORTED);
    cr_assert(strstr(gcn_last_error(g.gpu), "4-byte"), "%s", gcn_last_error(g.gpu));
    cr_assert_eq(gcn_spmm_run_bf16(g.gpu, gcn_spmm_find(NULL, "rowsplit"), a, x + 1, y + 1, 9,
                                   false),
                 GCN_OK, "%s", gcn_last_error(g.gpu));
    cr_assert_eq(gcn_ctx_sync(g.gpu), GCN_OK);
    gcn_mem_release(g.gpu, x, 2 * 50 * 9 + 2);
    gcn_mem_release(g.gpu, y, 2 * 50 * 9 + 2);
    gcn_csr_free(&a);
    mat_free(&m);
    gpu_pair_close(&g);
}

Test(gpu_spmm_bf16, gradient_follows_fp32)
{
    GPU_REQUIRED();
    gpu_pair g = gpu_pair_open(1, false);
    bf16_check_gradient(g.gpu, 5);
    bf16_check_gradient(g.gpu, 64);
    gpu_pair_close(&g);
}

/* The same bf16 product on the CPU and the GPU, through the op: each is
 * the fp32 sum (orders differ: 1e-5 of the magnitude summed covers it)
 * rounded once (u = 2^-8 each), so they differ by at most 2u of the
 * larger plus that, and mostly not at all. */
Test(gpu_spmm_bf16, cpu_and_gpu_agree)
{
    GPU_REQUIRED();
    gpu_pair g = gpu_pair_open(1, false);
    enum { N = 500, F = 24 };
    int32_t *deg = degrees_uniform(N, 30, 9);
    hmat m = mat_random(N, N, deg, true, 10);
    float *hx = malloc(N * F * sizeof *hx), *out[2];
    uint64_t s = 4;
    test_fill_uniform(&s, hx, N * F, -1.0f, 1.0f);
    gcn_ctx *ctxs[2] = {g.cpu, g.gpu};
    for (int d = 0; d < 2; d++) {
        gcn_csr *a = NULL;
        cr_assert_eq(gcn_csr_create(ctxs[d], &a, N, N, m.nnz, m.row_ptr, m.col_idx, m.values),
                     GCN_OK);
        gcn_tensor *x = NULL, *y = NULL;
        cr_assert_eq(gcn_tensor_create_dtype(ctxs[d], &x, N, F, GCN_DTYPE_BF16), GCN_OK);
        cr_assert_eq(gcn_tensor_copy_from_host(ctxs[d], x, hx), GCN_OK);
        cr_assert_eq(gcn_spmm(ctxs[d], a, x, &y), GCN_OK, "%s", gcn_last_error(ctxs[d]));
        out[d] = malloc(N * F * sizeof(float));
        cr_assert_eq(gcn_tensor_to_host(ctxs[d], y, out[d]), GCN_OK);
        gcn_tensor_free(&x);
        gcn_tensor_free(&y);
        gcn_csr_free(&a);
    }
    int differ = 0;
    for (int32_t r = 0; r < N; r++)
        for (int c = 0; c < F; c++) {
            double mag = 0.0;
            for (int32_t k = m.row_ptr[r]; k < m.row_ptr[r + 1]; k++)
                mag += fabs((double)m.values[k] * hx[(int64_t)m.col_idx[k] * F + c]);
            int i = r * F + c;
            double bound = 2.0 / 256.0 * fmax(fabs(out[0][i]), fabs(out[1][i])) + 1e-5 * mag;
            cr_assert(fabs((double)out[0][i] - out[1][i]) <= bound,
                      "element %d: cpu %.9g gpu %.9g", i, out[0][i], out[1][i]);
            differ += out[0][i] != out[1][i];
        }
    cr_assert_lt(differ, N * F / 10, "rounded the same almost everywhere: %d differ", differ);
    free(out[0]), free(out[1]), free(hx), free(deg);
    mat_free(&m);
    gpu_pair_close(&g);
}

/* The selector on a bf16 product: its candidates are the kernels with a
 * bf16 variant, it locks on one, and the fp32 product has its own site. */
Test(gpu_spmm_bf16, selector_sites_per_dtype)
{
    GPU_REQUIRED();
    gpu_pair g = gpu_pair_open(1, false);
    enum { N = 4000, F = 64 };
    int32_t *deg = degrees_uniform(N, 20, 2);
    hmat m = mat_random(N, N, deg, true, 2);
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(g.gpu, &a, N, N, m.nnz, m.row_ptr, m.col_idx, m.values), GCN_OK);
    float *hx = malloc(N * F * sizeof *hx);
    uint64_t s = 4;
    test_fill_uniform(&s, hx, N * F, -1.0f, 1.0f);
    gcn_tensor *x = test_tensor(g.gpu, hx, N, F), *xb = NULL;
    cr_assert_eq(gcn_cast(g.gpu, x, GCN_DTYPE_BF16, &xb), GCN_OK);
    for (int i = 0; i < 200; i++) {
        gcn_tensor *y = NULL, *yb = NULL;
        cr_assert_eq(gcn_spmm(g.gpu, a, x, &y), GCN_OK, "%s", gcn_last_error(g.gpu));
        cr_assert_eq(gcn_spmm(g.gpu, a, xb, &yb), GCN_OK, "%s", gcn_last_error(g.gpu));
        gcn_tensor_free(&y);
        gcn_tensor_free(&yb);
    }
    gcn_spmm_site_info info[4];
    cr_assert_eq(gcn_spmm_sites(a, info, 4), 2);
    cr_assert_eq(info[1].dtype, GCN_DTYPE_BF16);
    cr_assert(info[1].locked, "locked after 200 products");
    const gcn_spmm_impl *k = gcn_spmm_find(NULL, info[1].chosen);
    cr_assert(k && k->run_bf16, "bf16 site chose %s", info[1].chosen);
    cr_assert_gt(info[0].n_candidates, info[1].n_candidates, "fp32 has kernels bf16 lacks");
    gcn_tensor_free(&x);
    gcn_tensor_free(&xb);
    free(hx), free(deg);
    gcn_csr_free(&a);
    mat_free(&m);
    gpu_pair_close(&g);
}

/* "accel" has no bf16 variant: forcing it under precision bf16 is one
 * line naming it, exit 2, before any data is loaded. */
Test(gpu_spmm_bf16, forced_kernel_without_bf16_exits_2)
{
    GPU_REQUIRED();
    tool_result r;
    tool_run(&r, "gcntrain", (const char *[]){"models/gcn.json", "--dataset", "sbm:nodes=500",
                                              "--device", "cuda", "--precision", "bf16", "--quiet",
                                              "--spmm", "accel", "--epochs", "1", NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    tool_expect_one_line(r.err);
    cr_assert(strstr(r.err, "'accel' has no bf16 variant"), "%s", r.err);
    cr_assert(strstr(r.err, "rowsplit"), "names the kernels that have one: %s", r.err);
}
