/* Node reorderings (datasets/reorder.c, reorder_apply.c): specs, the
 * identity and degree orders by hand, nested METIS communities on planted
 * graphs and edge cases, permuting graphs and rows both ways.  Whole
 * datasets are in test_reorder_dataset.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_helpers.h"
#include "helpers.h"

/* The finest part holding new id i. */
static int32_t part_of(const gcn_reorder *r, int32_t i)
{
    int32_t q = 0;
    while (r->part_ptr[0][q + 1] <= i)
        q++;
    return q;
}

Test(reorder, parse_and_describe)
{
    static const char *const specs[][2] = {
        {"none", "none"},         {"degree", "degree"},           {"metis", "metis:16,256,4096"},
        {"metis:16", "metis:16"}, {"metis:2,3,64,16777216", NULL}};
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        gcn_reorder_opts o;
        char buf[64];
        cr_assert_eq(gcn_reorder_parse(NULL, specs[k][0], &o), GCN_OK, "%s", specs[k][0]);
        int n = gcn_reorder_describe(&o, buf, sizeof buf);
        const char *want = specs[k][1] ? specs[k][1] : specs[k][0];
        cr_assert_str_eq(buf, want);
        cr_assert_eq(n, (int)strlen(want));
    }
    gcn_reorder_opts o = gcn_reorder_default_opts(GCN_REORDER_METIS);
    o.n_sizes = 0;
    char small[8];
    cr_assert_eq(gcn_reorder_describe(&o, small, sizeof small), 17, "length of the whole text");
    cr_assert_str_eq(small, "metis:1");
    static const char *const bad[] = {"",          "rcm",         "METIS",      "metis:",
                                      "metis:1",   "metis:16,8",  "metis:8,8",  "metis:2,4,8,16,32",
                                      "metis:a",   "metis:16,",   "metis: 16",  "metis:16777217",
                                      "metis:-4",  "metis:4;8",   "metis:99999999999999999999"};
    gcn_ctx *ctx = test_cpu_ctx(1);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        cr_assert_eq(gcn_reorder_parse(ctx, bad[k], &o), GCN_ERR_INVALID_ARG, "'%s'", bad[k]);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "reorder spec '%s'", bad[k]);
        cr_assert(strstr(gcn_last_error(ctx), quoted), "%s", gcn_last_error(ctx));
    }
    /* Options built by hand are checked too. */
    gcn_graph *g = ds_coo(ctx, 4, 0, NULL, NULL);
    gcn_reorder *r = NULL;
    gcn_reorder_opts hand[3] = {{.method = GCN_REORDER_METIS, .n_sizes = 5},
                                {.method = GCN_REORDER_METIS, .n_sizes = 2, .sizes = {8, 4}},
                                {.method = (gcn_reorder_method)7}};
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(gcn_reorder_compute(ctx, g, &hand[k], &r), GCN_ERR_INVALID_ARG, "case %d", k);
        cr_assert_null(r);
    }
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

Test(reorder, identity_and_degree_by_hand)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    /* Row lengths 1, 2, 3, 0, 2: descending with ties by id is 2, 1, 4, 0, 3. */
    const int32_t src[] = {0, 1, 1, 2, 2, 2, 4, 4}, dst[] = {4, 0, 2, 0, 1, 3, 1, 2};
    gcn_graph *g = ds_coo(ctx, 5, 8, src, dst);
    gcn_reorder *id = ds_compute_reorder(ctx, g, "none"), *deg = ds_compute_reorder(ctx, g, "degree");
    ds_check_reorder(id, 5);
    ds_check_reorder(deg, 5);
    for (int32_t i = 0; i < 5; i++)
        cr_assert_eq(id->order[i], i);
    cr_assert_arr_eq(deg->order, ((int32_t[]){2, 1, 4, 0, 3}), 5 * sizeof(int32_t));
    cr_assert_arr_eq(deg->position, ((int32_t[]){3, 1, 0, 4, 2}), 5 * sizeof(int32_t));
    cr_assert_eq(id->n_levels + deg->n_levels, 0);
    cr_assert_eq(deg->method, GCN_REORDER_DEGREE);
    cr_assert_not(deg->from_cache);
    cr_assert_geq(deg->seconds, 0.0);
    gcn_reorder_free(&id);
    gcn_reorder_free(&deg);
    cr_assert_null(deg);
    gcn_reorder_free(&deg);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

/* n_blocks blocks of `block` nodes, node v in block v % n_blocks (so that
 * the blocks are interleaved in id order); each block a clique, plus
 * `bridges` edges between consecutive blocks. */
