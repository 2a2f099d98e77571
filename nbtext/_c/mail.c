/* nbtext._kernel.mail_parts: the mail rules of nbtext.text.mail for the common message, in C
 * (mail_api.h is the interface; mail.h what the mail_*.c files share).
 *
 * mail_parts gives what nbtext.text.mail.mail_parts gives for a message (its tokens and its
 * texts), or None: "not mine", and Python reads that message. nbtext.text.mail is the
 * reference; these files take only what they reproduce exactly (tests/test_kernel.py checks
 * parity), each step in its own file:
 *
 *  - mail_headers.c: the header block when parse_message's shortcut would take it (plain field
 *    lines ending in a blank line, CRs only in CRLFs), and every header rule; a field whose
 *    value holds 8-bit bytes, a NUL or "=?" (RFC 2047) goes to the reference's field_tokens;
 *  - mail_mime.c: a single-part body or a multipart one level deep as the standard parser cuts
 *    it, the Content-Type and Content-Disposition parameters as compat32's get_param reads them
 *    (at most mail_limits.params characters, without a backslash or a "*"), the transfer
 *    decoding by the very functions email's get_payload(decode=True) calls, the charset by
 *    mail.decode_bytes (the helpers, called from here);
 *  - mail_html.c: html_to_text of text of one byte a character (wider: mail.html_to_text);
 *  - mail_urls.c: URL_RE and url_tokens (a URL with a non-ASCII character: not mine).
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

#include "mail.h"
#include "mail_headers.h"
#include "mail_mime.h"

/* -- the message ----------------------------------------------------------------------------- */

/* The body's tokens after the header's ("mime" off: without its MIME tokens); BAIL for a token
 * holding a NUL (Python replaces it: not ours to do). */
static int append_body_tokens(Mail *m, PyObject *meta)
{
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(meta); k++) {
        PyObject *t = PyList_GET_ITEM(meta, k);
        if (!PyUnicode_Check(t)) {
            PyErr_SetString(PyExc_TypeError, "nbtext mail: tokens must be str");
            return -1;
        }
        if (m->off & mail_off.mime) {
            int mime = is_mime_token(t);
            if (mime < 0)
                return -1;
            if (mime)
                continue;
        }
        if (PyUnicode_FindChar(t, 0, 0, PyUnicode_GET_LENGTH(t), 1) != -1)
            return BAIL;
        if (PyList_Append(m->tokens, t) < 0)
            return -1;
    }
    return 0;
}

/* mail_parts of one message: its header block, its body first (it can say "not mine"), then the
 * header's tokens before the body's. 0, BAIL or -1. */
static int message(Mail *m)
{
    Fields fs = {0};
    size_t body_at = 0;
    PyObject *meta = NULL;
    int ret = header_block(m, &fs, &body_at);
    if (!ret && !(meta = PyList_New(0)))
        ret = -1;
    if (!ret)
        ret = mime_body(m, &fs, body_at, meta);
    if (!ret)
        ret = header_tokens(m, &fs);
    if (!ret)
        ret = append_body_tokens(m, meta);
    Py_XDECREF(meta);
    PyMem_Free(fs.f);
    return ret;
}

/* The limits and the rule bits, set by configure from nbtext.text.mail.KERNEL_LIMITS and
 * nbtext.features.kernel.MAIL_OFF_BITS (their one definition); zero until then. */
MailLimits mail_limits;
MailOff mail_off;
static int configured;

static const char *LIMIT_NAMES[] = {"params", "parts", "urls", "url_run", "alt_run", "tag_run"};
static size_t *limit_slot(size_t i)
{
    size_t *slots[] = {&mail_limits.params, &mail_limits.parts, &mail_limits.urls, &mail_limits.url_run,
                       &mail_limits.alt_run, &mail_limits.tag_run};
    return slots[i];
}
static const char *OFF_NAMES[] = {"headers", "header-names", "received", "recipients", "decode", "html", "urls", "mime"};
static long *off_slot(size_t i)
{
    long *slots[] = {&mail_off.headers, &mail_off.names, &mail_off.received, &mail_off.recipients,
                     &mail_off.decode, &mail_off.html, &mail_off.urls, &mail_off.mime};
    return slots[i];
}
#define N_LIMITS (sizeof LIMIT_NAMES / sizeof LIMIT_NAMES[0])
#define N_OFF (sizeof OFF_NAMES / sizeof OFF_NAMES[0])

/* d[name] as a whole number in [lo, hi], or -1 with ValueError naming it */
static long long named_whole(PyObject *d, const char *name, long long lo, long long hi)
{
    PyObject *v = PyDict_GetItemString(d, name);
    long long x = v && PyLong_Check(v) ? PyLong_AsLongLong(v) : -1;
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (x < lo || x > hi) {
        PyErr_Format(PyExc_ValueError, "nbtext mail: configure needs %s, a whole number in [%lld, %lld]", name, lo, hi);
        return -1;
    }
    return x;
}

