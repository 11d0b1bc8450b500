/* AdaptGear on the CPU: community levels on matrices, the intra/inter split
 * (intra + inter = A exactly), the host planning of the subgraph kernels,
 * the call sites of the selector through gcn_spmm, and choices files (round
 * trip, another graph, a damaged file). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "kernels/adaptgear/plan.h"
#include "kernels/spmm/internal.h"
#include "kernels/select/sites.h"

/* A 6-node matrix with parts {0, 1, 2} {3} {4, 5}:
 *   row 0: 0 1 4    row 1: 1 2    row 2: 0 3    row 3: 3 5    row 4: 5    row 5: 4 0 */
static const int32_t rp6[] = {0, 3, 5, 7, 9, 10, 12};
static const int32_t ci6[] = {0, 1, 4, 1, 2, 0, 3, 3, 5, 5, 4, 0};
static const float va6[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
static const int32_t parts6[] = {0, 3, 4, 6};

static gcn_csr *six(gcn_ctx *ctx, bool with_parts)
{
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &a, 6, 6, 12, rp6, ci6, va6), GCN_OK);
    const int32_t size = 2, n_parts = 3;
    const int32_t *pp = parts6;
    if (with_parts)
        cr_assert_eq(gcn_csr_set_communities(ctx, a, 1, &size, &n_parts, &pp), GCN_OK, "%s",
                     gcn_last_error(ctx));
    return a;
}

Test(adaptgear, split_is_exact)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_csr *a = six(ctx, true), *in = NULL, *out = NULL;
    cr_assert_eq(gcn_csr_community_levels(a), 1);
    cr_assert_eq(gcn_csr_community_size(a, 0), 2);
    cr_assert_eq(gcn_csr_split(ctx, a, 0, &in, &out), GCN_OK);
    int32_t rp_in[7], rp_out[7], ci_in[12], ci_out[12];
    float v_in[12], v_out[12];
    cr_assert_eq(in->nnz + out->nnz, 12);
    cr_assert_eq(gcn_csr_to_host(ctx, in, rp_in, ci_in, v_in), GCN_OK);
    cr_assert_eq(gcn_csr_to_host(ctx, out, rp_out, ci_out, v_out), GCN_OK);
    /* Hand-computed: intra = {0:0,1  1:1,2  2:0  3:3  4:5  5:4}. */
    const int32_t want_rp[] = {0, 2, 4, 5, 6, 7, 8}, want_ci[] = {0, 1, 1, 2, 0, 3, 5, 4};
    cr_assert_arr_eq(rp_in, want_rp, sizeof want_rp);
    cr_assert_arr_eq(ci_in, want_ci, sizeof want_ci);
    /* Each row of A is its intra entries followed by nothing else than its
     * inter entries, values moving with their columns: merge and compare. */
    for (int i = 0; i < 6; i++) {
        int n = 0;
        for (int32_t e = rp6[i]; e < rp6[i + 1]; e++) {
            bool found = false;
            for (int32_t k = rp_in[i]; k < rp_in[i + 1]; k++)
                found |= ci_in[k] == ci6[e] && v_in[k] == va6[e];
            for (int32_t k = rp_out[i]; k < rp_out[i + 1]; k++)
                found |= ci_out[k] == ci6[e] && v_out[k] == va6[e];
            cr_assert(found, "row %d entry %d lost", i, e);
            n++;
        }
        cr_assert_eq(n, (rp_in[i + 1] - rp_in[i]) + (rp_out[i + 1] - rp_out[i]));
    }
    cr_assert(gcn_communities_of(in)->block_diagonal);
    cr_assert_not(gcn_communities_of(a)->block_diagonal);
    gcn_csr_free(&in);
    gcn_csr_free(&out);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

