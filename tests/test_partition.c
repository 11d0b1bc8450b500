/* The PARTS reordering (datasets/reorder_parts.c): specs, planted clusters,
 * aligned boundaries, balance by nodes and by entries on power-law graphs,
 * the edge cut, nodes without neighbours, one part, empty parts, no
 * communities attached.  The cache and whole datasets are in
 * test_partition_dataset.c, one rank's rows in test_partition_rows.c. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "kernels/adaptgear/communities.h"
#include "dataset_helpers.h"
#include "helpers.h"

/* Asserts that r is a PARTS reordering of n nodes into N parts: a
 * permutation, one level of N parts from 0 to n, every boundary a multiple
 * of 4 or n, nodes in id order within each part. */
static void check_parts(const gcn_reorder *r, int32_t n, int32_t N)
{
    cr_assert_eq(r->method, GCN_REORDER_PARTS);
    cr_assert_eq(r->n_nodes, n);
    for (int32_t i = 0; i < n; i++) {
        cr_assert(r->order[i] >= 0 && r->order[i] < n);
        cr_assert_eq(r->position[r->order[i]], i, "position is not the inverse of order");
    }
    cr_assert_eq(r->n_levels, 1);
    cr_assert_eq(r->n_parts[0], N);
    cr_assert_eq(r->size[0], (n + N - 1) / N);
    const int32_t *p = r->part_ptr[0];
    cr_assert_eq(p[0], 0);
    cr_assert_eq(p[N], n);
    for (int32_t q = 0; q < N; q++) {
        cr_assert_leq(p[q], p[q + 1], "part_ptr decreases at %d", q);
        for (int32_t i = p[q] + 1; i < p[q + 1]; i++)
            cr_assert_gt(r->order[i], r->order[i - 1], "part %d is not in id order", q);
    }
}

/* part[v] for each original id v: the part holding it. */
static int32_t *parts_of(const gcn_reorder *r)
{
    int32_t *part = malloc(((size_t)r->n_nodes + 1) * sizeof *part);
    for (int32_t q = 0; q < r->n_parts[0]; q++)
        for (int32_t i = r->part_ptr[0][q]; i < r->part_ptr[0][q + 1]; i++)
            part[r->order[i]] = q;
    return part;
}

/* The entries of g whose ends lie in different parts, counted by search. */
static int64_t brute_cut(const gcn_graph *g, const gcn_reorder *r)
{
    int64_t cut = 0;
    for (int32_t u = 0; u < g->n_nodes; u++)
        for (int32_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
            int32_t a = r->position[u], b = r->position[g->col_idx[e]], qa = 0, qb = 0;
            while (r->part_ptr[0][qa + 1] <= a)
                qa++;
            while (r->part_ptr[0][qb + 1] <= b)
                qb++;
            cut += qa != qb;
        }
    return cut;
}

Test(partition, parse_describe_and_every_error)
{
    static const char *const specs[][2] = {
        {"parts:1", NULL},          {"parts:4", NULL},           {"parts:4096", NULL},
        {"parts:3:nnz", NULL},      {"parts:007", "parts:7"},    {"parts:2:nnz+20", NULL},
        {"parts:2:nnz+1", "parts:2:nnz"},                        {"parts:2:range", NULL},
        {"parts:8:nnz:range", NULL}, {"parts:2:nnz+1048576:range", NULL}};
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        gcn_reorder_opts o;
        char buf[40];
        cr_assert_eq(gcn_reorder_parse(NULL, specs[k][0], &o), GCN_OK, "%s", specs[k][0]);
        cr_assert_eq(o.method, GCN_REORDER_PARTS);
        cr_assert_eq(o.balance_nnz, strstr(specs[k][0], "nnz") != NULL);
        cr_assert_eq(o.contiguous, strstr(specs[k][0], "range") != NULL);
        const char *plus = strchr(specs[k][0], '+');
        cr_assert_eq(o.node_weight, plus ? atoi(plus + 1) : 0, "%s", specs[k][0]);
        const char *want = specs[k][1] ? specs[k][1] : specs[k][0];
        cr_assert_eq(gcn_reorder_describe(&o, buf, sizeof buf), (int)strlen(want));
        cr_assert_str_eq(buf, want);
    }
    static const char *const bad[][2] = {
        {"parts", "missing"},          {"parts:", "missing"},         {"parts:x", "missing"},
        {"parts: 2", "missing"},       {"parts:+2", "missing"},       {"parts:-2", "missing"},
        {"parts:0", "out of range"},   {"parts:4097", "out of range"},
        {"parts:99999999999999999999", "out of range"},               {"parts:2x", "junk"},
        {"parts:2:", "junk"},          {"parts:2:edges", "junk"},     {"parts:2:nnz:", "junk"},
        {"parts:2,4", "junk"},         {"parts:2:NNZ", "junk"},       {"partsx", "unknown method"},
        {"PARTS:2", "unknown method"}, {"parts:2:nnz+", "node weight"},
        {"parts:2:nnz+0", "node weight"}, {"parts:2:nnz+x", "node weight"},
        {"parts:2:nnz+1048577", "node weight"}, {"parts:2:nnz+-3", "node weight"},
        {"parts:2:range:nnz", "junk"}, {"parts:2:nnz+3x", "junk"}, {"parts:2:ranges", "junk"}};
    gcn_ctx *ctx = test_cpu_ctx(1);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        gcn_reorder_opts o;
        cr_assert_eq(gcn_reorder_parse(ctx, bad[k][0], &o), GCN_ERR_INVALID_ARG, "'%s'", bad[k][0]);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "reorder spec '%s': ", bad[k][0]);
        const char *msg = gcn_last_error(ctx);
        cr_assert(strstr(msg, quoted) && strstr(msg, bad[k][1]), "%s", msg);
        cr_assert(strstr(msg, "parts:N[:nnz[+K]][:range]") && !strchr(msg, '\n'), "%s", msg);
    }
    gcn_ctx_free(&ctx);
}

