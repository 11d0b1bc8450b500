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
