/* Precision bf16 on the CPU backend: 50 epochs of GCN and GIN follow the
 * fp32 runs, and what bf16 does not train is refused by name. */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bf16_train.h"
#include "helpers.h"
#include "tool_run.h"

Test(train_bf16, gcn_follows_fp32_for_50_epochs, .timeout = 60)
{
    bf16_run a, b;
    bf16_train(GCN_DEVICE_CPU, bf16_gcn_json, "fp32", &a);
    bf16_train(GCN_DEVICE_CPU, bf16_gcn_json, "bf16", &b);
    bf16_expect_close(&b, &a, "gcn");
}

Test(train_bf16, gin_follows_fp32_for_50_epochs, .timeout = 60)
{
    bf16_run a, b;
    bf16_train(GCN_DEVICE_CPU, bf16_gin_json, "fp32", &a);
    bf16_train(GCN_DEVICE_CPU, bf16_gin_json, "bf16", &b);
    bf16_expect_close(&b, &a, "gin");
}

Test(train_bf16, precision_key_and_what_bf16_refuses)
{
    gcn_model_config cfg;
    char err[256];
    const char *json = "{\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\"}], "
                       "\"precision\": \"bf16\"}";
    cr_assert_eq(gcn_model_config_parse(&cfg, json, "test", err, sizeof err), GCN_OK, "%s", err);
    cr_assert(cfg.bf16 && !cfg.tf32);
    cr_assert_eq(gcn_model_config_set(&cfg, "precision", "fp16", err, sizeof err),
                 GCN_ERR_INVALID_ARG);
    cr_assert(strstr(err, "expected fp32, tf32 or bf16"), "%s", err);
    cr_assert_eq(gcn_model_config_parse(&cfg, "{\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\"}], "
                                              "\"precision\": \"half\"}",
                                        "m.json", err, sizeof err),
                 GCN_ERR_FORMAT);
    cr_assert(strstr(err, "m.json: precision"), "%s", err);
    /* a graph-level model */
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset *ds = NULL;
    const char *graphs = "{\"layers\": [{\"type\": \"gin\", \"out\": 8}], \"readout\": "
                         "{\"pooling\": \"sum\"}, \"precision\": \"bf16\"}";
    cr_assert_eq(gcn_model_config_parse(&cfg, graphs, "test", err, sizeof err), GCN_OK, "%s",
                 err);
    gcn_sbm_opts so = gcn_sbm_default_opts();
    so.n_nodes = 100;
    cr_assert_eq(gcn_dataset_sbm(ctx, &ds, &so), GCN_OK);
    gcn_trainer *tr = NULL;
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, ds), GCN_ERR_UNSUPPORTED);
    cr_assert(strstr(gcn_last_error(ctx), "precision bf16"), "%s", gcn_last_error(ctx));
    cr_assert_null(tr);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

/* A trainer of the GCN at `precision` on a fresh context seeded 21. */
static gcn_trainer *trainer_at(gcn_ctx **ctx, gcn_dataset **ds, const char *precision)
{
    *ctx = test_cpu_ctx(21);
    gcn_sbm_opts so = gcn_sbm_default_opts();
    so.n_nodes = 300;
    so.n_features = 16;
    cr_assert_eq(gcn_dataset_sbm(*ctx, ds, &so), GCN_OK);
    gcn_model_config cfg;
    char err[256];
    cr_assert_eq(gcn_model_config_parse(&cfg, bf16_gcn_json, "test", err, sizeof err), GCN_OK);
    cr_assert_eq(gcn_model_config_set(&cfg, "precision", precision, err, sizeof err), GCN_OK);
    gcn_trainer *tr = NULL;
    cr_assert_eq(gcn_trainer_create(*ctx, &tr, &cfg, *ds), GCN_OK, "%s", gcn_last_error(*ctx));
    return tr;
}

static void epochs(gcn_ctx *ctx, gcn_trainer *tr, int n, float *loss)
{
    gcn_epoch_stats es;
    for (int e = 0; e < n; e++) {
        cr_assert_eq(gcn_trainer_epoch(ctx, tr, &es), GCN_OK, "%s", gcn_last_error(ctx));
        loss[e] = es.loss;
    }
}

static void done(gcn_ctx **ctx, gcn_dataset **ds, gcn_trainer **tr)
{
    gcn_trainer_free(tr);
    gcn_dataset_free(ds);
    gcn_ctx_free(ctx);
}

/* The file names its precision and holds fp32 masters: it resumes in bf16
 * exactly as the run would have gone on, and in fp32 close to it. */
Test(train_bf16, checkpoint_resumes_in_bf16_or_fp32)
{
    char path[] = "/tmp/gcn-bf16-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    gcn_ctx *ctx;
    gcn_dataset *ds;
    float straight[8], resumed[8], as_fp32[4];
    gcn_trainer *tr = trainer_at(&ctx, &ds, "bf16");
    epochs(ctx, tr, 8, straight);
    done(&ctx, &ds, &tr);
    tr = trainer_at(&ctx, &ds, "bf16");
    epochs(ctx, tr, 4, resumed);
    cr_assert_eq(gcn_trainer_save(ctx, tr, path), GCN_OK, "%s", gcn_last_error(ctx));
    done(&ctx, &ds, &tr);
    FILE *f = fopen(path, "rb");
    char head[256];
    cr_assert_eq(fread(head, 1, sizeof head, f), sizeof head);
    fclose(f);
    cr_assert_not_null(memmem(head, sizeof head, "bf16", 5), "the header names the precision");
    tr = trainer_at(&ctx, &ds, "bf16");
    cr_assert_eq(gcn_trainer_load(ctx, tr, path), GCN_OK, "%s", gcn_last_error(ctx));
    epochs(ctx, tr, 4, resumed + 4);
    cr_assert_arr_eq(straight, resumed, sizeof straight, "a bf16 resume continues exactly");
    done(&ctx, &ds, &tr);
    tr = trainer_at(&ctx, &ds, "fp32");
    cr_assert_eq(gcn_trainer_load(ctx, tr, path), GCN_OK, "%s", gcn_last_error(ctx));
    epochs(ctx, tr, 4, as_fp32);
    for (int e = 0; e < 4; e++)
        cr_assert(fabsf(as_fp32[e] - straight[4 + e]) <= 0.01f + 0.05f * straight[4 + e],
                  "fp32 resume epoch %d: %g vs bf16 %g", e + 5, (double)as_fp32[e],
                  (double)straight[4 + e]);
    done(&ctx, &ds, &tr);
    unlink(path);
}

/* gcntrain: a precision it does not know, and bf16 where it cannot run,
 * are bad input (exit 2, one line naming it); a bf16 run trains. */
Test(train_bf16, gcntrain_precision_option, .timeout = 60)
{
    tool_result r;
    tool_run(&r, "gcntrain", (const char *[]){"models/gcn.json", "--precision", "fp16", NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert(strstr(r.err, "--precision 'fp16': expected fp32, tf32 or bf16"), "%s", r.err);
    tool_expect_one_line(r.err);
    tool_run(&r, "gcntrain",
             (const char *[]){"models/gcn.json", "--dataset", "sbm", "--precision", "bf16",
                              "--ranks", "2", "--device", "cpu", "--epochs", "1", NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert(strstr(r.err, "precision bf16 trains node-level models on one rank"), "%s", r.err);
    tool_run(&r, "gcntrain",
             (const char *[]){"models/gcn.json", "--dataset", "sbm", "--precision", "bf16",
                              "--device", "cpu", "--epochs", "2", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "bf16 storage, fp32 matmuls"), "%s", r.out);
}
