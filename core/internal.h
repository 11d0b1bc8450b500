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

/* One entry per device.  Pointers are device pointers of that backend;
 * sizes are element counts and may be 0; matrices are row-major.  `acc` asks
 * a backward kernel to add into its output instead of overwriting it. */
typedef struct gcn_backend {
    const char *name;
    gcn_status (*alloc)(gcn_ctx *ctx, void **p, size_t bytes);
    void (*release)(gcn_ctx *ctx, void *p, size_t bytes);
    gcn_status (*upload)(gcn_ctx *ctx, void *dst, const void *host, size_t bytes);
    gcn_status (*download)(gcn_ctx *ctx, void *host, const void *src, size_t bytes);
    gcn_status (*copy)(gcn_ctx *ctx, void *dst, const void *src, size_t bytes);
    gcn_status (*fill)(gcn_ctx *ctx, float *x, int64_t n, float value);
    gcn_status (*sync)(gcn_ctx *ctx);

    /* c[m,n] = alpha op(a) op(b) + beta c; lda/ldb/ldc are row strides. */
    gcn_status (*gemm)(gcn_ctx *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                       float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                       float beta, float *c, int64_t ldc);
    /* y = alpha x + beta y (beta == 0 ignores y's old contents). */
    gcn_status (*axpby)(gcn_ctx *ctx, int64_t n, float alpha, const float *x, float beta,
                        float *y);
    gcn_status (*add)(gcn_ctx *ctx, int64_t n, const float *a, const float *b, float *out);
    gcn_status (*add_bias)(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                           const float *bias, float *out);
    /* out[j] (+)= sum_i x[i, j] */
    gcn_status (*col_sum)(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x, float *out,
                          bool acc);
    /* out[0] = sum of x; dx (+)= dy[0] * scale broadcast */
    gcn_status (*sum)(gcn_ctx *ctx, int64_t n, const float *x, float *out);
    gcn_status (*sum_backward)(gcn_ctx *ctx, int64_t n, const float *dy, float scale, float *dx,
                               bool acc);
    gcn_status (*relu)(gcn_ctx *ctx, int64_t n, const float *x, float *y);
    gcn_status (*relu_backward)(gcn_ctx *ctx, int64_t n, const float *y, const float *dy,
                                float *dx, bool acc);
    gcn_status (*elu)(gcn_ctx *ctx, int64_t n, const float *x, float alpha, float *y);
    /* from the output y: dx (+)= dy * (y > 0 ? 1 : y + alpha) */
    gcn_status (*elu_backward)(gcn_ctx *ctx, int64_t n, const float *y, float alpha,
                               const float *dy, float *dx, bool acc);
    /* y (+)= s[0] * x with s a device scalar */
    gcn_status (*scale_by)(gcn_ctx *ctx, int64_t n, const float *x, const float *s, float *y,
                           bool acc);
    /* out[0] (+)= sum_i a[i] b[i] */
    gcn_status (*dot)(gcn_ctx *ctx, int64_t n, const float *a, const float *b, float *out,
                      bool acc);
    /* Mask element i from Philox(counter = {first + i/4 lo, hi, stream, 0}),
     * word i % 4, first = gcn_draw_first(offset): kept when its uniform
     * value >= p. */
    gcn_status (*dropout)(gcn_ctx *ctx, int64_t n, const float *x, float *y, float p,
                          const uint32_t key[2], gcn_draw_offset offset, bool acc);
    /* p[0] += delta, p one uint64_t of the backend's memory */
    gcn_status (*add_u64)(gcn_ctx *ctx, uint64_t *p, uint64_t delta);
    gcn_status (*batchnorm_train)(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                  const float *gamma, const float *beta, float *y,
                                  float *save_mean, float *save_invstd, float *running_mean,
                                  float *running_var, float momentum, float eps);
    gcn_status (*batchnorm_eval)(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                 const float *gamma, const float *beta, const float *mean,
                                 const float *var, float eps, float *y);
    /* Training-mode backward; any of dx, dgamma, dbeta may be NULL. */
    gcn_status (*batchnorm_backward)(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                     const float *gamma, const float *save_mean,
                                     const float *save_invstd, const float *dy, float *dx,
                                     float *dgamma, float *dbeta, bool acc_x, bool acc_gamma,
                                     bool acc_beta);
    /* Eval-mode backward: dx = dy * gamma * rsqrt(var + eps), dgamma = sum dy * xhat,
     * dbeta = sum dy (any output may be NULL). */
    gcn_status (*batchnorm_eval_backward)(gcn_ctx *ctx, int64_t rows, int64_t cols,
                                          const float *x, const float *gamma, const float *mean,
                                          const float *var, float eps, const float *dy,
                                          float *dx, float *dgamma, float *dbeta, bool acc_x,
                                          bool acc_gamma, bool acc_beta);
    gcn_status (*log_softmax)(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                              float *y);
    gcn_status (*log_softmax_backward)(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *y,
                                       const float *dy, float *dx, bool acc);
    /* out[0] = -mean over the listed rows of logp[row, labels[row]] */
    gcn_status (*nll)(gcn_ctx *ctx, int64_t cols, const float *logp, const int32_t *labels,
                      const int32_t *rows, int64_t n_rows, float *out);
    /* dlogp[row, labels[row]] (+)= -dy[0] / n_rows; zero elsewhere unless acc */
    gcn_status (*nll_backward)(gcn_ctx *ctx, int64_t n, int64_t cols, const int32_t *labels,
                               const int32_t *rows, int64_t n_rows, const float *dy,
                               float *dlogp, bool acc);
    /* training: mean and invstd = 1 / sqrt(var + eps) of v = x + bias over
     * the rows (the biased variance; rows >= 2), and the running statistics
     * updated as batchnorm_train does.  !training: invstd from running_var
     * only (x, bias and mean unused). */
    gcn_status (*epilogue_stats)(gcn_ctx *ctx, int64_t rows, int64_t cols, const float *x,
                                 const float *bias, bool training, float momentum, float eps,
                                 float *running_mean, float *running_var, float *mean,
                                 float *invstd);
    gcn_status (*epilogue_forward)(gcn_ctx *ctx, const gcn_epilogue_args *a, float *out);
    gcn_status (*epilogue_backward)(gcn_ctx *ctx, const gcn_epilogue_args *a, const float *dout,
                                    const gcn_epilogue_grads *g);
    /* dst[i, 0:width] (+)= src[i, 0:width] for i < rows, with row strides */
    gcn_status (*copy_cols)(gcn_ctx *ctx, int64_t rows, int64_t width, const float *src,
                            int64_t src_ld, float *dst, int64_t dst_ld, bool acc);
    /* count[0] = the listed rows whose first largest score is their label,
     * written on the device without waiting (a device pointer). */
    gcn_status (*count_correct)(gcn_ctx *ctx, int64_t cols, const float *scores,
                                const int32_t *labels, const int32_t *rows, int64_t n_rows,
                                double *count);
    /* Cross-entropy of the listed rows in one pass: lse[i] = log sum_j
     * exp(x[r, j]) of the i-th listed row r and out[0] = -mean_i (x[r,
     * labels[r]] - lse[i]); backward dx[r] (+)= dy[0] / n_rows (softmax(x[r])
     * - onehot(labels[r])) for listed rows, zero elsewhere unless acc. */
    gcn_status (*cross_entropy)(gcn_ctx *ctx, int64_t cols, const float *x,
                                const int32_t *labels, const int32_t *rows, int64_t n_rows,
                                float *lse, float *out);
    gcn_status (*cross_entropy_backward)(gcn_ctx *ctx, int64_t n, int64_t cols, const float *x,
                                         const int32_t *labels, const int32_t *rows,
                                         int64_t n_rows, const float *lse, const float *dy,
                                         float *dx, bool acc);
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
    bool borrowed;         /* the arrays belong to another matrix (a level view) */
    gcn_spmm_state *spmm;
    void (*spmm_free)(gcn_spmm_state *state);
};

