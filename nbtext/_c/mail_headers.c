#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "mail.h"
#include "mail_headers.h"

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
int domain_tokens(Mail *m, const char *prefix, const unsigned char *host, size_t n, size_t most)
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
    int rules = !(m->off & mail_off.headers);
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

int add_field(Fields *fs, Field f)
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
size_t field_colon(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i] >= 041 && s[i] <= 0176 && s[i] != ':')
        i++;
    return i > 0 && i < n && s[i] == ':' ? i : 0;
}

/* The first field named `name` (lower case), or NULL. */
const Field *field_get(const Mail *m, const Fields *fs, const char *name)
{
    for (size_t i = 0; i < fs->n; i++)
        if (ieq(m->d + fs->f[i].name, fs->f[i].name_len, name))
            return &fs->f[i];
    return NULL;
}
/* One header field's tokens by the reference (helpers[6]: nbtext.text.mail.field_tokens, bound
 * to the settings): for a value the rules here do not read (8-bit bytes as compat32 keeps them,
 * surrogate-escaped; a NUL; RFC 2047 words). Its tokens go on the header's list, its recipients
 * onto To: and Cc:'s count; BAIL for a token holding a NUL (as the body's tokens: Python
 * replaces it), -1 on an error. */
static int field_by_helper(Mail *m, const char *name, size_t name_len, const unsigned char *v, size_t vn,
                           size_t *recipients)
{
    PyObject *key = PyUnicode_DecodeASCII(name, (Py_ssize_t)name_len, "strict");
    PyObject *value = key ? PyUnicode_DecodeASCII((const char *)v, (Py_ssize_t)vn, "surrogateescape") : NULL;
    PyObject *got = value ? PyObject_CallFunctionObjArgs(m->h->field_tokens, key, value, NULL) : NULL;
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


/* -- the header block and its tokens ------------------------------------------------------------ */

/* The end of the header block (at its first "\n\n" or "\n\r\n") from d[i:], and where the body
 * starts; 0 when there is none. */
static int block_end(const unsigned char *d, size_t n, size_t i, size_t *end, size_t *body_at)
{
    for (size_t j = i; j + 1 < n; j++) {
        if (d[j] != '\n')
            continue;
        if (d[j + 1] == '\n') {
            *end = j, *body_at = j + 2;
            return 1;
        }
        if (d[j + 1] == '\r' && j + 2 < n && d[j + 2] == '\n') {
            *end = j, *body_at = j + 3;
            return 1;
        }
    }
    return 0;
}

/* The fields of the block d[i:end]: a FIELD_RE line, then its continuation lines; each value
 * less its line end (value.rstrip("\r\n")). 0, BAIL or -1. */
static int block_fields(const unsigned char *d, size_t i, size_t end, Fields *fs)
{
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
                return BAIL;
            if (have && add_field(fs, cur) < 0)
                return -1;
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
    if (have && add_field(fs, cur) < 0)
        return -1;
    /* (the value ends at most one past the block, at its "\n") */
    for (size_t k = 0; k < fs->n; k++) {
        Field *f = &fs->f[k];
        while (f->value_len && (f->value + f->value_len > end || d[f->value + f->value_len - 1] == '\r'
                                || d[f->value + f->value_len - 1] == '\n'))
            f->value_len--;
    }
    return 0;
}

int header_block(Mail *m, Fields *fs, size_t *body_at)
{
    const unsigned char *d = m->d;
    size_t n = m->n, i = 0, end = 0;
    while (i < n && (d[i] == '\r' || d[i] == '\n'))
        i++;
    if (n - i >= 5 && !memcmp(d + i, "From ", 5)) {
        /* the mbox separator line, ended by LF, CRLF or a bare CR (nbtext.text.mail._after_first_line) */
        while (i < n && d[i] != '\n' && d[i] != '\r')
            i++;
        i += i < n && d[i] == '\r' && i + 1 < n && d[i + 1] == '\n' ? 2 : i < n ? 1 : 0;
    }
    if (!block_end(d, n, i, &end, body_at))
        return BAIL;
    /* every CR in the block is in a CRLF; no NUL */
    for (size_t j = i; j < end; j++)
        if (d[j] == 0 || (d[j] == '\r' && (j + 1 >= end || d[j + 1] != '\n')))
            return BAIL;
    return block_fields(d, i, end, fs);
}

/* One hdr:NAME token a field name, the first time it is seen (the rule "header-names") */
static int name_token(Mail *m, PyObject *seen, const char *name, size_t len)
{
    PyObject *key = PyUnicode_DecodeASCII(name, (Py_ssize_t)len, "strict");
    if (!key)
        return -1;
    int has = PySet_Contains(seen, key);
    if (has < 0 || (!has && PySet_Add(seen, key) < 0)) {
        Py_DECREF(key);
        return -1;
    }
    Py_DECREF(key);
    return !has && emit2(m, m->tokens, "hdr:", name, len) < 0 ? -1 : 0;
}

/* The Content-Type field's own token: ct: and its type, stripped, in lower case */
static int ct_token(Mail *m, const unsigned char *v, size_t vn)
{
    size_t a = 0, b = 0;
    while (b < vn && v[b] != ';')
        b++;
    strip(v, &a, &b);
    m->tok.len = 0;
    if (buf_str(&m->tok, "ct:") < 0 || buf_put(&m->tok, v + a, b - a) < 0)
        return -1;
    for (size_t j = 3; j < m->tok.len; j++)
        m->tok.p[j] = (char)lower((unsigned char)m->tok.p[j]);
    return emit(m, m->tokens);
}

/* The tokens of one field (its name in lower case) by the rule that reads it, if any; To and
 * Cc's addresses counted in *recipients. 0, BAIL or -1. */
static int field_rules(Mail *m, const char *name, size_t name_len, const unsigned char *v, size_t vn,
                       size_t *recipients)
{
    int addr = -1, word = 0;
    for (int j = 0; j < 6; j++)
        if (!strcmp(name, ADDRESS_HEADERS[j]))
            addr = j;
    for (int j = 0; j < 3; j++)
        word |= !strcmp(name, WORD_HEADERS[j]);
    int subject = !strcmp(name, "subject"), msgid = !strcmp(name, "message-id"),
        received = !strcmp(name, "received"), ctype = !strcmp(name, "content-type");
    if (addr < 0 && !word && !subject && !msgid && !received && !ctype)
        return 0;
    int plain = ascii_clean(v, vn);
    for (size_t j = 0; plain && j + 1 < vn; j++)
        plain = !(v[j] == '=' && v[j + 1] == '?');
    if (!plain) /* 8-bit bytes, a NUL or RFC 2047 words: the reference's own tokens of the field */
        return field_by_helper(m, name, name_len, v, vn, recipients);
    if (addr >= 0)
        return address_rule(m, name, v, vn, recipients, addr == 1 || addr == 2) < 0 ? -1 : 0;
    if (received)
        return !(m->off & mail_off.received) && received_rule(m, v, vn) < 0 ? -1 : 0;
    if (m->off & mail_off.headers)
        return 0;
    if ((subject && subject_rule(m, v, vn) < 0) || (msgid && message_id_rule(m, v, vn) < 0))
        return -1;
    if (word) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s:", name);
        if (words(m, v, vn, prefix, 20, m->tokens) < 0)
            return -1;
    }
    return ctype ? (ct_token(m, v, vn) < 0 ? -1 : 0) : 0;
}

int header_tokens(Mail *m, const Fields *fs)
{
    size_t recipients = 0;
    PyObject *seen = PySet_New(NULL);
    if (!seen)
        return -1;
    int ret = 0;
    for (size_t k = 0; !ret && k < fs->n; k++) {
        const Field *f = &fs->f[k];
        if (f->name_len > 40)
            continue;
        char name[48];
        for (size_t j = 0; j < f->name_len; j++)
            name[j] = (char)lower(m->d[f->name + j]);
        name[f->name_len] = 0;
        if (!(m->off & mail_off.names) && name_token(m, seen, name, f->name_len) < 0)
            ret = -1;
        else
            ret = field_rules(m, name, f->name_len, m->d + f->value, f->value_len, &recipients);
    }
    Py_DECREF(seen);
    if (!ret && !(m->off & mail_off.recipients)) {
        const char *b = bucket(recipients);
        if (emit2(m, m->tokens, "to:count:", b, strlen(b)) < 0)
            ret = -1;
    }
    return ret;
}
