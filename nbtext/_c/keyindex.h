/* nbtext's compiled kernel: KeyIndex, the vocabulary's token key -> id index
 * (nbtext.features.vocabulary.CompiledIndex drives it; SortedLevels is the reference).
 *
 * KeyIndex(seed0, seed1); extend(blob, keys, ids, vocab_blob) gives a chunk's keys their ids,
 * appending new tokens in first-seen order; find(keys, ids) looks keys up (-1: absent);
 * keys(out) writes the keys in id order; reserve(n) makes room for n tokens in all at once; len()
 * is the number of tokens. */
#ifndef NBTEXT_KEYINDEX_H
#define NBTEXT_KEYINDEX_H

#include <Python.h>
#include <stdint.h>

extern PyTypeObject KeyIndexType;

/* ids[j] = the id of keys[j] (-1: absent) for j < m, in C (nbtext/_c/score.c): 0, or -1 with
 * TypeError set where index is not an initialized KeyIndex. */
int keyindex_find(PyObject *index, const uint64_t *keys, size_t m, int64_t *ids);

/* keys(blob) -> bytes of uint64: the keys of NUL-terminated tokens (token_keys; for tests) */
PyObject *kernel_keys(PyObject *self, PyObject *arg);

#endif