static gcn_graph *planted(gcn_ctx *ctx, int32_t n_blocks, int32_t block, int32_t bridges)
{
    int32_t n = n_blocks * block, m = 0;
    int64_t cap = (int64_t)n * block + bridges;
    int32_t *src = malloc((size_t)cap * sizeof *src), *dst = malloc((size_t)cap * sizeof *dst);
    for (int32_t u = 0; u < n; u++)
        for (int32_t v = u % n_blocks; v < n; v += n_blocks)
            if (u != v) {
                src[m] = u;
                dst[m++] = v;
            }
    for (int32_t e = 0; e < bridges; e++) {
        src[m] = e % n;
        dst[m++] = (e % n + 1) % n; /* the next block */
    }
    gcn_graph *g = ds_coo(ctx, n, m, src, dst), *s = NULL;
    cr_assert_eq(gcn_graph_symmetrize(ctx, g, &s), GCN_OK);
    free(src);
    free(dst);
    gcn_graph_free(&g);
    return s;
}

Test(reorder, metis_finds_disjoint_cliques)
{
    gcn_ctx *ctx = test_cpu_ctx(2);
    gcn_graph *g = planted(ctx, 8, 16, 0);
    const char *specs[] = {"metis:16", "metis:16,64"};
    for (int s = 0; s < 2; s++) {
        gcn_reorder *r = ds_compute_reorder(ctx, g, specs[s]);
        ds_check_reorder(r, 128);
        cr_assert_eq(r->n_levels, s + 1);
        cr_assert_eq(r->size[0], 16);
        cr_assert_eq(r->n_parts[0], 8, "%s: %d parts of 16", specs[s], r->n_parts[0]);
        for (int32_t q = 0; q < 8; q++) {
            const int32_t *p = r->part_ptr[0];
            cr_assert_eq(p[q + 1] - p[q], 16);
            for (int32_t i = p[q] + 1; i < p[q + 1]; i++) {
                cr_assert_eq(r->order[i] % 8, r->order[p[q]] % 8, "a part mixes cliques");
                cr_assert_gt(r->order[i], r->order[i - 1], "original order kept in a part");
            }
        }
        if (s == 1)
            cr_assert_eq(r->n_parts[1], 2);
        gcn_reorder_free(&r);
    }
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

Test(reorder, metis_keeps_planted_communities_together)
{
    gcn_ctx *ctx = test_cpu_ctx(3);
    gcn_graph *g = planted(ctx, 32, 24, 64);
    gcn_reorder *r = ds_compute_reorder(ctx, g, "metis:24,96");
    ds_check_reorder(r, 768);
    int64_t intra = 0;
    for (int32_t u = 0; u < g->n_nodes; u++)
        for (int32_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++)
            intra += part_of(r, r->position[u]) == part_of(r, r->position[g->col_idx[e]]);
    cr_assert_gt((double)intra / g->nnz, 0.9, "intra-part share %.3f", (double)intra / g->nnz);
    gcn_reorder_free(&r);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

/* The default SBM with 2,000 nodes and one feature. */
static gcn_dataset *sbm_2000(gcn_ctx *ctx)
{
    gcn_sbm_opts so = gcn_sbm_default_opts();
    so.n_nodes = 2000;
    so.n_features = 1;
    gcn_dataset *ds = NULL;
    cr_assert_eq(gcn_dataset_sbm(ctx, &ds, &so), GCN_OK, "%s", gcn_last_error(ctx));
    return ds;
}

Test(reorder, metis_on_an_sbm_nests_three_levels)
{
    gcn_ctx *ctx = test_cpu_ctx(4);
    gcn_dataset *ds = sbm_2000(ctx);
    gcn_reorder *r = ds_compute_reorder(ctx, ds->graph, "metis:16,128,1024");
    ds_check_reorder(r, 2000);
    cr_assert_eq(r->n_levels, 3);
    for (int k = 0; k < 3; k++) {
        double mean = 2000.0 / r->n_parts[k];
        cr_assert(mean > 0.6 * r->size[k] && mean <= r->size[k], "level %d: mean part %.1f", k,
                  mean);
        for (int32_t q = 0; q < r->n_parts[k]; q++)
            cr_assert_leq(r->part_ptr[k][q + 1] - r->part_ptr[k][q], 1.5 * r->size[k]);
    }
    gcn_reorder *again = NULL;
    gcn_ctx *same = test_cpu_ctx(4);
    gcn_reorder_opts o;
    cr_assert_eq(gcn_reorder_parse(same, "metis:16,128,1024", &o), GCN_OK);
    cr_assert_eq(gcn_reorder_compute(same, ds->graph, &o, &again), GCN_OK);
    cr_assert_arr_eq(again->order, r->order, 2000 * sizeof(int32_t), "same seed, same order");
    gcn_reorder_free(&again);
    gcn_reorder_free(&r);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&same);
    gcn_ctx_free(&ctx);
}

/* 2,000 nodes are over 64 times 16, so "metis:16" first cuts parts of 256
 * nodes (a level only for cutting): the result keeps the one level asked
 * for, with parts of about 16 nodes, nested in runs of at most 256 * 1.5
 * nodes that METIS would keep together (checked through the intra share of
 * an SBM, which cutting first must not lose). */
Test(reorder, large_graphs_are_cut_coarse_first_and_keep_only_the_asked_levels)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_dataset *ds = sbm_2000(ctx);
    gcn_reorder *r = ds_compute_reorder(ctx, ds->graph, "metis:16");
    ds_check_reorder(r, 2000);
    cr_assert_eq(r->n_levels, 1);
    cr_assert_eq(r->size[0], 16);
    double mean = 2000.0 / r->n_parts[0];
    cr_assert(mean > 0.6 * 16 && mean <= 16, "mean part %.1f", mean);
    for (int32_t q = 0; q < r->n_parts[0]; q++)
        cr_assert_leq(r->part_ptr[0][q + 1] - r->part_ptr[0][q], 24);
    const gcn_graph *g = ds->graph;
    int64_t intra = 0;
    for (int32_t u = 0; u < g->n_nodes; u++)
        for (int32_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++)
            intra += r->position[u] / 256 == r->position[g->col_idx[e]] / 256;
    cr_assert_gt((double)intra / g->nnz, 0.3, "edges within runs of 256 new ids: %.3f",
                 (double)intra / g->nnz);
    gcn_reorder_free(&r);
    gcn_dataset_free(&ds);
    gcn_ctx_free(&ctx);
}

