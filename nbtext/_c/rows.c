#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bits.h"
#include "ints.h"
#include "overlap.h"
#include "radix.h"
#include "rows.h"

/* -- rows onto the vocabulary's ids ------------------------------------------------------------ */

/* move_rows(data, indices, indptr, mapping, n_cols, out_data, out_indices[, out_indptr]) -> bool:
 * nbtext.features.rows.Rows.moved for a mapping that sends the rows' columns to distinct
 * columns below n_cols (what train's reservoir holds: a chunk's columns onto their ids),
 * written into out_data (values of 2, 4 or 8 bytes, moved as they are: uint16, float32 or
 * float64) and out_indices (int32, or int64 when the itemsize says so),
 * each row's columns sorted. Without out_indptr the row starts stay, and a column mapped
 * below 0 is refused; with it (int64, as long as indptr), such a column is dropped (a chunk's
 * tokens a model lacks, at predict), the kept entries written from the start of the outputs
 * and the rows' new starts into out_indptr. False, with nothing promised of the outputs,
 * where a column maps past n_cols (or below 0, without out_indptr), or two of a row's columns
 * to one (numpy then moves them, adding such entries up). Every index read is checked. */
PyObject *kernel_move_rows(PyObject *self, PyObject *args)
{
    Py_buffer dv = {0}, iv = {0}, pv = {0}, mv = {0}, odv = {0}, oiv = {0}, opv = {0};
    Py_ssize_t n_cols;
    PyObject *result = NULL;
    uint64_t *keys = NULL, *tmp = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nw*w*|w*:move_rows", &dv, &iv, &pv, &mv, &n_cols, &odv, &oiv, &opv))
        return NULL;
    int dropping = opv.obj != NULL;
    if (buffers_overlap((Py_buffer *[]){&odv, &oiv, &opv}, dropping ? 3 : 2, (Py_buffer *[]){&dv, &iv, &pv, &mv}, 4)) {
        PyErr_SetString(PyExc_ValueError, "move_rows: an output overlaps an input or another output");
        goto done;
    }
    size_t rows = (size_t)pv.len / sizeof(int64_t);
    if (rows < 1 || pv.len % sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "move_rows: arrays of the wrong sizes");
        goto done;
    }
    const int64_t *indptr = pv.buf, *mapping = mv.buf;
    size_t nnz = indptr[rows - 1] > 0 ? (size_t)indptr[rows - 1] : 0;
    size_t dsz = nnz ? (size_t)dv.len / nnz : 8;
    size_t isz = iv.len && nnz ? (size_t)iv.len / nnz : 4, osz = oiv.len && nnz ? (size_t)oiv.len / nnz : 4;
    size_t width = (size_t)mv.len / sizeof(int64_t);
    if ((dsz != 2 && dsz != 4 && dsz != 8) || (size_t)dv.len != dsz * nnz || mv.len % sizeof(int64_t)
        || (isz != 4 && isz != 8) || (osz != 4 && osz != 8) || (size_t)iv.len != isz * nnz
        || odv.len != dv.len || (size_t)oiv.len != osz * nnz || n_cols < 0
        || (osz == 4 && n_cols > INT32_MAX) || (uint64_t)n_cols >= ((uint64_t)1 << 32)
        || (dropping && opv.len != pv.len)) {
        PyErr_SetString(PyExc_ValueError, "move_rows: arrays of the wrong sizes");
        goto done;
    }
    const char *data = dv.buf;
    char *out_data = odv.buf;
    if (indptr[0] != 0 || (size_t)indptr[rows - 1] != nnz) {
        PyErr_SetString(PyExc_ValueError, "move_rows: row starts do not span the entries");
        goto done;
    }
    size_t longest = 0;
    for (size_t r = 0; r + 1 < rows; r++) {
        if (indptr[r + 1] < indptr[r]) {
            PyErr_SetString(PyExc_ValueError, "move_rows: row starts go backwards");
            goto done;
        }
        if ((size_t)(indptr[r + 1] - indptr[r]) > longest)
            longest = (size_t)(indptr[r + 1] - indptr[r]);
    }
    if (longest >= ((size_t)1 << 32)) {
        PyErr_SetString(PyExc_ValueError, "move_rows: a row too long");
        goto done;
    }
    keys = PyMem_Malloc((longest ? longest : 1) * sizeof *keys);
    tmp = PyMem_Malloc((longest ? longest : 1) * sizeof *tmp);
    if (!keys || !tmp) {
        PyErr_NoMemory();
        goto done;
    }
    int ok = 1;
    size_t w = 0;  /* entries written: p0 + j, unless columns were dropped */
    int64_t *out_indptr = dropping ? opv.buf : NULL;
    if (dropping)
        out_indptr[0] = 0;
    for (size_t r = 0; r + 1 < rows && ok; r++) {
        size_t p0 = (size_t)indptr[r], n = (size_t)indptr[r + 1] - p0, m = 0;
        for (size_t j = 0; j < n; j++) {
            int64_t c = isz == 4 ? ((const int32_t *)iv.buf)[p0 + j] : ((const int64_t *)iv.buf)[p0 + j];
            if (c < 0 || (size_t)c >= width || mapping[c] >= n_cols || (mapping[c] < 0 && !dropping)) {
                ok = 0;
                break;
            }
            if (mapping[c] >= 0)
                keys[m++] = (uint64_t)mapping[c] << 32 | j;
        }
        if (!ok)
            break;
        radix_sort_packed(keys, tmp, m, 32, (uint64_t)n_cols);
        for (size_t j = 0; j < m; j++, w++) {  /* (w < nnz: at most n entries a row) */
            uint64_t col = keys[j] >> 32;
            if (j && col == keys[j - 1] >> 32) {
                ok = 0;
                break;
            }
            memcpy(out_data + w * dsz, data + (p0 + (keys[j] & 0xFFFFFFFFu)) * dsz, dsz);
            if (osz == 4)
                ((int32_t *)oiv.buf)[w] = (int32_t)col;
            else
                ((int64_t *)oiv.buf)[w] = (int64_t)col;
        }
        if (dropping)
            out_indptr[r + 1] = (int64_t)w;
    }
    result = PyBool_FromLong(ok);
