/* Training over several ranks against one context (ranks_check.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "ranks_check.h"

enum { MAX_R = 8 };

/* The rank functions run on the group's threads, where Criterion's asserts
 * must not: they record, the test's thread asserts. */
#define TRY(expr)                \
    do {                         \
        st = (expr);             \
        if (st != GCN_OK)        \
            goto cleanup;        \
    } while (0)

/* Contiguous blocks of n rows. */
static void split_rows(int32_t n, int ranks, int32_t *part_ptr)
{
    for (int p = 0; p < ranks; p++)
        part_ptr[p] = (int32_t)((int64_t)n * p / ranks);
    part_ptr[ranks] = n;
}

static gcn_ranks *make_ranks_of(gcn_ctx *main, gcn_device device, gcn_comm_kind kind, int n,
                                uint64_t seed)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = device;
    o.seed = seed;
    o.threads = 1;
    gcn_ranks *g = NULL;
    gcn_status st = gcn_ranks_create(main, &g, n, kind, &o);
    if (st == GCN_ERR_UNSUPPORTED && kind == GCN_COMM_NCCL)
        cr_skip_test("%s", gcn_last_error(main));
    cr_assert_eq(st, GCN_OK, "%s", gcn_last_error(main));
    return g;
}

static gcn_ranks *make_ranks(gcn_ctx *main, gcn_device device, int n, uint64_t seed)
{
    return make_ranks_of(main, device, GCN_COMM_LOCAL, n, seed);
}

static gcn_ctx *device_ctx(gcn_device device, uint64_t seed)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = device;
    o.seed = seed;
    o.threads = 1;
    gcn_ctx *ctx = NULL;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    return ctx;
}

/* Normwise error of got against want, relative to want's norm or 1e-3,
 * whichever is larger (a bias before batch norm has a zero gradient up to
 * rounding). */
static double rel_err(const float *got, const float *want, int64_t n)
{
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        num += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        den += (double)want[i] * want[i];
    }
    return sqrt(num) / fmax(sqrt(den), 1e-3);
}

/* Each rank's errors of its output and its input's gradient. */
static void assert_ranks(double (*err)[2], int n_ranks, double tol)
{
    for (int r = 0; r < n_ranks; r++) {
        cr_assert(err[r][0] <= tol, "rank %d: output relative error %g > %g", r, err[r][0], tol);
        cr_assert(err[r][1] <= tol, "rank %d: gradient relative error %g > %g", r, err[r][1],
                  tol);
    }
}

/* ---- products ------------------------------------------------------------- */

typedef struct spmm_case {
    const gcn_graph *g;
    int32_t part_ptr[MAX_R + 1];
    int feat;
    bool self_term;
    const float *x, *y, *dx;  /* the whole run's: input, output, gradient */
    const int32_t *labels;
    double err[MAX_R][2];
    gcn_comm_stats layer[MAX_R][2]; /* each rank's traffic of layers 0 and 3 */
    int sites[MAX_R][3];            /* each rank's call sites of the whole block, its own
                                     * part and its halo part */
    bool halo_nodes[MAX_R];         /* whether the rank's block has halo columns */
    bool transpose_kept[MAX_R];     /* whether gcn_csr_transpose(block) is not NULL */
    bool parts_only_refused;        /* rank 1's block (gcn_csr_create_block) has no arrays
                                     * and refuses raw products and downloads */
    int chunks;                     /* > 0: every block from gcn_csr_create_block with
                                     * that many chunks */
} spmm_case;

/* y = A x (+ 1.5 x), labelled layer 3, loss = the rank's share of the
 * cross-entropy of y over every row. */
