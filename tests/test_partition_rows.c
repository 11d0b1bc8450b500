/* One rank's rows (datasets/partition.c): the local block times [own rows;
 * halo rows] is the global product's rows, send lists match the receivers'
 * halos, directed graphs, empty parts, argument errors. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

/* A directed R-MAT graph with small integer values in [-3, 3] \ {0}, so
 * that products with integer features are exact in float. */
static gcn_graph *rmat_valued(gcn_ctx *ctx, int32_t n, int64_t m)
{
    gcn_graph *g = NULL;
    cr_assert_eq(gcn_graph_rmat(ctx, &g, n, m, 0.57, 0.19, 0.19), GCN_OK, "%s",
                 gcn_last_error(ctx));
    g->values = malloc(((size_t)g->nnz + 1) * sizeof *g->values);
    for (int32_t e = 0; e < g->nnz; e++)
        g->values[e] = (float)((e * 7 % 6) - 3 + (e * 7 % 6 >= 3));
    return g;
}

/* Y = A X on the host, X [n_cols, f] row-major; A's values NULL mean 1. */
static void spmm(const gcn_graph *a, const float *x, int f, float *y)
{
    for (int32_t i = 0; i < a->n_nodes; i++)
        for (int c = 0; c < f; c++) {
            float s = 0.0f;
            for (int32_t e = a->row_ptr[i]; e < a->row_ptr[i + 1]; e++)
                s += (a->values ? a->values[e] : 1.0f) * x[(int64_t)a->col_idx[e] * f + c];
            y[(int64_t)i * f + c] = s;
        }
}

/* Structure of one rank's rows against g: own columns first and every row
 * ascending, halo ascending, owned by the ranks recv_off says, each halo
 * node referenced, the cut counted. */
static void check_structure(const gcn_graph *g, const int32_t *ptr, const gcn_part_rows *p)
{
    const gcn_graph *l = p->local;
    cr_assert_eq(p->row0, ptr[p->rank]);
    cr_assert_eq(p->n_local, ptr[p->rank + 1] - ptr[p->rank]);
    cr_assert_eq(p->n_cols, p->n_local + p->n_halo);
    cr_assert_eq(l->n_nodes, p->n_local);
    cr_assert_eq(l->nnz, g->row_ptr[p->row0 + p->n_local] - g->row_ptr[p->row0]);
    cr_assert_eq(l->values != NULL, g->values != NULL);
    int32_t *used = calloc((size_t)p->n_halo + 1, sizeof *used);
    int64_t cut = 0;
    for (int32_t i = 0; i < l->n_nodes; i++)
        for (int32_t e = l->row_ptr[i]; e < l->row_ptr[i + 1]; e++) {
            int32_t c = l->col_idx[e];
            cr_assert(c >= 0 && c < p->n_cols);
            cr_assert(e == l->row_ptr[i] || c > l->col_idx[e - 1], "row %d not ascending", i);
            if (c >= p->n_local) {
                used[c - p->n_local]++;
                cut++;
            }
        }
    cr_assert_eq(p->local_nnz_cut, cut);
    cr_assert_eq(p->recv_off[0], 0);
    cr_assert_eq(p->recv_off[p->n_ranks], p->n_halo);
    cr_assert_eq(p->recv_off[p->rank], p->recv_off[p->rank + 1], "a rank receives from itself");
    for (int q = 0; q < p->n_ranks; q++)
        for (int64_t h = p->recv_off[q]; h < p->recv_off[q + 1]; h++) {
            cr_assert(p->halo_ids[h] >= ptr[q] && p->halo_ids[h] < ptr[q + 1]);
            cr_assert(h == 0 || p->halo_ids[h] > p->halo_ids[h - 1]);
            cr_assert_gt(used[h], 0, "halo node %d referenced by no row", p->halo_ids[h]);
        }
    cr_assert_eq(p->send_off[0], 0);
    cr_assert_eq(p->send_off[p->rank], p->send_off[p->rank + 1], "a rank sends to itself");
    free(used);
}

/* For every rank of g cut at ptr: the structure, the local product over
 * [own rows; halo rows] against the global product (exact: integers), and
 * the send lists of every rank to every other against the receiver's halo. */
