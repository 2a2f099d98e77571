"""Containers give the same documents; MIME is read as a person would read it."""
import gzip
import os
import subprocess
import sys
import json

import numpy as np
import pytest

import email

from hypothesis import given, settings, strategies as st

from nbtext.text.mail import mail_tokens, parse_message
from nbtext.model import Model
from nbtext.read import LineOptions, input_documents, labelled_documents
from nbtext.settings import ModelSettings, TokenizerSettings
from nbtext.text.tokenizer import Tokenizer
from nbtext.text.words import looks_like_mail

from conftest import DATA, need_shared

S = TokenizerSettings()
MESSAGES = sorted((DATA / "corpus" / "spam").iterdir())[:4] + sorted((DATA / "corpus" / "ham").iterdir())[:4]


def strip_from(data: bytes) -> bytes:
    return data.split(b"\n", 1)[1] if data.startswith(b"From ") else data


def write_containers(tmp_path):
    msgs = [(f.parent.name, strip_from(f.read_bytes())) for f in MESSAGES]
    # label directories of single files
    for i, (label, data) in enumerate(msgs):
        d = tmp_path / "dir" / label
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{i:03d}.eml").write_bytes(data)
    # one mbox per label, with From_ quoting of a body line starting with "From "
    for label in ("ham", "spam"):
        with open(tmp_path / f"{label}.mbox", "wb") as f:
            for lab, data in msgs:
                if lab != label:
                    continue
                f.write(b"From someone@example.com Sat Jan  1 00:00:00 2002\n")
                for line in data.splitlines(keepends=True):
                    f.write(b">" + line if line.lstrip(b">").startswith(b"From ") else line)
                f.write(b"\n")
    # Maildir per label (gzip-compressed messages in new/, plain ones in cur/)
    for i, (label, data) in enumerate(msgs):
        md = tmp_path / "maildir" / label
        for sub in ("cur", "new", "tmp"):
            (md / sub).mkdir(parents=True, exist_ok=True)
        if i % 2:
            (md / "new" / f"{i:03d}.host").write_bytes(gzip.compress(data))
        else:
            (md / "cur" / f"{i:03d}.host:2,S").write_bytes(data)
    # MH folder per label
    for i, (label, data) in enumerate(msgs):
        mh = tmp_path / "mh" / label
        mh.mkdir(parents=True, exist_ok=True)
        (mh / ".mh_sequences").write_text("")
        (mh / str(i + 1)).write_bytes(data)
    # JSONL with the raw message as text
    with open(tmp_path / "all.jsonl", "w") as f:
        for label, data in msgs:
            f.write(json.dumps({"label": label, "text": data.decode("utf-8", "surrogateescape")},
                               ensure_ascii=True) + "\n")
    return msgs


def counts(docs):
    docs = list(docs)
    tok = Tokenizer(S)
    m = Model.empty(S, ModelSettings(), [d.label for d in docs])
    # sort by content so containers with different orders compare equal
    order = sorted(range(len(docs)), key=lambda i: tok(docs[i].data))
    m.add([tok(docs[i].data) for i in order], [docs[i].label for i in order])
    return m


def test_same_messages_in_every_container_give_the_same_counts(tmp_path):
    msgs = write_containers(tmp_path)
    utf8 = all(_is_utf8(d) for _, d in msgs)
    sources = {
        "dir": labelled_documents([str(tmp_path / "dir")], [], LineOptions()),
        "mbox": labelled_documents([], [("ham", str(tmp_path / "ham.mbox")),
                                        ("spam", str(tmp_path / "spam.mbox"))], LineOptions()),
        "maildir": labelled_documents([str(tmp_path / "maildir")], [], LineOptions()),
        "mh": labelled_documents([str(tmp_path / "mh")], [], LineOptions()),
    }
    if utf8:
        sources["jsonl"] = labelled_documents([str(tmp_path / "all.jsonl")], [], LineOptions())
    models = {k: counts(v) for k, v in sources.items()}
    ref = models.pop("dir")
    assert ref.n_documents == len(MESSAGES)
    for name, m in models.items():
        assert m.vocab.tokens == ref.vocab.tokens, name
        np.testing.assert_array_equal(m.feature_count, ref.feature_count, err_msg=name)
        np.testing.assert_array_equal(m.class_count, ref.class_count, err_msg=name)


