/* The communicator on CPU contexts (LOCAL): all-reduce in rank order, bit
 * for bit, exchanges of irregular blocks, sizes and sequences that do not
 * match, abort and a rank's own failure waking the others, joining errors,
 * traffic counts, freeing in any order; NCCL's loading and device errors. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm_check.h"
#include "core/internal.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

#define expect_msg(ctx, text) \
    cr_expect(strstr(gcn_last_error(ctx), (text)), "message '%s' lacks '%s'", \
              gcn_last_error(ctx), (text))

/* ---- joining ------------------------------------------------------------------ */

Test(comm, init_attaches_ranks_and_kind)
{
    gcn_ctx *alone = NULL;
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CPU;
    cr_assert_eq(gcn_ctx_create(&alone, &o), GCN_OK);
    cr_expect_eq(gcn_ctx_rank(alone), 0);
    cr_expect_eq(gcn_ctx_ranks(alone), 1);
    cr_expect_eq(gcn_ctx_comm_kind(alone), 0);
    cr_expect_eq(gcn_ctx_ranks(NULL), 1);
    for (int n = 1; n <= COMM_MAX_RANKS; n++) {
        gcn_ctx *ctxs[COMM_MAX_RANKS];
        comm_cpu_ranks(ctxs, n, 1);
        for (int r = 0; r < n; r++) {
            cr_expect_eq(gcn_ctx_rank(ctxs[r]), r);
            cr_expect_eq(gcn_ctx_ranks(ctxs[r]), n);
            cr_expect_eq(gcn_ctx_comm_kind(ctxs[r]), GCN_COMM_LOCAL);
        }
        comm_free(ctxs, n);
    }
    gcn_ctx_free(&alone);
}

Test(comm, init_errors_attach_nothing)
{
    gcn_ctx *ctxs[COMM_MAX_RANKS];
    comm_cpu_ranks(ctxs, 2, 1);
    gcn_ctx *fresh[3] = {NULL, NULL, NULL};
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CPU;
    o.threads = 1;
    cr_assert_eq(gcn_ctx_create(&fresh[0], &o), GCN_OK);
    cr_assert_eq(gcn_ctx_create(&fresh[1], &o), GCN_OK);

    cr_expect_eq(gcn_comm_init(fresh, 0, GCN_COMM_LOCAL), GCN_ERR_INVALID_ARG);
    cr_expect_eq(gcn_comm_init(NULL, 2, GCN_COMM_LOCAL), GCN_ERR_INVALID_ARG);
    cr_expect_eq(gcn_comm_init(fresh, 3, GCN_COMM_LOCAL), GCN_ERR_INVALID_ARG);
    expect_msg(fresh[0], "context 2 is NULL");
    cr_expect_eq(gcn_comm_init(fresh, 2, (gcn_comm_kind)7), GCN_ERR_INVALID_ARG);
    expect_msg(fresh[0], "unknown kind 7");

    gcn_ctx *twice[2] = {fresh[0], fresh[0]};
    cr_expect_eq(gcn_comm_init(twice, 2, GCN_COMM_LOCAL), GCN_ERR_INVALID_ARG);
    expect_msg(fresh[0], "one context given as ranks 0 and 1");

    /* a context already in a communicator, after two that are not */
    gcn_ctx *mixed[3] = {fresh[0], fresh[1], ctxs[1]};
    cr_expect_eq(gcn_comm_init(mixed, 3, GCN_COMM_LOCAL), GCN_ERR_STATE);
    expect_msg(fresh[0], "context 2 is already rank 1 of a communicator");
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(gcn_ctx_ranks(fresh[i]), 1, "context %d was attached", i);
        cr_expect_eq(gcn_ctx_comm_kind(fresh[i]), 0);
    }
    cr_expect_eq(gcn_ctx_ranks(ctxs[1]), 2);
    /* the two fresh ones can still be joined */
    cr_expect_eq(gcn_comm_init(fresh, 2, GCN_COMM_LOCAL), GCN_OK, "%s", gcn_last_error(fresh[0]));
    cr_expect_eq(gcn_ctx_rank(fresh[1]), 1);
    comm_free(fresh, 2);
    comm_free(ctxs, 2);
}

