/* The SpMM implementations built into the library, one object per kernel;
 * kernels/spmm.c gathers them into the registry table.  Internal. */
#ifndef GCN_SPMM_IMPLS_H
#define GCN_SPMM_IMPLS_H

#include "spmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "cpu": the plain reference loop (kernels/spmm_cpu.c). */
extern const gcn_spmm_impl gcn_spmm_cpu;

/* "cusparse": cusparseSpMM on CSR with row-major dense operands
 * (kernels/spmm_cusparse.cu). */
extern const gcn_spmm_impl gcn_spmm_cusparse;

#ifdef __cplusplus
}
#endif
#endif
