"""`nbtext classify`: its options, defined once, and the click-free path for its plain forms.

A mail filter runs `nbtext classify` once per message, so start-up is the whole cost, and click
alone takes about as long to import as the rest of the run. CLASSIFY_OPTIONS is the one
definition of classify's options: nbtext.cli builds the click command from it, and
quick_classify() reads argv with it when every option given is a flag or a plain value (a
string, a number, a pair). Both build the same call (nbtext.options.Classify) and run it with
run_classify. Anything else (--help, --explain, --learn, a malformed value, an unknown option)
returns None and goes to click, which owns usage errors.
"""
from __future__ import annotations

import sys

from .options import Classify, parse_pair

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
     "Write the message back with X-Nbtext-Class and X-Nbtext-Score headers (two classes: X-Nbtext-Spamicity)."),
    (("-u", "--learn"), "learn_verdict", "flag",
     "Also learn the message as its verdict (not when unsure), as bogofilter -u."),
    (("--spamicity",), "spamicity", "flag",
     "Two classes: also print P(positive) (bogofilter's spamicity) and the verdict (the label, or unsure)."),
    (("--row",), "row", "str", "A table model's row as COLUMN=VALUE,... (instead of a CSV line in FILE)."),
    QUIET_OPTION,
]


def parse(argv: list[str], model_path: str | None = None) -> Classify | None:
    """A plain classify call, or None when click should read argv (``model_path``: the model
    when -m is not given, $NBTEXT_MODEL)."""
    if not argv or argv[0] != "classify":
        return None
    by_flag = {flag: (dest, kind) for flags, dest, kind, _ in CLASSIFY_OPTIONS for flag in flags}
    opts: dict = {dest: (False if kind == "flag" else None) for _, dest, kind, _ in CLASSIFY_OPTIONS}
    opts["model_path"] = model_path
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
    return Classify.of(opts)


def run_classify(ask: Classify) -> int:
    """Classify one document (or a table model's row) and print the verdict; returns the exit status."""
    from .fastscore import FastScorer, TableFile
    from .nb.weights import check_scorable
    from .process import stdout
    from .read import MAX_DOCUMENT_BYTES, Document, read_bytes

    out = stdout()
    try:
        scorer = FastScorer(ask.model_path)
    except TableFile as table:
        from .errors import NbtextError
        from .tablecli import classify_row

        if ask.explain or ask.passthrough or ask.learn or ask.spamicity:
            raise NbtextError(f"{ask.model_path} is a table model: --explain, --passthrough, --learn and "
                              "--spamicity are for text models") from None
        model, label, unsure_row = classify_row(table, ask, out)
        return exit_status(model, label, unsure_row) if ask.exit_code else 0
    check_scorable(scorer.class_count, ask.model_path)
    if ask.row is not None:
        from .errors import NbtextError

        raise NbtextError(f"--row: {ask.model_path} is a text model; --row is for table models")
    ask.overrides.apply(scorer.decision, scorer.classes)
    pos = positive_index(scorer.classes, scorer.decision.positive, ask.model_path if ask.spamicity else None)
    data = read_bytes(ask.file, limit=None if ask.passthrough else MAX_DOCUMENT_BYTES)  # (passthrough: all of it)
    if ask.explain:
        e = scorer.explain(data, ask.explain)
        label, prob, unsure_, probs = e["label"], e["probability"], e["unsure"], e["scores"]
    else:
        label, prob, unsure_, probs = scorer.score(data)
    verdict = label if not unsure_ else "unsure"
    if ask.learn and not unsure_:
        from .operations import learn_in_place

        learn_in_place(ask.model_path, [Document(ask.file, data)], label, forget=False)
    if ask.passthrough:
        out.buffer.write(with_headers(data, verdict, prob, None if pos is None else probs[pos]))
    elif ask.spamicity:
        out.write(f"{label}\t{prob:.6f}\t{probs[pos]:.6f}\t{verdict}\n")
    else:
        out.write(f"{label}\t{prob:.6f}\n")
    if ask.explain:
        why = sys.stderr if ask.passthrough else out
        if why is not None:
            why.write(f"prior\t{e['prior']:+.4f}\nunknown tokens\t{e['unknown_tokens']}\n")
            for side in ("for", "against"):
                for tok, v in e[side]:
                    why.write(f"{side}\t{v:+.4f}\t{tok}\n")
    out.flush()
    return exit_status(scorer, label, unsure_) if ask.exit_code else 0


