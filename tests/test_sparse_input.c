/* gcn_sparse_dropout_matmul against gcn_dropout on the dense matrix and a
 * double-precision product, and models that take their sparse input
 * features that way against the dense path. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gcn.h"
#include "helpers.h"
#include "sbm_train.h"
#include "threads_check.h"

enum { ROWS = 37, COLS = 53 };

/* A ROWS x COLS matrix, about 1 in 8 elements non-zero, row 3 empty and
 * row 5 full, dense in x and as CSR arrays. */
typedef struct sparse_fixture {
    float x[ROWS * COLS];
    int32_t row_ptr[ROWS + 1], col[ROWS * COLS];
    float val[ROWS * COLS];
    int32_t nnz;
} sparse_fixture;

static void fixture_make(sparse_fixture *f, uint64_t seed)
{
    uint64_t state = seed;
    float u[ROWS * COLS];
    test_fill_uniform(&state, u, ROWS * COLS, 0.0f, 1.0f);
    test_fill_uniform(&state, f->x, ROWS * COLS, -1.0f, 1.0f);
    f->nnz = 0;
    f->row_ptr[0] = 0;
    for (int i = 0; i < ROWS; i++) {
        for (int j = 0; j < COLS; j++) {
            bool on = i == 5 || (i != 3 && u[i * COLS + j] < 0.125f);
            if (!on) {
                f->x[i * COLS + j] = 0.0f;
                continue;
            }
            f->col[f->nnz] = j;
            f->val[f->nnz++] = f->x[i * COLS + j];
        }
        f->row_ptr[i + 1] = f->nnz;
    }
}

/* The dropout gcn_dropout draws on the dense x in a fresh context of this
 * seed (with node ids when given), read back. */
static float *dense_dropout(const sparse_fixture *f, uint64_t seed, const int32_t *ids, float p)
{
    gcn_ctx *ctx = test_cpu_ctx(seed);
    if (ids)
        cr_assert_eq(gcn_ctx_set_node_ids(ctx, ids, ROWS, ROWS), GCN_OK);
    gcn_tensor *x = test_tensor(ctx, f->x, ROWS, COLS), *d = NULL;
    cr_assert_eq(gcn_dropout(ctx, x, p, true, &d), GCN_OK, "%s", gcn_last_error(ctx));
    float *h = test_read(ctx, d);
    gcn_tensor_free(&x);
    gcn_tensor_free(&d);
    gcn_ctx_free(&ctx);
    return h;
}

/* out = d^T g (transposed) or d w, in double, d [ROWS, COLS]. */
static void product_ref(const float *d, const float *b, int64_t n, bool transposed, double *out)
{
    int64_t m = transposed ? COLS : ROWS;
    for (int64_t i = 0; i < m; i++)
        for (int64_t k = 0; k < n; k++) {
            double s = 0.0;
            for (int64_t l = 0; l < (transposed ? ROWS : COLS); l++) {
                double a = transposed ? d[l * COLS + i] : d[i * COLS + l];
                s += a * b[l * n + k];
            }
            out[i * n + k] = s;
        }
}

/* Forward against the dense dropout's values times w, and w's gradient
 * (under test_weigh's loss) against d^T dL/dy, in double; for widths
 * across the GPU kernel's column passes, training with p = 0.5 and p = 0
 * and evaluation, with and without node ids. */
