/* nbtext's compiled kernel: radix.h's sort (the interface is there). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "radix.h"

/* a[0:n] sorted ascending by their bits from ``shift`` up (each below bound << shift), by
 * least-significant-digit radix passes through tmp (n more), one per byte that ``bound`` needs,
 * and a short run by insertion (on the whole values: equal past ``shift`` only where the
 * callers' values are equal). Linear however the values came (a document's columns are in
 * first-seen order, which mail chooses), and without a call to a comparison a pair, as qsort
 * makes. A row's columns (shift 0), and move_rows's packed keys (shift 32). */
void radix_sort_packed(uint64_t *a, uint64_t *tmp, size_t n, unsigned shift, uint64_t bound)
{
    if (n < 48) {
        for (size_t i = 1; i < n; i++) {
            uint64_t v = a[i];
            size_t j = i;
            for (; j > 0 && a[j - 1] > v; j--)
                a[j] = a[j - 1];
            a[j] = v;
        }
        return;
    }
    uint64_t *src = a, *dst = tmp;
    for (unsigned d = 0; d < 64 - shift && bound > 1 && ((bound - 1) >> d) != 0; d += 8) {
        size_t at[256] = {0};
        for (size_t i = 0; i < n; i++)
            at[(src[i] >> (shift + d)) & 255]++;
        size_t sum = 0;
        for (size_t b = 0; b < 256; b++) {
            size_t k = at[b];
            at[b] = sum;
            sum += k;
        }
        for (size_t i = 0; i < n; i++)
            dst[at[(src[i] >> (shift + d)) & 255]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof(uint64_t));
}
