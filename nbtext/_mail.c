/* nbtext._kernel.mail_parts: the mail rules of nbtext.text.mail for the common message, in C.
 *
 * mail_parts(data, lowercase, max_word_length, max_bytes, off_bits, off, helpers) gives what
 * nbtext.text.mail.mail_parts gives for a message (its tokens and its texts), or None: "not
 * mine", and Python reads that message as before. nbtext.text.mail is the reference; this
 * file takes only what it reproduces exactly (tests/test_kernel.py checks parity):
 *
 *  - the header block when parse_message's shortcut would take it (plain field lines ending
 *    in a blank line, CRs only in CRLFs) and the message is not multipart or message (any subtype);
 *  - every header rule, for the fields it reads, when their values are ASCII, hold no NUL
 *    and no "=?" (RFC 2047 words go to Python);
 *  - the body: Content-Type and Content-Disposition parameters as compat32's get_param reads
 *    them (values of at most MAX_PARAM_HEADER characters, without a backslash or a "*"),
 *    the transfer decoding by the very functions email's get_payload(decode=True) calls
 *    (binascii.a2b_qp; email._encoded_words.decode_b), the charset by mail.decode_bytes and
 *    HTML by mail.html_to_text (helpers, called from here), then URL_RE and url_tokens here
 *    (a URL with a non-ASCII character: not mine).
 *
 * The input is a stranger's mail: every index is checked against its buffer's length, every
 * scan is linear (no pattern is retried from every start: each is run as a single pass, as
 * mail.py's comments explain for HOST_RE and ADDRESS_RE), and what is allocated is bounded by
 * the input's length.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_buf.h"

#define MAX_URLS 200
#define MAX_PARTS 500
#define MAX_PARAM_HEADER 2000
#define URL_RUN 2000

/* off_bits: mail_rules_off, as nbtext.features.kernel.MAIL_OFF_BITS numbers them */
#define OFF_HEADERS 1
#define OFF_NAMES 2
#define OFF_RECEIVED 4
#define OFF_RECIPIENTS 8
#define OFF_DECODE 16
#define OFF_HTML 32
#define OFF_URLS 64
#define OFF_MIME 128

#define BAIL 1 /* (a return value: not mine; -1 is a Python error) */


typedef struct {
    const unsigned char *d; /* the message's bytes */
    size_t n;
    int lowercase;
    Py_ssize_t max_word;
    Py_ssize_t max_bytes;
    long off;
    PyObject *tokens; /* list: the header tokens, then the body's */
    PyObject *texts;  /* list */
    Buf tok;         /* one token being built */
    Buf tmp;         /* a text being built */
} Mail;

/* A token made of the bytes in m->tok (ASCII) appended to list. */
static int emit(Mail *m, PyObject *list)
{
    PyObject *s = PyUnicode_DecodeASCII(m->tok.p ? m->tok.p : "", (Py_ssize_t)m->tok.len, "strict");
    if (!s)
        return -1;
    int r = PyList_Append(list, s);
    Py_DECREF(s);
    return r;
}

static int emit2(Mail *m, PyObject *list, const char *a, const char *b, size_t bn)
{
    m->tok.len = 0;
    if (buf_str(&m->tok, a) < 0 || buf_put(&m->tok, b, bn) < 0)
        return -1;
    return emit(m, list);
}

