"""Tokens from a raw RFC 822 message, read as mail rather than as a wall of text.

Headers give namespaced evidence ("subject:free", "from:dom:example.com", "hdr:list-id"); text
parts are decoded from quoted-printable/base64 in their declared charset; HTML is reduced to its
text, its link hosts and image alt text; attachments give their type and extension, never their
bytes. Nothing here raises on bad mail: a decoding failure becomes a token.

Each rule says, in a comment, what it was for and what it changed: scripts/mail_ablation.py
turns each one off in turn (the tokenizer setting mail_rules_off, which a model stores like any
other, so it is scored as it was trained) and measures 5-fold cross-validation on
spamassassin-2002; its table is docs/mail_ablation.md.
"""
from __future__ import annotations

import codecs
import email
import email.errors
import email.message
import re

from ..settings import TokenizerSettings
from .words import FIELD_LINE, LINE, add_ngrams, decode_text, lines_of, text_words, words

MAX_DEPTH = 30  # MIME nesting beyond this is abuse, not mail: one "mime:too-deep" token
MAX_PARTS = 500
MAX_URLS = 200

# Mail comes from attackers, so every pattern here must run in time linear in the text. The
# trap is a pattern that, from each of many starts, looks far ahead for an end that is not
# there: it rescans the same text from every start, quadratic in the run. Such
# patterns are either run by a scan that never tries a start whose end is known to be
# missing (drop_blocks, sub_tags), or given a second alternative that takes the whole run a
# failed start was in, so that no later start in the run is tried (HOST_RE, ADDRESS_RE).
# Each gives exactly the matches of the former pattern (tests/test_hostile_mail.py checks).
# Each of these starts with a lookahead on its first letter: the re module then skips ahead
# to candidate letters instead of trying the word boundary at every position (the same
# matches, in less time). They are linear as they are: the
# first two end in a bounded run with nothing after it, which always matches, and ALT_RE's
# bounded run ends at the first quote, which the next start (alt=") must itself hold.
URL_MAX = 2000  # a URL's or a link's characters after its start
ALT_MAX = 500  # an alt text's characters
URL_RE = re.compile(rf"""(?i)(?=[hfw])\b(?:(https?|ftp)://|www\.)[^\s<>"'(){{}}\[\]\x00-\x1f\x7f]{{1,{URL_MAX}}}""")
HREF_RE = re.compile(rf"""(?is)(?=[hsa])\b(?:href|src|action)\s*=\s*["']?([^"'\s>]{{1,{URL_MAX}}})""")
ALT_RE = re.compile(rf"""(?is)(?=a)\balt\s*=\s*["']([^"']{{0,{ALT_MAX}}})["']""")
# Style sheets, scripts, the head and comments are not text: each block becomes a space. A
# block left open is kept as text (sub_tags drops its opening tag), as it always was.
# drop_blocks tries the pattern only at the starts DROP_START_RE finds, and no more for a
# kind of block that once failed to close.
DROP_BLOCK_RE = re.compile(r"(?is)<(style|script|head)\b.*?</\1\s*>|<!--.*?-->")
DROP_START_RE = re.compile(r"(?i)<(?:(style|script|head)\b|!--)")
# Whether two tag names are the same to DROP_BLOCK_RE's back reference (which ignores case as
# the re module does, not always as str.lower does: "İ" is "i" to it). Compiled when first
# needed, as the *_START patterns: only hostile mail needs them.
SAME_NAME = r"(?i)(\w+)\x00\1\Z"
# Tags that separate words become a space; every other tag becomes nothing, so that
# "Vi<b></b>agra" reads "viagra" (the classic spam trick against word filters). A tag is a
# start, then at most TAG_MAX characters other than ">", then ">" (sub_tags runs these).
TAG_MAX = 2000
BREAK_TAG_START = r"(?i)</?(?:br|p|div|td|th|tr|li|ul|ol|table|h[1-6]|hr|title|body|html|center|blockquote)\b"
TAG_START = r"<[!/?a-zA-Z]"
BREAK_TAG_RE, TAG_RE = (re.compile(f"{start}[^>]{{0,{TAG_MAX}}}>") for start in (BREAK_TAG_START, TAG_START))
IP_RE = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
# A host name in a Received hop (group 1): labels, dots and a top-level domain of letters.
# The second alternative takes the rest of a run of labels that holds none ("1.1.1.1..."),
# so that no label inside the run is tried as a start again.
HOST_RE = re.compile(r"(?i)\b((?:[a-z0-9-]+\.)+[a-z]{2,})\b|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*")
PATH_SPLIT_RE = re.compile(r"[/?&=.#_:;,+%~-]+")
URL_PARTS_RE = re.compile(r"(?i)(?:([a-z]+)://)?([^/?#:]*)(?::\d+)?(.*)", re.DOTALL)
LINK_RE = re.compile(r"(?i)(https?|ftp)://|www\.")
MSGID_DOMAIN_RE = re.compile(r"@([^>\s]+)")
# (These patterns are ASCII-only, so the standard re module serves, and compiles them in half
# the time: start-up is most of the cost of classifying one message.)
# Addresses by pattern, not email.utils.getaddresses: a third of header time went to its
# RFC 2822 parser, and spam's malformed address lists are exactly where it is least useful.
# An address is group 1; the second alternative takes a run of address characters that is
# not one, so that no letter inside the run is tried as a start again.
ADDRESS_RE = re.compile(r"([\w.+'=-]+@[\w-]+(?:\.[\w-]+)+)|[\w.+'=-]+")

