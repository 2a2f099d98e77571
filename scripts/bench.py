"""`make bench`: nbtext, scikit-learn and bogofilter side by side, each a whole process.

    python scripts/bench.py [--corpus DIR] [--scales 1,4,16] [--repeat 3] [--runs 21]

The table from our machine is committed as docs/bench.md.

The corpus (default ../shared/data/spamassassin-2002, a label directory) is scaled by
symbolic links: k copies of every message, so "4x" and "16x" show how time and memory grow
with the number of documents. Every system trains on the whole corpus and then predicts all
of it in one batch; single-message latency is the median of --runs whole-process classify
runs on one message. Wall time is measured around each process, peak RSS from wait4(2) (the
largest of the process and its children). Runs alternate between systems so that a noisy
neighbour hurts all of them alike. Medians of --repeat runs at 1x; one run at larger scales.

Systems: nbtext with its defaults (on its compiled kernel when built, docs/kernel.md); nbtext
--no-calibrate (the pure streaming path: nothing per document is kept, so memory stays flat as
the corpus grows); both again on the pure-Python path (NBTEXT_KERNEL=python); scikit-learn's
CountVectorizer + MultinomialNB (scripts/bench_sklearn.py, skipped without scikit-learn);
bogofilter (Debian package, skipped with a note when absent), trained with -s/-n in bulk
mode and scored with -T.

Then the table row (scripts/bench_tables.py): nbtext's Gaussian NB beside scikit-learn's
GaussianNB on a generated table of --table-rows rows (kept in build/ at the default 2 million).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


GNU_TIME = shutil.which("time") if os.path.exists("/usr/bin/time") else None


def measure(cmd: list[str], stdin_text: str | None = None, env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one whole process.

    The peak RSS comes from GNU time (Debian package `time`), which starts the command from
    its own small process: Linux counts a child's memory from before its exec too, so a child
    forked straight from this Python process would inherit this process's size."""
    with tempfile.NamedTemporaryFile(prefix="nbtext-bench-", suffix=".rss") as rss_file:
        wrapped = [GNU_TIME, "-f", "%M", "-o", rss_file.name, *cmd] if GNU_TIME else cmd
        start = time.perf_counter()
        p = subprocess.run(wrapped, input=stdin_text.encode() if stdin_text is not None else None,
                           stdin=None if stdin_text is not None else subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           env={**os.environ, **env} if env else None)
        wall = time.perf_counter() - start
        if p.returncode != 0:
            raise SystemExit(f"bench: {' '.join(cmd)} failed ({p.returncode}): "
                             f"{p.stderr.decode(errors='replace')[-500:]}")
        text = Path(rss_file.name).read_text().split()
    return wall, (int(text[-1]) / 1024 if GNU_TIME and text else float("nan"))


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def scaled(src: Path, k: int, dst: Path) -> Path:
    """A label directory with k symbolic links to every message of src."""
    if k == 1:
        return src
    out = dst / f"x{k}"
    for f in files(src):
        rel = f.relative_to(src)
        for i in range(k):
            link = out / rel.parent / f"c{i}-{rel.name}"
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(f.resolve())
    return out


class Nbtext:
    def __init__(self, name: str, extra: list[str], env: dict | None = None):
        self.name, self.extra, self.env = name, extra, env

    def train(self, corpus: Path, model: Path):
        return measure([str(BIN / "nbtext"), "train", str(corpus), "-o", str(model), "-q", *self.extra],
                       env=self.env)

    def predict(self, corpus: Path, model: Path):
        return measure([str(BIN / "nbtext"), "predict", "-m", str(model), str(corpus), "-q"], env=self.env)

    def classify(self, msg: Path, model: Path):
        return measure([str(BIN / "nbtext"), "classify", "-m", str(model), str(msg)], env=self.env)

    def size(self, model: Path) -> int:
        return model.stat().st_size


