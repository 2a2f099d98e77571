#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "mail.h"
#include "mail_headers.h"
#include "mail_html.h"
#include "mail_mime.h"
#include "mail_urls.h"

/* -- parameters: compat32's get_param ------------------------------------------------------- */

/* get_param(param) of a header value s[0:n] (ASCII, no backslash, no "*", at most
 * mail_limits.params long): 1 and [*a, *b) when found (unquoted), else 0. */
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
    if (n > mail_limits.params)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\\' || s[i] == '*')
            return 0;
    return 1;
}

int is_mime_token(PyObject *t)
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

/* The "filename:ext:" token of a part: get_param("filename", header="content-disposition") or
 * get_param("name"), its extension's first 10 characters in lower case ("none": no dot). */
static int filename_token(Mail *m, const unsigned char *cdv, size_t cd_len, const unsigned char *ct, size_t ct_len,
                          PyObject *meta)
{
    size_t fa = 0, fb = 0;
    const unsigned char *fsrc = NULL;
    if (cdv && get_param(cdv, cd_len, "filename", &fa, &fb) && fb > fa)
        fsrc = cdv;
    else if (ct && get_param(ct, ct_len, "name", &fa, &fb) && fb > fa)
        fsrc = ct;
    if (!fsrc)
        return 0;
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
    return emit(m, meta);
}

/* A part's type and the tokens of its header (ct:, filename:ext:), into ctype (its
 * get_content_type()), *ct and *ct_len (its Content-Type, or NULL) and *cte (its
 * Content-Transfer-Encoding, or NULL). 0, BAIL or -1. */
static int part_header(Mail *m, const Fields *fs, int top, PyObject *meta, char *ctype, size_t size,
                       const unsigned char **ct, size_t *ct_len, const Field **cte)
{
    const unsigned char *d = m->d;
    const Field *ctf = field_get(m, fs, "content-type");
    *ct = ctf ? d + ctf->value : NULL;
    *ct_len = ctf ? ctf->value_len : 0;
    if ((*ct && !ascii_clean(*ct, *ct_len)) || content_type(*ct, *ct_len, ctype, size))
        return BAIL;
    if (!strncmp(ctype, "multipart/", 10) || !strncmp(ctype, "message/", 8))
        return BAIL; /* (parse_message: the standard parser's) */
    if (!top && emit2(m, meta, "ct:", ctype, strlen(ctype)) < 0)
        return -1;
    const Field *cd = field_get(m, fs, "content-disposition");
    *cte = field_get(m, fs, "content-transfer-encoding");
    const unsigned char *cdv = cd ? d + cd->value : NULL;
    if ((*ct && !params_plain(*ct, *ct_len)) || (cd && (!ascii_clean(cdv, cd->value_len) || !params_plain(cdv, cd->value_len))))
        return BAIL;
    if (*cte && !ascii_clean(d + (*cte)->value, (*cte)->value_len))
        return BAIL;
    return filename_token(m, cdv, cd ? cd->value_len : 0, *ct, *ct_len, meta);
}

/* base64's bytes of a payload as get_payload(decode=True) gives them: b"".join(its lines),
 * every CR and LF out in one pass (searching the rest of the payload for each line's end is
 * quadratic), through decode_b. A new bytes object, or NULL. */
static PyObject *base64_payload(Mail *m, const char *payload, size_t plen)
{
    Buf joined = {0};
    if (buf_put(&joined, payload, plen) < 0) {
        PyMem_Free(joined.p);
        return NULL;
    }
    size_t kept = 0;
    for (size_t i = 0; i < plen; i++)
        if (payload[i] != '\r' && payload[i] != '\n')
            joined.p[kept++] = payload[i];
    joined.len = kept;
    PyObject *pair = PyObject_CallFunction(m->h->decode_b, "y#", joined.p ? joined.p : "", (Py_ssize_t)joined.len);
    PyMem_Free(joined.p);
    if (!pair)
        return NULL;
    PyObject *raw = PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2 ? PyTuple_GET_ITEM(pair, 0) : NULL;
    Py_XINCREF(raw);
    Py_DECREF(pair);
    if (!raw)
        PyErr_SetString(PyExc_TypeError, "nbtext mail: decode_b must return a pair");
    return raw;
}

/* A text part's payload d[pay:pay + plen] decoded by its transfer encoding (cte: the field, or
 * NULL), its "cte:" token to meta, cut to *budget (which it spends): *raw, bytes. 0, BAIL or -1. */
