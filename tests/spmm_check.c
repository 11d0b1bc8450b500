/* The float64 reference checks of CUDA SpMM kernels (spmm_check.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "spmm_check.h"

#define TOL 1e-5

/* ---- host matrices ------------------------------------------------------ */

hmat mat_alloc(int32_t n_rows, int32_t n_cols, const int32_t *deg)
{
    hmat m = {n_rows, n_cols, 0, malloc(((size_t)n_rows + 1) * sizeof(int32_t)), NULL, NULL};
    cr_assert_not_null(m.row_ptr);
    m.row_ptr[0] = 0;
    for (int32_t i = 0; i < n_rows; i++)
        m.row_ptr[i + 1] = m.row_ptr[i] + deg[i];
    m.nnz = m.row_ptr[n_rows];
    m.col_idx = malloc(((size_t)m.nnz + 1) * sizeof(int32_t));
    m.values = host_floats(m.nnz);
    cr_assert_not_null(m.col_idx);
    return m;
}

void mat_free(hmat *m)
{
    free(m->row_ptr);
    free(m->col_idx);
    free(m->values);
    memset(m, 0, sizeof *m);
}

static uint32_t next_u32(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)(*s >> 11);
}

/* A matrix with the given degrees: values in [-1, 1), distinct columns in
 * increasing order (deg <= n_cols) or, unsorted, random with repeats. */
hmat mat_random(int32_t n_rows, int32_t n_cols, const int32_t *deg, bool sorted,
                       uint64_t seed)
{
    hmat m = mat_alloc(n_rows, n_cols, deg);
    uint64_t s = seed | 1;
    test_fill_uniform(&s, m.values, m.nnz, -1, 1);
    for (int32_t i = 0; i < n_rows; i++) {
        int32_t b = m.row_ptr[i], d = deg[i];
        if (!sorted) {
            for (int32_t k = 0; k < d; k++)
                m.col_idx[b + k] = (int32_t)(next_u32(&s) % (uint32_t)n_cols);
            continue;
        }
        cr_assert_leq(d, n_cols);
        int64_t start = next_u32(&s) % (uint32_t)n_cols; /* d distinct columns, then sorted */
        for (int32_t k = 0; k < d; k++)
            m.col_idx[b + k] = (int32_t)((start + (int64_t)k * n_cols / d) % n_cols);
        for (int32_t k = 1; k < d; k++)
            for (int32_t j = k; j > 0 && m.col_idx[b + j - 1] > m.col_idx[b + j]; j--) {
                int32_t t = m.col_idx[b + j];
                m.col_idx[b + j] = m.col_idx[b + j - 1];
                m.col_idx[b + j - 1] = t;
            }
    }
    return m;
}

/* Uniform degrees in [0, max_deg]. */
int32_t *degrees_uniform(int32_t n, int32_t max_deg, uint64_t seed)
{
    int32_t *deg = malloc(((size_t)n + 1) * sizeof *deg);
    uint64_t s = seed | 1;
    for (int32_t i = 0; i < n; i++)
        deg[i] = (int32_t)(next_u32(&s) % (uint32_t)(max_deg + 1));
    return deg;
}

hmat mat_transpose(const hmat *a)
{
    int32_t *deg = calloc((size_t)a->n_cols + 1, sizeof *deg);
    for (int32_t e = 0; e < a->nnz; e++)
        deg[a->col_idx[e]]++;
    hmat t = mat_alloc(a->n_cols, a->n_rows, deg);
    int32_t *next = malloc(((size_t)a->n_cols + 1) * sizeof *next);
    memcpy(next, t.row_ptr, (size_t)a->n_cols * sizeof *next);
    for (int32_t i = 0; i < a->n_rows; i++)
        for (int32_t e = a->row_ptr[i]; e < a->row_ptr[i + 1]; e++) {
            int32_t d = next[a->col_idx[e]]++;
            t.col_idx[d] = i;
            t.values[d] = a->values[e];
        }
    free(next);
    free(deg);
    return t;
}

/* ---- reference and comparison ------------------------------------------- */

/* ref = A x in double and mag = |A| |x|, both [n_rows, f]. */
static void reference(const hmat *m, const float *x, int f, double *ref, double *mag)
{
    memset(ref, 0, (size_t)m->n_rows * f * sizeof *ref);
    memset(mag, 0, (size_t)m->n_rows * f * sizeof *mag);
    for (int32_t i = 0; i < m->n_rows; i++)
        for (int32_t e = m->row_ptr[i]; e < m->row_ptr[i + 1]; e++) {
            const float *xr = x + (int64_t)m->col_idx[e] * f;
            double v = m->values[e];
            double *r = ref + (int64_t)i * f, *g = mag + (int64_t)i * f;
            for (int j = 0; j < f; j++) {
                r[j] += v * xr[j];
                g[j] += fabs(v * xr[j]);
            }
        }
}

static void expect_match(const float *got, const double *ref, const double *mag,
                         const float *y0, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        double want = ref[i] + (y0 ? y0[i] : 0.0);
        double scale = mag[i] + (y0 ? fabs((double)y0[i]) : 0.0);
        cr_assert(fabs((double)got[i] - want) <= TOL * scale + 1e-30,
                  "%s: element %lld is %.9g, reference %.9g (summed magnitude %.6g)", what,
                  (long long)i, (double)got[i], want, scale);
    }
}


