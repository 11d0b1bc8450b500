/* Checkpoints and predictions over ranks on GPUs: ranks on one GPU (the
 * local transport) and one rank per GPU over NCCL, against one context on
 * a GPU.  Losses within 1e-4 relative, as the GPU's rank tests hold them
 * (test_gpu_ranks.c). */
#include <criterion/criterion.h>

#include "gpu_helpers.h"
#include "ranks_ckpt_check.h"

Test(gpu_ranks_checkpoint, round_trips_across_rank_counts_on_one_gpu, .timeout = 300)
{
    GPU_REQUIRED();
    ranks_ckpt_round_trip(GCN_DEVICE_CUDA, GCN_COMM_LOCAL, 2, 2, 3, 1e-4);
    ranks_ckpt_round_trip(GCN_DEVICE_CUDA, GCN_COMM_LOCAL, 1, 3, 1, 1e-4);
    ranks_ckpt_round_trip(GCN_DEVICE_CUDA, GCN_COMM_LOCAL, 1, 1, 4, 1e-4);
    ranks_ckpt_same_file(GCN_DEVICE_CUDA, GCN_COMM_LOCAL, 2);
    ranks_ckpt_bad_file(GCN_DEVICE_CUDA, GCN_COMM_LOCAL, 2);
}

Test(gpu_ranks_checkpoint, predictions_on_ranks_on_one_gpu_are_one_contexts, .timeout = 300)
{
    GPU_REQUIRED();
    ranks_ckpt_predictions(GCN_DEVICE_CUDA, GCN_COMM_LOCAL, 3, 1e-4f);
}

/* One NCCL rank per GPU: skipped on a host with one GPU. */
Test(gpu_ranks_checkpoint, nccl_ranks_save_resume_and_predict, .timeout = 300)
{
    GPU_REQUIRED();
    if (gcn_cuda_device_count() < 2)
        cr_skip_test("one CUDA device: two NCCL ranks need two");
    ranks_ckpt_round_trip(GCN_DEVICE_CUDA, GCN_COMM_NCCL, 1, 2, 1, 1e-4);
    ranks_ckpt_round_trip(GCN_DEVICE_CUDA, GCN_COMM_NCCL, 2, 1, 2, 1e-4);
    ranks_ckpt_bad_file(GCN_DEVICE_CUDA, GCN_COMM_NCCL, 2);
    ranks_ckpt_predictions(GCN_DEVICE_CUDA, GCN_COMM_NCCL, 2, 1e-4f);
}
