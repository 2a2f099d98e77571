#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "keyindex.h"
#include "overlap.h"
#include "score.h"

/* -- one counted message's sums (nbtext.serve.scoring) ------------------------------------------
 *
 * What fastscore does for a message after counting it, with the same arithmetic: each distinct
 * token (a column of the counted message, in the order the tokenizer first gave it) is found by
 * its key in the vocabulary's KeyIndex and is known only when its bytes are the vocabulary
 * token's (a key is a 64-bit hash); a known token's feature value x (its count, 1 for presence,
 * or log(1 + count): the variant's, given as a mode) times each of its cached weights is added
 * to the class's sum, token after token, as fastscore's _summed adds them, so each sum is
 * rounded exactly as Python rounds it (built with -ffp-contract=off: no fused multiply-add).
 * A weight not computed yet (NaN) is computed by calling fill(tid), fastscore's own function,
 * which writes it into the cache. The model and the message are a stranger's: every index and
 * size is checked before it is read. */

enum { X_COUNT = 0, X_PRESENT = 1, X_LOG1P = 2 };

/* The largest count taken as a whole number exactly (a double's 53 bits). */
#define COUNT_MAX 9007199254740992.0

static int aligned8(const Py_buffer *b) { return b->len % 8 == 0 && (uintptr_t)b->buf % 8 == 0; }

/* Whether a token's row at w is made (its first number not NaN), by make(tid) where it was not;
 * 0 with make's error set where that fails. */
static int made(PyObject *make, const double *w, int64_t tid)
{
    if (w[0] == w[0])
        return 1;
    PyObject *got = PyObject_CallFunction(make, "L", (long long)tid);
    Py_XDECREF(got);
    return got != NULL;
}

/* Layer.values' sums of known token tid, n occurrences, whose row holds r then w (J each), made
 * by make where it is not yet: v = (1 + log n) r_j adds v w_j to sums[j] and v v to sums[J + j],
 * in its order; 0 with make's error set where it fails. */
static int add_layer_sums(PyObject *make, const double *row, int64_t tid, size_t J, double n, double *sums)
{
    if (!made(make, row, tid))
        return 0;
    double a = 1.0 + log(n);
    for (size_t c = 0; c < J; c++) {
        double v = a * row[c];
        sums[c] += v * row[J + c];
        sums[J + c] += v * v;
    }
    return 1;
}

/* score_counted(index, blob, keys, columns, counts, vocab, starts, lengths, weights, mode, jll,
 * fill) -> (unknown, known), the occurrences of the unknown and the known tokens:
 *   blob     the message's m distinct tokens, each NUL-terminated; keys their m uint64 keys;
 *   columns  int64 tokens of the message (indices into blob's tokens) in the order summed;
 *   counts   float64 occurrences of each, whole numbers;
 *   vocab    the model's V tokens, NUL-terminated; starts, lengths: int64 spans of each in vocab;
 *   weights  float64 V x k, row-major, NaN where not computed yet (written by fill);
 *   mode     0: x = count, 1: x = 1, 2: x = log1p(count);
 *   jll      float64 k: the bias on entry, the sums on return;
 *   fill     fill(tid): computes token tid's weights into weights;
 * and, where the model has a decision layer (nbtext.nb.layer: Layer.values' sums, in its order):
 *   layer_rows  float64 V x 2J: a token's r (J) then w (J), NaN where not computed yet;
 *   layer_fill  layer_fill(tid): computes token tid's row into layer_rows;
 *   layer_sums  float64 2J: A r . w (J) then ||A r||^2 (J), added to: a known token's
 *               v = (1 + log n) r_j adds v w_j and v v. */
