/* Host-side planning of the CUDA SpMM kernels (rowsplit, rowpack, accel,
 * mergepath): tuning knobs, feature-tile layouts, long-row chunks, rowpack's
 * units, the Accel-GCN degree sort and block partition, and the merge-path
 * split.  Plain C, unit-tested without a GPU (tests/test_spmm_plan.c,
 * tests/test_spmm_rowpack.c).  Internal. */
#ifndef GCN_SPMM_PLAN_H
#define GCN_SPMM_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "core/internal.h" /* and through it GCN_HD (core/philox.h) */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- tuning knobs ------------------------------------------------------- */

/* The integer environment variable `name` when it parses completely and lies
 * in [lo, hi]; otherwise def.  Read by the plans only (docs/kernels.md). */
int gcn_spmm_knob(const char *name, int def, int lo, int hi);

/* ---- feature layout ----------------------------------------------------- */

/* How a kernel walks the F feature columns: each lane reads `vec`
 * consecutive floats (one 4-, 8- or 16-byte access), and the columns are cut
 * into tiles of `tile` columns, one tile per grid.y index, so that the part
 * of X a tile gathers can stay in L2. */
typedef struct gcn_feat_layout {
    int feat;    /* F */
    int vec;     /* 4, 2 or 1; divides feat and tile */
    int tile;    /* columns per tile (the last tile may be narrower) */
    int n_tiles; /* ceil(feat / tile) */
    int vecs;    /* tile / vec: vector accesses across a full tile row */
} gcn_feat_layout;

/* The widest of 4, 2, 1 that is <= max_vec and divides feat. */
int gcn_feat_vec(int feat, int max_vec);

/* The layout for feat with vector width vec (dividing feat) and tiles of
 * `tile` columns, rounded down to a multiple of vec and clamped to
 * [vec, feat]; tile <= 0 means one tile of all columns. */
gcn_feat_layout gcn_feat_layout_make(int feat, int vec, int tile);

/* ---- rowsplit ----------------------------------------------------------- */

#define GCN_ROWSPLIT_MAX_PER_LANE 8   /* vectors */
#define GCN_ROWSPLIT_MAX_FLOATS 16    /* floats a lane accumulates */

/* A row is served by `split` groups of `group` lanes (a power of two <= 32;
 * 32 / (group * split) rows per warp), each lane holding `per_lane` (1, 2, 4
 * or 8) vectors of the tile: lane l of a group owns vectors l, l + group, ...
 * With split 2 (one vector a lane, groups under 32 lanes) the two groups sum
 * halves of the row's non-zeros. */
typedef struct gcn_rowsplit_shape {
    int group;
    int per_lane;
    int split;
} gcn_rowsplit_shape;

/* Rows a warp of shape s serves at once. */
static inline int gcn_rowsplit_rows_per_warp(gcn_rowsplit_shape s)
{
    return 32 / (s.group * s.split);
}

/* The smallest group covering `vecs` vectors with at most
 * GCN_ROWSPLIT_MAX_PER_LANE per lane; vecs <= 32 * that maximum. */
gcn_rowsplit_shape gcn_rowsplit_shape_for(int vecs);

/* Rows of fewer than this many non-zeros on average get narrower groups
 * (gcn_rowsplit_auto_narrow), under 64 columns only when the narrowed
 * warps number at least GCN_ROWSPLIT_NARROW_WARPS an SM. */
#define GCN_ROWSPLIT_NARROW_ROW 8
#define GCN_ROWSPLIT_NARROW_ROW_WIDE 16
#define GCN_ROWSPLIT_NARROW_WARPS 36

/* s with its group narrowed `narrow` times (a power of two): each group
 * still takes one row, so a warp takes `narrow` times more rows, and a lane
 * holds `narrow` times more vectors, as far as a group of one lane, 4
 * vectors a lane and GCN_ROWSPLIT_MAX_FLOATS floats of width vec allow. */
