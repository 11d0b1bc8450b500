/* Graph-level training (a model with a readout) on a collection of graphs.
 * Each epoch shuffles the training graphs into batches (GCN_RNG_SHUFFLE),
 * lays every batch out (node ids, graph offsets, labels, block-diagonal
 * matrices) in one host buffer, uploads it in one copy, and trains batch by
 * batch on views of it: no other host work or wait until the epoch's one
 * read-back.  A batch's matrices live one step, so their products run the
 * plan-free kernel (gcn_spmm_one_step_kernel), never the selector; one
 * header a matrix kind serves every batch in turn.  Buffers are sized at
 * creation for the largest epoch layout and a step's tensors take pool
 * blocks sized for the largest batch (gcn_mem_batch_rows): on the CPU,
 * once two have run, an epoch calls no malloc.  The evaluation batch
 * (validation and test graphs) is built once, and the selector profiles
 * and locks its products as on any graph. */
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "../datasets/internal.h"
#include "../kernels/spmm/internal.h"
#include "trainer_impl.h"

enum { KIND_RAW, KIND_GCN, N_KINDS };

/* Where one batch's arrays start in the epoch layout: int32 words, and
 * floats for the normalised matrix's values. */
typedef struct batch_slot {
    int32_t n_graphs, n_nodes, label_min, label_max;
    int64_t nodes, ptr, labels;
    int64_t rows[N_KINDS], nnz[N_KINDS], vals; /* rows: row_ptr, then col_idx */
} batch_slot;

struct gcn_graph_data {
    int32_t n_graphs, batch_size;
    int32_t *graph_ptr, *labels;   /* host copies of the collection's */
    gcn_graph *mat[N_KINDS];       /* host: the collection's matrices the model multiplies */
    int32_t *split, n_train;       /* the training graph ids, as the split lists them */
    int32_t *train;                /* an epoch's order: split, shuffled from there */
    uint64_t *shuffle_key;         /* the shuffle's scratch (gcn_ds_shuffle_with) */
    uint32_t *shuffle_draws;
    gcn_tensor *features;          /* every node's */
    float *ones;                   /* values of the raw batch matrices */
    size_t ones_bytes;
    int32_t *host_words;           /* the epoch layout */
    float *host_vals;
    int64_t n_words, n_vals;       /* their capacity */
    gcn_index *words;              /* its device copy, which the batches' views share */
    float *vals;
    batch_slot *slot;
    int32_t n_batches;
    int32_t max_nodes;             /* the largest batch's: its batch_size largest graphs' */
    gcn_csr *batch_mat[N_KINDS];   /* the step's matrices, pointed at each batch in turn */
    double *host_correct;          /* the epoch's read-back of correct */
    gcn_index *iota;               /* 0 .. batch_size - 1: the rows of a batch's scores */
    double *correct;               /* device: training batches' correct graphs, then
                                    * validation and test */
    size_t correct_bytes;
    float *loss;                   /* device: the epoch's mean training loss */
    /* the evaluation batch, validation graphs then test graphs (its matrices
     * are the trainer's adj_raw and adj_gcn) */
    gcn_tensor *eval_x;
    gcn_index *eval_ptr, *eval_labels, *eval_rows[2];
};

static int32_t graph_nnz(const gcn_graph *m, const int32_t *ptr, int32_t g)
{
    return m->row_ptr[ptr[g + 1]] - m->row_ptr[ptr[g]];
}

/* Appends the batch's block-diagonal copy of m (row_ptr, then col_idx with
 * batch-local columns, and m's values when it has them) at *w and *fv. */
