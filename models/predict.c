/* The best-validation model: its state kept on the host as training finds
 * it, its accuracies on the splits, its predictions in the dataset's
 * original node order; the current model's predictions of a graph-level
 * trainer's held-out graphs; prediction files (CSV or NumPy .npy), of
 * nodes or keyed by graph id. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/comm_host.h"
#include "../core/internal.h"
#include "trainer_impl.h"

int gcn_trainer_model_state(const gcn_trainer *tr, gcn_tensor **out)
{
    int n = gcn_model_params(tr->model, out, NULL);
    return n + gcn_model_buffers(tr->model, out ? out + n : NULL);
}

/* Copies the model's state to host floats, or (to_model) host floats into
 * the model's state tensors. */
static gcn_status state_copy(gcn_ctx *ctx, const gcn_trainer *tr, float *host, bool to_model)
{
    gcn_status st = GCN_OK;
    for (int i = 0; i < tr->n_state && st == GCN_OK; i++) {
        gcn_tensor *t = tr->state[i];
        if (gcn_tensor_numel(t) == 0)
            continue;
        st = to_model ? gcn_tensor_copy_from_host(ctx, t, host) : gcn_tensor_to_host(ctx, t, host);
        host += gcn_tensor_numel(t);
    }
    return st;
}

gcn_status gcn_trainer_best_init(gcn_ctx *ctx, gcn_trainer *tr)
{
    int n = gcn_trainer_model_state(tr, NULL);
    if (!(tr->state = malloc((size_t)(n > 0 ? n : 1) * sizeof *tr->state)))
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
    tr->n_state = gcn_trainer_model_state(tr, tr->state);
    tr->state_floats = 0;
    for (int i = 0; i < tr->n_state; i++)
        tr->state_floats += (size_t)gcn_tensor_numel(tr->state[i]);
    tr->best_state = malloc((tr->state_floats > 0 ? tr->state_floats : 1) * sizeof(float));
    if (!tr->best_state)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory for the best model "
                         "(%zu floats)", tr->state_floats);
    return state_copy(ctx, tr, tr->best_state, false);
}

gcn_status gcn_trainer_keep_best(gcn_ctx *ctx, gcn_trainer *tr)
{
    return state_copy(ctx, tr, tr->best_state, false);
}

typedef gcn_status (*model_fn)(gcn_ctx *ctx, gcn_trainer *tr, void *user);

/* Runs fn with the best-validation state in the model, then puts the
 * current state back (no swap when the current epoch is the best one). */
static gcn_status with_best_model(gcn_ctx *ctx, gcn_trainer *tr, model_fn fn, void *user)
{
    if (tr->best.epoch == tr->epoch)
        return fn(ctx, tr, user);
    float *current = malloc((tr->state_floats > 0 ? tr->state_floats : 1) * sizeof *current);
    if (!current)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory for the model state");
    gcn_status st = state_copy(ctx, tr, current, false);
    if (st == GCN_OK) {
        st = state_copy(ctx, tr, tr->best_state, true);
        if (st == GCN_OK)
            st = fn(ctx, tr, user);
        gcn_status back = state_copy(ctx, tr, current, true);
        st = st != GCN_OK ? st : back;
    }
    free(current);
    return st;
}

static gcn_status accuracies(gcn_ctx *ctx, gcn_trainer *tr, void *acc)
{
    return gcn_trainer_accuracies(ctx, tr, acc);
}

gcn_status gcn_trainer_evaluate(gcn_ctx *ctx, gcn_trainer *tr, gcn_train_best *out)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, tr && out);
    double acc[3];
    GCN_TRY(with_best_model(ctx, tr, accuracies, acc));
    *out = (gcn_train_best){tr->best.epoch, acc[0], acc[1], acc[2]};
    return GCN_OK;
}

typedef struct predictions {
    int32_t *classes;
    float *probs;
} predictions;

/* Softmax and first largest score of each row, written at the node's
 * original id (row position[id]; the row itself when position is NULL). */
