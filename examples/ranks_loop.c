/* A training loop of one's own over several ranks.  The karate club of
 * train_loop.c is split between two ranks: members 0-15 and 16-33.  Each
 * rank is one context on its own thread and holds only its own members'
 * rows.  A product fetches the rows it needs from the other rank (the
 * halo) and sends their gradients back, and the weights' gradients are
 * summed over the ranks before each step.  So the two ranks together train
 * the same model that train_loop trains.
 *
 *     make examples && build/examples/ranks_loop
 *
 * Uses only <gcn.h>: gcn_ranks_create and gcn_ranks_run for the ranks and
 * their threads, gcn_partition_rows and gcn_csr_set_halo for each rank's
 * block of the adjacency, gcn_comm_allreduce_grads before each step. */
#include <stdio.h>
#include <stdlib.h>

#include <gcn.h>

#include "karate.h"

#define RANKS 2
#define HIDDEN 16
#define EPOCHS 200

/* What every rank reads, and what each one reports. */
typedef struct shared {
    gcn_graph adjacency;        /* the whole normalised adjacency */
    int32_t part_ptr[RANKS + 1]; /* rank r owns the members [part_ptr[r], part_ptr[r + 1]) */
    int correct[RANKS];         /* members of the rank classified right at the end */
} shared;

/* Builds what one rank holds: its block of A with the halo, its rows of
 * the identity features, its labels, and its leaders (the training rows)
 * as local ids. */
typedef struct rank_data {
    gcn_csr *a;
    gcn_tensor *x;
    gcn_index *labels, *train, *all;
    int32_t n_local;
} rank_data;

static gcn_status rank_data_create(gcn_ctx *ctx, const shared *s, int rank, rank_data *d)
{
    gcn_part_rows *pr = NULL;
    gcn_status st = gcn_partition_rows(ctx, &s->adjacency, s->part_ptr, RANKS, rank, &pr);
    if (st != GCN_OK)
        return st;
    int32_t row0 = pr->row0, n = pr->n_local, leaders[2], n_leaders = 0, ids[N];
    float *x = calloc((size_t)n * N, sizeof *x);
    for (int32_t i = 0; i < n; i++) {
        x[(int64_t)i * N + row0 + i] = 1.0f; /* identity features: a one in column row0 + i */
        ids[i] = i;
        if (row0 + i == 0 || row0 + i == N - 1)
            leaders[n_leaders++] = i;
    }
    d->n_local = n;
    st = gcn_csr_create(ctx, &d->a, n, pr->n_cols, pr->local->nnz, pr->local->row_ptr,
                        pr->local->col_idx, pr->local->values);
    if (st == GCN_OK)
        st = gcn_csr_set_halo(ctx, d->a, pr->send_rows, pr->send_off, pr->recv_off);
    if (st == GCN_OK)
        st = gcn_tensor_from_host(ctx, &d->x, x, n, N);
    if (st == GCN_OK)
        st = gcn_index_from_host(ctx, &d->labels, club + row0, n);
    if (st == GCN_OK)
        st = gcn_index_from_host(ctx, &d->train, leaders, n_leaders);
    if (st == GCN_OK)
        st = gcn_index_from_host(ctx, &d->all, ids, n);
    free(x);
    gcn_part_rows_free(&pr);
    return st;
}

static void rank_data_free(rank_data *d)
{
    gcn_csr_free(&d->a);
    gcn_tensor_free(&d->x);
    gcn_index_free(&d->labels);
    gcn_index_free(&d->train);
    gcn_index_free(&d->all);
}

/* Computes logits = A relu(A X W1) W2 on the rank's rows, and the rank's
 * share of the loss.  The loss is the mean cross-entropy over the two
 * leaders, so a rank's share is its leaders' cross-entropy summed and
 * divided by two. */
static gcn_status step(gcn_ctx *ctx, const rank_data *d, gcn_tensor *w1, gcn_tensor *w2,
                       gcn_tensor **logits, gcn_tensor **loss)
{
    gcn_tensor *xw = NULL, *axw = NULL, *h = NULL, *hw = NULL, *ce = NULL;
    gcn_status st = gcn_matmul(ctx, d->x, w1, false, false, &xw);
    if (st == GCN_OK)
        st = gcn_spmm(ctx, d->a, xw, &axw); /* fetches the halo rows of xw */
    if (st == GCN_OK)
        st = gcn_relu(ctx, axw, &h);
    if (st == GCN_OK)
        st = gcn_matmul(ctx, h, w2, false, false, &hw);
    if (st == GCN_OK)
        st = gcn_spmm(ctx, d->a, hw, logits);
    if (st == GCN_OK)
        st = gcn_cross_entropy(ctx, *logits, d->labels, d->train, &ce);
    if (st == GCN_OK) /* each rank holds one leader of two */
        st = gcn_scale(ctx, ce, 0.5f, loss);
    gcn_tensor_free(&xw);
    gcn_tensor_free(&axw);
    gcn_tensor_free(&h);
    gcn_tensor_free(&hw);
    gcn_tensor_free(&ce);
    return st;
}

