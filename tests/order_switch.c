/* The node-order switch check shared by the CPU and GPU suites
 * (order_switch.h). */
#include <criterion/criterion.h>
#include <math.h>

#include "order_switch.h"

#define MAX_EPOCHS 32

/* Dropout, batch norm and weight decay: everything that could tie a step
 * to the node order. */
static const char *model =
    "{\"layers\": [{\"type\": \"gcn\", \"out\": 24, \"norm\": \"batch\", \"activation\": \"relu\","
    " \"dropout\": 0.3}, {\"type\": \"gin\", \"out\": 16, \"activation\": \"relu\", \"dropout\": 0.5},"
    " {\"type\": \"gcn\", \"out\": \"classes\", \"dropout\": 0.5}],"
    " \"optimizer\": {\"type\": \"adam\", \"lr\": 0.02, \"weight_decay\": 0.0005}}";

static gcn_dataset *sbm(gcn_ctx *ctx)
{
    gcn_sbm_opts o = gcn_sbm_default_opts();
    o.n_nodes = 600;
    o.n_features = 20;
    o.n_classes = 4;
    o.n_valid = 100;
    o.n_test = 200;
    gcn_dataset *ds = NULL;
    gcn_rng_seed(ctx, 3);
    cr_assert_eq(gcn_dataset_sbm(ctx, &ds, &o), GCN_OK, "%s", gcn_last_error(ctx));
    return ds;
}

/* One run's epochs into stats; with switch_at > 0 it switches to re after
 * that epoch (and back after back_at when that is > 0). */
static void train(gcn_ctx *ctx, const gcn_dataset *ds, const gcn_dataset *re, int epochs,
                  int switch_at, int back_at, gcn_epoch_stats *stats)
{
    gcn_model_config cfg;
    char err[256] = "";
    cr_assert_eq(gcn_model_config_parse(&cfg, model, "switch.json", err, sizeof err), GCN_OK,
                 "%s", err);
    gcn_trainer *tr = NULL;
    gcn_rng_seed(ctx, 17);
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, ds), GCN_OK, "%s", gcn_last_error(ctx));
    for (int e = 1; e <= epochs; e++) {
        cr_assert_eq(gcn_trainer_epoch(ctx, tr, &stats[e - 1]), GCN_OK, "%s",
                     gcn_last_error(ctx));
        if (e == switch_at) {
            cr_assert_eq(gcn_trainer_stage_order(ctx, tr, re), GCN_OK, "%s", gcn_last_error(ctx));
            cr_assert_eq(gcn_trainer_switch_order(ctx, tr), GCN_OK, "%s", gcn_last_error(ctx));
            cr_assert(gcn_trainer_reordered(tr));
        }
        if (e == back_at) {
            cr_assert_eq(gcn_trainer_switch_order(ctx, tr), GCN_OK, "%s", gcn_last_error(ctx));
            cr_assert_not(gcn_trainer_reordered(tr));
            gcn_trainer_drop_order(tr);
            cr_assert_eq(gcn_trainer_switch_order(ctx, tr), GCN_ERR_STATE,
                         "nothing is staged once dropped");
        }
    }
    gcn_trainer_free(&tr);
}

void order_switch_check(gcn_ctx *(*ctx_of)(uint64_t seed), int epochs, int switch_at,
                        int back_at, double tol)
{
    cr_assert(epochs <= MAX_EPOCHS);
    gcn_ctx *ctx = ctx_of(1);
    gcn_dataset *ds = sbm(ctx), *re = sbm(ctx);
    gcn_reorder_opts ro;
    cr_assert_eq(gcn_reorder_parse(ctx, "metis:16,64", &ro), GCN_OK);
    cr_assert_eq(gcn_dataset_reorder(ctx, re, &ro), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_epoch_stats never[MAX_EPOCHS], moved[MAX_EPOCHS];
    train(ctx, ds, NULL, epochs, 0, 0, never);
    gcn_ctx_free(&ctx);
    ctx = ctx_of(1);
    train(ctx, ds, re, epochs, switch_at, back_at, moved);
    for (int e = 0; e < epochs; e++) {
        double a = never[e].loss, b = moved[e].loss;
        cr_assert(fabs(a - b) <= tol * fabs(a), "epoch %d: loss %.9g, %.9g after the switch",
                  e + 1, a, b);
        const double *acc[2][3] = {{&never[e].train_acc, &never[e].valid_acc, &never[e].test_acc},
                                   {&moved[e].train_acc, &moved[e].valid_acc, &moved[e].test_acc}};
        static const int rows[3] = {80, 100, 200}; /* 20 a class for training */
        for (int k = 0; k < 3; k++)
            cr_assert(fabs(*acc[0][k] - *acc[1][k]) <= 1.0 / rows[k] + 1e-12,
                      "epoch %d: split %d accuracy %g, %g after the switch", e + 1, k,
                      *acc[0][k], *acc[1][k]);
    }
    gcn_dataset_free(&ds);
    gcn_dataset_free(&re);
    gcn_ctx_free(&ctx);
}