static inline unsigned char lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static inline int is_alpha(unsigned char c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; }
static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static inline int is_word(unsigned char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
/* str.isspace() (and the re module's \s in a str pattern) on ASCII */
static inline int py_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* s[a:b] stripped as str.strip() strips ASCII text */
static void strip(const unsigned char *s, size_t *a, size_t *b)
{
    while (*a < *b && py_space(s[*a]))
        (*a)++;
    while (*b > *a && py_space(s[*b - 1]))
        (*b)--;
}

static int ieq(const unsigned char *s, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    if (n != k)
        return 0;
    for (size_t i = 0; i < k; i++)
        if (lower(s[i]) != (unsigned char)lit[i])
            return 0;
    return 1;
}

/* -- words: nbtext.text.words.words of ASCII text ------------------------------------------- */

/* The words of ASCII text s[0:n] as words(text, settings, prefix) gives them (ASCII_WORD_RE
 * on the case-folded text, over-long words as "skip:" summaries), the first `most` of them
 * appended to list. */
static int words(Mail *m, const unsigned char *s, size_t n, const char *prefix, size_t most, PyObject *list)
{
    size_t i = 0, count = 0;
    while (i < n && count < most) {
        size_t start = i;
        if (is_word(s[i])) {
        } else if (s[i] == '$' && i + 1 < n && is_word(s[i + 1])) {
            i++;
        } else {
            i++;
            continue;
        }
        while (i < n && is_word(s[i]))
            i++;
        while (i + 1 < n && (s[i] == '\'' || s[i] == '.' || s[i] == '-') && is_word(s[i + 1])) {
            i++;
            while (i < n && is_word(s[i]))
                i++;
        }
        size_t len = i - start;
        m->tok.len = 0;
        if ((Py_ssize_t)len > m->max_word) {
            char skip[64];
            unsigned char first = m->lowercase ? lower(s[start]) : s[start];
            int k = snprintf(skip, sizeof skip, "skip:%c %zu", first, len / 10 * 10);
            if (k < 0 || (size_t)k >= sizeof skip || buf_put(&m->tok, skip, (size_t)k) < 0)
                return -1;
        } else {
            if (buf_str(&m->tok, prefix) < 0)
                return -1;
            size_t at = m->tok.len;
            if (buf_put(&m->tok, s + start, len) < 0)
                return -1;
            if (m->lowercase)
                for (size_t j = at; j < m->tok.len; j++)
                    m->tok.p[j] = (char)lower((unsigned char)m->tok.p[j]);
        }
        if (emit(m, list) < 0)
            return -1;
        count++;
    }
    return 0;
}

/* -- domain_tokens --------------------------------------------------------------------------- */

/* IP_RE: ^\d{1,3}(?:\.\d{1,3}){3}$ ("$": the end, or a last "\n" before it: a link's host
 * can end in one, from an entity) */
static int is_ip(const unsigned char *h, size_t n)
{
    size_t i = 0;
    for (int g = 0; g < 4; g++) {
        if (g) {
            if (i >= n || h[i] != '.')
                return 0;
            i++;
        }
        size_t k = 0;
        while (i < n && is_digit(h[i]) && k < 4)
            i++, k++;
        if (k < 1 || k > 3)
            return 0;
    }
    return i == n || (i + 1 == n && h[i] == '\n');
}

/* domain_tokens(prefix, host)[:most] of ASCII host[0:n] */
static int domain_tokens(Mail *m, const char *prefix, const unsigned char *host, size_t n, size_t most)
{
    Buf *t = &m->tmp;
    t->len = 0;
    if (buf_put(t, host, n) < 0)
        return -1;
    unsigned char *h = (unsigned char *)t->p;
    for (size_t i = 0; i < n; i++)
        h[i] = lower(h[i]);
    size_t a = 0, b = n;
    while (a < b && h[a] == '.')
        a++;
    while (b > a && h[b - 1] == '.')
        b--;
    if (is_ip(h + a, b - a))
        return most ? emit2(m, m->tokens, prefix, "ip", 2) : 0;
    /* the starts of the last five labels, first to last */
    size_t starts[5], k = 0, i = b;
    for (;;) {
        if (i == a || h[i - 1] == '.') {
            starts[k++] = i;
            if (k == 5 || i == a)
                break;
            i--; /* (past the dot) */
            continue;
        }
        i--;
    }
    for (size_t j = 0; j < k && j < most; j++) {
        size_t s = starts[k - 1 - j];
        /* (emit2 copies from the buffer before it is reused) */
        m->tok.len = 0;
        if (buf_str(&m->tok, prefix) < 0 || buf_put(&m->tok, h + s, b - s) < 0 || emit(m, m->tokens) < 0)
            return -1;
    }
    return 0;
}

/* -- header rules ---------------------------------------------------------------------------- */

/* ADDRESS_RE = ([\w.+'=-]+@[\w-]+(?:\.[\w-]+)+)|[\w.+'=-]+ on ASCII text, as findall runs it:
 * from position *i, the next match: 1 and [*a, *b) for an address (group 1), 2 for a run of
 * address characters that is none, 0 for no more matches; *i moves past it. */
static inline int addr_char(unsigned char c) { return is_word(c) || c == '.' || c == '+' || c == '\'' || c == '=' || c == '-'; }
static inline int dom_char(unsigned char c) { return is_word(c) || c == '-'; }

static int next_address(const unsigned char *s, size_t n, size_t *i, size_t *a, size_t *b)
{
    size_t p = *i;
    while (p < n && !addr_char(s[p]))
        p++;
    if (p >= n) {
        *i = n;
        return 0;
    }
    size_t start = p;
    while (p < n && addr_char(s[p]))
        p++;
    size_t run_end = p;
    if (p < n && s[p] == '@') {
        size_t q = p + 1, d = q;
        while (q < n && dom_char(s[q]))
            q++;
        if (q > d) {
            size_t groups = 0;
            while (q + 1 < n && s[q] == '.' && dom_char(s[q + 1])) {
                q++;
                while (q < n && dom_char(s[q]))
                    q++;
                groups++;
            }
            if (groups) {
                *a = start;
                *b = *i = q;
                return 1;
            }
        }
    }
    *a = start;
    *b = *i = run_end;
    return 2;
}

/* HOST_RE = (?i)\b((?:[a-z0-9-]+\.)+[a-z]{2,})\b|\b[a-z0-9-]+(?:\.[a-z0-9-]+)* on ASCII text,
 * as findall runs it: the next match from *i; 1 and [*a, *b) for a host (group 1), 2 for a
 * match of the second alternative, 0 for no more. */
static inline int label_char(unsigned char c) { return is_alpha(c) || is_digit(c) || c == '-'; }

static int next_host(const unsigned char *s, size_t n, size_t *i, size_t *a, size_t *b)
{
    for (size_t p = *i; p < n; p++) {
        if (!label_char(s[p]))
            continue;
        int before = p > 0 && is_word(s[p - 1]);
        if (before == is_word(s[p]))
            continue; /* no \b here: neither alternative can start */
        /* first alternative: segments "label." (each label maximal), then a top-level domain
         * of two or more letters followed by a boundary; the most segments that work */
        size_t q = p, best = 0;
        for (;;) {
            size_t l = q;
            while (l < n && label_char(s[l]))
                l++;
            if (l == q || l >= n || s[l] != '.')
                break;
            q = l + 1; /* a segment ends here; is what follows a top-level domain? */
            size_t t = q;
            while (t < n && is_alpha(s[t]))
                t++;
            if (t - q >= 2 && (t == n || !is_word(s[t])))
                best = t;
        }
        if (best) {
            *a = p;
            *b = *i = best;
            return 1;
        }
        /* second alternative: labels joined by dots */
        size_t e = p;
        while (e < n && label_char(s[e]))
            e++;
        while (e + 1 < n && s[e] == '.' && label_char(s[e + 1])) {
            e++;
            while (e < n && label_char(s[e]))
                e++;
        }
        *a = p;
        *b = *i = e;
        return 2;
    }
    *i = n;
    return 0;
}

static const char *bucket(size_t n)
{
    static const size_t limits[] = {0, 1, 2, 5, 10, 25};
    static const char *names[] = {"0", "1", "2", "5", "10", "25"};
    for (int i = 0; i < 6; i++)
        if (n <= limits[i])
            return names[i];
    return "many";
}

static const char *ADDRESS_HEADERS[] = {"from", "to", "cc", "reply-to", "sender", "return-path"};
static const char *WORD_HEADERS[] = {"x-mailer", "user-agent", "organization"};

static int address_rule(Mail *m, const char *name, const unsigned char *s, size_t n, size_t *recipients, int is_rcpt)
{
    size_t i = 0, a, b, found = 0;
    int r;
    char prefix[64];
    /* addresses(text): every group-1 match (the count for to/cc), the first 20 as tokens */
    int rules = !(m->off & OFF_HEADERS);
    while ((r = next_address(s, n, &i, &a, &b))) {
        if (r != 1)
            continue;
        found++;
        if (!rules || found > 20)
            continue;
        snprintf(prefix, sizeof prefix, "%s:addr:", name);
        m->tok.len = 0;
        if (buf_str(&m->tok, prefix) < 0 || buf_put(&m->tok, s + a, b - a) < 0)
            return -1;
        for (size_t j = strlen(prefix); j < m->tok.len; j++)
            m->tok.p[j] = (char)lower((unsigned char)m->tok.p[j]);
        if (emit(m, m->tokens) < 0)
            return -1;
        const unsigned char *at = memchr(s + a, '@', b - a);
        if (!at) {
            PyErr_SetString(PyExc_SystemError, "nbtext mail: an address without @");
            return -1;
        }
        snprintf(prefix, sizeof prefix, "%s:dom:", name);
        if (domain_tokens(m, prefix, at + 1, (size_t)(s + b - (at + 1)), 3) < 0)
            return -1;
    }
    if (is_rcpt)
        *recipients += found;
    if (!rules)
        return 0;
    if (!found) {
        snprintf(prefix, sizeof prefix, "%s:none", name);
        if (emit2(m, m->tokens, prefix, "", 0) < 0)
            return -1;
    }
    /* Python's order: the none token, then the addresses: the none token is alone when there
     * are none, so emitting it after the (absent) addresses keeps the order. The names: the
     * words of the text with a space for each address. */
    Buf rest = {0};
    i = 0;
    size_t last = 0;
    while ((r = next_address(s, n, &i, &a, &b))) {
        if (r != 1)
            continue;
        if (buf_put(&rest, s + last, a - last) < 0 || buf_put(&rest, " ", 1) < 0) {
            PyMem_Free(rest.p);
            return -1;
        }
        last = b;
    }
    if (buf_put(&rest, s + last, n - last) < 0) {
        PyMem_Free(rest.p);
        return -1;
    }
    snprintf(prefix, sizeof prefix, "%s:name:", name);
    int w = words(m, (const unsigned char *)rest.p, rest.len, prefix, 10, m->tokens);
    PyMem_Free(rest.p);
    return w;
}

static int received_rule(Mail *m, const unsigned char *s, size_t n)
{
    size_t i = 0, a, b, found = 0;
    int r;
    while (found < 4 && (r = next_host(s, n, &i, &a, &b))) {
        if (r != 1)
            continue;
        found++;
        /* "received:" + the last two labels, lower case */
        size_t dots = 0, st = a;
        for (size_t j = b; j > a; j--)
            if (s[j - 1] == '.' && ++dots == 2) {
                st = j;
                break;
            }
        m->tok.len = 0;
        if (buf_str(&m->tok, "received:") < 0 || buf_put(&m->tok, s + st, b - st) < 0)
            return -1;
        for (size_t j = 9; j < m->tok.len; j++)
            m->tok.p[j] = (char)lower((unsigned char)m->tok.p[j]);
        if (emit(m, m->tokens) < 0)
            return -1;
    }
    return 0;
}

static int subject_rule(Mail *m, const unsigned char *s, size_t n)
{
    if (words(m, s, n, "subject:", SIZE_MAX, m->tokens) < 0)
        return -1;
    if (memchr(s, '!', n) && emit2(m, m->tokens, "subject:!", "", 0) < 0)
        return -1;
    size_t letters = 0, upper = 0;
    for (size_t i = 0; i < n; i++) {
        letters += is_alpha(s[i]);
        upper += s[i] >= 'A' && s[i] <= 'Z';
    }
    if (letters >= 8 && (double)upper > 0.7 * (double)letters)
        return emit2(m, m->tokens, "subject:shouting", "", 0);
    return 0;
}

static int message_id_rule(Mail *m, const unsigned char *s, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (s[i] != '@' || s[i + 1] == '>' || py_space(s[i + 1]))
            continue;
        size_t e = i + 1;
        while (e < n && s[e] != '>' && !py_space(s[e]))
            e++;
        return domain_tokens(m, "message-id:dom:", s + i + 1, e - i - 1, 2);
    }
    return emit2(m, m->tokens, "message-id:none", "", 0);
}

/* -- the header block ------------------------------------------------------------------------ */

typedef struct {
    size_t name, name_len, value, value_len; /* offsets in the message */
} Field;

typedef struct {
    Field *f;
    size_t n, cap;
} Fields;

static int add_field(Fields *fs, Field f)
{
    if (fs->n == fs->cap) {
        size_t cap = fs->cap ? fs->cap * 2 : 32;
        if (cap > SIZE_MAX / sizeof(Field)) {
            PyErr_NoMemory();
            return -1;
        }
        Field *p = PyMem_Realloc(fs->f, cap * sizeof(Field));
        if (!p) {
            PyErr_NoMemory();
            return -1;
        }
        fs->f = p;
        fs->cap = cap;
    }
    fs->f[fs->n++] = f;
    return 0;
}

/* FIELD_RE: [\041-\071\073-\176]+: at s[0:n]; the colon's offset or 0 */
static size_t field_colon(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i] >= 041 && s[i] <= 0176 && s[i] != ':')
        i++;
    return i > 0 && i < n && s[i] == ':' ? i : 0;
}

/* The first field named `name` (lower case), or NULL. */
static const Field *get(const Mail *m, const Fields *fs, const char *name)
{
    for (size_t i = 0; i < fs->n; i++)
        if (ieq(m->d + fs->f[i].name, fs->f[i].name_len, name))
            return &fs->f[i];
    return NULL;
}

static int ascii_clean(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 0x80 || s[i] == 0)
            return 0;
    return 1;
}

/* -- parameters: compat32's get_param ------------------------------------------------------- */

/* get_param(param) of a header value s[0:n] (ASCII, no backslash, no "*", at most
 * MAX_PARAM_HEADER long): 1 and [*a, *b) when found (unquoted), else 0. */
