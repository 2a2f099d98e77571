/* nbtext's compiled kernel: the check that an output shares no byte with an input (rows.c,
 * sums.c). */
#ifndef NBTEXT_OVERLAP_H
#define NBTEXT_OVERLAP_H

#include <Python.h>

/* Whether any of the outputs shares a byte with an input or another output: a function that
 * checks its inputs, then reads them again while it writes, would read what it wrote, unchecked
 * (an output over the row starts: reads and writes past the buffers). Such calls are refused. */
static inline int buffers_overlap(Py_buffer **outs, size_t n_out, Py_buffer **ins, size_t n_in)
{
    for (size_t i = 0; i < n_out; i++) {
        const char *a = outs[i]->buf, *a_end = a + outs[i]->len;
        if (!outs[i]->len)
            continue;
        for (size_t j = 0; j < n_in + n_out; j++) {
            Py_buffer *b = j < n_in ? ins[j] : outs[j - n_in];
            if (b == outs[i] || !b->len)
                continue;
            const char *c = b->buf, *c_end = c + b->len;
            if (a < c_end && c < a_end)
                return 1;
        }
    }
    return 0;
}

#endif
