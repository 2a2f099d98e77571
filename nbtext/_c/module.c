/* nbtext._kernel: the module's table and its init, and nothing else. One file per concern, each
 * behind a header that states its interface:
 *
 *   tokenize.h   the Counter: words, n-grams, keys and counting a chunk of documents
 *   keyindex.h   KeyIndex, the vocabulary's key -> id index
 *   frontcode.h  the model file's vocabulary sorted by bytes, front-coded and decoded
 *   rows.h       sparse rows: moved onto ids, a fold's own columns, rows times W, group sums
 *   sums.h       sums held by token: appended sums folded in (nb.sparse.TokenSums.settle)
 *   block.h      Block, memory a kernel writes a bound's room of, then cut in place to what it wrote
 *   score.h      one counted message's sums over a model's cached token weights (nbtext serve)
 *   layer.h      the decision layer's loops: a pass of its SVMs' fit, its scores beside NB's
 *   mail_api.h   the mail rules of the common message (mail.c; mail.h for what mail_*.c share)
 *   hash.h, bits.h, radix.h, buf.h, overlap.h   what several of them use
 *
 * The compiled half of nbtext.features.kernel (read that module's docstring first); the
 * pure-Python path is the reference, and tests/test_kernel.py holds the two to the same tokens,
 * keys and rows. The input is a stranger's mail or model file: every read and write is of a
 * buffer whose length is checked first (tests/test_kernel.py fuzzes the build under
 * AddressSanitizer). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "block.h"
#include "frontcode.h"
#include "keyindex.h"
#include "layer.h"
#include "mail_api.h"
#include "rows.h"
#include "score.h"
#include "sums.h"
#include "tokenize.h"

/* The interface version, from its one home in Python (nbtext.features.implementation.KERNEL_ABI,
 * which setup.py passes): the module says it as ABI, and nbtext runs no kernel of another. */
#ifndef NBTEXT_KERNEL_ABI
#error "NBTEXT_KERNEL_ABI is not defined: build the kernel with setup.py, which passes KERNEL_ABI"
#endif

static PyMethodDef kernel_methods[] = {
    {"keys", kernel_keys, METH_O, "keys(blob) -> uint64 keys (bytes) of NUL-terminated tokens"},
    {"front_code", kernel_front_code, METH_VARARGS,
     "front_code(blob, block) -> (front-coded bytes, int64 block heads, int64 order) (bytes each)"},
    {"configure", nbtext_mail_configure, METH_VARARGS,
     "configure(limits, rule_bits): the mail rules' limits and mail_rules_off's bits, by name (dicts)"},
    {"limits", nbtext_mail_limits, METH_NOARGS, "limits() -> (limits, rule_bits): as the mail rules hold them"},
    {"mail_parts", nbtext_mail_parts, METH_VARARGS,
     "mail_parts(data, lowercase, max_word_length, max_bytes, off_bits, helpers) -> (tokens, texts) or None"},
    {"looks_like_mail", nbtext_looks_like_mail, METH_VARARGS, "looks_like_mail(data, max_lines, names) -> bool, for bytes"},
    {"html_text", nbtext_html_text, METH_VARARGS,
     "html_text(text, urls_off, unescape) -> (text, found) or None: html_to_text of ASCII text (tests)"},
    {"rows_dot", kernel_rows_dot, METH_VARARGS,
     "rows_dot(data, indices, indptr, W, k, out) -> bool: Rows @ W for float64 rows and W"},
    {"group_sums", kernel_group_sums, METH_VARARGS,
     "group_sums(data, indices, indptr, group, k, out, df) -> bool: Rows.group_sums's token-major sums"},
    {"token_sums", kernel_token_sums, METH_VARARGS,
     "token_sums(data, indices, indptr, group, k, out_indptr, out_classes, out_values, df) -> int: "
     "nb.sparse.group_sums's sums held by token, the entries written, or -1"},
    {"own_columns", kernel_own_columns, METH_VARARGS,
     "own_columns(data, indices, indptr, rows, width, out_data, out_indices, out_indptr) -> int64 columns (bytes): Rows.own_columns"},
    {"move_rows", kernel_move_rows, METH_VARARGS,
     "move_rows(data, indices, indptr, mapping, n_cols, out_data, out_indices[, out_indptr]) -> bool: Rows.moved onto distinct columns"},
    {"settle_sums", kernel_settle_sums, METH_VARARGS,
     "settle_sums(indptr, classes, values, parts, k, out_indptr, out_classes, out_values[, folded]) -> int: "
     "TokenSums.settle's entries written, or -1"},
    {"sums_product", kernel_sums_product, METH_VARARGS,
     "sums_product(data, indices, indptr, s_indptr, s_classes, s_values, out) -> bool: nb.sparse.product"},
    {"front_decode", kernel_front_decode, METH_VARARGS,
     "front_decode(fc, block) -> bytes: the NUL-terminated tokens of a front-coded vocabulary"},
    {"pick_tokens", kernel_pick_tokens, METH_VARARGS,
     "pick_tokens(blob, ids) -> bytes: the NUL-terminated tokens at the increasing positions ids (Vocabulary.subset)"},
    {"first_unordered", kernel_first_unordered, METH_O,
     "first_unordered(blob) -> int: the first NUL-terminated token not after the one before it, -1 when none"},
    {"score_counted", kernel_score_counted, METH_VARARGS,
     "score_counted(index, blob, keys, columns, counts, vocab, starts, lengths, weights, mode, jll, fill"
     "[, layer_rows, layer_fill, layer_sums]) -> (unknown, known): a counted message's sums over cached token "
     "weights, in fastscore's order, and its decision layer's"},
    {"svm_pass", kernel_svm_pass, METH_VARARGS,
     "svm_pass(order, data, indices, indptr, R, inv, Y, Qii, diag, W, b, alpha, hi_old, hi, lo, kept) -> int: "
     "a pass of nb.layer.solve_squared_hinge, the documents kept (-1: an index out of range)"},
    {"layer_scores", kernel_layer_scores, METH_VARARGS,
     "layer_scores(data, x, indices, indptr, s_indptr, classes, D, rest, tokens, rw, nb, sq, sums, dots) -> bool: "
     "nb.layer.Layer.joint's products in one pass"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT, "nbtext._kernel", "nbtext's compiled tokenizing and counting kernel", -1,
    kernel_methods,
};

PyMODINIT_FUNC PyInit__kernel(void)
{
    if (PyType_Ready(&CounterType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&kernel_module);
    if (!m)
        return NULL;
    Py_INCREF(&CounterType);
    if (PyModule_AddObject(m, "Counter", (PyObject *)&CounterType) < 0) {
        Py_DECREF(&CounterType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyType_Ready(&KeyIndexType) < 0 || PyModule_AddType(m, &KeyIndexType) < 0
        || PyType_Ready(&BlockType) < 0 || PyModule_AddType(m, &BlockType) < 0
        || PyModule_AddIntConstant(m, "ABI", NBTEXT_KERNEL_ABI) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
