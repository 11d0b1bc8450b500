/* gcn_dataset_load on the plain-text folder format (meta.txt, edges.txt,
 * features.txt, labels.txt, train/val/test.txt), name resolution, the
 * feature, graph and split options, describe() and upload, and every
 * parse error with its file:line message. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dataset_helpers.h"
#include "helpers.h"

/* 6 nodes: 0-1-2 path with a duplicate 0->1 and a loop at 2, 3-4-5 path;
 * 4 features; labels 0 0 1 1 -1 0; split 0,2 / 1 / 3,5. */
static void write_tiny(const char *dir)
{
    ds_write(dir, "tiny/meta.txt", "name tiny\nnum_nodes 6\nnum_features 4\nnum_classes 2\n"
                                   "split shipped (not read)\n");
    ds_write(dir, "tiny/edges.txt", "0 1\n1 0\n1 2\n2 1\n3 4\n4 3\n4 5\n5 4\n0 1\n2 2\n");
    ds_write(dir, "tiny/features.txt", "0 0 1\n0 3 2\n1 1 0.5\n2 2 4\n3 0 1\n4 1 1\n5 3 3\n");
    ds_write(dir, "tiny/labels.txt", "0\n0\n1\n1\n-1\n0\n");
    ds_write(dir, "tiny/train.txt", "0\n2\n");
    ds_write(dir, "tiny/val.txt", "1\n");
    ds_write(dir, "tiny/test.txt", "3\n5\n");
}

