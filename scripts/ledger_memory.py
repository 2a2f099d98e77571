"""The ledger's memory a document: a model file's learned-document digests held as
nbtext.ledger.Ledger (a sorted array of their bytes) and as the Python set of bytes it replaced.

    python scripts/ledger_memory.py MODEL [MODEL ...]

For each model file, its ledger's digests are added chunk by chunk (400 documents, as train's
chunks send them) to an empty Ledger and to an empty set, each under tracemalloc (numpy's arrays
are traced): the bytes held after the last chunk and the peak while adding, a document each; and
store.load's peak with the model's ledger against the same file whose ledger is emptied (the
ledger's share of a load). One Markdown row per model.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import tracemalloc

from nbtext import store
from nbtext.ledger import DIGEST_SIZE, Ledger

CHUNK = 400


def traced(make) -> tuple[int, int, object]:
    """(bytes held after, peak bytes, what make() made), by tracemalloc."""
    tracemalloc.start()
    try:
        out = make()
        now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return now, peak, out


def chunked(data: bytes):
    step = CHUNK * DIGEST_SIZE
    return (data[at:at + step] for at in range(0, len(data), step))


def as_ledger(data: bytes) -> Ledger:
    ledger = Ledger()
    for part in chunked(data):
        ledger.update(part)
    return ledger


def as_set(data: bytes) -> set:
    held: set = set()
    for part in chunked(data):
        held.update(part[i:i + DIGEST_SIZE] for i in range(0, len(part), DIGEST_SIZE))
    return held


def load_peak(path: str) -> int:
    return traced(lambda: store.load(path))[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    print("| model | documents | Ledger held / peak (B a document) | set held / peak (B a document) "
          "| load peak: with the ledger / without (MiB) |")
    print("|---|---:|---:|---:|---:|")
    for path in args.models:
        model = store.load(path)
        data = model.ledger.tobytes()
        n = len(data) // DIGEST_SIZE
        ledger_now, ledger_peak, made = traced(lambda: as_ledger(data))
        assert made.tobytes() == data
        del made
        set_now, set_peak, made = traced(lambda: as_set(data))
        assert len(made) == n
        del made
        with tempfile.TemporaryDirectory() as tmp:
            bare = os.path.join(tmp, "bare.nbm")
            model.ledger = Ledger()
            store.save(model, bare)
            del model
            with_ledger, without = load_peak(path), load_peak(bare)
        print(f"| {os.path.basename(path)} | {n:,} | {ledger_now / n:.1f} / {ledger_peak / n:.1f} "
              f"| {set_now / n:.1f} / {set_peak / n:.1f} | {with_ledger / 2**20:.1f} / {without / 2**20:.1f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