Test(comm, collectives_need_a_communicator)
{
    gcn_ctx *ctx = NULL;
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CPU;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    float x = 1.0f;
    cr_expect_eq(gcn_comm_allreduce(ctx, &x, 1), GCN_ERR_STATE);
    expect_msg(ctx, "gcn_comm_allreduce: the context is in no communicator");
    cr_expect_eq(gcn_comm_barrier(ctx), GCN_ERR_STATE);
    cr_expect_eq(gcn_comm_barrier(NULL), GCN_ERR_INVALID_ARG);
    gcn_comm_abort(ctx);
    gcn_comm_abort(NULL);
    gcn_comm_stats s;
    memset(&s, 0xff, sizeof s);
    gcn_comm_get_stats(ctx, &s);
    cr_expect(s.allreduce_calls == 0 && s.allreduce_bytes == 0 && s.exchange_calls == 0 &&
              s.exchange_bytes == 0 && s.allreduce_ms == 0.0 && s.exchange_ms == 0.0);
    gcn_ctx_free(&ctx);
}

/* ---- all-reduce --------------------------------------------------------------- */

static const int64_t reduce_sizes[] = {0, 1, 1000};
#define N_SIZES (int)(sizeof reduce_sizes / sizeof reduce_sizes[0])

typedef struct reduce_job {
    int64_t big;                 /* one more all-reduce of this size (0: none) */
    float *out[COMM_MAX_RANKS][N_SIZES + 1];
    double *out64[COMM_MAX_RANKS][N_SIZES];
    gcn_status st[COMM_MAX_RANKS][2 * N_SIZES + 1];
} reduce_job;

static float *reduce_f32(gcn_ctx *ctx, int r, int64_t n, gcn_status *st)
{
    float *buf = n > 0 ? malloc((size_t)n * sizeof *buf) : NULL;
    for (int64_t i = 0; i < n; i++)
        buf[i] = comm_value(r, i);
    *st = gcn_comm_allreduce(ctx, buf, n);
    return buf;
}

static void reduce_rank(gcn_ctx *ctx, int r, void *user)
{
    reduce_job *j = user;
    for (int k = 0; k < N_SIZES; k++) {
        int64_t n = reduce_sizes[k];
        j->out[r][k] = reduce_f32(ctx, r, n, &j->st[r][2 * k]);
        double *b = n > 0 ? malloc((size_t)n * sizeof *b) : NULL;
        for (int64_t i = 0; i < n; i++)
            b[i] = comm_value_f64(r, i);
        j->st[r][2 * k + 1] = gcn_comm_allreduce_f64(ctx, b, n);
        j->out64[r][k] = b;
    }
    if (j->big > 0)
        j->out[r][N_SIZES] = reduce_f32(ctx, r, j->big, &j->st[r][2 * N_SIZES]);
}

/* Every rank's result is the test's rank-order sum, bit for bit. */
static void check_reduce(reduce_job *j, int ranks)
{
    for (int k = 0; k <= N_SIZES; k++) {
        int64_t n = k < N_SIZES ? reduce_sizes[k] : j->big;
        float *want = malloc((size_t)(n + 1) * sizeof *want);
        double *want64 = malloc((size_t)(n + 1) * sizeof *want64);
        comm_sum(ranks, n, want);
        comm_sum_f64(ranks, n, want64);
        for (int r = 0; r < ranks; r++) {
            cr_expect_eq(j->st[r][k < N_SIZES ? 2 * k : 2 * N_SIZES], GCN_OK, "rank %d", r);
            if (n > 0)
                cr_expect_eq(memcmp(j->out[r][k], want, (size_t)n * sizeof *want), 0,
                             "%d ranks, rank %d: float sum of %lld differs", ranks, r,
                             (long long)n);
            if (k < N_SIZES) {
                cr_expect_eq(j->st[r][2 * k + 1], GCN_OK, "rank %d", r);
                if (n > 0)
                    cr_expect_eq(memcmp(j->out64[r][k], want64, (size_t)n * sizeof *want64), 0,
                                 "%d ranks, rank %d: double sum of %lld differs", ranks, r,
                                 (long long)n);
                free(j->out64[r][k]);
            }
            free(j->out[r][k]);
        }
        free(want);
        free(want64);
    }
}

