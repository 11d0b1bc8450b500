/* Every CUDA SpMM kernel of the registry against a float64 CPU reference, in
 * both directions (A and the stored A^T) and with accumulate, on the real
 * graphs in ../shared/data, an empty matrix, all-empty rows, one row holding
 * half the non-zeros, 1 x 1, rectangular matrices, unsorted then sorted
 * columns, every Accel-GCN degree pattern, short rows, misaligned operands
 * and non-default tuning knobs, at F in {1, 2, 3, 16, 31, 32, 33, 64, 96,
 * 127, 128, 250, 256, 512} and wide F up to 1024.  An element passes when
 * |GPU - ref| <= 1e-5 times the magnitude it sums, sum |a||x| (+ |y0|):
 * float32 summation stays near 1e-7 of that even for 20,000 terms, and
 * cancellation cannot hide behind a norm.  Overwrite runs start from NaN,
 * so an unwritten element fails. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"
#include "spmm_check.h"

#define SHARED_DATA "../shared/data"

static const int all_feats[] = {1, 2, 3, 16, 31, 32, 33, 64, 96, 127, 128, 250, 256, 512};
#define N_ALL_FEATS ((int)(sizeof all_feats / sizeof all_feats[0]))

/* Every kernel, both directions, at the given widths. */
static void check_matrix(gcn_ctx *gpu, const hmat *m, const int *feats, int n_feats,
                         const char *name)
{
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(gpu, &a, m->n_rows, m->n_cols, m->nnz, m->row_ptr, m->col_idx,
                                m->values),
                 GCN_OK, "%s: %s", name, gcn_last_error(gpu));
    hmat t = mat_transpose(m);
    char tname[160];
    snprintf(tname, sizeof tname, "%s (transposed)", name);
    for (int fi = 0; fi < n_feats; fi++) {
        product p;
        product_init(&p, gpu, m, a, feats[fi], 0, name);
        cr_assert_gt(run_all(gpu, &p), 0, "no CUDA SpMM kernel supports %s", name);
        product_free(&p, gpu);
        if (gcn_csr_is_symmetric(a))
            continue;
        product_init(&p, gpu, &t, gcn_csr_transpose(a), feats[fi], 0, tname);
        run_all(gpu, &p);
        product_free(&p, gpu);
    }
    mat_free(&t);
    gcn_csr_free(&a);
}

static void check_all_feats(const hmat *m, const char *name)
{
    gpu_pair g = gpu_pair_open(61, false);
    check_matrix(g.gpu, m, all_feats, N_ALL_FEATS, name);
    gpu_pair_close(&g);
}

/* ---- cases -------------------------------------------------------------- */

Test(gpu_spmm_kernels, empty_matrices)
{
    GPU_REQUIRED();
    int32_t none = 0;
    int32_t zeros[5] = {0, 0, 0, 0, 0};
    hmat shapes[] = {mat_alloc(0, 0, &none), mat_alloc(0, 7, &none), mat_alloc(5, 0, zeros)};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        check_all_feats(&shapes[i], "an empty matrix");
        mat_free(&shapes[i]);
    }
}

Test(gpu_spmm_kernels, all_rows_empty)
{
    GPU_REQUIRED();
    int32_t *deg = calloc(1000, sizeof *deg);
    hmat m = mat_random(1000, 700, deg, true, 1);
    check_all_feats(&m, "all-empty rows");
    mat_free(&m);
    free(deg);
}

Test(gpu_spmm_kernels, one_row_holds_half)
{
    GPU_REQUIRED();
    int32_t *deg = degrees_uniform(3000, 12, 2);
    int64_t rest = 0;
    for (int i = 0; i < 3000; i++)
        rest += i == 1234 ? 0 : deg[i];
    deg[1234] = (int32_t)rest;
    hmat m = mat_random(3000, 40000, deg, true, 3);
    check_all_feats(&m, "one row with half the non-zeros");
    mat_free(&m);
    free(deg);
}

Test(gpu_spmm_kernels, one_by_one)
{
    GPU_REQUIRED();
    int32_t one = 1;
    hmat m = mat_random(1, 1, &one, true, 4);
    check_all_feats(&m, "1 x 1");
    mat_free(&m);
}

Test(gpu_spmm_kernels, rectangular)
{
    GPU_REQUIRED();
    int32_t *deg = degrees_uniform(600, 30, 5);
    deg[7] = 385;
    deg[8] = 1000;
    deg[9] = 2999;
    hmat wide = mat_random(600, 3001, deg, true, 6);
    check_all_feats(&wide, "wide");
    mat_free(&wide);
    free(deg);
}