Test(adaptgear, communities_are_checked)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_csr *a = six(ctx, false), *r = NULL;
    const int32_t size = 2, three = 3, bad_end[] = {0, 3, 4, 5}, bad_order[] = {0, 4, 3, 6};
    const int32_t *pp = bad_end;
    cr_assert_eq(gcn_csr_set_communities(ctx, a, 1, &size, &three, &pp), GCN_ERR_INVALID_ARG);
    pp = bad_order;
    cr_assert_eq(gcn_csr_set_communities(ctx, a, 1, &size, &three, &pp), GCN_ERR_INVALID_ARG);
    int32_t rrp[] = {0, 1, 2}, rci[] = {0, 2};
    cr_assert_eq(gcn_csr_create(ctx, &r, 2, 3, 2, rrp, rci, NULL), GCN_OK);
    const int32_t two = 1, whole[] = {0, 2};
    pp = whole;
    cr_assert_eq(gcn_csr_set_communities(ctx, r, 1, &size, &two, &pp), GCN_ERR_SHAPE);
    gcn_csr *in = NULL, *out = NULL;
    cr_assert_eq(gcn_csr_split(ctx, a, 0, &in, &out), GCN_ERR_INVALID_ARG, "no level yet");
    gcn_csr_free(&r);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

/* ---- host planning ------------------------------------------------------ */

Test(adaptgear, smem_tiles_and_tasks)
{
    cr_assert_eq(gcn_smem_tile(256, 4, 256, 48 * 1024), 48);
    cr_assert_eq(gcn_smem_tile(256, 4, 16, 48 * 1024), 128);
    cr_assert_eq(gcn_smem_tile(3, 1, 16, 48 * 1024), 3);
    cr_assert_eq(gcn_smem_tile(64, 4, 100000, 48 * 1024), 4, "at least one vector");
    cr_assert_eq(gcn_smem_task_rows(48, 48 * 1024), 256);
    cr_assert_eq(gcn_smem_block_bytes(128, 4, 96, 227 * 1024), 48 * 1024, "96 x 128 fits 48 KB");
    cr_assert_eq(gcn_smem_block_bytes(128, 4, 280, 227 * 1024), 280 * 128 * 4);
    cr_assert_eq(gcn_smem_block_bytes(256, 4, 280, 227 * 1024), 280 * 128 * 4, "tile 32 vec");
    cr_assert_eq(gcn_smem_block_bytes(128, 4, 4096, 227 * 1024), 227 * 1024, "the limit");
    cr_assert_eq(gcn_smem_block_bytes(128, 4, 280, 40 * 1024), 48 * 1024, "no opt-in");
    cr_assert_eq(gcn_smem_block_bytes(3, 1, 4096, 227 * 1024), 48 * 1024);
    cr_assert(gcn_smem_useful(256, 256, 48 * 1024));
    cr_assert_not(gcn_smem_useful(256, 4200, 48 * 1024), "2-column tiles");
    cr_assert(gcn_smem_useful(3, 4000, 48 * 1024));
    const int32_t pp[] = {0, 16, 16, 40, 41, 300, 310};
    cr_assert_eq(gcn_smem_ref_rows(pp, 6, 16), 24, "259 is over twice 16");
    cr_assert_eq(gcn_smem_pack_rows(16, 24, 256), 64);
    cr_assert_eq(gcn_smem_pack_rows(8, 240, 256), 240, "the reference part stays whole");
    cr_assert_eq(gcn_smem_pack_rows(64, 24, 100), 100);
    int32_t tasks[16][4];
    int32_t n = gcn_smem_tasks(pp, 6, 100, 200, tasks);
    /* {0,41 staged} {41,141} {141,241} {241,300} unstaged, {300,310 staged} */
    const int32_t want[5][4] = {{0, 41, 1, 0}, {41, 141, 0, 0}, {141, 241, 0, 0},
                                {241, 300, 0, 0}, {300, 310, 1, 0}};
    cr_assert_eq(n, 5);
    cr_assert_arr_eq(tasks, want, sizeof want);
    cr_assert_leq(n, gcn_smem_max_tasks(6, 310, 100));
    n = gcn_smem_tasks(pp, 6, 30, 300, tasks);
    /* {0,16} apart from {16,41} (16 + 24 > 30), {41,300} staged alone, {300,310} */
    const int32_t want2[4][4] = {{0, 16, 1, 0}, {16, 41, 1, 0}, {41, 300, 1, 0},
                                 {300, 310, 1, 0}};
    cr_assert_eq(n, 4);
    cr_assert_arr_eq(tasks, want2, sizeof want2);
}

