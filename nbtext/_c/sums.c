#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "bits.h"
#include "ints.h"
#include "overlap.h"
#include "sums.h"

/* Sums held by token: a token's nonzero classes in order and their values (CSR: indptr by token),
 * with sums appended in parts as (token, class, value) entries. Folding the parts in is
 * nbtext.nb.sparse.TokenSums.settle: numpy's way sorts every entry held by its (token, class)
 * key, a sort of the whole state for each fold. Here a counting sort by token instead (the
 * held entries are in token order already): a pass to count each token's appended entries, a
 * pass to place them behind the room of the held ones (in the order they came), and a pass that
 * writes each token: its held entries and then its appended ones added up by class in that
 * order, from 0, as numpy's bincount adds them (the same bits); a run of held tokens that
 * nothing was appended to is copied as it is (folded already: its fold would give it back). Work
 * in proportion to the entries and the tokens, and memory for the outputs alone (the token
 * starts double as the placing cursors). */

/* A part: its three arrays, viewed; the entries it holds. */
typedef struct {
    Py_buffer t, c, v;
    size_t n;
} Part;

static void release_parts(Part *parts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        Py_buffer *views[] = {&parts[i].t, &parts[i].c, &parts[i].v};
        for (size_t j = 0; j < 3; j++)
            if (views[j]->obj)
                PyBuffer_Release(views[j]);
    }
}

/* The parts' buffers viewed and their sizes checked (tokens of 4 or 8 bytes, classes of 1, 2, 4
 * or 8, values float64, as many of each); 0 with an error set where they are not. */
static int view_parts(PyObject *seq, Part *parts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        Part *p = &parts[i];
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
            PyErr_SetString(PyExc_ValueError, "settle_sums: a part is a (tokens, classes, values) tuple");
            return 0;
        }
        Py_buffer *views[] = {&p->t, &p->c, &p->v};
        for (size_t j = 0; j < 3; j++)
            if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, j), views[j], PyBUF_SIMPLE) < 0)
                return 0;
        p->n = (size_t)p->v.len / sizeof(double);
        size_t ts = p->n ? (size_t)p->t.len / p->n : 8, cs = p->n ? (size_t)p->c.len / p->n : 8;
        if (p->v.len % sizeof(double) || (ts != 4 && ts != 8) || (size_t)p->t.len != ts * p->n
            || (cs != 1 && cs != 2 && cs != 4 && cs != 8) || (size_t)p->c.len != cs * p->n) {
            PyErr_SetString(PyExc_ValueError, "settle_sums: a part's arrays of the wrong sizes");
            return 0;
        }
    }
    return 1;
}

#define SETTLE_AHEAD 64  /* appended entries read ahead of the one placed (see settle_sums) */

/* The largest of n numbers of type T at buf, into out. */
#define LARGEST(T, buf, n, out) do {                  \
        const T *c_ = (const T *)(buf);               \
        T m_ = 0;                                     \
        for (size_t i_ = 0; i_ < (n); i_++)           \
            m_ = c_[i_] > m_ ? c_[i_] : m_;           \
        (out) = m_;                                   \
    } while (0)

/* Whether every held start is in order and within the entries, and every held class below k (a
 * loop per class width, which the compiler vectorises: it runs over everything held at every
 * fold). The appended tokens and classes are checked as they are counted and placed. */
static int held_valid(const int64_t *indptr, size_t held_width, Ints classes, size_t nnz, int64_t k)
{
    if (indptr[0] != 0 || (size_t)indptr[held_width] != nnz)
        return 0;
    int ordered = 1;
    for (size_t t = 0; t < held_width; t++)
        ordered &= indptr[t + 1] >= indptr[t];
    if (!ordered)
        return 0;
    uint64_t top = 0;
    switch (classes.size) {
    case 1: LARGEST(uint8_t, classes.buf, nnz, top); break;
    case 2: LARGEST(uint16_t, classes.buf, nnz, top); break;
    default: LARGEST(uint32_t, classes.buf, nnz, top); break;  /* (a negative class is a large one) */
    }
    return !nnz || top < (uint64_t)k;
}

/* One token's entries added up by class into acc (seen[c]: whether class c has a sum): its held
 * ones (hcls/hvals [hs, he)) first, then its appended ones (cls/vals [start, end)) in the order
 * they came; then written from ``w`` on in class order, zeros left out; the new w (at most
 * ``end``: the writes stay behind what is still to be read). The distinct classes are sorted by
 * insertion where few, else found by a pass over the k. */