Test(dataset, textdir_loads)
{
    char *dir = ds_tmpdir();
    write_tiny(dir);
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    gcn_dataset *ds = ds_load_ok(ctx, "tiny", &o);
    cr_assert_str_eq(ds->name, "tiny");
    cr_assert_eq(ds->n_nodes, 6);
    cr_assert_eq(ds->n_raw_edges, 9, "distinct stored entries: %lld", (long long)ds->n_raw_edges);
    cr_assert_eq(ds->graph->nnz, 8, "symmetric, loop removed");
    cr_assert(gcn_graph_is_symmetric(ds->graph));
    cr_assert_eq(gcn_graph_count_self_loops(ds->graph), 0);
    cr_assert_eq(ds->n_features, 4);
    cr_assert_str_eq(ds->feature_source, "file");
    cr_assert_float_eq(ds->features[0 * 4 + 3], 2.0f, 0.0f);
    cr_assert_float_eq(ds->features[1 * 4 + 1], 0.5f, 0.0f);
    cr_assert_float_eq(ds->features[1 * 4 + 0], 0.0f, 0.0f);
    cr_assert_float_eq(ds->features[5 * 4 + 3], 3.0f, 0.0f);
    cr_assert_eq(ds->n_classes, 2);
    cr_assert_eq(ds->labels[4], -1);
    cr_assert_eq(ds->n_train, 2);
    cr_assert_eq(ds->n_valid, 1);
    cr_assert_eq(ds->n_test, 2);
    cr_assert_eq(ds->train[1], 2);
    cr_assert_not(ds->split_drawn);
    cr_assert_not(ds->from_cache);
    gcn_dataset_free(&ds);
    cr_assert_null(ds);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset, resolves_names_and_paths)
{
    char *dir = ds_tmpdir();
    write_tiny(dir);
    ds_write(dir, "planetoid/mini/edges.txt", "0 1\n1 0\n");
    ds_write(dir, "attributed/mini2/edges.txt", "0 1\n");
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    o.features = "none"; /* mini and mini2 have no features.txt */
    gcn_dataset *ds = ds_load_ok(ctx, "mini", &o);
    cr_assert_eq(ds->n_nodes, 2);
    cr_assert_eq(ds->n_features, 0);
    cr_assert_null(ds->labels);
    gcn_dataset_free(&ds);
    ds = ds_load_ok(ctx, "mini2", &o);
    gcn_dataset_free(&ds);
    ds = ds_load_ok(ctx, ds_path(dir, "tiny"), &o); /* a path works with any root */
    cr_assert_eq(ds->n_nodes, 6);
    gcn_dataset_free(&ds);
    ds_expect_fail(ctx, "no-such-set", &o, GCN_ERR_NOT_FOUND, "no-such-set", dir, NULL);
    ds_write(dir, "junk/readme", "x");
    ds_expect_fail(ctx, "junk", &o, GCN_ERR_FORMAT, "not a dataset folder", NULL);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset, graph_options)
{
    char *dir = ds_tmpdir();
    write_tiny(dir);
    ds_write(dir, "tiny/edges.txt", "0 1\n1 2\n2 2\n");
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    o.symmetrize = false;
    o.remove_self_loops = false;
    gcn_dataset *ds = ds_load_ok(ctx, "tiny", &o);
    cr_assert_eq(ds->graph->nnz, 3);
    cr_assert_not(gcn_graph_is_symmetric(ds->graph));
    gcn_csr *raw = NULL, *norm = NULL;
    cr_assert_eq(gcn_dataset_adjacency(ctx, ds, GCN_ADJ_RAW, &raw), GCN_OK, "%s",
                 gcn_last_error(ctx));
    cr_assert_eq(gcn_csr_nnz(raw), 2, "GIN adjacency drops the loop");
    cr_assert_eq(gcn_dataset_adjacency(ctx, ds, GCN_ADJ_GCN, &norm), GCN_OK);
    cr_assert_eq(gcn_csr_nnz(norm), 2 + 6, "every node gets one self-loop");
    gcn_csr_free(&raw);
    gcn_csr_free(&norm);
    gcn_dataset_free(&ds);
    o.symmetrize = true;
    ds = ds_load_ok(ctx, "tiny", &o);
    cr_assert_eq(ds->graph->nnz, 5, "0-1, 1-2 both ways and the kept loop");
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset, feature_substitution_is_seeded)
{
    char *dir = ds_tmpdir();
    write_tiny(dir);
    gcn_ctx *a = test_cpu_ctx(7), *b = test_cpu_ctx(7), *c = test_cpu_ctx(8);
    gcn_dataset_opts o = ds_opts(dir);
    o.features = "random:16";
    gcn_dataset *x = ds_load_ok(a, "tiny", &o), *y = ds_load_ok(b, "tiny", &o);
    gcn_dataset *z = ds_load_ok(c, "tiny", &o);
    cr_assert_eq(x->n_features, 16);
    cr_assert_str_eq(x->feature_source, "random:16");
    cr_assert(ds_same(x, y), "same seed, same features");
    cr_assert_neq(memcmp(x->features, z->features, 6 * 16 * sizeof(float)), 0);
    double sum = 0, sq = 0;
    for (int i = 0; i < 96; i++) {
        cr_assert(isfinite(x->features[i]));
        sum += x->features[i];
        sq += x->features[i] * x->features[i];
    }
    cr_assert(fabs(sum / 96) < 0.5 && sq / 96 > 0.5 && sq / 96 < 1.6, "roughly N(0, 1)");
    gcn_dataset_free(&x);
    gcn_dataset_free(&y);
    gcn_dataset_free(&z);
    o.features = "degree";
    x = ds_load_ok(a, "tiny", &o);
    cr_assert_eq(x->n_features, 1);
    cr_assert_float_eq(x->features[1], (float)log1p(2.0), 1e-6, "node 1 has degree 2");
    cr_assert_float_eq(x->features[0], (float)log1p(1.0), 1e-6);
    gcn_dataset_free(&x);
    o.features = "random:0";
    ds_expect_fail(a, "tiny", &o, GCN_ERR_INVALID_ARG, "random:0", NULL);
    o.features = "gaussian";
    ds_expect_fail(a, "tiny", &o, GCN_ERR_INVALID_ARG, "gaussian", "random:D", NULL);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
    gcn_ctx_free(&c);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset, missing_features_name_the_file_and_option)
{
    char *dir = ds_tmpdir();
    write_tiny(dir);
    unlink(ds_path(dir, "tiny/features.txt"));
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    ds_expect_fail(ctx, "tiny", &o, GCN_ERR_IO, "tiny/features.txt", "missing", "random:D",
                   "degree", NULL);
    o.features = "random:3";
    gcn_dataset *ds = ds_load_ok(ctx, "tiny", &o);
    cr_assert_eq(ds->n_features, 3);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset, row_normalisation)
{
    char *dir = ds_tmpdir();
    write_tiny(dir);
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    o.normalize_features = true;
    gcn_dataset *ds = ds_load_ok(ctx, "tiny", &o);
    cr_assert_float_eq(ds->features[0], 1.0f / 3, 1e-7);
    cr_assert_float_eq(ds->features[3], 2.0f / 3, 1e-7);
    for (int i = 0; i < 6; i++) {
        float s = 0;
        for (int k = 0; k < 4; k++)
            s += ds->features[i * 4 + k];
        cr_assert_float_eq(s, 1.0f, 1e-6, "row %d sums to %g", i, s);
    }
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

/* 60 labelled nodes in 3 classes, 10 unlabelled, no split shipped. */
static void write_unsplit(const char *dir)
{
    char labels[512] = "", edges[2048] = "";
    for (int i = 0; i < 70; i++) {
        char line[32];
        snprintf(line, sizeof line, "%d\n", i < 60 ? i % 3 : -1);
        strcat(labels, line);
        snprintf(line, sizeof line, "%d %d\n", i, (i + 1) % 70);
        strcat(edges, line);
    }
    ds_write(dir, "u/labels.txt", labels);
    ds_write(dir, "u/edges.txt", edges);
}

static void expect_valid_split(const gcn_dataset *ds, int per_class, int n_valid, int n_test)
{
    cr_assert_eq(ds->n_train, per_class * ds->n_classes);
    cr_assert_eq(ds->n_valid, n_valid);
    cr_assert_eq(ds->n_test, n_test);
    int seen[70] = {0}, count[3] = {0};
    const int32_t *lists[3] = {ds->train, ds->valid, ds->test};
    const int32_t n[3] = {ds->n_train, ds->n_valid, ds->n_test};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < n[k]; i++) {
            int32_t id = lists[k][i];
            cr_assert(id >= 0 && id < 60, "only labelled nodes: %d", id);
            cr_assert_not(seen[id]++, "node %d twice", id);
            cr_assert(i == 0 || lists[k][i - 1] < id, "sorted");
            if (k == 0)
                count[ds->labels[id]]++;
        }
    for (int c = 0; c < 3; c++)
        cr_assert_eq(count[c], per_class);
}

