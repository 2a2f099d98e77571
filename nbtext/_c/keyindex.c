#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bits.h"
#include "buf.h"
#include "hash.h"
#include "keyindex.h"

/* -- the vocabulary's index: token key -> id (nbtext.features.vocabulary) --------------------
 *
 * A KeyIndex maps the vocabulary's 64-bit token keys to their ids (positions in first-seen
 * order), as the numpy sorted levels of nbtext.features.vocabulary (the reference) do: the
 * same ids, and the same new tokens' bytes appended in the same order. The keys are kept in id
 * order in one array (8 bytes a token); an open-addressing table (linear probing) of 32-bit
 * slots, each 0 (empty) or an id + 1, finds them (its size any whole number, kept at a load
 * of at most 0.7: 5.7 to 11.4 bytes a token while it doubles, 6 when built at once). It
 * doubles rather than grows by half, so that it is rebuilt half as often; its slots hold the
 * id alone, as slots twice as wide with a fingerprint of the key cost more in bytes than they
 * save in probes (docs/kernel.md, "Figures behind the kernel's choices").
 *
 * A key's first slot comes from the key mixed with a per-index random seed (given by the
 * caller, from os.urandom). A token's key is a public function of its bytes (FNV-1a, then
 * SplitMix64's finalizer), and a model file's tokens are a stranger's: with the key's own low
 * bits as the slot, tokens chosen so that their keys share those bits would put every key in
 * one probe chain and make loading the file quadratic (docs/hostile.md). Equal keys are one
 * token, as in the reference. */

typedef struct {
    PyObject_HEAD
    uint64_t *keys;              /* keys[id], n of them, kcap allocated */
    size_t n, kcap;
    uint32_t *slots;             /* scap of them; 0: empty, else id + 1 */
    size_t scap;
    uint64_t seed0, seed1;
    unsigned long long probes;   /* slots visited past each lookup's first, over its life */
} KeyIndex;

#define KI_MAX_IDS ((size_t)UINT32_MAX / 2)   /* ids fit a slot, slots a 32-bit range */

static inline size_t ki_home(const KeyIndex *x, uint64_t key)
{
    uint64_t h = finish(finish(key ^ x->seed0) + x->seed1);
    return (size_t)(((h >> 32) * (uint64_t)x->scap) >> 32);  /* in [0, scap) */
}

/* The slot holding key, or the empty slot where it would go. scap > n always. */
static inline size_t ki_probe_from(KeyIndex *x, uint64_t key, size_t j)
{
    for (;;) {
        uint32_t s = x->slots[j];
        if (s == 0 || x->keys[s - 1] == key)
            return j;
        x->probes++;
        if (++j == x->scap)
            j = 0;
    }
}

static inline size_t ki_probe(KeyIndex *x, uint64_t key)
{
    return ki_probe_from(x, key, ki_home(x, key));
}

/* Looking up many keys: a lookup reads two places at random (its slot, then the key of the id
 * there) in arrays larger than a core's cache, and waited on memory for each. So the homes of
 * the keys KI_AHEAD ahead are computed and their slots fetched early, and half as far ahead
 * the keys of the ids found there (hints only: a slot filled in between just misses; the
 * lookup itself reads everything again). */
#define KI_AHEAD 16

typedef struct {
    size_t homes[KI_AHEAD];  /* the homes of keys j .. j + KI_AHEAD - 1, at their index % KI_AHEAD */
} KiAhead;

static inline void ki_ahead_start(KeyIndex *x, KiAhead *a, const uint64_t *k, size_t m)
{
    for (size_t j = 0; j < m && j < KI_AHEAD; j++) {
        a->homes[j] = ki_home(x, k[j]);
        KI_PREFETCH(&x->slots[a->homes[j]]);
    }
}

/* Key j's home (computed KI_AHEAD keys ago), the next keys' fetched. */
static inline size_t ki_ahead_next(KeyIndex *x, KiAhead *a, const uint64_t *k, size_t m, size_t j)
{
    size_t home = a->homes[j % KI_AHEAD];
    if (j + KI_AHEAD / 2 < m) {
        uint32_t s = x->slots[a->homes[(j + KI_AHEAD / 2) % KI_AHEAD]];
        if (s)
            KI_PREFETCH(&x->keys[s - 1]);
    }
    if (j + KI_AHEAD < m) {
        size_t h = a->homes[j % KI_AHEAD] = ki_home(x, k[j + KI_AHEAD]);
        KI_PREFETCH(&x->slots[h]);
    }
    return home;
}