gcn_rowsplit_shape gcn_rowsplit_shape_narrow(gcn_rowsplit_shape s, int vec, int narrow);

/* How many times rowsplit narrows the group of shape s (from
 * gcn_rowsplit_shape_for) for a tile of tile_floats columns, n_rows rows of
 * nnz_per_row non-zeros on average and `sms` SMs: 2 for tiles of at least
 * 64 columns with short rows (under GCN_ROWSPLIT_NARROW_ROW non-zeros; under
 * GCN_ROWSPLIT_NARROW_ROW_WIDE when s is a whole warp of one vector a lane);
 * 2 for narrower tiles with rows under GCN_ROWSPLIT_NARROW_ROW when the
 * narrowed warps still number GCN_ROWSPLIT_NARROW_WARPS an SM; 1 otherwise.
 * A short row's product is a chain of dependent loads (its descriptor, its
 * pairs, a round or two of gathers) that a whole warp waits on; two rows a
 * warp keep twice the chains in flight.  Longer rows already keep the
 * warp's loads busy and lose to the extra shuffles and the rows' unequal
 * lengths, and narrow tiles' groups of 4 or 8 lanes gain only when the
 * halved grid still fills the GPU (H100 sweeps, docs/perf.md). */
int gcn_rowsplit_auto_narrow(gcn_rowsplit_shape s, int tile_floats, int64_t n_rows,
                             double nnz_per_row, int sms);

/* Rows of at least this many non-zeros on average are split over two
 * groups when the warps would not fill the GPU twice over
 * (gcn_rowsplit_auto_split). */
#define GCN_ROWSPLIT_SPLIT_ROW 10
#define GCN_ROWSPLIT_FULL_WARPS 64 /* warps an SM that fill the GPU twice over */

/* How many groups rowsplit gives each of n_rows rows of nnz_per_row
 * non-zeros on average with shape s on `sms` SMs: 2 when s has one vector a
 * lane and groups under 32 lanes, the rows have at least
 * GCN_ROWSPLIT_SPLIT_ROW non-zeros, and n_rows / (32 / group) warps are fewer
 * than GCN_ROWSPLIT_FULL_WARPS an SM; 1 otherwise.  A product of few long
 * rows leaves SMs without warps, and each row's gathers walk by in rounds;
 * two groups a row double the warps and halve the rounds.  Many rows fill
 * the GPU anyway, and short rows gain nothing from halving (H100 sweep,
 * docs/perf.md). */
int gcn_rowsplit_auto_split(gcn_rowsplit_shape s, int64_t n_rows, double nnz_per_row, int sms);

/* The resident blocks an SM rowsplit's kernel is built for, which sets
 * its register budget: GCN_ROWSPLIT_BLOCKS_MANY (at most 64 registers a
 * thread, more warps in flight) for groups of 16 or 32 lanes, and for
 * groups of 8 when the launch has at least GCN_ROWSPLIT_DEEP_WARPS warps
 * an SM; GCN_ROWSPLIT_BLOCKS_FEW (at most 80) otherwise.  Narrow groups'
 * loads hold more registers (4-lane groups spill under 64), and a fourth
 * block pays for the tighter budget only when the launch has the warps
 * to fill it (H100 sweeps, docs/perf.md).  warps: the launch's row warps
 * over all its tiles. */
#define GCN_ROWSPLIT_BLOCKS_FEW 3
#define GCN_ROWSPLIT_BLOCKS_MANY 4
#define GCN_ROWSPLIT_DEEP_WARPS 112
int gcn_rowsplit_auto_min_blocks(gcn_rowsplit_shape s, int64_t warps, int sms);

/* The widest tile 32 lanes can hold: 32 * min(8 vec, 16) columns (256 for
 * vec 1, 512 otherwise), keeping a lane's sums within 16 registers. */
int gcn_rowsplit_widest_tile(int vec);