def _is_utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def test_mbox_ids_are_from_line_numbers_and_quoting_is_undone(tmp_path):
    p = tmp_path / "box"
    p.write_bytes(b"From a Sat Jan  1 00:00:00 2002\nSubject: one\n\n>From here on\n\n"
                  b"From b Sat Jan  1 00:00:00 2002\nSubject: two\n\nbody\n")
    docs = list(input_documents([str(p)]))
    assert [d.id for d in docs] == [f"{p}:1", f"{p}:6"]
    assert b"\nFrom here on\n" in docs[0].data


def test_line_formats(tmp_path):
    (tmp_path / "a.tsv").write_text("label\ttext\nspam\tbuy now\nham\thello\tthere\n")
    (tmp_path / "a.csv").write_text('text,label\n"buy, now",spam\nhello,ham\n')
    (tmp_path / "a.ft").write_text("__label__spam buy now\n__label__ham hello\n")
    (tmp_path / "a.jsonl").write_text('{"label": "spam", "text": "buy now"}\n\n{"label": "ham", "text": "hello"}\n')
    with gzip.open(tmp_path / "b.tsv.gz", "wt") as f:
        f.write("spam\tbuy now\n")
    got = {name: [(d.label, d.data) for d in labelled_documents([str(tmp_path / name)], [], LineOptions())]
           for name in ("a.tsv", "a.csv", "a.ft", "a.jsonl", "b.tsv.gz")}
    assert got["a.tsv"] == [("spam", "buy now"), ("ham", "hello\tthere")]
    assert got["a.csv"] == [("spam", "buy, now"), ("ham", "hello")]
    assert got["a.ft"] == [("spam", "buy now"), ("ham", "hello")]
    assert got["a.jsonl"] == [("spam", "buy now"), ("ham", "hello")]
    assert got["b.tsv.gz"] == [("spam", "buy now")]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["__label__a", "__label__", "x__label__y", "word", " ", "\t", "\u3000", "\u00a0",
                                 "__label__b\u2003c", "__lab", "el__", "  "]), max_size=10))
def test_a_fasttext_lines_labels_and_words_are_every_word_read_alone(pieces):
    """A fastText line: its labels are its words that start with __label__, wherever they are,
    in order; its text the other words joined by one space (Unicode whitespace splits words),
    as reading each word alone gives them, however the line is laid out."""
    from nbtext.read.lines import fasttext_fields

    text = "".join(pieces)
    words = text.split()
    assert fasttext_fields(text) == ([w[len("__label__"):] for w in words if w.startswith("__label__")],
                                     " ".join(w for w in words if not w.startswith("__label__")))


def mime(body: str) -> bytes:
    return body.replace("\n", "\r\n").encode("latin-1")


def test_multipart_alternative_base64_html_and_tag_splitting():
    import base64
    html = base64.b64encode(b'<p>Buy <b>Vi</b><i>agra</i> now</p><a href="http://www.evil.example.com/x/buy">x</a>'
                            b'<img src="http://1.2.3.4/a.gif" alt="cheap pills">').decode()
    msg = mime(f"""From: Seller <seller@shop.example.com>
To: a@example.org, b@example.org
Subject: =?utf-8?B?w4lub3JtZSByYWJhaXM=?=
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary="XX"

--XX
Content-Type: text/plain; charset=us-ascii

Plain words here
--XX
Content-Type: text/html; charset=utf-8
Content-Transfer-Encoding: base64

{html}
--XX--
""")
    assert looks_like_mail(msg)
    toks = mail_tokens(msg, S)
    assert "viagra" in toks and "vi" not in toks and "agra" not in toks
    assert "plain" in toks and "cheap" in toks and "pills" in toks
    assert {"subject:énorme", "subject:rabais"} <= set(toks)
    assert {"url:www.evil.example.com", "url:evil.example.com", "url:example.com", "url:com",
            "url:path:buy", "url:ip"} <= set(toks)
    assert {"from:addr:seller@shop.example.com", "from:dom:shop.example.com", "from:name:seller",
            "to:count:2", "ct:multipart/alternative", "ct:text/html", "cte:base64"} <= set(toks)
    assert not any("PGI" in t or "pgi" in t for t in toks)  # no base64 blob as words


