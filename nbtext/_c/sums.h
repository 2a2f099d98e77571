/* nbtext's compiled kernel: sums held by token (nbtext.nb.sparse.TokenSums; its numpy settle is
 * the reference, bit for bit). */
#ifndef NBTEXT_SUMS_H
#define NBTEXT_SUMS_H

#include <Python.h>

/* settle_sums(indptr, classes, values, parts, k, out_indptr, out_classes, out_values[, folded]) -> int:
 * TokenSums.settle, the held CSR arrays and the appended parts folded into the outputs; the
 * entries written, or -1 where numpy must do the work */
PyObject *kernel_settle_sums(PyObject *self, PyObject *args);
/* sums_product(data, indices, indptr, s_indptr, s_classes, s_values, out) -> bool: documents
 * times sums held by token, into a dense rows x k out (nb.sparse.product) */
PyObject *kernel_sums_product(PyObject *self, PyObject *args);

#endif