class Sklearn:
    name = "scikit-learn"
    script = str(ROOT / "scripts" / "bench_sklearn.py")

    def train(self, corpus, model):
        return measure([sys.executable, self.script, "train", str(corpus), str(model)])

    def predict(self, corpus, model):
        return measure([sys.executable, self.script, "predict", str(model), str(corpus)])

    def classify(self, msg, model):
        return measure([sys.executable, self.script, "classify", str(model), str(msg)])

    def size(self, model):
        return model.stat().st_size


class Bogofilter:
    name = "bogofilter"

    def __init__(self, exe: str):
        self.exe = exe

    def train(self, corpus, model):
        shutil.rmtree(model, ignore_errors=True)
        model.mkdir(parents=True)
        walls, rss = 0.0, 0.0
        for label, flag in (("spam", "-s"), ("ham", "-n")):
            listing = "".join(f"{p}\n" for p in files(corpus / label))
            w, r = measure([self.exe, "-d", str(model), flag, "-b"], listing)
            walls, rss = walls + w, max(rss, r)
        return walls, rss

    def predict(self, corpus, model):
        return measure([self.exe, "-d", str(model), "-T", "-b"], "".join(f"{p}\n" for p in files(corpus)))

    def classify(self, msg, model):
        return measure([self.exe, "-d", str(model), "-T", "-I", str(msg)])

    def size(self, model):
        return sum(p.stat().st_size for p in model.iterdir())


def systems(python_path: bool = True) -> tuple[list, list[str]]:
    found = [Nbtext("nbtext", []), Nbtext("nbtext --no-calibrate", ["--no-calibrate"])]
    notes = []
    if not python_path:
        notes.append("nbtext: the Python path's rows left out (--no-python-path)")
    elif importlib.util.find_spec("nbtext._kernel"):
        python = {"NBTEXT_KERNEL": "python"}
        found += [Nbtext("nbtext, Python path", [], python),
                  Nbtext("nbtext --no-calibrate, Python path", ["--no-calibrate"], python)]
    else:
        notes.append("nbtext: the compiled kernel is not built (docs/kernel.md): every nbtext row is the Python path")
    if importlib.util.find_spec("sklearn"):  # not imported: this process stays small
        found.append(Sklearn())
    else:
        notes.append("scikit-learn: not installed (pip install -e '.[test]'), skipped")
    exe = shutil.which("bogofilter")
    if exe:
        found.append(Bogofilter(exe))
    else:
        notes.append("bogofilter: not installed (apt-get install bogofilter), skipped")
    if not GNU_TIME:
        notes.append("peak RSS: GNU time not installed (apt-get install time), not measured")
    return found, notes


class DaskCluster:
    """A Dask scheduler and N single-threaded workers started by hand, as docs/cluster.md does on
    real hosts (here all on this machine), for `train --engine dask --scheduler`."""

    def __init__(self, n_workers: int, tmp: Path):
        import json

        self.file = tmp / f"scheduler-{n_workers}.json"
        dask = str(BIN / "dask")
        quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs = [subprocess.Popen([dask, "scheduler", "--scheduler-file", str(self.file), "--port", "0",
                                        "--dashboard-address", ":0"], **quiet)]
        deadline = time.monotonic() + 60
        while not self.file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        self.procs.append(subprocess.Popen([dask, "worker", "--scheduler-file", str(self.file), "--nworkers",
                                            str(n_workers), "--nthreads", "1", "--no-dashboard"], **quiet))
        self.address = json.loads(self.file.read_text())["address"]
        from distributed import Client

        with Client(self.address, timeout=60) as c:
            c.wait_for_workers(n_workers, timeout=60)

    def close(self):
        for p in reversed(self.procs):
            p.terminate()
            p.wait()


