/* nbtext's compiled kernel: many documents' entries visited token by token, for their products
 * with a model held by token (sums.c's sums_product, layer.c's layer_scores). */
#ifndef NBTEXT_BYTOKEN_H
#define NBTEXT_BYTOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "ints.h"

/* A block of rows' entries sorted by column: keys[q] = (column << bits) | the entry's place in
 * the block, rising; row_of[place] its row, from the block's first. Memory of one block, kept
 * from block to block. */
typedef struct {
    uint64_t *keys, *tmp;
    uint32_t *row_of;
    size_t cap;      /* entries the three arrays hold */
    unsigned bits;
} ByToken;

/* The block of rows after ``from`` (of ``rows``, starts ``indptr``): rows up to a bound of entries
 * in all, one row at least; its end row in *end, its entries' count in *n, sorted into b.
 * 1; 0 where a column is negative or not below ``tokens``; -1 out of memory. Runs without the
 * GIL. */
int by_token_next(ByToken *b, Ints cols, const int64_t *indptr, size_t from, size_t rows, size_t tokens,
                  size_t *end, size_t *n);
void by_token_free(ByToken *b);

/* A key's column and its entry's place in the block */
static inline size_t by_token_column(const ByToken *b, uint64_t key) { return (size_t)(key >> b->bits); }
static inline size_t by_token_place(const ByToken *b, uint64_t key)
{
    return (size_t)(key & ((UINT64_C(1) << b->bits) - 1));
}

#endif