static size_t fold_token(Ints held_classes, const double *hvals, size_t hs, size_t he, void *cls, size_t csz,
                         double *vals, size_t start, size_t end, size_t w, double *acc, char *seen, int64_t *touched,
                         int64_t k)
{
    size_t d = 0;
    for (size_t i = hs; i < he; i++) {
        int64_t c = int_at(held_classes, i);
        if (!seen[c]) {
            seen[c] = 1;
            acc[c] = 0.0;
            touched[d++] = c;
        }
        acc[c] += hvals[i];
    }
    for (size_t i = start; i < end; i++) {
        int64_t c = int_at((Ints){cls, csz}, i);
        if (!seen[c]) {
            seen[c] = 1;
            acc[c] = 0.0;
            touched[d++] = c;
        }
        acc[c] += vals[i];
    }
    if (d * d <= (size_t)k * 4) {
        for (size_t i = 1; i < d; i++) {
            int64_t c = touched[i];
            size_t j = i;
            for (; j > 0 && touched[j - 1] > c; j--)
                touched[j] = touched[j - 1];
            touched[j] = c;
        }
    } else {
        d = 0;
        for (int64_t c = 0; c < k; c++)
            if (seen[c])
                touched[d++] = c;
    }
    for (size_t i = 0; i < d; i++) {
        int64_t c = touched[i];
        seen[c] = 0;
        if (acc[c] != 0) {
            put_int(cls, csz, w, c);
            vals[w++] = acc[c];
        }
    }
    return w;
}

/* Held tokens [t0, t1) that nothing was appended to, copied from ``w`` on: each is folded
 * already (its classes increasing, no zero), and a fold of it alone gives it back (0.0 + v is
 * v), so it is copied as it is, its starts moved. Unless ``folded`` (the held arrays are a
 * fold's own output), each is checked so first, and one that is not so (held arrays made
 * elsewhere) is folded. The new w. */
static size_t copy_held(const int64_t *indptr, size_t t0, size_t t1, Ints held_classes, const double *hvals,
                        int64_t *out, void *cls, size_t csz, double *vals, size_t w, double *acc, char *seen,
                        int64_t *touched, int64_t k, int folded)
{
    if (folded && t0 < t1) {  /* (one copy of the run: its starts shifted by where it lands) */
        size_t hs = (size_t)indptr[t0], he = (size_t)indptr[t1];
        for (size_t t = t0; t < t1; t++)
            out[t] = (int64_t)(w + ((size_t)indptr[t] - hs));
        memcpy((char *)cls + w * csz, (const char *)held_classes.buf + hs * csz, (he - hs) * csz);
        memcpy(vals + w, hvals + hs, (he - hs) * sizeof(double));
        return w + (he - hs);
    }
    for (size_t t = t0; t < t1; t++) {
        size_t hs = (size_t)indptr[t], he = (size_t)indptr[t + 1];
        int canonical = 1;
        for (size_t i = hs; i < he && canonical; i++)
            canonical = hvals[i] != 0 && (i == hs || int_at(held_classes, i) > int_at(held_classes, i - 1));
        out[t] = (int64_t)w;
        if (!canonical) {
            w = fold_token(held_classes, hvals, hs, he, cls, csz, vals, 0, 0, w, acc, seen, touched, k);
            continue;
        }
        memcpy((char *)cls + w * csz, (const char *)held_classes.buf + hs * csz, (he - hs) * csz);
        memcpy(vals + w, hvals + hs, (he - hs) * sizeof(double));
        w += he - hs;
    }
    return w;
}

/* settle_sums' first step: each token's appended entries counted at out[tok + 1] (out zeroed
 * first); 0 where a token is out of range. */
static int count_appended(const Part *parts, size_t n_parts, int64_t *out, size_t width)
{
    memset(out, 0, (width + 1) * sizeof(int64_t));
    for (size_t p = 0; p < n_parts; p++) {
        Ints t = {parts[p].t.buf, (size_t)parts[p].t.len / (parts[p].n ? parts[p].n : 1)};
        for (size_t i = 0; i < parts[p].n; i++) {
            /* (a token's count is a random read of an array larger than a cache: the counts of
             * the tokens SETTLE_AHEAD on are fetched meanwhile, as hints) */
            if (i + SETTLE_AHEAD < parts[p].n) {
                int64_t ahead = int_at(t, i + SETTLE_AHEAD);
                if (ahead >= 0 && (size_t)ahead < width)
                    KI_PREFETCH(out + ahead + 1);
            }
            int64_t tok = int_at(t, i);
            if (tok < 0 || (size_t)tok >= width)
                return 0;
            out[tok + 1]++;
        }
    }
    return 1;
}