def dask_section(corpus: Path, n_docs: int, mb: float, repeat: int, tmp: Path) -> None:
    """Training on 1 and 2 Dask workers (a scheduler started by hand, the client the nbtext
    process) beside local training on 1 and 2 cores, and the models' equality."""
    print("\n## Dask engine: 1 vs 2 workers, beside local parallel training\n")
    if not importlib.util.find_spec("distributed"):
        print("- dask: not installed (pip install -e '.[dask]'), skipped")
        return
    nb = str(BIN / "nbtext")
    runs = [("local, -j 1", ["-j", "1"], None), ("local, -j 2", ["-j", "2"], None),
            ("dask, 1 worker", ["--engine", "dask"], 1), ("dask, 2 workers", ["--engine", "dask"], 2)]
    print(f"{n_docs} messages, {mb:.1f} MiB; median of {repeat}; the workers are started before the run "
          "(`dask scheduler`, `dask worker --nworkers N --nthreads 1`); RSS is the nbtext process's "
          "(the client's, for dask).\n")
    print("| train | wall s | messages/s | per worker msg/s | client RSS MiB | export as local -j 1 |")
    print("|---|---|---|---|---|---|")
    exports = {}
    for name, extra, workers in runs:
        cluster = DaskCluster(workers, tmp) if workers else None
        try:
            model = tmp / f"dask-bench-{len(exports)}.nbm"
            args = extra + (["--scheduler", cluster.address] if cluster else [])
            got = [measure([nb, "train", str(corpus), "-o", str(model), "-q", *args]) for _ in range(repeat)]
        finally:
            if cluster:
                cluster.close()
        wall = statistics.median(w for w, _ in got)
        exports[name] = subprocess.run([nb, "export", "-m", str(model)], capture_output=True).stdout
        same = "yes" if exports[name] == exports[runs[0][0]] else "NO"
        per = n_docs / wall / (workers or int(extra[1]))
        print(f"| {name} | {wall:.2f} | {n_docs / wall:.0f} | {per:.0f} | {max(m for _, m in got):.0f} | {same} |")


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "data" / "spamassassin-2002")
    ap.add_argument("--scales", default="1,4,16")
    ap.add_argument("--repeat", type=int, default=3, help="runs of train and predict at 1x (median)")
    ap.add_argument("--runs", type=int, default=21, help="whole-process classify runs (median)")
    ap.add_argument("--message", type=Path, default=ROOT / "data" / "example-spam.eml")
    ap.add_argument("--table-rows", type=int, default=2_000_000,
                    help="rows of the generated table (scripts/bench_tables.py; 0: no table row)")
    ap.add_argument("--only-dask", action="store_true", help="only the Dask engine's section")
    ap.add_argument("--no-python-path", action="store_true",
                    help="leave out the rows of nbtext's Python path (NBTEXT_KERNEL=python), which double nbtext's runs")
    args = ap.parse_args()
    if not args.corpus.is_dir():
        raise SystemExit(f"bench: {args.corpus}: no such corpus (the shared data lives in ../shared/data)")
    scales = [int(s) for s in args.scales.split(",")]
    peers, notes = systems(not args.no_python_path)
    corpus_bytes = sum(f.stat().st_size for f in files(args.corpus))
    n_docs = len(files(args.corpus))
    if args.only_dask:
        with tempfile.TemporaryDirectory(prefix="nbtext-bench-") as tmp:
            dask_section(args.corpus, n_docs, corpus_bytes / 2**20, args.repeat, Path(tmp))
        return
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="nbtext-bench-") as tmp:
        tmp = Path(tmp)
        for k in scales:
            corpus = scaled(args.corpus, k, tmp)
            reps = args.repeat if k == 1 else 1
            runs: dict = {s.name: {"train": [], "predict": []} for s in peers}
            for _ in range(reps):
                for s in peers:
                    model = tmp / f"{s.name.replace(' ', '_')}-x{k}.model"
                    runs[s.name]["train"].append(s.train(corpus, model))
                    runs[s.name]["predict"].append(s.predict(corpus, model))
                    runs[s.name]["model"] = model
            for s in peers:
                r = runs[s.name]
                results[(s.name, k)] = {
                    "train": statistics.median(w for w, _ in r["train"]),
                    "train_rss": max(m for _, m in r["train"]),
                    "predict": statistics.median(w for w, _ in r["predict"]),
                    "predict_rss": max(m for _, m in r["predict"]),
                    "size": s.size(r["model"]),
                }
            if k == 1:
                lat = {s.name: [] for s in peers}
                for _ in range(args.runs):
                    for s in peers:
                        lat[s.name].append(s.classify(args.message, runs[s.name]["model"])[0])
                for s in peers:
                    results[(s.name, 1)]["classify"] = statistics.median(lat[s.name])
                    results[(s.name, 1)]["classify_rss"] = s.classify(args.message, runs[s.name]["model"])[1]
            print(f"  {k}x done", file=sys.stderr)

    mb = corpus_bytes / 2**20
    print(f"# nbtext benchmark\n")
    print(f"`python scripts/bench.py` on {args.corpus.name}: {n_docs} messages, {mb:.1f} MiB; "
          f"{os.cpu_count()} cores, Python {sys.version.split()[0]}. Wall times in seconds "
          f"(median of {args.repeat} at 1x), classify in ms (median of {args.runs} whole-process runs), "
          "RSS in MiB (peak of the process and its children).\n")
    for note in notes:
        print(f"- {note}")
    if notes:
        print()
    print("## 1x\n")
    print("| system | train s | predict s | predict MB/s | classify ms | train RSS | predict RSS | classify RSS | model MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in peers:
        r = results[(s.name, 1)] if (s.name, 1) in results else None
        if r is None:
            continue
        print(f"| {s.name} | {r['train']:.2f} | {r['predict']:.2f} | {mb / r['predict']:.1f} | "
              f"{r['classify'] * 1000:.0f} | {r['train_rss']:.0f} | {r['predict_rss']:.0f} | "
              f"{r['classify_rss']:.0f} | {r['size'] / 1e6:.2f} |")
    bases = [s.name for s in peers if s.name in ("nbtext", "nbtext, Python path") and (s.name, 1) in results]
    if bases:
        print("\n## Ratios at 1x: nbtext / peer (below 1.0: nbtext is faster or smaller)\n")
        print("| nbtext / peer | train | predict | classify | train RSS | model size |")
        print("|---|---|---|---|---|---|")
        for name in bases:
            base = results[(name, 1)]
            for s in peers:
                if s.name.startswith("nbtext") or (s.name, 1) not in results:
                    continue
                r = results[(s.name, 1)]
                print(f"| {name} / {s.name} | {ratio(base['train'], r['train'])} | {ratio(base['predict'], r['predict'])} | "
                      f"{ratio(base['classify'], r['classify'])} | {ratio(base['train_rss'], r['train_rss'])} | "
                      f"{ratio(base['size'], r['size'])} |")
    if len(scales) > 1:
        print("\n## Growth with the corpus\n")
        head = " | ".join(f"train s {k}x" for k in scales)
        rss = " | ".join(f"train RSS {k}x" for k in scales)
        print(f"| system | {head} | {scales[-1]}x / 1x time | {rss} | predict s {scales[-1]}x |")
        print("|---|" + "---|" * (2 * len(scales) + 2))
        for s in peers:
            rows = [results[(s.name, k)] for k in scales]
            print(f"| {s.name} | " + " | ".join(f"{r['train']:.2f}" for r in rows)
                  + f" | {rows[-1]['train'] / rows[0]['train']:.1f} | "
                  + " | ".join(f"{r['train_rss']:.0f}" for r in rows) + f" | {rows[-1]['predict']:.2f} |")
    if args.table_rows:
        from bench_tables import run as table_bench

        with tempfile.TemporaryDirectory(prefix="nbtext-bench-table-") as tmp:
            directory = ROOT / "build" if args.table_rows == 2_000_000 else Path(tmp)
            print("\n".join(table_bench(args.table_rows, directory)))
    with tempfile.TemporaryDirectory(prefix="nbtext-bench-") as tmp:
        dask_section(args.corpus, n_docs, mb, args.repeat, Path(tmp))


if __name__ == "__main__":
    main()
