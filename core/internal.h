/* Library-internal definitions: the structs behind the public handles, the
 * backend table every device implements, the tape node, and error helpers.
 * Not installed; user code sees only the public headers. */
#ifndef GCN_INTERNAL_H
#define GCN_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autograd.h"
#include "csr.h"
#include "ctx.h"
#include "ops.h"
#include "philox.h"
#include "rng.h"
#include "tensor.h"

/* 1 when the CUDA backend and kernels are built in (the Makefile's CUDA=1,
 * the default), 0 for a CPU-only library. */
#ifndef GCN_WITH_CUDA
#define GCN_WITH_CUDA 1
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ---------------------------------------------------------- */

/* Records "msg (file:line)" as the context's last error and returns st.
 * ctx may be NULL (the message is then dropped). */
gcn_status gcn_set_error(gcn_ctx *ctx, gcn_status st, const char *file, int line,
                         const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

#define GCN_ERROR(ctx, st, ...) gcn_set_error((ctx), (st), __FILE__, __LINE__, __VA_ARGS__)

/* Puts "what: " before the context's last error message and returns st:
 * for a caller that knows what the failing call was doing (what was being
 * allocated when the memory ran out). */
gcn_status gcn_error_prefix(gcn_ctx *ctx, gcn_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Propagates a failing status to the caller. */
#define GCN_TRY(expr)                     \
    do {                                  \
        gcn_status gcn_try_st_ = (expr);  \
        if (gcn_try_st_ != GCN_OK)        \
            return gcn_try_st_;           \
    } while (0)

/* Stores a failing status in `st` and jumps to the function's cleanup label. */
#define GCN_CHECK(expr)          \
    do {                         \
        st = (expr);             \
        if (st != GCN_OK)        \
            goto cleanup;        \
    } while (0)

#define GCN_ARG(ctx, cond)                                                          \
    do {                                                                            \
        if (!(cond))                                                                \
            return GCN_ERROR((ctx), GCN_ERR_INVALID_ARG, "invalid argument: %s", #cond); \
    } while (0)

void gcn_log(gcn_ctx *ctx, gcn_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- caller-filled structs ------------------------------------------ */

/* Copies the caller's struct src (its first member `size_t size`) into dst,
 * this build's layout of `full` bytes: the fields the caller's build knew,
 * `defaults` for the rest.  A size of no known version is
 * GCN_ERR_INVALID_ARG naming `what`. */
gcn_status gcn_struct_import(gcn_ctx *ctx, const char *what, void *dst, const void *defaults,
                             size_t full, const void *src);

/* ---- backend table ---------------------------------------------------- */

/* The fused epilogue's operands (gcn_apply_epilogue), per column c:
 *     v = x + bias[c],  pre = gamma ? (v - mean[c]) (gamma[c] invstd[c]) + beta[c] : v,
 *     y = act(pre),     out = p > 0 ? (kept ? y / (1 - p) : 0) : y
 * with the mask of `dropout` (Philox words from key and the offset's start).
 * batch_stats: mean and invstd are the batch's, so backward also flows
 * through them (training-mode batch norm). */
typedef struct gcn_epilogue_args {
    int64_t rows, cols;
    const float *x;             /* [rows, cols] */
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
 * adds into the buffer.  dbias is the column sum of the new dx. */
typedef struct gcn_epilogue_grads {
    float *dx, *dbias, *dgamma, *dbeta;
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
typedef gcn_status gcn_be_sync_fn(gcn_ctx *ctx);
/* c[m,n] = alpha op(a) op(b) + beta c; lda/ldb/ldc are row strides. */
typedef gcn_status gcn_be_gemm_fn(gcn_ctx *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n,
                                  int64_t k, float alpha, const float *a, int64_t lda,
                                  const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
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
/* out[s, c] = the sum, mean or max of x[r, c] over r in [offsets[s],
 * offsets[s + 1]), in row order (0 for an empty segment); for the max,
 * argmax[s, c] = the first row holding it (-1 when empty). */
typedef gcn_status gcn_be_segment_pool_fn(gcn_ctx *ctx, gcn_pooling kind, int64_t n_seg,
                                          int64_t cols, const int32_t *offsets, const float *x,
                                          float *out, int32_t *argmax);
/* dx [rows, cols] (+)= that pooling's gradient for dy [n_seg, cols]; the
 * segments cover every row once. */
typedef gcn_status gcn_be_segment_pool_backward_fn(gcn_ctx *ctx, gcn_pooling kind, int64_t n_seg,
                                                   int64_t cols, const int32_t *offsets,
                                                   const int32_t *argmax, const float *dy,
                                                   float *dx, bool acc);
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
                                            const float *x, const float *bias, bool training,
                                            float momentum, float eps, float *running_mean,
                                            float *running_var, float *mean, float *invstd);
typedef gcn_status gcn_be_epilogue_forward_fn(gcn_ctx *ctx, const gcn_epilogue_args *a, float *out);
typedef gcn_status gcn_be_epilogue_backward_fn(gcn_ctx *ctx, const gcn_epilogue_args *a,
                                               const float *dout, const gcn_epilogue_grads *g);
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
    gcn_be_sync_fn *sync;
    gcn_be_gemm_fn *gemm;
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

/* ---- objects ---------------------------------------------------------- */

struct gcn_tensor {
    int64_t rows, cols;
    float *data;        /* on `device`, rows * cols floats */
    gcn_ctx *ctx;
    gcn_device device;
    int refs;
    bool requires_grad; /* a parameter, or computed from one while recording */
    bool is_leaf;       /* not the output of a recorded op */
    gcn_tensor *grad;
};

struct gcn_index {
    int64_t n;
    int32_t *data;
    int32_t min, max;   /* of the values, computed on creation (0, -1 when empty) */
    bool ascending;     /* values non-decreasing, known on creation */
    gcn_index *base;    /* a view's: the index whose data it shares (retained) */
    gcn_ctx *ctx;
    gcn_device device;
    int refs;
};

/* A kernel plan cached on a matrix: built by an SpMM implementation for one
 * feature width and freed with the matrix. */
typedef struct gcn_csr_plan {
    const void *impl; /* the gcn_spmm_impl that built it */
    int feat;
    void *plan;
    void (*free_plan)(void *plan);
    struct gcn_csr_plan *next;
} gcn_csr_plan;

/* One level of communities of a square matrix: consecutive node ranges
 * (kernels/adaptgear.c). */
#define GCN_CSR_MAX_LEVELS 4

typedef struct gcn_csr_level {
    int32_t size;      /* nominal nodes a part */
    int32_t n_parts;
    int32_t max_part;  /* nodes in the largest part */
    int32_t *part_ptr; /* host [n_parts + 1], from 0 to n_rows */
} gcn_csr_level;

/* The selector's state on a matrix: call sites, splits, level views
 * (kernels/spmm_auto.c), freed through spmm_free. */
typedef struct gcn_spmm_state gcn_spmm_state;

typedef struct gcn_csr_priv gcn_csr_priv;

/* The matrix behind the public handle: the three arrays on `device`, and
 * what the library derives from them. */
struct gcn_csr {
    int32_t n_rows, n_cols;
    int32_t nnz;
    int32_t *row_ptr;   /* [n_rows + 1], on `device` */
    int32_t *col_idx;   /* [nnz], on `device` */
    float *values;      /* [nnz], on `device` */
    gcn_device device;  /* where the three arrays live */
    gcn_csr_priv *priv; /* transpose, kernel plans, call sites: owned */
};

struct gcn_csr_priv {
    gcn_ctx *ctx;
    gcn_csr *transpose;    /* NULL when the matrix is symmetric */
    bool symmetric;
    bool sorted;           /* columns strictly increasing in every row: no duplicates */
    gcn_csr *owner;        /* borrowed: the matrix this one is the stored transpose of */
    gcn_csr_plan *plans;
    int n_levels;          /* community levels, finest first */
    gcn_csr_level level[GCN_CSR_MAX_LEVELS];
    bool block_diagonal;   /* every entry lies in its row's part of level 0 */
    bool borrowed;         /* the arrays belong to another matrix (a level view) or to
                            * the caller (gcn_csr_borrow) */
    const struct gcn_spmm_impl *kernel; /* gcn_csr_borrow's: products run it, no call site */
    gcn_spmm_state *spmm;
    void (*spmm_free)(gcn_spmm_state *state);
    struct gcn_halo *halo; /* a rank's block of a partitioned matrix (gcn_csr_set_halo) */
    void (*halo_free)(struct gcn_halo *halo);
};

/* gcn_csr_create for a matrix the caller knows to equal its transpose
 * (symmetric true: no transpose is computed; false: as gcn_csr_create). */
gcn_status gcn_csr_create_known(gcn_ctx *ctx, gcn_csr **out, int32_t n_rows, int32_t n_cols,
                                int32_t nnz, const int32_t *row_ptr, const int32_t *col_idx,
                                const float *values, bool symmetric);

/* A symmetric n x n matrix with sorted rows over device arrays the caller
 * keeps alive until the matrix is freed, for matrices that change every
 * step (a batch of graphs), where the selector's profiling makes no sense:
 * while the context's mode is the selector's or a strategy, its products
 * run `kernel` (which must need no host work to plan); a context forced to
 * a registry kernel runs that one. */
gcn_status gcn_csr_borrow(gcn_ctx *ctx, int32_t n, int32_t nnz, int32_t *row_ptr,
                          int32_t *col_idx, float *values, const struct gcn_spmm_impl *kernel,
                          gcn_csr **out);

/* An index over n of base's values from offset on, sharing its data and
 * retaining it; min, max and ascending are the caller's (the views of a
 * batch's arrays, whose ranges the host knows). */
gcn_status gcn_index_view(gcn_ctx *ctx, gcn_index *base, int64_t offset, int64_t n, int32_t min,
                          int32_t max, bool ascending, gcn_index **out);

/* Frees the plan (impl, feat) cached on a, if any. */
void gcn_csr_drop_plan(gcn_csr *a, const void *impl, int feat);

/* ---- the tape -------------------------------------------------------- */

typedef struct gcn_node gcn_node;

/* Reads node->out->grad and adds into the grad of each input that requires
 * one (gcn_grad_slot gives the buffer and whether to accumulate). */
typedef gcn_status (*gcn_backward_fn)(gcn_ctx *ctx, gcn_node *node);

struct gcn_node {
    const char *op;
    gcn_backward_fn backward;
    gcn_tensor *out;        /* retained */
    gcn_tensor **in;        /* retained; n_in entries of in_cap, an array the tape's
                             * slot keeps for the next node recorded in it */
    int n_in, in_cap;
    gcn_tensor *saved[4];   /* retained tensors backward needs */
    gcn_index *index[2];    /* retained index arrays */
    const gcn_csr *matrix;  /* borrowed: must outlive the backward */
    double param[4];        /* scalars backward needs */
    gcn_draw_offset offset; /* where the op's dropout mask starts */
    struct gcn_custom_node *custom; /* a program's op (gcn_custom): owned */
};

/* Records an op if recording is on and any input requires grad; then marks
 * out as requiring grad.  Takes new references to out and inputs.  *node
 * receives the node (NULL when nothing was recorded) for saving extras. */
gcn_status gcn_tape_record(gcn_ctx *ctx, const char *op, gcn_backward_fn backward,
                           gcn_tensor *const *in, int n_in, gcn_tensor *out, gcn_node **node);

/* Whether an op on these inputs would be recorded. */
bool gcn_tape_wants(const gcn_ctx *ctx, gcn_tensor *const *in, int n_in);

typedef struct gcn_op_spec gcn_op_spec;

/* Computes an op's output y, created with the spec's shape, from the spec's
 * inputs, args and param; may put tensors into spec->saved. */
typedef gcn_status (*gcn_forward_fn)(gcn_ctx *ctx, gcn_op_spec *spec, gcn_tensor *y);

/* One op for gcn_op_run: what forward computes and what the node holds for
 * backward (param, offset, index, matrix and saved as in gcn_node). */
struct gcn_op_spec {
    const char *name;
    gcn_forward_fn forward;
    gcn_backward_fn backward;
    gcn_tensor *const *in;
    int n_in;
    int64_t rows, cols;        /* of the output */
    const void *args;          /* forward's operands that are not node fields */
    double param[4];
    gcn_draw_offset offset;
    const gcn_index *index[2]; /* retained by the node */
    const gcn_csr *matrix;     /* borrowed by the node */
    gcn_tensor *saved[4];      /* owned: moved to the node, else freed */
    struct gcn_custom_node *custom; /* gcn_custom's op: owned, moved to the node, else freed */
};

/* The body every op shares after its argument checks: creates the output,
 * runs forward, records the op (gcn_tape_record) and hands the node the
 * spec's fields.  On return spec->saved is empty; on failure *out is left
 * as it was. */
gcn_status gcn_op_run(gcn_ctx *ctx, gcn_op_spec *spec, gcn_tensor **out);

/* The buffer to write t's gradient into: allocates it on first use
 * (*acc = false: overwrite) or returns the existing one (*acc = true). */
gcn_status gcn_grad_slot(gcn_ctx *ctx, gcn_tensor *t, float **buf, bool *acc);

/* gcn_grad_slot when t requires a gradient; else *buf = NULL. */
gcn_status gcn_grad_slot_opt(gcn_ctx *ctx, gcn_tensor *t, float **buf, bool *acc);

/* gcn_grad_slot for an element-wise backward that may write in place: when
 * t has no gradient yet and donor (the op's output gradient, about to be
 * released) has t's shape and no other holder, t's gradient becomes donor
 * itself, so the op overwrites its input with its result and the step's
 * peak holds one buffer fewer. */
gcn_status gcn_grad_slot_reuse(gcn_ctx *ctx, gcn_tensor *t, gcn_tensor *donor, float **buf,
                               bool *acc);

/* ---- context internals ----------------------------------------------- */

struct gcn_ctx {
    gcn_device device;
    int device_index;
    const gcn_backend *be;
    bool tf32;
    uint64_t seed;
    uint32_t rng_key[2];
    uint64_t rng_offset[GCN_RNG_N_STREAMS];
    uint64_t *rng_dev;        /* the dropout stream's offset in the backend's memory, for
                                 its whole life (rng_dev_cpu on the CPU) */
    uint64_t rng_dev_synced;  /* the value *rng_dev holds once the queue has run */
    uint64_t rng_dev_cpu;
    bool grad_enabled;
    gcn_node *tape;
    int tape_len, tape_cap;
    gcn_memory_stats mem;
    void *cuda;             /* per-context CUDA state (core/cuda.h), NULL on the CPU */
    double stamp[GCN_STAMPS]; /* gcn_ctx_stamp's host times on the CPU */
    bool profiling;         /* between gcn_ctx_profile_begin and _end (core/prof.h) */
    struct gcn_prof *prof;  /* the profiler's state, from the first begin on */
    char spmm_kernel[64];   /* kernels/spmm.c: "auto", "auto-deterministic" or a strategy */
    int threads;            /* the CPU backend's threads (core/parallel.h), >= 1 */
    int32_t *node_ids;      /* gcn_ctx_set_node_ids's, in backend memory; NULL when unset */
    int64_t node_rows, node_total;
    void *scratch;          /* the CPU backend's scratch memory (gcn_cpu_scratch) */
    size_t scratch_size;
    struct gcn_cpu_pool *cpu_pool; /* the CPU backend's free blocks (core/cpu_pool.c) */
    gcn_tensor *free_tensors; /* freed headers, for the next tensors and indices (tensor.c) */
    gcn_index *free_indices;
    struct gcn_comm *comm;  /* this rank's communicator (core/comm.c), NULL when alone */
    /* kernels registered by the program (kernels/spmm.c): owned copies,
     * each one allocation */
    struct gcn_spmm_impl **spmm_user;
    int n_spmm_user;
    gcn_log_level log_level;
    gcn_log_fn log_fn;
    void *log_user;
    char err[512];
};

/* The first position in [lo, hi) of the ascending a whose value is >= v,
 * or hi. */
static inline int64_t gcn_lower_bound(const int32_t *a, int64_t lo, int64_t hi, int32_t v)
{
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Device memory through the context's backend, with accounting. */
gcn_status gcn_mem_alloc(gcn_ctx *ctx, void **p, size_t bytes);
void gcn_mem_release(gcn_ctx *ctx, void *p, size_t bytes);

/* Until called with rows 0, the context's allocations serve a batch of
 * `rows` rows among batches of at most max_rows (a graph-level training
 * step): a request takes the smallest free block that fits, and a new
 * block is sized for the request at max_rows rows, so that once a step
 * has run, a step on any batch finds its blocks free (the CPU's pool,
 * core/cpu_pool.c; the GPU's keeps exact size classes). */
gcn_status gcn_mem_batch_rows(gcn_ctx *ctx, int64_t rows, int64_t max_rows);

/* Reserves `words` Philox words on a stream; returns the first offset
 * (in units of 4-word counters) for the caller's draw. */
uint64_t gcn_rng_reserve(gcn_ctx *ctx, gcn_rng_stream stream, uint64_t words);

/* gcn_rng_reserve on the dropout stream, as a start that kernels read
 * relative to the device copy of the offset. */
gcn_draw_offset gcn_rng_reserve_dropout(gcn_ctx *ctx, uint64_t words);

/* gcn_rng_reserve_dropout for a [rows, cols] tensor: on a context whose
 * node ids are set (gcn_ctx_set_node_ids) and a tensor of that many rows,
 * the draws of a [n_total, cols] tensor, each row taking its node's. */
gcn_draw_offset gcn_rng_reserve_dropout_rows(gcn_ctx *ctx, int64_t rows, int64_t cols);

/* Frees the tape's nodes and the headers kept for new tensors and indices
 * (gcn_ctx_free's). */
void gcn_tape_free(gcn_ctx *ctx);
void gcn_ctx_free_headers(gcn_ctx *ctx);

/* Releases the context's node ids (gcn_ctx_free's, and before new ones). */
void gcn_ctx_clear_node_ids(gcn_ctx *ctx);

/* Queues the device copy of the dropout offset forward to the host's and
 * returns in *advanced by how much.  A captured training step ends with
 * this, so each replay moves the device offset on by the step's draws;
 * gcn_rng_count_replayed then moves the host's by the same amount. */
gcn_status gcn_rng_sync_device(gcn_ctx *ctx, uint64_t *advanced);
void gcn_rng_count_replayed(gcn_ctx *ctx, uint64_t advanced);

/* gcn_accuracy's count of correct listed rows into count, one double of
 * the context's device memory (gcn_mem_alloc), written without waiting. */
gcn_status gcn_count_correct(gcn_ctx *ctx, const gcn_tensor *scores, const gcn_index *labels,
                             const gcn_index *rows, double *count);

/* Frees t's values and keeps the tensor: for an intermediate that stays on
 * the tape only as a gradient target (an op's input or output whose values
 * no recorded backward reads, such as the input of an SpMM).  Ops given t
 * afterwards fail with GCN_ERR_STATE. */
void gcn_tensor_drop_values(gcn_tensor *t);

/* Prologue of every op: ctx and out must be non-NULL; clears *out. */
gcn_status gcn_op_begin(gcn_ctx *ctx, gcn_tensor **out);

/* Shape and device checks that set a descriptive error. */
gcn_status gcn_check_tensor(gcn_ctx *ctx, const gcn_tensor *t, const char *what);
gcn_status gcn_check_index(gcn_ctx *ctx, const gcn_index *t, const char *what);

/* An index of n entries on the context's device, contents unset (min 0,
 * max -1, not ascending: nothing is known of them).  Caller frees. */
gcn_status gcn_index_alloc(gcn_ctx *ctx, gcn_index **out, int64_t n);
/* gcn_check_tensor, then shape [1, cols]: "op: what is [r, c], expected [1, cols]". */
gcn_status gcn_check_row_vector(gcn_ctx *ctx, const gcn_tensor *v, const char *op,
                                const char *what, int64_t cols);

#ifdef __cplusplus
}
#endif
#endif
