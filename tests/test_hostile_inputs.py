"""Input files from strangers (nbtext.read): a pipe answered line by line, bounded memory for
gzip bombs and endless streams, one bad file not ending a batch, mbox From_ lines that are
really From_ lines, symlink loops, labels that would break output rows, unclosed CSV quotes,
JSON nested too deeply or holding lone surrogates. Each test failed before the fix."""
import gzip
import io
import itertools
import os
import select
import subprocess
import sys
import threading

import pytest

from nbtext import read
from nbtext.errors import NbtextError
from nbtext.read import (Document, LineOptions, input_documents, label_directory, labelled_documents,
                         mail_folder_documents)


def nb(*args, input=None, timeout=120):
    r = subprocess.run([sys.executable, "-m", "nbtext", *map(str, args)], input=input,
                       capture_output=True, timeout=timeout)
    assert b"Traceback" not in r.stderr, r.stderr.decode()
    return r


def error_of(docs) -> str:
    with pytest.raises(NbtextError) as e:
        list(docs)
    return str(e.value)


# -- 1. line files are read as their lines arrive -------------------------------------

def next_within(docs, seconds: float):
    """next(docs) in a thread: the document, or None when it did not come within ``seconds``."""
    got = []
    t = threading.Thread(target=lambda: got.append(next(docs)), daemon=True)
    t.start()
    t.join(seconds)
    return got[0] if got else None


@pytest.mark.parametrize("how", ["lines", "jsonl", "gzip"])
def test_a_line_on_a_pipe_is_a_document_before_the_pipe_ends(how):
    r, w = os.pipe()
    with os.fdopen(r, "rb") as stdin, os.fdopen(w, "wb") as writer:
        if how == "jsonl":
            docs = input_documents(["-"], input_format="jsonl", stdin=stdin)
            writer.write(b'\xef\xbb\xbf{"text": "free money"}\r\n')
        else:
            docs = input_documents(["-"], lines=True, stdin=stdin)
            line = b"\xef\xbb\xbffree money\r\n"
            if how == "gzip":  # a gzip stream flushed after its first line, not ended
                z = gzip.zlib.compressobj(6, gzip.zlib.DEFLATED, 31)
                line = z.compress(line) + z.flush(gzip.zlib.Z_SYNC_FLUSH)
            writer.write(line)
        writer.flush()
        first = next_within(docs, 5)
    # the pipe is closed now: a reader still waiting for its end gets it
    assert first == Document("-:1", "free money")


