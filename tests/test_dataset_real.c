/* The real datasets in ../shared/data (skipped when absent): published
 * counts of Cora, CiteSeer, PubMed, ogbn-arxiv, BlogCatalog and the eleven
 * structure-only graphs, the missing-feature messages, and an arxiv cache
 * round trip in a /tmp copy (the shared data is read-only). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dataset_helpers.h"
#include "helpers.h"

#define REQUIRE_DATA()                                             \
    do {                                                           \
        struct stat sb_;                                           \
        if (stat(SHARED_DATA, &sb_) != 0)                          \
            cr_skip_test("real data: " SHARED_DATA " absent");     \
    } while (0)

static gcn_dataset_opts real_opts(void)
{
    gcn_dataset_opts o = gcn_dataset_default_opts();
    o.root = SHARED_DATA;
    o.cache = false;
    return o;
}

static void expect_split(const gcn_dataset *ds, int32_t tr, int32_t va, int32_t te)
{
    cr_assert_eq(ds->n_train, tr, "%s train %d", ds->name, ds->n_train);
    cr_assert_eq(ds->n_valid, va, "%s valid %d", ds->name, ds->n_valid);
    cr_assert_eq(ds->n_test, te, "%s test %d", ds->name, ds->n_test);
}

Test(dataset_real, cora)
{
    REQUIRE_DATA();
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = real_opts();
    gcn_dataset *ds = ds_load_ok(ctx, "cora", &o);
    cr_assert_str_eq(ds->name, "cora");
    cr_assert_eq(ds->n_nodes, 2708);
    cr_assert_eq(ds->n_raw_edges, 10556);
    cr_assert_eq(ds->graph->nnz, 10556);
    cr_assert_eq(ds->n_features, 1433);
    cr_assert_eq(ds->n_classes, 7);
    expect_split(ds, 140, 500, 1000);
    int64_t nz = 0;
    for (int64_t i = 0; i < 2708 * 1433; i++)
        nz += ds->features[i] != 0.0f;
    cr_assert_eq(nz, 49216);
    int count[7] = {0};
    for (int i = 0; i < ds->n_nodes; i++)
        count[ds->labels[i]]++;
    cr_assert_eq(count[3], 818);
    cr_assert_eq(count[6], 180);
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_dataset_adjacency(ctx, ds, GCN_ADJ_GCN, &a), GCN_OK);
    cr_assert_eq(gcn_csr_nnz(a), 10556 + 2708);
    gcn_csr_free(&a);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

Test(dataset_real, citeseer_and_pubmed)
{
    REQUIRE_DATA();
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = real_opts();
    gcn_dataset *ds = ds_load_ok(ctx, "citeseer", &o);
    cr_assert_eq(ds->n_nodes, 3327);
    cr_assert_eq(ds->graph->nnz, 9104);
    cr_assert_eq(ds->n_features, 3703);
    cr_assert_eq(ds->n_classes, 6);
    expect_split(ds, 120, 500, 1000);
    int unlabelled = 0;
    for (int i = 0; i < ds->n_nodes; i++)
        unlabelled += ds->labels[i] < 0;
    cr_assert_eq(unlabelled, 15);
    gcn_dataset_free(&ds);
    ds_expect_fail(ctx, "pubmed", &o, GCN_ERR_IO, "planetoid/pubmed/features.txt", "random:D",
                   NULL);
    o.features = "degree";
    ds = ds_load_ok(ctx, "pubmed", &o);
    cr_assert_eq(ds->n_nodes, 19717);
    cr_assert_eq(ds->graph->nnz, 88648);
    cr_assert_eq(ds->n_classes, 3);
    expect_split(ds, 60, 500, 1000);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

Test(dataset_real, ogbn_arxiv, .timeout = 60)
{
    REQUIRE_DATA();
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = real_opts();
    ds_expect_fail(ctx, "ogbn-arxiv", &o, GCN_ERR_IO, "ogbn_arxiv/raw/node-feat.csv.gz",
                   "missing", "random:D", NULL);
    o.features = "degree";
    gcn_dataset *ds = ds_load_ok(ctx, "ogbn-arxiv", &o);
    cr_assert_str_eq(ds->name, "ogbn-arxiv");
    cr_assert_eq(ds->n_nodes, 169343);
    cr_assert_eq(ds->n_raw_edges, 1166243);
    cr_assert_eq(ds->graph->nnz, 2315598);
    cr_assert_eq(ds->n_features, 1);
    cr_assert_eq(ds->n_classes, 40);
    expect_split(ds, 90941, 29799, 48603);
    cr_assert_not(ds->split_drawn);
    gcn_degree_stats s;
    gcn_graph_degree_stats(ds->graph, &s);
    cr_assert_eq(s.n_isolated, 0);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

Test(dataset_real, ogbn_arxiv_cache_round_trip, .timeout = 60)
{
    REQUIRE_DATA();
    static const char *const files[] = {
        "raw/edge.csv.gz", "raw/node-label.csv.gz", "raw/num-node-list.csv.gz",
        "raw/num-edge-list.csv.gz", "split/time/train.csv.gz", "split/time/valid.csv.gz",
        "split/time/test.csv.gz"};
    char *dir = ds_tmpdir();
    for (int k = 0; k < 7; k++) {
        char from[512], rel[512];
        snprintf(from, sizeof from, SHARED_DATA "/ogbn_arxiv/%s", files[k]);
        snprintf(rel, sizeof rel, "ogbn_arxiv/%s", files[k]);
        ds_copy(from, dir, rel);
    }
    gcn_ctx *a = test_cpu_ctx(1), *b = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    o.cache = true;
    o.features = "none"; /* the graph, labels and split alone */
    gcn_dataset *parsed = ds_load_ok(a, "ogbn-arxiv", &o);
    gcn_dataset *cached = ds_load_ok(b, "ogbn-arxiv", &o);
    cr_assert_not(parsed->from_cache, "the first load found a cache in a fresh folder");
    cr_assert(cached->from_cache, "the second load parsed the files again");
    cr_assert(ds_same(parsed, cached));
    gcn_dataset_free(&parsed);
    gcn_dataset_free(&cached);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset_real, blogcatalog_draws_a_split)
{
    REQUIRE_DATA();
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = real_opts();
    gcn_dataset *ds = ds_load_ok(ctx, "blogcatalog", &o);
    cr_assert_eq(ds->n_nodes, 5196);
    cr_assert_eq(ds->graph->nnz, 2 * 171743);
    cr_assert_eq(ds->n_features, 8189);
    cr_assert_eq(ds->n_classes, 6);
    cr_assert(ds->split_drawn);
    expect_split(ds, 120, 500, 1000);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

/* nodes, symmetric non-zeros without loops (2 x distinct undirected edges),
 * maximum degree: graphs/README.md. */
Test(dataset_real, structure_only_graphs, .timeout = 60)
{
    REQUIRE_DATA();
    static const struct {
        const char *name;
        int32_t nodes, nnz, max_degree;
    } g[] = {
        {"3elt", 4720, 27444, 9},
        {"facebook_combined", 4039, 176468, 1045},
        {"Wiki-Vote", 7115, 201524, 1065},
        {"soc-BlogCatalog", 10312, 667966, 3992},
        {"CA-HepPh", 12008, 236978, 491},
        {"ppi", 14755, 444218, 720},
        {"p2p-Gnutella25", 22687, 109410, 66},
        {"as-caida20071105", 26475, 106762, 2628},
        {"email-Enron", 36692, 367662, 1383},
        {"delaunay_n16", 65536, 393150, 17},
        {"luxembourg_osm", 114599, 239332, 6},
    };
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = real_opts();
    for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
        gcn_dataset *ds = ds_load_ok(ctx, g[k].name, &o);
        gcn_degree_stats s;
        gcn_graph_degree_stats(ds->graph, &s);
        cr_assert_eq(ds->n_nodes, g[k].nodes, "%s nodes %d", g[k].name, ds->n_nodes);
        cr_assert_eq(ds->graph->nnz, g[k].nnz, "%s nnz %d", g[k].name, ds->graph->nnz);
        cr_assert_eq(s.max, g[k].max_degree, "%s max degree %d", g[k].name, s.max);
        gcn_dataset_free(&ds);
    }
    gcn_ctx_free(&ctx);
}
