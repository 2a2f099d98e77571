"""HTTP/JSON: rspamd's protocol for checks (POST /checkv2), learning, /ping and /metrics.

One request per connection (the reply says `Connection: close`), its body sized by
Content-Length (chunked bodies are refused with 411). Replies are JSON, as rspamd's:

    POST /checkv2         {"is_skipped": false, "score": 9.7, "required_score": 5.0,
                           "action": "add header", "symbols": {"NBTEXT_SPAM": {...}}, ...}
    POST /learnspam, /learnham      {"success": true}  (208 when it was learned before)
    POST /forget                    {"success": true}  (404 when it never was)
    GET  /ping                      pong
    GET  /metrics                   Prometheus' text format

A `User:` (or rspamd's `Deliver-To:`) header picks a user's model as spamd's `User:` does.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from .scoring import Verdict
from .spamd import blank_line_end, content_length, symbols

STATUS = {200: "OK", 208: "Already Reported", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
          405: "Method Not Allowed", 408: "Request Timeout", 411: "Length Required", 413: "Payload Too Large",
          500: "Internal Server Error", 503: "Service Unavailable"}
REQUEST_LINE = re.compile(rb"([A-Z]{1,10}) (/[!-~]{0,1000}) HTTP/1\.[01]\r?\Z")
MAX_HEADERS = 100
ROUTES = {("POST", "/checkv2"): "checkv2", ("POST", "/check"): "checkv2", ("POST", "/learnspam"): "learnspam",
          ("POST", "/learnham"): "learnham", ("POST", "/forget"): "forget", ("GET", "/ping"): "ping",
          ("GET", "/metrics"): "metrics"}


class HttpError(Exception):
    def __init__(self, status: int, text: str):
        super().__init__(text)
        self.status, self.text = status, text

    def reply(self) -> bytes:
        return reply(self.status, {"error": self.text})


@dataclass
class Request:
    method: str
    path: str
    route: str | None
    length: int | None = None
    user: str | None = None
    headers: dict = field(default_factory=dict)
    body: bytes = b""

    @property
    def has_body(self) -> bool:
        return self.method == "POST"


def head_end(buf: bytes | bytearray, scanned: int = 0) -> int:
    """Where the request's body starts, or -1 (``scanned``: the bytes already searched)."""
    return blank_line_end(buf, max(scanned - 2, 0))


def parse_head(head: bytes) -> Request:
    lines = head.split(b"\n")
    m = REQUEST_LINE.match(lines[0])
    if not m:
        raise HttpError(400, "malformed request line")
    method, path = m.group(1).decode(), m.group(2).decode().split("?", 1)[0]
    route = ROUTES.get((method, path))
    if route is None:
        if any(p == path for _, p in ROUTES):
            raise HttpError(405, f"{method} is not allowed on {path}")
        raise HttpError(404, f"no such endpoint: {path}")
    req = Request(method, path, route)
    fields = [ln.rstrip(b"\r") for ln in lines[1:]]
    fields = [f for f in fields if f]
    if len(fields) > MAX_HEADERS:
        raise HttpError(400, "too many header fields")
    for f in fields:
        name, colon, value = f.partition(b":")
        if not colon or not name or name != name.strip():
            raise HttpError(400, "malformed header field")
        name, value = name.lower().decode("latin-1"), value.strip()
        if any(b < 0x20 and b != 9 or b == 0x7f for b in value):
            raise HttpError(400, f"control characters in header {name}")
        req.headers[name] = value.decode("utf-8", "surrogateescape")
        if name == "content-length":
            length = content_length(value)
            if length is None:
                raise HttpError(400, "Content-Length is not a number")
            if req.length not in (None, length):  # (RFC 9110 8.6: two lengths are an error, not a choice)
                raise HttpError(400, f"Content-Length given twice, as {req.length} and {length}")
            req.length = length
    if "transfer-encoding" in req.headers:
        raise HttpError(411, "send the message with a Content-Length (chunked bodies are not read)")
    if req.length is None and req.method == "POST":
        raise HttpError(411, "a POST needs a Content-Length")
    req.user = req.headers.get("user") or req.headers.get("deliver-to") or None
    return req


def reply(status: int, payload, content_type: str = "application/json") -> bytes:
    body = payload if isinstance(payload, bytes) else (
        payload.encode() if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False).encode())
    head = (f"HTTP/1.1 {status} {STATUS.get(status, 'Error')}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    return head.encode() + body


def action(v: Verdict) -> str:
    """rspamd's action: "add header" for spam (the MTA tags or files it), else "no action"."""
    return "add header" if v.spam else "no action"


def check_reply(v: Verdict, model_name: str, seconds: float) -> bytes:
    """/checkv2's JSON, with the tokens of v's explanation as the symbol's options."""
    name = symbols(v)
    e = v.explanation or {}
    options = [f"{t}:{w:+.3f}" for t, w in e.get("for", [])] + [f"{t}:{w:+.3f}" for t, w in e.get("against", [])]
    score = round(v.score, 4)
    payload = {
        "is_skipped": False,
        "score": score,
        "required_score": round(v.required, 4),
        "action": action(v),
        "symbols": {name: {"name": name, "score": score, "metric_score": score,
                           "description": f"nbtext: {v.shown_label}, P({v.label}) = {v.probability:.6f} "
                                          f"(model {model_name})",
                           "options": options}},
        "messages": {},
        "nbtext": {"label": v.label, "probability": v.probability, "unsure": v.unsure,
                   "p_spam": v.p_positive, "threshold": v.threshold, "model": model_name},
        "time_real": round(seconds, 6),
    }
    return reply(200, payload)
