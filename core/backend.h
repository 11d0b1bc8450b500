/* The backend table: the function types each device implements (CPU in
 * core/ops/, files named *_cpu.c, CUDA in its *.cu) and the table of them a
 * context dispatches through.  Included by internal.h at its place, after
 * the declarations it uses; internal. */
#ifndef GCN_BACKEND_H
#define GCN_BACKEND_H

#ifndef GCN_INTERNAL_H
#error "core/backend.h is included through core/internal.h"
#endif

/* The fused epilogue's operands (gcn_apply_epilogue), per column c:
 *     v = x + bias[c],  pre = gamma ? (v - mean[c]) (gamma[c] invstd[c]) + beta[c] : v,
 *     y = act(pre),     out = p > 0 ? (kept ? y / (1 - p) : 0) : y
 * with the mask of `dropout` (Philox words from key and the offset's start).
 * batch_stats: mean and invstd are the batch's, so backward also flows
 * through them (training-mode batch norm).  dtype is that of x, out, dout
 * and dx: bf16 values are widened as they are read and the fp32 result is
 * rounded once as it is stored; the per-column operands and every sum are
 * fp32 (sums in double) in both. */
typedef struct gcn_epilogue_args {
    int64_t rows, cols;
    gcn_dtype dtype;
    union {                     /* [rows, cols] of dtype */
        const float *x;
        const uint16_t *x_bf16;
    };
    const float *bias;          /* [cols] or NULL */
    const float *gamma, *beta;  /* [cols], or NULL: no batch norm */
    const float *mean, *invstd; /* [cols], with gamma */
    bool batch_stats;
    gcn_activation act;
    float alpha;
    float p;
    uint32_t key[2];
    gcn_draw_offset offset;
} gcn_epilogue_args;

/* Where the epilogue's backward writes; NULL outputs are skipped, acc_*
 * adds into the buffer (dx of the args' dtype, its sum rounded once).
 * dbias is the column sum of the new dx before it is stored. */
typedef struct gcn_epilogue_grads {
    void *dx;
    float *dbias, *dgamma, *dbeta;
    bool acc_x, acc_bias, acc_gamma, acc_beta;
} gcn_epilogue_grads;

/* The backend functions, one type each: the table holds one of each, and
 * each backend declares its functions with them (gcn_be_relu_fn
 * gcn_cpu_relu;).  Pointers are device pointers of that backend; sizes are
 * element counts and may be 0; matrices are row-major.  `acc` asks a
 * backward kernel to add into its output instead of overwriting it. */
typedef gcn_status gcn_be_alloc_fn(gcn_ctx *ctx, void **p, size_t bytes);
typedef void gcn_be_release_fn(gcn_ctx *ctx, void *p, size_t bytes);
typedef gcn_status gcn_be_upload_fn(gcn_ctx *ctx, void *dst, const void *host, size_t bytes);
typedef gcn_status gcn_be_download_fn(gcn_ctx *ctx, void *host, const void *src, size_t bytes);
typedef gcn_status gcn_be_copy_fn(gcn_ctx *ctx, void *dst, const void *src, size_t bytes);
typedef gcn_status gcn_be_fill_fn(gcn_ctx *ctx, float *x, int64_t n, float value);
/* x[i] = bits for n bf16 values */
typedef gcn_status gcn_be_fill_bf16_fn(gcn_ctx *ctx, uint16_t *x, int64_t n, uint16_t bits);
/* bf16 storage (core/bf16.h's rounding): y = bf16(x), or with acc
 * y = bf16(float(y) + x), the sum taken in fp32 and rounded once. */
typedef gcn_status gcn_be_to_bf16_fn(gcn_ctx *ctx, int64_t n, const float *x, uint16_t *y,
                                     bool acc);
/* y (+)= float(x), exact widening (the sum in fp32). */
typedef gcn_status gcn_be_from_bf16_fn(gcn_ctx *ctx, int64_t n, const uint16_t *x, float *y,
                                       bool acc);