Test(comm, allreduce_sums_in_rank_order_bit_for_bit, .timeout = 60)
{
    for (int ranks = 1; ranks <= COMM_MAX_RANKS; ranks++) {
        gcn_ctx *ctxs[COMM_MAX_RANKS];
        comm_cpu_ranks(ctxs, ranks, 1);
        reduce_job j = {0};
        comm_run(ctxs, ranks, reduce_rank, &j);
        check_reduce(&j, ranks);
        gcn_comm_stats s;
        gcn_comm_get_stats(ctxs[ranks - 1], &s);
        cr_expect_eq(s.allreduce_calls, 2 * N_SIZES);
        cr_expect_eq(s.allreduce_bytes, (0 + 1 + 1000) * (4 + 8));
        cr_expect_eq(s.exchange_calls, 0);
        comm_free(ctxs, ranks);
    }
}

/* Large enough that the adds run on the contexts' OpenMP threads, inside
 * each rank's own thread. */
Test(comm, allreduce_on_threaded_contexts, .timeout = 60)
{
    gcn_ctx *ctxs[3];
    comm_cpu_ranks(ctxs, 3, 2);
    reduce_job j = {.big = 200000};
    comm_run(ctxs, 3, reduce_rank, &j);
    check_reduce(&j, 3);
    comm_free(ctxs, 3);
}

/* ---- exchange ------------------------------------------------------------------ */

typedef struct exchange_job {
    int ranks;
    int skew;        /* rank that expects one float more from the last rank (-1: none) */
    bool split;      /* through gcn_comm_alltoallv_begin and _end, a barrier tried between */
    float *recv[COMM_MAX_RANKS];
    gcn_status between[COMM_MAX_RANKS], end[COMM_MAX_RANKS], stray[COMM_MAX_RANKS];
    int64_t recv_off[COMM_MAX_RANKS][COMM_MAX_RANKS + 1];
    gcn_status st[COMM_MAX_RANKS], after[COMM_MAX_RANKS];
    char msg[COMM_MAX_RANKS][512];
} exchange_job;

static void exchange_rank(gcn_ctx *ctx, int r, void *user)
{
    exchange_job *j = user;
    int64_t send_off[COMM_MAX_RANKS + 1], *recv_off = j->recv_off[r];
    comm_offsets(r, j->ranks, send_off, recv_off);
    if (r == j->skew)
        recv_off[j->ranks]++; /* the block from the last rank */
    float *send = malloc((size_t)(send_off[j->ranks] + 1) * sizeof *send);
    float *recv = malloc((size_t)(recv_off[j->ranks] + 1) * sizeof *recv);
    for (int q = 0; q < j->ranks; q++)
        for (int64_t i = 0; i < send_off[q + 1] - send_off[q]; i++)
            send[send_off[q] + i] = comm_block_value(r, q, i);
    for (int64_t i = 0; i < recv_off[j->ranks]; i++)
        recv[i] = -1.0f;
    if (j->split) {
        j->st[r] = gcn_comm_alltoallv_begin(ctx, send, send_off, recv, recv_off);
        j->between[r] = gcn_comm_barrier(ctx);
        snprintf(j->msg[r], sizeof j->msg[r], "%s", gcn_last_error(ctx));
        j->end[r] = gcn_comm_alltoallv_end(ctx);
        j->stray[r] = gcn_comm_alltoallv_end(ctx);
    } else {
        j->st[r] = gcn_comm_alltoallv(ctx, send, send_off, recv, recv_off);
        snprintf(j->msg[r], sizeof j->msg[r], "%s", gcn_last_error(ctx));
    }
    j->after[r] = gcn_comm_barrier(ctx);
    j->recv[r] = recv;
    free(send);
}

/* Blocking, and in two halves: between them another collective is a state
 * error (the exchange itself unharmed), and so is an end without a begin. */
