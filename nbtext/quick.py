"""The procmail path: `nbtext classify` of one message without importing click.

A mail filter runs `nbtext classify` once per message, so start-up is the whole cost, and
click alone takes about as long to import as the rest of the run. quick_classify() reads the
plain forms of that command itself (-m/--model, one FILE or -, --exit-code, -p/--passthrough,
--positive, --threshold, --unsure, -q) and answers them exactly as the click command does,
through the same functions below. Anything else (--help, --explain, --learn, a malformed
value, an unknown option) returns None and goes to click, which owns usage errors.
"""
from __future__ import annotations

import os
import sys

from .errors import NbtextError

VALUED = {"-m": "model", "--model": "model", "--positive": "positive",
          "--threshold": "threshold", "--unsure": "unsure"}
FLAGS = {"--exit-code": "exit_code", "-p": "passthrough", "--passthrough": "passthrough",
         "-q": "quiet", "--quiet": "quiet"}


def parse(argv: list[str]) -> dict | None:
    """The options of a plain classify call, or None when click should read argv."""
    if not argv or argv[0] != "classify":
        return None
    opts: dict = {"model": os.environ.get("NBTEXT_MODEL") or None, "file": None, "exit_code": False,
                  "passthrough": False, "quiet": False, "positive": None, "threshold": None,
                  "unsure": None}
    args, i = argv[1:], 0
    while i < len(args):
        a = args[i]
        name, eq, value = a.partition("=")
        if a.startswith("--") and eq and name in VALUED:
            opts[VALUED[name]], i = value, i + 1
        elif a in VALUED and i + 1 < len(args):
            opts[VALUED[a]], i = args[i + 1], i + 2
        elif a in FLAGS:
            opts[FLAGS[a]], i = True, i + 1
        elif (a == "-" or not a.startswith("-")) and opts["file"] is None:
            opts["file"], i = a, i + 1
        else:
            return None
    if not opts["model"]:
        return None
    try:
        if opts["threshold"] is not None:
            opts["threshold"] = float(opts["threshold"])
        if opts["unsure"] is not None:
            lo, hi = (float(x) for x in opts["unsure"].split(","))
            opts["unsure"] = (lo, hi)
    except ValueError:
        return None
    opts["file"] = opts["file"] or "-"
    return opts


def classify_document(model_path: str, file: str, positive: str | None, threshold: float | None,
                      unsure: tuple[float, float] | None):
    """(scorer, the document's bytes, label, probability of the label, unsure)."""
    from .decision import override
    from .read import read_bytes
    from .score import FastScorer

    scorer = FastScorer(model_path)
    override(scorer.decision, scorer.classes, threshold, unsure, positive)
    data = read_bytes(file)
    label, prob, is_unsure, _ = scorer.score(data)
    return scorer, data, label, prob, is_unsure


def write_verdict(data: bytes, label: str, prob: float, unsure: bool, passthrough: bool) -> None:
    if passthrough:
        sys.stdout.buffer.write(with_headers(data, label if not unsure else "unsure", prob))
    else:
        sys.stdout.write(f"{label}\t{prob:.6f}\n")
    sys.stdout.flush()


def exit_status(scorer, label: str, unsure: bool) -> int:
    """bogofilter's: 0 the positive class, 1 another, 2 unsure."""
    pos = scorer.decision.positive or (scorer.classes[-1] if len(scorer.classes) == 2 else None)
    return 2 if unsure else 0 if label == pos else 1


def quick_classify(argv: list[str]) -> int | None:
    """Run a plain classify call and return its exit status; None: not one of ours."""
    opts = parse(argv)
    if opts is None:
        return None
    try:
        try:
            scorer, data, label, prob, unsure = classify_document(
                opts["model"], opts["file"], opts["positive"], opts["threshold"], opts["unsure"])
        except NbtextError as e:
            print(f"nbtext: error: {e}", file=sys.stderr)
            return 3 if opts["exit_code"] else 1
        write_verdict(data, label, prob, unsure, opts["passthrough"])
        return exit_status(scorer, label, unsure) if opts["exit_code"] else 0
    except KeyboardInterrupt:
        print("\nnbtext: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except MemoryError:
        print("nbtext: error: out of memory", file=sys.stderr)
        return 1


def with_headers(data: bytes, label: str, prob: float) -> bytes:
    """The message with X-Nbtext-Class/-Score headers added at the end of its header block
    (an existing X-Nbtext-* header is replaced), as bogofilter -p does for procmail."""
    nl = b"\r\n" if b"\r\n" in data[:2000] else b"\n"
    head, sep, body = data.partition(nl + nl)
    if not sep:
        head, body = (data, b"") if data.strip() and not data.startswith(nl) else (b"", data)
    lines = [ln for ln in head.split(nl) if ln] if head else []
    kept, skip = [], False
    for ln in lines:
        if ln[:1] in (b" ", b"\t") and skip:
            continue
        skip = ln.lower().startswith((b"x-nbtext-class:", b"x-nbtext-score:"))
        if not skip:
            kept.append(ln)
    kept += [f"X-Nbtext-Class: {label}".encode(), f"X-Nbtext-Score: {prob:.6f}".encode()]
    return nl.join(kept) + nl + nl + body
