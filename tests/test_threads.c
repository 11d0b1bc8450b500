/* The CPU backend's threads: the thread count of a context and where it
 * comes from, the dense products (OpenBLAS) and the SpMM against
 * double-precision references on inputs that split unevenly across
 * threads, the optimiser, and whole training runs: the same bits from run
 * to run at one thread count, within 1e-5 relative across counts, and no
 * allocation, of the pool or the heap, once a run has warmed up. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <criterion/criterion.h>
#include <math.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_count.h"
#include "core/internal.h"
#include "core/ops/cpu.h"
#include "core/parallel.h"
#include "dataset_helpers.h"
#include "helpers.h"
#include "sbm_train.h"
#include "threads_check.h"

Test(threads, count_from_options_and_config)
{
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    int cpus = gcn_cpu_count();
    cr_assert(cpus >= 1 && cpus <= CPU_COUNT(&set), "%d CPUs of %d", cpus, CPU_COUNT(&set));
    gcn_ctx *ctx = test_cpu_ctx(1);
    cr_assert_eq(gcn_ctx_threads(ctx), cpus);
    gcn_ctx_free(&ctx);
    ctx = threads_ctx(3, 1);
    gcn_ctx_free(&ctx);
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CPU;
    o.threads = -1;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_ERR_INVALID_ARG);
    o.threads = GCN_MAX_THREADS + 1;
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_ERR_INVALID_ARG);
    /* A program built before the field existed gets the default. */
    o.threads = 7;
    o.size = offsetof(gcn_ctx_opts, threads);
    cr_assert_eq(gcn_ctx_create(&ctx, &o), GCN_OK);
    cr_assert_eq(gcn_ctx_threads(ctx), cpus);
    gcn_ctx_free(&ctx);

    gcn_model_config cfg;
    char err[256];
    const char *json = "{\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\"}], \"threads\": 5}";
    cr_assert_eq(gcn_model_config_parse(&cfg, json, "t.json", err, sizeof err), GCN_OK, "%s", err);
    cr_assert_eq(cfg.threads, 5);
    gcn_ctx_opts co = gcn_ctx_default_opts();
    cr_assert_eq(gcn_model_config_ctx_opts(&cfg, &co), GCN_OK);
    cr_assert_eq(co.threads, 5);
    cr_assert_eq(gcn_model_config_set(&cfg, "threads", "2", err, sizeof err), GCN_OK);
    cr_assert_eq(cfg.threads, 2);
    cr_assert_eq(gcn_model_config_set(&cfg, "threads", "two", err, sizeof err),
                 GCN_ERR_INVALID_ARG);
    cr_assert(strstr(err, "threads 'two': expected 0"), "%s", err);
    json = "{\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\"}], \"threads\": -1}";
    cr_assert_neq(gcn_model_config_parse(&cfg, json, "t.json", err, sizeof err), GCN_OK);
    cr_assert(strstr(err, "t.json: threads: expected an integer in [0, 1024]"), "%s", err);
}

/* ---- gemm ------------------------------------------------------------------ */

/* c = alpha op(a) op(b) + beta c0 in double, c [m, n] contiguous. */
static void gemm_ref(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                     const float *a, int64_t lda, const float *b, int64_t ldb, double beta,
                     const float *c0, double *c)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0;
            for (int64_t l = 0; l < k; l++)
                s += (double)(ta ? a[l * lda + i] : a[i * lda + l]) *
                     (tb ? b[j * ldb + l] : b[l * ldb + j]);
            c[i * n + j] = alpha * s + (beta == 0.0 ? 0.0 : beta * c0[i * n + j]);
        }
}

/* sparse: a holds about 1% non-zeros, which takes the path that skips
 * zeros unless b is transposed. */