def test_quoted_printable_bad_charset_and_8bit_headers():
    msg = ("From: x@y.example\nSubject: caf\xe9 cr\xe8me\nContent-Type: text/plain; charset=\"x-no-such\"\n"
           "Content-Transfer-Encoding: quoted-printable\n\nna=C3=AFve r=C3=A9sum=\n=C3=A9 soft=\nbreak\n").encode("latin-1")
    toks = mail_tokens(msg, S)
    assert "softbreak" in toks and "résumé" in toks and "naïve" in toks
    assert "subject:café" in toks and "subject:crème" in toks
    assert "charset:fallback" in toks


def test_no_charset_nested_multipart_and_attachment():
    msg = mime("""From: a@b.example
Subject: report
Content-Type: multipart/mixed; boundary="A"

--A
Content-Type: multipart/related; boundary="B"

--B
Content-Type: text/plain

inner text
--B--
--A
Content-Type: application/pdf; name="report.PDF"
Content-Disposition: attachment; filename="report.PDF"
Content-Transfer-Encoding: base64

JVBERi0xLjQKJcfsj6IKNSAwIG9iago8PC9MZW5ndGggNiAwIFI+PgpzdHJlYW0K
--A--
""")
    toks = mail_tokens(msg, S)
    assert "inner" in toks and "text" in toks
    assert {"ct:application/pdf", "filename:ext:pdf", "ct:multipart/related"} <= set(toks)
    assert not any(t.startswith("jvber") for t in toks)


@pytest.mark.slow
def test_deep_nesting_and_huge_words_do_not_crash():
    depth = 1000
    parts = "".join(f'Content-Type: multipart/mixed; boundary="b{i}"\n\n--b{i}\n' for i in range(depth))
    msg = ("From: a@b.example\nSubject: deep\n" + parts + "Content-Type: text/plain\n\nbottom\n").encode()
    toks = mail_tokens(msg, S)
    assert "mime:too-deep" in toks
    toks = mail_tokens(b"From: a@b.example\nSubject: x\n\n" + b"A" * 5000 + b" ok\n", S)
    assert "skip:a 5000" in toks and "ok" in toks


def mail_detectors():
    """text.words.looks_like_mail, and its twin in the compiled kernel when it is built."""
    from nbtext.features.kernel import compiled
    from nbtext.text.words import MAIL_FIELDS, MAIL_LINES

    k = compiled()
    return [looks_like_mail] + ([lambda data: k.looks_like_mail(data, MAIL_LINES, MAIL_FIELDS)] if k else [])


def test_plain_text_is_not_mail():
    for is_mail in mail_detectors():
        assert not is_mail(b"Hello: this is a sentence.\nAnd another one")
        assert not looks_like_mail("__label__x foo")
        assert is_mail(b"From x@y Sat Jan  1\nReceived: from a\nSubject: hi\n\nbody")
        # URLs and times have a colon but no blank after it: lines of them alone are not mail
        assert not is_mail(b"http://a.example/\nhttp://b.example/\n12:30 lunch\n\nbody")
        # one field, or two among more lines of prose, are not a header block
        assert not is_mail(b"Note: this is a sentence.\n\nTo: whom it may concern\n")
        assert not is_mail(b"Dear all,\nNote: one\nSee: two\nand this\nthat\n")
        assert not is_mail(b"From the start\nit was\n")
        # a dialogue: plain fields, but none of RFC 5322's
        assert not is_mail(b"Lei: Scusa, Rimini?\nLui: E' la stazione dopo la mia.\n")


def insert_second(data: bytes, line: bytes) -> bytes:
    cut = data.find(b"\n") + 1
    return data[:cut] + line + (b"\r\n" if data[:cut].endswith(b"\r\n") else b"\n") + data[cut:]