Test(adaptgear, smem_row_meta)
{
    const int32_t tasks[2][4] = {{0, 3, 1, 0}, {3, 6, 0, 0}};
    int32_t meta[6][4];
    for (int k = 0; k < 2; k++)
        for (int32_t i = tasks[k][0]; i < tasks[k][1]; i++)
            gcn_smem_row_meta(rp6, ci6, tasks[k][0], tasks[k][1], tasks[k][2] != 0, 2, false, i,
                              meta[i]);
    const int32_t want[6][4] = {{-1, 0, 3, 3}, {3, 3, 5, 5}, {5, 5, 6, 7},
                                {7, 7, 7, 9}, {9, 9, 9, 10}, {10, 10, 10, 12}};
    cr_assert_arr_eq(meta, want, sizeof want);
    /* block diagonal: a staged row's entries all lie inside, no search */
    int32_t m[4];
    gcn_smem_row_meta(rp6, ci6, 0, 3, true, 2, true, 2, m);
    cr_assert_arr_eq(m, ((int32_t[]){5, 5, 7, 7}), sizeof m);
}

Test(adaptgear, dense_blocks)
{
    const int32_t rp[] = {0, 2, 3, 4}, ci[] = {0, 1, 1, 2}, pp[] = {0, 2, 3};
    const float v[] = {1, 2, 3, 4};
    cr_assert_eq(gcn_dense_floats(pp, 2), 5);
    cr_assert(gcn_dense_worth(5, 4));
    cr_assert_not(gcn_dense_worth(1000, 4));
    int64_t off[3];
    float d[5] = {0};
    gcn_dense_offsets(pp, 2, off);
    for (int p = 0; p < 2; p++)
        for (int32_t i = pp[p]; i < pp[p + 1]; i++)
            gcn_dense_fill_row(rp, ci, v, i, pp[p], pp[p + 1] - pp[p], d + off[p]);
    const float want[] = {1, 2, 0, 3, 4};
    cr_assert_arr_eq(d, want, sizeof want);
    cr_assert_eq(off[2], 5);
    int32_t tasks[4][2];
    cr_assert_eq(gcn_dense_tasks(pp, 2, 1, tasks), 3);
    cr_assert_eq(tasks[2][0], 1);
    cr_assert_eq(tasks[2][1], 2);
}

Test(adaptgear, inter_tasks)
{
    int32_t tasks[8][4];
    int64_t n = gcn_inter_tasks(rp6, 6, 4, 3, tasks);
    /* rows 0..1 (5 nz > 4 stops), 1..3, 3..6 capped by 3 rows */
    cr_assert_eq(n, gcn_inter_tasks(rp6, 6, 4, 3, NULL));
    int32_t covered = 0;
    for (int64_t k = 0; k < n; k++) {
        cr_assert_eq(tasks[k][0], covered);
        cr_assert(tasks[k][3] - tasks[k][2] <= 4 || tasks[k][1] - tasks[k][0] == 1);
        cr_assert_leq(tasks[k][1] - tasks[k][0], 3);
        covered = tasks[k][1];
    }
    cr_assert_eq(covered, 6);
    const int32_t hub[] = {0, 1, 10, 11};
    cr_assert_eq(gcn_inter_tasks(hub, 3, 4, 8, tasks), 3, "the long row stands alone");
    cr_assert_eq(tasks[1][0], 1);
    cr_assert_eq(tasks[1][1], 2);
}

/* ---- call sites and choices files ------------------------------------------- */

static void product(gcn_ctx *ctx, const gcn_csr *a)
{
    float xs[6] = {1, -2, 3, 0.5f, 4, -1};
    gcn_tensor *x = test_tensor(ctx, xs, 6, 1), *y = NULL;
    cr_assert_eq(gcn_spmm(ctx, a, x, &y), GCN_OK, "%s", gcn_last_error(ctx));
    float *got = test_read(ctx, y);
    for (int i = 0; i < 6; i++) {
        double want = 0;
        for (int32_t e = rp6[i]; e < rp6[i + 1]; e++)
            want += va6[e] * xs[ci6[e]];
        cr_assert_float_eq(got[i], want, 1e-5);
    }
    free(got);
    gcn_tensor_free(&x);
    gcn_tensor_free(&y);
}

