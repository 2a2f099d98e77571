/* nbtext's compiled kernel: bit tricks and a prefetch hint, with portable fallbacks for
 * compilers without GCC's builtins. */
#ifndef NBTEXT_BITS_H
#define NBTEXT_BITS_H

#include <stdint.h>

/* A hint that memory is about to be read (random reads of arrays larger than a cache) */
#if defined(__GNUC__) || defined(__clang__)
#define KI_PREFETCH(p) __builtin_prefetch(p)
#else
#define KI_PREFETCH(p) ((void)0)
#endif

static inline int popcount64(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_popcountll(x);
#else
    int n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
#endif
}

static inline int ctz64(uint64_t x)  /* x != 0 */
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int n = 0;
    while (!(x & 1)) {
        x >>= 1;
        n++;
    }
    return n;
#endif
}

#endif
