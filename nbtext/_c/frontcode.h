/* nbtext's compiled kernel: the model file's vocabulary, sorted by bytes and front-coded, and
 * decoded (nbtext.store.vocabfile; its numpy functions are the reference, byte for byte). */
#ifndef NBTEXT_FRONTCODE_H
#define NBTEXT_FRONTCODE_H

#include <Python.h>

/* front_code(blob, block) -> (front-coded bytes, int64 block heads, int64 order) */
PyObject *kernel_front_code(PyObject *self, PyObject *args);
/* front_decode(fc, block[, limit]) -> bytes: the NUL-terminated tokens, or ValueError */
PyObject *kernel_front_decode(PyObject *self, PyObject *args);
/* first_unordered(blob) -> int: the first NUL-terminated token not after the one before it in
 * byte order, -1 when none is */
PyObject *kernel_first_unordered(PyObject *self, PyObject *arg);
/* pick_tokens(blob, ids) -> bytes: the NUL-terminated tokens at the increasing positions ids */
PyObject *kernel_pick_tokens(PyObject *self, PyObject *args);

#endif
