/* Model configurations (strict validation, messages naming the key path),
 * model construction, the trainer, and checkpoint round trips. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "sbm_train.h"

static void expect_error(const char *json, const char *message)
{
    gcn_model_config cfg;
    char err[512] = "";
    cr_assert_eq(gcn_model_config_parse(&cfg, json, "t.json", err, sizeof err), GCN_ERR_FORMAT,
                 "accepted: %s", json);
    cr_assert(strstr(err, message), "message '%s' lacks '%s'", err, message);
}

#define LAYERS "\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\"}]"

Test(models, config_errors_name_the_key)
{
    expect_error("{" LAYERS ", \"epochz\": 3}", "t.json: epochz: unknown key");
    expect_error("{\"layers\": [{\"type\": \"gcn\", \"out\": 16, \"dropout\": 1.0}, {\"type\": "
                 "\"gcn\", \"out\": \"classes\"}]}",
                 "t.json: layers[0].dropout: expected a number in [0, 1)");
    expect_error("{\"layers\": [{\"type\": \"gcn\", \"out\": 16}, {\"type\": \"gcn\", \"out\": "
                 "\"classes\", \"dropout\": \"x\"}]}",
                 "layers[1].dropout: expected a number in [0, 1)");
    expect_error("{\"layers\": [{\"type\": \"sage\", \"out\": \"classes\"}]}",
                 "layers[0].type: expected one of \"gcn\", \"gin\", \"linear\"");
    expect_error("{\"layers\": [{\"out\": \"classes\"}]}", "layers[0]: missing required key \"type\"");
    expect_error("{\"layers\": [{\"type\": \"gcn\", \"out\": 8}]}",
                 "layers: the last layer's out must be \"classes\"");
    expect_error("{\"layers\": []}", "layers: expected a non-empty array");
    expect_error("{\"epochs\": 3}", "layers: missing required key");
    expect_error("{" LAYERS ", \"epochs\": 2.5}", "epochs: expected an integer in [1, 10000000]");
    expect_error("{" LAYERS ", \"optimizer\": {\"type\": \"adam\", \"momentum\": 0.9}}",
                 "optimizer: momentum, dampening and nesterov apply to sgd only");
    expect_error("{" LAYERS ", \"optimizer\": {\"lr\": 0.1}}", "optimizer: missing required key \"type\"");
    expect_error("{" LAYERS ", \"device\": \"gpu\"}", "device: expected \"auto\"");
    expect_error("{" LAYERS ", \"precision\": \"fp16\"}", "precision: expected one of \"fp32\", \"tf32\"");
    expect_error("{" LAYERS ", \"dataset\": {\"normalise\": true}}", "dataset.normalise: unknown key");
    expect_error("{\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\", \"eps\": 0.1}]}",
                 "layers[0]: hidden, eps and train_eps apply to gin layers only");
    expect_error("{" LAYERS ",\n\n  \"runs\": }", "t.json:3: invalid JSON");
    expect_error("[1, 2]", "(top level): expected an object");
}

Test(models, config_rejects_types_ranges_and_repeats)
{
    expect_error("{\"layers\": [{\"type\": \"gcn\", \"out\": 16}, {\"type\": \"gcn\"}]}",
                 "t.json: layers[1]: missing required key \"out\"");
    expect_error("{\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\", \"bias\": 1}]}",
                 "t.json: layers[0].bias: expected true or false");
    expect_error("{\"layers\": [{\"type\": \"gin\", \"out\": \"classes\", \"hidden\": 2.5}]}",
                 "t.json: layers[0].hidden: expected an integer in [1, 1048576]");
    expect_error("{\"layers\": [{\"type\": \"gcn\", \"out\": -3}]}",
                 "t.json: layers[0].out: expected an integer in [1, 1048576] or \"classes\"");
    expect_error("{\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\", \"dropout\": 0.1, "
                 "\"dropout\": 0.2}]}",
                 "t.json: layers[0].dropout: duplicate key");
    expect_error("{" LAYERS ", \"seed\": 1, \"seed\": 2}", "t.json: seed: duplicate key");
    expect_error("{" LAYERS ", \"optimizer\": {\"type\": \"adam\", \"lr\": 1, \"lr\": 2}}",
                 "t.json: optimizer.lr: duplicate key");
    expect_error("{" LAYERS ", \"optimizer\": {\"type\": \"adam\", \"lr\": 20}}",
                 "t.json: optimizer.lr: expected a number in [0, 10]");
    expect_error("{" LAYERS ", \"optimizer\": {\"type\": \"adam\", \"beta2\": 1}}",
                 "t.json: optimizer.beta2: expected a number in [0, 1)");
    expect_error("{" LAYERS ", \"optimizer\": {\"type\": \"rmsprop\"}}",
                 "t.json: optimizer.type: expected one of \"sgd\", \"adam\", \"adamw\"");
    expect_error("{" LAYERS ", \"runs\": 0}", "t.json: runs: expected an integer in [1, 1000]");
    expect_error("{" LAYERS ", \"seed\": -1}", "t.json: seed: expected an integer");
    expect_error("{" LAYERS ", \"name\": 7}", "t.json: name: expected a non-empty string");
    expect_error("{" LAYERS ", \"cuda_graph\": \"yes\"}", "t.json: cuda_graph: expected true or false");
    expect_error("{" LAYERS ", \"layers\": {}}", "t.json: layers: duplicate key");
    const char *bad_features[] = {"random:0", "random:", "random:12x", "random:2000000",
                                  "Random:8", "degrees"};
    for (int i = 0; i < 6; i++) {
        char json[256];
        snprintf(json, sizeof json, "{" LAYERS ", \"dataset\": {\"features\": \"%s\"}}",
                 bad_features[i]);
        expect_error(json, "t.json: dataset.features: expected \"file\", \"none\", \"degree\" "
                           "or \"random:D\"");
    }
    expect_error("{" LAYERS ", \"dataset\": {\"seed\": 1, \"root\": \"a\", \"root\": \"b\"}}",
                 "t.json: dataset.root: duplicate key");
    const char *good_features[] = {"file", "none", "degree", "random:1", "random:128"};
    for (int i = 0; i < 5; i++) {
        char json[256], err[256] = "";
        snprintf(json, sizeof json, "{" LAYERS ", \"dataset\": {\"features\": \"%s\"}}",
                 good_features[i]);
        gcn_model_config cfg;
        cr_assert_eq(gcn_model_config_parse(&cfg, json, "t.json", err, sizeof err), GCN_OK, "%s", err);
        cr_assert_str_eq(cfg.features, good_features[i]);
    }
}

/* cuda_graph: on by default, off from the file or the command line. */
Test(models, cuda_graph_switch)
{
    gcn_model_config cfg;
    char err[256];
    cr_assert_eq(gcn_model_config_parse(&cfg, "{" LAYERS "}", "t.json", err, sizeof err), GCN_OK);
    cr_assert(cfg.cuda_graph);
    cr_assert_eq(gcn_model_config_parse(&cfg, "{" LAYERS ", \"cuda_graph\": false}", "t.json", err,
                                        sizeof err),
                 GCN_OK, "%s", err);
    cr_assert_not(cfg.cuda_graph);
    cr_assert_eq(gcn_model_config_set(&cfg, "cuda_graph", "on", err, sizeof err), GCN_OK);
    cr_assert(cfg.cuda_graph);
    cr_assert_eq(gcn_model_config_set(&cfg, "cuda_graph", "off", err, sizeof err), GCN_OK);
    cr_assert_not(cfg.cuda_graph);
    cr_assert_eq(gcn_model_config_set(&cfg, "cuda_graph", "maybe", err, sizeof err),
                 GCN_ERR_INVALID_ARG);
    cr_assert_str_eq(err, "cuda_graph 'maybe': expected on or off");
}

