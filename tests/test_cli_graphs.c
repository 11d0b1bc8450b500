/* gcntrain on graph-level models: cross-validation under both protocols,
 * the fold file written and read back, cross-validated predictions, one
 * fold's checkpoints resumed, and the options that belong to one kind of
 * model refused on the other. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_helpers.h"
#include "helpers.h"
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
    const char *const graph_cases[][2] = {{"--runs", "2"}, {"--export-data", "/tmp"}};
    for (int i = 0; i < 2; i++) {
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

/* ---- predictions and checkpoints ---------------------------------------- */

/* A graph predictions CSV of two classes: its header, rows by ascending
 * graph id, each class the first largest of probabilities summing to 1.
 * Returns the rows. */
static int read_graph_csv(const char *path, int32_t *ids, int32_t *classes, float *probs)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[256];
    cr_assert_not_null(fgets(line, sizeof line, f));
    cr_assert_str_eq(line, "graph,class,p0,p1\n");
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char *end;
        ids[n] = (int32_t)strtol(line, &end, 10);
        classes[n] = (int32_t)strtol(end + 1, &end, 10);
        probs[2 * n] = strtof(end + 1, &end);
        probs[2 * n + 1] = strtof(end + 1, &end);
        cr_assert_eq(*end, '\n', "%s", line);
        cr_assert(n == 0 || ids[n] > ids[n - 1], "ids not ascending: %s", line);
        cr_assert(classes[n] == 0 || classes[n] == 1, "%s", line);
        cr_assert_eq(classes[n], probs[2 * n + 1] > probs[2 * n] ? 1 : 0, "%s", line);
        cr_assert_float_eq(probs[2 * n] + probs[2 * n + 1], 1.0f, 1e-5f, "%s", line);
        n++;
    }
    fclose(f);
    return n;
}

/* The value after `key` in the first line of the log that holds `prefix`. */
static double log_value(const char *log, const char *prefix, const char *key)
{
    static char text[1 << 16];
    tool_slurp(log, text, sizeof text);
    const char *line = strstr(text, prefix);
    cr_assert_not_null(line, "%s not in %s", prefix, log);
    const char *at = strstr(line, key);
    cr_assert(at && at < strchr(line, '\n'), "%s: no %s", prefix, key);
    return strtod(at + strlen(key), NULL);
}

/* The whole file, *n bytes; caller frees. */
static char *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    char *buf = malloc(1 << 20);
    *n = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

static void expect_same_bytes(const char *a, const char *b)
{
    size_t na, nb;
    char *x = read_bytes(a, &na), *y = read_bytes(b, &nb);
    cr_assert(na > 0 && na == nb && memcmp(x, y, na) == 0, "%s and %s differ", a, b);
    free(x);
    free(y);
}

/* A folder with tu:shapes (24 graphs) and the small GIN's configuration;
 * args holds CONFIG --dataset tu:shapes --root DIR --device cpu --quiet
 * and room for more up to the NULL at args[29]. */
typedef struct shapes_run {
    char *dir;
    char cfg[512];
    const char *args[30];
    int n;
} shapes_run;

static void shapes_open(shapes_run *t)
{
    t->dir = ds_tmpdir();
    ds_write_tu_shapes(t->dir, 24);
    ds_write(t->dir, "gin.json", small_gin);
    snprintf(t->cfg, sizeof t->cfg, "%s", ds_path(t->dir, "gin.json"));
    const char *base[] = {t->cfg, "--dataset", "tu:shapes", "--root", t->dir, "--device", "cpu",
                          "--quiet"};
    memset(t->args, 0, sizeof t->args);
    memcpy(t->args, base, sizeof base);
    t->n = 8;
}

/* Runs gcntrain with the base arguments and the NULL-terminated more. */
static void shapes_gcntrain(shapes_run *t, const char *const *more)
{
    int n = t->n;
    for (int i = 0; more[i]; i++)
        t->args[n++] = more[i];
    cr_assert(n < 30);
    t->args[n] = NULL;
    tool_run(&r, "gcntrain", t->args);
}