Test(gpu_spmm_kernels, unsorted_then_sorted_columns)
{
    GPU_REQUIRED();
    int32_t *deg = degrees_uniform(2500, 40, 7);
    deg[100] = 1500;
    hmat m = mat_random(2500, 2000, deg, false, 8);
    check_all_feats(&m, "unsorted columns with repeats");
    for (int32_t i = 0; i < m.n_rows; i++) /* sort each row's (column, value) pairs */
        for (int32_t k = m.row_ptr[i] + 1; k < m.row_ptr[i + 1]; k++)
            for (int32_t j = k; j > m.row_ptr[i] && m.col_idx[j - 1] > m.col_idx[j]; j--) {
                int32_t c = m.col_idx[j];
                float v = m.values[j];
                m.col_idx[j] = m.col_idx[j - 1], m.values[j] = m.values[j - 1];
                m.col_idx[j - 1] = c, m.values[j - 1] = v;
            }
    check_all_feats(&m, "the same columns sorted");
    mat_free(&m);
    free(deg);
}

/* Degrees 0..400 twice each, shuffled: every Accel-GCN partition pattern,
 * degree-run ends, and rows just over the 384 bound. */
static hmat degree_patterns(void)
{
    int32_t n = 802, *deg = malloc((size_t)n * sizeof *deg);
    for (int32_t i = 0; i < n; i++)
        deg[i] = (i * 37) % 401;
    hmat m = mat_random(n, 1500, deg, true, 9);
    free(deg);
    return m;
}

Test(gpu_spmm_kernels, degree_patterns)
{
    GPU_REQUIRED();
    hmat m = degree_patterns();
    check_all_feats(&m, "degrees 0..400");
    mat_free(&m);
}

/* Rows of 0 to 10 non-zeros and two long ones: rowsplit narrows its groups
 * to two rows a warp from 64 columns up (gcn_rowsplit_auto_narrow), and the
 * long rows' pieces run with the narrowed shapes. */
Test(gpu_spmm_kernels, short_rows)
{
    GPU_REQUIRED();
    int32_t n = 5000, *deg = malloc((size_t)n * sizeof *deg);
    for (int32_t i = 0; i < n; i++)
        deg[i] = i % 11;
    deg[7] = 900;
    deg[4321] = 2500;
    hmat m = mat_random(n, 3000, deg, true, 21);
    free(deg);
    check_all_feats(&m, "short rows");
    mat_free(&m);
}

/* Wider than the list above: every kernel must take F up to at least 1024,
 * including widths that are not a multiple of 4 or of a tile. */
Test(gpu_spmm_kernels, wide_features)
{
    GPU_REQUIRED();
    static const int feats[] = {513, 768, 1000, 1024};
    hmat m = degree_patterns();
    gpu_pair g = gpu_pair_open(63, false);
    check_matrix(g.gpu, &m, feats, (int)(sizeof feats / sizeof feats[0]), "degrees 0..400, wide F");
    gpu_pair_close(&g);
    mat_free(&m);
}

/* Accel-GCN's published kernel loses work when 32 ceil(F / 32) does not
 * divide the block's threads (F = 250); scalar lanes with all of F in one
 * tile are the paper's shape (256-thread combined warps), the others the
 * defaults. */
Test(gpu_spmm_kernels, accel_f250)
{
    GPU_REQUIRED();
    const gcn_spmm_impl *accel = gcn_spmm_find(NULL, "accel");
    cr_assert_not_null(accel);
    hmat m = degree_patterns();
    gpu_pair g = gpu_pair_open(62, false);
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(g.gpu, &a, m.n_rows, m.n_cols, m.nnz, m.row_ptr, m.col_idx,
                                m.values), GCN_OK);
    for (int vec = 1; vec <= 4; vec *= 2) {
        char v[16];
        snprintf(v, sizeof v, "%d", vec);
        setenv("GCN_ACCEL_VEC", v, 1);
        setenv("GCN_ACCEL_TILE", vec == 1 ? "100000" : "128", 1);
        for (int f = 249; f <= 251; f++) {
            product p;
            product_init(&p, g.gpu, &m, a, f, 0, "degrees 0..400");
            run_kernel(g.gpu, accel, &p);
            product_free(&p, g.gpu);
        }
    }
    gcn_csr_free(&a);
    gpu_pair_close(&g);
    mat_free(&m);
}

/* x and y one float past an aligned address: vector kernels must fall
 * back to scalar accesses. */
Test(gpu_spmm_kernels, misaligned_operands)
{
    GPU_REQUIRED();
    hmat m = degree_patterns();
    gpu_pair g = gpu_pair_open(63, false);
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(g.gpu, &a, m.n_rows, m.n_cols, m.nnz, m.row_ptr, m.col_idx,
                                m.values), GCN_OK);
    static const int feats[] = {16, 64, 250, 512};
    for (int fi = 0; fi < 4; fi++) {
        product p;
        product_init(&p, g.gpu, &m, a, feats[fi], 1, "degrees 0..400");
        run_all(g.gpu, &p);
        product_free(&p, g.gpu);
    }
    gcn_csr_free(&a);
    gpu_pair_close(&g);
    mat_free(&m);
}