/* Slots for ids 0..n-1, rebuilt from the keys (each key is distinct). */
static void ki_fill(KeyIndex *x)
{
    memset(x->slots, 0, x->scap * sizeof *x->slots);
    KiAhead a;
    ki_ahead_start(x, &a, x->keys, x->n);
    for (size_t id = 0; id < x->n; id++)
        x->slots[ki_probe_from(x, x->keys[id], ki_ahead_next(x, &a, x->keys, x->n, id))] = (uint32_t)(id + 1);
}

static size_t ki_slots_for(size_t n) { return n + n / 2 + 16; }  /* load 2/3 */

/* Room for `want` tokens: keys and slots. Contents unchanged; on failure, nothing changed. */
static int ki_reserve(KeyIndex *x, size_t want, int exact)
{
    if (want > KI_MAX_IDS) {
        PyErr_Format(PyExc_OverflowError, "a vocabulary of more than %zu tokens", KI_MAX_IDS);
        return -1;
    }
    if (want > x->kcap) {
        size_t cap = exact ? want : x->kcap + x->kcap / 4;
        if (cap < want)
            cap = want;
        if (cap < 64)
            cap = 64;
        uint64_t *keys = cap > SIZE_MAX / sizeof *keys ? NULL : PyMem_Realloc(x->keys, cap * sizeof *keys);
        if (!keys) {
            PyErr_NoMemory();
            return -1;
        }
        x->keys = keys;
        x->kcap = cap;
    }
    if (want * 10 > x->scap * 7 || !x->slots) {  /* past a load of 0.7: twice as many */
        size_t cap = exact ? ki_slots_for(want) : 2 * x->scap;
        if (cap < ki_slots_for(want) || cap > (size_t)UINT32_MAX)
            cap = ki_slots_for(want);  /* (at most 1.5 * 2**31 + 16: the home's arithmetic needs < 2**32) */
        if (cap > SIZE_MAX / sizeof *x->slots) {
            PyErr_NoMemory();
            return -1;
        }
        /* (rebuilt from the keys, so the old slots need not be kept: a realloc, which may
         * grow them in place, and which leaves them as they were when it fails) */
        uint32_t *slots = PyMem_Realloc(x->slots, cap * sizeof *slots);
        if (!slots) {
            PyErr_NoMemory();
            return -1;
        }
        x->slots = slots;
        x->scap = cap;
        ki_fill(x);
    }
    return 0;
}

/* The keys buffer as m uint64 (C-contiguous bytes of a multiple of 8), and an int64 output of
 * the same length (writable). */
