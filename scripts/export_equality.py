"""Behaviour kept across a refactor: models trained by another revision and by this working tree,
under many option sets, give the same `nbtext export` output line for line.

    python scripts/export_equality.py --base REV [--corpus sample|spamassassin|debian|all]

REV is checked out in a temporary git worktree and run from there (PYTHONPATH), the working tree
from here; both with this environment's Python and the kernel path NBTEXT_KERNEL names (with
``c``, the base's kernel is built in its worktree). Exports are cached under
build/equality/REV/ (REV-c/, REV-python/ for a path named).
Prints one row per corpus and option set, and exits 1 when any differs.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPORA = {"sample": ROOT / "data" / "corpus",
           "spamassassin": ROOT.parent / "shared" / "data" / "spamassassin-2002",
           "debian": ROOT.parent / "shared" / "data" / "debian-sections"}
OPTION_SETS = {
    "default": [],
    "bernoulli": ["--variant", "bernoulli"],
    "complement": ["--variant", "complement"],
    "complement-idf-norm": ["--variant", "complement", "--idf", "--norm"],
    "complement-tf-length": ["--variant", "complement", "--tf", "--length-norm"],
    "ngrams3-mailchars": ["--ngrams", "3", "--mail-char-ngrams", "--char-ngrams", "1,3"],
    "text-mode": ["--text", "--ngrams", "1"],
    "maxfeat-frequency": ["--min-df", "2", "--max-features", "3000"],
    "maxfeat-chi2": ["--max-features", "3000", "--select", "chi2"],
    "maxfeat-mi": ["--max-features", "3000", "--select", "mi"],
    "max-fpr": ["--max-fpr", "0.01"],
    "no-calibrate": ["--no-calibrate", "--alpha", "0.5"],
}


def export(src: pathlib.Path, corpus: pathlib.Path, options: list[str], out: pathlib.Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(src)}
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m.nbm")
        run = [sys.executable, "-m", "nbtext"]
        trained = subprocess.run(run + ["train", str(corpus), "-q", "-o", model, *options], env=env, cwd=tmp,
                                 capture_output=True)
        if trained.returncode == 1 and trained.stderr.startswith(b"nbtext: error: "):
            # (an option set this corpus is refused for, e.g. --max-fpr of many classes: the
            # refusal is the output compared)
            out.write_bytes(trained.stderr)
            return
        trained.check_returncode()
        dump = subprocess.run(run + ["export", "-m", model], env=env, check=True, capture_output=True,
                              cwd=tmp).stdout
        out.write_bytes(undated(dump))


def undated(dump: bytes) -> bytes:
    """The dump without the day its tokens were trained on (a dump says it since issue 34): two
    revisions train the same model on different days, and a base's cached export is older."""
    import json

    magic, settings, rest = dump.split(b"\n", 2)
    meta = json.loads(settings)
    if type(meta.get("last_seen_day")) is not int:
        return dump
    del meta["last_seen_day"]
    return b"\n".join([magic, json.dumps(meta, sort_keys=True).encode(), rest])


def first_difference(a: pathlib.Path, b: pathlib.Path) -> str:
    near = decision_only(a, b)
    if near is not None:
        return near
    with open(a, "rb") as fa, open(b, "rb") as fb:
        for n, (la, lb) in enumerate(zip(fa, fb), 1):
            if la != lb:
                return f"line {n}: {la[:120]!r} != {lb[:120]!r}"
    return "one export is longer"


def decision_only(a: pathlib.Path, b: pathlib.Path) -> str | None:
    """Where two dumps differ only in their decision's fitted floats (the calibration map, fitted
    on out-of-fold scores summed in another order: docs/state.md), how far apart they are."""
    import json

    la, lb = a.read_text().splitlines(), b.read_text().splitlines()
    if len(la) != len(lb) or la[:1] != lb[:1] or la[2:] != lb[2:]:
        return None
    sa, sb = json.loads(la[1]), json.loads(lb[1])
    da, db = sa.pop("decision"), sb.pop("decision")
    if sa != sb or da.keys() != db.keys() or any(type(da[k]) is not float and da[k] != db[k] for k in da):
        return None
    rel = max((abs(da[k] - db[k]) / abs(da[k]) for k in da if type(da[k]) is float and da[k]), default=0.0)
    return f"token lines identical; the decision's floats within {rel:.1e} relative"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the revision to compare with")
    ap.add_argument("--corpus", choices=[*CORPORA, "all"], default="all")
    ap.add_argument("--only", nargs="*", choices=sorted(OPTION_SETS), help="these option sets alone")
    args = ap.parse_args()
    rev = subprocess.run(["git", "rev-parse", "--short", args.base], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.strip()
    kernel = os.environ.get("NBTEXT_KERNEL", "")  # (both trees run the path it names)
    cache = ROOT / "build" / "equality" / (f"{rev}-{kernel}" if kernel else rev)
    cache.mkdir(parents=True, exist_ok=True)
    here = ROOT / "build" / "equality" / "worktree"
    here.mkdir(parents=True, exist_ok=True)
    corpora = list(CORPORA) if args.corpus == "all" else [args.corpus]
    sets = args.only or list(OPTION_SETS)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        base_src = pathlib.Path(tmp) / "base"
        made = False
        print("| corpus | options | lines | export sha256 (first 12) | same |")
        print("|---|---|---|---|---|")
        for name in corpora:
            corpus = CORPORA[name]
            if not corpus.exists():
                print(f"| {name} | (corpus missing: {corpus}) | | | |")
                continue
            for key in sets:
                old, new = cache / f"{name}-{key}.dump", here / f"{name}-{key}.dump"
                if not old.exists():
                    if not made:
                        subprocess.run(["git", "worktree", "add", "--detach", str(base_src), rev], cwd=ROOT,
                                       check=True, capture_output=True)
                        if kernel == "c":  # (a checkout has no compiled kernel: the base's own, built in place)
                            subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                                           cwd=base_src, check=True, capture_output=True)
                        made = True
                    export(base_src, corpus, OPTION_SETS[key], old)
                export(ROOT, corpus, OPTION_SETS[key], new)
                same = old.read_bytes() == new.read_bytes()
                lines = new.read_bytes().count(b"\n")
                digest = hashlib.sha256(new.read_bytes()).hexdigest()[:12]
                print(f"| {name} | {' '.join(OPTION_SETS[key]) or '(defaults)'} | {lines} | {digest} | "
                      f"{'yes' if same else 'NO: ' + first_difference(old, new)} |", flush=True)
                failed += not same
        if made:
            subprocess.run(["git", "worktree", "remove", "--force", str(base_src)], cwd=ROOT, check=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
