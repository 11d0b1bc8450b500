/* The communicator's traffic counts and transfer times (gcn_comm_stats) on
 * CPU contexts joined by the LOCAL transport: calls, bytes and the host ms
 * of each collective's copies and adds, without the wait for late peers,
 * and nothing for barriers or failed calls. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "comm_check.h"

#define RANKS 3
#define REDUCE_N 100000
#define LATE_MS 300 /* how long the late rank sleeps before each collective */

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Each rank's stats before any call, after a barrier, after an exchange
 * and after an all-reduce; the late rank sleeps before the last two. */
typedef struct stats_job {
    int late; /* -1: none */
    gcn_comm_stats at[RANKS][4];
    gcn_status st[RANKS][3];
} stats_job;

static void stats_rank(gcn_ctx *ctx, int r, void *user)
{
    stats_job *j = user;
    int64_t send_off[RANKS + 1], recv_off[RANKS + 1];
    comm_offsets(r, RANKS, send_off, recv_off);
    float *send = calloc((size_t)send_off[RANKS] + 1, sizeof *send);
    float *recv = calloc((size_t)recv_off[RANKS] + 1, sizeof *recv);
    float *buf = calloc(REDUCE_N, sizeof *buf);
    gcn_comm_get_stats(ctx, &j->at[r][0]);
    j->st[r][0] = gcn_comm_barrier(ctx);
    gcn_comm_get_stats(ctx, &j->at[r][1]);
    if (r == j->late)
        sleep_ms(LATE_MS);
    j->st[r][1] = gcn_comm_alltoallv(ctx, send, send_off, recv, recv_off);
    gcn_comm_get_stats(ctx, &j->at[r][2]);
    if (r == j->late)
        sleep_ms(LATE_MS);
    j->st[r][2] = gcn_comm_allreduce(ctx, buf, REDUCE_N);
    gcn_comm_get_stats(ctx, &j->at[r][3]);
    free(send);
    free(recv);
    free(buf);
}

static void expect_zero(const gcn_comm_stats *s, int r, const char *when)
{
    cr_expect(s->allreduce_calls == 0 && s->allreduce_bytes == 0 && s->exchange_calls == 0 &&
              s->exchange_bytes == 0, "rank %d %s: traffic counted", r, when);
    cr_expect(s->allreduce_ms == 0.0 && s->exchange_ms == 0.0,
              "rank %d %s: %g ms all-reduce, %g ms exchange", r, when, s->allreduce_ms,
              s->exchange_ms);
}

static void run_stats(stats_job *j)
{
    gcn_ctx *ctxs[RANKS];
    comm_cpu_ranks(ctxs, RANKS, 1);
    comm_run(ctxs, RANKS, stats_rank, j);
    comm_free(ctxs, RANKS);
    for (int r = 0; r < RANKS; r++)
        for (int k = 0; k < 3; k++)
            cr_assert_eq(j->st[r][k], GCN_OK, "rank %d, call %d", r, k);
}

Test(comm_stats, collectives_count_their_bytes_and_time_their_transfers, .timeout = 60)
{
    stats_job j = {.late = -1};
    run_stats(&j);
    for (int r = 0; r < RANKS; r++) {
        const gcn_comm_stats *s = j.at[r];
        expect_zero(&s[0], r, "before any collective");
        expect_zero(&s[1], r, "after a barrier");
        int64_t sent = 0;
        for (int q = 0; q < RANKS; q++)
            sent += q == r ? 0 : comm_block(r, q);
        cr_expect_eq(s[2].exchange_calls, 1, "rank %d", r);
        cr_expect_eq(s[2].exchange_bytes, sent * 4, "rank %d", r);
        cr_expect(isfinite(s[2].exchange_ms) && s[2].exchange_ms >= 0.0, "rank %d: %g ms", r,
                  s[2].exchange_ms);
        cr_expect(s[2].allreduce_calls == 0 && s[2].allreduce_ms == 0.0, "rank %d", r);
        /* the all-reduce adds its own and leaves the exchange's */
        cr_expect_eq(s[3].allreduce_calls, 1, "rank %d", r);
        cr_expect_eq(s[3].allreduce_bytes, REDUCE_N * 4, "rank %d", r);
        cr_expect(isfinite(s[3].allreduce_ms) && s[3].allreduce_ms > 0.0,
                  "rank %d: %g ms to sum %d ranks' %d floats", r, s[3].allreduce_ms, RANKS,
                  REDUCE_N);
        cr_expect(s[3].exchange_calls == 1 && s[3].exchange_bytes == sent * 4 &&
                  s[3].exchange_ms == s[2].exchange_ms, "rank %d", r);
    }
}

/* Ranks 0 and 1 wait LATE_MS for rank 2 in each collective; the time is
 * that of the copies only. */
Test(comm_stats, the_wait_for_a_late_rank_is_not_counted, .timeout = 60)
{
    stats_job j = {.late = 2};
    run_stats(&j);
    for (int r = 0; r < RANKS; r++) {
        const gcn_comm_stats *s = &j.at[r][3];
        cr_expect(isfinite(s->exchange_ms) && s->exchange_ms >= 0.0 && s->exchange_ms < LATE_MS,
                  "rank %d: exchange %g ms", r, s->exchange_ms);
        cr_expect(isfinite(s->allreduce_ms) && s->allreduce_ms > 0.0 &&
                  s->allreduce_ms < LATE_MS, "rank %d: all-reduce %g ms", r, s->allreduce_ms);
    }
}

/* A call every rank fails (sizes that do not match) counts nothing, its
 * time included. */
typedef struct failed_job {
    gcn_status st[RANKS];
    gcn_comm_stats s[RANKS];
} failed_job;

static void failed_rank(gcn_ctx *ctx, int r, void *user)
{
    failed_job *j = user;
    float buf[8] = {0};
    j->st[r] = gcn_comm_allreduce(ctx, buf, r == 2 ? 7 : 8);
    gcn_comm_get_stats(ctx, &j->s[r]);
}

Test(comm_stats, a_failed_collective_counts_no_time, .timeout = 60)
{
    gcn_ctx *ctxs[RANKS];
    comm_cpu_ranks(ctxs, RANKS, 1);
    failed_job j = {0};
    comm_run(ctxs, RANKS, failed_rank, &j);
    comm_free(ctxs, RANKS);
    for (int r = 0; r < RANKS; r++) {
        cr_expect_eq(j.st[r], GCN_ERR_SHAPE, "rank %d", r);
        expect_zero(&j.s[r], r, "after a failed all-reduce");
    }
}