void product_init(product *p, gcn_ctx *gpu, const hmat *m, const gcn_csr *dev, int f,
                         size_t pad, const char *name)
{
    memset(p, 0, sizeof *p);
    p->m = m;
    p->dev = dev;
    p->f = f;
    p->pad = pad;
    p->name = name;
    uint64_t s = 1000003u * (uint64_t)f + (uint64_t)m->nnz + 7;
    int64_t nx = (int64_t)m->n_cols * f, ny = (int64_t)m->n_rows * f;
    p->x = host_random(&s, nx, -1, 1);
    p->y0 = host_random(&s, ny, -1, 1);
    p->ref = malloc(((size_t)ny + 1) * sizeof *p->ref);
    p->mag = malloc(((size_t)ny + 1) * sizeof *p->mag);
    reference(m, p->x, f, p->ref, p->mag);
    p->xbuf = gpu_alloc(gpu, ((size_t)nx + pad) * sizeof(float));
    p->ybuf = gpu_alloc(gpu, ((size_t)ny + pad) * sizeof(float));
    if (nx > 0)
        cr_assert_eq(gpu->be->upload(gpu, p->xbuf + pad, p->x, (size_t)nx * sizeof(float)), GCN_OK);
}

void product_free(product *p, gcn_ctx *gpu)
{
    int64_t nx = (int64_t)p->m->n_cols * p->f, ny = (int64_t)p->m->n_rows * p->f;
    gpu_release(gpu, p->xbuf, ((size_t)nx + p->pad) * sizeof(float));
    gpu_release(gpu, p->ybuf, ((size_t)ny + p->pad) * sizeof(float));
    free(p->x);
    free(p->y0);
    free(p->ref);
    free(p->mag);
}

/* y (+)= A x with one kernel from a fresh plan: overwrite from NaN,
 * accumulate onto y0, and overwrite again (same bits for deterministic
 * kernels); runs must not allocate. */
void run_kernel(gcn_ctx *gpu, const gcn_spmm_impl *impl, const product *p)
{
    int64_t ny = (int64_t)p->m->n_rows * p->f;
    float *y = p->ybuf ? p->ybuf + p->pad : NULL, *got = host_floats(ny), *first = host_floats(ny);
    const float *x = p->xbuf ? p->xbuf + p->pad : NULL;
    char what[200];
    void *plan = NULL;
    cr_assert_eq(impl->plan(gpu, p->dev, p->f, &plan), GCN_OK, "%s plan: %s", impl->name,
                 gcn_last_error(gpu));
    gcn_memory_stats before, after;
    gcn_ctx_memory_stats(gpu, &before);
    for (int pass = 0; pass < 3; pass++) {
        bool acc = pass == 1;
        for (int64_t i = 0; i < ny; i++)
            got[i] = acc ? p->y0[i] : NAN;
        if (ny > 0)
            cr_assert_eq(gpu->be->upload(gpu, y, got, (size_t)ny * sizeof(float)), GCN_OK);
        cr_assert_eq(impl->run(gpu, plan, p->dev, x, y, p->f, acc), GCN_OK, "%s run: %s",
                     impl->name, gcn_last_error(gpu));
        gpu_download(gpu, got, y, (size_t)ny * sizeof(float));
        snprintf(what, sizeof what, "%s on %s, %d x %d, F = %d%s%s", impl->name, p->name,
                 p->m->n_rows, p->m->n_cols, p->f, acc ? ", accumulate" : "",
                 p->pad ? ", misaligned" : "");
        expect_match(got, p->ref, p->mag, acc ? p->y0 : NULL, ny, what);
        if (pass == 0)
            memcpy(first, got, (size_t)ny * sizeof(float));
        if (pass == 2 && impl->deterministic)
            expect_same(got, first, ny, what);
    }
    gcn_ctx_memory_stats(gpu, &after);
    cr_assert_eq(after.device_allocs, before.device_allocs, "%s: a run called cudaMalloc", what);
    cr_assert_eq(after.in_use, before.in_use, "%s: a run allocated", what);
    impl->free_plan(plan);
    free(got);
    free(first);
}

/* Every CUDA kernel of the registry on one product. */
int run_all(gcn_ctx *gpu, const product *p)
{
    int n_impls = 0, tested = 0;
    const gcn_spmm_impl *const *reg = gcn_spmm_registry(&n_impls);
    for (int k = 0; k < n_impls; k++)
        if (reg[k]->device == GCN_DEVICE_CUDA && reg[k]->supports(p->dev, p->f)) {
            run_kernel(gpu, reg[k], p);
            tested++;
        }
    return tested;
}


hmat mat_download(gcn_ctx *gpu, const gcn_csr *a)
{
    int32_t *deg = calloc((size_t)a->n_rows + 1, sizeof *deg);
    int32_t *rp = malloc(((size_t)a->n_rows + 1) * sizeof *rp);
    cr_assert(deg && rp);
    cr_assert_eq(gcn_csr_to_host(gpu, a, rp, NULL, NULL), GCN_OK);
    for (int32_t i = 0; i < a->n_rows; i++)
        deg[i] = rp[i + 1] - rp[i];
    hmat m = mat_alloc(a->n_rows, a->n_cols, deg);
    cr_assert_eq(gcn_csr_to_host(gpu, a, NULL, m.col_idx, m.values), GCN_OK);
    free(deg);
    free(rp);
    return m;
}
