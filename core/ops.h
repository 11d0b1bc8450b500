/* Differentiable operations.  Each returns a new tensor through `out` (the
 * caller owns one reference) and, when gradients are enabled and an input
 * requires them, records itself on the context's tape so gcn_backward can
 * propagate through it.  Shapes are [rows, cols]; all operands must live on
 * the context's device.
 *
 * dtypes: operands are fp32 (GCN_ERR_DTYPE otherwise), except that the
 * activation operands of matmul, matmul_bias, add, add_bias, scale, relu,
 * elu, scale_by (x), dropout, batchnorm (x), apply_epilogue (x),
 * epilogue_matmul (x) and gcn_spmm / gcn_spmm_self (x) may be bf16; with
 * one bf16 the op computes in fp32, a product reading its fp32 operand
 * rounded to bf16 (a weight through its bf16 copy), and returns bf16
 * rounded once.  Products take bf16 operands on tensor cores and sum in
 * fp32; a bf16 product's gradient is bf16 for a bf16 operand and fp32 for
 * an fp32 one (a weight).  Parameters, statistics and losses stay fp32;
 * gcn_cast converts. */
#ifndef GCN_OPS_H
#define GCN_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "csr.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out = op(a) . op(b), op(x) = x^T when the flag is set.
 * a [m, k] (or [k, m] transposed), b [k, n] (or [n, k]) -> out [m, n]. */
GCN_API gcn_status gcn_matmul(gcn_ctx *ctx, gcn_tensor *a, gcn_tensor *b, bool trans_a,
                              bool trans_b, gcn_tensor **out);

/* out = x stored as `dtype`: fp32 -> bf16 rounds each value to the nearest
 * bf16 (ties to even), bf16 -> fp32 widens exactly, the same dtype copies.
 * Backward converts the gradient back the other way.  Takes either dtype. */
GCN_API gcn_status gcn_cast(gcn_ctx *ctx, gcn_tensor *x, gcn_dtype dtype, gcn_tensor **out);

/* out = a + b, same shapes. */
GCN_API gcn_status gcn_add(gcn_ctx *ctx, gcn_tensor *a, gcn_tensor *b, gcn_tensor **out);

/* out = x + bias broadcast over rows: x [n, f], bias [1, f]. */
GCN_API gcn_status gcn_add_bias(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor *bias, gcn_tensor **out);

/* out = alpha * x. */
GCN_API gcn_status gcn_scale(gcn_ctx *ctx, gcn_tensor *x, float alpha, gcn_tensor **out);

typedef enum gcn_activation {
    GCN_ACT_NONE = 0, /* identity */
    GCN_ACT_RELU,
    GCN_ACT_ELU
} gcn_activation;

/* out = max(x, 0). */
GCN_API gcn_status gcn_relu(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor **out);

/* out = x for x > 0, alpha (exp(x) - 1) otherwise (alpha > 0). */
GCN_API gcn_status gcn_elu(gcn_ctx *ctx, gcn_tensor *x, float alpha, gcn_tensor **out);

/* out = s * x with s a [1, 1] tensor, differentiable in both (a trainable
 * scalar such as GIN's epsilon). */
GCN_API gcn_status gcn_scale_by(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor *s, gcn_tensor **out);

/* Inverted dropout.  training: each element is kept with probability 1 - p
 * and scaled by 1 / (1 - p); the mask comes from the context's dropout
 * random stream, so it is identical on every backend for one seed.
 * !training or p == 0: out is a copy of x.  p in [0, 1). */
GCN_API gcn_status gcn_dropout(gcn_ctx *ctx, gcn_tensor *x, float p, bool training,
                               gcn_tensor **out);

/* out = dropout_p(x) w for a constant sparse x [n, k] (input features that
 * are mostly zeros, as a CSR matrix) and w [k, m]: the mask and the kept
 * values are those of gcn_dropout on x's dense form at this point of the
 * stream (the same draws are reserved), and out equals gcn_dropout then
 * gcn_matmul up to float rounding, without touching x's zeros.  Sums run
 * over each row's entries in order: no atomics, the same result every run.
 * The gradient flows to w (through x's stored transpose), not to x.
 * !training or p == 0: x w.  p in [0, 1). */
GCN_API gcn_status gcn_sparse_dropout_matmul(gcn_ctx *ctx, const gcn_csr *x, float p,
                                             bool training, gcn_tensor *w, gcn_tensor **out);

/* Batch normalisation over rows, as PyTorch's BatchNorm1d.
 * x [n, f]; gamma, beta [1, f] (affine parameters, may require grad);
 * running_mean, running_var [1, f] (updated in training with
 * r = (1 - momentum) r + momentum * batch_stat, the variance unbiased).
 * training: normalise with the batch mean and biased variance (n >= 2);
 * otherwise with the running statistics. */
GCN_API gcn_status gcn_batchnorm(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor *gamma,
                                 gcn_tensor *beta, gcn_tensor *running_mean,
                                 gcn_tensor *running_var, bool training, float momentum,
                                 float eps, gcn_tensor **out);

/* The tail of a network block as one op:
 *     out = dropout_p(act(batchnorm(x + bias)))
 * Every stage is optional: bias NULL adds nothing, gamma NULL skips the batch
 * norm (then beta and the running statistics are unused and may be NULL),
 * GCN_ACT_NONE is the identity, and dropout applies in training only.  The
 * result equals gcn_add_bias, gcn_batchnorm, gcn_relu / gcn_elu and
 * gcn_dropout in sequence up to float rounding (the dropout mask is the same
 * for the same random state), in two passes over x forward and two
 * backward; backward keeps only x and two [1, f] vectors and regenerates
 * the dropout mask. */