static gcn_status spmm_loss(gcn_ctx *ctx, const gcn_csr *a, gcn_tensor *x, gcn_index *labels,
                            gcn_index *rows, float share, bool self_term, gcn_tensor **y,
                            gcn_tensor **loss)
{
    gcn_tensor *ce = NULL;
    int layer = gcn_ctx_set_layer(ctx, 3);
    gcn_status st = self_term ? gcn_spmm_self(ctx, a, x, 1.5f, y) : gcn_spmm(ctx, a, x, y);
    gcn_ctx_set_layer(ctx, layer);
    if (st == GCN_OK)
        st = gcn_cross_entropy(ctx, *y, labels, rows, &ce);
    if (st == GCN_OK)
        st = gcn_scale(ctx, ce, share, loss);
    if (st == GCN_OK)
        st = gcn_backward(ctx, *loss);
    gcn_tensor_free(&ce);
    return st;
}

/* The first registry kernel for the context's device. */
static const gcn_spmm_impl *device_kernel(const gcn_ctx *ctx)
{
    int n;
    const gcn_spmm_impl *const *reg = gcn_spmm_registry(&n);
    for (int i = 0; i < n; i++)
        if (reg[i]->device == gcn_ctx_device(ctx))
            return reg[i];
    return NULL;
}

static gcn_status spmm_rank(gcn_ctx *ctx, int rank, void *user)
{
    spmm_case *c = user;
    int n_ranks = gcn_ctx_ranks(ctx);
    gcn_part_rows *pr = NULL;
    gcn_csr *a = NULL;
    gcn_tensor *x = NULL, *y = NULL, *loss = NULL;
    gcn_index *labels = NULL, *rows = NULL;
    int32_t *ids = NULL;
    gcn_status st;
    TRY(gcn_partition_rows(ctx, c->g, c->part_ptr, n_ranks, rank, &pr));
    int32_t r0 = pr->row0, n = pr->n_local;
    /* with chunks, every rank makes its block in one call; without, rank 1
     * does (one chunk, as gcn_csr_set_halo's), keeping only the parts */
    if (c->chunks > 0 || rank == 1) {
        TRY(gcn_csr_create_block(ctx, &a, n, pr->n_cols, pr->local->nnz, pr->local->row_ptr,
                                 pr->local->col_idx, pr->local->values, pr->send_rows,
                                 pr->send_off, pr->recv_off, c->chunks > 0 ? c->chunks : 1));
        float one = 0.0f;
        c->parts_only_refused = gcn_csr_row_ptr(a) == NULL && gcn_csr_col_idx(a) == NULL &&
                                gcn_csr_to_host(ctx, a, NULL, NULL, &one) == GCN_ERR_STATE &&
                                gcn_spmm_run(ctx, device_kernel(ctx), a, &one, &one, 1,
                                             false) == GCN_ERR_STATE;
    } else {
        TRY(gcn_csr_create(ctx, &a, n, pr->n_cols, pr->local->nnz, pr->local->row_ptr,
                           pr->local->col_idx, pr->local->values));
        TRY(gcn_csr_set_halo(ctx, a, pr->send_rows, pr->send_off, pr->recv_off));
    }
    TRY(gcn_tensor_from_host(ctx, &x, c->x + (int64_t)r0 * c->feat, n, c->feat));
    TRY(gcn_tensor_set_requires_grad(x, true));
    ids = malloc((size_t)n * sizeof *ids);
    for (int32_t i = 0; i < n; i++)
        ids[i] = i;
    TRY(gcn_index_from_host(ctx, &labels, c->labels + r0, n));
    TRY(gcn_index_from_host(ctx, &rows, ids, n));
    TRY(spmm_loss(ctx, a, x, labels, rows, (float)n / (float)c->g->n_nodes,
                           c->self_term, &y, &loss));
    gcn_comm_get_layer_stats(ctx, 0, &c->layer[rank][0]);
    gcn_comm_get_layer_stats(ctx, 3, &c->layer[rank][1]);
    gcn_spmm_site_info info[8];
    int n_sites = gcn_spmm_sites(a, info, 8);
    for (int k = 0; k < n_sites && k < 8; k++)
        c->sites[rank][info[k].block_part]++;
    c->halo_nodes[rank] = pr->n_halo > 0;
    c->transpose_kept[rank] = gcn_csr_transpose(a) != NULL;
    float *hy = test_read(ctx, y), *hdx = test_read(ctx, gcn_tensor_grad(x));
    c->err[rank][0] = rel_err(hy, c->y + (int64_t)r0 * c->feat, (int64_t)n * c->feat);
    c->err[rank][1] = rel_err(hdx, c->dx + (int64_t)r0 * c->feat, (int64_t)n * c->feat);
    free(hy);
    free(hdx);
cleanup:
    gcn_tape_clear(ctx);
    gcn_tensor_free(&loss);
    gcn_tensor_free(&y);
    gcn_tensor_free(&x);
    gcn_index_free(&labels);
    gcn_index_free(&rows);
    gcn_csr_free(&a);
    gcn_part_rows_free(&pr);
    free(ids);
    return st;
}

