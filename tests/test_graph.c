/* Host CSR graphs (datasets/graph.c): COO -> CSR with sorting and duplicate
 * removal, transpose, union, symmetrisation, self-loops, GCN normalisation,
 * degree statistics and upload as gcn_csr. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "helpers.h"

static gcn_graph *coo(gcn_ctx *ctx, int32_t n, int64_t m, const int32_t *src, const int32_t *dst)
{
    gcn_graph *g = NULL;
    cr_assert_eq(gcn_graph_from_coo(ctx, &g, n, m, src, dst), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_graph_validate(ctx, g), GCN_OK, "%s", gcn_last_error(ctx));
    return g;
}

static void expect_csr(const gcn_graph *g, const int32_t *row_ptr, const int32_t *col_idx)
{
    for (int32_t i = 0; i <= g->n_nodes; i++)
        cr_assert_eq(g->row_ptr[i], row_ptr[i], "row_ptr[%d] = %d, want %d", i, g->row_ptr[i],
                     row_ptr[i]);
    for (int32_t k = 0; k < g->nnz; k++)
        cr_assert_eq(g->col_idx[k], col_idx[k], "col_idx[%d] = %d, want %d", k, g->col_idx[k],
                     col_idx[k]);
}

Test(graph, coo_sorts_and_merges_duplicates)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    /* 0->2 twice, 0->1, 2->2 (loop), 3 isolated, unsorted order. */
    const int32_t src[] = {0, 2, 0, 0, 2, 1};
    const int32_t dst[] = {2, 2, 1, 2, 0, 0};
    gcn_graph *g = coo(ctx, 4, 6, src, dst);
    cr_assert_eq(g->nnz, 5);
    expect_csr(g, (int32_t[]){0, 2, 3, 5, 5}, (int32_t[]){1, 2, 0, 0, 2});
    cr_assert_null(g->values);
    cr_assert_eq(gcn_graph_count_self_loops(g), 1);
    gcn_graph_free(&g);
    cr_assert_null(g);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

Test(graph, coo_long_rows_are_sorted)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    enum { M = 500 };
    int32_t src[M], dst[M];
    for (int e = 0; e < M; e++) {
        src[e] = 0;
        dst[e] = (e * 37) % 100; /* each of 0..99 five times */
    }
    gcn_graph *g = coo(ctx, 100, M, src, dst);
    cr_assert_eq(g->nnz, 100);
    for (int k = 0; k < 100; k++)
        cr_assert_eq(g->col_idx[k], k);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

Test(graph, coo_rejects_ids_out_of_range)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_graph *g = NULL;
    cr_assert_eq(gcn_graph_from_coo(ctx, &g, 3, 1, (int32_t[]){0}, (int32_t[]){3}),
                 GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_graph_from_coo(ctx, &g, 3, 1, (int32_t[]){-1}, (int32_t[]){0}),
                 GCN_ERR_INVALID_ARG);
    cr_assert_null(g);
    cr_assert(strstr(gcn_last_error(ctx), "outside [0, 3)"), "%s", gcn_last_error(ctx));
    gcn_ctx_free(&ctx);
}

Test(graph, empty_graph)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_graph *g = coo(ctx, 3, 0, NULL, NULL), *s = NULL;
    cr_assert_eq(g->nnz, 0);
    cr_assert_eq(gcn_graph_symmetrize(ctx, g, &s), GCN_OK);
    cr_assert_eq(s->nnz, 0);
    gcn_degree_stats st;
    gcn_graph_degree_stats(s, &st);
    cr_assert_eq(st.max, 0);
    cr_assert_eq(st.n_isolated, 3);
    cr_assert_eq(st.hist[0], 3);
    gcn_graph_free(&g);
    gcn_graph_free(&s);
    gcn_ctx_free(&ctx);
}

Test(graph, transpose_and_symmetrize)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const int32_t src[] = {0, 0, 1, 3};
    const int32_t dst[] = {1, 3, 2, 3};
    gcn_graph *g = coo(ctx, 4, 4, src, dst), *t = NULL, *s = NULL;
    cr_assert_eq(gcn_graph_transpose(ctx, g, &t), GCN_OK);
    expect_csr(t, (int32_t[]){0, 0, 1, 2, 4}, (int32_t[]){0, 1, 0, 3});
    cr_assert_not(gcn_graph_is_symmetric(g));
    cr_assert_eq(gcn_graph_symmetrize(ctx, g, &s), GCN_OK);
    cr_assert_eq(gcn_graph_validate(ctx, s), GCN_OK);
    expect_csr(s, (int32_t[]){0, 2, 4, 5, 7}, (int32_t[]){1, 3, 0, 2, 1, 0, 3});
    cr_assert(gcn_graph_is_symmetric(s));
    gcn_graph_free(&g);
    gcn_graph_free(&t);
    gcn_graph_free(&s);
    gcn_ctx_free(&ctx);
}