/* Each key lands in its own field (none is told apart by one character). */
Test(models, config_keys_set_their_fields)
{
    gcn_model_config cfg;
    char err[256] = "";
    cr_assert_eq(gcn_model_config_parse(&cfg,
                                        "{" LAYERS ", \"epochs\": 7, \"runs\": 3, \"optimizer\": "
                                        "{\"type\": \"sgd\", \"lr\": 0.5, \"weight_decay\": 0.25, "
                                        "\"momentum\": 0.75, \"dampening\": 0.125}}",
                                        "t.json", err, sizeof err),
                 GCN_OK, "%s", err);
    cr_assert_eq(cfg.epochs, 7);
    cr_assert_eq(cfg.runs, 3);
    cr_assert_eq(cfg.optim.lr, 0.5f);
    cr_assert_eq(cfg.optim.weight_decay, 0.25f);
    cr_assert_eq(cfg.optim.momentum, 0.75f);
    cr_assert_eq(cfg.optim.dampening, 0.125f);
    cr_assert_eq(gcn_model_config_parse(&cfg,
                                        "{" LAYERS ", \"optimizer\": {\"type\": \"adam\", "
                                        "\"beta1\": 0.5, \"beta2\": 0.75, \"eps\": 0.25}}",
                                        "t.json", err, sizeof err),
                 GCN_OK, "%s", err);
    cr_assert_eq(cfg.optim.beta1, 0.5f);
    cr_assert_eq(cfg.optim.beta2, 0.75f);
    cr_assert_eq(cfg.optim.eps, 0.25f);
}

