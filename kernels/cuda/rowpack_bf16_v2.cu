/* rowpack's kernels for vectors of 2 pairs of bf16 (rowpack.cuh). */
#include "rowpack.cuh"

template rp_kernel gcn_rowpack_pick<bf16x2, 2>(bool, int, int, int);