static void lay_out_matrix(const gcn_graph_data *g, const gcn_graph *m, const int32_t *ids,
                           batch_slot *s, int k, int64_t *w, int64_t *fv)
{
    int32_t *rows = g->host_words + *w, *cols = rows + s->n_nodes + 1;
    float *vals = m->values ? g->host_vals + *fv : NULL;
    int32_t at = 0, e = 0;
    rows[0] = 0;
    for (int32_t i = 0; i < s->n_graphs; i++) {
        int32_t first = g->graph_ptr[ids[i]], end = g->graph_ptr[ids[i] + 1];
        for (int32_t v = first; v < end; v++, at++) {
            for (int32_t q = m->row_ptr[v]; q < m->row_ptr[v + 1]; q++, e++) {
                cols[e] = m->col_idx[q] - first + (at - (v - first));
                if (vals)
                    vals[e] = m->values[q];
            }
            rows[at + 1] = e;
        }
    }
    s->rows[k] = *w;
    s->nnz[k] = e;
    *w += s->n_nodes + 1 + e;
    if (vals) {
        s->vals = *fv;
        *fv += e;
    }
}

static void lay_out_batch(gcn_graph_data *g, const int32_t *ids, int32_t n, batch_slot *s,
                          int64_t *w, int64_t *fv)
{
    int32_t *words = g->host_words;
    *s = (batch_slot){.n_graphs = n, .nodes = *w, .label_min = INT32_MAX, .label_max = -1};
    for (int32_t i = 0; i < n; i++)
        for (int32_t v = g->graph_ptr[ids[i]]; v < g->graph_ptr[ids[i] + 1]; v++)
            words[(*w)++] = v;
    s->n_nodes = (int32_t)(*w - s->nodes);
    s->ptr = *w;
    words[(*w)++] = 0;
    for (int32_t i = 0, at = 0; i < n; i++) {
        at += g->graph_ptr[ids[i] + 1] - g->graph_ptr[ids[i]];
        words[(*w)++] = at;
    }
    s->labels = *w;
    for (int32_t i = 0; i < n; i++) {
        int32_t c = g->labels[ids[i]];
        words[(*w)++] = c;
        s->label_min = c < s->label_min ? c : s->label_min;
        s->label_max = c > s->label_max ? c : s->label_max;
    }
    for (int k = 0; k < N_KINDS; k++)
        if (g->mat[k])
            lay_out_matrix(g, g->mat[k], ids, s, k, w, fv);
}

/* The epoch's batches: shuffled ids, laid out and uploaded in one copy
 * (the device is idle: the previous epoch ended with its read-back). */
static gcn_status prepare_epoch(gcn_ctx *ctx, gcn_graph_data *g)
{
    /* each epoch's order from the split's, so it depends on the stream alone
     * (a resumed run draws the epochs the uninterrupted one would have) */
    memcpy(g->train, g->split, (size_t)g->n_train * sizeof *g->train);
    GCN_TRY(gcn_ds_shuffle_with(ctx, GCN_RNG_SHUFFLE, g->train, g->n_train, g->shuffle_key,
                                g->shuffle_draws)); /* gcn_graph_shuffle_batches's draws */
    int64_t w = 0, fv = 0;
    for (int32_t b = 0; b < g->n_batches; b++) {
        int32_t first = b * g->batch_size;
        int32_t n = g->n_train - first < g->batch_size ? g->n_train - first : g->batch_size;
        lay_out_batch(g, g->train + first, n, &g->slot[b], &w, &fv);
    }
    GCN_TRY(ctx->be->upload(ctx, g->words->data, g->host_words, (size_t)w * sizeof(int32_t)));
    return fv > 0 ? ctx->be->upload(ctx, g->vals, g->host_vals, (size_t)fv * sizeof(float))
                  : GCN_OK;
}

/* Points the step's matrix of kind k at the batch's, over the epoch
 * layout's device copy (its header made on the first step). */
static gcn_status batch_matrix(gcn_ctx *ctx, gcn_graph_data *g, const batch_slot *s, int k)
{
    if (!g->mat[k])
        return GCN_OK;
    int32_t *rows = g->words->data + s->rows[k], nnz = (int32_t)s->nnz[k];
    float *vals = k == KIND_GCN ? g->vals + s->vals : g->ones;
    if (g->batch_mat[k])
        return gcn_spmm_reborrow(ctx, g->batch_mat[k], s->n_nodes, nnz, rows,
                                 rows + s->n_nodes + 1, vals);
    return gcn_spmm_borrow(ctx, s->n_nodes, nnz, rows, rows + s->n_nodes + 1, vals,
                           gcn_spmm_one_step_kernel(ctx), &g->batch_mat[k]);
}

