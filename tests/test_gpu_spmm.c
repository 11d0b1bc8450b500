/* Every CUDA SpMM kernel in the registry against the CPU reference kernel on
 * awkward matrices and feature widths (each kernel on the matrices its
 * `supports` accepts); determinism, plan reuse without cudaMalloc, and the
 * differentiable op's backward through the transpose. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_helpers.h"
#include "helpers.h"
#include "kernels/spmm/internal.h"

/* Matrices: empty rows, one huge row, a single row or column, no non-zeros,
 * more than 65,535 rows, unsorted columns with duplicates; widths 1, 7, 32,
 * 33, 130.  Kernels sum a row's products in their own order and a row's sum
 * may cancel, so an element is judged against the magnitude of what was
 * summed: |GPU - CPU| <= 1e-5 (|A| |X| + |Y0|) element-wise (float summation
 * error relative to that is near 1e-7 even for 20,000 terms). */

typedef struct host_mat {
    int32_t n_rows, n_cols, nnz;
    int32_t *row_ptr, *col_idx;
    float *values;
} host_mat;

typedef struct mat_case {
    const char *name;
    int32_t n_rows, n_cols;
    int max_deg;      /* degrees uniform in [0, max_deg]; every 7th row empty */
    int32_t huge_row; /* a row with huge_deg non-zeros, or -1 */
    int32_t huge_deg;
    bool sorted;      /* columns increasing and distinct within a row */
} mat_case;

static const mat_case mats[] = {
    {"1x1", 1, 1, 1, 0, 1, true},
    {"one long row", 1, 5003, 0, 0, 3000, true},
    {"one column", 5003, 1, 1, -1, 0, true},
    {"no non-zeros", 100, 50, 0, -1, 0, true},
    {"rectangular", 333, 4097, 9, 5, 700, true},
    {"70001 rows, unsorted, duplicates", 70001, 70001, 8, 12345, 20000, false},
};
#define N_MATS ((int)(sizeof mats / sizeof mats[0]))

static const int feats[] = {1, 7, 32, 33, 130};
#define N_FEATS ((int)(sizeof feats / sizeof feats[0]))

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static host_mat make_mat(const mat_case *mc, uint64_t seed)
{
    host_mat m = {mc->n_rows, mc->n_cols, 0, NULL, NULL, NULL};
    uint64_t s = seed;
    float *u = host_random(&s, mc->n_rows, 0, 1);
    m.row_ptr = malloc(((size_t)mc->n_rows + 1) * sizeof *m.row_ptr);
    m.row_ptr[0] = 0;
    for (int32_t i = 0; i < mc->n_rows; i++) {
        int32_t d = i % 7 == 3 ? 0 : (int32_t)(u[i] * (float)(mc->max_deg + 1));
        if (i == mc->huge_row)
            d = mc->huge_deg;
        if (mc->sorted && d > mc->n_cols)
            d = mc->n_cols;
        m.row_ptr[i + 1] = m.row_ptr[i] + d;
    }
    m.nnz = m.row_ptr[mc->n_rows];
    size_t nz = (size_t)(m.nnz > 0 ? m.nnz : 1);
    m.col_idx = malloc(nz * sizeof *m.col_idx);
    m.values = host_random(&s, m.nnz, -1, 1);
    float *c = host_random(&s, m.nnz, 0, 1);
    for (int32_t i = 0; i < mc->n_rows; i++) {
        int32_t b = m.row_ptr[i], d = m.row_ptr[i + 1] - b;
        if (mc->sorted) { /* d distinct columns: a strided walk from a random start */
            int32_t start = (int32_t)(c[b < m.nnz ? b : 0] * (float)mc->n_cols) % mc->n_cols;
            for (int32_t k = 0; k < d; k++)
                m.col_idx[b + k] = (int32_t)((start + (int64_t)k * mc->n_cols / (d > 0 ? d : 1)) %
                                             mc->n_cols);
            qsort(m.col_idx + b, (size_t)d, sizeof *m.col_idx, cmp_i32);
        } else {
            for (int32_t k = 0; k < d; k++)
                m.col_idx[b + k] = (int32_t)(c[b + k] * (float)mc->n_cols) % mc->n_cols;
        }
    }
    free(u);
    free(c);
    return m;
}