Test(models, shipped_configs_load)
{
    const char *files[] = {"models/gcn.json", "models/gcn-cora.json", "models/gin.json",
                           "models/gcn-products.json"};
    for (int i = 0; i < 4; i++) {
        gcn_model_config cfg;
        char err[512] = "";
        cr_assert_eq(gcn_model_config_load(&cfg, files[i], err, sizeof err), GCN_OK, "%s", err);
        cr_assert_gt(cfg.n_layers, 1);
        cr_assert_eq(cfg.layers[cfg.n_layers - 1].out, 0);
    }
    gcn_model_config cfg;
    char err[512];
    cr_assert_eq(gcn_model_config_load(&cfg, "models/none.json", err, sizeof err), GCN_ERR_IO);
    cr_assert(strstr(err, "models/none.json: cannot open"), "%s", err);
}

/* The OGB ogbn-arxiv recipe (gcn.json, and gin.json with GIN layers):
 * 3 layers, hidden 256, batch norm and ReLU on the hidden layers, dropout
 * 0.5 between layers, Adam lr 0.01 without weight decay, 500 epochs. */
static void expect_arxiv_recipe(const char *path, gcn_layer_type type)
{
    gcn_model_config c;
    char err[512] = "";
    cr_assert_eq(gcn_model_config_load(&c, path, err, sizeof err), GCN_OK, "%s", err);
    cr_assert_eq(c.n_layers, 3, "%s", path);
    for (int i = 0; i < 3; i++) {
        const gcn_layer_config *l = &c.layers[i];
        cr_assert_eq(l->type, type, "%s layer %d", path, i);
        cr_assert_eq(l->out, i < 2 ? 256 : 0, "%s layer %d", path, i);
        cr_assert_eq(l->batchnorm, i < 2, "%s layer %d", path, i);
        cr_assert_eq(l->activation, i < 2 ? GCN_ACT_RELU : GCN_ACT_NONE, "%s layer %d", path, i);
        cr_assert_float_eq(l->dropout, i ? 0.5f : 0.0f, 1e-9, "%s layer %d", path, i);
        cr_assert_lt(l->weight_decay, 0, "%s layer %d: the optimiser's", path, i);
        if (type == GCN_LAYER_GIN) {
            cr_assert(l->hidden == 256 || (l->hidden == 0 && l->out == 256), "%s layer %d", path, i);
            cr_assert_not(l->train_eps);
            cr_assert_float_eq(l->eps, 0.0f, 1e-9);
        }
    }
    cr_assert_eq(c.optim.kind, GCN_OPTIM_ADAM);
    cr_assert_float_eq(c.optim.lr, 0.01f, 1e-9);
    cr_assert_float_eq(c.optim.weight_decay, 0.0f, 1e-9);
    cr_assert_eq(c.epochs, 500);
    cr_assert_not(c.tf32);
    cr_assert_str_eq(c.spmm, "auto");
}

