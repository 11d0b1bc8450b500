/* gcntrain's checkpoints, predictions, evaluations and choices files on
 * several ranks: a run on ranks stopped by SIGTERM, then killed with
 * SIGKILL after a periodic checkpoint, resumes on other rank counts (and
 * on one context) to the losses of the run that never stopped; --predict
 * and --eval-only on ranks give one context's results; a checkpoint of
 * another model is refused in one line; choices files keep each rank's
 * entries and are ignored, with a note, by a run on another rank count.
 * Losses are compared within 1e-5 relative: the ranks sum in another order
 * than one context (docs/distributed.md, "Agreement"). */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tool_run.h"

static tool_result r;

enum { EPOCHS = 24 };

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits until the file holds the needle while the process still runs. */
static void wait_for(const tool_proc *p, const char *path, const char *needle)
{
    for (int i = 0; tool_count(path, needle) < 1; i++) {
        int status;
        cr_assert_eq(waitpid(p->pid, &status, WNOHANG), 0, "gcntrain ended before %s", needle);
        cr_assert_lt(i, 30000, "no %s in %s after 60 s", needle, path);
        sleep_ms(2);
    }
}

/* Every epoch's loss of the log into loss[1..EPOCHS] (an epoch logged
 * twice must log the same loss to the digit both times when want is
 * NULL); with want, each must be want's within 1e-5 relative.  Returns
 * how many epochs appear. */
static int read_losses(const char *path, double *loss, const double *want)
{
    char *text = malloc(1 << 20);
    cr_assert_not_null(text);
    tool_slurp(path, text, 1 << 20);
    bool seen[EPOCHS + 1] = {false};
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        int epoch;
        double l;
        if (sscanf(line, "{\"run\":1,\"epoch\":%d,\"loss\":%lf,", &epoch, &l) != 2)
            continue;
        cr_assert(epoch >= 1 && epoch <= EPOCHS, "%s", line);
        if (want)
            cr_assert(fabs(l - want[epoch]) <= 1e-5 * fabs(want[epoch]),
                      "epoch %d: loss %.9g, %.9g without a stop", epoch, l, want[epoch]);
        loss[epoch] = l;
        seen[epoch] = true;
    }
    free(text);
    int n = 0;
    for (int e = 1; e <= EPOCHS; e++)
        n += seen[e];
    return n;
}

