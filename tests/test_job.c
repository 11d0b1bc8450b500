/* Rank processes of a job: the launchers' environment, the heartbeat's
 * judgement on a clock the test drives, and the rendezvous file between
 * processes this test forks (success, a missing peer, a stale file, a job
 * of another size, a peer that fails or is killed), and what joining a
 * communicator across processes refuses. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/heartbeat.h"
#include "gcn.h"

/* ---- the launchers' environment ------------------------------------------------ */

static gcn_status parse(const char *const *env, gcn_job *job, char *err)
{
    return gcn_job_from_env(env, job, err, 256);
}

Test(job_env, each_launcher_gives_rank_size_and_local_rank)
{
    const char *torchrun[] = {"RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_PORT=29500",
                              "TORCHELASTIC_RUN_ID=abc", NULL};
    const char *ompi[] = {"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8",
                          "OMPI_COMM_WORLD_LOCAL_RANK=1", "PMIX_NAMESPACE=prterun-x-1", NULL};
    const char *slurm[] = {"SLURM_PROCID=2", "SLURM_NTASKS=3", "SLURM_LOCALID=0",
                           "SLURM_JOB_ID=77", "SLURM_STEP_ID=1", NULL};
    const struct {
        const char *const *env;
        gcn_launcher launcher;
        int rank, ranks, local;
        const char *token;
    } cases[] = {
        {torchrun, GCN_LAUNCHER_TORCHRUN, 3, 4, 1, "TORCHELASTIC_RUN_ID=abc/MASTER_PORT=29500"},
        {ompi, GCN_LAUNCHER_OPENMPI, 5, 8, 1, "PMIX_NAMESPACE=prterun-x-1"},
        {slurm, GCN_LAUNCHER_SLURM, 2, 3, 0, "SLURM_JOB_ID=77/SLURM_STEP_ID=1"},
    };
    for (int i = 0; i < 3; i++) {
        gcn_job job;
        char err[256];
        cr_assert_eq(parse(cases[i].env, &job, err), GCN_OK, "%s", err);
        cr_expect_eq(job.launcher, cases[i].launcher);
        cr_expect_eq(job.rank, cases[i].rank);
        cr_expect_eq(job.ranks, cases[i].ranks);
        cr_expect_eq(job.local_rank, cases[i].local);
        cr_expect_str_eq(job.token, cases[i].token);
    }
}

Test(job_env, the_launcher_closest_to_the_process_wins)
{
    /* torchrun started by srun: torchrun's worker, not srun's task */
    const char *both[] = {"SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_LOCALID=0",
                          "RANK=2", "WORLD_SIZE=4", "LOCAL_RANK=2", NULL};
    /* mpirun inside an allocation: Open MPI's rank, not the batch script's */
    const char *mpi[] = {"SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_LOCALID=0",
                         "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2",
                         "OMPI_COMM_WORLD_LOCAL_RANK=1", "GCN_JOB_ID=mine", NULL};
    gcn_job job;
    char err[256];
    cr_assert_eq(parse(both, &job, err), GCN_OK, "%s", err);
    cr_expect_eq(job.launcher, GCN_LAUNCHER_TORCHRUN);
    cr_expect_eq(job.rank, 2);
    cr_assert_eq(parse(mpi, &job, err), GCN_OK, "%s", err);
    cr_expect_eq(job.launcher, GCN_LAUNCHER_OPENMPI);
    cr_expect_eq(job.rank, 1);
    cr_expect_str_eq(job.token, "mine", "GCN_JOB_ID names the job over the launcher's");
}

