/* gcntrain on several ranks: --ranks N trains the model one context trains
 * on the same partition order, says how the graph was cut and what the
 * ranks moved per epoch (stdout and log), and refuses what does not apply. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_run.h"

static tool_result r;

/* The line "run 1 best valid ... test ..." of r.out, into line. */
static void best_line(char *line, size_t size)
{
    const char *at = strstr(r.out, "run 1 best valid");
    cr_assert(at, "%s", r.out);
    size_t n = strcspn(at, "\n");
    snprintf(line, size, "%.*s", (int)n, at);
}

Test(cli_ranks, ranks_train_the_model_of_one_context_on_the_partition_order, .timeout = 120)
{
    char one[256], ranks[256];
    tool_run(&r, "gcntrain",
             (const char *[]){"models/gcn-cora.json", "--device", "cpu", "--epochs", "30",
                              "--threads", "1", "--reorder", "parts:3", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    best_line(one, sizeof one);
    tool_run(&r, "gcntrain",
             (const char *[]){"models/gcn-cora.json", "--device", "cpu", "--epochs", "30",
                              "--threads", "1", "--ranks", "3", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    best_line(ranks, sizeof ranks);
    cr_assert_str_eq(ranks, one);
    cr_assert(strstr(r.out, "partition  3 ranks (local transport, one device), by nodes: "),
              "%s", r.out);
    cr_assert(strstr(r.out, "           rank 2: "), "%s", r.out);
    cr_assert(strstr(r.out, "traffic    rank 0 sent "), "%s", r.out);
    /* gcn-cora.json trains 10 runs: the epochs of all of them */
    cr_assert(strstr(r.out, " calls over 300 epochs; per epoch:\n           exchange "), "%s",
              r.out);
    cr_assert(strstr(r.out, "\n           all-reduce "), "%s", r.out);
    cr_assert(strstr(r.out, " ms (ranks "), "%s", r.out);
}

/* The number after "key": in text, which must be there and not null. */
static double log_number(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *at = strstr(text, pat);
    cr_assert(at, "no %s in %s", pat, text);
    char *end = NULL;
    double v = strtod(at + strlen(pat), &end);
    cr_assert(end != at + strlen(pat), "%s is not a number in %s", pat, text);
    return v;
}

Test(cli_ranks, the_log_has_the_traffic_of_every_run_epoch, .timeout = 120)
{
    char dir[] = "/tmp/gcn-cli-ranks-XXXXXX", log[96], text[1 << 16];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(log, sizeof log, "%s/run.jsonl", dir);
    tool_run(&r, "gcntrain",
             (const char *[]){"models/gcn-cora.json", "--device", "cpu", "--epochs", "3", "--runs",
                              "2", "--threads", "1", "--ranks", "2", "--log", log, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    tool_slurp(log, text, sizeof text);
    tool_remove_dir(dir);
    const char *line = strstr(text, "{\"ranks\":2,\"epochs\":6,\"exchange_bytes\":");
    cr_assert(line, "%s", text);
    cr_expect(log_number(line, "exchange_calls") >= 6, "%s", line);
    for (int i = 0; i < 4; i++) {
        static const char *const keys[4] = {"exchange_ms", "exchange_ms_max", "allreduce_ms",
                                            "allreduce_ms_max"};
        double ms = log_number(line, keys[i]);
        cr_expect(ms >= 0.0 && ms < 60e3, "%s = %g", keys[i], ms);
    }
    cr_expect(log_number(line, "exchange_ms_max") >= log_number(line, "exchange_ms"));
    cr_expect(log_number(line, "exchange_ms_min") <= log_number(line, "exchange_ms"));
    cr_expect(log_number(line, "allreduce_ms_max") >= log_number(line, "allreduce_ms"));
    /* by layer: both of the model's layers exchange, the gradients are
     * all-reduced outside them, and the layers sum to the totals */
    double calls = 0.0, bytes = 0.0, reduces = 0.0;
    for (int l = 0; l <= 2; l++) {
        char key[32];
        snprintf(key, sizeof key, "{\"layer\":%d,", l);
        const char *at = strstr(line, key);
        cr_assert(at, "no layer %d in %s", l, line);
        calls += log_number(at, "exchange_calls");
        bytes += log_number(at, "exchange_bytes");
        reduces += log_number(at, "allreduce_calls");
        cr_expect(l == 0 || log_number(at, "exchange_calls") >= 6, "layer %d: %s", l, at);
    }
    cr_expect(!strstr(line, "{\"layer\":3,"), "%s", line);
    cr_expect_eq(calls, log_number(line, "exchange_calls"), "%s", line);
    cr_expect_eq(bytes, log_number(line, "exchange_bytes"), "%s", line);
    cr_expect_eq(reduces, log_number(line, "allreduce_calls"), "%s", line);
    cr_assert(strstr(r.out, "             layer 1 ") && strstr(r.out, "             layer 2 "),
              "%s", r.out);
    cr_assert(strstr(r.out, " calls over 6 epochs; per epoch:\n"), "%s", r.out);
    const char *peaks = strstr(text, "{\"rank_peak_bytes\":[");
    cr_assert(peaks, "%s", text);
    long long a = 0, b = 0;
    cr_assert_eq(sscanf(peaks, "{\"rank_peak_bytes\":[%lld,%lld]}", &a, &b), 2, "%s", peaks);
    cr_expect(a > 0 && b > 0, "%s", peaks);
    cr_assert(strstr(r.out, "memory     peak per rank: "), "%s", r.out);
}

Test(cli_ranks, what_does_not_apply_is_refused_with_one_line)
{
    const char *const cases[][12] = {
        {"models/gcn-cora.json", "--ranks", "2", "--gpus", "2", NULL},
        {"models/gcn-cora.json", "--ranks", "0", NULL},
        {"models/gcn-cora.json", "--ranks", "2", "--reorder", "metis", "--device", "cpu", NULL},
        {"models/gcn-cora.json", "--ranks", "2", "--reorder", "parts:3", "--device", "cpu", NULL},
        {"models/gin-graph.json", "--ranks", "2", "--device", "cpu", NULL},
        {"models/gcn-cora.json", "--gpus", "2", "--device", "cpu", NULL},
    };
    const char *const expect[] = {"--ranks with --gpus", "--ranks",
                                  "orders the nodes by its partition, parts:2",
                                  "orders the nodes by its partition, parts:2",
                                  "graph-level model trains on one rank",
                                  "--gpus 2: the device is cpu"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tool_run(&r, "gcntrain", cases[i]);
        cr_assert_eq(r.code, 2, "case %zu: exit %d: %s", i, r.code, r.err);
        cr_assert(strstr(r.err, expect[i]), "case %zu: %s", i, r.err);
        cr_assert(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "case %zu: %s", i, r.err);
    }
}

/* The exchange's bytes over 2 epochs of GCN on 2 ranks at `precision`. */
static double exchange_bytes(const char *precision)
{
    char dir[] = "/tmp/gcn-cli-ranks-XXXXXX", log[96], text[1 << 16];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(log, sizeof log, "%s/run.jsonl", dir);
    tool_run(&r, "gcntrain",
             (const char *[]){"models/gcn.json", "--dataset", "sbm", "--device", "cpu",
                              "--epochs", "2", "--threads", "1", "--ranks", "2", "--precision",
                              precision, "--log", log, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    tool_slurp(log, text, sizeof text);
    tool_remove_dir(dir);
    const char *line = strstr(text, "{\"ranks\":2,\"epochs\":2,\"exchange_bytes\":");
    cr_assert(line, "%s", text);
    return log_number(line, "exchange_bytes");
}

/* Halo rows and their gradients travel as bf16: half the bytes, plus at
 * most 2 bytes of padding a peer's run (the widths here are even: none). */
Test(cli_ranks, bf16_halves_the_exchange, .timeout = 60)
{
    double fp32 = exchange_bytes("fp32"), bf16 = exchange_bytes("bf16");
    cr_assert(fp32 > 0.0);
    cr_expect_eq(bf16, fp32 / 2.0, "bf16 %g bytes, fp32 %g", bf16, fp32);
}