static int decoded_payload(Mail *m, const Field *cte, size_t pay, size_t plen, PyObject *meta, Py_ssize_t *budget,
                           PyObject **raw)
{
    /* the cte token: stripped, lower case; the decoding: lower case as it is */
    const unsigned char *cv = cte ? m->d + cte->value : (const unsigned char *)"";
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
    const char *payload = (const char *)m->d + pay;
    if (ieq(cv, cl, "quoted-printable"))
        *raw = PyObject_CallFunction(m->h->a2b_qp, "y#", payload, (Py_ssize_t)plen);
    else if (ieq(cv, cl, "base64"))
        *raw = base64_payload(m, payload, plen);
    else if (ieq(cv, cl, "x-uuencode") || ieq(cv, cl, "uuencode") || ieq(cv, cl, "uue") || ieq(cv, cl, "x-uue"))
        return BAIL;
    else
        *raw = PyBytes_FromStringAndSize(payload, (Py_ssize_t)plen);
    if (!*raw)
        return -1;
    if (!PyBytes_Check(*raw)) {
        Py_CLEAR(*raw);
        return BAIL; /* (Python: "error:payload") */
    }
    if (PyBytes_GET_SIZE(*raw) > *budget) {
        PyObject *cut = PyBytes_FromStringAndSize(PyBytes_AS_STRING(*raw), *budget);
        Py_DECREF(*raw);
        if (!(*raw = cut))
            return -1;
    }
    *budget -= PyBytes_GET_SIZE(*raw);
    return 0;
}

/* The charset: get_param("charset") in lower case (a new str), or None; its "charset:" token
 * (its first 20 characters) to meta. NULL on an error. */
static PyObject *part_charset(Mail *m, const unsigned char *ct, size_t ct_len, PyObject *meta)
{
    size_t sa, sb;
    if (!ct || !get_param(ct, ct_len, "charset", &sa, &sb))
        Py_RETURN_NONE;
    m->tok.len = 0;
    if (buf_put(&m->tok, ct + sa, sb - sa) < 0)
        return NULL;
    for (size_t j = 0; j < m->tok.len; j++)
        m->tok.p[j] = (char)lower((unsigned char)m->tok.p[j]);
    PyObject *charset = PyUnicode_DecodeASCII(m->tok.p ? m->tok.p : "", (Py_ssize_t)m->tok.len, "strict");
    if (!charset || sb == sa)
        return charset;
    size_t cl2 = m->tok.len > 20 ? 20 : m->tok.len;
    char head[32];
    memcpy(head, m->tok.p, cl2);
    if (emit2(m, meta, "charset:", head, cl2) < 0)
        Py_CLEAR(charset);
    return charset;
}

/* raw's text by decode_bytes under the part's charset ("charset:fallback" to meta when it is
 * not decoded as declared): a new str, or NULL. Takes raw's reference. */
static PyObject *part_text(Mail *m, const unsigned char *ct, size_t ct_len, PyObject *raw, PyObject *meta)
{
    PyObject *charset = part_charset(m, ct, ct_len, meta);
    PyObject *pair = charset ? PyObject_CallFunctionObjArgs(m->h->decode_bytes, raw, charset, NULL) : NULL;
    Py_DECREF(raw);
    Py_XDECREF(charset);
    if (!pair)
        return NULL;
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0))) {
        Py_DECREF(pair);
        PyErr_SetString(PyExc_TypeError, "nbtext mail: decode_bytes must return (str, bool)");
        return NULL;
    }
    PyObject *text = PyTuple_GET_ITEM(pair, 0);
    Py_INCREF(text);
    int as_declared = PyObject_IsTrue(PyTuple_GET_ITEM(pair, 1));
    Py_DECREF(pair);
    if (as_declared < 0 || (!as_declared && emit2(m, meta, "charset:fallback", "", 0) < 0))
        Py_CLEAR(text);
    return text;
}

/* An HTML text's visible text (a new str, or NULL), by html_text here or html_to_text in Python
 * (wider characters, or a link's target not ASCII); its links' URL tokens to meta, its alt texts
 * to m->texts. Takes text's reference. */
static PyObject *html_part(Mail *m, PyObject *text, PyObject *meta)
{
    PyObject *found = PyList_New(0), *html = NULL;
    if (!found) {
        Py_DECREF(text);
        return NULL;
    }
    int r = BAIL;
    if (PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND) {
        r = html_text(m, PyUnicode_DATA(text), (size_t)PyUnicode_GET_LENGTH(text), found, m->h->unescape, &html);
        if (r == BAIL)
            r = PyList_SetSlice(found, 0, PyList_GET_SIZE(found), NULL) < 0 ? -1 : BAIL;
    }
    if (r == BAIL)
        html = PyObject_CallFunctionObjArgs(m->h->html_to_text, text, found, m->h->rules_off, NULL);
    Py_DECREF(text);
    if (html && !PyUnicode_Check(html)) {
        PyErr_SetString(PyExc_TypeError, "nbtext mail: html_to_text must return str");
        Py_CLEAR(html);
    }
    for (Py_ssize_t i = 0; html && i < PyList_GET_SIZE(found); i++) {
        PyObject *t = PyList_GET_ITEM(found, i);
        int url = PyUnicode_Check(t) && PyUnicode_GET_LENGTH(t) >= 4 && PyUnicode_READ_CHAR(t, 0) == 'u'
                  && PyUnicode_READ_CHAR(t, 1) == 'r' && PyUnicode_READ_CHAR(t, 2) == 'l'
                  && PyUnicode_READ_CHAR(t, 3) == ':';
        if (PyList_Append(url ? meta : m->texts, t) < 0)
            Py_CLEAR(html);
    }
    Py_DECREF(found);
    return html;
}

