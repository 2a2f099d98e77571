/* nbtext._kernel: words, word n-grams, character n-grams, 64-bit token keys and counting, in C.
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

#include "_buf.h"

/* -- keys ------------------------------------------------------------------------------------ */

/* A hint that memory is about to be read (random reads of arrays larger than a cache) */
#if defined(__GNUC__) || defined(__clang__)
#define KI_PREFETCH(p) __builtin_prefetch(p)
#else
#define KI_PREFETCH(p) ((void)0)
#endif

#define FNV_BASIS 0xCBF29CE484222325ULL
#define FNV_PRIME 0x100000001B3ULL

static inline uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= FNV_PRIME;
    }
    return h;
}

static inline int popcount64(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_popcountll(x);
#else
    int n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
#endif
}

static inline int ctz64(uint64_t x)  /* x != 0 */
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int n = 0;
    while (!(x & 1)) {
        x >>= 1;
        n++;
    }
    return n;
#endif
}

static inline uint64_t finish(uint64_t h)
{
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBULL;
    h ^= h >> 31;
    return h;
}

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
     * the table outgrows the cache, and its misses were a fifth of counting's time) */
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
static inline size_t counter_home(const Counter *c, uint64_t key, size_t mask)
{
    return (size_t)finish(finish(key ^ c->seed0) + c->seed1) & mask;
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

static int64_t column_of(Counter *c, uint64_t key, PutToken put, const void *what)
{
    if ((ncols(c) + 1) * 2 > c->tcap && table_grow(c) < 0)
        return -1;
    size_t mask = c->tcap - 1, j = counter_home(c, key, mask);
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
 * bytes from 0x80 up as separators), as Python's words() finds them. spamassassin-2002:
 * 5,588 of the 7,145 runs that went back to Python (a no-break space in 3,939 of them). */
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

/* a[0:n] sorted ascending by their bits from ``shift`` up (each below bound << shift), by
 * least-significant-digit radix passes through tmp (n more), one per byte that ``bound`` needs,
 * and a short run by insertion (on the whole values: equal past ``shift`` only where the
 * callers' values are equal). Linear however the values came: a document's columns are in
 * first-seen order, which mail chooses; qsort's calls to a comparison were 5% of counting's
 * time. A row's columns (shift 0), and move_rows's packed keys (shift 32). */
static void sort_packed(uint64_t *a, uint64_t *tmp, size_t n, unsigned shift, uint64_t bound)
{
    if (n < 48) {
        for (size_t i = 1; i < n; i++) {
            uint64_t v = a[i];
            size_t j = i;
            for (; j > 0 && a[j - 1] > v; j--)
                a[j] = a[j - 1];
            a[j] = v;
        }
        return;
    }
    uint64_t *src = a, *dst = tmp;
    for (unsigned d = 0; d < 64 - shift && bound > 1 && ((bound - 1) >> d) != 0; d += 8) {
        size_t at[256] = {0};
        for (size_t i = 0; i < n; i++)
            at[(src[i] >> (shift + d)) & 255]++;
        size_t sum = 0;
        for (size_t b = 0; b < 256; b++) {
            size_t k = at[b];
            at[b] = sum;
            sum += k;
        }
        for (size_t i = 0; i < n; i++)
            dst[at[(src[i] >> (shift + d)) & 255]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof(uint64_t));
}

/* end_document(chars): count the document's words, their n-grams and (with chars) their
 * character n-grams, in nbtext.text.words.add_ngrams's order, and close its row. A word's
 * n-grams are keyed by going on from the hash of its bytes (fnv reads bytes in order: the
 * same key as the joined bytes'), and their bytes are joined only when new to the chunk. */
static PyObject *Counter_end_document(Counter *c, PyObject *arg)
{
    int chars = PyObject_IsTrue(arg);
    if (chars < 0)
        return NULL;
    const size_t *spans = (const size_t *)c->spans.p;
    size_t nw = c->spans.len / (2 * sizeof(size_t));
    c->states.len = 0;
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
        if (count_key(c, w, spans[2 * i + 1], finish(states[i])) < 0)
            return NULL;
    }
    for (size_t k = 2; k <= (size_t)c->ngram_max && k <= nw; k++) {
        for (size_t i = 0; i + k <= nw; i++) {
            uint64_t h = states[i];
            for (size_t j = i + 1; j < i + k; j++)
                h = fnv(fnv(h, (const unsigned char *)" ", 1), (const unsigned char *)c->arena.p + spans[2 * j],
                        spans[2 * j + 1]);
            NGram g = {c->arena.p, spans, i, k};
            if (count_col(c, column_of(c, finish(h), put_ngram, &g)) < 0)
                return NULL;
        }
    }
    if (chars && c->cmin > 0) {
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
            for (size_t k = (size_t)c->cmin; k <= (size_t)c->cmax && k <= ncp; k++) {
                for (size_t a = 0; a + k <= ncp; a++) {
                    /* the token is "c:" followed by padded[cp[a]:cp[a + k]], built in place
                     * just before its slice (the two bytes before cp[a] are kept aside) */
                    size_t from = cp[a], to = cp[a + k];
                    if (from < 2 || to > c->scratch.len || from >= to) {
                        PyErr_SetString(PyExc_SystemError, "nbtext kernel: n-gram out of range");
                        return NULL;
                    }
                    char *t = c->scratch.p + from - 2, keep0 = t[0], keep1 = t[1];
                    t[0] = 'c';
                    t[1] = ':';
                    int r = count_bytes(c, t, to - from + 2);
                    t[0] = keep0;
                    t[1] = keep1;
                    if (r < 0)
                        return NULL;
                }
            }
        }
    }
    /* the row: its columns sorted, with their counts */
    int64_t *cols = (int64_t *)c->touched.p;
    size_t nt = c->touched.len / sizeof(int64_t);
    if (nt > 1) {
        c->sorting.len = 0;
        if (buf_reserve(&c->sorting, nt * sizeof(int64_t)) < 0)
            return NULL;
        cols = (int64_t *)c->touched.p;
        sort_packed((uint64_t *)cols, (uint64_t *)c->sorting.p, nt, 0, (uint64_t)ncols(c));  /* (columns >= 0) */
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
                   &c->sorting, &c->scratch, &c->cps, &c->data, &c->indices, &c->indptr};
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

static PyTypeObject CounterType = {
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

/* keys(blob) -> bytes of uint64: token_keys of NUL-terminated tokens (for tests). */
static PyObject *kernel_keys(PyObject *self, PyObject *arg)
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
    PyObject *r = bytes_of(&out);
    buf_free(&out);
    return r;
}

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
 * It reads each token's bytes a few times, where a merge sort compared 19 times per token
 * through the namespaces' long shared prefixes ("subject:", "url:path:"): spamassassin-2002's
 * vocabulary in first-seen order, 0.16-0.22 -> ~0.06 s. Returns -1 (MemoryError set) when
 * the stack cannot grow. */
static int sort_ids(const Tokens *t, int64_t *a, int64_t *tmp, size_t n)
{
    size_t cap = 256, top = 0;
    Range *stack = PyMem_Malloc(cap * sizeof *stack);
    size_t count[258];
    if (!stack) {
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
        for (size_t i = r.lo; i < r.hi; i++)
            count[tok_byte(t, a[i], r.d) + 1]++;
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
                tmp[r.lo + count[tok_byte(t, a[i], r.d)]++] = a[i];
            memcpy(a + r.lo, tmp + r.lo, (r.hi - r.lo) * sizeof *a);
        } /* (else all in one bucket: already in place) */
        if (top + 256 > cap) {
            size_t grown = cap * 2;
            Range *s = grown < (size_t)PY_SSIZE_T_MAX / sizeof *stack ? PyMem_Realloc(stack, grown * sizeof *stack) : NULL;
            if (!s) {
                PyMem_Free(stack);
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
    return 0;
}

/* front_code(blob, block) -> (fc, heads, order): vocabfile.front_code of the NUL-terminated
 * tokens of blob (bytes after the last NUL are not a token). order: int64 ids in byte order;
 * fc: per token in that order, one byte p + 1 (p: the bytes it shares with the token before,
 * at most 254, 0 at each block's head), the rest of its bytes, a NUL; heads: int64 offset in
 * fc of each block's head. */
static PyObject *kernel_front_code(PyObject *self, PyObject *args)
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

/* nbtext/_mail.c: the mail rules for the common message */
PyObject *nbtext_mail_parts(PyObject *self, PyObject *args);
PyObject *nbtext_looks_like_mail(PyObject *self, PyObject *args);
PyObject *nbtext_html_text(PyObject *self, PyObject *args);
/* front_decode(fc, block) -> bytes: vocabfile.front_decode_numpy in one pass (the reference:
 * the same tokens, or the same ValueError, checked in the same order). fc is a model file's,
 * a stranger's: every entry's prefix is checked against the token before it before a byte is
 * copied. Loading spamassassin-2002's model decoded its 441,690 tokens with numpy in 0.09 s,
 * half of what loading took. */
static PyObject *kernel_front_decode(PyObject *self, PyObject *args)
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

/* -- the vocabulary's index: token key -> id (nbtext.features.vocabulary) --------------------
 *
 * A KeyIndex maps the vocabulary's 64-bit token keys to their ids (positions in first-seen
 * order), as the numpy sorted levels of nbtext.features.vocabulary (the reference) do: the
 * same ids, and the same new tokens' bytes appended in the same order. The keys are kept in id
 * order in one array (8 bytes a token); an open-addressing table (linear probing) of 32-bit
 * slots, each 0 (empty) or an id + 1, finds them (its size any whole number, kept at a load
 * of at most 0.7: 5.7 to 11.4 bytes a token while it doubles, 6 when built at once). Doubled
 * rather than grown by half, it is rebuilt half as often: train's parent on spamassassin-2002,
 * its chunks' 907,311 lookups and the rebuilds, 1,390,851 -> 925,692 probes past the first
 * and 37 -> 31 ms measured apart; 64-bit slots holding a fingerprint of the key, which passes
 * other keys' slots without reading their keys, took 42-45 ms (twice the slots' bytes).
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
 * lookup itself reads everything again). spamassassin-2002's train gives its parent's
 * vocabulary 907,311 lookups. */
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

/* find(keys, ids): ids[j] = the id of keys[j], -1 when absent. */
static PyObject *KeyIndex_find(KeyIndex *x, PyObject *args)
{
    PyObject *keys, *out;
    Py_buffer kv, ov;
    size_t m;
    if (!PyArg_ParseTuple(args, "OO:find", &keys, &out) || ki_views(keys, out, &kv, &ov, &m) < 0)
        return NULL;
    const uint64_t *k = kv.buf;
    int64_t *ids = ov.buf;
    if (!x->n) {
        for (size_t j = 0; j < m; j++)
            ids[j] = -1;
    } else {
        KiAhead a;
        ki_ahead_start(x, &a, k, m);
        for (size_t j = 0; j < m; j++) {
            size_t home = ki_ahead_next(x, &a, k, m, j);
            ids[j] = (int64_t)x->slots[ki_probe_from(x, k[j], home)] - 1;
        }
    }
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
     * copied without looking for their ends again (three memchr passes over each chunk's
     * tokens were a third of this call) */
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

static PyMethodDef KeyIndex_methods[] = {
    {"find", (PyCFunction)KeyIndex_find_checked, METH_VARARGS,
     "find(keys, ids): ids[j] = the id of uint64 keys[j], -1 when absent (int64 ids, written in place)"},
    {"extend", (PyCFunction)KeyIndex_extend_checked, METH_VARARGS,
     "extend(blob, keys, ids, vocab_blob) -> number of new tokens; their bytes appended to vocab_blob"},
    {"keys", (PyCFunction)KeyIndex_keys_checked, METH_O, "keys(out): the uint64 keys in id order, written to out"},
    {"stats", (PyCFunction)KeyIndex_stats, METH_NOARGS, "stats() -> tokens, slots, probes, bytes held"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods KeyIndex_as_sequence = {.sq_length = (lenfunc)KeyIndex_len};

static PyTypeObject KeyIndexType = {
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

/* -- rows onto the vocabulary's ids ------------------------------------------------------------ */

/* Whether any of the outputs shares a byte with an input or another output: a function that
 * checks its inputs, then reads them again while it writes, would read what it wrote, unchecked
 * (an output over the row starts: reads and writes past the buffers). Such calls are refused. */
static int buffers_overlap(Py_buffer **outs, size_t n_out, Py_buffer **ins, size_t n_in)
{
    for (size_t i = 0; i < n_out; i++) {
        const char *a = outs[i]->buf, *a_end = a + outs[i]->len;
        if (!outs[i]->len)
            continue;
        for (size_t j = 0; j < n_in + n_out; j++) {
            Py_buffer *b = j < n_in ? ins[j] : outs[j - n_in];
            if (b == outs[i] || !b->len)
                continue;
            const char *c = b->buf, *c_end = c + b->len;
            if (a < c_end && c < a_end)
                return 1;
        }
    }
    return 0;
}

/* move_rows(data, indices, indptr, mapping, n_cols, out_data, out_indices) -> bool:
 * nbtext.features.rows.Rows.moved for a mapping that sends the rows' columns to distinct
 * columns below n_cols (what train's reservoir holds: a chunk's columns onto their ids),
 * written into out_data (values of 2, 4 or 8 bytes, moved as they are: uint16, float32 or
 * float64) and out_indices (int32, or int64 when the itemsize says so),
 * each row's columns sorted; the row starts stay. False, with nothing promised of the outputs,
 * where a column maps below 0 or past n_cols, or two of a row's columns to one (numpy then
 * moves them, adding such entries up). Every index read is checked. */
static PyObject *kernel_move_rows(PyObject *self, PyObject *args)
{
    Py_buffer dv = {0}, iv = {0}, pv = {0}, mv = {0}, odv = {0}, oiv = {0};
    Py_ssize_t n_cols;
    PyObject *result = NULL;
    uint64_t *keys = NULL, *tmp = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nw*w*:move_rows", &dv, &iv, &pv, &mv, &n_cols, &odv, &oiv))
        return NULL;
    if (buffers_overlap((Py_buffer *[]){&odv, &oiv}, 2, (Py_buffer *[]){&dv, &iv, &pv, &mv}, 4)) {
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
        || (osz == 4 && n_cols > INT32_MAX) || (uint64_t)n_cols >= ((uint64_t)1 << 32)) {
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
    for (size_t r = 0; r + 1 < rows && ok; r++) {
        size_t p0 = (size_t)indptr[r], n = (size_t)indptr[r + 1] - p0;
        for (size_t j = 0; j < n; j++) {
            int64_t c = isz == 4 ? ((const int32_t *)iv.buf)[p0 + j] : ((const int64_t *)iv.buf)[p0 + j];
            if (c < 0 || (size_t)c >= width || mapping[c] < 0 || mapping[c] >= n_cols) {
                ok = 0;
                break;
            }
            keys[j] = (uint64_t)mapping[c] << 32 | j;
        }
        if (!ok)
            break;
        sort_packed(keys, tmp, n, 32, (uint64_t)n_cols);
        for (size_t j = 0; j < n; j++) {
            uint64_t col = keys[j] >> 32;
            if (j && col == keys[j - 1] >> 32) {
                ok = 0;
                break;
            }
            memcpy(out_data + (p0 + j) * dsz, data + (p0 + (keys[j] & 0xFFFFFFFFu)) * dsz, dsz);
            if (osz == 4)
                ((int32_t *)oiv.buf)[p0 + j] = (int32_t)col;
            else
                ((int64_t *)oiv.buf)[p0 + j] = (int64_t)col;
        }
    }
    result = PyBool_FromLong(ok);
done:
    PyMem_Free(keys);
    PyMem_Free(tmp);
    Py_buffer *views[] = {&dv, &iv, &pv, &mv, &odv, &oiv};
    for (size_t i = 0; i < 6; i++)
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
 * numbers them, one writes the rows, where numpy's selection, float64 copy and numbering took
 * five (a calibration fold of spamassassin-2002's sample, in-process: 8 -> 3.6 ms). Every row
 * number, row start and column is checked before it is used; ValueError where one is out of
 * range. */
static PyObject *kernel_own_columns(PyObject *self, PyObject *args)
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
    /* The columns held, as bits (a bit a column: 55 KB for spamassassin-2002's 441,690 tokens,
     * which the cache holds, where a number a column took 1.8 MB to clear, mark and scan
     * each fold), then each one's new number: the marked columns before it (the words'
     * running counts, and the bits below it in its own word). The same numbers. */
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
static PyObject *kernel_rows_dot(PyObject *self, PyObject *args)
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
 * Without the one cell number a entry (int64) that numpy's way makes first: 3.9 MB of a
 * calibration fold's peak at 16 copies of spamassassin-2002. False, with the outputs partly
 * written, where a group is not below k or a column is past out's rows; every row start is
 * checked before any entry is read. */
static PyObject *kernel_group_sums(PyObject *self, PyObject *args)
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

static PyMethodDef kernel_methods[] = {
    {"keys", kernel_keys, METH_O, "keys(blob) -> uint64 keys (bytes) of NUL-terminated tokens"},
    {"front_code", kernel_front_code, METH_VARARGS,
     "front_code(blob, block) -> (front-coded bytes, int64 block heads, int64 order) (bytes each)"},
    {"mail_parts", nbtext_mail_parts, METH_VARARGS,
     "mail_parts(data, lowercase, max_word_length, max_bytes, off_bits, helpers) -> (tokens, texts) or None"},
    {"looks_like_mail", nbtext_looks_like_mail, METH_VARARGS, "looks_like_mail(data, max_lines, names) -> bool, for bytes"},
    {"html_text", nbtext_html_text, METH_VARARGS,
     "html_text(text, urls_off, unescape) -> (text, found) or None: html_to_text of ASCII text (tests)"},
    {"rows_dot", kernel_rows_dot, METH_VARARGS,
     "rows_dot(data, indices, indptr, W, k, out) -> bool: Rows @ W for float64 rows and W"},
    {"group_sums", kernel_group_sums, METH_VARARGS,
     "group_sums(data, indices, indptr, group, k, out, df) -> bool: Rows.group_sums's token-major sums"},
    {"own_columns", kernel_own_columns, METH_VARARGS,
     "own_columns(data, indices, indptr, rows, width, out_data, out_indices, out_indptr) -> int64 columns (bytes): Rows.own_columns"},
    {"move_rows", kernel_move_rows, METH_VARARGS,
     "move_rows(data, indices, indptr, mapping, n_cols, out_data, out_indices) -> bool: Rows.moved onto distinct columns"},
    {"front_decode", kernel_front_decode, METH_VARARGS,
     "front_decode(fc, block) -> bytes: the NUL-terminated tokens of a front-coded vocabulary"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT, "nbtext._kernel", "nbtext's compiled tokenizing and counting kernel", -1,
    kernel_methods,
};

PyMODINIT_FUNC PyInit__kernel(void)
{
    if (PyType_Ready(&CounterType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&kernel_module);
    if (!m)
        return NULL;
    Py_INCREF(&CounterType);
    if (PyModule_AddObject(m, "Counter", (PyObject *)&CounterType) < 0) {
        Py_DECREF(&CounterType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyType_Ready(&KeyIndexType) < 0 || PyModule_AddType(m, &KeyIndexType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
