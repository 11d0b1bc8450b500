/* TU graph collections: a hand-made 3-graph folder (plain and gzip), every
 * malformed-file error, the real PROTEINS_full and DD, the cache, batches
 * of graphs, the per-epoch shuffle, stratified folds and the fold file. */
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

/* A collection written into a new folder by `write` and loaded as spec on
 * a CPU context that keeps its log (ds_notices). */
typedef struct fixture {
    char *dir;
    gcn_ctx *ctx;
    gcn_dataset_opts o;
    gcn_dataset *ds;
} fixture;

static fixture fixture_open(void (*write)(const char *dir), const char *spec)
{
    fixture f = {.dir = ds_tmpdir()};
    write(f.dir);
    f.ctx = ds_logging_ctx(1);
    f.o = ds_opts(f.dir);
    f.ds = ds_load_ok(f.ctx, spec, &f.o);
    return f;
}

static void fixture_close(fixture *f)
{
    gcn_dataset_free(&f->ds);
    gcn_ctx_free(&f->ctx);
    ds_rmtree(f->dir);
    free(f->dir);
}

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
    fixture plain = fixture_open(write_toy, "tu:toy");
    check_toy(plain.ds);
    cr_assert(strstr(ds_notices, "toy_edge_labels.txt: ignored"), "%s", ds_notices);
    char text[2048];
    gcn_dataset_describe(plain.ds, text, sizeof text);
    cr_assert(strstr(text, "3 graphs of 2 to 4 nodes, 2 graph classes"), "%s", text);
    fixture zipped = fixture_open(write_toy_gz, "tu:toy");
    check_toy(zipped.ds);
    cr_assert(ds_same(plain.ds, zipped.ds));
    fixture_close(&plain);
    fixture_close(&zipped);
}

Test(dataset_tu, folder_paths_and_optional_files)
{
    fixture f = fixture_open(write_toy, "tu:toy");
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
    fixture_close(&f);
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
    fixture f = fixture_open(write_toy, "tu:toy");
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
    fixture_close(&f);
}

Test(dataset_tu, cache_round_trip_and_stale_sources)
{
    fixture f = fixture_open(write_toy, "tu:toy");
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
    fixture_close(&f);
}

/* ---- the real collections (../shared/data/tu/README.md) ---------------- */

typedef struct tu_counts {
    const char *name;
    int32_t nodes, graphs, entries, width, class_size[2], isolated;
} tu_counts;

/* Loads tu:<name> from the shared data, or NULL when it is absent. */
static gcn_dataset *load_real(gcn_ctx *ctx, const char *name, const char *cache_dir)
{
    char path[256], spec[64];
    snprintf(path, sizeof path, SHARED_DATA "/tu/%s", name);
    if (access(path, R_OK) != 0)
        return NULL;
    gcn_dataset_opts o = ds_opts(SHARED_DATA);
    o.cache = cache_dir != NULL;
    o.cache_dir = cache_dir;
    snprintf(spec, sizeof spec, "tu:%s", name);
    return ds_load_ok(ctx, spec, &o);
}

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
    gcn_dataset *ds = load_real(ctx, "PROTEINS_full", cache);
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
    gcn_dataset *again = load_real(ctx, "PROTEINS_full", cache);
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
    gcn_dataset *ds = load_real(ctx, "DD", NULL);
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
    fixture f = fixture_open(write_toy, "tu:toy");
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
    fixture_close(&f);
}

Test(dataset_tu, proteins_batches_cover_an_epoch)
{
    gcn_ctx *ctx = test_cpu_ctx(3);
    gcn_dataset *ds = load_real(ctx, "PROTEINS_full", NULL);
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

/* ---- shuffles and folds ------------------------------------------------ */

#define N_IDS 100

/* ids 3 * i, shuffled on ctx in batches of 32. */
static void shuffled(gcn_ctx *ctx, int32_t *ids)
{
    for (int32_t i = 0; i < N_IDS; i++)
        ids[i] = 3 * i;
    int32_t n_batches = 0;
    cr_assert_eq(gcn_graph_shuffle_batches(ctx, ids, N_IDS, 32, &n_batches), GCN_OK);
    cr_assert_eq(n_batches, 4);
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int32_t *)a - *(const int32_t *)b;
}

