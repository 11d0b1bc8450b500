/* The best-validation model's evaluation and predictions: the C API
 * against a forward pass of the saved best model on the graph in its
 * original node order, and gcntrain --predict (CSV, .npy) and --eval-only. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "tool_run.h"

/* A 400-node SBM drawn from seed 5, relabelled when reorder is not NULL. */
static gcn_dataset *small_sbm(gcn_ctx *ctx, const char *reorder)
{
    gcn_dataset_opts o = gcn_dataset_default_opts();
    o.reorder = reorder;
    gcn_rng_seed(ctx, 5);
    gcn_dataset *ds = NULL;
    cr_assert_eq(gcn_dataset_load(ctx, &ds, "sbm:nodes=400,features=16,classes=4,valid=100,"
                                            "test=200", &o),
                 GCN_OK, "%s", gcn_last_error(ctx));
    return ds;
}

static gcn_trainer *trainer(gcn_ctx *ctx, const gcn_dataset *ds)
{
    static const char json[] =
        "{\"layers\": [{\"type\": \"gcn\", \"out\": 16, \"norm\": \"batch\", "
        "\"activation\": \"relu\", \"dropout\": 0.5}, "
        "{\"type\": \"gcn\", \"out\": \"classes\", \"dropout\": 0.5}], "
        "\"optimizer\": {\"type\": \"adam\", \"lr\": 0.05}}";
    gcn_model_config cfg;
    char err[256];
    cr_assert_eq(gcn_model_config_parse(&cfg, json, "test", err, sizeof err), GCN_OK, "%s", err);
    gcn_trainer *tr = NULL;
    gcn_rng_seed(ctx, 11);
    cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, ds), GCN_OK, "%s", gcn_last_error(ctx));
    return tr;
}

/* The model's parameters and buffers, concatenated on the host. */
static float *model_state(gcn_ctx *ctx, const gcn_trainer *tr, int64_t *n)
{
    gcn_tensor *list[64];
    const gcn_model *m = gcn_trainer_model(tr);
    int k = gcn_model_params(m, list, NULL);
    k += gcn_model_buffers(m, list + k);
    *n = 0;
    for (int i = 0; i < k; i++)
        *n += gcn_tensor_numel(list[i]);
    float *all = malloc((size_t)*n * sizeof *all), *at = all;
    for (int i = 0; i < k; i++) {
        cr_assert_eq(gcn_tensor_to_host(ctx, list[i], at), GCN_OK);
        at += gcn_tensor_numel(list[i]);
    }
    return all;
}

/* Trained on a METIS-reordered graph until the best validation epoch lies
 * a few epochs back (saved when it was reached), the trainer's predictions
 * are the softmax of the saved model's logits computed on the graph in its
 * original order, row by row, up to the float rounding of the permuted
 * sums; its evaluation repeats the best epoch's accuracies exactly; and
 * neither disturbs the model being trained. */
