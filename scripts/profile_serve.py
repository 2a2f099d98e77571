"""Where a message's CPU goes in `nbtext serve`'s scorer (docs/serve.md, "Throughput, latency and
memory"): counting alone, the verdict through the compiled kernel's sums, and the verdict
through fastscore's sums in Python (the reference, and the path of REPORT and /checkv2).

    python scripts/profile_serve.py MODEL DIR... [--rounds 3] [--profile]

Every file under the DIRs is a message; each is scored once to fill the cache of token
weights (as a worker's first messages do), then each way's CPU time a message is the best of
--rounds passes. --profile prints cProfile's top functions of the kernel's way.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from pathlib import Path

from nbtext.features.counting import count_documents
from nbtext.serve.scoring import ServedModel


def per_message(fn, messages: list[bytes], rounds: int) -> float:
    """The best of ``rounds`` passes' CPU seconds a message."""
    best = float("inf")
    for _ in range(rounds):
        t = time.process_time()
        for m in messages:
            fn(m)
        best = min(best, (time.process_time() - t) / len(messages))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    messages = [f.read_bytes() for d in a.dirs for f in sorted(d.rglob("*")) if f.is_file()]
    model = ServedModel(a.model)
    for m in messages:
        model.judge(m)
    settings = model.tokenizer.settings
    ways = {"counting alone": lambda m: count_documents([m], settings),
            "verdict, the kernel's sums": model.judge,
            "verdict, fastscore's sums in Python": lambda m: model.verdict(model.counted_contributions(m))}
    if model._sums is None:
        del ways["verdict, the kernel's sums"]
    print(f"{len(messages)} messages, best of {a.rounds} passes, CPU ms a message:")
    for name, fn in ways.items():
        print(f"  {name}: {per_message(fn, messages, a.rounds) * 1e3:.3f}")
    if a.profile:
        profile = cProfile.Profile(time.process_time)
        profile.runcall(per_message, model.judge, messages, 1)
        pstats.Stats(profile).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