def test_mail_is_told_by_rfc_5322_header_blocks():
    """Issue 32: an empty field body ("X-MS-Has-Attach:"), obsolete syntax (blanks before the
    colon), an mbox "From " line, CRLF and CR line ends and folded lines are a header block's;
    and no one line decides: neither an empty field nor a line of junk makes mail text. (An
    empty field counts as a field, but two fields with a value are needed.)"""
    for is_mail in mail_detectors():
        assert is_mail(b"Subject: hi\nX-MS-Has-Attach:\nX-MS-TNEF-Correlator:\nTo: a@b.example\n\nbody")
        assert is_mail(b"Subject : obsolete\nFrom\t: a@b.example\n\nbody")
        assert is_mail(b"From a@b.example Sat Jan  1 00:00:00 2002\nX-Empty:\nSubject: hi\n\nbody")
        assert is_mail(b"Subject: hi\r\nX-Empty:\r\nTo: a@b.example\r\n\r\nbody")
        assert is_mail(b"Subject: hi\rX-Empty:\rTo: a@b.example\r\rbody")
        assert is_mail(b"Subject: a\n folded\n\tagain\nTo: b@c.example,\n d@e.example\n\nbody")
        assert is_mail(b"\r\n\nSubject: hi\nTo: a@b.example\n")
        assert is_mail(b"Subject: hi\nthis line is not a field\nTo: a@b.example\nFrom: c@d.example\n\nbody")
        assert not is_mail(b"Subject: hi\n\nTo: a@b.example\n")  # the blank line ends the header
        assert not is_mail(b"Subject: hi\njunk\nmore junk\nTo: a@b.example\n\nbody")
        # names and colons alone, then folded text (verse in fortune-lang): no field has a value
        assert not is_mail(b"XXXVI:\n\tThe early bird gets the worm.\nXXXVII:\n\tThe early worm gets eaten.\n")
        for msg in MESSAGES:
            data = msg.read_bytes()
            assert is_mail(data), msg
            for line in (b"X-Foo:", b"X-Foo :", b"X-Foo:bar", b"this is not a field", b" folded"):
                assert is_mail(insert_second(data, line)), (msg, line)
                assert is_mail(insert_second(data.replace(b"\n", b"\r\n"), line)), (msg, line)
                assert is_mail(insert_second(data, line).replace(b"\n", b"\r")), (msg, line)


def first_in_body(data: bytes, line: bytes) -> bytes:
    cut = min(i for i in (data.find(b"\n\n"), data.find(b"\n\r\n")) if i >= 0) + 1
    blank = b"\r\n" if data[cut:cut + 1] == b"\r" else b"\n"
    return data[:cut] + blank + line + blank + data[cut + len(blank):]


def test_one_malformed_header_line_does_not_end_the_header():
    """Issue 32: the standard parser ends the header at a line that is not a field (or at an
    obsolete field, "X-Foo : bar") and reads every field after it as body text; such a line
    as the second line of a message made it headerless. It is read as the body's first line
    (an obsolete field as a field), on both paths."""
    from nbtext.features import kernel

    tok = Tokenizer(S)
    k = kernel.compiled()
    read = kernel.mail_parts(k, tok) if k else tok.parts
    for msg in MESSAGES:
        data = msg.read_bytes()
        for junk in (b"this line is not a field", b">From a@b.example Mon"):
            assert read(insert_second(data, junk)) == read(first_in_body(data, junk)), msg
        crlf = data.replace(b"\n", b"\r\n")
        junk = b"this line is not a field"
        assert read(insert_second(crlf, junk)) == read(first_in_body(crlf, junk)), msg
        assert read(insert_second(data, b"X-Foo : bar")) == read(insert_second(data, b"X-Foo: bar")), msg
        assert "hdr:x-foo" in read(insert_second(data, b"X-Foo :\tbar"))[0]