void ranks_check_spmm(gcn_device device, int n_ranks, int feat, bool self_term)
{
    ranks_check_spmm_chunked(device, n_ranks, feat, self_term, 0);
}

void ranks_check_spmm_chunked(gcn_device device, int n_ranks, int feat, bool self_term,
                              int chunks)
{
    gcn_ctx *main = test_cpu_ctx(3), *one = device_ctx(device, 3);
    gcn_graph *g = NULL;
    const int32_t n = 203;
    cr_assert_eq(gcn_graph_rmat(main, &g, n, 1400, 0.57, 0.19, 0.19), GCN_OK);
    uint64_t state = 11;
    g->values = malloc((size_t)g->nnz * sizeof *g->values);
    test_fill_uniform(&state, g->values, g->nnz, 0.1f, 1.0f);
    float *x = malloc((size_t)n * feat * sizeof *x);
    int32_t *labels = malloc((size_t)n * sizeof *labels), *ids = malloc((size_t)n * sizeof *ids);
    test_fill_uniform(&state, x, (int64_t)n * feat, -1.0f, 1.0f);
    for (int32_t i = 0; i < n; i++) {
        labels[i] = (int32_t)((i * 7919u) % (unsigned)feat);
        ids[i] = i;
    }
    gcn_csr *a = NULL;
    gcn_tensor *tx = NULL, *y = NULL, *loss = NULL;
    gcn_index *tl = test_index(one, labels, n), *tr = test_index(one, ids, n);
    cr_assert_eq(gcn_graph_to_csr(one, g, &a), GCN_OK);
    tx = test_tensor(one, x, n, feat);
    cr_assert_eq(gcn_tensor_set_requires_grad(tx, true), GCN_OK);
    cr_assert_eq(spmm_loss(one, a, tx, tl, tr, 1.0f, self_term, &y, &loss), GCN_OK, "%s",
                 gcn_last_error(one));
    float *hy = test_read(one, y), *hdx = test_read(one, gcn_tensor_grad(tx));
    spmm_case c = {.g = g, .feat = feat, .self_term = self_term, .x = x, .y = hy, .dx = hdx,
                   .labels = labels, .chunks = chunks};
    split_rows(n, n_ranks, c.part_ptr);
    gcn_ranks *rg = make_ranks(main, device, n_ranks, 3);
    cr_assert_eq(gcn_ranks_run(main, rg, spmm_rank, &c), GCN_OK, "%s", gcn_last_error(main));
    assert_ranks(c.err, n_ranks, 1e-5);
    /* the gather and, in backward (run under layer 0), the return trip count
     * for the product's layer */
    for (int r = 0; r < n_ranks; r++) {
        cr_expect(c.layer[r][0].exchange_calls == 0 && c.layer[r][0].exchange_bytes == 0,
                  "rank %d: %lld exchanges outside layer 3", r,
                  (long long)c.layer[r][0].exchange_calls);
        int k = chunks > 0 ? chunks : 1;
        cr_expect_eq(c.layer[r][1].exchange_calls, 2 * k, "rank %d: %d chunks", r, k);
        /* the products ran on the block's two parts: the own part forward
         * and transposed (one site when symmetric), the halo part too */
        cr_expect(c.sites[r][0] == 0 && c.sites[r][1] >= 1, "rank %d: sites %d, %d, %d", r,
                  c.sites[r][0], c.sites[r][1], c.sites[r][2]);
        cr_expect(!c.halo_nodes[r] || (c.sites[r][2] >= 2 && c.sites[r][2] <= 2 * k),
                  "rank %d: %d halo-part sites", r, c.sites[r][2]);
        cr_expect_not(c.transpose_kept[r], "rank %d: the block keeps its transpose", r);
    }
    cr_expect(n_ranks < 2 || c.parts_only_refused,
              "a block of gcn_csr_create_block exposed arrays or ran a raw product");
    gcn_ranks_free(&rg);
    gcn_tape_clear(one);
    gcn_tensor_free(&loss);
    gcn_tensor_free(&y);
    gcn_tensor_free(&tx);
    gcn_index_free(&tl);
    gcn_index_free(&tr);
    gcn_csr_free(&a);
    free(hy);
    free(hdx);
    free(x);
    free(labels);
    free(ids);
    gcn_graph_free(&g);
    gcn_ctx_free(&one);
    gcn_ctx_free(&main);
}

