/* The CUDA backend's bf16 products (cuBLAS, tensor cores) and bf16
 * epilogue against the same references as the CPU's (bf16_ops_check.c). */
#include <criterion/criterion.h>

#include "bf16_ops_check.h"
#include "gpu_helpers.h"

Test(gpu_bf16_ops, gemm_follows_float64_on_awkward_shapes)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(1, false);
    bf16_check_gemm(p.gpu);
    gpu_pair_close(&p);
}

Test(gpu_bf16_ops, epilogue_follows_the_cpu_fp32_path)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(1, false);
    bf16_check_epilogue(p.gpu, p.cpu, false);
    gpu_pair_close(&p);
}

Test(gpu_bf16_ops, weight_copies_follow_their_weights)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(1, false);
    bf16_check_weight_copy(p.gpu);
    gpu_pair_close(&p);
}
