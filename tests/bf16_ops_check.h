/* Checks of the backends' bf16 products and bf16 epilogue, run on any
 * context: the CPU backend in test_bf16_ops.c, CUDA in test_gpu_bf16_ops.c. */
#ifndef GCN_TEST_BF16_OPS_CHECK_H
#define GCN_TEST_BF16_OPS_CHECK_H

#include "core/internal.h"

/* gemm_bf16 against a float64 sum of the same bf16 operands on awkward
 * shapes, both transposes, fp32 and bf16 outputs, overwriting and adding. */
void bf16_check_gemm(gcn_ctx *ctx);

/* The bf16 epilogue (statistics, forward, backward) on ctx against the
 * fp32 epilogue of the CPU context `cpu` on the widened values, rounded
 * once; `exact` asks for the same bits (ctx is a CPU context). */
void bf16_check_epilogue(gcn_ctx *ctx, gcn_ctx *cpu, bool exact);

/* A weight's bf16 copy, which products read: made at the first bf16
 * product, rewritten by each optimiser step (SGD and Adam) and by writes
 * from the host, it always holds the weight rounded to bf16. */
void bf16_check_weight_copy(gcn_ctx *ctx);

#endif