static int get_param(const unsigned char *s, size_t n, const char *param, size_t *a, size_t *b)
{
    /* _parseparam: s = ";" + value; cut at ";" outside an odd number of quotes */
    size_t pos = 0;
    int first = 1;
    for (;;) {
        if (!first) {
            if (pos >= n || s[pos] != ';')
                break;
            pos++;
        }
        first = 0;
        size_t st = pos, end = pos, quotes = 0;
        /* end = s.find(";"); while end > 0 and quotes in s[:end] odd: the next ";" */
        int found = 0;
        for (size_t j = st; j < n; j++) {
            if (s[j] == ';' && (j == st || quotes % 2 == 0)) {
                end = j;
                found = 1;
                break;
            }
            quotes += s[j] == '"';
        }
        if (!found)
            end = n;
        /* f = s[st:end]; name and value */
        size_t fa = st, fb = end, eq = fa;
        while (eq < fb && s[eq] != '=')
            eq++;
        size_t na, nb, va, vb;
        if (eq < fb) {
            na = fa, nb = eq, va = eq + 1, vb = fb;
            strip(s, &na, &nb);
            strip(s, &va, &vb);
        } else {
            na = fa, nb = fb;
            strip(s, &na, &nb);
            va = vb = nb;
        }
        if (ieq(s + na, nb - na, param)) {
            /* utils.unquote (no backslash: nothing to unescape) */
            if (vb - va > 1 && ((s[va] == '"' && s[vb - 1] == '"') || (s[va] == '<' && s[vb - 1] == '>')))
                va++, vb--;
            *a = va;
            *b = vb;
            return 1;
        }
        pos = end;
    }
    return 0;
}

/* Can get_param read this header as we do? */
static int params_plain(const unsigned char *s, size_t n)
{
    if (n > MAX_PARAM_HEADER)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\\' || s[i] == '*')
            return 0;
    return 1;
}

/* -- URLs ------------------------------------------------------------------------------------ */

static inline int url_path_sep(unsigned char c) { return c && strchr("/?&=.#_:;,+%~-", c) != NULL; }

/* url_tokens of an ASCII URL u[0:n] */
static int url_tokens(Mail *m, PyObject *meta, const unsigned char *u, size_t n)
{
    size_t p = 0, l = 0;
    while (l < n && is_alpha(u[l]))
        l++;
    char scheme[16] = "http";
    if (l > 0 && l + 3 <= n && memcmp(u + l, "://", 3) == 0) {
        p = l + 3;
        m->tok.len = 0;
        if (buf_str(&m->tok, "url:scheme:") < 0 || buf_put(&m->tok, u, l) < 0)
            return -1;
        for (size_t j = 11; j < m->tok.len; j++)
            m->tok.p[j] = (char)lower((unsigned char)m->tok.p[j]);
        if (emit(m, meta) < 0)
            return -1;
    } else if (emit2(m, meta, "url:scheme:", scheme, strlen(scheme)) < 0) {
        return -1;
    }
    size_t h = p;
    while (h < n && u[h] != '/' && u[h] != '?' && u[h] != '#' && u[h] != ':')
        h++;
    size_t rest = h;
    if (h + 1 < n && u[h] == ':' && is_digit(u[h + 1])) {
        rest = h + 1;
        while (rest < n && is_digit(u[rest]))
            rest++;
    }
    size_t host = p;
    for (size_t j = p; j < h; j++)
        if (u[j] == '@')
            host = j + 1;
    if (host != p && emit2(m, meta, "url:userinfo", "", 0) < 0)
        return -1;
    PyObject *keep = m->tokens;
    m->tokens = meta;
    int r = domain_tokens(m, "url:", u + host, h - host, 5);
    m->tokens = keep;
    if (r < 0)
        return -1;
    size_t pieces = 0, j = rest;
    while (j < n && pieces < 10) {
        while (j < n && url_path_sep(u[j]))
            j++;
        if (j >= n)
            break;
        size_t a = j;
        while (j < n && !url_path_sep(u[j]))
            j++;
        size_t len = j - a;
        m->tok.len = 0;
        if (len <= 20) {
            if (buf_str(&m->tok, "url:path:") < 0 || buf_put(&m->tok, u + a, len) < 0)
                return -1;
            for (size_t k = 9; k < m->tok.len; k++)
                m->tok.p[k] = (char)lower((unsigned char)m->tok.p[k]);
        } else {
            char skip[64];
            snprintf(skip, sizeof skip, "url:path:skip %zu", len / 10 * 10);
            if (buf_str(&m->tok, skip) < 0)
                return -1;
        }
        if (emit(m, meta) < 0)
            return -1;
        pieces++;
    }
    return 0;
}

static inline int uword(Py_UCS4 c) { return c == '_' || Py_UNICODE_ISALNUM(c); }

static inline int url_char(Py_UCS4 c)
{
    return !(c <= 0x1f || c == 0x7f || c == '<' || c == '>' || c == '"' || c == '\'' || c == '(' || c == ')'
             || c == '{' || c == '}' || c == '[' || c == ']' || Py_UNICODE_ISSPACE(c));
}

static inline int ci(Py_UCS4 c, char lit) { return c < 128 && lower((unsigned char)c) == (unsigned char)lit; }

/* pieces.append(text[a:b]) */
static int append_slice(PyObject *pieces, PyObject *text, Py_ssize_t a, Py_ssize_t b)
{
    PyObject *piece = PyUnicode_Substring(text, a, b);
    int r = piece ? PyList_Append(pieces, piece) : -1;
    Py_XDECREF(piece);
    return r;
}

/* URL_RE.finditer over text: each URL's tokens (the first MAX_URLS) to meta and a space for
 * it in the text; *out: the new text (a new reference). BAIL for a URL with a non-ASCII
 * character. */

static int scan_urls(Mail *m, PyObject *meta, PyObject *text, PyObject **out)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    PyObject *pieces = NULL;
    Py_ssize_t last = 0, count = 0;
    Buf url = {0};
    int ret = -1;
    for (Py_ssize_t i = 0; i < len; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (!ci(c, 'h') && !ci(c, 'f') && !ci(c, 'w'))
            continue;
        if (i > 0 && uword(PyUnicode_READ(kind, data, i - 1)))
            continue; /* no \b */
#define AT(k) ((k) < len ? PyUnicode_READ(kind, data, (k)) : 0)
        Py_ssize_t e = -1;
        if (ci(c, 'h') && ci(AT(i + 1), 't') && ci(AT(i + 2), 't') && ci(AT(i + 3), 'p')) {
            Py_UCS4 s = AT(i + 4);
            int s_like = ci(s, 's') || s == 0x17f;
            if (s_like && AT(i + 5) == ':' && AT(i + 6) == '/' && AT(i + 7) == '/')
                e = i + 8;
            else if (AT(i + 4) == ':' && AT(i + 5) == '/' && AT(i + 6) == '/')
                e = i + 7;
        } else if (ci(c, 'f') && ci(AT(i + 1), 't') && ci(AT(i + 2), 'p') && AT(i + 3) == ':' && AT(i + 4) == '/'
                   && AT(i + 5) == '/') {
            e = i + 6;
        } else if (ci(c, 'w') && ci(AT(i + 1), 'w') && ci(AT(i + 2), 'w') && AT(i + 3) == '.') {
            e = i + 4;
        }
#undef AT
        if (e < 0)
            continue;
        Py_ssize_t k = e;
        while (k < len && k - e < URL_RUN && url_char(PyUnicode_READ(kind, data, k)))
            k++;
        if (k == e)
            continue;
        /* a URL: text[i:k] */
        if (count < MAX_URLS) {
            url.len = 0;
            for (Py_ssize_t j = i; j < k; j++) {
                Py_UCS4 u = PyUnicode_READ(kind, data, j);
                if (u >= 128) {
                    ret = BAIL;
                    goto done;
                }
                unsigned char b = (unsigned char)u;
                if (buf_put(&url, &b, 1) < 0)
                    goto done;
            }
            if (url_tokens(m, meta, (const unsigned char *)url.p, url.len) < 0)
                goto done;
        }
        count++;
        if ((!pieces && !(pieces = PyList_New(0))) || append_slice(pieces, text, last, i) < 0)
            goto done;
        last = k;
        i = k - 1;
    }
    if (!pieces) {
        Py_INCREF(text);
        *out = text;
        ret = 0;
        goto done;
    }
    if (append_slice(pieces, text, last, len) < 0)
        goto done;
    PyObject *space = PyUnicode_FromString(" ");
    if (!space)
        goto done;
    *out = PyUnicode_Join(space, pieces);
    Py_DECREF(space);
    ret = *out ? 0 : -1;
done:
    Py_XDECREF(pieces);
    PyMem_Free(url.p);
    return ret;
}

/* -- the body -------------------------------------------------------------------------------- */

/* -- HTML: html_to_text of ASCII text ------------------------------------------------------- */

/* The text's ASCII case-insensitive match of lit at s[i:] */
static int ci_at(const unsigned char *s, size_t n, size_t i, const char *lit)
{
    size_t k = strlen(lit);
    if (i > n || n - i < k)
        return 0;
    for (size_t j = 0; j < k; j++)
        if (lower(s[i + j]) != (unsigned char)lit[j])
            return 0;
    return 1;
}

/* -- HTML (text.mail.html_to_text) of a str of one byte a character (Latin-1: ASCII, or with
 * characters up to U+00FF). Its patterns (re, str, IGNORECASE) read such text as these
 * functions do: no character past U+007F matches an ASCII letter ignoring case (the ones that
 * do, U+0130, U+0131, U+017F and U+212A, take two bytes or more), and \w, \b and \s are
 * Unicode's, as the re module reads them (Py_UNICODE_ISALNUM, Py_UNICODE_ISSPACE: U+00A0 is a
 * space, U+00E9 a word character). Positions and counts are characters. */
static inline int u_word(unsigned char c) { return c < 128 ? is_word(c) : Py_UNICODE_ISALNUM(c); }
static inline int u_space(unsigned char c) { return c < 128 ? py_space(c) : Py_UNICODE_ISSPACE(c); }