/* Nodes 3, 17 and 39 have no edge, 25 only a self-loop; the rest form a
 * directed ring with chords. */
static gcn_graph *ring_with_isolated(gcn_ctx *ctx)
{
    int32_t src[80], dst[80], m = 0, ring[36], k = 0;
    for (int32_t v = 0; v < 40; v++)
        if (v != 3 && v != 17 && v != 25 && v != 39)
            ring[k++] = v;
    for (int32_t i = 0; i < 36; i++) {
        src[m] = ring[i];
        dst[m++] = ring[(i + 1) % 36];
        if (i % 3 == 0) {
            src[m] = ring[i];
            dst[m++] = ring[(i + 7) % 36];
        }
    }
    src[m] = dst[m] = 25;
    m++;
    src[m] = dst[m] = 5;
    m++;
    return ds_coo(ctx, 40, m, src, dst);
}

Test(reorder, isolated_last_and_directed_weighted_input_accepted)
{
    gcn_ctx *a = test_cpu_ctx(5), *b = test_cpu_ctx(5), *c = test_cpu_ctx(5);
    gcn_graph *g = ring_with_isolated(a), *sym = NULL, *norm = NULL;
    cr_assert_not(gcn_graph_is_symmetric(g));
    cr_assert_eq(gcn_graph_symmetrize(a, g, &sym), GCN_OK);
    cr_assert_eq(gcn_graph_gcn_norm(a, sym, &norm), GCN_OK);
    cr_assert_not_null(norm->values);
    gcn_reorder *r = ds_compute_reorder(a, g, "metis:4,8"), *rs = ds_compute_reorder(b, sym, "metis:4,8"),
                *rn = ds_compute_reorder(c, norm, "metis:4,8");
    ds_check_reorder(r, 40);
    cr_assert_eq(r->n_levels, 2);
    cr_assert_arr_eq(r->order + 36, ((int32_t[]){3, 17, 25, 39}), 4 * sizeof(int32_t));
    for (int k = 0; k < 2; k++) {
        const int32_t *p = r->part_ptr[k];
        cr_assert_eq(p[r->n_parts[k] - 1], 36, "the isolated nodes form their own part");
    }
    cr_assert_arr_eq(rs->order, r->order, 40 * sizeof(int32_t), "direction is ignored");
    cr_assert_arr_eq(rn->order, r->order, 40 * sizeof(int32_t), "values and loops are ignored");
    gcn_reorder_free(&r);
    gcn_reorder_free(&rs);
    gcn_reorder_free(&rn);
    gcn_graph_free(&g);
    gcn_graph_free(&sym);
    gcn_graph_free(&norm);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
    gcn_ctx_free(&c);
}