static void free_mat(host_mat *m)
{
    free(m->row_ptr);
    free(m->col_idx);
    free(m->values);
}

static gcn_csr *upload_mat(gcn_ctx *ctx, const host_mat *m)
{
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, m->n_rows, m->n_cols, m->nnz, m->row_ptr, m->col_idx,
                                m->values),
                 GCN_OK, "%s", gcn_last_error(ctx));
    return a;
}

static const gcn_spmm_impl *cpu_reference(void)
{
    const gcn_spmm_impl *ref = gcn_spmm_find(NULL, "cpu");
    cr_assert_not_null(ref, "the registry has no cpu reference kernel");
    return ref;
}

/* Fails unless |got - want| <= tol * scale element-wise (NaN meets NaN). */
static void expect_close_scaled(const float *got, const float *want, const double *scale,
                                int64_t n, double tol, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        if (isnan(got[i]) || isnan(want[i])) {
            cr_assert(isnan(got[i]) && isnan(want[i]), "%s[%lld]: GPU %.9g, CPU %.9g", what,
                      (long long)i, (double)got[i], (double)want[i]);
            continue;
        }
        cr_assert(fabs((double)got[i] - want[i]) <= tol * scale[i] + 1e-30,
                  "%s[%lld]: GPU %.9g, CPU %.9g, summed magnitude %.6g", what, (long long)i,
                  (double)got[i], (double)want[i], scale[i]);
    }
}

/* |A| |x| (+ |y0|): the magnitude each output element sums. */
static double *abs_product(const host_mat *m, const float *x, const float *y0, int f)
{
    double *s = calloc((size_t)m->n_rows * f + 1, sizeof *s);
    for (int32_t i = 0; i < m->n_rows; i++)
        for (int32_t e = m->row_ptr[i]; e < m->row_ptr[i + 1]; e++)
            for (int j = 0; j < f; j++) {
                double t = (double)m->values[e] * x[(int64_t)m->col_idx[e] * f + j];
                s[(int64_t)i * f + j] += fabs(t);
            }
    for (int64_t i = 0; y0 && i < (int64_t)m->n_rows * f; i++)
        s[i] += fabs((double)y0[i]);
    return s;
}

/* y = A x and y += A x with one kernel against the CPU reference; then the
 * same product again must allocate nothing, and a kernel that says it is
 * deterministic must give the same bits. */
static void check_kernel(gpu_pair *p, const gcn_spmm_impl *impl, const gcn_csr *ac,
                         const gcn_csr *ag, const host_mat *m, int f, const char *mname)
{
    uint64_t s = 555 + (uint64_t)f;
    int64_t nx = (int64_t)m->n_cols * f, ny = (int64_t)m->n_rows * f;
    float *x = host_random(&s, nx, -1, 1), *y0 = host_random(&s, ny, -1, 1);
    float *dxp = gpu_upload(p->gpu, x, (size_t)nx * 4);
    char what[160];
    for (int acc = 0; acc < 2; acc++) {
        dual y = dual_new(p->gpu, y0, ny);
        if (!acc) { /* an overwrite must not read y: start from NaN */
            for (int64_t i = 0; i < ny; i++)
                y.h[i] = NAN;
            cr_assert_eq(p->gpu->be->upload(p->gpu, y.d, y.h, (size_t)ny * 4), GCN_OK);
        }
        cr_assert_eq(gcn_spmm_run(p->cpu, cpu_reference(), ac, x, y.h, f, acc), GCN_OK);
        cr_assert_eq(gcn_spmm_run(p->gpu, impl, ag, dxp, y.d, f, acc), GCN_OK, "%s: %s",
                     impl->name, gcn_last_error(p->gpu));
        snprintf(what, sizeof what, "%s on %s, f = %d%s", impl->name, mname, f,
                 acc ? ", accumulate" : "");
        double *scale = abs_product(m, x, acc ? y0 : NULL, f);
        float *got = host_floats(ny);
        gpu_download(p->gpu, got, y.d, (size_t)ny * 4);
        expect_close_scaled(got, y.h, scale, ny, 1e-5, what);
        free(got);
        free(scale);
        if (!acc) {
            gcn_memory_stats before, after;
            gcn_ctx_memory_stats(p->gpu, &before);
            float *first = host_floats(ny), *again = host_floats(ny);
            gpu_download(p->gpu, first, y.d, (size_t)ny * 4);
            cr_assert_eq(gcn_spmm_run(p->gpu, impl, ag, dxp, y.d, f, false), GCN_OK);
            gcn_ctx_memory_stats(p->gpu, &after);
            cr_assert_eq(after.device_allocs, before.device_allocs,
                         "%s: a second run with a cached plan called cudaMalloc", what);
            cr_assert_eq(after.in_use, before.in_use, "%s: a run allocated", what);
            gpu_download(p->gpu, again, y.d, (size_t)ny * 4);
            if (impl->deterministic)
                expect_same(again, first, ny, what);
            free(first);
            free(again);
        }
        dual_free(p->gpu, &y);
    }
    gpu_release(p->gpu, dxp, (size_t)nx * 4);
    free(x);
    free(y0);
}

