/* nbtext's compiled kernel, the mail rules: the header block and its tokens
 * (nbtext.text.mail.parse_message's shortcut and header_tokens). */
#ifndef NBTEXT_MAIL_HEADERS_H
#define NBTEXT_MAIL_HEADERS_H

#include "mail.h"

/* The message's header block when parse_message's shortcut takes it (plain field lines ending
 * in a blank line, CRs only in CRLFs, no NUL): its fields into fs, where its body starts into
 * *body_at. 0, BAIL or -1. */
int header_block(Mail *m, Fields *fs, size_t *body_at);
/* header_tokens of the fields onto m->tokens: hdr: names, every field rule, to:count. A field
 * the rules here do not read (8-bit bytes, a NUL, RFC 2047 words) goes to the field_tokens
 * helper. 0, BAIL or -1. */
int header_tokens(Mail *m, const Fields *fs);
/* domain_tokens(domain, prefix): prefix + the host and its parents, at most `most` of them */
int domain_tokens(Mail *m, const char *prefix, const unsigned char *host, size_t n, size_t most);

/* fs with f appended (0), or -1 and MemoryError */
int add_field(Fields *fs, Field f);
/* FIELD_RE's colon at s[0:n], or 0 */
size_t field_colon(const unsigned char *s, size_t n);
/* The first field named `name` (lower case), or NULL. */
const Field *field_get(const Mail *m, const Fields *fs, const char *name);

#endif
