/* Precision bf16 on the GPU: 50 epochs of GCN and GIN follow the GPU's
 * fp32 runs and the CPU's bf16 runs (bf16_train.c states the tolerance). */
#include <criterion/criterion.h>

#include "bf16_train.h"
#include "gpu_helpers.h"

static void compare(const char *json, const char *what)
{
    bf16_run gpu32, gpu16, cpu16;
    bf16_train(GCN_DEVICE_CUDA, json, "fp32", &gpu32);
    bf16_train(GCN_DEVICE_CUDA, json, "bf16", &gpu16);
    bf16_train(GCN_DEVICE_CPU, json, "bf16", &cpu16);
    bf16_expect_close(&gpu16, &gpu32, what);
    bf16_expect_close(&gpu16, &cpu16, what);
}

Test(gpu_train_bf16, gcn_follows_fp32_and_the_cpu, .timeout = 120)
{
    GPU_REQUIRED();
    compare(bf16_gcn_json, "gcn");
}

Test(gpu_train_bf16, gin_follows_fp32_and_the_cpu, .timeout = 120)
{
    GPU_REQUIRED();
    compare(bf16_gin_json, "gin");
}