/* Every rank runs this on its own thread, with its own context. */
static gcn_status train_rank(gcn_ctx *ctx, int rank, void *user)
{
    shared *s = user;
    rank_data d = {0};
    gcn_tensor *w1 = NULL, *w2 = NULL, *logits = NULL, *loss = NULL;
    gcn_optim *adam = NULL;
    gcn_status st = rank_data_create(ctx, s, rank, &d);
    /* the same seed on every rank: the same initial weights */
    if (st == GCN_OK)
        st = gcn_tensor_create(ctx, &w1, N, HIDDEN);
    if (st == GCN_OK)
        st = gcn_tensor_create(ctx, &w2, HIDDEN, 2);
    if (st == GCN_OK)
        st = gcn_init_glorot_uniform(ctx, w1, N, HIDDEN, 1.0f);
    if (st == GCN_OK)
        st = gcn_init_glorot_uniform(ctx, w2, HIDDEN, 2, 1.0f);
    gcn_tensor *params[] = {w1, w2};
    for (int i = 0; i < 2 && st == GCN_OK; i++)
        st = gcn_tensor_set_requires_grad(params[i], true);
    gcn_optim_opts o = gcn_optim_default_opts(GCN_OPTIM_ADAM);
    o.lr = 0.01f;
    o.weight_decay = 5e-4f;
    if (st == GCN_OK)
        st = gcn_optim_create(ctx, &adam, params, 2, &o);
    for (int epoch = 1; epoch <= EPOCHS && st == GCN_OK; epoch++) {
        gcn_tensor_free(&logits);
        gcn_tensor_free(&loss);
        st = gcn_optim_zero_grad(ctx, adam);
        if (st == GCN_OK)
            st = step(ctx, &d, w1, w2, &logits, &loss);
        if (st == GCN_OK)
            st = gcn_backward(ctx, loss); /* sends the halo rows' gradients back */
        if (st == GCN_OK)
            st = gcn_comm_allreduce_grads(ctx, params, 2);
        if (st == GCN_OK)
            st = gcn_optim_step(ctx, adam);
    }
    double acc = 0.0;
    if (st == GCN_OK)
        st = gcn_accuracy(ctx, logits, d.labels, d.all, &acc);
    s->correct[rank] = (int)(acc * d.n_local + 0.5);
    gcn_optim_free(&adam);
    gcn_tensor_free(&logits);
    gcn_tensor_free(&loss);
    gcn_tensor_free(&w1);
    gcn_tensor_free(&w2);
    rank_data_free(&d);
    return st;
}

int main(void)
{
    gcn_ctx *ctx = NULL;
    gcn_ranks *ranks = NULL;
    gcn_ctx_opts opts = gcn_ctx_default_opts(); /* a GPU when there is one */
    opts.seed = 7;
    gcn_status st = gcn_ctx_create(&ctx, &opts);
    if (st != GCN_OK) {
        fprintf(stderr, "ranks_loop: no context: %s\n", gcn_status_str(st));
        return 1;
    }
    static int32_t row_ptr[N + 1], col_idx[N * N];
    static float values[N * N];
    shared s = {.adjacency = {.n_nodes = N, .row_ptr = row_ptr, .col_idx = col_idx,
                              .values = values},
                .part_ptr = {0, 16, N}};
    s.adjacency.nnz = build_adjacency(row_ptr, col_idx, values);
    opts.device = gcn_ctx_device(ctx);
    st = gcn_ranks_create(ctx, &ranks, RANKS, GCN_COMM_LOCAL, &opts);
    if (st == GCN_OK) {
        printf("karate club on %d ranks of %s\n", RANKS, gcn_device_name(opts.device));
        st = gcn_ranks_run(ctx, ranks, train_rank, &s);
    }
    if (st != GCN_OK)
        fprintf(stderr, "ranks_loop: %s\n", gcn_last_error(ctx));
    else
        printf("final accuracy %.3f (members right: %d on rank 0, %d on rank 1)\n",
               (double)(s.correct[0] + s.correct[1]) / N, s.correct[0], s.correct[1]);
    gcn_ranks_free(&ranks);
    gcn_ctx_free(&ctx);
    return st == GCN_OK ? 0 : 1;
}