ADDRESS_HEADERS = ("from", "to", "cc", "reply-to", "sender", "return-path")
WORD_HEADERS = ("x-mailer", "user-agent", "organization")
READ_HEADERS = frozenset(("subject", "message-id", "received", "content-type") + ADDRESS_HEADERS + WORD_HEADERS)


def decode_bytes(raw: bytes, charset: str | None) -> tuple[str, bool]:
    """Text of raw bytes in the declared charset; unknown or lying charsets fall back.

    Returns the text and whether the declared charset could be used as declared.
    """
    declared = bool(charset)
    if charset:
        charset = charset.strip().strip('"').lower()
        try:
            codecs.lookup(charset)
        except (LookupError, ValueError):
            charset = None
    if charset:
        try:
            return raw.decode(charset), True
        except UnicodeDecodeError:
            pass  # a lying charset: try UTF-8, then the declared one leniently
        except (LookupError, ValueError, TypeError):  # codecs that are not text codecs
            charset = None
    try:
        return raw.decode("utf-8"), not declared
    except UnicodeDecodeError:
        return raw.decode(charset or "cp1252", errors="replace"), False


def header_text(value: str) -> str:
    """A raw header value (8-bit bytes kept as surrogates) as text, RFC 2047 words decoded."""
    raw = value.encode("ascii", "surrogateescape")
    text, _ = decode_bytes(raw, None)
    if "=?" not in text:
        return text
    try:
        chunks = decode_header(text)
    except (email.errors.HeaderParseError, ValueError, LookupError, UnicodeError):
        return text
    out = []
    for chunk, cs in chunks:
        if isinstance(chunk, str):
            out.append(chunk)
        elif cs is None:
            out.append(chunk.decode("utf-8", errors="replace"))
        else:
            out.append(decode_bytes(chunk, cs)[0])
    return "".join(out)


def ecre_prefix(line: str) -> str:
    """The part of a line in which email.header's encoded-word pattern can match: up to its
    last "?=", with which every encoded word ends. Past it, each "=?cs?q?" would be a start
    that searches to the end of the line for its "?=", and finds none."""
    end = line.rfind("?=")
    return line[:end + 2] if end >= 0 else ""


