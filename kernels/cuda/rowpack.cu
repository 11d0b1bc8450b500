/* "rowpack": the rows in the matrix's order as units of work for groups of
 * lanes sized to the feature tile (plan.h, gcn_rowpack_units):
 * consecutive short rows packed into units of at most 32 or 64 non-zeros,
 * and equal pieces of the longer rows.  A group loads a unit's column
 * indices and values once, gathers X rows across the row boundaries with
 * the loads of several rows in flight, and writes each row as its last
 * non-zero is summed, found from the unit's row-end mask.  Rows stay in
 * order, so a block sums neighbouring rows, which on a community-ordered
 * graph gather neighbouring rows of X.  The pieces of a long row go to
 * scratch slots that the last piece sums in order: no float atomics,
 * deterministic.  "rowpack_wide" is the same with units of 96 non-zeros
 * for groups of 32 lanes, in blocks of 512 threads: faster on large
 * community-ordered graphs, slower on small ones, so the selector times
 * both.  The bf16 variants run the same kernels on rows of bf16 units,
 * summing in fp32.  Host planning: rowpack.c; the kernels: rowpack.cuh,
 * compiled one unit type and vector width a file (rowpack_v*.cu,
 * rowpack_bf16_v*.cu); docs/kernels.md. */
#include <stdlib.h>

#include "kernels/spmm/impls.h"
#include "rowpack.cuh"

#define RP_MIN_GROUP 4 /* narrower groups would hold 16 or more pairs a lane */

typedef struct rowpack_plan {
    gcn_spmm_head head;       /* first member: the product the plan is for */
    const char *name;         /* "rowpack" or "rowpack_wide" */
    int unit;                 /* non-zeros a unit holds at most: 32, 64 or GCN_ROWPACK_MAX_UNIT */
    int max_vec;              /* widest vector, in units of x: 4, or less (rowpack_wide in bf16) */
    gcn_feat_layout lay[2];   /* [0] vectorised, [1] scalar for misaligned x or y */
    int group[2];             /* lanes a unit, per layout */
    int min_blocks[2];        /* resident blocks an SM the kernel is compiled for, per layout
                               * (units of GCN_ROWPACK_MAX_UNIT: always RP_WIDE_BLOCKS) */
    int32_t n_units;
    int4 *units;              /* [n_units]: gcn_rowpack_units.unit */
    unsigned long long *ends; /* [n_units][2]: gcn_rowpack_units.ends */
    gcn_rs_long lr;           /* the long rows' info, scratch slots and counters */
    size_t units_bytes, ends_bytes;
} rowpack_plan;

/* Single bf16 units come in vectors of 1 only (odd widths). */
template <typename T>
static rp_kernel pick_kernel(const gcn_feat_layout *l, int group, int unit, int min_blocks)
{
    bool full = l->n_tiles * group * l->vec == l->feat;
    if constexpr (!std::is_same<T, bf16x1>::value) {
        if (l->vec == 4)
            return gcn_rowpack_pick<T, 4>(full, group, unit, min_blocks);
        if (l->vec == 2)
            return gcn_rowpack_pick<T, 2>(full, group, unit, min_blocks);
    }
    return gcn_rowpack_pick<T, 1>(full, group, unit, min_blocks);
}

/* ---- plan ----------------------------------------------------------------- */

/* The gathers address X's rows with 32-bit offsets (a 64-bit multiply per
 * gather cost 6 % on ogbn-arxiv at F = 128), so X may hold at most 2^32
 * floats (16 GiB); larger products are left to the other kernels. */
static bool rowpack_supports(const gcn_csr *a, int feat)
{
    return gcn_spmm_cuda_supports(a, feat) && (uint64_t)a->n_cols * (uint64_t)feat <= UINT32_MAX;
}

static void rowpack_free_plan(void *plan)
{
    rowpack_plan *p = (rowpack_plan *)plan;
    if (!p)
        return;
    gcn_mem_release(p->head.ctx, p->units, p->units_bytes);
    gcn_mem_release(p->head.ctx, p->ends, p->ends_bytes);
    gcn_rs_long_free(p->head.ctx, &p->lr);
    free(p);
}

/* One tile is what a warp's lanes hold, one vector each (the widest group);
 * the group is the tile's vectors rounded up to a power of two, at least
 * RP_MIN_GROUP.  [0] vectorised (vectors of up to max_vec units), [1]
 * scalar. */
static void layouts_for(int feat, int max_vec, gcn_feat_layout lay[2], int group[2])
{
    int vec = gcn_feat_vec(feat, max_vec);
    lay[0] = gcn_feat_layout_make(feat, vec, GCN_WARP * vec);
    lay[1] = gcn_feat_layout_make(feat, 1, GCN_WARP);
    for (int i = 0; i < 2; i++) {
        int g = gcn_rowsplit_shape_for(lay[i].vecs).group;
        group[i] = g > RP_MIN_GROUP ? g : RP_MIN_GROUP;
    }
}

