/* The SpMM registry, kernel choice per context, plan caching on matrices,
 * and the differentiable op Y = A X with backward dX = A^T dY. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/prof.h"
#include "internal.h"
#include "kernels/halo/halo.h"
#include "impls.h"

/* Every kernel; the selector tries each in the roles it lists.  The order
 * breaks ties between equal medians: rowsplit first (deterministic, and in
 * docs/perf.md faster than cuSPARSE almost everywhere). */
static const gcn_spmm_impl *const registry[] = {
    &gcn_spmm_cpu,
#if GCN_WITH_CUDA /* a build without CUDA has none of these */
    &gcn_spmm_rowsplit,
    &gcn_spmm_rowpack,
    &gcn_spmm_rowpack_wide,
    &gcn_spmm_cusparse,
    &gcn_spmm_rowgroup,
    &gcn_spmm_accel,
    &gcn_spmm_mergepath,
    &gcn_spmm_intra_smem,
    &gcn_spmm_intra_dense,
    &gcn_spmm_inter_csr,
    &gcn_spmm_inter_coo,
#endif
};

#define N_IMPLS ((int)(sizeof registry / sizeof registry[0]))

const gcn_spmm_impl *const *gcn_spmm_registry(int *n_impls)
{
    if (n_impls)
        *n_impls = N_IMPLS;
    return registry;
}

int gcn_spmm_count(const gcn_ctx *ctx)
{
    return N_IMPLS + (ctx ? ctx->n_spmm_user : 0);
}

const gcn_spmm_impl *gcn_spmm_at(const gcn_ctx *ctx, int i)
{
    return i < N_IMPLS ? registry[i] : ctx->spmm_user[i - N_IMPLS];
}

const gcn_spmm_impl *gcn_spmm_one_step_kernel(const gcn_ctx *ctx)
{
#if GCN_WITH_CUDA
    if (ctx->device == GCN_DEVICE_CUDA)
        return &gcn_spmm_rowgroup;
#endif
    (void)ctx;
    return &gcn_spmm_cpu;
}

const gcn_spmm_impl *gcn_spmm_find(const gcn_ctx *ctx, const char *name)
{
    for (int i = 0; name && i < gcn_spmm_count(ctx); i++)
        if (!strcmp(gcn_spmm_at(ctx, i)->name, name))
            return gcn_spmm_at(ctx, i);
    return NULL;
}

/* A registered kernel: the caller's description in this build's layout,
 * and its own copy of the name, in one allocation (gcn_ctx_free frees it
 * through the impl, its first member). */
typedef struct user_kernel {
    gcn_spmm_impl impl;
    char name[32];
} user_kernel;

static bool valid_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof((user_kernel *)0)->name)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_' && name[i] != '-')
            return false;
    return strcmp(name, "auto") != 0 && strcmp(name, "auto-deterministic") != 0;
}

gcn_status gcn_spmm_register(gcn_ctx *ctx, const gcn_spmm_impl *kernel)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, kernel);
    gcn_spmm_impl k = {.size = sizeof k};
    GCN_TRY(gcn_struct_import(ctx, "gcn_spmm_impl", &k, &k, sizeof k, kernel));
    if (!k.name || !valid_name(k.name))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "spmm_register: kernel name '%s' is not 1-31 "
                         "characters of letters, digits, '_' and '-'", k.name ? k.name : "(null)");
    if (gcn_spmm_find(ctx, k.name))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "spmm_register: a kernel named '%s' exists",
                         k.name);
    if (k.device != ctx->device)
        return GCN_ERROR(ctx, GCN_ERR_DEVICE, "spmm_register: kernel '%s' is for %s, the context "
                         "runs on %s", k.name, gcn_device_name(k.device),
                         gcn_device_name(ctx->device));
    const unsigned all_roles = GCN_SPMM_ROLE_WHOLE | GCN_SPMM_ROLE_INTRA | GCN_SPMM_ROLE_INTER |
                               GCN_SPMM_ROLE_FUSED | GCN_SPMM_ROLE_PRIOR;
    if (!k.supports || !k.plan || !k.run || k.roles == 0 || (k.roles & ~all_roles))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "spmm_register: kernel '%s' needs supports, "
                         "plan and run, and roles among GCN_SPMM_ROLE_*", k.name);
    if (!k.plan_bf16 != !k.run_bf16)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "spmm_register: kernel '%s' has one of "
                         "plan_bf16 and run_bf16 without the other", k.name);
    gcn_spmm_impl **list = realloc(ctx->spmm_user, (size_t)(ctx->n_spmm_user + 1) * sizeof *list);
    if (!list)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "spmm_register: out of host memory");
    ctx->spmm_user = list;
    user_kernel *u = malloc(sizeof *u);
    if (!u)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "spmm_register: out of host memory");
    snprintf(u->name, sizeof u->name, "%s", k.name);
    u->impl = k;
    u->impl.name = u->name;
    list[ctx->n_spmm_user++] = &u->impl;
    return GCN_OK;
}

