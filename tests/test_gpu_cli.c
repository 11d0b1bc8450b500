/* gcntrain on the GPU: a model that cannot fit stops with exit code 1 and
 * one line naming what was being allocated, how much, and the device's
 * free memory. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_helpers.h"
#include "tool_run.h"

/* A linear layer 1,048,576 wide on 200,000 nodes: its output alone is
 * 838,860,800,000 bytes, more than any GPU holds. */
Test(gpu_cli, out_of_memory_exits_1_with_one_line, .timeout = 300)
{
    GPU_REQUIRED();
    char dir[] = "/tmp/gcn-oom-XXXXXX", cfg[96], log[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(cfg, sizeof cfg, "%s/huge.json", dir);
    snprintf(log, sizeof log, "%s/run.jsonl", dir);
    FILE *f = fopen(cfg, "w");
    cr_assert_not_null(f);
    fputs("{\"layers\": [{\"type\": \"linear\", \"out\": 1048576}, "
          "{\"type\": \"linear\", \"out\": \"classes\"}]}", f);
    fclose(f);
    tool_result r;
    tool_run(&r, "gcntrain", (const char *[]){cfg, "--dataset", "sbm:nodes=200000", "--device",
                                              "cuda", "--reorder", "none", "--epochs", "2",
                                              "--quiet", "--log", log, NULL});
    cr_assert_eq(r.code, 1, "%s", r.err);
    cr_assert_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1, "not one line: %s", r.err);
    const char *want[] = {"allocating epoch 1's activations",
                          "a [200000, 1048576] tensor (838860800000 bytes)",
                          "out of GPU memory: cudaMalloc of ", " free of ", " on CUDA device 0"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_assert(strstr(r.err, want[i]), "no '%s' in %s", want[i], r.err);
    const char *with = strstr(r.err, "failed with ");
    cr_assert_not_null(with, "%s", r.err);
    cr_assert_gt(strtoull(with + strlen("failed with "), NULL, 10), 0ull, "%s", r.err);
    cr_assert_not(tool_exists(log), "a run that trained no epoch left a log");
    tool_remove_dir(dir);
}
