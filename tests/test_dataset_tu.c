/* TU graph collections: a hand-made 3-graph folder (plain and gzip), every
 * malformed-file error, the real PROTEINS_full and DD, the cache, and
 * batches of graphs (test_graph_folds.c: the shuffle and the folds). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset_helpers.h"
#include "helpers.h"

/* Three graphs, 9 nodes: a triangle (1-3), an edge (4-5), a path 6-7-8
 * with node 9 isolated; graph labels -1 / 1 / -1; node labels 2..4 (3
 * one-hot columns); 2 attribute columns; edge labels (ignored). */
static const char *const toy_files[][2] = {
    {"toy_graph_indicator.txt", "1\n1\n1\n2\n2\n3\n3\n3\n3\n"},
    {"toy_A.txt", "1, 2\n2, 1\n2, 3\n3, 2\n1, 3\n3, 1\n4, 5\n5, 4\n6, 7\n7, 6\n7, 8\n8, 7\n"},
    {"toy_graph_labels.txt", "-1\n1\n-1\n"},
    {"toy_node_labels.txt", "2\n3\n2\n4\n4\n3\n2\n2\n3\n"},
    {"toy_node_attributes.txt",
     "0.5, 1\n1.5, -1\n0, 0\n2, 2\n-3, 0.25\n1, 1\n0, 1\n1, 0\n7, 8\n"},
    {"toy_edge_labels.txt", "1\n1\n1\n1\n1\n1\n1\n1\n1\n1\n1\n1\n"},
};
#define N_TOY_FILES (sizeof toy_files / sizeof toy_files[0])

/* The toy collection in dir/tu/toy, file names ending in suffix ("" or
 * ".gz", which gzips them). */
static void write_toy_as(const char *dir, const char *suffix)
{
    for (size_t k = 0; k < N_TOY_FILES; k++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tu/toy/%s%s", toy_files[k][0], suffix);
        ds_write(dir, rel, toy_files[k][1]);
    }
}

static void write_toy(const char *dir) { write_toy_as(dir, ""); }

static void write_toy_gz(const char *dir) { write_toy_as(dir, ".gz"); }

static void check_toy(const gcn_dataset *ds)
{
    static const int32_t ptr[4] = {0, 3, 5, 9}, labels[3] = {0, 1, 0}, values[2] = {-1, 1};
    cr_assert_str_eq(ds->name, "toy");
    cr_assert_eq(ds->n_nodes, 9);
    cr_assert_eq(ds->n_graphs, 3);
    cr_assert_arr_eq(ds->graph_ptr, ptr, sizeof ptr);
    cr_assert_eq(ds->n_graph_classes, 2);
    cr_assert_arr_eq(ds->graph_labels, labels, sizeof labels);
    cr_assert_arr_eq(ds->graph_label_values, values, sizeof values);
    cr_assert_null(ds->labels, "node labels become features, not labels");
    cr_assert_eq(ds->n_train + ds->n_valid + ds->n_test, 0);
    cr_assert_eq(ds->n_raw_edges, 12);
    cr_assert_eq(ds->graph->nnz, 12);
    cr_assert(gcn_graph_is_symmetric(ds->graph));
    cr_assert_eq(ds->graph->row_ptr[9] - ds->graph->row_ptr[8], 0, "node 9 is isolated");
    cr_assert_eq(ds->n_features, 5, "3 one-hot columns, then 2 attributes");
    cr_assert_str_eq(ds->feature_source, "file");
    static const float row1[5] = {0, 1, 0, 1.5f, -1}, row3[5] = {0, 0, 1, 2, 2};
    cr_assert_arr_eq(ds->features + 5, row1, sizeof row1, "node 2: label 3, attributes 1.5, -1");
    cr_assert_arr_eq(ds->features + 15, row3, sizeof row3, "node 4: label 4, attributes 2, 2");
}

Test(dataset_tu, toy_plain_and_gzip_load_the_same)
{
    ds_fixture plain = ds_fixture_open(write_toy, "tu:toy");
    check_toy(plain.ds);
    cr_assert(strstr(ds_notices, "toy_edge_labels.txt: ignored"), "%s", ds_notices);
    char text[2048];
    gcn_dataset_describe(plain.ds, text, sizeof text);
    cr_assert(strstr(text, "3 graphs of 2 to 4 nodes, 2 graph classes"), "%s", text);
    ds_fixture zipped = ds_fixture_open(write_toy_gz, "tu:toy");
    check_toy(zipped.ds);
    cr_assert(ds_same(plain.ds, zipped.ds));
    ds_fixture_close(&plain);
    ds_fixture_close(&zipped);
}

