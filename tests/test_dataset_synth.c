/* Synthetic data: the stochastic block model (structure, homophily,
 * class-correlated features, planted split), R-MAT and Chung-Lu power-law
 * graphs (exact edge counts, skewed degrees), determinism per seed, and the
 * generator specs gcn_dataset_load accepts. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_helpers.h"
#include "helpers.h"

static gcn_dataset *gen(gcn_ctx *ctx, const char *spec)
{
    gcn_dataset_opts o = gcn_dataset_default_opts();
    gcn_dataset *ds = NULL;
    cr_assert_eq(gcn_dataset_load(ctx, &ds, spec, &o), GCN_OK, "%s: %s", spec, gcn_last_error(ctx));
    return ds;
}

Test(dataset_synth, sbm_is_deterministic_per_seed)
{
    gcn_ctx *a = test_cpu_ctx(11), *b = test_cpu_ctx(11), *c = test_cpu_ctx(12);
    gcn_dataset *x = gen(a, "sbm"), *y = gen(b, "sbm"), *z = gen(c, "sbm");
    cr_assert(ds_same(x, y), "same seed, same dataset");
    cr_assert_not(ds_same(x, z), "another seed, another dataset");
    gcn_dataset_free(&x);
    gcn_dataset_free(&y);
    gcn_dataset_free(&z);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
    gcn_ctx_free(&c);
}

/* Accuracy of assigning each node to the nearest class mean. */
static double centroid_accuracy(const gcn_dataset *ds)
{
    int32_t d = ds->n_features, k = ds->n_classes;
    double *mean = calloc((size_t)k * d, sizeof *mean);
    int *count = calloc((size_t)k, sizeof *count);
    for (int32_t i = 0; i < ds->n_nodes; i++) {
        count[ds->labels[i]]++;
        for (int32_t j = 0; j < d; j++)
            mean[ds->labels[i] * d + j] += ds->features[(size_t)i * d + j];
    }
    for (int32_t c = 0; c < k; c++)
        for (int32_t j = 0; j < d; j++)
            mean[c * d + j] /= count[c];
    int correct = 0;
    for (int32_t i = 0; i < ds->n_nodes; i++) {
        int best = 0;
        double best_d = INFINITY;
        for (int32_t c = 0; c < k; c++) {
            double s = 0;
            for (int32_t j = 0; j < d; j++) {
                double t = ds->features[(size_t)i * d + j] - mean[c * d + j];
                s += t * t;
            }
            if (s < best_d) {
                best_d = s;
                best = c;
            }
        }
        correct += best == ds->labels[i];
    }
    free(mean);
    free(count);
    return (double)correct / ds->n_nodes;
}

