/* End to end on the CPU: a two-layer GCN assembled from the core ops,
 * trained with Adam on a generated stochastic block model. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "sbm_train.h"

Test(train, gcn_on_sbm_reaches_90_percent_and_is_bit_reproducible, .timeout = 120)
{
    run_result *first = calloc(1, sizeof *first), *second = calloc(1, sizeof *second);
    sbm_train(GCN_DEVICE_CPU, false, 2024, first);
    cr_assert_geq(first->acc, 0.90, "test accuracy %.4f", first->acc);
    cr_assert_lt(first->losses[EPOCHS - 1], 0.5f * first->losses[0], "loss %g -> %g",
                 (double)first->losses[0], (double)first->losses[EPOCHS - 1]);
    sbm_train(GCN_DEVICE_CPU, false, 2024, second);
    cr_assert_arr_eq(first->losses, second->losses, sizeof first->losses,
                     "same seed, different losses");
    cr_assert_eq(first->acc, second->acc);
    free(first);
    free(second);
}

/* gcn_trainer_memory: each figure is what its part of the trainer holds,
 * and an epoch adds the gradients to what the context holds, nothing else
 * (on the CPU no SpMM plan holds memory, and the first layer, behind
 * dropout, caches nothing). */
Test(train, memory_figures_are_what_each_part_holds, .timeout = 60)
{
    gcn_ctx *ctx = test_cpu_ctx(3);
    gcn_dataset *ds = NULL;
    const char *json = "{\"layers\": [{\"type\": \"gcn\", \"out\": 16, \"dropout\": 0.5},"
                       " {\"type\": \"gcn\", \"out\": \"classes\", \"dropout\": 0.5}],"
                       " \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}";
    gcn_trainer *tr = sbm_trainer(ctx, 500, 64, json, &ds);
    gcn_train_memory m;
    gcn_trainer_memory(tr, &m);
    size_t params = (size_t)gcn_model_param_count(gcn_trainer_model(tr)) * sizeof(float);
    cr_assert_eq(m.params, params);
    cr_assert_eq(m.grads, params);
    /* Adam's m and v, each parameter tensor's step state (its update count,
     * pending mark, beta1^t and beta2^t) and the learning rate
     * (optim/optim_impl.h) */
    size_t steps = (size_t)gcn_model_params(gcn_trainer_model(tr), NULL, NULL) *
                       (sizeof(int64_t) + sizeof(int32_t) + 2 * sizeof(double)) +
                   sizeof(float);
    cr_assert_eq(m.optimizer, 2 * params + steps, "Adam's m and v, and the step state");
    const gcn_csr *a = gcn_trainer_adjacency(tr, GCN_ADJ_GCN);
    size_t n = (size_t)ds->n_nodes, split = (size_t)(ds->n_train + ds->n_valid + ds->n_test);
    size_t data = (n * (size_t)ds->n_features + n + split) * 4 +
                  (n + 1 + 2 * (size_t)gcn_csr_nnz(a)) * 4; /* features, labels, split, CSR */
    cr_assert_eq(m.data, data);
    gcn_memory_stats before, after;
    gcn_ctx_memory_stats(ctx, &before);
    cr_assert_geq(before.in_use, m.data + m.params + m.optimizer);
    gcn_epoch_stats es;
    cr_assert_eq(gcn_trainer_epoch(ctx, tr, &es), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_ctx_memory_stats(ctx, &after);
    cr_assert_eq(after.in_use, before.in_use + m.grads);
    cr_assert_gt(after.peak, after.in_use);
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}