static void check_gemm(int64_t m, int64_t n, int64_t k, bool ta, bool tb, float beta, bool sparse)
{
    int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1;
    float *a = random_floats((ta ? k : m) * lda, -1, 1, 11 + (uint64_t)m);
    for (int64_t i = 0; sparse && i < (ta ? k : m) * lda; i++)
        a[i] = i % 97 == 5 ? a[i] : 0.0f;
    float *b = random_floats((tb ? n : k) * ldb, -1, 1, 12 + (uint64_t)n);
    float *c0 = random_floats(m * n, -1, 1, 13);
    double *want = malloc((size_t)(m * n + 1) * sizeof *want);
    gemm_ref(ta, tb, m, n, k, 0.75, a, lda, b, ldb, beta, c0, want);
    float *first = NULL;
    char what[128];
    snprintf(what, sizeof what, "gemm %lldx%lldx%lld ta=%d tb=%d beta=%g%s", (long long)m,
             (long long)n, (long long)k, ta, tb, (double)beta, sparse ? " sparse" : "");
    for (int t = 0; t < N_COUNTS; t++) {
        gcn_ctx *ctx = threads_ctx(thread_counts[t], 1);
        float *c = copy_floats(c0, m * n);
        if (beta == 0.0f)
            for (int64_t i = 0; i < m * n; i++)
                c[i] = NAN; /* beta 0 ignores what c holds */
        cr_assert_eq(ctx->be->gemm(ctx, ta, tb, m, n, k, 0.75f, a, lda, b, ldb, beta, c, n),
                     GCN_OK, "%s", gcn_last_error(ctx));
        cr_assert_leq(test_rel_err(c, want, m * n), 1e-5, "%s, %d threads", what,
                      thread_counts[t]);
        if (!first)
            first = c;
        else {
            double *d = malloc((size_t)(m * n + 1) * sizeof *d);
            for (int64_t i = 0; i < m * n; i++)
                d[i] = first[i];
            cr_assert_leq(test_rel_err(c, d, m * n), 1e-5, "%s: %d threads against 1", what,
                          thread_counts[t]);
            free(d);
            free(c);
        }
        gcn_ctx_free(&ctx);
    }
    free(first);
    free(want);
    free(a);
    free(b);
    free(c0);
}

Test(threads, gemm_against_double_precision, .timeout = 120)
{
    const int64_t cases[][3] = {{1, 1, 1},       {37, 5, 3},  {3001, 17, 33}, {5, 2999, 40},
                                {129, 130, 700}, {4, 3, 0},   {1000, 16, 1433}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int tr = 0; tr < 4; tr++)
            for (int bi = 0; bi < 2; bi++)
                for (int sp = 0; sp < 2; sp++)
                    check_gemm(cases[i][0], cases[i][1], cases[i][2], tr & 1, tr >> 1,
                               bi ? 0.5f : 0.0f, sp);
}

/* ---- SpMM ------------------------------------------------------------------ */

/* A matrix with the given row degrees, distinct increasing columns spread
 * over n_cols, values in [-1, 1). */
typedef struct sparse {
    int32_t n_rows, n_cols, nnz;
    int32_t *row_ptr, *col_idx;
    float *values;
} sparse;

static sparse sparse_of(int32_t n_rows, int32_t n_cols, const int32_t *deg, uint64_t seed)
{
    sparse s = {.n_rows = n_rows, .n_cols = n_cols};
    s.row_ptr = malloc((size_t)(n_rows + 1) * sizeof *s.row_ptr);
    s.row_ptr[0] = 0;
    for (int32_t i = 0; i < n_rows; i++)
        s.row_ptr[i + 1] = s.row_ptr[i] + deg[i];
    s.nnz = s.row_ptr[n_rows];
    s.col_idx = malloc((size_t)(s.nnz + 1) * sizeof *s.col_idx);
    s.values = random_floats(s.nnz, -1, 1, seed);
    for (int32_t i = 0; i < n_rows; i++)
        for (int32_t e = 0; e < deg[i]; e++)
            s.col_idx[s.row_ptr[i] + e] =
                (int32_t)(((int64_t)e * n_cols / deg[i] + i) % n_cols);
    for (int32_t i = 0; i < n_rows; i++) /* keep each row's columns increasing */
        for (int32_t e = s.row_ptr[i] + 1; e < s.row_ptr[i + 1]; e++)
            for (int32_t f = e; f > s.row_ptr[i] && s.col_idx[f - 1] > s.col_idx[f]; f--) {
                int32_t c = s.col_idx[f];
                s.col_idx[f] = s.col_idx[f - 1];
                s.col_idx[f - 1] = c;
            }
    return s;
}