gcn_status gcn_spmm_set_kernel(gcn_ctx *ctx, const char *name)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, name);
    if (!gcn_spmm_uses_sites(name)) {
        const gcn_spmm_impl *impl = gcn_spmm_find(ctx, name);
        if (!impl || impl->device != ctx->device)
            return GCN_ERROR(ctx, GCN_ERR_NOT_FOUND, "spmm kernel '%s' does not exist for %s",
                             name, gcn_device_name(ctx->device));
    }
    if (strlen(name) >= sizeof ctx->spmm_kernel)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "spmm kernel name '%s' is too long", name);
    strcpy(ctx->spmm_kernel, name);
    return GCN_OK;
}

const char *gcn_spmm_kernel(const gcn_ctx *ctx)
{
    return ctx ? ctx->spmm_kernel : "auto";
}

/* A kernel plan kept on a matrix: built by an SpMM implementation for one
 * feature width and dtype, freed with the matrix. */
typedef struct plan_record {
    const gcn_spmm_impl *impl;
    int feat;
    gcn_dtype dtype;
    void *plan;
    struct plan_record *next;
} plan_record;

/* What this module keeps on a matrix (GCN_CSR_SLOT_PLANS). */
typedef struct plans_slot {
    plan_record *plans;
    const gcn_spmm_impl *kernel; /* gcn_spmm_borrow's: products run it, no call site */
} plans_slot;

static void record_free(plan_record *r)
{
    if (r->impl->free_plan)
        r->impl->free_plan(r->plan);
    free(r);
}

static void plans_slot_free(void *state)
{
    plans_slot *ps = state;
    for (plan_record *r = ps->plans, *next; r; r = next) {
        next = r->next;
        record_free(r);
    }
    free(ps);
}

/* a's slot, made on first use. */
static gcn_status plans_of(gcn_ctx *ctx, const gcn_csr *a, plans_slot **out)
{
    void *state = NULL;
    GCN_TRY(gcn_csr_slot_make(ctx, a, GCN_CSR_SLOT_PLANS, sizeof **out, plans_slot_free, &state));
    *out = state;
    return GCN_OK;
}

/* The plan function of impl's variant for dtype, or NULL. */
static gcn_status (*plan_fn(const gcn_spmm_impl *impl, gcn_dtype dtype))(gcn_ctx *,
                                                                          const gcn_csr *, int,
                                                                          void **)
{
    return dtype == GCN_DTYPE_BF16 ? impl->plan_bf16 : impl->plan;
}

gcn_status gcn_spmm_get_plan(gcn_ctx *ctx, const gcn_spmm_impl *impl, const gcn_csr *a, int feat,
                             gcn_dtype dtype, void **plan)
{
    plans_slot *ps = NULL;
    GCN_TRY(plans_of(ctx, a, &ps));
    for (plan_record *r = ps->plans; r; r = r->next)
        if (r->impl == impl && r->feat == feat && r->dtype == dtype) {
            *plan = r->plan;
            return GCN_OK;
        }
    plan_record *r = calloc(1, sizeof *r);
    if (!r)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "spmm: out of host memory for a plan record");
    gcn_status st = plan_fn(impl, dtype)(ctx, a, feat, &r->plan);
    if (st != GCN_OK) {
        free(r);
        return st;
    }
    r->impl = impl;
    r->feat = feat;
    r->dtype = dtype;
    r->next = ps->plans;
    ps->plans = r;
    *plan = r->plan;
    return GCN_OK;
}

