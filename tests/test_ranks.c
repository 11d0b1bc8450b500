/* Training over several ranks on the CPU: a group's threads and failures,
 * products with halos, synchronised batch norm and dropout, and whole
 * training runs against one context. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"
#include "ranks_check.h"

Test(ranks, spmm_with_halos_equals_the_whole_matrix)
{
    for (int n = 1; n <= 4; n++)
        ranks_check_spmm(GCN_DEVICE_CPU, n, 5, false);
    ranks_check_spmm(GCN_DEVICE_CPU, 3, 2, false);
}

Test(ranks, spmm_self_with_halos_equals_the_whole_matrix)
{
    ranks_check_spmm(GCN_DEVICE_CPU, 2, 7, true);
    ranks_check_spmm(GCN_DEVICE_CPU, 3, 33, true);
}

Test(ranks, batch_norm_and_dropout_over_ranks_equal_one_context)
{
    for (int n = 1; n <= 4; n++)
        ranks_check_epilogue(GCN_DEVICE_CPU, n);
}

static const char gcn_json[] =
    "{\"layers\": [{\"type\": \"gcn\", \"out\": 16, \"norm\": \"batch\", \"activation\": "
    "\"relu\", \"dropout\": 0.2}, {\"type\": \"gcn\", \"out\": 16, \"norm\": \"batch\", "
    "\"activation\": \"relu\", \"dropout\": 0.5}, {\"type\": \"gcn\", \"out\": \"classes\", "
    "\"dropout\": 0.5}], \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}";

static const char gin_json[] =
    "{\"layers\": [{\"type\": \"gin\", \"out\": 16, \"norm\": \"batch\", \"activation\": "
    "\"relu\"}, {\"type\": \"gin\", \"out\": \"classes\", \"hidden\": 16, \"dropout\": 0.5}], "
    "\"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}";

Test(ranks, gcn_on_ranks_trains_the_single_context_model, .timeout = 120)
{
    for (int n = 2; n <= 4; n++) /* 3 catches code that assumes a power of two */
        ranks_check_training(GCN_DEVICE_CPU, GCN_COMM_LOCAL, gcn_json, n, 20, 1e-5);
}

Test(ranks, gin_on_ranks_trains_the_single_context_model, .timeout = 120)
{
    ranks_check_training(GCN_DEVICE_CPU, GCN_COMM_LOCAL, gin_json, 3, 20, 1e-5);
}