static void plan_layouts(rowpack_plan *p)
{
    layouts_for(p->head.feat, p->max_vec, p->lay, p->group);
    for (int i = 0; i < 2; i++)
        p->min_blocks[i] = gcn_spmm_knob("GCN_ROWPACK_MINBLOCKS",
                                         gcn_rowpack_auto_min_blocks(p->group[i]),
                                         GCN_ROWPACK_BLOCKS_FEW, GCN_ROWPACK_BLOCKS_MANY);
}

/* rowpack_wide's units are for groups of 32 lanes in both layouts: F >= 68
 * in float4, >= 34 in float2, >= 17 in floats. */
static bool wide_groups(int feat, int max_vec)
{
    gcn_feat_layout lay[2];
    int group[2];
    layouts_for(feat, max_vec, lay, group);
    return group[0] == GCN_WARP && group[1] == GCN_WARP;
}

/* rowpack's unit size: GCN_ROWPACK_UNIT (32 or 64) when set, else
 * automatic from the rows' mean length.  Both layouts run on the same
 * units, so 64 needs both layouts' groups to have GCN_ROWPACK_WIDE_GROUP
 * lanes (pick_unit).  rowpack_wide's: GCN_ROWPACK_MAX_UNIT. */
static int choose_unit(const gcn_csr *a, int group, bool wide)
{
    if (wide)
        return GCN_ROWPACK_MAX_UNIT;
    int unit = gcn_spmm_knob("GCN_ROWPACK_UNIT",
                             gcn_rowpack_auto_unit(group, (double)a->nnz / (double)a->n_rows), 32,
                             64);
    return unit == 64 && group >= GCN_ROWPACK_WIDE_GROUP ? unit : 32;
}

/* Units, masks, the long rows' info, and their scratch slots and counters
 * (gcn_rs_long_scratch) for `values` fp32 values a unit of x. */
static gcn_status upload_units(gcn_ctx *ctx, rowpack_plan *p, const int32_t *row_ptr,
                               int32_t n_rows, int values)
{
    gcn_rowpack_units u;
    gcn_rs_long *l = &p->lr;
    gcn_status st;
    GCN_CHECK(gcn_rowpack_units_build(ctx, row_ptr, n_rows, p->unit, &u));
    p->n_units = u.n_units;
    p->units_bytes = (size_t)u.n_units * sizeof(int4);
    p->ends_bytes = (size_t)u.n_units * 2 * sizeof(unsigned long long);
    l->n_long = u.n_long;
    l->long_bytes = (size_t)u.n_long * sizeof(int2);
    GCN_CHECK(gcn_spmm_upload(ctx, (void **)&p->units, u.unit, p->units_bytes));
    GCN_CHECK(gcn_spmm_upload(ctx, (void **)&p->ends, u.ends, p->ends_bytes));
    GCN_CHECK(gcn_spmm_upload(ctx, (void **)&l->long_info, u.long_info, l->long_bytes));
    GCN_CHECK(gcn_rs_long_scratch(ctx, l, u.n_pieces, p->head.feat * values, p->lay));
cleanup:
    gcn_rowpack_units_free(&u);
    return st;
}

static gcn_status build_plan(gcn_ctx *ctx, const gcn_csr *a, rowpack_plan *p, bool wide,
                             int values)
{
    const int32_t *row_ptr;
    plan_layouts(p);
    GCN_TRY(gcn_spmm_check_tiles(ctx, p->name, p->lay));
    p->unit = choose_unit(a, p->group[0] < p->group[1] ? p->group[0] : p->group[1], wide);
    GCN_TRY(gcn_csr_host_row_ptr(ctx, a, &row_ptr));
    return upload_units(ctx, p, row_ptr, a->n_rows, values);
}

/* A plan for rows of feat units of unit_bytes, `values` values each, in
 * vectors of at most max_vec units. */
static gcn_status plan_create(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan, bool wide,
                              int unit_bytes, int values, int max_vec)
{
    rowpack_plan *p = NULL;
    const char *name = wide ? "rowpack_wide" : "rowpack";
    GCN_TRY(gcn_spmm_plan_new(ctx, a, feat, name, sizeof *p, plan, (void **)&p));
    p->name = name;
    p->head.unit_bytes = unit_bytes;
    p->max_vec = max_vec;
    if (!rowpack_supports(a, feat)) {
        rowpack_free_plan(p);
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "%s SpMM: X of %d x %d floats is over 2^32 (32-bit offsets)", name,
                         a->n_cols, feat);
    }
    if (wide && !wide_groups(feat, max_vec)) {
        rowpack_free_plan(p);
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "rowpack_wide SpMM: width %d gives groups of fewer than 32 lanes "
                         "(fp32: F >= 68 in float4, >= 34 in float2, >= 17 otherwise; bf16: "
                         "F >= 34, or odd F >= 17)", feat * values);
    }
    if (!p->head.empty) {
        gcn_status st = build_plan(ctx, a, p, wide, values);
        if (st != GCN_OK) {
            rowpack_free_plan(p);
            return st;
        }
    }
    *plan = p;
    return GCN_OK;
}

/* ---- run ------------------------------------------------------------------ */