bool gcn_spmm_has_plan(const gcn_csr *a, const gcn_spmm_impl *impl, int feat, gcn_dtype dtype)
{
    const plans_slot *ps = gcn_csr_slot_get(a, GCN_CSR_SLOT_PLANS);
    for (const plan_record *r = ps ? ps->plans : NULL; r; r = r->next)
        if (r->impl == impl && r->feat == feat && r->dtype == dtype)
            return true;
    return false;
}

void gcn_spmm_drop_plan(const gcn_csr *a, const gcn_spmm_impl *impl, int feat, gcn_dtype dtype)
{
    plans_slot *ps = gcn_csr_slot_get(a, GCN_CSR_SLOT_PLANS);
    for (plan_record **pp = ps ? &ps->plans : NULL; pp && *pp; pp = &(*pp)->next)
        if ((*pp)->impl == impl && (*pp)->feat == feat && (*pp)->dtype == dtype) {
            plan_record *r = *pp;
            *pp = r->next;
            record_free(r);
            return;
        }
}

const gcn_spmm_impl *gcn_spmm_fixed_kernel(const gcn_csr *a)
{
    const plans_slot *ps = gcn_csr_slot_get(a, GCN_CSR_SLOT_PLANS);
    return ps ? ps->kernel : NULL;
}

gcn_status gcn_spmm_borrow(gcn_ctx *ctx, int32_t n, int32_t nnz, int32_t *row_ptr, int32_t *col_idx,
                           float *values, const gcn_spmm_impl *kernel, gcn_csr **out)
{
    GCN_ARG(ctx, out && kernel);
    gcn_csr *a;
    GCN_TRY(gcn_csr_wrap(ctx, n, nnz, row_ptr, col_idx, values, &a));
    plans_slot *ps = NULL;
    gcn_status st = plans_of(ctx, a, &ps);
    if (st != GCN_OK) {
        gcn_csr_free(&a);
        return st;
    }
    ps->kernel = kernel;
    *out = a;
    return GCN_OK;
}

gcn_status gcn_spmm_reborrow(gcn_ctx *ctx, gcn_csr *a, int32_t n, int32_t nnz, int32_t *row_ptr,
                             int32_t *col_idx, float *values)
{
    GCN_ARG(ctx, a && a->priv && a->priv->ctx == ctx && gcn_spmm_fixed_kernel(a) && n >= 0 &&
                     nnz >= 0 && row_ptr && (nnz == 0 || (col_idx && values)));
    *a = (gcn_csr){.n_rows = n, .n_cols = n, .nnz = nnz, .row_ptr = row_ptr, .col_idx = col_idx,
                   .values = values, .device = a->device, .priv = a->priv};
    free(a->priv->host_row_ptr);
    a->priv->host_row_ptr = NULL;
    /* each plan again for the new arrays, in its record (the CPU's one-step
     * kernel plans nothing); a record whose kernel cannot plan them goes,
     * and the next product says why */
    plans_slot *ps = gcn_csr_slot_get(a, GCN_CSR_SLOT_PLANS);
    for (plan_record **pp = &ps->plans; *pp;) {
        plan_record *r = *pp;
        const gcn_spmm_impl *impl = r->impl;
        if (impl->free_plan)
            impl->free_plan(r->plan);
        r->plan = NULL;
        if (impl->supports(a, r->feat) &&
            plan_fn(impl, r->dtype)(ctx, a, r->feat, &r->plan) == GCN_OK) {
            pp = &r->next;
        } else {
            *pp = r->next;
            free(r);
        }
    }
    return GCN_OK;
}

/* The shared part of gcn_spmm_run and gcn_spmm_run_bf16: checks, and
 * the plan of impl's variant for dtype (NULL and *done when a has no rows). */
static gcn_status run_begin(gcn_ctx *ctx, const gcn_spmm_impl *impl, const gcn_csr *a, int feat,
                            gcn_dtype dtype, void **plan, bool *done)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, impl && a && a->priv && feat >= 1);
    *done = false;
    if (a->priv->ctx != ctx || impl->device != ctx->device)
        return GCN_ERROR(ctx, GCN_ERR_DEVICE, "spmm: kernel '%s' or matrix is not on this context",
                         impl->name);
    GCN_TRY(gcn_csr_check_arrays(ctx, a, "gcn_spmm_run"));
    if (!plan_fn(impl, dtype))
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "spmm kernel '%s' has no %s variant",
                         impl->name, gcn_dtype_name(dtype));
    if (!impl->supports(a, feat))
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "spmm kernel '%s' does not support this matrix at width %d", impl->name,
                         feat);
    *done = a->n_rows == 0;
    return *done ? GCN_OK : gcn_spmm_get_plan(ctx, impl, a, feat, dtype, plan);
}

