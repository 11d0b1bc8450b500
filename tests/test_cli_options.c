/* The options gcntrain and gcnbench train share: each tool's help lists
 * every one, and each sets the same configuration key in both, so a bad
 * value is refused by both with the same one-line message. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tool_run.h"

static tool_result r;

/* Each shared option with a value the configuration refuses, and the key
 * the refusal names. */
static const struct {
    const char *option, *bad, *key;
} shared[] = {
    {"--root", "", "root"},
    {"--cache-dir", "", "cache_dir"},
    {"--device", "tpu", "device"},
    {"--precision", "fp16", "precision"},
    {"--threads", "-1", "threads"},
    {"--ranks", "0", "ranks"},
    {"--gpus", "0", "devices"},
    {"--spmm", "", "spmm"},
    {"--reorder", "", "reorder"},
    {"--cuda-graph", "maybe", "cuda_graph"},
    {"--sparse-input", "maybe", "sparse_input"},
    {"--features", "", "features"},
    {"--labels", "random:1", "labels"},
};

/* stderr of the last run after "PREFIX: ", checked to be one line. */
static const char *message_after(const char *prefix)
{
    size_t n = strlen(prefix);
    cr_assert(!strncmp(r.err, prefix, n) && !strncmp(r.err + n, ": ", 2), "%s", r.err);
    cr_assert(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "not one line: %s", r.err);
    return r.err + n + 2;
}

Test(cli_options, each_tool_help_lists_every_shared_option)
{
    tool_result bench;
    tool_run(&r, "gcntrain", (const char *[]){"--help", NULL});
    tool_run(&bench, "gcnbench", (const char *[]){"train", "--help", NULL});
    cr_assert_eq(r.code, 0);
    cr_assert_eq(bench.code, 0);
    for (size_t i = 0; i < sizeof shared / sizeof *shared; i++) {
        char listed[64];
        snprintf(listed, sizeof listed, "\n  %s ", shared[i].option);
        cr_assert(strstr(r.out, listed), "gcntrain --help lacks %s", shared[i].option);
        cr_assert(strstr(bench.out, listed), "gcnbench train --help lacks %s", shared[i].option);
    }
}

Test(cli_options, each_shared_option_sets_the_same_key_in_both_tools, .timeout = 60)
{
    for (size_t i = 0; i < sizeof shared / sizeof *shared; i++) {
        const char *o = shared[i].option, *v = shared[i].bad;
        tool_run(&r, "gcntrain", (const char *[]){"models/gcn-cora.json", o, v, NULL});
        cr_assert_eq(r.code, 2, "gcntrain %s '%s': %s", o, v, r.err);
        char train_says[512];
        snprintf(train_says, sizeof train_says, "%s", message_after("gcntrain"));
        tool_run(&r, "gcnbench", (const char *[]){"train", "models/gcn-cora.json", "--dataset",
                                                  "synthetic", o, v, NULL});
        cr_assert_eq(r.code, 2, "gcnbench train %s '%s': %s", o, v, r.err);
        cr_assert_str_eq(message_after("gcnbench train"), train_says, "%s", o);
        char key[64];
        snprintf(key, sizeof key, "--%s '%s': expected", shared[i].key, v);
        cr_assert(!strncmp(train_says, key, strlen(key)), "%s: %s", o, train_says);
    }
}
