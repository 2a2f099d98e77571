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
``document`` (what they yield). The names below are the package's interface.
"""
from .document import Document
from .lines import (EXTENSIONS, MAX_DUMP_LINE, LineOptions, count_line_ends, dump_lines, line_documents,
                    line_file_format, line_format, line_range_documents)
from .mail import file_documents, is_mbox, mbox_range_documents, mbox_starts
from .opening import MAX_DOCUMENT_BYTES, read_bytes
from .sources import (check_distinct, input_documents, labelled_classes, labelled_documents, labelled_size,
                      line_files_named)
from .walk import (FileRef, is_maildir, is_mh, label_directory, label_directory_files, mail_folder_documents,
                   mail_folder_files)

# (the reading machinery that nbtext.table.read and nbtext.batch.cluster share)
from .document import _guarded, _label_chars, _report  # noqa: E402, F401
from .opening import _Input, _os_error  # noqa: E402, F401

__all__ = ["Document", "EXTENSIONS", "MAX_DUMP_LINE", "LineOptions", "count_line_ends", "dump_lines",
           "line_documents", "line_file_format", "line_format", "line_range_documents", "file_documents",
           "is_mbox", "mbox_range_documents", "mbox_starts", "MAX_DOCUMENT_BYTES", "read_bytes",
           "check_distinct", "input_documents", "labelled_classes", "labelled_documents", "labelled_size", "line_files_named", "FileRef",
           "is_maildir", "is_mh", "label_directory", "label_directory_files", "mail_folder_documents",
           "mail_folder_files"]