/* settle_sums' second step: the appended entries placed after the held ones' room ([nnz, total)),
 * grouped by token in the order they came (a counting sort); out[t + 1] ends as the end of token
 * t's. 0 where a class is out of range. */
static int place_appended(const Part *parts, size_t n_parts, int64_t *out, size_t width, size_t nnz,
                          size_t total, void *classes, size_t csz, double *vals, int64_t k)
{
    size_t at = nnz;  /* out[t + 1]: the start of token t's appended entries, then (placed) their end */
    for (size_t t = 0; t < width; t++) {
        size_t appended = (size_t)out[t + 1];
        out[t + 1] = (int64_t)at;
        at += appended;
    }
    for (size_t p = 0; p < n_parts; p++) {  /* the appended entries, in the order they came */
        size_t ts = (size_t)parts[p].t.len / (parts[p].n ? parts[p].n : 1);
        Ints t = {parts[p].t.buf, ts}, c = {parts[p].c.buf, (size_t)parts[p].c.len / (parts[p].n ? parts[p].n : 1)};
        const double *v = parts[p].v.buf;
        for (size_t i = 0; i < parts[p].n; i++) {
            /* (likewise the cursors SETTLE_AHEAD on, and the places of those half as far on) */
            if (i + SETTLE_AHEAD < parts[p].n)
                KI_PREFETCH(out + int_at(t, i + SETTLE_AHEAD) + 1);
            if (i + SETTLE_AHEAD / 2 < parts[p].n) {
                size_t ahead = (size_t)out[int_at(t, i + SETTLE_AHEAD / 2) + 1];
                if (ahead < total) {
                    KI_PREFETCH(vals + ahead);
                    KI_PREFETCH((char *)classes + ahead * csz);
                }
            }
            int64_t cls = int_at(c, i);
            if (cls < 0 || cls >= k)
                return 0;
            size_t place = (size_t)out[int_at(t, i) + 1]++;
            put_int(classes, csz, place, cls);
            vals[place] = v[i];
        }
    }
    return 1;
}

/* settle_sums(indptr, classes, values, parts, k, out_indptr, out_classes, out_values[, folded]) -> int:
 * the held sums (indptr int64 by token; classes of 1, 2 or 4 bytes; values float64) and the
 * parts (a sequence of (tokens, classes, values), in the order appended) folded into
 * out_indptr (int64, one start a token of the new width, and the end), out_classes (as the
 * held classes) and out_values, which hold room for every entry held and appended; the entries
 * written; -1, with the outputs partly written, where a start is out of order, a class not
 * below k or a token not below the new width. ``folded``: the held arrays are an earlier fold's
 * output (TokenSums knows), so a run of held tokens nothing was appended to is copied whole,
 * unchecked (the starts and classes are still checked: were the arrays not a fold's, only
 * the copy's sums would be wrong, never a read or write out of bounds). */
