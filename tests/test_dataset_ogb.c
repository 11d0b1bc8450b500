/* The OGB node-property loader on gzip fixtures written with zlib: names,
 * counts, features, labels, split schemes, notices, and every error case
 * (corrupt and truncated gzip, counts that disagree, bad fields, ids out of
 * range, NaN/Inf, split problems, empty files) with its file:line message. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset_helpers.h"
#include "helpers.h"

Test(dataset_ogb, loads_by_either_name)
{
    char *dir = ds_tmpdir();
    ds_write_ogb_toy(dir);
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    const char *names[] = {"ogbn-toy", "ogbn_toy"};
    for (int k = 0; k < 2; k++) {
        gcn_dataset *ds = ds_load_ok(ctx, names[k], &o);
        cr_assert_str_eq(ds->name, "ogbn-toy");
        cr_assert_eq(ds->n_nodes, 5);
        cr_assert_eq(ds->n_raw_edges, 6);
        cr_assert_eq(ds->graph->nnz, 12);
        cr_assert_eq(ds->n_features, 3);
        cr_assert_float_eq(ds->features[2 * 3 + 2], 3.5e-2f, 0.0f);
        cr_assert_float_eq(ds->features[4 * 3 + 0], 1e-3f, 0.0f);
        cr_assert_eq(ds->n_classes, 3);
        cr_assert_eq(ds->labels[2], 2);
        cr_assert_eq(ds->n_train, 2);
        cr_assert_eq(ds->n_valid, 1);
        cr_assert_eq(ds->n_test, 2);
        gcn_dataset_free(&ds);
    }
    o.symmetrize = false;
    gcn_dataset *ds = ds_load_ok(ctx, "ogbn-toy", &o);
    cr_assert_eq(ds->graph->nnz, 6);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset_ogb, missing_features_need_an_explicit_substitute)
{
    char *dir = ds_tmpdir();
    ds_write_ogb_toy(dir);
    unlink(ds_path(dir, "ogbn_toy/raw/node-feat.csv.gz"));
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    ds_expect_fail(ctx, "ogbn-toy", &o, GCN_ERR_IO, "ogbn_toy/raw/node-feat.csv.gz", "missing",
                   "random:D", "degree", NULL);
    o.features = "random:4";
    gcn_dataset *ds = ds_load_ok(ctx, "ogbn-toy", &o);
    cr_assert_eq(ds->n_features, 4);
    cr_assert_str_eq(ds->feature_source, "random:4");
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset_ogb, proteins_style_extras_load_with_notices)
{
    char *dir = ds_tmpdir();
    ds_write_ogb_toy(dir);
    ds_write(dir, "ogbn_toy/raw/edge-feat.csv.gz", "0.1\n0.2\n0.3\n0.4\n0.5\n0.6\n");
    ds_write(dir, "ogbn_toy/raw/node-label.csv.gz", "0,1\n1,1\n0,0\n1,0\n0,1\n");
    gcn_ctx *ctx = ds_logging_ctx(0);
    gcn_dataset_opts o = ds_opts(dir);
    gcn_dataset *ds = ds_load_ok(ctx, "ogbn-toy", &o);
    cr_assert_null(ds->labels, "multi-task labels are not kept");
    cr_assert_eq(ds->n_train, 2, "the shipped split still loads");
    cr_assert(strstr(ds_notices, "edge-feat.csv.gz: edge features are ignored"), "%s", ds_notices);
    cr_assert(strstr(ds_notices, "node-label.csv.gz: 2 label columns"), "%s", ds_notices);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset_ogb, nan_labels_are_unlabelled)
{
    char *dir = ds_tmpdir();
    ds_write_ogb_toy(dir);
    ds_write(dir, "ogbn_toy/raw/node-label.csv.gz", "0\nnan\n2\n\n1\n");
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    gcn_dataset *ds = ds_load_ok(ctx, "ogbn-toy", &o);
    cr_assert_eq(ds->labels[1], -1);
    cr_assert_eq(ds->labels[3], -1);
    cr_assert_eq(ds->labels[4], 1);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset_ogb, split_schemes)
{
    char *dir = ds_tmpdir();
    ds_write_ogb_toy(dir);
    ds_write(dir, "ogbn_toy/split/other/train.csv.gz", "4\n");
    ds_write(dir, "ogbn_toy/split/other/valid.csv.gz", "3\n");
    ds_write(dir, "ogbn_toy/split/other/test.csv.gz", "0\n1\n2\n");
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    ds_expect_fail(ctx, "ogbn-toy", &o, GCN_ERR_INVALID_ARG, "several split schemes",
                   "split_scheme", NULL);
    o.split_scheme = "other";
    gcn_dataset *ds = ds_load_ok(ctx, "ogbn-toy", &o);
    cr_assert_eq(ds->n_train, 1);
    cr_assert_eq(ds->train[0], 4);
    cr_assert_eq(ds->n_test, 3);
    gcn_dataset_free(&ds);
    o.split_scheme = "nope";
    ds_expect_fail(ctx, "ogbn-toy", &o, GCN_ERR_NOT_FOUND, "split/nope", NULL);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset_ogb, gzip_damage_is_reported)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    for (int kind = 0; kind < 3; kind++) {
        char *dir = ds_tmpdir();
        ds_write_ogb_toy(dir);
        size_t len;
        char *text = ds_random_edges("", 20000, 5, 0, ',', &len); /* damage lands mid-stream */
        ds_write_bytes(dir, "ogbn_toy/raw/edge.csv.gz", text, len);
        free(text);
        ds_write(dir, "ogbn_toy/raw/num-edge-list.csv.gz", "20000\n");
        gcn_dataset_opts o = ds_opts(dir);
        gcn_dataset *ds = ds_load_ok(ctx, "ogbn-toy", &o);
        gcn_dataset_free(&ds);
        const char *why = ds_damage_gzip(ds_path(dir, "ogbn_toy/raw/edge.csv.gz"), kind);
        ds_expect_fail(ctx, "ogbn-toy", &o, GCN_ERR_FORMAT, "raw/edge.csv.gz:", why, NULL);
        ds_rmtree(dir);
        free(dir);
    }
    gcn_ctx_free(&ctx);
}

