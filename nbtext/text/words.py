"""Words: bytes to text, Unicode words, word n-grams and character n-grams.

The rules every tokenizer shares; nbtext.text.mail reads mail with them and
nbtext.text.tokenizer chooses between the two.
"""
from __future__ import annotations

import re

from ..settings import TokenizerSettings

# Han, kana: no spaces between words, so each ideograph is a token (as Lucene's standard
# analyzer does); other scripts: letters/digits with inner apostrophes, dots and hyphens
# ("don't", "e-mail", "3.5") and a leading currency sign ("$100" is a spam signal).
# (Two patterns rather than one with a set difference for CJK, which is slower on mail: words
# first, then the rare non-ASCII word split around ideographs; docs/bench.md.)
WORD = r"[$€£¥]?[\p{L}\p{M}\p{N}_]+(?:['’.\-][\p{L}\p{M}\p{N}_]+)*"
_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}"
# The same words in ASCII text, by the standard re module: several times faster than the regex
# module's Unicode classes, and most mail is ASCII after decoding; classifying an ASCII message
# never imports regex.
ASCII_WORD_RE = re.compile(r"\$?\w+(?:['.\-]\w+)*", re.ASCII)
_unicode_patterns = None
# Terminal colour codes are markup, not words (quotation files hold "[33m" and the like).
ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def unicode_patterns():
    """(words, CJK character, CJK split) patterns of the regex module, compiled on first use."""
    global _unicode_patterns
    if _unicode_patterns is None:
        import regex

        _unicode_patterns = (regex.compile(WORD), regex.compile(rf"[{_CJK}]"),
                             regex.compile(rf"[{_CJK}]|[^{_CJK}]+"))
    return _unicode_patterns


# Mail detection reads the document's first lines as RFC 5322 would: a header field is a name
# (group 1) of printable ASCII but ":", optional blanks (group 2: the obsolete syntax), a colon,
# and any body, empty or not. Group 3 is a blank and a value after the colon, as in "Subject: hi",
# which makes the line a plain field: lines of a name and a colon alone ("XXXVI:", then folded
# verse, in a quotation file), or a colon with no blank after it ("http://x", "12:30"), are fields to
# RFC 5322 and to the count below, but plain text holds such lines too.
FIELD_LINE = re.compile(rb"([!-9;-~]+)([ \t]*):([ \t]+[^ \t])?")
LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)?")  # a line ends in LF, CR or CRLF, as bytes.splitlines says
# RFC 5322's own fields (section 3.6: every message has a Date and a From; each relay adds a
# Received) and MIME's, in lower case: a header block holds one, where a dialogue in plain text
# ("Lei: ...", "Worf: ...", as quotation files hold) holds none.
MAIL_FIELDS = frozenset(b"date from sender reply-to to cc bcc message-id in-reply-to references subject "
                        b"comments keywords return-path received resent-date resent-from resent-sender "
                        b"resent-to resent-cc resent-bcc resent-message-id mime-version content-type "
                        b"content-transfer-encoding".split())
MAIL_LINES = 50  # the lines of the header block that mail detection reads
MAIL_START = re.compile(rb"[\r\n]*(From [^\r\n]*(?:\r\n|\r|\n)?)?")  # line ends, an mbox "From " line


def lines_of(data: bytes, pos: int = 0, window: int = 8192):
    """The lines of data from pos on, with their ends (LINE's): bytes.splitlines of a window at
    a time, which costs less than a pattern per line; a line longer than the window whole."""
    n = len(data)
    while pos < n:
        lines = data[pos:pos + window].splitlines(keepends=True)
        if pos + window < n:
            lines.pop()  # (it may be cut short, or be a CR whose LF is past the window)
            if not lines:
                lines = [data[pos:LINE.match(data, pos).end()]]
        for line in lines:
            yield line
        pos += sum(map(len, lines))