done:
    PyMem_Free(keys);
    PyMem_Free(tmp);
    Py_buffer *views[] = {&dv, &iv, &pv, &mv, &odv, &oiv, &opv};
    for (size_t i = 0; i < 7; i++)
        if (views[i]->obj)
            PyBuffer_Release(views[i]);
    return result;
}

/* own_columns(data, indices, indptr, rows, width, out_data, out_indices, out_indptr) -> cols:
 * nbtext.features.rows.Rows.own_columns: the rows `rows` (int64 row numbers, in their order)
 * of data (uint16, float32 or float64 values, by the itemsize), indices (int32 or int64) and
 * indptr (int64), over the columns they hold: out_data their values as float64 (exact: the
 * conversion numpy's astype makes), out_indices each entry's column's place among those columns
 * (int32 or int64, by the itemsize), out_indptr the rows' starts; returns the columns, sorted
 * (bytes of int64). One pass marks the columns in a scratch array as wide as the matrix, one
 * numbers them, one writes the rows, where numpy's selection, float64 copy and numbering take
 * five. Every row
 * number, row start and column is checked before it is used; ValueError where one is out of
 * range. */
PyObject *kernel_own_columns(PyObject *self, PyObject *args)
{
    Py_buffer dv = {0}, iv = {0}, pv = {0}, rv = {0}, odv = {0}, oiv = {0}, opv = {0};
    Py_ssize_t width;
    PyObject *result = NULL;
    uint32_t *where = NULL;  /* per 64 columns: the columns held before them */
    uint64_t *bits = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nw*w*w*:own_columns", &dv, &iv, &pv, &rv, &width, &odv, &oiv, &opv))
        return NULL;
    if (buffers_overlap((Py_buffer *[]){&odv, &oiv, &opv}, 3, (Py_buffer *[]){&dv, &iv, &pv, &rv}, 4)) {
        PyErr_SetString(PyExc_ValueError, "own_columns: an output overlaps an input or another output");
        goto done;
    }
    size_t n = (size_t)pv.len / sizeof(int64_t), nr = (size_t)rv.len / sizeof(int64_t);
    const int64_t *indptr = pv.buf, *rows = rv.buf;
    int64_t *out_indptr = opv.buf;
    size_t nnz = n ? (size_t)(indptr[n - 1] > 0 ? indptr[n - 1] : 0) : 0;
    size_t dsz = nnz ? (size_t)dv.len / nnz : 8, isz = nnz ? (size_t)iv.len / nnz : 4;
    size_t onnz = (size_t)odv.len / sizeof(double), osz = onnz ? (size_t)oiv.len / onnz : 4;
    if (!n || pv.len % sizeof(int64_t) || rv.len % sizeof(int64_t) || width < 0 || width >= ((Py_ssize_t)1 << 31)
        || (dsz != 2 && dsz != 4 && dsz != 8) || (size_t)dv.len != dsz * nnz || (isz != 4 && isz != 8)
        || (size_t)iv.len != isz * nnz || odv.len % sizeof(double) || (osz != 4 && osz != 8)
        || (size_t)oiv.len != osz * onnz || (size_t)opv.len != (nr + 1) * sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "own_columns: arrays of the wrong sizes");
        goto done;
    }
    if (indptr[0] != 0) {
        PyErr_SetString(PyExc_ValueError, "own_columns: row starts do not span the entries");
        goto done;
    }
    for (size_t r = 0; r + 1 < n; r++)
        if (indptr[r + 1] < indptr[r]) {
            PyErr_SetString(PyExc_ValueError, "own_columns: row starts go backwards");
            goto done;
        }
    /* the rows' starts, and every row number checked */
    out_indptr[0] = 0;
    for (size_t j = 0; j < nr; j++) {
        if (rows[j] < 0 || (size_t)rows[j] + 1 >= n) {
            PyErr_SetString(PyExc_ValueError, "own_columns: a row number out of range");
            goto done;
        }
        out_indptr[j + 1] = out_indptr[j] + (indptr[rows[j] + 1] - indptr[rows[j]]);
        if ((size_t)out_indptr[j + 1] > onnz) {  /* (each step: the total never wraps) */
            PyErr_SetString(PyExc_ValueError, "own_columns: the output is not the rows' size");
            goto done;
        }
    }
    if ((size_t)out_indptr[nr] != onnz) {
        PyErr_SetString(PyExc_ValueError, "own_columns: the output is not the rows' size");
        goto done;
    }
    /* The columns held, as bits (a bit a column, which a core's cache holds for a real
     * vocabulary, where a number a column does not), then each one's new number: the marked
     * columns before it (the words' running counts, and the bits below it in its own word). */
    size_t words = ((size_t)width + 63) / 64;
    bits = PyMem_Calloc(words ? words : 1, sizeof *bits);
    where = PyMem_Malloc((words ? words : 1) * sizeof *where);
    if (!bits || !where) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t j = 0; j < nr; j++)
        for (int64_t i = indptr[rows[j]]; i < indptr[rows[j] + 1]; i++) {
            int64_t c = isz == 4 ? ((const int32_t *)iv.buf)[i] : ((const int64_t *)iv.buf)[i];
            if (c < 0 || c >= width) {
                PyErr_SetString(PyExc_ValueError, "own_columns: a column out of range");
                goto done;
            }
            bits[c >> 6] |= (uint64_t)1 << (c & 63);
        }
    size_t m = 0;
    for (size_t w = 0; w < words; w++) {
        where[w] = (uint32_t)m;
        m += (size_t)popcount64(bits[w]);
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(m * sizeof(int64_t)));
    if (!result)
        goto done;
    int64_t *cols = (int64_t *)PyBytes_AS_STRING(result);
    m = 0;
    for (size_t w = 0; w < words; w++)
        for (uint64_t b = bits[w]; b; b &= b - 1)
            cols[m++] = (int64_t)(w * 64 + (size_t)ctz64(b));
    double *out = odv.buf;
    size_t o = 0;
    for (size_t j = 0; j < nr; j++)
        for (int64_t i = indptr[rows[j]]; i < indptr[rows[j] + 1]; i++, o++) {
            int64_t c = isz == 4 ? ((const int32_t *)iv.buf)[i] : ((const int64_t *)iv.buf)[i];
            uint32_t number = where[c >> 6] + (uint32_t)popcount64(bits[c >> 6] & (((uint64_t)1 << (c & 63)) - 1));
            out[o] = dsz == 2 ? (double)((const uint16_t *)dv.buf)[i]
                   : dsz == 4 ? (double)((const float *)dv.buf)[i] : ((const double *)dv.buf)[i];
            if (osz == 4)
                ((int32_t *)oiv.buf)[o] = (int32_t)number;
            else
                ((int64_t *)oiv.buf)[o] = (int64_t)number;
        }
