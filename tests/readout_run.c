/* gcn_readout's fixture (readout_run.h). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "core/internal.h"
#include "gpu_helpers.h"
#include "helpers.h"
#include "readout_run.h"

static gcn_status ops_in_turn(gcn_ctx *ctx, gcn_tensor **h, gcn_tensor **w, gcn_tensor **b,
                              const gcn_index *o, const readout_case *c, gcn_tensor **scores)
{
    gcn_status st = GCN_OK;
    for (int k = 0; k < READOUT_HEADS && st == GCN_OK; k++) {
        gcn_tensor *pooled = NULL, *y = NULL, *d = NULL, *sum = NULL;
        st = gcn_segment_pool(ctx, h[k], o, c->kind, &pooled);
        if (st == GCN_OK)
            st = gcn_matmul_bias(ctx, pooled, w[k], b[k], &y);
        if (st == GCN_OK)
            st = gcn_dropout(ctx, y, c->p, c->training, &d);
        if (st == GCN_OK && *scores)
            st = gcn_add(ctx, *scores, d, &sum);
        if (st == GCN_OK) {
            gcn_tensor_free(scores);
            *scores = sum ? sum : gcn_tensor_retain(d);
        }
        gcn_tensor_free(&pooled);
        gcn_tensor_free(&y);
        gcn_tensor_free(&d);
    }
    return st;
}

void readout_run(gcn_ctx *ctx, const readout_case *c, bool fused, readout_result *r)
{
    *r = (readout_result){0};
    gcn_tensor *h[READOUT_HEADS], *w[READOUT_HEADS], *b[READOUT_HEADS];
    for (int k = 0; k < READOUT_HEADS; k++) {
        h[k] = test_tensor(ctx, c->h[k], c->rows, c->cols[k]);
        w[k] = test_tensor(ctx, c->w[k], c->cols[k], c->classes);
        b[k] = test_tensor(ctx, c->b[k], 1, c->classes);
        if (c->training) {
            cr_assert_eq(gcn_tensor_set_requires_grad(h[k], true), GCN_OK);
            cr_assert_eq(gcn_tensor_set_requires_grad(w[k], true), GCN_OK);
            cr_assert_eq(gcn_tensor_set_requires_grad(b[k], true), GCN_OK);
        }
    }
    gcn_index *o = test_index(ctx, c->offsets, c->segs + 1);
    gcn_tensor *scores = NULL, *loss = NULL;
    gcn_status st = fused ? gcn_readout(ctx, h, w, b, READOUT_HEADS, o, c->kind, c->p,
                                        c->training, &scores)
                          : ops_in_turn(ctx, h, w, b, o, c, &scores);
    cr_assert_eq(st, GCN_OK, "%s", gcn_last_error(ctx));
    r->scores = test_read(ctx, scores);
    if (c->training) {
        cr_assert_eq(test_weigh(ctx, scores, &loss), GCN_OK);
        cr_assert_eq(gcn_backward(ctx, loss), GCN_OK, "%s", gcn_last_error(ctx));
        for (int k = 0; k < READOUT_HEADS; k++) {
            r->dh[k] = test_read(ctx, gcn_tensor_grad(h[k]));
            r->dw[k] = test_read(ctx, gcn_tensor_grad(w[k]));
            r->db[k] = test_read(ctx, gcn_tensor_grad(b[k]));
        }
    }
    for (int k = 0; k < READOUT_HEADS; k++) {
        gcn_tensor_free(&h[k]);
        gcn_tensor_free(&w[k]);
        gcn_tensor_free(&b[k]);
    }
    gcn_tensor_free(&scores);
    gcn_tensor_free(&loss);
    gcn_index_free(&o);
}

void readout_result_free(readout_result *r)
{
    free(r->scores);
    for (int k = 0; k < READOUT_HEADS; k++) {
        free(r->dh[k]);
        free(r->dw[k]);
        free(r->db[k]);
    }
    *r = (readout_result){0};
}

readout_case readout_case_random(uint64_t *state, int64_t segs, const int64_t cols[3],
                                 int64_t classes, gcn_pooling kind, float p, bool training)
{
    readout_case c = {.segs = segs, .classes = classes, .kind = kind, .p = p,
                      .training = training};
    int32_t *off = malloc((size_t)(segs + 1) * sizeof *off);
    cr_assert_not_null(off);
    off[0] = 0;
    for (int64_t g = 0; g < segs; g++) {
        *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
        off[g + 1] = off[g] + (g % 7 == 3 ? 0 : (int32_t)(*state >> 58));
    }
    c.offsets = off;
    c.rows = off[segs];
    for (int k = 0; k < READOUT_HEADS; k++) {
        c.cols[k] = cols[k];
        c.h[k] = host_random(state, c.rows * cols[k], -2.0f, 2.0f);
        c.w[k] = host_random(state, cols[k] * classes, -1.0f, 1.0f);
        c.b[k] = host_random(state, classes, -1.0f, 1.0f);
    }
    return c;
}

void readout_case_free(readout_case *c)
{
    free((void *)c->offsets);
    for (int k = 0; k < READOUT_HEADS; k++) {
        free((void *)c->h[k]);
        free((void *)c->w[k]);
        free((void *)c->b[k]);
    }
    *c = (readout_case){0};
}
