/* AdaptGear on the GPU: every kernel of the registry on the parts of a
 * matrix with communities (the level view the community kernel serves in
 * one pass, the intra part, the inter part, and their transposes) against
 * the float64 reference, on empty parts, a part of one node, one part too
 * large to stage, long rows, unsorted columns, F = 1 .. 1024; then the
 * selector through gcn_spmm: it locks, keeps the product exact, honours
 * "auto-deterministic" and forced strategies. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "kernels/spmm/internal.h"
#include "spmm_check.h"

static const int feats[] = {1, 3, 16, 33, 64, 128, 250, 256};
#define N_FEATS ((int)(sizeof feats / sizeof feats[0]))

/* n nodes in parts: empty parts, a one-node part, parts of 16..largest
 * nodes (a multiple of 16) and a last part of `giant` nodes.  Returns the
 * part count; part_ptr has room for n / 2 + 8 entries. */
static int32_t make_parts_upto(int32_t n, int32_t giant, int32_t largest, int32_t *part_ptr)
{
    int32_t k = 0, at = 0;
    part_ptr[k++] = 0;
    part_ptr[k++] = 0;  /* an empty part */
    part_ptr[k++] = at = 1; /* a part of one node */
    for (int32_t s = 16; at + s < n - giant; s = s == largest ? 16 : s + 16) {
        part_ptr[k++] = at += s;
        if (k % 7 == 0)
            part_ptr[k++] = at; /* more empty parts */
    }
    part_ptr[k++] = n;
    return k - 1;
}

static int32_t make_parts(int32_t n, int32_t giant, int32_t *part_ptr)
{
    return make_parts_upto(n, giant, 80, part_ptr);
}

static int cmp_i32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* Rows of up to 12 non-zeros, three in four inside the row's part, and two
 * long rows (700 non-zeros: over the 128-non-zero chunks; n - 100: over a
 * staged piece of inter_csr).  Sorted: columns strictly increasing;
 * otherwise random order with repeats. */
static hmat community_matrix(int32_t n, const int32_t *part_ptr, int32_t n_parts, bool sorted,
                             uint64_t seed)
{
    int32_t *deg = degrees_uniform(n, 12, seed);
    deg[n / 3] = 700;
    deg[n / 2] = n - 100;
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++)
        total += deg[i];
    hmat m = {n, n, 0, malloc(((size_t)n + 1) * sizeof(int32_t)),
              malloc(((size_t)total + 1) * sizeof(int32_t)), host_floats(total)};
    cr_assert(m.row_ptr && m.col_idx);
    uint64_t s = seed * 7 + 3;
    m.row_ptr[0] = 0;
    for (int32_t p = 0; p < n_parts; p++)
        for (int32_t i = part_ptr[p], lo = part_ptr[p]; i < part_ptr[p + 1]; i++) {
            int32_t *c = m.col_idx + m.row_ptr[i], d = deg[i], size = part_ptr[p + 1] - lo;
            for (int32_t k = 0; k < d; k++) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                c[k] = d < 100 && k % 4 != 0 ? lo + (int32_t)(s % (uint64_t)size)
                                             : (int32_t)(s % (uint64_t)n);
            }
            if (sorted) {
                qsort(c, (size_t)d, sizeof *c, cmp_i32);
                int32_t u = 0;
                for (int32_t k = 0; k < d; k++)
                    if (u == 0 || c[k] != c[u - 1])
                        c[u++] = c[k];
                d = u;
            }
            m.row_ptr[i + 1] = m.row_ptr[i] + d;
        }
    m.nnz = m.row_ptr[n];
    test_fill_uniform(&s, m.values, m.nnz, -1, 1);
    free(deg);
    return m;
}

/* Every kernel supporting a device matrix, at every width, and on its
 * stored transpose. */
static int check_part(gcn_ctx *gpu, const gcn_csr *d, const char *name)
{
    int ran = 0;
    hmat m = mat_download(gpu, d);
    for (int fi = 0; fi < N_FEATS; fi++) {
        product p;
        product_init(&p, gpu, &m, d, feats[fi], 0, name);
        ran += run_all(gpu, &p);
        product_free(&p, gpu);
    }
    mat_free(&m);
    if (!gcn_csr_is_symmetric(d) && !d->priv->owner && gcn_csr_transpose(d))
        ran += check_part(gpu, gcn_csr_transpose(d), "transposed part");
    return ran;
}