Test(models, shipped_configs_follow_their_recipes)
{
    expect_arxiv_recipe("models/gcn.json", GCN_LAYER_GCN);
    expect_arxiv_recipe("models/gin.json", GCN_LAYER_GIN);
    /* Kipf & Welling: 2 layers, hidden 16, dropout 0.5, weight decay 5e-4
     * (on the first layer, as the reference code), lr 0.01, 200 epochs,
     * row-normalised features */
    gcn_model_config c;
    char err[512] = "";
    cr_assert_eq(gcn_model_config_load(&c, "models/gcn-cora.json", err, sizeof err), GCN_OK, "%s", err);
    cr_assert_eq(c.n_layers, 2);
    cr_assert_eq(c.layers[0].type, GCN_LAYER_GCN);
    cr_assert_eq(c.layers[1].type, GCN_LAYER_GCN);
    cr_assert_eq(c.layers[0].out, 16);
    cr_assert_eq(c.layers[0].activation, GCN_ACT_RELU);
    cr_assert_float_eq(c.layers[0].dropout, 0.5f, 1e-9);
    cr_assert_float_eq(c.layers[1].dropout, 0.5f, 1e-9);
    cr_assert_float_eq(c.layers[0].weight_decay, 5e-4f, 1e-12);
    cr_assert_float_eq(c.layers[1].weight_decay, 0.0f, 1e-12);
    cr_assert_eq(c.optim.kind, GCN_OPTIM_ADAM);
    cr_assert_float_eq(c.optim.lr, 0.01f, 1e-9);
    cr_assert_eq(c.epochs, 200);
    cr_assert(c.normalize_features);
    /* OGB's full-batch products GCN: arxiv's recipe without batch norm,
     * 300 epochs, in the graph's own order */
    cr_assert_eq(gcn_model_config_load(&c, "models/gcn-products.json", err, sizeof err), GCN_OK,
                 "%s", err);
    cr_assert_eq(c.n_layers, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(c.layers[i].type, GCN_LAYER_GCN);
        cr_assert_eq(c.layers[i].out, i < 2 ? 256 : 0);
        cr_assert_not(c.layers[i].batchnorm);
        cr_assert_eq(c.layers[i].activation, i < 2 ? GCN_ACT_RELU : GCN_ACT_NONE);
        cr_assert_float_eq(c.layers[i].dropout, i ? 0.5f : 0.0f, 1e-9);
    }
    cr_assert_eq(c.epochs, 300);
    cr_assert_float_eq(c.optim.lr, 0.01f, 1e-9);
    cr_assert_str_eq(c.reorder, "none");
}

static gcn_dataset *small_sbm(gcn_ctx *ctx)
{
    gcn_sbm_opts o = gcn_sbm_default_opts();
    o.n_nodes = 400;
    o.n_features = 16;
    o.n_classes = 4;
    o.n_valid = 100;
    o.n_test = 200;
    gcn_dataset *ds = NULL;
    cr_assert_eq(gcn_dataset_sbm(ctx, &ds, &o), GCN_OK, "%s", gcn_last_error(ctx));
    return ds;
}

static gcn_model_config parse_ok(const char *json)
{
    gcn_model_config cfg;
    char err[512] = "";
    cr_assert_eq(gcn_model_config_parse(&cfg, json, "t.json", err, sizeof err), GCN_OK, "%s", err);
    return cfg;
}

static const char *mixed_model =
    "{\"layers\": [{\"type\": \"gcn\", \"out\": 12, \"norm\": \"batch\", \"activation\": \"relu\"},"
    " {\"type\": \"gin\", \"out\": 10, \"activation\": \"elu\", \"dropout\": 0.3, \"train_eps\": true,"
    " \"weight_decay\": 0.001},"
    " {\"type\": \"linear\", \"out\": \"classes\", \"dropout\": 0.2}],"
    " \"optimizer\": {\"type\": \"adamw\", \"lr\": 0.02}, \"epochs\": 6}";

/* Runs `epochs` epochs from a fresh context; returns the losses. */
static void run_epochs(gcn_trainer *tr, gcn_ctx *ctx, int epochs, float *loss)
{
    for (int e = 0; e < epochs; e++) {
        gcn_epoch_stats st;
        cr_assert_eq(gcn_trainer_epoch(ctx, tr, &st), GCN_OK, "%s", gcn_last_error(ctx));
        loss[e] = st.loss;
    }
}

