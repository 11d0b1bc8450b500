/* gcnbench train on the CPU: one JSON line per dataset with every key and
 * consistent values, --out appended once every dataset has run, one-line
 * errors with exit status 2 and no --out file for bad input. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool_run.h"

static tool_result r;

static void bench_train(const char *const *args)
{
    const char *argv[32] = {"train"};
    int n = 1;
    for (; args[n - 1]; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    tool_run(&r, "gcnbench", argv);
}

/* A path for --out in a new temporary folder, not yet created. */
static void out_path(char *dir, char *path, size_t size)
{
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, size, "%s/train.jsonl", dir);
}

static double number(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    cr_assert(cJSON_IsNumber(v), "\"%s\" is not a number", key);
    return v->valuedouble;
}

static const char *string(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    cr_assert(cJSON_IsString(v), "\"%s\" is not a string", key);
    return v->valuestring;
}

/* The line's keys and the relations between its figures on the CPU (to the
 * six digits they are written with). */
static void check_line(const cJSON *j, const char *dataset, int n_nodes)
{
    cr_assert_str_eq(string(j, "bench"), "train");
    cr_assert_str_eq(string(j, "framework"), "gcn");
    cr_assert_str_eq(string(j, "config"), "gcn-cora");
    cr_assert_str_eq(string(j, "dataset"), dataset);
    cr_assert_str_eq(string(j, "device"), "cpu");
    cr_assert_str_eq(string(j, "precision"), "fp32");
    cr_assert_str_eq(string(j, "adjacency"), "csr");
    cr_assert_eq(number(j, "epochs"), 3);
    cr_assert_eq(number(j, "warmup"), 1);
    cr_assert_eq(number(j, "n_nodes"), n_nodes);
    cr_assert_gt(number(j, "nnz"), n_nodes, "self-loops and edges");
    double epoch = number(j, "epoch_ms"), train = number(j, "train_ms"),
           eval = number(j, "eval_ms");
    cr_assert(train > 0 && eval > 0 && number(j, "epoch_ms_min") <= epoch);
    cr_assert(epoch >= number(j, "epoch_ms_min") && epoch < 1e5, "epoch %g ms", epoch);
    double peak = number(j, "peak_mib"), steady = number(j, "steady_mib");
    cr_assert(steady > 0 && peak >= steady, "peak %g, steady %g", peak, steady);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "memory_mib");
    cr_assert(cJSON_IsObject(m));
    const char *parts[] = {"data", "params", "grads", "optimizer", "workspace"};
    double held = 0;
    for (int i = 0; i < 5; i++) {
        cr_assert_geq(number(m, parts[i]), 0, "%s", parts[i]);
        held += number(m, parts[i]);
    }
    cr_assert(number(m, "data") > 0 && number(m, "params") > 0);
    double opt = number(m, "optimizer"), grads = number(m, "grads");
    /* Adam's m and v, 28 bytes of step state for each of gcn-cora's four
     * parameter tensors (update count, pending mark, beta1^t, beta2^t), and
     * the learning rate of each of its two optimisers (weight-decay groups) */
    double steps = (4 * 28 + 2 * 4) / 1048576.0;
    cr_assert(fabs(opt - 2 * grads - steps) <= 1e-5 * opt, "Adam's m and v: %g, grads %g", opt,
              grads);
    cr_assert(fabs(held - steady) <= 1e-5 * steady + 1e-5, "parts %g, steady %g", held, steady);
    double act = number(m, "activations");
    cr_assert(act > 0 && steady + act <= peak * (1 + 1e-5), "activations %g", act);
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "gpu_ms")), "gpu_ms on the CPU");
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "gpu_span_ms")));
    double acc = number(j, "test_acc");
    cr_assert(acc >= 0 && acc <= 1, "test_acc %g", acc);
    if (number(j, "ranks") == 1)
        cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "comm")), "one context");
}

/* The n numbers of array key of obj into v. */
static void numbers(const cJSON *obj, const char *key, double *v, int n)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key);
    cr_assert(cJSON_IsArray(a) && cJSON_GetArraySize(a) == n, "\"%s\" is not %d numbers", key,
              n);
    for (int i = 0; i < n; i++) {
        const cJSON *x = cJSON_GetArrayItem(a, i);
        cr_assert(cJSON_IsNumber(x), "\"%s\"[%d]", key, i);
        v[i] = x->valuedouble;
    }
}