done:
    PyMem_Free(where);
    PyMem_Free(bits);
    Py_buffer *views[] = {&dv, &iv, &pv, &rv, &odv, &oiv, &opv};
    for (size_t i = 0; i < 7; i++)
        if (views[i]->obj)
            PyBuffer_Release(views[i]);
    return result;
}

/* rows_dot(data, indices, indptr, W, out) -> bool: nbtext.features.rows.Rows @ W for float64
 * rows (int32 or int64 columns, by the itemsize) and a C-ordered float64 W (columns x k) into out
 * (rows x k): each row's product, entry by entry in order, added up from 0.0, as numpy's
 * bincount of the products adds them (the same bits: each product rounded, then added;
 * setup.py compiles with -ffp-contract=off, so that no multiply-add fuses them). False, with
 * out partly written, where a column is past W's rows or the row starts do not span the entries
 * (numpy then raises its error). */
PyObject *kernel_rows_dot(PyObject *self, PyObject *args)
{
    Py_buffer dv = {0}, iv = {0}, pv = {0}, wv = {0}, ov = {0};
    Py_ssize_t k;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nw*:rows_dot", &dv, &iv, &pv, &wv, &k, &ov))
        return NULL;
    if (buffers_overlap((Py_buffer *[]){&ov}, 1, (Py_buffer *[]){&dv, &iv, &pv, &wv}, 4)) {
        PyErr_SetString(PyExc_ValueError, "rows_dot: an output overlaps an input");
        goto done;
    }
    size_t nnz = (size_t)dv.len / sizeof(double), n = (size_t)pv.len / sizeof(int64_t);
    size_t isz = iv.len && nnz ? (size_t)iv.len / nnz : 4, kk = (size_t)k;
    /* (k first: every size below is a product with it, none may wrap) */
    if (k < 1 || kk > (size_t)PY_SSIZE_T_MAX / sizeof(double) / (n > 1 ? n - 1 : 1)
        || dv.len % sizeof(double) || pv.len % sizeof(int64_t) || !n || (isz != 4 && isz != 8)
        || (size_t)iv.len != isz * nnz || (size_t)wv.len % (kk * sizeof(double))
        || (size_t)ov.len != (n - 1) * kk * sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "rows_dot: arrays of the wrong sizes");
        goto done;
    }
    size_t width = (size_t)wv.len / (kk * sizeof(double));
    const double *data = dv.buf, *W = wv.buf;
    const int64_t *indptr = pv.buf;
    double *out = ov.buf;
    /* every row start checked before any entry is read: from 0, never back, ending at nnz */
    int ok = indptr[0] == 0 && (size_t)indptr[n - 1] == nnz;
    for (size_t r = 0; r + 1 < n && ok; r++)
        ok = indptr[r + 1] >= indptr[r];
    for (size_t r = 0; r + 1 < n && ok; r++) {
        for (size_t c = 0; c < kk; c++) {
            double acc = 0.0;
            for (int64_t i = indptr[r]; i < indptr[r + 1]; i++) {
                int64_t col = isz == 4 ? ((const int32_t *)iv.buf)[i] : ((const int64_t *)iv.buf)[i];
                if (col < 0 || (size_t)col >= width) {
                    ok = 0;
                    break;
                }
                double p = data[i] * W[(size_t)col * kk + c];
                acc += p;
            }
            out[r * kk + c] = acc;
        }
    }
    result = PyBool_FromLong(ok);
