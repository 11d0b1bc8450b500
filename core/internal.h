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

/* Tells the program that a temporary file is being written (on) or is
 * gone again (off): gcn_ctx_opts.temp_fn.  Accepts NULL. */
void gcn_ctx_temp(gcn_ctx *ctx, bool on);

/* ---- caller-filled structs ------------------------------------------ */

/* Copies the caller's struct src (its first member `size_t size`) into dst,
 * this build's layout of `full` bytes: the fields the caller's build knew,
 * `defaults` for the rest.  A size of no known version is
 * GCN_ERR_INVALID_ARG naming `what`. */
gcn_status gcn_struct_import(gcn_ctx *ctx, const char *what, void *dst, const void *defaults,
                             size_t full, const void *src);

/* ---- backend table: core/backend.h ------------------------------------ */

#include "backend.h"

/* ---- objects ---------------------------------------------------------- */

struct gcn_tensor {
    int64_t rows, cols;
    union {             /* on `device`, rows * cols values of `dtype` */
        float *data;    /* fp32 */
        uint16_t *bf16; /* bf16 bit patterns (core/bf16.h) */
    };
    gcn_dtype dtype;
    gcn_ctx *ctx;
    gcn_device device;
    int refs;
    bool requires_grad; /* a parameter, or computed from one while recording */
    bool is_leaf;       /* not the output of a recorded op */
    bool half_fresh;    /* half holds this fp32 tensor's values rounded */
    gcn_tensor *grad;
    gcn_tensor *half;   /* owned: the bf16 copy bf16 products read (gcn_tensor_half) */
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

/* out = x . w + bias, the bias row added to every row, in one op with one
 * output (the linear layer's): x [m, k], w [k, n], bias [1, n] -> out [m, n]. */
gcn_status gcn_matmul_bias(gcn_ctx *ctx, gcn_tensor *x, gcn_tensor *w, gcn_tensor *bias,
                           gcn_tensor **out);

/* Time between two points of the work queued on the context, read without
 * an extra wait: gcn_ctx_stamp marks the point reached by the work queued so
 * far in slot 0 .. GCN_STAMPS - 1 (a CUDA event on the GPU, the host clock
 * on the CPU, where work runs as it is queued); gcn_ctx_stamp_ms waits for
 * the later stamp and gives the milliseconds between them. */
#define GCN_STAMPS 4
gcn_status gcn_ctx_stamp(gcn_ctx *ctx, int slot);
gcn_status gcn_ctx_stamp_ms(gcn_ctx *ctx, int from, int to, double *ms);

/* State that a module above core keeps on a matrix, each module in a slot
 * of its own (as a ggml backend keeps its state in a tensor's `extra`):
 * core only frees it with the matrix, slot by slot in this order, with the
 * function the module gave when it filled the slot. */
typedef enum gcn_csr_slot_id {
    GCN_CSR_SLOT_SELF,        /* A + alpha I (kernels/spmm/self_loops.c) */
    GCN_CSR_SLOT_SITES,       /* the selector's call sites (kernels/select/sites.c) */
    GCN_CSR_SLOT_HALO,        /* a rank's halo (kernels/halo/halo.c) */
    GCN_CSR_SLOT_PLANS,       /* kernel plans, a fixed kernel (kernels/spmm/spmm.c) */
    GCN_CSR_SLOT_COMMUNITIES, /* community levels, prior order (kernels/adaptgear/) */
    GCN_CSR_N_SLOTS
} gcn_csr_slot_id;

typedef struct gcn_csr_slot {
    void *state;
    void (*free_state)(void *state);
} gcn_csr_slot;

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
    gcn_csr_priv *priv; /* transpose, the modules' slots: owned */
};

