/* nbtext's compiled kernel: one counted message's sums over a model's cached token weights
 * (nbtext.serve.scoring drives it; fastscore's contributions and sums are the reference, and
 * tests/test_serve.py holds the two equal bit for bit).
 *
 * score_counted(index, blob, keys, columns, counts, vocab, starts, lengths, weights, mode, jll,
 *               fill[, layer_rows, layer_fill, layer_sums]) -> (unknown, known): jll[c] += x_t * w_ct
 * over the message's known tokens in the order of its columns, as fastscore adds them; with a
 * decision layer's rows, its sums (nb.layer.Layer.values') too. */
#ifndef NBTEXT_SCORE_H
#define NBTEXT_SCORE_H

#include <Python.h>

PyObject *kernel_score_counted(PyObject *self, PyObject *args);

#endif