Test(dataset_tu, shuffle_is_seeded_and_per_epoch)
{
    gcn_ctx *a = test_cpu_ctx(7), *b = test_cpu_ctx(7), *c = test_cpu_ctx(8);
    int32_t x[N_IDS], y[N_IDS], z[N_IDS], sorted[N_IDS];
    shuffled(a, x);
    shuffled(b, y);
    cr_assert_arr_eq(x, y, sizeof x, "the same seed gives the same order");
    memcpy(sorted, x, sizeof x);
    qsort(sorted, N_IDS, sizeof *sorted, cmp_int);
    bool moved = false;
    for (int32_t i = 0; i < N_IDS; i++) {
        cr_assert_eq(sorted[i], 3 * i, "a permutation of the ids");
        moved = moved || x[i] != 3 * i;
    }
    cr_assert(moved);
    shuffled(c, z);
    cr_assert_arr_neq(x, z, sizeof x, "another seed, another order");
    shuffled(a, z);
    cr_assert_arr_neq(x, z, sizeof x, "the next epoch, another order");
    uint64_t off[GCN_RNG_N_STREAMS];
    gcn_rng_get_state(b, off);
    for (int s = 0; s < GCN_RNG_N_STREAMS; s++)
        cr_assert((off[s] != 0) == (s == GCN_RNG_SHUFFLE), "stream %d at %llu", s,
                  (unsigned long long)off[s]);
    int32_t n_batches = -1;
    cr_assert_eq(gcn_graph_shuffle_batches(a, x, 0, 32, &n_batches), GCN_OK);
    cr_assert_eq(n_batches, 0);
    cr_assert_eq(gcn_graph_shuffle_batches(a, x, N_IDS, 0, &n_batches), GCN_ERR_INVALID_ARG);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
    gcn_ctx_free(&c);
}

/* A collection of 50 one-node graphs without edges, labelled 5, 9 or 11
 * in uneven numbers, in dir/tu/many. */
static void write_many(const char *dir)
{
    char indicator[512] = "", labels[512] = "";
    for (int g = 0; g < 50; g++) {
        snprintf(indicator + strlen(indicator), 8, "%d\n", g + 1);
        snprintf(labels + strlen(labels), 8, "%d\n", g % 7 < 3 ? 5 : g % 7 < 6 ? 9 : 11);
    }
    ds_write(dir, "tu/many/many_graph_indicator.txt", indicator);
    ds_write(dir, "tu/many/many_graph_labels.txt", labels);
    ds_write(dir, "tu/many/many_A.txt", "");
}

/* Asserts that fold is a stratified k-fold split of ds: folds in range,
 * sizes within one of each other, each class's count in each fold within
 * one of its share. */
static void check_folds(const gcn_dataset *ds, int32_t k, const int32_t *fold)
{
    int32_t size[16] = {0}, count[16][4] = {{0}}, total[4] = {0};
    cr_assert_leq(k, 16);
    cr_assert_leq(ds->n_graph_classes, 4);
    for (int32_t g = 0; g < ds->n_graphs; g++) {
        cr_assert(fold[g] >= 0 && fold[g] < k, "graph %d in fold %d", g, fold[g]);
        size[fold[g]]++;
        count[fold[g]][ds->graph_labels[g]]++;
        total[ds->graph_labels[g]]++;
    }
    for (int32_t f = 0; f < k; f++) {
        cr_assert(size[f] * k >= ds->n_graphs - k && size[f] * k <= ds->n_graphs + k,
                  "fold %d holds %d of %d graphs", f, size[f], ds->n_graphs);
        for (int32_t c = 0; c < ds->n_graph_classes; c++)
            cr_assert(abs(count[f][c] * k - total[c]) < k, "fold %d holds %d of class %d's %d",
                      f, count[f][c], c, total[c]);
    }
}

Test(dataset_tu, folds_are_stratified_seeded_and_disjoint)
{
    fixture f = fixture_open(write_many, "tu:many");
    gcn_ctx *ctx = f.ctx;
    gcn_dataset *ds = f.ds;
    cr_assert_eq(ds->n_graphs, 50);
    cr_assert_eq(ds->graph->nnz, 0);
    cr_assert_eq(ds->n_graph_classes, 3);
    int32_t a[50], b[50];
    for (int32_t k = 2; k <= 10; k += 4) {
        cr_assert_eq(gcn_graph_folds(ctx, ds, k, 0, a), GCN_OK);
        check_folds(ds, k, a);
        cr_assert_eq(gcn_graph_folds(ctx, ds, k, 0, b), GCN_OK);
        cr_assert_arr_eq(a, b, sizeof a, "the same seed gives the same folds");
        cr_assert_eq(gcn_graph_folds(ctx, ds, k, 1, b), GCN_OK);
        check_folds(ds, k, b);
        cr_assert_arr_neq(a, b, sizeof a, "another seed, other folds");
    }
    cr_assert_eq(gcn_graph_folds(ctx, ds, 1, 0, a), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_graph_folds(ctx, ds, 51, 0, a), GCN_ERR_INVALID_ARG);
    gcn_dataset *sbm = ds_load_ok(ctx, "sbm:nodes=100,classes=2", &f.o);
    cr_assert_eq(gcn_graph_folds(ctx, sbm, 2, 0, a), GCN_ERR_STATE);
    gcn_dataset_free(&sbm);
    ds = load_real(ctx, "PROTEINS_full", NULL);
    if (ds) {
        int32_t *fold = malloc((size_t)ds->n_graphs * sizeof *fold);
        cr_assert_eq(gcn_graph_folds(ctx, ds, 10, 0, fold), GCN_OK);
        check_folds(ds, 10, fold);
        free(fold);
        gcn_dataset_free(&ds);
    }
    fixture_close(&f);
}

