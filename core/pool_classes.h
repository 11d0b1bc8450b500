/* The size classes both memory pools (cpu_pool.c, cuda_pool.cu) round
 * requests to: 512 bytes and below is class 0; above, each power-of-two
 * octave (2^e, 2^(e+1)] is cut into 8 equal steps, so a block wastes at most
 * 1/8 of its size.  Internal; C and CUDA C++. */
#ifndef GCN_POOL_CLASSES_H
#define GCN_POOL_CLASSES_H

#include <stddef.h>

#define GCN_POOL_MIN_BLOCK 512
#define GCN_POOL_STEPS_LOG2 3 /* 8 steps per octave */
#define GCN_POOL_CLASSES (1 + (64 - 9) * (1 << GCN_POOL_STEPS_LOG2))

/* Class index and rounded size of a request. */
static inline int gcn_pool_size_class(size_t bytes, size_t *rounded)
{
    if (bytes <= GCN_POOL_MIN_BLOCK) {
        *rounded = GCN_POOL_MIN_BLOCK;
        return 0;
    }
    int e = 63 - __builtin_clzll((unsigned long long)(bytes - 1)); /* 2^e < bytes <= 2^(e+1) */
    size_t step = (size_t)1 << (e - GCN_POOL_STEPS_LOG2);
    size_t q = (bytes + step - 1) / step; /* in (8, 16] */
    *rounded = q * step;
    return 1 + (e - 9) * (1 << GCN_POOL_STEPS_LOG2) + (int)(q - (1 << GCN_POOL_STEPS_LOG2) - 1);
}

/* The rounded size of class cls. */
static inline size_t gcn_pool_class_bytes(int cls)
{
    if (cls == 0)
        return GCN_POOL_MIN_BLOCK;
    int e = 9 + (cls - 1) / (1 << GCN_POOL_STEPS_LOG2);
    size_t q = (size_t)((cls - 1) % (1 << GCN_POOL_STEPS_LOG2)) + (1 << GCN_POOL_STEPS_LOG2) + 1;
    return q * ((size_t)1 << (e - GCN_POOL_STEPS_LOG2));
}

#endif