def test_an_empty_field_does_not_change_a_verdict(sample_model, tmp_path, run):
    """Issue 32's probe on the bundled sample: "X-Foo:" as the second line of each spam (an
    empty field body, valid RFC 5322) leaves every verdict of predict as it was (and every
    probability within 0.001: the field is one header token more); it once made the messages
    plain text, and most of them ham."""
    spam = sorted((DATA / "corpus" / "spam").iterdir())
    (tmp_path / "as-is").mkdir()
    (tmp_path / "probed").mkdir()
    for f in spam:
        (tmp_path / "as-is" / f.name).write_bytes(f.read_bytes())
        (tmp_path / "probed" / f.name).write_bytes(insert_second(f.read_bytes(), b"X-Foo:"))
    rows = {}
    for name in ("as-is", "probed"):
        r = run("predict", "-m", sample_model, tmp_path / name)
        assert r.exit_code == 0, r.stderr
        rows[name] = [row.split("\t")[1:] for row in r.stdout.splitlines()]
    assert len(rows["as-is"]) == len(rows["probed"]) == len(spam)
    assert [label for label, _ in rows["probed"]] == ["spam"] * len(spam)
    assert [label for label, _ in rows["as-is"]] == ["spam"] * len(spam)
    assert all(abs(float(p) - float(q)) < 1e-3 for (_, p), (_, q) in zip(rows["as-is"], rows["probed"]))


@pytest.mark.slow
def test_every_message_of_spamassassin_is_mail_after_one_line_more():
    corpus = need_shared("spamassassin-2002")
    for is_mail in mail_detectors():
        for f in sorted(corpus.glob("*/*")):
            data = f.read_bytes()
            assert is_mail(data), f
            assert is_mail(insert_second(data, b"X-Foo:")), f
            assert is_mail(insert_second(data, b"not a field")), f


HTML_MAIL = (b"From: a@example.com\nTo: b@example.com\nSubject: offer\nMIME-Version: 1.0\n"
             b"Content-Type: text/html\n\n<p>Buy <b>now</b> at <a href='http://shop.example.com/x'>"
             b"here</a></p>\n")


def test_ablation_switches_turn_rules_off():
    """scripts/mail_ablation.py measures each rule by turning it off (the stored tokenizer
    setting mail_rules_off); each switch must do that and nothing else."""
    from nbtext.text import mail

    def tokens(*off):
        return mail.mail_tokens(HTML_MAIL, TokenizerSettings(ngram_max=1, mail_rules_off=frozenset(off)))

    full = tokens()
    assert {"buy", "now", "here", "url:shop.example.com", "subject:offer", "hdr:from"} <= set(full)
    assert "b" not in full and "href" not in full
    no_html = tokens("html")
    assert {"b", "href", "buy"} <= set(no_html)
    no_headers = tokens("headers", "header-names")
    assert not [t for t in no_headers if t.startswith(("subject:", "from:", "hdr:"))]
    assert "url:shop.example.com" in no_headers
    no_urls = tokens("urls")
    assert not [t for t in no_urls if t.startswith("url:")] and "shop.example.com" in no_urls


def test_ablated_rules_are_stored_with_the_model(run, tmp_path):
    """A model trained with rules off scores with them off: the setting is in the file, and
    models with every rule on are stored as before (no new key: older nbtext reads them)."""
    from nbtext import store

    corpus = tmp_path / "c"
    for label, body in (("spam", b"Buy <b>now</b> here"), ("ham", b"Meeting notes here")):
        (corpus / label).mkdir(parents=True)
        (corpus / label / "1").write_bytes(HTML_MAIL.replace(b"Buy <b>now</b>", body))
    r = run("train", corpus, "--no-calibrate", "--mail-rules-off", "html,urls", "-o", tmp_path / "m.nbm")
    assert r.exit_code == 0, r.output
    model = store.load(str(tmp_path / "m.nbm"))
    assert model.tokenizer_settings.mail_rules_off == frozenset({"html", "urls"})
    assert "href" in model.vocab.index
    assert "mail_rules_off" not in TokenizerSettings().to_dict()
    r = run("train", corpus, "--mail-rules-off", "nope", "-o", tmp_path / "x.nbm")
    assert r.exit_code == 1 and "--mail-rules-off must be one of headers," in r.stderr


