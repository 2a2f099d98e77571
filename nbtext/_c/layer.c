#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

#include "bits.h"
#include "layer.h"
#include "overlap.h"

/* The decision layer's two loops over documents (nbtext.nb.layer; its numpy code is the
 * reference, and tests/test_layer.py holds the two to the same numbers): a pass of the SVMs'
 * dual coordinate descent, and the scores of many documents, NB's product and the layer's sums
 * over the same nonzeros in one pass. Every index is checked before it is read. */

typedef struct {
    const void *buf;
    size_t size;  /* bytes an element: 4 or 8 */
} Index;

static inline int64_t index_at(Index a, size_t i)
{
    return a.size == 4 ? ((const int32_t *)a.buf)[i] : ((const int64_t *)a.buf)[i];
}

static void release_all(Py_buffer **views, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (views[i]->obj)
            PyBuffer_Release(views[i]);
}

/* Whether the row starts ``indptr`` (rows + 1 of them) rise from 0 to nnz. */
static int starts_ok(const int64_t *indptr, size_t rows, size_t nnz)
{
    if (indptr[0] != 0 || (size_t)indptr[rows] != nnz)
        return 0;
    for (size_t r = 0; r < rows; r++)
        if (indptr[r + 1] < indptr[r])
            return 0;
    return 1;
}

/* A column's rows of R and W, fetched ahead as a hint: an entry's two rows are random reads of
 * arrays larger than a core's cache, and its arithmetic waits on them. */
enum { AHEAD = 12 };

static inline void fetch_rows(const double *R, const double *W, size_t c, size_t J)
{
    for (size_t o = 0; o < J; o += 8) {
        KI_PREFETCH(R + c * J + o);
        KI_PREFETCH(W + c * J + o);
    }
    KI_PREFETCH(R + c * J + J - 1);  /* (a row that starts inside a line ends in one more) */
    KI_PREFETCH(W + c * J + J - 1);
}

/* -- a pass of dual coordinate descent (nb.layer.solve_squared_hinge) ---------------------------
 *
 * svm_pass(order, data, indices, indptr, R, inv, Y, Qii, diag, W, b, alpha, hi_old, hi, lo, kept)
 * -> the documents kept, or -1 where an index is out of range:
 *   order    int64: the documents of this pass, in turn (the seeded permutation Python draws);
 *   data, indices, indptr  the documents' rows (float64 sublinear tf; int32 or int64 columns;
 *            int64 starts), n documents;
 *   R        float64 columns x J: the columns' ratios; inv, Y, Qii: float64 n x J, each
 *            document's 1 / ||A_i r_j||, its labels (+-1) and the diagonal of Q;
 *   diag     1 / (2C), the loss's part of Q's diagonal;
 *   W, b, alpha  float64 columns x J, J, n x J: the weights, biases and dual variables, updated;
 *   hi_old   float64 J: the last pass's largest projected gradients (shrinking);
 *   hi, lo   float64 J: this pass's largest and smallest projected gradients (written);
 *   kept     int64, as long as order: the documents not shrunk, in the order visited (written).
 * The reference's arithmetic in its order: z_e = (a_e r_e) inv_i, G = y (sum_e z_e w_e + b) - 1
 * + alpha D summed over the row's entries in turn from 0, so the same weights to rounding. */