/* m with one community level of nominal size `size`. */
static gcn_csr *upload_level(gcn_ctx *gpu, const hmat *m, int32_t n_parts,
                             const int32_t *part_ptr, int32_t size)
{
    gcn_csr *a = NULL;
    cr_assert_eq(gcn_csr_create(gpu, &a, m->n_rows, m->n_cols, m->nnz, m->row_ptr, m->col_idx,
                                m->values), GCN_OK, "%s", gcn_last_error(gpu));
    cr_assert_eq(gcn_csr_set_communities(gpu, a, 1, &size, &n_parts, &part_ptr), GCN_OK, "%s",
                 gcn_last_error(gpu));
    return a;
}

static gcn_csr *upload(gcn_ctx *gpu, const hmat *m, int32_t n_parts, const int32_t *part_ptr)
{
    return upload_level(gpu, m, n_parts, part_ptr, 48);
}

/* The view, the intra part and the inter part of one matrix. */
static void check_communities(const hmat *m, int32_t n_parts, const int32_t *part_ptr,
                              int32_t size, bool expect_fused)
{
    gpu_pair g = gpu_pair_open(71, false);
    gcn_csr *a = upload_level(g.gpu, m, n_parts, part_ptr, size), *intra = NULL, *inter = NULL, *view = NULL;
    cr_assert_eq(gcn_csr_split(g.gpu, a, 0, &intra, &inter), GCN_OK, "%s", gcn_last_error(g.gpu));
    cr_assert_eq(gcn_communities_level_view(g.gpu, a, 0, &view), GCN_OK);
    const gcn_spmm_impl *smem = gcn_spmm_find(NULL, "intra_smem");
    cr_assert(smem->supports(intra, 64), "intra_smem must take the intra part");
    cr_assert_eq(smem->supports(view, 64), expect_fused);
    cr_assert(gcn_spmm_find(NULL, "inter_csr")->supports(inter, 64));
    cr_assert_gt(check_part(g.gpu, view, "level view"), 0);
    cr_assert_gt(check_part(g.gpu, intra, "intra part"), 0);
    cr_assert_gt(check_part(g.gpu, inter, "inter part"), 0);
    gcn_csr_free(&view);
    gcn_csr_free(&intra);
    gcn_csr_free(&inter);
    gcn_csr_free(&a);
    gpu_pair_close(&g);
}

/* n nodes in communities of up to `largest` nodes (nominal size `size`)
 * ending in one of `giant` nodes, sorted or not. */
static void communities_case(int32_t n, int32_t giant, int32_t largest, int32_t size,
                             bool sorted, uint64_t seed)
{
    int32_t *part_ptr = malloc(((size_t)n / 2 + 8) * sizeof *part_ptr);
    int32_t n_parts = make_parts_upto(n, giant, largest, part_ptr);
    hmat m = community_matrix(n, part_ptr, n_parts, sorted, seed);
    check_communities(&m, n_parts, part_ptr, size, sorted);
    mat_free(&m);
    free(part_ptr);
}

Test(gpu_adaptgear, communities_sorted, .timeout = 600)
{
    GPU_REQUIRED();
    communities_case(3000, 1200, 80, 48, true, 5);
}

/* Communities of up to 160 nodes: at F = 128, 256 and 1,024 they fit 48 KB
 * only in narrow tiles, so intra_smem stages them in wide blocks. */
Test(gpu_adaptgear, communities_wide_blocks, .timeout = 600)
{
    GPU_REQUIRED();
    communities_case(3000, 400, 160, 96, true, 8);
}

Test(gpu_adaptgear, communities_unsorted, .timeout = 600)
{
    GPU_REQUIRED();
    communities_case(1500, 300, 80, 48, false, 6);
}

/* M + M^T of a sorted matrix, value w(min(i, j), max(i, j)): symmetric,
 * sorted, each pair once. */
