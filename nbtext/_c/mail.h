/* nbtext's compiled kernel, the mail rules (mail.c and mail_*.c): what their files share. A Mail
 * is one message being read; the rules' limits and the bits of mail_rules_off are set once by
 * configure() (mail.c) from their one definition in Python; helpers are the Python functions the
 * rules call where the reference calls a library. */
#ifndef NBTEXT_MAIL_H
#define NBTEXT_MAIL_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"

#define BAIL 1 /* (a return value: not mine; -1 is a Python error) */

/* nbtext.text.mail.KERNEL_LIMITS: the limits the rules in C read */
typedef struct {
    size_t params;  /* a Content-Type or -Disposition value longer: not mine (MAX_PARAM_HEADER) */
    size_t parts;   /* more parts: not mine (MAX_PARTS) */
    size_t urls;    /* the URLs of a text that give tokens (MAX_URLS) */
    size_t url_run; /* a URL's or a link's characters after its start (URL_RE, HREF_RE) */
    size_t alt_run; /* an alt text's characters (ALT_RE) */
    size_t tag_run; /* a tag's characters between "<" and ">" (TAG_MAX) */
} MailLimits;

/* nbtext.features.kernel.MAIL_OFF_BITS: the bit of each mail_rules_off name */
typedef struct {
    long headers, names, received, recipients, decode, html, urls, mime;
} MailOff;

extern MailLimits mail_limits;
extern MailOff mail_off;

/* RuntimeError unless configure() has run: 1 when it has, else 0 */
int mail_configured(void);

/* The Python functions the rules call (the attributes of nbtext.features.kernel.MailHelpers). */
typedef struct {
    PyObject *decode_bytes, *html_to_text, *a2b_qp, *decode_b, *rules_off, *unescape, *field_tokens;
} MailHelpers;

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
    const MailHelpers *h;
} Mail;

/* A token made of the bytes in m->tok (ASCII) appended to list. */
static inline int emit(Mail *m, PyObject *list)
{
    PyObject *s = PyUnicode_DecodeASCII(m->tok.p ? m->tok.p : "", (Py_ssize_t)m->tok.len, "strict");
    if (!s)
        return -1;
    int r = PyList_Append(list, s);
    Py_DECREF(s);
    return r;
}

static inline int emit2(Mail *m, PyObject *list, const char *a, const char *b, size_t bn)
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
static inline void strip(const unsigned char *s, size_t *a, size_t *b)
{
    while (*a < *b && py_space(s[*a]))
        (*a)++;
    while (*b > *a && py_space(s[*b - 1]))
        (*b)--;
}

static inline int ieq(const unsigned char *s, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    if (n != k)
        return 0;
    for (size_t i = 0; i < k; i++)
        if (lower(s[i]) != (unsigned char)lit[i])
            return 0;
    return 1;
}

/* -- the header block ------------------------------------------------------------------------ */

typedef struct {
    size_t name, name_len, value, value_len; /* offsets in the message */
} Field;

typedef struct {
    Field *f;
    size_t n, cap;
} Fields;

static inline int ascii_clean(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 0x80 || s[i] == 0)
            return 0;
    return 1;
}

#endif
