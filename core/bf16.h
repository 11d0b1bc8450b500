/* bfloat16 storage: the conversions between fp32 and bf16 bit patterns,
 * shared by the CPU and CUDA backends so both round the same, bit for bit. */
#ifndef GCN_BF16_H
#define GCN_BF16_H

#include <stdint.h>
#include <string.h>

#include "philox.h"

/* The bf16 nearest to x, ties to even (IEEE round-to-nearest-even, as
 * __float2bfloat16_rn): the upper 16 bits of x after adding 0x7fff plus
 * the lowest kept bit.  Finite values past the largest bf16 round to
 * infinity; a NaN stays a NaN (quiet, sign kept). */
GCN_HD uint16_t gcn_bf16_from_float(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* The fp32 value of bf16 bits b: exact (bf16 is fp32's upper half). */
GCN_HD float gcn_bf16_to_float(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* x rounded to the nearest bf16 and back: the value a bf16 store keeps. */
GCN_HD float gcn_bf16_round(float x)
{
    return gcn_bf16_to_float(gcn_bf16_from_float(x));
}

#endif
