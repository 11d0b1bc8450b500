/* rowpack's kernels for vectors of 1 float (rowpack.cuh). */
#include "rowpack.cuh"

template rp_kernel gcn_rowpack_pick<float, 1>(bool, int, int, int);
