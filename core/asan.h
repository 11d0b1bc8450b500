/* AddressSanitizer's manual poisoning, for memory the library keeps on free
 * lists instead of freeing it (cpu_pool.c's blocks, tensor.c's headers): a
 * use after release is still reported.  Nothing without ASan. */
#ifndef GCN_ASAN_H
#define GCN_ASAN_H

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GCN_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(GCN_ASAN)
#define GCN_ASAN 1
#endif

#ifdef GCN_ASAN
#include <sanitizer/asan_interface.h>
#define GCN_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define GCN_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define GCN_POISON(p, n) ((void)(p), (void)(n))
#define GCN_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#endif
