/* The CPU backend's bf16 products and bf16 epilogue (bf16_ops_check.c
 * states the references and tolerances). */
#include <criterion/criterion.h>

#include "bf16_ops_check.h"
#include "helpers.h"

Test(bf16_ops, gemm_follows_float64_on_awkward_shapes)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    bf16_check_gemm(ctx);
    gcn_ctx_free(&ctx);
}

Test(bf16_ops, epilogue_is_the_fp32_one_rounded_once)
{
    gcn_ctx *ctx = test_cpu_ctx(1), *ref = test_cpu_ctx(1);
    bf16_check_epilogue(ctx, ref, true);
    gcn_ctx_free(&ctx);
    gcn_ctx_free(&ref);
}

Test(bf16_ops, weight_copies_follow_their_weights)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    bf16_check_weight_copy(ctx);
    gcn_ctx_free(&ctx);
}
