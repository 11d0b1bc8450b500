/* gcntrain as rank processes on several GPUs, started as a launcher
 * would (RANK, WORLD_SIZE, LOCAL_RANK, one process each): they train the
 * one-context model, their checkpoint resumes on one context and as a job
 * to the uninterrupted run's losses, their predictions are one context's,
 * and a rank killed mid-run stops the others with exit status 1 within the
 * timeout.  Skipped without two GPUs or NCCL. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gcn.h"
#include "tool_run.h"

#define SBM "sbm:nodes=20000,degree=10,homophily=0.9,classes=8"

/* Skips unless two GPUs and NCCL are there. */
static void require_two_gpus_and_nccl(void)
{
    if (gcn_cuda_device_count() < 2)
        cr_skip_test("rank processes on GPUs need two CUDA devices");
    gcn_ctx *ctx = NULL;
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CUDA;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    gcn_comm_id id;
    gcn_status st = gcn_comm_new_id(ctx, &id);
    gcn_ctx_free(&ctx);
    if (st == GCN_ERR_UNSUPPORTED)
        cr_skip_test("NCCL cannot be loaded (set GCN_NCCL_LIBRARY)");
    cr_assert_eq(st, GCN_OK);
}

/* Rank `rank` of `ranks` with the launcher's variables of torchrun. */
static void start_rank(tool_proc *p, int rank, int ranks, const char *const *args)
{
    char v[16];
    snprintf(v, sizeof v, "%d", rank);
    setenv("RANK", v, 1);
    setenv("LOCAL_RANK", v, 1);
    snprintf(v, sizeof v, "%d", ranks);
    setenv("WORLD_SIZE", v, 1);
    tool_start(p, "gcntrain", args);
}

/* The "loss" of every epoch line of a log, in order; returns how many. */
static int losses(const char *path, double *out, int max)
{
    static char text[1 << 20];
    tool_slurp(path, text, sizeof text);
    int n = 0;
    for (const char *at = strstr(text, "\"epoch\":"); at && n < max;
         at = strstr(at + 1, "\"epoch\":")) {
        const char *l = strstr(at, "\"loss\":");
        cr_assert(l, "%s", text);
        out[n++] = strtod(l + 7, NULL);
    }
    return n;
}