ENCODING_MARK = re.compile(r"\?(?=[qQbB]\?)")  # the "?q?" of an encoded word, at its first "?"


def has_encoded_word(header: str) -> bool:
    """Whether email.header's encoded-word pattern (ecre) matches anywhere in ``header``, as
    decode_header asks first, in linear time. A match is "=?", a charset without "?" (it may
    hold a line end), "?q?" or "?b?", then text without a line end, and "?=". So each "?q?"
    that has a "?=" after it on its line matches when the "?" before it, across line ends, is
    one of "=?". Each such "?" is found by searching back from a "?q?" no further than the "?"
    before it, so no character is read twice."""
    start = 0
    for line in header.split("\n"):
        last = line.rfind("?=")  # the encoded text may be empty: "?q?" up to last - 3
        for mark in ENCODING_MARK.finditer(line, 0, max(last, 0)):
            before = header.rfind("?", 0, start + mark.start())
            if before > 0 and header[before - 1] == "=":
                return True
        start += len(line) + 1
    return False


def decode_header(header: str) -> list[tuple]:
    """email.header.decode_header for a str, in linear time: the same (bytes or str,
    charset) chunks. Its pattern for encoded words (email.header.ecre) is
    searched only where it can match (has_encoded_word, ecre_prefix: from every start that has
    no "?=" after it, it searches to the end of the line),
    a line's pieces are read by index and the blanks between words dropped in one pass (not by
    list.pop(0) and del, which cost the square of a field's words), and runs of words are
    joined once, not by repeated concatenation."""
    import binascii
    import email.base64mime
    import email.quoprimime
    from email.header import ecre  # only for RFC 2047 words: an import most messages never need

    if not has_encoded_word(header):
        return [(header, None)]
    words = []
    for line in header.splitlines():
        head = ecre_prefix(line)
        parts = ecre.split(head)  # unencoded text, then (charset, encoding, encoded, unencoded) * k
        parts[-1] += line[len(head):]  # the rest holds no encoded word: it is unencoded text
        unencoded = parts[0].lstrip()
        if unencoded:
            words.append((unencoded, None, None))
        for i in range(1, len(parts), 4):
            words.append((parts[i + 2], parts[i + 1].lower(), parts[i].lower()))
            if parts[i + 3]:
                words.append((parts[i + 3], None, None))
    # whitespace between two encoded words is dropped
    drop = {n - 1 for n, w in enumerate(words)
            if n > 1 and w[1] and words[n - 2][1] and words[n - 1][0].isspace()}
    if drop:
        words = [w for n, w in enumerate(words) if n not in drop]
    collapsed: list[tuple[list, str | None]] = []
    for encoded_string, encoding, charset in words:
        if encoding is None:
            word = encoded_string
        elif encoding == "q":
            word = email.quoprimime.header_decode(encoded_string)
        else:
            paderr = len(encoded_string) % 4  # Postel's law: add missing padding
            if paderr:
                encoded_string += "==="[:4 - paderr]
            try:
                word = email.base64mime.decode(encoded_string)
            except binascii.Error:
                raise email.errors.HeaderParseError("Base64 decoding error")
        if isinstance(word, str):
            word = bytes(word, "raw-unicode-escape")
        # consecutive words of one charset become one chunk; unencoded ones joined by spaces
        if collapsed and collapsed[-1][1] == charset:
            collapsed[-1][0].append(word)
        else:
            collapsed.append(([word], charset))
    return [((b" " if charset is None else b"").join(run), charset) for run, charset in collapsed]


def domain_tokens(prefix: str, host: str) -> list[str]:
    """The host and its parent domains: "url:www.paypal.com", "url:paypal.com", "url:com"."""
    host = host.lower().strip(".")
    if IP_RE.match(host):
        # Links to bare IP addresses are a phishing and spam habit; the number itself is noise.
        return [f"{prefix}ip"]
    labels = host.split(".")[-5:]
    return [f"{prefix}" + ".".join(labels[i:]) for i in range(len(labels))]