static void rows_to_predictions(const int32_t *position, const float *logits, int64_t rows,
                                int64_t cols, const predictions *p)
{
    for (int64_t node = 0; node < rows; node++) {
        const float *x = logits + (position ? position[node] : node) * cols;
        int64_t best = 0;
        for (int64_t c = 1; c < cols; c++)
            best = x[c] > x[best] ? c : best;
        if (p->classes)
            p->classes[node] = (int32_t)best;
        if (!p->probs)
            continue;
        double sum = 0.0;
        for (int64_t c = 0; c < cols; c++)
            sum += exp((double)x[c] - (double)x[best]);
        for (int64_t c = 0; c < cols; c++)
            p->probs[node * cols + c] = (float)(exp((double)x[c] - (double)x[best]) / sum);
    }
}

/* The predictions of logits (freed here), read back to the host. */
static gcn_status logits_to_predictions(gcn_ctx *ctx, gcn_tensor **logits,
                                        const int32_t *position, const predictions *p)
{
    gcn_status st = GCN_OK;
    int64_t rows = gcn_tensor_rows(*logits), cols = gcn_tensor_cols(*logits);
    float *host = malloc((size_t)(rows * cols > 0 ? rows * cols : 1) * sizeof *host);
    if (!host) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "predictions: out of host memory for [%lld, %lld] "
                       "logits", (long long)rows, (long long)cols);
        goto cleanup;
    }
    GCN_CHECK(gcn_tensor_to_host(ctx, *logits, host));
    rows_to_predictions(position, host, rows, cols, p);
cleanup:
    free(host);
    gcn_tensor_free(logits);
    return st;
}

/* A rank's logits (freed here) to rank 0, which holds every rank's rows
 * in rank order, the partition's order, and writes the predictions. */
static gcn_status gather_predictions(gcn_ctx *ctx, const gcn_trainer *tr, gcn_tensor **logits,
                                     const predictions *p)
{
    int64_t rows = gcn_tensor_rows(*logits), cols = gcn_tensor_cols(*logits);
    size_t bytes = (size_t)(rows * cols) * sizeof(float);
    float *mine = malloc(bytes > 0 ? bytes : 1), *all = NULL;
    int64_t *lens = calloc((size_t)gcn_ctx_ranks(ctx), sizeof *lens);
    gcn_status st = GCN_OK;
    if (!mine || !lens) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "predictions: out of host memory for [%lld, %lld] "
                       "logits", (long long)rows, (long long)cols);
        goto cleanup;
    }
    GCN_CHECK(gcn_tensor_to_host(ctx, *logits, mine));
    gcn_tensor_free(logits);
    GCN_CHECK(gcn_comm_gather_host(ctx, mine, (int64_t)bytes, 0, (void **)&all, lens));
    int64_t total = 0;
    for (int r = 0; r < gcn_ctx_ranks(ctx); r++)
        total += lens[r] / (int64_t)sizeof(float) / cols;
    if (all)
        rows_to_predictions(tr->position, all, total, cols, p);
cleanup:
    gcn_tensor_free(logits);
    free(mine);
    free(all);
    free(lens);
    return st;
}

static gcn_status predict(gcn_ctx *ctx, gcn_trainer *tr, void *user)
{
    gcn_tensor *logits = NULL;
    gcn_status st = gcn_trainer_eval_logits(ctx, tr, &logits);
    if (st != GCN_OK) {
        gcn_tensor_free(&logits);
        return gcn_trainer_allocating(ctx, st, "the predictions' activations");
    }
    if (tr->rank)
        return gather_predictions(ctx, tr, &logits, user);
    return logits_to_predictions(ctx, &logits, tr->graphs ? NULL : tr->position, user);
}

gcn_status gcn_trainer_predict(gcn_ctx *ctx, gcn_trainer *tr, int32_t *classes, float *probs)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, tr);
    predictions p = {classes, probs};
    return with_best_model(ctx, tr, predict, &p);
}

gcn_status gcn_trainer_predict_held_out(gcn_ctx *ctx, gcn_trainer *tr, int32_t *classes,
                                        float *probs)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, tr);
    if (!tr->graphs)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "predictions of held-out graphs: a "
                         "node-level trainer has none (gcn_trainer_predict)");
    gcn_tensor *scores = NULL;
    gcn_status st = gcn_graph_eval_scores(ctx, tr, &scores);
    if (st != GCN_OK) {
        gcn_tensor_free(&scores);
        return gcn_trainer_allocating(ctx, st, "the predictions' activations");
    }
    predictions p = {classes, probs};
    return scores ? logits_to_predictions(ctx, &scores, NULL, &p) : GCN_OK;
}