static hmat symmetric_of(const hmat *m)
{
    hmat t = mat_transpose(m);
    int32_t n = m->n_rows;
    int32_t *deg = malloc((size_t)n * sizeof *deg);
    for (int32_t i = 0; i < n; i++)
        deg[i] = (m->row_ptr[i + 1] - m->row_ptr[i]) + (t.row_ptr[i + 1] - t.row_ptr[i]);
    hmat s = mat_alloc(n, n, deg);
    s.row_ptr[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t a = m->row_ptr[i], ae = m->row_ptr[i + 1], b = t.row_ptr[i], be = t.row_ptr[i + 1];
        int32_t w = s.row_ptr[i];
        while (a < ae || b < be) {
            int32_t j = b >= be || (a < ae && m->col_idx[a] <= t.col_idx[b]) ? m->col_idx[a]
                                                                              : t.col_idx[b];
            a += a < ae && m->col_idx[a] == j;
            b += b < be && t.col_idx[b] == j;
            int32_t lo = i < j ? i : j, hi = i < j ? j : i;
            s.col_idx[w] = j;
            s.values[w++] = (float)((lo * 31 + hi) % 17) / 8.0f - 1.0f;
        }
        s.row_ptr[i + 1] = w;
    }
    s.nnz = s.row_ptr[n];
    free(deg);
    mat_free(&t);
    return s;
}

static void same_parts(const hmat *x, const hmat *y, const char *what)
{
    cr_assert_eq(x->nnz, y->nnz, "%s: %d against %d entries", what, x->nnz, y->nnz);
    cr_assert_arr_eq(x->row_ptr, y->row_ptr, ((size_t)x->n_rows + 1) * sizeof(int32_t), "%s", what);
    cr_assert_arr_eq(x->col_idx, y->col_idx, (size_t)x->nnz * sizeof(int32_t), "%s", what);
    cr_assert_arr_eq(x->values, y->values, (size_t)x->nnz * sizeof(float), "%s", what);
}

/* A symmetric matrix is split on the device: the same parts, entry for
 * entry, as the host split on a CPU context, symmetric and sorted. */
static void device_split_case(int32_t n, int32_t giant, uint64_t seed)
{
    int32_t *part_ptr = malloc(((size_t)n / 2 + 8) * sizeof *part_ptr);
    int32_t n_parts = giant >= n ? (part_ptr[0] = 0, part_ptr[1] = n, 1) : make_parts(n, giant, part_ptr);
    hmat m = community_matrix(n, part_ptr, n_parts, true, seed);
    hmat s = symmetric_of(&m);
    gpu_pair g = gpu_pair_open(73, false);
    gcn_csr *a[2] = {upload(g.cpu, &s, n_parts, part_ptr), upload(g.gpu, &s, n_parts, part_ptr)};
    gcn_csr *intra[2] = {NULL, NULL}, *inter[2] = {NULL, NULL};
    for (int d = 0; d < 2; d++) {
        gcn_ctx *ctx = d ? g.gpu : g.cpu;
        cr_assert(gcn_csr_is_symmetric(a[d]));
        cr_assert_eq(gcn_csr_split(ctx, a[d], 0, &intra[d], &inter[d]), GCN_OK, "%s",
                     gcn_last_error(ctx));
    }
    for (int k = 0; k < 2; k++) {
        gcn_csr *part[2] = {k ? inter[0] : intra[0], k ? inter[1] : intra[1]};
        cr_assert(gcn_csr_is_symmetric(part[1]) && gcn_csr_is_sorted(part[1]));
        hmat h = mat_download(g.cpu, part[0]), d = mat_download(g.gpu, part[1]);
        same_parts(&h, &d, k ? "inter part" : "intra part");
        mat_free(&h);
        mat_free(&d);
    }
    for (int d = 0; d < 2; d++) {
        gcn_csr_free(&intra[d]);
        gcn_csr_free(&inter[d]);
        gcn_csr_free(&a[d]);
    }
    gpu_pair_close(&g);
    mat_free(&s);
    mat_free(&m);
    free(part_ptr);
}

Test(gpu_adaptgear, device_split_matches_the_host)
{
    GPU_REQUIRED();
    device_split_case(3000, 1200, 9);
    device_split_case(700, 700, 10); /* one part: everything intra */
}