def url_tokens(url: str) -> list[str]:
    m = URL_PARTS_RE.match(url)
    scheme, host, rest = (m.group(1) or "http").lower(), m.group(2), m.group(3)
    toks = [f"url:scheme:{scheme}"]
    if "@" in host:
        toks.append("url:userinfo")  # http://paypal.com@evil.example/ hides the real host
        host = host.rsplit("@", 1)[1]
    toks += domain_tokens("url:", host)
    pieces = [p.lower() for p in PATH_SPLIT_RE.split(rest) if p][:10]
    toks += [f"url:path:{p}" if len(p) <= 20 else f"url:path:skip {len(p) // 10 * 10}" for p in pieces]
    return toks


def drop_blocks(text: str) -> str:
    """DROP_BLOCK_RE.sub(" ", text), in linear time. The pattern is tried only at the starts
    DROP_START_RE finds, and not at all for a kind of block that has already failed to close:
    a block that does not close is searched to the end of the text, and so would every later
    start of its kind be ("<style>" * 200000 took minutes), with the same result."""
    out, last, pos = [], 0, 0
    unclosed: set[str] = set()  # tag names (or "!--") with no closing tag after some start
    while True:
        m = DROP_START_RE.search(text, pos)
        if not m:
            break
        start, name = m.start(), m.group(1) or "!--"
        if name in unclosed or any(re.match(SAME_NAME, f"{u}\0{name}") for u in unclosed):
            unclosed.add(name)
            pos = start + 1
            continue
        block = DROP_BLOCK_RE.match(text, start)
        if block:
            out += (text[last:start], " ")
            last = pos = block.end()
        else:
            unclosed.add(name)
            pos = start + 1
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def sub_tags(text: str, tag_re: re.Pattern, start: str, repl: str, limit: int = TAG_MAX) -> str:
    """tag_re.sub(repl, text) in linear time, where tag_re is ``start``, at most ``limit``
    characters other than ">", then ">". Run as it is, the pattern looks ``limit``
    characters ahead from every start in a longer stretch without ">", and fails ("<p" *
    1000000: 5 s). So it runs only over stretches of short pieces (the text between two ">"),
    and a long piece is read here: a tag ends at the first ">" after its start, so a piece
    holds at most one, from the first start near enough to the piece's end."""
    cut = text.rfind(">") + 1  # no tag ends after the last ">"
    out, done = [], 0  # text[:done] is read
    # A piece longer than limit holds one of these blocks whole: the blocks without ">" lead
    # to every long piece, in a look at each block.
    step = max(1, (limit + 1) // 2)
    for i in range(0, cut, step):
        if i < done or text.find(">", i, i + step) >= 0:
            continue
        piece, end = text.rfind(">", 0, i) + 1, text.find(">", i)  # the piece holding the block
        if end - piece <= limit:
            continue
        out.append(tag_re.sub(repl, text[done:piece]))
        # a start is at most 12 characters long ("</blockquote")
        start_re = re.compile(start)
        m = start_re.search(text, max(piece, end - limit - 12), end)
        while m and end - m.end() > limit:
            m = start_re.search(text, m.start() + 1, end)
        out.append(text[piece:m.start()] + repl if m else text[piece:end + 1])
        done = end + 1
    out += (tag_re.sub(repl, text[done:cut]), text[cut:])
    return "".join(out)


def html_to_text(text: str, out: list[str], off: frozenset = frozenset()) -> str:
    """Visible text of HTML; link targets and image alt text go to ``out`` as tokens/words."""
    import html
    for m in HREF_RE.finditer(text):
        target = html.unescape(m.group(1))
        if "urls" in off:
            out.append(target)  # ablation: the link read as words
        elif LINK_RE.match(target):
            out.extend(url_tokens(target))
        elif target.lower().startswith("mailto:"):
            out.append("url:mailto")
    for m in ALT_RE.finditer(text):
        out.append(m.group(1))  # alt text is read like body text by the caller
    text = drop_blocks(text)
    text = sub_tags(text, BREAK_TAG_RE, BREAK_TAG_START, " ")
    text = sub_tags(text, TAG_RE, TAG_START, "")
    return html.unescape(text)


def addresses(text: str) -> list[str]:
    """The mail addresses in a text (ADDRESS_RE's group 1)."""
    return [a for a in ADDRESS_RE.findall(text) if a]


def without_addresses(text: str) -> str:
    """The text with a space for each of its mail addresses."""
    return ADDRESS_RE.sub(lambda m: " " if m.group(1) else m.group(), text)


def hosts(text: str) -> list[str]:
    """The host names in a text (HOST_RE's group 1)."""
    return [h for h in HOST_RE.findall(text) if h]


def _bucket(n: int) -> str:
    for limit in (0, 1, 2, 5, 10, 25):
        if n <= limit:
            return str(limit)
    return "many"


# -- header rules: one function per kind of field, (name, decoded text, settings) -> tokens --------

def subject_rule(name: str, text: str, s: TokenizerSettings) -> list[str]:
    # Header tokens as a whole: log-loss 0.113 without, 0.072 with (ablation).
    out = words(text, s, "subject:")
    if "!" in text:
        out.append("subject:!")
    letters = [c for c in text if c.isalpha()]
    if len(letters) >= 8 and sum(c.isupper() for c in letters) > 0.7 * len(letters):
        out.append("subject:shouting")
    return out


def address_rule(name: str, text: str, s: TokenizerSettings, addrs: list[str]) -> list[str]:
    out = [] if addrs else [f"{name}:none"]
    for addr in addrs[:20]:
        addr = addr.lower()
        out.append(f"{name}:addr:{addr}")
        out += domain_tokens(f"{name}:dom:", addr.rsplit("@", 1)[1])[:3]
    # the display names: what is left once the addresses are taken out
    return out + words(without_addresses(text), s, f"{name}:name:")[:10]


def word_header_rule(name: str, text: str, s: TokenizerSettings) -> list[str]:
    return words(text, s, f"{name}:")[:20]


def message_id_rule(name: str, text: str, s: TokenizerSettings) -> list[str]:
    m = MSGID_DOMAIN_RE.search(text)
    return domain_tokens("message-id:dom:", m.group(1))[:2] if m else ["message-id:none"]


def received_rule(name: str, text: str, s: TokenizerSettings) -> list[str]:
    # Relay host names (not the whole hop: dates, ids and IPs are noise); only the registered
    # domain, so a new relay of a known provider still counts (docs/mail_ablation.md).
    return ["received:" + ".".join(host.lower().split(".")[-2:]) for host in hosts(text)[:4]]


def content_type_rule(name: str, text: str, s: TokenizerSettings) -> list[str]:
    return [f"ct:{text.split(';', 1)[0].strip().lower()}"]


# Which rule reads which field, and the mail_rules_off name that turns it off.
HEADER_RULES = {"subject": (subject_rule, "headers"), "message-id": (message_id_rule, "headers"),
                "received": (received_rule, "received"), "content-type": (content_type_rule, "headers"),
                **{h: (word_header_rule, "headers") for h in WORD_HEADERS}}


def header_tokens(msg: email.message.Message, s: TokenizerSettings) -> list[str]:
    off = s.mail_rules_off
    out: list[str] = []
    seen_names = set()
    recipients = 0
    for name, value in msg.raw_items():
        name = name.lower().strip()
        if not name or len(name) > 40:
            continue
        if name not in seen_names and "header-names" not in off:
            # Which headers a message has says who sent it: mailing-list software adds
            # List-Id and X-Mailing-List, bulk mailers add their own X- headers
            # (docs/mail_ablation.md).
            seen_names.add(name)
            out.append(f"hdr:{name}")
        if name not in READ_HEADERS:
            continue  # only its name counts: not worth decoding (half of all header fields)
        tokens, n = field_tokens(name, value, s)
        out += tokens
        recipients += n
    if "recipients" not in off:
        out.append(f"to:count:{_bucket(recipients)}")
    return out


def field_tokens(name: str, value, s: TokenizerSettings) -> tuple[list[str], int]:
    """The tokens of one header field that a rule reads (``name``, lower case, in READ_HEADERS;
    ``value``, its raw value as compat32 holds it), and the recipients it adds to To: and Cc:'s
    count. (The compiled kernel calls this for a field whose value it does not read itself:
    8-bit bytes or RFC 2047 words.)"""
    off = s.mail_rules_off
    text = header_text(value) if isinstance(value, str) else ""
    if name in ADDRESS_HEADERS:
        addrs = addresses(text)
        return (address_rule(name, text, s, addrs) if "headers" not in off else []), \
            (len(addrs) if name in ("to", "cc") else 0)
    rule, switch = HEADER_RULES[name]
    return (rule(name, text, s) if switch not in off else []), 0


# The standard library parses a header's parameters (get_param, get_boundary, get_content_charset)
# in time that grows with the square of its length (CPython gh-136063; also inside the parser,
# which asks a multipart for its boundary); no real Content-Type or
# Content-Disposition comes near this many bytes.
MAX_PARAM_HEADER = 2000
# The limits that the compiled kernel's mail rules read (nbtext/_c/mail.h), defined above once:
# features.kernel hands them to it by name.
KERNEL_LIMITS = {"params": MAX_PARAM_HEADER, "parts": MAX_PARTS, "urls": MAX_URLS, "url_run": URL_MAX,
                 "alt_run": ALT_MAX, "tag_run": TAG_MAX}


class BoundedMessage(email.message.Message):
    """A message (and, as the parser's factory, each of its parts) whose parameters are parsed
    from at most MAX_PARAM_HEADER bytes of their header."""

    def _get_params_preserve(self, failobj, header):
        value = self.get(header)
        if isinstance(value, str) and len(value) > MAX_PARAM_HEADER:
            self.replace_header(header, value[:MAX_PARAM_HEADER])
        return super()._get_params_preserve(failobj, header)


def body_tokens(msg: email.message.Message, s: TokenizerSettings) -> tuple[list[str], list[str]]:
    """(namespaced tokens, body texts) from every part, walked without recursion: the body's
    words are the words of each text in turn."""
    off = s.mail_rules_off
    meta: list[str] = []
    body: list[str] = []
    budget = s.max_bytes
    stack = [(msg, 0)]
    parts = 0
    while stack:
        part, depth = stack.pop()
        parts += 1
        if parts > MAX_PARTS:
            meta.append("mime:too-many-parts")
            break
        ctype = part.get_content_type()
        if part.is_multipart():
            if depth >= MAX_DEPTH:
                meta.append("mime:too-deep")
                continue
            if part is not msg:
                meta.append(f"ct:{ctype}")
            payload = part.get_payload()
            if isinstance(payload, list):
                stack.extend((p, depth + 1) for p in reversed(payload) if isinstance(p, email.message.Message))
            continue
        if part is not msg:
            meta.append(f"ct:{ctype}")
        filename = part.get_param("filename", header="content-disposition") or part.get_param("name")
        if isinstance(filename, tuple):  # RFC 2231 encoded
            filename = filename[2] or ""
        if filename:
            ext = str(filename).rsplit(".", 1)[-1].lower() if "." in str(filename) else "none"
            meta.append(f"filename:ext:{ext[:10]}")
        if part.get_content_maintype() != "text" or (filename and not ctype.startswith("text/")):
            continue  # attachments: their type and extension, never their bytes
        cte = str(part.get("content-transfer-encoding", "")).strip().lower()
        if cte in ("base64", "quoted-printable"):
            meta.append(f"cte:{cte}")
        raw = part.get_payload(decode="decode" not in off)
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "surrogateescape")  # ablation "decode" only
        if not isinstance(raw, bytes):
            meta.append("error:payload")
            continue
        raw = raw[:budget]
        budget -= len(raw)
        charset = part.get_content_charset()
        text, as_declared = decode_bytes(raw, charset)
        if charset:
            meta.append(f"charset:{charset[:20]}")
        if not as_declared:
            meta.append("charset:fallback")
        if part.get_content_subtype() == "html" and "html" not in off:
            # Spam is mostly HTML with little text; ham is mostly plain text. Markup read as
            # words costs accuracy on ham (docs/mail_ablation.md).
            alt_and_links: list[str] = []
            text = html_to_text(text, alt_and_links, off)
            for t in alt_and_links:
                if t.startswith("url:"):
                    meta.append(t)
                else:
                    body.append(t)
        # One scan: each URL becomes tokens (the first MAX_URLS) and a space in the text.
        rest, last = [], 0
        for n, m in enumerate(URL_RE.finditer(text) if "urls" not in off else ()):
            if n < MAX_URLS:
                meta += url_tokens(m.group(0))
            rest.append(text[last:m.start()])
            last = m.end()
        if rest:
            rest.append(text[last:])
            text = " ".join(rest)
        body.append(text)
        if budget <= 0:
            meta.append("mime:truncated")
            break
    if "mime" in off:
        meta = [t for t in meta if not t.startswith(("ct:", "cte:", "charset:", "filename:"))]
    return meta, body