/* The views of one batch: its nodes, offsets, labels and score rows. */
typedef struct batch_views {
    gcn_index *nodes, *ptr, *labels, *rows;
} batch_views;

static void views_free(batch_views *v)
{
    gcn_index_free(&v->nodes);
    gcn_index_free(&v->ptr);
    gcn_index_free(&v->labels);
    gcn_index_free(&v->rows);
}

static gcn_status views_make(gcn_ctx *ctx, gcn_graph_data *g, const batch_slot *s,
                             batch_views *v)
{
    GCN_TRY(gcn_index_view(ctx, g->words, s->nodes, s->n_nodes, 0, g->graph_ptr[g->n_graphs] - 1,
                           false, &v->nodes));
    GCN_TRY(gcn_index_view(ctx, g->words, s->ptr, s->n_graphs + 1, 0, s->n_nodes, true, &v->ptr));
    GCN_TRY(gcn_index_view(ctx, g->words, s->labels, s->n_graphs, s->label_min, s->label_max,
                           false, &v->labels));
    GCN_TRY(gcn_index_view(ctx, g->iota, 0, s->n_graphs, 0, s->n_graphs - 1, true, &v->rows));
    for (int k = 0; k < N_KINDS; k++)
        GCN_TRY(batch_matrix(ctx, g, s, k));
    return GCN_OK;
}

/* The batch's features, scores and loss, and the loss's gradients, in
 * blocks of the pool sized for the largest batch (gcn_mem_batch_rows). */
static gcn_status batch_grads(gcn_ctx *ctx, gcn_trainer *tr, const batch_slot *s,
                              const batch_views *v, gcn_tensor **x, gcn_tensor **scores,
                              gcn_tensor **loss)
{
    gcn_graph_data *g = tr->graphs;
    GCN_TRY(gcn_mem_batch_rows(ctx, s->n_nodes, g->max_nodes));
    gcn_status st = gcn_gather_rows(ctx, g->features, v->nodes, x);
    if (st == GCN_OK)
        st = gcn_model_forward_graphs(ctx, tr->model, g->batch_mat[KIND_GCN],
                                      g->batch_mat[KIND_RAW], *x, v->ptr, true, scores);
    if (st == GCN_OK)
        st = gcn_cross_entropy(ctx, *scores, v->labels, v->rows, loss);
    if (st == GCN_OK)
        st = gcn_backward(ctx, *loss);
    gcn_mem_batch_rows(ctx, 0, 0); /* cannot fail */
    return st;
}

/* One optimisation step on batch b; its loss, weighted by its share of the
 * training graphs, and its correct graphs go to the device readout. */
static gcn_status batch_step(gcn_ctx *ctx, gcn_trainer *tr, int32_t b)
{
    gcn_graph_data *g = tr->graphs;
    const batch_slot *s = &g->slot[b];
    batch_views v = {0};
    gcn_tensor *x = NULL, *scores = NULL, *loss = NULL;
    gcn_status st;
    GCN_CHECK(views_make(ctx, g, s, &v));
    for (int i = 0; i < tr->n_opt; i++)
        GCN_CHECK(gcn_optim_zero_grad(ctx, tr->opt[i]));
    GCN_CHECK(batch_grads(ctx, tr, s, &v, &x, &scores, &loss));
    for (int i = 0; i < tr->n_opt; i++)
        GCN_CHECK(gcn_optim_step(ctx, tr->opt[i]));
    GCN_CHECK(gcn_count_correct(ctx, scores, v.labels, v.rows, &g->correct[b]));
    GCN_CHECK(ctx->be->axpby(ctx, 1, (float)s->n_graphs / (float)g->n_train, loss->data, 1.0f,
                             g->loss));
cleanup:
    gcn_tape_clear(ctx);
    gcn_tensor_free(&x);
    gcn_tensor_free(&scores);
    gcn_tensor_free(&loss);
    views_free(&v);
    return st;
}