gcn_status gcn_spmm_run(gcn_ctx *ctx, const gcn_spmm_impl *impl, const gcn_csr *a,
                        const float *x, float *y, int feat, bool accumulate)
{
    void *plan = NULL;
    bool done;
    GCN_TRY(run_begin(ctx, impl, a, feat, GCN_DTYPE_FP32, &plan, &done));
    return done ? GCN_OK : impl->run(ctx, plan, a, x, y, feat, accumulate);
}

gcn_status gcn_spmm_run_bf16(gcn_ctx *ctx, const gcn_spmm_impl *impl, const gcn_csr *a,
                             const uint16_t *x, uint16_t *y, int feat, bool accumulate)
{
    void *plan = NULL;
    bool done;
    GCN_TRY(run_begin(ctx, impl, a, feat, GCN_DTYPE_BF16, &plan, &done));
    return done ? GCN_OK : impl->run_bf16(ctx, plan, a, x, y, feat, accumulate);
}

gcn_status gcn_spmm_run_dtype(gcn_ctx *ctx, const gcn_spmm_impl *impl, const gcn_csr *a,
                              gcn_dtype dtype, const void *x, void *y, int feat, bool accumulate)
{
    if (dtype == GCN_DTYPE_BF16)
        return gcn_spmm_run_bf16(ctx, impl, a, x, y, feat, accumulate);
    return gcn_spmm_run(ctx, impl, a, x, y, feat, accumulate);
}

/* The kernel the context's setting fixes for a's products (a forced
 * registry kernel, or the one a one-step matrix fixes), or NULL for a call
 * site of the mode. */
static const gcn_spmm_impl *fixed_kernel(const gcn_ctx *ctx, const gcn_csr *a)
{
    if (!gcn_spmm_uses_sites(ctx->spmm_kernel))
        return gcn_spmm_find(ctx, ctx->spmm_kernel);
    return gcn_spmm_fixed_kernel(a); /* a one-step matrix (gcn_spmm_borrow) */
}

/* Runs the context's choice: a forced kernel, or a call site (whose
 * selector, plans and profiling runs count as SpMM time when profiling). */
gcn_status gcn_spmm_apply(gcn_ctx *ctx, const gcn_csr *a, gcn_dtype dtype, const void *x,
                          void *y, int feat, bool accumulate)
{
    gcn_prof_category prev = gcn_prof_enter(ctx, GCN_PROF_SPMM);
    const gcn_spmm_impl *fixed = fixed_kernel(ctx, a);
    gcn_status st = fixed ? gcn_spmm_run_dtype(ctx, fixed, a, dtype, x, y, feat, accumulate)
                          : gcn_spmm_site_apply(ctx, a, dtype, x, y, feat, accumulate);
    gcn_prof_leave(ctx, prev);
    return st;
}

/* The names of the kernels with a bf16 variant the selector may try on
 * ctx, comma-separated into list. */
static void bf16_names(const gcn_ctx *ctx, char *list, size_t size)
{
    list[0] = '\0';
    for (int i = 0; i < gcn_spmm_count(ctx); i++) {
        const gcn_spmm_impl *k = gcn_spmm_at(ctx, i);
        size_t len = strlen(list);
        if (k->run_bf16 && k->device == ctx->device && k->roles)
            snprintf(list + len, size - len, "%s%s", len ? ", " : "", k->name);
    }
}

gcn_status gcn_spmm_check_dtype(gcn_ctx *ctx, gcn_dtype dtype)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    if (dtype != GCN_DTYPE_BF16)
        return GCN_OK;
    GCN_TRY(gcn_ctx_check_bf16(ctx));
    const char *k = ctx->spmm_kernel;
    char list[256];
    bf16_names(ctx, list, sizeof list);
    if (strchr(k, '+'))
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "spmm strategy '%s' has no bf16 variant (a "
                         "split's second product would round its output twice); bf16 kernels: "
                         "auto, %s", k, list);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(k, "@"), k);
    const gcn_spmm_impl *impl = gcn_spmm_find(ctx, name);
    if (impl && !impl->run_bf16)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "spmm kernel '%s' has no bf16 variant "
                         "(precision bf16 needs auto or one of: %s)", name, list);
    return GCN_OK;
}

