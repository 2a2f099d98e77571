#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

#include "bits.h"
#include "bytoken.h"
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
 * layer_scores(data, x, indices, indptr, s_indptr, classes, D, rest, tokens, rw, nb, sq, sums, dots)
 * -> bool: the documents' rows (float64 counts ``data`` and NB's feature values ``x`` of the same
 * entries; int32 or int64 columns; int64 starts) against the model's nonzeros held by token
 * (s_indptr: int64 a token's start, classes: 1, 2 or 4 bytes, K = nb's columns), each token's
 * nonzeros read once for NB and the layer:
 *   D, rest  float64 at the nonzeros: NB's weight difference (nb.sparse's D), the layer's rest;
 *   tokens   float64 tokens x 2, a record a token: its g and its code (-2: left out of the layer,
 *            -1: in it and weighing 0, else its row of rw);
 *   nb    += x_e D                 NB's product, in sums_product's order (the same bits);
 *   sq    += a_e^2 rest            the layer's ||A r_c||^2 at the nonzeros;
 *   sums  += a_e^2 (1, g, g g)     its three per-token sums (1: a token in the layer);
 *   dots  += a_e rw[code]          A r_c . w_c (rw: rows x J, J = dots' columns),
 * a_e = 1 + log(data_e), the sublinear tf. Outputs zeroed by the caller, rows x K, x K, x 3, x J.
 * The rows are taken a block at a time, token by token (bytoken.h): a token's record, nonzeros
 * and row of rw are read once for the block's entries of it. Every index is checked as it is
 * read; False, with the outputs partly written, where one is out of range. */

typedef struct {
    const double *counts, *x, *D, *rest, *recs, *rw;
    Ints cols, classes;
    const int64_t *indptr, *s_indptr;
    size_t rows, tokens, s_nnz, K, m, J;
    double *nb, *sq, *sums, *dots;
} Scores;

/* A token's nonzeros [from, to) checked once for its run of entries: -1 where a class is not
 * below K; 1 where the token is of every class (K nonzeros, classes 0 to K-1: the classes rise
 * within a token), whose entries add class by class without the classes' indirection: the loop
 * that most of the time goes to; else 0. */
static inline int token_kind(const Scores *s, size_t from, size_t to)
{
    size_t K = s->K, n = to - from, bad = 0;
    for (size_t j = 0; j < n; j++) {
        size_t c = (size_t)int_at(s->classes, from + j);
        if (c >= K)
            return -1;
        bad |= c ^ j;
    }
    return n == K && !bad;
}

/* nb[c] += v D[j] and sq[c] += a2 rest[j] over a token's nonzeros j in [from, to), c its classes
 * (checked by token_kind, whose answer ``every`` is). */
static inline void add_nonzeros(const Scores *s, size_t from, size_t to, int every, double v, double a2,
                                double *restrict nb, double *restrict sq)
{
    const double *restrict D = s->D + from, *restrict rest = s->rest + from;
    size_t n = to - from;
    if (every) {
        for (size_t c = 0; c < n; c++) {
            nb[c] += v * D[c];
            sq[c] += a2 * rest[c];
        }
        return;
    }
    for (size_t j = 0; j < n; j++) {
        size_t c = (size_t)int_at(s->classes, from + j);
        nb[c] += v * D[j];
        sq[c] += a2 * rest[j];
    }
}

enum { TF_TABLE = 256 };  /* counts below this take their sublinear tf from a table */

/* Token t's span of nonzeros, checked: 0 where it is not 0 <= from <= to <= s_nnz. */
static inline int span_of(const Scores *s, size_t t, size_t *from, size_t *to)
{
    int64_t f = s->s_indptr[t], e = s->s_indptr[t + 1];
    if (f < 0 || e < f || (uint64_t)e > s->s_nnz)
        return 0;
    *from = (size_t)f, *to = (size_t)e;
    return 1;
}

/* Hints for what an entry reads (addresses checked as they are read; here not in a function of
 * hints alone, which GCC drops the calls of): a token's start and record, then its nonzeros and
 * row of rw once the start is in. */
static inline void fetch_spans(const Scores *s, size_t t)
{
    size_t pf, pt;
    if (!span_of(s, t, &pf, &pt) || pt == pf)
        return;
    KI_PREFETCH((const char *)s->classes.buf + pf * s->classes.size);
    for (size_t o = pf; o < pt + 8; o += 8) {  /* (the values' lines, and the last) */
        KI_PREFETCH(s->D + (o < pt ? o : pt - 1));
        KI_PREFETCH(s->rest + (o < pt ? o : pt - 1));
    }
    double row = s->recs[2 * t + 1];
    if (row >= 0 && row < (double)s->m)
        for (size_t o = 0; o < s->J + 8; o += 8)
            KI_PREFETCH(s->rw + (size_t)row * s->J + (o < s->J ? o : s->J - 1));
}

/* The scores of a block of rows from r0 (order: its n entries in token order): 1; 0 where an
 * index is out of range. */
static int block_scores(const Scores *s, const ByToken *order, size_t r0, size_t n, const double *tf)
{
    const uint64_t *keys = order->keys;
    size_t first = (size_t)s->indptr[r0], at = SIZE_MAX, from = 0, to = 0, J = s->J;
    double g = 0.0, code = -2.0;
    const double *w = NULL;
    int every = 0;
    for (size_t q = 0; q < n; q++) {
        if (q + 16 < n) {  /* (the block's entry values are random reads too, of a cache's size) */
            size_t ta = by_token_column(order, keys[q + 16]), pa = by_token_place(order, keys[q + 16]);
            KI_PREFETCH(s->s_indptr + ta);
            KI_PREFETCH(s->recs + 2 * ta);
            KI_PREFETCH(s->counts + first + pa);
            KI_PREFETCH(s->x + first + pa);
            KI_PREFETCH(order->row_of + pa);
        }
        if (q + 8 < n) {
            size_t tb = by_token_column(order, keys[q + 8]);
            if (tb != at)
                fetch_spans(s, tb);
        }
        size_t t = by_token_column(order, keys[q]), p = by_token_place(order, keys[q]);
        if (t != at) {  /* (a token's record, span and row of rw: once for its run of entries) */
            if (!span_of(s, t, &from, &to) || (every = token_kind(s, from, to)) < 0)
                return 0;
            at = t, g = s->recs[2 * t], code = s->recs[2 * t + 1], w = NULL;
            if (code >= 0) {
                if (!(code < (double)s->m) || code != (double)(size_t)code)
                    return 0;
                w = s->rw + (size_t)code * J;
            }
        }
        size_t i = first + p, r = r0 + order->row_of[p];
        double cnt = s->counts[i];
        double a = cnt >= 1 && cnt < TF_TABLE && cnt == (double)(size_t)cnt ? tf[(size_t)cnt] : log(cnt) + 1.0;
        double a2 = a * a;
        add_nonzeros(s, from, to, every, s->x[i], a2, s->nb + r * s->K, s->sq + r * s->K);
        if (code < -1)
            continue;
        double *sums = s->sums + r * 3;
        sums[0] += a2;
        sums[1] += a2 * g;
        sums[2] += a2 * (g * g);
        if (w) {
            double *dots = s->dots + r * J;
            for (size_t j = 0; j < J; j++)
                dots[j] += a * w[j];
        }
    }
    return 1;
}

/* layer_scores's pass over every row, a block at a time: 1; 0 where an index is out of range;
 * -1 out of memory. Runs without the GIL. */
static int scores_pass(const Scores *s)
{
    /* 1 + log(n) of the small whole counts that most entries hold, made once: log's own values */
    double tf[TF_TABLE];
    for (size_t n = 1; n < TF_TABLE; n++)
        tf[n] = log((double)n) + 1.0;
    ByToken order = {0};
    int ok = 1;
    for (size_t r0 = 0, r1, n; r0 < s->rows && ok == 1; r0 = r1) {
        ok = by_token_next(&order, s->cols, s->indptr, r0, s->rows, s->tokens, &r1, &n);
        if (ok == 1)
            ok = block_scores(s, &order, r0, n, tf);
    }
    by_token_free(&order);
    return ok;
}

PyObject *kernel_layer_scores(PyObject *self, PyObject *args)
{
    Py_buffer dv = {0}, xv = {0}, iv = {0}, pv = {0}, spv = {0}, cv = {0}, Dv = {0}, rv = {0}, tv = {0}, wv = {0},
              nbv = {0}, sqv = {0}, suv = {0}, dov = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*w*w*w*w*:layer_scores", &dv, &xv, &iv, &pv, &spv, &cv, &Dv, &rv,
                          &tv, &wv, &nbv, &sqv, &suv, &dov))
        return NULL;
    Py_buffer *views[] = {&dv, &xv, &iv, &pv, &spv, &cv, &Dv, &rv, &tv, &wv, &nbv, &sqv, &suv, &dov};
    if (buffers_overlap((Py_buffer *[]){&nbv, &sqv, &suv, &dov}, 4,
                        (Py_buffer *[]){&dv, &xv, &iv, &pv, &spv, &cv, &Dv, &rv, &tv, &wv}, 10)) {
        PyErr_SetString(PyExc_ValueError, "layer_scores: an output overlaps an input or another output");
        goto done;
    }
    size_t rows = (size_t)pv.len / sizeof(int64_t), nnz = (size_t)dv.len / sizeof(double);
    size_t tokens = (size_t)tv.len / (2 * sizeof(double)), s_nnz = (size_t)Dv.len / sizeof(double);
    size_t isz = nnz ? (size_t)iv.len / nnz : 8, csz = s_nnz ? (size_t)cv.len / s_nnz : 1;
    if (!rows-- || pv.len % sizeof(int64_t) || dv.len % sizeof(double) || xv.len != dv.len
        || tv.len % (2 * sizeof(double)) || (size_t)spv.len != (tokens + 1) * sizeof(int64_t)
        || Dv.len % sizeof(double) || rv.len != Dv.len || (isz != 4 && isz != 8) || (size_t)iv.len != isz * nnz
        || (csz != 1 && csz != 2 && csz != 4) || (size_t)cv.len != csz * s_nnz
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
    Scores s = {dv.buf, xv.buf, Dv.buf, rv.buf, tv.buf, wv.buf, {iv.buf, isz}, {cv.buf, csz}, pv.buf, spv.buf,
                rows, tokens, s_nnz, K, m, J, nbv.buf, sqv.buf, suv.buf, dov.buf};
    int ok = starts_ok(s.indptr, rows, nnz);
    Py_BEGIN_ALLOW_THREADS
    if (ok)
        ok = scores_pass(&s);
    Py_END_ALLOW_THREADS
    if (ok < 0)
        PyErr_NoMemory();
    else
        result = PyBool_FromLong(ok);
done:
    release_all(views, sizeof views / sizeof *views);
    return result;
}
