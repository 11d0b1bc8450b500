/* The SpMM registry and every CPU implementation in it against a float64
 * reference, with and without accumulate. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

Test(spmm, registry_has_cpu_and_kernel_choice_is_checked)
{
    int n = 0;
    const gcn_spmm_impl *const *reg = gcn_spmm_registry(&n);
    cr_assert_geq(n, 1);
    cr_assert_eq(gcn_spmm_find(NULL, "cpu"), reg[0]);
    cr_assert_null(gcn_spmm_find(NULL, "no-such-kernel"));
    gcn_ctx *ctx = test_cpu_ctx(0);
    cr_assert_str_eq(gcn_spmm_kernel(ctx), "auto");
    cr_assert_eq(gcn_spmm_set_kernel(ctx, "no-such-kernel"), GCN_ERR_NOT_FOUND);
    cr_assert(strstr(gcn_last_error(ctx), "'no-such-kernel'"));
    cr_assert_eq(gcn_spmm_set_kernel(ctx, "cpu"), GCN_OK);
    cr_assert_str_eq(gcn_spmm_kernel(ctx), "cpu");
#if GCN_WITH_CUDA
    /* the CUDA kernels are built and registered on every machine */
    const char *cuda_kernels[] = {"rowsplit", "cusparse", "accel", "mergepath"};
    for (size_t i = 0; i < sizeof cuda_kernels / sizeof cuda_kernels[0]; i++) {
        const gcn_spmm_impl *impl = gcn_spmm_find(NULL, cuda_kernels[i]);
        cr_assert_not_null(impl, "kernel %s is not registered", cuda_kernels[i]);
        cr_assert_eq(impl->device, GCN_DEVICE_CUDA);
        cr_assert_eq(gcn_spmm_set_kernel(ctx, cuda_kernels[i]), GCN_ERR_NOT_FOUND,
                     "a CUDA kernel on a CPU context");
    }
    cr_assert_not(gcn_spmm_find(NULL, "cusparse")->deterministic);
#else
    cr_assert_eq(n, 1, "a build without CUDA has only the CPU kernel");
    cr_assert_eq(gcn_cuda_device_count(), 0);
#endif
    gcn_ctx_free(&ctx);
}

/* Sorted means strictly increasing columns in every row; the stored
 * transpose of a matrix with repeated columns repeats them too. */
Test(spmm, csr_sortedness_is_recorded)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_csr *a = NULL;
    /* rows {0, 2}, {}, {1}: sorted, asymmetric; its transpose is sorted */
    cr_assert_eq(gcn_csr_create(ctx, &a, 3, 3, 3, (int32_t[]){0, 2, 2, 3}, (int32_t[]){0, 2, 1},
                                NULL),
                 GCN_OK);
    cr_assert(gcn_csr_is_sorted(a));
    cr_assert(gcn_csr_is_sorted(gcn_csr_transpose(a)));
    gcn_csr_free(&a);
    /* row 0 unsorted {2, 0}: the transpose, built by a stable counting sort, is sorted */
    cr_assert_eq(gcn_csr_create(ctx, &a, 2, 3, 3, (int32_t[]){0, 2, 3}, (int32_t[]){2, 0, 1},
                                NULL),
                 GCN_OK);
    cr_assert_not(gcn_csr_is_sorted(a));
    cr_assert(gcn_csr_is_sorted(gcn_csr_transpose(a)));
    gcn_csr_free(&a);
    /* row 1 repeats column 1: neither it nor its transpose is sorted */
    cr_assert_eq(gcn_csr_create(ctx, &a, 2, 2, 3, (int32_t[]){0, 1, 3}, (int32_t[]){0, 1, 1},
                                NULL),
                 GCN_OK);
    cr_assert_not(gcn_csr_is_sorted(a));
    cr_assert_not(gcn_csr_is_sorted(gcn_csr_transpose(a)));
    gcn_csr_free(&a);
    cr_assert_not(gcn_csr_is_sorted(NULL));
    gcn_ctx_free(&ctx);
}

/* A random n x m matrix with ~density non-zeros per row, some rows empty,
 * one row much longer than the rest, unsorted columns and duplicates. */
static void random_csr(uint64_t *s, int32_t n, int32_t m, int32_t **rp, int32_t **ci, float **v,
                       int32_t *nnz)
{
    *rp = malloc(((size_t)n + 1) * sizeof **rp);
    int32_t cap = n * 8 + m + 16, k = 0;
    *ci = malloc((size_t)cap * sizeof **ci);
    *v = malloc((size_t)cap * sizeof **v);
    (*rp)[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        float r;
        test_fill_uniform(s, &r, 1, 0.0f, 1.0f);
        int32_t deg = i == n / 2 ? m : (r < 0.2f ? 0 : (int32_t)(r * 8.0f));
        for (int32_t d = 0; d < deg && k < cap; d++, k++) {
            float c;
            test_fill_uniform(s, &c, 1, 0.0f, (float)m);
            (*ci)[k] = (int32_t)c < m ? (int32_t)c : m - 1;
            test_fill_uniform(s, &(*v)[k], 1, -1.0f, 1.0f);
        }
        (*rp)[i + 1] = k;
    }
    *nnz = k;
}

Test(spmm, cpu_impls_match_float64_reference)
{
    int n_impls = 0;
    const gcn_spmm_impl *const *reg = gcn_spmm_registry(&n_impls);
    const int feats[] = {1, 3, 32, 33};
    uint64_t s = 77;
    gcn_ctx *ctx = test_cpu_ctx(1);
    int32_t n = 61, m = 47, nnz, *rp, *ci;
    float *v;
    random_csr(&s, n, m, &rp, &ci, &v, &nnz);
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, n, m, nnz, rp, ci, v), GCN_OK);
    for (int r = 0; r < n_impls; r++) {
        if (reg[r]->device != GCN_DEVICE_CPU)
            continue;
        for (size_t fi = 0; fi < sizeof feats / sizeof feats[0]; fi++) {
            int f = feats[fi];
            int64_t ny = (int64_t)n * f;
            float *x = malloc((size_t)m * f * sizeof *x), *y = malloc((size_t)ny * sizeof *y);
            double *ref = calloc((size_t)ny, sizeof *ref), *acc = malloc((size_t)ny * sizeof *acc);
            test_fill_uniform(&s, x, (int64_t)m * f, -1, 1);
            test_fill_uniform(&s, y, ny, -1, 1);
            for (int32_t i = 0; i < n; i++)
                for (int32_t e = rp[i]; e < rp[i + 1]; e++)
                    for (int j = 0; j < f; j++)
                        ref[(int64_t)i * f + j] += (double)v[e] * x[(int64_t)ci[e] * f + j];
            for (int64_t i = 0; i < ny; i++)
                acc[i] = ref[i] + y[i];
            cr_assert_eq(gcn_spmm_run(ctx, reg[r], a, x, y, f, true), GCN_OK);
            cr_assert_leq(test_rel_err(y, acc, ny), 1e-5, "%s f=%d accumulate",
                          reg[r]->name, f);
            cr_assert_eq(gcn_spmm_run(ctx, reg[r], a, x, y, f, false), GCN_OK);
            cr_assert_leq(test_rel_err(y, ref, ny), 1e-5, "%s f=%d", reg[r]->name, f);
            free(acc);
            free(x);
            free(y);
            free(ref);
        }
    }
    gcn_csr_free(&a);
    free(rp);
    free(ci);
    free(v);
    gcn_ctx_free(&ctx);
}
