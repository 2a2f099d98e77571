/* nbtext's compiled kernel: a least-significant-digit radix sort of packed 64-bit values, for a
 * document's columns (tokenize.c) and a row's packed entries (rows.c). */
#ifndef NBTEXT_RADIX_H
#define NBTEXT_RADIX_H

#include <stddef.h>
#include <stdint.h>

/* a[0:n] sorted ascending by their bits from ``shift`` up (each below bound << shift), through
 * tmp (n more); equal past ``shift`` only where the callers' values are equal. */
void radix_sort_packed(uint64_t *a, uint64_t *tmp, size_t n, unsigned shift, uint64_t bound);

#endif