static gcn_status eval_scores(gcn_ctx *ctx, gcn_trainer *tr, gcn_tensor **scores)
{
    gcn_graph_data *g = tr->graphs;
    bool prev = gcn_set_grad_enabled(ctx, false);
    gcn_status st = gcn_model_forward_graphs(ctx, tr->model, tr->adj_gcn, tr->adj_raw, g->eval_x,
                                             g->eval_ptr, false, scores);
    gcn_set_grad_enabled(ctx, prev);
    return st;
}

/* Queues the evaluation's correct counts of the validation and test graphs. */
static gcn_status evaluate(gcn_ctx *ctx, gcn_trainer *tr, double *correct)
{
    gcn_graph_data *g = tr->graphs;
    if (!g->eval_x)
        return GCN_OK;
    gcn_tensor *scores = NULL;
    gcn_status st = eval_scores(ctx, tr, &scores);
    for (int i = 0; i < 2 && st == GCN_OK; i++)
        if (g->eval_rows[i]->n > 0)
            st = gcn_count_correct(ctx, scores, g->eval_labels, g->eval_rows[i], &correct[i]);
    gcn_tensor_free(&scores);
    return st;
}

static double fraction(double correct, int64_t n)
{
    return n > 0 ? correct / (double)n : 0.0;
}

gcn_status gcn_graph_epoch(gcn_ctx *ctx, gcn_trainer *tr, double acc[3], float *loss)
{
    gcn_graph_data *g = tr->graphs;
    GCN_TRY(prepare_epoch(ctx, g));
    GCN_TRY(ctx->be->fill(ctx, g->loss, 1, 0.0f));
    GCN_TRY(gcn_ctx_stamp(ctx, 0));
    for (int32_t b = 0; b < g->n_batches; b++)
        GCN_TRY(batch_step(ctx, tr, b));
    uint64_t draws;
    GCN_TRY(gcn_rng_sync_device(ctx, &draws));
    GCN_TRY(gcn_ctx_stamp(ctx, 1));
    GCN_TRY(evaluate(ctx, tr, g->correct + g->n_batches));
    double *host = g->host_correct;
    host[g->n_batches] = host[g->n_batches + 1] = 0.0;
    gcn_status st = ctx->be->download(ctx, host, g->correct,
                                      ((size_t)g->n_batches + (g->eval_x ? 2 : 0)) * sizeof *host);
    if (st == GCN_OK)
        st = ctx->be->download(ctx, loss, g->loss, sizeof *loss);
    double train = 0.0;
    for (int32_t b = 0; b < g->n_batches; b++)
        train += host[b];
    acc[0] = fraction(train, g->n_train);
    for (int i = 0; i < 2; i++)
        acc[i + 1] = g->eval_x ? fraction(host[g->n_batches + i], g->eval_rows[i]->n) : 0.0;
    return st;
}

gcn_status gcn_graph_accuracies(gcn_ctx *ctx, gcn_trainer *tr, double acc[3])
{
    gcn_graph_data *g = tr->graphs;
    double host[2] = {0.0, 0.0};
    GCN_TRY(evaluate(ctx, tr, g->correct));
    if (g->eval_x)
        GCN_TRY(ctx->be->download(ctx, host, g->correct, sizeof host));
    acc[0] = 0.0;
    for (int i = 0; i < 2; i++)
        acc[i + 1] = g->eval_x ? fraction(host[i], g->eval_rows[i]->n) : 0.0;
    return GCN_OK;
}

