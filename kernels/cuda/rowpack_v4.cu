/* rowpack's kernels for vectors of 4 floats (rowpack.cuh). */
#include "rowpack.cuh"

template rp_kernel gcn_rowpack_pick<float, 4>(bool, int, int, int);
