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
#include "dataset_helpers.h"
#include "helpers.h"
#include "tool_run.h"

enum { SHAPE_EPOCHS = 40 };

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

Test(train_bf16, precision_key_is_checked)
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
}

/* The GIN graph recipe on a collection of cycles and stars, batches of 8
 * graphs, the readout fed the blocks' bf16 outputs widened; each epoch's
 * loss and test accuracy. */
static void train_shapes(const char *dir, const char *precision, float *loss, double *test)
{
    char json[512];
    snprintf(json, sizeof json,
             "{\"layers\": [{\"type\": \"gin\", \"out\": 16, \"norm\": \"batch\", "
             "\"activation\": \"relu\"}, {\"type\": \"gin\", \"out\": 16, \"norm\": "
             "\"batch\", \"activation\": \"relu\"}], \"readout\": {\"pooling\": \"sum\"}, "
             "\"batch_size\": 8, \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}, "
             "\"precision\": \"%s\"}",
             precision);
    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_dataset *ds = ds_load_shapes_fold(ctx, dir, 4, 0, 0, false, NULL);
    gcn_trainer *tr = ds_train_graphs(ctx, json, ds, 11, SHAPE_EPOCHS, loss, NULL, test);
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
    gcn_memory_stats ms;
    gcn_ctx_memory_stats(ctx, &ms);
    cr_assert_eq(ms.in_use, 0);
    gcn_ctx_free(&ctx);
}

Test(train_bf16, graph_level_gin_learns_as_fp32_does, .timeout = 60)
{
    char *dir = ds_tmpdir();
    ds_write_tu_shapes(dir, 40);
    float loss[2][SHAPE_EPOCHS];
    double test[2][SHAPE_EPOCHS];
    train_shapes(dir, "fp32", loss[0], test[0]);
    train_shapes(dir, "bf16", loss[1], test[1]);
    /* One batch's loss swings by orders of magnitude from epoch to epoch
     * on 30 training graphs, so the trajectories are compared by what they
     * reach: both learn, and both classify every test graph at some epoch
     * (fp32 and bf16 alike then lose it at times: either predicts one
     * class for a few epochs after a spike). */
    for (int p = 0; p < 2; p++) {
        double late = 0.0, best = 0.0;
        for (int e = 0; e < SHAPE_EPOCHS; e++) {
            late += e >= SHAPE_EPOCHS - 10 ? loss[p][e] / 10.0 : 0.0;
            best = fmax(best, test[p][e]);
        }
        cr_assert_lt(late, 0.5 * loss[p][0], "%s learns: %g -> %g", p ? "bf16" : "fp32",
                     (double)loss[p][0], late);
        cr_assert_float_eq(best, 1.0, 1e-9, "%s: best test accuracy %g", p ? "bf16" : "fp32",
                           best);
    }
    ds_rmtree(dir);
    free(dir);
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
    cr_assert_eq(r.code, 0, "%s", r.err);
    tool_run(&r, "gcntrain",
             (const char *[]){"models/gcn.json", "--dataset", "sbm", "--precision", "bf16",
                              "--device", "cpu", "--epochs", "2", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "bf16 storage, bf16-input fp32-accumulating matmuls"), "%s", r.out);
}