Test(comm, alltoallv_moves_irregular_blocks, .timeout = 60)
{
    for (int k = 0; k < 2 * COMM_MAX_RANKS; k++) {
        int ranks = k / 2 + 1;
        gcn_ctx *ctxs[COMM_MAX_RANKS];
        comm_cpu_ranks(ctxs, ranks, 1);
        exchange_job j = {.ranks = ranks, .skew = -1, .split = k % 2};
        comm_run(ctxs, ranks, exchange_rank, &j);
        for (int r = 0; r < ranks; r++) {
            cr_expect_eq(j.st[r], GCN_OK, "rank %d: %s", r, j.msg[r]);
            cr_expect_eq(j.after[r], GCN_OK);
            if (j.split) {
                cr_expect_eq(j.between[r], GCN_ERR_STATE, "rank %d", r);
                cr_expect(strstr(j.msg[r], "gcn_comm_barrier: the exchange "
                                           "gcn_comm_alltoallv_begin started is not ended"),
                          "%s", j.msg[r]);
                cr_expect_eq(j.end[r], GCN_OK, "rank %d", r);
                cr_expect_eq(j.stray[r], GCN_ERR_STATE, "rank %d: a second end", r);
            }
            for (int p = 0; p < ranks; p++)
                for (int64_t i = 0; i < comm_block(p, r); i++)
                    cr_expect_eq(j.recv[r][j.recv_off[r][p] + i], comm_block_value(p, r, i),
                                 "%d ranks: rank %d, block from %d, element %lld", ranks, r, p,
                                 (long long)i);
            int64_t sent = 0;
            for (int q = 0; q < ranks; q++)
                sent += q == r ? 0 : comm_block(r, q);
            gcn_comm_stats s;
            gcn_comm_get_stats(ctxs[r], &s);
            cr_expect_eq(s.exchange_calls, 1);
            cr_expect_eq(s.exchange_bytes, sent * 4, "rank %d", r);
            cr_expect_eq(s.allreduce_calls, 0);
            free(j.recv[r]);
        }
        comm_free(ctxs, ranks);
    }
}

Test(comm, alltoallv_size_mismatch_is_a_shape_error_on_every_rank, .timeout = 60)
{
    gcn_ctx *ctxs[3];
    comm_cpu_ranks(ctxs, 3, 1);
    exchange_job j = {.ranks = 3, .skew = 1};
    comm_run(ctxs, 3, exchange_rank, &j);
    char want[128];
    snprintf(want, sizeof want, "rank 2 sends %lld floats to rank 1, which expects %lld",
             (long long)comm_block(2, 1), (long long)comm_block(2, 1) + 1);
    for (int r = 0; r < 3; r++) {
        cr_expect_eq(j.st[r], GCN_ERR_SHAPE, "rank %d: %s", r, j.msg[r]);
        cr_expect(strstr(j.msg[r], want), "rank %d: '%s' lacks '%s'", r, j.msg[r], want);
        /* nothing moved, and the communicator still works */
        for (int64_t i = 0; i < j.recv_off[r][3]; i++)
            cr_expect_eq(j.recv[r][i], -1.0f);
        cr_expect_eq(j.after[r], GCN_OK, "rank %d", r);
        free(j.recv[r]);
    }
    comm_free(ctxs, 3);
}

/* ---- sizes and sequences that do not match ---------------------------------- */

typedef struct odd_job {
    int odd_rank;
    bool barrier; /* the odd rank calls a barrier instead of an all-reduce */
    gcn_status st[COMM_MAX_RANKS], after[COMM_MAX_RANKS];
    char msg[COMM_MAX_RANKS][512];
} odd_job;

static void odd_rank(gcn_ctx *ctx, int r, void *user)
{
    odd_job *j = user;
    float buf[8] = {0};
    if (r == j->odd_rank && j->barrier)
        j->st[r] = gcn_comm_barrier(ctx);
    else
        j->st[r] = gcn_comm_allreduce(ctx, buf, r == j->odd_rank ? 7 : 8);
    snprintf(j->msg[r], sizeof j->msg[r], "%s", gcn_last_error(ctx));
    j->after[r] = gcn_comm_allreduce(ctx, buf, 8);
}