Test(dataset, split_drawn_when_missing)
{
    char *dir = ds_tmpdir();
    write_unsplit(dir);
    gcn_ctx *a = test_cpu_ctx(3), *b = test_cpu_ctx(3), *c = test_cpu_ctx(4);
    gcn_dataset_opts o = ds_opts(dir);
    o.features = "none";
    o.train_per_class = 5;
    o.n_valid = 20;
    o.n_test = 100; /* clipped to the 25 left */
    gcn_dataset *x = NULL, *y = NULL, *z = NULL;
    cr_assert_eq(gcn_dataset_load(a, &x, "u", &o), GCN_OK, "%s", gcn_last_error(a));
    cr_assert_eq(gcn_dataset_load(b, &y, "u", &o), GCN_OK);
    cr_assert_eq(gcn_dataset_load(c, &z, "u", &o), GCN_OK);
    cr_assert(x->split_drawn);
    expect_valid_split(x, 5, 20, 25);
    cr_assert(ds_same(x, y), "same seed, same split");
    cr_assert_neq(memcmp(x->train, z->train, 15 * sizeof(int32_t)), 0, "seed changes the split");
    gcn_dataset_free(&x);
    gcn_dataset_free(&y);
    gcn_dataset_free(&z);
    o.split = "file";
    ds_expect_fail(a, "u", &o, GCN_ERR_NOT_FOUND, "no split", NULL);
    o.split = "sideways";
    ds_expect_fail(a, "u", &o, GCN_ERR_INVALID_ARG, "sideways", NULL);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
    gcn_ctx_free(&c);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset, split_random_replaces_shipped)
{
    char *dir = ds_tmpdir();
    write_tiny(dir);
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    o.split = "random";
    o.train_per_class = 1;
    o.n_valid = 1;
    o.n_test = 1;
    gcn_dataset *ds = ds_load_ok(ctx, "tiny", &o);
    cr_assert(ds->split_drawn);
    cr_assert_eq(ds->n_train, 2);
    cr_assert_eq(ds->n_valid, 1);
    cr_assert_eq(ds->n_test, 1);
    gcn_dataset_free(&ds);
    ds_write(dir, "nolabels/edges.txt", "0 1\n");
    o.features = "none";
    ds_expect_fail(ctx, "nolabels", &o, GCN_ERR_STATE, "without labels", NULL);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset, describe_and_upload)
{
    char *dir = ds_tmpdir();
    write_tiny(dir);
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    gcn_dataset *ds = ds_load_ok(ctx, "tiny", &o);
    char text[1024];
    int n = gcn_dataset_describe(ds, text, sizeof text);
    cr_assert(n > 0 && (size_t)n < sizeof text);
    cr_assert(strstr(text, "tiny: 6 nodes, 8 adjacency entries (symmetric"), "%s", text);
    cr_assert(strstr(text, "degree min 1, mean 1.33"), "%s", text);
    cr_assert(strstr(text, "4 features (file)"), "%s", text);
    cr_assert(strstr(text, "split 2 / 1 / 2 (shipped)"), "%s", text);
    char small[16];
    cr_assert_eq(gcn_dataset_describe(ds, small, sizeof small), n, "snprintf semantics");
    cr_assert_eq(strlen(small), 15);
    gcn_dataset_device dev;
    cr_assert_eq(gcn_dataset_upload(ctx, ds, &dev), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_tensor_rows(dev.features), 6);
    cr_assert_eq(gcn_tensor_cols(dev.features), 4);
    cr_assert_eq(gcn_index_len(dev.labels), 6);
    cr_assert_eq(gcn_index_len(dev.train), 2);
    cr_assert_eq(gcn_index_len(dev.test), 2);
    float x[24];
    cr_assert_eq(gcn_tensor_to_host(ctx, dev.features, x), GCN_OK);
    cr_assert_eq(memcmp(x, ds->features, sizeof x), 0);
    gcn_dataset_device_free(&dev);
    cr_assert_null(dev.features);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

/* Each case replaces one file of the tiny set and names the expected
 * status and message pieces. */
Test(dataset, textdir_errors_name_file_and_line)
{
    static const ds_bad_file cases[] = {
        {"labels.txt", "0\n0\nx1\n1\n-1\n0\n", GCN_ERR_FORMAT, "labels.txt:3:", "not an integer"},
        {"labels.txt", "0\n0\n1\n1\n-1\n", GCN_ERR_FORMAT, "labels.txt:5:", "num_nodes is 6"},
        {"labels.txt", "0\n0\n1\n1\n-1\n0\n1\n", GCN_ERR_FORMAT, "labels.txt:7:", "more labels"},
        {"labels.txt", "0\n0\n2\n1\n-1\n0\n", GCN_ERR_FORMAT, "labels.txt:3:", "out of range"},
        {"labels.txt", "", GCN_ERR_FORMAT, "labels.txt: ", "empty file"},
        {"edges.txt", "0 1\n1 2 3\n", GCN_ERR_FORMAT, "edges.txt:2:",
         "expected 2 columns, found 3"},
        {"edges.txt", "0 1\n1\n", GCN_ERR_FORMAT, "edges.txt:2:", "found 1"},
        {"edges.txt", "0 6\n", GCN_ERR_FORMAT, "edges.txt:1:", "out of range"},
        {"edges.txt", "0 1\n-2 1\n", GCN_ERR_FORMAT, "edges.txt:2:", "negative"},
        {"edges.txt", "0 1.5\n", GCN_ERR_FORMAT, "edges.txt:1:", "not an integer"},
        {"edges.txt", "99999999999999999999 1\n", GCN_ERR_FORMAT, "edges.txt:1:", "not an integer"},
        {"edges.txt", "\n\n", GCN_ERR_FORMAT, "edges.txt:2:", "empty file"},
        {"features.txt", "0 0 1\n1 1 nan\n", GCN_ERR_NUMERIC, "features.txt:2:", "NaN"},
        {"features.txt", "0 0 inf\n", GCN_ERR_NUMERIC, "features.txt:1:", "infinite"},
        {"features.txt", "0 0 1e39\n", GCN_ERR_NUMERIC, "features.txt:1:", "out of float range"},
        {"features.txt", "0 0 one\n", GCN_ERR_FORMAT, "features.txt:1:", "not a number"},
        {"features.txt", "0 4 1\n", GCN_ERR_FORMAT, "features.txt:1:", "feature column"},
        {"features.txt", "6 0 1\n", GCN_ERR_FORMAT, "features.txt:1:", "node id"},
        {"features.txt", "0 0\n", GCN_ERR_FORMAT, "features.txt:1:", "expected 3 columns"},
        {"features.txt", "", GCN_ERR_FORMAT, "features.txt: ", "empty file"},
        {"train.txt", "0\n6\n", GCN_ERR_FORMAT, "train.txt:2:", "out of range"},
        {"train.txt", "0\n2\n0\n", GCN_ERR_FORMAT, "train.txt:3:", "listed twice (also in train)"},
        {"val.txt", "2\n", GCN_ERR_FORMAT, "val.txt:1:", "listed twice (also in train)"},
        {"test.txt", "3 5\n", GCN_ERR_FORMAT, "test.txt:1:", "not an integer"},
        {"test.txt", "", GCN_ERR_FORMAT, "test.txt: ", "empty file"},
        {"meta.txt", "num_nodes six\n", GCN_ERR_FORMAT, "meta.txt:1:", "not an integer"},
        {"meta.txt", "num_nodes\n", GCN_ERR_FORMAT, "meta.txt:1:", "no value"},
        {"labels.txt", "0\n0 1\n", GCN_ERR_FORMAT, "labels.txt:2:", "expected 1 columns, found 2"},
        {"labels.txt", "0\n-2\n", GCN_ERR_FORMAT, "labels.txt:2:", "out of range [-1, 1]"},
        {"edges.txt", "", GCN_ERR_FORMAT, "edges.txt: ", "empty file"},
        {"features.txt", "0 0 1 2\n", GCN_ERR_FORMAT, "features.txt:1:",
         "expected 3 columns, found 4"},
        {"features.txt", "0 0 1\n-1 0 1\n", GCN_ERR_FORMAT, "features.txt:2:",
         "node id -1 is negative"},
        {"features.txt", "0 -3 1\n", GCN_ERR_FORMAT, "features.txt:1:",
         "feature column -3 is negative"},
        {"features.txt", "0 x 1\n", GCN_ERR_FORMAT, "features.txt:1:", "not an integer"},
        {"train.txt", "0\n-1\n", GCN_ERR_FORMAT, "train.txt:2:", "node id -1 is negative"},
        {"train.txt", "0,2\n", GCN_ERR_FORMAT, "train.txt:1:", "expected 1 columns, found 2"},
        {"val.txt", "", GCN_ERR_FORMAT, "val.txt: ", "empty file"},
        {"meta.txt", "num_classes 65537\n", GCN_ERR_FORMAT, "meta.txt:1:",
         "num_classes 65537 out of range [0, 65536]"},
    };
    gcn_ctx *ctx = test_cpu_ctx(1);
    ds_expect_bad_files(ctx, write_tiny, "tiny", "tiny", cases, sizeof cases / sizeof cases[0]);
    gcn_ctx_free(&ctx);
}

/* The text files may be gzip data under their .txt names (zlib detects it);
 * damage is then reported like OGB's. */
Test(dataset, textdir_gzip_damage_is_reported)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    for (int kind = 0; kind < 3; kind++) {
        char *dir = ds_tmpdir();
        write_tiny(dir);
        size_t len;
        char *text = ds_random_edges("", 20000, 6, 0, ' ', &len);
        ds_write_bytes(dir, "tiny/edges.txt.gz", text, len);
        free(text);
        char gz[4096];
        snprintf(gz, sizeof gz, "%s", ds_path(dir, "tiny/edges.txt.gz"));
        cr_assert_eq(rename(gz, ds_path(dir, "tiny/edges.txt")), 0);
        gcn_dataset_opts o = ds_opts(dir);
        gcn_dataset *ds = ds_load_ok(ctx, "tiny", &o);
        gcn_dataset_free(&ds);
        const char *why = ds_damage_gzip(ds_path(dir, "tiny/edges.txt"), kind);
        ds_expect_fail(ctx, "tiny", &o, GCN_ERR_FORMAT, "tiny/edges.txt:", why, NULL);
        ds_rmtree(dir);
        free(dir);
    }
    gcn_ctx_free(&ctx);
}

Test(dataset, textdir_without_meta_infers_sizes)
{
    char *dir = ds_tmpdir();
    ds_write(dir, "m/edges.txt", "0 1\n1 0\n3 2\r\n");
    ds_write(dir, "m/features.txt", "0 7 1\n3 0 2");
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    gcn_dataset *ds = ds_load_ok(ctx, "m", &o);
    cr_assert_eq(ds->n_nodes, 4);
    cr_assert_eq(ds->n_features, 8);
    cr_assert_float_eq(ds->features[3 * 8], 2.0f, 0.0f);
    cr_assert_null(ds->labels);
    cr_assert_eq(ds->n_train + ds->n_valid + ds->n_test, 0);
    gcn_dataset_free(&ds);
    ds_write(dir, "m/labels.txt", "0\n65536\n0\n1\n"); /* no num_classes: the class cap */
    ds_expect_fail(ctx, "m", &o, GCN_ERR_FORMAT, "m/labels.txt:2:",
                   "label 65536 out of range [-1, 65535]", NULL);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}