Test(reorder, graphs_without_edges_and_tiny_graphs)
{
    gcn_ctx *ctx = test_cpu_ctx(6);
    gcn_graph *g = ds_coo(ctx, 50, 0, NULL, NULL);
    gcn_reorder *r = ds_compute_reorder(ctx, g, "metis:3,8");
    ds_check_reorder(r, 50);
    for (int32_t i = 0; i < 50; i++)
        cr_assert_eq(r->order[i], i);
    cr_assert_eq(r->n_parts[1], 7);
    cr_assert_eq(r->n_parts[0], 6 * 3 + 1, "chunks of 3, 3, 2 in each 8 and 2 at the end");
    gcn_reorder_free(&r);
    gcn_graph_free(&g);
    /* Paths of 0 to 4 nodes; METIS may leave 3 nodes in one part. */
    const int32_t src[] = {0, 1, 2}, dst[] = {1, 2, 3};
    for (int32_t n = 0; n <= 4; n++) {
        g = ds_coo(ctx, n, n > 1 ? n - 1 : 0, src, dst);
        r = ds_compute_reorder(ctx, g, "metis:2");
        ds_check_reorder(r, n);
        if (n != 3)
            cr_assert_eq(r->n_levels, n == 4, "%d nodes: %d levels", n, r->n_levels);
        gcn_reorder_free(&r);
        r = ds_compute_reorder(ctx, g, "metis");
        cr_assert_eq(r->n_levels, 0);
        gcn_reorder_free(&r);
        gcn_graph_free(&g);
    }
    gcn_ctx_free(&ctx);
}

/* The reordering that undoes r (its arrays borrowed). */
static gcn_reorder inverse_of(const gcn_reorder *r)
{
    gcn_reorder inv = *r;
    inv.order = r->position;
    inv.position = r->order;
    return inv;
}

Test(reorder, graph_permute_and_back_is_exact)
{
    gcn_ctx *ctx = test_cpu_ctx(7);
    enum { N = 300, M = 1500 };
    int32_t src[M], dst[M];
    uint32_t x = 99;
    for (int e = 0; e < M; e++) {
        x = x * 1103515245u + 12345u;
        src[e] = e < 100 ? 7 : (int32_t)((x >> 8) % N); /* node 7: a row past the short-row sort */
        x = x * 1103515245u + 12345u;
        dst[e] = (int32_t)((x >> 8) % N);
    }
    gcn_graph *plain = ds_coo(ctx, N, M, src, dst), *g = NULL;
    cr_assert_eq(gcn_graph_gcn_norm(ctx, plain, &g), GCN_OK);
    const char *specs[] = {"degree", "metis:8,32"};
    for (int s = 0; s < 2; s++)
        for (int w = 0; w < 2; w++) {
            const gcn_graph *in = w ? g : plain;
            gcn_reorder *r = ds_compute_reorder(ctx, in, specs[s]);
            gcn_reorder inv = inverse_of(r);
            gcn_graph *p = NULL, *back = NULL;
            cr_assert_eq(gcn_graph_permute(ctx, in, r, &p), GCN_OK, "%s", gcn_last_error(ctx));
            cr_assert_eq(gcn_graph_validate(ctx, p), GCN_OK, "%s", gcn_last_error(ctx));
            for (int32_t u = 0; u < N; u++)
                for (int32_t e = in->row_ptr[u]; e < in->row_ptr[u + 1]; e++) {
                    int32_t pu = r->position[u], pv = r->position[in->col_idx[e]], f;
                    for (f = p->row_ptr[pu]; f < p->row_ptr[pu + 1] && p->col_idx[f] != pv; f++)
                        ;
                    cr_assert_lt(f, p->row_ptr[pu + 1], "edge %d-%d lost", u, in->col_idx[e]);
                    if (w)
                        cr_assert_eq(p->values[f], in->values[e]);
                }
            cr_assert_eq(gcn_graph_permute(ctx, p, &inv, &back), GCN_OK);
            ds_expect_same_graph(back, in);
            gcn_graph_free(&p);
            gcn_graph_free(&back);
            gcn_reorder_free(&r);
        }
    gcn_graph_free(&plain);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

Test(reorder, rows_and_rows_back)
{
    gcn_ctx *ctx = test_cpu_ctx(8);
    gcn_graph *g = planted(ctx, 4, 5, 3);
    gcn_reorder *r = ds_compute_reorder(ctx, g, "metis:5");
    enum { F = 3 };
    float x[20 * F], y[20 * F], z[20 * F];
    uint64_t state = 1;
    test_fill_uniform(&state, x, 20 * F, -1, 1);
    gcn_reorder_rows(r, x, F, y);
    for (int32_t i = 0; i < 20; i++)
        cr_assert_arr_eq(y + i * F, x + r->order[i] * F, F * sizeof(float));
    gcn_reorder_rows_back(r, y, F, z);
    cr_assert_arr_eq(z, x, sizeof x);
    gcn_reorder_rows(r, NULL, 0, NULL);
    gcn_reorder_free(&r);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}