Test(models, resume_continues_exactly)
{
    gcn_model_config cfg = parse_ok(mixed_model);
    char path[] = "/tmp/gcn-ckpt-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    float straight[6], resumed[6];
    /* uninterrupted */
    gcn_ctx *ctx = test_cpu_ctx(21);
    gcn_dataset *ds = small_sbm(ctx);
    gcn_trainer *tr = NULL;
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, ds), GCN_OK, "%s", gcn_last_error(ctx));
    run_epochs(tr, ctx, 6, straight);
    gcn_train_best best_straight;
    gcn_trainer_best(tr, &best_straight);
    gcn_trainer_free(&tr);
    /* 3 epochs, save, then a fresh trainer in a fresh context resumes */
    gcn_rng_seed(ctx, 21);
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, ds), GCN_OK);
    run_epochs(tr, ctx, 3, resumed);
    cr_assert_eq(gcn_trainer_save(ctx, tr, path), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_trainer_free(&tr);
    gcn_ctx *ctx2 = test_cpu_ctx(999);
    cr_assert_eq(gcn_trainer_create(ctx2, &tr, &cfg, ds), GCN_OK);
    cr_assert_eq(gcn_trainer_load(ctx2, tr, path), GCN_OK, "%s", gcn_last_error(ctx2));
    cr_assert_eq(gcn_trainer_epochs_done(tr), 3);
    run_epochs(tr, ctx2, 3, resumed + 3);
    cr_assert_arr_eq(straight, resumed, sizeof straight, "resumed losses differ");
    gcn_train_best best_resumed;
    gcn_trainer_best(tr, &best_resumed);
    cr_assert_eq(best_resumed.epoch, best_straight.epoch);
    cr_assert_eq(best_resumed.test_acc, best_straight.test_acc);
    gcn_trainer_free(&tr);
    unlink(path);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    gcn_ctx_free(&ctx2);
}

static void corrupt_byte(const char *path, long at)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    fseek(f, at, at < 0 ? SEEK_END : SEEK_SET);
    int c = fgetc(f);
    fseek(f, -1, SEEK_CUR);
    fputc(c ^ 0x5a, f);
    fclose(f);
}

Test(models, checkpoint_rejects_damage_and_other_models)
{
    gcn_ctx *ctx = test_cpu_ctx(3);
    gcn_dataset *ds = small_sbm(ctx);
    gcn_model_config cfg = parse_ok(mixed_model), other = parse_ok(
        "{\"layers\": [{\"type\": \"gcn\", \"out\": 8}, {\"type\": \"gcn\", \"out\": \"classes\"}]}");
    gcn_trainer *tr = NULL, *tr2 = NULL;
    char path[] = "/tmp/gcn-ckpt-XXXXXX";
    close(mkstemp(path));
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, ds), GCN_OK);
    float loss[1];
    run_epochs(tr, ctx, 1, loss);
    cr_assert_eq(gcn_trainer_save(ctx, tr, path), GCN_OK);
    cr_assert_eq(gcn_trainer_create(ctx, &tr2, &other, ds), GCN_OK);
    cr_assert_eq(gcn_trainer_load(ctx, tr2, path), GCN_ERR_FORMAT);
    cr_assert(strstr(gcn_last_error(ctx), "different model architecture"), "%s", gcn_last_error(ctx));
    corrupt_byte(path, 200);
    cr_assert_eq(gcn_trainer_load(ctx, tr, path), GCN_ERR_FORMAT);
    cr_assert(strstr(gcn_last_error(ctx), "CRC-32 mismatch"), "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_trainer_load(ctx, tr, "/tmp/no/such/ckpt"), GCN_ERR_IO);
    gcn_trainer_free(&tr);
    gcn_trainer_free(&tr2);
    unlink(path);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

Test(models, non_finite_loss_names_the_epoch)
{
    gcn_ctx *ctx = test_cpu_ctx(3);
    gcn_dataset *ds = small_sbm(ctx);
    /* features near FLT_MAX overflow the first product */
    for (int32_t i = 0; i < ds->n_nodes * ds->n_features; i++)
        ds->features[i] = 3e38f;
    gcn_model_config cfg = parse_ok("{" LAYERS "}");
    gcn_trainer *tr = NULL;
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, ds), GCN_OK);
    gcn_status st = GCN_OK;
    gcn_epoch_stats es;
    st = gcn_trainer_epoch(ctx, tr, &es);
    cr_assert_eq(st, GCN_ERR_NUMERIC, "%s", gcn_status_str(st));
    cr_assert(strstr(gcn_last_error(ctx), "non-finite training loss"), "%s", gcn_last_error(ctx));
    cr_assert(strstr(gcn_last_error(ctx), "at epoch 1"), "%s", gcn_last_error(ctx));
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

