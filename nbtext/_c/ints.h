/* nbtext's compiled kernel: an array of integers whose element size a caller's buffer sets (numpy
 * picks the smallest type: columns of 4 or 8 bytes, classes of 1, 2 or 4), read as int64 and
 * written from one (sums.c, layer.c, rows.c). */
#ifndef NBTEXT_INTS_H
#define NBTEXT_INTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const void *buf;
    size_t size;  /* bytes an element */
} Ints;

static inline int64_t int_at(Ints a, size_t i)
{
    switch (a.size) {
    case 1: return ((const uint8_t *)a.buf)[i];
    case 2: return ((const uint16_t *)a.buf)[i];
    case 4: return ((const int32_t *)a.buf)[i];
    default: return ((const int64_t *)a.buf)[i];
    }
}

static inline void put_int(void *buf, size_t size, size_t i, int64_t v)
{
    switch (size) {
    case 1: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case 2: ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case 4: ((int32_t *)buf)[i] = (int32_t)v; break;
    default: ((int64_t *)buf)[i] = v; break;
    }
}

#endif
