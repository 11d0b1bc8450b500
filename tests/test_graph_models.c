/* Graph-level models: the readout's configuration, a batch's scores equal
 * to each graph's alone, gather_rows, fold splits, and training on batches
 * of graphs (it learns, it is reproducible) on the CPU. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_helpers.h"
#include "helpers.h"

#define GIN_GRAPH(readout)                                                                  \
    "{\"layers\": [{\"type\": \"gin\", \"out\": 16, \"norm\": \"batch\", \"activation\": "  \
    "\"relu\"}, {\"type\": \"gin\", \"out\": 16, \"norm\": \"batch\", \"activation\": "     \
    "\"relu\"}], " readout ", \"batch_size\": 8, \"optimizer\": {\"type\": \"adam\", "     \
    "\"lr\": 0.01}}"

static gcn_model_config parse_ok(const char *json)
{
    gcn_model_config cfg;
    char err[512] = "";
    cr_assert_eq(gcn_model_config_parse(&cfg, json, "t.json", err, sizeof err), GCN_OK, "%s", err);
    return cfg;
}

static void parse_fails(const char *json, const char *needle)
{
    gcn_model_config cfg;
    char err[512] = "";
    cr_assert_eq(gcn_model_config_parse(&cfg, json, "t.json", err, sizeof err), GCN_ERR_FORMAT);
    cr_assert(strstr(err, needle), "'%s' lacks '%s'", err, needle);
}

Test(graph_models, readout_config)
{
    gcn_model_config c = parse_ok(GIN_GRAPH("\"readout\": {\"pooling\": \"max\", \"jk\": true, "
                                            "\"dropout\": 0.5}"));
    cr_assert(c.readout.enabled && c.readout.jk);
    cr_assert_eq(c.readout.pooling, GCN_POOL_MAX);
    cr_assert_float_eq(c.readout.dropout, 0.5f, 1e-9);
    cr_assert_eq(c.batch_size, 8);
    c = parse_ok(GIN_GRAPH("\"readout\": {}"));
    cr_assert(c.readout.enabled && !c.readout.jk);
    cr_assert_eq(c.readout.pooling, GCN_POOL_SUM);
    char text[512];
    gcn_model_config_describe(&c, text, sizeof text);
    cr_assert(strstr(text, "readout sum pooling"), "%s", text);
    parse_fails(GIN_GRAPH("\"readout\": {\"pooling\": \"avg\"}"), "readout.pooling: expected one of");
    parse_fails(GIN_GRAPH("\"readout\": {\"dropout\": 1}"), "readout.dropout");
    parse_fails(GIN_GRAPH("\"readout\": {\"jk\": 1}"), "readout.jk: expected true or false");
    parse_fails(GIN_GRAPH("\"readout\": {\"mode\": 1}"), "readout.mode: unknown key");
    parse_fails(GIN_GRAPH("\"readout\": 3"), "readout: expected an object");
    parse_fails("{\"layers\": [{\"type\": \"gin\", \"out\": 16}], \"batch_size\": 4}",
                "the last layer's out must be");
    parse_fails("{\"layers\": [{\"type\": \"gin\", \"out\": \"classes\"}], \"batch_size\": 4}",
                "batch_size: applies to graph-level models");
    parse_fails("{\"layers\": [{\"type\": \"gin\", \"out\": 8}], \"readout\": {}, "
                "\"batch_size\": 0}", "batch_size: expected an integer");
    /* the architecture hash sees the readout; node-level models keep theirs */
    gcn_model_config a = parse_ok(GIN_GRAPH("\"readout\": {\"jk\": true}"));
    gcn_model_config b = parse_ok(GIN_GRAPH("\"readout\": {\"jk\": false}"));
    cr_assert_neq(gcn_model_config_hash(&a), gcn_model_config_hash(&b));
}

