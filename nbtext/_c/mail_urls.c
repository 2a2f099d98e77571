#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "mail.h"
#include "mail_headers.h"
#include "mail_urls.h"

/* -- URLs ------------------------------------------------------------------------------------ */

static inline int url_path_sep(unsigned char c) { return c && strchr("/?&=.#_:;,+%~-", c) != NULL; }

/* url_tokens of an ASCII URL u[0:n] */
int url_tokens(Mail *m, PyObject *meta, const unsigned char *u, size_t n)
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

/* URL_RE.finditer over text: each URL's tokens (the first mail_limits.urls) to meta and a space for
 * it in the text; *out: the new text (a new reference). BAIL for a URL with a non-ASCII
 * character. */

int scan_urls(Mail *m, PyObject *meta, PyObject *text, PyObject **out)
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
        while (k < len && (size_t)(k - e) < mail_limits.url_run && url_char(PyUnicode_READ(kind, data, k)))
            k++;
        if (k == e)
            continue;
        /* a URL: text[i:k] */
        if ((size_t)count < mail_limits.urls) {
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

