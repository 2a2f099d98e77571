#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "mail.h"
#include "mail_html.h"
#include "mail_urls.h"

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
 * is an "&" that is not one of the simple references, which are read here as it reads them,
 * so that the common text needs no call into Python): a new str. */
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

/* HREF_RE = (?is)(?=[hsa])\b(?:href|src|action)\s*=\s*["']?([^"'\s>]{1,URL_MAX}) and
 * ALT_RE = (?is)(?=a)\balt\s*=\s*["']([^"']{0,ALT_MAX})["'] at s[i] (mail_limits' url_run and alt_run): the end of the match and
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
    while (q < n && q - p < mail_limits.url_run && s[q] != '"' && s[q] != '\'' && s[q] != '>' && !u_space(s[q]))
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
    while (q < n && q - p < mail_limits.alt_run && s[q] != '"' && s[q] != '\'')
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
        if (gt >= n || gt - p > mail_limits.tag_run) {
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
int html_text(Mail *m, const unsigned char *s, size_t n, PyObject *found, PyObject *unescape, PyObject **text)
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
        if (m->off & mail_off.urls) {
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
    if (!mail_configured() || !PyArg_ParseTuple(args, "UpO:html_text", &text, &urls_off, &unescape))
        return NULL;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND)
        Py_RETURN_NONE;
    Mail m = {NULL, 0, 0, 1, 1, urls_off ? mail_off.urls : 0, PyList_New(0), NULL, {0}, {0}};
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