/* Asserts that reading the fold file `text` fails with st and a message
 * holding needle. */
static void expect_bad_folds(gcn_ctx *ctx, const gcn_dataset *ds, const char *dir,
                             const char *text, gcn_status st, const char *needle)
{
    ds_write(dir, "bad-folds.txt", text);
    int32_t k = 0, fold[50];
    gcn_status got = gcn_graph_folds_read(ctx, ds_path(dir, "bad-folds.txt"), ds, &k, fold);
    cr_assert_eq(got, st, "%s: %s", text, gcn_last_error(ctx));
    cr_assert(strstr(gcn_last_error(ctx), needle), "'%s' lacks '%s'", gcn_last_error(ctx),
              needle);
}

Test(dataset_tu, fold_file_round_trip)
{
    fixture f = fixture_open(write_many, "tu:many");
    gcn_ctx *ctx = f.ctx;
    const gcn_dataset *ds = f.ds;
    const char *dir = f.dir;
    int32_t fold[50], back[50], k = 0;
    cr_assert_eq(gcn_graph_folds(ctx, ds, 5, 42, fold), GCN_OK);
    char path[4096];
    snprintf(path, sizeof path, "%s", ds_path(dir, "folds.txt"));
    cr_assert_eq(gcn_graph_folds_write(ctx, path, ds, 5, fold), GCN_OK, "%s",
                 gcn_last_error(ctx));
    cr_assert_eq(gcn_graph_folds_read(ctx, path, ds, &k, back), GCN_OK, "%s",
                 gcn_last_error(ctx));
    cr_assert_eq(k, 5);
    cr_assert_arr_eq(fold, back, sizeof fold);
    /* The text another framework reads: comments, then fold 0's ids ascending. */
    FILE *text = fopen(path, "r");
    cr_assert(text);
    char line[1024];
    while (fgets(line, sizeof line, text) && line[0] == '#')
        ;
    fclose(text);
    int prev = -1, n = 0;
    for (char *p = strtok(line, " \n"); p; p = strtok(NULL, " \n"), n++) {
        int g = atoi(p);
        cr_assert_gt(g, prev, "ascending");
        cr_assert_eq(fold[g], 0);
        prev = g;
    }
    cr_assert_eq(n, 10);
    expect_bad_folds(ctx, ds, dir, "# x\n0 1\n1 2\n", GCN_ERR_FORMAT,
                     "bad-folds.txt:3: graph 1 is in fold 0 and fold 1");
    expect_bad_folds(ctx, ds, dir, "0 1\n2 50\n", GCN_ERR_FORMAT,
                     "bad-folds.txt:2: column 2: graph id 50 out of range [0, 49]");
    expect_bad_folds(ctx, ds, dir, "0 1\n2 x\n", GCN_ERR_FORMAT, "is not an integer");
    expect_bad_folds(ctx, ds, dir, "0 1\n\n2 3\n", GCN_ERR_FORMAT, "graph 4 is in no fold");
    expect_bad_folds(ctx, ds, dir, "# only comments\n", GCN_ERR_FORMAT,
                     "0 folds, expected at least 2");
    expect_bad_folds(ctx, ds, dir, "", GCN_ERR_FORMAT, "bad-folds.txt: 0 folds");
    cr_assert_eq(gcn_graph_folds_read(ctx, ds_path(dir, "none.txt"), ds, &k, back),
                 GCN_ERR_IO);
    fold[7] = 5;
    cr_assert_eq(gcn_graph_folds_write(ctx, path, ds, 5, fold), GCN_ERR_INVALID_ARG);
    for (int32_t g = 0; g < 50; g++)
        fold[g] = g % 2;
    cr_assert_eq(gcn_graph_folds_write(ctx, path, ds, 3, fold), GCN_ERR_INVALID_ARG,
                 "fold 2 is empty");
    cr_assert_eq(gcn_graph_folds_read(ctx, path, ds, &k, back), GCN_OK, "the old file stays");
    cr_assert_eq(k, 5);
    fixture_close(&f);
}