done:
    Py_buffer *views[] = {&dv, &iv, &pv, &wv, &ov};
    for (size_t i = 0; i < 5; i++)
        if (views[i]->obj)
            PyBuffer_Release(views[i]);
    return result;
}

/* group_sums(data, indices, indptr, group, k, out, df) -> bool: the token-major sums of
 * nbtext.features.rows.Rows.group_sums: each entry's value (uint16, float32 or float64, by the
 * itemsize, made float64 as numpy's bincount makes its weights: exactly) added into
 * out[column * k + group[row]] (float64, zeroed by the caller), entry by entry in order, as
 * bincount adds them (the same bits); and, where df is not empty, each column's nonzero
 * entries counted into df (int64, zeroed: numpy's bincount of the nonzero entries' columns; or
 * int32, by its size). Into counts that are not zero (nbtext.nb.counts.Counts.add_whole), the
 * values added where they are: exact for whole numbers, as every sum stays below 2**53. The
 * caller sees that a count of int32 cannot pass 2**31.
 * Without the cell number an entry (int64) that numpy's way makes first, which sets a
 * calibration fold's peak memory on a large corpus. False, with the outputs partly
 * written, where a group is not below k or a column is past out's rows; every row start is
 * checked before any entry is read. */
PyObject *kernel_group_sums(PyObject *self, PyObject *args)
{
    Py_buffer dv = {0}, iv = {0}, pv = {0}, gv = {0}, ov = {0}, fv = {0};
    Py_ssize_t k;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nw*w*:group_sums", &dv, &iv, &pv, &gv, &k, &ov, &fv))
        return NULL;
    if (buffers_overlap((Py_buffer *[]){&ov, &fv}, 2, (Py_buffer *[]){&dv, &iv, &pv, &gv}, 4)) {
        PyErr_SetString(PyExc_ValueError, "group_sums: an output overlaps an input or another output");
        goto done;
    }
    size_t n = (size_t)pv.len / sizeof(int64_t), kk = (size_t)k;
    const int64_t *indptr = pv.buf, *group = gv.buf;
    size_t nnz = n && indptr[n - 1] > 0 ? (size_t)indptr[n - 1] : 0;
    size_t dsz = nnz ? (size_t)dv.len / nnz : 8, isz = nnz ? (size_t)iv.len / nnz : 4;
    /* (k first: the sizes below are products with it, none may wrap) */
    if (k < 1 || kk > (size_t)PY_SSIZE_T_MAX / sizeof(double) || !n || pv.len % sizeof(int64_t)
        || (size_t)gv.len != (n - 1) * sizeof(int64_t) || (dsz != 2 && dsz != 4 && dsz != 8)
        || (size_t)dv.len != dsz * nnz || (isz != 4 && isz != 8) || (size_t)iv.len != isz * nnz
        || (size_t)ov.len % (kk * sizeof(double))
        || (fv.len && (size_t)fv.len != (size_t)ov.len / (kk * sizeof(double)) * sizeof(int32_t)
            && (size_t)fv.len != (size_t)ov.len / (kk * sizeof(double)) * sizeof(int64_t))) {
        PyErr_SetString(PyExc_ValueError, "group_sums: arrays of the wrong sizes");
        goto done;
    }
    size_t width = (size_t)ov.len / (kk * sizeof(double));
    double *out = ov.buf;
    void *df = fv.len ? fv.buf : NULL;
    int df32 = df && (size_t)fv.len == width * sizeof(int32_t);
    int ok = indptr[0] == 0 && (size_t)indptr[n - 1] == nnz;
    for (size_t r = 0; r + 1 < n && ok; r++)
        ok = indptr[r + 1] >= indptr[r] && group[r] >= 0 && (size_t)group[r] < kk;
    for (size_t r = 0; r + 1 < n && ok; r++) {
        size_t g = (size_t)group[r];
        for (int64_t i = indptr[r]; i < indptr[r + 1]; i++) {
            int64_t col = isz == 4 ? ((const int32_t *)iv.buf)[i] : ((const int64_t *)iv.buf)[i];
            if (col < 0 || (size_t)col >= width) {
                ok = 0;
                break;
            }
            double v = dsz == 2 ? (double)((const uint16_t *)dv.buf)[i]
                     : dsz == 4 ? (double)((const float *)dv.buf)[i] : ((const double *)dv.buf)[i];
            out[(size_t)col * kk + g] += v;
            if (df && v != 0) {
                if (df32)
                    ((int32_t *)df)[col] += 1;
                else
                    ((int64_t *)df)[col] += 1;
            }
        }
    }
    result = PyBool_FromLong(ok);
done:
    Py_buffer *views[] = {&dv, &iv, &pv, &gv, &ov, &fv};
    for (size_t i = 0; i < 6; i++)
        if (views[i]->obj)
            PyBuffer_Release(views[i]);
    return result;
}

