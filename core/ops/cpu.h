/* CPU backend functions defined in core/cpu_pool.c, gemm_cpu.c, bf16_cpu.c,
 * nn_cpu.c and epilogue_cpu.c, gathered into the gcn_backend_cpu table in cpu.c.
 * Types and semantics: gcn_be_*_fn in internal.h. */
#ifndef GCN_OPS_CPU_H
#define GCN_OPS_CPU_H

#include <string.h>

#include "core/internal.h"

/* Whether x[0, 8) are all zeros (of either sign): one vector test, for the
 * loops that skip the zeros of sparse features eight at a time. */
static inline bool gcn_cpu_zeros8(const float *x)
{
    uint32_t bits[8], any = 0;
    memcpy(bits, x, sizeof bits);
    for (int i = 0; i < 8; i++)
        any |= bits[i] << 1;
    return any == 0;
}

/* Dense products: OpenBLAS, or a path for operands of mostly zeros (gemm_cpu.c). */
gcn_be_gemm_fn gcn_cpu_gemm;
/* bf16 operands widened to fp32 for gcn_cpu_gemm (bf16_cpu.c). */
gcn_be_gemm_bf16_fn gcn_cpu_gemm_bf16;
/* n bf16 values widened into a new fp32 block *out of the host pool
 * (gcn_cpu_release with n floats' bytes); bf16_cpu.c. */
gcn_status gcn_cpu_widen(gcn_ctx *ctx, const uint16_t *x, int64_t n, float **out);

/* The OPENBLAS_CORETYPE to suggest when OpenBLAS runs the kernels of a
 * core without AVX (corename, openblas_get_corename's) on a CPU with AVX2
 * (and avx512f: AVX-512), else NULL. */
const char *gcn_cpu_blas_coretype_advice(const char *corename, bool avx2, bool avx512f);

/* Host memory through the context's caching pool (cpu_pool.c). */
gcn_be_alloc_fn gcn_cpu_alloc;
gcn_be_release_fn gcn_cpu_release;
/* Returns the pool's free blocks to the system and frees it (gcn_ctx_free). */
void gcn_cpu_pool_free(gcn_ctx *ctx);

gcn_be_batchnorm_train_fn gcn_cpu_batchnorm_train;
gcn_be_batchnorm_eval_fn gcn_cpu_batchnorm_eval;
gcn_be_batchnorm_backward_fn gcn_cpu_batchnorm_backward;
gcn_be_batchnorm_eval_backward_fn gcn_cpu_batchnorm_eval_backward;
gcn_be_log_softmax_fn gcn_cpu_log_softmax;
gcn_be_log_softmax_backward_fn gcn_cpu_log_softmax_backward;
gcn_be_nll_fn gcn_cpu_nll;
gcn_be_nll_backward_fn gcn_cpu_nll_backward;
gcn_be_segment_pool_fn gcn_cpu_segment_pool;
gcn_be_segment_pool_backward_fn gcn_cpu_segment_pool_backward;
gcn_be_heads_fn gcn_cpu_heads;
gcn_be_heads_backward_fn gcn_cpu_heads_backward;
gcn_be_count_correct_fn gcn_cpu_count_correct;
gcn_be_cross_entropy_fn gcn_cpu_cross_entropy;
gcn_be_cross_entropy_backward_fn gcn_cpu_cross_entropy_backward;
gcn_be_epilogue_stats_fn gcn_cpu_epilogue_stats;
gcn_be_epilogue_forward_fn gcn_cpu_epilogue_forward;
gcn_be_epilogue_backward_fn gcn_cpu_epilogue_backward;

#endif
