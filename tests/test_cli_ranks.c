/* gcntrain on several ranks: --ranks N trains the model one context trains
 * on the same partition order, says how the graph was cut, and refuses what
 * does not apply. */
#include <criterion/criterion.h>
#include <stdio.h>
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
}

Test(cli_ranks, what_does_not_apply_is_refused_with_one_line)
{
    const char *const cases[][12] = {
        {"models/gcn-cora.json", "--ranks", "2", "--gpus", "2", NULL},
        {"models/gcn-cora.json", "--ranks", "2", "--save", "/tmp/x.ckpt", NULL},
        {"models/gcn-cora.json", "--ranks", "2", "--predict", "/tmp/x.csv", NULL},
        {"models/gcn-cora.json", "--ranks", "0", NULL},
        {"models/gcn-cora.json", "--ranks", "2", "--reorder", "metis", "--device", "cpu", NULL},
        {"models/gcn-cora.json", "--ranks", "2", "--reorder", "parts:3", "--device", "cpu", NULL},
        {"models/gin-graph.json", "--ranks", "2", "--device", "cpu", NULL},
        {"models/gcn-cora.json", "--gpus", "2", "--device", "cpu", NULL},
    };
    const char *const expect[] = {"--ranks with --gpus", "--save applies to a run on one rank",
                                  "--predict applies to a run on one rank", "--ranks",
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
