/* nbtext's compiled kernel: the Counter, which tokenizes and counts a chunk of documents as
 * nbtext.features.counting.Batch.of_tokens counts the pure-Python tokenizer's tokens.
 *
 * Counter(lowercase, max_word_length, ngram_max, char_ngram_min, char_ngram_max, fallback), then
 * for each document add_tokens(tokens), add_text(text) for each of its texts and
 * end_document(chars); result() gives (blob, keys, data, indices, indptr, n_cols): the chunk's
 * tokens in first-seen order (each followed by a NUL), their 64-bit keys (hash.h) and its CSR
 * rows. Words are found here in ASCII text; a run holding other characters goes to `fallback`
 * (nbtext.text.words.words). */
#ifndef NBTEXT_TOKENIZE_H
#define NBTEXT_TOKENIZE_H

#include <Python.h>

extern PyTypeObject CounterType;

#endif