Test(bench_train, cpu_run_writes_one_json_line_per_dataset, .timeout = 120)
{
    char dir[] = "/tmp/gcn-bench-XXXXXX", out[96], file[1 << 13];
    out_path(dir, out, sizeof out);
    bench_train((const char *[]){"models/gcn-cora.json", "--dataset", "synthetic", "--dataset",
                                 "sbm:nodes=800", "--device", "cpu", "--epochs", "3",
                                 "--warmup", "1", "--seed", "3", "--out", out, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    tool_slurp(out, file, sizeof file);
    cr_assert_str_eq(file, r.out, "--out and stdout differ");
    char *second = strchr(r.out, '\n');
    cr_assert(second && strchr(second + 1, '\n') == r.out + strlen(r.out) - 1, "%s", r.out);
    *second = '\0';
    cJSON *a = cJSON_Parse(r.out), *b = cJSON_Parse(second + 1);
    cr_assert(a && b, "not JSON: %s", r.out);
    check_line(a, "synthetic", 3000);
    check_line(b, "sbm:nodes=800", 800);
    cJSON_Delete(a);
    cJSON_Delete(b);
    /* a second run appends */
    bench_train((const char *[]){"models/gcn-cora.json", "--dataset", "synthetic", "--device",
                                 "cpu", "--epochs", "3", "--warmup", "1", "--no-breakdown",
                                 "--out", out, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    tool_slurp(out, file, sizeof file);
    int lines = 0;
    for (char *c = file; (c = strchr(c, '\n')); c++)
        lines++;
    cr_assert_eq(lines, 3, "%s", file);
    unlink(out);
    rmdir(dir);
}

/* --ranks 2: each rank's peak and traffic per timed epoch, by layer (the
 * model's two layers exchange halo rows, and they sum to the total). */
Test(bench_train, ranks_report_traffic_by_rank_and_layer, .timeout = 120)
{
    bench_train((const char *[]){"models/gcn-cora.json", "--dataset", "synthetic", "--device",
                                 "cpu", "--epochs", "3", "--warmup", "1", "--threads", "2",
                                 "--ranks", "2", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cJSON *j = cJSON_Parse(r.out);
    cr_assert(j, "not JSON: %s", r.out);
    check_line(j, "synthetic", 3000);
    cr_assert_eq(number(j, "ranks"), 2);
    cr_assert_str_eq(string(j, "transport"), "local");
    double peaks[2], ex_mib[2], ex_ms[2], ar_mib[2], ar_ms[2], compute[2];
    numbers(j, "rank_peak_mib", peaks, 2);
    cr_assert(peaks[0] > 0 && peaks[1] > 0 && peaks[0] == number(j, "peak_mib"));
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "comm");
    cr_assert(cJSON_IsObject(c));
    cr_assert_eq(number(c, "epochs"), 3);
    numbers(c, "exchange_mib", ex_mib, 2);
    numbers(c, "exchange_ms", ex_ms, 2);
    numbers(c, "allreduce_mib", ar_mib, 2);
    numbers(c, "allreduce_ms", ar_ms, 2);
    numbers(c, "compute_ms", compute, 2);
    double epoch = number(j, "epoch_ms");
    for (int k = 0; k < 2; k++) {
        cr_assert(ex_mib[k] > 0 && ex_ms[k] > 0 && ar_mib[k] > 0 && ar_ms[k] > 0, "rank %d", k);
        cr_assert(fabs(compute[k] + ex_ms[k] + ar_ms[k] - epoch) <= 1e-4 * epoch + 1e-5,
                  "rank %d: %g + %g + %g against %g", k, compute[k], ex_ms[k], ar_ms[k], epoch);
    }
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(c, "layers");
    cr_assert(cJSON_IsArray(layers) && cJSON_GetArraySize(layers) == 2, "two layers exchange");
    double sum_mib[2] = {0, 0}, sum_ms[2] = {0, 0};
    for (int l = 0; l < 2; l++) {
        const cJSON *x = cJSON_GetArrayItem(layers, l);
        cr_assert_eq(number(x, "layer"), l + 1);
        cr_assert_gt(number(x, "calls"), 0);
        double mib[2], ms[2];
        numbers(x, "halo_mib", mib, 2);
        numbers(x, "exchange_ms", ms, 2);
        for (int k = 0; k < 2; k++) {
            sum_mib[k] += mib[k];
            sum_ms[k] += ms[k];
        }
    }
    for (int k = 0; k < 2; k++) {
        cr_assert(fabs(sum_mib[k] - ex_mib[k]) <= 1e-5 * ex_mib[k], "rank %d: MiB", k);
        cr_assert(fabs(sum_ms[k] - ex_ms[k]) <= 1e-4 * ex_ms[k] + 1e-6, "rank %d: ms", k);
    }
    cJSON_Delete(j);
}

/* Each bad input: exit 2, one line on stderr naming it, no --out file. */
Test(bench_train, bad_input_is_one_line_and_leaves_no_out_file, .timeout = 60)
{
    char dir[] = "/tmp/gcn-bench-XXXXXX", out[96];
    out_path(dir, out, sizeof out);
    const struct {
        const char *args[12], *names;
    } cases[] = {
        {{"models/gcn-cora.json", "--dataset", "synthetic", "--bogus", "1"}, "--bogus"},
        {{"--dataset", "synthetic"}, "CONFIG"},
        {{"models/gcn-cora.json"}, "--dataset"},
        {{"models/missing.json", "--dataset", "synthetic"}, "models/missing.json"},
        {{"models/gcn-cora.json", "--dataset", "synthetic", "--precision", "fp16"}, "fp16"},
        {{"models/gcn-cora.json", "--dataset", "synthetic", "--epochs", "0"}, "--epochs"},
        {{"models/gcn-cora.json", "--dataset", "synthetic", "--warmup", "x"}, "--warmup"},
        {{"models/gcn-cora.json", "--dataset", "synthetic", "--device", "tpu"}, "tpu"},
        {{"models/gcn-cora.json", "--dataset", "/tmp/no-such-dataset", "--device", "cpu"},
         "/tmp/no-such-dataset"},
        {{"models/gcn-cora.json", "--dataset", "synthetic", "--device", "cpu", "--spmm", "nope"},
         "nope"},
        {{"models/gcn-cora.json", "--dataset", "synthetic", "--ranks", "2", "--gpus", "2"},
         "--gpus"},
        {{"models/gcn-cora.json", "--dataset", "synthetic", "--device", "cpu", "--ranks", "0"},
         "ranks"},
        {{"models/gcn-cora.json", "--dataset", "synthetic", "--device", "cpu", "--ranks", "2",
          "--reorder", "metis"}, "parts:2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *args[16];
        int n = 0;
        for (; cases[i].args[n]; n++)
            args[n] = cases[i].args[n];
        args[n++] = "--out";
        args[n++] = out;
        args[n] = NULL;
        bench_train(args);
        cr_assert_eq(r.code, 2, "case %zu: exit %d: %s", i, r.code, r.err);
        cr_assert(strstr(r.err, cases[i].names), "case %zu: '%s' not named in %s", i,
                  cases[i].names, r.err);
        cr_assert(strlen(r.err) > 0 && strchr(r.err, '\n') == r.err + strlen(r.err) - 1,
                  "case %zu: not one line: %s", i, r.err);
        cr_assert_str_empty(r.out, "case %zu", i);
        cr_assert_not(tool_exists(out), "case %zu left %s", i, out);
    }
    rmdir(dir);
}

Test(bench_train, help_lists_the_options_and_definitions)
{
    bench_train((const char *[]){"--help", NULL});
    cr_assert_eq(r.code, 0);
    const char *want[] = {"usage: gcnbench train CONFIG", "--no-breakdown", "--precision",
                          "gpu_ms", "elementwise", "workspace", "activations", "--gpus",
                          "compute_ms", "halo_mib"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_assert(strstr(r.out, want[i]), "no '%s' in %s", want[i], r.out);
}
