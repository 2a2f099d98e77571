/* nbtext's compiled kernel: bytoken.h's blocks of entries in token order.
 *
 * A product of documents with a model held by token reads, for each entry, its token's values:
 * random reads of arrays larger than the caches, which the product waits on. A block of rows'
 * entries sorted by column reads each token's values once for all the block's entries of it, in
 * rising addresses, while the block's rows' sums stay near the core (a chunk of documents holds
 * most of its tokens several times: docs/bench.md has the figures). A row's entries are visited
 * in the order of their columns, and equal columns in their order: a row's sums add its entries
 * in its own order where its columns rise (as nbtext's rows hold them): the same bits as row by
 * row. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "bytoken.h"
#include "radix.h"

/* A block's entries at most, unless one row holds more: a larger block reads a token fewer
 * times, a smaller one keeps its keys and its rows' sums nearer the core (docs/bench.md) */
enum { BLOCK_ENTRIES = 1 << 18 };

static int reserve(ByToken *b, size_t n)
{
    if (n <= b->cap)
        return 1;
    by_token_free(b);
    b->keys = PyMem_RawMalloc(n * sizeof *b->keys);
    b->tmp = PyMem_RawMalloc(n * sizeof *b->tmp);
    b->row_of = PyMem_RawMalloc(n * sizeof *b->row_of);
    if (!b->keys || !b->tmp || !b->row_of) {
        by_token_free(b);
        return 0;
    }
    b->cap = n;
    return 1;
}

void by_token_free(ByToken *b)
{
    PyMem_RawFree(b->keys);
    PyMem_RawFree(b->tmp);
    PyMem_RawFree(b->row_of);
    b->keys = b->tmp = NULL;
    b->row_of = NULL;
    b->cap = 0;
}

int by_token_next(ByToken *b, Ints cols, const int64_t *indptr, size_t from, size_t rows, size_t tokens,
                  size_t *end, size_t *n)
{
    size_t to = from + 1, first = (size_t)indptr[from];
    while (to < rows && (size_t)indptr[to + 1] - first <= BLOCK_ENTRIES && to - from < UINT32_MAX)
        to++;
    size_t count = (size_t)indptr[to] - first;
    unsigned bits = 0;
    while (bits < 64 && (count >> bits) != 0)
        bits++;
    if (bits == 64 || (bits && (uint64_t)tokens >> (64 - bits)))  /* (columns and places in one key) */
        return 0;
    if (!reserve(b, count ? count : 1))
        return -1;
    for (size_t r = from; r < to; r++)
        for (size_t e = (size_t)indptr[r]; e < (size_t)indptr[r + 1]; e++) {
            int64_t c = int_at(cols, e);
            if (c < 0 || (size_t)c >= tokens)
                return 0;
            b->keys[e - first] = ((uint64_t)c << bits) | (e - first);
            b->row_of[e - first] = (uint32_t)(r - from);
        }
    radix_sort_packed(b->keys, b->tmp, count, bits, tokens);
    b->bits = bits;
    *end = to, *n = count;
    return 1;
}