/* Non-default tuning knobs: narrow and widest tiles (the automatic rule
 * keeps rowsplit's tiles to 256 columns or fewer off banded matrices), tiny
 * chunks and costs, other Accel-GCN patterns. */
Test(gpu_spmm_kernels, tuning_knobs)
{
    GPU_REQUIRED();
    static const char *const knobs[][2] = {
        {"GCN_ROWSPLIT_TILE", "32"},      {"GCN_ROWSPLIT_TILE", "512"},
        {"GCN_ROWSPLIT_CHUNK", "5"},
        {"GCN_ROWSPLIT_SORT", "0"},       {"GCN_ROWSPLIT_SORT", "100000"},
        {"GCN_ROWSPLIT_MINBLOCKS", "3"},  {"GCN_ROWSPLIT_MINBLOCKS", "4"},
        {"GCN_ROWSPLIT_NARROW", "2"},     {"GCN_ROWSPLIT_NARROW", "4"},
        {"GCN_ROWSPLIT_SPLIT", "1"},      {"GCN_ROWSPLIT_SPLIT", "2"},
        {"GCN_ROWPACK_UNIT", "32"},       {"GCN_ROWPACK_UNIT", "64"},
        {"GCN_ROWPACK_MINBLOCKS", "4"},
        {"GCN_MERGEPATH_COST", "1"},      {"GCN_MERGEPATH_COST", "997"},
        {"GCN_MERGEPATH_TILE", "64"},     {"GCN_MERGEPATH_VEC", "1"},
        {"GCN_ACCEL_TILE", "64"},         {"GCN_ACCEL_TILE", "100000"},
        {"GCN_ACCEL_BLOCK_WARPS", "8"},   {"GCN_ACCEL_WARP_NZS", "7"},
        {"GCN_SPMM_L2_PERCENT", "1"},
    };
    static const int feats[] = {3, 64, 250, 512};
    hmat m = degree_patterns();
    for (size_t k = 0; k < sizeof knobs / sizeof knobs[0]; k++) {
        setenv(knobs[k][0], knobs[k][1], 1);
        char name[96];
        snprintf(name, sizeof name, "degrees 0..400 with %s=%s", knobs[k][0], knobs[k][1]);
        gpu_pair g = gpu_pair_open(64, false);
        check_matrix(g.gpu, &m, feats, 4, name);
        gpu_pair_close(&g);
        unsetenv(knobs[k][0]);
    }
    mat_free(&m);
}

/* ---- real graphs ---------------------------------------------------------- */

static const char *const real_graphs[] = {
    "cora", "citeseer", "pubmed", "ogbn-arxiv", "blogcatalog", "flickr", "Wiki-Vote",
    "facebook_combined", "CA-HepPh", "p2p-Gnutella25", "as-caida20071105", "email-Enron",
    "soc-BlogCatalog", "ppi", "luxembourg_osm", "delaunay_n16", "3elt",
};

/* The GCN-normalised adjacency of a dataset as a host matrix. */
static hmat load_real(gcn_ctx *cpu, const char *spec)
{
    gcn_dataset_opts o = gcn_dataset_default_opts();
    o.root = SHARED_DATA;
    o.features = "none";
    o.cache = false;
    gcn_dataset *ds = NULL;
    gcn_graph *g = NULL;
    cr_assert_eq(gcn_dataset_load(cpu, &ds, spec, &o), GCN_OK, "%s: %s", spec, gcn_last_error(cpu));
    cr_assert_eq(gcn_graph_gcn_norm(cpu, ds->graph, &g), GCN_OK, "%s", gcn_last_error(cpu));
    hmat m = {g->n_nodes, g->n_nodes, g->nnz, g->row_ptr, g->col_idx, g->values};
    g->row_ptr = NULL, g->col_idx = NULL, g->values = NULL;
    gcn_graph_free(&g);
    gcn_dataset_free(&ds);
    return m;
}

Test(gpu_spmm_kernels, real_graphs, .timeout = 1800)
{
    GPU_REQUIRED();
    struct stat sb;
    if (stat(SHARED_DATA, &sb) != 0)
        cr_skip_test("real data: " SHARED_DATA " absent");
    static const int feats[] = {1, 3, 32, 33, 128, 250};
    gpu_pair g = gpu_pair_open(65, false);
    for (size_t i = 0; i < sizeof real_graphs / sizeof real_graphs[0]; i++) {
        hmat m = load_real(g.cpu, real_graphs[i]);
        check_matrix(g.gpu, &m, feats, (int)(sizeof feats / sizeof feats[0]), real_graphs[i]);
        mat_free(&m);
    }
    gpu_pair_close(&g);
}
