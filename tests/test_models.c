/* Model configurations (strict validation, messages naming the key path),
 * model construction, the trainer, and checkpoint round trips. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

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

Test(models, shipped_configs_load)
{
    const char *files[] = {"models/gcn.json", "models/gcn-cora.json", "models/gin.json"};
    for (int i = 0; i < 3; i++) {
        gcn_model_config cfg;
        char err[512] = "";
        cr_assert_eq(gcn_model_config_load(&cfg, files[i], err, sizeof err), GCN_OK, "%s", err);
        cr_assert_gt(cfg.n_layers, 1);
        cr_assert_eq(cfg.layers[cfg.n_layers - 1].out, 0);
    }
    gcn_model_config cfg;
    char err[512];
    cr_assert_eq(gcn_model_config_load(&cfg, "models/gcn.json", err, sizeof err), GCN_OK);
    cr_assert_eq(cfg.epochs, 500);
    cr_assert_eq(cfg.optim.kind, GCN_OPTIM_ADAM);
    cr_assert_float_eq(cfg.optim.lr, 0.01f, 1e-9);
    cr_assert_eq(cfg.layers[0].out, 256);
    cr_assert(cfg.layers[0].batchnorm);
    cr_assert_float_eq(cfg.layers[1].dropout, 0.5f, 1e-9);
    cr_assert_eq(gcn_model_config_load(&cfg, "models/none.json", err, sizeof err), GCN_ERR_IO);
    cr_assert(strstr(err, "models/none.json: cannot open"), "%s", err);
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
