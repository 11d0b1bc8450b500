/* The communicator on the GPU: LOCAL ranks sharing device 0 (device
 * buffers, a stream each) against the rank-order sums bit for bit; NCCL
 * with one rank on device 0, a rank on each GPU when there are several, and
 * abort waking a rank whose stream waits for a peer; the device errors of
 * joining.  Skipped without a GPU, the NCCL ones without libnccl. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm_check.h"
#include "gpu_helpers.h"

/* n CUDA contexts, all on device 0 or rank r on device r, joined by kind;
 * when NCCL cannot be loaded, frees them and skips the test. */
static void gpu_ranks(gcn_ctx **ctxs, int n, gcn_comm_kind kind, bool spread)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CUDA;
    for (int r = 0; r < n; r++) {
        o.device_index = spread ? r : 0;
        cr_assert_eq(gcn_ctx_create(&ctxs[r], &o), GCN_OK);
    }
    gcn_status st = gcn_comm_init(ctxs, n, kind);
    if (st == GCN_ERR_UNSUPPORTED && kind == GCN_COMM_NCCL) {
        char why[512];
        snprintf(why, sizeof why, "%s", gcn_last_error(ctxs[0]));
        comm_free(ctxs, n);
        cr_skip_test("%s", why);
    }
    cr_assert_eq(st, GCN_OK, "%s", gcn_last_error(ctxs[0]));
}

static void need_gpus(int n)
{
    int have = gcn_cuda_device_count();
    if (have < n)
        cr_skip_test("needs %d CUDA devices, found %d", n, have);
}

/* ---- collectives on device buffers ----------------------------------------------- */

typedef struct dev_job {
    int ranks;
    int64_t n;
    bool split; /* the exchange through gcn_comm_alltoallv_begin and _end */
    float *buf[COMM_MAX_RANKS], *send[COMM_MAX_RANKS], *recv[COMM_MAX_RANKS];
    double *buf64[COMM_MAX_RANKS];
    int64_t send_off[COMM_MAX_RANKS][COMM_MAX_RANKS + 1];
    int64_t recv_off[COMM_MAX_RANKS][COMM_MAX_RANKS + 1];
    gcn_status st[COMM_MAX_RANKS][4];
    char msg[COMM_MAX_RANKS][512];
} dev_job;

static void dev_rank(gcn_ctx *ctx, int r, void *user)
{
    dev_job *j = user;
    j->st[r][0] = gcn_comm_allreduce(ctx, j->buf[r], j->n);
    j->st[r][1] = gcn_comm_allreduce_f64(ctx, j->buf64[r], j->n);
    int layer = gcn_ctx_set_layer(ctx, 2); /* the exchange counts for layer 2 */
    if (j->split) {
        j->st[r][2] = gcn_comm_alltoallv_begin(ctx, j->send[r], j->send_off[r], j->recv[r],
                                               j->recv_off[r]);
        if (j->st[r][2] == GCN_OK)
            j->st[r][2] = gcn_comm_alltoallv_end(ctx);
    } else {
        j->st[r][2] = gcn_comm_alltoallv(ctx, j->send[r], j->send_off[r], j->recv[r],
                                         j->recv_off[r]);
    }
    gcn_ctx_set_layer(ctx, layer);
    j->st[r][3] = gcn_comm_barrier(ctx);
    snprintf(j->msg[r], sizeof j->msg[r], "%s", gcn_last_error(ctx));
}

