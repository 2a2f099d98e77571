/* nbtext's compiled kernel: radix.h's sort (the interface is there). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "radix.h"

/* A digit's bits at most (its counts, 2^11 of them, stay in a core's first-level cache), and the
 * passes at most (6 digits of 11 bits: every 64-bit value). */
enum { DIGIT_MAX = 11, PASSES_MAX = 6 };

/* a[0:n] sorted ascending by their bits from ``shift`` up (each below bound << shift), by
 * least-significant-digit radix passes through tmp (n more), and a short run by insertion (on
 * the whole values: equal past ``shift`` only where the callers' values are equal). Linear
 * however the values came (a document's columns are in first-seen order, which mail chooses),
 * and without a call to a comparison a pair, as qsort makes. A row's columns (shift 0), and
 * move_rows's and bytoken's packed keys.
 *
 * The digits' width is chosen for n: each pass moves all n values and sums its digit's 2^w
 * counts, so a long run takes fewer, wider digits (two of 11 bits for a block of a million
 * tokens' keys) and a short one narrower (three of 7 bits for a row's); every digit's counts
 * are made in one read before the passes, and a digit all values share is passed over. */
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
    unsigned bits = 0;  /* of the values past shift */
    while (bits < 64 - shift && bound > 1 && ((bound - 1) >> bits) != 0)
        bits++;
    if (!bits)
        return;
    unsigned width = DIGIT_MAX, passes = (bits + DIGIT_MAX - 1) / DIGIT_MAX;
    double best = (double)passes * ((double)n + (double)(1u << DIGIT_MAX));
    for (unsigned w = DIGIT_MAX - 1; w >= 1; w--) {
        unsigned p = (bits + w - 1) / w;
        if (p > PASSES_MAX)
            break;
        double cost = (double)p * ((double)n + (double)(1u << w));
        if (cost < best)
            best = cost, width = w, passes = p;
    }
    size_t at[PASSES_MAX][1u << DIGIT_MAX];
    size_t buckets = (size_t)1 << width, mask = buckets - 1;
    for (unsigned p = 0; p < passes; p++)
        memset(at[p], 0, buckets * sizeof at[p][0]);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = a[i] >> shift;
        for (unsigned p = 0; p < passes; p++)
            at[p][(v >> (p * width)) & mask]++;
    }
    uint64_t *src = a, *dst = tmp;
    for (unsigned p = 0; p < passes; p++) {
        unsigned d = shift + p * width;
        size_t *c = at[p], sum = 0;
        if (c[(src[0] >> d) & mask] == n)  /* (every value holds this digit: the order stays) */
            continue;
        for (size_t b = 0; b < buckets; b++) {
            size_t k = c[b];
            c[b] = sum;
            sum += k;
        }
        for (size_t i = 0; i < n; i++)
            dst[c[(src[i] >> d) & mask]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof(uint64_t));
}
