/* nbtext's compiled kernel: words, word n-grams, character n-grams, 64-bit token keys and counting
 * (tokenize.h is the interface).
 *
 * The compiled half of nbtext.features.kernel (read that module's docstring first). A Counter
 * counts a chunk of documents as nbtext.features.counting.Batch.of_tokens counts the pure-Python
 * tokenizer's tokens: the same tokens, in the same first-seen order, the same keys (FNV-1a over
 * the UTF-8 bytes, then the SplitMix64 finalizer: nbtext.features.vocabulary.token_keys) and the
 * same CSR rows. Only ASCII is tokenized here; a run of text between ASCII whitespace that holds
 * any other character is handed to the Python tokenizer (the callable `fallback`), whose words
 * then join the document's words here.
 *
 * The input is a stranger's mail: every read and write below is of a buffer whose length is
 * checked first (tests/test_kernel.py fuzzes this file under AddressSanitizer).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bits.h"
#include "buf.h"
#include "hash.h"
#include "radix.h"
#include "tokenize.h"

/* -- the counter ----------------------------------------------------------------------------- */

typedef struct {
    uint64_t key;
    int64_t col;
} Slot;

typedef struct {
    PyObject_HEAD
    int lowercase;
    Py_ssize_t max_word;
    int ngram_max, cmin, cmax;
    PyObject *fallback;     /* text -> list of words (nbtext.text.words.words) */
    /* the chunk's distinct tokens: an open-addressing table of key -> column, each slot's key
     * and column side by side (a probe reads one cache line, not one in each of two arrays:
     * the table outgrows the cache, and its misses are much of counting's time) */
    Slot *slots;            /* col -1: an empty slot */
    size_t tcap;            /* a power of two */
    uint64_t seed0, seed1;  /* a key's first slot: the key mixed with these (os.urandom's) */
    unsigned long long probes; /* slots visited past each token's first, over its life */
    Buf colkeys;            /* uint64 per column, in first-seen order */
    Buf blob;               /* the tokens, each followed by a NUL */
    /* the current document */
    Buf cnt;                /* int64 per column: its count in the document */
    Buf touched;            /* int64: the columns the document holds */
    Buf arena;              /* its words' bytes */
    Buf spans;              /* size_t pairs: (offset in arena, length) per word */
    Buf states;             /* uint64 per word: fnv of its bytes, not finished (its n-grams go on from it) */
    Buf sorting;            /* int64: a row's columns, as radix_sort's other half */
    Buf scratch;            /* one n-gram's bytes */
    Buf cps;                /* size_t: code point offsets of one padded word */
    Buf grams;              /* Gram: a document's keys of one kind, found before they are counted */
    /* the rows */
    Buf data;               /* double */
    Buf indices;            /* int64 */
    Buf indptr;             /* int64 */
} Counter;

static size_t ncols(Counter *c) { return c->colkeys.len / sizeof(uint64_t); }

/* A key's first slot in a table of mask + 1. Not the key's own low bits: a key is a public
 * function of a token's bytes, so mail could hold tokens chosen for keys that share them, all
 * in one probe chain, and make a chunk quadratic in its distinct tokens (docs/hostile.md); the
 * seed is secret. Columns are numbered in first-seen order, whatever the slots. */
static inline uint64_t counter_hash(const Counter *c, uint64_t key)
{
    return finish(finish(key ^ c->seed0) + c->seed1);
}

static inline size_t counter_home(const Counter *c, uint64_t key, size_t mask)
{
    return (size_t)counter_hash(c, key) & mask;
}

static int table_grow(Counter *c)
{
    size_t cap = c->tcap ? c->tcap * 2 : 1024;
    if (cap > SIZE_MAX / (2 * sizeof(Slot))) {
        PyErr_NoMemory();
        return -1;
    }
    Slot *slots = PyMem_Malloc(cap * sizeof(Slot));
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < cap; i++)
        slots[i].col = -1;
    for (size_t i = 0; i < c->tcap; i++) {
        if (c->slots[i].col < 0)
            continue;
        size_t j = counter_home(c, c->slots[i].key, cap - 1);
        while (slots[j].col >= 0)
            j = (j + 1) & (cap - 1);
        slots[j] = c->slots[i];
    }
    PyMem_Free(c->slots);
    c->slots = slots;
    c->tcap = cap;
    return 0;
}