/* The common references html.unescape reads: a name with its ";" and the Latin-1 character
 * it stands for in HTML5's table, where html.unescape takes the whole name at once. */
static const struct { const char *name; unsigned char c; } REFS[] = {
    {"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}, {"nbsp;", 0xA0},
    {"copy;", 0xA9}, {"reg;", 0xAE},
};

/* The character a reference at s[i] (an "&") stands for when it is one html.unescape surely
 * reads so: a name of REFS, or "&#N;" / "&#xH;" of a printable character of Latin-1 (32-126,
 * 160-255: none of html.unescape's replaced or dropped code points); its length in *len. -1
 * for anything else (html.unescape then reads the whole text). */
static int simple_ref(const unsigned char *s, size_t n, size_t i, size_t *len)
{
    const unsigned char *p = s + i + 1;
    size_t left = n - i - 1;
    if (left && p[0] == '#') {
        int hex = left > 1 && (p[1] | 32) == 'x';
        size_t j = hex ? 2 : 1, v = 0, digits = 0;
        for (; j < left && digits < 4; j++, digits++) {
            int d = p[j] >= '0' && p[j] <= '9' ? p[j] - '0'
                  : hex && (p[j] | 32) >= 'a' && (p[j] | 32) <= 'f' ? (p[j] | 32) - 'a' + 10 : -1;
            if (d < 0)
                break;
            v = v * (hex ? 16 : 10) + (size_t)d;
        }
        if (!digits || j >= left || p[j] != ';' || !((v >= 32 && v <= 126) || (v >= 160 && v <= 255)))
            return -1;
        *len = j + 2;
        return (int)v;
    }
    for (size_t k = 0; k < sizeof REFS / sizeof REFS[0]; k++) {
        size_t m = strlen(REFS[k].name);
        if (left >= m && !memcmp(p, REFS[k].name, m)) {
            *len = m + 1;
            return REFS[k].c;
        }
    }
    return -1;
}

/* html.unescape of Latin-1 s[0:n] (unescape: Python's html.unescape, called only when there
 * is an "&" that is not one of the simple references, which are read here as it reads them:
 * 1,158 calls on spamassassin-2002, 7 ms): a new str. */
static PyObject *unescaped(const unsigned char *s, size_t n, PyObject *unescape)
{
    if (!memchr(s, '&', n))
        return PyUnicode_DecodeLatin1((const char *)s, (Py_ssize_t)n, "strict");
    Buf out = {0};
    int simple = 1;
    for (size_t i = 0; i < n && simple;) {
        const unsigned char *amp = memchr(s + i, '&', n - i);
        size_t upto = amp ? (size_t)(amp - s) : n, len = 0;
        if (buf_put(&out, s + i, upto - i) < 0) {
            PyMem_Free(out.p);
            return NULL;
        }
        if (!amp)
            break;
        int c = simple_ref(s, n, upto, &len);
        unsigned char ch = (unsigned char)c;
        if (c < 0)
            simple = 0;
        else if (buf_put(&out, &ch, 1) < 0) {
            PyMem_Free(out.p);
            return NULL;
        }
        i = upto + len;
    }
    if (simple) {
        PyObject *r = PyUnicode_DecodeLatin1(out.p ? out.p : "", (Py_ssize_t)out.len, "strict");
        PyMem_Free(out.p);
        return r;
    }
    PyMem_Free(out.p);
    PyObject *t = PyUnicode_DecodeLatin1((const char *)s, (Py_ssize_t)n, "strict");
    if (!t)
        return NULL;
    PyObject *r = PyObject_CallOneArg(unescape, t);
    Py_DECREF(t);
    if (r && !PyUnicode_Check(r)) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_TypeError, "nbtext mail: html.unescape must return str");
        return NULL;
    }
    return r;
}

/* The position past `\s*=\s*` from p (the patterns' "href\s*=\s*", "alt\s*=\s*"), 0 if none. */
static size_t past_equals(const unsigned char *s, size_t n, size_t p)
{
    while (p < n && u_space(s[p]))
        p++;
    if (p >= n || s[p] != '=')
        return 0;
    p++;
    while (p < n && u_space(s[p]))
        p++;
    return p;
}

/* HREF_RE = (?is)(?=[hsa])\b(?:href|src|action)\s*=\s*["']?([^"'\s>]{1,2000}) and
 * ALT_RE = (?is)(?=a)\balt\s*=\s*["']([^"']{0,500})["'] at s[i]: the end of the match and
 * group 1 in [*a, *b), or 0. */
static size_t href_at(const unsigned char *s, size_t n, size_t i, size_t *a, size_t *b)
{
    size_t p;
    if (ci_at(s, n, i, "href"))
        p = i + 4;
    else if (ci_at(s, n, i, "src"))
        p = i + 3;
    else if (ci_at(s, n, i, "action"))
        p = i + 6;
    else
        return 0;
    if (!(p = past_equals(s, n, p)))
        return 0;
    if (p < n && (s[p] == '"' || s[p] == '\''))
        p++;
    size_t q = p;
    while (q < n && q - p < URL_RUN && s[q] != '"' && s[q] != '\'' && s[q] != '>' && !u_space(s[q]))
        q++;
    if (q == p)
        return 0;
    *a = p;
    *b = q;
    return q;
}

static size_t alt_at(const unsigned char *s, size_t n, size_t i, size_t *a, size_t *b)
{
    if (!ci_at(s, n, i, "alt"))
        return 0;
    size_t p = i + 3;
    if (!(p = past_equals(s, n, p)))
        return 0;
    if (p >= n || (s[p] != '"' && s[p] != '\''))
        return 0;
    p++;
    size_t q = p;
    while (q < n && q - p < 500 && s[q] != '"' && s[q] != '\'')
        q++;
    if (q >= n || (s[q] != '"' && s[q] != '\''))
        return 0;
    *a = p;
    *b = q;
    return q + 1;
}

/* The kind of block DROP_START_RE = (?i)<(?:(style|script|head)\b|!--) finds at s[i]: 1-3
 * for style, script, head, 4 for a comment, 0 for none; *len: the start's length. */
static const char *BLOCKS[] = {"", "style", "script", "head"};

static int block_at(const unsigned char *s, size_t n, size_t i, size_t *len)
{
    if (i >= n || s[i] != '<')
        return 0;
    for (int k = 1; k <= 3; k++) {
        size_t l = strlen(BLOCKS[k]);
        if (ci_at(s, n, i + 1, BLOCKS[k]) && (i + 1 + l >= n || !u_word(s[i + 1 + l]))) {
            *len = 1 + l;
            return k;
        }
    }
    if (ci_at(s, n, i + 1, "!--")) {
        *len = 4;
        return 4;
    }
    return 0;
}

/* drop_blocks: DROP_BLOCK_RE.sub(" ", text) (each block a space), as nbtext.text.mail runs it:
 * a kind of block that once fails to close is not tried again. Into out. */
static int drop_blocks(const unsigned char *s, size_t n, Buf *out)
{
    int unclosed[5] = {0};
    size_t last = 0, i = 0;
    while (i < n) {
        const unsigned char *lt = memchr(s + i, '<', n - i);
        if (!lt)
            break;
        i = (size_t)(lt - s);
        size_t len;
        int kind = block_at(s, n, i, &len);
        if (!kind || unclosed[kind]) {
            i++;
            continue;
        }
        /* the first closing: "</name\s*>" (any case) or "-->" */
        size_t p = i + len, end = 0;
        for (; p < n; p++) {
            if (kind == 4) {
                if (p + 3 <= n && !memcmp(s + p, "-->", 3)) {
                    end = p + 3;
                    break;
                }
                continue;
            }
            if (s[p] != '<' || p + 1 >= n || s[p + 1] != '/' || !ci_at(s, n, p + 2, BLOCKS[kind]))
                continue;
            size_t q = p + 2 + strlen(BLOCKS[kind]);
            while (q < n && u_space(s[q]))
                q++;
            if (q < n && s[q] == '>') {
                end = q + 1;
                break;
            }
        }
        if (!end) {
            unclosed[kind] = 1;
            i++;
            continue;
        }
        if (buf_put(out, s + last, i - last) < 0 || buf_put(out, " ", 1) < 0)
            return -1;
        last = i = end;
    }
    return buf_put(out, s + last, n - last);
}

static const char *BREAK_TAGS[] = {"br", "p", "div", "td", "th", "tr", "li", "ul", "ol", "table", "h1", "h2",
                                   "h3", "h4", "h5", "h6", "hr", "title", "body", "html", "center", "blockquote"};

/* tag_re.sub(repl, text) of BREAK_TAG_RE (breaks: 1, repl " ") or TAG_RE (0, repl ""): a tag
 * is its start, then at most TAG_MAX characters other than ">", then ">". Into out. */