Test(comm, allreduce_size_mismatch_is_a_shape_error, .timeout = 60)
{
    gcn_ctx *ctxs[3];
    comm_cpu_ranks(ctxs, 3, 1);
    odd_job j = {.odd_rank = 2};
    comm_run(ctxs, 3, odd_rank, &j);
    for (int r = 0; r < 3; r++) {
        cr_expect_eq(j.st[r], GCN_ERR_SHAPE, "rank %d: %s", r, j.msg[r]);
        cr_expect(strstr(j.msg[r], "rank 0 sums 8 floats, rank 2 7 floats"), "%s", j.msg[r]);
        cr_expect_eq(j.after[r], GCN_OK);
    }
    comm_free(ctxs, 3);
}

Test(comm, collectives_out_of_step_are_a_state_error, .timeout = 60)
{
    gcn_ctx *ctxs[3];
    comm_cpu_ranks(ctxs, 3, 1);
    odd_job j = {.odd_rank = 0, .barrier = true};
    comm_run(ctxs, 3, odd_rank, &j);
    for (int r = 0; r < 3; r++) {
        cr_expect_eq(j.st[r], GCN_ERR_STATE, "rank %d: %s", r, j.msg[r]);
        cr_expect(strstr(j.msg[r], "out of step: rank 0 is in a barrier, rank 1 in an "
                                   "all-reduce"), "%s", j.msg[r]);
        cr_expect_eq(j.after[r], GCN_OK);
    }
    comm_free(ctxs, 3);
}

/* ---- abort and failures ------------------------------------------------------------ */

typedef struct abort_job {
    int failing;
    bool bad_args;  /* the failing rank passes bad offsets instead of aborting */
    gcn_status st[COMM_MAX_RANKS], later[COMM_MAX_RANKS];
    char msg[COMM_MAX_RANKS][512], later_msg[COMM_MAX_RANKS][512];
} abort_job;

static void abort_rank(gcn_ctx *ctx, int r, void *user)
{
    abort_job *j = user;
    float buf[4] = {1, 2, 3, 4};
    int64_t off[COMM_MAX_RANKS + 1] = {0};
    if (r != j->failing) {
        j->st[r] = gcn_comm_allreduce(ctx, buf, 4);
    } else if (j->bad_args) {
        off[1] = 2; /* the other offsets 0: decreasing */
        j->st[r] = gcn_comm_alltoallv(ctx, buf, off, buf + 2, off);
    } else {
        j->st[r] = GCN_ERROR(ctx, GCN_ERR_NUMERIC, "loss is NaN at epoch 3");
        sleep_ms(100); /* the others are waiting by now */
        gcn_comm_abort(ctx);
        gcn_comm_abort(ctx);
    }
    snprintf(j->msg[r], sizeof j->msg[r], "%s", gcn_last_error(ctx));
    j->later[r] = gcn_comm_barrier(ctx);
    snprintf(j->later_msg[r], sizeof j->later_msg[r], "%s", gcn_last_error(ctx));
}

Test(comm, abort_wakes_the_waiting_ranks, .timeout = 30)
{
    gcn_ctx *ctxs[3];
    comm_cpu_ranks(ctxs, 3, 1);
    abort_job j = {.failing = 1};
    comm_run(ctxs, 3, abort_rank, &j);
    for (int r = 0; r < 3; r++) {
        if (r != 1) {
            cr_expect_eq(j.st[r], GCN_ERR_STATE, "rank %d: %s", r, j.msg[r]);
            cr_expect(strstr(j.msg[r], "rank 1 stopped: loss is NaN at epoch 3"), "%s", j.msg[r]);
        }
        cr_expect_eq(j.later[r], GCN_ERR_STATE, "rank %d", r);
        cr_expect(strstr(j.later_msg[r], "rank 1 stopped: loss is NaN"), "%s", j.later_msg[r]);
    }
    comm_free(ctxs, 3);
}

