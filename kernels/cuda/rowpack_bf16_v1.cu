/* rowpack's kernels for vectors of one pair of bf16, and of one single
 * bf16 for odd widths (rowpack.cuh). */
#include "rowpack.cuh"

template rp_kernel gcn_rowpack_pick<bf16x2, 1>(bool, int, int, int);
template rp_kernel gcn_rowpack_pick<bf16x1, 1>(bool, int, int, int);