Test(models, model_needs_features)
{
    gcn_ctx *ctx = test_cpu_ctx(3);
    gcn_dataset *ds = small_sbm(ctx);
    free(ds->features);
    ds->features = NULL;
    ds->n_features = 0;
    gcn_model_config cfg = parse_ok("{" LAYERS "}");
    gcn_trainer *tr = NULL;
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, ds), GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "--features random:D"), "%s", gcn_last_error(ctx));
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

Test(models, config_reorder)
{
    static const char *const ok[][2] = {
        {"\"auto\"", "auto"}, {"\"metis:256\"", "metis:256"}, {"\"degree\"", "degree"},
        {"{\"method\": \"metis\", \"part_size\": 256}", "metis:256"},
        {"{\"method\": \"metis\", \"part_sizes\": [16, 4096]}", "metis:16,4096"},
        {"{\"method\": \"none\"}", "none"}};
    for (int i = 0; i < 6; i++) {
        char json[256], err[256] = "";
        snprintf(json, sizeof json, "{" LAYERS ", \"reorder\": %s}", ok[i][0]);
        gcn_model_config cfg;
        cr_assert_eq(gcn_model_config_parse(&cfg, json, "t.json", err, sizeof err), GCN_OK, "%s",
                     err);
        cr_assert_str_eq(cfg.reorder, ok[i][1]);
    }
    expect_error("{" LAYERS ", \"reorder\": \"metis:0\"}", "t.json: reorder: expected \"auto\"");
    expect_error("{" LAYERS ", \"reorder\": {\"part_size\": 16}}",
                 "t.json: reorder: missing required key \"method\"");
    expect_error("{" LAYERS ", \"reorder\": {\"method\": \"degree\", \"part_size\": 16}}",
                 "t.json: reorder: part sizes apply to method \"metis\" only");
    expect_error("{" LAYERS ", \"reorder\": {\"method\": \"metis\", \"part_size\": 1}}",
                 "t.json: reorder.part_size: expected an integer in [2, 16777216]");
    expect_error("{" LAYERS ", \"reorder\": {\"method\": \"metis\", \"part_sizes\": [256, 16]}}",
                 "t.json: reorder: part sizes must ascend");
    expect_error("{" LAYERS ", \"reorder\": {\"method\": \"metis\", \"size\": 16}}",
                 "t.json: reorder.size: unknown key");
}

/* One forward pass on a graph and on its METIS-relabelled copy: the same
 * parameters (initialisation does not depend on the node order) give the
 * same logits, row for row once un-permuted, up to float rounding. */
