/* The CPU reference SpMM: one pass over each row's non-zeros, adding the
 * scaled rows of X into the output row. */
#include "../core/internal.h"
#include "spmm_impls.h"

static bool cpu_supports(const gcn_csr *a, int feat)
{
    return a->device == GCN_DEVICE_CPU && feat >= 1;
}

static gcn_status cpu_plan(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    (void)ctx;
    (void)a;
    (void)feat;
    *plan = NULL;
    return GCN_OK;
}

static gcn_status cpu_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x, float *y,
                          int feat, bool accumulate)
{
    (void)ctx;
    (void)plan;
    for (int32_t i = 0; i < a->n_rows; i++) {
        float *yi = y + (int64_t)i * feat;
        if (!accumulate)
            for (int j = 0; j < feat; j++)
                yi[j] = 0.0f;
        for (int32_t e = a->row_ptr[i]; e < a->row_ptr[i + 1]; e++) {
            const float *xr = x + (int64_t)a->col_idx[e] * feat;
            float v = a->values[e];
            for (int j = 0; j < feat; j++)
                yi[j] += v * xr[j];
        }
    }
    return GCN_OK;
}

static void cpu_free_plan(void *plan)
{
    (void)plan;
}

const gcn_spmm_impl gcn_spmm_cpu = {
    .size = sizeof(gcn_spmm_impl),
    .name = "cpu",
    .device = GCN_DEVICE_CPU,
    .deterministic = true,
    .roles = GCN_SPMM_ROLE_WHOLE,
    .supports = cpu_supports,
    .plan = cpu_plan,
    .run = cpu_run,
    .free_plan = cpu_free_plan,
};