Test(gpu_spmm, kernels_match_cpu)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(21, false);
    int n_impls = 0;
    const gcn_spmm_impl *const *reg = gcn_spmm_registry(&n_impls);
    int tested = 0;
    for (int mi = 0; mi < N_MATS; mi++) {
        host_mat m = make_mat(&mats[mi], 100 + (uint64_t)mi);
        gcn_csr *ac = upload_mat(p.cpu, &m), *ag = upload_mat(p.gpu, &m);
        for (int k = 0; k < n_impls; k++) {
            if (reg[k]->device != GCN_DEVICE_CUDA)
                continue;
            for (int fi = 0; fi < N_FEATS; fi++) {
                if (!reg[k]->supports(ag, feats[fi]))
                    continue;
                check_kernel(&p, reg[k], ac, ag, &m, feats[fi], mats[mi].name);
                tested++;
            }
        }
        gcn_csr_free(&ac);
        gcn_csr_free(&ag);
        free_mat(&m);
    }
    cr_assert_gt(tested, 0, "no CUDA SpMM kernel was tested");
    gpu_pair_close(&p);
}

Test(gpu_spmm, cusparse_registered)
{
    GPU_REQUIRED();
    const gcn_spmm_impl *impl = gcn_spmm_find(NULL, "cusparse");
    cr_assert_not_null(impl);
    cr_assert_eq(impl->device, GCN_DEVICE_CUDA);
    cr_assert_not(impl->deterministic, "cuSPARSE adds the parts of long rows atomically");
    gpu_pair p = gpu_pair_open(22, false);
    cr_assert_eq(gcn_spmm_set_kernel(p.gpu, "cusparse"), GCN_OK);
    cr_assert_str_eq(gcn_spmm_kernel(p.gpu), "cusparse");
    cr_assert_eq(gcn_spmm_set_kernel(p.cpu, "cusparse"), GCN_ERR_NOT_FOUND);
    /* a matrix with a repeated column is refused with a reason, not multiplied */
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(p.gpu, &a, 2, 2, 3, (int32_t[]){0, 2, 3}, (int32_t[]){1, 1, 0},
                                NULL),
                 GCN_OK);
    cr_assert_not(impl->supports(a, 4));
    gcn_tensor *x = NULL, *y = NULL;
    cr_assert_eq(gcn_tensor_zeros(p.gpu, &x, 2, 4), GCN_OK);
    cr_assert_eq(gcn_spmm(p.gpu, a, x, &y), GCN_ERR_UNSUPPORTED);
    cr_assert(strstr(gcn_last_error(p.gpu), "'cusparse'"), "%s", gcn_last_error(p.gpu));
    cr_assert_null(y);
    cr_assert_eq(gcn_spmm_set_kernel(p.gpu, "auto"), GCN_OK);
    cr_assert_eq(gcn_spmm(p.gpu, a, x, &y), GCN_OK, "auto falls back to a kernel that takes it");
    gcn_tensor_free(&y);
    gcn_tensor_free(&x);
    gcn_csr_free(&a);
    gpu_pair_close(&p);
}

