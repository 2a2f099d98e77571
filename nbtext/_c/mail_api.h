/* nbtext's compiled kernel: the mail rules of nbtext.text.mail for the common message (mail.c
 * says which messages are its own; nbtext.features.kernel.mail_parts drives them).
 *
 * configure(limits, rule_bits) sets, once, the limits and mail_rules_off's bits from their one
 * definition in Python (dicts by name); limits() gives them back as C holds them. mail_parts and
 * html_text refuse to run before configure. */
#ifndef NBTEXT_MAIL_API_H
#define NBTEXT_MAIL_API_H

#include <Python.h>

/* configure(limits: dict, rule_bits: dict) -> None */
PyObject *nbtext_mail_configure(PyObject *self, PyObject *args);
/* limits() -> (limits, rule_bits): the dicts as C holds them */
PyObject *nbtext_mail_limits(PyObject *self, PyObject *unused);
/* mail_parts(data, lowercase, max_word_length, max_bytes, off_bits, helpers) -> (tokens, texts)
 * or None: not mine */
PyObject *nbtext_mail_parts(PyObject *self, PyObject *args);
/* looks_like_mail(data, max_lines, names) -> bool: text.words.looks_like_mail of bytes */
PyObject *nbtext_looks_like_mail(PyObject *self, PyObject *args);
/* html_text(text, urls_off, unescape) -> (text, found) or None (for tests) */
PyObject *nbtext_html_text(PyObject *self, PyObject *args);

#endif
