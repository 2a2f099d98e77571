/* nbtext's compiled kernel: the growable byte buffer that its files share (static inline: each
 * file that includes it has its own copy of these few lines). */
#ifndef NBTEXT_BUF_H
#define NBTEXT_BUF_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static inline int buf_reserve(Buf *b, size_t extra)
{
    if (extra > SIZE_MAX / 2 - b->len) {
        PyErr_NoMemory();
        return -1;
    }
    size_t need = b->len + extra;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = PyMem_Realloc(b->p, cap);
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const void *src, size_t n)
{
    if (buf_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->p + b->len, src, n);
    b->len += n;
    return 0;
}

static inline void buf_free(Buf *b)
{
    PyMem_Free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

static inline int buf_str(Buf *b, const char *s) { return buf_put(b, s, strlen(s)); }

#endif