# A header field line as the standard parser's feedparser recognizes one (headerRE, less its
# "From " envelope case, which goes to the standard parser).
FIELD_RE = re.compile(r"[\041-\071\073-\176]+:")


def parse_message(data: bytes) -> email.message.Message:
    """The message as email.message_from_bytes (compat32) reads it, with a shortcut for the
    common case of a single-part message whose header block is plain field lines ending in a
    blank line: its fields are set as the standard parser's policy reads them and the rest is
    the payload, with no line-by-line pass over the body. Anything else (multipart, message/*,
    envelope or malformed lines, bare CRs) goes to the standard parser. Most mail takes the
    shortcut, identical field for field and payload for payload (tests/test_read_mail.py), in
    about half the parser's time."""
    text = data.decode("ascii", "surrogateescape")
    lf, crlf = text.find("\n\n"), text.find("\n\r\n")
    if lf < 0 and crlf < 0:
        return email.message_from_bytes(data, _class=BoundedMessage)
    end = lf if crlf < 0 or 0 <= lf < crlf else crlf
    head, body = text[:end], text[end + (2 if end == lf else 3):]
    if head.count("\r") != head.count("\r\n"):
        return email.message_from_bytes(data, _class=BoundedMessage)
    msg = BoundedMessage()
    policy = msg.policy  # compat32, as message_from_bytes (email.policy is not imported for it)
    field: list[str] = []
    for line in head.split("\n"):
        line += "\n"
        if line[0] in " \t" and field:
            field.append(line)
        elif FIELD_RE.match(line):
            if field:
                msg.set_raw(*policy.header_source_parse(field))
            field = [line]
        else:
            return email.message_from_bytes(data, _class=BoundedMessage)
    if field:
        msg.set_raw(*policy.header_source_parse(field))
    if msg.get_content_maintype() in ("multipart", "message"):
        return email.message_from_bytes(data, _class=BoundedMessage)
    msg.set_payload(body)
    return msg


