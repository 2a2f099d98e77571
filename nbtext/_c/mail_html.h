/* nbtext's compiled kernel, the mail rules: HTML to text (nbtext.text.mail.html_to_text) of a
 * str of one byte a character. */
#ifndef NBTEXT_MAIL_HTML_H
#define NBTEXT_MAIL_HTML_H

#include "mail.h"

/* html_to_text(text, found, off) of the Latin-1 text s[0:n]: *text the visible text (a new
 * str), links' URL tokens and alt texts appended to found; BAIL when a link's target is not
 * ASCII once unescaped (unescape: html.unescape, for the references read in Python). */
int html_text(Mail *m, const unsigned char *s, size_t n, PyObject *found, PyObject *unescape, PyObject **text);

#endif
