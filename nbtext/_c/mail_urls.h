/* nbtext's compiled kernel, the mail rules: URLs (nbtext.text.mail's URL_RE and url_tokens). */
#ifndef NBTEXT_MAIL_URLS_H
#define NBTEXT_MAIL_URLS_H

#include "mail.h"

/* url_tokens of the ASCII URL u[0:n] appended to meta. 0 or -1. */
int url_tokens(Mail *m, PyObject *meta, const unsigned char *u, size_t n);
/* URL_RE over text: each URL's tokens (the first mail_limits.urls) to meta, *out the text with
 * each URL a space. 0, BAIL (a URL that is not ASCII) or -1. */
int scan_urls(Mail *m, PyObject *meta, PyObject *text, PyObject **out);

#endif