Test(dataset_tu, folder_paths_and_optional_files)
{
    ds_fixture f = ds_fixture_open(write_toy, "tu:toy");
    gcn_dataset_opts o = ds_opts("/nonexistent");
    char folder[4096], spec[4200];
    snprintf(folder, sizeof folder, "%s", ds_path(f.dir, "tu/toy"));
    gcn_dataset *ds = ds_load_ok(f.ctx, folder, &o); /* a TU folder is recognised */
    cr_assert(ds_same(f.ds, ds));
    gcn_dataset_free(&ds);
    snprintf(spec, sizeof spec, "tu:%s/", folder);
    ds = ds_load_ok(f.ctx, spec, &o);
    cr_assert(ds_same(f.ds, ds));
    gcn_dataset_free(&ds);
    /* Without node labels or attributes: structure only. */
    remove(ds_path(f.dir, "tu/toy/toy_node_labels.txt"));
    remove(ds_path(f.dir, "tu/toy/toy_node_attributes.txt"));
    ds = ds_load_ok(f.ctx, folder, &o);
    cr_assert_eq(ds->n_features, 0);
    cr_assert_str_eq(ds->feature_source, "none");
    cr_assert_eq(ds->n_graphs, 3);
    gcn_dataset_free(&ds);
    ds_expect_fail(f.ctx, "tu:nothing", &o, GCN_ERR_NOT_FOUND, "tu:nothing", "/nonexistent/tu",
                   NULL);
    ds_fixture_close(&f);
}

Test(dataset_tu, malformed_files_fail_naming_file_and_line)
{
    static const ds_bad_file cases[] = {
        {"toy_graph_indicator.txt", "1\n1\n1\n3\n3\n3\n3\n3\n3\n", GCN_ERR_FORMAT,
         "toy_graph_indicator.txt:4:", "graph id 3 after 1: expected 1 or 2"},
        {"toy_graph_indicator.txt", "2\n2\n2\n", GCN_ERR_FORMAT, "toy_graph_indicator.txt:1:",
         "graph id 2: expected 1"},
        {"toy_graph_indicator.txt", "1\n1\n2\n1\n2\n3\n3\n3\n3\n", GCN_ERR_FORMAT,
         "toy_graph_indicator.txt:4:", "graph id 1 after 2"},
        {"toy_graph_indicator.txt", "1\n1\n\n2\n", GCN_ERR_FORMAT, "toy_graph_indicator.txt:3:",
         "expected 1 columns, found 0"},
        {"toy_graph_indicator.txt", "", GCN_ERR_FORMAT, "toy_graph_indicator.txt:",
         "empty file"},
        {"toy_graph_indicator.txt", "1\n1\n1\n2\n2\n3\n3\n3\n", GCN_ERR_FORMAT,
         "toy_node_labels.txt:9:", "more node labels than the 8 of toy_graph_indicator.txt"},
        {"toy_A.txt", "1, 2\n2, 1\n3, 4\n", GCN_ERR_FORMAT, "toy_A.txt:3:",
         "edge (3, 4) joins graph 1 and graph 2"},
        {"toy_A.txt", "1, 2\n2 1\n", GCN_ERR_FORMAT, "toy_A.txt:2:", "expected 2 columns, found 1"},
        {"toy_A.txt", "1, 2\n2, x\n", GCN_ERR_FORMAT, "toy_A.txt:2:", "is not an integer"},
        {"toy_A.txt", "1, 2\n0, 1\n", GCN_ERR_FORMAT, "toy_A.txt:2:", "out of range [1, 9]"},
        {"toy_graph_labels.txt", "1\n2\n", GCN_ERR_FORMAT, "toy_graph_labels.txt:2:",
         "2 graph labels, but toy_graph_indicator.txt says 3"},
        {"toy_graph_labels.txt", "1\n2\n1\n2\n", GCN_ERR_FORMAT, "toy_graph_labels.txt:4:",
         "more graph labels than the 3 of toy_graph_indicator.txt"},
        {"toy_graph_labels.txt", "1\none\n1\n", GCN_ERR_FORMAT, "toy_graph_labels.txt:2:",
         "label is not an integer"},
        {"toy_node_labels.txt", "0\n1\n0\n1\n", GCN_ERR_FORMAT, "toy_node_labels.txt:4:",
         "4 node labels, but toy_graph_indicator.txt says 9"},
        {"toy_node_labels.txt", "0\n0\n0\n0\n0\n0\n0\n0\n0\n100000\n", GCN_ERR_FORMAT,
         "toy_node_labels.txt:10:", "more node labels than the 9"},
        {"toy_node_labels.txt", "0\n0\n0\n0\n0\n0\n0\n0\n100000\n", GCN_ERR_UNSUPPORTED,
         "toy_node_labels.txt", "more than 65536 one-hot columns"},
        {"toy_node_attributes.txt", "1, 2\n3\n", GCN_ERR_FORMAT, "toy_node_attributes.txt:2:",
         "expected 2 columns, found 1"},
        {"toy_node_attributes.txt", "1, 2\n", GCN_ERR_FORMAT, "toy_node_attributes.txt:1:",
         "1 rows, but toy_graph_indicator.txt says 9"},
        {"toy_node_attributes.txt", "1, nan\n", GCN_ERR_NUMERIC, "toy_node_attributes.txt:1:",
         "NaN"},
    };
    gcn_ctx *ctx = test_cpu_ctx(1);
    ds_expect_bad_files(ctx, write_toy, "tu/toy", "tu:toy", cases,
                        sizeof cases / sizeof cases[0]);
    gcn_ctx_free(&ctx);
}