Test(adaptgear, cpu_site_locks_its_one_kernel)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_csr *a = six(ctx, true);
    product(ctx, a);
    gcn_spmm_site_info s;
    cr_assert_eq(gcn_spmm_sites(a, &s, 1), 1, "one site: A at width 1");
    cr_assert_not(s.locked, "a product made once is not profiled");
    product(ctx, a);
    gcn_spmm_sites(a, &s, 1);
    cr_assert(s.locked);
    cr_assert_str_eq(s.chosen, "cpu");
    cr_assert_eq(s.n_candidates, 1, "no CPU subgraph kernels");
    cr_assert_eq(gcn_spmm_set_kernel(ctx, "cpu@2"), GCN_OK, "checked at the first product");
    gcn_tensor *x = NULL, *y = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &x, 6, 2), GCN_OK);
    cr_assert_eq(gcn_spmm(ctx, a, x, &y), GCN_ERR_NOT_FOUND);
    cr_assert(strstr(gcn_last_error(ctx), "cpu@2"));
    cr_assert_eq(gcn_spmm_set_kernel(ctx, "nonesuch"), GCN_ERR_NOT_FOUND);
    gcn_tensor_free(&x);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

/* Runs a timed sample holds: enough for 2^26 multiply-adds, 1 to 8.  The
 * six-node matrix has 12 non-zeros. */
Test(adaptgear, sample_runs_cover_the_launch)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_csr *a = six(ctx, false);
    cr_assert_eq(gcn_spmm_sample_runs(a, 1), 8, "a tiny product: the most runs");
    cr_assert_eq(gcn_spmm_sample_runs(a, (1 << 23) / 12 + 1), 8, "8 runs reach 2^26");
    cr_assert_eq(gcn_spmm_sample_runs(a, (1 << 24) / 12 + 1), 4, "just over 2^24: 4 runs");
    cr_assert_eq(gcn_spmm_sample_runs(a, (1 << 25) / 12 + 1), 2);
    cr_assert_eq(gcn_spmm_sample_runs(a, (1 << 26) / 12 + 1), 1, "over 2^26: one run");
    cr_assert_eq(gcn_spmm_sample_runs(a, INT32_MAX), 1, "no overflow");
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

/* Loads choices kept in memory (len bytes at mem) for the one matrix m. */
static gcn_status load_choices(gcn_ctx *ctx, char *mem, size_t len, const gcn_csr *m,
                            const char *tag)
{
    FILE *f = fmemopen(mem, len, "r");
    cr_assert_not_null(f);
    gcn_status st = gcn_spmm_choices_load(ctx, f, "memory", &m, &tag, 1);
    fclose(f);
    return st;
}

/* The choices of the one matrix m, tagged tag, as text in memory (*mem, *len;
 * the caller frees *mem). */
static void save_choices(gcn_ctx *ctx, const gcn_csr *m, const char *tag, char **mem, size_t *len)
{
    *mem = NULL;
    *len = 0;
    FILE *f = open_memstream(mem, len);
    cr_assert_not_null(f);
    cr_assert_eq(gcn_spmm_choices_save(ctx, f, &m, &tag, 1), GCN_OK, "%s", gcn_last_error(ctx));
    fclose(f);
}

/* ---- the prior row order ------------------------------------------------- */

/* The rows the kernel below visited, in order (its last product). */
static int32_t visited[6];

static bool any_matrix(const gcn_csr *a, int feat)
{
    (void)a;
    (void)feat;
    return true;
}

static gcn_status no_plan(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    (void)ctx;
    (void)a;
    (void)feat;
    *plan = NULL;
    return GCN_OK;
}