/* Uploads each rank's values, blocks and offsets (main thread). */
static void dev_setup(dev_job *j, gcn_ctx **ctxs)
{
    for (int r = 0; r < j->ranks; r++) {
        int64_t n = j->n, *so = j->send_off[r], *ro = j->recv_off[r];
        float *h = host_floats(n);
        double *h64 = malloc((size_t)(n + 1) * sizeof *h64);
        for (int64_t i = 0; i < n; i++) {
            h[i] = comm_value(r, i);
            h64[i] = comm_value_f64(r, i);
        }
        j->buf[r] = gpu_upload(ctxs[r], h, (size_t)n * sizeof *h);
        j->buf64[r] = gpu_upload(ctxs[r], h64, (size_t)n * sizeof *h64);
        free(h);
        free(h64);
        comm_offsets(r, j->ranks, so, ro);
        float *s = host_floats(so[j->ranks]);
        for (int q = 0; q < j->ranks; q++)
            for (int64_t i = 0; i < so[q + 1] - so[q]; i++)
                s[so[q] + i] = comm_block_value(r, q, i);
        j->send[r] = gpu_upload(ctxs[r], s, (size_t)so[j->ranks] * sizeof *s);
        j->recv[r] = gpu_alloc(ctxs[r], (size_t)ro[j->ranks] * sizeof(float));
        free(s);
    }
}

/* Downloads and checks: LOCAL sums bit for bit against the rank-order sum;
 * NCCL's the same bits on every rank, close to it; blocks exactly. */
static void dev_check(dev_job *j, gcn_ctx **ctxs, bool exact)
{
    int64_t n = j->n;
    float *want = host_floats(n), *got = host_floats(n), *first = host_floats(n);
    double *want64 = malloc((size_t)(n + 1) * sizeof *want64);
    double *got64 = malloc((size_t)(n + 1) * sizeof *got64);
    double *first64 = malloc((size_t)(n + 1) * sizeof *first64);
    comm_sum(j->ranks, n, want);
    comm_sum_f64(j->ranks, n, want64);
    for (int r = 0; r < j->ranks; r++) {
        for (int k = 0; k < 4; k++)
            cr_expect_eq(j->st[r][k], GCN_OK, "rank %d, call %d: %s", r, k, j->msg[r]);
        gpu_download(ctxs[r], got, j->buf[r], (size_t)n * sizeof *got);
        gpu_download(ctxs[r], got64, j->buf64[r], (size_t)n * sizeof *got64);
        if (exact) {
            expect_same(got, want, n, "float all-reduce");
            cr_expect(n == 0 || !memcmp(got64, want64, (size_t)n * sizeof *got64),
                      "rank %d: double all-reduce differs", r);
        } else {
            expect_close(got, want, n, 1e-6, "float all-reduce");
            if (r == 0) {
                memcpy(first, got, (size_t)n * sizeof *got);
                memcpy(first64, got64, (size_t)n * sizeof *got64);
            }
            expect_same(got, first, n, "float all-reduce against rank 0's");
            cr_expect(n == 0 || !memcmp(got64, first64, (size_t)n * sizeof *got64),
                      "rank %d: double all-reduce differs from rank 0's", r);
        }
        int64_t *ro = j->recv_off[r];
        float *recv = host_floats(ro[j->ranks]);
        gpu_download(ctxs[r], recv, j->recv[r], (size_t)ro[j->ranks] * sizeof *recv);
        for (int p = 0; p < j->ranks; p++)
            for (int64_t i = 0; i < comm_block(p, r); i++)
                cr_expect_eq(recv[ro[p] + i], comm_block_value(p, r, i),
                             "rank %d, block from %d, element %lld", r, p, (long long)i);
        free(recv);
        gpu_release(ctxs[r], j->buf[r], (size_t)n * sizeof(float));
        gpu_release(ctxs[r], j->buf64[r], (size_t)n * sizeof(double));
        gpu_release(ctxs[r], j->send[r], (size_t)j->send_off[r][j->ranks] * sizeof(float));
        gpu_release(ctxs[r], j->recv[r], (size_t)ro[j->ranks] * sizeof(float));
    }
    free(want);
    free(got);
    free(first);
    free(want64);
    free(got64);
    free(first64);
}

/* Each transport times its collectives (NCCL with events, read here), and
 * the exchanges count for layer 2, the all-reduces for layer 0.  Every
 * other exchange runs in two halves (NCCL: on its side stream). */
