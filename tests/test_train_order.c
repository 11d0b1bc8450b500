/* A trainer moved between node orders mid-run (models/trainer_order.c)
 * on the CPU: the trajectory of a run that never moved. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"
#include "order_switch.h"

Test(train_order, switch_and_back_keeps_the_trajectory, .timeout = 60)
{
    /* the CPU reduces in a fixed order, but a sum over the renumbered rows
     * is taken in another order: float rounding */
    order_switch_check(test_cpu_ctx, 12, 4, 9, 1e-5);
}

Test(train_order, stage_refuses_another_dataset)
{
    gcn_ctx *ctx = test_cpu_ctx(2);
    gcn_sbm_opts o = gcn_sbm_default_opts();
    o.n_nodes = 200;
    o.n_features = 8;
    o.n_valid = 40;
    o.n_test = 40;
    gcn_dataset *a = NULL, *b = NULL;
    cr_assert_eq(gcn_dataset_sbm(ctx, &a, &o), GCN_OK);
    o.n_nodes = 210;
    cr_assert_eq(gcn_dataset_sbm(ctx, &b, &o), GCN_OK);
    gcn_model_config cfg;
    char err[128];
    cr_assert_eq(gcn_model_config_parse(&cfg, "{\"layers\": [{\"type\": \"gcn\", \"out\": "
                                              "\"classes\"}]}", "t.json", err, sizeof err),
                 GCN_OK, "%s", err);
    gcn_trainer *tr = NULL;
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, a), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_trainer_stage_order(ctx, tr, b), GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "is not the dataset the trainer was created for"),
              "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_trainer_switch_order(ctx, tr), GCN_ERR_STATE);
    cr_assert_not(gcn_trainer_reordered(tr));
    gcn_trainer_free(&tr);
    gcn_dataset_free(&a);
    gcn_dataset_free(&b);
    gcn_ctx_free(&ctx);
}
