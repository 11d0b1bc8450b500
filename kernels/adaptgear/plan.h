/* Host-side planning of AdaptGear's subgraph kernels: feature tiles that
 * fit a community's rows in shared memory, the packing of communities into
 * thread-block tasks, per-row staged ranges, dense diagonal blocks, and the
 * block tasks of the inter-community CSR kernel.  Plain C, unit-tested
 * without a GPU (tests/test_adaptgear_plan.c).  Internal. */
#ifndef GCN_ADAPTGEAR_PLAN_H
#define GCN_ADAPTGEAR_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "communities.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the split on the GPU (split.cu) ------------------------------------------ */

/* gcn_csr_split of a symmetric CUDA matrix at level lv, on the device: the
 * parts are symmetric and keep a's column order.  On failure both are
 * NULL. */
gcn_status gcn_split_cuda(gcn_ctx *ctx, const gcn_csr *a, const gcn_csr_level *lv,
                          gcn_csr **intra, gcn_csr **inter);

/* ---- intra_smem: communities staged in shared memory ----------------------- */

/* Shared memory a block of intra_smem stages rows in: 4 blocks an SM fit.
 * A wide block (gcn_smem_block_bytes) has 1,024 threads, one an SM. */
#define GCN_SMEM_BYTES (48 * 1024)
#define GCN_SMEM_THREADS 256
#define GCN_SMEM_WIDE_THREADS 1024

/* The shared memory of a block staging parts of ref_rows rows:
 * GCN_SMEM_BYTES when such a part fits there at the widest tile (32 vec
 * columns, at most feat), else what it needs at that tile, up to max_bytes
 * (the device's opt-in limit; at most GCN_SMEM_BYTES when that is
 * smaller).  One pass over a wide block's rows took half the time of
 * narrow tiles in 48 KB (ogbn-arxiv, communities of 256: docs/perf.md). */
size_t gcn_smem_block_bytes(int feat, int vec, int32_t ref_rows, size_t max_bytes);

/* The feature tile for staging ref_rows rows of X in smem_bytes: a multiple
 * of vec, at most 32 vec (one vector a lane) and feat, at least vec. */
int gcn_smem_tile(int feat, int vec, int32_t ref_rows, size_t smem_bytes);

/* Whether staging is worth it: the typical part fits with a tile of at
 * least min(feat, 16) columns (a narrower tile means many passes over the
 * matrix for little reuse). */
bool gcn_smem_useful(int feat, int32_t ref_rows, size_t smem_bytes);

/* The rows a block can stage at that tile. */
int32_t gcn_smem_task_rows(int tile, size_t smem_bytes);

/* The part size the tile is chosen for: the largest part of at most twice
 * the level's nominal size (a few oversized parts do not shrink every
 * tile; they are read from global memory instead). */
int32_t gcn_smem_ref_rows(const int32_t *part_ptr, int32_t n_parts, int32_t nominal);

/* The rows up to which small parts are packed into one task: enough for
 * four rows a group of lanes (fewer rows a block leave the GPU idle, more
 * serialise each group), never fewer than the reference part, never more
 * than a block can stage. */
int32_t gcn_smem_pack_rows(int groups, int32_t ref_rows, int32_t stage_rows);

/* Packs consecutive parts into tasks: tasks[k] = {first row, end row,
 * staged (1) or not (0), 0}.  Parts are packed while the task has at most
 * pack_rows rows; a larger part that a block can stage (<= stage_rows) is
 * a task of its own; a part too large to stage becomes unstaged tasks of
 * pack_rows rows; empty parts vanish.  tasks has room for
 * gcn_smem_max_tasks entries. */
int64_t gcn_smem_max_tasks(int32_t n_parts, int32_t n_rows, int32_t pack_rows);
int32_t gcn_smem_tasks(const int32_t *part_ptr, int32_t n_parts, int32_t pack_rows,
                       int32_t stage_rows, int32_t (*tasks)[4]);

