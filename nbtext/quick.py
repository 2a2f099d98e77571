"""`nbtext classify`: its options, defined once, and the click-free path for its plain forms.

A mail filter runs `nbtext classify` once per message, so start-up is the whole cost, and click
alone takes about as long to import as the rest of the run. CLASSIFY_OPTIONS is the one
definition of classify's options: nbtext.cli builds the click command from it, and
quick_classify() reads argv with it when every option given is a flag or a plain value (a
string, a number, a pair). Both run the same function, run_classify. Anything else (--help,
--explain, --learn, a malformed value, an unknown option) returns None and goes to click,
which owns usage errors.
"""
from __future__ import annotations

import os
import sys

# (flags, parameter, kind, help). Kinds: "flag"; "str", "float", "pair" (two floats LOW,HIGH),
# which quick_classify reads too; "count" (an integer >= 1), which only click reads.
MODEL_OPTION = (("-m", "--model"), "model_path", "str", "Model file (default: $NBTEXT_MODEL).")
QUIET_OPTION = (("-q", "--quiet"), "quiet", "flag", "Print nothing but results and errors.")
THRESHOLD_OPTION = (("--threshold",), "threshold", "float", "Override the model's threshold on P(positive).")
UNSURE_OPTION = (("--unsure",), "unsure", "pair", "Override the model's unsure band on P(positive) (LOW,HIGH).")
CLASSIFY_OPTIONS = [
    MODEL_OPTION,
    (("--exit-code",), "exit_code", "flag",
     "Exit 0 for the positive class, 1 for another, 2 unsure, 3 error (as bogofilter)."),
    (("--positive",), "positive", "str", "The positive class (default: the model's, spam)."),
    THRESHOLD_OPTION,
    UNSURE_OPTION,
    (("--explain",), "explain", "count", "Also print the N tokens that pushed hardest for and against the label."),
    (("-p", "--passthrough"), "passthrough", "flag",
     "Write the message back with X-Nbtext-Class and X-Nbtext-Score headers."),
    (("-u", "--learn"), "learn_verdict", "flag",
     "Also learn the message as its verdict (not when unsure), as bogofilter -u."),
    (("--row",), "row", "str", "A table model's row as COLUMN=VALUE,... (instead of a CSV line in FILE)."),
    QUIET_OPTION,
]


def parse_pair(value: str, cast=float) -> tuple:
    """"LOW,HIGH" as two numbers (ValueError otherwise)."""
    lo, hi = (cast(x) for x in value.split(","))
    return lo, hi


def parse(argv: list[str]) -> dict | None:
    """The parameters of a plain classify call, or None when click should read argv."""
    if not argv or argv[0] != "classify":
        return None
    by_flag = {flag: (dest, kind) for flags, dest, kind, _ in CLASSIFY_OPTIONS for flag in flags}
    opts: dict = {dest: (False if kind == "flag" else None) for _, dest, kind, _ in CLASSIFY_OPTIONS}
    opts["model_path"] = os.environ.get("NBTEXT_MODEL") or None
    opts["file"] = None
    args, i = argv[1:], 0
    try:
        while i < len(args):
            name, eq, value = args[i].partition("=")
            dest, kind = by_flag.get(name if name.startswith("--") else args[i], (None, None))
            if kind == "flag" and not eq:
                opts[dest], i = True, i + 1
            elif kind in ("str", "float", "pair") and (eq or i + 1 < len(args)):
                value, i = (value, i + 1) if eq else (args[i + 1], i + 2)
                opts[dest] = {"str": str, "float": float, "pair": parse_pair}[kind](value)
            elif (args[i] == "-" or not args[i].startswith("-")) and opts["file"] is None and not kind:
                opts["file"], i = args[i], i + 1
            else:
                return None
    except ValueError:
        return None
    if not opts["model_path"]:
        return None
    opts["file"] = opts["file"] or "-"
    return opts


