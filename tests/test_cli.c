/* The gcntrain command: exit codes, messages, the output and the JSON-lines
 * log (new, --force, --append), no partial output on failure, checkpoint
 * and resume through the command line, and the accuracy of the Kipf &
 * Welling recipe on Cora and CiteSeer.  Signals: test_cli_signal.c;
 * predictions: test_predict.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "tool_run.h"

static void gcntrain(tool_result *r, const char *const *args)
{
    tool_run(r, "gcntrain", args);
}

static tool_result r;

/* Bad usage is bad input: exit 2 and one line saying what is wrong. */
Test(cli, usage_errors_exit_2)
{
    const char *const cases[][8] = {
        {NULL},
        {"models/gcn.json", "--epochs", "0", NULL},
        {"models/gcn.json", "--bogus", "1", NULL},
        {"models/gcn.json", "--device", "tpu", NULL},
        {"models/gcn.json", "--save-every", "2", NULL},
        {"models/gcn.json", "--eval-only", NULL},
        {"models/gcn.json", "--append", NULL},
        {"models/gcn.json", "--save", "/tmp/no/such/dir/x.ckpt", NULL},
        {"models/gcn.json", "--predict", "/tmp/no/such/dir/p.csv", NULL}};
    const char *says[] = {"missing CONFIG", "--epochs 0", "--bogus 1", "tpu",
                          "--save-every needs --save", "--eval-only needs --resume",
                          "--append apply to --log", "no directory /tmp/no/such/dir",
                          "no directory /tmp/no/such/dir"};
    for (size_t i = 0; i < sizeof says / sizeof *says; i++) {
        gcntrain(&r, cases[i]);
        cr_assert_eq(r.code, 2, "case %zu: %s", i, r.err);
        cr_assert(strstr(r.err, says[i]), "case %zu: %s", i, r.err);
        tool_expect_one_line(r.err);
    }
    gcntrain(&r, (const char *[]){"--help", NULL});
    cr_assert_eq(r.code, 0);
    cr_assert(strstr(r.out, "usage: gcntrain CONFIG"));
    cr_assert(strstr(r.out, "exit status: 0 success; 1 runtime failure"), "%s", r.out);
    cr_assert(strstr(r.out, "130 SIGINT, 143 SIGTERM"), "%s", r.out);
    gcntrain(&r, (const char *[]){"--version", NULL});
    cr_assert_eq(r.code, 0);
    cr_assert(strstr(r.out, GCN_VERSION_STRING));
}

