/* The node-order switch on a GPU (models/trainer_order.c): a run moved to
 * a METIS order and back mid-run, its epochs captured and replayed as CUDA
 * graphs before and after, trains the trajectory of a run that never
 * moved. */
#include <criterion/criterion.h>

#include "gpu_helpers.h"
#include "order_switch.h"

static gcn_ctx *cuda_ctx(uint64_t seed)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CUDA;
    o.seed = seed;
    gcn_ctx *ctx = NULL;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    return ctx;
}

Test(gpu_train_order, switch_and_back_keeps_the_trajectory, .timeout = 120)
{
    GPU_REQUIRED();
    /* float atomics in some kernels and sums over renumbered rows: float
     * rounding, grown over the epochs */
    order_switch_check(cuda_ctx, 24, 8, 18, 1e-4);
}