static void check_ranks(gcn_ctx *ctx, const gcn_graph *g, const int32_t *ptr, int n_ranks)
{
    enum { F = 3 };
    int32_t n = g->n_nodes;
    float *x = malloc(((size_t)n * F + 1) * sizeof *x);
    float *y = malloc(((size_t)n * F + 1) * sizeof *y);
    for (int64_t k = 0; k < (int64_t)n * F; k++)
        x[k] = (float)((k * 37 % 17) - 8);
    spmm(g, x, F, y);
    gcn_part_rows **p = calloc((size_t)n_ranks, sizeof *p);
    for (int r = 0; r < n_ranks; r++) {
        cr_assert_eq(gcn_partition_rows(ctx, g, ptr, n_ranks, r, &p[r]), GCN_OK, "%s",
                     gcn_last_error(ctx));
        check_structure(g, ptr, p[r]);
        float *xl = malloc(((size_t)p[r]->n_cols * F + 1) * sizeof *xl);
        float *yl = malloc(((size_t)p[r]->n_local * F + 1) * sizeof *yl);
        memcpy(xl, x + (int64_t)p[r]->row0 * F, (size_t)p[r]->n_local * F * sizeof *xl);
        for (int32_t h = 0; h < p[r]->n_halo; h++)
            memcpy(xl + ((int64_t)p[r]->n_local + h) * F, x + (int64_t)p[r]->halo_ids[h] * F,
                   F * sizeof *xl);
        spmm(p[r]->local, xl, F, yl);
        cr_assert_arr_eq(yl, y + (int64_t)p[r]->row0 * F, (size_t)p[r]->n_local * F * sizeof *yl,
                         "rank %d's rows differ from the global product", r);
        free(xl);
        free(yl);
    }
    for (int r = 0; r < n_ranks; r++)
        for (int q = 0; q < n_ranks; q++) {
            int64_t s0 = p[r]->send_off[q], n_send = p[r]->send_off[q + 1] - s0;
            int64_t h0 = p[q]->recv_off[r], n_recv = p[q]->recv_off[r + 1] - h0;
            cr_assert_eq(n_send, n_recv, "rank %d sends %lld rows to %d, which expects %lld", r,
                         (long long)n_send, q, (long long)n_recv);
            for (int64_t k = 0; k < n_send; k++)
                cr_assert_eq(p[r]->row0 + p[r]->send_rows[s0 + k], p[q]->halo_ids[h0 + k]);
        }
    for (int r = 0; r < n_ranks; r++)
        gcn_part_rows_free(&p[r]);
    cr_assert_null(p[0]);
    gcn_part_rows_free(&p[0]);
    free(p);
    free(x);
    free(y);
}

