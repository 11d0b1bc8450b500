/* Counts the heap allocations the library makes: between alloc_count_begin
 * and alloc_count_end, every call of malloc, calloc, realloc,
 * aligned_alloc or posix_memalign in the process (under AddressSanitizer,
 * every allocation of its allocator) made on behalf of libgcn, that is
 * whose call stack, walked out from the allocator, reaches the library's
 * code.  Calls of the OpenMP runtime or OpenBLAS on their own behalf (a
 * team of threads for a parallel region, a threaded product's job list)
 * are not counted, even when the library called them. */
#ifndef GCN_TESTS_ALLOC_COUNT_H
#define GCN_TESTS_ALLOC_COUNT_H

#include <stdint.h>

typedef struct alloc_count {
    uint64_t calls;    /* the library's allocations */
    const char *first; /* the first one's function ("malloc", ...), NULL when none */
    char where[160];   /* the library's frame that made it: object+offset, for addr2line */
} alloc_count;

/* Starts counting (the test fails if the library's code cannot be found). */
void alloc_count_begin(void);

/* Stops counting and returns what was counted since alloc_count_begin. */
alloc_count alloc_count_end(void);

#endif