PyObject *kernel_score_counted(PyObject *self, PyObject *args)
{
    PyObject *index, *fill, *layer_fill = NULL, *result = NULL;
    Py_buffer bv = {0}, kv = {0}, cv = {0}, nv = {0}, vv = {0}, sv = {0}, lv = {0}, wv = {0}, jv = {0};
    Py_buffer rv = {0}, yv = {0};
    int mode;
    size_t *offsets = NULL;
    int64_t *ids = NULL;
    if (!PyArg_ParseTuple(args, "Oy*y*y*y*y*y*y*w*iw*O|w*Ow*:score_counted", &index, &bv, &kv, &cv, &nv, &vv, &sv,
                          &lv, &wv, &mode, &jv, &fill, &rv, &layer_fill, &yv))
        return NULL;
    size_t J = yv.buf ? (size_t)yv.len / 16 : 0;  /* (the layer's modelled classes) */
    size_t m = (size_t)kv.len / 8, r = (size_t)cv.len / 8, V = (size_t)sv.len / 8, k = (size_t)jv.len / 8;
    if (!aligned8(&kv) || !aligned8(&cv) || !aligned8(&nv) || !aligned8(&sv) || !aligned8(&lv) || !aligned8(&wv)
        || !aligned8(&jv) || nv.len != cv.len || lv.len != sv.len || k == 0 || (V && (size_t)wv.len / 8 / V != k)
        || (size_t)wv.len != V * k * 8 || (rv.buf != NULL) != (yv.buf != NULL)
        || (yv.buf && (!aligned8(&rv) || !aligned8(&yv) || !J || (size_t)yv.len != J * 16
                       || (size_t)rv.len != V * J * 16))) {
        PyErr_SetString(PyExc_ValueError, "score_counted: arrays of the wrong sizes");
        goto done;
    }
    if (mode != X_COUNT && mode != X_PRESENT && mode != X_LOG1P) {
        PyErr_Format(PyExc_ValueError, "score_counted: no feature mode %d", mode);
        goto done;
    }
    if (!PyCallable_Check(fill) || (yv.buf && !PyCallable_Check(layer_fill))) {
        PyErr_SetString(PyExc_TypeError, "score_counted: fill and layer_fill must be callable");
        goto done;
    }
    if (buffers_overlap((Py_buffer *[]){&jv, &wv, &rv, &yv}, yv.buf ? 4 : 2, (Py_buffer *[]){0}, 0)) {
        PyErr_SetString(PyExc_ValueError, "score_counted: jll overlaps the weights");
        goto done;
    }
    /* where each of the message's tokens starts, and that blob holds exactly m of them */
    offsets = PyMem_Malloc((m + 1) * sizeof *offsets);
    ids = PyMem_Malloc((m ? m : 1) * sizeof *ids);
    if (!offsets || !ids) {
        PyErr_NoMemory();
        goto done;
    }
    const unsigned char *b = bv.buf;
    size_t blen = (size_t)bv.len, nuls = 0;
    offsets[0] = 0;
    for (const unsigned char *p = b, *end = b + blen; p < end; p++) {
        p = memchr(p, 0, (size_t)(end - p));
        if (!p)
            break;
        if (nuls < m)
            offsets[nuls + 1] = (size_t)(p - b) + 1;
        nuls++;
    }
    if (nuls != m || (blen && b[blen - 1] != 0)) {
        PyErr_Format(PyExc_ValueError, "score_counted: %zu keys for %zu NUL-terminated tokens", m, nuls);
        goto done;
    }
    if (keyindex_find(index, kv.buf, m, ids) < 0)
        goto done;
    const int64_t *columns = cv.buf, *starts = sv.buf, *lengths = lv.buf;
    const double *counts = nv.buf;
    const char *vocab = vv.buf;
    double *weights = wv.buf, *jll = jv.buf;
    long long unknown = 0, known = 0;
    for (size_t i = 0; i < r; i++) {
        int64_t j = columns[i];
        double n = counts[i];
        if (j < 0 || (size_t)j >= m || !(n >= 0 && n <= COUNT_MAX) || n != floor(n)) {
            PyErr_SetString(PyExc_ValueError, "score_counted: a column or a count out of range");
            goto done;
        }
        int64_t tid = ids[j];
        if (tid >= 0 && (size_t)tid >= V) {
            PyErr_SetString(PyExc_ValueError, "score_counted: the index does not match the vocabulary");
            goto done;
        }
        size_t len = offsets[j + 1] - offsets[j] - 1;
        if (tid >= 0) {
            int64_t s = starts[tid], l = lengths[tid];
            if (s < 0 || l < 0 || (size_t)s > (size_t)vv.len || (size_t)l > (size_t)vv.len - (size_t)s) {
                PyErr_SetString(PyExc_ValueError, "score_counted: a token's span is outside the vocabulary");
                goto done;
            }
            if ((size_t)l != len || memcmp(vocab + s, b + offsets[j], len) != 0)
                tid = -1;  /* (another token with the same key) */
        }
        long long *sum = tid < 0 ? &unknown : &known;
        if ((long long)n > LLONG_MAX - *sum) {
            PyErr_SetString(PyExc_OverflowError, "score_counted: too many occurrences");
            goto done;
        }
        *sum += (long long)n;
        if (tid < 0)
            continue;
        double *w = weights + (size_t)tid * k;
        if (!made(fill, w, tid))
            goto done;
        double x = mode == X_COUNT ? n : mode == X_PRESENT ? 1.0 : log1p(n);
        for (size_t c = 0; c < k; c++)
            jll[c] += x * w[c];
        if (yv.buf && !add_layer_sums(layer_fill, (double *)rv.buf + (size_t)tid * 2 * J, tid, J, n, yv.buf))
            goto done;
    }
    result = Py_BuildValue("(LL)", unknown, known);
done:
    PyMem_Free(offsets);
    PyMem_Free(ids);
    PyBuffer_Release(&bv);
    PyBuffer_Release(&kv);
    PyBuffer_Release(&cv);
    PyBuffer_Release(&nv);
    PyBuffer_Release(&vv);
    PyBuffer_Release(&sv);
    PyBuffer_Release(&lv);
    PyBuffer_Release(&wv);
    PyBuffer_Release(&jv);
    if (rv.buf)
        PyBuffer_Release(&rv);
    if (yv.buf)
        PyBuffer_Release(&yv);
    return result;
}