/* gcn_csr_create for a matrix the caller knows to equal its transpose
 * (symmetric true: no transpose is computed; false: as gcn_csr_create). */
gcn_status gcn_csr_create_known(gcn_ctx *ctx, gcn_csr **out, int32_t n_rows, int32_t n_cols,
                                int32_t nnz, const int32_t *row_ptr, const int32_t *col_idx,
                                const float *values, bool symmetric);

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
    gcn_tensor **in;        /* retained; n_in entries */
    int n_in;
    gcn_tensor *saved[4];   /* retained tensors backward needs */
    gcn_index *index[2];    /* retained index arrays */
    const gcn_csr *matrix;  /* borrowed: must outlive the backward */
    double param[4];        /* scalars backward needs */
    gcn_draw_offset offset; /* where the op's dropout mask starts */
};

/* Records an op if recording is on and any input requires grad; then marks
 * out as requiring grad.  Takes new references to out and inputs.  *node
 * receives the node (NULL when nothing was recorded) for saving extras. */
gcn_status gcn_tape_record(gcn_ctx *ctx, const char *op, gcn_backward_fn backward,
                           gcn_tensor *const *in, int n_in, gcn_tensor *out, gcn_node **node);

/* Whether an op on these inputs would be recorded. */
bool gcn_tape_wants(const gcn_ctx *ctx, gcn_tensor *const *in, int n_in);

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
    gcn_log_level log_level;
    gcn_log_fn log_fn;
    void *log_user;
    char err[512];
};

/* Device memory through the context's backend, with accounting. */
gcn_status gcn_mem_alloc(gcn_ctx *ctx, void **p, size_t bytes);
void gcn_mem_release(gcn_ctx *ctx, void *p, size_t bytes);

/* Reserves `words` Philox words on a stream; returns the first offset
 * (in units of 4-word counters) for the caller's draw. */
uint64_t gcn_rng_reserve(gcn_ctx *ctx, gcn_rng_stream stream, uint64_t words);

/* gcn_rng_reserve on the dropout stream, as a start that kernels read
 * relative to the device copy of the offset. */
gcn_draw_offset gcn_rng_reserve_dropout(gcn_ctx *ctx, uint64_t words);

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
/* gcn_check_tensor, then shape [1, cols]: "op: what is [r, c], expected [1, cols]". */
gcn_status gcn_check_row_vector(gcn_ctx *ctx, const gcn_tensor *v, const char *op,
                                const char *what, int64_t cols);

#ifdef __cplusplus
}
#endif
#endif