/* dX (+)= A^T dY (+ alpha dY when self_term); a matrix with a halo goes
 * through its two parts and the halo's return trip. */
static gcn_status spmm_grad(gcn_ctx *ctx, gcn_node *nd, bool self_term)
{
    gcn_tensor *x = nd->in[0], *dy = nd->out->grad;
    const gcn_csr *a = nd->matrix, *at = gcn_csr_transpose(a);
    float *buf;
    bool acc;
    gcn_status st;
    GCN_TRY(gcn_grad_slot(ctx, x, &buf, &acc));
    if (gcn_halo_of(a)) {
        gcn_prof_category prev = gcn_prof_enter(ctx, GCN_PROF_SPMM);
        st = gcn_halo_spmm_grad(ctx, a, dy, self_term ? (float)nd->param[0] : 0.0f, buf, acc);
        gcn_prof_leave(ctx, prev);
        return st;
    }
    if (self_term) {
        GCN_CHECK(ctx->be->axpby(ctx, x->rows * x->cols, (float)nd->param[0], dy->data,
                                 acc ? 1.0f : 0.0f, buf));
        acc = true;
    }
    if (at->n_rows > 0 && x->cols > 0)
        GCN_CHECK(gcn_spmm_apply(ctx, at, x->dtype, dy->data, buf, (int)x->cols, acc));
    else if (!acc && x->dtype == GCN_DTYPE_BF16)
        GCN_CHECK(ctx->be->fill_bf16(ctx, x->grad->bf16, x->rows * x->cols, 0));
    else if (!acc)
        GCN_CHECK(ctx->be->fill(ctx, buf, x->rows * x->cols, 0.0f));
cleanup:
    return st;
}

static gcn_status spmm_backward(gcn_ctx *ctx, gcn_node *nd)
{
    return spmm_grad(ctx, nd, false);
}

/* The shared checks of gcn_spmm and gcn_spmm_self. */
static gcn_status check_spmm(gcn_ctx *ctx, const gcn_csr *a, const gcn_tensor *x)
{
    GCN_ARG(ctx, a && a->priv);
    GCN_TRY(gcn_check_tensor_any(ctx, x, "spmm x"));
    if (a->priv->ctx != ctx)
        return GCN_ERROR(ctx, GCN_ERR_DEVICE, "spmm: the matrix belongs to another context");
    /* a rank's block multiplies the rank's rows and the halo rows it fetches */
    int64_t rows = gcn_halo_of(a) ? a->n_rows : a->n_cols;
    if (x->rows != rows || x->cols > INT32_MAX)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "spmm: matrix is %d x %d%s but x is [%lld, %lld]",
                         a->n_rows, a->n_cols, gcn_halo_of(a) ? " with a halo" : "",
                         (long long)x->rows, (long long)x->cols);
    return GCN_OK;
}

/* y = A x (+ alpha x when self_term) for an fp32 x.  A matrix with a
 * halo multiplies its two parts, fetching the halo rows. */
static gcn_status spmm_values(gcn_ctx *ctx, const gcn_csr *a, gcn_tensor *x, bool self_term,
                              float alpha, gcn_tensor *y)
{
    if (gcn_halo_of(a)) {
        gcn_prof_category prev = gcn_prof_enter(ctx, GCN_PROF_SPMM);
        gcn_status st = gcn_halo_spmm(ctx, a, x, self_term ? alpha : 0.0f, y->data);
        gcn_prof_leave(ctx, prev);
        return st;
    }
    if (self_term)
        GCN_TRY(ctx->be->axpby(ctx, x->rows * x->cols, alpha, x->data, 0.0f, y->data));
    if (x->cols > 0)
        GCN_TRY(gcn_spmm_apply(ctx, a, GCN_DTYPE_FP32, x->data, y->data, (int)x->cols,
                               self_term));
    return GCN_OK;
}

/* Whether a product of bf16 features by a runs on bf16 kernels: not with a
 * separate self term or a halo (their sums are fp32 stand-ins), nor on a
 * one-step matrix whose kernel has no bf16 variant. */
static bool native_bf16(const gcn_csr *a, bool self_term)
{
    const gcn_spmm_impl *fixed = gcn_spmm_fixed_kernel(a);
    return !self_term && !gcn_halo_of(a) && (!fixed || fixed->run_bf16);
}

