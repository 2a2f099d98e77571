/* nbtext's compiled kernel: the model file's vocabulary sorted by bytes and front-coded, and decoded (frontcode.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bits.h"
#include "buf.h"
#include "frontcode.h"

/* -- the model file's vocabulary: sorted by bytes and front-coded (nbtext.store.vocabfile) --- */

typedef struct {
    const unsigned char *b;
    const size_t *starts; /* token i is b[starts[i] .. starts[i + 1] - 1), its NUL excluded */
} Tokens;

static inline size_t tok_len(const Tokens *t, int64_t i) { return t->starts[i + 1] - t->starts[i] - 1; }

/* Token i's byte at depth d plus one, 0 past its end (tokens hold no NUL: a token sorts
 * before a longer one it begins). */
static inline unsigned tok_byte(const Tokens *t, int64_t i, size_t d)
{
    return d < tok_len(t, i) ? (unsigned)t->b[t->starts[i] + d] + 1 : 0;
}

/* Byte order (unsigned) of two tokens known to share their first d bytes, a token before any
 * longer one it begins; equal tokens are equal. */
static int tok_cmp_from(const Tokens *t, int64_t x, int64_t y, size_t d)
{
    size_t lx = tok_len(t, x), ly = tok_len(t, y), m = lx < ly ? lx : ly;
    int c = m > d ? memcmp(t->b + t->starts[x] + d, t->b + t->starts[y] + d, m - d) : 0;
    return c ? c : (lx > ly) - (lx < ly);
}

typedef struct {
    size_t lo, hi, d; /* a[lo..hi) share their first d bytes */
} Range;

/* How many bytes from depth d tokens x and y share, at most `most` (a word at a time). */
static size_t shared_from(const Tokens *t, int64_t x, int64_t y, size_t d, size_t most)
{
    size_t lx = tok_len(t, x), ly = tok_len(t, y), m = lx < ly ? lx : ly;
    m = m > d ? m - d : 0;
    if (m > most)
        m = most;
    const unsigned char *p = t->b + t->starts[x] + d, *q = t->b + t->starts[y] + d;
    size_t k = 0;
    for (uint64_t u, v; k + 8 <= m; k += 8) {
        memcpy(&u, p + k, 8);
        memcpy(&v, q + k, 8);
        if (u != v)
            break;
    }
    while (k < m && p[k] == q[k])
        k++;
    return k;
}

#define RADIX_SMALL 24 /* ranges shorter than this are insertion-sorted */

/* Stable most-significant-byte radix sort of the ids in a (n of them), tmp as long: ties keep
 * their order, as numpy's lexsort in vocabfile._byte_order keeps them. Each range of ids that
 * share d bytes is dealt into buckets by byte d (a counting sort: stable), the ranges kept on a
 * heap stack rather than by recursion (a stranger's model file may hold long shared prefixes).
 * It reads each token's bytes a few times, where a comparison sort reads the namespaces' long
 * shared prefixes ("subject:", "url:path:") at every comparison (docs/kernel.md has the
 * figures). Returns -1 (MemoryError set) when the stack cannot grow. */
