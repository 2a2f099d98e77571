"""Issue 32's probe of mail detection: does one inserted header line turn spam into text?

    python scripts/mail_detection_probe.py [--shared ../shared/data] [--line 'X-Foo:' ...]

Trains nbtext (default options) on the 2,600 training messages of the spamassassin-2002 split,
then scores the held-out spam as it is, and with each LINE inserted as its second line (after
the mbox "From " line every message there starts with): by default an empty field, an obsolete
one and a line of junk. Prints how many verdicts each line flipped from spam, and how many
messages of the training set, of the held-out spam and of the probed spam mail detection reads
as plain text (text.words.looks_like_mail, and the compiled kernel's twin when it is built: the
two must agree). docs/hostile.md quotes its figures. To
measure another revision, copy this script into its checkout and run it there.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from spamassassin_split import materialize  # noqa: E402

from nbtext.text.words import looks_like_mail  # noqa: E402


def kernel_looks_like_mail():
    try:
        from nbtext import _kernel
    except ImportError:
        return None
    try:
        from nbtext.text.words import MAIL_FIELDS, MAIL_LINES
    except ImportError:  # (a revision before issue 32, run with this script copied into it)
        return _kernel.looks_like_mail
    return lambda data: _kernel.looks_like_mail(data, MAIL_LINES, MAIL_FIELDS)


def inserted(data: bytes, line: bytes) -> bytes:
    """The message with ``line`` as its second line, ended as its first line is."""
    cut = data.find(b"\n") + 1
    end = b"\r\n" if data[:cut].endswith(b"\r\n") else b"\n"
    return data[:cut] + line + end + data[cut:]


def as_text(files: list[Path], read=Path.read_bytes) -> tuple[int, int | None]:
    """How many of the files Python's and the kernel's mail detection read as plain text."""
    fast = kernel_looks_like_mail()
    datas = [read(f) for f in files]
    py = sum(not looks_like_mail(d) for d in datas)
    c = None if fast is None else sum(not fast(d) for d in datas)
    if c is not None and c != py:
        sys.exit(f"the Python and C mail detection disagree: {py} and {c} read as text")
    return py, c


def verdicts(model: Path, folder: Path) -> dict[str, str]:
    out = subprocess.run([sys.executable, "-m", "nbtext", "predict", "-m", str(model), str(folder)],
                         check=True, capture_output=True, text=True, cwd=ROOT).stdout
    return {Path(row.split("\t")[0]).name: row.split("\t")[1] for row in out.splitlines()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--line", action="append", help="a line to insert (repeatable; default: "
                    "'X-Foo:', 'X-Foo : bar', 'this line is not a field')")
    args = ap.parse_args()
    lines = args.line or ["X-Foo:", "X-Foo : bar", "this line is not a field"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        train, test = materialize(args.shared, tmp / "split")
        model = tmp / "m.nbm"
        subprocess.run([sys.executable, "-m", "nbtext", "train", str(train), "-o", str(model), "-q"],
                       check=True, cwd=ROOT)
        spam = sorted((test / "spam").iterdir())
        before, ham = verdicts(model, test / "spam"), verdicts(model, test / "ham")
        right = sum(v == "spam" for v in before.values()) + sum(v == "ham" for v in ham.values())
        print(f"held-out accuracy: {right}/{len(before) + len(ham)}; "
              f"spam verdicts on the {len(spam)} held-out spam: {sum(v == 'spam' for v in before.values())}")
        print(f"{'read as plain text':<40} {'files':>5}  {'Python':>6}  {'kernel':>6}  flipped from spam")
        for name, files in (("training ham", sorted((train / "ham").iterdir())),
                            ("training spam", sorted((train / "spam").iterdir())), ("held-out spam", spam)):
            py, c = as_text(files)
            print(f"{name:<40} {len(files):>5}  {py:>6}  {'-' if c is None else c:>6}")
        for n, line in enumerate(lines):
            probed = tmp / f"probed{n}"
            probed.mkdir()
            for f in spam:
                (probed / f.name).write_bytes(inserted(f.read_bytes(), line.encode()))
            after = verdicts(model, probed)
            flipped = sum(before[f] == "spam" and after[f] != "spam" for f in before)
            py, c = as_text(sorted(probed.iterdir()))
            print(f"{'held-out spam + ' + repr(line):<40} {len(spam):>5}  {py:>6}  {'-' if c is None else c:>6}"
                  f"  {flipped}")


if __name__ == "__main__":
    main()