PyObject *kernel_settle_sums(PyObject *self, PyObject *args)
{
    Py_buffer pv = {0}, cv = {0}, vv = {0}, opv = {0}, ocv = {0}, ovv = {0};
    PyObject *seq = NULL, *parts_arg, *result = NULL;
    Py_ssize_t k;
    int folded = 0;
    Part *parts = NULL;
    size_t n_parts = 0;
    double *acc = NULL;
    char *seen = NULL;
    int64_t *touched = NULL;
    Py_buffer **ins = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*Onw*w*w*|p:settle_sums", &pv, &cv, &vv, &parts_arg, &k, &opv, &ocv, &ovv,
                          &folded))
        return NULL;
    if (!(seq = PySequence_Fast(parts_arg, "settle_sums: parts is a sequence")))
        goto done;
    n_parts = (size_t)PySequence_Fast_GET_SIZE(seq);
    if (!(parts = PyMem_Calloc(n_parts ? n_parts : 1, sizeof(Part)))) {
        PyErr_NoMemory();
        goto done;
    }
    if (!view_parts(seq, parts, n_parts) || !(ins = PyMem_Malloc((3 + 3 * n_parts) * sizeof(Py_buffer *)))) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    ins[0] = &pv, ins[1] = &cv, ins[2] = &vv;
    for (size_t p = 0; p < n_parts; p++)
        ins[3 + 3 * p] = &parts[p].t, ins[4 + 3 * p] = &parts[p].c, ins[5 + 3 * p] = &parts[p].v;
    if (buffers_overlap((Py_buffer *[]){&opv, &ocv, &ovv}, 3, ins, 3 + 3 * n_parts)) {
        PyErr_SetString(PyExc_ValueError, "settle_sums: an output overlaps an input or another output");
        goto done;
    }
    size_t held_width = (size_t)pv.len / sizeof(int64_t), nnz = (size_t)vv.len / sizeof(double);
    size_t csz = (size_t)ocv.len, total = nnz, width = (size_t)opv.len / sizeof(int64_t);
    for (size_t p = 0; p < n_parts; p++)
        total += parts[p].n;
    csz = total ? csz / total : 1;
    if (!held_width-- || pv.len % sizeof(int64_t) || vv.len % sizeof(double) || (size_t)cv.len != csz * nnz
        || (csz != 1 && csz != 2 && csz != 4) || !width-- || width < held_width || opv.len % sizeof(int64_t)
        || (size_t)ocv.len != csz * total || (size_t)ovv.len != total * sizeof(double) || k < 1
        || (size_t)k > ((size_t)1 << (8 * csz)) || (size_t)k > PY_SSIZE_T_MAX / sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "settle_sums: arrays of the wrong sizes");
        goto done;
    }
    const int64_t *indptr = pv.buf;
    int64_t *out = opv.buf;
    double *vals = ovv.buf;
    Ints held_classes = {cv.buf, csz};
    const double *hvals = vv.buf;
    if (!held_valid(indptr, held_width, held_classes, nnz, k)) {
        result = PyLong_FromLong(-1);
        goto done;
    }
    acc = PyMem_Malloc((size_t)k * sizeof(double));
    seen = PyMem_Calloc((size_t)k, 1);
    touched = PyMem_Malloc((size_t)k * sizeof(int64_t));
    if (!acc || !seen || !touched) {
        PyErr_NoMemory();
        goto done;
    }
    size_t w = 0;  /* (the entries written: the result) */
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    /* The appended entries are placed after the held ones' room ([nnz, total)), grouped by token in
     * the order they came (a counting sort); then each token is written from the start of the
     * outputs on, its held entries read from the held arrays: a token's writes end before its
     * appended entries' end, so they never overtake what is still to be read. */
    ok = count_appended(parts, n_parts, out, width)
         && place_appended(parts, n_parts, out, width, nnz, total, ocv.buf, csz, vals, k);
    size_t start = nnz;  /* (token t's appended entries: [start, out[t + 1]); out[t] is rewritten behind) */
    for (size_t t = 0; t < width && ok;) {
        size_t end = (size_t)out[t + 1];
        if (end == start && t < held_width) {  /* a run of held tokens nothing was appended to */
            size_t t1 = t + 1;
            while (t1 < held_width && (size_t)out[t1 + 1] == start)
                t1++;
            w = copy_held(indptr, t, t1, held_classes, hvals, out, ocv.buf, csz, vals, w, acc, seen, touched, k,
                          folded);
            t = t1;
            continue;
        }
        size_t hs = t < held_width ? (size_t)indptr[t] : 0, he = t < held_width ? (size_t)indptr[t + 1] : 0;
        out[t] = (int64_t)w;
        if (he == hs && end == start + 1) {  /* one appended entry alone (a new token's, mostly) */
            if (vals[start] != 0) {
                put_int(ocv.buf, csz, w, int_at((Ints){ocv.buf, csz}, start));
                vals[w++] = vals[start];
            }
        } else {
            w = fold_token(held_classes, hvals, hs, he, ocv.buf, csz, vals, start, end, w, acc, seen, touched, k);
        }
        start = end;
        t++;
    }
    out[width] = (int64_t)w;
    Py_END_ALLOW_THREADS
    result = ok ? PyLong_FromSize_t(w) : PyLong_FromLong(-1);
done:
    PyMem_Free(acc);
    PyMem_Free(seen);
    PyMem_Free(touched);
    PyMem_Free(ins);
    if (parts)
        release_parts(parts, n_parts);
    PyMem_Free(parts);
    Py_XDECREF(seq);
    Py_buffer *views[] = {&pv, &cv, &vv, &opv, &ocv, &ovv};
    for (size_t i = 0; i < 6; i++)
        if (views[i]->obj)
            PyBuffer_Release(views[i]);
    return result;
}

/* sums_product(data, indices, indptr, s_indptr, s_classes, s_values, out) -> bool: documents
 * (CSR rows: float64 values, int32 or int64 columns, int64 row starts) times sums held by token
 * (s_*: as settle_sums writes them, k = out's columns) into out (float64, rows x k, zeroed by
 * the caller): nbtext.nb.sparse.product, in scipy's order (a row's entries in turn, each
 * times its token's entries in turn, added to the row's sums from 0: the same bits), without
 * scipy's sparse result and its passes. Every row start, column, token start and class is
 * checked as it is read (the sums are a loaded model's: checked once, but not trusted here);
 * False, with out partly written, where one is out of range. */