Test(partition, options_built_by_hand_and_by_older_callers)
{
    gcn_ctx *ctx = test_cpu_ctx(2);
    const int32_t src[] = {0, 1, 2, 3}, dst[] = {1, 2, 3, 0};
    gcn_graph *g = ds_coo(ctx, 12, 4, src, dst);
    gcn_reorder *r = NULL;
    gcn_reorder_opts o = gcn_reorder_default_opts(GCN_REORDER_PARTS);
    char buf[32];
    gcn_reorder_describe(&o, buf, sizeof buf);
    cr_assert_str_eq(buf, "parts:2", "two parts unless set");
    for (int32_t n_parts = -1; n_parts <= GCN_REORDER_MAX_PARTS + 1; n_parts += 4098) {
        o.n_parts = n_parts;
        cr_assert_eq(gcn_reorder_compute(ctx, g, &o, &r), GCN_ERR_INVALID_ARG, "%d", n_parts);
        cr_assert(strstr(gcn_last_error(ctx), "parts (expected 1 to 4096)"), "%s",
                  gcn_last_error(ctx));
        cr_assert_null(r);
    }
    /* A caller built before n_parts was appended passes its smaller size. */
    gcn_reorder_opts old = gcn_reorder_default_opts(GCN_REORDER_METIS);
    old.size = offsetof(gcn_reorder_opts, n_parts);
    old.n_sizes = 1;
    old.sizes[0] = 4;
    cr_assert_eq(gcn_reorder_compute(ctx, g, &old, &r), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(r->method, GCN_REORDER_METIS);
    gcn_reorder_free(&r);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

/* Two cliques of 8 nodes, even and odd ids, joined by the edge 0 - 1 both
 * ways, and their parts found by "parts:2" with and without nnz. */
Test(partition, two_planted_clusters_become_the_two_parts)
{
    gcn_ctx *ctx = test_cpu_ctx(3);
    int32_t src[120], dst[120], m = 0;
    for (int32_t u = 0; u < 16; u++)
        for (int32_t v = u % 2; v < 16; v += 2)
            if (u != v) {
                src[m] = u;
                dst[m++] = v;
            }
    src[m] = 0;
    dst[m++] = 1;
    src[m] = 1;
    dst[m++] = 0;
    gcn_graph *g = ds_coo(ctx, 16, m, src, dst);
    const char *specs[] = {"parts:2", "parts:2:nnz"};
    for (int s = 0; s < 2; s++) {
        gcn_reorder *r = ds_compute_reorder(ctx, g, specs[s]);
        check_parts(r, 16, 2);
        cr_assert_eq(r->part_ptr[0][1], 8);
        cr_assert_neq(r->order[0] % 2, r->order[8] % 2);
        for (int32_t i = 1; i < 16; i++)
            cr_assert_eq(r->order[i] % 2, r->order[i < 8 ? 0 : 8] % 2, "%s mixes clusters",
                         specs[s]);
        cr_assert_eq(r->edge_cut, 2, "the bridge, both ways");
        cr_assert_eq(brute_cut(g, r), 2);
        gcn_reorder_free(&r);
    }
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

/* A Chung-Lu power-law graph of n nodes, symmetric or as drawn. */
static gcn_graph *power_law(gcn_ctx *ctx, int32_t n, int64_t m, bool symmetric)
{
    double *w = malloc((size_t)n * sizeof *w);
    gcn_graph *g = NULL, *s = NULL;
    cr_assert_eq(gcn_powerlaw_weights(ctx, n, m, 2.5, w), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_graph_chung_lu(ctx, &g, n, w, m), GCN_OK, "%s", gcn_last_error(ctx));
    free(w);
    if (!symmetric)
        return g;
    cr_assert_eq(gcn_graph_symmetrize(ctx, g, &s), GCN_OK);
    gcn_graph_free(&g);
    return s;
}

/* Nodes and entries + k nodes of each part, their maxima over parts. */
static void part_loads_k(const gcn_graph *g, const gcn_reorder *r, int64_t k, int64_t *max_nodes,
                         int64_t *max_weight)
{
    *max_nodes = *max_weight = 0;
    for (int32_t q = 0; q < r->n_parts[0]; q++) {
        int64_t nodes = 0, weight = 0;
        for (int32_t i = r->part_ptr[0][q]; i < r->part_ptr[0][q + 1]; i++, nodes++)
            weight += g->row_ptr[r->order[i] + 1] - g->row_ptr[r->order[i]] + k;
        *max_nodes = nodes > *max_nodes ? nodes : *max_nodes;
        *max_weight = weight > *max_weight ? weight : *max_weight;
    }
}

/* METIS keeps parts within 3% of their share of weight (its default
 * ufactor for k-way) where no node is heavy.  By nodes the tolerance is
 * 5% + 4 nodes (measured: at most 2.4% over).  By
 * entries it is 6% + the heaviest node, which cannot be split: here a hub
 * holds up to 15% of a part's share (16 parts), and METIS misses its 3% by
 * up to a node (measured: 4.7% over with 2 parts, where the hub is 1.9% of
 * a share, 15.7% with 16).  The same seed gives the same order. */
Test(partition, power_law_parts_are_balanced_and_their_cut_counted)
{
    gcn_ctx *ctx = test_cpu_ctx(4);
    const int32_t n = 20003;
    gcn_graph *g = power_law(ctx, n, 100000, true);
    int64_t heaviest = 0;
    for (int32_t i = 0; i < n; i++)
        heaviest = g->row_ptr[i + 1] - g->row_ptr[i] + 1 > heaviest
                       ? g->row_ptr[i + 1] - g->row_ptr[i] + 1
                       : heaviest;
    const int32_t counts[] = {2, 3, 5, 8, 16};
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++)
        for (int nnz = 0; nnz < 2; nnz++) {
            char spec[32];
            snprintf(spec, sizeof spec, "parts:%d%s", counts[k], nnz ? ":nnz" : "");
            gcn_reorder *r = ds_compute_reorder(ctx, g, spec);
            int32_t N = counts[k];
            check_parts(r, n, N);
            int64_t max_nodes, max_weight;
            part_loads_k(g, r, 1, &max_nodes, &max_weight);
            double nodes_share = (double)n / N, weight_share = (double)(g->nnz + n) / N;
            if (!nnz)
                cr_assert_leq(max_nodes, 1.05 * nodes_share + 4, "%s: %lld nodes in a part", spec,
                              (long long)max_nodes);
            else
                cr_assert_leq(max_weight, 1.06 * weight_share + heaviest,
                              "%s: weight %lld in a part (share %.0f)", spec,
                              (long long)max_weight, weight_share);
            cr_assert_eq(r->edge_cut, brute_cut(g, r), "%s", spec);
            cr_assert_gt(r->edge_cut, 0);
            cr_assert_lt(r->edge_cut, g->nnz);
            gcn_reorder_free(&r);
        }
    gcn_ctx *a = test_cpu_ctx(9), *b = test_cpu_ctx(9);
    gcn_reorder *x = ds_compute_reorder(a, g, "parts:4"), *y = ds_compute_reorder(b, g, "parts:4");
    cr_assert_arr_eq(x->order, y->order, (size_t)n * sizeof(int32_t), "same seed, same order");
    gcn_reorder_free(&x);
    gcn_reorder_free(&y);
    gcn_graph_free(&g);
    gcn_ctx_free(&a);
    gcn_ctx_free(&b);
    gcn_ctx_free(&ctx);
}

/* ":range" keeps the id order and cuts it into runs of about equal weight
 * (nodes, or entries + K), METIS not called; ":nnz+K" weighs each node K
 * more than ":nnz", so a larger K moves the parts toward equal nodes. */
Test(partition, contiguous_runs_and_node_weights)
{
    gcn_ctx *ctx = test_cpu_ctx(10);
    const int32_t n = 6001;
    gcn_graph *g = power_law(ctx, n, 30000, true);
    const char *specs[] = {"parts:3:range", "parts:3:nnz:range", "parts:3:nnz+40:range"};
    const int32_t weights[] = {0, 1, 40};
    for (int s = 0; s < 3; s++) {
        gcn_reorder *r = ds_compute_reorder(ctx, g, specs[s]);
        check_parts(r, n, 3);
        for (int32_t i = 0; i < n; i++)
            cr_assert_eq(r->order[i], i, "%s keeps the order", specs[s]);
        /* each boundary is where the running weight passes q / 3 of the total */
        int64_t total = 0, before = 0;
        for (int32_t i = 0; i < n; i++)
            total += weights[s] ? g->row_ptr[i + 1] - g->row_ptr[i] + weights[s] : 1;
        for (int32_t i = 0, q = 0; i < n; i++) {
            while (q < 3 && r->part_ptr[0][q + 1] <= i)
                q++;
            cr_assert_eq(q, (int32_t)(before * 3 / total), "%s: node %d", specs[s], i);
            before += weights[s] ? g->row_ptr[i + 1] - g->row_ptr[i] + weights[s] : 1;
        }
        cr_assert_eq(r->edge_cut, brute_cut(g, r), "%s", specs[s]);
        gcn_reorder_free(&r);
    }
    /* METIS balances entries + K as it does entries + 1 (the tolerance of
     * power_law_parts_are_balanced_and_their_cut_counted) */
    int64_t heaviest = 0, max_nodes, max_weight;
    for (int32_t i = 0; i < n; i++)
        if (g->row_ptr[i + 1] - g->row_ptr[i] > heaviest)
            heaviest = g->row_ptr[i + 1] - g->row_ptr[i];
    gcn_reorder *r = ds_compute_reorder(ctx, g, "parts:4:nnz+25");
    check_parts(r, n, 4);
    part_loads_k(g, r, 25, &max_nodes, &max_weight);
    cr_assert_leq(max_weight, 1.06 * (g->nnz + 25.0 * n) / 4 + heaviest + 25,
                  "weight %lld in a part", (long long)max_weight);
    gcn_reorder_free(&r);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

/* The cut is counted for every method: METIS's finest level, 0 without
 * levels; on a directed graph each stored entry counts once. */
Test(partition, edge_cut_of_every_method_matches_a_brute_force_count)
{
    gcn_ctx *ctx = test_cpu_ctx(5);
    gcn_graph *g = power_law(ctx, 3000, 12000, false);
    cr_assert_not(gcn_graph_is_symmetric(g));
    const char *specs[] = {"parts:6", "parts:6:nnz", "metis:32,256"};
    for (int s = 0; s < 3; s++) {
        gcn_reorder *r = ds_compute_reorder(ctx, g, specs[s]);
        cr_assert_eq(r->edge_cut, brute_cut(g, r), "%s", specs[s]);
        cr_assert_gt(r->edge_cut, 0, "%s", specs[s]);
        gcn_reorder_free(&r);
    }
    gcn_reorder *r = ds_compute_reorder(ctx, g, "degree");
    cr_assert_eq(r->edge_cut, 0);
    gcn_reorder_free(&r);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

/* A 64-node ring with chords (ids 3k) among 192 nodes: the 128 others have
 * no neighbour (some a self-loop only) and are dealt so that the four
 * parts hold about 48 nodes each, about 32 of them without neighbours. */
Test(partition, nodes_without_neighbours_are_spread_over_the_parts)
{
    gcn_ctx *ctx = test_cpu_ctx(6);
    int32_t src[200], dst[200], m = 0;
    for (int32_t k = 0; k < 64; k++) {
        src[m] = 3 * k;
        dst[m++] = 3 * ((k + 1) % 64);
        src[m] = 3 * k;
        dst[m++] = 3 * ((k + 17) % 64);
    }
    for (int32_t v = 1; v < 192; v += 10) {
        src[m] = v;
        dst[m++] = v;
    }
    gcn_graph *g = ds_coo(ctx, 192, m, src, dst);
    const char *specs[] = {"parts:4", "parts:4:nnz"};
    for (int s = 0; s < 2; s++) {
        gcn_reorder *r = ds_compute_reorder(ctx, g, specs[s]);
        check_parts(r, 192, 4);
        for (int32_t q = 0; q < 4; q++) {
            int32_t lo = r->part_ptr[0][q], hi = r->part_ptr[0][q + 1], lonely = 0;
            for (int32_t i = lo; i < hi; i++)
                lonely += r->order[i] % 3 != 0;
            cr_assert(hi - lo >= 44 && hi - lo <= 52, "%s: part %d has %d nodes", specs[s], q,
                      hi - lo);
            cr_assert_geq(lonely, 28, "%s: part %d has %d nodes without neighbours", specs[s], q,
                          lonely);
        }
        gcn_reorder_free(&r);
    }
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

Test(partition, one_part_is_the_identity)
{
    gcn_ctx *ctx = test_cpu_ctx(7);
    gcn_graph *g = power_law(ctx, 501, 2000, false);
    gcn_reorder *r = ds_compute_reorder(ctx, g, "parts:1");
    check_parts(r, 501, 1);
    for (int32_t i = 0; i < 501; i++)
        cr_assert_eq(r->order[i], i);
    cr_assert_eq(r->edge_cut, 0);
    gcn_reorder_free(&r);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

/* More parts than nodes leave parts empty; every node is in exactly one
 * part.  Small connected sets are cut in runs, not by METIS. */
Test(partition, more_parts_than_nodes_leave_parts_empty)
{
    gcn_ctx *ctx = test_cpu_ctx(8);
    const int32_t sizes[] = {0, 1, 3, 10, 37, 100};
    const int32_t counts[] = {2, 3, 8, 30, 4096};
    for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++) {
        int32_t n = sizes[a], src[100], dst[100];
        for (int32_t i = 0; i < n; i++) {
            src[i] = i;
            dst[i] = (i * 7 + 1) % n;
        }
        gcn_graph *g = ds_coo(ctx, n, n, src, dst);
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
            char spec[32];
            snprintf(spec, sizeof spec, "parts:%d", counts[k]);
            gcn_reorder *r = ds_compute_reorder(ctx, g, spec);
            check_parts(r, n, counts[k]);
            int32_t *part = parts_of(r), empty = 0;
            for (int32_t q = 0; q < counts[k]; q++)
                empty += r->part_ptr[0][q + 1] == r->part_ptr[0][q];
            if (n < counts[k])
                cr_assert_gt(empty, 0, "%d nodes, %d parts", n, counts[k]);
            for (int32_t v = 0; v < n; v++)
                cr_assert(part[v] >= 0 && part[v] < counts[k]);
            cr_assert_eq(r->edge_cut, brute_cut(g, r));
            free(part);
            gcn_reorder_free(&r);
        }
        gcn_graph_free(&g);
    }
    gcn_ctx_free(&ctx);
}

/* Rank blocks attach nothing; METIS attaches its levels and, as the rows'
 * prior order, where each original node went. */
Test(partition, rank_blocks_attach_nothing)
{
    gcn_ctx *ctx = test_cpu_ctx(9);
    gcn_graph *g = power_law(ctx, 400, 2000, true), *p = NULL;
    gcn_reorder *r = ds_compute_reorder(ctx, g, "parts:2");
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_graph_permute(ctx, g, r, &p), GCN_OK);
    cr_assert_eq(gcn_graph_to_csr(ctx, p, &a), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_reorder_attach(ctx, r, a), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_csr_community_levels(a), 0);
    cr_assert_null(gcn_communities_of(a)->prior_order);
    gcn_reorder *m = ds_compute_reorder(ctx, g, "metis:16");
    cr_assert_eq(gcn_reorder_attach(ctx, m, a), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_csr_community_levels(a), 1, "METIS's communities still attach");
    cr_assert_not_null(gcn_communities_of(a)->prior_order);
    cr_assert_arr_eq(gcn_communities_of(a)->prior_order, m->position,
                     (size_t)m->n_nodes * sizeof(int32_t));
    gcn_csr_free(&a);
    gcn_reorder_free(&m);
    gcn_reorder_free(&r);
    gcn_graph_free(&p);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}