# A header block of fields (the name next to its colon) and folded lines ended by LF or CRLF,
# then an empty line: the common message, which readable_header returns at one look.
WELL_FORMED_HEADER = re.compile(rb"(?:(?:[!-9;-~]+:|[ \t])[^\r\n]*\r?\n)*\r?\n")


def readable_header(data: bytes) -> bytes:
    """The message with a header block the standard parser reads to its end: up to the first
    blank line (as looks_like_mail reads it), a line that is neither a field nor a folded one
    is moved, with the folded lines after it, to the start of the body, and an obsolete field
    (RFC 5322's blanks before the colon) loses its blanks. The parser ends the header at
    either and reads every field after it as body text, so that one line inserted near the top
    made a message headerless (issue 32's probe: a line of junk as the second line of each
    held-out spam made half of them ham); moved, its words are still read, as body text, which
    is what the parser makes of a body that lacks the blank line before it. The message itself
    when every line is well formed, as in every message of spamassassin-2002."""
    if WELL_FORMED_HEADER.match(data):
        return data
    header: list[bytes] = []
    moved: list[bytes] = []
    nl, pos, mended, to_body = None, 0, False, False
    for line in lines_of(data):
        if not line.strip():
            break
        pos += len(line)
        nl = nl or line[len(line.rstrip(b"\r\n")):] or None
        if line[:1] not in b" \t":  # (a folded line goes where the line it folds went)
            field = FIELD_LINE.match(line)
            to_body = field is None
            if field and field.group(2):
                line, mended = line[:field.start(2)] + line[field.end(2):], True
        (moved if to_body else header).append(line)
    if not moved and not mended:
        return data
    if header and not header[-1].endswith((b"\n", b"\r")):
        header[-1] += nl or b"\n"
    blank_end = LINE.match(data, pos).end()
    blank = data[pos:blank_end] or nl or b"\n"
    return b"".join(header) + blank + b"".join(moved) + data[blank_end:]


