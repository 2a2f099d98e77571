/* nbtext's compiled kernel: KeyIndex, the vocabulary's token key -> id index
 * (nbtext.features.vocabulary.CompiledIndex drives it; SortedLevels is the reference).
 *
 * KeyIndex(seed0, seed1); extend(blob, keys, ids, vocab_blob) gives a chunk's keys their ids,
 * appending new tokens in first-seen order; find(keys, ids) looks keys up (-1: absent);
 * keys(out) writes the keys in id order; len() is the number of tokens. */
#ifndef NBTEXT_KEYINDEX_H
#define NBTEXT_KEYINDEX_H

#include <Python.h>

extern PyTypeObject KeyIndexType;

#endif