def test_predict_lines_on_stdin_answers_each_line_at_once(sample_model):
    p = subprocess.Popen([sys.executable, "-m", "nbtext", "predict", "-m", str(sample_model), "--lines", "-"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        p.stdin.write(b"free money\n")
        p.stdin.flush()
        ready, _, _ = select.select([p.stdout], [], [], 6)
        row = p.stdout.readline() if ready else b""
    finally:
        out, err = p.communicate(timeout=60)  # (closes stdin: the end of the input)
    assert row.startswith(b"-:1\t") and out == b"" and err == b"" and p.returncode == 0


# -- 2. bounded decompression; a cap on one document ----------------------------------

def zeros_gzip(path, megabytes: int, line: bytes = b""):
    """A gzip of about ``megabytes`` MB of zeros (each MiB ending with ``line``), written in chunks."""
    chunk = bytes((1 << 20) - len(line)) + line
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as f:
        for _ in range(megabytes):
            f.write(chunk)


# VmHWM, the peak resident size of this process's memory since exec (ru_maxrss of a process
# started from a big one counts the big one's size at the fork).
PEAK = """
import sys
from nbtext.read import input_documents
sizes = [len(d.data) for d in input_documents([sys.argv[1]], lines=sys.argv[2] == "lines")]
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(len(sizes), max(sizes), peak // 1024)
"""


def peak_reading(path, how: str) -> tuple[int, int, int]:
    """(documents, longest, peak MB of the process) of reading path in a fresh process."""
    r = subprocess.run([sys.executable, "-c", PEAK, str(path), how], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    return tuple(int(x) for x in r.stdout.split())


@pytest.mark.slow
def test_a_gzip_bomb_is_read_up_to_the_document_cap(tmp_path):
    bomb = tmp_path / "bomb.eml"
    zeros_gzip(bomb, 200)  # 200 MB of zeros in 0.9 MB; read whole, it took 400 MB
    n, longest, peak = peak_reading(bomb, "document")
    assert peak < 150, f"{peak} MB to read one document"
    assert (n, longest) == (1, read.MAX_DOCUMENT_BYTES)


def test_a_small_gzip_in_a_label_directory_is_read_a_message_at_a_time(tmp_path):
    """train hands a label directory's small files to its workers unread (read.FileRef), each
    read whole there; a small gzip can hold a huge mbox (264 KB held 45 MB of messages and took
    train to 1.6 GB), so it is read here, streamed, as before; a plain small file is deferred."""
    (tmp_path / "spam").mkdir()
    message = b"From a@b Mon Jan  1 00:00:00 2001\nSubject: x\n\n" + b"word " * 2000 + b"\n\n"
    with gzip.open(tmp_path / "spam" / "a.gz", "wb") as f:
        f.write(message * 3)
    (tmp_path / "spam" / "b").write_bytes(message)
    items = list(label_directory(str(tmp_path), deferred=True))
    assert [type(i).__name__ for i in items] == ["Document"] * 3 + ["FileRef"]
    assert [d.id for d in items[:3]] == [f"{tmp_path}/spam/a.gz:{n}" for n in (1, 6, 11)]
    assert items[3].path == f"{tmp_path}/spam/b" and items[3].label == "spam" and items[3].size == len(message)
    assert [d.id for d in label_directory(str(tmp_path))] == [d.id for d in items[:3]] + [items[3].path]
    # past FileRef.LARGEST a file is read here too (its size from the opened file's fstat)
    (tmp_path / "spam" / "c").write_bytes(message[:60] + b"x" * read.FileRef.LARGEST)
    assert [type(i).__name__ for i in label_directory(str(tmp_path), deferred=True)][-2:] == ["FileRef", "Document"]


@pytest.mark.slow
def test_a_gzip_line_file_is_decompressed_as_it_is_read(tmp_path):
    lines = tmp_path / "lines.gz"
    zeros_gzip(lines, 160, b"\n")  # 160 lines of 1 MiB
    n, longest, peak = peak_reading(lines, "lines")
    assert peak < 100, f"{peak} MB to read lines of 1 MiB"
    assert (n, longest) == (160, (1 << 20) - 1)


class Zeros(io.RawIOBase):
    """A stream of ``n`` zero bytes that counts what was read of it."""

    def __init__(self, n):
        self.left = self.n = n

    def readable(self):
        return True

    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k


def test_a_single_document_is_cut_at_the_cap_and_no_more_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(read, "MAX_DOCUMENT_BYTES", 1000)
    stream = Zeros(20 << 20)
    assert list(input_documents(["-"], stdin=io.BufferedReader(stream))) == [Document("-", bytes(1000))]
    assert stream.n - stream.left < 1 << 20  # not the 20 MiB
    plain, packed, box = tmp_path / "plain.eml", tmp_path / "packed.eml", tmp_path / "box"
    plain.write_bytes(b"x" * 5000)
    packed.write_bytes(gzip.compress(b"y" * 5000))
    box.write_bytes(b"From a Sat Jan  1 00:00:00 2002\n" + b"z" * 3000 + b"\n\n"
                    b"From b Sat Jan  1 00:00:00 2002\nshort\n")
    assert list(input_documents([str(plain), str(packed), str(box)])) == [
        Document(str(plain), b"x" * 1000), Document(str(packed), b"y" * 1000),
        Document(f"{box}:1", b"z" * 1000), Document(f"{box}:4", b"short\n")]
    lines = tmp_path / "long.txt"
    lines.write_bytes(b"ok\n" + b"w" * 1001 + b"\nnever read\n")
    assert error_of(input_documents([str(lines)], lines=True)) == f"{lines}:2: line longer than 1000 bytes"


# -- 3. one bad file does not end a batch (on_error) ----------------------------------

def test_a_file_that_cannot_be_read_is_reported_and_reading_goes_on(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "a").write_bytes(b"first")
    (d / "b").write_bytes(b"\x1f\x8bnot gzip at all")  # gzip's magic bytes, then no gzip
    (d / "c").write_bytes(b"last")
    broken = f"{d}/b: broken gzip data (Unknown compression method)"
    errors = []
    docs = list(input_documents([str(d), str(tmp_path / "nope"), str(d / "c")], on_error=errors.append))
    assert docs == [Document(f"{d}/a", b"first"), Document(f"{d}/c", b"last"), Document(f"{d}/c", b"last")]
    assert [str(e) for e in errors] == [broken, f"{tmp_path}/nope: no such file or directory"]
    errors = []
    assert [doc.id for doc in mail_folder_documents(str(d), on_error=errors.append)] == [f"{d}/a", f"{d}/c"]
    assert [str(e) for e in errors] == [broken]
    assert error_of(input_documents([str(d)])) == broken  # without on_error: raised, as before

    corpus = tmp_path / "corpus"
    for label, name, data in (("ham", "1", b"hello"), ("ham", "2", b"\x1f\x8bxx"), ("spam", "3", b"buy")):
        (corpus / label).mkdir(parents=True, exist_ok=True)
        (corpus / label / name).write_bytes(data)
    bad_tsv, good_tsv = tmp_path / "bad.tsv", tmp_path / "good.tsv"
    bad_tsv.write_bytes(b"spam\tkept\nno tab on this line\nham\tnot read\n")
    good_tsv.write_bytes(b"ham\tfine\n")
    errors = []
    docs = list(labelled_documents([str(corpus), str(bad_tsv), str(good_tsv)], [("spam", str(d))],
                                   LineOptions(), on_error=errors.append))
    assert [(doc.id, doc.label) for doc in docs] == [
        (f"{corpus}/ham/1", "ham"), (f"{corpus}/spam/3", "spam"), (f"{bad_tsv}:1", "spam"),
        (f"{good_tsv}:1", "ham"), (f"{d}/a", "spam"), (f"{d}/c", "spam")]
    assert [str(e) for e in errors] == [
        f"{corpus}/ham/2: broken gzip data (Compressed file ended before the end-of-stream marker "
        "was reached)",
        f"{bad_tsv}:2: expected LABEL<TAB>TEXT, found no tab", broken]
    errors = []
    assert [doc.id for doc in label_directory(str(corpus), on_error=errors.append)] == [
        f"{corpus}/ham/1", f"{corpus}/spam/3"]
    assert len(errors) == 1


# -- 4, 5. mbox: only a real From_ line starts a message; CRLF mboxes ------------------

def test_from_after_a_blank_line_in_a_body_does_not_split_the_message(tmp_path):
    msg = b"From a@b.example Fri Jul  8 12:08:34 2011\nSubject: offer\n\nHello\n\nFrom here on, all is free\n"
    one = tmp_path / "one.eml"
    one.write_bytes(msg)
    assert list(input_documents([str(one)])) == [Document(str(one), msg)]
    assert not read.is_mbox(msg)
    # real From_ lines, with a zone after the year, or before it and no seconds, still split
    box = tmp_path / "box"
    box.write_bytes(msg + b"\nFrom MAILER-DAEMON Fri Jul  8 12:08:34 2011 +0000\nSubject: two\n\nx\n"
                    b"\nFrom b@c Tue Jul 23 19:39 PDT 2002\nSubject: three\n\ny\n")
    assert list(input_documents([str(box)])) == [
        Document(f"{box}:1", msg[msg.index(b"\n") + 1:] + b"\n"),
        Document(f"{box}:8", b"Subject: two\n\nx\n\n"),
        Document(f"{box}:13", b"Subject: three\n\ny\n")]


def test_an_mbox_with_crlf_line_ends_is_split(tmp_path):
    box = tmp_path / "crlf.mbox"
    box.write_bytes(b"From a Sat Jan  1 00:00:00 2002\r\nSubject: one\r\n\r\n>From here on\r\n\r\n"
                    b"From b Sat Jan  1 00:00:00 2002\r\nSubject: two\r\n\r\nbody\r\n")
    assert list(input_documents([str(box)])) == [
        Document(f"{box}:1", b"Subject: one\r\n\r\nFrom here on\r\n\r\n"),
        Document(f"{box}:6", b"Subject: two\r\n\r\nbody\r\n")]


# -- 6. directory symlink loops -------------------------------------------------------

def test_directory_symlink_loops_are_walked_once(tmp_path):
    corpus = tmp_path / "L"
    for label in ("ham", "spam"):
        (corpus / label).mkdir(parents=True)
        (corpus / label / "1").write_bytes(label.encode())
    os.symlink("..", corpus / "ham" / "up")  # read 902 documents from these 2 files
    assert [(d.id, d.label) for d in label_directory(str(corpus))] == [
        (f"{corpus}/ham/1", "ham"), (f"{corpus}/spam/1", "spam")]
    top = tmp_path / "base" / "L2"
    (top / "a").mkdir(parents=True)
    (top / "f").write_bytes(b"f")
    os.symlink("../..", top / "a" / "b")  # exponential: past 60 s
    os.symlink("f", top / "link")  # a link to a file is read
    assert list(itertools.islice(mail_folder_documents(str(top)), 10)) == [
        Document(f"{top}/f", b"f"), Document(f"{top}/link", b"f")]


def test_the_walk_takes_files_and_directories_by_their_entries_and_sizes_from_the_open_file(tmp_path):
    """The walk reads kinds from the directory's entries (os.scandir: no stat a file) and a
    deferred file's size from the file it opened: regular files and links to them are read,
    a link to a directory is walked, a broken link, a FIFO and hidden names are passed by; a
    gzip file and one past FileRef.LARGEST are read here, not deferred; deferred or not, the
    same documents in the same order."""
    ham = tmp_path / "L" / "ham"
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x").write_bytes(b"in a linked directory")
    ham.mkdir(parents=True)
    (ham / "a").write_bytes(b"plain")
    os.symlink(ham / "a", ham / "b")
    os.symlink(tmp_path / "elsewhere", ham / "c")
    os.symlink(tmp_path / "nowhere", ham / "d")
    os.mkfifo(ham / "e")
    (ham / ".hidden").write_bytes(b"hidden")
    (ham / "f.gz").write_bytes(gzip.compress(b"zipped"))
    (ham / "g").write_bytes(b"x" * (read.FileRef.LARGEST + 1))
    want = [("a", b"plain"), ("b", b"plain"), ("c/x", b"in a linked directory"), ("f.gz", b"zipped"),
            ("g", b"x" * (read.FileRef.LARGEST + 1))]
    plain = list(label_directory(str(tmp_path / "L")))
    assert [(d.id[len(str(ham)) + 1:], d.data) for d in plain] == want
    deferred = list(label_directory(str(tmp_path / "L"), deferred=True))
    assert [type(d).__name__ for d in deferred] == ["FileRef", "FileRef", "FileRef", "Document", "Document"]
    assert [d.size for d in deferred[:3]] == [5, 5, 21]
    assert [(d.path if hasattr(d, "path") else d.id)[len(str(ham)) + 1:] for d in deferred] == [w for w, _ in want]


# -- 7. labels ------------------------------------------------------------------------

BAD_LABELS = {
    '{"label": null, "text": "t"}': "bad label None: a label is a string or a number",
    '{"label": ["a"], "text": "t"}': "bad label ['a']: a label is a string or a number",
    '{"label": {"a": 1}, "text": "t"}': "bad label {'a': 1}: a label is a string or a number",
    '{"label": true, "text": "t"}': "bad label True: a label is a string or a number",
    '{"label": NaN, "text": "t"}': "bad label nan: a label is a string or a number",
    '{"label": "sp\\tam", "text": "t"}': "bad label 'sp\\tam': a label cannot hold control characters "
                                         "(tab, newline, NUL, ...) or invalid Unicode",
    '{"label": "sp\\nam", "text": "t"}': "bad label 'sp\\nam': a label cannot hold control characters "
                                         "(tab, newline, NUL, ...) or invalid Unicode",
    '{"label": "spam\\u0000", "text": "t"}': "bad label 'spam\\x00': a label cannot hold control "
                                             "characters (tab, newline, NUL, ...) or invalid Unicode",
}


@pytest.mark.parametrize("line", sorted(BAD_LABELS))
def test_a_label_that_is_no_class_name_is_refused(tmp_path, line):
    p = tmp_path / "l.jsonl"
    p.write_text('{"label": 1, "text": "kept"}\n' + line + "\n")
    docs = labelled_documents([str(p)], [], LineOptions())
    assert next(docs) == Document(f"{p}:1", "kept", "1")  # a number is a label, as written
    assert error_of(docs) == f"{p}:2: {BAD_LABELS[line]}"


@pytest.mark.parametrize("name,content,label", [
    ("l.tsv", b"ham\tfine\nsp\x00am\ttext\n", "sp\x00am"),
    ("l.csv", b"label,text\nham,fine\n\"sp\x1bam\",text\n", "sp\x1bam"),
    ("l.ft", b"__label__ham fine\n__label__sp\x7fam text\n", "sp\x7fam")])
def test_control_characters_in_labels_of_other_line_formats_are_refused(tmp_path, name, content, label):
    p = tmp_path / name
    p.write_bytes(content)
    line = 3 if name == "l.csv" else 2
    assert error_of(labelled_documents([str(p)], [], LineOptions())) == (
        f"{p}:{line}: bad label {label!r}: a label cannot hold control characters (tab, newline, NUL, ...)"
        f" or invalid Unicode")
    corpus = tmp_path / "corpus"
    (corpus / "sp\tam").mkdir(parents=True)
    (corpus / "sp\tam" / "1").write_bytes(b"x")
    assert error_of(label_directory(str(corpus))).startswith(f"{corpus}/sp\tam: bad label 'sp\\tam': ")
    p.write_bytes(content.replace(label.encode(), b" \t "))  # and an empty label stays refused
    assert error_of(labelled_documents([str(p)], [], LineOptions())) == f"{p}:{line}: empty label"


# -- 8. an unclosed CSV quote ----------------------------------------------------------

def test_an_unclosed_csv_quote_is_refused_where_it_opens(tmp_path):
    p = tmp_path / "q.csv"
    p.write_text('label,text\nham,"two\nlines"\nspam,"buy now\nham,hello\nham,bye\n')
    docs = labelled_documents([str(p)], [], LineOptions())
    assert next(docs) == Document(f"{p}:3", "two\nlines", "ham")
    assert error_of(docs) == f"{p}:4: bad CSV (the quote opened on this line is never closed)"
    # past the csv module's field limit, the record's first line is named
    p.write_text('label,text\nspam,"buy now\n' + "ham,hello\n" * 20000)
    assert error_of(labelled_documents([str(p)], [], LineOptions())) == (
        f"{p}:2: bad CSV (field larger than field limit (131072), in the record from line 2 to line "
        f"13109: is a quote left open?)")


# -- 9. JSON nested too deeply; lone surrogates -----------------------------------------

def test_json_nested_too_deeply_is_refused_and_lone_surrogates_are_replaced(tmp_path):
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"label": "a", "text": "ok"}\n' + "[" * 100000 + "\n")
    assert error_of(labelled_documents([str(deep)], [], LineOptions())) == \
        f"{deep}:2: not valid JSON (nested too deeply)"
    lone = tmp_path / "lone.jsonl"
    lone.write_text('{"label": "a", "text": "\\ud800 free"}\n{"label": "b", "text": "pair \\ud83d\\ude00"}\n')
    assert list(labelled_documents([str(lone)], [], LineOptions())) == [
        Document(f"{lone}:1", "\ufffd free", "a"), Document(f"{lone}:2", "pair \U0001f600", "b")]
    r = nb("train", lone, "-o", tmp_path / "m.nbm", "-q")
    assert r.returncode == 0 and r.stderr == b""


def test_a_str_with_a_lone_surrogate_is_tokenized():
    """A library caller's str may hold any lone surrogate, not only surrogateescape's
    \\udc80-\\udcff: '\\udd00' in a message raised UnicodeEncodeError (found by Hypothesis)."""
    from nbtext.features.counting import count_documents
    from nbtext.settings import TokenizerSettings
    from nbtext.text.tokenizer import Tokenizer

    msg = "From: a@example.com\nTo: b@example.com\nSubject: hello \udd00\n\nbody \udd00 words \udcff\n"
    tokens = Tokenizer(TokenizerSettings())(msg)
    assert "body" in tokens and "words" in tokens
    batch = count_documents([msg, "\udd00", "plain \ud800 text"], TokenizerSettings())
    assert batch.rows.shape[0] == 3


def test_an_mbox_separator_is_searched_in_windows_of_bounded_size():
    """The search for where the next message starts doubled its window until it found one: an
    mbox message of gigabytes was read whole into memory (and scanned again each time). It
    reads windows of one size, found across their edges."""
    from nbtext.read import _separator_at

    class Recording(io.BytesIO):
        reads = []

        def read(self, n=-1):
            self.reads.append(n)
            return super().read(n)

    msg = b"From a@b Mon Jan  1 00:00:00 2024\nSubject: x\n\n"
    body = b"".join(b"line %d of a long body\n" % i for i in range(20000))  # about 500 KB
    for extra in range(0, 40):  # the separator at every place against a window's edge
        data = msg + body + b"x" * extra + b"\n\n" + msg + b"the end\n"
        f = Recording(data)
        Recording.reads = []
        want = len(msg) + len(body) + extra + 2
        assert _separator_at(f, 1000, len(data), back=256, window=8192) == want
        assert max(Recording.reads) <= 256 + 8192
        assert _separator_at(Recording(data), want + 1, len(data), back=256, window=8192) is None


def test_entries_gone_since_their_directory_was_listed_are_passed_by(tmp_path):
    """The walk reads entries' kinds from the directory's listing (no stat a file), so a file
    or directory deleted or moved after the listing (a live Maildir) is found missing only
    when it is read: it is passed by, as the walk's stat of each entry at its turn used to
    pass it by; deferred (train's workers) or read here; and one that is still there but cannot
    be read is still reported."""
    from nbtext.read import mail_folder_documents

    corpus = tmp_path / "L"
    ham = corpus / "ham"
    for name in ("a", "b", "c"):
        (ham / name).parent.mkdir(parents=True, exist_ok=True)
        (ham / name).write_bytes(name.encode())
    (ham / "d").mkdir()
    (ham / "d" / "x").write_bytes(b"x")
    (corpus / "spam").mkdir()
    (corpus / "spam" / "s").write_bytes(b"s")
    for deferred in (False, True):
        docs = label_directory(str(corpus), deferred=deferred)
        first = next(docs)
        os.rename(ham / "b", tmp_path / "b")  # (moved away after the listing)
        os.rename(ham / "d", tmp_path / "d")
        rest = list(docs)
        got = [getattr(d, "path", getattr(d, "id", None)) for d in [first, *rest]]
        assert got == [str(ham / "a"), str(ham / "c"), str(corpus / "spam" / "s")], (deferred, got)
        os.rename(tmp_path / "b", ham / "b")
        os.rename(tmp_path / "d", ham / "d")
    docs = mail_folder_documents(str(ham))
    assert next(docs).id == str(ham / "a")
    (ham / "b").unlink()
    assert [d.id for d in docs] == [str(ham / "c"), str(ham / "d" / "x")]
    errors_seen: list = []  # (a file made a directory after the listing: still there, reported)
    docs = label_directory(str(corpus), errors_seen.append)
    assert next(docs).id == str(ham / "a")
    (ham / "c").unlink()
    (ham / "c").mkdir()
    assert [d.id for d in docs] == [str(ham / "d" / "x"), str(corpus / "spam" / "s")]
    assert [str(e) for e in errors_seen] == [f"{ham / 'c'}: is a directory"]