/* rowpack addresses X with 32-bit offsets: it declines an X of more than
 * 2^32 floats (here 2^25 + 1 rows of 128) in `supports`, which the
 * selector's candidate lists consult, and in its plan, and takes the same
 * matrix at F = 64. */
Test(gpu_spmm, rowpack_declines_x_over_2_32_floats)
{
    GPU_REQUIRED();
    const gcn_spmm_impl *impl = gcn_spmm_find(NULL, "rowpack");
    cr_assert_not_null(impl);
    gpu_pair p = gpu_pair_open(23, false);
    const int32_t n_cols = (1 << 25) + 1;
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(p.gpu, &a, 2, n_cols, 2, (int32_t[]){0, 1, 2},
                                (int32_t[]){0, n_cols - 1}, (float[]){1.0f, 2.0f}),
                 GCN_OK, "%s", gcn_last_error(p.gpu));
    cr_assert_not(impl->supports(a, 128));
    cr_assert(impl->supports(a, 64));
    void *plan = NULL;
    cr_assert_eq(impl->plan(p.gpu, a, 128, &plan), GCN_ERR_UNSUPPORTED);
    cr_assert_null(plan);
    cr_assert(strstr(gcn_last_error(p.gpu), "2^32"), "%s", gcn_last_error(p.gpu));
    cr_assert_eq(impl->plan(p.gpu, a, 64, &plan), GCN_OK, "%s", gcn_last_error(p.gpu));
    impl->free_plan(plan);
    gcn_csr_free(&a);
    gpu_pair_close(&p);
}

/* loss = nll(log_softmax(spmm(A, X) W)) on a non-symmetric matrix: dX goes
 * through the stored transpose of A on each backend. */
static float *spmm_grad(gcn_ctx *ctx, const host_mat *m, int f, float *loss)
{
    uint64_t s = 808;
    float *hx = host_random(&s, (int64_t)m->n_cols * f, -1, 1), *hw = host_random(&s, f * 5, -1, 1);
    int32_t *labels = malloc((size_t)m->n_rows * sizeof *labels);
    int32_t *rows = malloc((size_t)m->n_rows * sizeof *rows);
    for (int32_t i = 0; i < m->n_rows; i++) {
        labels[i] = i % 5;
        rows[i] = i;
    }
    gcn_csr *a = upload_mat(ctx, m);
    cr_assert_not(gcn_csr_is_symmetric(a));
    gcn_tensor *x = test_tensor(ctx, hx, m->n_cols, f), *w = test_tensor(ctx, hw, f, 5);
    gcn_index *il = test_index(ctx, labels, m->n_rows), *ir = test_index(ctx, rows, m->n_rows);
    cr_assert_eq(gcn_tensor_set_requires_grad(x, true), GCN_OK);
    gcn_tensor *y = NULL, *z = NULL, *lp = NULL, *l = NULL;
    cr_assert_eq(gcn_spmm(ctx, a, x, &y), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_matmul(ctx, y, w, false, false, &z), GCN_OK);
    cr_assert_eq(gcn_log_softmax(ctx, z, &lp), GCN_OK);
    cr_assert_eq(gcn_nll_loss(ctx, lp, il, ir, &l), GCN_OK);
    cr_assert_eq(gcn_tensor_to_host(ctx, l, loss), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, l), GCN_OK, "%s", gcn_last_error(ctx));
    float *g = test_read(ctx, gcn_tensor_grad(x));
    gcn_tensor *all[] = {x, w, y, z, lp, l};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gcn_tensor_free(&all[i]);
    gcn_index_free(&il);
    gcn_index_free(&ir);
    gcn_csr_free(&a);
    free(hx);
    free(hw);
    free(labels);
    free(rows);
    return g;
}

/* Every CUDA kernel that takes the matrix and its transpose, on a directed
 * matrix with unsorted, repeated columns and on a sorted one (cusparse
 * takes only the latter). */
