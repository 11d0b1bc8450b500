/* End to end on the GPU: the two-layer GCN of test_train.c trained with Adam
 * on a generated SBM on both backends from one seed; loss curve, accuracy,
 * TF32, and no cudaMalloc once the SpMM selector has locked in. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "gpu_helpers.h"
#include "helpers.h"
#include "sbm_train.h"

/* FP32: the GPU loss follows the CPU's to 1e-4 per epoch and the test
 * accuracy agrees to one node; TF32: the accuracy within 2 points. */

Test(gpu_train, fp32_matches_cpu_loss_curve_and_accuracy, .timeout = 300)
{
    GPU_REQUIRED();
    run_result *cpu = calloc(1, sizeof *cpu), *gpu = calloc(1, sizeof *gpu);
    sbm_train(GCN_DEVICE_CPU, false, 2024, cpu);
    sbm_train(GCN_DEVICE_CUDA, false, 2024, gpu);
    for (int e = 0; e < EPOCHS; e++)
        cr_assert(fabsf(gpu->losses[e] - cpu->losses[e]) <= 1e-4f,
                  "epoch %d: GPU loss %.8g, CPU loss %.8g", e, (double)gpu->losses[e],
                  (double)cpu->losses[e]);
    cr_assert_geq(cpu->acc, 0.90, "CPU test accuracy %.4f", cpu->acc);
    cr_assert(fabs(gpu->acc - cpu->acc) <= 1.0 / (NODES - CLASSES * TRAIN_PER_CLASS) + 1e-12,
              "test accuracy GPU %.4f, CPU %.4f", gpu->acc, cpu->acc);
    free(cpu);
    free(gpu);
}

/* The A X call site runs once an epoch (X needs no gradient), and its
 * selector needs about 60 calls (five candidates: a warm-up and five samples
 * each, five more for those within 1.5x of the best, calls answered while
 * samples are in flight), fewer when it prunes: it locked at epoch 51 once
 * (H100), so the bound is half the run, leaving the other half to check. */
Test(gpu_train, steady_state_steps_make_no_cuda_malloc, .timeout = 300)
{
    GPU_REQUIRED();
    run_result *r = calloc(1, sizeof *r);
    sbm_train(GCN_DEVICE_CUDA, false, 7, r);
    cr_assert(r->steady_epoch >= 0 && r->steady_epoch < EPOCHS / 2,
              "the selector locked after epoch %d", r->steady_epoch);
    cr_assert_gt(r->steady.device_allocs, 0);
    cr_assert_eq(r->at_end.device_allocs, r->steady.device_allocs,
                 "%llu cudaMalloc calls in %d steady-state steps",
                 (unsigned long long)(r->at_end.device_allocs - r->steady.device_allocs),
                 EPOCHS - 1 - r->steady_epoch);
    cr_assert_eq(r->at_end.device_frees, r->steady.device_frees);
    free(r);
}

Test(gpu_train, tf32_reaches_the_same_accuracy, .timeout = 300)
{
    GPU_REQUIRED();
    run_result *cpu = calloc(1, sizeof *cpu), *gpu = calloc(1, sizeof *gpu);
    sbm_train(GCN_DEVICE_CPU, false, 2024, cpu);
    sbm_train(GCN_DEVICE_CUDA, true, 2024, gpu);
    cr_assert(fabs(gpu->acc - cpu->acc) <= 0.02, "test accuracy TF32 %.4f, CPU FP32 %.4f",
              gpu->acc, cpu->acc);
    cr_assert(fabsf(gpu->losses[EPOCHS - 1] - cpu->losses[EPOCHS - 1]) <=
                  0.05f * cpu->losses[EPOCHS - 1] + 1e-3f,
              "final loss TF32 %.6g, CPU %.6g", (double)gpu->losses[EPOCHS - 1],
              (double)cpu->losses[EPOCHS - 1]);
    free(cpu);
    free(gpu);
}
