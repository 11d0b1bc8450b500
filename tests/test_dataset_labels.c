/* Substitute labels ("random:K"): drawn from the data seed, the same under
 * any node order, a split drawn unless one is shipped, and the refusals of
 * bad values. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_helpers.h"
#include "helpers.h"

enum { RING = 3000 };

/* A ring of RING nodes as an edge list, dir/graphs/ring.txt ("ring"). */
static void write_ring(const char *dir)
{
    size_t size = (size_t)RING * 16;
    char *text = malloc(size), *p = text;
    cr_assert(text);
    for (int i = 0; i < RING; i++)
        p += snprintf(p, size - (size_t)(p - text), "%d %d\n", i, (i + 1) % RING);
    ds_write(dir, "graphs/ring.txt", text);
    free(text);
}

Test(dataset_labels, drawn_from_the_data_seed)
{
    char *dir = ds_tmpdir();
    write_ring(dir);
    gcn_ctx *a = test_cpu_ctx(7), *b = test_cpu_ctx(7), *c = test_cpu_ctx(8);
    gcn_dataset_opts o = ds_opts(dir);
    o.features = "random:4";
    o.labels = "random:4";
    gcn_dataset *x = ds_load_ok(a, "ring", &o), *y = ds_load_ok(b, "ring", &o);
    gcn_dataset *z = ds_load_ok(c, "ring", &o);
    cr_assert_eq(x->n_classes, 4);
    cr_assert_str_eq(x->label_source, "random:4");
    cr_assert(ds_same(x, y), "same seed, same labels and split");
    cr_assert_neq(memcmp(x->labels, z->labels, RING * sizeof *x->labels), 0);
    int count[4] = {0};
    for (int i = 0; i < RING; i++) {
        cr_assert(x->labels[i] >= 0 && x->labels[i] < 4, "node %d: %d", i, x->labels[i]);
        count[x->labels[i]]++;
    }
    /* 750 expected a class, standard deviation 24. */
    for (int k = 0; k < 4; k++)
        cr_assert(count[k] > 750 - 120 && count[k] < 750 + 120, "class %d: %d", k, count[k]);
    /* No split is shipped: 20 a class, then 500 and 1000 of the rest. */
    cr_assert(x->split_drawn);
    cr_assert_eq(x->n_train, 80);
    cr_assert_eq(x->n_valid, 500);
    cr_assert_eq(x->n_test, 1000);
    /* The features are drawn first, so they are those of a load without
     * substitute labels. */
    gcn_ctx *d = test_cpu_ctx(7);
    o.labels = NULL;
    gcn_dataset *w = ds_load_ok(d, "ring", &o);
    cr_assert_null(w->labels);
    cr_assert_str_eq(w->label_source, "");
    cr_assert_eq(memcmp(w->features, x->features, RING * 4 * sizeof(float)), 0);
    char text[2048];
    gcn_dataset_describe(x, text, sizeof text);
    cr_assert(strstr(text, "4 classes (random:4 substitute labels)"), "%s", text);
    gcn_dataset_free(&w);
    gcn_dataset_free(&x);
    gcn_dataset_free(&y);
    gcn_dataset_free(&z);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
    gcn_ctx_free(&c);
    gcn_ctx_free(&d);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset_labels, follow_the_nodes_under_a_reordering)
{
    char *dir = ds_tmpdir();
    write_ring(dir);
    gcn_ctx *a = test_cpu_ctx(3), *b = test_cpu_ctx(3);
    gcn_dataset_opts o = ds_opts(dir);
    o.labels = "random:5";
    gcn_dataset *x = ds_load_ok(a, "ring", &o);
    o.reorder = "degree";
    gcn_dataset *y = ds_load_ok(b, "ring", &o);
    cr_assert_not_null(y->reorder);
    for (int i = 0; i < RING; i++)
        cr_assert_eq(y->labels[i], x->labels[y->reorder->order[i]], "node %d", i);
    cr_assert_eq(y->n_train, x->n_train);
    for (int i = 0; i < y->n_train; i++)
        cr_assert_eq(y->labels[y->train[i]], x->labels[y->reorder->order[y->train[i]]]);
    gcn_dataset_free(&x);
    gcn_dataset_free(&y);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset_labels, replace_a_dataset_own_and_keep_its_split)
{
    char *dir = ds_tmpdir();
    ds_write_ogb_toy(dir);
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    gcn_dataset *own = ds_load_ok(ctx, "ogbn-toy", &o);
    o.labels = "random:3";
    gcn_dataset *sub = ds_load_ok(ctx, "ogbn-toy", &o);
    cr_assert_eq(sub->n_classes, 3);
    cr_assert_not(sub->split_drawn, "the shipped split stays");
    cr_assert_eq(sub->n_train, own->n_train);
    cr_assert_eq(memcmp(sub->train, own->train, (size_t)own->n_train * sizeof *own->train), 0);
    o.labels = "file";
    gcn_dataset *file = ds_load_ok(ctx, "ogbn-toy", &o);
    cr_assert(ds_same(file, own));
    gcn_dataset_free(&own);
    gcn_dataset_free(&sub);
    gcn_dataset_free(&file);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}

Test(dataset_labels, bad_values_are_refused_naming_the_option)
{
    const char *bad[] = {"random:1", "random:0", "random:", "random:4x", "random:65537",
                         "random:-3", "random", "degree", ""};
    int32_t k = -1;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(gcn_dataset_labels_parse(NULL, bad[i], &k), GCN_ERR_INVALID_ARG, "%s",
                     bad[i]);
        cr_assert_eq(k, 0);
    }
    cr_assert_eq(gcn_dataset_labels_parse(NULL, "random:65536", &k), GCN_OK);
    cr_assert_eq(k, 65536);
    cr_assert_eq(gcn_dataset_labels_parse(NULL, "file", &k), GCN_OK);
    cr_assert_eq(k, 0);
    char *dir = ds_tmpdir();
    write_ring(dir);
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_dataset_opts o = ds_opts(dir);
    o.labels = "random:1";
    ds_expect_fail(ctx, "ring", &o, GCN_ERR_INVALID_ARG, "labels option 'random:1'",
                   "random:K", NULL);
    gcn_ctx_free(&ctx);
    ds_rmtree(dir);
    free(dir);
}