def positive_index(classes: list, positive: str | None, asked_by: str | None = None) -> int | None:
    """The index of a two-class model's positive class, whose probability is bogofilter's
    spamicity; None with more classes, where ``asked_by`` (the model of a --spamicity) is
    refused, naming the classes."""
    from .nb.decision import positive_of

    pos = positive_of(classes, positive)
    if pos is None and asked_by is not None:
        from .errors import NbtextError

        raise NbtextError(f"--spamicity: {asked_by} has {len(classes)} classes ({', '.join(classes)}); "
                          "P(positive) needs two")
    return None if pos is None else list(classes).index(pos)


def exit_status(scorer, label: str, unsure: bool) -> int:
    """bogofilter's: 0 the positive class, 1 another, 2 unsure (``scorer``: what decided, a
    model or a FastScorer, with its classes and decision)."""
    from .nb.decision import positive_of

    pos = positive_of(scorer.classes, scorer.decision.positive)
    return 2 if unsure else 0 if label == pos else 1


def quick_classify(argv: list[str], model_path: str | None = None) -> int | None:
    """Run a plain classify call and return its exit status; None: not one of ours
    (``model_path``: the model when -m is not given)."""
    from .process import finish

    ask = parse(argv, model_path)
    if ask is None:
        return None
    return finish(lambda: run_classify(ask), 3 if ask.exit_code else 1)


def with_headers(data: bytes, label: str, prob: float, spamicity: float | None = None,
                 more: tuple[str, ...] = ()) -> bytes:
    """The message with X-Nbtext-Class/-Score headers added at the end of its header block
    (an existing X-Nbtext-* header is replaced), as bogofilter -p does for procmail; and for a
    two-class model X-Nbtext-Spamicity, P(positive), as bogofilter's X-Bogosity carries it;
    ``more``: further header lines added after them, replacing fields of the same names (the
    daemon's SpamAssassin-style X-Spam-* fields).

    The header block is every line before the first empty one, or the whole message when it
    has none (a blank line is then added); a line ends in LF, CRLF or a bare CR (mail from
    old Macs: its headers were once written after its body). The new headers end as the
    block's first line does: the body's line endings are no guide to the header block's (an
    LF header block with a CRLF body once had the headers written into its body). Every
    other byte is kept as it was."""
    from .text.words import LINE

    lines, pos, n = [], 0, len(data)
    while pos < n:
        end = LINE.match(data, pos).end()
        if not data[pos:end].rstrip(b"\r\n"):
            break  # the empty line: the body follows it
        lines.append(data[pos:end])
        pos = end
    first = LINE.match(data).group()
    nl = first[len(first.rstrip(b"\r\n")):] or b"\n"
    rest = data[pos:] if pos < n else nl
    if lines and not lines[-1].endswith((b"\n", b"\r")):
        lines[-1] += nl
    kept, skip = [], False
    replaced = (b"x-nbtext-class:", b"x-nbtext-score:", b"x-nbtext-spamicity:") + tuple(
        h.split(":")[0].lower().encode() + b":" for h in more)
    for ln in lines:
        if ln[:1] in (b" ", b"\t") and skip:
            continue  # a folded continuation of a header being replaced
        skip = ln.lower().startswith(replaced)
        if not skip:
            kept.append(ln)
    kept += [f"X-Nbtext-Class: {label}".encode() + nl, f"X-Nbtext-Score: {prob:.6f}".encode() + nl]
    if spamicity is not None:
        kept.append(f"X-Nbtext-Spamicity: {spamicity:.6f}".encode() + nl)
    kept += [h.encode() + nl for h in more]
    return b"".join(kept) + rest