/* ---- batch norm, activation and dropout ----------------------------------- */

enum { EPI_ROWS = 150, EPI_COLS = 13 }; /* 13: rows do not start on a Philox counter */

typedef struct epi_param {
    gcn_tensor *bias, *gamma, *beta, *mean, *var;
} epi_param;

/* The epilogue's tensors from fixed host values (the same on every rank). */
static gcn_status epi_params(gcn_ctx *ctx, epi_param *p)
{
    float b[EPI_COLS], gm[EPI_COLS], bt[EPI_COLS], zero[EPI_COLS], one[EPI_COLS];
    for (int c = 0; c < EPI_COLS; c++) {
        b[c] = 0.1f * (float)c - 0.4f;
        gm[c] = 1.0f + 0.05f * (float)c;
        bt[c] = 0.02f * (float)c;
        zero[c] = 0.0f;
        one[c] = 1.0f;
    }
    gcn_tensor **t[5] = {&p->bias, &p->gamma, &p->beta, &p->mean, &p->var};
    const float *v[5] = {b, gm, bt, zero, one};
    gcn_status st = GCN_OK;
    for (int i = 0; i < 5 && st == GCN_OK; i++)
        st = gcn_tensor_from_host(ctx, t[i], v[i], 1, EPI_COLS);
    for (int i = 0; i < 3 && st == GCN_OK; i++)
        st = gcn_tensor_set_requires_grad(*t[i], true);
    return st;
}

static void epi_free(epi_param *p)
{
    gcn_tensor **t[5] = {&p->bias, &p->gamma, &p->beta, &p->mean, &p->var};
    for (int i = 0; i < 5; i++)
        gcn_tensor_free(t[i]);
}

typedef struct epi_case {
    int32_t part_ptr[MAX_R + 1];
    const float *x, *y, *dx;
    const int32_t *labels;
    float grads[MAX_R][3][EPI_COLS]; /* each rank's dbias, dgamma, dbeta */
    float running[MAX_R][2][EPI_COLS];
    double err[MAX_R][2];
} epi_case;

