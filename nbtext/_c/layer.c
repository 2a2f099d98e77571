#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

#include "bits.h"
#include "ints.h"
#include "layer.h"
#include "overlap.h"

/* The decision layer's two loops over documents (nbtext.nb.layer; its numpy code is the
 * reference, and tests/test_layer.py holds the two to the same numbers): a pass of the SVMs'
 * dual coordinate descent, and the scores of many documents, NB's product and the layer's sums
 * over the same nonzeros in one pass. Every index is checked before it is read. */

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

/* An entry's rows of R and W are fetched this many entries ahead, as hints: they are random
 * reads of arrays larger than a core's cache, and its arithmetic waits on them. */
enum { AHEAD = 12 };

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
    Ints cols = {iv.buf, isz};
    if (!starts_ok(indptr, rows, nnz)) {
        PyErr_SetString(PyExc_ValueError, "svm_pass: row starts do not rise over the entries");
        goto done;
    }
    for (size_t e = 0; e < nnz; e++) {
        int64_t c = int_at(cols, e);
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
            if (p + AHEAD < e) {  /* (hints here, not in a function: GCC drops calls of hints alone) */
                size_t ca = (size_t)int_at(cols, p + AHEAD);
                for (size_t o = 0; o < J + 8; o += 8) {  /* (the row's lines, and the last) */
                    KI_PREFETCH(R + ca * J + (o < J ? o : J - 1));
                    KI_PREFETCH(W + ca * J + (o < J ? o : J - 1));
                }
            }
            size_t c = (size_t)int_at(cols, p);
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
            size_t c = (size_t)int_at(cols, p);
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

/* -- many documents' scores (nb.layer.Layer.joint) ----------------------------------------------
 *
 * layer_scores(data, x, indices, indptr, tokens, classes, pairs, rw, nb, sq, sums, dots) -> bool:
 * the documents' rows (float64 counts ``data`` and NB's feature values ``x`` of the same entries;
 * int32 or int64 columns; int64 starts) against the model's nonzeros held by token, in one pass
 * over each row's entries that reads each token's nonzeros once for NB and the layer:
 *   tokens   float64 tokens x 4, a record a token: its g, its code (-2: left out of the layer,
 *            -1: in it and weighing 0, else its row of rw), the start and end of its nonzeros;
 *   classes  the nonzeros' classes (1, 2 or 4 bytes), K = nb's columns;
 *   pairs    float64 nonzeros x 2: NB's weight difference (nb.sparse's D) and the layer's rest;
 *   nb    += x_e D                 NB's product, in sums_product's order (the same bits);
 *   sq    += a_e^2 rest            the layer's ||A r_c||^2 at the nonzeros;
 *   sums  += a_e^2 (1, g, g g)     its three per-token sums (1: a token in the layer);
 *   dots  += a_e rw[code]          A r_c . w_c (rw: rows x J, J = dots' columns),
 * a_e = 1 + log(data_e), the sublinear tf. Outputs zeroed by the caller, rows x K, x K, x 3, x J.
 * A token's record is one read, and its nonzeros' two values are side by side: the pass's time
 * is its random reads of the model. Every index is checked as it is read; False, with the
 * outputs partly written, where one is out of range. */

/* nb[c] += v D[j] and sq[c] += a2 rest[j] over a token's nonzeros j in [from, to), c its classes;
 * 0 where a class is not below K. Classes of one byte (up to 256) read as such: the loop that
 * most of the time goes to. */
static inline int add_nonzeros(Ints classes, size_t from, size_t to, size_t K, double v, const double *pairs,
                               double a2, double *nb, double *sq)
{
    if (classes.size == 1) {
        const uint8_t *cl = classes.buf;
        for (size_t j = from; j < to; j++) {
            size_t c = cl[j];
            if (c >= K)
                return 0;
            nb[c] += v * pairs[2 * j];
            sq[c] += a2 * pairs[2 * j + 1];
        }
        return 1;
    }
    for (size_t j = from; j < to; j++) {
        size_t c = (size_t)int_at(classes, j);
        if (c >= K)
            return 0;
        nb[c] += v * pairs[2 * j];
        sq[c] += a2 * pairs[2 * j + 1];
    }
    return 1;
}

enum { TF_TABLE = 256 };  /* counts below this take their sublinear tf from a table */

/* A record's span of nonzeros, checked: 0 where it is not whole numbers 0 <= from <= to <= n. */
static inline int span_of(const double *rec, size_t n, size_t *from, size_t *to)
{
    double f = rec[2], t = rec[3];  /* (whole numbers: compared with their casts, not floor's calls) */
    if (!(f >= 0 && f <= t && t <= (double)n) || f != (double)(size_t)f || t != (double)(size_t)t)
        return 0;
    *from = (size_t)f, *to = (size_t)t;
    return 1;
}

PyObject *kernel_layer_scores(PyObject *self, PyObject *args)
{
    Py_buffer dv = {0}, xv = {0}, iv = {0}, pv = {0}, tv = {0}, cv = {0}, av = {0}, wv = {0}, nbv = {0}, sqv = {0},
              suv = {0}, dov = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*w*w*w*w*:layer_scores", &dv, &xv, &iv, &pv, &tv, &cv, &av, &wv,
                          &nbv, &sqv, &suv, &dov))
        return NULL;
    Py_buffer *views[] = {&dv, &xv, &iv, &pv, &tv, &cv, &av, &wv, &nbv, &sqv, &suv, &dov};
    if (buffers_overlap((Py_buffer *[]){&nbv, &sqv, &suv, &dov}, 4,
                        (Py_buffer *[]){&dv, &xv, &iv, &pv, &tv, &cv, &av, &wv}, 8)) {
        PyErr_SetString(PyExc_ValueError, "layer_scores: an output overlaps an input or another output");
        goto done;
    }
    size_t rows = (size_t)pv.len / sizeof(int64_t), nnz = (size_t)dv.len / sizeof(double);
    size_t tokens = (size_t)tv.len / (4 * sizeof(double)), s_nnz = (size_t)av.len / (2 * sizeof(double));
    size_t isz = nnz ? (size_t)iv.len / nnz : 8, csz = s_nnz ? (size_t)cv.len / s_nnz : 1;
    if (!rows-- || pv.len % sizeof(int64_t) || dv.len % sizeof(double) || xv.len != dv.len
        || tv.len % (4 * sizeof(double)) || av.len % (2 * sizeof(double)) || (isz != 4 && isz != 8)
        || (size_t)iv.len != isz * nnz || (csz != 1 && csz != 2 && csz != 4) || (size_t)cv.len != csz * s_nnz
        || !rows != !nbv.len || (rows && (nbv.len % (rows * sizeof(double)) || dov.len % (rows * sizeof(double))))
        || sqv.len != nbv.len || (size_t)suv.len != rows * 3 * sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "layer_scores: arrays of the wrong sizes");
        goto done;
    }
    size_t K = rows ? (size_t)nbv.len / (rows * sizeof(double)) : 0;
    size_t J = rows ? (size_t)dov.len / (rows * sizeof(double)) : 0;
    size_t m = J ? (size_t)wv.len / (J * sizeof(double)) : 0;
    if (rows && (!J || (size_t)wv.len != m * J * sizeof(double))) {
        PyErr_SetString(PyExc_ValueError, "layer_scores: arrays of the wrong sizes");
        goto done;
    }
    const int64_t *indptr = pv.buf;
    const double *counts = dv.buf, *x = xv.buf, *recs = tv.buf, *pairs = av.buf, *rw = wv.buf;
    double *nb = nbv.buf, *sq = sqv.buf, *sums = suv.buf, *dots = dov.buf;
    Ints cols = {iv.buf, isz}, classes = {cv.buf, csz};
    int ok = starts_ok(indptr, rows, nnz);
    Py_BEGIN_ALLOW_THREADS
    /* 1 + log(n) of the small whole counts that most entries hold, made once: log's own values */
    double tf[TF_TABLE];
    for (size_t n = 1; n < TF_TABLE; n++)
        tf[n] = log((double)n) + 1.0;
    for (size_t r = 0; r < rows && ok; r++) {
        double *nb_r = nb + r * K, *sq_r = sq + r * K, *sums_r = sums + r * 3, *dots_r = dots + r * J;
        for (size_t i = (size_t)indptr[r]; i < (size_t)indptr[r + 1] && ok; i++) {
            /* What an entry reads, fetched ahead as hints (each address is checked where it is
             * read): the token's record 16 entries on, its nonzeros and rw's row 8 on. (Here and
             * not in a function: GCC takes a function of hints alone for one without effects,
             * and drops its calls.) */
            if (i + 16 < nnz) {
                int64_t ta = int_at(cols, i + 16);
                if (ta >= 0 && (size_t)ta < tokens)
                    KI_PREFETCH(recs + (size_t)ta * 4);
            }
            if (i + 8 < nnz) {
                int64_t tb = int_at(cols, i + 8);
                size_t from, to;
                if (tb >= 0 && (size_t)tb < tokens && span_of(recs + (size_t)tb * 4, s_nnz, &from, &to)) {
                    KI_PREFETCH((const char *)classes.buf + from * csz);
                    for (size_t o = 2 * from; to > from && o < 2 * to + 8; o += 8)  /* (the pairs' lines, and the last) */
                        KI_PREFETCH(pairs + (o < 2 * to ? o : 2 * to - 1));
                    double row = recs[(size_t)tb * 4 + 1];
                    if (row >= 0 && row < (double)m)
                        for (size_t o = 0; o < J + 8; o += 8)
                            KI_PREFETCH(rw + (size_t)row * J + (o < J ? o : J - 1));
                }
            }
            int64_t t = int_at(cols, i);
            size_t from, to;
            if (t < 0 || (size_t)t >= tokens || !span_of(recs + (size_t)t * 4, s_nnz, &from, &to)) {
                ok = 0;
                break;
            }
            const double *rec = recs + (size_t)t * 4;
            double n = counts[i], v = x[i], g = rec[0], code = rec[1];
            double a = n >= 1 && n < TF_TABLE && n == (double)(size_t)n ? tf[(size_t)n] : log(n) + 1.0, a2 = a * a;
            ok = add_nonzeros(classes, from, to, K, v, pairs, a2, nb_r, sq_r);
            if (!ok || code < -1)
                continue;
            sums_r[0] += a2;
            sums_r[1] += a2 * g;
            sums_r[2] += a2 * (g * g);
            if (code < 0)
                continue;
            if (!(code < (double)m) || code != (double)(size_t)code) {
                ok = 0;
                break;
            }
            const double *w = rw + (size_t)code * J;
            for (size_t q = 0; q < J; q++)
                dots_r[q] += a * w[q];
        }
    }
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(ok);
done:
    release_all(views, sizeof views / sizeof *views);
    return result;
}