static char *shapes_file(const shapes_run *t, const char *name)
{
    char *path = malloc(strlen(t->dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", t->dir, name);
    return path;
}

static void shapes_close(shapes_run *t)
{
    ds_rmtree(t->dir);
    free(t->dir);
}

/* --predict with every fold (gin): one row per graph, each classified as
 * its fold's test accuracy at the protocol's epoch counts it. */
Test(cli_graphs, cross_validated_predictions, .timeout = 120)
{
    shapes_run t;
    shapes_open(&t);
    char *pred = shapes_file(&t, "pred.csv"), *log = shapes_file(&t, "cv.jsonl");
    shapes_gcntrain(&t, (const char *[]){"--folds", "3", "--epochs", "6", "--predict", pred,
                                         "--log", log, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    const char *said = strstr(r.out, "test accuracy ");
    int epoch = 0;
    cr_assert(said && sscanf(strstr(said, " at epoch "), " at epoch %d", &epoch) == 1, "%s",
              r.out);
    char want[160];
    snprintf(want, sizeof want, "predictions of 24 graphs, the test graphs of every fold, each "
             "from its fold's model after epoch %d (the protocol's), in %s", epoch, pred);
    cr_assert(strstr(r.out, want), "%s", r.out);
    int32_t ids[32], classes[32], fold[24];
    float probs[64];
    cr_assert_eq(read_graph_csv(pred, ids, classes, probs), 24);
    for (int g = 0; g < 24; g++)
        cr_assert_eq(ids[g], g);
    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_dataset *ds = ds_load_shapes_fold(ctx, t.dir, 3, 0, 0, false, fold);
    for (int f = 0; f < 3; f++) {
        int n = 0, correct = 0;
        for (int g = 0; g < 24; g++)
            if (fold[g] == f) {
                n++;
                correct += classes[g] == ds->graph_labels[g];
            }
        char prefix[64];
        snprintf(prefix, sizeof prefix, "{\"fold\":%d,\"test_acc\":", f);
        cr_assert_float_eq((double)correct / n, log_value(log, prefix, prefix), 1e-6,
                           "fold %d", f);
        cr_assert_eq(log_value(log, prefix, "\"epoch\":"), epoch);
    }
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    free(pred);
    free(log);
    shapes_close(&t);
}

/* --fold F under errica: that fold's test graphs, from its best-validation
 * model, as the library predicts them (CSV and .npy alike). */
Test(cli_graphs, fold_predictions_are_the_library_s, .timeout = 120)
{
    shapes_run t;
    shapes_open(&t);
    char *csv = shapes_file(&t, "pred.csv"), *npy = shapes_file(&t, "pred.npy");
    const char *more[] = {"--folds", "3", "--fold", "1", "--protocol", "errica", "--epochs",
                          "10", "--predict", csv, NULL};
    shapes_gcntrain(&t, more);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "predictions of 8 graphs, the test graphs of the fold, each from "
                            "its fold's best-validation model"), "%s", r.out);
    more[9] = npy;
    shapes_gcntrain(&t, more);
    cr_assert_eq(r.code, 0, "%s", r.err);
    int32_t ids[32], classes[32], lib_classes[24];
    float probs[64], lib_probs[48];
    cr_assert_eq(read_graph_csv(csv, ids, classes, probs), 8);

    gcn_ctx *ctx = test_cpu_ctx(0);
    gcn_dataset *ds = ds_load_shapes_fold(ctx, t.dir, 3, 0, 1, true, NULL);
    gcn_trainer *tr = ds_train_graphs(ctx, small_gin, ds, 1, 10, NULL, NULL, NULL);
    cr_assert_eq(gcn_trainer_predict(ctx, tr, lib_classes, lib_probs), GCN_OK, "%s",
                 gcn_last_error(ctx));
    cr_assert_eq(ds->n_test, 8);
    for (int i = 0; i < 8; i++) {
        int32_t g = ds->test[i];
        cr_assert_eq(ids[i], g);
        cr_assert_eq(classes[i], lib_classes[g], "graph %d", g);
        cr_assert_float_eq(probs[2 * i], lib_probs[2 * g], 1e-5f, "graph %d", g);
    }
    FILE *f = fopen(npy, "rb");
    cr_assert_not_null(f);
    unsigned char pre[10];
    cr_assert_eq(fread(pre, 1, 10, f), 10u);
    cr_assert(memcmp(pre, "\x93NUMPY\x01\x00", 8) == 0);
    size_t len = pre[8] | (size_t)pre[9] << 8;
    char header[256] = "";
    cr_assert(len < sizeof header && fread(header, 1, len, f) == len);
    cr_assert(strstr(header, "{'descr': [('graph', '<i4'), ('class', '<i4'), ('prob', '<f4', "
                             "(2,))], 'fortran_order': False, 'shape': (8,), }"), "%s", header);
    for (int i = 0; i < 8; i++) {
        int32_t rec[2];
        float p[2];
        cr_assert_eq(fread(rec, sizeof *rec, 2, f), 2u);
        cr_assert_eq(fread(p, sizeof *p, 2, f), 2u);
        cr_assert(rec[0] == ids[i] && rec[1] == classes[i], "row %d", i);
        cr_assert(p[0] == probs[2 * i] && p[1] == probs[2 * i + 1], "row %d", i);
    }
    cr_assert_eq(fgetc(f), EOF);
    fclose(f);
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    free(csv);
    free(npy);
    shapes_close(&t);
}

/* The log's line of epoch e of fold 2, from its loss to its accuracies. */
static void epoch_line(const char *log, int e, char *out, size_t size)
{
    static char text[1 << 16];
    tool_slurp(log, text, sizeof text);
    char key[64];
    snprintf(key, sizeof key, "{\"fold\":2,\"epoch\":%d,", e);
    const char *at = strstr(text, key), *end = at ? strstr(at, ",\"train_ms\"") : NULL;
    cr_assert(at && end, "%s: no epoch %d", log, e);
    snprintf(out, size, "%.*s", (int)(end - at), at);
}

/* --fold F --save, then --resume: the epochs after the checkpoint, the last
 * checkpoint and (errica: from the best-validation model the checkpoint
 * keeps) the predictions are those of the run never stopped. */
Test(cli_graphs, fold_checkpoints_resume_the_same_run, .timeout = 180)
{
    shapes_run t;
    shapes_open(&t);
    char *full = shapes_file(&t, "full.ckpt"), *part = shapes_file(&t, "part.ckpt");
    char *full_log = shapes_file(&t, "full.jsonl"), *part_log = shapes_file(&t, "part.jsonl");
    char *full_pred = shapes_file(&t, "full.csv"), *part_pred = shapes_file(&t, "part.csv");
    const char *protocols[] = {"gin", "errica"};
    for (int p = 0; p < 2; p++) {
        const char *common[] = {"--folds", "3", "--fold", "2", "--protocol", protocols[p]};
        shapes_gcntrain(&t, (const char *[]){common[0], common[1], common[2], common[3],
                                             common[4], common[5], "--epochs", "8", "--save",
                                             full, "--log", full_log, "--force", "--predict",
                                             full_pred, NULL});
        cr_assert_eq(r.code, 0, "%s", r.err);
        char full_fold[160];
        const char *line = strstr(r.out, "fold  2    test ");
        cr_assert_not_null(line, "%s", r.out);
        snprintf(full_fold, sizeof full_fold, "%.*s", (int)(strstr(line, " (best") - line), line);
        shapes_gcntrain(&t, (const char *[]){common[0], common[1], common[2], common[3],
                                             common[4], common[5], "--epochs", "4", "--save",
                                             part, "--save-every", "3", NULL});
        cr_assert_eq(r.code, 0, "%s", r.err);
        shapes_gcntrain(&t, (const char *[]){common[0], common[1], common[2], common[3],
                                             common[4], common[5], "--epochs", "8", "--resume",
                                             part, "--save", part, "--save-every", "3", "--log",
                                             part_log, "--force", "--predict", part_pred, NULL});
        cr_assert_eq(r.code, 0, "%s", r.err);
        cr_assert(strstr(r.out, "fold 2 resumed from "), "%s", r.out);
        cr_assert(strstr(r.out, "resumed after epoch 4: of epochs 1-4 only epoch "), "%s", r.out);
        cr_assert_eq(tool_count(part_log, "\"resumed_at_epoch\":4,"), 1);
        cr_assert_eq(tool_count(part_log, "{\"fold\":2,\"epoch\":"), 4, "epochs 5 to 8");
        for (int e = 5; e <= 8; e++) {
            char a[256], b[256];
            epoch_line(full_log, e, a, sizeof a);
            epoch_line(part_log, e, b, sizeof b);
            cr_assert_str_eq(a, b, "%s epoch %d", protocols[p], e);
        }
        expect_same_bytes(full, part);
        int32_t ids[32], classes[32];
        float probs[64];
        cr_assert_eq(read_graph_csv(part_pred, ids, classes, probs), 8);
        if (p == 1) { /* errica: the same fold result and predictions */
            cr_assert(strstr(r.out, full_fold), "%s\nvs %s", r.out, full_fold);
            expect_same_bytes(full_pred, part_pred);
        }
    }
    free(full);
    free(part);
    free(full_log);
    free(part_log);
    free(full_pred);
    free(part_pred);
    shapes_close(&t);
}

/* --save and --resume need one fold; a checkpoint resumes only its own
 * fold's split, and no more epochs than it has: exit 2, one line, no
 * checkpoint, predictions or log written. */
Test(cli_graphs, checkpoints_refused, .timeout = 120)
{
    shapes_run t;
    shapes_open(&t);
    char *ck = shapes_file(&t, "f0.ckpt"), *out = shapes_file(&t, "o.ckpt");
    char *pred = shapes_file(&t, "o.csv"), *log = shapes_file(&t, "o.jsonl");
    const struct {
        const char *args[5], *want;
    } usage[] = {
        {{"--save", out, NULL}, "--save: a graph-level checkpoint holds one fold's model; "
                                "choose the fold with --fold F"},
        {{"--resume", ck, "--folds", "3", NULL}, "--resume: a graph-level checkpoint holds one"},
        {{"--fold", "0", "--save-every", "2", NULL}, "--save-every needs --save FILE"}};
    for (int i = 0; i < 3; i++) {
        shapes_gcntrain(&t, usage[i].args);
        cr_assert_eq(r.code, 2, "case %d: %s", i, r.err);
        cr_assert(strstr(r.err, usage[i].want), "case %d: %s", i, r.err);
        tool_expect_one_line(r.err);
    }
    shapes_gcntrain(&t, (const char *[]){"--folds", "3", "--fold", "0", "--epochs", "2", "--save",
                                         ck, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    const char *mismatch[][4] = {{"--folds", "3", "--fold", "1"},
                                 {"--folds", "4", "--fold", "0"},
                                 {"--fold", "0", "--protocol", "errica"}};
    for (int i = 0; i < 3; i++) {
        shapes_gcntrain(&t, (const char *[]){mismatch[i][0], mismatch[i][1], mismatch[i][2],
                                             mismatch[i][3], "--resume", ck, "--save", out,
                                             "--predict", pred, "--log", log, NULL});
        cr_assert_eq(r.code, 2, "case %d: %s", i, r.err);
        cr_assert(strstr(r.err, "gcntrain: resume: ") &&
                  strstr(r.err, ": saved for another split of the graphs (another fold, "
                                "protocol, fold file or data seed)"), "case %d: %s", i, r.err);
        tool_expect_one_line(r.err);
    }
    shapes_gcntrain(&t, (const char *[]){"--folds", "3", "--fold", "0", "--epochs", "1",
                                         "--resume", ck, "--save", out, "--predict", pred,
                                         "--log", log, NULL});
    cr_assert_eq(r.code, 2, "%s", r.err);
    cr_assert(strstr(r.err, "has trained 2 epochs, more than the 1 asked for"), "%s", r.err);
    tool_expect_one_line(r.err);
    cr_assert(!tool_exists(out) && !tool_exists(pred) && !tool_exists(log));
    free(ck);
    free(out);
    free(pred);
    free(log);
    shapes_close(&t);
}