Test(models, reordered_forward_matches)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_dataset *a = small_sbm(ctx);
    gcn_rng_seed(ctx, 5);
    gcn_dataset *b = small_sbm(ctx);
    gcn_reorder_opts ro;
    cr_assert_eq(gcn_reorder_parse(ctx, "metis:16,64", &ro), GCN_OK);
    cr_assert_eq(gcn_dataset_reorder(ctx, b, &ro), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_not_null(b->reorder);
    gcn_model_config cfg = parse_ok("{\"layers\": [{\"type\": \"gcn\", \"out\": 16, "
                                    "\"norm\": \"batch\", \"activation\": \"relu\"}, "
                                    "{\"type\": \"gin\", \"out\": \"classes\"}]}");
    gcn_trainer *ta = NULL, *tb = NULL;
    gcn_rng_seed(ctx, 11);
    cr_assert_eq(gcn_trainer_create(ctx, &ta, &cfg, a), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_rng_seed(ctx, 11);
    cr_assert_eq(gcn_trainer_create(ctx, &tb, &cfg, b), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_csr_community_levels(gcn_trainer_adjacency(tb, GCN_ADJ_GCN)), 2);
    gcn_tensor *xa = NULL, *xb = NULL, *ya = NULL, *yb = NULL;
    cr_assert_eq(gcn_tensor_from_host(ctx, &xa, a->features, a->n_nodes, a->n_features), GCN_OK);
    cr_assert_eq(gcn_tensor_from_host(ctx, &xb, b->features, b->n_nodes, b->n_features), GCN_OK);
    GCN_NO_GRAD(ctx)
    {
        cr_assert_eq(gcn_model_forward(ctx, (gcn_model *)gcn_trainer_model(ta),
                                       gcn_trainer_adjacency(ta, GCN_ADJ_GCN),
                                       gcn_trainer_adjacency(ta, GCN_ADJ_RAW), xa, false, &ya),
                     GCN_OK);
        cr_assert_eq(gcn_model_forward(ctx, (gcn_model *)gcn_trainer_model(tb),
                                       gcn_trainer_adjacency(tb, GCN_ADJ_GCN),
                                       gcn_trainer_adjacency(tb, GCN_ADJ_RAW), xb, false, &yb),
                     GCN_OK);
    }
    float *ha = test_read(ctx, ya), *hb = test_read(ctx, yb);
    float *back = malloc((size_t)a->n_nodes * a->n_classes * sizeof *back);
    gcn_reorder_rows_back(b->reorder, hb, a->n_classes, back);
    double worst = 0, scale = 0;
    for (int64_t i = 0; i < (int64_t)a->n_nodes * a->n_classes; i++) {
        worst = fmax(worst, fabs((double)back[i] - ha[i]));
        scale = fmax(scale, fabs((double)ha[i]));
    }
    cr_assert_leq(worst, 1e-5 * scale, "largest difference %g (scale %g)", worst, scale);
    free(ha);
    free(hb);
    free(back);
    gcn_tensor_free(&xa);
    gcn_tensor_free(&xb);
    gcn_tensor_free(&ya);
    gcn_tensor_free(&yb);
    gcn_trainer_free(&ta);
    gcn_trainer_free(&tb);
    gcn_dataset_free(&a);
    gcn_dataset_free(&b);
    gcn_ctx_free(&ctx);
}

/* Training with dropout on a graph and on its relabelled copies (METIS
 * communities, degree order) from one seed: each node draws its masks by
 * its original id, so every epoch's loss agrees up to float rounding. */
Test(models, reordered_training_matches)
{
    const char *specs[] = {"metis:16,64", "degree"};
    gcn_model_config cfg = parse_ok("{\"layers\": [{\"type\": \"gcn\", \"out\": 16, "
                                    "\"norm\": \"batch\", \"activation\": \"relu\", "
                                    "\"dropout\": 0.5}, {\"type\": \"gin\", \"out\": "
                                    "\"classes\", \"dropout\": 0.5}], \"optimizer\": "
                                    "{\"type\": \"adam\", \"lr\": 0.01}}");
    for (size_t k = 0; k < sizeof specs / sizeof *specs; k++) {
        gcn_ctx *ca = test_cpu_ctx(5), *cb = test_cpu_ctx(5);
        gcn_dataset *a = small_sbm(ca), *b = small_sbm(cb);
        gcn_reorder_opts ro;
        cr_assert_eq(gcn_reorder_parse(cb, specs[k], &ro), GCN_OK);
        cr_assert_eq(gcn_dataset_reorder(cb, b, &ro), GCN_OK, "%s", gcn_last_error(cb));
        gcn_trainer *ta = NULL, *tb = NULL;
        cr_assert_eq(gcn_trainer_create(ca, &ta, &cfg, a), GCN_OK, "%s", gcn_last_error(ca));
        cr_assert_eq(gcn_trainer_create(cb, &tb, &cfg, b), GCN_OK, "%s", gcn_last_error(cb));
        for (int e = 0; e < 10; e++) {
            gcn_epoch_stats sa, sb;
            cr_assert_eq(gcn_trainer_epoch(ca, ta, &sa), GCN_OK, "%s", gcn_last_error(ca));
            cr_assert_eq(gcn_trainer_epoch(cb, tb, &sb), GCN_OK, "%s", gcn_last_error(cb));
            double rel = fabs((double)sa.loss - sb.loss) / fabs((double)sa.loss);
            cr_assert_leq(rel, 1e-5, "%s, epoch %d: loss %.9g against %.9g", specs[k], e + 1,
                          (double)sa.loss, (double)sb.loss);
        }
        gcn_trainer_free(&ta);
        gcn_trainer_free(&tb);
        gcn_dataset_free(&a);
        gcn_dataset_free(&b);
        gcn_ctx_free(&ca);
        gcn_ctx_free(&cb);
    }
}

/* A GIN stack drops each block's output once the next block's SpMM has read
 * it (its backward needs the matrix only): training still runs and learns,
 * and no backward reads a dropped tensor (the backends would fault). */
Test(models, gin_blocks_train_after_dropping_their_inputs)
{
    gcn_model_config cfg = parse_ok(
        "{\"layers\": [{\"type\": \"gin\", \"out\": 16, \"norm\": \"batch\", \"activation\": "
        "\"relu\"}, {\"type\": \"gin\", \"out\": 16, \"norm\": \"batch\", \"activation\": "
        "\"relu\", \"dropout\": 0.3}, {\"type\": \"gin\", \"out\": \"classes\", \"dropout\": 0.3}],"
        " \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}");
    gcn_ctx *ctx = test_cpu_ctx(4);
    gcn_dataset *ds = small_sbm(ctx);
    gcn_trainer *tr = NULL;
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, ds), GCN_OK, "%s", gcn_last_error(ctx));
    float loss[8];
    run_epochs(tr, ctx, 8, loss);
    cr_assert_lt(loss[7], loss[0], "loss %g -> %g", (double)loss[0], (double)loss[7]);
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

