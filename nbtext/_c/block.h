/* nbtext's compiled kernel: Block, memory that a kernel writes a bound's room of and that is then
 * cut to what was written, in place (nbtext.nb.sparse: the outputs of settle_sums and
 * token_sums, whose entries are known only once they are written).
 *
 * Block(nbytes) holds nbytes, not zeroed, and lends them writable through the buffer protocol
 * (numpy.frombuffer views them); shrink(nbytes) cuts them to nbytes by a realloc, refused while
 * a view is held. A numpy array's own shrink (ndarray.resize) is also a realloc, but numpy 2.5
 * counts it to tracemalloc as the old and the new buffer held at once, which train's memory
 * budget is measured by, and numpy deprecates it; a Block's memory is PyMem_RawMalloc's, which
 * tracemalloc traces as it is: one buffer, the old size and then the new. */
#ifndef NBTEXT_BLOCK_H
#define NBTEXT_BLOCK_H

#include <Python.h>

extern PyTypeObject BlockType;

#endif