typedef gcn_status gcn_be_sync_fn(gcn_ctx *ctx);
/* c[m,n] = alpha op(a) op(b) + beta c; lda/ldb/ldc are row strides. */
typedef gcn_status gcn_be_gemm_fn(gcn_ctx *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n,
                                  int64_t k, float alpha, const float *a, int64_t lda,
                                  const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
/* The same product with a and b bf16 (row strides in elements), the
 * multiplications exact and the sums in fp32, as tensor cores take them:
 * c fp32, or with c_bf16 bf16 holding alpha op(a) op(b) + beta c computed
 * in fp32 and rounded once. */
typedef gcn_status gcn_be_gemm_bf16_fn(gcn_ctx *ctx, bool trans_a, bool trans_b, int64_t m,
                                       int64_t n, int64_t k, float alpha, const uint16_t *a,
                                       int64_t lda, const uint16_t *b, int64_t ldb, float beta,
                                       void *c, int64_t ldc, bool c_bf16);
/* y = alpha x + beta y (beta == 0 ignores y's old contents). */
typedef gcn_status gcn_be_axpby_fn(gcn_ctx *ctx, int64_t n, float alpha, const float *x, float beta,
                                   float *y);
typedef gcn_status gcn_be_add_fn(gcn_ctx *ctx, int64_t n, const float *a, const float *b,
                                 float *out);
typedef gcn_status gcn_be_add_bias_fn(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                      const float *bias, float *out);
/* out[j] (+)= sum_i x[i, j] */
typedef gcn_status gcn_be_col_sum_fn(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                     float *out, bool acc);
/* out[0] = sum of x; dx (+)= dy[0] * scale broadcast */
typedef gcn_status gcn_be_sum_fn(gcn_ctx *ctx, int64_t n, const float *x, float *out);
typedef gcn_status gcn_be_sum_backward_fn(gcn_ctx *ctx, int64_t n, const float *dy, float scale,
                                          float *dx, bool acc);
typedef gcn_status gcn_be_relu_fn(gcn_ctx *ctx, int64_t n, const float *x, float *y);
typedef gcn_status gcn_be_relu_backward_fn(gcn_ctx *ctx, int64_t n, const float *y, const float *dy,
                                           float *dx, bool acc);
typedef gcn_status gcn_be_elu_fn(gcn_ctx *ctx, int64_t n, const float *x, float alpha, float *y);
/* from the output y: dx (+)= dy * (y > 0 ? 1 : y + alpha) */
typedef gcn_status gcn_be_elu_backward_fn(gcn_ctx *ctx, int64_t n, const float *y, float alpha,
                                          const float *dy, float *dx, bool acc);
/* y (+)= s[0] * x with s a device scalar */
typedef gcn_status gcn_be_scale_by_fn(gcn_ctx *ctx, int64_t n, const float *x, const float *s,
                                      float *y, bool acc);
/* out[0] (+)= sum_i a[i] b[i] */
typedef gcn_status gcn_be_dot_fn(gcn_ctx *ctx, int64_t n, const float *a, const float *b,
                                 float *out, bool acc);
/* Mask element i from its draw word (gcn_draw_words, first =
 * gcn_draw_first(offset)): kept when its uniform value >= p. */
typedef gcn_status gcn_be_dropout_fn(gcn_ctx *ctx, int64_t n, const float *x, float *y, float p,
                                     const uint32_t key[2], gcn_draw_offset offset, bool acc);
/* c[rows, n] (+)= dropout(a) b, a a CSR matrix of `rows` rows (arrays on
 * the backend), b [.., n]: entry (i, j, v) of a adds v' b[j, :] to c[i, :]
 * in the row's order, v' = v / (1 - p) when kept and 0 when dropped, the
 * mask word that of element (i, j) of a [rows, draw_cols] draw
 * (gcn_draw_word_at), or of element (j, i) when `transposed` (a holds the
 * transpose of the matrix the mask was drawn for).  p == 0: no mask.  nnz
 * is a's, known on the host. */
typedef struct gcn_sparse_mm_args {
    int32_t rows, nnz;
    const int32_t *row_ptr, *col_idx;
    const float *values;
    bool transposed;
    int64_t draw_cols;
    float p;
    uint32_t key[2];
    gcn_draw_offset offset;
    int64_t n;
    const float *b;
    float *c;
    bool acc;
} gcn_sparse_mm_args;
typedef gcn_status gcn_be_sparse_mm_fn(gcn_ctx *ctx, const gcn_sparse_mm_args *a);
/* p[0] += delta, p one uint64_t of the backend's memory */
typedef gcn_status gcn_be_add_u64_fn(gcn_ctx *ctx, uint64_t *p, uint64_t delta);
typedef gcn_status gcn_be_batchnorm_train_fn(gcn_ctx *ctx, int64_t rows, int64_t cols,
                                             const float *x, const float *gamma, const float *beta,
                                             float *y, float *save_mean, float *save_invstd,
                                             float *running_mean, float *running_var,
                                             float momentum, float eps);
typedef gcn_status gcn_be_batchnorm_eval_fn(gcn_ctx *ctx, int64_t rows, int64_t cols,
                                            const float *x, const float *gamma, const float *beta,
                                            const float *mean, const float *var, float eps,
                                            float *y);
/* Training-mode backward; any of dx, dgamma, dbeta may be NULL. */
typedef gcn_status gcn_be_batchnorm_backward_fn(gcn_ctx *ctx, int64_t rows, int64_t cols,
                                                const float *x, const float *gamma,
                                                const float *save_mean, const float *save_invstd,
                                                const float *dy, float *dx, float *dgamma,
                                                float *dbeta, bool acc_x, bool acc_gamma,
                                                bool acc_beta);
/* Eval-mode backward: dx = dy * gamma * rsqrt(var + eps), dgamma = sum dy * xhat,
 * dbeta = sum dy (any output may be NULL). */
typedef gcn_status gcn_be_batchnorm_eval_backward_fn(gcn_ctx *ctx, int64_t rows, int64_t cols,
                                                     const float *x, const float *gamma,
                                                     const float *mean, const float *var, float eps,
                                                     const float *dy, float *dx, float *dgamma,
                                                     float *dbeta, bool acc_x, bool acc_gamma,
                                                     bool acc_beta);
typedef gcn_status gcn_be_log_softmax_fn(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                         float *y);
typedef gcn_status gcn_be_log_softmax_backward_fn(gcn_ctx *ctx, int64_t rows, int64_t cols,
                                                  const float *y, const float *dy, float *dx,
                                                  bool acc);
/* Segment pooling of n inputs x[k] [rows, cols[k]] side by side into one
 * [n_seg, width] output, input k's columns from first(k) = cols[0] + ... +
 * cols[k - 1]: out[s, first(k) + c] = the sum, mean or max of x[k][r, c]
 * over r in [offsets[s], offsets[s + 1]), in row order (0 for an empty
 * segment); for the max, argmax[s, first(k) + c] = the first row holding it
 * (-1 when empty). */
typedef struct gcn_pool_args {
    gcn_pooling kind;
    int64_t n_seg;
    const int32_t *offsets; /* [n_seg + 1] */
    int n;
    int64_t cols[GCN_READOUT_MAX];
    int64_t width; /* the sum of cols */
} gcn_pool_args;

typedef gcn_status gcn_be_segment_pool_fn(gcn_ctx *ctx, const gcn_pool_args *a,
                                          const float *const *x, float *out, int32_t *argmax);
/* dx[k] [rows, cols[k]] (+)= (acc[k]) the pooling's gradient for dy [n_seg,
 * width]; a NULL dx[k] is skipped.  The segments cover every row once. */
typedef gcn_status gcn_be_segment_pool_backward_fn(gcn_ctx *ctx, const gcn_pool_args *a,
                                                   const int32_t *argmax, const float *dy,
                                                   float *const *dx, const bool *acc);
/* gcn_readout's heads on pooled [n_seg, width] (a pool's columns): head k's
 * score of (g, c) is t = (float)(sum over f in order, in double, of
 * pooled[g, first(k) + f] w[k][f, c]) + b[k][c] (b[k] NULL: none), then the
 * dropout of t (p > 0: kept when gcn_philox_uniform >= p of the word of
 * element (g, c) of a [n_seg, classes] draw that starts at counter
 * gcn_draw_first(offset) + k stride, stride = (n_seg classes + 3) / 4,
 * t / (1 - p) in float, else 0); scores[g, c] = the heads' scores added in
 * float in order. */
typedef struct gcn_heads_args {
    int64_t classes;
    const float *w[GCN_READOUT_MAX]; /* [cols[k], classes] */
    const float *b[GCN_READOUT_MAX]; /* [classes] or NULL */
    float p;
    uint32_t key[2];
    gcn_draw_offset offset;
} gcn_heads_args;

typedef gcn_status gcn_be_heads_fn(gcn_ctx *ctx, const gcn_pool_args *a, const gcn_heads_args *h,
                                   const float *pooled, float *scores);
/* Where the heads' backward writes (NULL: skipped; acc adds). */
typedef struct gcn_heads_grads {
    float *dw[GCN_READOUT_MAX], *db[GCN_READOUT_MAX];
    bool acc_w[GCN_READOUT_MAX], acc_b[GCN_READOUT_MAX];
} gcn_heads_grads;
/* From dscores [n_seg, classes]: with g(k; s, c) head k's dscores through
 * its dropout (as the forward's mask scales it), in double and in order,
 * db[k][c] (+)= sum over s of g, dw[k][f, c] (+)= sum over s of
 * pooled[s, first(k) + f] g, and dpooled [n_seg, width] (overwritten, when
 * not NULL) at (s, first(k) + f) = sum over c of g w[k][f, c]. */
typedef gcn_status gcn_be_heads_backward_fn(gcn_ctx *ctx, const gcn_pool_args *a,
                                            const gcn_heads_args *h, const float *pooled,
                                            const float *dscores, float *dpooled,
                                            const gcn_heads_grads *g);
/* out[0] = -mean over the listed rows of logp[row, labels[row]] */
typedef gcn_status gcn_be_nll_fn(gcn_ctx *ctx, int64_t cols, const float *logp,
                                 const int32_t *labels, const int32_t *rows, int64_t n_rows,
                                 float *out);
/* dlogp[row, labels[row]] (+)= -dy[0] / n_rows; zero elsewhere unless acc */
typedef gcn_status gcn_be_nll_backward_fn(gcn_ctx *ctx, int64_t n, int64_t cols,
                                          const int32_t *labels, const int32_t *rows,
                                          int64_t n_rows, const float *dy, float *dlogp, bool acc);
/* training: mean and invstd = 1 / sqrt(var + eps) of v = x + bias over
 * the rows (the biased variance; rows >= 2), and the running statistics
 * updated as batchnorm_train does; on a context of several ranks (comm.h)
 * over every rank's rows, as the backward's batch-norm sums are.  !training: invstd from running_var
 * only (x, bias and mean unused). */
typedef gcn_status gcn_be_epilogue_stats_fn(gcn_ctx *ctx, int64_t rows, int64_t cols,
                                            const void *x, gcn_dtype dtype, const float *bias,
                                            bool training,
                                            float momentum, float eps, float *running_mean,
                                            float *running_var, float *mean, float *invstd);
/* out and dout: [rows, cols] of the args' dtype */
typedef gcn_status gcn_be_epilogue_forward_fn(gcn_ctx *ctx, const gcn_epilogue_args *a, void *out);
typedef gcn_status gcn_be_epilogue_backward_fn(gcn_ctx *ctx, const gcn_epilogue_args *a,
                                               const void *dout, const gcn_epilogue_grads *g);
/* dst[i, 0:width] (+)= src[r, 0:width] for i < rows, with row strides, where
 * r is src_rows[i] (a device array), or i when src_rows is NULL */
typedef gcn_status gcn_be_copy_cols_fn(gcn_ctx *ctx, int64_t rows, int64_t width, const float *src,
                                       int64_t src_ld, const int32_t *src_rows, float *dst,
                                       int64_t dst_ld, bool acc);
/* count[0] = the listed rows whose first largest score is their label,
 * written on the device without waiting (a device pointer). */
typedef gcn_status gcn_be_count_correct_fn(gcn_ctx *ctx, int64_t cols, const float *scores,
                                           const int32_t *labels, const int32_t *rows,
                                           int64_t n_rows, double *count);
/* Cross-entropy of the listed rows in one pass: lse[i] = log sum_j
 * exp(x[r, j]) of the i-th listed row r and out[0] = -mean_i (x[r,
 * labels[r]] - lse[i]); backward dx[r] (+)= dy[0] / n_rows (softmax(x[r])
 * - onehot(labels[r])) for listed rows, zero elsewhere unless acc. */
typedef gcn_status gcn_be_cross_entropy_fn(gcn_ctx *ctx, int64_t cols, const float *x,
                                           const int32_t *labels, const int32_t *rows,
                                           int64_t n_rows, float *lse, float *out);
typedef gcn_status gcn_be_cross_entropy_backward_fn(gcn_ctx *ctx, int64_t n, int64_t cols,
                                                    const float *x, const int32_t *labels,
                                                    const int32_t *rows, int64_t n_rows,
                                                    const float *lse, const float *dy, float *dx,
                                                    bool acc);

/* One entry per device. */
typedef struct gcn_backend {
    const char *name;
    gcn_be_alloc_fn *alloc;
    gcn_be_release_fn *release;
    gcn_be_upload_fn *upload;
    gcn_be_download_fn *download;
    gcn_be_copy_fn *copy;
    gcn_be_fill_fn *fill;
    gcn_be_fill_bf16_fn *fill_bf16;
    gcn_be_to_bf16_fn *to_bf16;
    gcn_be_from_bf16_fn *from_bf16;
    gcn_be_sync_fn *sync;
    gcn_be_gemm_fn *gemm;
    gcn_be_gemm_bf16_fn *gemm_bf16;
    gcn_be_axpby_fn *axpby;
    gcn_be_add_fn *add;
    gcn_be_add_bias_fn *add_bias;
    gcn_be_col_sum_fn *col_sum;
    gcn_be_sum_fn *sum;
    gcn_be_sum_backward_fn *sum_backward;
    gcn_be_relu_fn *relu;
    gcn_be_relu_backward_fn *relu_backward;
    gcn_be_elu_fn *elu;
    gcn_be_elu_backward_fn *elu_backward;
    gcn_be_scale_by_fn *scale_by;
    gcn_be_dot_fn *dot;
    gcn_be_dropout_fn *dropout;
    gcn_be_sparse_mm_fn *sparse_mm;
    gcn_be_add_u64_fn *add_u64;
    gcn_be_batchnorm_train_fn *batchnorm_train;
    gcn_be_batchnorm_eval_fn *batchnorm_eval;
    gcn_be_batchnorm_backward_fn *batchnorm_backward;
    gcn_be_batchnorm_eval_backward_fn *batchnorm_eval_backward;
    gcn_be_log_softmax_fn *log_softmax;
    gcn_be_log_softmax_backward_fn *log_softmax_backward;
    gcn_be_nll_fn *nll;
    gcn_be_nll_backward_fn *nll_backward;
    gcn_be_segment_pool_fn *segment_pool;
    gcn_be_segment_pool_backward_fn *segment_pool_backward;
    gcn_be_heads_fn *heads;
    gcn_be_heads_backward_fn *heads_backward;
    gcn_be_epilogue_stats_fn *epilogue_stats;
    gcn_be_epilogue_forward_fn *epilogue_forward;
    gcn_be_epilogue_backward_fn *epilogue_backward;
    gcn_be_copy_cols_fn *copy_cols;
    gcn_be_count_correct_fn *count_correct;
    gcn_be_cross_entropy_fn *cross_entropy;
    gcn_be_cross_entropy_backward_fn *cross_entropy_backward;
} gcn_backend;

extern const gcn_backend gcn_backend_cpu;
extern const gcn_backend gcn_backend_cuda;

#endif
