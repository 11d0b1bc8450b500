/* A CUDA SpMM kernel written the way a program using the library would
 * write one (public API only), for test_gpu_api.c. */
#ifndef GCN_TEST_GPU_USER_KERNEL_H
#define GCN_TEST_GPU_USER_KERNEL_H

#include "gcn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "thread_per_entry": one thread per output element, on the context's
 * stream; counts its launches in *user_kernel_launches. */
extern const gcn_spmm_impl user_cuda_kernel;
extern int user_kernel_launches;

#ifdef __cplusplus
}
#endif
#endif
