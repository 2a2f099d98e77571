/* nbtext's compiled kernel, the mail rules: the body, single-part or multipart one level deep
 * (nbtext.text.mail.body_tokens on the standard parser's reading, compat32's get_param). */
#ifndef NBTEXT_MAIL_MIME_H
#define NBTEXT_MAIL_MIME_H

#include "mail.h"

/* body_tokens of the message whose header fields are fs and whose body starts at body_at: its
 * MIME tokens onto meta, its texts onto m->texts. 0, BAIL or -1. */
int mime_body(Mail *m, const Fields *fs, size_t body_at, PyObject *meta);
/* Whether a token is one of the "mime" rule's (ct:, cte:, charset:, filename:); -1 on an error */
int is_mime_token(PyObject *t);

#endif