Test(cli, bad_input_exits_2_with_one_line)
{
    gcntrain(&r, (const char *[]){"models/missing.json", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "models/missing.json: cannot open"), "%s", r.err);
    char cfg[] = "/tmp/gcn-cfg-XXXXXX";
    int fd = mkstemp(cfg);
    const char *bad = "{\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\", \"dropout\": 2}]}";
    cr_assert_eq(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    gcntrain(&r, (const char *[]){cfg, NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "layers[0].dropout: expected a number in [0, 1)"), "%s", r.err);
    tool_expect_one_line(r.err);
    unlink(cfg);
    gcntrain(&r, (const char *[]){"models/gcn-cora.json", "--dataset", "/tmp/no-such-dataset", NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    gcntrain(&r, (const char *[]){"models/gcn-cora.json", "--spmm", "nope", NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
}

Test(cli, arxiv_without_features_names_the_file_and_option)
{
    if (!tool_exists("../shared/data/ogbn_arxiv/raw/edge.csv.gz"))
        cr_skip_test("../shared/data/ogbn_arxiv absent");
    gcntrain(&r, (const char *[]){"models/gcn.json", "--dataset", "ogbn-arxiv", "--root",
                                  "../shared/data", "--device", "cpu", NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert(strstr(r.err, "node-feat.csv.gz"), "%s", r.err);
    cr_assert(strstr(r.err, "random:D"), "%s", r.err);
}

Test(cli, missing_gpu_is_bad_usage)
{
    if (gcn_cuda_device_count() > 0)
        cr_skip_test("a CUDA device is present");
    gcntrain(&r, (const char *[]){"models/gcn-cora.json", "--device", "cuda", NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert(strstr(r.err, "device cuda: no GPU was found"), "%s", r.err);
    tool_expect_one_line(r.err);
}

Test(cli, short_run_writes_log_and_checkpoint_and_resumes, .timeout = 120)
{
    char dir[] = "/tmp/gcn-cli-XXXXXX", log[96], ck[96], log2[96], log3[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(log, sizeof log, "%s/run.jsonl", dir);
    snprintf(ck, sizeof ck, "%s/model.ckpt", dir);
    snprintf(log2, sizeof log2, "%s/resumed.jsonl", dir);
    snprintf(log3, sizeof log3, "%s/straight.jsonl", dir);
    gcntrain(&r, (const char *[]){"models/gcn-cora.json", "--epochs", "4", "--runs", "2",
                                  "--seed", "0", "--device", "cpu", "--log", log, "--save", ck, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "dataset    "), "%s", r.out);
    cr_assert(strstr(r.out, "run 2 epoch    4"), "%s", r.out);
    cr_assert(strstr(r.out, "test accuracy"), "%s", r.out);
    cr_assert_eq(tool_count(log, "\"epoch\":"), 8);
    cr_assert_eq(tool_count(log, "\"summary\":true"), 1);
    cr_assert(tool_exists(ck));
    /* resume run 1 from epoch 4 (the checkpoint holds run 2's state: seed + 1) */
    gcntrain(&r, (const char *[]){"models/gcn-cora.json", "--epochs", "7", "--runs", "1",
                                  "--seed", "1", "--device", "cpu", "--resume", ck, "--log", log2, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    gcntrain(&r, (const char *[]){"models/gcn-cora.json", "--epochs", "7", "--runs", "1",
                                  "--seed", "1", "--device", "cpu", "--log", log3, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    char a[1 << 14], b[1 << 14];
    tool_slurp(log2, a, sizeof a);
    tool_slurp(log3, b, sizeof b);
    for (int e = 5; e <= 7; e++) {
        char key[32];
        snprintf(key, sizeof key, "\"epoch\":%d,", e);
        char *ea = strstr(a, key), *eb = strstr(b, key);
        cr_assert(ea && eb, "epoch %d missing", e);
        /* loss and accuracies agree; only the timings may differ */
        size_t n = (size_t)(strstr(ea, ",\"train_ms\"") - ea);
        cr_assert_eq(strncmp(ea, eb, n), 0, "%.*s vs %.*s", (int)n, ea, (int)n, eb);
    }
    /* and so does the best-validation line of the run */
    char *ba = strstr(a, "\"best_epoch\":"), *bb = strstr(b, "\"best_epoch\":");
    cr_assert(ba && bb);
    size_t n = strcspn(ba, "\n");
    cr_assert_eq(strncmp(ba, bb, n + 1), 0, "%.*s vs %.*s", (int)n, ba, (int)n, bb);
    /* a failing run leaves no log behind */
    char bad_log[96];
    snprintf(bad_log, sizeof bad_log, "%s/bad.jsonl", dir);
    gcntrain(&r, (const char *[]){"models/gcn.json", "--epochs", "2", "--device", "cpu",
                                  "--resume", ck, "--log", bad_log, NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert(strstr(r.err, "different model architecture"), "%s", r.err);
    cr_assert_not(tool_exists(bad_log));
    unlink(log);
    unlink(log2);
    unlink(log3);
    unlink(ck);
    rmdir(dir);
}

/* The shipped arxiv configurations run as they are on the built-in
 * synthetic dataset, printing the summary block, epoch lines and the final
 * summary, and logging epochs, the run's best epoch and a summary. */
/* --reorder and --spmm-choices: the choices file is written once the call sites
 * lock, read back by the next run, and refused for another graph. */
Test(cli, reorder_and_spmm_choices, .timeout = 120)
{
    char plan[] = "/tmp/gcn-cli-choices-XXXXXX";
    close(mkstemp(plan));
    unlink(plan);
    const char *base[] = {"models/gcn-cora.json", "--epochs", "2", "--runs", "1", "--device",
                          "cpu", "--reorder", "metis:16,64", "--spmm-choices", plan, NULL, NULL,
                          NULL};
    gcntrain(&r, base);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "reordered by metis"), "%s", r.out);
    cr_assert(tool_exists(plan), "no choices file written");
    gcntrain(&r, base);
    cr_assert_eq(r.code, 0, "%s", r.err);
    base[11] = "--dataset";
    base[12] = "sbm:nodes=500";
    gcntrain(&r, base);
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert(strstr(r.err, plan) && strstr(r.err, "another graph"), "%s", r.err);
    const char *bad[] = {"models/gcn-cora.json", "--reorder", "metis:0", NULL};
    gcntrain(&r, bad);
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert(strstr(r.err, "metis:0"), "%s", r.err);
    unlink(plan);
}

Test(cli, shipped_configs_run_without_a_dataset, .timeout = 120)
{
    const char *configs[] = {"models/gcn.json", "models/gin.json"};
    char dir[] = "/tmp/gcn-cli-XXXXXX", log[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(log, sizeof log, "%s/run.jsonl", dir);
    for (int i = 0; i < 2; i++) {
        gcntrain(&r, (const char *[]){configs[i], "--epochs", "2", "--device", "cpu", "--log",
                                      log, "--force", NULL});
        cr_assert_eq(r.code, 0, "%s: %s", configs[i], r.err);
        const char *want[] = {"dataset    synthetic", "model      ", "optimiser  adam lr 0.01",
                              "device     cpu", "params     ", "run 1 epoch    2  loss ",
                              "run 1 best valid ", "test accuracy ", " +- ",
                              "time load ", "preprocess ", "train ", "eval ", "peak cpu memory "};
        for (size_t k = 0; k < sizeof want / sizeof *want; k++)
            cr_assert(strstr(r.out, want[k]), "%s: no '%s' in\n%s", configs[i], want[k], r.out);
        cr_assert_eq(tool_count(log, "\"epoch\":"), 2);
        cr_assert_eq(tool_count(log, "\"best_epoch\":"), 1);
        cr_assert_eq(tool_count(log, "\"peak_bytes\":"), 1);
    }
    unlink(log);
    rmdir(dir);
}

/* A plain-text dataset of 8 nodes and 16 features in a new folder (dir, a
 * mkdtemp template), with `value` for every feature but the one on
 * features.txt line `odd_line`, which is `odd`; and model.json beside it. */
static void write_textdir(char *dir, const char *value, int odd_line, const char *odd)
{
    char path[128];
    cr_assert_not_null(mkdtemp(dir));
    const char *files[][2] = {{"meta.txt", "num_nodes 8\nnum_features 16\nnum_classes 2\n"},
                              {"edges.txt", "0 1\n1 2\n2 3\n3 4\n4 5\n5 6\n6 7\n7 0\n"},
                              {"labels.txt", "0\n1\n0\n1\n0\n1\n0\n1\n"},
                              {"train.txt", "0\n1\n2\n3\n"},
                              {"val.txt", "4\n5\n"},
                              {"test.txt", "6\n7\n"},
                              {"model.json", "{\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\"}]}"}};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i][0]);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs(files[i][1], f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/features.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 8; i++)
        for (int c = 0; c < 16; c++)
            fprintf(f, "%d %d %s\n", i, c, i * 16 + c + 1 == odd_line ? odd : value);
    fclose(f);
}

/* Features that overflow float32 in the first product: training stops at
 * the first non-finite loss with exit code 3. */
Test(cli, non_finite_loss_exits_3_naming_the_epoch, .timeout = 60)
{
    char dir[] = "/tmp/gcn-cli-XXXXXX", cfg[128];
    write_textdir(dir, "3e38", 0, NULL);
    snprintf(cfg, sizeof cfg, "%s/model.json", dir);
    gcntrain(&r, (const char *[]){cfg, "--dataset", dir, "--device", "cpu", NULL});
    cr_assert_eq(r.code, 3, "%s", r.err);
    cr_assert(strstr(r.err, "non-finite training loss"), "%s", r.err);
    cr_assert(strstr(r.err, "at epoch 1"), "%s", r.err);
    cr_assert_not(strstr(r.out, "test accuracy"), "%s", r.out);
    tool_remove_dir(dir);
}

/* NaN in a feature file is bad input, not a training failure: exit 2, one
 * line naming the file and line, and none of the output files. */
Test(cli, nan_feature_exits_2_naming_the_file_and_line, .timeout = 60)
{
    char dir[] = "/tmp/gcn-cli-XXXXXX", cfg[128], log[128], ck[128], pred[128], want[128];
    write_textdir(dir, "0.5", 20, "nan");
    snprintf(cfg, sizeof cfg, "%s/model.json", dir);
    snprintf(log, sizeof log, "%s/run.jsonl", dir);
    snprintf(ck, sizeof ck, "%s/model.ckpt", dir);
    snprintf(pred, sizeof pred, "%s/pred.csv", dir);
    gcntrain(&r, (const char *[]){cfg, "--dataset", dir, "--device", "cpu", "--log", log,
                                  "--save", ck, "--predict", pred, NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    snprintf(want, sizeof want, "%s/features.txt:20: column 3 ('nan') is NaN", dir);
    cr_assert(strstr(r.err, want), "%s", r.err);
    tool_expect_one_line(r.err);
    cr_assert_not(tool_exists(log));
    cr_assert_not(tool_exists(ck));
    cr_assert_not(tool_exists(pred));
    tool_remove_dir(dir);
}

/* --log FILE must be new unless --force replaces it or --append adds to
 * it; a refused run leaves the file as it was. */
Test(cli, log_is_new_unless_force_or_append, .timeout = 120)
{
    char dir[] = "/tmp/gcn-cli-XXXXXX", log[96], before[1 << 14], after[1 << 14];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(log, sizeof log, "%s/run.jsonl", dir);
    const char *args[] = {"models/gcn-cora.json", "--epochs", "2", "--runs", "1", "--device",
                          "cpu", "--quiet", "--log", log, NULL, NULL};
    gcntrain(&r, args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert_eq(tool_count(log, "\"epoch\":"), 2);
    tool_slurp(log, before, sizeof before);
    gcntrain(&r, args);
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert(strstr(r.err, "the file exists; --force replaces it, --append adds to it"), "%s",
              r.err);
    tool_expect_one_line(r.err);
    tool_slurp(log, after, sizeof after);
    cr_assert_str_eq(before, after);
    args[10] = "--append";
    gcntrain(&r, args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert_eq(tool_count(log, "\"epoch\":"), 4);
    cr_assert_eq(tool_count(log, "\"summary\":true"), 2);
    args[10] = "--force";
    gcntrain(&r, args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert_eq(tool_count(log, "\"epoch\":"), 2);
    cr_assert_eq(tool_count(log, "\"summary\":true"), 1);
    tool_remove_dir(dir);
}

/* An I/O error while writing is a runtime failure: exit 1. */
Test(cli, write_error_exits_1, .timeout = 60)
{
    if (!tool_exists("/dev/full"))
        cr_skip_test("no /dev/full");
    gcntrain(&r, (const char *[]){"models/gcn-cora.json", "--epochs", "3", "--runs", "1",
                                  "--device", "cpu", "--quiet", "--log", "/dev/full", "--append",
                                  NULL});
    cr_assert_eq(r.code, 1, "%s", r.err);
    cr_assert(strstr(r.err, "--log /dev/full: cannot write the log: No space left on device"),
              "%s", r.err);
    tool_expect_one_line(r.err);
}

/* Mean test accuracy of 10 seeds with the Kipf & Welling recipe. */
static double planetoid_accuracy(const char *name)
{
    char path[128];
    snprintf(path, sizeof path, "../shared/data/planetoid/%s/edges.txt", name);
    if (!tool_exists(path))
        return -1.0;
    gcntrain(&r, (const char *[]){"models/gcn-cora.json", "--dataset", name, "--root",
                                  "../shared/data", "--device", "cpu", "--quiet", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    const char *line = strstr(r.out, "test accuracy ");
    cr_assert_not_null(line, "%s", r.out);
    return atof(line + strlen("test accuracy "));
}

Test(cli, cora_matches_kipf_and_welling, .timeout = 600)
{
    double acc = planetoid_accuracy("cora");
    if (acc < 0)
        cr_skip_test("../shared/data/planetoid/cora absent");
    cr_assert_geq(acc, 0.805, "Cora mean test accuracy %.4f over 10 seeds", acc);
}

Test(cli, citeseer_matches_kipf_and_welling, .timeout = 600)
{
    double acc = planetoid_accuracy("citeseer");
    if (acc < 0)
        cr_skip_test("../shared/data/planetoid/citeseer absent");
    cr_assert_geq(acc, 0.69, "CiteSeer mean test accuracy %.4f over 10 seeds", acc);
}