static int ki_views(PyObject *keys, PyObject *out, Py_buffer *kv, Py_buffer *ov, size_t *m)
{
    if (PyObject_GetBuffer(keys, kv, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (PyObject_GetBuffer(out, ov, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(kv);
        return -1;
    }
    if (kv->len % 8 || ov->len != kv->len || (uintptr_t)kv->buf % 8 || (uintptr_t)ov->buf % 8) {
        PyBuffer_Release(kv);
        PyBuffer_Release(ov);
        PyErr_SetString(PyExc_ValueError, "nbtext kernel: keys and ids must be aligned 8-byte arrays of one length");
        return -1;
    }
    *m = (size_t)kv->len / 8;
    return 0;
}

/* ids[j] = the id of k[j], -1 when absent, for j < m. */
static void ki_find(KeyIndex *x, const uint64_t *k, size_t m, int64_t *ids)
{
    if (!x->n) {
        for (size_t j = 0; j < m; j++)
            ids[j] = -1;
        return;
    }
    KiAhead a;
    ki_ahead_start(x, &a, k, m);
    for (size_t j = 0; j < m; j++) {
        size_t home = ki_ahead_next(x, &a, k, m, j);
        ids[j] = (int64_t)x->slots[ki_probe_from(x, k[j], home)] - 1;
    }
}

int keyindex_find(PyObject *index, const uint64_t *keys, size_t m, int64_t *ids)
{
    if (!PyObject_TypeCheck(index, &KeyIndexType) || !((KeyIndex *)index)->slots) {
        PyErr_SetString(PyExc_TypeError, "nbtext kernel: an initialized KeyIndex was expected");
        return -1;
    }
    ki_find((KeyIndex *)index, keys, m, ids);
    return 0;
}

/* find(keys, ids): ids[j] = the id of keys[j], -1 when absent. */
static PyObject *KeyIndex_find(KeyIndex *x, PyObject *args)
{
    PyObject *keys, *out;
    Py_buffer kv, ov;
    size_t m;
    if (!PyArg_ParseTuple(args, "OO:find", &keys, &out) || ki_views(keys, out, &kv, &ov, &m) < 0)
        return NULL;
    ki_find(x, kv.buf, m, ov.buf);
    PyBuffer_Release(&kv);
    PyBuffer_Release(&ov);
    Py_RETURN_NONE;
}

/* extend(blob, keys, ids, vocab_blob) -> number of new tokens. blob holds m NUL-terminated
 * tokens (nothing after the last NUL), keys[j] is token j's key. Each token gets its id in
 * ids[j]; those whose key is new take the next ids in the order they first appear, and their
 * bytes (with the NUL) are appended to vocab_blob (a bytearray) in that order. All or nothing:
 * on an error (a bad blob, no memory, vocab_blob exported and not resizable) the index is as
 * it was. */
static PyObject *KeyIndex_extend(KeyIndex *x, PyObject *args)
{
    PyObject *keys, *out, *vocab;
    Py_buffer bv, kv, ov;
    size_t m;
    if (!PyArg_ParseTuple(args, "y*OOO!:extend", &bv, &keys, &out, &PyByteArray_Type, &vocab))
        return NULL;
    if (ki_views(keys, out, &kv, &ov, &m) < 0) {
        PyBuffer_Release(&bv);
        return NULL;
    }
    PyObject *result = NULL;
    const unsigned char *b = bv.buf;
    size_t len = (size_t)bv.len, nuls = 0;
    /* where each token ends (past its NUL), found once: the bytes of the new ones are then
     * copied without looking for their ends again */
    size_t *ends = PyMem_Malloc((m ? m : 1) * sizeof *ends);
    if (!ends) {
        PyErr_NoMemory();
        goto done;
    }
    for (const unsigned char *p = b, *end = b + len; p < end; p++) {
        p = memchr(p, 0, (size_t)(end - p));
        if (!p)
            break;
        if (nuls < m)
            ends[nuls] = (size_t)(p - b) + 1;
        nuls++;
    }
    if (nuls != m || (len && b[len - 1] != 0)) {
        PyErr_Format(PyExc_ValueError, "%zu keys for %zu NUL-terminated tokens%s", m, nuls,
                     len && b[len - 1] ? " and bytes after the last" : "");
        goto done;
    }
    const uint64_t *k = kv.buf;
    int64_t *ids = ov.buf;
    size_t n0 = x->n;
    if (m > KI_MAX_IDS || ki_reserve(x, n0 + m, n0 == 0) < 0)  /* (no failure past this point but the append's) */
        goto overflow;
    size_t added = 0;
    KiAhead a;
    ki_ahead_start(x, &a, k, m);
    for (size_t j = 0; j < m; j++) {
        size_t at = ki_probe_from(x, k[j], ki_ahead_next(x, &a, k, m, j));
        uint32_t s = x->slots[at];
        if (!s) {
            x->keys[x->n] = k[j];
            s = x->slots[at] = (uint32_t)(++x->n);
        }
        ids[j] = (int64_t)s - 1;
    }
    added = x->n - n0;
    if (added) {
        /* the new tokens' bytes: token j is new where ids[j] is the next id not yet written */
        size_t total = 0, expect = n0;
        for (size_t j = 0; j < m; j++) {
            if ((size_t)ids[j] == expect) {
                total += ends[j] - (j ? ends[j - 1] : 0);
                expect++;
            }
        }
        Py_ssize_t had = PyByteArray_GET_SIZE(vocab);
        if (total > (size_t)(PY_SSIZE_T_MAX - had) || PyByteArray_Resize(vocab, had + (Py_ssize_t)total) < 0) {
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            x->n = n0;  /* undone: the slots of the keys it held, rebuilt in place */
            ki_fill(x);
            goto done;
        }
        char *dst = PyByteArray_AS_STRING(vocab) + had;
        expect = n0;
        for (size_t j = 0; j < m && expect < x->n; j++) {
            if ((size_t)ids[j] == expect) {
                size_t from = j ? ends[j - 1] : 0;
                memcpy(dst, b + from, ends[j] - from);
                dst += ends[j] - from;
                expect++;
            }
        }
    }
    result = PyLong_FromSize_t(added);
    goto done;
overflow:
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_OverflowError, "a vocabulary of more than %zu tokens", KI_MAX_IDS);
done:
    PyMem_Free(ends);
    PyBuffer_Release(&bv);
    PyBuffer_Release(&kv);
    PyBuffer_Release(&ov);
    return result;
}

/* reserve(n): room for n tokens in all, made now: the keys' array and the slots for n at a load
 * of 2/3, filled once here rather than rebuilt at each doubling on the way (train's pruning makes
 * the new vocabulary's index for as many tokens as it found, about as many as the next pruning
 * will). Nothing changes where the index has that room already; a failure leaves it as it was. */
static PyObject *KeyIndex_reserve(KeyIndex *x, PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "nbtext kernel: reserve: a negative number of tokens");
        return NULL;
    }
    if ((size_t)n > x->n && ki_reserve(x, (size_t)n, 1) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* keys(out): the n uint64 keys in id order, written to out (writable, n * 8 bytes). */
static PyObject *KeyIndex_keys(KeyIndex *x, PyObject *out)
{
    Py_buffer ov;
    if (PyObject_GetBuffer(out, &ov, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return NULL;
    if ((size_t)ov.len != x->n * sizeof(uint64_t)) {
        PyBuffer_Release(&ov);
        PyErr_Format(PyExc_ValueError, "nbtext kernel: keys: %zu tokens need %zu bytes, not %zd",
                     x->n, x->n * sizeof(uint64_t), ov.len);
        return NULL;
    }
    if (x->n)
        memcpy(ov.buf, x->keys, x->n * sizeof(uint64_t));
    PyBuffer_Release(&ov);
    Py_RETURN_NONE;
}

static PyObject *KeyIndex_stats(KeyIndex *x, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("{s:n,s:n,s:K,s:n}", "tokens", (Py_ssize_t)x->n, "slots", (Py_ssize_t)x->scap,
                         "probes", x->probes, "bytes", (Py_ssize_t)(x->kcap * 8 + x->scap * 4));
}

static Py_ssize_t KeyIndex_len(KeyIndex *x) { return (Py_ssize_t)x->n; }

static int KeyIndex_init(KeyIndex *x, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"seed0", "seed1", NULL};
    unsigned long long s0, s1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "KK", kwlist, &s0, &s1))
        return -1;
    if (x->slots) {
        PyErr_SetString(PyExc_RuntimeError, "nbtext kernel: a KeyIndex is initialized once");
        return -1;
    }
    x->seed0 = s0;
    x->seed1 = s1;
    return ki_reserve(x, 0, 1);
}

static void KeyIndex_dealloc(KeyIndex *x)
{
    PyMem_Free(x->keys);
    PyMem_Free(x->slots);
    Py_TYPE(x)->tp_free((PyObject *)x);
}

#define KI_CHECKED(name)                                                            \
    static PyObject *name##_checked(KeyIndex *x, PyObject *a)                            \
    {                                                                                    \
        if (!x->slots) {                                                                 \
            PyErr_SetString(PyExc_RuntimeError, "nbtext kernel: KeyIndex not initialized"); \
            return NULL;                                                                 \
        }                                                                                \
        return name(x, a);                                                               \
    }
KI_CHECKED(KeyIndex_find)
KI_CHECKED(KeyIndex_extend)
KI_CHECKED(KeyIndex_keys)
KI_CHECKED(KeyIndex_reserve)

static PyMethodDef KeyIndex_methods[] = {
    {"find", (PyCFunction)KeyIndex_find_checked, METH_VARARGS,
     "find(keys, ids): ids[j] = the id of uint64 keys[j], -1 when absent (int64 ids, written in place)"},
    {"extend", (PyCFunction)KeyIndex_extend_checked, METH_VARARGS,
     "extend(blob, keys, ids, vocab_blob) -> number of new tokens; their bytes appended to vocab_blob"},
    {"reserve", (PyCFunction)KeyIndex_reserve_checked, METH_O,
     "reserve(n): room for n tokens in all (keys and slots), made now rather than as they come"},
    {"keys", (PyCFunction)KeyIndex_keys_checked, METH_O, "keys(out): the uint64 keys in id order, written to out"},
    {"stats", (PyCFunction)KeyIndex_stats, METH_NOARGS, "stats() -> tokens, slots, probes, bytes held"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods KeyIndex_as_sequence = {.sq_length = (lenfunc)KeyIndex_len};

PyTypeObject KeyIndexType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nbtext._kernel.KeyIndex",
    .tp_basicsize = sizeof(KeyIndex),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "KeyIndex(seed0, seed1): the vocabulary's key -> id index (nbtext.features.vocabulary)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)KeyIndex_init,
    .tp_dealloc = (destructor)KeyIndex_dealloc,
    .tp_methods = KeyIndex_methods,
    .tp_as_sequence = &KeyIndex_as_sequence,
};

/* keys(blob) -> bytes of uint64: token_keys of NUL-terminated tokens (for tests). */
PyObject *kernel_keys(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Buf out = {0};
    const unsigned char *b = view.buf;
    size_t n = (size_t)view.len, start = 0;
    for (size_t i = 0; i < n; i++) {
        if (b[i])
            continue;
        uint64_t k = finish(fnv(FNV_BASIS, b + start, i - start));
        if (buf_put(&out, &k, sizeof k) < 0) {
            PyBuffer_Release(&view);
            buf_free(&out);
            return NULL;
        }
        start = i + 1;
    }
    PyBuffer_Release(&view);
    PyObject *r = PyBytes_FromStringAndSize(out.p ? out.p : "", (Py_ssize_t)out.len);
    buf_free(&out);
    return r;
}