Test(graph_models, shipped_gin_graph_recipe)
{
    gcn_model_config c;
    char err[512] = "";
    cr_assert_eq(gcn_model_config_load(&c, "models/gin-graph.json", err, sizeof err), GCN_OK,
                 "%s", err);
    cr_assert_eq(c.n_layers, 5);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(c.layers[i].type, GCN_LAYER_GIN);
        cr_assert_eq(c.layers[i].out, 64);
        cr_assert_eq(c.layers[i].hidden, 64);
        cr_assert(c.layers[i].batchnorm && c.layers[i].activation == GCN_ACT_RELU);
        cr_assert_float_eq(c.layers[i].dropout, 0.0f, 1e-9);
    }
    cr_assert(c.readout.enabled && c.readout.jk && c.readout.pooling == GCN_POOL_SUM);
    cr_assert_float_eq(c.readout.dropout, 0.5f, 1e-9);
    cr_assert_eq(c.batch_size, 32);
    cr_assert_float_eq(c.optim.lr, 0.01f, 1e-9);
    cr_assert_eq(c.lr_every, 50);
    cr_assert_float_eq(c.lr_gamma, 0.5f, 1e-9);
    cr_assert_eq(c.epochs, 350);
}

Test(graph_models, gather_rows)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const float x[] = {0, 1, 10, 11, 20, 21};
    const int32_t rows[] = {2, 0, 2};
    gcn_tensor *t = test_tensor(ctx, x, 3, 2), *y = NULL;
    gcn_index *idx = test_index(ctx, rows, 3), *bad = NULL;
    cr_assert_eq(gcn_gather_rows(ctx, t, idx, &y), GCN_OK);
    float *h = test_read(ctx, y);
    const float want[] = {20, 21, 0, 1, 20, 21};
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(h[i], want[i], 0.0);
    free(h);
    gcn_tensor_free(&y);
    const int32_t out_of_range[] = {3};
    bad = test_index(ctx, out_of_range, 1);
    cr_assert_eq(gcn_gather_rows(ctx, t, bad, &y), GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "outside [0, 3)"), "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_tensor_set_requires_grad(t, true), GCN_OK);
    cr_assert_eq(gcn_gather_rows(ctx, t, idx, &y), GCN_ERR_UNSUPPORTED);
    cr_assert_null(y);
    gcn_index_free(&bad);
    gcn_index_free(&idx);
    gcn_tensor_free(&t);
    gcn_ctx_free(&ctx);
}

/* A batch's scores, in evaluation mode, are each graph's scores alone. */
static void check_batch_equals_graphs(gcn_ctx *ctx, const gcn_dataset *ds, const char *readout)
{
    char json[1024];
    snprintf(json, sizeof json, GIN_GRAPH("\"readout\": %s"), readout);
    gcn_model_config cfg = parse_ok(json);
    gcn_model *m = NULL;
    cr_assert_eq(gcn_model_create(ctx, &m, &cfg, ds->n_features, ds->n_graph_classes), GCN_OK);
    const int32_t ids[] = {3, 0, 4};
    float all[3][2];
    for (int n = 3; n >= 1; n -= 2) /* the batch of three, then each graph alone */
        for (int k = 0; k < (n == 3 ? 1 : 3); k++) {
            gcn_graph_batch *b = NULL;
            cr_assert_eq(gcn_graph_batch_build(ctx, ds, n == 3 ? ids : ids + k, n, &b), GCN_OK);
            float *x = malloc((size_t)b->n_nodes * (size_t)ds->n_features * sizeof *x);
            for (int32_t v = 0; v < b->n_nodes; v++)
                memcpy(x + (size_t)v * ds->n_features,
                       ds->features + (size_t)b->node_ids[v] * ds->n_features,
                       (size_t)ds->n_features * sizeof *x);
            gcn_tensor *xt = test_tensor(ctx, x, b->n_nodes, ds->n_features), *s = NULL;
            gcn_index *ptr = test_index(ctx, b->graph_ptr, n + 1);
            gcn_csr *adj = NULL;
            cr_assert_eq(gcn_graph_to_csr(ctx, b->graph, &adj), GCN_OK);
            cr_assert_eq(gcn_model_forward_graphs(ctx, m, NULL, adj, xt, ptr, false, &s), GCN_OK,
                         "%s", gcn_last_error(ctx));
            cr_assert_eq(gcn_tensor_rows(s), n);
            float *h = test_read(ctx, s);
            for (int i = 0; i < n; i++)
                for (int c = 0; c < 2; c++) {
                    float *want = &all[n == 3 ? i : k][c];
                    if (n == 3)
                        *want = h[i * 2 + c];
                    else
                        cr_assert_float_eq(h[c], *want, 1e-4f * (1.0f + fabsf(*want)),
                                           "graph %d class %d: alone %g, batched %g", ids[k], c,
                                           (double)h[c], (double)*want);
                }
            free(h);
            free(x);
            gcn_csr_free(&adj);
            gcn_index_free(&ptr);
            gcn_tensor_free(&s);
            gcn_tensor_free(&xt);
            gcn_graph_batch_free(&b);
        }
    gcn_tensor *xt = test_tensor(ctx, ds->features, 1, ds->n_features), *s = NULL;
    cr_assert_eq(gcn_model_forward(ctx, m, NULL, NULL, xt, false, &s), GCN_ERR_STATE);
    gcn_tensor_free(&xt);
    gcn_model_free(&m);
}