def same_parse(data: bytes):
    """parse_message reads a message field for field and part for part as the standard parser."""
    ours, std = parse_message(data), email.message_from_bytes(data)
    assert list(ours.raw_items()) == list(std.raw_items())
    assert ours.get_unixfrom() == std.get_unixfrom()
    assert ours.is_multipart() == std.is_multipart()
    # Part by part, compared field for field: as_bytes() cannot flatten every message the
    # standard parser accepts (an 8-bit line in a nested part's preamble raised in both).
    ours_parts, std_parts = list(ours.walk()), list(std.walk())
    assert len(ours_parts) == len(std_parts)
    for a, b in zip(ours_parts, std_parts):
        assert list(a.raw_items()) == list(b.raw_items())
        assert a.is_multipart() == b.is_multipart()
        assert (a.preamble, a.epilogue) == (b.preamble, b.epilogue)
        assert [type(d) for d in a.defects] == [type(d) for d in b.defects]
        if not b.is_multipart():
            assert a.get_payload() == b.get_payload()
            assert a.get_payload(decode=True) == b.get_payload(decode=True)


EDGE_CASES = [
    b"Subject: hi\n\nbody\n",
    b"Subject: hi\r\nFrom: a@b.c\r\n\r\nbody\r\nmore\r\n",
    b"Subject: folded\n  over two lines\n\tand three\nX: y\n\nbody",
    b"Subject: no body\n\n",
    b"Subject: no blank line at all\nX: y\n",
    b" continuation first\nSubject: x\n\nbody",
    b"Subject: x\nnot a header line\nX: y\n\nbody",
    b"From someone Sat Jan 1 00:00:00 2002\nSubject: x\n\nbody",
    b"Subject: bare\rCR\nX: y\n\nbody",
    b"Subject: form\x0cfeed and \x1c separators\n\nbody",
    b"Subject: caf\xe9 8-bit\n\nbody \xff\xfe",
    b":empty name\nSubject: x\n\nbody",
    b"Content-Type: multipart/mixed; boundary=XX\n\n--XX\nContent-Type: text/plain\n\nhi\n--XX--\n",
    b"Content-Type: message/rfc822\n\nSubject: inner\n\ninner body\n",
    b"Content-Transfer-Encoding: base64\nContent-Type: text/plain; charset=utf-8\n\naGVsbG8gd29ybGQ=\n",
    b"Subject: mixed endings\r\nX: y\n\r\nbody\n\nmore",
    b"Subject: x\n\n\nbody after two blank lines",
]


@pytest.mark.parametrize("data", EDGE_CASES)
def test_parse_message_reads_edge_cases_as_the_standard_parser(data):
    same_parse(data)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"Subject: a", b"X-Y: b", b"  folded", b"\tfolded", b"junk line",
                                 b"From x", b"", b"\r", b"Content-Type: multipart/alternative; boundary=q",
                                 b"--q", b"body \xe9", b":", b"To: a@b.c"]), max_size=12),
       st.sampled_from([b"\n", b"\r\n"]))
def test_parse_message_agrees_with_the_standard_parser_on_any_line_soup(lines, eol):
    same_parse(eol.join(lines))


@pytest.mark.slow
def test_parse_message_agrees_on_every_spamassassin_message():
    corpus = need_shared("spamassassin-2002")
    for f in sorted(corpus.rglob("*")):
        if f.is_file():
            data = f.read_bytes().lstrip(b"\r\n")
            same_parse(strip_from(data))


