/* Tensor and context lifetime, host round trips, reference counting, and
 * the error paths: NULL arguments, shape mismatches, wrong device. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "helpers.h"

Test(tensor, round_trip_copy_fill_clone)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    float h[6] = {1, 2, 3, 4, 5, 6}, back[6];
    gcn_tensor *t = test_tensor(ctx, h, 2, 3), *z = NULL, *c = NULL;
    cr_assert_eq(gcn_tensor_rows(t), 2);
    cr_assert_eq(gcn_tensor_cols(t), 3);
    cr_assert_eq(gcn_tensor_device(t), GCN_DEVICE_CPU);
    cr_assert_eq(gcn_tensor_to_host(ctx, t, back), GCN_OK);
    cr_assert_arr_eq(h, back, sizeof h);
    cr_assert_eq(gcn_tensor_zeros(ctx, &z, 2, 3), GCN_OK);
    cr_assert_eq(gcn_tensor_to_host(ctx, z, back), GCN_OK);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(back[i], 0.0f);
    cr_assert_eq(gcn_tensor_copy(ctx, z, t), GCN_OK);
    cr_assert_eq(gcn_tensor_clone(ctx, z, &c), GCN_OK);
    cr_assert_eq(gcn_tensor_fill(ctx, z, -1.5f), GCN_OK);
    cr_assert_eq(gcn_tensor_to_host(ctx, c, back), GCN_OK);
    cr_assert_arr_eq(h, back, sizeof h);
    cr_assert_eq(gcn_tensor_to_host(ctx, z, back), GCN_OK);
    cr_assert_eq(back[5], -1.5f);
    gcn_tensor_free(&t);
    gcn_tensor_free(&z);
    gcn_tensor_free(&c);
    gcn_tensor_free(&c); /* freeing NULL is a no-op */
    gcn_memory_stats ms;
    gcn_ctx_memory_stats(ctx, &ms);
    cr_assert_eq(ms.in_use, 0);
    cr_assert_geq(ms.peak, 3 * sizeof h);
    gcn_ctx_free(&ctx);
    cr_assert_null(ctx);
    gcn_ctx_free(&ctx);
}

Test(tensor, reference_counting)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_tensor *t = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &t, 4, 4), GCN_OK);
    gcn_tensor *u = gcn_tensor_retain(t);
    gcn_tensor_free(&t);
    cr_assert_null(t);
    cr_assert_eq(gcn_tensor_numel(u), 16); /* still alive through u */
    gcn_tensor_free(&u);
    gcn_ctx_free(&ctx);
}

Test(tensor, empty_tensor_is_valid)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_tensor *t = NULL, *y = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &t, 0, 5), GCN_OK);
    cr_assert_eq(gcn_relu(ctx, t, &y), GCN_OK);
    cr_assert_eq(gcn_tensor_rows(y), 0);
    gcn_tensor_free(&y);
    gcn_tensor_free(&t);
    gcn_ctx_free(&ctx);
}

Test(tensor, null_arguments)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_tensor *y = NULL;
    cr_assert_eq(gcn_ctx_create(NULL, NULL), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_tensor_create(NULL, &y, 1, 1), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_tensor_create(ctx, NULL, 1, 1), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_tensor_create(ctx, &y, -1, 1), GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "[-1, 1]"), "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_relu(ctx, NULL, &y), GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "relu input is NULL"), "%s", gcn_last_error(ctx));
    cr_assert(strstr(gcn_last_error(ctx), "tensor.c:"), "message carries file:line: %s",
              gcn_last_error(ctx));
    cr_assert_eq(gcn_backward(ctx, NULL), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_tensor_from_host(ctx, &y, NULL, 2, 2), GCN_ERR_INVALID_ARG);
    cr_assert_null(y);
    gcn_ctx_free(&ctx);
}

