/* Structure-only graph files: SNAP edge lists (comments, sparse ids, a
 * third column, gzip, CSV) and Matrix Market coordinate files (pattern,
 * real, integer; general, symmetric; gzip), with their error cases. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_helpers.h"
#include "helpers.h"

static gcn_dataset *load_file(gcn_ctx *ctx, const char *dir, const char *rel, bool sym)
{
    gcn_dataset_opts o = ds_opts(dir);
    o.symmetrize = sym;
    gcn_dataset *ds = NULL;
    gcn_status st = gcn_dataset_load(ctx, &ds, ds_path(dir, rel), &o);
    cr_assert_eq(st, GCN_OK, "%s: %s", rel, gcn_last_error(ctx));
    return ds;
}

Test(dataset_formats, snap_edge_list)
{
    char *dir = ds_tmpdir();
    ds_write(dir, "g.txt.gz", "# Directed graph: toy\n# Nodes: 4 Edges: 5\n"
                              "30\t10\n10\t20\n\n20  30\n10\t20\n 40 40\n# trailing comment\n");
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset *ds = load_file(ctx, dir, "g.txt.gz", false);
    cr_assert_str_eq(ds->name, "g");
    cr_assert_eq(ds->n_nodes, 4, "ids 10, 20, 30, 40 renumbered 0..3");
    cr_assert_eq(ds->n_raw_edges, 4, "duplicate merged, loop kept");
    cr_assert_eq(ds->graph->nnz, 3, "the loop 40-40 removed by default");
    cr_assert_eq(ds->graph->row_ptr[1], 1);
    cr_assert_eq(ds->graph->col_idx[0], 1, "10 -> 20 is 0 -> 1");
    cr_assert_eq(ds->n_features, 0);
    cr_assert_str_eq(ds->feature_source, "none");
    cr_assert_null(ds->labels);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset_formats, edge_list_third_column_and_csv)
{
    char *dir = ds_tmpdir();
    ds_write(dir, "caida.txt", "# FromNodeId ToNodeId Relationship\n1 2 -1\n2 1 1\n2 3 0\n");
    ds_write(dir, "w.csv", "0,1\n1,2,0.5\n");
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset *ds = load_file(ctx, dir, "caida.txt", true);
    cr_assert_eq(ds->n_nodes, 3);
    cr_assert_eq(ds->graph->nnz, 4);
    gcn_dataset_free(&ds);
    ds = load_file(ctx, dir, "w.csv", true);
    cr_assert_eq(ds->n_nodes, 3);
    cr_assert_eq(ds->graph->nnz, 4);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset_formats, edge_list_name_under_graphs)
{
    char *dir = ds_tmpdir();
    ds_write(dir, "graphs/Tiny-Vote.txt.gz", "0 1\n1 2\n");
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    gcn_dataset *ds = NULL;
    cr_assert_eq(gcn_dataset_load(ctx, &ds, "Tiny-Vote", &o), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_str_eq(ds->name, "Tiny-Vote");
    cr_assert_eq(ds->n_nodes, 3);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset_formats, matrix_market_variants)
{
    char *dir = ds_tmpdir();
    ds_write(dir, "sym.mtx.gz", "%%MatrixMarket matrix coordinate pattern symmetric\n"
                                "% a comment\n%\n4 4 3\n2 1\n3 2\n4 4\n");
    ds_write(dir, "gen.mtx", "%%matrixmarket MATRIX Coordinate REAL General\n"
                             "3 3 3\n1 2 0.5\n2 3 -1e3\n3 1 2\n");
    ds_write(dir, "int.data", "%%MatrixMarket matrix coordinate integer general\n"
                              "2 2 1\n1 2 7\n");
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset *ds = load_file(ctx, dir, "sym.mtx.gz", false);
    cr_assert_str_eq(ds->name, "sym");
    cr_assert_eq(ds->n_nodes, 4);
    cr_assert_eq(ds->n_raw_edges, 5, "two mirrored entries and the diagonal once");
    cr_assert_eq(ds->graph->nnz, 4);
    cr_assert(gcn_graph_is_symmetric(ds->graph));
    gcn_dataset_free(&ds);
    ds = load_file(ctx, dir, "gen.mtx", false);
    cr_assert_eq(ds->graph->nnz, 3);
    cr_assert_not(gcn_graph_is_symmetric(ds->graph));
    cr_assert_null(ds->graph->values, "values are read and checked, the graph is structural");
    gcn_dataset_free(&ds);
    ds = load_file(ctx, dir, "int.data", false); /* found by its banner */
    cr_assert_eq(ds->n_nodes, 2);
    cr_assert_eq(ds->graph->nnz, 1);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