def decode_text(data: bytes | str) -> str:
    """Bytes are UTF-8 when they can be; otherwise Windows-1252 (never fails, never guesses wildly)."""
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def looks_like_mail(data: bytes | str) -> bool:
    """True when the document starts with an RFC 5322 header block.

    The block is the document's first lines (a leading mbox "From " line counted as a plain
    field), up to the first blank one, at most MAIL_LINES of them; lines end in LF, CRLF or CR,
    and a line that starts with a blank continues a folded field and counts for neither side.
    Mail when one of its fields is one of RFC 5322's (MAIL_FIELDS), two are plain fields (a
    name, a colon, a blank and a value), and its fields outnumber its other lines. So no single
    line decides: a field more, empty ("X-MS-Has-Attach:") or obsolete ("Subject : x"), counts
    for mail (an empty "X-Foo:" once made mail plain text: issue 32), and a line of junk does
    not outnumber two fields. A blank line ends the block, as RFC 5322 ends a header with one.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    start = MAIL_START.match(data)
    plain = fields = 1 if start.group(1) else 0  # (an mbox separator line: a plain field)
    others, known = 0, False
    for line, _ in zip(lines_of(data, start.end()), range(MAIL_LINES)):
        line = line.rstrip(b"\r\n")
        if not line.strip():
            break
        if line[:1] in b" \t":
            continue  # folded continuation of the previous field
        field = FIELD_LINE.match(line)
        if field is None:
            others += 1
            continue
        fields += 1
        plain += field.group(3) is not None
        known = known or field.group(1).lower() in MAIL_FIELDS
    return known and plain >= 2 and fields > others


def words(text: str, settings: TokenizerSettings, prefix: str = "") -> list[str]:
    """Word tokens of a text, with over-long words summarized as one "skip:" token."""
    if settings.lowercase:
        text = text.casefold()
    limit = settings.max_word_length
    if text.isascii():
        found = ASCII_WORD_RE.findall(text)
        if not found or max(map(len, found)) <= limit:  # the common case, without a loop
            return [prefix + w for w in found] if prefix else found
        cjk = None
    else:
        word_re, cjk, _ = unicode_patterns()
        found = word_re.findall(text)
    out = []
    for w in found:
        if cjk is not None and not w.isascii() and cjk.search(w):
            out += words_split_cjk(w, limit, prefix)
            continue
        if len(w) > limit:
            # SpamBayes' rule: an over-long "word" (a hash, an encoded blob) says little by
            # its spelling but something by its first character and rough length.
            out.append(f"skip:{w[0]} {len(w) // 10 * 10}")
        else:
            out.append(prefix + w if prefix else w)
    return out


def text_words(texts: list[str], settings: TokenizerSettings) -> list[str]:
    """The words of each text in turn (a document's body, as Tokenizer.parts gives it)."""
    if len(texts) == 1:
        return words(texts[0], settings)
    return [w for t in texts for w in words(t, settings)]


def words_split_cjk(w: str, limit: int, prefix: str) -> list[str]:
    out = []
    for piece in unicode_patterns()[2].findall(w):
        piece = piece.strip("'’.-")
        if not piece:
            continue
        if len(piece) > limit:
            out.append(f"skip:{piece[0]} {len(piece) // 10 * 10}")
        else:
            out.append(prefix + piece)
    return out


def add_ngrams(tokens: list[str], settings: TokenizerSettings, chars: bool = True) -> list[str]:
    """Word n-grams (joined by a space) and, with ``chars``, character n-grams
    ("c:" + slice of "<word>")."""
    out = list(tokens)
    for n in range(2, settings.ngram_max + 1):
        out += map(" ".join, zip(*(tokens[i:] for i in range(n))))
    lo, hi = settings.char_ngram_min, settings.char_ngram_max
    if lo and chars:
        for w in tokens:
            padded = f"<{w}>"
            for n in range(lo, hi + 1):
                out.extend("c:" + padded[i:i + n] for i in range(len(padded) - n + 1))
    return out