/* Dense blocks: small parts with dense communities, every width to 1024. */
Test(gpu_adaptgear, dense_blocks)
{
    GPU_REQUIRED();
    int32_t n = 640, part_ptr[64];
    int32_t n_parts = 0;
    part_ptr[0] = 0;
    for (int32_t at = 0; at < n; n_parts++)
        part_ptr[n_parts + 1] = at += (n_parts % 3 == 0 ? 1 : n_parts % 3 == 1 ? 31 : 40);
    part_ptr[n_parts] = n;
    hmat m = community_matrix(n, part_ptr, n_parts, true, 8);
    gpu_pair g = gpu_pair_open(72, false);
    gcn_csr *a = upload(g.gpu, &m, n_parts, part_ptr), *intra = NULL, *inter = NULL;
    cr_assert_eq(gcn_csr_split(g.gpu, a, 0, &intra, &inter), GCN_OK);
    const gcn_spmm_impl *dense = gcn_spmm_find(NULL, "intra_dense");
    cr_assert(dense->supports(intra, 1));
    cr_assert_not(dense->supports(inter, 1), "the inter part is not block diagonal");
    hmat h = mat_download(g.gpu, intra);
    static const int wide[] = {1, 2, 31, 32, 100, 513, 1024};
    for (int fi = 0; fi < 7; fi++) {
        product p;
        product_init(&p, g.gpu, &h, intra, wide[fi], fi == 3 ? 1 : 0, "dense blocks");
        run_all(g.gpu, &p);
        product_free(&p, g.gpu);
    }
    mat_free(&h);
    gcn_csr_free(&intra);
    gcn_csr_free(&inter);
    gcn_csr_free(&a);
    gpu_pair_close(&g);
    mat_free(&m);
}

/* ---- the selector through gcn_spmm ---------------------------------------- */

/* y = A x through gcn_spmm, compared with the reference, `calls` times. */
static void spmm_calls(gcn_ctx *gpu, const gcn_csr *a, const hmat *m, int f, int calls)
{
    product p;
    product_init(&p, gpu, m, a, f, 0, "selector");
    gcn_tensor *x = NULL;
    cr_assert_eq(gcn_tensor_from_host(gpu, &x, p.x, m->n_cols, f), GCN_OK);
    float *got = host_floats((int64_t)m->n_rows * f);
    for (int c = 0; c < calls; c++) {
        gcn_tensor *y = NULL;
        cr_assert_eq(gcn_spmm(gpu, a, x, &y), GCN_OK, "call %d: %s", c, gcn_last_error(gpu));
        cr_assert_eq(gcn_tensor_to_host(gpu, y, got), GCN_OK);
        for (int64_t i = 0; i < (int64_t)m->n_rows * f; i++)
            cr_assert(fabs(got[i] - p.ref[i]) <= 1e-5 * p.mag[i] + 1e-30,
                      "call %d, element %lld: %g vs %g", c, (long long)i, got[i], p.ref[i]);
        gcn_tensor_free(&y);
    }
    free(got);
    gcn_tensor_free(&x);
    product_free(&p, gpu);
}

static gcn_spmm_site_info only_site(const gcn_csr *a)
{
    gcn_spmm_site_info info;
    cr_assert_eq(gcn_spmm_sites(a, &info, 1), 1);
    return info;
}

/* A matrix with a prior order (a shuffle of its rows): every kernel on
 * the view that visits the rows in it, at every width; the selector adds
 * "rowsplit@prior", and forced, it computes the product. */
Test(gpu_adaptgear, prior_order_view, .timeout = 600)
{
    GPU_REQUIRED();
    int32_t n = 3000, part_ptr[3000 / 2 + 8];
    int32_t n_parts = make_parts(n, 100, part_ptr);
    hmat m = community_matrix(n, part_ptr, n_parts, true, 13);
    int32_t *prior = malloc((size_t)n * sizeof *prior);
    for (int32_t i = 0; i < n; i++)
        prior[i] = i;
    uint64_t s = 99;
    for (int32_t i = n - 1; i > 0; i--) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        int32_t j = (int32_t)(s % (uint64_t)(i + 1)), t = prior[i];
        prior[i] = prior[j];
        prior[j] = t;
    }
    gpu_pair g = gpu_pair_open(75, false);
    gcn_csr *a = upload(g.gpu, &m, n_parts, part_ptr), *view = NULL;
    cr_assert_eq(gcn_csr_set_prior_order(g.gpu, a, prior), GCN_OK, "%s", gcn_last_error(g.gpu));
    cr_assert_eq(gcn_communities_prior_view(g.gpu, a, &view), GCN_OK, "%s", gcn_last_error(g.gpu));
    cr_assert_arr_eq(gcn_csr_visit_order(view), prior, (size_t)n * sizeof *prior);
    cr_assert_gt(check_part(g.gpu, view, "prior-order view"), 0);
    gcn_csr_free(&view);
    spmm_calls(g.gpu, a, &m, 64, 40);
    gcn_spmm_site *t = NULL;
    cr_assert_eq(gcn_spmm_site_get(g.gpu, a, 64, GCN_DTYPE_FP32, "auto", &t), GCN_OK);
    bool listed = false;
    for (int c = 0; c < gcn_spmm_site_candidates(t); c++)
        listed |= !strcmp(gcn_spmm_site_candidate_name(t, c), "rowsplit@prior");
    cr_assert(listed, "rowsplit@prior is a candidate");
    cr_assert_eq(gcn_spmm_set_kernel(g.gpu, "rowsplit@prior"), GCN_OK);
    spmm_calls(g.gpu, a, &m, 33, 2);
    gcn_spmm_site_info info[2];
    cr_assert_eq(gcn_spmm_sites(a, info, 2), 2);
    cr_assert_str_eq(info[1].chosen, "rowsplit@prior");
    gcn_csr_free(&a);
    gpu_pair_close(&g);
    free(prior);
    mat_free(&m);
}