Test(partition_rows, directed_rmat_cut_by_parts_reproduces_the_global_product)
{
    gcn_ctx *ctx = test_cpu_ctx(31);
    gcn_graph *g = rmat_valued(ctx, 2000, 12000), *p = NULL;
    cr_assert_not(gcn_graph_is_symmetric(g));
    const char *specs[] = {"parts:1", "parts:2", "parts:3", "parts:7:nnz"};
    for (int s = 0; s < 4; s++) {
        gcn_reorder_opts o;
        gcn_reorder *r = NULL;
        cr_assert_eq(gcn_reorder_parse(ctx, specs[s], &o), GCN_OK);
        cr_assert_eq(gcn_reorder_compute(ctx, g, &o, &r), GCN_OK, "%s", gcn_last_error(ctx));
        cr_assert_eq(gcn_graph_permute(ctx, g, r, &p), GCN_OK);
        check_ranks(ctx, p, r->part_ptr[0], r->n_parts[0]);
        gcn_graph_free(&p);
        gcn_reorder_free(&r);
    }
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

/* Blocks cut by hand, empty ones among them (first, middle, last), on a
 * graph with values and on one without. */
Test(partition_rows, hand_cut_blocks_with_empty_parts)
{
    gcn_ctx *ctx = test_cpu_ctx(32);
    gcn_graph *g = rmat_valued(ctx, 300, 2000);
    const int32_t cuts[][7] = {{0, 0, 120, 120, 121, 300, 300}, {0, 300, 300, 300, 300, 300, 300},
                               {0, 0, 0, 0, 0, 0, 300}, {0, 50, 100, 150, 200, 250, 300}};
    for (int k = 0; k < 4; k++)
        check_ranks(ctx, g, cuts[k], 6);
    free(g->values);
    g->values = NULL;
    check_ranks(ctx, g, cuts[0], 6);
    gcn_part_rows *p = NULL;
    cr_assert_eq(gcn_partition_rows(ctx, g, cuts[0], 6, 2, &p), GCN_OK);
    cr_assert_eq(p->n_local + p->n_halo + p->local->nnz, 0, "an empty part reads nothing");
    for (int q = 0; q < 6; q++)
        cr_assert_eq(p->send_off[q + 1], 0, "an empty part sends nothing");
    gcn_part_rows_free(&p);
    /* A graph of no nodes, one rank. */
    gcn_graph *empty = NULL;
    cr_assert_eq(gcn_graph_from_coo(ctx, &empty, 0, 0, NULL, NULL), GCN_OK);
    check_ranks(ctx, empty, (const int32_t[]){0, 0}, 1);
    gcn_graph_free(&empty);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

/* In a symmetric matrix what rank 0 sends rank 1 is also visible from its
 * own rows: exactly its rows with an entry in rank 1's block. */
Test(partition_rows, symmetric_graph_sends_the_rows_with_cut_entries)
{
    gcn_ctx *ctx = test_cpu_ctx(33);
    gcn_graph *d = rmat_valued(ctx, 500, 3000), *g = NULL;
    cr_assert_eq(gcn_graph_symmetrize(ctx, d, &g), GCN_OK);
    const int32_t ptr[] = {0, 124, 248, 372, 500};
    check_ranks(ctx, g, ptr, 4);
    gcn_part_rows *a = NULL;
    cr_assert_eq(gcn_partition_rows(ctx, g, ptr, 4, 0, &a), GCN_OK);
    int64_t k = a->send_off[1];
    for (int32_t i = 0; i < a->n_local; i++) {
        bool cut = false;
        for (int32_t e = a->local->row_ptr[i]; e < a->local->row_ptr[i + 1]; e++) {
            int32_t c = a->local->col_idx[e];
            cut |= c >= a->n_local && a->halo_ids[c - a->n_local] >= 124 &&
                   a->halo_ids[c - a->n_local] < 248;
        }
        if (cut)
            cr_assert(k < a->send_off[2] && a->send_rows[k++] == i, "row %d not sent", i);
    }
    cr_assert_eq(k, a->send_off[2]);
    cr_assert_gt(k, a->send_off[1]);
    gcn_part_rows_free(&a);
    gcn_graph_free(&d);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}

Test(partition_rows, argument_errors_are_one_line)
{
    gcn_ctx *ctx = test_cpu_ctx(34);
    gcn_graph *g = rmat_valued(ctx, 40, 100);
    const int32_t good[] = {0, 20, 40}, from1[] = {1, 20, 40}, short_[] = {0, 20, 39},
                  down[] = {0, 30, 20, 40};
    gcn_part_rows *p = NULL;
    struct {
        const int32_t *ptr;
        int n_ranks, rank;
        const char *why;
    } bad[] = {{good, 2, -1, "rank -1 of 2 ranks"},  {good, 2, 2, "rank 2 of 2 ranks"},
               {good, 0, 0, "rank 0 of 0 ranks"},    {from1, 2, 0, "runs from 1 to 40"},
               {short_, 2, 0, "runs from 0 to 39"},  {down, 3, 0, "decreases at rank 1"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        cr_assert_eq(gcn_partition_rows(ctx, g, bad[k].ptr, bad[k].n_ranks, bad[k].rank, &p),
                     GCN_ERR_INVALID_ARG, "case %zu", k);
        const char *msg = gcn_last_error(ctx);
        cr_assert(strstr(msg, "partition: ") && strstr(msg, bad[k].why) && !strchr(msg, '\n'),
                  "%s", msg);
        cr_assert_null(p);
    }
    cr_assert_eq(gcn_partition_rows(ctx, NULL, good, 2, 0, &p), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_partition_rows(ctx, g, NULL, 2, 0, &p), GCN_ERR_INVALID_ARG);
    cr_assert_eq(gcn_partition_rows(ctx, g, good, 2, 0, NULL), GCN_ERR_INVALID_ARG);
    g->col_idx[0] = 40; /* out of range: the graph is checked too */
    cr_assert_eq(gcn_partition_rows(ctx, g, good, 2, 0, &p), GCN_ERR_FORMAT);
    cr_assert_null(p);
    gcn_part_rows_free(&p);
    gcn_part_rows_free(NULL);
    gcn_graph_free(&g);
    gcn_ctx_free(&ctx);
}