static int sub_tags(const unsigned char *s, size_t n, int breaks, Buf *out)
{
    size_t i = 0, last = 0, gt = 0; /* gt: the first ">" at or after i (n: none) */
    while (i < n) {
        const unsigned char *lt = memchr(s + i, '<', n - i);
        if (!lt)
            break;
        i = (size_t)(lt - s);
        size_t p = i + 1; /* past the start */
        int start = 0;
        if (breaks) {
            if (p < n && s[p] == '/')
                p++;
            for (size_t k = 0; k < sizeof BREAK_TAGS / sizeof *BREAK_TAGS; k++) {
                size_t l = strlen(BREAK_TAGS[k]);
                if (ci_at(s, n, p, BREAK_TAGS[k]) && (p + l >= n || !u_word(s[p + l]))) {
                    p += l;
                    start = 1;
                    break;
                }
            }
        } else if (p < n && (s[p] == '!' || s[p] == '/' || s[p] == '?' || is_alpha(s[p]))) {
            p++;
            start = 1;
        }
        if (!start) {
            i++;
            continue;
        }
        if (gt < p) {
            const unsigned char *g = memchr(s + p, '>', n - p);
            gt = g ? (size_t)(g - s) : n;
        }
        if (gt >= n || gt - p > 2000) {
            i++;
            continue;
        }
        if (buf_put(out, s + last, i - last) < 0 || (breaks && buf_put(out, " ", 1) < 0))
            return -1;
        last = i = gt + 1;
    }
    return buf_put(out, s + last, n - last);
}

static int link_start(const unsigned char *t, size_t n)
{
    return ci_at(t, n, 0, "http://") || ci_at(t, n, 0, "https://") || ci_at(t, n, 0, "ftp://") || ci_at(t, n, 0, "www.");
}

/* html_to_text(text, out, off) of a Latin-1 text (above): the visible text (a new str), and
 * out's items appended to found; BAIL when a link's target is not ASCII once unescaped. */
static int html_text(Mail *m, const unsigned char *s, size_t n, PyObject *found, PyObject *unescape, PyObject **text)
{
    size_t a, b, e;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = lower(s[i]);
        if ((c != 'h' && c != 's' && c != 'a') || (i > 0 && u_word(s[i - 1])) || !(e = href_at(s, n, i, &a, &b)))
            continue;
        PyObject *target = unescaped(s + a, b - a, unescape);
        if (!target)
            return -1;
        int r = 0;
        if (m->off & OFF_URLS) {
            r = PyList_Append(found, target);
        } else if (!PyUnicode_IS_ASCII(target)) {
            r = BAIL;
        } else {
            const unsigned char *t = PyUnicode_DATA(target);
            size_t tn = (size_t)PyUnicode_GET_LENGTH(target);
            if (link_start(t, tn))
                r = url_tokens(m, found, t, tn);
            else if (ci_at(t, tn, 0, "mailto:"))
                r = emit2(m, found, "url:mailto", "", 0);
        }
        Py_DECREF(target);
        if (r)
            return r;
        i = e - 1;
    }
    for (size_t i = 0; i < n; i++) {
        if ((s[i] | 32) != 'a' || (i > 0 && u_word(s[i - 1])) || !(e = alt_at(s, n, i, &a, &b)))
            continue;
        PyObject *alt = PyUnicode_DecodeLatin1((const char *)s + a, (Py_ssize_t)(b - a), "strict");
        if (!alt || PyList_Append(found, alt) < 0) {
            Py_XDECREF(alt);
            return -1;
        }
        Py_DECREF(alt);
        i = e - 1;
    }
    Buf x = {0}, y = {0};
    int r = -1;
    if (drop_blocks(s, n, &x) < 0 || sub_tags((unsigned char *)x.p, x.len, 1, &y) < 0)
        goto done;
    x.len = 0;
    if (sub_tags((unsigned char *)y.p, y.len, 0, &x) < 0)
        goto done;
    *text = unescaped((unsigned char *)(x.p ? x.p : ""), x.len, unescape);
    r = *text ? 0 : -1;
done:
    PyMem_Free(x.p);
    PyMem_Free(y.p);
    return r;
}

/* html_text(text, urls_off, unescape) -> (text, found) or None: html_to_text(text, found, off)
 * of a Latin-1 text as the kernel reads it (for tests; None where it leaves it to Python). */
PyObject *nbtext_html_text(PyObject *self, PyObject *args)
{
    PyObject *text, *unescape;
    int urls_off;
    if (!PyArg_ParseTuple(args, "UpO:html_text", &text, &urls_off, &unescape))
        return NULL;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND)
        Py_RETURN_NONE;
    Mail m = {NULL, 0, 0, 1, 1, urls_off ? OFF_URLS : 0, PyList_New(0), NULL, {0}, {0}};
    PyObject *found = PyList_New(0), *out = NULL, *result = NULL;
    if (m.tokens && found) {
        int r = html_text(&m, PyUnicode_DATA(text), (size_t)PyUnicode_GET_LENGTH(text), found, unescape, &out);
        if (r == 0)
            result = Py_BuildValue("(NO)", out, found);
        else if (r == BAIL)
            result = Py_None, Py_INCREF(Py_None);
    }
    Py_XDECREF(m.tokens);
    Py_XDECREF(found);
    PyMem_Free(m.tok.p);
    PyMem_Free(m.tmp.p);
    return result;
}

static int is_mime_token(PyObject *t)
{
    static const char *prefixes[] = {"ct:", "cte:", "charset:", "filename:"};
    for (int i = 0; i < 4; i++) {
        PyObject *p = PyUnicode_FromString(prefixes[i]);
        if (!p)
            return -1;
        Py_ssize_t r = PyUnicode_Tailmatch(t, p, 0, PY_SSIZE_T_MAX, -1);
        Py_DECREF(p);
        if (r)
            return (int)r;
    }
    return 0;
}

/* body_tokens of a single-part message; its header fields fs, its payload d[body:n]. */
/* get_content_type() of a part whose Content-Type is ct (or NULL): _splitparam(value)[0]
 * in lower case, text/plain when it is not type/subtype; into ctype (BAIL: too long). */
static int content_type(const unsigned char *ct, size_t ct_len, char *ctype, size_t size)
{
    strcpy(ctype, "text/plain");
    if (!ct)
        return 0;
    size_t a = 0, b = 0;
    while (b < ct_len && ct[b] != ';')
        b++;
    strip(ct, &a, &b);
    size_t slashes = 0;
    for (size_t i = a; i < b; i++)
        slashes += ct[i] == '/';
    if (slashes != 1)
        return 0;
    if (b - a >= size)
        return BAIL;
    for (size_t i = a; i < b; i++)
        ctype[i - a] = (char)lower(ct[i]);
    ctype[b - a] = 0;
    return 0;
}

/* body_tokens of one part that is not multipart: its header fields fs, its payload d[pay:pay +
 * plen]; top: the message itself (no "ct:" token); *budget: max_bytes left. 0, or 2 when the
 * budget is spent ("mime:truncated": no more parts), BAIL or -1. */
