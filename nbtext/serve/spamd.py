"""SpamAssassin's spamd protocol (spamd/PROTOCOL, SPAMC/1.x), as the stock spamc client speaks it.

A request is a line `METHOD SPAMC/VERSION`, header lines `Name: value`, an empty line, and for
the methods that carry one a message of `Content-length` bytes (or up to the end of the
stream when there is no length). A reply is `SPAMD/1.1 CODE TEXT`, header lines, an empty
line and a body; the code is one of sysexits.h's (EX_OK 0, EX_PROTOCOL 76, ...). This module
reads requests and writes replies; what a verdict is comes from nbtext.serve.scoring.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import shown
from .scoring import Verdict

CODES = {"EX_OK": 0, "EX_USAGE": 64, "EX_DATAERR": 65, "EX_NOINPUT": 66, "EX_NOUSER": 67,
         "EX_UNAVAILABLE": 69, "EX_SOFTWARE": 70, "EX_IOERR": 74, "EX_TEMPFAIL": 75,
         "EX_PROTOCOL": 76, "EX_NOPERM": 77, "EX_TIMEOUT": 79}
CHECKS = ("CHECK", "SYMBOLS", "REPORT", "REPORT_IFSPAM", "PROCESS", "HEADERS")
METHODS = CHECKS + ("TELL", "PING", "SKIP")
MAX_HEADERS = 255  # as spamd
LENGTH_DIGITS = 12  # a Content-length's digits at most (a terabyte: past any --max-size)
REQUEST_LINE = re.compile(rb"([A-Z_]{1,20}) SPAMC/(\d{1,3})\.(\d{1,3})\r?\Z")
EXPLAINED = 10  # tokens each way in a report (and in /checkv2's symbol options)


class SpamdError(Exception):
    """A request refused: a reply of one line, `SPAMD/1.0 CODE TEXT`, then the connection ends."""

    def __init__(self, code: str, text: str):
        super().__init__(text)
        self.code, self.text = code, text

    def reply(self) -> bytes:
        return f"SPAMD/1.0 {CODES[self.code]} {shown(self.text)}\r\n".encode("utf-8", "backslashreplace")


@dataclass
class Request:
    method: str
    version: tuple[int, int]
    length: int | None = None       # Content-length
    user: str | None = None
    message_class: str | None = None
    set_local: bool = False
    remove_local: bool = False
    body: bytes = b""

    @property
    def has_body(self) -> bool:
        return self.method not in ("PING", "SKIP")


def head_end(buf: bytes | bytearray, scanned: int = 0) -> int:
    """Where the request's body starts (after the empty line ending its head), or -1;
    ``scanned``: the bytes already searched (each byte is searched about once). Before
    protocol 1.5 PING and SKIP are a request line alone."""
    line = buf.find(b"\n", 0, 40)  # (the longest request line is 30 bytes)
    if line < 0:
        return -1
    m = REQUEST_LINE.match(bytes(buf[:line]))
    if m and m.group(1) in (b"PING", b"SKIP") and (int(m.group(2)), int(m.group(3))) < (1, 5):
        return line + 1
    return blank_line_end(buf, max(scanned - 2, line))


def content_length(value: bytes) -> int | None:
    """A Content-length's value (either protocol's) as a number of bytes, or None when it is not
    ASCII digits alone: a sign, a space inside, a Unicode digit ('²', '５') are not a length."""
    return int(value) if value.isdigit() and len(value) <= LENGTH_DIGITS else None


def blank_line_end(buf: bytes | bytearray, start: int) -> int:
    """The end of the first empty line ("\n\n" or "\n\r\n") found from ``start`` on, or -1."""
    ends = [i + len(sep) for sep in (b"\n\n", b"\n\r\n") if (i := buf.find(sep, start)) >= 0]
    return min(ends) if ends else -1


def parse_head(head: bytes) -> Request:
    """The request line and headers (SpamdError for a malformed one). Unknown headers are
    ignored, as the protocol asks."""
    lines = head.split(b"\n")
    m = REQUEST_LINE.match(lines[0])
    if not m or m.group(1).decode() not in METHODS:
        raise SpamdError("EX_PROTOCOL", f"Bad header line: {lines[0][:80].decode('latin-1').rstrip()}")
    req = Request(m.group(1).decode(), (int(m.group(2)), int(m.group(3))))
    fields = [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines[1:]]
    fields = [f for f in fields if f]
    if len(fields) > MAX_HEADERS:
        raise SpamdError("EX_PROTOCOL", "Bad header line: (too many headers)")
    for f in fields:
        name, colon, value = f.partition(b":")
        if not colon:
            raise SpamdError("EX_PROTOCOL", "Bad header line: (header not in 'Name: value' format)")
        name, value = name.strip().lower(), value.strip()
        if name == b"content-length":
            length = content_length(value)
            if length is None:
                raise SpamdError("EX_PROTOCOL", "Bad header line: (Content-Length contains non-numeric bytes)")
            if req.length not in (None, length):  # (two lengths: which one ends the message is a guess)
                raise SpamdError("EX_PROTOCOL", f"Bad header line: (Content-Length given twice, as {req.length} "
                                                f"and {length})")
            req.length = length
        elif name == b"user":
            if any(b < 0x20 or b == 0x7f for b in value):
                raise SpamdError("EX_PROTOCOL", "Bad header line: (User header contains control chars)")
            req.user = value.decode("utf-8", "surrogateescape")
        elif name == b"message-class":
            if value.lower() not in (b"spam", b"ham"):
                raise SpamdError("EX_PROTOCOL", "Bad header line: (Message-class header contains invalid class)")
            req.message_class = value.lower().decode()
        elif name == b"set":
            req.set_local = b"local" in value.lower()
        elif name == b"remove":
            req.remove_local = b"local" in value.lower()
        elif name == b"compress":
            raise SpamdError("EX_PROTOCOL", "Bad header line: (compression not supported)")
    if req.method == "TELL":
        if req.set_local and req.remove_local:
            raise SpamdError("EX_PROTOCOL", "Bad header line: (Unable to set local and remove local in the same "
                                            "operation.)")
        if req.set_local and req.message_class is None:
            raise SpamdError("EX_PROTOCOL", "Bad header line: (Set: local needs a Message-class)")
    return req


def spam_line(v: Verdict, method: str) -> str:
    """`Spam: True ; 9.7 / 5.0`: the score and required score on SpamAssassin's scale, with
    one decimal as spamd writes them (a score that would print at or above the required
    score of a message that is not spam is printed 0.1 below it, as spamd does)."""
    score, required = round(v.score, 1), round(v.required, 1)
    if not v.spam and score >= required:
        score = required - 0.1
    yes, no = ("Yes", "No") if method == "REPORT_IFSPAM" else ("True", "False")
    return f"Spam: {yes if v.spam else no} ; {score:.1f} / {required:.1f}"


def report(v: Verdict, model_name: str) -> str:
    """REPORT's body: the verdict, its probability, and the tokens that decided it."""
    e = v.explanation or {}
    lines = [f"nbtext: {v.shown_label} (P({v.label}) = {v.probability:.6f}; "
             f"P(spam) {v.p_positive:.6f} against a threshold of {v.threshold:g}; model {model_name})",
             f"prior\t{e.get('prior', 0.0):+.4f}", f"unknown tokens\t{e.get('unknown_tokens', 0)}"]
    for side in ("for", "against"):
        lines += [f"{side}\t{w:+.4f}\t{shown(t)}" for t, w in e.get(side, [])]
    return "\r\n".join(lines) + "\r\n"