/* A column's state in token_sums, 16 bytes (the states of a chunk's columns stay near the
 * second-level cache): the sum of its entries of ``group`` so far (none: -1), its next place;
 * in the first visit, its nonzero entries (df) and its pairs (next). */
typedef struct {
    union {
        double sum;
        int64_t df;
    };
    uint32_t next;
    int32_t group;
} TokenCol;

/* token_sums(data, indices, indptr, group, k, out_indptr, out_classes, out_values, df) -> int:
 * nbtext.nb.sparse.group_sums held by token: each row's nonzero entries (data float64, indices
 * int32) added up by (column, group[row]) into out_indptr (int64, a start a column and
 * the end), out_classes (1, 2 or 4 bytes) and out_values (float64, room for every entry): each
 * column's groups increasing, each sum its entries added in row order, the first to 0.0 (as
 * TokenSums.settle's bincount adds them: the same bits), zero sums left out; each column's
 * nonzero entries counted into df (int64, zeroed by the caller). The rows are visited group
 * by group (a counting sort of the rows, stable), so a column's entries of one group arrive
 * one after another: a column's state holds the sum of the group it is in, written out when
 * its next group begins and at the end. A first visit counts each column's (column, group)
 * pairs, so the second writes them in place, without a fold by group or a move after (unless
 * a sum is zero: the zeros are left out in a pass more). The entries written; -1, with the
 * outputs partly written, where a group is not below k or a column is past out_indptr's
 * columns (every row start and group checked before any entry is read, every column before
 * any is written). */