Test(dataset_tu, missing_required_files_and_reordering)
{
    ds_fixture f = ds_fixture_open(write_toy, "tu:toy");
    f.o.reorder = "degree";
    ds_expect_fail(f.ctx, "tu:toy", &f.o, GCN_ERR_UNSUPPORTED, "collection of 3 graphs", NULL);
    f.o.reorder = NULL;
    static const char *const required[] = {"toy_graph_labels.txt", "toy_graph_indicator.txt",
                                           "toy_A.txt"};
    for (int k = 0; k < 3; k++) {
        char rel[128];
        snprintf(rel, sizeof rel, "tu/toy/%s", required[k]);
        remove(ds_path(f.dir, rel));
        if (k < 2)
            ds_expect_fail(f.ctx, "tu:toy", &f.o, GCN_ERR_IO, required[k], "cannot open", NULL);
    }
    ds_expect_fail(f.ctx, "tu:toy", &f.o, GCN_ERR_FORMAT, "not a dataset folder", "toy_A.txt",
                   NULL);
    ds_fixture_close(&f);
}

Test(dataset_tu, cache_round_trip_and_stale_sources)
{
    ds_fixture f = ds_fixture_open(write_toy, "tu:toy");
    f.o.cache = true;
    gcn_dataset *first = ds_load_ok(f.ctx, "tu:toy", &f.o);
    cr_assert_not(first->from_cache);
    cr_assert_eq(access(ds_path(f.dir, "tu/toy/processed/gcn-v1.bin"), F_OK), 0);
    gcn_dataset *second = ds_load_ok(f.ctx, "tu:toy", &f.o);
    cr_assert(second->from_cache);
    check_toy(second);
    cr_assert(ds_same(first, second));
    gcn_dataset_free(&second);
    /* Another graph label file (other size) makes the cache stale. */
    ds_write(f.dir, "tu/toy/toy_graph_labels.txt", "7\n7\n-7\n");
    second = ds_load_ok(f.ctx, "tu:toy", &f.o);
    cr_assert_not(second->from_cache);
    static const int32_t labels[3] = {1, 1, 0}, values[2] = {-7, 7};
    cr_assert_arr_eq(second->graph_labels, labels, sizeof labels);
    cr_assert_arr_eq(second->graph_label_values, values, sizeof values);
    gcn_dataset_free(&first);
    gcn_dataset_free(&second);
    ds_fixture_close(&f);
}

/* ---- the real collections (../shared/data/tu/README.md) ---------------- */

typedef struct tu_counts {
    const char *name;
    int32_t nodes, graphs, entries, width, class_size[2], isolated;
} tu_counts;

static void check_real(const gcn_dataset *ds, const tu_counts *want)
{
    cr_assert_str_eq(ds->name, want->name);
    cr_assert_eq(ds->n_nodes, want->nodes, "%s nodes %d", want->name, ds->n_nodes);
    cr_assert_eq(ds->n_graphs, want->graphs);
    cr_assert_eq(ds->n_raw_edges, want->entries, "every line of DS_A is one distinct entry");
    cr_assert_eq(ds->graph->nnz, want->entries, "both directions are stored");
    cr_assert_eq(ds->n_features, want->width, "%s one-hot width %d", want->name,
                 ds->n_features);
    cr_assert_eq(ds->n_graph_classes, 2);
    cr_assert_eq(ds->graph_label_values[0], 1);
    cr_assert_eq(ds->graph_label_values[1], 2);
    int32_t per_class[2] = {0, 0};
    for (int32_t g = 0; g < ds->n_graphs; g++)
        per_class[ds->graph_labels[g]]++;
    cr_assert_eq(per_class[0], want->class_size[0]);
    cr_assert_eq(per_class[1], want->class_size[1]);
    gcn_degree_stats s;
    gcn_graph_degree_stats(ds->graph, &s);
    cr_assert_eq(s.n_isolated, want->isolated);
}

