"""Reading inputs: the edge where files and streams become Documents.

Labelled sources (train, eval, cv): label directories, ``--label LABEL PATH``, line files
(TSV, CSV, JSONL, fastText), stdin. Inputs to score (predict, classify): files, directories,
mbox, Maildir, MH, line files with ``lines=True``, stdin. Everything is yielded lazily, in a
stable order (names sorted), so memory stays bounded and output order is reproducible.
gzip-compressed files are read transparently, whatever their name, and decompressed as they are
read: line files line by line (a line is yielded as soon as it is read, so a pipe is answered
line by line), a single document up to MAX_DOCUMENT_BYTES.

Input files come from strangers: a bad file is a NbtextError naming it (FILE:LINE where there
is a line), never a traceback; with ``on_error`` the entry points report it and go on with the
next file. Directory walks enter no directory twice (symlink loops end).

By concern: ``opening`` (the one way a path or stdin is opened and read, gzip, the cap),
``mail`` (one message or an mbox), ``lines`` (line files, labels, dump lines), ``walk``
(folders, Maildir, MH, label directories, FileRefs), ``sources`` (the two entry points), and
``document`` (what they yield).

The names below are the package's interface; each loads its module on first use (as
nbtext.store's do), so that a caller that reads one file (`nbtext classify`: read_bytes)
imports ``opening`` and ``document`` alone, not the walks and the line formats.
"""
_LAZY = {
    "Document": "document",
    **dict.fromkeys(("EXTENSIONS", "MAX_DUMP_LINE", "LineOptions", "count_line_ends", "dump_lines",
                     "line_documents", "line_file_format", "line_format", "line_range_documents"), "lines"),
    **dict.fromkeys(("file_documents", "is_mbox", "mbox_range_documents", "mbox_starts"), "mail"),
    **dict.fromkeys(("MAX_DOCUMENT_BYTES", "read_bytes"), "opening"),
    **dict.fromkeys(("check_distinct", "check_openable", "input_documents", "labelled_classes",
                     "labelled_documents", "labelled_size", "line_files_named"), "sources"),
    **dict.fromkeys(("FileRef", "is_maildir", "is_mh", "label_directory", "label_directory_files",
                     "mail_folder_documents", "mail_folder_files"), "walk"),
    # (the reading machinery that nbtext.table.read and nbtext.batch.cluster share)
    **dict.fromkeys(("_guarded", "_label_chars", "_report"), "document"),
    **dict.fromkeys(("_Input", "_os_error"), "opening"),
}

__all__ = [name for name in _LAZY if not name.startswith("_")]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
