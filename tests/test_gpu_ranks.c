/* Training over several ranks on one GPU (the local transport), over NCCL
 * with one rank, and with a rank on each of two GPUs: products with halos,
 * synchronised batch norm and dropout, and whole runs against one
 * context. */
#include <criterion/criterion.h>
#include <string.h>

#include "gpu_helpers.h"
#include "ranks_check.h"

Test(gpu_ranks, spmm_with_halos_equals_the_whole_matrix)
{
    GPU_REQUIRED();
    for (int n = 1; n <= 3; n++)
        ranks_check_spmm(GCN_DEVICE_CUDA, n, 33, false);
    ranks_check_spmm(GCN_DEVICE_CUDA, 3, 2, true);
}

Test(gpu_ranks, spmm_in_chunks_equals_the_whole_matrix)
{
    GPU_REQUIRED();
    for (int k = 2; k <= GCN_HALO_MAX_CHUNKS; k++)
        ranks_check_spmm_chunked(GCN_DEVICE_CUDA, 3, 33, k == 3, k);
}

Test(gpu_ranks, batch_norm_and_dropout_over_ranks_equal_one_context)
{
    GPU_REQUIRED();
    for (int n = 1; n <= 4; n++)
        ranks_check_epilogue(GCN_DEVICE_CUDA, n);
}

static const char gcn_json[] =
    "{\"layers\": [{\"type\": \"gcn\", \"out\": 32, \"norm\": \"batch\", \"activation\": "
    "\"relu\", \"dropout\": 0.2}, {\"type\": \"gcn\", \"out\": \"classes\", \"dropout\": 0.5}], "
    "\"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}";

static const char gin_json[] =
    "{\"layers\": [{\"type\": \"gin\", \"out\": 32, \"norm\": \"batch\", \"activation\": "
    "\"relu\"}, {\"type\": \"gin\", \"out\": \"classes\", \"hidden\": 32, \"dropout\": 0.5}], "
    "\"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}";

Test(gpu_ranks, ranks_on_one_gpu_train_the_single_context_model, .timeout = 300)
{
    GPU_REQUIRED();
    ranks_check_training(GCN_DEVICE_CUDA, GCN_COMM_LOCAL, gcn_json, 2, 20, 1e-4);
    ranks_check_training(GCN_DEVICE_CUDA, GCN_COMM_LOCAL, gin_json, 3, 20, 1e-4);
}

Test(gpu_ranks, bf16_on_ranks_trains_the_single_context_model, .timeout = 300)
{
    GPU_REQUIRED();
    ranks_check_bf16(GCN_DEVICE_CUDA);
}

Test(gpu_ranks, one_nccl_rank_trains_the_single_context_model, .timeout = 300)
{
    GPU_REQUIRED();
    ranks_check_training(GCN_DEVICE_CUDA, GCN_COMM_NCCL, gcn_json, 1, 20, 1e-4);
}

/* Two NCCL ranks, one on each GPU: skipped on a host with one GPU. */
Test(gpu_ranks, two_nccl_ranks_on_two_gpus_train_the_single_context_model, .timeout = 300)
{
    GPU_REQUIRED();
    if (gcn_cuda_device_count() < 2)
        cr_skip_test("one CUDA device: two NCCL ranks need two");
    ranks_check_training(GCN_DEVICE_CUDA, GCN_COMM_NCCL, gcn_json, 2, 20, 1e-4);
    ranks_check_training(GCN_DEVICE_CUDA, GCN_COMM_NCCL, gin_json, 2, 20, 1e-4);
    ranks_check_training_on(GCN_DEVICE_CUDA, GCN_COMM_NCCL, gcn_json, 2, 10, 1e-4, 0.0);
}

/* Random edges on one GPU: the exchanges run in chunks. */
Test(gpu_ranks, ranks_with_chunked_exchanges_train_the_single_context_model, .timeout = 300)
{
    GPU_REQUIRED();
    ranks_check_training_on(GCN_DEVICE_CUDA, GCN_COMM_LOCAL, gcn_json, 4, 10, 1e-4, 0.0);
}