static const ds_bad_file cases[] = {
    {"e.txt", "# only comments\n\n", GCN_ERR_FORMAT, "e.txt:2:", "empty file"},
    {"e.txt", "", GCN_ERR_FORMAT, "e.txt: ", "empty file"},
    {"e.txt", "1 2\n3\n", GCN_ERR_FORMAT, "e.txt:2:", "expected 2 to 3 columns, found 1"},
    {"e.txt", "1 2\n3 4 5 6\n", GCN_ERR_FORMAT, "e.txt:2:", "found 4"},
    {"e.txt", "1 2\n3 -4\n", GCN_ERR_FORMAT, "e.txt:2:", "negative"},
    {"e.txt", "1 2\n3 four\n", GCN_ERR_FORMAT, "e.txt:2:", "not an integer"},
    {"e.txt", "1 2 x\n", GCN_ERR_FORMAT, "e.txt:1:", "not a number"},
    {"e.txt", "1 2 nan\n", GCN_ERR_NUMERIC, "e.txt:1:", "NaN"},
    {"e.txt", "1 2\n3 4\0\n", GCN_ERR_FORMAT, "e.txt:2:", "NUL byte"},
    {"e.txt", "1 2 -inf\n", GCN_ERR_NUMERIC, "e.txt:1:", "infinite"},
    {"e.txt", "1 2\n99999999999999999999 1\n", GCN_ERR_FORMAT, "e.txt:2:",
     "not an integer"},
    {"e.csv", "1,2\n3\n", GCN_ERR_FORMAT, "e.csv:2:", "expected 2 to 3 columns, found 1"},
    {"e.csv", "1,2\n3,4,5,6\n", GCN_ERR_FORMAT, "e.csv:2:", "found 4"},
    {"e.csv", "1,2\n,4\n", GCN_ERR_FORMAT, "e.csv:2:", "not an integer"},
    {"m.mtx", "", GCN_ERR_FORMAT, "m.mtx: ", "empty file"},
    {"m.mtx", "3 3 1\n1 2\n", GCN_ERR_FORMAT, "m.mtx:1:", "banner"},
    {"m.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
     GCN_ERR_UNSUPPORTED, "m.mtx:1:", "coordinate"},
    {"m.mtx", "%%MatrixMarket matrix coordinate complex general\n", GCN_ERR_UNSUPPORTED,
     "m.mtx:1:", "complex"},
    {"m.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n", GCN_ERR_UNSUPPORTED,
     "m.mtx:1:", "skew-symmetric"},
    {"m.mtx", "%%MatrixMarket matrix coordinate pattern\n", GCN_ERR_FORMAT, "m.mtx:1:",
     "expected 5 columns, found 4"},
    {"m.mtx", "%%MatrixMarket matrix coordinate pattern general\n% c\n", GCN_ERR_FORMAT,
     "m.mtx:2:", "before the size line"},
    {"m.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 4 1\n1 2\n",
     GCN_ERR_UNSUPPORTED, "m.mtx:2:", "square"},
    {"m.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3\n", GCN_ERR_FORMAT,
     "m.mtx:2:", "expected 3 columns, found 2"},
    {"m.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n",
     GCN_ERR_FORMAT, "m.mtx:3:", "after 1 of 2 entries"},
    {"m.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n2 3\n",
     GCN_ERR_FORMAT, "m.mtx:4:", "more entries than the 1"},
    {"m.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n0 2\n",
     GCN_ERR_FORMAT, "m.mtx:3:", "row index 0 out of range [1, 3]"},
    {"m.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 4\n",
     GCN_ERR_FORMAT, "m.mtx:3:", "column index 4 out of range"},
    {"m.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2 1\n",
     GCN_ERR_FORMAT, "m.mtx:3:", "expected 2 columns, found 3"},
    {"m.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2\n",
     GCN_ERR_FORMAT, "m.mtx:3:", "expected 3 columns, found 2"},
    {"m.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 inf\n",
     GCN_ERR_NUMERIC, "m.mtx:3:", "infinite"},
    {"m.mtx", "%%MatrixMarket matrix coordinate real general\n-3 -3 1\n", GCN_ERR_FORMAT,
     "m.mtx:2:", "negative"},
    {"m.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 three 1\n",
     GCN_ERR_FORMAT, "m.mtx:2:", "column count is not an integer"},
    {"m.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 1 1\n",
     GCN_ERR_FORMAT, "m.mtx:2:", "expected 3 columns, found 4"},
    {"m.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 x\n",
     GCN_ERR_FORMAT, "m.mtx:3:", "column index is not an integer"},
    {"m.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 1\n-1 2\n",
     GCN_ERR_FORMAT, "m.mtx:3:", "row index -1 is negative"},
    {"m.mtx", "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 2 seven\n",
     GCN_ERR_FORMAT, "m.mtx:3:", "not a number"},
    {"m.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 1\n1 2 NaN\n",
     GCN_ERR_NUMERIC, "m.mtx:3:", "NaN"},
};