Test(comm, a_rank_failing_on_its_own_stops_the_others, .timeout = 30)
{
    gcn_ctx *ctxs[4];
    comm_cpu_ranks(ctxs, 4, 1);
    abort_job j = {.failing = 2, .bad_args = true};
    comm_run(ctxs, 4, abort_rank, &j);
    cr_expect_eq(j.st[2], GCN_ERR_INVALID_ARG, "%s", j.msg[2]);
    cr_expect(strstr(j.msg[2], "send_off[1] = 2, [2] = 0"), "%s", j.msg[2]);
    for (int r = 0; r < 4; r++) {
        if (r != 2) {
            cr_expect_eq(j.st[r], GCN_ERR_STATE, "rank %d: %s", r, j.msg[r]);
            cr_expect(strstr(j.msg[r], "rank 2 stopped: gcn_comm_alltoallv: send_off[1] = 2"),
                      "%s", j.msg[r]);
        }
        cr_expect_eq(j.later[r], GCN_ERR_STATE);
    }
    comm_free(ctxs, 4);
}

Test(comm, abort_keeps_the_first_rank_and_message)
{
    gcn_ctx *ctxs[3];
    comm_cpu_ranks(ctxs, 3, 1);
    GCN_ERROR(ctxs[0], GCN_ERR_IO, "first failure");
    gcn_comm_abort(ctxs[0]);
    GCN_ERROR(ctxs[1], GCN_ERR_IO, "second failure");
    gcn_comm_abort(ctxs[1]);
    gcn_comm_abort(ctxs[0]);
    /* stopped: no collective waits, on any rank's thread */
    float x = 1.0f;
    cr_expect_eq(gcn_comm_allreduce(ctxs[2], &x, 1), GCN_ERR_STATE);
    expect_msg(ctxs[2], "rank 0 stopped: first failure");
    cr_expect_eq(x, 1.0f);
    cr_expect_eq(gcn_comm_barrier(ctxs[1]), GCN_ERR_STATE);
    expect_msg(ctxs[1], "rank 0 stopped: first failure");
    gcn_comm_stats s;
    gcn_comm_get_stats(ctxs[2], &s);
    cr_expect_eq(s.allreduce_calls, 0, "a failed call counts no traffic");
    comm_free(ctxs, 3);
}

/* ---- barrier ------------------------------------------------------------------------ */

typedef struct barrier_job {
    atomic_int arrived;
    int ranks, early[COMM_MAX_RANKS];
    gcn_status st[COMM_MAX_RANKS];
} barrier_job;

static void barrier_rank(gcn_ctx *ctx, int r, void *user)
{
    barrier_job *j = user;
    for (int it = 0; it < 200 && j->st[r] == GCN_OK; it++) {
        atomic_fetch_add(&j->arrived, 1);
        j->st[r] = gcn_comm_barrier(ctx);
        j->early[r] += atomic_load(&j->arrived) < (it + 1) * j->ranks;
    }
}

Test(comm, barrier_lets_no_rank_through_early, .timeout = 60)
{
    gcn_ctx *ctxs[COMM_MAX_RANKS];
    comm_cpu_ranks(ctxs, COMM_MAX_RANKS, 1);
    barrier_job j = {.ranks = COMM_MAX_RANKS};
    atomic_init(&j.arrived, 0);
    comm_run(ctxs, COMM_MAX_RANKS, barrier_rank, &j);
    for (int r = 0; r < COMM_MAX_RANKS; r++) {
        cr_expect_eq(j.st[r], GCN_OK, "rank %d", r);
        cr_expect_eq(j.early[r], 0, "rank %d passed %d barriers early", r, j.early[r]);
    }
    comm_free(ctxs, COMM_MAX_RANKS);
}

/* ---- lifetime ------------------------------------------------------------------------ */