Test(dataset_tu, proteins_full_counts_and_cache)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    char *cache = ds_tmpdir();
    gcn_dataset *ds = ds_load_tu(ctx, "PROTEINS_full", cache);
    if (!ds)
        cr_skip_test("real data: " SHARED_DATA "/tu/PROTEINS_full absent");
    /* The 5 nodes the README calls single-node graphs are isolated nodes
     * of larger graphs: the indicator's smallest graph has 4 nodes. */
    static const tu_counts want = {"PROTEINS_full", 43471, 1113, 162088, 3, {663, 450}, 5};
    check_real(ds, &want);
    cr_assert_not(ds->from_cache);
    double ones[3] = {0, 0, 0};
    for (int64_t i = 0; i < (int64_t)ds->n_nodes * 3; i++)
        ones[i % 3] += ds->features[i];
    cr_assert(ones[0] == 21151 && ones[1] == 20931 && ones[2] == 1389,
              "node labels 0/1/2: %.0f %.0f %.0f", ones[0], ones[1], ones[2]);
    gcn_dataset *again = ds_load_tu(ctx, "PROTEINS_full", cache);
    cr_assert(again->from_cache);
    cr_assert(ds_same(ds, again));
    gcn_dataset_free(&again);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(cache);
    free(cache);
}

Test(dataset_tu, dd_counts, .timeout = 120)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset *ds = ds_load_tu(ctx, "DD", NULL);
    if (!ds)
        cr_skip_test("real data: " SHARED_DATA "/tu/DD absent");
    /* Node labels 1..89 (82 of them used): 89 one-hot columns, as PyG. */
    static const tu_counts want = {"DD", 334925, 1178, 1686092, 89, {691, 487}, 0};
    check_real(ds, &want);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

/* ---- batches of graphs ------------------------------------------------- */

/* The entries of rows [first, end) of g, renumbered from 0, as a graph. */
static gcn_graph *block(gcn_ctx *ctx, const gcn_graph *g, int32_t first, int32_t end)
{
    int32_t n = end - first, m = g->row_ptr[end] - g->row_ptr[first];
    int32_t *src = malloc(((size_t)m + 1) * sizeof *src);
    int32_t *dst = malloc(((size_t)m + 1) * sizeof *dst);
    cr_assert(src && dst);
    for (int32_t v = first, e = 0; v < end; v++)
        for (int32_t q = g->row_ptr[v]; q < g->row_ptr[v + 1]; q++, e++) {
            src[e] = v - first;
            dst[e] = g->col_idx[q] - first;
        }
    gcn_graph *out = NULL;
    cr_assert_eq(gcn_graph_from_coo(ctx, &out, n, m, src, dst), GCN_OK,
                 "an entry leaves rows [%d, %d)", first, end);
    free(src);
    free(dst);
    return out;
}

/* Asserts that b is the batch of graphs ids[0, n) of ds: each diagonal
 * block equals its graph, no entry lies outside the blocks, and node ids,
 * segments and labels follow the graphs. */
static void check_batch(gcn_ctx *ctx, const gcn_dataset *ds, const int32_t *ids, int32_t n,
                        const gcn_graph_batch *b)
{
    cr_assert_eq(gcn_graph_validate(ctx, b->graph), GCN_OK);
    cr_assert_eq(b->n_graphs, n);
    cr_assert_eq(b->graph->n_nodes, b->n_nodes);
    int64_t entries = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t g = ids[k], first = ds->graph_ptr[g], size = ds->graph_ptr[g + 1] - first;
        int32_t at = b->graph_ptr[k];
        cr_assert_eq(b->graph_ptr[k + 1] - at, size, "batch graph %d has graph %d's size", k, g);
        cr_assert_eq(b->labels[k], ds->graph_labels[g]);
        for (int32_t i = 0; i < size; i++) {
            cr_assert_eq(b->node_ids[at + i], first + i);
            cr_assert_eq(b->segment[at + i], k);
        }
        gcn_graph *want = block(ctx, ds->graph, first, first + size);
        gcn_graph *got = block(ctx, b->graph, at, at + size);
        ds_expect_same_graph(got, want);
        entries += got->nnz;
        gcn_graph_free(&want);
        gcn_graph_free(&got);
    }
    cr_assert_eq(b->graph_ptr[0], 0);
    cr_assert_eq(b->graph_ptr[n], b->n_nodes);
    cr_assert_eq(entries, b->graph->nnz, "every entry is in a diagonal block");
}