Test(graph_models, batch_scores_are_each_graphs)
{
    char *dir = ds_tmpdir();
    ds_write_tu_shapes(dir, 12);
    gcn_ctx *ctx = test_cpu_ctx(3);
    gcn_dataset_opts o = ds_opts(dir);
    gcn_dataset *ds = ds_load_ok(ctx, "tu:shapes", &o);
    cr_assert_eq(ds->n_graphs, 12);
    check_batch_equals_graphs(ctx, ds, "{\"pooling\": \"sum\", \"jk\": true}");
    check_batch_equals_graphs(ctx, ds, "{\"pooling\": \"mean\"}");
    check_batch_equals_graphs(ctx, ds, "{\"pooling\": \"max\", \"jk\": true}");
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(graph_models, fold_split_protocols)
{
    char *dir = ds_tmpdir();
    ds_write_tu_shapes(dir, 30);
    gcn_ctx *ctx = test_cpu_ctx(4);
    int32_t fold[30];
    gcn_dataset *ds = ds_load_shapes_fold(ctx, dir, 5, 7, 0, false, fold);
    for (int inner = 0; inner < 2; inner++) {
        cr_assert_eq(gcn_graph_fold_split(ctx, ds, fold, 5, 4, inner), GCN_OK);
        int seen[30] = {0};
        const int32_t *lists[3] = {ds->train, ds->valid, ds->test};
        const int32_t counts[3] = {ds->n_train, ds->n_valid, ds->n_test};
        for (int l = 0; l < 3; l++)
            for (int32_t i = 0; i < counts[l]; i++) {
                int32_t g = lists[l][i];
                seen[g]++;
                cr_assert(i == 0 || lists[l][i - 1] < g, "ascending");
                int want = l == 2 ? 4 : l == 1 ? 0 : -1;
                if (want >= 0)
                    cr_assert_eq(fold[g], want, "list %d graph %d", l, g);
                else
                    cr_assert(fold[g] != 4 && (!inner || fold[g] != 0));
            }
        for (int g = 0; g < 30; g++)
            cr_assert_eq(seen[g], 1, "graph %d in one list", g);
        cr_assert_eq(ds->n_valid, inner ? 6 : 0);
        cr_assert_eq(ds->n_test, 6);
    }
    cr_assert_eq(gcn_graph_fold_split(ctx, ds, fold, 5, 5, false), GCN_ERR_INVALID_ARG);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

/* Trains the GIN graph model on the shapes collection (fold 0 of 4) and
 * returns each epoch's loss and test accuracy. */
static void train_shapes(gcn_ctx *ctx, const char *dir, int epochs, bool errica, float *loss,
                         double *test)
{
    gcn_dataset *ds = ds_load_shapes_fold(ctx, dir, 4, 0, 0, errica, NULL);
    double valid[64];
    cr_assert_leq(epochs, 64);
    gcn_trainer *tr = ds_train_graphs(ctx, GIN_GRAPH("\"readout\": {\"jk\": true, \"dropout\": 0.2}"),
                                      ds, 11, epochs, loss, valid, test);
    for (int e = 0; !errica && e < epochs; e++)
        cr_assert_float_eq(valid[e], 0.0, 0.0, "no validation graphs under the GIN protocol");
    gcn_train_best best;
    gcn_trainer_best(tr, &best);
    if (!errica) /* nothing to select on: the model kept is the latest */
        cr_assert_eq(best.epoch, epochs);
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
}

Test(graph_models, gin_learns_shapes_reproducibly, .timeout = 120)
{
    char *dir = ds_tmpdir();
    ds_write_tu_shapes(dir, 40);
    enum { EPOCHS = 40 };
    float loss[2][EPOCHS];
    double test[2][EPOCHS];
    for (int r = 0; r < 2; r++) {
        gcn_ctx *ctx = test_cpu_ctx(5);
        train_shapes(ctx, dir, EPOCHS, r == 1, loss[r], test[r]);
        gcn_ctx_free(&ctx);
    }
    cr_assert_lt(loss[0][EPOCHS - 1], 0.5f * loss[0][0], "loss %g -> %g", (double)loss[0][0],
                 (double)loss[0][EPOCHS - 1]);
    cr_assert_float_eq(test[0][EPOCHS - 1], 1.0, 1e-9, "cycles and stars: test %g",
                       test[0][EPOCHS - 1]);
    gcn_ctx *ctx = test_cpu_ctx(5);
    float again[EPOCHS];
    double t[EPOCHS];
    train_shapes(ctx, dir, EPOCHS, false, again, t);
    for (int e = 0; e < EPOCHS; e++)
        cr_assert_eq(again[e], loss[0][e], "epoch %d: the same seed gives the same loss", e);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(graph_models, trainer_needs_a_labelled_collection)
{
    gcn_ctx *ctx = test_cpu_ctx(6);
    gcn_dataset *ds = NULL;
    gcn_sbm_opts so = gcn_sbm_default_opts();
    so.n_nodes = 200;
    cr_assert_eq(gcn_dataset_sbm(ctx, &ds, &so), GCN_OK);
    gcn_model_config cfg = parse_ok(GIN_GRAPH("\"readout\": {}"));
    gcn_trainer *tr = NULL;
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, ds), GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "not a labelled collection of graphs"), "%s",
              gcn_last_error(ctx));
    gcn_dataset_free(&ds);
    char *dir = ds_tmpdir();
    ds_write_tu_shapes(dir, 8);
    gcn_dataset_opts o = ds_opts(dir);
    ds = ds_load_ok(ctx, "tu:shapes", &o);
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, ds), GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "no training graphs"), "%s", gcn_last_error(ctx));
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