static int sort_ids(const Tokens *t, int64_t *a, int64_t *tmp, size_t n)
{
    size_t cap = 256, top = 0;
    Range *stack = PyMem_Malloc(cap * sizeof *stack);
    /* each id's byte at the range's depth, read once for the count and the deal (the tokens
     * are scattered over the blob: a cache miss or two each) */
    uint16_t *bytes = PyMem_Malloc((n ? n : 1) * sizeof *bytes);
    size_t count[258];
    if (!stack || !bytes) {
        PyMem_Free(stack);
        PyMem_Free(bytes);
        PyErr_NoMemory();
        return -1;
    }
    if (n > 1)
        stack[top++] = (Range){0, n, 0};
    while (top) {
        Range r = stack[--top];
        if (r.hi - r.lo < RADIX_SMALL) {
            for (size_t i = r.lo + 1; i < r.hi; i++) {
                int64_t v = a[i];
                size_t j = i;
                for (; j > r.lo && tok_cmp_from(t, v, a[j - 1], r.d) < 0; j--)
                    a[j] = a[j - 1];
                a[j] = v;
            }
            continue;
        }
        memset(count, 0, sizeof count);
        for (size_t i = r.lo; i < r.hi; i++) {
            if (i + 16 < r.hi)
                KI_PREFETCH(&t->starts[a[i + 16]]);
            if (i + 8 < r.hi) {
                size_t at = t->starts[a[i + 8]], end = t->starts[a[i + 8] + 1];
                KI_PREFETCH(t->b + (at + r.d < end ? at + r.d : at));
            }
            count[(bytes[i] = (uint16_t)tok_byte(t, a[i], r.d)) + 1]++;
        }
        if (count[0 + 1] == r.hi - r.lo)
            continue; /* every token ends here: all equal, in their order */
        int single = -1;
        for (int c = 1; c < 257 && single < 0; c++)
            if (count[c + 1] == r.hi - r.lo)
                single = c;
        if (single < 0) {
            for (int c = 1; c < 258; c++)
                count[c] += count[c - 1]; /* count[c]: where bucket c starts */
            for (size_t i = r.lo; i < r.hi; i++)
                tmp[r.lo + count[bytes[i]]++] = a[i];
            memcpy(a + r.lo, tmp + r.lo, (r.hi - r.lo) * sizeof *a);
        } /* (else all in one bucket: already in place) */
        if (top + 256 > cap) {
            size_t grown = cap * 2;
            Range *s = grown < (size_t)PY_SSIZE_T_MAX / sizeof *stack ? PyMem_Realloc(stack, grown * sizeof *stack) : NULL;
            if (!s) {
                PyMem_Free(stack);
                PyMem_Free(bytes);
                PyErr_NoMemory();
                return -1;
            }
            stack = s, cap = grown;
        }
        if (single >= 0) {
            /* one bucket: every token goes on past d; skip the bytes they all share (long
             * shared prefixes, read a word at a time rather than a level each) */
            size_t skip = (size_t)-1;
            for (size_t i = r.lo + 1; i < r.hi && skip; i++)
                skip = shared_from(t, a[r.lo], a[i], r.d, skip);
            stack[top++] = (Range){r.lo, r.hi, r.d + (skip ? skip : 1)};
            continue;
        }
        /* now count[c] is where bucket c ends; bucket 0 (tokens that end here) is done */
        for (int c = 1; c < 257; c++) {
            size_t lo = r.lo + count[c - 1], hi = r.lo + count[c];
            if (hi - lo > 1)
                stack[top++] = (Range){lo, hi, r.d + 1};
        }
    }
    PyMem_Free(stack);
    PyMem_Free(bytes);
    return 0;
}

/* front_code(blob, block) -> (fc, heads, order): vocabfile.front_code of the NUL-terminated
 * tokens of blob (bytes after the last NUL are not a token). order: int64 ids in byte order;
 * fc: per token in that order, one byte p + 1 (p: the bytes it shares with the token before,
 * at most 254, 0 at each block's head), the rest of its bytes, a NUL; heads: int64 offset in
 * fc of each block's head. */