Test(dataset_tu, batch_is_block_diagonal_in_the_order_given)
{
    ds_fixture f = ds_fixture_open(write_toy, "tu:toy");
    gcn_ctx *ctx = f.ctx;
    const gcn_dataset *ds = f.ds;
    const int32_t ids[3] = {2, 1, 2};
    gcn_graph_batch *b = NULL;
    cr_assert_eq(gcn_graph_batch_build(ctx, ds, ids, 3, &b), GCN_OK, "%s", gcn_last_error(ctx));
    check_batch(ctx, ds, ids, 3, b);
    /* Written out: the path 6-7-8 with 9 isolated, the edge 4-5, the path again. */
    static const int32_t row_ptr[11] = {0, 1, 3, 4, 4, 5, 6, 7, 9, 10, 10};
    static const int32_t col_idx[10] = {1, 0, 2, 1, 5, 4, 7, 6, 8, 7};
    static const int32_t node_ids[10] = {5, 6, 7, 8, 3, 4, 5, 6, 7, 8};
    static const int32_t segment[10] = {0, 0, 0, 0, 1, 1, 2, 2, 2, 2};
    static const int32_t graph_ptr[4] = {0, 4, 6, 10}, labels[3] = {0, 1, 0};
    cr_assert_eq(b->n_nodes, 10);
    cr_assert_arr_eq(b->graph->row_ptr, row_ptr, sizeof row_ptr);
    cr_assert_arr_eq(b->graph->col_idx, col_idx, sizeof col_idx);
    cr_assert_arr_eq(b->node_ids, node_ids, sizeof node_ids);
    cr_assert_arr_eq(b->segment, segment, sizeof segment);
    cr_assert_arr_eq(b->graph_ptr, graph_ptr, sizeof graph_ptr);
    cr_assert_arr_eq(b->labels, labels, sizeof labels);
    gcn_graph_batch_free(&b);
    gcn_graph_batch_free(&b); /* NULL is fine */
    const int32_t bad[2] = {0, 3};
    cr_assert_eq(gcn_graph_batch_build(ctx, ds, bad, 2, &b), GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "graph id 3 (batch entry 1) out of range [0, 3)"),
              "%s", gcn_last_error(ctx));
    cr_assert_null(b);
    gcn_dataset *sbm = ds_load_ok(ctx, "sbm:nodes=100,classes=2", &f.o);
    cr_assert_eq(gcn_graph_batch_build(ctx, sbm, ids, 1, &b), GCN_ERR_STATE);
    gcn_dataset_free(&sbm);
    ds_fixture_close(&f);
}

Test(dataset_tu, proteins_batches_cover_an_epoch)
{
    gcn_ctx *ctx = test_cpu_ctx(3);
    gcn_dataset *ds = ds_load_tu(ctx, "PROTEINS_full", NULL);
    if (!ds)
        cr_skip_test("real data: " SHARED_DATA "/tu/PROTEINS_full absent");
    int32_t n = ds->n_graphs, *ids = malloc((size_t)n * sizeof *ids), n_batches = 0;
    cr_assert(ids);
    for (int32_t g = 0; g < n; g++)
        ids[g] = g;
    cr_assert_eq(gcn_graph_shuffle_batches(ctx, ids, n, GCN_GRAPH_BATCH_SIZE, &n_batches),
                 GCN_OK);
    cr_assert_eq(n_batches, 35, "1113 graphs in batches of 32");
    int64_t nodes = 0;
    for (int32_t k = 0; k < n_batches; k++) {
        int32_t first = k * GCN_GRAPH_BATCH_SIZE;
        int32_t size = n - first < GCN_GRAPH_BATCH_SIZE ? n - first : GCN_GRAPH_BATCH_SIZE;
        gcn_graph_batch *b = NULL;
        cr_assert_eq(gcn_graph_batch_build(ctx, ds, ids + first, size, &b), GCN_OK);
        check_batch(ctx, ds, ids + first, size, b);
        nodes += b->n_nodes;
        gcn_graph_batch_free(&b);
    }
    cr_assert_eq(nodes, ds->n_nodes, "an epoch's batches hold every node once");
    free(ids);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}