static int body(Mail *m, const Fields *fs, size_t pay, size_t plen, int top, PyObject *meta, PyObject *helpers,
                Py_ssize_t *budget)
{
    const unsigned char *d = m->d;
    const Field *ctf = get(m, fs, "content-type");
    const unsigned char *ct = ctf ? d + ctf->value : NULL;
    size_t ct_len = ctf ? ctf->value_len : 0;
    char ctype[128];
    if ((ct && !ascii_clean(ct, ct_len)) || content_type(ct, ct_len, ctype, sizeof ctype))
        return BAIL;
    if (!strncmp(ctype, "multipart/", 10) || !strncmp(ctype, "message/", 8))
        return BAIL; /* (parse_message: the standard parser's) */
    if (!top && emit2(m, meta, "ct:", ctype, strlen(ctype)) < 0)
        return -1;
    const Field *cd = get(m, fs, "content-disposition"), *cte = get(m, fs, "content-transfer-encoding");
    const unsigned char *cdv = cd ? d + cd->value : NULL;
    if ((ct && !params_plain(ct, ct_len)) || (cd && (!ascii_clean(cdv, cd->value_len) || !params_plain(cdv, cd->value_len))))
        return BAIL;
    if (cte && !ascii_clean(d + cte->value, cte->value_len))
        return BAIL;
    /* filename = get_param("filename", header="content-disposition") or get_param("name") */
    size_t fa = 0, fb = 0;
    const unsigned char *fsrc = NULL;
    if (cd && get_param(cdv, cd->value_len, "filename", &fa, &fb) && fb > fa)
        fsrc = cdv;
    else if (ct && get_param(ct, ct_len, "name", &fa, &fb) && fb > fa)
        fsrc = ct;
    if (fsrc) {
        size_t dot = fb;
        for (size_t i = fb; i > fa; i--)
            if (fsrc[i - 1] == '.') {
                dot = i - 1;
                break;
            }
        m->tok.len = 0;
        if (buf_str(&m->tok, "filename:ext:") < 0)
            return -1;
        if (dot == fb) {
            if (buf_str(&m->tok, "none") < 0)
                return -1;
        } else {
            size_t el = fb - dot - 1;
            if (buf_put(&m->tok, fsrc + dot + 1, el > 10 ? 10 : el) < 0)
                return -1;
            for (size_t j = 13; j < m->tok.len; j++)
                m->tok.p[j] = (char)lower((unsigned char)m->tok.p[j]);
        }
        if (emit(m, meta) < 0)
            return -1;
    }
    if (strncmp(ctype, "text/", 5) != 0)
        return 0; /* an attachment: its type and extension, never its bytes */
    /* the cte token: stripped, lower case; the decoding: lower case as it is */
    const unsigned char *cv = cte ? d + cte->value : (const unsigned char *)"";
    size_t cl = cte ? cte->value_len : 0, ca = 0, cb = cl;
    strip(cv, &ca, &cb);
    if (ieq(cv + ca, cb - ca, "base64") || ieq(cv + ca, cb - ca, "quoted-printable")) {
        m->tok.len = 0;
        if (buf_str(&m->tok, "cte:") < 0 || buf_put(&m->tok, cv + ca, cb - ca) < 0)
            return -1;
        for (size_t j = 4; j < m->tok.len; j++)
            m->tok.p[j] = (char)lower((unsigned char)m->tok.p[j]);
        if (emit(m, meta) < 0)
            return -1;
    }
    PyObject *raw;
    const char *payload = (const char *)d + pay;
    if (ieq(cv, cl, "quoted-printable")) {
        raw = PyObject_CallFunction(PyTuple_GET_ITEM(helpers, 2), "y#", payload, (Py_ssize_t)plen);
    } else if (ieq(cv, cl, "base64")) {
        /* b"".join(payload.splitlines()): every CR and LF out, in one pass (searching the
         * rest of the payload for each line's CR and LF was quadratic: 11 s for 2 MB) */
        Buf joined = {0};
        if (buf_put(&joined, payload, plen) < 0) {
            PyMem_Free(joined.p);
            return -1;
        }
        size_t kept = 0;
        for (size_t i = 0; i < plen; i++)
            if (payload[i] != '\r' && payload[i] != '\n')
                joined.p[kept++] = payload[i];
        joined.len = kept;
        PyObject *pair = PyObject_CallFunction(PyTuple_GET_ITEM(helpers, 3), "y#", joined.p ? joined.p : "",
                                               (Py_ssize_t)joined.len);
        PyMem_Free(joined.p);
        if (!pair)
            return -1;
        raw = PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2 ? PyTuple_GET_ITEM(pair, 0) : NULL;
        Py_XINCREF(raw);
        Py_DECREF(pair);
        if (!raw) {
            PyErr_SetString(PyExc_TypeError, "nbtext mail: decode_b must return a pair");
            return -1;
        }
    } else if (ieq(cv, cl, "x-uuencode") || ieq(cv, cl, "uuencode") || ieq(cv, cl, "uue") || ieq(cv, cl, "x-uue")) {
        return BAIL;
    } else {
        raw = PyBytes_FromStringAndSize(payload, (Py_ssize_t)plen);
    }
    if (!raw)
        return -1;
    if (!PyBytes_Check(raw)) {
        Py_DECREF(raw);
        return BAIL; /* (Python: "error:payload") */
    }
    if (PyBytes_GET_SIZE(raw) > *budget) {
        PyObject *cut = PyBytes_FromStringAndSize(PyBytes_AS_STRING(raw), *budget);
        Py_DECREF(raw);
        if (!(raw = cut))
            return -1;
    }
    *budget -= PyBytes_GET_SIZE(raw);
    /* the charset: get_param("charset"), lower case */
    PyObject *charset = Py_None;
    Py_INCREF(charset);
    size_t sa, sb;
    if (ct && get_param(ct, ct_len, "charset", &sa, &sb)) {
        Py_DECREF(charset);
        m->tok.len = 0;
        if (buf_put(&m->tok, ct + sa, sb - sa) < 0) {
            Py_DECREF(raw);
            return -1;
        }
        for (size_t j = 0; j < m->tok.len; j++)
            m->tok.p[j] = (char)lower((unsigned char)m->tok.p[j]);
        charset = PyUnicode_DecodeASCII(m->tok.p ? m->tok.p : "", (Py_ssize_t)m->tok.len, "strict");
        if (!charset) {
            Py_DECREF(raw);
            return -1;
        }
        if (sb > sa) {
            size_t cl2 = m->tok.len > 20 ? 20 : m->tok.len;
            char head[32];
            memcpy(head, m->tok.p, cl2);
            if (emit2(m, meta, "charset:", head, cl2) < 0) {
                Py_DECREF(raw);
                Py_DECREF(charset);
                return -1;
            }
        }
    }
    PyObject *pair = PyObject_CallFunctionObjArgs(PyTuple_GET_ITEM(helpers, 0), raw, charset, NULL);
    Py_DECREF(raw);
    Py_DECREF(charset);
    if (!pair)
        return -1;
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0))) {
        Py_DECREF(pair);
        PyErr_SetString(PyExc_TypeError, "nbtext mail: decode_bytes must return (str, bool)");
        return -1;
    }
    PyObject *text = PyTuple_GET_ITEM(pair, 0);
    Py_INCREF(text);
    int as_declared = PyObject_IsTrue(PyTuple_GET_ITEM(pair, 1));
    Py_DECREF(pair);
    if (as_declared < 0 || (!as_declared && emit2(m, meta, "charset:fallback", "", 0) < 0)) {
        Py_DECREF(text);
        return -1;
    }
    if (!strcmp(ctype + 5, "html") && !(m->off & OFF_HTML)) {
        PyObject *found = PyList_New(0), *html = NULL;
        if (!found) {
            Py_DECREF(text);
            return -1;
        }
        int r = BAIL;
        if (PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND) { /* here; else (or a target not ASCII) in Python */
            r = html_text(m, PyUnicode_DATA(text), (size_t)PyUnicode_GET_LENGTH(text), found,
                          PyTuple_GET_ITEM(helpers, 5), &html);
            if (r == BAIL)
                r = PyList_SetSlice(found, 0, PyList_GET_SIZE(found), NULL) < 0 ? -1 : BAIL;
        }
        if (r == BAIL)
            html = PyObject_CallFunctionObjArgs(PyTuple_GET_ITEM(helpers, 1), text, found,
                                                PyTuple_GET_ITEM(helpers, 4), NULL);
        Py_DECREF(text);
        if (!html || !PyUnicode_Check(html)) {
            if (html) {
                PyErr_SetString(PyExc_TypeError, "nbtext mail: html_to_text must return str");
                Py_DECREF(html);
            }
            Py_DECREF(found);
            return -1;
        }
        text = html;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(found); i++) {
            PyObject *t = PyList_GET_ITEM(found, i);
            int url = PyUnicode_Check(t) && PyUnicode_GET_LENGTH(t) >= 4 && PyUnicode_READ_CHAR(t, 0) == 'u'
                      && PyUnicode_READ_CHAR(t, 1) == 'r' && PyUnicode_READ_CHAR(t, 2) == 'l'
                      && PyUnicode_READ_CHAR(t, 3) == ':';
            if (PyList_Append(url ? meta : m->texts, t) < 0) {
                Py_DECREF(found);
                Py_DECREF(text);
                return -1;
            }
        }
        Py_DECREF(found);
    }
    if (!(m->off & OFF_URLS)) {
        PyObject *rest = NULL;
        int r = scan_urls(m, meta, text, &rest);
        Py_DECREF(text);
        if (r)
            return r;
        text = rest;
    }
    int r = PyList_Append(m->texts, text);
    Py_DECREF(text);
    if (r < 0)
        return -1;
    if (*budget <= 0)
        return emit2(m, meta, "mime:truncated", "", 0) < 0 ? -1 : 2;
    return 0;
}

/* -- multipart: the standard parser's (email.feedparser) reading of a multipart message ------- */

static size_t line_end(const unsigned char *d, size_t n, size_t p)
{
    const unsigned char *lf = p < n ? memchr(d + p, '\n', n - p) : NULL;
    return lf ? (size_t)(lf - d) + 1 : n;
}

/* The feedparser's boundary pattern, "--" + boundary, then "--" (2: the close) or not (1),
 * [ \t]*, an optional line end, the line's end; at the line d[a:e]. */
static int boundary_line(const unsigned char *d, size_t a, size_t e, const unsigned char *b, size_t bl)
{
    if (e - a < 2 + bl || d[a] != '-' || d[a + 1] != '-' || memcmp(d + a + 2, b, bl))
        return 0;
    size_t t = a + 2 + bl;
    for (int close = 1; close >= 0; close--) {
        size_t x = t;
        if (close) {
            if (x + 2 > e || d[x] != '-' || d[x + 1] != '-')
                continue;
            x += 2;
        }
        while (x < e && (d[x] == ' ' || d[x] == '\t'))
            x++;
        if (x == e || (e - x == 1 && (d[x] == '\n' || d[x] == '\r')) || (e - x == 2 && d[x] == '\r' && d[x + 1] == '\n'))
            return close ? 2 : 1;
    }
    return 0;
}

/* The parts of a multipart message (not nested, not multipart/digest): its body d[at:], its
 * Content-Type ct; each part's body_tokens in turn. The feedparser's lines end at "\n" here:
 * a message with a bare CR in its body is not ours. */
