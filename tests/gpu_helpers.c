/* GPU test fixtures (see gpu_helpers.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_helpers.h"
#include "helpers.h"

gpu_pair gpu_pair_open(uint64_t seed, bool tf32)
{
    gpu_pair p = {0};
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.seed = seed;
    o.device = GCN_DEVICE_CPU;
    cr_assert_eq(gcn_ctx_create(&p.cpu, &o), GCN_OK);
    o.device = GCN_DEVICE_CUDA;
    o.tf32 = tf32;
    gcn_status st = gcn_ctx_create(&p.gpu, &o);
    cr_assert_eq(st, GCN_OK, "CUDA context: %s", gcn_status_str(st));
    cr_assert_eq(gcn_ctx_device(p.gpu), GCN_DEVICE_CUDA);
    return p;
}

void gpu_pair_close(gpu_pair *p)
{
    if (p->gpu) {
        gcn_memory_stats ms;
        gcn_ctx_memory_stats(p->gpu, &ms);
        cr_expect_eq(ms.in_use, 0, "%zu device bytes still in use at the end of the test",
                     ms.in_use);
    }
    gcn_ctx_free(&p->cpu);
    gcn_ctx_free(&p->gpu);
}

void *gpu_alloc(gcn_ctx *gpu, size_t bytes)
{
    void *d = NULL;
    cr_assert_eq(gcn_mem_alloc(gpu, &d, bytes), GCN_OK, "%s", gcn_last_error(gpu));
    return d;
}

void *gpu_upload(gcn_ctx *gpu, const void *host, size_t bytes)
{
    void *d = gpu_alloc(gpu, bytes);
    if (bytes > 0)
        cr_assert_eq(gpu->be->upload(gpu, d, host, bytes), GCN_OK, "%s", gcn_last_error(gpu));
    return d;
}

void gpu_download(gcn_ctx *gpu, void *host, const void *dev, size_t bytes)
{
    if (bytes > 0)
        cr_assert_eq(gpu->be->download(gpu, host, dev, bytes), GCN_OK, "%s",
                     gcn_last_error(gpu));
}

void gpu_release(gcn_ctx *gpu, void *dev, size_t bytes)
{
    gcn_mem_release(gpu, dev, bytes);
}

float *host_floats(int64_t n)
{
    float *h = malloc((size_t)(n > 0 ? n : 1) * sizeof *h);
    cr_assert_not_null(h);
    return h;
}

float *host_random(uint64_t *state, int64_t n, float lo, float hi)
{
    float *h = host_floats(n);
    test_fill_uniform(state, h, n, lo, hi);
    return h;
}

float *host_copy(const float *src, int64_t n)
{
    float *h = host_floats(n);
    memcpy(h, src, (size_t)(n > 0 ? n : 0) * sizeof *h);
    return h;
}

void expect_close(const float *got, const float *want, int64_t n, double tol, const char *what)
{
    double scale = 0.0, worst = 0.0;
    int64_t at = -1;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(want[i]) || isnan(got[i])) {
            cr_assert(isnan(want[i]) && isnan(got[i]), "%s[%lld]: GPU %.9g, CPU %.9g", what,
                      (long long)i, (double)got[i], (double)want[i]);
            continue;
        }
        scale = fmax(scale, fabs((double)want[i]));
        double d = fabs((double)got[i] - (double)want[i]);
        if (d > worst) {
            worst = d;
            at = i;
        }
    }
    cr_assert(worst <= tol * scale,
              "%s: element %lld differs by %.3g (GPU %.9g, CPU %.9g), more than %.1e of the "
              "largest magnitude %.6g",
              what, (long long)at, worst, at >= 0 ? (double)got[at] : 0.0,
              at >= 0 ? (double)want[at] : 0.0, tol, scale);
}

void expect_same(const float *got, const float *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        bool same = got[i] == want[i] || (isnan(got[i]) && isnan(want[i]));
        cr_assert(same, "%s[%lld]: GPU %.9g, CPU %.9g", what, (long long)i, (double)got[i],
                  (double)want[i]);
    }
}

dual dual_new(gcn_ctx *gpu, const float *init, int64_t n)
{
    dual x = {host_copy(init, n), NULL, n};
    x.d = gpu_upload(gpu, init, (size_t)n * sizeof(float));
    return x;
}

dual dual_random(gcn_ctx *gpu, uint64_t *state, int64_t n, float lo, float hi)
{
    float *h = host_random(state, n, lo, hi);
    dual d = dual_new(gpu, h, n);
    free(h);
    return d;
}

void dual_check(gcn_ctx *gpu, const dual *x, double tol, const char *what)
{
    float *got = host_floats(x->n);
    gpu_download(gpu, got, x->d, (size_t)x->n * sizeof(float));
    if (tol == 0.0)
        expect_same(got, x->h, x->n, what);
    else
        expect_close(got, x->h, x->n, tol, what);
    free(got);
}

void dual_free(gcn_ctx *gpu, dual *x)
{
    gpu_release(gpu, x->d, (size_t)x->n * sizeof(float));
    free(x->h);
    x->h = x->d = NULL;
}