PyObject *kernel_svm_pass(PyObject *self, PyObject *args)
{
    Py_buffer ov = {0}, dv = {0}, iv = {0}, pv = {0}, rv = {0}, nv = {0}, yv = {0}, qv = {0}, wv = {0}, bv = {0},
              av = {0}, hov = {0}, hv = {0}, lv = {0}, kv = {0};
    double diag;
    PyObject *result = NULL;
    double *G = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*dw*w*w*y*w*w*w*:svm_pass", &ov, &dv, &iv, &pv, &rv, &nv, &yv, &qv,
                          &diag, &wv, &bv, &av, &hov, &hv, &lv, &kv))
        return NULL;
    Py_buffer *views[] = {&ov, &dv, &iv, &pv, &rv, &nv, &yv, &qv, &wv, &bv, &av, &hov, &hv, &lv, &kv};
    if (buffers_overlap((Py_buffer *[]){&wv, &bv, &av, &hv, &lv, &kv}, 6,
                        (Py_buffer *[]){&ov, &dv, &iv, &pv, &rv, &nv, &yv, &qv, &hov}, 9)) {
        PyErr_SetString(PyExc_ValueError, "svm_pass: an output overlaps an input or another output");
        goto done;
    }
    size_t J = (size_t)bv.len / sizeof(double), rows = (size_t)pv.len / sizeof(int64_t);
    size_t nnz = (size_t)dv.len / sizeof(double), m = (size_t)ov.len / sizeof(int64_t);
    size_t isz = nnz ? (size_t)iv.len / nnz : 8, width = J ? (size_t)rv.len / sizeof(double) / J : 0;
    if (!J || !rows-- || pv.len % sizeof(int64_t) || ov.len % sizeof(int64_t) || dv.len % sizeof(double)
        || bv.len % sizeof(double) || (isz != 4 && isz != 8) || (size_t)iv.len != isz * nnz
        || (size_t)rv.len != width * J * sizeof(double) || (size_t)wv.len != (size_t)rv.len
        || (size_t)nv.len != rows * J * sizeof(double) || yv.len != nv.len || qv.len != nv.len || av.len != nv.len
        || hov.len != bv.len || hv.len != bv.len || lv.len != bv.len || kv.len != ov.len) {
        PyErr_SetString(PyExc_ValueError, "svm_pass: arrays of the wrong sizes");
        goto done;
    }
    const int64_t *order = ov.buf, *indptr = pv.buf;
    const double *x = dv.buf, *R = rv.buf, *inv = nv.buf, *Y = yv.buf, *Q = qv.buf, *hi_old = hov.buf;
    double *W = wv.buf, *b = bv.buf, *alpha = av.buf, *hi = hv.buf, *lo = lv.buf;
    int64_t *kept = kv.buf;
    Index cols = {iv.buf, isz};
    if (!starts_ok(indptr, rows, nnz)) {
        PyErr_SetString(PyExc_ValueError, "svm_pass: row starts do not rise over the entries");
        goto done;
    }
    for (size_t e = 0; e < nnz; e++) {
        int64_t c = index_at(cols, e);
        if (c < 0 || (size_t)c >= width) {
            result = PyLong_FromLong(-1);
            goto done;
        }
    }
    for (size_t t = 0; t < m; t++)
        if (order[t] < 0 || (size_t)order[t] >= rows) {
            result = PyLong_FromLong(-1);
            goto done;
        }
    /* G, the steps and the classes that moved */
    G = PyMem_Malloc(3 * J * sizeof *G);
    if (!G) {
        PyErr_NoMemory();
        goto done;
    }
    double *step = G + J;
    size_t *moved = (size_t *)(G + 2 * J), n_kept = 0;
    Py_BEGIN_ALLOW_THREADS
    for (size_t j = 0; j < J; j++)
        hi[j] = -INFINITY, lo[j] = INFINITY;
    for (size_t t = 0; t < m; t++) {
        size_t i = (size_t)order[t], s = (size_t)indptr[i], e = (size_t)indptr[i + 1];
        const double *yi = Y + i * J, *ni = inv + i * J, *qi = Q + i * J;
        double *ai = alpha + i * J;
        for (size_t j = 0; j < J; j++)
            G[j] = 0.0;
        for (size_t p = s; p < e; p++) {
            if (p + AHEAD < e)
                fetch_rows(R, W, (size_t)index_at(cols, p + AHEAD), J);
            size_t c = (size_t)index_at(cols, p);
            const double *r = R + c * J, *w = W + c * J;
            for (size_t j = 0; j < J; j++)
                G[j] += (x[p] * r[j]) * ni[j] * w[j];
        }
        int shrunk = 1;
        for (size_t j = 0; j < J; j++) {
            G[j] = yi[j] * (G[j] + b[j]) - 1.0 + ai[j] * diag;
            if (!(ai[j] == 0.0 && G[j] > hi_old[j]))
                shrunk = 0;
        }
        if (shrunk)
            continue;
        kept[n_kept++] = (int64_t)i;
        size_t n_moved = 0;
        for (size_t j = 0; j < J; j++) {
            double pg = ai[j] == 0.0 ? fmin(G[j], 0.0) : G[j];
            hi[j] = fmax(hi[j], pg);
            lo[j] = fmin(lo[j], pg);
            double fresh = fmax(ai[j] - G[j] / qi[j], 0.0);
            step[j] = (fresh - ai[j]) * yi[j];
            if (step[j] != 0.0)
                moved[n_moved++] = j;
            ai[j] = fresh;  /* (the same value where it did not move) */
        }
        /* The classes that moved alone: a step of 0 adds 0 to a weight (the reference adds it) */
        for (size_t q = 0; q < n_moved; q++)
            b[moved[q]] += step[moved[q]];
        for (size_t p = s; p < e && n_moved; p++) {
            size_t c = (size_t)index_at(cols, p);
            const double *r = R + c * J;
            double *w = W + c * J;
            for (size_t q = 0; q < n_moved; q++) {
                size_t j = moved[q];
                w[j] += (x[p] * r[j]) * ni[j] * step[j];
            }
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSize_t(n_kept);
done:
    PyMem_Free(G);
    release_all(views, sizeof views / sizeof *views);
    return result;
}