Test(job_env, malformed_values_are_one_clear_error)
{
    const struct {
        const char *env[4];
        gcn_status st;
        const char *says;
    } cases[] = {
        {{"RANK=1", "WORLD_SIZE=2", NULL}, GCN_ERR_INVALID_ARG, "LOCAL_RANK is not"},
        {{"RANK=one", "WORLD_SIZE=2", "LOCAL_RANK=0"}, GCN_ERR_INVALID_ARG,
         "RANK=one: not a decimal integer"},
        {{"RANK=2", "WORLD_SIZE=2", "LOCAL_RANK=0"}, GCN_ERR_INVALID_ARG,
         "RANK=2: expected 0 to 1"},
        {{"RANK=0", "WORLD_SIZE=0", "LOCAL_RANK=0"}, GCN_ERR_INVALID_ARG, "WORLD_SIZE=0"},
        {{"RANK=0", "WORLD_SIZE=2x", "LOCAL_RANK=0"}, GCN_ERR_INVALID_ARG,
         "WORLD_SIZE=2x: not a decimal integer"},
        {{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=-1"}, GCN_ERR_INVALID_ARG,
         "SLURM_LOCALID=-1"},
        {{"OMPI_COMM_WORLD_RANK=", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=0"},
         GCN_ERR_INVALID_ARG, "OMPI_COMM_WORLD_RANK=: not a decimal integer"},
        {{"PATH=/bin", NULL}, GCN_ERR_NOT_FOUND, "no launcher's variables"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gcn_job job;
        char err[256];
        cr_expect_eq(parse(cases[i].env, &job, err), cases[i].st, "case %zu", i);
        cr_expect(strstr(err, cases[i].says), "case %zu: %s", i, err);
        cr_expect(!strchr(err, '\n'), "one line: %s", err);
    }
}

/* ---- heartbeats on a driven clock ------------------------------------------------- */

Test(heartbeat, a_file_reads_back_as_written)
{
    hb_file h = {.session = "0a1b", .beat = 42, .state = HB_FAILED, .blame = 3,
                 .why = "out of memory"}, back;
    char text[1024];
    hb_format(&h, text, sizeof text);
    cr_assert(hb_parse(text, &back));
    cr_expect_str_eq(back.session, "0a1b");
    cr_expect_eq(back.beat, 42);
    cr_expect_eq(back.state, HB_FAILED);
    cr_expect_eq(back.blame, 3);
    cr_expect_str_eq(back.why, "out of memory");
    cr_expect(!hb_parse("gcn-heartbeat 1\nsession x\nbeat 1\nstate sleeping\nblame -1\n", &back));
    cr_expect(!hb_parse("hello", &back));
}

Test(heartbeat, a_silent_peer_is_given_up_after_the_timeout_only)
{
    hb_peer p;
    hb_file h = {.session = "s", .beat = 1, .state = HB_ALIVE, .blame = -1};
    char why[256];
    hb_peer_start(&p, 100.0);
    cr_expect_eq(hb_judge(&p, 2, &h, 100.5, 10.0, why, sizeof why), -1);
    for (double t = 101.0; t < 200.0; t += 1.0) { /* beating every second */
        h.beat++;
        cr_expect_eq(hb_judge(&p, 2, &h, t, 10.0, why, sizeof why), -1, "t %g", t);
    }
    /* the count stops at t = 199: 10 s later it is still alive, just after it is not */
    cr_expect_eq(hb_judge(&p, 2, &h, 209.0, 10.0, why, sizeof why), -1);
    cr_expect_eq(hb_judge(&p, 2, NULL, 209.5, 10.0, why, sizeof why), 2);
    cr_expect(strstr(why, "no heartbeat for 10.5 s"), "%s", why);
}

Test(heartbeat, a_peer_that_never_beats_is_given_up_from_the_watch_start)
{
    hb_peer p;
    char why[256];
    hb_peer_start(&p, 0.0);
    cr_expect_eq(hb_judge(&p, 1, NULL, 4.9, 5.0, why, sizeof why), -1);
    cr_expect_eq(hb_judge(&p, 1, NULL, 5.1, 5.0, why, sizeof why), 1);
    cr_expect(strstr(why, "no heartbeat file"), "%s", why);
}

Test(heartbeat, failure_is_named_at_once_and_blame_passes_on)
{
    hb_peer p;
    char why[256];
    hb_file failed = {.session = "s", .beat = 7, .state = HB_FAILED, .blame = -1,
                      .why = "CUDA out of memory"};
    hb_peer_start(&p, 0.0);
    cr_expect_eq(hb_judge(&p, 1, &failed, 0.1, 60.0, why, sizeof why), 1);
    cr_expect(strstr(why, "CUDA out of memory"), "%s", why);
    /* rank 0 stopped because rank 3 went silent: rank 3 is the one named */
    hb_file blamed = {.session = "s", .beat = 9, .state = HB_FAILED, .blame = 3,
                      .why = "no heartbeat for 60.2 s"};
    hb_peer_start(&p, 0.0);
    cr_expect_eq(hb_judge(&p, 0, &blamed, 0.1, 60.0, why, sizeof why), 3);
    cr_expect_str_eq(why, "no heartbeat for 60.2 s");
    /* a peer that finished is never given up */
    hb_file done = {.session = "s", .beat = 9, .state = HB_DONE, .blame = -1};
    hb_peer_start(&p, 0.0);
    cr_expect_eq(hb_judge(&p, 1, &done, 0.1, 1.0, why, sizeof why), -1);
    cr_expect_eq(hb_judge(&p, 1, NULL, 100.0, 1.0, why, sizeof why), -1);
}

/* ---- the rendezvous between processes -------------------------------------------- */

static gcn_ctx *cpu_ctx(void)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CPU;
    o.threads = 1;
    gcn_ctx *ctx = NULL;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    return ctx;
}

static gcn_job job_of(int rank, int ranks, const char *token)
{
    gcn_job j = {.launcher = GCN_LAUNCHER_TORCHRUN, .rank = rank, .ranks = ranks};
    snprintf(j.token, sizeof j.token, "%s", token);
    return j;
}

static void test_id(gcn_comm_id *id)
{
    for (int i = 0; i < GCN_COMM_ID_BYTES; i++)
        id->bytes[i] = (unsigned char)(i * 7 + 3);
}

/* What a forked rank tells its parent through its exit status. */
enum { CHILD_OK = 0, CHILD_OPEN_FAILED = 10, CHILD_WRONG_ID = 11 };

/* A forked rank: joins, checks the id it got, then (stay_s) keeps beating
 * before it closes with ok. */
static pid_t fork_rank(const char *path, gcn_job job, double timeout, double stay_s, bool ok)
{
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid > 0)
        return pid;
    gcn_ctx *ctx = cpu_ctx();
    gcn_rendezvous_opts o = gcn_rendezvous_default_opts();
    o.timeout_s = timeout;
    gcn_comm_id id, want;
    test_id(&want);
    if (job.rank == 0)
        id = want;
    gcn_rendezvous *r = NULL;
    gcn_status st = gcn_rendezvous_open(ctx, path, &job, &o, &id, &r);
    int code = st != GCN_OK ? CHILD_OPEN_FAILED + 10 * (int)st
               : memcmp(&id, &want, sizeof id) ? CHILD_WRONG_ID
                                               : CHILD_OK;
    if (st == GCN_OK) {
        struct timespec t = {(time_t)stay_s, (long)((stay_s - (double)(time_t)stay_s) * 1e9)};
        nanosleep(&t, NULL);
        gcn_rendezvous_close(&r, ok, "rank 1's own error");
    }
    gcn_ctx_free(&ctx);
    _exit(code);
}

/* Joins in this process as `job` with the given timeout (rank 0 publishes
 * the test's id). */
static gcn_status open_here(gcn_ctx *ctx, const char *path, gcn_job job, double timeout,
                            gcn_rendezvous **r)
{
    gcn_rendezvous_opts o = gcn_rendezvous_default_opts();
    o.timeout_s = timeout;
    gcn_comm_id id;
    test_id(&id);
    return gcn_rendezvous_open(ctx, path, &job, &o, &id, r);
}

static int wait_code(pid_t pid)
{
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

/* A fresh folder for one test's files. */
static void temp_dir(char *dir, size_t size)
{
    snprintf(dir, size, "%s/gcn_job_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert(mkdtemp(dir));
}

static void remove_files(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(rendezvous, two_processes_meet_and_share_the_id, .timeout = 20)
{
    char dir[256], path[300];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/job.rdv", dir);
    pid_t a = fork_rank(path, job_of(1, 2, "t1"), 5.0, 0.0, true);
    pid_t b = fork_rank(path, job_of(0, 2, "t1"), 5.0, 0.0, true);
    cr_expect_eq(wait_code(a), CHILD_OK);
    cr_expect_eq(wait_code(b), CHILD_OK);
    remove_files(dir);
}

Test(rendezvous, a_peer_that_never_comes_is_named_after_the_timeout, .timeout = 20)
{
    char dir[256], path[300];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/job.rdv", dir);
    gcn_ctx *ctx = cpu_ctx();
    gcn_rendezvous *r = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_expect_eq(open_here(ctx, path, job_of(0, 3, "t2"), 0.4, &r), GCN_ERR_STATE);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    cr_expect(s >= 0.4 && s < 2.0, "gave up after %.2f s", s);
    cr_expect(strstr(gcn_last_error(ctx), "ranks 1, 2 of 3 did not come within"), "%s",
              gcn_last_error(ctx));
    cr_expect_null(r);
    /* a rank whose rank 0 never comes */
    char other[300];
    snprintf(other, sizeof other, "%s/none.rdv", dir);
    cr_expect_eq(open_here(ctx, other, job_of(1, 2, "t2"), 0.4, &r), GCN_ERR_STATE);
    cr_expect(strstr(gcn_last_error(ctx), "rank 0 did not come"), "%s", gcn_last_error(ctx));
    gcn_ctx_free(&ctx);
    remove_files(dir);
}

Test(rendezvous, a_stale_file_is_waited_out_then_refused, .timeout = 20)
{
    char dir[256], path[300];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/job.rdv", dir);
    /* an earlier job's rank 0 left its file */
    pid_t old = fork_rank(path, job_of(0, 1, "earlier"), 5.0, 0.0, true);
    cr_assert_eq(wait_code(old), CHILD_OK);
    gcn_ctx *ctx = cpu_ctx();
    gcn_rendezvous *r = NULL;
    cr_expect_eq(open_here(ctx, path, job_of(1, 2, "now"), 0.4, &r), GCN_ERR_FORMAT);
    cr_expect(strstr(gcn_last_error(ctx), "is from another job (its job is \"earlier\", this "
                                          "one's \"now\")"), "%s", gcn_last_error(ctx));
    /* while this job's rank 0 replaces it in time, the stale file is no obstacle */
    pid_t lead = fork_rank(path, job_of(0, 2, "now"), 5.0, 0.0, true);
    pid_t next = fork_rank(path, job_of(1, 2, "now"), 5.0, 0.0, true);
    cr_expect_eq(wait_code(lead), CHILD_OK);
    cr_expect_eq(wait_code(next), CHILD_OK);
    gcn_ctx_free(&ctx);
    remove_files(dir);
}

Test(rendezvous, a_job_of_another_size_is_refused_at_once, .timeout = 20)
{
    char dir[256], path[300];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/job.rdv", dir);
    pid_t lead = fork_rank(path, job_of(0, 2, "t3"), 1.0, 0.0, true);
    gcn_ctx *ctx = cpu_ctx();
    gcn_rendezvous *r = NULL;
    cr_expect_eq(open_here(ctx, path, job_of(1, 3, "t3"), 5.0, &r), GCN_ERR_INVALID_ARG);
    cr_expect(strstr(gcn_last_error(ctx), "rank 0 started a job of 2 ranks, this process one "
                                          "of 3"), "%s", gcn_last_error(ctx));
    cr_expect_eq(wait_code(lead), CHILD_OPEN_FAILED + 10 * GCN_ERR_STATE,
                 "rank 0 gave up on its rank 1");
    gcn_ctx_free(&ctx);
    remove_files(dir);
}

/* Joins rank 0 of two with a forked rank 1 that stays stay_s and closes
 * (ok) or is killed (kill_after_s >= 0); returns the rank the watcher
 * names and how long after the fork it took. */
static int watch_peer(double timeout, double stay_s, bool ok, double kill_after_s, char *why,
                      double *took)
{
    char dir[256], path[300];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/job.rdv", dir);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t peer = fork_rank(path, job_of(1, 2, "w"), timeout, stay_s, ok);
    gcn_ctx *ctx = cpu_ctx();
    gcn_rendezvous *r = NULL;
    cr_assert_eq(open_here(ctx, path, job_of(0, 2, "w"), timeout, &r), GCN_OK, "%s",
                 gcn_last_error(ctx));
    if (kill_after_s >= 0.0) {
        struct timespec t = {0, (long)(kill_after_s * 1e9)};
        nanosleep(&t, NULL);
        kill(peer, SIGKILL);
    }
    int failed = gcn_rendezvous_wait_failed(r, why, 256);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *took = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    wait_code(peer);
    gcn_rendezvous_close(&r, true, NULL);
    gcn_ctx_free(&ctx);
    remove_files(dir);
    return failed;
}

Test(rendezvous, a_killed_peer_is_named_within_the_timeout, .timeout = 20)
{
    char why[256];
    double took;
    cr_expect_eq(watch_peer(0.5, 30.0, true, 0.2, why, &took), 1);
    cr_expect(strstr(why, "no heartbeat for"), "%s", why);
    cr_expect(took < 0.2 + 0.5 + 0.5, "named after %.2f s", took);
}

Test(rendezvous, a_peer_that_fails_is_named_at_once_with_its_error, .timeout = 20)
{
    char why[256];
    double took;
    cr_expect_eq(watch_peer(5.0, 0.1, false, -1.0, why, &took), 1);
    cr_expect(strstr(why, "rank 1's own error"), "%s", why);
    cr_expect(took < 2.0, "named after %.2f s, before the 5 s timeout", took);
}

Test(rendezvous, a_peer_that_finishes_is_not_a_failure, .timeout = 20)
{
    char why[256];
    double took;
    cr_expect_eq(watch_peer(0.5, 0.1, true, -1.0, why, &took), -1);
}

/* ---- joining a communicator across processes --------------------------------------- */

Test(comm_join, needs_a_gpu_and_a_rank_within_the_job)
{
    gcn_ctx *ctx = cpu_ctx();
    gcn_comm_id id;
    test_id(&id);
    cr_expect_eq(gcn_comm_join(ctx, 2, 2, &id), GCN_ERR_INVALID_ARG);
    cr_expect_eq(gcn_comm_join(ctx, 0, 0, &id), GCN_ERR_INVALID_ARG);
    cr_expect_eq(gcn_comm_join(ctx, 0, 2, NULL), GCN_ERR_INVALID_ARG);
    cr_expect_eq(gcn_comm_join(ctx, 0, 2, &id), GCN_ERR_DEVICE);
    cr_expect(strstr(gcn_last_error(ctx), "NCCL needs a GPU per rank"), "%s",
              gcn_last_error(ctx));
    cr_expect_eq(gcn_ctx_ranks(ctx), 1, "nothing attached");
    /* without a communicator, stopping and asking for NCCL's error do nothing */
    char msg[64] = "";
    gcn_comm_stop(ctx, 1, "gone");
    cr_expect_eq(gcn_comm_async_error(ctx, msg, sizeof msg), GCN_OK);
    cr_expect_str_eq(msg, "");
    gcn_ctx_free(&ctx);
}
