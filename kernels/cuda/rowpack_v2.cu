/* rowpack's kernels for vectors of 2 floats (rowpack.cuh). */
#include "rowpack.cuh"

template rp_kernel gcn_rowpack_pick<float, 2>(bool, int, int, int);