static void run_collectives(gcn_ctx **ctxs, int ranks, bool exact)
{
    static const int64_t sizes[] = {0, 1, 1000, 100000};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        dev_job j = {.ranks = ranks, .n = sizes[k], .split = k % 2 == 1};
        dev_setup(&j, ctxs);
        comm_run(ctxs, ranks, dev_rank, &j);
        dev_check(&j, ctxs, exact);
    }
    for (int r = 0; r < ranks; r++) {
        gcn_comm_stats s, l0, l2;
        gcn_comm_get_stats(ctxs[r], &s);
        gcn_comm_get_layer_stats(ctxs[r], 0, &l0);
        gcn_comm_get_layer_stats(ctxs[r], 2, &l2);
        cr_expect_eq(s.allreduce_calls, 8);
        cr_expect_eq(s.allreduce_bytes, (0 + 1 + 1000 + 100000) * (4 + 8));
        cr_expect_eq(s.exchange_calls, 4);
        cr_expect(s.allreduce_ms > 0.0 && s.exchange_ms > 0.0 && isfinite(s.allreduce_ms) &&
                  isfinite(s.exchange_ms), "rank %d: %g ms all-reduce, %g ms exchange", r,
                  s.allreduce_ms, s.exchange_ms);
        cr_expect(l0.allreduce_calls == 8 && l0.allreduce_ms == s.allreduce_ms &&
                  l0.exchange_calls == 0 && l0.exchange_ms == 0.0, "rank %d: layer 0", r);
        cr_expect(l2.exchange_calls == 4 && l2.exchange_bytes == s.exchange_bytes &&
                  l2.exchange_ms == s.exchange_ms && l2.allreduce_calls == 0,
                  "rank %d: layer 2", r);
    }
}

Test(gpu_comm, local_ranks_on_one_gpu_sum_bit_for_bit, .timeout = 120)
{
    GPU_REQUIRED();
    for (int ranks = 1; ranks <= 3; ranks++) {
        gcn_ctx *ctxs[COMM_MAX_RANKS];
        gpu_ranks(ctxs, ranks, GCN_COMM_LOCAL, false);
        run_collectives(ctxs, ranks, true);
        comm_free(ctxs, ranks);
    }
}

Test(gpu_comm, nccl_one_rank_on_device_0, .timeout = 120)
{
    GPU_REQUIRED();
    gcn_ctx *ctxs[1];
    gpu_ranks(ctxs, 1, GCN_COMM_NCCL, false);
    cr_expect_eq(gcn_ctx_comm_kind(ctxs[0]), GCN_COMM_NCCL);
    run_collectives(ctxs, 1, true);
    comm_free(ctxs, 1);
}

Test(gpu_comm, nccl_a_rank_on_each_gpu, .timeout = 120)
{
    GPU_REQUIRED();
    need_gpus(2);
    int ranks = gcn_cuda_device_count() < COMM_MAX_RANKS ? gcn_cuda_device_count() : COMM_MAX_RANKS;
    gcn_ctx *ctxs[COMM_MAX_RANKS];
    gpu_ranks(ctxs, ranks, GCN_COMM_NCCL, true);
    run_collectives(ctxs, ranks, false);
    comm_free(ctxs, ranks);
}

/* ---- abort -------------------------------------------------------------------------- */

typedef struct abort_job {
    float *buf[2];
    gcn_status warm[2], later;
    char msg[512];
} abort_job;

static void abort_rank(gcn_ctx *ctx, int r, void *user)
{
    abort_job *j = user;
    j->warm[r] = gcn_comm_allreduce(ctx, j->buf[r], 256); /* connects the ranks */
    (void)gcn_ctx_sync(ctx);
    if (r == 1) {
        GCN_ERROR(ctx, GCN_ERR_NUMERIC, "loss is NaN");
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 300000000L};
        nanosleep(&ts, NULL); /* rank 0's stream waits for this rank by now */
        gcn_comm_abort(ctx);
        return;
    }
    /* queued before the abort; what the aborted kernels leave does not matter */
    (void)gcn_comm_allreduce(ctx, j->buf[0], 256);
    (void)gcn_ctx_sync(ctx);
    j->later = gcn_comm_allreduce(ctx, j->buf[0], 256);
    snprintf(j->msg, sizeof j->msg, "%s", gcn_last_error(ctx));
}