typedef struct gcn_epilogue {
    gcn_tensor *bias;                       /* [1, f] or NULL */
    gcn_tensor *gamma, *beta;               /* [1, f] batch-norm affine, or NULL */
    gcn_tensor *running_mean, *running_var; /* [1, f], with gamma (gcn_batchnorm's rules) */
    float momentum, eps;                    /* with gamma */
    gcn_activation act;
    float alpha;                            /* ELU's alpha (> 0) */
    float dropout;                          /* p in [0, 1) */
} gcn_epilogue;

/* x [n, f] -> out [n, f]. */
GCN_API gcn_status gcn_apply_epilogue(gcn_ctx *ctx, gcn_tensor *x, const gcn_epilogue *e,
                                      bool training, gcn_tensor **out);

/* out [n, k] = gcn_apply_epilogue(x) w for w [f, k], bit for bit, without
 * keeping the epilogue's output for backward: backward recomputes it from x
 * (one more pass over [n, f]) where gcn_apply_epilogue then gcn_matmul
 * would hold it from forward to backward for w's gradient. */
GCN_API gcn_status gcn_epilogue_matmul(gcn_ctx *ctx, gcn_tensor *x, const gcn_epilogue *e,
                                       bool training, gcn_tensor *w, gcn_tensor **out);

/* Row-wise log_softmax: x [n, c] -> out [n, c]. */
GCN_API gcn_status gcn_log_softmax(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor **out);

/* Negative log-likelihood averaged over the listed rows:
 * out [1, 1] = -mean_{i in rows} logp[i, labels[i]].
 * logp [n, c]; labels has n entries in [0, c); rows lists row ids in [0, n)
 * whose labels must be valid (>= 0). */
GCN_API gcn_status gcn_nll_loss(gcn_ctx *ctx, gcn_tensor *logp, const gcn_index *labels,
                                const gcn_index *rows, gcn_tensor **out);

/* Cross-entropy of the listed rows in one op: gcn_nll_loss(gcn_log_softmax(
 * logits)) without the [n, c] log-probabilities, and its backward in one
 * pass over the listed rows (the others get zero gradient). */
GCN_API gcn_status gcn_cross_entropy(gcn_ctx *ctx, gcn_tensor *logits, const gcn_index *labels,
                                     const gcn_index *rows, gcn_tensor **out);

/* Columns side by side: parts[i] [n, f_i] -> out [n, sum f_i]. */
GCN_API gcn_status gcn_concat_cols(gcn_ctx *ctx, gcn_tensor *const *parts, int n_parts,
                                   gcn_tensor **out);

/* out [1, 1] = sum (or mean) of all elements. */
GCN_API gcn_status gcn_sum(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor **out);
GCN_API gcn_status gcn_mean(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor **out);

/* out[i, :] = x[rows[i], :]: a batch's rows of a constant matrix (e.g. the
 * features of the nodes of a mini-batch).  Not differentiable: an input that
 * would need a gradient is GCN_ERR_UNSUPPORTED. */
GCN_API gcn_status gcn_gather_rows(gcn_ctx *ctx, gcn_tensor *x, const gcn_index *rows,
                                   gcn_tensor **out);

/* How gcn_segment_pool reduces each segment's rows. */
typedef enum gcn_pooling {
    GCN_POOL_SUM = 0,
    GCN_POOL_MEAN,
    GCN_POOL_MAX
} gcn_pooling;

/* Readout of a batch of graphs: x [n, f] holds the graphs' nodes one graph
 * after another, offsets [g + 1] (ascending, from 0 to n) where each starts;
 * out [g, f] is each graph's column-wise sum, mean or max over its rows (0
 * for a graph without nodes).  Backward: the sum's gradient goes to every
 * row, the mean's divided by the row count, the max's to the first row
 * holding it.  Rows are reduced in order, so the CPU and the GPU agree
 * bit for bit. */
GCN_API gcn_status gcn_segment_pool(gcn_ctx *ctx, gcn_tensor *x, const gcn_index *offsets,
                                    gcn_pooling kind, gcn_tensor **out);

/* The most inputs gcn_readout takes (a model of 32 layers and its input). */
#define GCN_READOUT_MAX 33

/* A graph-level readout in one op, the jumping-knowledge score of the GIN
 * paper: for the n inputs h[k] [rows, f_k] (the same rows: a batch's nodes,
 * graph after graph as offsets says, which gcn_segment_pool pools)
 *     scores = s_0 + s_1 + ... + s_{n-1},  s_k = dropout(pool(h[k]) w[k] + b[k], p)
 * with w[k] [f_k, classes] and b[k] [1, classes] (b NULL: no biases); scores
 * is [graphs, classes].  The same as those ops in turn up to float rounding,
 * with their draws: head k's mask is the one gcn_dropout would draw for its
 * [graphs, classes] scores, the heads drawing in turn; without `training`
 * there is no dropout.  The inputs must be distinct tensors, 1 <= n <=
 * GCN_READOUT_MAX.  Sums are taken in double in a fixed order, so the CPU
 * and the GPU agree to rounding and each is deterministic; on the GPU the op
 * is two launches forward and two backward. */
GCN_API gcn_status gcn_readout(gcn_ctx *ctx, gcn_tensor *const *h, gcn_tensor *const *w,
                               gcn_tensor *const *b, int n, const gcn_index *offsets,
                               gcn_pooling kind, float p, bool training, gcn_tensor **scores);

/* Fraction of the listed rows whose argmax over columns equals the label
 * (ties go to the lowest column).  Not differentiable.  0 rows gives 0. */
GCN_API gcn_status gcn_accuracy(gcn_ctx *ctx, const gcn_tensor *scores, const gcn_index *labels,
                                const gcn_index *rows, double *acc);

#ifdef __cplusplus
}
#endif
#endif