/* y = epilogue(x), the rank's share of the cross-entropy of y, backward. */
static gcn_status epi_run(gcn_ctx *ctx, const epi_param *p, gcn_tensor *x, gcn_index *labels,
                          gcn_index *rows, float share, gcn_tensor **y)
{
    gcn_epilogue e = {.bias = p->bias, .gamma = p->gamma, .beta = p->beta,
                      .running_mean = p->mean, .running_var = p->var, .momentum = 0.1f,
                      .eps = 1e-5f, .act = GCN_ACT_RELU, .dropout = 0.3f};
    gcn_tensor *ce = NULL, *loss = NULL;
    gcn_status st = gcn_apply_epilogue(ctx, x, &e, true, y);
    if (st == GCN_OK)
        st = gcn_cross_entropy(ctx, *y, labels, rows, &ce);
    if (st == GCN_OK)
        st = gcn_scale(ctx, ce, share, &loss);
    if (st == GCN_OK)
        st = gcn_backward(ctx, loss);
    gcn_tape_clear(ctx);
    gcn_tensor_free(&ce);
    gcn_tensor_free(&loss);
    return st;
}

static gcn_status epi_rank(gcn_ctx *ctx, int rank, void *user)
{
    epi_case *c = user;
    int32_t r0 = c->part_ptr[rank], n = c->part_ptr[rank + 1] - r0;
    epi_param p = {0};
    gcn_tensor *x = NULL, *y = NULL;
    gcn_index *labels = NULL, *rows = NULL;
    int32_t ids[EPI_ROWS], nodes[EPI_ROWS];
    gcn_status st;
    for (int32_t i = 0; i < n; i++) {
        ids[i] = i;
        nodes[i] = r0 + i;
    }
    TRY(gcn_ctx_set_node_ids(ctx, nodes, n, EPI_ROWS));
    TRY(epi_params(ctx, &p));
    TRY(gcn_tensor_from_host(ctx, &x, c->x + (int64_t)r0 * EPI_COLS, n, EPI_COLS));
    TRY(gcn_tensor_set_requires_grad(x, true));
    TRY(gcn_index_from_host(ctx, &labels, c->labels + r0, n));
    TRY(gcn_index_from_host(ctx, &rows, ids, n));
    TRY(epi_run(ctx, &p, x, labels, rows, (float)n / EPI_ROWS, &y));
    float *hy = test_read(ctx, y), *hdx = test_read(ctx, gcn_tensor_grad(x));
    c->err[rank][0] = rel_err(hy, c->y + (int64_t)r0 * EPI_COLS, (int64_t)n * EPI_COLS);
    c->err[rank][1] = rel_err(hdx, c->dx + (int64_t)r0 * EPI_COLS, (int64_t)n * EPI_COLS);
    free(hy);
    free(hdx);
    gcn_tensor *t[5] = {gcn_tensor_grad(p.bias), gcn_tensor_grad(p.gamma),
                        gcn_tensor_grad(p.beta), p.mean, p.var};
    for (int i = 0; i < 5; i++) {
        float *h = test_read(ctx, t[i]);
        memcpy(i < 3 ? c->grads[rank][i] : c->running[rank][i - 3], h, sizeof c->grads[0][0]);
        free(h);
    }
cleanup:
    epi_free(&p);
    gcn_tensor_free(&x);
    gcn_tensor_free(&y);
    gcn_index_free(&labels);
    gcn_index_free(&rows);
    return st;
}