/* y (+)= A x row by row, in the matrix's visit order when it has one. */
static gcn_status in_order_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x,
                               float *y, int feat, bool accumulate)
{
    (void)ctx;
    (void)plan;
    const int32_t *rp = gcn_csr_row_ptr(a), *ci = gcn_csr_col_idx(a);
    const int32_t *visit = gcn_csr_visit_order(a);
    const float *v = gcn_csr_values(a);
    for (int32_t k = 0; k < gcn_csr_rows(a); k++) {
        int32_t i = visit ? visit[k] : k;
        visited[k] = i;
        for (int c = 0; c < feat; c++) {
            float s = accumulate ? y[(int64_t)i * feat + c] : 0.0f;
            for (int32_t e = rp[i]; e < rp[i + 1]; e++)
                s += v[e] * x[(int64_t)ci[e] * feat + c];
            y[(int64_t)i * feat + c] = s;
        }
    }
    return GCN_OK;
}

static const gcn_spmm_impl in_order = {
    .size = sizeof(gcn_spmm_impl),
    .name = "in_order",
    .device = GCN_DEVICE_CPU,
    .deterministic = true,
    .roles = GCN_SPMM_ROLE_WHOLE | GCN_SPMM_ROLE_PRIOR,
    .supports = any_matrix,
    .plan = no_plan,
    .run = in_order_run,
};

static bool has_candidate(const gcn_spmm_site *t, const char *name)
{
    for (int c = 0; c < gcn_spmm_site_candidates(t); c++)
        if (!strcmp(gcn_spmm_site_candidate_name(t, c), name))
            return true;
    return false;
}

/* Without a kernel that can follow it, a prior order adds no candidate
 * and builds no view. */
Test(adaptgear, prior_order_without_a_kernel_for_it)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_csr *a = six(ctx, true);
    const int32_t prior[] = {4, 0, 5, 2, 1, 3};
    cr_assert_eq(gcn_csr_set_prior_order(ctx, a, prior), GCN_OK, "%s", gcn_last_error(ctx));
    product(ctx, a);
    product(ctx, a);
    gcn_spmm_site_info s;
    cr_assert_eq(gcn_spmm_sites(a, &s, 1), 1);
    cr_assert_eq(s.n_candidates, 1, "cpu only");
    const gcn_spmm_state *state = gcn_csr_slot_get(a, GCN_CSR_SLOT_SITES);
    cr_assert_null(state->prior);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

/* A matrix with a prior order adds "<kernel>@prior" for each kernel with
 * GCN_SPMM_ROLE_PRIOR, which then visits the rows in that order; the
 * order is checked, copied to the transpose, and fixed at the first
 * product. */