/* The tile rowsplit takes when GCN_ROWSPLIT_TILE is not set.  Banded
 * matrices get the widest tile (gcn_rowsplit_widest_tile).  Otherwise, when
 * X does not fit in `l2_budget` bytes, the widest power-of-two tile >= 32
 * columns whose slice of X (n_cols x tile floats) does, so that the gathers
 * of a pass hit L2; when X fits, the gathers come from L2 and how many X
 * rows L1 holds decides: at most GCN_ROWSPLIT_L1_TILE columns for matrices
 * of at least GCN_ROWSPLIT_DENSE_ROW non-zeros a row on average (more
 * gathers a row, more of them repeat), at most twice that for sparser ones,
 * whose rows are too short to gain from L1 and do better with fewer passes
 * over A.  A tile is a multiple of vec; feat when no narrower tile is
 * called for. */
#define GCN_ROWSPLIT_L1_TILE 128
#define GCN_ROWSPLIT_DENSE_ROW 16
int gcn_rowsplit_auto_tile(int feat, int vec, int64_t n_cols, double nnz_per_row,
                           size_t l2_budget, bool banded);

/* Whether a matrix is banded enough that the rows a GPU works on at once
 * gather a narrow band of X, which stays in L2 without feature tiles (road
 * networks, meshes): the median |column - row| of sampled non-zeros is at
 * most n_cols / 64.  Sample k is non-zero k * stride, with column cols[k]. */
bool gcn_spmm_banded(const int32_t *row_ptr, int32_t n_rows, int32_t n_cols, int64_t stride,
                     const int32_t *cols, int n_samples);

/* The long-row chunk rowsplit takes when GCN_ROWSPLIT_CHUNK is not set.  A
 * product too small to fill the GPU lasts as long as its longest row, so
 * the chunk is the non-zeros each warp would get were the product spread
 * over GCN_ROWSPLIT_CHUNK_WARPS warps an SM (the power of two at or below),
 * between GCN_ROWSPLIT_CHUNK_MIN and GCN_ROWSPLIT_CHUNK_MAX: products of
 * millions of non-zeros keep 128, which pieces cost little next to; cora's
 * 13,264 get 16 (H100 sweep, docs/perf.md). */
#define GCN_ROWSPLIT_CHUNK_WARPS 16
#define GCN_ROWSPLIT_CHUNK_MIN 16
#define GCN_ROWSPLIT_CHUNK_MAX 128
int gcn_rowsplit_auto_chunk(int64_t nnz, int sms);

/* Rows with more than `chunk` non-zeros, cut into pieces of `chunk`: each
 * piece is one warp's work, its partial row goes to a scratch slot, and the
 * last warp to finish a row sums the slots in order (deterministic). */
typedef struct gcn_rowsplit_chunks {
    int32_t n_chunks;
    int32_t n_long;
    int32_t *chunk;     /* [n_chunks][4]: row, first non-zero, end, long-row id */
    int32_t *long_info; /* [n_long][2]: first chunk, number of chunks */
} gcn_rowsplit_chunks;

/* Finds the long rows of a host CSR row_ptr.  Caller frees with
 * gcn_rowsplit_chunks_free (also after a failure). */
gcn_status gcn_rowsplit_chunks_build(gcn_ctx *ctx, const int32_t *row_ptr, int32_t n_rows,
                                     int32_t chunk, gcn_rowsplit_chunks *out);
void gcn_rowsplit_chunks_free(gcn_rowsplit_chunks *c);

/* The order in which rowsplit's row warps take the rows that are not long
 * (degree <= chunk): the rows in visit order (visit[k] is the k-th row, a
 * permutation; NULL: 0, 1, 2, ...), then by degree, stable, within each
 * window of `window` consecutive rows of that order (so the 32 / group rows
 * of a warp have similar degrees and a block's rows stay neighbours);
 * window <= 1 keeps the visit order.  perm receives the *n_short row ids. */