Test(dataset_formats, errors_name_file_and_line)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *dir = ds_tmpdir();
        size_t len = strlen(cases[k].text);
        if (strstr(cases[k].why, "NUL"))
            len += 2; /* the text holds a NUL and a newline after it */
        ds_write_bytes(dir, cases[k].file, cases[k].text, len);
        gcn_dataset_opts o = ds_opts(dir);
        ds_expect_fail(ctx, ds_path(dir, cases[k].file), &o, cases[k].st, cases[k].where,
                       cases[k].why, NULL);
        ds_rmtree(dir);
        free(dir);
    }
    gcn_ctx_free(&ctx);
}

/* Truncated, corrupt and checksum-damaged gzip edge lists and Matrix Market
 * files fail with zlib's reason at the line reached. */
Test(dataset_formats, gzip_damage_is_reported)
{
    static const char *const names[2] = {"e.txt.gz", "m.mtx.gz"};
    gcn_ctx *ctx = test_cpu_ctx(1);
    for (int k = 0; k < 6; k++) {
        const char *name = names[k / 3];
        char *dir = ds_tmpdir();
        size_t len;
        char *text = ds_random_edges(
            k < 3 ? "# edges\n" : "%%MatrixMarket matrix coordinate pattern general\n"
                                   "1000 1000 20000\n",
            20000, 1000, k < 3 ? 0 : 1, ' ', &len);
        ds_write_bytes(dir, name, text, len);
        free(text);
        gcn_dataset *ds = load_file(ctx, dir, name, true);
        gcn_dataset_free(&ds);
        const char *why = ds_damage_gzip(ds_path(dir, name), k % 3);
        char where[32];
        snprintf(where, sizeof where, "%s:", name);
        gcn_dataset_opts o = ds_opts(dir);
        ds_expect_fail(ctx, ds_path(dir, name), &o, GCN_ERR_FORMAT, where, why, NULL);
        ds_rmtree(dir);
        free(dir);
    }
    gcn_ctx_free(&ctx);
}

Test(dataset_formats, long_lines_and_missing_files)
{
    char *dir = ds_tmpdir();
    size_t n = (size_t)3 << 20; /* a 3 MiB line grows the buffer past its start size */
    char *text = malloc(n + 16);
    memset(text, ' ', n);
    memcpy(text + n, "1 2\n3 4\n", 9);
    ds_write(dir, "long.txt", text);
    free(text);
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset *ds = load_file(ctx, dir, "long.txt", false);
    cr_assert_eq(ds->n_nodes, 4);
    gcn_dataset_free(&ds);
    gcn_dataset_opts o = ds_opts(dir);
    n = (size_t)65 << 20; /* past the 64 MiB limit */
    text = malloc(n);
    memset(text, '7', n);
    ds_write_bytes(dir, "huge.txt", text, n);
    free(text);
    ds_expect_fail(ctx, ds_path(dir, "huge.txt"), &o, GCN_ERR_FORMAT, "huge.txt:1:",
                   "longer than 64 MiB", NULL);
    ds_expect_fail(ctx, ds_path(dir, "graphs/none.txt"), &o, GCN_ERR_NOT_FOUND, "none.txt", NULL);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}
