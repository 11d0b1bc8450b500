/* Host planning of the subgraph kernels (plan.h): tiles and tasks of the
 * community kernel, dense diagonal blocks, inter-community row blocks. */
#include <string.h>

#include "plan.h"

/* ---- intra_smem ------------------------------------------------------------ */

/* The widest staging tile: 32 vectors of vec columns, at most feat, a
 * multiple of vec and at least one vector. */
static int widest_tile(int feat, int vec)
{
    int widest = 32 * vec < feat ? 32 * vec : feat;
    widest -= widest % vec;
    return widest > vec ? widest : vec;
}

int gcn_smem_tile(int feat, int vec, int32_t ref_rows, size_t smem_bytes)
{
    int widest = widest_tile(feat, vec);
    int64_t rows = ref_rows > 0 ? ref_rows : 1;
    int64_t fit = (int64_t)(smem_bytes / sizeof(float)) / rows;
    int tile = fit < widest ? (int)fit : widest;
    tile -= tile % vec;
    return tile >= vec ? tile : vec;
}

bool gcn_smem_useful(int feat, int32_t ref_rows, size_t smem_bytes)
{
    int want = feat < 16 ? feat : 16;
    return gcn_smem_tile(feat, 1, ref_rows, smem_bytes) >= want &&
           (int64_t)ref_rows * want * (int64_t)sizeof(float) <= (int64_t)smem_bytes;
}

size_t gcn_smem_block_bytes(int feat, int vec, int32_t ref_rows, size_t max_bytes)
{
    size_t need = (size_t)(ref_rows > 0 ? ref_rows : 1) * (size_t)widest_tile(feat, vec) *
                  sizeof(float);
    if (need <= GCN_SMEM_BYTES || max_bytes <= GCN_SMEM_BYTES)
        return GCN_SMEM_BYTES;
    return need < max_bytes ? need : max_bytes;
}

int32_t gcn_smem_task_rows(int tile, size_t smem_bytes)
{
    int64_t rows = (int64_t)(smem_bytes / sizeof(float)) / (tile > 0 ? tile : 1);
    return (int32_t)(rows < INT32_MAX ? rows : INT32_MAX);
}

int32_t gcn_smem_ref_rows(const int32_t *part_ptr, int32_t n_parts, int32_t nominal)
{
    int32_t ref = nominal > 0 ? nominal : 1;
    for (int32_t p = 0; p < n_parts; p++) {
        int32_t s = part_ptr[p + 1] - part_ptr[p];
        if (s > ref && (int64_t)s <= 2 * (int64_t)nominal)
            ref = s;
    }
    return ref;
}

int32_t gcn_smem_pack_rows(int groups, int32_t ref_rows, int32_t stage_rows)
{
    int32_t rows = 4 * groups > ref_rows ? 4 * groups : ref_rows;
    return rows < stage_rows ? rows : stage_rows;
}

int64_t gcn_smem_max_tasks(int32_t n_parts, int32_t n_rows, int32_t pack_rows)
{
    return (int64_t)n_parts + n_rows / (pack_rows > 0 ? pack_rows : 1) + 1;
}

static void put(int32_t (*tasks)[4], int32_t *n, int32_t r0, int32_t r1, int32_t staged)
{
    memcpy(tasks[(*n)++], (int32_t[4]){r0, r1, staged, 0}, sizeof tasks[0]);
}

int32_t gcn_smem_tasks(const int32_t *part_ptr, int32_t n_parts, int32_t pack_rows,
                       int32_t stage_rows, int32_t (*tasks)[4])
{
    int32_t n = 0, r0 = 0, r1 = 0; /* the task being packed: rows [r0, r1) */
    for (int32_t p = 0; p < n_parts; p++) {
        int32_t lo = part_ptr[p], hi = part_ptr[p + 1], s = hi - lo;
        if (s == 0)
            continue;
        if (s <= pack_rows && (int64_t)r1 - r0 + s <= pack_rows) {
            r1 = hi;
            continue;
        }
        if (r1 > r0)
            put(tasks, &n, r0, r1, 1);
        r0 = r1 = lo;
        if (s <= pack_rows) {
            r1 = hi;
            continue;
        }
        if (s <= stage_rows)
            put(tasks, &n, lo, hi, 1);
        for (int32_t k = lo; s > stage_rows && k < hi; k += pack_rows) /* too large to stage */
            put(tasks, &n, k, hi - k > pack_rows ? k + pack_rows : hi, 0);
        r0 = r1 = hi;
    }
    if (r1 > r0)
        put(tasks, &n, r0, r1, 1);
    return n;
}

/* ---- intra_dense ----------------------------------------------------------- */

int64_t gcn_dense_floats(const int32_t *part_ptr, int32_t n_parts)
{
    int64_t n = 0;
    for (int32_t p = 0; p < n_parts; p++) {
        int64_t s = part_ptr[p + 1] - part_ptr[p];
        n += s * s;
    }
    return n;
}

bool gcn_dense_worth(int64_t floats, int64_t nnz)
{
    return floats <= ((int64_t)1 << 26) && floats <= 16 * (nnz > 0 ? nnz : 1);
}

bool gcn_level_worth_split(const int32_t *part_ptr, int32_t n_parts, int32_t nominal,
                           int64_t nnz, int feat, size_t smem_bytes)
{
    return gcn_smem_useful(feat, gcn_smem_ref_rows(part_ptr, n_parts, nominal), smem_bytes) ||
           gcn_dense_worth(gcn_dense_floats(part_ptr, n_parts), nnz);
}

void gcn_dense_offsets(const int32_t *part_ptr, int32_t n_parts, int64_t *offset)
{
    offset[0] = 0;
    for (int32_t p = 0; p < n_parts; p++) {
        int64_t s = part_ptr[p + 1] - part_ptr[p];
        offset[p + 1] = offset[p] + s * s;
    }
}

int64_t gcn_dense_tasks(const int32_t *part_ptr, int32_t n_parts, int rows, int32_t (*tasks)[2])
{
    int64_t n = 0;
    for (int32_t p = 0; p < n_parts; p++)
        for (int32_t r = part_ptr[p]; r < part_ptr[p + 1]; r += rows, n++)
            if (tasks)
                memcpy(tasks[n], (int32_t[2]){p, r}, sizeof tasks[0]);
    return n;
}

/* ---- inter_csr ------------------------------------------------------------- */

int64_t gcn_inter_tasks(const int32_t *row_ptr, int32_t n_rows, int32_t max_nz, int32_t max_rows,
                        int32_t (*tasks)[4])
{
    int64_t n = 0;
    int32_t r0 = 0;
    while (r0 < n_rows) {
        int32_t r1 = r0 + 1;
        if (row_ptr[r1] - row_ptr[r0] <= max_nz)
            while (r1 < n_rows && r1 - r0 < max_rows && row_ptr[r1 + 1] - row_ptr[r0] <= max_nz)
                r1++;
        if (tasks)
            memcpy(tasks[n], (int32_t[4]){r0, r1, row_ptr[r0], row_ptr[r1]}, sizeof tasks[0]);
        n++;
        r0 = r1;
    }
    return n;
}