Test(tensor, shape_mismatches)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_tensor *a = NULL, *b = NULL, *y = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &a, 2, 3), GCN_OK);
    cr_assert_eq(gcn_tensor_zeros(ctx, &b, 2, 3), GCN_OK);
    cr_assert_eq(gcn_matmul(ctx, a, b, false, false, &y), GCN_ERR_SHAPE);
    cr_assert(strstr(gcn_last_error(ctx), "matmul: op(a) is [2, 3] but op(b) is [2, 3]"), "%s",
              gcn_last_error(ctx));
    cr_assert_null(y);
    cr_assert_eq(gcn_matmul(ctx, a, b, false, true, &y), GCN_OK);
    gcn_tensor_free(&y);
    cr_assert_eq(gcn_add_bias(ctx, a, b, &y), GCN_ERR_SHAPE);
    gcn_tensor *c = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &c, 3, 2), GCN_OK);
    cr_assert_eq(gcn_add(ctx, a, c, &y), GCN_ERR_SHAPE);
    cr_assert_eq(gcn_tensor_copy(ctx, a, c), GCN_ERR_SHAPE);
    gcn_tensor *parts[2] = {a, c};
    cr_assert_eq(gcn_concat_cols(ctx, parts, 2, &y), GCN_ERR_SHAPE);
    cr_assert_eq(gcn_backward(ctx, a), GCN_ERR_SHAPE);
    gcn_tensor *one = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &one, 1, 1), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, one), GCN_ERR_STATE); /* not produced by a recorded op */
    gcn_csr *m = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &m, 2, 2, 1, (int32_t[]){0, 1, 1}, (int32_t[]){1}, NULL),
                 GCN_OK);
    cr_assert_eq(gcn_spmm(ctx, m, c, &y), GCN_ERR_SHAPE);
    gcn_csr_free(&m);
    gcn_tensor_free(&one);
    gcn_tensor_free(&a);
    gcn_tensor_free(&b);
    gcn_tensor_free(&c);
    gcn_ctx_free(&ctx);
}

Test(tensor, wrong_device_or_context)
{
    gcn_ctx *c1 = test_cpu_ctx(0), *c2 = test_cpu_ctx(0);
    gcn_tensor *a = NULL, *b = NULL, *y = NULL;
    cr_assert_eq(gcn_tensor_zeros(c1, &a, 2, 2), GCN_OK);
    cr_assert_eq(gcn_tensor_zeros(c2, &b, 2, 2), GCN_OK);
    cr_assert_eq(gcn_add(c1, a, b, &y), GCN_ERR_DEVICE);
    cr_assert(strstr(gcn_last_error(c1), "add b lives on another context"), "%s",
              gcn_last_error(c1));
    cr_assert_null(y);
    /* a matrix, an index array and an optimiser parameter from the other context */
    gcn_csr *m = NULL;
    cr_assert_eq(gcn_csr_create(c2, &m, 2, 2, 1, (int32_t[]){0, 1, 1}, (int32_t[]){1}, NULL),
                 GCN_OK);
    cr_assert_eq(gcn_spmm(c1, m, a, &y), GCN_ERR_DEVICE);
    cr_assert(strstr(gcn_last_error(c1), "matrix belongs to another context"), "%s",
              gcn_last_error(c1));
    gcn_index *labels = test_index(c2, (int32_t[]){0, 1}, 2);
    gcn_index *rows = test_index(c1, (int32_t[]){0}, 1);
    cr_assert_eq(gcn_nll_loss(c1, a, labels, rows, &y), GCN_ERR_DEVICE);
    cr_assert(strstr(gcn_last_error(c1), "labels lives on another context"), "%s",
              gcn_last_error(c1));
    gcn_optim *opt = NULL;
    gcn_optim_opts oo = gcn_optim_default_opts(GCN_OPTIM_SGD);
    cr_assert_eq(gcn_optim_create(c1, &opt, &b, 1, &oo), GCN_ERR_DEVICE);
    cr_assert_null(opt);
    cr_assert_null(y);
    gcn_index_free(&labels);
    gcn_index_free(&rows);
    gcn_csr_free(&m);
    gcn_tensor_free(&a);
    gcn_tensor_free(&b);
    gcn_ctx_free(&c1);
    gcn_ctx_free(&c2);
}

Test(tensor, invalid_labels_and_rows)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_tensor *lp = NULL, *l = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &lp, 3, 2), GCN_OK);
    gcn_index *labels = test_index(ctx, (int32_t[]){0, -1, 1}, 3);
    gcn_index *bad_rows = test_index(ctx, (int32_t[]){0, 3}, 2);
    gcn_index *unlabeled = test_index(ctx, (int32_t[]){1}, 1);
    gcn_index *big = test_index(ctx, (int32_t[]){0, 2, 1}, 3);
    cr_assert_eq(gcn_nll_loss(ctx, lp, labels, bad_rows, &l), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_nll_loss(ctx, lp, labels, unlabeled, &l), GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "row 1 is listed but its label -1"), "%s",
              gcn_last_error(ctx));
    cr_assert_eq(gcn_nll_loss(ctx, lp, big, unlabeled, &l), GCN_ERR_INVALID_ARG);
    cr_assert_null(l);
    gcn_index_free(&labels);
    gcn_index_free(&bad_rows);
    gcn_index_free(&unlabeled);
    gcn_index_free(&big);
    gcn_tensor_free(&lp);
    gcn_ctx_free(&ctx);
}