/* What a prediction file holds: n rows, each keyed by its index (nodes) or
 * by ids[i] (graphs). */
typedef struct pred_rows {
    bool graphs;
    const int32_t *ids;
    int64_t n, n_classes;
    const int32_t *classes;
    const float *probs;
} pred_rows;

/* CSV: a header, then per row its node (or graph) id, class and
 * probabilities (%.9g, which reads back as the same float). */
static bool write_csv(FILE *f, const pred_rows *p)
{
    fputs(p->graphs ? "graph,class" : "node,class", f);
    for (int64_t c = 0; c < p->n_classes; c++)
        fprintf(f, ",p%lld", (long long)c);
    fputc('\n', f);
    for (int64_t i = 0; i < p->n; i++) {
        fprintf(f, "%lld,%d", p->graphs ? (long long)p->ids[i] : (long long)i, p->classes[i]);
        for (int64_t c = 0; c < p->n_classes; c++)
            fprintf(f, ",%.9g", (double)p->probs[i * p->n_classes + c]);
        fputc('\n', f);
    }
    return !ferror(f);
}

/* NumPy format 1.0: one record per row, its graph id (graphs only), class
 * and probabilities, as a structured array of n elements (host byte order,
 * little-endian). */
static bool write_npy(FILE *f, const pred_rows *p)
{
    char dict[256];
    int len = snprintf(dict, sizeof dict,
                       "{'descr': [%s('class', '<i4'), ('prob', '<f4', (%lld,))], "
                       "'fortran_order': False, 'shape': (%lld,), }",
                       p->graphs ? "('graph', '<i4'), " : "", (long long)p->n_classes,
                       (long long)p->n);
    int header = (10 + len + 1 + 63) / 64 * 64; /* magic, version, length, dict, '\n' */
    uint16_t dict_len = (uint16_t)(header - 10);
    const unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                     (unsigned char)(dict_len & 0xff),
                                     (unsigned char)(dict_len >> 8)};
    fwrite(magic, 1, sizeof magic, f);
    fprintf(f, "%-*s\n", header - 10 - 1, dict);
    for (int64_t i = 0; i < p->n; i++) {
        if (p->graphs)
            fwrite(&p->ids[i], sizeof *p->ids, 1, f);
        fwrite(&p->classes[i], sizeof *p->classes, 1, f);
        fwrite(p->probs + i * p->n_classes, sizeof *p->probs, (size_t)p->n_classes, f);
    }
    return !ferror(f);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The file, formatted in memory and written atomically. */
static gcn_status write_predictions(gcn_ctx *ctx, const char *path, const pred_rows *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "%s: out of host memory for the predictions", path);
    bool ok = ends_with(path, ".npy") ? write_npy(f, p) : write_csv(f, p);
    ok = fclose(f) == 0 && ok;
    gcn_status st = ok ? gcn_write_file_atomic(ctx, path, buf, len)
                       : GCN_ERROR(ctx, GCN_ERR_NOMEM, "%s: out of host memory for the "
                                   "predictions", path);
    free(buf);
    return st;
}

gcn_status gcn_predictions_write(gcn_ctx *ctx, const char *path, int64_t n_nodes,
                                 int64_t n_classes, const int32_t *classes, const float *probs)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, path && n_nodes >= 0 && n_classes >= 1 && (n_nodes == 0 || (classes && probs)));
    pred_rows p = {false, NULL, n_nodes, n_classes, classes, probs};
    return write_predictions(ctx, path, &p);
}

gcn_status gcn_graph_predictions_write(gcn_ctx *ctx, const char *path, int64_t n,
                                       const int32_t *ids, int64_t n_classes,
                                       const int32_t *classes, const float *probs)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, path && n >= 0 && n_classes >= 1 && (n == 0 || (ids && classes && probs)));
    pred_rows p = {true, ids, n, n_classes, classes, probs};
    return write_predictions(ctx, path, &p);
}