static const ds_bad_file cases[] = {
    {"raw/num-edge-list.csv.gz", "7\n", GCN_ERR_FORMAT, "raw/edge.csv.gz:6:",
     "6 edges, but num-edge-list.csv.gz says 7"},
    {"raw/num-edge-list.csv.gz", "5\n", GCN_ERR_FORMAT, "raw/edge.csv.gz:6:",
     "more edges than the 5"},
    {"raw/num-node-list.csv.gz", "6\n", GCN_ERR_FORMAT, "raw/node-label.csv.gz:5:",
     "5 labels, but num-node-list.csv.gz says 6"},
    {"raw/num-node-list.csv.gz", "4\n", GCN_ERR_FORMAT, "raw/node-label.csv.gz:5:",
     "more labels"},
    {"raw/num-node-list.csv.gz", "", GCN_ERR_FORMAT, "raw/num-node-list.csv.gz: ",
     "empty file"},
    {"raw/num-node-list.csv.gz", "5\n5\n", GCN_ERR_FORMAT, "raw/num-node-list.csv.gz:2:",
     "second line"},
    {"raw/num-node-list.csv.gz", "-5\n", GCN_ERR_FORMAT, "raw/num-node-list.csv.gz:1:",
     "negative"},
    {"raw/edge.csv.gz", "0,1\n1,2\n2,x3\n3,4\n4,0\n0,2\n", GCN_ERR_FORMAT,
     "raw/edge.csv.gz:3:", "not an integer"},
    {"raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,5\n4,0\n0,2\n", GCN_ERR_FORMAT,
     "raw/edge.csv.gz:4:", "out of range"},
    {"raw/edge.csv.gz", "0,1\n-1,2\n", GCN_ERR_FORMAT, "raw/edge.csv.gz:2:", "negative"},
    {"raw/edge.csv.gz", "0,1\n1\n", GCN_ERR_FORMAT, "raw/edge.csv.gz:2:",
     "expected 2 columns, found 1"},
    {"raw/edge.csv.gz", "0,1,2\n", GCN_ERR_FORMAT, "raw/edge.csv.gz:1:",
     "expected 2 columns, found 3"},
    {"raw/edge.csv.gz", "0,\n", GCN_ERR_FORMAT, "raw/edge.csv.gz:1:", "not an integer"},
    {"raw/edge.csv.gz", "", GCN_ERR_FORMAT, "raw/edge.csv.gz: ", "empty file"},
    {"raw/node-feat.csv.gz", "0.5,-1,2\n1,nan,1\n0,0,0\n0,0,0\n0,0,0\n", GCN_ERR_NUMERIC,
     "raw/node-feat.csv.gz:2:", "NaN"},
    {"raw/node-feat.csv.gz", "0.5,-1,2\n1,1,1\n0,-inf,0\n0,0,0\n0,0,0\n", GCN_ERR_NUMERIC,
     "raw/node-feat.csv.gz:3:", "infinite"},
    {"raw/node-feat.csv.gz", "0.5,-1,2\n1,1\n", GCN_ERR_FORMAT, "raw/node-feat.csv.gz:2:",
     "expected 3 columns, found 2"},
    {"raw/node-feat.csv.gz", "0.5,-1,2\n1,1,1,1\n", GCN_ERR_FORMAT,
     "raw/node-feat.csv.gz:2:", "expected 3 columns, found 4"},
    {"raw/node-feat.csv.gz", "0.5,-1,2\n1,1,1\n", GCN_ERR_FORMAT, "raw/node-feat.csv.gz:2:",
     "2 rows, but num-node-list.csv.gz says 5"},
    {"raw/node-feat.csv.gz", "0.5,-1,2\n1,1,1\n1,1,1\n1,1,1\n1,1,1\n1,1,1\n", GCN_ERR_FORMAT,
     "raw/node-feat.csv.gz:6:", "more rows"},
    {"raw/node-feat.csv.gz", "0.5,-1,2\n1,1,1\n0,0,0\n0,0x,0\n0,0,0\n", GCN_ERR_FORMAT,
     "raw/node-feat.csv.gz:4:", "not a number"},
    {"raw/node-feat.csv.gz", "", GCN_ERR_FORMAT, "raw/node-feat.csv.gz: ", "empty file"},
    {"raw/node-label.csv.gz", "0\n1\nbird\n0\n1\n", GCN_ERR_FORMAT,
     "raw/node-label.csv.gz:3:", "not an integer"},
    {"raw/node-label.csv.gz", "0\n1\n2,1\n0\n1\n", GCN_ERR_FORMAT,
     "raw/node-label.csv.gz:3:", "expected 1 columns, found 2"},
    {"split/time/train.csv.gz", "0\n5\n", GCN_ERR_FORMAT, "split/time/train.csv.gz:2:",
     "out of range"},
    {"split/time/train.csv.gz", "0\n1\n0\n", GCN_ERR_FORMAT, "split/time/train.csv.gz:3:",
     "listed twice (also in train)"},
    {"split/time/test.csv.gz", "3\n2\n", GCN_ERR_FORMAT, "split/time/test.csv.gz:2:",
     "listed twice (also in valid)"},
    {"split/time/valid.csv.gz", "", GCN_ERR_FORMAT, "split/time/valid.csv.gz: ",
     "empty file"},
    {"split/time/train.csv.gz", "0\n-1\n", GCN_ERR_FORMAT, "split/time/train.csv.gz:2:",
     "node id -1 is negative"},
    {"split/time/train.csv.gz", "0,1\n", GCN_ERR_FORMAT, "split/time/train.csv.gz:1:",
     "expected 1 columns, found 2"},
    {"split/time/valid.csv.gz", "two\n", GCN_ERR_FORMAT, "split/time/valid.csv.gz:1:",
     "not an integer"},
    {"raw/num-edge-list.csv.gz", "", GCN_ERR_FORMAT, "raw/num-edge-list.csv.gz: ",
     "empty file"},
    {"raw/num-edge-list.csv.gz", "6,6\n", GCN_ERR_FORMAT, "raw/num-edge-list.csv.gz:1:",
     "expected 1 columns, found 2"},
    {"raw/num-node-list.csv.gz", "five\n", GCN_ERR_FORMAT, "raw/num-node-list.csv.gz:1:",
     "not an integer"},
    {"raw/node-label.csv.gz", "", GCN_ERR_FORMAT, "raw/node-label.csv.gz: ",
     "empty file: 0 labels, num-node-list.csv.gz says 5"},
    {"raw/node-label.csv.gz", "0\n-2\n", GCN_ERR_FORMAT, "raw/node-label.csv.gz:2:",
     "label -2 out of range [-1, 65535]"},
    {"raw/node-label.csv.gz", "0\n65536\n", GCN_ERR_FORMAT, "raw/node-label.csv.gz:2:",
     "label 65536 out of range [-1, 65535]"},
    {"raw/node-feat.csv.gz", "0.5,-1,2\n1,1,1e39\n", GCN_ERR_NUMERIC,
     "raw/node-feat.csv.gz:2:", "out of float range"},
};

Test(dataset_ogb, errors_name_file_and_line)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    ds_expect_bad_files(ctx, ds_write_ogb_toy, "ogbn_toy", "ogbn-toy", cases,
                        sizeof cases / sizeof cases[0]);
    gcn_ctx_free(&ctx);
}

Test(dataset_ogb, missing_required_files)
{
    static const char *const files[] = {"raw/num-edge-list.csv.gz", "raw/node-label.csv.gz",
                                        "raw/edge.csv.gz", "split/time/valid.csv.gz"};
    gcn_ctx *ctx = test_cpu_ctx(1);
    for (int k = 0; k < 4; k++) {
        char *dir = ds_tmpdir();
        ds_write_ogb_toy(dir);
        char rel[128];
        snprintf(rel, sizeof rel, "ogbn_toy/%s", files[k]);
        unlink(ds_path(dir, rel));
        gcn_dataset_opts o = ds_opts(dir);
        ds_expect_fail(ctx, "ogbn-toy", &o, GCN_ERR_IO, files[k], "No such file", NULL);
        ds_rmtree(dir);
        free(dir);
    }
    gcn_ctx_free(&ctx);
}