Test(comm, contexts_free_in_any_order, .timeout = 60)
{
    static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int o = 0; o < 6; o++) {
        gcn_ctx *ctxs[3];
        comm_cpu_ranks(ctxs, 3, 1);
        reduce_job j = {0};
        comm_run(ctxs, 3, reduce_rank, &j);
        check_reduce(&j, 3);
        gcn_ctx_free(&ctxs[orders[o][0]]);
        /* the others' collectives stop at once instead of waiting for it */
        gcn_ctx *left = ctxs[orders[o][1]];
        cr_expect_eq(gcn_comm_barrier(left), GCN_ERR_STATE);
        char want[64];
        snprintf(want, sizeof want, "rank %d stopped: its context was freed", orders[o][0]);
        expect_msg(left, want);
        cr_expect_eq(gcn_ctx_ranks(left), 3);
        gcn_ctx_free(&ctxs[orders[o][1]]);
        gcn_ctx_free(&ctxs[orders[o][2]]);
    }
}

typedef struct free_job {
    gcn_ctx **ctxs;
    gcn_status st[3];
} free_job;

static void free_rank(gcn_ctx *ctx, int r, void *user)
{
    free_job *j = user;
    if (r == 1) {
        sleep_ms(100);
        gcn_ctx_free(&j->ctxs[1]);
    } else {
        j->st[r] = gcn_comm_barrier(ctx);
    }
}

Test(comm, a_freed_rank_wakes_the_waiting_ones, .timeout = 30)
{
    gcn_ctx *ctxs[3];
    comm_cpu_ranks(ctxs, 3, 1);
    free_job j = {.ctxs = ctxs};
    comm_run(ctxs, 3, free_rank, &j);
    cr_expect_null(ctxs[1]);
    cr_expect_eq(j.st[0], GCN_ERR_STATE);
    cr_expect_eq(j.st[2], GCN_ERR_STATE);
    expect_msg(ctxs[2], "rank 1 stopped: its context was freed");
    comm_free(ctxs, 3);
}

/* ---- NCCL without a GPU ------------------------------------------------------------ */

Test(comm, nccl_that_cannot_be_loaded_is_unsupported)
{
    cr_assert_eq(setenv("GCN_NCCL_LIBRARY", "/nonexistent/libnccl-missing.so", 1), 0);
    gcn_ctx *ctxs[2];
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CPU;
    for (int r = 0; r < 2; r++)
        cr_assert_eq(gcn_ctx_create(&ctxs[r], &o), GCN_OK);
    cr_expect_eq(gcn_comm_init(ctxs, 2, GCN_COMM_NCCL), GCN_ERR_UNSUPPORTED);
#if GCN_WITH_CUDA
    expect_msg(ctxs[0], "NCCL cannot be loaded (/nonexistent/libnccl-missing.so: ");
    expect_msg(ctxs[0], "training on several GPUs needs it; set GCN_NCCL_LIBRARY");
#else
    expect_msg(ctxs[0], "NCCL communicator: this build has no CUDA");
#endif
    cr_expect_eq(gcn_ctx_ranks(ctxs[0]), 1);
    cr_expect_eq(gcn_ctx_ranks(ctxs[1]), 1);
    comm_free(ctxs, 2);
}

Test(comm, nccl_on_cpu_contexts_is_a_device_error)
{
    gcn_ctx *ctxs[2];
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CPU;
    for (int r = 0; r < 2; r++)
        cr_assert_eq(gcn_ctx_create(&ctxs[r], &o), GCN_OK);
    gcn_status st = gcn_comm_init(ctxs, 2, GCN_COMM_NCCL);
    if (!GCN_WITH_CUDA || strstr(gcn_last_error(ctxs[0]), "NCCL cannot be loaded")) {
        cr_expect_eq(st, GCN_ERR_UNSUPPORTED);
        char why[512];
        snprintf(why, sizeof why, "%s", gcn_last_error(ctxs[0]));
        comm_free(ctxs, 2);
        cr_skip_test("no NCCL to load here: %s", why);
    }
    cr_expect_eq(st, GCN_ERR_DEVICE, "%s", gcn_last_error(ctxs[0]));
    expect_msg(ctxs[0], "NCCL communicator: rank 0 is on the CPU");
    cr_expect_eq(gcn_ctx_ranks(ctxs[0]), 1);
    comm_free(ctxs, 2);
}
