/* gcntrain --predict for a cross-validated graph-level model: each test
 * graph's prediction from the model of its fold that the protocol selects
 * (cross-validated predictions, as scikit-learn's cross_val_predict),
 * written keyed by graph id through a temporary file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcntrain.h"

static int out_of_memory(const char *what, double bytes)
{
    fprintf(stderr, "gcntrain: out of host memory for %s (%.1f MiB)\n", what,
            bytes / (1 << 20));
    return EXIT_RUNTIME;
}

int fold_preds_init(session *s, fold_preds *p, bool every_epoch)
{
    size_t n = (size_t)s->ds->n_graphs, c = (size_t)s->ds->n_graph_classes;
    *p = (fold_preds){.n_graphs = s->ds->n_graphs, .n_classes = s->ds->n_graph_classes};
    p->classes = malloc(n * sizeof *p->classes);
    p->probs = malloc(n * c * sizeof *p->probs);
    p->scratch_classes = malloc(n * sizeof *p->scratch_classes);
    p->scratch_probs = malloc(n * c * sizeof *p->scratch_probs);
    p->ids = malloc(n * sizeof *p->ids);
    if (!p->classes || !p->probs || !p->scratch_classes || !p->scratch_probs || !p->ids)
        return out_of_memory("the predictions", (double)(n * (2 * c + 3) * 4));
    if (!every_epoch)
        return 0;
    size_t rows = (size_t)s->cfg.epochs * n;
    p->epochs = s->cfg.epochs;
    p->hist_classes = malloc(rows * sizeof *p->hist_classes);
    p->hist_probs = malloc(rows * c * sizeof *p->hist_probs);
    if (!p->hist_classes || !p->hist_probs)
        return out_of_memory("every epoch's predictions of the test graphs, which the gin "
                             "protocol chooses from once every fold has run",
                             (double)rows * (double)(c + 1) * 4.0);
    return 0;
}

int fold_preds_epoch(session *s, fold_preds *p, gcn_trainer *tr, int epoch)
{
    gcn_status st = gcn_trainer_predict_held_out(s->ctx, tr, p->scratch_classes,
                                                 p->scratch_probs);
    if (st != GCN_OK)
        return fail(s, st, PHASE_TRAIN, "predict");
    size_t c = (size_t)p->n_classes, row = (size_t)(epoch - 1) * (size_t)p->n_graphs;
    for (int32_t i = 0; i < s->ds->n_test; i++) { /* the held-out rows: validation, then test */
        size_t from = (size_t)s->ds->n_valid + (size_t)i, g = (size_t)s->ds->test[i];
        p->hist_classes[row + g] = p->scratch_classes[from];
        memcpy(p->hist_probs + (row + g) * c, p->scratch_probs + from * c, c * sizeof(float));
    }
    return 0;
}

int fold_preds_best(session *s, fold_preds *p, gcn_trainer *tr)
{
    gcn_status st = gcn_trainer_predict(s->ctx, tr, p->scratch_classes, p->scratch_probs);
    if (st != GCN_OK)
        return fail(s, st, PHASE_TRAIN, "predict");
    size_t c = (size_t)p->n_classes;
    for (int32_t i = 0; i < s->ds->n_test; i++) {
        size_t g = (size_t)s->ds->test[i];
        p->classes[g] = p->scratch_classes[g];
        memcpy(p->probs + g * c, p->scratch_probs + g * c, c * sizeof(float));
    }
    return 0;
}

void fold_preds_pick(fold_preds *p, const int32_t *fold, int32_t first, int32_t last, int epoch)
{
    size_t c = (size_t)p->n_classes, row = (size_t)(epoch - 1) * (size_t)p->n_graphs;
    for (size_t g = 0; g < (size_t)p->n_graphs; g++)
        if (fold[g] >= first && fold[g] <= last) {
            p->classes[g] = p->hist_classes[row + g];
            memcpy(p->probs + g * c, p->hist_probs + (row + g) * c, c * sizeof(float));
        }
}

int fold_preds_write(session *s, fold_preds *p, const int32_t *fold, int32_t first,
                     int32_t last, const char *which)
{
    size_t c = (size_t)p->n_classes, n = 0;
    for (int32_t g = 0; g < p->n_graphs; g++)
        if (fold[g] >= first && fold[g] <= last) {
            p->ids[n] = g;
            p->scratch_classes[n] = p->classes[g];
            memcpy(p->scratch_probs + n * c, p->probs + (size_t)g * c, c * sizeof(float));
            n++;
        }
    signals_hold(true);
    gcn_status st = gcn_graph_predictions_write(s->ctx, s->a.predict, (int64_t)n, p->ids,
                                                p->n_classes, p->scratch_classes,
                                                p->scratch_probs);
    signals_hold(false);
    if (st != GCN_OK)
        return fail(s, st, PHASE_OUTPUT, "predict");
    printf("predictions of %zu graphs, the test graphs of %s, each from %s, in %s\n", n,
           first == last ? "the fold" : "every fold", which, s->a.predict);
    return 0;
}

void fold_preds_free(fold_preds *p)
{
    free(p->classes);
    free(p->probs);
    free(p->scratch_classes);
    free(p->scratch_probs);
    free(p->ids);
    free(p->hist_classes);
    free(p->hist_probs);
    *p = (fold_preds){0};
}