gcn_status gcn_graph_scores(gcn_ctx *ctx, gcn_trainer *tr, gcn_tensor **scores)
{
    gcn_graph_data *g = tr->graphs;
    gcn_csr *mat[N_KINDS] = {NULL, NULL};
    gcn_index *ptr = NULL;
    gcn_status st;
    for (int k = 0; k < N_KINDS; k++)
        if (g->mat[k])
            GCN_CHECK(gcn_graph_to_csr(ctx, g->mat[k], &mat[k]));
    GCN_CHECK(gcn_index_from_host(ctx, &ptr, g->graph_ptr, (int64_t)g->n_graphs + 1));
    bool prev = gcn_set_grad_enabled(ctx, false);
    st = gcn_model_forward_graphs(ctx, tr->model, mat[KIND_GCN], mat[KIND_RAW], g->features, ptr,
                                  false, scores);
    gcn_set_grad_enabled(ctx, prev);
cleanup:
    for (int k = 0; k < N_KINDS; k++)
        gcn_csr_free(&mat[k]);
    gcn_index_free(&ptr);
    return st;
}

gcn_status gcn_graph_eval_scores(gcn_ctx *ctx, gcn_trainer *tr, gcn_tensor **scores)
{
    *scores = NULL;
    return tr->graphs->eval_x ? eval_scores(ctx, tr, scores) : GCN_OK;
}

/* ---- creation ------------------------------------------------------------ */

static gcn_status check_collection(gcn_ctx *ctx, const gcn_dataset *ds)
{
    if (ds->n_graphs == 0 || !ds->graph_labels || ds->n_graph_classes < 2)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "dataset %s is not a labelled collection of graphs: a model with a "
                         "readout classifies graphs (tu:NAME)", ds->name);
    if (!ds->features || ds->n_features < 1)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "dataset %s has no node features; substitute some with --features "
                         "degree or --features random:D", ds->name);
    if (ds->n_train < 1)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "dataset %s has no training graphs (choose a "
                         "fold: gcn_graph_fold_split)", ds->name);
    return GCN_OK;
}

static gcn_status copy_ints(gcn_ctx *ctx, int32_t **dst, const int32_t *src, int64_t n)
{
    *dst = malloc((size_t)(n > 0 ? n : 1) * sizeof **dst);
    if (!*dst)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
    memcpy(*dst, src, (size_t)n * sizeof **dst);
    return GCN_OK;
}

/* The collection's matrices the model multiplies, on the host. */
static gcn_status host_matrices(gcn_ctx *ctx, const gcn_trainer *tr, const gcn_graph *graph,
                                gcn_graph *mat[N_KINDS])
{
    if (gcn_model_uses_raw_adj(tr->model))
        GCN_TRY(gcn_graph_clone(ctx, graph, &mat[KIND_RAW]));
    if (gcn_model_uses_gcn_adj(tr->model))
        GCN_TRY(gcn_graph_gcn_norm(ctx, graph, &mat[KIND_GCN]));
    return GCN_OK;
}

static int descending(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x < y) - (x > y);
}

/* The nodes of the largest batch an epoch can draw: its batch_size largest
 * training graphs. */
static gcn_status largest_batch(gcn_ctx *ctx, gcn_graph_data *g)
{
    int32_t *size = malloc((size_t)g->n_train * sizeof *size);
    if (!size)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
    for (int32_t i = 0; i < g->n_train; i++)
        size[i] = g->graph_ptr[g->split[i] + 1] - g->graph_ptr[g->split[i]];
    qsort(size, (size_t)g->n_train, sizeof *size, descending);
    g->max_nodes = 0;
    for (int32_t i = 0; i < g->n_train && i < g->batch_size; i++)
        g->max_nodes += size[i];
    free(size);
    return GCN_OK;
}

/* Host and device room for the largest epoch layout: the training graphs'
 * totals do not depend on how they are shuffled. */