Test(gpu_spmm, backward_uses_transpose)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(23, false);
    const mat_case cases[] = {{"directed, unsorted", 4001, 3001, 12, 7, 2500, false},
                              {"directed, sorted", 4001, 3001, 12, 7, 2500, true}};
    int n_impls = 0, tested_cusparse = 0;
    const gcn_spmm_impl *const *reg = gcn_spmm_registry(&n_impls);
    for (int ci = 0; ci < 2; ci++) {
        host_mat m = make_mat(&cases[ci], 4);
        gcn_csr *ag = upload_mat(p.gpu, &m);
        float lc, lg;
        float *gc = spmm_grad(p.cpu, &m, 33, &lc);
        for (int k = 0; k < n_impls; k++) {
            if (reg[k]->device != GCN_DEVICE_CUDA || !reg[k]->supports(ag, 33) ||
                !reg[k]->supports(gcn_csr_transpose(ag), 33))
                continue;
            tested_cusparse += !strcmp(reg[k]->name, "cusparse");
            char what[96];
            snprintf(what, sizeof what, "%s on %s", reg[k]->name, cases[ci].name);
            cr_assert_eq(gcn_spmm_set_kernel(p.gpu, reg[k]->name), GCN_OK);
            float *gg = spmm_grad(p.gpu, &m, 33, &lg);
            cr_assert(fabsf(lg - lc) <= 1e-5f * fmaxf(1.0f, fabsf(lc)),
                      "%s: loss %.8g vs CPU %.8g", what, (double)lg, (double)lc);
            expect_close(gg, gc, (int64_t)m.n_cols * 33, 1e-5, what);
            free(gg);
        }
        free(gc);
        gcn_csr_free(&ag);
        free_mat(&m);
    }
    cr_assert_eq(tested_cusparse, 1, "cusparse must run on the sorted matrix only");
    gpu_pair_close(&p);
}

/* The plans share one host copy of a device matrix's row_ptr: downloaded
 * once and kept, and dropped when a one-step matrix is pointed at other
 * arrays. */
Test(gpu_spmm, host_row_ptr_kept_with_the_matrix)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(23, false);
    const int32_t rp[] = {0, 2, 3, 5}, ci[] = {0, 2, 1, 0, 2};
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(p.gpu, &a, 3, 3, 5, rp, ci, NULL), GCN_OK);
    const int32_t *h1 = NULL, *h2 = NULL;
    cr_assert_eq(gcn_csr_host_row_ptr(p.gpu, a, &h1), GCN_OK);
    cr_assert_arr_eq(h1, rp, sizeof rp);
    cr_assert_eq(gcn_csr_host_row_ptr(p.gpu, a, &h2), GCN_OK);
    cr_assert_eq(h1, h2, "one copy, downloaded once");
    gcn_csr_free(&a);

    const int32_t rp1[] = {0, 1, 2}, rp2[] = {0, 0, 2}, ci2[] = {0, 1};
    const float v2[] = {1, 1};
    int32_t *d_rp1 = gpu_upload(p.gpu, rp1, sizeof rp1), *d_rp2 = gpu_upload(p.gpu, rp2, sizeof rp2);
    int32_t *d_ci = gpu_upload(p.gpu, ci2, sizeof ci2);
    float *d_v = gpu_upload(p.gpu, v2, sizeof v2);
    cr_assert_eq(
        gcn_spmm_borrow(p.gpu, 2, 2, d_rp1, d_ci, d_v, gcn_spmm_one_step_kernel(p.gpu), &a),
        GCN_OK);
    cr_assert_eq(gcn_csr_host_row_ptr(p.gpu, a, &h1), GCN_OK);
    cr_assert_arr_eq(h1, rp1, sizeof rp1);
    cr_assert_eq(gcn_spmm_reborrow(p.gpu, a, 2, 2, d_rp2, d_ci, d_v), GCN_OK);
    cr_assert_eq(gcn_csr_host_row_ptr(p.gpu, a, &h2), GCN_OK);
    cr_assert_arr_eq(h2, rp2, sizeof rp2, "the new arrays' row_ptr");
    gcn_csr_free(&a);
    gpu_release(p.gpu, d_rp1, sizeof rp1);
    gpu_release(p.gpu, d_rp2, sizeof rp2);
    gpu_release(p.gpu, d_ci, sizeof ci2);
    gpu_release(p.gpu, d_v, sizeof v2);
    gpu_pair_close(&p);
}
