/* Every CUDA SpMM kernel of the registry against a float64 CPU reference, in
 * both directions (A and the stored A^T) and with accumulate, on the real
 * graphs in ../shared/data, an empty matrix, all-empty rows, one row holding
 * half the non-zeros, 1 x 1, rectangular matrices, unsorted then sorted
 * columns, every Accel-GCN degree pattern, misaligned operands and
 * non-default tuning knobs, at F in {1, 2, 3, 16, 31, 32, 33, 64, 96, 127,
 * 128, 250, 256, 512} and wide F up to 1024.  An element passes when
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

#include "gpu_helpers.h"
#include "helpers.h"

#define TOL 1e-5
#define SHARED_DATA "../shared/data"

static const int all_feats[] = {1, 2, 3, 16, 31, 32, 33, 64, 96, 127, 128, 250, 256, 512};
#define N_ALL_FEATS ((int)(sizeof all_feats / sizeof all_feats[0]))

typedef struct hmat {
    int32_t n_rows, n_cols, nnz;
    int32_t *row_ptr, *col_idx;
    float *values;
} hmat;

/* ---- host matrices ------------------------------------------------------ */

static hmat mat_alloc(int32_t n_rows, int32_t n_cols, const int32_t *deg)
{
    hmat m = {n_rows, n_cols, 0, malloc(((size_t)n_rows + 1) * sizeof(int32_t)), NULL, NULL};
    cr_assert_not_null(m.row_ptr);
    m.row_ptr[0] = 0;
    for (int32_t i = 0; i < n_rows; i++)
        m.row_ptr[i + 1] = m.row_ptr[i] + deg[i];
    m.nnz = m.row_ptr[n_rows];
    m.col_idx = malloc(((size_t)m.nnz + 1) * sizeof(int32_t));
    m.values = host_floats(m.nnz);
    cr_assert_not_null(m.col_idx);
    return m;
}

static void mat_free(hmat *m)
{
    free(m->row_ptr);
    free(m->col_idx);
    free(m->values);
    memset(m, 0, sizeof *m);
}

static uint32_t next_u32(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)(*s >> 11);
}

/* A matrix with the given degrees: values in [-1, 1), distinct columns in
 * increasing order (deg <= n_cols) or, unsorted, random with repeats. */
static hmat mat_random(int32_t n_rows, int32_t n_cols, const int32_t *deg, bool sorted,
                       uint64_t seed)
{
    hmat m = mat_alloc(n_rows, n_cols, deg);
    uint64_t s = seed | 1;
    test_fill_uniform(&s, m.values, m.nnz, -1, 1);
    for (int32_t i = 0; i < n_rows; i++) {
        int32_t b = m.row_ptr[i], d = deg[i];
        if (!sorted) {
            for (int32_t k = 0; k < d; k++)
                m.col_idx[b + k] = (int32_t)(next_u32(&s) % (uint32_t)n_cols);
            continue;
        }
        cr_assert_leq(d, n_cols);
        int64_t start = next_u32(&s) % (uint32_t)n_cols; /* d distinct columns, then sorted */
        for (int32_t k = 0; k < d; k++)
            m.col_idx[b + k] = (int32_t)((start + (int64_t)k * n_cols / d) % n_cols);
        for (int32_t k = 1; k < d; k++)
            for (int32_t j = k; j > 0 && m.col_idx[b + j - 1] > m.col_idx[b + j]; j--) {
                int32_t t = m.col_idx[b + j];
                m.col_idx[b + j] = m.col_idx[b + j - 1];
                m.col_idx[b + j - 1] = t;
            }
    }
    return m;
}

/* Uniform degrees in [0, max_deg]. */
static int32_t *degrees_uniform(int32_t n, int32_t max_deg, uint64_t seed)
{
    int32_t *deg = malloc(((size_t)n + 1) * sizeof *deg);
    uint64_t s = seed | 1;
    for (int32_t i = 0; i < n; i++)
        deg[i] = (int32_t)(next_u32(&s) % (uint32_t)(max_deg + 1));
    return deg;
}

static hmat mat_transpose(const hmat *a)
{
    int32_t *deg = calloc((size_t)a->n_cols + 1, sizeof *deg);
    for (int32_t e = 0; e < a->nnz; e++)
        deg[a->col_idx[e]]++;
    hmat t = mat_alloc(a->n_cols, a->n_rows, deg);
    int32_t *next = malloc(((size_t)a->n_cols + 1) * sizeof *next);
    memcpy(next, t.row_ptr, (size_t)a->n_cols * sizeof *next);
    for (int32_t i = 0; i < a->n_rows; i++)
        for (int32_t e = a->row_ptr[i]; e < a->row_ptr[i + 1]; e++) {
            int32_t d = next[a->col_idx[e]]++;
            t.col_idx[d] = i;
            t.values[d] = a->values[e];
        }
    free(next);
    free(deg);
    return t;
}

/* ---- reference and comparison ------------------------------------------- */

/* ref = A x in double and mag = |A| |x|, both [n_rows, f]. */
static void reference(const hmat *m, const float *x, int f, double *ref, double *mag)
{
    memset(ref, 0, (size_t)m->n_rows * f * sizeof *ref);
    memset(mag, 0, (size_t)m->n_rows * f * sizeof *mag);
    for (int32_t i = 0; i < m->n_rows; i++)
        for (int32_t e = m->row_ptr[i]; e < m->row_ptr[i + 1]; e++) {
            const float *xr = x + (int64_t)m->col_idx[e] * f;
            double v = m->values[e];
            double *r = ref + (int64_t)i * f, *g = mag + (int64_t)i * f;
            for (int j = 0; j < f; j++) {
                r[j] += v * xr[j];
                g[j] += fabs(v * xr[j]);
            }
        }
}

