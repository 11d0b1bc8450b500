/* rowpack's kernels for vectors of 4 pairs of bf16 (rowpack.cuh). */
#include "rowpack.cuh"

template rp_kernel gcn_rowpack_pick<bf16x2, 4>(bool, int, int, int);