static gcn_status epoch_buffers(gcn_ctx *ctx, gcn_graph_data *g)
{
    GCN_TRY(largest_batch(ctx, g));
    int64_t nodes = 0, nnz[N_KINDS] = {0, 0};
    for (int32_t i = 0; i < g->n_train; i++) {
        int32_t id = g->train[i];
        nodes += g->graph_ptr[id + 1] - g->graph_ptr[id];
        for (int k = 0; k < N_KINDS; k++)
            nnz[k] += g->mat[k] ? graph_nnz(g->mat[k], g->graph_ptr, id) : 0;
    }
    int64_t nb = ((int64_t)g->n_train + g->batch_size - 1) / g->batch_size;
    g->n_batches = (int32_t)nb; /* every epoch's */
    g->n_words = nodes + (g->n_train + nb) + g->n_train;
    for (int k = 0; k < N_KINDS; k++)
        g->n_words += g->mat[k] ? nodes + nb + nnz[k] : 0;
    g->n_vals = nnz[KIND_GCN];
    g->ones_bytes = (size_t)(nnz[KIND_RAW] > 0 ? nnz[KIND_RAW] : 1) * sizeof(float);
    g->host_words = malloc((size_t)g->n_words * sizeof *g->host_words);
    g->host_vals = malloc((size_t)(g->n_vals > 0 ? g->n_vals : 1) * sizeof *g->host_vals);
    g->slot = calloc((size_t)nb, sizeof *g->slot);
    g->host_correct = malloc(((size_t)nb + 2) * sizeof *g->host_correct);
    g->shuffle_key = malloc((size_t)g->n_train * sizeof *g->shuffle_key);
    g->shuffle_draws = malloc((size_t)g->n_train * sizeof *g->shuffle_draws);
    if (!g->host_words || !g->host_vals || !g->slot || !g->host_correct || !g->shuffle_key ||
        !g->shuffle_draws)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory for the batches");
    GCN_TRY(gcn_index_alloc(ctx, &g->words, g->n_words));
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&g->vals, (size_t)(g->n_vals > 0 ? g->n_vals : 1) *
                                                       sizeof(float)));
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&g->ones, g->ones_bytes));
    GCN_TRY(ctx->be->fill(ctx, g->ones, (int64_t)(g->ones_bytes / sizeof(float)), 1.0f));
    g->correct_bytes = ((size_t)nb + 2) * sizeof *g->correct;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&g->correct, g->correct_bytes));
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&g->loss, sizeof *g->loss));
    int32_t *iota = malloc((size_t)g->batch_size * sizeof *iota);
    if (!iota)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
    for (int32_t i = 0; i < g->batch_size; i++)
        iota[i] = i;
    gcn_status st = gcn_index_from_host(ctx, &g->iota, iota, g->batch_size);
    free(iota);
    return st;
}

static gcn_status range_index(gcn_ctx *ctx, int32_t first, int32_t n, gcn_index **out)
{
    int32_t *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
    if (!ids)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
    for (int32_t i = 0; i < n; i++)
        ids[i] = first + i;
    gcn_status st = gcn_index_from_host(ctx, out, ids, n);
    free(ids);
    return st;
}

/* The evaluation batch: the validation graphs, then the test graphs; its
 * matrices become the trainer's adjacency (the selector's call sites). */
