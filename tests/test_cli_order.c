/* gcntrain's node order (tools/gcntrain/order.c) on the CPU: a run that
 * switches to the METIS order mid-run (--reorder-switch-at) logs the losses
 * of a run that never switched; the METIS thread ends cleanly when SIGINT
 * stops the run and when the run ends before METIS does; a bad order for
 * the switch is bad input. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tool_run.h"

static tool_result r;

/* A graph METIS takes a few seconds to cut on one core. */
#define LARGE "sbm:nodes=150000,features=4,degree=6"

/* The "loss" of each epoch line of a JSON-lines log, in order. */
static int losses(const char *path, double *out, int max)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[1024];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"loss\":");
        if (p)
            out[n++] = strtod(p + 7, NULL);
    }
    fclose(f);
    return n;
}

Test(cli_order, a_switch_mid_run_keeps_the_losses, .timeout = 120)
{
    char dir[] = "/tmp/gcn-order-XXXXXX", a[64], b[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(a, sizeof a, "%s/switched.jsonl", dir);
    snprintf(b, sizeof b, "%s/never.jsonl", dir);
    const char *common[] = {"models/gcn.json", "--dataset", "sbm:nodes=1500,features=16",
                            "--device", "cpu", "--epochs", "8", "--runs", "1", "--log"};
    const char *args[16];
    memcpy(args, common, sizeof common);
    args[10] = a;
    args[11] = "--reorder-switch-at";
    args[12] = "3";
    args[13] = NULL;
    tool_run(&r, "gcntrain", args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "order      metis:256,4096 from epoch 4 on (--reorder-switch-at)"),
              "%s", r.out);
    args[10] = b;
    args[11] = "--reorder";
    args[12] = "none";
    tool_run(&r, "gcntrain", args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    double la[16], lb[16];
    cr_assert_eq(losses(a, la, 16), 8);
    cr_assert_eq(losses(b, lb, 16), 8);
    for (int e = 0; e < 8; e++) /* dropout by node id; sums over renumbered rows */
        cr_assert(fabs(la[e] - lb[e]) <= 1e-5 * fabs(lb[e]), "epoch %d: %.9g switched, %.9g "
                  "never", e + 1, la[e], lb[e]);
    tool_remove_dir(dir);
}

Test(cli_order, a_switch_needs_an_order_to_switch_to)
{
    tool_run(&r, "gcntrain", (const char *[]){"models/gcn.json", "--dataset", "sbm:nodes=200",
                                              "--device", "cpu", "--epochs", "2", "--reorder",
                                              "none", "--reorder-switch-at", "1", NULL});
    cr_assert_eq(r.code, 2, "%s", r.out);
    cr_assert(strstr(r.err, "--reorder-switch-at needs --reorder auto, degree or metis"), "%s",
              r.err);
    tool_run(&r, "gcntrain", (const char *[]){"models/gcn.json", "--reorder-switch-at", "0",
                                              NULL});
    cr_assert_eq(r.code, 2);
}

Test(cli_order, the_run_ending_first_stops_metis, .timeout = 120)
{
    /* One epoch of tens of milliseconds against METIS's three levels (about
     * two seconds alone), on one training thread so that the two do not
     * crowd each other on a small machine. */
    tool_run(&r, "gcntrain", (const char *[]){"models/gcn-cora.json", "--dataset", LARGE,
                                              "--device", "cpu", "--threads", "1", "--epochs",
                                              "1", "--runs", "1", "--reorder", "metis",
                                              "--reorder-switch-at", "5", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "the run ended before metis was ready (stopped)"), "%s", r.out);
}

Test(cli_order, sigint_stops_metis_and_exits_130, .timeout = 120)
{
    char dir[] = "/tmp/gcn-order-XXXXXX", log[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(log, sizeof log, "%s/run.jsonl", dir);
    tool_proc p;
    tool_start(&p, "gcntrain", (const char *[]){"models/gcn-cora.json", "--dataset", LARGE,
                                                "--device", "cpu", "--threads", "1",
                                                "--epochs", "1000000", "--runs", "1",
                                                "--reorder", "metis", "--reorder-switch-at",
                                                "1000000",
                                                "--quiet", "--log", log, NULL});
    struct timespec tick = {0, 10000000};
    for (int i = 0; i < 6000 && tool_count(log, "\"epoch\":") < 1; i++)
        nanosleep(&tick, NULL);
    cr_assert_eq(tool_count(log, "\"epoch\":"), 1, "no epoch within a minute");
    cr_assert_eq(kill(p.pid, SIGINT), 0);
    cr_assert_eq(tool_wait(&p, &r), 0, "gcntrain died of the signal");
    cr_assert_eq(r.code, 130, "%s", r.err);
    cr_assert(strstr(r.out, "was ready (stopped)"), "%s", r.out);
    cr_assert_eq(tool_count(log, "\"interrupted\":true"), 1);
    tool_remove_dir(dir);
}
