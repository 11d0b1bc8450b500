/* Training the same model in fp32 and in bf16 on a generated graph. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "bf16_train.h"

const char *const bf16_gcn_json =
    "{\"layers\": [{\"type\": \"gcn\", \"out\": 32, \"norm\": \"batch\", \"activation\": \"relu\"},"
    " {\"type\": \"gcn\", \"out\": \"classes\", \"dropout\": 0.5}],"
    " \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}";
const char *const bf16_gin_json =
    "{\"layers\": [{\"type\": \"gin\", \"out\": 32, \"norm\": \"batch\", \"activation\": \"relu\"},"
    " {\"type\": \"gin\", \"out\": \"classes\", \"hidden\": 32, \"dropout\": 0.5}],"
    " \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}";

void bf16_train(gcn_device device, const char *json, const char *precision, bf16_run *out)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = device;
    o.seed = 5;
    gcn_ctx *ctx = NULL;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    gcn_sbm_opts so = gcn_sbm_default_opts();
    so.n_nodes = 1200;
    so.n_features = 32;
    gcn_dataset *ds = NULL;
    cr_assert_eq(gcn_dataset_sbm(ctx, &ds, &so), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_model_config cfg;
    char err[256];
    cr_assert_eq(gcn_model_config_parse(&cfg, json, "test", err, sizeof err), GCN_OK, "%s", err);
    cr_assert_eq(gcn_model_config_set(&cfg, "precision", precision, err, sizeof err), GCN_OK,
                 "%s", err);
    gcn_trainer *tr = NULL;
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, ds), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_epoch_stats es;
    for (int e = 0; e < BF16_EPOCHS; e++) {
        cr_assert_eq(gcn_trainer_epoch(ctx, tr, &es), GCN_OK, "%s", gcn_last_error(ctx));
        out->losses[e] = es.loss;
    }
    out->test_acc = es.test_acc;
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
    gcn_memory_stats ms;
    gcn_ctx_memory_stats(ctx, &ms);
    out->peak = ms.peak;
    cr_assert_eq(ms.in_use, 0);
    gcn_ctx_free(&ctx);
}

/* Each stored bf16 tensor carries a relative error up to 2^-8 (0.4%); a
 * step's loss and gradients move by a few times that, and with the same
 * dropout masks Adam's normalised steps keep the two trajectories within a
 * few percent of each other over 50 epochs (measured: under 4%, 0.002
 * absolute).  0.01 + 5% allows that drift and fails on rounding that is
 * wrong by more than bf16's or a path that does not learn. */
void bf16_expect_close(const bf16_run *bf16, const bf16_run *fp32, const char *what)
{
    for (int e = 0; e < BF16_EPOCHS; e++) {
        double d = fabs((double)bf16->losses[e] - fp32->losses[e]);
        cr_assert(isfinite(bf16->losses[e]) && d <= 0.01 + 0.05 * fp32->losses[e],
                  "%s epoch %d: bf16 loss %.5f, fp32 %.5f", what, e + 1,
                  (double)bf16->losses[e], (double)fp32->losses[e]);
    }
    cr_assert_lt(bf16->losses[BF16_EPOCHS - 1], 0.5f * bf16->losses[0], "%s: bf16 learns", what);
    cr_assert_lt(fp32->losses[BF16_EPOCHS - 1], 0.5f * fp32->losses[0], "%s: fp32 learns", what);
}