static void sparse_free(sparse *s)
{
    free(s->row_ptr);
    free(s->col_idx);
    free(s->values);
}

/* y = A x (+ y0) at every thread count: against double precision, each
 * element within 1e-5 of the magnitude it sums, and the same bits at every
 * count. */
static void check_spmm(const sparse *s, int feat, bool accumulate, const char *what)
{
    float *x = random_floats((int64_t)s->n_cols * feat, -1, 1, 21);
    float *y0 = random_floats((int64_t)s->n_rows * feat, -1, 1, 22);
    int64_t ny = (int64_t)s->n_rows * feat;
    double *want = calloc((size_t)ny + 1, sizeof *want), *scale = calloc((size_t)ny + 1, 8);
    for (int32_t i = 0; i < s->n_rows; i++)
        for (int j = 0; j < feat; j++) {
            int64_t o = (int64_t)i * feat + j;
            want[o] = accumulate ? y0[o] : 0.0;
            scale[o] = 1e-30 + (accumulate ? fabs(y0[o]) : 0.0);
            for (int32_t e = s->row_ptr[i]; e < s->row_ptr[i + 1]; e++) {
                double v = (double)s->values[e] * x[(int64_t)s->col_idx[e] * feat + j];
                want[o] += v;
                scale[o] += fabs(v);
            }
        }
    float *first = NULL;
    char name[160];
    for (int t = 0; t < N_COUNTS; t++) {
        gcn_ctx *ctx = threads_ctx(thread_counts[t], 1);
        gcn_csr *a = NULL;
        cr_assert_eq(gcn_csr_create(ctx, &a, s->n_rows, s->n_cols, s->nnz, s->row_ptr,
                                    s->col_idx, s->values),
                     GCN_OK, "%s", gcn_last_error(ctx));
        float *y = copy_floats(y0, ny);
        for (int64_t i = 0; !accumulate && i < ny; i++)
            y[i] = NAN;
        const gcn_spmm_impl *cpu = gcn_spmm_find(ctx, "cpu");
        cr_assert_eq(cpu->run(ctx, NULL, a, x, y, feat, accumulate), GCN_OK);
        snprintf(name, sizeof name, "%s, F %d, %s, %d threads", what, feat,
                 accumulate ? "accumulate" : "overwrite", thread_counts[t]);
        expect_near(y, want, scale, ny, 1e-5, name);
        if (!first)
            first = y;
        else {
            expect_same_bits(first, y, (size_t)ny * sizeof *y, name, 1, thread_counts[t]);
            free(y);
        }
        gcn_csr_free(&a);
        gcn_ctx_free(&ctx);
    }
    free(first);
    free(want);
    free(scale);
    free(x);
    free(y0);
}

Test(threads, spmm_uneven_rows_against_double_precision, .timeout = 120)
{
    /* One row holding most of the non-zeros, empty rows every fifth. */
    int32_t n = 3000, *deg = malloc((size_t)n * sizeof *deg);
    for (int32_t i = 0; i < n; i++)
        deg[i] = i == 7 ? n : i % 5 == 0 ? 0 : 1 + i % 3;
    sparse huge = sparse_of(n, n, deg, 31);
    /* Fewer rows than threads, each thread's range empty or one row. */
    int32_t few_deg[3] = {4000, 0, 10};
    sparse few = sparse_of(3, 5000, few_deg, 32);
    /* Every row empty. */
    for (int32_t i = 0; i < 100; i++)
        deg[i] = 0;
    sparse empty = sparse_of(100, 100, deg, 33);
    const int feats[] = {1, 31, 32, 33, 100};
    for (size_t f = 0; f < sizeof feats / sizeof *feats; f++)
        for (int acc = 0; acc < 2; acc++)
            check_spmm(&huge, feats[f], acc, "one huge row and empty rows");
    for (int acc = 0; acc < 2; acc++) {
        check_spmm(&few, 40, acc, "3 rows");
        check_spmm(&few, 4096, acc, "3 rows");
        check_spmm(&empty, 1000, acc, "empty rows");
    }
    sparse_free(&huge);
    sparse_free(&few);
    sparse_free(&empty);
    free(deg);
}

/* ---- optimiser and training ------------------------------------------------ */

/* Three Adam steps on a [400, 300] parameter with the gradient of
 * sum(relu(w)): the parameter after them, into out. */