@pytest.mark.parametrize("size", [0, 1, (1 << 16) - 1, 1 << 16, (1 << 16) + 1, 3 << 16])
def test_a_file_read_in_one_read_gives_what_the_buffered_reader_gives(tmp_path, size):
    """A regular file shorter than read.opening._FIRST is read whole in one read (no buffered
    reader); its documents (one message, an mbox of two, gzip) are those of the general path,
    which a copy given as stdin takes, at every size about the cut."""
    import io

    from nbtext import read
    from nbtext.read import opening

    assert opening._FIRST == 1 << 16
    body = (b"Subject: x\n\n" + b"word " * size)[:size]
    mbox = b"From a@b Mon Jan  1 00:00:00 2024\nSubject: one\n\nhi\n\nFrom c@d Mon Jan  1 00:00:00 2024\nSubject: two\n\n"
    mbox = (mbox + b"x" * size)[:max(size, len(mbox))]
    for name, data in (("one.eml", body), ("box.mbox", mbox), ("z.gz", gzip.compress(body))):
        p = tmp_path / name
        p.write_bytes(data)
        got = [(d.id, d.data) for d in read.file_documents(str(p), False)]
        with opening._Input(str(p), io.BytesIO(data)) as inp:
            assert inp._whole is None  # (the general path)
        want_data = read.read_bytes(str(p), io.BytesIO(data), read.MAX_DOCUMENT_BYTES)
        if name == "box.mbox":
            assert len(got) == 2 and got[0][1].startswith(b"Subject: one")
        else:
            assert got == [(str(p), want_data)] and want_data == body
        with opening._Input(str(p)) as inp:
            assert (inp._whole is not None) == (len(data) < opening._FIRST and name != "z.gz")
            assert inp.read(7) + inp.read(1 << 20) + inp.read(5) == (body if name == "z.gz" else data)


def test_small_files_read_in_one_read_give_what_the_stream_reader_gives(tmp_path, monkeypatch):
    """A regular file under 64 KiB that is not gzip is read in one system call, without a file
    object or a buffered reader (read.opening._Input): the same documents as the stream reader
    gives, for a message, an mbox of two, a gzip'd one, an empty file, one of 64 KiB and one
    past it, a directory and a missing file (refused alike)."""
    from nbtext.errors import NbtextError
    from nbtext.read import file_documents, opening

    msg = b"From a@b Mon Jan  1 00:00:00 2001\nSubject: hi\n\nbody\n"
    files = {"message": b"Subject: hi\n\nFrom me, with love\n", "mbox": msg + b"\n" + msg.replace(b"hi", b"yo"),
             "gzip": gzip.compress(msg), "empty": b"", "64k": b"x" * (64 << 10), "past": b"y" * ((64 << 10) + 1)}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "folder").mkdir()

    def documents(path):
        try:
            return [(d.id, d.data) for d in file_documents(str(path), False)]
        except NbtextError as e:
            return str(e)

    def whole(path):
        with opening._Input(str(path)) as inp:
            return inp._whole

    direct = {p.name: documents(p) for p in [*tmp_path.iterdir(), tmp_path / "nope"]}
    assert [len(direct[n]) for n in ("message", "mbox", "gzip", "empty", "64k")] == [1, 2, 1, 1, 1]
    assert direct["folder"] == f"{tmp_path / 'folder'}: is a directory"
    assert direct["nope"] == f"{tmp_path / 'nope'}: no such file or directory"
    for name in ("message", "mbox", "empty"):
        assert whole(tmp_path / name) == files[name]
    for name in ("gzip", "64k", "past"):
        assert whole(tmp_path / name) is None
    monkeypatch.setattr(opening, "_FIRST", 2)  # (every file of 2 bytes or more through the stream reader)
    assert whole(tmp_path / "message") is None
    assert {p.name: documents(p) for p in [*tmp_path.iterdir(), tmp_path / "nope"]} == direct


FIFO_PROBE = """
import subprocess, sys
from nbtext.read import file_documents
path = sys.argv[1]
data = b"Subject: piped\\n\\n" + b"word " * 20000
# (whichever opens the pipe first waits for the other: a reader that opened and closed it
# before reading would cut the writer off either way)
writer = subprocess.Popen([sys.executable, "-c", "import sys; open(sys.argv[1], 'wb').write(b'Subject: piped\\\\n\\\\n' + b'word ' * 20000)", path])
docs = list(file_documents(path, False))
print(len(docs), docs[0].data == data, writer.wait())
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_is_read_once_whole(tmp_path):
    """A FIFO given as an input is opened once, by the stream reader (opened and closed first
    to see whether it is a small regular file, its writer lost its reader: the message cut
    short, or the second open waiting forever)."""
    fifo = tmp_path / "msg.fifo"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-c", FIFO_PROBE, str(fifo)], capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["1", "True", "0"], r.stderr
