/* The SpMM implementations built into the library, one object per kernel;
 * kernels/spmm/spmm.c gathers them into the registry table.  Internal. */
#ifndef GCN_SPMM_IMPLS_H
#define GCN_SPMM_IMPLS_H

#include "spmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "cpu": the plain reference loop (kernels/cpu/cpu.c). */
extern const gcn_spmm_impl gcn_spmm_cpu;

/* "cusparse": cusparseSpMM on CSR with row-major dense operands
 * (kernels/cuda/cusparse.cu). */
extern const gcn_spmm_impl gcn_spmm_cusparse;

/* "rowsplit": row-parallel CSR, deterministic (kernels/cuda/rowsplit.cu). */
extern const gcn_spmm_impl gcn_spmm_rowsplit;

/* "rowpack": consecutive rows packed into units of 32 or 64 non-zeros,
 * deterministic (kernels/cuda/rowpack.cu). */
extern const gcn_spmm_impl gcn_spmm_rowpack;

/* "rowpack_wide": rowpack with units of 96 non-zeros for groups of 32
 * lanes, in blocks of 512 threads (kernels/cuda/rowpack.cu). */
extern const gcn_spmm_impl gcn_spmm_rowpack_wide;

/* "rowgroup": plan-free row-parallel CSR, deterministic, for matrices that
 * live one step (kernels/cuda/rowgroup.cu); no selector role. */
extern const gcn_spmm_impl gcn_spmm_rowgroup;

/* "accel": Accel-GCN degree-sorted block partition (kernels/cuda/accel.cu). */
extern const gcn_spmm_impl gcn_spmm_accel;

/* "mergepath": MergePath-SpMM (kernels/cuda/mergepath.cu). */
extern const gcn_spmm_impl gcn_spmm_mergepath;

/* AdaptGear's subgraph kernels (kernels/adaptgear/, docs/kernels.md). */

/* "intra_smem": communities staged in shared memory, deterministic; on a
 * level view of the whole matrix it also gathers the inter part. */
extern const gcn_spmm_impl gcn_spmm_intra_smem;

/* "intra_dense": the diagonal blocks stored dense, one small product each. */
extern const gcn_spmm_impl gcn_spmm_intra_dense;

/* "inter_csr": row blocks with their column indices staged in shared
 * memory, deterministic. */
extern const gcn_spmm_impl gcn_spmm_inter_csr;

/* "inter_coo": edge-parallel over COO with atomic adds. */
extern const gcn_spmm_impl gcn_spmm_inter_coo;

#ifdef __cplusplus
}
#endif
#endif