/* y (+)= A x over rows of feat units T. */
template <typename T>
static gcn_status launch(gcn_ctx *ctx, void *plan, const gcn_csr *a, const void *x, void *y,
                         int feat, bool accumulate)
{
    rowpack_plan *p = (rowpack_plan *)plan;
    gcn_cuda_state *cs;
    bool done;
    GCN_TRY(gcn_spmm_run_begin(ctx, p, a, y, feat, accumulate, p->name, &cs, &done));
    if (done)
        return GCN_OK;
    if (std::is_same<T, bf16x2>::value && !(gcn_spmm_aligned(x, 1) && gcn_spmm_aligned(y, 1)))
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "%s SpMM: bf16 rows of even width need x "
                         "and y on 4-byte boundaries", p->name);
    int which = gcn_spmm_aligned(x, p->lay[0].vec) && gcn_spmm_aligned(y, p->lay[0].vec) ? 0 : 1;
    const gcn_feat_layout *l = &p->lay[which];
    int group = p->group[which];
    rs_args args = {a->col_idx, p->units, a->values, x, y, NULL, p->lr.long_info,
                    p->lr.partial, p->lr.counter, p->n_units, 0, feat, l->tile,
                    l->n_tiles, accumulate, p->ends};
    int threads = rp_block_threads(p->unit), block_warps = threads / GCN_WARP;
    int64_t warps = ((int64_t)p->n_units + GCN_WARP / group - 1) / (GCN_WARP / group);
    dim3 grid((unsigned)((warps + block_warps - 1) / block_warps), (unsigned)l->n_tiles);
    rp_kernel kernel = pick_kernel<T>(l, group, p->unit, p->min_blocks[which]);
    kernel<<<grid, threads, 0, cs->stream>>>(args);
    GCN_LAUNCHED("rowpack_kernel");
    return GCN_OK;
}

static gcn_status rowpack_run(gcn_ctx *ctx, void *plan, const gcn_csr *a, const float *x,
                              float *y, int feat, bool accumulate)
{
    return launch<float>(ctx, plan, a, x, y, feat, accumulate);
}

static gcn_status rowpack_run_bf16(gcn_ctx *ctx, void *plan, const gcn_csr *a,
                                   const uint16_t *x, uint16_t *y, int feat, bool accumulate)
{
    int values, units = gcn_spmm_bf16_units(feat, &values);
    return values == 2 ? launch<bf16x2>(ctx, plan, a, x, y, units, accumulate)
                       : launch<bf16x1>(ctx, plan, a, x, y, units, accumulate);
}

static gcn_status rowpack_plan_create(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    return plan_create(ctx, a, feat, plan, false, 4, 1, 4);
}

/* bf16 rows as units of two bf16 (even widths: the layout of an fp32
 * product of half the width, the same bytes) or of one.  rowpack loads
 * the widest vectors (8 bf16, so F = 128 takes groups of 16 lanes);
 * rowpack_wide narrows its vectors until the groups have 32 lanes (F = 128:
 * 4 bf16 a lane), so the selector times both shapes. */
static gcn_status plan_bf16(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan, bool wide)
{
    int values, units = gcn_spmm_bf16_units(feat, &values), max_vec = 4;
    while (wide && max_vec > 1 && !wide_groups(units, max_vec))
        max_vec /= 2;
    return plan_create(ctx, a, units, plan, wide, values == 2 ? 4 : 2, values, max_vec);
}

static gcn_status rowpack_plan_bf16(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    return plan_bf16(ctx, a, feat, plan, false);
}

static gcn_status wide_plan_bf16(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    return plan_bf16(ctx, a, feat, plan, true);
}

static bool wide_supports(const gcn_csr *a, int feat)
{
    return rowpack_supports(a, feat) && wide_groups(feat, 4);
}

static gcn_status wide_plan_create(gcn_ctx *ctx, const gcn_csr *a, int feat, void **plan)
{
    return plan_create(ctx, a, feat, plan, true, 4, 1, 4);
}

const gcn_spmm_impl gcn_spmm_rowpack = {
    .size = sizeof(gcn_spmm_impl),
    .name = "rowpack",
    .device = GCN_DEVICE_CUDA,
    .deterministic = true,
    .roles = GCN_SPMM_ROLE_WHOLE,
    .supports = rowpack_supports,
    .plan = rowpack_plan_create,
    .run = rowpack_run,
    .free_plan = rowpack_free_plan,
    .plan_bf16 = rowpack_plan_bf16,
    .run_bf16 = rowpack_run_bf16,
};

const gcn_spmm_impl gcn_spmm_rowpack_wide = {
    .size = sizeof(gcn_spmm_impl),
    .name = "rowpack_wide",
    .device = GCN_DEVICE_CUDA,
    .deterministic = true,
    .roles = GCN_SPMM_ROLE_WHOLE,
    .supports = wide_supports,
    .plan = wide_plan_create,
    .run = rowpack_run,
    .free_plan = rowpack_free_plan,
    .plan_bf16 = wide_plan_bf16,
    .run_bf16 = rowpack_run_bf16,
};