Test(predict, best_model_predictions_in_original_order, .timeout = 60)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_dataset *orig = small_sbm(ctx, NULL), *perm = small_sbm(ctx, "metis:16,64");
    cr_assert_not_null(perm->reorder);
    char path[] = "/tmp/gcn-best-XXXXXX";
    close(mkstemp(path));
    gcn_trainer *tr = trainer(ctx, perm);
    gcn_train_best best = {0};
    for (int e = 0; e < 200 && gcn_trainer_epochs_done(tr) - best.epoch < 3; e++) {
        gcn_epoch_stats es;
        cr_assert_eq(gcn_trainer_epoch(ctx, tr, &es), GCN_OK, "%s", gcn_last_error(ctx));
        gcn_trainer_best(tr, &best);
        if (best.epoch == es.epoch)
            cr_assert_eq(gcn_trainer_save(ctx, tr, path), GCN_OK, "%s", gcn_last_error(ctx));
    }
    cr_assert_lt(best.epoch, gcn_trainer_epochs_done(tr));
    int64_t n = orig->n_nodes, c = orig->n_classes, n_state, n_after;
    float *before = model_state(ctx, tr, &n_state);
    int32_t *classes = malloc((size_t)n * sizeof *classes);
    float *probs = malloc((size_t)(n * c) * sizeof *probs);
    cr_assert_eq(gcn_trainer_predict(ctx, tr, classes, probs), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_train_best ev;
    cr_assert_eq(gcn_trainer_evaluate(ctx, tr, &ev), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(ev.epoch, best.epoch);
    cr_assert_eq(ev.train_acc, best.train_acc);
    cr_assert_eq(ev.valid_acc, best.valid_acc);
    cr_assert_eq(ev.test_acc, best.test_acc);
    float *after = model_state(ctx, tr, &n_after);
    cr_assert_arr_eq(before, after, (size_t)n_state * sizeof *before, "the model moved");

    /* the reference: the saved best model on the original graph */
    gcn_trainer *ref = trainer(ctx, orig);
    cr_assert_eq(gcn_trainer_load(ctx, ref, path), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_tensor *x = test_tensor(ctx, orig->features, n, orig->n_features), *logits = NULL;
    GCN_NO_GRAD(ctx)
    {
        cr_assert_eq(gcn_model_forward(ctx, (gcn_model *)gcn_trainer_model(ref),
                                       gcn_trainer_adjacency(ref, GCN_ADJ_GCN), NULL, x, false,
                                       &logits),
                     GCN_OK, "%s", gcn_last_error(ctx));
    }
    float *z = test_read(ctx, logits);
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const float *row = z + i * c;
        double top = row[0], second = -INFINITY, sum = 0.0;
        int64_t arg = 0;
        for (int64_t k = 1; k < c; k++) {
            if (row[k] > top) {
                second = top;
                top = row[k];
                arg = k;
            } else if (row[k] > second) {
                second = row[k];
            }
        }
        for (int64_t k = 0; k < c; k++)
            sum += exp((double)row[k] - top);
        for (int64_t k = 0; k < c; k++)
            worst = fmax(worst, fabs(probs[i * c + k] - exp((double)row[k] - top) / sum));
        if (top - second > 1e-4)
            cr_assert_eq(classes[i], arg, "node %lld: class %d, the forward pass says %lld",
                         (long long)i, classes[i], (long long)arg);
    }
    cr_assert_leq(worst, 1e-5, "probabilities differ by up to %g", worst);
    free(z);
    free(before);
    free(after);
    free(classes);
    free(probs);
    gcn_tensor_free(&x);
    gcn_tensor_free(&logits);
    gcn_trainer_free(&ref);
    gcn_trainer_free(&tr);
    unlink(path);
    gcn_dataset_free(&orig);
    gcn_dataset_free(&perm);
    gcn_ctx_free(&ctx);
}

/* Before any epoch the best model is the initial one; a prediction file's
 * bad path fails without leaving a file behind. */
Test(predict, untrained_trainer_and_unwritable_file)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_dataset *ds = small_sbm(ctx, NULL);
    gcn_trainer *tr = trainer(ctx, ds);
    gcn_train_best ev;
    cr_assert_eq(gcn_trainer_evaluate(ctx, tr, &ev), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(ev.epoch, 0);
    int32_t classes[400];
    float probs[400 * 4];
    cr_assert_eq(gcn_trainer_predict(ctx, tr, classes, probs), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_predictions_write(ctx, "/tmp/no/such/dir/p.csv", 400, 4, classes, probs),
                 GCN_ERR_IO);
    cr_assert(strstr(gcn_last_error(ctx), "/tmp/no/such/dir/p.csv"), "%s", gcn_last_error(ctx));
    cr_assert_not(tool_exists("/tmp/no/such/dir"));
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

enum { NODES = 3000, CLASSES = 6 };

/* The CSV's rows: node ids in order, each class the first largest
 * probability, probabilities summing to 1. */
static void read_csv(const char *path, int32_t *classes, float *probs)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[512];
    cr_assert_not_null(fgets(line, sizeof line, f));
    cr_assert_str_eq(line, "node,class,p0,p1,p2,p3,p4,p5\n");
    for (int i = 0; i < NODES; i++) {
        cr_assert_not_null(fgets(line, sizeof line, f), "row %d missing", i);
        char *at = line, *end;
        cr_assert_eq(strtol(at, &end, 10), i);
        classes[i] = (int32_t)strtol(end + 1, &end, 10);
        double sum = 0.0;
        int arg = 0;
        for (int k = 0; k < CLASSES; k++) {
            probs[i * CLASSES + k] = strtof(end + 1, &end);
            sum += probs[i * CLASSES + k];
            arg = probs[i * CLASSES + k] > probs[i * CLASSES + arg] ? k : arg;
        }
        cr_assert_eq(*end, '\n', "row %d: %s", i, line);
        cr_assert_eq(classes[i], arg, "row %d: %s", i, line);
        cr_assert_float_eq(sum, 1.0, 1e-5, "row %d: %s", i, line);
    }
    cr_assert_null(fgets(line, sizeof line, f), "extra row: %s", line);
    fclose(f);
}

/* The .npy file: format 1.0, a structured array of NODES records. */
static void check_npy(const char *path, const int32_t *classes, const float *probs)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    unsigned char pre[10];
    cr_assert_eq(fread(pre, 1, 10, f), 10u);
    cr_assert(memcmp(pre, "\x93NUMPY\x01\x00", 8) == 0);
    size_t len = pre[8] | (size_t)pre[9] << 8;
    cr_assert_eq((10 + len) % 64, 0u);
    char header[512] = "";
    cr_assert_eq(fread(header, 1, len, f), len);
    cr_assert(strstr(header, "{'descr': [('class', '<i4'), ('prob', '<f4', (6,))], "
                             "'fortran_order': False, 'shape': (3000,), }"), "%s", header);
    cr_assert_eq(header[len - 1], '\n');
    for (int i = 0; i < NODES; i++) {
        int32_t c;
        float p[CLASSES];
        cr_assert_eq(fread(&c, sizeof c, 1, f), 1u);
        cr_assert_eq(fread(p, sizeof *p, CLASSES, f), (size_t)CLASSES);
        cr_assert_eq(c, classes[i]);
        cr_assert_arr_eq(p, probs + i * CLASSES, sizeof p, "node %d", i);
    }
    cr_assert_eq(fgetc(f), EOF);
    fclose(f);
}