Test(gpu_adaptgear, selector_locks)
{
    GPU_REQUIRED();
    int32_t n = 3000, part_ptr[3000 / 2 + 8];
    int32_t n_parts = make_parts(n, 100, part_ptr);
    hmat m = community_matrix(n, part_ptr, n_parts, true, 9);
    static const char *const modes[] = {"auto", "auto-deterministic", "intra_smem+inter_csr@48"};
    for (int k = 0; k < 3; k++) {
        gpu_pair g = gpu_pair_open(73, false);
        gcn_csr *a = upload(g.gpu, &m, n_parts, part_ptr);
        cr_assert_eq(gcn_spmm_set_kernel(g.gpu, modes[k]), GCN_OK);
        spmm_calls(g.gpu, a, &m, 64, 200);
        gcn_spmm_site_info s = only_site(a);
        cr_assert(s.locked, "%s: not locked after 200 calls", modes[k]);
        cr_assert_gt(s.n_candidates, k == 0 ? 8 : k == 1 ? 2 : 0, "%s: %d candidates",
                     modes[k], s.n_candidates);
        if (k == 1)
            cr_assert(strcmp(s.chosen, "cusparse") && !strstr(s.chosen, "coo") &&
                      strcmp(s.chosen, "accel") && strcmp(s.chosen, "mergepath"),
                      "deterministic mode chose %s", s.chosen);
        if (k == 2)
            cr_assert_str_eq(s.chosen, modes[2]);
        else
            cr_assert(!isnan(s.chosen_ms) && s.profiled_calls > 0);
        gcn_csr_free(&a);
        gpu_pair_close(&g);
    }
    mat_free(&m);
}

/* While the selector profiles, a candidate it prunes (or that fails) gives
 * its plans back at once, except steps a live candidate shares: the site
 * holds the plans of its contenders, not of everything it tried. */
Test(gpu_adaptgear, selector_frees_the_plans_of_losers)
{
    GPU_REQUIRED();
    int32_t n = 3000, part_ptr[3000 / 2 + 8];
    int32_t n_parts = make_parts(n, 100, part_ptr);
    hmat m = community_matrix(n, part_ptr, n_parts, true, 9);
    gpu_pair g = gpu_pair_open(74, false);
    gcn_csr *a = upload(g.gpu, &m, n_parts, part_ptr);
    gcn_tensor *x = NULL;
    float *hx = host_floats((int64_t)n * 64);
    for (int64_t i = 0; i < (int64_t)n * 64; i++)
        hx[i] = (float)(i % 7) - 3.0f;
    cr_assert_eq(gcn_tensor_from_host(g.gpu, &x, hx, n, 64), GCN_OK);
    int most = 0;
    for (int c = 0; c < 200; c++) {
        gcn_tensor *y = NULL;
        cr_assert_eq(gcn_spmm(g.gpu, a, x, &y), GCN_OK, "%s", gcn_last_error(g.gpu));
        gcn_tensor_free(&y);
        gcn_spmm_site *t = NULL;
        cr_assert_eq(gcn_spmm_site_get(g.gpu, a, 64, GCN_DTYPE_FP32, "auto", &t), GCN_OK);
        int losers, holding;
        gcn_spmm_site_losers(t, &losers, &holding);
        cr_assert_eq(holding, 0, "call %d: %d of %d losers still hold plans", c, holding, losers);
        most = losers > most ? losers : most;
    }
    cr_assert_gt(most, 0, "no candidate lost while profiling: the check above saw nothing");
    free(hx);
    gcn_tensor_free(&x);
    gcn_csr_free(&a);
    gpu_pair_close(&g);
    mat_free(&m);
}
