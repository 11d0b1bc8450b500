/* The fixture of the end-to-end tests (test_train.c on the CPU,
 * test_gpu_train.c on both backends): a generated stochastic block model and
 * a two-layer GCN assembled from the core ops, trained with Adam. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "helpers.h"
#include "sbm_train.h"

typedef struct sbm {
    gcn_csr *adj; /* D^-1/2 (A + I) D^-1/2 */
    gcn_tensor *x; /* [NODES, FEAT] */
    gcn_index *labels, *train, *test;
} sbm;

/* Edges inside a class with probability 0.012, across with 0.0015; features
 * are half a class centre plus unit Gaussian noise; all drawn from the
 * context's data stream, so both backends see the same graph. */
static void make_sbm(gcn_ctx *ctx, sbm *g)
{
    int32_t *deg = calloc(NODES, sizeof *deg), *rp = calloc(NODES + 1, sizeof *rp);
    uint8_t *edge = calloc((size_t)NODES * NODES, 1);
    float *u = malloc(NODES * sizeof *u);
    for (int i = 0; i < NODES; i++) {
        cr_assert_eq(gcn_rng_uniform(ctx, GCN_RNG_DATA, u, NODES), GCN_OK);
        for (int j = i + 1; j < NODES; j++)
            if (u[j] < (i % CLASSES == j % CLASSES ? 0.012f : 0.0015f))
                edge[i * NODES + j] = edge[j * NODES + i] = 1;
        edge[i * NODES + i] = 1;
    }
    for (int i = 0; i < NODES; i++) {
        for (int j = 0; j < NODES; j++)
            deg[i] += edge[i * NODES + j];
        rp[i + 1] = rp[i] + deg[i];
    }
    int32_t *ci = malloc((size_t)rp[NODES] * sizeof *ci);
    float *v = malloc((size_t)rp[NODES] * sizeof *v);
    for (int i = 0, k = 0; i < NODES; i++)
        for (int j = 0; j < NODES; j++)
            if (edge[i * NODES + j]) {
                ci[k] = j;
                v[k++] = (float)(1.0 / sqrt((double)deg[i] * deg[j]));
            }
    cr_assert_eq(gcn_csr_create(ctx, &g->adj, NODES, NODES, rp[NODES], rp, ci, v), GCN_OK);
    float centre[CLASSES * FEAT], *x = malloc((size_t)NODES * FEAT * sizeof *x);
    cr_assert_eq(gcn_rng_normal(ctx, GCN_RNG_DATA, centre, CLASSES * FEAT), GCN_OK);
    cr_assert_eq(gcn_rng_normal(ctx, GCN_RNG_DATA, x, NODES * FEAT), GCN_OK);
    int32_t labels[NODES], train[CLASSES * TRAIN_PER_CLASS], test[NODES];
    int n_train = 0, n_test = 0;
    for (int i = 0; i < NODES; i++) {
        labels[i] = i % CLASSES;
        for (int f = 0; f < FEAT; f++)
            x[i * FEAT + f] += 0.5f * centre[labels[i] * FEAT + f];
        if (i < CLASSES * TRAIN_PER_CLASS)
            train[n_train++] = i;
        else
            test[n_test++] = i;
    }
    g->x = test_tensor(ctx, x, NODES, FEAT);
    g->labels = test_index(ctx, labels, NODES);
    g->train = test_index(ctx, train, n_train);
    g->test = test_index(ctx, test, n_test);
    free(deg);
    free(rp);
    free(edge);
    free(u);
    free(ci);
    free(v);
    free(x);
}

static void free_sbm(sbm *g)
{
    gcn_csr_free(&g->adj);
    gcn_tensor_free(&g->x);
    gcn_index_free(&g->labels);
    gcn_index_free(&g->train);
    gcn_index_free(&g->test);
}

typedef struct gcn2 {
    gcn_tensor *w1, *b1, *w2, *b2;
} gcn2;

/* logits = A relu(A X W1 + b1) W2 + b2, with dropout on the hidden layer. */
static void forward(gcn_ctx *ctx, const sbm *g, const gcn2 *m, bool training, gcn_tensor **out)
{
    gcn_tensor *ax = NULL, *h = NULL, *hb = NULL, *r = NULL, *d = NULL, *hw = NULL, *ahw = NULL;
    cr_assert_eq(gcn_spmm(ctx, g->adj, g->x, &ax), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_matmul(ctx, ax, m->w1, false, false, &h), GCN_OK);
    cr_assert_eq(gcn_add_bias(ctx, h, m->b1, &hb), GCN_OK);
    cr_assert_eq(gcn_relu(ctx, hb, &r), GCN_OK);
    cr_assert_eq(gcn_dropout(ctx, r, 0.5f, training, &d), GCN_OK);
    cr_assert_eq(gcn_matmul(ctx, d, m->w2, false, false, &hw), GCN_OK);
    cr_assert_eq(gcn_spmm(ctx, g->adj, hw, &ahw), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_add_bias(ctx, ahw, m->b2, out), GCN_OK);
    gcn_tensor *tmp[7] = {ax, h, hb, r, d, hw, ahw};
    for (int i = 0; i < 7; i++)
        gcn_tensor_free(&tmp[i]);
}