def spamassassin_headers(v: Verdict) -> tuple[str, ...]:
    """The X-Spam-* fields SpamAssassin adds, which spamass-milter and users' Sieve and
    procmail rules read: X-Spam-Flag (spam only), X-Spam-Status, X-Spam-Level (a star a point)."""
    score, required = spam_line(v, "CHECK").split(" ; ")[1].split(" / ")
    status = (f"X-Spam-Status: {'Yes' if v.spam else 'No'}, score={score} required={required} "
              f"tests={symbols(v)} version=nbtext")
    return (("X-Spam-Flag: YES",) if v.spam else ()) + (status, "X-Spam-Level: " + "*" * int(float(score)))


def symbols(v: Verdict) -> str:
    return "NBTEXT_UNSURE" if v.unsure else "NBTEXT_SPAM" if v.spam else "NBTEXT_HAM"


def check_reply(req: Request, v: Verdict, model_name: str, processed: bytes | None = None) -> bytes:
    """The reply to CHECK, SYMBOLS, REPORT, REPORT_IFSPAM, PROCESS or HEADERS (``processed``:
    the message with its headers added, for the last two)."""
    spam = spam_line(v, req.method)
    new = req.version >= (1, 3)
    if req.method in ("PROCESS", "HEADERS"):
        body = processed if req.method == "PROCESS" else processed[:header_block_end(processed)]
        if req.version < (1, 2):
            return b"SPAMD/1.0 0 EX_OK\r\n" + body
        head = f"SPAMD/1.1 0 EX_OK\r\nContent-length: {len(body)}\r\n" + (spam + "\r\n" if new else "")
        return head.encode() + b"\r\n" + body
    if req.method == "CHECK":
        return f"SPAMD/1.1 0 EX_OK\r\n{spam}\r\n\r\n".encode()
    if req.method == "SYMBOLS":
        text = symbols(v) + ("" if new else "\r\n")
    elif req.method == "REPORT" or v.spam:
        text = report(v, model_name)
    else:  # REPORT_IFSPAM of a message that is not spam
        text = ""
    body = text.encode("utf-8", "backslashreplace")
    head = "SPAMD/1.1 0 EX_OK\r\n" + (f"Content-length: {len(body)}\r\n" if new else "") + spam + "\r\n\r\n"
    return head.encode() + body


def header_block_end(message: bytes) -> int:
    """The end of the message's header block, its empty line included."""
    end = blank_line_end(message, 0)
    return end if end >= 0 else len(message)


def tell_reply(did_set: bool, did_remove: bool) -> bytes:
    head = "SPAMD/1.1 0 EX_OK\r\n" + ("DidSet: local\r\n" if did_set else "") + \
        ("DidRemove: local\r\n" if did_remove else "")
    return (head + "\r\n").encode()


PONG = b"SPAMD/1.5 0 PONG\r\n"