/* "lr_step": parsed into its fields, refused when malformed, and applied
 * by the trainer: with gamma 0 the parameters stop moving after `every`
 * epochs. */
Test(models, lr_step_schedule, .timeout = 60)
{
    gcn_model_config cfg;
    char err[256] = "";
    cr_assert_eq(gcn_model_config_parse(&cfg, "{" LAYERS ", \"lr_step\": {\"every\": 50, "
                                        "\"gamma\": 0.5}}", "t.json", err, sizeof err),
                 GCN_OK, "%s", err);
    cr_assert_eq(cfg.lr_every, 50);
    cr_assert_eq(cfg.lr_gamma, 0.5f);
    expect_error("{" LAYERS ", \"lr_step\": {\"every\": 50}}", "lr_step: needs both");
    expect_error("{" LAYERS ", \"lr_step\": {\"every\": 0, \"gamma\": 0.5}}",
                 "lr_step.every: expected an integer in [1, 10000000]");
    expect_error("{" LAYERS ", \"lr_step\": {\"every\": 5, \"gamma\": 2}}",
                 "lr_step.gamma: expected a number in [0, 1]");
    expect_error("{" LAYERS ", \"lr_step\": {\"every\": 5, \"gamma\": 0.5, \"x\": 1}}",
                 "lr_step: unknown key");

    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_dataset *ds = NULL;
    gcn_trainer *tr = sbm_trainer(ctx, 300, 8, "{" LAYERS ", \"optimizer\": {\"type\": "
                                  "\"sgd\", \"lr\": 0.5}, \"lr_step\": {\"every\": 2, "
                                  "\"gamma\": 0}}", &ds);
    gcn_tensor *params[2];
    cr_assert_eq(gcn_model_params(gcn_trainer_model(tr), NULL, NULL), 2, "weight and bias");
    gcn_model_params(gcn_trainer_model(tr), params, NULL);
    int64_t n = gcn_tensor_numel(params[0]);
    float *after2 = calloc((size_t)n, sizeof *after2), *after4 = calloc((size_t)n, sizeof *after4);
    for (int e = 1; e <= 4; e++) {
        gcn_epoch_stats st;
        cr_assert_eq(gcn_trainer_epoch(ctx, tr, &st), GCN_OK, "%s", gcn_last_error(ctx));
        if (e == 2 || e == 4)
            cr_assert_eq(gcn_tensor_to_host(ctx, params[0], e == 2 ? after2 : after4), GCN_OK);
    }
    cr_assert_arr_eq(after2, after4, (size_t)n * sizeof *after2,
                     "epochs 3 and 4 train at lr 0, yet the weight moved");
    free(after2);
    free(after4);
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}