def utf8_bytes(text: str) -> bytes:
    """A str as bytes: undecodable bytes (surrogateescape) back as they were, any other lone
    surrogate (a library caller's str may hold one: '\\udd00' raised UnicodeEncodeError) as
    its UTF-8 form."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def mail_tokens(data: bytes | str, s: TokenizerSettings) -> list[str]:
    tokens, texts, chars = mail_parts(data, s)
    return tokens + add_ngrams(text_words(texts, s), s, chars)


def _after_first_line(data: bytes) -> bytes:
    """What follows the first line, ended by LF, CRLF or a bare CR as the parser ends lines (a
    classic Mac mbox has no LF at all: cut at the first LF, its whole header went with the
    separator line)."""
    cr, lf = data.find(b"\r"), data.find(b"\n")
    if cr < 0 and lf < 0:
        return b""
    end = lf if cr < 0 or 0 <= lf < cr else cr
    return data[end + (2 if data[end:end + 2] == b"\r\n" else 1):]


def mail_parts(data: bytes | str, s: TokenizerSettings) -> tuple[list[str], list[str], bool]:
    """A message as nbtext.text.tokenizer.Tokenizer.parts gives a document."""
    if isinstance(data, str):
        data = utf8_bytes(data)
    data = data.lstrip(b"\r\n")
    if data.startswith(b"From "):  # an mbox separator line is not a header
        data = _after_first_line(data)
    data = readable_header(data)
    try:
        msg = parse_message(data)  # (compat32: the fastest of the library's policies, docs/bench.md)
        meta, body = body_tokens(msg, s)
        head = header_tokens(msg, s)
    except RecursionError:
        # The standard parser recurses once per MIME level; a message nested deeper than
        # Python's stack is an attack, not mail: read its bytes as plain words.
        return ["mime:too-deep"], [decode_text(data)], s.mail_char_ngrams
    out = head + meta
    # Header names and URLs come from raw bytes; a NUL must never reach a token (the model
    # file separates tokens with NUL, and the fuzz tests found one inside a "www." URL).
    # Body words are word-pattern matches, which never hold one.
    if any("\x00" in t for t in out):
        out = [t.replace("\x00", "\ufffd") for t in out]
    return out, body, s.mail_char_ngrams