static int multipart(Mail *m, const unsigned char *ct, size_t ct_len, const char *ctype, size_t at, PyObject *meta,
                     PyObject *helpers, Py_ssize_t *budget)
{
    const unsigned char *d = m->d;
    size_t n = m->n, ba, bb;
    if (!strcmp(ctype, "multipart/digest") || !params_plain(ct, ct_len) || !get_param(ct, ct_len, "boundary", &ba, &bb))
        return BAIL;
    /* get_boundary: collapse_rfc2231_value (unquote once more), then rstrip() */
    for (size_t i = ba; i < bb; i++)
        if (ct[i] == '"' || ct[i] == '<' || ct[i] == '>')
            return BAIL;
    while (bb > ba && py_space(ct[bb - 1]))
        bb--;
    if (bb == ba)
        return BAIL;
    const unsigned char *b = ct + ba;
    size_t bl = bb - ba;
    for (size_t j = at; j < n; j++)
        if (d[j] == '\r' && (j + 1 >= n || d[j + 1] != '\n'))
            return BAIL;
    /* the preamble, up to the first boundary line */
    size_t line = at;
    for (;;) {
        if (line >= n)
            return BAIL; /* (no start boundary: the payload is one text of a multipart type) */
        size_t next = line_end(d, n, line);
        int kind = boundary_line(d, line, next, b, bl);
        line = next;
        if (kind == 2)
            return BAIL;
        if (kind == 1)
            break;
    }
    size_t parts = 1;
    for (;;) {
        if (line < n && boundary_line(d, line, line_end(d, n, line), b, bl))
            return BAIL; /* (boundary lines in a row: the feedparser skips them) */
        if (++parts > MAX_PARTS)
            return BAIL;
        /* the part's header lines (the feedparser's headerRE), up to a boundary line, a blank
         * line (dropped) or another line (the payload's first) */
        Fields fs = {0};
        Field cur = {0};
        int have = 0, r = 0;
        size_t p = line, pay = n;
        while (p < n) {
            size_t next = line_end(d, n, p);
            if (boundary_line(d, p, next, b, bl)) {
                pay = p;
                break;
            }
            if (d[p] == ' ' || d[p] == '\t') {
                if (!have) {
                    r = BAIL; /* (a first line that is a continuation) */
                    break;
                }
                cur.value_len = next - cur.value;
                p = next;
                continue;
            }
            if (next - p >= 5 && !memcmp(d + p, "From ", 5)) {
                r = BAIL;
                break;
            }
            size_t k = p;
            while (k < next && d[k] >= 041 && d[k] <= 0176 && d[k] != ':')
                k++;
            if (k < next && d[k] == ':') {
                if (k == p) {
                    r = BAIL; /* (no name) */
                    break;
                }
                if (have && add_field(&fs, cur) < 0) {
                    r = -1;
                    break;
                }
                cur.name = p;
                cur.name_len = k - p;
                cur.value = k + 1;
                while (cur.value < next && (d[cur.value] == ' ' || d[cur.value] == '\t'))
                    cur.value++;
                cur.value_len = next - cur.value;
                have = 1;
                p = next;
                continue;
            }
            pay = d[p] == '\n' || (d[p] == '\r' && p + 1 < n && d[p + 1] == '\n') ? next : p;
            break;
        }
        if (!r && have && add_field(&fs, cur) < 0)
            r = -1;
        for (size_t k = 0; k < fs.n; k++) {
            Field *f = &fs.f[k];
            while (f->value_len && (d[f->value + f->value_len - 1] == '\r' || d[f->value + f->value_len - 1] == '\n'))
                f->value_len--;
        }
        /* the payload: up to the next boundary line (or the end), less its last line end */
        size_t e = pay < n ? pay : n;
        int kind = 0;
        while (!r && e < n) {
            size_t next = line_end(d, n, e);
            if ((kind = boundary_line(d, e, next, b, bl)))
                break;
            e = next;
        }
        size_t plen = e - (pay < e ? pay : e);
        if (plen && d[pay + plen - 1] == '\n') {
            plen--;
            if (plen && d[pay + plen - 1] == '\r')
                plen--;
        }
        if (!r)
            r = body(m, &fs, pay < e ? pay : e, plen, 0, meta, helpers, budget);
        PyMem_Free(fs.f);
        if (r == 2)
            return 0;
        if (r)
            return r;
        if (e >= n || kind == 2)
            return 0; /* the end (no close boundary: the parts so far), or the close */
        line = line_end(d, n, e);
    }
}


/* One header field's tokens by the reference (helpers[6]: nbtext.text.mail.field_tokens, bound
 * to the settings): for a value the rules here do not read (8-bit bytes as compat32 keeps them,
 * surrogate-escaped; a NUL; RFC 2047 words). Its tokens go on the header's list, its recipients
 * onto To: and Cc:'s count; BAIL for a token holding a NUL (as the body's tokens: Python
 * replaces it), -1 on an error. */
static int field_by_helper(Mail *m, const char *name, size_t name_len, const unsigned char *v, size_t vn,
                           size_t *recipients, PyObject *helpers)
{
    PyObject *key = PyUnicode_DecodeASCII(name, (Py_ssize_t)name_len, "strict");
    PyObject *value = key ? PyUnicode_DecodeASCII((const char *)v, (Py_ssize_t)vn, "surrogateescape") : NULL;
    PyObject *got = value ? PyObject_CallFunctionObjArgs(PyTuple_GET_ITEM(helpers, 6), key, value, NULL) : NULL;
    Py_XDECREF(key);
    Py_XDECREF(value);
    if (!got)
        return -1;
    int ret = -1;
    if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 2 || !PyList_Check(PyTuple_GET_ITEM(got, 0))) {
        PyErr_SetString(PyExc_TypeError, "nbtext mail: a field's tokens must be (list, int)");
        goto done;
    }
    Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(got, 1));
    if (n == -1 && PyErr_Occurred())
        goto done;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "nbtext mail: a field's recipients must not be negative");
        goto done;
    }
    PyObject *tokens = PyTuple_GET_ITEM(got, 0);
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(tokens); k++) {
        PyObject *t = PyList_GET_ITEM(tokens, k);
        if (!PyUnicode_Check(t)) {
            PyErr_SetString(PyExc_TypeError, "nbtext mail: tokens must be str");
            goto done;
        }
        if (PyUnicode_FindChar(t, 0, 0, PyUnicode_GET_LENGTH(t), 1) != -1) {
            ret = BAIL;
            goto done;
        }
    }
    if (PyList_SetSlice(m->tokens, PyList_GET_SIZE(m->tokens), PyList_GET_SIZE(m->tokens), tokens) < 0)
        goto done;
    *recipients += (size_t)n;
    ret = 0;
done:
    Py_DECREF(got);
    return ret;
}

/* -- the message ----------------------------------------------------------------------------- */

