"""The two entry points: labelled documents to train on (label directories, ``--label LABEL
PATH``, line files, stdin) and documents to score (files, folders, mbox, Maildir, MH, line
files, stdin), each yielded lazily in a stable order."""
from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from ..errors import NbtextError
from .document import Document, _guarded, _label_chars, _report
from .lines import EXTENSIONS, LineOptions, line_documents
from .opening import _one_document, _open, _os_error
from .walk import FileRef, label_directory, label_directory_files, mail_folder_documents, mail_folder_files

TYPE_CHECKING = False  # (typing is not imported: `nbtext classify` imports this module)
if TYPE_CHECKING:
    from typing import BinaryIO

    from .document import OnError


def check_distinct(paths: list[str]) -> None:
    """Refuse labelled inputs of which one is another, or inside another (a folder listed twice,
    a label directory beside its corpus): their documents would be counted twice while the
    model's ledger lists each once, so `learn --forget` could take out only one of the two."""
    given: dict[str, str] = {}
    for path in paths:
        if path == "-":
            continue
        real = os.path.realpath(path)
        if real in given:
            raise NbtextError(f"{path}: given twice (also as {given[real]}); its documents would be "
                              "counted twice (and a model's ledger lists each once)")
        given[real] = path
    for real, path in given.items():
        up = os.path.dirname(real)
        while up != real:
            if up in given:
                raise NbtextError(f"{path}: inside {given[up]}, also given; its documents would be "
                                  "counted twice (and a model's ledger lists each once)")
            real, up = up, os.path.dirname(up)


def check_openable(paths: list[str]) -> None:
    """Refuse an input that cannot be opened (missing, or not readable): reading would report it
    only when it came to it, after the work on every input before it, and then fail the command
    all the same. A regular file is opened and a directory listed; standard input, a FIFO or a
    device is left to the reading (opening a FIFO here would take a writer's data, or wait)."""
    for path in paths:
        if path == "-":
            continue
        try:
            st = os.stat(path)
            if stat.S_ISDIR(st.st_mode):
                os.scandir(path).close()
            elif stat.S_ISREG(st.st_mode):
                os.close(_open(path)[0])
        except OSError as e:
            raise _os_error(path, e) from None


def labelled_documents(sources: list[str], labelled: list[tuple[str, str]], opts: LineOptions,
                       stdin: BinaryIO | None = None, on_error: OnError = None,
                       deferred: bool = False) -> Iterator[Document | FileRef]:
    """Documents with labels from positional sources and ``--label LABEL PATH`` pairs.
    ``on_error``: a file that cannot be read or decoded is reported there, and reading goes
    on with the next file (None: the error is raised). ``deferred``: a label directory's
    small files come as FileRefs, read by whoever counts them (FileRef.read)."""
    for src in sources:
        if src == "-" or (os.path.exists(src) and not os.path.isdir(src)):
            yield from _guarded(line_documents(src, opts, labelled=True, stdin=stdin), on_error)
        elif os.path.isdir(src):
            yield from label_directory(src, on_error, deferred)
        else:
            _report(NbtextError(f"{src}: no such file or directory"), on_error)
    for label, path in labelled:
        _label_chars(label, "--label")
        docs = _one_document("-", stdin) if path == "-" else mail_folder_documents(path, on_error)
        for doc in _guarded(docs, on_error):
            doc.label = label
            yield doc


def labelled_classes(sources: list[str], labelled: list[tuple[str, str]]) -> list[str] | None:
    """The labels labelled_documents will give documents, known before any is read: those of
    label directories and of ``--label`` paths that hold a file (as the same walks find them,
    each walked to its first file: nothing is opened), sorted; None where a line file or stdin
    is among the sources (its labels are in its lines), or where none is found or a walk meets
    an error before it (reading them then says why)."""
    if any(src == "-" or not os.path.isdir(src) for src in sources):
        return None
    found: set[str] = set()
    errors: list[NbtextError] = []
    for src in sources:
        found.update(label for _, _, label in label_directory_files(src, on_error=errors.append, first=True))
    for label, path in labelled:
        if path == "-" or next(iter(mail_folder_files(path, on_error=errors.append)), None) is not None:
            found.add(label)
    return sorted(found) if found and not errors else None


def labelled_size(sources: list[str], labelled: list[tuple[str, str]]) -> int | None:
    """The bytes labelled_documents will read from these inputs, from the files' sizes as the
    same walks find them (nothing is read), or None where that cannot be known beforehand:
    standard input, a FIFO or device, a gzip file (it is read decompressed). For a progress
    line's total: a file that cannot be read counts nothing here (reading it reports it)."""
    files: list[str] = []
    for src in sources:
        if os.path.isdir(src):
            files += [file for file, _, _ in label_directory_files(src, on_error=lambda e: None)]
        else:
            files.append(src)
    for _, path in labelled:
        files += [file for file, _ in mail_folder_files(path, on_error=lambda e: None)] if path != "-" else ["-"]
    total = 0
    for file in files:
        if file == "-" or file.endswith(".gz"):
            return None
        try:
            st = os.stat(file)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            return None
        total += st.st_size
    return total


def line_files_named(inputs: list[str]) -> list[tuple[str, str]]:
    """(path, format) of the regular files among inputs whose names say they are line files
    (.tsv, .csv, .jsonl, ...): without --lines or --input-format each is one document, which
    predict says on stderr (their lines are not what a user meant to score as one)."""
    named = []
    for path in inputs:
        name = path[:-3] if path.endswith(".gz") else path
        fmt = EXTENSIONS.get(os.path.splitext(name)[1].lower())
        if fmt and path != "-" and os.path.isfile(path):
            named.append((path, fmt))
    return named


def input_documents(inputs: list[str], lines: bool = False, input_format: str | None = None,
                    opts: LineOptions = LineOptions(), stdin: BinaryIO | None = None,
                    on_error: OnError = None) -> Iterator[Document]:
    """Documents to score. ``lines``: every line of each input is a document (FILE:LINE);
    ``input_format``: read inputs as line files of that format (jsonl: the text field).
    ``on_error``: a file that cannot be read or decoded is reported there, and reading goes
    on with the next file (None: the error is raised)."""
    for path in inputs:
        if lines or input_format:
            line_opts = LineOptions(input_format or "lines", opts.label_column, opts.text_column)
            yield from _guarded(line_documents(path, line_opts, labelled=False, stdin=stdin), on_error)
        elif path == "-":
            yield from _guarded(_one_document("-", stdin), on_error)
        else:
            yield from mail_folder_documents(path, on_error)
