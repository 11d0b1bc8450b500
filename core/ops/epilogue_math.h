/* The fused epilogue's per-element arithmetic (gcn_epilogue_args), shared by
 * the CPU and CUDA backends so both round the same way: the device uses
 * round-to-nearest intrinsics where the host compiler never contracts. */
#ifndef GCN_EPILOGUE_MATH_H
#define GCN_EPILOGUE_MATH_H

#include <math.h>

#include "core/ops.h"
#include "core/philox.h"
#include "core/rng.h"

#ifdef __CUDA_ARCH__
#define GCN_EPI_ADD(a, b) __fadd_rn((a), (b))
#define GCN_EPI_SUB(a, b) __fsub_rn((a), (b))
#define GCN_EPI_MUL(a, b) __fmul_rn((a), (b))
#define GCN_EPI_DMULADD(s, a, b) __dadd_rn((s), __dmul_rn((a), (b)))
#else
#define GCN_EPI_ADD(a, b) ((a) + (b))
#define GCN_EPI_SUB(a, b) ((a) - (b))
#define GCN_EPI_MUL(a, b) ((a) * (b))
#define GCN_EPI_DMULADD(s, a, b) ((s) + (a) * (b))
#endif

/* One column's constants: pre = norm ? (x + bias - mean) scale + beta : x + bias. */
typedef struct gcn_epi_col {
    float bias, mean, scale, beta;
    bool norm;
} gcn_epi_col;

GCN_HD gcn_epi_col gcn_epi_column(const float *bias, const float *gamma, const float *beta,
                                  const float *mean, const float *invstd, int64_t c)
{
    gcn_epi_col k = {bias ? bias[c] : 0.0f, 0.0f, 1.0f, 0.0f, gamma != NULL};
    if (gamma) {
        k.mean = mean[c];
        k.scale = GCN_EPI_MUL(gamma[c], invstd[c]);
        k.beta = beta[c];
    }
    return k;
}

GCN_HD float gcn_epi_pre(float x, gcn_epi_col k)
{
    float v = GCN_EPI_ADD(x, k.bias);
    return k.norm ? GCN_EPI_ADD(GCN_EPI_MUL(GCN_EPI_SUB(v, k.mean), k.scale), k.beta) : v;
}

GCN_HD float gcn_epi_act(float pre, gcn_activation act, float alpha)
{
    if (act == GCN_ACT_RELU)
        return pre > 0.0f ? pre : 0.0f;
    if (act == GCN_ACT_ELU)
        return pre > 0.0f ? pre : GCN_EPI_MUL(alpha, expm1f(pre));
    return pre;
}

/* The gradient at pre of act, given g at its output y = act(pre). */
GCN_HD float gcn_epi_act_grad(float g, float pre, float y, gcn_activation act, float alpha)
{
    if (act == GCN_ACT_RELU)
        return pre > 0.0f ? g : 0.0f;
    if (act == GCN_ACT_ELU)
        return pre > 0.0f ? g : GCN_EPI_MUL(g, GCN_EPI_ADD(y, alpha));
    return g;
}

/* Whether dropout keeps the element with Philox word w. */
GCN_HD bool gcn_epi_kept(uint32_t w, float p)
{
    return gcn_philox_uniform(w) >= p;
}

/* The total a warp's lane 0 ends with when each lane l starts with v[l]
 * and, for o = 16, 8, 4, 2, 1, adds its partner l ^ o's value to its own
 * (an xor butterfly of __shfl_xor_sync): for l < o the partner is l + o,
 * so v[l] += v[l + o].  v is overwritten.  The host computes a warp's sum
 * in the warp's order with it. */
GCN_HD double gcn_lane_tree_sum(double v[32])
{
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int o = 16; o > 0; o >>= 1)
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
        for (int l = 0; l < o; l++)
            v[l] += v[l + o];
    return v[0];
}

/* gcn_readout's dropout of head k's value t at (g, c), its draw words
 * those of a [n_seg, classes] draw k stride counters after the offset's
 * start (gcn_heads_args): t without dropout (p = 0), t scale when kept,
 * else 0. */
GCN_HD float gcn_head_dropout(float t, float p, float scale, gcn_draw_offset o,
                              const uint32_t key[2], int k, int64_t n_seg, int64_t classes,
                              int64_t g, int64_t c)
{
    if (p == 0.0f)
        return t;
    uint64_t first = gcn_draw_first(o) + (uint64_t)k * (uint64_t)((n_seg * classes + 3) / 4);
    return gcn_epi_kept(gcn_draw_word_at(o, key, first, g, c, classes), p) ? GCN_EPI_MUL(t, scale)
                                                                            : 0.0f;
}

#endif