Test(tensor, invalid_csr)
{
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_csr *m = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &m, 2, 2, 2, (int32_t[]){0, 2, 1}, (int32_t[]){0, 1}, NULL),
                 GCN_ERR_FORMAT);
    cr_assert_eq(gcn_csr_create(ctx, &m, 2, 2, 2, (int32_t[]){0, 1, 2}, (int32_t[]){0, 2}, NULL),
                 GCN_ERR_FORMAT);
    cr_assert(strstr(gcn_last_error(ctx), "column index 2 at non-zero 1"), "%s",
              gcn_last_error(ctx));
    cr_assert_eq(gcn_csr_create(ctx, &m, 2, 2, 1, (int32_t[]){0, 1, 1}, NULL, NULL),
                 GCN_ERR_INVALID_ARG);
    cr_assert_null(m);
    gcn_ctx_free(&ctx);
}

/* Counts the messages that announce the CPU fallback. */
static void count_fallback(gcn_log_level level, const char *msg, void *user)
{
    (void)level;
    if (strstr(msg, "running on the CPU backend"))
        (*(int *)user)++;
}

/* AUTO on a machine without a usable GPU says once, through the log sink,
 * that it runs on the CPU; with a GPU it picks it and says nothing of the
 * kind; an explicit CPU request never announces a fallback. */
Test(tensor, cpu_fallback_is_said_once)
{
    int said = 0;
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.log_level = GCN_LOG_DEBUG;
    o.log_fn = count_fallback;
    o.log_user = &said;
    gcn_ctx *ctx = NULL;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    gcn_tensor *t = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &t, 3, 2), GCN_OK);
    gcn_tensor_free(&t);
    bool gpu = gcn_cuda_device_count() > 0;
    cr_assert_eq(gcn_ctx_device(ctx), gpu ? GCN_DEVICE_CUDA : GCN_DEVICE_CPU);
    cr_assert_eq(said, gpu ? 0 : 1, "fallback announced %d times", said);
    gcn_ctx_free(&ctx);
    said = 0;
    o.device = GCN_DEVICE_CPU;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    cr_assert_eq(said, 0);
    gcn_ctx_free(&ctx);
}

Test(tensor, status_strings_and_devices)
{
    cr_assert_str_eq(gcn_status_str(GCN_OK), "ok");
    cr_assert_str_eq(gcn_status_str(GCN_ERR_SHAPE), "shape mismatch");
    cr_assert_str_eq(gcn_status_str((gcn_status)999), "unknown status");
    gcn_ctx_opts o = gcn_ctx_default_opts();
    cr_assert_eq(o.device, GCN_DEVICE_AUTO);
    gcn_ctx *ctx = NULL;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    cr_assert_neq(gcn_ctx_device(ctx), GCN_DEVICE_AUTO);
    cr_assert_str_eq(gcn_last_error(ctx), "");
    gcn_ctx_free(&ctx);
    if (gcn_cuda_device_count() == 0) {
        o.device = GCN_DEVICE_CUDA;
        cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_ERR_DEVICE);
        cr_assert_null(ctx);
    }
}

/* A tensor whose values were dropped keeps its shape and grad slot but is
 * refused as an operand, with a message. */
Test(tensor, dropped_values_are_refused)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    uint64_t s = 1;
    gcn_tensor *t = test_random_tensor(ctx, &s, 2, 3), *y = NULL;
    gcn_memory_stats before, after;
    gcn_ctx_memory_stats(ctx, &before);
    gcn_tensor_drop_values(t);
    gcn_tensor_drop_values(t);
    gcn_ctx_memory_stats(ctx, &after);
    cr_assert_eq(before.in_use - after.in_use, 6 * sizeof(float));
    cr_assert_eq(gcn_tensor_rows(t), 2);
    cr_assert_eq(gcn_relu(ctx, t, &y), GCN_ERR_STATE);
    cr_assert_not_null(strstr(gcn_last_error(ctx), "dropped"), "%s", gcn_last_error(ctx));
    gcn_tensor_free(&t);
    gcn_ctx_free(&ctx);
}