/* gcntrain --predict on a reordered graph writes CSV or .npy by extension
 * (the same predictions, node by node); --eval-only on the run's
 * checkpoint repeats its best epoch's accuracies and writes the same file. */
Test(predict, cli_predict_and_eval_only, .timeout = 120)
{
    char dir[] = "/tmp/gcn-pred-XXXXXX", ck[96], csv[96], npy[96], again[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(ck, sizeof ck, "%s/model.ckpt", dir);
    snprintf(csv, sizeof csv, "%s/pred.csv", dir);
    snprintf(npy, sizeof npy, "%s/pred.npy", dir);
    snprintf(again, sizeof again, "%s/again.csv", dir);
    tool_result r;
    const char *args[] = {"models/gcn-cora.json", "--epochs", "30", "--runs", "1", "--device",
                          "cpu", "--reorder", "degree", "--quiet", "--save", ck, "--predict",
                          csv, NULL};
    tool_run(&r, "gcntrain", args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    const char *best = strstr(r.out, "run 1 best valid ");
    cr_assert_not_null(best, "%s", r.out);
    double valid, test;
    int epoch;
    cr_assert_eq(sscanf(best, "run 1 best valid %lf at epoch %d: test %lf", &valid, &epoch, &test),
                 3);
    args[13] = npy;
    tool_run(&r, "gcntrain", args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    static int32_t classes[NODES];
    static float probs[NODES * CLASSES];
    read_csv(csv, classes, probs);
    check_npy(npy, classes, probs);

    tool_run(&r, "gcntrain", (const char *[]){"models/gcn-cora.json", "--device", "cpu",
                                              "--reorder", "degree", "--resume", ck,
                                              "--eval-only", "--predict", again, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    char want[128];
    snprintf(want, sizeof want, "after epoch 30: the best-validation model (epoch %d): ", epoch);
    const char *line = strstr(r.out, want);
    cr_assert_not_null(line, "%s", r.out);
    double ev_train, ev_valid, ev_test;
    cr_assert_eq(sscanf(line + strlen(want), "train %lf valid %lf test %lf", &ev_train,
                        &ev_valid, &ev_test), 3);
    cr_assert_eq(ev_valid, valid);
    cr_assert_eq(ev_test, test);
    char *a = malloc(1 << 20), *b = malloc(1 << 20);
    tool_slurp(csv, a, 1 << 20);
    tool_slurp(again, b, 1 << 20);
    cr_assert_str_eq(a, b);
    free(a);
    free(b);
    tool_remove_dir(dir);
}