PyObject *kernel_front_code(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t block;
    if (!PyArg_ParseTuple(args, "y*n:front_code", &view, &block))
        return NULL;
    PyObject *fc = NULL, *heads = NULL, *order = NULL, *result = NULL;
    size_t *starts = NULL;
    int64_t *tmp = NULL;
    const unsigned char *b = view.buf;
    size_t len = (size_t)view.len, n = 0;
    if (block < 1) {
        PyErr_Format(PyExc_ValueError, "block must be at least 1, got %zd", block);
        goto done;
    }
    for (const unsigned char *p = b, *end = b + len; p < end && (p = memchr(p, 0, (size_t)(end - p))); p++)
        n++;
    if (n > (size_t)PY_SSIZE_T_MAX / 8 - 1) {
        PyErr_NoMemory();
        goto done;
    }
    starts = PyMem_Malloc((n + 1) * sizeof *starts);
    tmp = PyMem_Malloc((n ? n : 1) * sizeof *tmp);
    order = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * sizeof(int64_t)));
    size_t n_heads = n ? (n - 1) / (size_t)block + 1 : 0;
    heads = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n_heads * sizeof(int64_t)));
    if (!starts || !tmp) {
        PyErr_NoMemory();
        goto done;
    }
    if (!order || !heads)
        goto done;
    starts[0] = 0;
    {
        size_t k = 0;
        for (const unsigned char *p = b, *end = b + len; k < n && (p = memchr(p, 0, (size_t)(end - p))); p++)
            starts[++k] = (size_t)(p - b) + 1;
    }
    Tokens t = {b, starts};
    int64_t *ids = (int64_t *)PyBytes_AS_STRING(order);
    for (size_t i = 0; i < n; i++)
        ids[i] = (int64_t)i;
    if (sort_ids(&t, ids, tmp, n) < 0)
        goto done;
    PyMem_Free(tmp);
    tmp = NULL;
    /* at most: every token whole, with its p byte and its NUL (the blob holds n NULs) */
    size_t cap = starts[n] + n;
    fc = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(cap ? cap : 1));
    if (!fc)
        goto done;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(fc);
    int64_t *head = (int64_t *)PyBytes_AS_STRING(heads);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t id = ids[i];
        /* (tokens are read in byte order, scattered over the blob: fetched ahead, the starts
         * 16 tokens on and the bytes 8 on) */
        if (i + 16 < n)
            KI_PREFETCH(&starts[ids[i + 16]]);
        if (i + 8 < n)
            KI_PREFETCH(b + starts[ids[i + 8]]);
        size_t l = tok_len(&t, id), p = 0;
        const unsigned char *s = b + starts[id];
        if (i % (size_t)block == 0) {
            head[i / (size_t)block] = (int64_t)at;
        } else {
            int64_t prev = ids[i - 1];
            size_t lp = tok_len(&t, prev), most = l < lp ? l : lp;
            const unsigned char *q = b + starts[prev];
            if (most > 254)
                most = 254;
            while (p < most && s[p] == q[p])
                p++;
        }
        if (at + 2 + (l - p) > cap) { /* (cannot happen: each entry is at most its token + 2) */
            PyErr_SetString(PyExc_RuntimeError, "front_code: output overflow");
            goto done;
        }
        out[at++] = (unsigned char)(p + 1);
        memcpy(out + at, s + p, l - p);
        at += l - p;
        out[at++] = 0;
    }
    if (_PyBytes_Resize(&fc, (Py_ssize_t)at) < 0) /* (frees fc and sets it NULL on failure) */
        goto done;
    result = PyTuple_Pack(3, fc, heads, order);
done:
    PyMem_Free(starts);
    PyMem_Free(tmp);
    Py_XDECREF(fc);
    Py_XDECREF(heads);
    Py_XDECREF(order);
    PyBuffer_Release(&view);
    return result;
}

/* front_decode(fc, block) -> bytes: vocabfile.front_decode_numpy in one pass (the reference:
 * the same tokens, or the same ValueError, checked in the same order). fc is a model file's,
 * a stranger's: every entry's prefix is checked against the token before it before a byte is
 * copied. One pass, where numpy's block-row decode is most of loading a model. */
PyObject *kernel_front_decode(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t block, limit = PY_SSIZE_T_MAX;
    if (!PyArg_ParseTuple(args, "y*n|n:front_decode", &view, &block, &limit))
        return NULL;
    PyObject *out = NULL;
    const unsigned char *f = view.buf;
    size_t len = (size_t)view.len, pos, i, total = 0, prev = 0;
    if (block < 1) {
        PyErr_Format(PyExc_ValueError, "vocabulary block size %zd", block);
        goto done;
    }
    if (len && f[len - 1] != 0) {
        PyErr_SetString(PyExc_ValueError, "vocabulary does not end with a NUL");
        goto done;
    }
    for (pos = 0; pos < len; pos++) {  /* an entry is at least its shared-prefix byte */
        if (f[pos] == 0 && (pos == 0 || f[pos - 1] == 0)) {
            PyErr_SetString(PyExc_ValueError, "empty vocabulary entry");
            goto done;
        }
    }
    for (pos = 0, i = 0; pos < len; i++) {  /* (f ends with a NUL: memchr finds one) */
        size_t entry = (size_t)((const unsigned char *)memchr(f + pos, 0, len - pos) - (f + pos));
        size_t shared = (size_t)f[pos] - 1, length = shared + entry - 1;
        if ((i % (size_t)block == 0 && shared != 0) || (i > 0 && shared > prev)) {
            PyErr_SetString(PyExc_ValueError, "vocabulary entries share more than the entry before holds");
            goto done;
        }
        total += length + 1;  /* (at most 256 bytes an entry byte: no overflow) */
        prev = length;
        pos += entry + 1;
    }
    if (total > (size_t)(limit < 0 ? 0 : limit)) {  /* (vocabfile.front_decode: a bomb) */
        PyErr_SetString(PyExc_ValueError, "vocabulary decodes to more bytes than its limit");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (!out)
        goto done;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out), *last = o;
    size_t at = 0;
    for (pos = 0; pos < len;) {
        size_t entry = (size_t)((const unsigned char *)memchr(f + pos, 0, len - pos) - (f + pos));
        size_t shared = (size_t)f[pos] - 1, rest = entry - 1;
        if (at + shared + rest + 1 > total) { /* (cannot happen: the sizes were added above) */
            Py_CLEAR(out);
            PyErr_SetString(PyExc_RuntimeError, "front_decode: output overflow");
            goto done;
        }
        memmove(o + at, last, shared);  /* (the token before's prefix; checked above) */
        memcpy(o + at + shared, f + pos + 1, rest);
        last = o + at;
        at += shared + rest;
        o[at++] = 0;
        pos += entry + 1;
    }
done:
    PyBuffer_Release(&view);
    return out;
}


