"""What one large input costs, side by side in one run (issue 32's figures, docs/hostile.md).

    python scripts/large_inputs.py [--shared ../shared/data] [--size 2000000]

1. A message whose Subject is SIZE/2 bytes of RFC 2047 words ("=?utf-8?q?a?= " repeated):
   the CPU time of tokenizing it (Tokenizer.parts through the compiled kernel's mail reader,
   and the pure-Python one), at half that size and at that size, and their ratio.
2. One plain-text document of SIZE bytes (debian-sections' descriptions, end to end), scored
   by `nbtext classify` and by `nbtext predict` with a model trained on debian-sections: each
   command's wall time and peak resident memory, as separate processes.
To measure another revision, copy this script into its checkout and run it there.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TOKENIZE = """
import sys, time
from nbtext.features import kernel
from nbtext.settings import TokenizerSettings
from nbtext.text.tokenizer import Tokenizer
size = int(sys.argv[1])
data = b"From: a@b.example\\nSubject: " + b"=?utf-8?q?a?= " * (size // 14) + b"\\n\\nbody\\n"
tok = Tokenizer(TokenizerSettings())
k = kernel.compiled()
read = kernel.mail_parts(k, tok) if k else tok.parts
start = time.process_time()
read(data)
print(time.process_time() - start)
"""


def tokenize_seconds(size: int, path: str) -> float:
    env = {**os.environ, "NBTEXT_KERNEL": path}
    out = subprocess.run([sys.executable, "-c", TOKENIZE, str(size)], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out)


def timed(args: list[str]) -> tuple[float, float]:
    """(wall seconds, peak resident MB) of one nbtext command, as its own process."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "nbtext", *args], cwd=ROOT, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        sys.exit(f"nbtext {' '.join(args)} failed")
    return time.perf_counter() - start, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--size", type=int, default=2_000_000)
    args = ap.parse_args()
    half = args.size // 2
    print(f"1. tokenizing a Subject of RFC 2047 words (CPU s): {half // 2:,} and {half:,} bytes, ratio")
    for path in ("c", "python"):
        try:
            small, large = tokenize_seconds(half // 2, path), tokenize_seconds(half, path)
        except subprocess.CalledProcessError:
            print(f"   {path:<7} not available")
            continue
        print(f"   {path:<7} {small:8.2f} {large:8.2f} {large / max(small, 1e-3):6.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        corpus = args.shared / "debian-sections"
        model, doc = Path(tmp) / "m.nbm", Path(tmp) / "big.txt"
        subprocess.run([sys.executable, "-m", "nbtext", "train", str(corpus), "-o", str(model), "-q"], cwd=ROOT,
                       check=True)
        text, files = bytearray(), sorted(corpus.rglob("*.txt"))
        while len(text) < args.size:
            text += files[len(text) % len(files)].read_bytes() + b"\n"
        doc.write_bytes(bytes(text[:args.size]))
        print(f"2. one plain-text document of {args.size:,} bytes, a debian-sections model (wall s, peak MB)")
        for command in ("classify", "predict"):
            seconds, mb = timed([command, "-m", str(model), str(doc)])
            print(f"   {command:<8} {seconds:8.2f} {mb:8.0f}")


if __name__ == "__main__":
    main()