static void adam_steps(int threads, float *out)
{
    gcn_ctx *ctx = threads_ctx(threads, 3);
    float *h = random_floats(400 * 300, -1, 1, 41);
    gcn_tensor *w = test_tensor(ctx, h, 400, 300);
    cr_assert_eq(gcn_tensor_set_requires_grad(w, true), GCN_OK);
    gcn_optim *opt = NULL;
    gcn_optim_opts oo = gcn_optim_default_opts(GCN_OPTIM_ADAMW);
    oo.weight_decay = 0.1f;
    cr_assert_eq(gcn_optim_create(ctx, &opt, &w, 1, &oo), GCN_OK);
    for (int step = 0; step < 3; step++) {
        gcn_tensor *r = NULL, *loss = NULL;
        cr_assert_eq(gcn_optim_zero_grad(ctx, opt), GCN_OK);
        cr_assert_eq(gcn_relu(ctx, w, &r), GCN_OK);
        cr_assert_eq(gcn_sum(ctx, r, &loss), GCN_OK);
        cr_assert_eq(gcn_backward(ctx, loss), GCN_OK);
        cr_assert_eq(gcn_optim_step(ctx, opt), GCN_OK);
        gcn_tensor_free(&r);
        gcn_tensor_free(&loss);
    }
    cr_assert_eq(gcn_tensor_to_host(ctx, w, out), GCN_OK);
    gcn_optim_free(&opt);
    gcn_tensor_free(&w);
    gcn_ctx_free(&ctx);
    free(h);
}

Test(threads, optimizer_same_bits_at_every_count)
{
    float *first = malloc(400 * 300 * sizeof *first), *w = malloc(400 * 300 * sizeof *w);
    adam_steps(1, first);
    for (int t = 1; t < N_COUNTS; t++) {
        adam_steps(thread_counts[t], w);
        expect_same_bits(first, w, 400 * 300 * sizeof *w, "adamw", 1, thread_counts[t]);
    }
    free(first);
    free(w);
}

/* the SBM generator's default of 6 classes */
enum { TRAIN_NODES = 3000, TRAIN_FEAT = 64, TRAIN_EPOCHS = 3, TRAIN_CLASSES = 6 };

/* Losses of TRAIN_EPOCHS epochs of a GCN with batch norm and dropout, and
 * the best model's class probabilities. */