struct gcn_csr_priv {
    gcn_ctx *ctx;
    gcn_csr *transpose;    /* NULL when the matrix is symmetric */
    bool symmetric;
    bool sorted;           /* columns strictly increasing in every row: no duplicates */
    gcn_csr *owner;        /* borrowed: the matrix this one is the stored transpose of */
    bool borrowed;         /* the arrays belong to another matrix (a view) or to the
                            * caller (gcn_csr_wrap) */
    bool parts_only;       /* no arrays of its own (gcn_csr_shell): its products run
                            * on parts a module keeps in its slot */
    int32_t *host_row_ptr; /* a device matrix's row_ptr on the host, once a plan asked */
    gcn_csr_slot slot[GCN_CSR_N_SLOTS];
};

/* The state in slot `id` of a, or NULL. */
static inline void *gcn_csr_slot_get(const gcn_csr *a, gcn_csr_slot_id id)
{
    return a && a->priv ? a->priv->slot[id].state : NULL;
}

/* Puts state into a's empty slot `id`; gcn_csr_free calls free_state(state).
 * A matrix is const to its readers, not to the modules caching on it. */
static inline void gcn_csr_slot_set(const gcn_csr *a, gcn_csr_slot_id id, void *state,
                                    void (*free_state)(void *state))
{
    a->priv->slot[id] = (gcn_csr_slot){state, free_state};
}

/* The state in slot `id` of a; on first use, `size` zeroed bytes put there
 * with free_state as their destructor. */
gcn_status gcn_csr_slot_make(gcn_ctx *ctx, const gcn_csr *a, gcn_csr_slot_id id, size_t size,
                             void (*free_state)(void *state), void **out);

/* gcn_csr_create for a matrix the caller knows to equal its transpose
 * (symmetric true: no transpose is computed; false: as gcn_csr_create). */
gcn_status gcn_csr_create_known(gcn_ctx *ctx, gcn_csr **out, int32_t n_rows, int32_t n_cols,
                                int32_t nnz, const int32_t *row_ptr, const int32_t *col_idx,
                                const float *values, bool symmetric);

/* A symmetric n x n matrix with sorted rows over device arrays the caller
 * keeps alive until the matrix is freed (gcn_spmm_borrow adds its kernel). */
gcn_status gcn_csr_wrap(gcn_ctx *ctx, int32_t n, int32_t nnz, int32_t *row_ptr, int32_t *col_idx,
                        float *values, gcn_csr **out);

/* An index over n of base's values from offset on, sharing its data and
 * retaining it; min, max and ascending are the caller's (the views of a
 * batch's arrays, whose ranges the host knows). */
gcn_status gcn_index_view(gcn_ctx *ctx, gcn_index *base, int64_t offset, int64_t n, int32_t min,
                          int32_t max, bool ascending, gcn_index **out);

/* A header of the given shape holding no arrays (row_ptr, col_idx and
 * values NULL, parts_only set), for gcn_csr_create_block; the host arrays
 * are validated as gcn_csr_create does and their sortedness recorded. */
gcn_status gcn_csr_shell(gcn_ctx *ctx, int32_t n_rows, int32_t n_cols, int32_t nnz,
                         const int32_t *row_ptr, const int32_t *col_idx, gcn_csr **out);

/* GCN_OK, or GCN_ERR_STATE naming `what` for a matrix that holds no arrays
 * of its own (parts_only). */
gcn_status gcn_csr_check_arrays(gcn_ctx *ctx, const gcn_csr *a, const char *what);

/* row_ptr on the host: the array itself on the CPU; for a device matrix a
 * copy downloaded on the first call and kept with the matrix, so the
 * kernels' plans share one download.  Borrowed. */
gcn_status gcn_csr_host_row_ptr(gcn_ctx *ctx, const gcn_csr *a, const int32_t **out);

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
    int layer;              /* the context's layer when it was recorded (gcn_ctx_set_layer) */
    bool mixed;             /* ran on fp32 stand-ins of bf16 operands (core/ops/bf16_mixed.c) */
    unsigned round_in;      /* the spec's round_in, for a mixed node's backward */
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
    gcn_dtype dtype;           /* of the output: fp32 unless set */
    unsigned bf16_in;          /* bit i: input i may be bf16; when one is, the op
                                * computes in fp32 on stand-ins and its output is
                                * bf16 (core/ops/bf16_mixed.c) */
    unsigned round_in;         /* bit i: fp32 input i is read rounded to bf16 then */
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