static void expect_match(const float *got, const double *ref, const double *mag,
                         const float *y0, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        double want = ref[i] + (y0 ? y0[i] : 0.0);
        double scale = mag[i] + (y0 ? fabs((double)y0[i]) : 0.0);
        cr_assert(fabs((double)got[i] - want) <= TOL * scale + 1e-30,
                  "%s: element %lld is %.9g, reference %.9g (summed magnitude %.6g)", what,
                  (long long)i, (double)got[i], want, scale);
    }
}

/* One product of one matrix at one width, shared by every kernel. */
typedef struct product {
    const hmat *m;
    const gcn_csr *dev;
    int f;
    float *x, *y0;    /* host [n_cols, f], [n_rows, f] */
    double *ref, *mag;
    size_t pad;       /* floats x and y sit past the start of their buffers */
    float *xbuf, *ybuf;
    const char *name;
} product;

static void product_init(product *p, gcn_ctx *gpu, const hmat *m, const gcn_csr *dev, int f,
                         size_t pad, const char *name)
{
    memset(p, 0, sizeof *p);
    p->m = m;
    p->dev = dev;
    p->f = f;
    p->pad = pad;
    p->name = name;
    uint64_t s = 1000003u * (uint64_t)f + (uint64_t)m->nnz + 7;
    int64_t nx = (int64_t)m->n_cols * f, ny = (int64_t)m->n_rows * f;
    p->x = host_random(&s, nx, -1, 1);
    p->y0 = host_random(&s, ny, -1, 1);
    p->ref = malloc(((size_t)ny + 1) * sizeof *p->ref);
    p->mag = malloc(((size_t)ny + 1) * sizeof *p->mag);
    reference(m, p->x, f, p->ref, p->mag);
    p->xbuf = gpu_alloc(gpu, ((size_t)nx + pad) * sizeof(float));
    p->ybuf = gpu_alloc(gpu, ((size_t)ny + pad) * sizeof(float));
    if (nx > 0)
        cr_assert_eq(gpu->be->upload(gpu, p->xbuf + pad, p->x, (size_t)nx * sizeof(float)), GCN_OK);
}

static void product_free(product *p, gcn_ctx *gpu)
{
    int64_t nx = (int64_t)p->m->n_cols * p->f, ny = (int64_t)p->m->n_rows * p->f;
    gpu_release(gpu, p->xbuf, ((size_t)nx + p->pad) * sizeof(float));
    gpu_release(gpu, p->ybuf, ((size_t)ny + p->pad) * sizeof(float));
    free(p->x);
    free(p->y0);
    free(p->ref);
    free(p->mag);
}

/* y (+)= A x with one kernel from a fresh plan: overwrite from NaN,
 * accumulate onto y0, and overwrite again (same bits for deterministic
 * kernels); runs must not allocate. */
static void run_kernel(gcn_ctx *gpu, const gcn_spmm_impl *impl, const product *p)
{
    int64_t ny = (int64_t)p->m->n_rows * p->f;
    float *y = p->ybuf ? p->ybuf + p->pad : NULL, *got = host_floats(ny), *first = host_floats(ny);
    const float *x = p->xbuf ? p->xbuf + p->pad : NULL;
    char what[200];
    void *plan = NULL;
    cr_assert_eq(impl->plan(gpu, p->dev, p->f, &plan), GCN_OK, "%s plan: %s", impl->name,
                 gcn_last_error(gpu));
    gcn_memory_stats before, after;
    gcn_ctx_memory_stats(gpu, &before);
    for (int pass = 0; pass < 3; pass++) {
        bool acc = pass == 1;
        for (int64_t i = 0; i < ny; i++)
            got[i] = acc ? p->y0[i] : NAN;
        if (ny > 0)
            cr_assert_eq(gpu->be->upload(gpu, y, got, (size_t)ny * sizeof(float)), GCN_OK);
        cr_assert_eq(impl->run(gpu, plan, p->dev, x, y, p->f, acc), GCN_OK, "%s run: %s",
                     impl->name, gcn_last_error(gpu));
        gpu_download(gpu, got, y, (size_t)ny * sizeof(float));
        snprintf(what, sizeof what, "%s on %s, %d x %d, F = %d%s%s", impl->name, p->name,
                 p->m->n_rows, p->m->n_cols, p->f, acc ? ", accumulate" : "",
                 p->pad ? ", misaligned" : "");
        expect_match(got, p->ref, p->mag, acc ? p->y0 : NULL, ny, what);
        if (pass == 0)
            memcpy(first, got, (size_t)ny * sizeof(float));
        if (pass == 2 && impl->deterministic)
            expect_same(got, first, ny, what);
    }
    gcn_ctx_memory_stats(gpu, &after);
    cr_assert_eq(after.device_allocs, before.device_allocs, "%s: a run called cudaMalloc", what);
    cr_assert_eq(after.in_use, before.in_use, "%s: a run allocated", what);
    impl->free_plan(plan);
    free(got);
    free(first);
}

/* Every CUDA kernel of the registry on one product. */
static int run_all(gcn_ctx *gpu, const product *p)
{
    int n_impls = 0, tested = 0;
    const gcn_spmm_impl *const *reg = gcn_spmm_registry(&n_impls);
    for (int k = 0; k < n_impls; k++)
        if (reg[k]->device == GCN_DEVICE_CUDA && reg[k]->supports(p->dev, p->f)) {
            run_kernel(gpu, reg[k], p);
            tested++;
        }
    return tested;
}

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
    const gcn_spmm_impl *accel = gcn_spmm_find("accel");
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
