#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "block.h"

typedef struct {
    PyObject_HEAD
    char *p;
    Py_ssize_t len;
    Py_ssize_t views;  /* (buffers lent and not released: no shrink while any is) */
} Block;

static int Block_init(Block *self, PyObject *args, PyObject *kwds)
{
    Py_ssize_t n;
    if (kwds && PyDict_Size(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Block(nbytes) takes no keywords");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "n:Block", &n))
        return -1;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "Block: a negative size");
        return -1;
    }
    if (self->p || self->views) {
        PyErr_SetString(PyExc_ValueError, "Block: initialized already");
        return -1;
    }
    /* (at least a byte: a realloc to 0 may free, and a view of no bytes still needs an address) */
    if (!(self->p = PyMem_RawMalloc(n ? (size_t)n : 1))) {
        PyErr_NoMemory();
        return -1;
    }
    self->len = n;
    return 0;
}

static void Block_dealloc(Block *self)
{
    PyMem_RawFree(self->p);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Block_shrink(Block *self, PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (!self->p || n < 0 || n > self->len) {
        PyErr_SetString(PyExc_ValueError, "Block.shrink: a size past the block's, or negative");
        return NULL;
    }
    if (self->views) {
        PyErr_SetString(PyExc_BufferError, "Block.shrink: a view of the block is held");
        return NULL;
    }
    if (n < self->len) {
        /* (a shrink: glibc cuts the chunk where it is; were the realloc to fail, the block stays) */
        char *p = PyMem_RawRealloc(self->p, n ? (size_t)n : 1);
        if (p)
            self->p = p;
        self->len = n;
    }
    Py_RETURN_NONE;
}

static int Block_getbuffer(Block *self, Py_buffer *view, int flags)
{
    if (!self->p) {
        PyErr_SetString(PyExc_BufferError, "Block: not initialized");
        view->obj = NULL;
        return -1;
    }
    if (PyBuffer_FillInfo(view, (PyObject *)self, self->p, self->len, 0, flags) < 0)
        return -1;
    self->views++;
    return 0;
}

static void Block_releasebuffer(Block *self, Py_buffer *view)
{
    (void)view;
    self->views--;
}

static PyObject *Block_nbytes(Block *self, void *closure)
{
    (void)closure;
    return PyLong_FromSsize_t(self->len);
}

static PyMethodDef Block_methods[] = {
    {"shrink", (PyCFunction)Block_shrink, METH_O, "shrink(nbytes): the block cut to its first nbytes, in place"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Block_getset[] = {
    {"nbytes", (getter)Block_nbytes, NULL, "the bytes the block holds", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyBufferProcs Block_as_buffer = {
    .bf_getbuffer = (getbufferproc)Block_getbuffer,
    .bf_releasebuffer = (releasebufferproc)Block_releasebuffer,
};

PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nbtext._kernel.Block",
    .tp_basicsize = sizeof(Block),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Block(nbytes): memory lent writable by the buffer protocol, cut in place by shrink(nbytes)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Block_init,
    .tp_dealloc = (destructor)Block_dealloc,
    .tp_methods = Block_methods,
    .tp_getset = Block_getset,
    .tp_as_buffer = &Block_as_buffer,
};