/* The column of a key in the chunk's table, added (its token's bytes put by ``put``) when new;
 * -1 with an exception on failure. */
typedef int (*PutToken)(Counter *c, const void *what);

/* column_of, given the key's counter_hash (found ahead of its lookup, see count_grams). */
static int64_t column_of_hashed(Counter *c, uint64_t key, uint64_t hash, PutToken put, const void *what)
{
    if ((ncols(c) + 1) * 2 > c->tcap && table_grow(c) < 0)
        return -1;
    size_t mask = c->tcap - 1, j = (size_t)hash & mask;
    Slot *slot;
    for (;;) {
        slot = &c->slots[j];
        if (slot->col < 0 || slot->key == key)
            break;
        c->probes++;
        j = (j + 1) & mask;
    }
    if (slot->col >= 0)
        return slot->col;
    int64_t col = (int64_t)ncols(c), zero = 0;
    if (buf_put(&c->colkeys, &key, sizeof key) < 0 || put(c, what) < 0 || buf_put(&c->blob, "", 1) < 0
        || buf_put(&c->cnt, &zero, sizeof zero) < 0)
        return -1;
    slot->key = key;
    slot->col = col;
    return col;
}

static int64_t column_of(Counter *c, uint64_t key, PutToken put, const void *what)
{
    return column_of_hashed(c, key, counter_hash(c, key), put, what);
}

/* Count one more of a column in the current document. */
static int count_col(Counter *c, int64_t col)
{
    if (col < 0)
        return -1;
    if ((size_t)col >= c->cnt.len / sizeof(int64_t)) {
        PyErr_SetString(PyExc_SystemError, "nbtext kernel: column out of range");
        return -1;
    }
    int64_t *cnt = (int64_t *)c->cnt.p;
    if (cnt[col]++ == 0 && buf_put(&c->touched, &col, sizeof col) < 0)
        return -1;
    return 0;
}

typedef struct {
    const char *p;
    size_t n;
} Bytes;

static int put_bytes(Counter *c, const void *what)
{
    const Bytes *b = what;
    return buf_put(&c->blob, b->p, b->n);
}

/* Count one token of the current document, given its bytes (never holding a NUL) and key. */
static int count_key(Counter *c, const char *p, size_t n, uint64_t key)
{
    Bytes b = {p, n};
    return count_col(c, column_of(c, key, put_bytes, &b));
}

static inline int count_bytes(Counter *c, const char *p, size_t n)
{
    return count_key(c, p, n, finish(fnv(FNV_BASIS, (const unsigned char *)p, n)));
}

/* -- words ----------------------------------------------------------------------------------- */