Test(cli_ranks_resume, stopped_and_killed_runs_resume_on_other_rank_counts, .timeout = 120)
{
    char dir[] = "/tmp/gcn-ranks-resume-XXXXXX", ref[96], log[96], ck[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(ref, sizeof ref, "%s/straight.jsonl", dir);
    snprintf(log, sizeof log, "%s/run.jsonl", dir);
    snprintf(ck, sizeof ck, "%s/model.ckpt", dir);
    const char *args[] = {"models/gcn-cora.json", "--epochs", "24", "--runs", "1", "--seed", "7",
                          "--device", "cpu", "--threads", "1", "--quiet", "--log", ref,
                          "--ranks", "2", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    tool_run(&r, "gcntrain", args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    double want[EPOCHS + 1], got[EPOCHS + 1];
    cr_assert_eq(read_losses(ref, want, NULL), EPOCHS);

    /* 2 ranks, stopped by SIGTERM: the epoch ends, the checkpoint is saved */
    args[13] = log;
    args[16] = "--save";
    args[17] = ck;
    args[18] = "--save-every";
    args[19] = "4";
    args[20] = "--append";
    tool_proc p;
    tool_start(&p, "gcntrain", args);
    wait_for(&p, log, "{\"run\":1,\"epoch\":3,");
    cr_assert_eq(kill(p.pid, SIGTERM), 0);
    cr_assert_eq(tool_wait(&p, &r), 0);
    cr_assert_eq(r.code, 143, "%s", r.err);
    cr_assert(tool_exists(ck));

    /* 3 ranks from there, killed with SIGKILL once the checkpoint of
     * epoch 12 is in place (epoch 13 has begun) */
    args[15] = "3";
    args[21] = "--resume";
    args[22] = ck;
    tool_start(&p, "gcntrain", args);
    wait_for(&p, log, "{\"run\":1,\"epoch\":13,");
    cr_assert_eq(kill(p.pid, SIGKILL), 0);
    cr_assert_eq(tool_wait(&p, &r), SIGKILL);

    /* one context to the end */
    args[14] = "--runs";
    args[15] = "1";
    tool_run(&r, "gcntrain", args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert_eq(read_losses(log, got, want), EPOCHS);
    cr_assert_eq(tool_count(log, "\"resumed_from\""), 2);
    cr_assert_eq(tool_count(log, "\"resumed_at_epoch\":12"), 1, "the kill came after epoch 12's "
                 "checkpoint");
    tool_remove_dir(dir);
}

/* The numbers of "eval ... train T  valid V  test S" on stdout. */
static void eval_accuracies(double acc[3])
{
    const char *at = strstr(r.out, "): train ");
    cr_assert(at, "%s", r.out);
    cr_assert_eq(sscanf(at, "): train %lf  valid %lf  test %lf", &acc[0], &acc[1], &acc[2]), 3);
}

Test(cli_ranks_resume, predict_and_eval_only_on_ranks_give_one_contexts, .timeout = 120)
{
    char dir[] = "/tmp/gcn-ranks-predict-XXXXXX", ck[96], p1[96], p3[96], e1[96], e2[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(ck, sizeof ck, "%s/model.ckpt", dir);
    snprintf(p1, sizeof p1, "%s/one.csv", dir);
    snprintf(p3, sizeof p3, "%s/three.csv", dir);
    snprintf(e1, sizeof e1, "%s/eval-one.csv", dir);
    snprintf(e2, sizeof e2, "%s/eval-two.csv", dir);
    const char *base[] = {"models/gcn-cora.json", "--epochs", "12", "--runs", "1", "--device",
                          "cpu", "--threads", "1", "--quiet"};
    const char *args[20];
    memcpy(args, base, sizeof base);
    args[10] = "--predict";
    args[11] = p1;
    args[12] = "--save";
    args[13] = ck;
    args[14] = NULL;
    tool_run(&r, "gcntrain", args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    args[11] = p3;
    args[12] = "--ranks";
    args[13] = "3";
    tool_run(&r, "gcntrain", args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "predictions of 3000 nodes in "), "%s", r.out);
    cr_assert_eq(tool_expect_same_predictions(p1, p3, 1e-5, 2), 3000);

    /* the checkpoint one context saved, evaluated on 2 ranks and on one */
    double acc1[3], acc2[3];
    const char *eval[] = {"models/gcn-cora.json", "--device", "cpu", "--threads", "1",
                          "--quiet", "--eval-only", "--resume", ck, "--predict", e1, NULL, NULL,
                          NULL};
    tool_run(&r, "gcntrain", eval);
    cr_assert_eq(r.code, 0, "%s", r.err);
    eval_accuracies(acc1);
    eval[10] = e2;
    eval[11] = "--ranks";
    eval[12] = "2";
    tool_run(&r, "gcntrain", eval);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "after epoch 12: the best-validation model"), "%s", r.out);
    eval_accuracies(acc2);
    for (int i = 0; i < 3; i++) /* a node or two whose top classes tie to rounding */
        cr_assert(fabs(acc1[i] - acc2[i]) <= 0.002, "%g and %g", acc1[i], acc2[i]);
    cr_assert_eq(tool_expect_same_predictions(e1, e2, 1e-5, 2), 3000);
    tool_remove_dir(dir);
}

Test(cli_ranks_resume, a_checkpoint_of_another_model_is_refused_in_one_line, .timeout = 60)
{
    char dir[] = "/tmp/gcn-ranks-bad-XXXXXX", ck[96], cfg[96], cut[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(ck, sizeof ck, "%s/model.ckpt", dir);
    snprintf(cfg, sizeof cfg, "%s/wide.json", dir);
    snprintf(cut, sizeof cut, "%s/cut.ckpt", dir);
    tool_run(&r, "gcntrain", (const char *[]){"models/gcn-cora.json", "--epochs", "2", "--runs",
                                              "1", "--device", "cpu", "--quiet", "--ranks", "2",
                                              "--save", ck, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    FILE *f = fopen(cfg, "w");
    cr_assert_not_null(f);
    fputs("{\"layers\": [{\"type\": \"gcn\", \"out\": 32, \"activation\": \"relu\"}, "
          "{\"type\": \"gcn\", \"out\": \"classes\"}]}\n", f);
    fclose(f);
    char *bytes = malloc(1 << 20);
    cr_assert_not_null(bytes);
    f = fopen(ck, "rb");
    size_t n = fread(bytes, 1, 1 << 20, f);
    fclose(f);
    f = fopen(cut, "wb");
    fwrite(bytes, 1, n / 2, f);
    fclose(f);
    free(bytes);
    const struct {
        const char *config, *path, *ranks, *expect;
        bool eval;
    } cases[] = {
        {cfg, ck, "3", "saved from a different model architecture", false},
        {cfg, ck, "2", "saved from a different model architecture", true},
        {"models/gcn-cora.json", cut, "3", "the file is damaged", false},
        {"models/gcn-cora.json", "/nonexistent/model.ckpt", "2", "cannot open", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tool_run(&r, "gcntrain",
                 (const char *[]){cases[i].config, "--epochs", "4", "--runs", "1", "--device",
                                  "cpu", "--quiet", "--ranks", cases[i].ranks, "--resume",
                                  cases[i].path, cases[i].eval ? "--eval-only" : NULL, NULL});
        cr_assert_eq(r.code, 2, "case %zu: exit %d: %s", i, r.code, r.err);
        cr_assert(strstr(r.err, cases[i].expect), "case %zu: %s", i, r.err);
        cr_assert(strstr(r.err, cases[i].path), "case %zu: %s", i, r.err);
        tool_expect_one_line(r.err);
    }
    tool_remove_dir(dir);
}

Test(cli_ranks_resume, choices_files_keep_each_ranks_entries, .timeout = 60)
{
    char dir[] = "/tmp/gcn-ranks-choices-XXXXXX", path[96], before[1 << 14], after[1 << 14];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/choices.txt", dir);
    const char *args[] = {"models/gcn-cora.json", "--epochs", "3", "--runs", "1", "--device",
                          "cpu", "--threads", "1", "--ranks", "3", "--spmm-choices", path, NULL};
    tool_run(&r, "gcntrain", args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    tool_slurp(path, before, sizeof before);
    cr_assert(!strncmp(before, "gcn-spmm-choices 2\nranks 3\nrank 0\nmatrix gcn:own ", 49), "%s",
              before);
    cr_assert(strstr(before, "\nrank 1\nmatrix gcn:own ") && strstr(before, "\nrank 2\n"),
              "%s", before);
    cr_assert(strstr(before, "\nsite gcn:halo1 A "), "%s", before);
    /* read back by the same rank count: every site is locked from the file */
    tool_run(&r, "gcntrain", args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(!strstr(r.err, "holds the SpMM choices"), "%s", r.err);
    /* another rank count, and one context: a note, profiling, the file kept */
    const char *note[] = {"2", "1"};
    for (int i = 0; i < 2; i++) {
        args[10] = note[i];
        tool_run(&r, "gcntrain", args);
        cr_assert_eq(r.code, 0, "%s", r.err);
        cr_assert(strstr(r.err, "holds the SpMM choices of a run on 3 ranks; this run is on "),
                  "%s", r.err);
        tool_slurp(path, after, sizeof after);
        cr_assert_str_eq(after, before);
    }
    tool_remove_dir(dir);
}
