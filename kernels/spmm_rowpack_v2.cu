/* rowpack's kernels for vectors of 2 floats (spmm_rowpack.cuh). */
#include "spmm_rowpack.cuh"

template rp_kernel gcn_rowpack_pick<2>(bool, int, int, int);