Test(sparse_input, product_equals_dropout_then_matmul)
{
    sparse_fixture f;
    fixture_make(&f, 11);
    int32_t ids[ROWS];
    for (int32_t i = 0; i < ROWS; i++)
        ids[i] = (i * 7 + 3) % ROWS;
    const int64_t widths[] = {1, 16, 33, 130};
    const struct { float p; bool training; } modes[] = {{0.5f, true}, {0.0f, true}, {0.5f, false}};
    for (size_t k = 0; k < sizeof widths / sizeof *widths; k++)
        for (size_t m = 0; m < sizeof modes / sizeof *modes; m++)
            for (int with_ids = 0; with_ids < 2; with_ids++) {
                int64_t n = widths[k];
                float p = modes[m].p;
                bool training = modes[m].training;
                gcn_ctx *ctx = test_cpu_ctx(21);
                if (with_ids)
                    cr_assert_eq(gcn_ctx_set_node_ids(ctx, ids, ROWS, ROWS), GCN_OK);
                gcn_csr *xs = NULL;
                cr_assert_eq(gcn_csr_create(ctx, &xs, ROWS, COLS, f.nnz, f.row_ptr, f.col, f.val),
                             GCN_OK);
                uint64_t state = 5 + (uint64_t)n;
                float *wh = malloc((size_t)(COLS * n) * sizeof *wh);
                test_fill_uniform(&state, wh, COLS * n, -1.0f, 1.0f);
                /* dL/dy of test_weigh's loss, from a leaf g in y's place */
                gcn_tensor *g = NULL, *gl = NULL;
                cr_assert_eq(gcn_tensor_zeros(ctx, &g, ROWS, n), GCN_OK);
                cr_assert_eq(gcn_tensor_set_requires_grad(g, true), GCN_OK);
                cr_assert_eq(test_weigh(ctx, g, &gl), GCN_OK);
                cr_assert_eq(gcn_backward(ctx, gl), GCN_OK);
                float *dy = test_read(ctx, gcn_tensor_grad(g));
                gcn_tensor *w = test_tensor(ctx, wh, COLS, n), *y = NULL, *loss = NULL;
                cr_assert_eq(gcn_tensor_set_requires_grad(w, true), GCN_OK);
                cr_assert_eq(gcn_sparse_dropout_matmul(ctx, xs, p, training, w, &y), GCN_OK,
                             "%s", gcn_last_error(ctx));
                float *d = training && p > 0.0f ? dense_dropout(&f, 21, with_ids ? ids : NULL, p)
                                                : NULL;
                const float *dx = d ? d : f.x;
                double *want = malloc((size_t)(COLS * n) * sizeof *want);
                product_ref(dx, wh, n, false, want);
                float *got = test_read(ctx, y);
                double err = test_rel_err(got, want, ROWS * n);
                cr_assert_leq(err, 1e-6, "width %lld, p %g, training %d, ids %d: forward %g",
                              (long long)n, (double)p, training, with_ids, err);
                cr_assert_eq(test_weigh(ctx, y, &loss), GCN_OK);
                cr_assert_eq(gcn_backward(ctx, loss), GCN_OK, "%s", gcn_last_error(ctx));
                product_ref(dx, dy, n, true, want);
                float *dw = test_read(ctx, gcn_tensor_grad(w));
                err = test_rel_err(dw, want, COLS * n);
                cr_assert_leq(err, 1e-6, "width %lld, p %g, training %d, ids %d: dw %g",
                              (long long)n, (double)p, training, with_ids, err);
                free(wh);
                free(d);
                free(want);
                free(got);
                free(dy);
                free(dw);
                gcn_tensor_free(&w);
                gcn_tensor_free(&y);
                gcn_tensor_free(&loss);
                gcn_tensor_free(&g);
                gcn_tensor_free(&gl);
                gcn_csr_free(&xs);
                gcn_ctx_free(&ctx);
            }
}

Test(sparse_input, arguments_are_checked)
{
    sparse_fixture f;
    fixture_make(&f, 3);
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_csr *xs = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &xs, ROWS, COLS, f.nnz, f.row_ptr, f.col, f.val), GCN_OK);
    float wh[(COLS + 1) * 2] = {0};
    gcn_tensor *w = test_tensor(ctx, wh, COLS + 1, 2), *w2 = test_tensor(ctx, wh, COLS, 2);
    gcn_tensor *y = NULL;
    cr_assert_eq(gcn_sparse_dropout_matmul(ctx, xs, 0.5f, true, w, &y), GCN_ERR_SHAPE);
    cr_assert(strstr(gcn_last_error(ctx), "x is 37 x 53 but w is [54, 2]"), "%s",
              gcn_last_error(ctx));
    cr_assert_eq(gcn_sparse_dropout_matmul(ctx, xs, 1.0f, true, w2, &y), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_sparse_dropout_matmul(ctx, NULL, 0.5f, true, w2, &y), GCN_ERR_INVALID_ARG);
    cr_assert_null(y);
    gcn_tensor_free(&w);
    gcn_tensor_free(&w2);
    gcn_csr_free(&xs);
    gcn_ctx_free(&ctx);
}