Test(graph, self_loops_added_and_removed)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const int32_t src[] = {0, 1, 1, 2};
    const int32_t dst[] = {1, 1, 2, 0};
    gcn_graph *g = coo(ctx, 3, 4, src, dst), *a = NULL, *r = NULL;
    cr_assert_eq(gcn_graph_add_self_loops(ctx, g, &a), GCN_OK);
    expect_csr(a, (int32_t[]){0, 2, 4, 6}, (int32_t[]){0, 1, 1, 2, 0, 2});
    cr_assert_eq(gcn_graph_count_self_loops(a), 3);
    for (int32_t k = 0; k < a->nnz; k++)
        cr_assert_float_eq(a->values[k], 1.0f, 0.0f);
    cr_assert_eq(gcn_graph_remove_self_loops(ctx, a, &r), GCN_OK);
    expect_csr(r, (int32_t[]){0, 1, 2, 3}, (int32_t[]){1, 2, 0});
    cr_assert_eq(gcn_graph_count_self_loops(r), 0);
    gcn_graph_free(&g);
    gcn_graph_free(&a);
    gcn_graph_free(&r);
    gcn_ctx_free(&ctx);
}

/* Path 0 - 1 - 2: with I added, degrees are 2, 3, 2. */
Test(graph, gcn_norm_values)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const int32_t src[] = {0, 1, 1, 2};
    const int32_t dst[] = {1, 0, 2, 1};
    gcn_graph *g = coo(ctx, 3, 4, src, dst), *a = NULL;
    cr_assert_eq(gcn_graph_gcn_norm(ctx, g, &a), GCN_OK);
    expect_csr(a, (int32_t[]){0, 2, 5, 7}, (int32_t[]){0, 1, 0, 1, 2, 1, 2});
    const double want[] = {1.0 / 2, 1 / sqrt(6.0), 1 / sqrt(6.0), 1.0 / 3,
                           1 / sqrt(6.0), 1 / sqrt(6.0), 1.0 / 2};
    for (int k = 0; k < 7; k++)
        cr_assert_float_eq(a->values[k], want[k], 1e-6, "value %d: %g, want %g", k, a->values[k],
                           want[k]);
    cr_assert(gcn_graph_is_symmetric(a));
    gcn_graph_free(&g);
    gcn_graph_free(&a);
    gcn_ctx_free(&ctx);
}

Test(graph, degree_statistics)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    /* Out-degrees 0, 1, 2, 3, 4, 5 over 6 nodes. */
    int32_t src[15], dst[15], m = 0;
    for (int32_t i = 0; i < 6; i++)
        for (int32_t k = 0; k < i; k++) {
            src[m] = i;
            dst[m++] = k;
        }
    gcn_graph *g = coo(ctx, 6, m, src, dst);
    gcn_degree_stats s;
    gcn_graph_degree_stats(g, &s);
    cr_assert_eq(s.min, 0);
    cr_assert_eq(s.max, 5);
    cr_assert_float_eq(s.mean, 2.5, 1e-12);
    cr_assert_float_eq(s.median, 2.5, 1e-12);
    cr_assert_eq(s.n_isolated, 1);
    /* buckets: {0}, {1}, {2,3}, {4..7} */
    cr_assert_eq(s.hist[0], 1);
    cr_assert_eq(s.hist[1], 1);
    cr_assert_eq(s.hist[2], 2);
    cr_assert_eq(s.hist[3], 2);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

Test(graph, validate_rejects_malformed)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    int32_t row_ptr[] = {0, 2, 3};
    int32_t col_idx[] = {1, 0, 0};
    gcn_graph g = {.n_nodes = 2, .nnz = 3, .row_ptr = row_ptr, .col_idx = col_idx};
    cr_assert_eq(gcn_graph_validate(ctx, &g), GCN_ERR_FORMAT, "unsorted row accepted");
    col_idx[1] = 2;
    cr_assert_eq(gcn_graph_validate(ctx, &g), GCN_ERR_FORMAT, "column out of range accepted");
    col_idx[0] = 0;
    col_idx[1] = 1;
    cr_assert_eq(gcn_graph_validate(ctx, &g), GCN_OK, "%s", gcn_last_error(ctx));
    col_idx[1] = 0;
    cr_assert_eq(gcn_graph_validate(ctx, &g), GCN_ERR_FORMAT, "repeated column accepted");
    col_idx[1] = 1;
    row_ptr[2] = 4;
    cr_assert_eq(gcn_graph_validate(ctx, &g), GCN_ERR_FORMAT, "row_ptr end != nnz accepted");
    gcn_ctx_free(&ctx);
}

Test(graph, upload_round_trip)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    const int32_t src[] = {0, 1, 1, 2};
    const int32_t dst[] = {1, 0, 2, 1};
    gcn_graph *g = coo(ctx, 3, 4, src, dst), *a = NULL;
    cr_assert_eq(gcn_graph_gcn_norm(ctx, g, &a), GCN_OK);
    gcn_csr *csr = NULL;
    cr_assert_eq(gcn_graph_to_csr(ctx, a, &csr), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_csr_rows(csr), 3);
    cr_assert_eq(gcn_csr_nnz(csr), a->nnz);
    int32_t rp[4], ci[7];
    float v[7];
    cr_assert_eq(gcn_csr_to_host(ctx, csr, rp, ci, v), GCN_OK);
    cr_assert_eq(memcmp(rp, a->row_ptr, sizeof rp), 0);
    cr_assert_eq(memcmp(ci, a->col_idx, sizeof ci), 0);
    cr_assert_eq(memcmp(v, a->values, sizeof v), 0);
    cr_assert(gcn_csr_is_symmetric(csr));
    gcn_csr_free(&csr);
    gcn_graph_free(&g);
    gcn_graph_free(&a);
    gcn_ctx_free(&ctx);
}