/* body_tokens of one part that is not multipart: its header fields fs, its payload d[pay:pay +
 * plen]; top: the message itself (no "ct:" token); *budget: max_bytes left. 0, or 2 when the
 * budget is spent ("mime:truncated": no more parts), BAIL or -1. */
static int body(Mail *m, const Fields *fs, size_t pay, size_t plen, int top, PyObject *meta, Py_ssize_t *budget)
{
    char ctype[128];
    const unsigned char *ct;
    size_t ct_len;
    const Field *cte;
    int r = part_header(m, fs, top, meta, ctype, sizeof ctype, &ct, &ct_len, &cte);
    if (r)
        return r;
    if (strncmp(ctype, "text/", 5) != 0)
        return 0; /* an attachment: its type and extension, never its bytes */
    PyObject *raw = NULL;
    if ((r = decoded_payload(m, cte, pay, plen, meta, budget, &raw)))
        return r;
    PyObject *text = part_text(m, ct, ct_len, raw, meta);
    if (text && !strcmp(ctype + 5, "html") && !(m->off & mail_off.html))
        text = html_part(m, text, meta);
    if (!text)
        return -1;
    if (!(m->off & mail_off.urls)) {
        PyObject *rest = NULL;
        r = scan_urls(m, meta, text, &rest);
        Py_DECREF(text);
        if (r)
            return r;
        text = rest;
    }
    r = PyList_Append(m->texts, text);
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

/* A part's header lines from d[line:] (the feedparser's headerRE), up to a boundary line, a
 * blank line (dropped) or another line (the payload's first, where *pay is set; n: none): the
 * fields into fs, each value less its line end. 0, BAIL or -1. */
static int part_fields(const unsigned char *d, size_t n, size_t line, const unsigned char *b, size_t bl, Fields *fs,
                       size_t *pay)
{
    Field cur = {0};
    int have = 0;
    size_t p = line;
    while (p < n) {
        size_t next = line_end(d, n, p);
        if (boundary_line(d, p, next, b, bl)) {
            *pay = p;
            break;
        }
        if (d[p] == ' ' || d[p] == '\t') {
            if (!have)
                return BAIL; /* (a first line that is a continuation) */
            cur.value_len = next - cur.value;
            p = next;
            continue;
        }
        if (next - p >= 5 && !memcmp(d + p, "From ", 5))
            return BAIL;
        size_t k = p;
        while (k < next && d[k] >= 041 && d[k] <= 0176 && d[k] != ':')
            k++;
        if (k < next && d[k] == ':') {
            if (k == p)
                return BAIL; /* (no name) */
            if (have && add_field(fs, cur) < 0)
                return -1;
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
        *pay = d[p] == '\n' || (d[p] == '\r' && p + 1 < n && d[p + 1] == '\n') ? next : p;
        break;
    }
    if (have && add_field(fs, cur) < 0)
        return -1;
    for (size_t k = 0; k < fs->n; k++) {
        Field *f = &fs->f[k];
        while (f->value_len && (d[f->value + f->value_len - 1] == '\r' || d[f->value + f->value_len - 1] == '\n'))
            f->value_len--;
    }
    return 0;
}

/* The parts of a multipart message (not nested, not multipart/digest): its body d[at:], its
 * Content-Type ct; each part's body_tokens in turn. The feedparser's lines end at "\n" here:
 * a message with a bare CR in its body is not ours. */
static int multipart(Mail *m, const unsigned char *ct, size_t ct_len, const char *ctype, size_t at, PyObject *meta,
                     Py_ssize_t *budget)
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
        if (++parts > mail_limits.parts)
            return BAIL;
        Fields fs = {0};
        size_t pay = n;
        int r = part_fields(d, n, line, b, bl, &fs, &pay);
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
            r = body(m, &fs, pay < e ? pay : e, plen, 0, meta, budget);
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



int mime_body(Mail *m, const Fields *fs, size_t body_at, PyObject *meta)
{
    const Field *ctf = field_get(m, fs, "content-type");
    const unsigned char *ct = ctf ? m->d + ctf->value : NULL;
    size_t ct_len = ctf ? ctf->value_len : 0;
    char ctype[128];
    if ((ct && !ascii_clean(ct, ct_len)) || content_type(ct, ct_len, ctype, sizeof ctype))
        return BAIL;
    Py_ssize_t budget = m->max_bytes;
    int r = !strncmp(ctype, "multipart/", 10) ? multipart(m, ct, ct_len, ctype, body_at, meta, &budget)
                                              : body(m, fs, body_at, m->n - body_at, 1, meta, &budget);
    return r == 2 ? 0 : r;
}
