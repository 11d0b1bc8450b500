/* Training over several ranks on the CPU: a group's threads and failures,
 * products with halos, synchronised batch norm and dropout, and whole
 * training runs against one context. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"
#include "kernels/halo/halo.h"
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

/* Exchanges in chunks: every count, down to chunks of one row or none */
Test(ranks, spmm_in_chunks_equals_the_whole_matrix)
{
    for (int k = 1; k <= GCN_HALO_MAX_CHUNKS; k++) {
        ranks_check_spmm_chunked(GCN_DEVICE_CPU, 2, 5, false, k);
        ranks_check_spmm_chunked(GCN_DEVICE_CPU, 4, 3, true, k);
    }
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

Test(ranks, bf16_on_ranks_trains_the_single_context_model, .timeout = 120)
{
    ranks_check_bf16(GCN_DEVICE_CPU);
}

/* Random edges: halos larger than the blocks, exchanges in chunks. */
Test(ranks, ranks_with_chunked_exchanges_train_the_single_context_model, .timeout = 120)
{
    ranks_check_training_on(GCN_DEVICE_CPU, GCN_COMM_LOCAL, gcn_json, 4, 10, 1e-5, 0.0);
    ranks_check_training_on(GCN_DEVICE_CPU, GCN_COMM_LOCAL, gin_json, 2, 10, 1e-5, 0.0);
}

Test(ranks, chunk_counts)
{
    cr_assert_eq(gcn_halo_chunks_for(100, 10, 15), 1);
    cr_assert_eq(gcn_halo_chunks_for(100, 25, 25), 1);
    cr_assert_eq(gcn_halo_chunks_for(100, 26, 25), 2);
    cr_assert_eq(gcn_halo_chunks_for(100, 50, 60), 3);
    cr_assert_eq(gcn_halo_chunks_for(100, 200, 200), GCN_HALO_MAX_CHUNKS);
    cr_assert_eq(gcn_halo_chunks_for(0, 5, 5), 1);
}

/* gcn_csr_create_block checks what gcn_csr_create and gcn_csr_set_halo
 * check, and on failure leaves nothing. */
Test(ranks, create_block_checks_its_input)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    /* one rank: a 2-row block of 2 columns, no halo */
    const int32_t rp[] = {0, 2, 3}, ci[] = {0, 1, 1}, bad_ci[] = {0, 2, 1};
    const int64_t off[] = {0, 0};
    gcn_csr *a = (gcn_csr *)&a;
    cr_assert_eq(gcn_csr_create_block(ctx, &a, 2, 2, 3, rp, ci, NULL, NULL, off, off, 1),
                 GCN_ERR_STATE);
    cr_assert_null(a);
    cr_assert(strstr(gcn_last_error(ctx), "no communicator"), "%s", gcn_last_error(ctx));
    gcn_ctx *ctxs[1] = {ctx};
    cr_assert_eq(gcn_comm_init(ctxs, 1, GCN_COMM_LOCAL), GCN_OK);
    cr_assert_eq(gcn_csr_create_block(ctx, &a, 2, 2, 3, rp, bad_ci, NULL, NULL, off, off, 1),
                 GCN_ERR_FORMAT);
    cr_assert(strstr(gcn_last_error(ctx), "column index 2"), "%s", gcn_last_error(ctx));
    cr_assert_null(a);
    const int64_t halo_off[] = {0, 1};
    cr_assert_neq(gcn_csr_create_block(ctx, &a, 2, 2, 3, rp, ci, NULL, NULL, off, halo_off, 1),
                  GCN_OK, "a halo block listed for the rank itself");
    cr_assert_null(a);
    cr_assert_eq(gcn_csr_create_block(ctx, &a, 2, 2, 3, rp, ci, NULL, NULL, off, off, 1), GCN_OK,
                 "%s", gcn_last_error(ctx));
    cr_assert(gcn_csr_rows(a) == 2 && gcn_csr_cols(a) == 2 && gcn_csr_nnz(a) == 3);
    cr_assert_null(gcn_csr_values(a));
    cr_assert_null(gcn_csr_transpose(a));
    /* the product runs on the parts: [1 1; 0 1] x */
    gcn_tensor *x = NULL, *y = NULL;
    const float xv[] = {1.0f, 2.0f};
    cr_assert_eq(gcn_tensor_from_host(ctx, &x, xv, 2, 1), GCN_OK);
    cr_assert_eq(gcn_spmm(ctx, a, x, &y), GCN_OK, "%s", gcn_last_error(ctx));
    float *yv = test_read(ctx, y);
    cr_assert(yv[0] == 3.0f && yv[1] == 2.0f, "%g %g", yv[0], yv[1]);
    free(yv);
    gcn_tensor_free(&x);
    gcn_tensor_free(&y);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}