void ranks_check_epilogue(gcn_device device, int n_ranks)
{
    gcn_ctx *main = test_cpu_ctx(5), *one = device_ctx(device, 5);
    uint64_t state = 23;
    float x[EPI_ROWS * EPI_COLS];
    int32_t labels[EPI_ROWS], ids[EPI_ROWS];
    test_fill_uniform(&state, x, EPI_ROWS * EPI_COLS, -2.0f, 3.0f);
    for (int i = 0; i < EPI_ROWS; i++) {
        labels[i] = (i * 31) % EPI_COLS;
        ids[i] = i;
    }
    epi_param p = {0};
    cr_assert_eq(epi_params(one, &p), GCN_OK);
    gcn_tensor *tx = test_tensor(one, x, EPI_ROWS, EPI_COLS), *y = NULL;
    gcn_index *tl = test_index(one, labels, EPI_ROWS), *tr = test_index(one, ids, EPI_ROWS);
    cr_assert_eq(gcn_tensor_set_requires_grad(tx, true), GCN_OK);
    cr_assert_eq(epi_run(one, &p, tx, tl, tr, 1.0f, &y), GCN_OK, "%s", gcn_last_error(one));
    float *hy = test_read(one, y), *hdx = test_read(one, gcn_tensor_grad(tx));
    epi_case *c = calloc(1, sizeof *c);
    *c = (epi_case){.x = x, .y = hy, .dx = hdx, .labels = labels};
    split_rows(EPI_ROWS, n_ranks, c->part_ptr);
    gcn_ranks *rg = make_ranks(main, device, n_ranks, 5);
    cr_assert_eq(gcn_ranks_run(main, rg, epi_rank, c), GCN_OK, "%s", gcn_last_error(main));
    assert_ranks(c->err, n_ranks, 1e-5);
    gcn_tensor *t[5] = {gcn_tensor_grad(p.bias), gcn_tensor_grad(p.gamma),
                        gcn_tensor_grad(p.beta), p.mean, p.var};
    const char *names[5] = {"dbias", "dgamma", "dbeta", "running mean", "running var"};
    for (int i = 0; i < 5; i++) {
        float *want = test_read(one, t[i]), got[EPI_COLS] = {0};
        for (int r = 0; r < n_ranks; r++)
            for (int k = 0; k < EPI_COLS; k++)
                got[k] += i < 3 ? c->grads[r][i][k] : r == 0 ? c->running[r][i - 3][k] : 0.0f;
        double e = rel_err(got, want, EPI_COLS);
        cr_assert(e <= 1e-5, "%s summed over the ranks: relative error %g", names[i], e);
        free(want);
    }
    gcn_ranks_free(&rg);
    free(c);
    free(hy);
    free(hdx);
    epi_free(&p);
    gcn_tensor_free(&tx);
    gcn_tensor_free(&y);
    gcn_index_free(&tl);
    gcn_index_free(&tr);
    gcn_ctx_free(&one);
    gcn_ctx_free(&main);
}

/* ---- training ------------------------------------------------------------- */

void ranks_check_training(gcn_device device, gcn_comm_kind kind, const char *json, int n_ranks,
                          int epochs, double rel_tol)
{
    ranks_check_training_on(device, kind, json, n_ranks, epochs, rel_tol, 0.8);
}