PyObject *kernel_token_sums(PyObject *self, PyObject *args)
{
    Py_buffer dv = {0}, iv = {0}, pv = {0}, gv = {0}, opv = {0}, ocv = {0}, ovv = {0}, fv = {0};
    Py_ssize_t k;
    PyObject *result = NULL;
    int64_t *order = NULL;
    TokenCol *cols = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nw*w*w*w*:token_sums", &dv, &iv, &pv, &gv, &k, &opv, &ocv, &ovv, &fv))
        return NULL;
    if (buffers_overlap((Py_buffer *[]){&opv, &ocv, &ovv, &fv}, 4, (Py_buffer *[]){&dv, &iv, &pv, &gv}, 4)) {
        PyErr_SetString(PyExc_ValueError, "token_sums: an output overlaps an input or another output");
        goto done;
    }
    size_t n = (size_t)pv.len / sizeof(int64_t), kk = (size_t)k;
    const int64_t *indptr = pv.buf, *group = gv.buf;
    size_t nnz = n && indptr[n - 1] > 0 ? (size_t)indptr[n - 1] : 0;
    size_t csz = nnz ? (size_t)ocv.len / nnz : 1, width = (size_t)opv.len / sizeof(int64_t);
    if (k < 1 || !n || pv.len % sizeof(int64_t) || (size_t)gv.len != (n - 1) * sizeof(int64_t)
        || (size_t)dv.len != nnz * sizeof(double) || (size_t)iv.len != nnz * sizeof(int32_t)
        || (csz != 1 && csz != 2 && csz != 4) || (size_t)ocv.len != csz * nnz
        || (size_t)ovv.len != nnz * sizeof(double) || !width-- || opv.len % sizeof(int64_t)
        || (nnz && kk > ((size_t)1 << (8 * csz))) || kk > INT32_MAX || nnz > UINT32_MAX
        || (size_t)fv.len != width * sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "token_sums: arrays of the wrong sizes");
        goto done;
    }
    int ok = indptr[0] == 0 && (size_t)indptr[n - 1] == nnz;
    for (size_t r = 0; r + 1 < n && ok; r++)
        ok = indptr[r + 1] >= indptr[r] && group[r] >= 0 && (size_t)group[r] < kk;
    if (!ok) {
        result = PyLong_FromLong(-1);
        goto done;
    }
    order = PyMem_Malloc(((n - 1) + kk + 1) * sizeof(int64_t));
    cols = PyMem_Malloc((width ? width : 1) * sizeof(TokenCol));
    if (!order || !cols) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *out = opv.buf, *df = fv.buf;
    double *vals = ovv.buf;
    void *cls = ocv.buf;
    const int32_t *indices = iv.buf;
    const double *data = dv.buf;
    size_t w = 0, zeros = 0;
    Py_BEGIN_ALLOW_THREADS
    /* the rows in group order, stable (a counting sort: at[g] the next place of group g's) */
    int64_t *at = order + (n - 1);
    memset(at, 0, (kk + 1) * sizeof(int64_t));
    for (size_t r = 0; r + 1 < n; r++)
        at[group[r] + 1]++;
    for (size_t g = 0; g < kk; g++)
        at[g + 1] += at[g];
    for (size_t r = 0; r + 1 < n; r++)
        order[at[group[r]]++] = (int64_t)r;
    for (size_t t = 0; t < width; t++)
        cols[t] = (TokenCol){.df = 0, .next = 0, .group = -1};
    /* first visit: each column's (column, group) pairs counted (at next) and its nonzero entries */
    for (size_t o = 0; o + 1 < n && ok; o++) {
        size_t r = (size_t)order[o];
        int32_t g = (int32_t)group[r];
        int64_t end = indptr[r + 1];
        for (int64_t i = indptr[r]; i < end; i++) {
            int32_t col = indices[i];
            if (col < 0 || (size_t)col >= width) {
                ok = 0;
                break;
            }
            if (data[i] == 0)
                continue;
            TokenCol *c = cols + col;
            c->df++;
            if (c->group != g) {
                c->group = g;
                c->next++;
            }
        }
    }
    if (ok) {
        /* each column's room: its start, and its pairs' places from there */
        for (size_t t = 0; t < width; t++) {
            out[t] = (int64_t)w;
            w += cols[t].next;
            df[t] += cols[t].df;
            cols[t] = (TokenCol){.sum = 0.0, .next = (uint32_t)out[t], .group = -1};
        }
        out[width] = (int64_t)w;
        /* second visit: a column's sum of its group written out where its next group begins */
        for (size_t o = 0; o + 1 < n; o++) {
            size_t r = (size_t)order[o];
            int32_t g = (int32_t)group[r];
            int64_t end = indptr[r + 1];
            for (int64_t i = indptr[r]; i < end; i++) {
                double v = data[i];
                if (v == 0)
                    continue;
                TokenCol *c = cols + indices[i];
                if (c->group == g) {
                    c->sum += v;
                    continue;
                }
                if (c->group >= 0) {
                    put_int(cls, csz, c->next, c->group);
                    vals[c->next++] = c->sum;
                    zeros += c->sum == 0;
                }
                c->group = g;
                c->sum = v;
            }
        }
        /* the last group's sums, column by column (in place: places increasing) */
        for (size_t t = 0; t < width; t++) {
            TokenCol *c = cols + t;
            if (c->group < 0)
                continue;
            put_int(cls, csz, c->next, c->group);
            vals[c->next] = c->sum;
            zeros += c->sum == 0;
        }
        if (zeros) {  /* zero sums left out (rare: sums of negative and positive values alone) */
            size_t from = 0;
            w = 0;
            for (size_t t = 0; t < width; t++) {
                size_t e = (size_t)out[t + 1];
                out[t] = (int64_t)w;
                for (; from < e; from++) {
                    if (vals[from] == 0)
                        continue;
                    if (w != from) {
                        vals[w] = vals[from];
                        memcpy((char *)cls + w * csz, (char *)cls + from * csz, csz);
                    }
                    w++;
                }
            }
            out[width] = (int64_t)w;
        }
    }
    Py_END_ALLOW_THREADS
    result = ok ? PyLong_FromSize_t(w) : PyLong_FromLong(-1);
done:
    PyMem_Free(order);
    PyMem_Free(cols);
    Py_buffer *views[] = {&dv, &iv, &pv, &gv, &opv, &ocv, &ovv, &fv};
    for (size_t i = 0; i < 8; i++)
        if (views[i]->obj)
            PyBuffer_Release(views[i]);
    return result;
}