/* Training on bag-of-words features through the sparse first layer agrees
 * epoch by epoch with the dense path (the same masks; float rounding of
 * the product apart), for a GCN layer that transforms first and for a
 * linear one; dense features and a layer that aggregates first stay
 * dense. */
Test(sparse_input, training_matches_dense_features, .timeout = 60)
{
    const char *firsts[] = {"{\"type\": \"gcn\", \"out\": 16, \"activation\": \"relu\", "
                            "\"dropout\": 0.5}",
                            "{\"type\": \"linear\", \"out\": 16, \"activation\": \"relu\", "
                            "\"dropout\": 0.5}"};
    for (size_t k = 0; k < 2; k++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"layers\": [%s, {\"type\": \"gcn\", \"out\": \"classes\", \"dropout\": 0.5}],"
                 " \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}",
                 firsts[k]);
        gcn_model_config on, off;
        char err[256];
        cr_assert_eq(gcn_model_config_parse(&on, json, "test", err, sizeof err), GCN_OK, "%s", err);
        off = on;
        cr_assert(on.sparse_input, "on by default");
        off.sparse_input = false;
        gcn_ctx *ca = test_cpu_ctx(8), *cb = test_cpu_ctx(8);
        gcn_dataset *a = sbm_bag_of_words(ca, true), *b = sbm_bag_of_words(cb, true);
        gcn_trainer *ta = NULL, *tb = NULL;
        cr_assert_eq(gcn_trainer_create(ca, &ta, &on, a), GCN_OK, "%s", gcn_last_error(ca));
        cr_assert_eq(gcn_trainer_create(cb, &tb, &off, b), GCN_OK, "%s", gcn_last_error(cb));
        const gcn_csr *xs = gcn_model_sparse_input(gcn_trainer_model(ta));
        cr_assert_not_null(xs, "%s: bag of words taken sparse", firsts[k]);
        cr_assert_eq(gcn_csr_rows(xs), 400);
        cr_assert_eq(gcn_csr_cols(xs), 200);
        cr_assert(gcn_csr_nnz(xs) > 400 && gcn_csr_nnz(xs) < 400 * 200 / 16, "%d",
                  gcn_csr_nnz(xs));
        cr_assert_null(gcn_model_sparse_input(gcn_trainer_model(tb)), "sparse_input off");
        for (int e = 0; e < 10; e++) {
            gcn_epoch_stats sa, sb;
            cr_assert_eq(gcn_trainer_epoch(ca, ta, &sa), GCN_OK, "%s", gcn_last_error(ca));
            cr_assert_eq(gcn_trainer_epoch(cb, tb, &sb), GCN_OK, "%s", gcn_last_error(cb));
            double rel = fabs((double)sa.loss - sb.loss) / fabs((double)sb.loss);
            cr_assert_leq(rel, 1e-5, "%s, epoch %d: loss %.9g against %.9g", firsts[k], e + 1,
                          (double)sa.loss, (double)sb.loss);
        }
        gcn_trainer_free(&ta);
        gcn_trainer_free(&tb);
        gcn_dataset_free(&a);
        gcn_dataset_free(&b);
        gcn_ctx_free(&ca);
        gcn_ctx_free(&cb);
    }
}

Test(sparse_input, dense_features_and_aggregating_layers_stay_dense)
{
    gcn_model_config cfg;
    char err[256];
    const char *gcn_first = "{\"layers\": [{\"type\": \"gcn\", \"out\": 16, \"dropout\": 0.5}, "
                            "{\"type\": \"gcn\", \"out\": \"classes\"}]}";
    const char *gin_first = "{\"layers\": [{\"type\": \"gin\", \"out\": 16, \"dropout\": 0.5}, "
                            "{\"type\": \"gcn\", \"out\": \"classes\"}]}";
    const char *cached = "{\"layers\": [{\"type\": \"gcn\", \"out\": 16}, "
                         "{\"type\": \"gcn\", \"out\": \"classes\"}]}";
    const struct { const char *json; bool sparse_data, want; } cases[] = {
        {gcn_first, true, true}, {gcn_first, false, false}, {gin_first, true, false},
        {cached, true, false}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        cr_assert_eq(gcn_model_config_parse(&cfg, cases[k].json, "test", err, sizeof err), GCN_OK, "%s",
                     err);
        gcn_ctx *ctx = test_cpu_ctx(2);
        gcn_dataset *ds = sbm_bag_of_words(ctx, cases[k].sparse_data);
        gcn_trainer *tr = NULL;
        cr_assert_eq(gcn_trainer_create(ctx, &tr, &cfg, ds), GCN_OK, "%s", gcn_last_error(ctx));
        bool used = gcn_model_sparse_input(gcn_trainer_model(tr)) != NULL;
        cr_assert_eq(used, cases[k].want, "case %zu", k);
        gcn_epoch_stats s;
        cr_assert_eq(gcn_trainer_epoch(ctx, tr, &s), GCN_OK, "%s", gcn_last_error(ctx));
        gcn_trainer_free(&tr);
        gcn_dataset_free(&ds);
        gcn_ctx_free(&ctx);
    }
}