void sbm_train(gcn_device device, bool tf32, uint64_t seed, run_result *res)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = device;
    o.tf32 = tf32;
    o.seed = seed;
    gcn_ctx *ctx = NULL;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    sbm g;
    make_sbm(ctx, &g);
    gcn2 m;
    cr_assert_eq(gcn_tensor_create(ctx, &m.w1, FEAT, HIDDEN), GCN_OK);
    cr_assert_eq(gcn_tensor_create(ctx, &m.w2, HIDDEN, CLASSES), GCN_OK);
    cr_assert_eq(gcn_tensor_zeros(ctx, &m.b1, 1, HIDDEN), GCN_OK);
    cr_assert_eq(gcn_tensor_zeros(ctx, &m.b2, 1, CLASSES), GCN_OK);
    cr_assert_eq(gcn_init_glorot_uniform(ctx, m.w1, FEAT, HIDDEN, 1.0f), GCN_OK);
    cr_assert_eq(gcn_init_glorot_uniform(ctx, m.w2, HIDDEN, CLASSES, 1.0f), GCN_OK);
    gcn_tensor *params[4] = {m.w1, m.b1, m.w2, m.b2};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(gcn_tensor_set_requires_grad(params[i], true), GCN_OK);
    gcn_optim_opts oo = gcn_optim_default_opts(GCN_OPTIM_ADAM);
    oo.lr = 0.01f;
    oo.weight_decay = 5e-4f;
    gcn_optim *opt = NULL;
    cr_assert_eq(gcn_optim_create(ctx, &opt, params, 4, &oo), GCN_OK);
    res->steady_epoch = -1;
    for (int e = 0; e < EPOCHS; e++) {
        gcn_tensor *logits = NULL, *lp = NULL, *loss = NULL;
        cr_assert_eq(gcn_optim_zero_grad(ctx, opt), GCN_OK);
        forward(ctx, &g, &m, true, &logits);
        cr_assert_eq(gcn_log_softmax(ctx, logits, &lp), GCN_OK);
        cr_assert_eq(gcn_nll_loss(ctx, lp, g.labels, g.train, &loss), GCN_OK);
        cr_assert_eq(gcn_tensor_to_host(ctx, loss, &res->losses[e]), GCN_OK);
        cr_assert(isfinite(res->losses[e]));
        cr_assert_eq(gcn_backward(ctx, loss), GCN_OK, "%s", gcn_last_error(ctx));
        cr_assert_eq(gcn_optim_step(ctx, opt), GCN_OK, "%s", gcn_last_error(ctx));
        gcn_tensor_free(&logits);
        gcn_tensor_free(&lp);
        gcn_tensor_free(&loss);
        gcn_spmm_site_info sites[4];
        int n = gcn_spmm_sites(g.adj, sites, 4);
        bool locked = n > 0;
        for (int i = 0; i < n && i < 4; i++)
            locked &= sites[i].locked;
        if (locked && res->steady_epoch < 0) {
            res->steady_epoch = e;
            gcn_ctx_memory_stats(ctx, &res->steady);
        }
    }
    cr_assert_eq(gcn_ctx_sync(ctx), GCN_OK);
    gcn_ctx_memory_stats(ctx, &res->at_end);
    gcn_tensor *logits = NULL;
    GCN_NO_GRAD(ctx)
    {
        forward(ctx, &g, &m, false, &logits);
    }
    cr_assert_eq(gcn_accuracy(ctx, logits, g.labels, g.test, &res->acc), GCN_OK);
    gcn_tensor_free(&logits);
    gcn_optim_free(&opt);
    for (int i = 0; i < 4; i++)
        gcn_tensor_free(&params[i]);
    free_sbm(&g);
    gcn_memory_stats ms;
    gcn_ctx_memory_stats(ctx, &ms);
    cr_assert_eq(ms.in_use, 0, "%zu bytes leaked through the context", ms.in_use);
    gcn_ctx_free(&ctx);
}

gcn_trainer *sbm_trainer(gcn_ctx *ctx, int32_t n_nodes, int32_t n_features, const char *json,
                         gcn_dataset **ds)
{
    gcn_sbm_opts so = gcn_sbm_default_opts();
    so.n_nodes = n_nodes;
    so.n_features = n_features;
    cr_assert_eq(gcn_dataset_sbm(ctx, ds, &so), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_model_config cfg;
    char err[256];
    cr_assert_eq(gcn_model_config_parse(&cfg, json, "test", err, sizeof err), GCN_OK, "%s", err);
    gcn_trainer *tr = NULL;
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, *ds), GCN_OK, "%s", gcn_last_error(ctx));
    return tr;
}

/* An SBM graph whose 200 features are a bag of words: each node has about
 * 6 of them, 1 or 2, row-normalised as Planetoid's. */
gcn_dataset *sbm_bag_of_words(gcn_ctx *ctx, bool sparse)
{
    gcn_sbm_opts o = gcn_sbm_default_opts();
    o.n_nodes = 400;
    o.n_features = sparse ? 200 : 16;
    o.n_classes = 4;
    o.n_valid = 100;
    o.n_test = 200;
    gcn_dataset *ds = NULL;
    cr_assert_eq(gcn_dataset_sbm(ctx, &ds, &o), GCN_OK, "%s", gcn_last_error(ctx));
    if (!sparse)
        return ds;
    uint64_t state = 77;
    float u[200];
    for (int32_t i = 0; i < ds->n_nodes; i++) {
        float *row = ds->features + (int64_t)i * 200;
        test_fill_uniform(&state, u, 200, 0.0f, 1.0f);
        double sum = 0.0;
        for (int j = 0; j < 200; j++) {
            row[j] = u[j] < 0.03f ? (u[j] < 0.01f ? 2.0f : 1.0f) : 0.0f;
            sum += row[j];
        }
        for (int j = 0; j < 200 && sum > 0.0; j++)
            row[j] = (float)(row[j] / sum);
    }
    return ds;
}