Test(gpu_job, two_rank_processes_train_the_one_context_model, .timeout = 300)
{
    require_two_gpus_and_nccl();
    char dir[] = "/tmp/gcn_gpu_job_XXXXXX", rdv[64], ref[64], log[64];
    cr_assert(mkdtemp(dir));
    snprintf(rdv, sizeof rdv, "%s/rdv", dir);
    snprintf(ref, sizeof ref, "%s/ref.jsonl", dir);
    snprintf(log, sizeof log, "%s/job.jsonl", dir);
    tool_result r;
    tool_run(&r, "gcntrain",
             (const char *[]){"models/gcn.json", "--dataset", SBM, "--epochs", "20", "--runs",
                              "1", "--device", "cuda:0", "--reorder", "parts:2", "--cache-dir",
                              dir, "--log", ref, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    setenv("GCN_JOB_ID", dir, 1);
    const char *args[] = {"models/gcn.json", "--dataset", SBM, "--epochs", "20", "--runs", "1",
                          "--rendezvous", rdv, "--rank-timeout", "30", "--cache-dir", dir,
                          "--log", log, NULL};
    tool_proc p[2];
    start_rank(&p[1], 1, 2, args);
    start_rank(&p[0], 0, 2, args);
    for (int k = 0; k < 2; k++) {
        tool_wait(&p[k], &r);
        cr_assert_eq(r.code, 0, "rank %d: %s", k, r.err);
        cr_assert(strstr(r.err, "joined"), "%s", r.err);
        if (k == 0)
            cr_assert(strstr(r.out, "partition  2 rank processes (torchrun launcher, NCCL)"),
                      "%s", r.out);
        else
            cr_assert_str_eq(r.out, "", "rank 1 prints nothing on stdout");
    }
    double a[20], b[20];
    cr_assert_eq(losses(ref, a, 20), 20);
    cr_assert_eq(losses(log, b, 20), 20);
    for (int e = 0; e < 20; e++)
        cr_expect(fabs(a[e] - b[e]) <= 1e-4 * fabs(a[e]), "epoch %d: %.9g against %.9g",
                  e + 1, b[e], a[e]);
    tool_remove_dir(dir);
}

/* The losses of epochs from+1 .. from+n of `log` against the reference's. */
static void expect_losses(const char *ref, const char *log, int from, int n)
{
    double a[20], b[20];
    cr_assert_eq(losses(ref, a, 20), 20);
    cr_assert_eq(losses(log, b, 20), n, "%s", log);
    for (int e = 0; e < n; e++)
        cr_expect(fabs(a[from + e] - b[e]) <= 1e-4 * fabs(a[from + e]),
                  "%s epoch %d: %.9g against %.9g", log, from + e + 1, b[e], a[from + e]);
}

/* Two rank processes with `args` (a job of its own, `job` its id); both
 * exit 0. */
static void run_job(const char *job, const char *const *args)
{
    setenv("GCN_JOB_ID", job, 1);
    tool_proc p[2];
    tool_result r;
    start_rank(&p[1], 1, 2, args);
    start_rank(&p[0], 0, 2, args);
    for (int k = 0; k < 2; k++) {
        tool_wait(&p[k], &r);
        cr_assert_eq(r.code, 0, "rank %d: %s", k, r.err);
    }
}

Test(gpu_job, a_jobs_checkpoint_resumes_on_one_context_and_as_a_job, .timeout = 300)
{
    require_two_gpus_and_nccl();
    char dir[] = "/tmp/gcn_gpu_job_XXXXXX", ref[64], refp[64], ck[64], rdv[2][64], job[2][64];
    char log[3][64], pred[64];
    cr_assert(mkdtemp(dir));
    snprintf(ref, sizeof ref, "%s/ref.jsonl", dir);
    snprintf(refp, sizeof refp, "%s/ref.csv", dir);
    snprintf(ck, sizeof ck, "%s/job.ckpt", dir);
    snprintf(pred, sizeof pred, "%s/job.csv", dir);
    for (int k = 0; k < 2; k++) {
        snprintf(rdv[k], sizeof rdv[k], "%s/rdv%d", dir, k);
        snprintf(job[k], sizeof job[k], "%s/job%d", dir, k);
    }
    for (int k = 0; k < 3; k++)
        snprintf(log[k], sizeof log[k], "%s/part%d.jsonl", dir, k);
    tool_result r;
    tool_run(&r, "gcntrain",
             (const char *[]){"models/gcn.json", "--dataset", SBM, "--epochs", "20", "--runs",
                              "1", "--device", "cuda:0", "--reorder", "parts:2", "--cache-dir",
                              dir, "--log", ref, "--predict", refp, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);

    /* 10 epochs as a job, a checkpoint every 5 */
    run_job(job[0], (const char *[]){"models/gcn.json", "--dataset", SBM, "--epochs", "10",
                                     "--runs", "1", "--rendezvous", rdv[0], "--rank-timeout",
                                     "30", "--cache-dir", dir, "--log", log[0], "--save", ck,
                                     "--save-every", "5", NULL});
    expect_losses(ref, log[0], 0, 10);

    /* its checkpoint resumed on one context */
    tool_run(&r, "gcntrain",
             (const char *[]){"models/gcn.json", "--dataset", SBM, "--epochs", "20", "--runs",
                              "1", "--device", "cuda:0", "--reorder", "parts:2", "--cache-dir",
                              dir, "--log", log[1], "--resume", ck, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    expect_losses(ref, log[1], 10, 10);

    /* and as a job, which predicts */
    run_job(job[1], (const char *[]){"models/gcn.json", "--dataset", SBM, "--epochs", "20",
                                     "--runs", "1", "--rendezvous", rdv[1], "--rank-timeout",
                                     "30", "--cache-dir", dir, "--log", log[2], "--resume", ck,
                                     "--predict", pred, NULL});
    expect_losses(ref, log[2], 10, 10);
    cr_assert_eq(tool_expect_same_predictions(refp, pred, 1e-4, 20), 20000);
    tool_remove_dir(dir);
}

Test(gpu_job, a_killed_rank_stops_the_others_within_the_timeout, .timeout = 300)
{
    require_two_gpus_and_nccl();
    char dir[] = "/tmp/gcn_gpu_job_XXXXXX", rdv[64], log[64];
    cr_assert(mkdtemp(dir));
    snprintf(rdv, sizeof rdv, "%s/rdv", dir);
    snprintf(log, sizeof log, "%s/job.jsonl", dir);
    setenv("GCN_JOB_ID", dir, 1);
    const char *args[] = {"models/gcn.json", "--dataset", SBM, "--epochs", "1000000", "--runs",
                          "1", "--rendezvous", rdv, "--rank-timeout", "5", "--cache-dir", dir,
                          "--log", log, NULL};
    tool_proc p[2];
    start_rank(&p[1], 1, 2, args);
    start_rank(&p[0], 0, 2, args);
    for (int i = 0; i < 1200 && tool_count(log, "\"epoch\":") < 5; i++)
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    cr_assert_geq(tool_count(log, "\"epoch\":"), 5, "rank 0 trains");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kill(p[1].pid, SIGKILL);
    tool_result r;
    tool_wait(&p[1], &r);
    tool_wait(&p[0], &r);
    cr_assert_eq(r.code, 1, "%s", r.err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    cr_expect(s < 5.0 + 10.0 + 2.0, "rank 0 exited %.1f s after the kill", s);
    cr_expect(strstr(r.err, "rank 1 failed: no heartbeat for"), "%s", r.err);
    tool_remove_dir(dir);
}