/* spmm_values for a bf16 x into a bf16 y: the product of x's widened
 * values accumulated in fp32, each output rounded once; by the bf16
 * kernels, else on fp32 stand-ins. */
static gcn_status spmm_values_bf16(gcn_ctx *ctx, const gcn_csr *a, gcn_tensor *x,
                                   bool self_term, float alpha, gcn_tensor *y)
{
    if (native_bf16(a, self_term)) {
        if (x->cols == 0 || a->n_rows == 0)
            return GCN_OK;
        return gcn_spmm_apply(ctx, a, GCN_DTYPE_BF16, x->bf16, y->bf16, (int)x->cols, false);
    }
    gcn_tensor *x32 = NULL, *y32 = NULL;
    gcn_status st;
    GCN_CHECK(gcn_tensor_create(ctx, &x32, x->rows, x->cols));
    GCN_CHECK(gcn_tensor_create(ctx, &y32, y->rows, y->cols));
    GCN_CHECK(ctx->be->from_bf16(ctx, x->rows * x->cols, x->bf16, x32->data, false));
    GCN_CHECK(spmm_values(ctx, a, x32, self_term, alpha, y32));
    GCN_CHECK(ctx->be->to_bf16(ctx, y->rows * y->cols, y32->data, y->bf16, false));
cleanup:
    gcn_tensor_free(&x32);
    gcn_tensor_free(&y32);
    return st;
}

/* y = A x, plus alpha x when self_term, y of x's dtype; records backward
 * on the tape (a bf16 node off the bf16 kernels runs its backward on fp32
 * stand-ins). */
static gcn_status spmm_op(gcn_ctx *ctx, const gcn_csr *a, gcn_tensor *x, bool self_term,
                          float alpha, gcn_backward_fn backward, gcn_tensor **out)
{
    gcn_tensor *y = NULL;
    gcn_node *nd;
    gcn_status st;
    bool bf16 = x->dtype == GCN_DTYPE_BF16;
    GCN_CHECK(gcn_tensor_create_dtype(ctx, &y, a->n_rows, x->cols, x->dtype));
    GCN_CHECK(bf16 ? spmm_values_bf16(ctx, a, x, self_term, alpha, y)
                   : spmm_values(ctx, a, x, self_term, alpha, y));
    GCN_CHECK(gcn_tape_record(ctx, self_term ? "spmm_self" : "spmm", backward, &x, 1, y, &nd));
    if (nd) {
        nd->matrix = a;
        nd->param[0] = alpha;
        nd->mixed = bf16 && !native_bf16(a, self_term);
    }
    *out = y;
    y = NULL;
cleanup:
    gcn_tensor_free(&y);
    return st;
}

gcn_status gcn_spmm(gcn_ctx *ctx, const gcn_csr *a, gcn_tensor *x, gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(check_spmm(ctx, a, x));
    return spmm_op(ctx, a, x, false, 0.0f, spmm_backward, out);
}

/* dX = A^T dY + alpha dY. */
static gcn_status spmm_self_backward(gcn_ctx *ctx, gcn_node *nd)
{
    return spmm_grad(ctx, nd, true);
}

gcn_status gcn_spmm_self(gcn_ctx *ctx, const gcn_csr *a, gcn_tensor *x, float alpha,
                         gcn_tensor **out)
{
    GCN_TRY(gcn_op_begin(ctx, out));
    GCN_TRY(check_spmm(ctx, a, x));
    if (a->n_rows != a->n_cols && !gcn_halo_of(a))
        return GCN_ERROR(ctx, GCN_ERR_SHAPE, "spmm_self: the matrix must be square, got %d x %d",
                         a->n_rows, a->n_cols);
    /* A + alpha I as one matrix, except for a rank's block (its x has halo
     * rows), a one-step matrix (a batch) and alpha = 0 */
    const gcn_csr *with_self = NULL;
    if (!gcn_halo_of(a) && !gcn_spmm_fixed_kernel(a) && alpha != 0.0f)
        GCN_TRY(gcn_spmm_self_matrix(ctx, a, alpha, &with_self));
    if (with_self)
        return spmm_op(ctx, with_self, x, false, 0.0f, spmm_backward, out);
    return spmm_op(ctx, a, x, true, alpha, spmm_self_backward, out);
}