/* Row i of the task of rows [r0, r1): meta = {first non-zero, first staged
 * non-zero, end of the staged ones, end}; the staged ones are the columns
 * inside [r0, r1) when the task is staged (all of a row when block_diag,
 * else found by binary search in sorted columns), none otherwise.  A row
 * with more than `chunk` non-zeros gets {-1, first, end, end}: long-row
 * pieces serve it.  The plan runs it on the GPU, one thread a row. */
GCN_HD void gcn_smem_row_meta(const int32_t *row_ptr, const int32_t *col_idx, int32_t r0,
                              int32_t r1, bool staged, int32_t chunk, bool block_diag, int32_t i,
                              int32_t meta[4])
{
    int32_t b = row_ptr[i], e = row_ptr[i + 1], m0 = b, m1 = b;
    if (e - b > chunk) {
        b = -1;
        m0 = row_ptr[i];
        m1 = e;
    } else if (staged && block_diag) {
        m1 = e;
    } else if (staged) {
        m0 = (int32_t)gcn_lower_bound(col_idx, b, e, r0);
        m1 = (int32_t)gcn_lower_bound(col_idx, m0, e, r1);
    }
    meta[0] = b;
    meta[1] = m0;
    meta[2] = m1;
    meta[3] = e;
}

/* ---- intra_dense: dense diagonal blocks --------------------------------- */

/* Floats of all dense blocks (sum of part sizes squared). */
int64_t gcn_dense_floats(const int32_t *part_ptr, int32_t n_parts);

/* Whether the dense blocks are worth storing: at most 16 floats per intra
 * non-zero (density >= 1/16) and at most 2^26 floats in all. */
bool gcn_dense_worth(int64_t floats, int64_t nnz);

/* Whether a level can be worth splitting at all: its communities fit
 * shared memory at this width (gcn_smem_useful), or dense blocks of them
 * could be worth storing even if every non-zero were inside one. */
bool gcn_level_worth_split(const int32_t *part_ptr, int32_t n_parts, int32_t nominal,
                           int64_t nnz, int feat, size_t smem_bytes);

/* Where each part's block starts in the array of all blocks, row-major one
 * after another: offset[p] = the sum of the squared sizes of the parts
 * before p (n_parts + 1 entries). */
void gcn_dense_offsets(const int32_t *part_ptr, int32_t n_parts, int64_t *offset);

/* Adds row i's entries to its row of the block blk of its part, whose s
 * rows start at row lo: blk starts zeroed, duplicates add up in order.  The
 * matrix must be block diagonal.  The plan runs it on the GPU, one thread
 * a row. */
GCN_HD void gcn_dense_fill_row(const int32_t *row_ptr, const int32_t *col_idx,
                               const float *values, int32_t i, int32_t lo, int32_t s, float *blk)
{
    for (int32_t e = row_ptr[i]; e < row_ptr[i + 1]; e++)
        blk[(int64_t)(i - lo) * s + (col_idx[e] - lo)] += values[e];
}

/* Row tiles of `rows` rows over every part: tasks[k] = {part, first row}.
 * Returns their number; tasks may be NULL to count. */
int64_t gcn_dense_tasks(const int32_t *part_ptr, int32_t n_parts, int rows, int32_t (*tasks)[2]);

/* ---- inter_csr: row blocks with staged column indices -------------------- */

/* Cuts rows into block tasks of at most max_nz non-zeros and max_rows rows:
 * tasks[k] = {first row, end row, first non-zero, end non-zero}; a row with
 * more than max_nz non-zeros is one task of its own (its block loops over
 * staged pieces).  Returns the count; tasks may be NULL to count. */
int64_t gcn_inter_tasks(const int32_t *row_ptr, int32_t n_rows, int32_t max_nz, int32_t max_rows,
                        int32_t (*tasks)[4]);

#ifdef __cplusplus
}
#endif
#endif