PyObject *kernel_sums_product(PyObject *self, PyObject *args)
{
    Py_buffer dv = {0}, iv = {0}, pv = {0}, spv = {0}, scv = {0}, svv = {0}, ov = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*w*:sums_product", &dv, &iv, &pv, &spv, &scv, &svv, &ov))
        return NULL;
    if (buffers_overlap((Py_buffer *[]){&ov}, 1, (Py_buffer *[]){&dv, &iv, &pv, &spv, &scv, &svv}, 6)) {
        PyErr_SetString(PyExc_ValueError, "sums_product: an output overlaps an input");
        goto done;
    }
    size_t rows = (size_t)pv.len / sizeof(int64_t), nnz = (size_t)dv.len / sizeof(double);
    size_t tokens = (size_t)spv.len / sizeof(int64_t), s_nnz = (size_t)svv.len / sizeof(double);
    size_t isz = nnz ? (size_t)iv.len / nnz : 8, csz = s_nnz ? (size_t)scv.len / s_nnz : 1;
    if (!rows-- || !tokens-- || pv.len % sizeof(int64_t) || spv.len % sizeof(int64_t) || dv.len % sizeof(double)
        || svv.len % sizeof(double) || (isz != 4 && isz != 8) || (size_t)iv.len != isz * nnz
        || (csz != 1 && csz != 2 && csz != 4) || (size_t)scv.len != csz * s_nnz
        || !rows != !ov.len || (rows && (ov.len % (rows * sizeof(double))))) {
        PyErr_SetString(PyExc_ValueError, "sums_product: arrays of the wrong sizes");
        goto done;
    }
    size_t k = rows ? (size_t)ov.len / (rows * sizeof(double)) : 0;
    const int64_t *indptr = pv.buf, *s_indptr = spv.buf;
    const double *x = dv.buf, *sv = svv.buf;
    double *out = ov.buf;
    Ints cols = {iv.buf, isz}, classes = {scv.buf, csz};
    int ok = indptr[0] == 0 && (size_t)indptr[rows] == nnz;
    for (size_t r = 0; r < rows && ok; r++)
        ok = indptr[r + 1] >= indptr[r];
    Py_BEGIN_ALLOW_THREADS
    for (size_t r = 0; r < rows && ok; r++) {
        double *sums = out + r * k;
        for (int64_t i = indptr[r]; i < indptr[r + 1] && ok; i++) {
            /* Each entry waits on two random reads of a model's arrays (its token's start, then
             * its classes and values), larger than a core's cache: fetched ahead as hints, the
             * starts of the tokens 16 entries on, the classes and values of those 8 on (the
             * addresses are only hints: each is checked where it is read). */
            if ((size_t)i + 16 < nnz) {
                int64_t ta = int_at(cols, (size_t)i + 16);
                if (ta >= 0 && (size_t)ta < tokens)
                    KI_PREFETCH(s_indptr + ta);
            }
            if ((size_t)i + 8 < nnz) {
                int64_t tb = int_at(cols, (size_t)i + 8);
                if (tb >= 0 && (size_t)tb < tokens) {
                    int64_t at = s_indptr[tb];
                    if (at >= 0 && (size_t)at < s_nnz) {
                        KI_PREFETCH(sv + at);
                        KI_PREFETCH((const char *)classes.buf + (size_t)at * csz);
                    }
                }
            }
            int64_t t = int_at(cols, (size_t)i);
            if (t < 0 || (size_t)t >= tokens || s_indptr[t] < 0 || s_indptr[t + 1] < s_indptr[t]
                || (size_t)s_indptr[t + 1] > s_nnz) {
                ok = 0;
                break;
            }
            double v = x[i];
            for (int64_t j = s_indptr[t]; j < s_indptr[t + 1]; j++) {
                int64_t c = int_at(classes, (size_t)j);
                if ((size_t)c >= k) {
                    ok = 0;
                    break;
                }
                sums[c] += v * sv[j];
            }
        }
    }
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(ok);
done:;
    Py_buffer *views[] = {&dv, &iv, &pv, &spv, &scv, &svv, &ov};
    for (size_t i = 0; i < 7; i++)
        if (views[i]->obj)
            PyBuffer_Release(views[i]);
    return result;
}