Test(dataset_synth, sbm_structure_features_and_split)
{
    gcn_ctx *ctx = test_cpu_ctx(3);
    gcn_dataset *ds = gen(ctx, "synthetic");
    gcn_sbm_opts o = gcn_sbm_default_opts();
    cr_assert_eq(ds->n_nodes, o.n_nodes);
    cr_assert_eq(ds->n_classes, o.n_classes);
    cr_assert_eq(ds->n_features, o.n_features);
    cr_assert(gcn_graph_is_symmetric(ds->graph));
    cr_assert_eq(gcn_graph_count_self_loops(ds->graph), 0);
    gcn_degree_stats s;
    gcn_graph_degree_stats(ds->graph, &s);
    cr_assert(fabs(s.mean - o.avg_degree) < 0.3, "mean degree %g", s.mean);
    int64_t intra = 0;
    for (int32_t i = 0; i < ds->n_nodes; i++)
        for (int32_t k = ds->graph->row_ptr[i]; k < ds->graph->row_ptr[i + 1]; k++)
            intra += ds->labels[i] == ds->labels[ds->graph->col_idx[k]];
    double h = (double)intra / ds->graph->nnz;
    cr_assert(fabs(h - o.homophily) < 0.03, "edge homophily %g", h);
    double acc = centroid_accuracy(ds);
    cr_assert(acc > 0.35 && acc < 0.95, "features carry some class signal: %g", acc);
    cr_assert_eq(ds->n_train, o.train_per_class * o.n_classes);
    cr_assert_eq(ds->n_valid, o.n_valid);
    cr_assert_eq(ds->n_test, o.n_test);
    cr_assert_not(ds->split_drawn, "the split is planted");
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

Test(dataset_synth, sbm_spec_parameters)
{
    gcn_ctx *ctx = test_cpu_ctx(3);
    gcn_dataset *ds = gen(ctx, "sbm:nodes=1k,classes=4,features=8,degree=6,homophily=1,"
                               "train_per_class=5,valid=50,test=100");
    cr_assert_eq(ds->n_nodes, 1000);
    cr_assert_eq(ds->n_classes, 4);
    cr_assert_eq(ds->n_features, 8);
    cr_assert_eq(ds->n_train, 20);
    cr_assert_eq(ds->n_valid, 50);
    for (int32_t i = 0; i < ds->n_nodes; i++)
        for (int32_t k = ds->graph->row_ptr[i]; k < ds->graph->row_ptr[i + 1]; k++)
            cr_assert_eq(ds->labels[i], ds->labels[ds->graph->col_idx[k]], "homophily 1");
    gcn_dataset_free(&ds);
    gcn_sbm_opts so = gcn_sbm_default_opts();
    so.n_nodes = 100;
    so.n_classes = 2;
    so.n_valid = so.n_test = 10;
    cr_assert_eq(gcn_dataset_sbm(ctx, &ds, &so), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(ds->n_nodes, 100);
    gcn_dataset_free(&ds);
    so.n_classes = 60;
    cr_assert_eq(gcn_dataset_sbm(ctx, &ds, &so), GCN_ERR_INVALID_ARG);
    cr_assert_null(ds);
    gcn_ctx_free(&ctx);
}

/* ordered=1: class c is the run of ids [c n / C, (c + 1) n / C), and a
 * cut of the id order into two runs at a class boundary cuts only the
 * edges between classes that cross it. */
Test(dataset_synth, sbm_ordered_classes_are_runs_of_ids)
{
    gcn_ctx *ctx = test_cpu_ctx(4);
    gcn_dataset *ds = gen(ctx, "sbm:nodes=1000,classes=4,degree=10,homophily=0.9,ordered=1");
    for (int32_t i = 0; i < 1000; i++)
        cr_assert_eq(ds->labels[i], i / 250, "node %d", i);
    int64_t intra = 0, crossing = 0;
    for (int32_t i = 0; i < ds->n_nodes; i++)
        for (int32_t k = ds->graph->row_ptr[i]; k < ds->graph->row_ptr[i + 1]; k++) {
            int32_t j = ds->graph->col_idx[k];
            intra += ds->labels[i] == ds->labels[j];
            crossing += (i < 500) != (j < 500);
        }
    double h = (double)intra / ds->graph->nnz;
    cr_assert(fabs(h - 0.9) < 0.03, "edge homophily %g", h);
    /* of the 10% between classes, 4 of the 6 class pairs straddle the cut */
    double cut = (double)crossing / ds->graph->nnz;
    cr_assert(cut > 0.1 * 4 / 6 - 0.02 && cut < 0.1 * 4 / 6 + 0.02, "cut %g", cut);
    cr_assert_eq(ds->n_train, 20 * 4);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

Test(dataset_synth, spec_errors)
{
    static const char *const bad[][2] = {
        {"sbm:nodes=1", "nodes=1"},           {"sbm:bogus=3", "unknown parameter 'bogus'"},
        {"sbm:nodes=2.5", "integer"},         {"sbm:homophily=2", "homophily=2"},
        {"sbm:nodes", "unknown parameter"},   {"rmat:a=0.9", "a + b + c < 1"},
        {"rmat:nodes=10,edges=100", "half"},  {"chunglu:gamma=0.5", "gamma=0.5"},
        {"chunglu:a=0.3", "unknown parameter 'a'"}, {"rmat:edges=1x", "edges=1x"},
    };
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = gcn_dataset_default_opts();
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        ds_expect_fail(ctx, bad[k][0], &o, GCN_ERR_INVALID_ARG, bad[k][1], NULL);
    gcn_ctx_free(&ctx);
}

static void expect_simple_directed(const gcn_graph *g, int32_t n, int32_t m)
{
    cr_assert_eq(g->n_nodes, n);
    cr_assert_eq(g->nnz, m, "exactly %d distinct edges, got %d", m, g->nnz);
    cr_assert_eq(gcn_graph_count_self_loops(g), 0);
}

Test(dataset_synth, rmat_exact_and_skewed)
{
    gcn_ctx *a = test_cpu_ctx(5), *b = test_cpu_ctx(5);
    gcn_graph *g = NULL, *h = NULL, *s = NULL;
    cr_assert_eq(gcn_graph_rmat(a, &g, 5000, 40000, 0.57, 0.19, 0.19), GCN_OK, "%s",
                 gcn_last_error(a));
    cr_assert_eq(gcn_graph_validate(a, g), GCN_OK);
    expect_simple_directed(g, 5000, 40000);
    cr_assert_eq(gcn_graph_rmat(b, &h, 5000, 40000, 0.57, 0.19, 0.19), GCN_OK);
    cr_assert_eq(memcmp(g->col_idx, h->col_idx, 40000 * sizeof(int32_t)), 0, "deterministic");
    cr_assert_eq(gcn_graph_symmetrize(a, g, &s), GCN_OK);
    gcn_degree_stats st;
    gcn_graph_degree_stats(s, &st);
    cr_assert(st.max > 20 * st.mean, "power law: max %d, mean %g", st.max, st.mean);
    cr_assert(st.median < st.mean, "skewed: median %g, mean %g", st.median, st.mean);
    gcn_graph_free(&g);
    gcn_graph_free(&h);
    gcn_graph_free(&s);
    cr_assert_eq(gcn_graph_rmat(a, &g, 100, 10, 0.5, 0.0, 0.0), GCN_ERR_INVALID_ARG);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
}

Test(dataset_synth, chung_lu_follows_the_weights)
{
    gcn_ctx *ctx = test_cpu_ctx(6);
    enum { N = 4000, M = 30000 };
    double *w = malloc(N * sizeof *w);
    cr_assert_eq(gcn_powerlaw_weights(ctx, N, M, 2.3, w), GCN_OK);
    double sum = 0;
    for (int i = 0; i < N; i++)
        sum += w[i];
    cr_assert(sum <= 2.0 * M * (1 + 1e-9) && sum > 1.9 * M, "weights sum to about 2m: %g", sum);
    cr_assert(w[0] > 50 * w[N - 1]);
    gcn_graph *g = NULL, *s = NULL;
    cr_assert_eq(gcn_graph_chung_lu(ctx, &g, N, w, M), GCN_OK, "%s", gcn_last_error(ctx));
    expect_simple_directed(g, N, M);
    cr_assert_eq(gcn_graph_symmetrize(ctx, g, &s), GCN_OK);
    int32_t top = s->row_ptr[1] - s->row_ptr[0];
    int64_t tail = 0;
    for (int i = N - 100; i < N; i++)
        tail += s->row_ptr[i + 1] - s->row_ptr[i];
    cr_assert(top > 10 * (2.0 * M / N), "hub degree %d vs mean %g", top, 2.0 * M / N);
    cr_assert(tail < 100 * 4 * w[N - 1] + 100, "tail degrees follow their weights");
    gcn_graph_free(&g);
    gcn_graph_free(&s);
    w[0] = NAN;
    cr_assert_eq(gcn_graph_chung_lu(ctx, &g, N, w, M), GCN_ERR_INVALID_ARG);
    free(w);
    gcn_ctx_free(&ctx);
}

/* Graphs of ogbn-arxiv's size: 169,343 nodes, 1,166,243 edges. */
Test(dataset_synth, arxiv_sized_generators, .timeout = 60)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const char *specs[] = {"rmat:arxiv,classes=40", "chunglu:arxiv"};
    for (int k = 0; k < 2; k++) {
        gcn_dataset_opts o = gcn_dataset_default_opts();
        o.symmetrize = false;
        gcn_dataset *ds = NULL;
        cr_assert_eq(gcn_dataset_load(ctx, &ds, specs[k], &o), GCN_OK, "%s", gcn_last_error(ctx));
        cr_assert_eq(ds->n_nodes, 169343);
        cr_assert_eq(ds->graph->nnz, 1166243);
        cr_assert_eq(ds->n_raw_edges, 1166243);
        if (k == 0) {
            cr_assert_eq(ds->n_classes, 40);
            cr_assert(ds->split_drawn);
            cr_assert_eq(ds->n_train, 800);
        }
        gcn_dataset_free(&ds);
    }
    gcn_ctx_free(&ctx);
}
