/* nbtext's compiled kernel: the decision layer's loops over documents (nbtext.nb.layer; its numpy
 * code is the reference, and tests/test_layer.py holds the two to the same numbers). */
#ifndef NBTEXT_LAYER_H
#define NBTEXT_LAYER_H

#include <Python.h>

/* svm_pass(order, data, indices, indptr, R, inv, Y, Qii, diag, W, b, alpha, hi_old, hi, lo, kept)
 * -> documents kept (-1: an index out of range): a pass of solve_squared_hinge's dual coordinate
 * descent */
PyObject *kernel_svm_pass(PyObject *self, PyObject *args);
/* layer_scores(data, x, indices, indptr, s_indptr, classes, D, rest, tokens, rw, nb, sq, sums, dots) -> bool:
 * NB's product and the layer's sums of many documents in one pass */
PyObject *kernel_layer_scores(PyObject *self, PyObject *args);

#endif
