"""What nbtext's train and predict cannot go below on this machine: the CPU of reading mail as
mail, and the memory of the modules every train loads.

    python scripts/floor.py [--corpus DIR] [--repeat 3] > docs/floor.md     (make floor)

Times, in one process on one core (CPU seconds, median of --repeat runs), over every document
of the corpus (default ../shared/data/spamassassin-2002):
  - parse: nbtext.text.mail.parse_message, the standard library's email package (compat32) with
    nbtext's shortcut for single-part messages;
  - tokenize: the whole default tokenizer (parsing included);
  - count: what a worker process does per chunk (tokenize, then count and hash the tokens), on
    the pure-Python path;
  - mail rules, Python's part (Tokenizer.parts: parsing, header, URL and HTML rules), what the
    compiled kernel leaves in Python (docs/kernel.md);
  - count on the kernel: a worker's whole job with the compiled kernel (when it is built).
Divided by the number of cores, these are lower bounds on the wall time of any train or
batch predict built on this tokenizer, before start-up, merging or scoring. Then the resident
memory of a fresh interpreter after importing what train imports, step by step (MiB, from
/proc/self/status): the floor under train's peak RSS before it holds any data. (scipy.sparse,
the last step, is what cv adds.)

In the same run, interleaved with the CPU timings, bogofilter's and scikit-learn's train and
batch predict are timed as in make bench (whole processes, median of --repeat), and the table
gives each floor against issue 5's targets: no slower than bogofilter, 3x faster than
scikit-learn. A ratio above 1 means the target is below what tokenizing alone costs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

IMPORT_STEPS = [
    ("python", ""),
    ("+ numpy", "import numpy"),
    ("+ click, regex, email, nbtext's reader and tokenizer",
     "import click, regex, email.message, nbtext.cli, nbtext.read, nbtext.text.mail, nbtext.store"),
    ("+ joblib (worker processes)", "from joblib import Parallel, delayed"),
    ("+ scipy.sparse (cv only; train, predict and learn do without it)", "import scipy.sparse"),
]


def cpu(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


def peer_targets(corpus: Path, repeat: int) -> dict:
    """Median train and predict wall seconds of bogofilter and of scikit-learn / 3 (the
    targets), for the peers that are installed."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import tempfile

    import bench

    peers = [p for p in bench.systems()[0] if not isinstance(p, bench.Nbtext)]
    out = {}
    with tempfile.TemporaryDirectory(prefix="nbtext-floor-") as tmp:
        for p in peers:
            model = Path(tmp) / p.name.replace(" ", "-")
            train = statistics.median(p.train(corpus, model)[0] for _ in range(repeat))
            predict = statistics.median(p.predict(corpus, model)[0] for _ in range(repeat))
            share = 3 if p.name == "scikit-learn" else 1
            out[p.name] = (train / share, predict / share)
    return out


def import_rss() -> list[tuple[str, int]]:
    code = ["import sys", f"sys.path.insert(0, {str(ROOT)!r})",
            "def rss():\n    return int([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1]) // 1024"]
    for i, (_, stmt) in enumerate(IMPORT_STEPS):
        code += [stmt or "pass", f"print({i}, rss())"]
    out = subprocess.run([sys.executable, "-c", "\n".join(code)], capture_output=True, text=True, check=True).stdout
    values = dict(line.split() for line in out.splitlines())
    return [(name, int(values[str(i)])) for i, (name, _) in enumerate(IMPORT_STEPS)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "data" / "spamassassin-2002")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"floor.py: {args.corpus}: no such directory (see ../shared/data/README.md)")

    from nbtext.text.mail import parse_message
    from nbtext.batch.chunks import CHUNK, CHUNK_BYTES, chunks as _chunks
    from nbtext.read import label_directory
    from nbtext.settings import TokenizerSettings
    from nbtext.text.tokenizer import Tokenizer
    from nbtext.features import kernel
    from nbtext.features.counting import Batch

    docs = list(label_directory(str(args.corpus)))
    datas = [d.data for d in docs]
    settings = TokenizerSettings()
    tok = Tokenizer(settings)
    mail = [d for d in datas if tok.is_mail(d)]
    chunks = [[d.data for d in c] for c in _chunks(docs, CHUNK, CHUNK_BYTES)]
    targets = peer_targets(args.corpus, args.repeat)
    figures = [
        ("parse (stdlib email, compat32)", cpu(lambda: [parse_message(d.lstrip(b"\r\n")) for d in mail], args.repeat)),
        ("tokenize (parsing included)", cpu(lambda: [tok(d) for d in datas], args.repeat)),
        ("count, Python path (a worker's whole job)",
         cpu(lambda: [Batch.of_tokens([tok(d) for d in c]) for c in chunks], args.repeat)),
        ("mail rules, Python's part (Tokenizer.parts)", cpu(lambda: [tok.parts(d) for d in datas], args.repeat)),
    ]
    compiled = kernel.compiled()
    if compiled is not None:
        figures.append(("count on the compiled kernel (a worker's whole job)",
                        cpu(lambda: [kernel.count(compiled, tok, c) for c in chunks], args.repeat)))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    mb = sum(map(len, datas)) / 1e6
    print(f"# Floors: {args.corpus.name}, {len(docs)} documents ({len(mail)} read as mail), {mb:.1f} MB, "
          f"{cores} cores\n")
    heads = [f"{t} target: {peer}{'/3' if peer == 'scikit-learn' else ''}, {v:.2f} s"
             for peer, vals in targets.items() for t, v in zip(("train", "predict"), vals)]
    print(f"| step | CPU s, one core | floor on {cores} cores, s | "
          + "".join(f"floor / {h} | " for h in heads))
    print("|---|---|---|" + "---|" * len(heads))
    for name, s in figures:
        print(f"| {name} | {s:.2f} | {s / cores:.2f} | "
              + "".join(f"{s / cores / v:.2f} | " for vals in targets.values() for v in vals))
    if not targets:
        print("\n(bogofilter and scikit-learn not installed: no targets to compare with)")
    print("\n| interpreter after | RSS MiB |")
    print("|---|---|")
    for name, rss in import_rss():
        print(f"| {name} | {rss} |")


if __name__ == "__main__":
    main()