gcn_status gcn_rowsplit_order(gcn_ctx *ctx, const int32_t *row_ptr, int32_t n_rows, int32_t chunk,
                              int32_t window, const int32_t *visit, int32_t *perm,
                              int32_t *n_short);

/* ---- rowpack -------------------------------------------------------------- */

/* A unit holds at most this many non-zeros: its row-end mask (two 64-bit
 * words) has a bit each.  "rowpack" takes units of 32 or 64 (groups of
 * GCN_ROWPACK_WIDE_GROUP lanes or more); "rowpack_wide" units of
 * GCN_ROWPACK_MAX_UNIT (groups of 32 lanes) in blocks of
 * GCN_ROWPACK_WIDE_THREADS threads, the others 256. */
#define GCN_ROWPACK_MAX_UNIT 96
/* Lanes a group needs for units of 64 (else units of 32). */
#define GCN_ROWPACK_WIDE_GROUP 16
#define GCN_ROWPACK_WIDE_THREADS 512

/* The work of rowpack's groups of lanes, one unit each, in row order, each
 * unit at most `cap` non-zeros (one round of a group's loads):
 * - packed rows: consecutive non-empty rows whose non-zeros fit `cap`
 *   together share a unit, so one group sums several short rows with the
 *   same loads in flight; rows = the count (>= 1), ends = a bit at each
 *   non-zero that ends a row (p: non-zero first + p);
 * - an empty row: rows = 1, no non-zeros, ends = 0;
 * - a piece of a row longer than `cap`, cut into the fewest equal pieces of
 *   at most `cap`: rows = -1 - its scratch slot, ends = the long row's index
 *   into long_info.  The last piece to finish sums the slots in order, so
 *   the result does not depend on timing. */
typedef struct gcn_rowpack_units {
    int32_t n_units, n_long, n_pieces;
    int32_t *unit;      /* [n_units][4]: first row, rows, first non-zero, end */
    uint64_t *ends;     /* [n_units][2]: bits 0-63 and 64-127 of the mask, or the
                         * long row's index and 0 */
    int32_t *long_info; /* [n_long][2]: first scratch slot, number of pieces */
} gcn_rowpack_units;

/* Builds the units of a host CSR row_ptr for 1 <= cap <=
 * GCN_ROWPACK_MAX_UNIT.  Caller frees with gcn_rowpack_units_free (also
 * after a failure). */
gcn_status gcn_rowpack_units_build(gcn_ctx *ctx, const int32_t *row_ptr, int32_t n_rows, int cap,
                                   gcn_rowpack_units *out);
void gcn_rowpack_units_free(gcn_rowpack_units *u);

/* Resident blocks an SM the kernel is compiled for: FEW (80 registers) or
 * MANY (64).  Automatic: MANY for 32-lane groups, whose tiles of 128
 * columns make the most gathers and gain from more warps hiding them; FEW
 * for narrower groups, which spill at 64 (H100 sweep, docs/kernels.md). */
#define GCN_ROWPACK_BLOCKS_FEW 3
#define GCN_ROWPACK_BLOCKS_MANY 4
int gcn_rowpack_auto_min_blocks(int group);

/* rowpack's automatic unit size for groups of `group` lanes over rows of
 * per_row non-zeros on average: 64 when group >= GCN_ROWPACK_WIDE_GROUP and
 * per_row >= 10, else 32 (H100 sweep, docs/kernels.md). */
int gcn_rowpack_auto_unit(int group, double per_row);

/* ---- accel (Accel-GCN) -------------------------------------------------- */

typedef struct gcn_accel_params {
    int block_warps; /* max_block_warps, 12 in the paper */
    int warp_nzs;    /* max_warp_nzs, 32 in the paper */
} gcn_accel_params;

/* Warps serving a row of degree d, 1 <= d <= block_warps * warp_nzs: the
 * smallest factor f of block_warps with f * warp_nzs >= d. */
int gcn_accel_row_warps(const gcn_accel_params *p, int d);