Test(adaptgear, prior_order_is_visited_and_checked)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    cr_assert_eq(gcn_spmm_register(ctx, &in_order), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_csr *a = six(ctx, true), *r = NULL;
    const int32_t prior[] = {4, 0, 5, 2, 1, 3}, repeated[] = {4, 0, 5, 2, 4, 3};
    const int32_t outside[] = {4, 0, 5, 2, 6, 3};
    cr_assert_eq(gcn_csr_set_prior_order(ctx, a, repeated), GCN_ERR_INVALID_ARG);
    cr_assert(strstr(gcn_last_error(ctx), "entry 4 (4)"), "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_csr_set_prior_order(ctx, a, outside), GCN_ERR_INVALID_ARG);
    int32_t rrp[] = {0, 1, 2}, rci[] = {0, 2};
    cr_assert_eq(gcn_csr_create(ctx, &r, 2, 3, 2, rrp, rci, NULL), GCN_OK);
    cr_assert_eq(gcn_csr_set_prior_order(ctx, r, prior), GCN_ERR_SHAPE);
    cr_assert_eq(gcn_csr_set_prior_order(ctx, a, prior), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_null(gcn_csr_visit_order(a), "the matrix itself keeps its natural order");
    cr_assert_not_null(gcn_communities_of(gcn_csr_transpose(a))->prior_order,
                       "the transpose has it too");

    cr_assert_eq(gcn_spmm_set_kernel(ctx, "in_order@prior"), GCN_OK);
    product(ctx, a);
    cr_assert_arr_eq(visited, prior, sizeof prior);
    cr_assert_eq(gcn_csr_set_prior_order(ctx, a, NULL), GCN_ERR_STATE);

    gcn_spmm_site *t = NULL;
    cr_assert_eq(gcn_spmm_set_kernel(ctx, "auto"), GCN_OK);
    product(ctx, a);
    product(ctx, a); /* the second product adds the candidates after the whole-matrix ones */
    cr_assert_eq(gcn_spmm_site_get(ctx, a, 1, GCN_DTYPE_FP32, "auto", &t), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert(has_candidate(t, "in_order@prior") && has_candidate(t, "in_order") &&
              has_candidate(t, "cpu"));
    cr_assert_not(has_candidate(t, "cpu@prior"), "the cpu kernel does not follow an order");

    /* a choices file naming the strategy locks it on a matrix with the order
     * (the header as saved for this matrix, then a site line written here) */
    char *mem, text[1024];
    size_t len;
    save_choices(ctx, a, "gcn", &mem, &len);
    cr_assert_null(strstr(mem, "site "), "still profiling: no site line yet");
    snprintf(text, sizeof text, "%ssite gcn A 1 fp32 auto in_order@prior\n", mem);
    free(mem);
    gcn_csr *c = six(ctx, true);
    cr_assert_eq(gcn_csr_set_prior_order(ctx, c, prior), GCN_OK);
    cr_assert_eq(load_choices(ctx, text, strlen(text), c, "gcn"), GCN_OK, "%s",
                 gcn_last_error(ctx));
    gcn_spmm_site_info info;
    cr_assert_eq(gcn_spmm_sites(c, &info, 1), 1);
    cr_assert(info.locked);
    cr_assert_str_eq(info.chosen, "in_order@prior");
    memset(visited, 0, sizeof visited);
    product(ctx, c);
    cr_assert_arr_eq(visited, prior, sizeof prior);
    gcn_csr_free(&c);

    gcn_csr *b = six(ctx, true);
    cr_assert_eq(gcn_spmm_set_kernel(ctx, "in_order@prior"), GCN_OK);
    gcn_tensor *x = NULL, *y = NULL;
    cr_assert_eq(gcn_tensor_zeros(ctx, &x, 6, 1), GCN_OK);
    cr_assert_eq(gcn_spmm(ctx, b, x, &y), GCN_ERR_NOT_FOUND, "no prior order, no strategy");
    cr_assert(strstr(gcn_last_error(ctx), "in_order@prior"), "%s", gcn_last_error(ctx));
    gcn_csr *d = six(ctx, true);
    cr_assert_eq(load_choices(ctx, text, strlen(text), d, "gcn"), GCN_ERR_NOT_FOUND,
                 "choices naming it, for a matrix without the order");
    gcn_csr_free(&d);
    gcn_tensor_free(&x);
    gcn_csr_free(&b);
    gcn_csr_free(&r);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}


/* gcn_spmm_self's sites (on the A + alpha I it keeps) go to choices files as
 * "A+<alpha>I" and come back on a fresh matrix, which builds its own. */
Test(adaptgear, choices_file_keeps_self_term_sites)
{
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_csr *a = six(ctx, true);
    float xs[6] = {1, -2, 3, 0.5f, 4, -1};
    gcn_tensor *x = test_tensor(ctx, xs, 6, 1), *y = NULL;
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(gcn_spmm_self(ctx, a, x, 1.5f, &y), GCN_OK, "%s", gcn_last_error(ctx));
        gcn_tensor_free(&y);
    }
    char *mem;
    size_t len;
    save_choices(ctx, a, "raw", &mem, &len);
    cr_assert(strstr(mem, "site raw A+1.5I 1 fp32 auto cpu"), "%s", mem);
    gcn_csr *b = six(ctx, true);
    cr_assert_eq(load_choices(ctx, mem, len, b, "raw"), GCN_OK, "%s", gcn_last_error(ctx));
    gcn_spmm_site_info s;
    cr_assert_eq(gcn_spmm_sites(b, &s, 1), 1);
    cr_assert(s.locked);
    cr_assert_eq(s.profiled_calls, 0);
    cr_assert_float_eq(s.self_alpha, 1.5f, 0.0f);
    cr_assert_eq(gcn_spmm_self(ctx, b, x, 1.5f, &y), GCN_OK, "the loaded site serves the op");
    gcn_tensor_free(&y);
    gcn_csr *c = six(ctx, true);
    char bad[512];
    const char *site = strstr(mem, "site ");
    snprintf(bad, sizeof bad, "%.*ssite raw A+xI 1 fp32 auto cpu\n", (int)(site - mem), mem);
    cr_assert_eq(load_choices(ctx, bad, strlen(bad), c, "raw"), GCN_ERR_FORMAT);
    cr_assert(strstr(gcn_last_error(ctx), "bad site (direction A+xI"), "%s", gcn_last_error(ctx));
    free(mem);
    gcn_tensor_free(&x);
    gcn_csr_free(&c);
    gcn_csr_free(&b);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}

Test(adaptgear, choices_file_round_trip_and_mismatch)
{
    char path[] = "/tmp/gcn-choices-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    gcn_ctx *ctx = test_cpu_ctx(1);
    gcn_csr *a = six(ctx, true);
    product(ctx, a);
    product(ctx, a);
    const gcn_csr *mats[1] = {a};
    const char *tags[1] = {"gcn"};
    cr_assert_eq(gcn_spmm_choices_write(ctx, path, mats, tags, 1), GCN_OK, "%s",
                 gcn_last_error(ctx));
    gcn_csr *b = six(ctx, true);
    mats[0] = b;
    cr_assert_eq(gcn_spmm_choices_read(ctx, path, mats, tags, 1), GCN_OK, "%s",
                 gcn_last_error(ctx));
    gcn_spmm_site_info s;
    cr_assert_geq(gcn_spmm_sites(b, &s, 1), 1);
    cr_assert(s.locked);
    cr_assert_eq(s.profiled_calls, 0);
    cr_assert_str_eq(s.chosen, "cpu");
    char *mem;
    size_t len;
    save_choices(ctx, a, "gcn", &mem, &len);
    gcn_csr *c = six(ctx, true);
    cr_assert_eq(load_choices(ctx, mem, len, c, "gcn"), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_spmm_sites(c, &s, 1), 1);
    cr_assert(s.locked, "choices kept in memory lock the same way");
    gcn_csr_free(&c);
    /* files written under the format's first header (sites without a
     * dtype) still load */
    const char *body = strchr(mem, '\n');
    char old[1024];
    snprintf(old, sizeof old, "gcn-spmm-plan 1%s", body);
    for (char *p; (p = strstr(old, " fp32"));)
        memmove(p, p + 5, strlen(p + 5) + 1);
    free(mem);
    gcn_csr *d = six(ctx, true);
    cr_assert_eq(load_choices(ctx, old, strlen(old), d, "gcn"), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(gcn_spmm_sites(d, &s, 1), 1);
    cr_assert(s.locked);
    gcn_csr_free(&d);
    int32_t rp[] = {0, 1, 2, 3, 4, 5, 6}, ci[] = {0, 1, 2, 3, 4, 5};
    gcn_csr *other = NULL;
    cr_assert_eq(gcn_csr_create(ctx, &other, 6, 6, 6, rp, ci, NULL), GCN_OK);
    mats[0] = other;
    cr_assert_eq(gcn_spmm_choices_read(ctx, path, mats, tags, 1), GCN_ERR_FORMAT);
    cr_assert(strstr(gcn_last_error(ctx), "another graph"), "%s", gcn_last_error(ctx));
    tags[0] = "raw";
    cr_assert_eq(gcn_spmm_choices_read(ctx, path, mats, tags, 1), GCN_ERR_FORMAT);
    cr_assert(strstr(gcn_last_error(ctx), "no choices for matrix 'raw'"));
    FILE *f = fopen(path, "w");
    fputs("something else\n", f);
    fclose(f);
    cr_assert_eq(gcn_spmm_choices_read(ctx, path, mats, tags, 1), GCN_ERR_FORMAT);
    unlink(path);
    cr_assert_eq(gcn_spmm_choices_read(ctx, path, mats, tags, 1), GCN_ERR_IO);
    gcn_csr_free(&other);
    gcn_csr_free(&b);
    gcn_csr_free(&a);
    gcn_ctx_free(&ctx);
}
