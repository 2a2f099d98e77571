/* nbtext's compiled kernel: sparse CSR rows (nbtext.features.rows.Rows; its numpy code is the
 * reference, bit for bit). Each function checks every index it reads, refuses an output that
 * shares bytes with an input, and returns False where numpy must do the work. */
#ifndef NBTEXT_ROWS_H
#define NBTEXT_ROWS_H

#include <Python.h>

/* move_rows(data, indices, indptr, mapping, n_cols, out_data, out_indices[, out_indptr]) -> bool:
 * Rows.moved onto distinct columns (with out_indptr, columns mapped below 0 dropped) */
PyObject *kernel_move_rows(PyObject *self, PyObject *args);
/* own_columns(data, indices, indptr, rows, width, out_data, out_indices, out_indptr) -> bytes of
 * int64 columns: Rows.own_columns */
PyObject *kernel_own_columns(PyObject *self, PyObject *args);
/* rows_dot(data, indices, indptr, W, k, out) -> bool: Rows @ W for float64 rows and W */
PyObject *kernel_rows_dot(PyObject *self, PyObject *args);
/* group_sums(data, indices, indptr, group, k, out, df) -> bool: Rows.group_sums */
PyObject *kernel_group_sums(PyObject *self, PyObject *args);
/* token_sums(data, indices, indptr, group, k, out_indptr, out_classes, out_values, df) -> int:
 * nb.sparse.group_sums's sums held by token, the entries written (-1: an index out of range) */
PyObject *kernel_token_sums(PyObject *self, PyObject *args);

#endif
