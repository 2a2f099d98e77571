/* nbtext's compiled kernel: the hash of a token's bytes, its 64-bit key, shared by the counter
 * (tokenize.c), the vocabulary's index (keyindex.c) and their callers in Python.
 *
 * A key is FNV-1a over the token's UTF-8 bytes, then SplitMix64's finalizer: the same key as
 * nbtext.features.vocabulary.token_keys, the pure-Python path's. FNV reads bytes in order, so a
 * word n-gram's key goes on from its first word's state. */
#ifndef NBTEXT_HASH_H
#define NBTEXT_HASH_H

#include <stddef.h>
#include <stdint.h>

#define FNV_BASIS 0xCBF29CE484222325ULL
#define FNV_PRIME 0x100000001B3ULL

static inline uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= FNV_PRIME;
    }
    return h;
}

static inline uint64_t finish(uint64_t h)
{
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBULL;
    h ^= h >> 31;
    return h;
}

#endif