/* The degree-sorted rows and one int4 of metadata per thread block. */
typedef struct gcn_accel_partition {
    int32_t n_rows;
    int32_t *rows;      /* [n_rows][2], ascending degree, stable: original row, first non-zero */
    int32_t n_zero;     /* sorted rows [0, n_zero) are empty */
    int32_t long_begin; /* sorted rows [long_begin, n_rows) exceed the degree bound */
    int32_t n_blocks;
    /* [n_blocks][4]: degree, first sorted row, first non-zero, and either
     * warp_nzs << 16 | rows (degree <= bound) or the chunk's non-zeros. */
    int32_t *meta;
} gcn_accel_partition;

/* Count-sorts the rows of a host row_ptr by degree (O(n)) and cuts them into
 * blocks.  Caller frees with gcn_accel_partition_free (also after a
 * failure). */
gcn_status gcn_accel_partition_build(gcn_ctx *ctx, const int32_t *row_ptr, int32_t n_rows,
                                     const gcn_accel_params *p, gcn_accel_partition *out);
void gcn_accel_partition_free(gcn_accel_partition *part);

/* Combined warps: `width` = 32 * ceil(vecs / 32) threads walk one feature row,
 * and a block runs `per_block` of them (the largest divisor of block_warps
 * that fits 1024 threads); each covers block_warps / per_block of the
 * block's warps in turn. */
typedef struct gcn_accel_shape {
    int width;
    int per_block;
} gcn_accel_shape;

gcn_accel_shape gcn_accel_shape_for(int vecs, int block_warps);

/* The vector width for accel: of the widths <= max_vec dividing feat, the
 * one needing the fewest warps per combined warp, the narrowest on ties
 * (more lanes busy, fewer registers: F = 16 reads scalars, 64 float2). */
int gcn_accel_vec(int feat, int max_vec);

/* The widest tile (<= feat) whose vectors fit one 1024-thread combined warp
 * and whose shared rows (block_warps / 2 of them, at least 1) fit in
 * smem_bytes. */
int gcn_accel_max_tile(int feat, int vec, int block_warps, size_t smem_bytes);

/* ---- mergepath (MergePath-SpMM) ------------------------------------------- */

/* The paper's merge-path cost (items per worker) for a feature width:
 * F = 2: 50, 4 and 8: 15, 16: 20, 32: 30, 64: 35, 128: 50, linear in log2 F
 * between those, held constant outside [2, 128]. */
int gcn_mergepath_default_cost(int feat);

/* The cost a plan uses: `knob` when > 0; otherwise the default, lowered so
 * that at least target_workers workers share the items (never below 1). */
int gcn_mergepath_cost(int feat, int64_t items, int64_t target_workers, int knob);

/* Lanes a worker uses for `vecs` vectors: vecs itself when <= 32 (32 / vecs
 * workers share a warp), else whole warps (ceil(vecs / 32) of them). */
int gcn_mergepath_lanes(int vecs);

/* Where diagonal `diag` (0 <= diag <= n_rows + nnz) crosses the merge path
 * of the row ends row_ptr[1..n_rows] and the non-zero indices 0..nnz-1: *row
 * row ends and *nz non-zeros come before it (*row + *nz == diag).  Non-zero
 * j precedes the end of row i exactly when j < row_ptr[i + 1]. */
GCN_HD void gcn_merge_path_search(int64_t diag, const int32_t *row_ptr,
                                                int32_t n_rows, int32_t nnz, int32_t *row,
                                                int32_t *nz)
{
    int64_t lo = diag > nnz ? diag - nnz : 0;
    int64_t hi = diag < n_rows ? diag : n_rows;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if ((int64_t)row_ptr[mid + 1] <= diag - mid - 1)
            lo = mid + 1;
        else
            hi = mid;
    }
    *row = (int32_t)lo;
    *nz = (int32_t)(diag - lo);
}

#ifdef __cplusplus
}
#endif
#endif