static void train(int threads, float *losses, float *probs)
{
    gcn_ctx *ctx = threads_ctx(threads, 7);
    gcn_dataset *ds = NULL;
    gcn_trainer *tr = sbm_trainer(ctx, TRAIN_NODES, TRAIN_FEAT,
                                  "{\"layers\": [{\"type\": \"gcn\", \"out\": 96, \"norm\":"
                                  " \"batch\", \"activation\": \"relu\"}, {\"type\": \"gcn\","
                                  " \"out\": \"classes\", \"dropout\": 0.5}]}",
                                  &ds);
    for (int e = 0; e < TRAIN_EPOCHS; e++) {
        gcn_epoch_stats es;
        cr_assert_eq(gcn_trainer_epoch(ctx, tr, &es), GCN_OK, "%s", gcn_last_error(ctx));
        losses[e] = es.loss;
    }
    cr_assert_eq(ds->n_classes, TRAIN_CLASSES);
    cr_assert_eq(gcn_trainer_predict(ctx, tr, NULL, probs), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

/* Across thread counts only the losses are compared: OpenBLAS splits a
 * product differently for each count, which changes its rounding, and
 * Adam's first step moves a parameter by lr whatever the size of its
 * gradient, so a gradient of rounding size can move a parameter either
 * way; the predictions then differ by more than rounding. */
Test(threads, training_same_bits_run_to_run_and_close_across_counts, .timeout = 240)
{
    size_t n_probs = (size_t)TRAIN_NODES * TRAIN_CLASSES;
    float base_loss[TRAIN_EPOCHS], loss[TRAIN_EPOCHS];
    float *base = malloc(n_probs * sizeof *base), *probs = malloc(n_probs * sizeof *probs);
    train(2, base_loss, base);
    train(2, loss, probs);
    expect_same_bits(base_loss, loss, sizeof loss, "losses, run to run", 2, 2);
    expect_same_bits(base, probs, n_probs * sizeof *probs, "probabilities, run to run", 2, 2);
    double want[TRAIN_EPOCHS];
    for (int e = 0; e < TRAIN_EPOCHS; e++)
        want[e] = base_loss[e];
    for (int t = 0; t < N_COUNTS; t++) {
        train(thread_counts[t], loss, probs);
        expect_near(loss, want, NULL, TRAIN_EPOCHS, 1e-5, "losses across thread counts");
    }
    free(base);
    free(probs);
}

/* The CPU backend's caching pool: once a step has run, later epochs take
 * every buffer from its free lists and allocate nothing. */
Test(threads, steady_state_epochs_allocate_nothing, .timeout = 120)
{
    gcn_ctx *ctx = threads_ctx(2, 9);
    gcn_dataset *ds = NULL;
    gcn_trainer *tr = sbm_trainer(ctx, 1000, 32,
                                  "{\"layers\": [{\"type\": \"gcn\", \"out\": 32, \"norm\":"
                                  " \"batch\", \"activation\": \"relu\", \"dropout\": 0.3},"
                                  " {\"type\": \"gcn\", \"out\": \"classes\"}]}",
                                  &ds);
    gcn_memory_stats steady, end;
    for (int e = 0; e < 6; e++) {
        gcn_epoch_stats es;
        cr_assert_eq(gcn_trainer_epoch(ctx, tr, &es), GCN_OK, "%s", gcn_last_error(ctx));
        if (e == 1)
            gcn_ctx_memory_stats(ctx, &steady);
    }
    gcn_ctx_memory_stats(ctx, &end);
    cr_assert_gt(steady.device_allocs, 0);
    cr_assert_eq(end.device_allocs, steady.device_allocs, "%llu allocations after epoch 2",
                 (unsigned long long)(end.device_allocs - steady.device_allocs));
    cr_assert_eq(end.device_frees, 0);
    cr_assert_geq(end.reserved, end.in_use);
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

/* Nor does the host: once two epochs have run, an epoch (the training
 * step, the evaluation, keeping a new best model) takes its tensor and
 * index headers, tape nodes and buffers from what the context and the
 * trainer kept, and calls no malloc (alloc_count.h: the OpenMP runtime's
 * and OpenBLAS's own allocations, a team of threads for a parallel region
 * or a threaded product's job list, are theirs and not counted). */
Test(threads, steady_state_steps_make_no_host_malloc, .timeout = 120)
{
    static const char *const configs[] = {
        "{\"layers\": [{\"type\": \"gcn\", \"out\": 32, \"norm\": \"batch\", \"activation\":"
        " \"relu\"}, {\"type\": \"gcn\", \"out\": 32, \"norm\": \"batch\", \"activation\":"
        " \"relu\", \"dropout\": 0.5}, {\"type\": \"gcn\", \"out\": \"classes\", \"dropout\":"
        " 0.5}], \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}",
        "{\"layers\": [{\"type\": \"gin\", \"out\": 32, \"norm\": \"batch\", \"activation\":"
        " \"relu\"}, {\"type\": \"gin\", \"out\": 32, \"norm\": \"batch\", \"activation\":"
        " \"relu\", \"dropout\": 0.5}, {\"type\": \"gin\", \"out\": \"classes\", \"hidden\": 32,"
        " \"dropout\": 0.5}], \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}",
    };
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        for (int threads = 1; threads <= 2; threads++) {
            gcn_ctx *ctx = threads_ctx(threads, 11);
            gcn_dataset *ds = NULL;
            gcn_trainer *tr = sbm_trainer(ctx, 1000, 32, configs[c], &ds);
            gcn_epoch_stats es;
            for (int e = 0; e < 2; e++)
                cr_assert_eq(gcn_trainer_epoch(ctx, tr, &es), GCN_OK, "%s", gcn_last_error(ctx));
            alloc_count_begin();
            for (int e = 0; e < 3; e++)
                cr_assert_eq(gcn_trainer_epoch(ctx, tr, &es), GCN_OK, "%s", gcn_last_error(ctx));
            alloc_count n = alloc_count_end();
            cr_assert_eq(n.calls, 0,
                         "config %zu, %d threads: %llu allocations in 3 steady-state epochs, the"
                         " first a %s from %s",
                         c, threads, (unsigned long long)n.calls, n.first, n.where);
            gcn_trainer_free(&tr);
            gcn_dataset_free(&ds);
            gcn_ctx_free(&ctx);
        }
}

/* Graph-level training too: each epoch shuffles the training graphs into
 * batches of new sizes, yet once two epochs have run, its batch matrices'
 * headers, the shuffle's scratch and its read-back are the trainer's, its
 * tensors take the pool blocks sized for the largest batch, and an epoch
 * calls no malloc and takes no new block, whether its matrices are the
 * raw adjacency (GIN) or the normalised one with values (GCN). */
Test(threads, steady_state_graph_epochs_make_no_host_malloc, .timeout = 120)
{
    static const char *const configs[] = {
        "{\"layers\": [{\"type\": \"gin\", \"out\": 16, \"norm\": \"batch\", \"activation\":"
        " \"relu\"}, {\"type\": \"gin\", \"out\": 16, \"norm\": \"batch\", \"activation\":"
        " \"relu\", \"dropout\": 0.3}], \"readout\": {\"jk\": true, \"dropout\": 0.2},"
        " \"batch_size\": 8, \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}",
        "{\"layers\": [{\"type\": \"gcn\", \"out\": 16, \"activation\": \"relu\"},"
        " {\"type\": \"gcn\", \"out\": 16, \"dropout\": 0.5}], \"readout\": {\"pooling\":"
        " \"mean\"}, \"batch_size\": 5, \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}}",
    };
    char *dir = ds_tmpdir();
    ds_write_tu_shapes(dir, 40);
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        for (int threads = 1; threads <= 2; threads++) {
            gcn_ctx *ctx = threads_ctx(threads, 13);
            gcn_dataset *ds = ds_load_shapes_fold(ctx, dir, 4, 0, 0, true, NULL);
            gcn_trainer *tr = ds_train_graphs(ctx, configs[c], ds, 13, 2, NULL, NULL, NULL);
            gcn_memory_stats steady, end;
            gcn_ctx_memory_stats(ctx, &steady);
            for (int e = 3; e <= 8; e++) {
                gcn_epoch_stats es;
                alloc_count_begin();
                cr_assert_eq(gcn_trainer_epoch(ctx, tr, &es), GCN_OK, "%s", gcn_last_error(ctx));
                alloc_count n = alloc_count_end();
                cr_assert_eq(n.calls, 0,
                             "config %zu, %d threads: %llu allocations in epoch %d, the first a"
                             " %s from %s",
                             c, threads, (unsigned long long)n.calls, e, n.first, n.where);
            }
            gcn_ctx_memory_stats(ctx, &end);
            cr_assert_eq(end.device_allocs, steady.device_allocs,
                         "config %zu, %d threads: %llu pool blocks after epoch 2", c, threads,
                         (unsigned long long)(end.device_allocs - steady.device_allocs));
            gcn_trainer_free(&tr);
            gcn_dataset_free(&ds);
            gcn_ctx_free(&ctx);
        }
    ds_rmtree(dir);
    free(dir);
}

/* OpenBLAS's kernels of a core without AVX on a CPU with AVX2 or AVX-512
 * (a CPU model OpenBLAS does not know) get advice; any other pairing none. */
Test(threads, openblas_core_advice)
{
    cr_assert_str_eq(gcn_cpu_blas_coretype_advice("Prescott", true, true), "SkylakeX");
    cr_assert_str_eq(gcn_cpu_blas_coretype_advice("prescott", true, false), "Haswell");
    cr_assert_str_eq(gcn_cpu_blas_coretype_advice("Nehalem", true, false), "Haswell");
    cr_assert_null(gcn_cpu_blas_coretype_advice("Prescott", false, false));
    cr_assert_null(gcn_cpu_blas_coretype_advice("Haswell", true, false));
    cr_assert_null(gcn_cpu_blas_coretype_advice("SkylakeX", true, true));
    cr_assert_null(gcn_cpu_blas_coretype_advice("Zen", true, true));
    cr_assert_null(gcn_cpu_blas_coretype_advice(NULL, true, true));
}
