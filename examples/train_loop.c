/* A training loop of one's own, on one's own graph, from the library's
 * pieces: Zachary's karate club (34 members, 78 friendships; the club split
 * in two after a dispute).  A two-layer GCN that sees only the two leaders'
 * sides (members 0 and 33) predicts which club every member joined.
 *
 *     make examples && build/examples/train_loop
 *
 * Uses only <gcn.h>: the normalised adjacency built here as CSR arrays,
 * identity features, weights as tensors that require gradients, ops that
 * record themselves on the tape, Adam. */
#include <math.h>
#include <stdio.h>

#include <gcn.h>

#include "karate.h"

#define HIDDEN 16
#define EPOCHS 200

/* One forward pass: logits = A relu(A X W1) W2.  Every op is recorded on
 * the tape while gradients are enabled. */
static gcn_status forward(gcn_ctx *ctx, const gcn_csr *a, gcn_tensor *x, gcn_tensor *w1,
                          gcn_tensor *w2, gcn_tensor **logits)
{
    gcn_tensor *xw = NULL, *axw = NULL, *h = NULL, *hw = NULL;
    gcn_status st = gcn_matmul(ctx, x, w1, false, false, &xw);
    if (st == GCN_OK)
        st = gcn_spmm(ctx, a, xw, &axw);
    if (st == GCN_OK)
        st = gcn_relu(ctx, axw, &h);
    if (st == GCN_OK)
        st = gcn_matmul(ctx, h, w2, false, false, &hw);
    if (st == GCN_OK)
        st = gcn_spmm(ctx, a, hw, logits);
    gcn_tensor_free(&xw); /* the tape keeps what backward needs */
    gcn_tensor_free(&axw);
    gcn_tensor_free(&h);
    gcn_tensor_free(&hw);
    return st;
}

#define CHECK(call)                                                              \
    do {                                                                         \
        if ((st = (call)) != GCN_OK) {                                           \
            fprintf(stderr, "train_loop: %s: %s\n", #call, gcn_last_error(ctx)); \
            goto done;                                                           \
        }                                                                        \
    } while (0)

int main(void)
{
    gcn_ctx *ctx = NULL;
    gcn_csr *a = NULL;
    gcn_tensor *x = NULL, *w1 = NULL, *w2 = NULL, *logits = NULL, *loss = NULL;
    gcn_index *labels = NULL, *train = NULL, *all = NULL;
    gcn_optim *adam = NULL;
    gcn_status st;

    gcn_ctx_opts opts = gcn_ctx_default_opts(); /* a GPU when there is one */
    opts.seed = 7;
    if ((st = gcn_ctx_create(&ctx, &opts)) != GCN_OK) {
        fprintf(stderr, "train_loop: no context: %s\n", gcn_status_str(st));
        return 1;
    }
    printf("karate club on %s\n", gcn_device_name(gcn_ctx_device(ctx)));

    int32_t row_ptr[N + 1], col_idx[N * N];
    float values[N * N], identity[N * N] = {0};
    int32_t nnz = build_adjacency(row_ptr, col_idx, values);
    CHECK(gcn_csr_create(ctx, &a, N, N, nnz, row_ptr, col_idx, values));
    for (int i = 0; i < N; i++)
        identity[i * N + i] = 1.0f;
    CHECK(gcn_tensor_from_host(ctx, &x, identity, N, N));

    const int32_t leaders[] = {0, 33};
    int32_t every[N];
    for (int i = 0; i < N; i++)
        every[i] = i;
    CHECK(gcn_index_from_host(ctx, &labels, club, N));
    CHECK(gcn_index_from_host(ctx, &train, leaders, 2));
    CHECK(gcn_index_from_host(ctx, &all, every, N));

    CHECK(gcn_tensor_create(ctx, &w1, N, HIDDEN));
    CHECK(gcn_tensor_create(ctx, &w2, HIDDEN, 2));
    CHECK(gcn_init_glorot_uniform(ctx, w1, N, HIDDEN, 1.0f));
    CHECK(gcn_init_glorot_uniform(ctx, w2, HIDDEN, 2, 1.0f));
    gcn_tensor *params[] = {w1, w2};
    for (int i = 0; i < 2; i++)
        CHECK(gcn_tensor_set_requires_grad(params[i], true));
    gcn_optim_opts adam_opts = gcn_optim_default_opts(GCN_OPTIM_ADAM);
    adam_opts.lr = 0.01f;
    adam_opts.weight_decay = 5e-4f;
    CHECK(gcn_optim_create(ctx, &adam, params, 2, &adam_opts));

    double acc = 0.0;
    for (int epoch = 1; epoch <= EPOCHS; epoch++) {
        CHECK(gcn_optim_zero_grad(ctx, adam));
        CHECK(forward(ctx, a, x, w1, w2, &logits));
        CHECK(gcn_cross_entropy(ctx, logits, labels, train, &loss));
        CHECK(gcn_backward(ctx, loss)); /* releases the tape */
        CHECK(gcn_optim_step(ctx, adam));
        if (epoch % 50 == 0) {
            float l;
            CHECK(gcn_tensor_to_host(ctx, loss, &l));
            CHECK(gcn_accuracy(ctx, logits, labels, all, &acc));
            printf("epoch %3d  loss %.4f  accuracy over all members %.3f\n", epoch, l, acc);
        }
        gcn_tensor_free(&logits);
        gcn_tensor_free(&loss);
    }
    printf("final accuracy %.3f\n", acc);

done:
    gcn_optim_free(&adam);
    gcn_tensor_free(&logits);
    gcn_tensor_free(&loss);
    gcn_tensor_free(&w1);
    gcn_tensor_free(&w2);
    gcn_tensor_free(&x);
    gcn_index_free(&labels);
    gcn_index_free(&train);
    gcn_index_free(&all);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
    return st == GCN_OK ? 0 : 1;
}