def run_classify(model_path: str, file: str, exit_code: bool = False, positive: str | None = None,
                 threshold: float | None = None, unsure: tuple | None = None, explain: int | None = None,
                 passthrough: bool = False, learn_verdict: bool = False, quiet: bool = False,
                 row: str | None = None) -> int:
    """Classify one document (or a table model's row) and print the verdict; returns the exit status."""
    from .fastscore import FastScorer, TableFile
    from .process import stdout
    from .read import MAX_DOCUMENT_BYTES, Document, read_bytes

    out = stdout()
    try:
        scorer = FastScorer(model_path)
    except TableFile as table:
        from .errors import NbtextError
        from .tablecli import classify_row

        if explain or passthrough or learn_verdict:
            raise NbtextError(f"{model_path} is a table model: --explain, --passthrough and --learn are "
                              "for text models") from None
        return classify_row(table.header, table.payload, model_path, file, row, exit_code, positive,
                            threshold, unsure, out)
    if row is not None:
        from .errors import NbtextError

        raise NbtextError(f"--row: {model_path} is a text model; --row is for table models")
    scorer.decision.choose(scorer.classes, positive, threshold, unsure)
    data = read_bytes(file, limit=None if passthrough else MAX_DOCUMENT_BYTES)  # (passthrough: all of it)
    if explain:
        e = scorer.explain(data, explain)
        label, prob, unsure_ = e["label"], e["probability"], e["unsure"]
    else:
        label, prob, unsure_, _ = scorer.score(data)
    if learn_verdict and not unsure_:
        from .operations import learn_in_place

        learn_in_place(model_path, [Document(file, data)], label, forget=False)
    if passthrough:
        out.buffer.write(with_headers(data, label if not unsure_ else "unsure", prob))
    else:
        out.write(f"{label}\t{prob:.6f}\n")
    if explain:
        why = sys.stderr if passthrough else out
        if why is not None:
            why.write(f"prior\t{e['prior']:+.4f}\nunknown tokens\t{e['unknown_tokens']}\n")
            for side in ("for", "against"):
                for tok, v in e[side]:
                    why.write(f"{side}\t{v:+.4f}\t{tok}\n")
    out.flush()
    return exit_status(scorer, label, unsure_) if exit_code else 0


def exit_status(scorer, label: str, unsure: bool) -> int:
    """bogofilter's: 0 the positive class, 1 another, 2 unsure."""
    from .nb.decision import positive_of

    pos = positive_of(scorer.classes, scorer.decision.positive)
    return 2 if unsure else 0 if label == pos else 1


def quick_classify(argv: list[str]) -> int | None:
    """Run a plain classify call and return its exit status; None: not one of ours."""
    from .process import finish, started

    opts = parse(argv)
    if opts is None:
        return None
    started()
    return finish(lambda: run_classify(**opts), 3 if opts["exit_code"] else 1)


def with_headers(data: bytes, label: str, prob: float, more: tuple[str, ...] = ()) -> bytes:
    """The message with X-Nbtext-Class/-Score headers added at the end of its header block
    (an existing X-Nbtext-* header is replaced), as bogofilter -p does for procmail; ``more``:
    further header lines added after them, replacing fields of the same names (the daemon's
    SpamAssassin-style X-Spam-* fields).

    The header block is every line before the first empty one ("\n" or "\r\n"), or the
    whole message when it has none (a blank line is then added). The new headers end as the
    block's first line does: the body's line endings are no guide to the header block's (an
    LF header block with a CRLF body once had the headers written into its body). Every
    other byte is kept as it was."""
    first = data.find(b"\n")
    nl = b"\r\n" if first > 0 and data[first - 1:first] == b"\r" else b"\n"
    if data.startswith((b"\n", b"\r\n")):
        head, rest = b"", data  # no header fields: the blank line comes first
    else:
        ends = [i + 1 for i in (data.find(b"\n\n"), data.find(b"\n\r\n")) if i >= 0]
        head, rest = (data[:min(ends)], data[min(ends):]) if ends else (data, nl)
    lines = head.split(b"\n")
    lines = [ln + b"\n" for ln in lines[:-1]] + ([lines[-1] + nl] if lines[-1] else [])
    kept, skip = [], False
    replaced = (b"x-nbtext-class:", b"x-nbtext-score:") + tuple(h.split(":")[0].lower().encode() + b":" for h in more)
    for ln in lines:
        if ln[:1] in (b" ", b"\t") and skip:
            continue  # a folded continuation of a header being replaced
        skip = ln.lower().startswith(replaced)
        if not skip:
            kept.append(ln)
    kept += [f"X-Nbtext-Class: {label}".encode() + nl, f"X-Nbtext-Score: {prob:.6f}".encode() + nl]
    kept += [h.encode() + nl for h in more]
    return b"".join(kept) + rest