Test(gpu_comm, nccl_abort_wakes_a_rank_waiting_for_a_peer, .timeout = 120)
{
    GPU_REQUIRED();
    need_gpus(2);
    gcn_ctx *ctxs[2];
    gpu_ranks(ctxs, 2, GCN_COMM_NCCL, true);
    abort_job j = {0};
    for (int r = 0; r < 2; r++)
        j.buf[r] = gpu_alloc(ctxs[r], 256 * sizeof(float));
    comm_run(ctxs, 2, abort_rank, &j);
    cr_expect_eq(j.warm[0], GCN_OK);
    cr_expect_eq(j.warm[1], GCN_OK);
    cr_expect_eq(j.later, GCN_ERR_STATE, "%s", j.msg);
    cr_expect(strstr(j.msg, "rank 1 stopped: loss is NaN"), "%s", j.msg);
    for (int r = 0; r < 2; r++)
        gpu_release(ctxs[r], j.buf[r], 256 * sizeof(float));
    comm_free(ctxs, 2);
}

/* ---- joining ------------------------------------------------------------------------ */

Test(gpu_comm, local_ranks_on_different_devices_are_a_device_error)
{
    GPU_REQUIRED();
    gcn_ctx *ctxs[2];
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CPU;
    cr_assert_eq(gcn_ctx_create(&ctxs[0], &o), GCN_OK);
    o.device = GCN_DEVICE_CUDA;
    cr_assert_eq(gcn_ctx_create(&ctxs[1], &o), GCN_OK);
    cr_expect_eq(gcn_comm_init(ctxs, 2, GCN_COMM_LOCAL), GCN_ERR_DEVICE);
    cr_expect(strstr(gcn_last_error(ctxs[0]), "rank 1 is on cuda:0, rank 0 on the CPU"), "%s",
              gcn_last_error(ctxs[0]));
    cr_expect_eq(gcn_ctx_ranks(ctxs[0]), 1);
    cr_expect_eq(gcn_ctx_ranks(ctxs[1]), 1);
    gcn_ctx_free(&ctxs[0]);
    if (gcn_cuda_device_count() >= 2) {
        o.device_index = 1;
        cr_assert_eq(gcn_ctx_create(&ctxs[0], &o), GCN_OK);
        cr_expect_eq(gcn_comm_init(ctxs, 2, GCN_COMM_LOCAL), GCN_ERR_DEVICE);
        cr_expect(strstr(gcn_last_error(ctxs[0]), "rank 1 is on cuda:0, rank 0 on cuda:1"), "%s",
                  gcn_last_error(ctxs[0]));
    }
    comm_free(ctxs, 2);
}

Test(gpu_comm, nccl_ranks_sharing_a_gpu_are_a_device_error)
{
    GPU_REQUIRED();
    gcn_ctx *ctxs[2];
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CUDA;
    for (int r = 0; r < 2; r++)
        cr_assert_eq(gcn_ctx_create(&ctxs[r], &o), GCN_OK);
    gcn_status st = gcn_comm_init(ctxs, 2, GCN_COMM_NCCL);
    if (st == GCN_ERR_UNSUPPORTED) {
        char why[512];
        snprintf(why, sizeof why, "%s", gcn_last_error(ctxs[0]));
        comm_free(ctxs, 2);
        cr_skip_test("%s", why);
    }
    cr_expect_eq(st, GCN_ERR_DEVICE, "%s", gcn_last_error(ctxs[0]));
    cr_expect(strstr(gcn_last_error(ctxs[0]), "ranks 0 and 1 are both on cuda:0"), "%s",
              gcn_last_error(ctxs[0]));
    cr_expect_eq(gcn_ctx_ranks(ctxs[1]), 1);
    comm_free(ctxs, 2);
}