/* A matrix that splits unevenly across threads (one row of every column,
 * every fifth row empty): at 3 threads the product and w's gradient are
 * the 1-thread bits (each row is summed by one thread, in order), and
 * without dropout they match a double-precision product. */
Test(sparse_input, threads_split_rows_by_entries, .timeout = 60)
{
    enum { R = 1500, C = 300, N = 64 };
    int32_t *row_ptr = malloc((R + 1) * sizeof *row_ptr), *col = malloc(R * 20 * sizeof *col);
    float *val = malloc(R * 20 * sizeof *val), *wh = random_floats(C * N, -1.0f, 1.0f, 4);
    int32_t nnz = 0;
    row_ptr[0] = 0;
    for (int32_t i = 0; i < R; i++) {
        int32_t deg = i == 7 ? C : i % 5 == 0 ? 0 : 1 + i % 17;
        for (int32_t k = 0; k < deg; k++) {
            col[nnz] = i == 7 ? k : (i * 31 + k * 17) % C;
            val[nnz++] = (float)((i + k) % 7) - 3.0f;
        }
        row_ptr[i + 1] = nnz;
    }
    for (int drop = 0; drop < 2; drop++) {
        float *y[2], *dw[2];
        for (int k = 0; k < 2; k++) {
            gcn_ctx *ctx = threads_ctx(k ? 3 : 1, 9);
            gcn_csr *xs = NULL;
            cr_assert_eq(gcn_csr_create(ctx, &xs, R, C, nnz, row_ptr, col, val), GCN_OK);
            gcn_tensor *w = test_tensor(ctx, wh, C, N), *out = NULL, *loss = NULL;
            cr_assert_eq(gcn_tensor_set_requires_grad(w, true), GCN_OK);
            cr_assert_eq(gcn_sparse_dropout_matmul(ctx, xs, drop ? 0.5f : 0.0f, true, w, &out),
                         GCN_OK, "%s", gcn_last_error(ctx));
            cr_assert_eq(test_weigh(ctx, out, &loss), GCN_OK);
            cr_assert_eq(gcn_backward(ctx, loss), GCN_OK);
            y[k] = test_read(ctx, out);
            dw[k] = test_read(ctx, gcn_tensor_grad(w));
            gcn_tensor_free(&w);
            gcn_tensor_free(&out);
            gcn_tensor_free(&loss);
            gcn_csr_free(&xs);
            gcn_ctx_free(&ctx);
        }
        expect_same_bits(y[1], y[0], (size_t)R * N * sizeof(float), "product", 3, 1);
        expect_same_bits(dw[1], dw[0], (size_t)C * N * sizeof(float), "dw", 3, 1);
        if (!drop) {
            double *want = malloc((size_t)R * N * sizeof *want);
            for (int32_t i = 0; i < R; i++)
                for (int32_t k = 0; k < N; k++) {
                    double s = 0.0;
                    for (int32_t e = row_ptr[i]; e < row_ptr[i + 1]; e++)
                        s += (double)val[e] * wh[(int64_t)col[e] * N + k];
                    want[(int64_t)i * N + k] = s;
                }
            expect_near(y[1], want, NULL, (int64_t)R * N, 1e-5, "product at 3 threads");
            free(want);
        }
        for (int k = 0; k < 2; k++) {
            free(y[k]);
            free(dw[k]);
        }
    }
    free(row_ptr);
    free(col);
    free(val);
    free(wh);
}