PyObject *nbtext_mail_configure(PyObject *self, PyObject *args)
{
    PyObject *limits, *bits;
    if (!PyArg_ParseTuple(args, "O!O!:configure", &PyDict_Type, &limits, &PyDict_Type, &bits))
        return NULL;
    size_t got[N_LIMITS];
    long off[N_OFF], seen = 0;
    for (size_t i = 0; i < N_LIMITS; i++) {
        long long x = named_whole(limits, LIMIT_NAMES[i], 1, 1 << 30);
        if (x < 0)
            return NULL;
        got[i] = (size_t)x;
    }
    for (size_t i = 0; i < N_OFF; i++) {
        long long x = named_whole(bits, OFF_NAMES[i], 1, 1L << 30);
        if (x < 0)
            return NULL;
        if ((x & (x - 1)) || (seen & x)) {
            PyErr_Format(PyExc_ValueError, "nbtext mail: the bit of %s must be a bit of its own", OFF_NAMES[i]);
            return NULL;
        }
        seen |= (long)x;
        off[i] = (long)x;
    }
    for (size_t i = 0; i < N_LIMITS; i++)
        *limit_slot(i) = got[i];
    for (size_t i = 0; i < N_OFF; i++)
        *off_slot(i) = off[i];
    configured = 1;
    Py_RETURN_NONE;
}

PyObject *nbtext_mail_limits(PyObject *self, PyObject *unused)
{
    PyObject *limits = PyDict_New(), *bits = PyDict_New();
    int bad = !limits || !bits;
    for (size_t i = 0; !bad && i < N_LIMITS; i++) {
        PyObject *v = PyLong_FromSize_t(*limit_slot(i));
        bad = !v || PyDict_SetItemString(limits, LIMIT_NAMES[i], v) < 0;
        Py_XDECREF(v);
    }
    for (size_t i = 0; !bad && i < N_OFF; i++) {
        PyObject *v = PyLong_FromLong(*off_slot(i));
        bad = !v || PyDict_SetItemString(bits, OFF_NAMES[i], v) < 0;
        Py_XDECREF(v);
    }
    if (bad) {
        Py_XDECREF(limits);
        Py_XDECREF(bits);
        return NULL;
    }
    return Py_BuildValue("(NN)", limits, bits);
}

int mail_configured(void)
{
    if (!configured)
        PyErr_SetString(PyExc_RuntimeError, "nbtext mail: configure() first (nbtext.features.kernel does)");
    return configured;
}

static const char *HELPER_NAMES[] = {"decode_bytes", "html_to_text", "a2b_qp", "decode_b", "rules_off", "unescape",
                                     "field_tokens"};
#define N_HELPERS (sizeof HELPER_NAMES / sizeof HELPER_NAMES[0])

/* The helpers' members, in HELPER_NAMES's order */
static PyObject **helper_slot(MailHelpers *h, size_t i)
{
    PyObject **slots[] = {&h->decode_bytes, &h->html_to_text, &h->a2b_qp, &h->decode_b, &h->rules_off,
                          &h->unescape, &h->field_tokens};
    return slots[i];
}

/* The helpers' attributes by name, new references (0), or -1 naming the one missing */
static int helpers_of(PyObject *o, MailHelpers *h)
{
    for (size_t i = 0; i < N_HELPERS; i++)
        if (!(*helper_slot(h, i) = PyObject_GetAttrString(o, HELPER_NAMES[i])))
            return -1;
    return 0;
}

static void helpers_free(MailHelpers *h)
{
    for (size_t i = 0; i < N_HELPERS; i++)
        Py_CLEAR(*helper_slot(h, i));
}

/* mail_parts(data, lowercase, max_word_length, max_bytes, off_bits, helpers) -> (tokens, texts)
 * or None; helpers: an object with the attributes of nbtext.features.kernel.MailHelpers */
PyObject *nbtext_mail_parts(PyObject *self, PyObject *args)
{
    Py_buffer view;
    int lowercase;
    Py_ssize_t max_word, max_bytes;
    long off;
    PyObject *helpers;
    if (!mail_configured()
        || !PyArg_ParseTuple(args, "y*pnnlO:mail_parts", &view, &lowercase, &max_word, &max_bytes, &off, &helpers))
        return NULL;
    MailHelpers h = {0};
    if (max_word < 1 || max_bytes < 1) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "nbtext mail: bad settings");
        return NULL;
    }
    Mail m = {view.buf, (size_t)view.len, lowercase, max_word, max_bytes, off, PyList_New(0), PyList_New(0),
              {0}, {0}, &h};
    PyObject *result = NULL;
    if (m.tokens && m.texts && helpers_of(helpers, &h) == 0) {
        int r = (off & mail_off.decode) ? BAIL : message(&m);
        if (r == 0)
            result = PyTuple_Pack(2, m.tokens, m.texts);
        else if (r == BAIL) {
            result = Py_None;
            Py_INCREF(result);
        }
    }
    helpers_free(&h);
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
