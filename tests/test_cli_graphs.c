/* gcntrain on graph-level models: cross-validation under both protocols,
 * the fold file written and read back, and the options that belong to one
 * kind of model refused on the other. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_helpers.h"
#include "tool_run.h"

static tool_result r;

/* The shipped GIN recipe, shrunk: 2 layers of 16, batches of 8. */
static const char small_gin[] =
    "{\"layers\": [{\"type\": \"gin\", \"out\": 16, \"norm\": \"batch\", \"activation\": \"relu\"},"
    " {\"type\": \"gin\", \"out\": 16, \"norm\": \"batch\", \"activation\": \"relu\"}],"
    " \"readout\": {\"jk\": true, \"dropout\": 0.5}, \"batch_size\": 8,"
    " \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}, \"lr_step\": {\"every\": 5, \"gamma\": 0.5}}";

Test(cli_graphs, cross_validation_and_fold_file, .timeout = 120)
{
    char *dir = ds_tmpdir();
    ds_write_tu_shapes(dir, 24);
    ds_write(dir, "gin.json", small_gin);
    char cfg[512], folds[512], log[512];
    snprintf(cfg, sizeof cfg, "%s", ds_path(dir, "gin.json"));
    snprintf(folds, sizeof folds, "%s", ds_path(dir, "shapes.folds"));
    snprintf(log, sizeof log, "%s", ds_path(dir, "cv.jsonl"));
    tool_run(&r, "gcntrain",
             (const char *[]){cfg, "--dataset", "tu:shapes", "--root", dir, "--device", "cpu",
                              "--folds", "3", "--epochs", "4", "--folds-file", folds, "--log",
                              log, "--quiet", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "folds      3, stratified, drawn from data seed 0, written to"),
              "%s", r.out);
    cr_assert(strstr(r.out, "protocol   gin (Xu et al. 2019"), "%s", r.out);
    cr_assert(strstr(r.out, "test accuracy ") && strstr(r.out, "over 3 folds at epoch"), "%s",
              r.out);
    cr_assert(strstr(r.out, "fold  2    test "), "%s", r.out);
    cr_assert(strstr(r.out, "batches    8 graphs each; their products run cpu"), "%s", r.out);
    cr_assert_eq(tool_count(log, "\"epoch\":"), 3 * 4 + 3 + 1, "every epoch, fold and the summary");
    cr_assert_eq(tool_count(log, "\"summary\":true,\"protocol\":\"gin\",\"folds\":3"), 1);
    char text[4096];
    tool_slurp(folds, text, sizeof text);
    cr_assert(strstr(text, "# gcn graph folds: shapes, 24 graphs, 3 folds"), "%s", text);
    /* errica, one fold, the folds read back from the file */
    tool_run(&r, "gcntrain",
             (const char *[]){cfg, "--dataset", "tu:shapes", "--root", dir, "--device", "cpu",
                              "--fold", "1", "--epochs", "3", "--folds-file", folds,
                              "--protocol", "errica", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "folds      3, read from"), "%s", r.out);
    cr_assert(strstr(r.out, "fold 1 of 3: 8 training, 8 validation, 8 test graphs"), "%s", r.out);
    cr_assert(strstr(r.out, "fold  1 epoch    3"), "%s", r.out);
    cr_assert(strstr(r.out, "protocol   errica"), "%s", r.out);
    cr_assert(strstr(r.out, "at its best-validation epoch"), "%s", r.out);
    /* a file with other folds than asked for */
    tool_run(&r, "gcntrain",
             (const char *[]){cfg, "--dataset", "tu:shapes", "--root", dir, "--device", "cpu",
                              "--folds", "4", "--folds-file", folds, NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "--folds 4: ") && strstr(r.err, "holds 3 folds"), "%s", r.err);
    tool_run(&r, "gcntrain",
             (const char *[]){cfg, "--dataset", "tu:shapes", "--root", dir, "--device", "cpu",
                              "--fold", "3", "--folds-file", folds, NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "--fold 3: expected 0 to 2"), "%s", r.err);
    ds_rmtree(dir);
    free(dir);
}

Test(cli_graphs, options_for_the_other_kind_of_model)
{
    char *dir = ds_tmpdir();
    ds_write(dir, "gin.json", small_gin);
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s", ds_path(dir, "gin.json"));
    const char *const graph_cases[][4] = {{"--runs", "2"}, {"--save", "/tmp/x.ckpt"},
                                          {"--predict", "/tmp/p.csv"}};
    for (int i = 0; i < 3; i++) {
        tool_run(&r, "gcntrain",
                 (const char *[]){cfg, graph_cases[i][0], graph_cases[i][1], NULL});
        cr_assert_eq(r.code, 2, "%s", r.err);
        cr_assert(strstr(r.err, "applies to node-level models"), "%s", r.err);
    }
    const char *const node_cases[][2] = {{"--folds", "5"}, {"--fold", "0"},
                                         {"--protocol", "gin"}};
    for (int i = 0; i < 3; i++) {
        tool_run(&r, "gcntrain",
                 (const char *[]){"models/gcn-cora.json", node_cases[i][0], node_cases[i][1],
                                  NULL});
        cr_assert_eq(r.code, 2, "%s", r.err);
        cr_assert(strstr(r.err, "applies to graph-level models"), "%s", r.err);
    }
    tool_run(&r, "gcntrain", (const char *[]){cfg, "--protocol", "pyg", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "expected gin or errica"), "%s", r.err);
    tool_run(&r, "gcntrain",
             (const char *[]){cfg, "--dataset", "sbm:nodes=200", "--device", "cpu", NULL});
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.err, "not a labelled collection of graphs"), "%s", r.err);
    ds_rmtree(dir);
    free(dir);
}