/* bf16 operands around fp32 arithmetic (core/ops/bf16_mixed.c), at most
 * GCN_MIXED_MAX_IN inputs.  _wanted: an input the spec allows in bf16 is
 * bf16.  _forward: the spec's forward on fp32 stand-ins, its result
 * rounded into the bf16 y.  _backward: the node's backward on stand-ins,
 * the gradients converted into the real inputs'. */
#define GCN_MIXED_MAX_IN 8
bool gcn_mixed_wanted(const gcn_op_spec *spec);
gcn_status gcn_mixed_forward(gcn_ctx *ctx, gcn_op_spec *spec, gcn_tensor *y);
gcn_status gcn_mixed_backward(gcn_ctx *ctx, gcn_node *nd);
/* Rounds an fp32 tensor's values to bf16 in place. */
gcn_status gcn_mixed_round(gcn_ctx *ctx, gcn_tensor *t);

/* The bf16 values a product reads for t (borrowed): t's own when t is
 * bf16, else t's bf16 copy (t->half), made on first use and rounded again
 * only after a write marked it stale.  The optimiser writes a parameter's
 * copy in the same pass as the parameter, so a training step rounds each
 * weight once, not once per product. */
gcn_status gcn_tensor_half(gcn_ctx *ctx, gcn_tensor *t, const uint16_t **bf16);

/* Whether the context's device has bf16 arithmetic: GCN_ERR_UNSUPPORTED
 * naming a CUDA device of compute capability below 8.0. */
gcn_status gcn_ctx_check_bf16(gcn_ctx *ctx);

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
    char spmm_kernel[64];   /* kernels/spmm/spmm.c: "auto", "auto-deterministic" or a strategy */
    int threads;            /* the CPU backend's threads (core/parallel.h), >= 1 */
    int layer;              /* gcn_ctx_set_layer's label of the work being queued */
    int32_t *node_ids;      /* gcn_ctx_set_node_ids's, in backend memory; NULL when unset */
    int64_t node_rows, node_total;
    void *scratch;          /* the CPU backend's scratch memory (gcn_cpu_scratch) */
    size_t scratch_size;
    struct gcn_cpu_pool *cpu_pool; /* the CPU backend's free blocks (core/cpu_pool.c) */
    gcn_tensor *free_tensors; /* freed headers, for the next tensors and indices (tensor.c) */
    gcn_index *free_indices;
    struct gcn_comm *comm;  /* this rank's communicator (core/comm.c), NULL when alone */
    /* kernels registered by the program (kernels/spmm/spmm.c): owned copies,
     * each one allocation */
    struct gcn_spmm_impl **spmm_user;
    int n_spmm_user;
    gcn_log_level log_level;
    gcn_log_fn log_fn;
    void *log_user;
    gcn_temp_fn temp_fn;
    void *temp_user;
    char err[512];
};

/* The first position in [lo, hi) of the ascending a whose value is >= v,
 * or hi. */
GCN_HD int64_t gcn_lower_bound(const int32_t *a, int64_t lo, int64_t hi, int32_t v)
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

/* Device, values and dtype checks that set a descriptive error naming
 * `what`: _any takes either dtype, _dtype the one given (GCN_ERR_DTYPE
 * otherwise), and plain gcn_check_tensor fp32, what most ops take. */
gcn_status gcn_check_tensor_any(gcn_ctx *ctx, const gcn_tensor *t, const char *what);
gcn_status gcn_check_tensor_dtype(gcn_ctx *ctx, const gcn_tensor *t, const char *what,
                                  gcn_dtype dtype);
gcn_status gcn_check_tensor(gcn_ctx *ctx, const gcn_tensor *t, const char *what);

/* Bytes of one value of dtype. */
size_t gcn_dtype_size(gcn_dtype dtype);
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