void ranks_check_training_on(gcn_device device, gcn_comm_kind kind, const char *json,
                             int n_ranks, int epochs, double rel_tol, double homophily)
{
    gcn_ctx *main = test_cpu_ctx(9), *one = device_ctx(device, 9);
    gcn_sbm_opts so = gcn_sbm_default_opts();
    so.homophily = homophily;
    so.n_nodes = 900;
    so.n_features = 24;
    so.n_valid = 200;
    so.n_test = 300;
    gcn_dataset *ds = NULL, *original = NULL;
    cr_assert_eq(gcn_dataset_sbm(main, &ds, &so), GCN_OK, "%s", gcn_last_error(main));
    gcn_ctx *twin = test_cpu_ctx(9);
    cr_assert_eq(gcn_dataset_sbm(twin, &original, &so), GCN_OK, "%s", gcn_last_error(twin));
    gcn_ctx_free(&twin);
    gcn_reorder_opts ro;
    char spec[32];
    snprintf(spec, sizeof spec, "parts:%d", n_ranks);
    cr_assert_eq(gcn_reorder_parse(main, spec, &ro), GCN_OK);
    cr_assert_eq(gcn_dataset_reorder(main, ds, &ro), GCN_OK, "%s", gcn_last_error(main));
    gcn_model_config cfg;
    char err[256];
    cr_assert_eq(gcn_model_config_parse(&cfg, json, "test", err, sizeof err), GCN_OK, "%s", err);
    gcn_trainer *single = NULL, *trainers[MAX_R] = {NULL};
    cr_assert_eq(gcn_trainer_create(one, &single, &cfg, original), GCN_OK, "%s",
                 gcn_last_error(one));
    gcn_ranks *rg = make_ranks_of(main, device, kind, n_ranks, 9);
    cr_assert_eq(gcn_trainer_create_ranks(main, rg, &cfg, ds, trainers), GCN_OK, "%s",
                 gcn_last_error(main));
    for (int e = 0; e < epochs; e++) {
        gcn_epoch_stats a, b;
        cr_assert_eq(gcn_trainer_epoch(one, single, &a), GCN_OK, "%s", gcn_last_error(one));
        cr_assert_eq(gcn_trainer_epoch_ranks(main, rg, trainers, &b), GCN_OK, "%s",
                     gcn_last_error(main));
        double rel = fabs((double)a.loss - b.loss) / fabs((double)a.loss);
        cr_assert(rel <= rel_tol, "epoch %d: loss %.9g on one context, %.9g on %d ranks", e + 1,
                  (double)a.loss, (double)b.loss, n_ranks);
        /* A bias before batch norm has a zero gradient up to rounding, which
         * Adam scales up to steps of lr: the bias and so the running mean
         * wander by rounding, and evaluation-mode scores with them (as in
         * PyTorch); the training-mode loss is the exact check.  (Measured:
         * 0.058 apart at one epoch with another CPU's BLAS rounding.) */
        cr_assert(fabs(a.train_acc - b.train_acc) <= 0.1 &&
                      fabs(a.valid_acc - b.valid_acc) <= 0.1 &&
                      fabs(a.test_acc - b.test_acc) <= 0.1,
                  "epoch %d: accuracies %.4f %.4f %.4f against %.4f %.4f %.4f", e + 1,
                  a.train_acc, a.valid_acc, a.test_acc, b.train_acc, b.valid_acc, b.test_acc);
    }
    /* random edges: rank 0's halo part runs in chunks (two sites, forward
     * and transposed, per chunk); a planted partition's in one */
    const gcn_csr *adj = gcn_trainer_adjacency(trainers[0], GCN_ADJ_GCN);
    adj = adj ? adj : gcn_trainer_adjacency(trainers[0], GCN_ADJ_RAW);
    gcn_spmm_site_info info[32];
    int n_sites = gcn_spmm_sites(adj, info, 32), halo_sites = 0;
    for (int k = 0; k < n_sites && k < 32; k++)
        halo_sites += info[k].block_part == 2;
    if (n_ranks > 1 && homophily == 0.0)
        cr_expect_gt(halo_sites, 2, "the exchanges of a random graph's blocks run in chunks");
    for (int r = 0; r < n_ranks; r++)
        gcn_trainer_free(&trainers[r]);
    gcn_ranks_free(&rg);
    gcn_trainer_free(&single);
    gcn_dataset_free(&ds);
    gcn_dataset_free(&original);
    gcn_ctx_free(&one);
    gcn_ctx_free(&main);
}

void ranks_check_bf16(gcn_device device)
{
    static const char gcn_bf16[] =
        "{\"layers\": [{\"type\": \"gcn\", \"out\": 16, \"norm\": \"batch\", \"activation\": "
        "\"relu\", \"dropout\": 0.2}, {\"type\": \"gcn\", \"out\": \"classes\", \"dropout\": "
        "0.5}], \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}, \"precision\": \"bf16\"}";
    static const char gin_bf16[] =
        "{\"layers\": [{\"type\": \"gin\", \"out\": 16, \"norm\": \"batch\", \"activation\": "
        "\"relu\"}, {\"type\": \"gin\", \"out\": \"classes\", \"hidden\": 15}], "
        "\"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}, \"precision\": \"bf16\"}";
    ranks_check_training(device, GCN_COMM_LOCAL, gcn_bf16, 2, 20, 0.01);
    ranks_check_training_on(device, GCN_COMM_LOCAL, gin_bf16, 2, 10, 0.01, 0.0);
}