/* Predictions cover every graph; on the test graphs they score the
 * evaluation's test accuracy; a checkpoint resumes to the same epochs. */
Test(graph_models, predictions_and_checkpoints, .timeout = 120)
{
    char *dir = ds_tmpdir();
    ds_write_tu_shapes(dir, 24);
    gcn_ctx *ctx = test_cpu_ctx(8);
    gcn_dataset *ds = ds_load_shapes_fold(ctx, dir, 3, 0, 0, true, NULL);
    const char *json = GIN_GRAPH("\"readout\": {\"jk\": true, \"dropout\": 0.2}");
    gcn_model_config cfg = parse_ok(json);
    gcn_trainer *tr = ds_train_graphs(ctx, json, ds, 2, 3, NULL, NULL, NULL), *again = NULL;
    gcn_epoch_stats es[3]; /* epochs 4 to 6 */
    char path[512];
    snprintf(path, sizeof path, "%s", ds_path(dir, "gin.ckpt"));
    cr_assert_eq(gcn_trainer_save(ctx, tr, path), GCN_OK, "%s", gcn_last_error(ctx));
    for (int e = 0; e < 3; e++)
        cr_assert_eq(gcn_trainer_epoch(ctx, tr, &es[e]), GCN_OK);
    cr_assert_eq(gcn_trainer_create(ctx, &again, &cfg, ds), GCN_OK);
    cr_assert_eq(gcn_trainer_load(ctx, again, path), GCN_OK, "%s", gcn_last_error(ctx));
    for (int e = 0; e < 3; e++) {
        gcn_epoch_stats r;
        cr_assert_eq(gcn_trainer_epoch(ctx, again, &r), GCN_OK);
        cr_assert_eq(r.loss, es[e].loss, "epoch %d after the resume", e + 4);
    }
    int32_t classes[24];
    float probs[48];
    gcn_train_best best;
    cr_assert_eq(gcn_trainer_predict(ctx, tr, classes, probs), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_trainer_evaluate(ctx, tr, &best), GCN_OK);
    int correct = 0;
    for (int32_t i = 0; i < ds->n_test; i++)
        correct += classes[ds->test[i]] == ds->graph_labels[ds->test[i]];
    cr_assert_float_eq((double)correct / ds->n_test, best.test_acc, 1e-9);
    for (int g = 0; g < 24; g++)
        cr_assert_float_eq(probs[2 * g] + probs[2 * g + 1], 1.0f, 1e-5f);
    gcn_trainer_free(&again);
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}