static gcn_status eval_batch(gcn_ctx *ctx, gcn_trainer *tr, const gcn_dataset *ds)
{
    gcn_graph_data *g = tr->graphs;
    int32_t n = ds->n_valid + ds->n_test;
    if (n == 0)
        return GCN_OK;
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    gcn_graph_batch *b = NULL;
    gcn_graph *mat[N_KINDS] = {NULL, NULL};
    gcn_index *nodes = NULL;
    gcn_status st = GCN_OK;
    if (!ids)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
    if (ds->n_valid > 0) /* the lists are NULL when empty */
        memcpy(ids, ds->valid, (size_t)ds->n_valid * sizeof *ids);
    if (ds->n_test > 0)
        memcpy(ids + ds->n_valid, ds->test, (size_t)ds->n_test * sizeof *ids);
    GCN_CHECK(gcn_graph_batch_build(ctx, ds, ids, n, &b));
    GCN_CHECK(host_matrices(ctx, tr, b->graph, mat));
    if (mat[KIND_RAW])
        GCN_CHECK(gcn_graph_to_csr(ctx, mat[KIND_RAW], &tr->adj_raw));
    if (mat[KIND_GCN])
        GCN_CHECK(gcn_graph_to_csr(ctx, mat[KIND_GCN], &tr->adj_gcn));
    GCN_CHECK(gcn_index_from_host(ctx, &nodes, b->node_ids, b->n_nodes));
    GCN_CHECK(gcn_gather_rows(ctx, g->features, nodes, &g->eval_x));
    GCN_CHECK(gcn_index_from_host(ctx, &g->eval_ptr, b->graph_ptr, (int64_t)n + 1));
    GCN_CHECK(gcn_index_from_host(ctx, &g->eval_labels, b->labels, n));
    GCN_CHECK(range_index(ctx, 0, ds->n_valid, &g->eval_rows[0]));
    GCN_CHECK(range_index(ctx, ds->n_valid, ds->n_test, &g->eval_rows[1]));
cleanup:
    free(ids);
    gcn_graph_batch_free(&b);
    for (int k = 0; k < N_KINDS; k++)
        gcn_graph_free(&mat[k]);
    gcn_index_free(&nodes);
    return st;
}

gcn_status gcn_graph_data_create(gcn_ctx *ctx, gcn_trainer *tr, const gcn_dataset *ds)
{
    GCN_TRY(check_collection(ctx, ds));
    gcn_graph_data *g = calloc(1, sizeof *g);
    if (!g)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
    tr->graphs = g;
    g->n_graphs = ds->n_graphs;
    g->batch_size = tr->cfg.batch_size;
    g->n_train = ds->n_train;
    GCN_TRY(copy_ints(ctx, &g->graph_ptr, ds->graph_ptr, (int64_t)ds->n_graphs + 1));
    GCN_TRY(copy_ints(ctx, &g->labels, ds->graph_labels, ds->n_graphs));
    GCN_TRY(copy_ints(ctx, &g->split, ds->train, ds->n_train));
    GCN_TRY(copy_ints(ctx, &g->train, ds->train, ds->n_train));
    GCN_TRY(host_matrices(ctx, tr, ds->graph, g->mat));
    GCN_TRY(gcn_tensor_from_host(ctx, &g->features, ds->features, ds->n_nodes, ds->n_features));
    GCN_TRY(epoch_buffers(ctx, g));
    return eval_batch(ctx, tr, ds);
}

void gcn_graph_data_free(gcn_ctx *ctx, gcn_graph_data **pg)
{
    gcn_graph_data *g = *pg;
    if (!g)
        return;
    *pg = NULL;
    free(g->graph_ptr);
    free(g->labels);
    free(g->split);
    free(g->train);
    for (int k = 0; k < N_KINDS; k++)
        gcn_graph_free(&g->mat[k]);
    gcn_tensor_free(&g->features);
    gcn_mem_release(ctx, g->ones, g->ones_bytes);
    free(g->host_words);
    free(g->host_vals);
    gcn_index_free(&g->words);
    gcn_mem_release(ctx, g->vals, (size_t)(g->n_vals > 0 ? g->n_vals : 1) * sizeof(float));
    gcn_mem_release(ctx, g->correct, g->correct_bytes);
    free(g->slot);
    free(g->host_correct);
    free(g->shuffle_key);
    free(g->shuffle_draws);
    for (int k = 0; k < N_KINDS; k++)
        gcn_csr_free(&g->batch_mat[k]);
    gcn_mem_release(ctx, g->loss, sizeof *g->loss);
    gcn_index_free(&g->iota);
    gcn_tensor_free(&g->eval_x);
    gcn_index_free(&g->eval_ptr);
    gcn_index_free(&g->eval_labels);
    gcn_index_free(&g->eval_rows[0]);
    gcn_index_free(&g->eval_rows[1]);
    free(g);
}