static const unsigned char IS_WORD[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['_'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
    ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1,
    ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
    ['y'] = 1, ['z'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
    ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
    ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
    ['Y'] = 1, ['Z'] = 1,
};

/* Whitespace that ends every word of both of Python's word patterns, and that casefolding
 * neither makes nor removes: text is cut into runs between these. */
static inline int is_space(unsigned char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

static int add_word(Counter *c, const char *p, size_t n, int fold)
{
    size_t off = c->arena.len;
    if (buf_put(&c->arena, p, n) < 0)
        return -1;
    if (fold) {
        char *w = c->arena.p + off;
        for (size_t i = 0; i < n; i++)
            if (w[i] >= 'A' && w[i] <= 'Z')
                w[i] += 'a' - 'A';
    }
    size_t span[2] = {off, n};
    return buf_put(&c->spans, span, sizeof span);
}

/* The words of ASCII text s[a:b] as nbtext.text.words.ASCII_WORD_RE finds them
 * (\$?\w+(?:['.\-]\w+)*), each folded to lower case when asked, an over-long one as its
 * "skip:" summary. s[b] (when b is not the end) is whitespace or the end of the text. */
static int ascii_words(Counter *c, const unsigned char *s, size_t a, size_t b)
{
    size_t i = a;
    while (i < b) {
        size_t start = i;
        if (IS_WORD[s[i]]) {
        } else if (s[i] == '$' && i + 1 < b && IS_WORD[s[i + 1]]) {
            i++;
        } else {
            i++;
            continue;
        }
        while (i < b && IS_WORD[s[i]])
            i++;
        while (i + 1 < b && (s[i] == '\'' || s[i] == '.' || s[i] == '-') && IS_WORD[s[i + 1]]) {
            i++;
            while (i < b && IS_WORD[s[i]])
                i++;
        }
        size_t n = i - start;
        if ((Py_ssize_t)n > c->max_word) {
            /* f"skip:{w[0]} {len(w) // 10 * 10}" */
            char skip[64];
            unsigned char first = s[start];
            if (c->lowercase && first >= 'A' && first <= 'Z')
                first += 'a' - 'A';
            int k = snprintf(skip, sizeof skip, "skip:%c %zu", first, n / 10 * 10);
            if (k < 0 || (size_t)k >= sizeof skip) {
                PyErr_SetString(PyExc_SystemError, "nbtext kernel: skip token too long");
                return -1;
            }
            if (add_word(c, skip, (size_t)k, 0) < 0)
                return -1;
        } else if (add_word(c, (const char *)s + start, n, c->lowercase) < 0) {
            return -1;
        }
    }
    return 0;
}

static int utf8_of(PyObject *o, const char **p, Py_ssize_t *n, PyObject **owner);

/* The Python tokenizer's words of a text, added to the document's words. */
static int fallback_words(Counter *c, PyObject *text)
{
    PyObject *found = PyObject_CallOneArg(c->fallback, text);
    if (!found)
        return -1;
    if (!PyList_Check(found)) {
        Py_DECREF(found);
        PyErr_SetString(PyExc_TypeError, "nbtext kernel: the fallback must return a list");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(found); i++) {
        const char *p;
        Py_ssize_t n;
        PyObject *owner = NULL;
        if (utf8_of(PyList_GET_ITEM(found, i), &p, &n, &owner) < 0
            || add_word(c, p, (size_t)n, 0) < 0) {
            Py_XDECREF(owner);
            Py_DECREF(found);
            return -1;
        }
        Py_XDECREF(owner);
    }
    Py_DECREF(found);
    return 0;
}

static int fallback_span(Counter *c, const char *p, size_t n)
{
    PyObject *text = PyUnicode_DecodeUTF8(p, (Py_ssize_t)n, "strict");
    if (!text)
        return -1;
    int r = fallback_words(c, text);
    Py_DECREF(text);
    return r;
}

/* The UTF-8 bytes of a str; with lone surrogates (which strict UTF-8 refuses), encoded with
 * "surrogatepass" as nbtext.features.vocabulary.encode_tokens does, into *owner. */
static int utf8_of(PyObject *o, const char **p, Py_ssize_t *n, PyObject **owner)
{
    *owner = NULL;
    if (!PyUnicode_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "nbtext kernel: tokens must be str");
        return -1;
    }
    *p = PyUnicode_AsUTF8AndSize(o, n);
    if (*p)
        return 0;
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
        return -1;
    PyErr_Clear();
    *owner = PyUnicode_AsEncodedString(o, "utf-8", "surrogatepass");
    if (!*owner)
        return -1;
    *p = PyBytes_AS_STRING(*owner);
    *n = PyBytes_GET_SIZE(*owner);
    return 0;
}

/* -- methods --------------------------------------------------------------------------------- */

static PyObject *Counter_add_tokens(Counter *c, PyObject *tokens)
{
    PyObject *seq = PySequence_Fast(tokens, "nbtext kernel: tokens must be a list");
    if (!seq)
        return NULL;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        const char *p;
        Py_ssize_t n;
        PyObject *owner = NULL;
        if (utf8_of(PySequence_Fast_GET_ITEM(seq, i), &p, &n, &owner) < 0)
            goto error;
        if (memchr(p, 0, (size_t)n)) {
            Py_XDECREF(owner);
            PyErr_SetString(PyExc_ValueError, "a token contains a NUL character; tokens must not");
            goto error;
        }
        int r = count_bytes(c, p, (size_t)n);
        Py_XDECREF(owner);
        if (r < 0)
            goto error;
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
error:
    Py_DECREF(seq);
    return NULL;
}

/* add_text(text): the words of a text join the document's words. */
/* Whether a code point is a word separator that casefolding leaves as it is, to both of
 * Python's word patterns: not a letter, mark, number or "_", nor a word's inner "’" or
 * a leading currency sign (nbtext.text.words.WORD). A few common ones only (no Unicode
 * tables here): the C1 controls (cp1252's bytes read as Latin-1), Latin-1's punctuation and
 * symbols, general punctuation but U+2019, the trade mark sign and the replacement character.
 * (tests/test_kernel.py checks each against the regex module's classes and casefold.) */
static int is_separator_cp(uint32_t cp)
{
    static const unsigned char latin1[0x60] = {  /* U+00A0 .. U+00FF */
        [0x00] = 1, [0x01] = 1, [0x02] = 1, [0x04] = 1, [0x06] = 1, [0x07] = 1, [0x08] = 1,
        [0x09] = 1, [0x0B] = 1, [0x0C] = 1, [0x0D] = 1, [0x0E] = 1, [0x0F] = 1, [0x10] = 1,
        [0x11] = 1, [0x14] = 1, [0x16] = 1, [0x17] = 1, [0x18] = 1, [0x1B] = 1, [0x1F] = 1,
        [0x37] = 1, [0x57] = 1,
    };
    if (cp < 0xA0)
        return cp >= 0x80;
    if (cp <= 0xFF)
        return latin1[cp - 0xA0];
    if (cp >= 0x2010 && cp <= 0x2027)
        return cp != 0x2019;
    return (cp >= 0x2030 && cp <= 0x203E) || cp == 0x2122 || cp == 0xFFFD;
}

/* Whether every non-ASCII character of the (valid) UTF-8 run u[a:b] is a separator
 * (is_separator_cp): then the run's words are its ASCII words (ascii_words, which reads
 * bytes from 0x80 up as separators), as Python's words() finds them: a run with a no-break
 * space or typographic punctuation stays here. */
static int separators_only(const unsigned char *u, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++) {
        if (u[i] < 0x80)
            continue;
        uint32_t cp;
        if ((u[i] & 0xE0) == 0xC0 && i + 1 < b) {
            cp = (uint32_t)(u[i] & 0x1F) << 6 | (u[i + 1] & 0x3F);
            i += 1;
        } else if ((u[i] & 0xF0) == 0xE0 && i + 2 < b) {
            cp = (uint32_t)(u[i] & 0x0F) << 12 | (uint32_t)(u[i + 1] & 0x3F) << 6 | (u[i + 2] & 0x3F);
            i += 2;
        } else {
            return 0;  /* (four bytes: none is one) */
        }
        if (!is_separator_cp(cp))
            return 0;
    }
    return 1;
}

static PyObject *Counter_add_text(Counter *c, PyObject *text)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "nbtext kernel: text must be str");
        return NULL;
    }
    if (PyUnicode_IS_ASCII(text)) {
        if (ascii_words(c, PyUnicode_DATA(text), 0, (size_t)PyUnicode_GET_LENGTH(text)) < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(text, &len);
    if (!s) {  /* lone surrogates: the whole text to Python */
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
            return NULL;
        PyErr_Clear();
        if (fallback_words(c, text) < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    const unsigned char *u = (const unsigned char *)s;
    size_t n = (size_t)len, i = 0;
    size_t pending = 0, pending_end = 0;  /* runs not yet tokenized: [pending, pending_end) */
    int have_pending = 0;
    while (i < n) {
        while (i < n && is_space(u[i]))
            i++;
        if (i >= n)
            break;
        size_t a = i;
        int ascii = 1;
        while (i < n && !is_space(u[i])) {
            ascii &= u[i] < 0x80;
            i++;
        }
        if (!ascii && !separators_only(u, a, i)) {  /* with the non-ASCII runs just before it, to Python in one call */
            if (!have_pending)
                pending = a;
            have_pending = 1;
            pending_end = i;
            continue;
        }
        if (have_pending) {
            if (fallback_span(c, s + pending, pending_end - pending) < 0)
                return NULL;
            have_pending = 0;
        }
        if (ascii_words(c, u, a, i) < 0)
            return NULL;
    }
    if (have_pending && fallback_span(c, s + pending, pending_end - pending) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* An n-gram's bytes into the blob: its words joined by spaces (put only when it is new). */
typedef struct {
    const char *arena;
    const size_t *spans;
    size_t first, k;
} NGram;

static int put_ngram(Counter *c, const void *what)
{
    const NGram *g = what;
    for (size_t j = g->first; j < g->first + g->k; j++) {
        if ((j > g->first && buf_put(&c->blob, " ", 1) < 0)
            || buf_put(&c->blob, g->arena + g->spans[2 * j], g->spans[2 * j + 1]) < 0)
            return -1;
    }
    return 0;
}

/* A character n-gram's bytes into the blob: "c:" and padded[from - 3 : to - 3] of the word's
 * padded = "<" + word + ">" (from and to are offsets in "c:" + padded, as end_document finds
 * them). */
typedef struct {
    const char *word;
    size_t n, from, to;
} CharGram;

static int put_chargram(Counter *c, const void *what)
{
    const CharGram *g = what;
    size_t lo = g->from > 3 ? g->from : 3, hi = g->to < 3 + g->n ? g->to : 3 + g->n;
    return buf_put(&c->blob, "c:", 2) < 0 || (g->from <= 2 && buf_put(&c->blob, "<", 1) < 0)
        || (hi > lo && buf_put(&c->blob, g->word + lo - 3, hi - lo) < 0)
        || (g->to >= 4 + g->n && buf_put(&c->blob, ">", 1) < 0) ? -1 : 0;
}

/* A document's token of one kind, its key found before it is counted: ``at`` and ``k`` say
 * which (a word's index; an n-gram's first word and words; a character n-gram's word and
 * [k, to) of "c:" + its padded word). */
typedef struct {
    uint64_t key, hash;
    uint32_t at, k, to;
} Gram;

enum { WORDS, NGRAMS, CHARS };

/* Count the grams in c->grams, in their order. Each lookup is a random read of a table larger
 * than a core's cache: the slots of the grams GRAM_AHEAD on are fetched as hints meanwhile (the
 * order of the lookups, and so the columns, are the same). */
#define GRAM_AHEAD 8
static int count_grams(Counter *c, int kind)
{
    const Gram *g = (const Gram *)c->grams.p;
    size_t n = c->grams.len / sizeof(Gram);
    const size_t *spans = (const size_t *)c->spans.p;
    for (size_t i = 0; i < n && i < GRAM_AHEAD && c->tcap; i++)
        KI_PREFETCH(&c->slots[g[i].hash & (c->tcap - 1)]);
    for (size_t i = 0; i < n; i++) {
        if (i + GRAM_AHEAD < n && c->tcap)
            KI_PREFETCH(&c->slots[g[i + GRAM_AHEAD].hash & (c->tcap - 1)]);
        const char *w = c->arena.p + spans[2 * g[i].at];
        size_t wn = spans[2 * g[i].at + 1];
        int64_t col;
        if (kind == WORDS) {
            Bytes b = {w, wn};
            col = column_of_hashed(c, g[i].key, g[i].hash, put_bytes, &b);
        } else if (kind == NGRAMS) {
            NGram ng = {c->arena.p, spans, g[i].at, g[i].k};
            col = column_of_hashed(c, g[i].key, g[i].hash, put_ngram, &ng);
        } else {
            CharGram cg = {w, wn, g[i].k, g[i].to};
            col = column_of_hashed(c, g[i].key, g[i].hash, put_chargram, &cg);
        }
        if (count_col(c, col) < 0)
            return -1;
    }
    c->grams.len = 0;
    return 0;
}

static inline int add_gram(Counter *c, uint64_t key, size_t at, size_t k, size_t to)
{
    Gram g = {key, counter_hash(c, key), (uint32_t)at, (uint32_t)k, (uint32_t)to};
    return buf_put(&c->grams, &g, sizeof g);
}

/* end_document(chars): count the document's words, their n-grams and (with chars) their
 * character n-grams, in nbtext.text.words.add_ngrams's order, and close its row. A word's
 * n-grams are keyed by going on from the hash of its bytes (fnv reads bytes in order: the
 * same key as the joined bytes'), and their bytes are joined only when new to the chunk. Each
 * kind's keys are found first, then counted in order (count_grams). */
static PyObject *Counter_end_document(Counter *c, PyObject *arg)
{
    int chars = PyObject_IsTrue(arg);
    if (chars < 0)
        return NULL;
    const size_t *spans = (const size_t *)c->spans.p;
    size_t nw = c->spans.len / (2 * sizeof(size_t));
    if (nw > UINT32_MAX || c->arena.len > UINT32_MAX - 8) {
        PyErr_SetString(PyExc_SystemError, "nbtext kernel: document too long");
        return NULL;
    }
    c->states.len = c->grams.len = 0;
    if (buf_reserve(&c->states, nw * sizeof(uint64_t)) < 0)
        return NULL;
    uint64_t *states = (uint64_t *)c->states.p;
    for (size_t i = 0; i < nw; i++) {
        if (spans[2 * i] > c->arena.len || spans[2 * i + 1] > c->arena.len - spans[2 * i]) {
            PyErr_SetString(PyExc_SystemError, "nbtext kernel: word out of range");
            return NULL;
        }
        const char *w = c->arena.p + spans[2 * i];
        states[i] = fnv(FNV_BASIS, (const unsigned char *)w, spans[2 * i + 1]);
        if (add_gram(c, finish(states[i]), i, 0, 0) < 0)
            return NULL;
    }
    if (count_grams(c, WORDS) < 0)
        return NULL;
    for (size_t k = 2; k <= (size_t)c->ngram_max && k <= nw; k++) {
        for (size_t i = 0; i + k <= nw; i++) {
            uint64_t h = states[i];
            for (size_t j = i + 1; j < i + k; j++)
                h = fnv(fnv(h, (const unsigned char *)" ", 1), (const unsigned char *)c->arena.p + spans[2 * j],
                        spans[2 * j + 1]);
            if (add_gram(c, finish(h), i, k, 0) < 0)
                return NULL;
        }
    }
    if (count_grams(c, NGRAMS) < 0)
        return NULL;
    if (chars && c->cmin > 0) {
        const uint64_t prefix = fnv(FNV_BASIS, (const unsigned char *)"c:", 2);
        for (size_t i = 0; i < nw; i++) {
            /* padded = "<" + word + ">", cut at code points: "c:" + padded[a:a + k] */
            c->scratch.len = 0;
            if (buf_put(&c->scratch, "c:<", 3) < 0
                || buf_put(&c->scratch, c->arena.p + spans[2 * i], spans[2 * i + 1]) < 0
                || buf_put(&c->scratch, ">", 1) < 0)
                return NULL;
            c->cps.len = 0;
            const unsigned char *w = (const unsigned char *)c->scratch.p;
            for (size_t j = 2; j <= c->scratch.len; j++) {
                if (j == c->scratch.len || (w[j] & 0xC0) != 0x80) {
                    if (buf_put(&c->cps, &j, sizeof j) < 0)
                        return NULL;
                }
            }
            const size_t *cp = (const size_t *)c->cps.p;
            size_t ncp = c->cps.len / sizeof(size_t) - 1;  /* code points of padded */
            /* The word's n-grams are counted k by k, each k's from the start; their keys are
             * found start by start, each k's going on from the k - 1's (fnv reads bytes in
             * order), into the places they are counted from. */
            size_t cmin = (size_t)c->cmin, cmax = (size_t)c->cmax < ncp ? (size_t)c->cmax : ncp, first = 0;
            size_t count = 0;
            for (size_t k = cmin; k <= cmax; k++)
                count += ncp - k + 1;
            if (count && (first = c->grams.len / sizeof(Gram), buf_reserve(&c->grams, count * sizeof(Gram)) < 0))
                return NULL;
            Gram *g = (Gram *)c->grams.p + first;
            for (size_t a = 0; a + cmin <= ncp && count; a++) {
                uint64_t h = prefix;
                size_t at = a;  /* (the place of (k, a): the n-grams of the shorter k's before it, then a) */
                for (size_t k = 1; k <= cmax && a + k <= ncp; k++) {
                    size_t from = cp[a + k - 1], to = cp[a + k];
                    if (cp[a] < 2 || to > c->scratch.len || from >= to) {
                        PyErr_SetString(PyExc_SystemError, "nbtext kernel: n-gram out of range");
                        return NULL;
                    }
                    h = fnv(h, w + from, to - from);
                    if (k < cmin)
                        continue;
                    uint64_t key = finish(h);
                    g[at] = (Gram){key, counter_hash(c, key), (uint32_t)i, (uint32_t)cp[a], (uint32_t)to};
                    at += ncp - k + 1;
                }
            }
            c->grams.len += count * sizeof(Gram);
        }
        if (count_grams(c, CHARS) < 0)
            return NULL;
    }
    /* the row: its columns sorted, with their counts */
    int64_t *cols = (int64_t *)c->touched.p;
    size_t nt = c->touched.len / sizeof(int64_t);
    if (nt > 1) {
        c->sorting.len = 0;
        if (buf_reserve(&c->sorting, nt * sizeof(int64_t)) < 0)
            return NULL;
        cols = (int64_t *)c->touched.p;
        radix_sort_packed((uint64_t *)cols, (uint64_t *)c->sorting.p, nt, 0, (uint64_t)ncols(c));  /* (columns >= 0) */
    }
    if (buf_reserve(&c->data, nt * sizeof(double)) < 0 || buf_reserve(&c->indices, nt * sizeof(int64_t)) < 0)
        return NULL;
    int64_t *cnt = (int64_t *)c->cnt.p;
    size_t have = c->cnt.len / sizeof(int64_t);
    for (size_t i = 0; i < nt; i++) {
        if (cols[i] < 0 || (size_t)cols[i] >= have) {
            PyErr_SetString(PyExc_SystemError, "nbtext kernel: column out of range");
            return NULL;
        }
        double v = (double)cnt[cols[i]];
        cnt[cols[i]] = 0;
        buf_put(&c->data, &v, sizeof v);            /* (reserved above) */
        buf_put(&c->indices, &cols[i], sizeof(int64_t));
    }
    int64_t end = (int64_t)(c->indices.len / sizeof(int64_t));
    if (buf_put(&c->indptr, &end, sizeof end) < 0)
        return NULL;
    c->touched.len = c->arena.len = c->spans.len = 0;
    Py_RETURN_NONE;
}

static PyObject *bytes_of(Buf *b) { return PyBytes_FromStringAndSize(b->p ? b->p : "", (Py_ssize_t)b->len); }

/* result() -> (blob, keys, data, indices, indptr, n_cols): bytes of the tokens (NUL-terminated,
 * first-seen order), of their uint64 keys, of the rows' float64 counts, int64 columns and
 * int64 row starts (native byte order). */
static PyObject *Counter_result(Counter *c, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("(NNNNNn)", bytes_of(&c->blob), bytes_of(&c->colkeys), bytes_of(&c->data),
                         bytes_of(&c->indices), bytes_of(&c->indptr), (Py_ssize_t)ncols(c));
}

static int Counter_init(Counter *c, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"lowercase", "max_word_length", "ngram_max", "char_ngram_min",
                             "char_ngram_max", "fallback", NULL};
    int lowercase, ngram_max, cmin, cmax;
    Py_ssize_t max_word;
    PyObject *fallback;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "pniiiO", kwlist, &lowercase, &max_word,
                                     &ngram_max, &cmin, &cmax, &fallback))
        return -1;
    if (max_word < 1 || ngram_max < 1 || ngram_max > 64 || cmin < 0 || cmax < cmin || cmax > 64
        || !PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_ValueError, "nbtext kernel: bad settings");
        return -1;
    }
    if (c->indptr.len) {
        PyErr_SetString(PyExc_RuntimeError, "nbtext kernel: a Counter is initialized once");
        return -1;
    }
    PyObject *os = PyImport_ImportModule("os");
    PyObject *seed = os ? PyObject_CallMethod(os, "urandom", "i", 16) : NULL;
    Py_XDECREF(os);
    if (!seed)
        return -1;
    if (!PyBytes_Check(seed) || PyBytes_GET_SIZE(seed) != 16) {
        Py_DECREF(seed);
        PyErr_SetString(PyExc_SystemError, "nbtext kernel: os.urandom gave no seed");
        return -1;
    }
    memcpy(&c->seed0, PyBytes_AS_STRING(seed), 8);
    memcpy(&c->seed1, PyBytes_AS_STRING(seed) + 8, 8);
    Py_DECREF(seed);
    c->lowercase = lowercase;
    c->max_word = max_word;
    c->ngram_max = ngram_max;
    c->cmin = cmin;
    c->cmax = cmax;
    Py_INCREF(fallback);
    Py_XSETREF(c->fallback, fallback);
    int64_t zero = 0;
    return buf_put(&c->indptr, &zero, sizeof zero);
}

static void Counter_dealloc(Counter *c)
{
    Py_XDECREF(c->fallback);
    PyMem_Free(c->slots);
    Buf *bufs[] = {&c->colkeys, &c->blob, &c->cnt, &c->touched, &c->arena, &c->spans, &c->states,
                   &c->sorting, &c->scratch, &c->cps, &c->grams, &c->data, &c->indices, &c->indptr};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        buf_free(bufs[i]);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *Counter_call_check(Counter *c)
{
    if (!c->indptr.len) {
        PyErr_SetString(PyExc_RuntimeError, "nbtext kernel: Counter not initialized");
        return NULL;
    }
    return Py_None;
}

#define CHECKED(name)                                                                    \
    static PyObject *name##_checked(Counter *c, PyObject *a)                             \
    {                                                                                    \
        if (!Counter_call_check(c))                                                      \
            return NULL;                                                                 \
        return name(c, a);                                                               \
    }
CHECKED(Counter_add_tokens)
CHECKED(Counter_add_text)
CHECKED(Counter_end_document)
CHECKED(Counter_result)

static PyObject *Counter_probes(Counter *c, PyObject *unused)
{
    return PyLong_FromUnsignedLongLong(c->probes);
}

static PyMethodDef Counter_methods[] = {
    {"probes", (PyCFunction)Counter_probes, METH_NOARGS,
     "probes() -> slots visited past each token's first (tests: chosen keys stay spread)"},
    {"add_tokens", (PyCFunction)Counter_add_tokens_checked, METH_O,
     "add_tokens(tokens): count these tokens (a list of str) in the current document"},
    {"add_text", (PyCFunction)Counter_add_text_checked, METH_O,
     "add_text(text): the words of a text join the current document's words"},
    {"end_document", (PyCFunction)Counter_end_document_checked, METH_O,
     "end_document(chars): count the document's words, n-grams and (chars) character n-grams; close its row"},
    {"result", (PyCFunction)Counter_result_checked, METH_NOARGS,
     "result() -> (blob, keys, data, indices, indptr, n_cols) as bytes and an int"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject CounterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nbtext._kernel.Counter",
    .tp_basicsize = sizeof(Counter),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Counter(lowercase, max_word_length, ngram_max, char_ngram_min, char_ngram_max, fallback)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Counter_init,
    .tp_dealloc = (destructor)Counter_dealloc,
    .tp_methods = Counter_methods,
};