/* first_unordered(blob) -> int: vocabfile.check_tokens's order check in one pass: the first i
 * whose NUL-terminated token is not after token i - 1 in byte order (the same token twice
 * included), -1 when each is (bytes after the last NUL are no token). Each pair is compared to
 * its first difference, within the shorter token: linear in the blob, a stranger's. */
PyObject *kernel_first_unordered(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *b = view.buf;
    size_t len = (size_t)view.len, pos = 0, prev = 0, prev_len = 0;
    long long i = 0, bad = -1;
    Py_BEGIN_ALLOW_THREADS
    while (pos < len) {
        const unsigned char *nul = memchr(b + pos, 0, len - pos);
        if (!nul)
            break;
        size_t n = (size_t)(nul - (b + pos)), m = prev_len < n ? prev_len : n;
        int c = i > 0 ? memcmp(b + prev, b + pos, m) : -1;
        if (c > 0 || (c == 0 && prev_len >= n)) {
            bad = i;
            break;
        }
        prev = pos;
        prev_len = n;
        pos += n + 1;
        i++;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromLongLong(bad);
}

/* -- a vocabulary's tokens picked by id (nbtext.features.vocabulary.Vocabulary.subset) -------- */

/* pick_tokens(blob, ids) -> bytes: the NUL-terminated tokens of blob whose positions are ids
 * (int64, increasing), in that order: one walk of the blob, without the offset of every token
 * that numpy's gather makes first. ValueError where ids do not increase or one is past the
 * tokens (bytes after the last NUL are no token). */
PyObject *kernel_pick_tokens(PyObject *self, PyObject *args)
{
    Py_buffer bv = {0}, iv = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*:pick_tokens", &bv, &iv))
        return NULL;
    const unsigned char *b = bv.buf;
    const int64_t *ids = iv.buf;
    size_t len = (size_t)bv.len, n = (size_t)iv.len / sizeof(int64_t), size = 0;
    int ok = iv.len % sizeof(int64_t) == 0;
    for (size_t j = 1; j < n && ok; j++)
        ok = ids[j] > ids[j - 1];
    ok = ok && (!n || ids[0] >= 0);
    /* the bytes the picked tokens take (a first walk), then the tokens copied (a second) */
    for (int pass = 0; pass < 2 && ok; pass++) {
        unsigned char *out = NULL;
        if (pass == 1) {
            if (!(result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size)))
                goto done;
            out = (unsigned char *)PyBytes_AS_STRING(result);
        }
        size_t pos = 0, j = 0;
        Py_BEGIN_ALLOW_THREADS
        for (int64_t i = 0; j < n && pos < len; i++) {
            const unsigned char *nul = memchr(b + pos, 0, len - pos);
            if (!nul)
                break;
            size_t end = (size_t)(nul - b) + 1;
            if (i == ids[j]) {
                if (out)
                    memcpy(out, b + pos, end - pos), out += end - pos;
                else
                    size += end - pos;
                j++;
            }
            pos = end;
        }
        Py_END_ALLOW_THREADS
        ok = j == n;
    }
    if (!ok) {
        Py_CLEAR(result);
        PyErr_SetString(PyExc_ValueError, "pick_tokens: ids that do not increase or past the tokens");
    }
done:
    PyBuffer_Release(&bv);
    PyBuffer_Release(&iv);
    return result;
}