static int message(Mail *m, PyObject *helpers)
{
    const unsigned char *d = m->d;
    size_t n = m->n, i = 0;
    while (i < n && (d[i] == '\r' || d[i] == '\n'))
        i++;
    if (n - i >= 5 && !memcmp(d + i, "From ", 5)) {
        const unsigned char *lf = memchr(d + i, '\n', n - i);
        i = lf ? (size_t)(lf - d) + 1 : n;
    }
    /* the header block ends at the first "\n\n" or "\n\r\n" */
    size_t end = 0, body_at = 0;
    int found = 0;
    for (size_t j = i; j + 1 < n; j++) {
        if (d[j] != '\n')
            continue;
        if (d[j + 1] == '\n') {
            end = j, body_at = j + 2, found = 1;
            break;
        }
        if (d[j + 1] == '\r' && j + 2 < n && d[j + 2] == '\n') {
            end = j, body_at = j + 3, found = 1;
            break;
        }
    }
    if (!found)
        return BAIL;
    Fields fs = {0};
    int ret = BAIL;
    /* every CR in the block is in a CRLF; no NUL */
    for (size_t j = i; j < end; j++)
        if (d[j] == 0 || (d[j] == '\r' && (j + 1 >= end || d[j + 1] != '\n')))
            goto done;
    /* the fields: a FIELD_RE line, then its continuation lines */
    Field cur = {0};
    int have = 0;
    size_t line = i;
    while (line <= end) {
        const unsigned char *lf = line < end ? memchr(d + line, '\n', end - line) : NULL;
        size_t stop = lf ? (size_t)(lf - d) : end; /* the line is d[line:stop] + "\n" */
        if (stop > line && (d[line] == ' ' || d[line] == '\t') && have) {
            cur.value_len = stop + 1 - cur.value;
        } else {
            size_t colon = stop > line ? field_colon(d + line, stop - line) : 0;
            if (!colon)
                goto done;
            if (have && add_field(&fs, cur) < 0) {
                ret = -1;
                goto done;
            }
            cur.name = line;
            cur.name_len = colon;
            cur.value = line + colon + 1;
            while (cur.value < stop && (d[cur.value] == ' ' || d[cur.value] == '\t'))
                cur.value++;
            cur.value_len = stop + 1 - cur.value;
            have = 1;
        }
        line = stop + 1;
    }
    if (have && add_field(&fs, cur) < 0) {
        ret = -1;
        goto done;
    }
    /* value.rstrip("\r\n"): (the value ends at most one past the block, at its "\n") */
    for (size_t k = 0; k < fs.n; k++) {
        Field *f = &fs.f[k];
        while (f->value_len && (f->value + f->value_len > end || d[f->value + f->value_len - 1] == '\r'
                                || d[f->value + f->value_len - 1] == '\n'))
            f->value_len--;
    }
    const Field *ctf = get(m, &fs, "content-type");
    const unsigned char *ct = ctf ? d + ctf->value : NULL;
    size_t ct_len = ctf ? ctf->value_len : 0;
    char ctype[128];
    if ((ct && !ascii_clean(ct, ct_len)) || content_type(ct, ct_len, ctype, sizeof ctype))
        goto done;
    /* the body first (it can say "not mine"), then the header's tokens before its tokens */
    PyObject *meta = PyList_New(0);
    if (!meta) {
        ret = -1;
        goto done;
    }
    Py_ssize_t budget = m->max_bytes;
    int r = !strncmp(ctype, "multipart/", 10) ? multipart(m, ct, ct_len, ctype, body_at, meta, helpers, &budget)
                                              : body(m, &fs, body_at, m->n - body_at, 1, meta, helpers, &budget);
    if (r == 2)
        r = 0;
    if (r) {
        Py_DECREF(meta);
        ret = r;
        goto done;
    }
    /* header_tokens */
    size_t recipients = 0;
    PyObject *seen = PySet_New(NULL);
    if (!seen) {
        Py_DECREF(meta);
        ret = -1;
        goto done;
    }
    ret = -1;
    for (size_t k = 0; k < fs.n; k++) {
        const Field *f = &fs.f[k];
        if (f->name_len > 40)
            continue;
        char name[48];
        for (size_t j = 0; j < f->name_len; j++)
            name[j] = (char)lower(d[f->name + j]);
        name[f->name_len] = 0;
        if (!(m->off & OFF_NAMES)) {
            PyObject *key = PyUnicode_DecodeASCII(name, (Py_ssize_t)f->name_len, "strict");
            if (!key)
                goto body_done;
            int has = PySet_Contains(seen, key);
            if (has < 0 || (!has && PySet_Add(seen, key) < 0)) {
                Py_DECREF(key);
                goto body_done;
            }
            Py_DECREF(key);
            if (!has && emit2(m, m->tokens, "hdr:", name, f->name_len) < 0)
                goto body_done;
        }
        int addr = -1, word = 0;
        for (int j = 0; j < 6; j++)
            if (!strcmp(name, ADDRESS_HEADERS[j]))
                addr = j;
        for (int j = 0; j < 3; j++)
            word |= !strcmp(name, WORD_HEADERS[j]);
        int subject = !strcmp(name, "subject"), msgid = !strcmp(name, "message-id"),
            received = !strcmp(name, "received"), ctype = !strcmp(name, "content-type");
        if (addr < 0 && !word && !subject && !msgid && !received && !ctype)
            continue;
        const unsigned char *v = d + f->value;
        size_t vn = f->value_len;
        int plain = ascii_clean(v, vn);
        for (size_t j = 0; plain && j + 1 < vn; j++)
            plain = !(v[j] == '=' && v[j + 1] == '?');
        if (!plain) {
            /* 8-bit bytes, a NUL or RFC 2047 words: the reference's own tokens of the field */
            int r = field_by_helper(m, name, f->name_len, v, vn, &recipients, helpers);
            if (r) {
                ret = r;
                goto body_done;
            }
            continue;
        }
        if (addr >= 0) {
            if (address_rule(m, name, v, vn, &recipients, addr == 1 || addr == 2) < 0)
                goto body_done;
            continue;
        }
        if (received) {
            if (!(m->off & OFF_RECEIVED) && received_rule(m, v, vn) < 0)
                goto body_done;
            continue;
        }
        if (m->off & OFF_HEADERS)
            continue;
        if (subject && subject_rule(m, v, vn) < 0)
            goto body_done;
        if (msgid && message_id_rule(m, v, vn) < 0)
            goto body_done;
        if (word) {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "%s:", name);
            if (words(m, v, vn, prefix, 20, m->tokens) < 0)
                goto body_done;
        }
        if (ctype) {
            size_t a = 0, b = 0;
            while (b < vn && v[b] != ';')
                b++;
            strip(v, &a, &b);
            m->tok.len = 0;
            if (buf_str(&m->tok, "ct:") < 0 || buf_put(&m->tok, v + a, b - a) < 0)
                goto body_done;
            for (size_t j = 3; j < m->tok.len; j++)
                m->tok.p[j] = (char)lower((unsigned char)m->tok.p[j]);
            if (emit(m, m->tokens) < 0)
                goto body_done;
        }
    }
    if (!(m->off & OFF_RECIPIENTS)) {
        const char *b = bucket(recipients);
        if (emit2(m, m->tokens, "to:count:", b, strlen(b)) < 0)
            goto body_done;
    }
    /* the body's tokens after the header's ("mime" off: without its MIME tokens) */
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(meta); k++) {
        PyObject *t = PyList_GET_ITEM(meta, k);
        if (!PyUnicode_Check(t)) {
            PyErr_SetString(PyExc_TypeError, "nbtext mail: tokens must be str");
            goto body_done;
        }
        if (m->off & OFF_MIME) {
            int mime = is_mime_token(t);
            if (mime < 0)
                goto body_done;
            if (mime)
                continue;
        }
        if (PyUnicode_FindChar(t, 0, 0, PyUnicode_GET_LENGTH(t), 1) != -1) {
            ret = BAIL; /* (Python replaces a NUL in a token; not ours to do) */
            goto body_done;
        }
        if (PyList_Append(m->tokens, t) < 0)
            goto body_done;
    }
    ret = 0;
body_done:
    Py_DECREF(seen);
    Py_DECREF(meta);
done:
    PyMem_Free(fs.f);
    return ret;
}

/* mail_parts(data, lowercase, max_word_length, max_bytes, off_bits, off, helpers)
 *   -> (tokens, texts) or None; helpers: (decode_bytes, html_to_text, a2b_qp, decode_b, off, html.unescape,
 *   field_tokens) */
PyObject *nbtext_mail_parts(PyObject *self, PyObject *args)
{
    Py_buffer view;
    int lowercase;
    Py_ssize_t max_word, max_bytes;
    long off;
    PyObject *helpers;
    if (!PyArg_ParseTuple(args, "y*pnnlO!:mail_parts", &view, &lowercase, &max_word, &max_bytes, &off,
                          &PyTuple_Type, &helpers))
        return NULL;
    if (PyTuple_GET_SIZE(helpers) != 7 || max_word < 1 || max_bytes < 1) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "nbtext mail: bad settings or helpers");
        return NULL;
    }
    Mail m = {view.buf, (size_t)view.len, lowercase, max_word, max_bytes, off, PyList_New(0), PyList_New(0),
              {0}, {0}};
    PyObject *result = NULL;
    if (m.tokens && m.texts) {
        int r = (off & OFF_DECODE) ? BAIL : message(&m, helpers);
        if (r == 0)
            result = PyTuple_Pack(2, m.tokens, m.texts);
        else if (r == BAIL) {
            result = Py_None;
            Py_INCREF(result);
        }
    }
    Py_XDECREF(m.tokens);
    Py_XDECREF(m.texts);
    PyMem_Free(m.tok.p);
    PyMem_Free(m.tmp.p);
    PyBuffer_Release(&view);
    return result;
}

/* looks_like_mail(data, max_lines, names) -> bool: nbtext.text.words.looks_like_mail of bytes,
 * with max_lines its MAIL_LINES and names its MAIL_FIELDS (a frozenset of lower-case bytes). The
 * header block is the lines before the first blank one (a line bytes.strip() empties), at most
 * max_lines of them, a leading mbox "From " line aside (it counts as a plain field); lines end
 * in LF, CR or CRLF; a line starting with a blank continues a field. A field is
 * [!-9;-~]+[ \t]*: and a plain one has blanks and a value after its colon: mail when a field's
 * name is one of names, two fields or more are plain, and the fields outnumber the other lines. */
PyObject *nbtext_looks_like_mail(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t max_lines;
    PyObject *names;
    if (!PyArg_ParseTuple(args, "y*nO!:looks_like_mail", &view, &max_lines, &PyFrozenSet_Type, &names))
        return NULL;
    const unsigned char *d = view.buf;
    size_t n = (size_t)view.len, i = 0, plain = 0, fields = 0, others = 0;
    int known = 0;
    while (i < n && (d[i] == '\r' || d[i] == '\n'))
        i++;
    int from = n - i >= 5 && !memcmp(d + i, "From ", 5);
    plain = fields = (size_t)from;
    for (Py_ssize_t lines = -from; lines < max_lines && i < n; lines++) {
        /* a line of bytes.splitlines(): up to \n, \r or \r\n */
        size_t e = i;
        while (e < n && d[e] != '\n' && d[e] != '\r')
            e++;
        size_t next = e < n ? (d[e] == '\r' && e + 1 < n && d[e + 1] == '\n' ? e + 2 : e + 1) : n;
        if (lines < 0) { /* the "From " line */
            i = next;
            continue;
        }
        size_t a = i;
        while (a < e && (d[a] == ' ' || (d[a] >= '\t' && d[a] <= '\r')))
            a++;
        if (a == e)
            break; /* a blank line */
        if (d[i] != ' ' && d[i] != '\t') {
            size_t k = i;
            while (k < e && d[k] >= '!' && d[k] <= '~' && d[k] != ':')
                k++;
            size_t c = k;
            while (c < e && (d[c] == ' ' || d[c] == '\t'))
                c++;
            if (k > i && c < e && d[c] == ':') {
                size_t v = c + 1;
                while (v < e && (d[v] == ' ' || d[v] == '\t'))
                    v++;
                fields++;
                plain += v > c + 1 && v < e;
                char name[32];
                if (!known && k - i <= sizeof name) {
                    for (size_t j = i; j < k; j++)
                        name[j - i] = (char)lower(d[j]);
                    PyObject *key = PyBytes_FromStringAndSize(name, (Py_ssize_t)(k - i));
                    known = key ? PySet_Contains(names, key) : -1;
                    Py_XDECREF(key);
                    if (known < 0) {
                        PyBuffer_Release(&view);
                        return NULL;
                    }
                }
            } else
                others++;
        }
        i = next;
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(known && plain >= 2 && fields > others);
}
