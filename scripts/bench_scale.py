"""`make bench-scale`: nbtext beside fastText and scikit-learn on generated corpora of growing size.

    python scripts/bench_scale.py [--max 200M] [--corpora 50M-20,200M-20,1G-20,50M-500] [--out build/bench-scale.md]

The corpora come from scripts/gen_corpus.py (Zipf word frequencies over 3 million word types,
each class with its own topical words; fastText's line format), generated once and kept in
build/scale/. NAME is SIZE-CLASSES; corpora larger than --max (or $SCALE_MAX; 200M by default)
are left out, so that the 1 GB run happens only when asked for (SCALE_MAX=1G make bench-scale).

Each system trains in a process of its own, started through GNU time (Debian package `time`;
without it, through this script's `rusage`, a small process that reads RUSAGE_CHILDREN), which
gives its wall time, CPU time (user + sys) and peak RSS (the largest of the process and its
children, counted from the exec: the measuring process is small):
- nbtext: `nbtext train CORPUS -o MODEL` with default options. A refusal (`nbtext: error: ...`,
  status 1) is a row of the table, with the time it took to come. Then again with the peers'
  features (`--ngrams 1 --char-ngrams 0,0`: words alone, as both peers' defaults count), the row
  "nbtext, words": the defaults' word pairs and character n-grams make most of the tokens counted.
- fastText: its CLI, `fasttext supervised -epoch 1 -thread 2` (Debian package `fasttext`;
  the column is left out with a note when it is not installed).
- scikit-learn: HashingVectorizer(2^20, no alternate sign) + MultinomialNB, the script a user
  writes for data that does not fit a vocabulary (this file's `sklearn-train`: partial_fit
  over chunks of 50,000 lines, so its memory stays that of one chunk and the model).
Then predict: 50 MB of unlabelled lines from the same generator (another seed), scored by
nbtext (`predict --lines`, the model of the first corpus that trained) and by fastText
(`predict`, the model of the same corpus), in --rounds interleaved rounds (nbtext, then
fastText): each figure is the median of its rounds, beside the range of the rounds' ratios (on a
shared machine one round of either can be a fifth slower). `--predict-only` runs predict alone,
with the models an earlier run left in --cache.

The Markdown table (stdout and --out) puts each figure beside the targets of issue 34 and the
ratios to fastText and scikit-learn measured in the same run. The load average is printed
before and after: the machine may be shared, so CPU time is the figure to compare.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SCALE = ROOT / "build" / "scale"
CORPORA = ["50M-20", "200M-20", "1G-20", "50M-500"]
PREDICT_SIZE = "50M"
WORDS = ["--ngrams", "1", "--char-ngrams", "0,0"]  # the features fastText's and scikit-learn's defaults count
MIB = 1 << 20

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_corpus import parse_size  # noqa: E402


class Run:
    """One process's figures: wall and CPU seconds, peak RSS in MiB, status, the end of its stderr."""

    def __init__(self, wall: float, cpu: float, rss: float, status: int, err: str):
        self.wall, self.cpu, self.rss, self.status, self.err = wall, cpu, rss, status, err

    @staticmethod
    def median(runs: list["Run"]) -> "Run":
        """Each figure's median over runs (the first failed run, if one failed)."""
        import statistics

        failed = [r for r in runs if r.status]
        if failed:
            return failed[0]
        return Run(*(statistics.median(getattr(r, f) for r in runs) for f in ("wall", "cpu", "rss")), 0, "")

    @property
    def refusal(self) -> str | None:
        """nbtext's error line, when the command refused (status 1, `nbtext: error: ...`)."""
        lines = [ln for ln in self.err.splitlines() if ln.startswith("nbtext: error:")]
        return lines[-1][len("nbtext: error: "):] if self.status == 1 and lines else None


GNU_TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None


def rusage(out: str, cmd: list[str]) -> int:
    """GNU time's "%e %U %S %M" of cmd written to ``out``, from this small process's
    RUSAGE_CHILDREN (where the Debian package `time` is not installed); cmd's status."""
    import resource

    start = time.perf_counter()
    status = subprocess.run(cmd).returncode
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    Path(out).write_text(f"{time.perf_counter() - start:.2f} {r.ru_utime:.2f} {r.ru_stime:.2f} {r.ru_maxrss}\n")
    return status if status >= 0 else 128 - status


def measure(cmd: list[str], stdout=subprocess.DEVNULL, timeout: float | None = None) -> Run:
    """Run cmd under GNU time (else this script's rusage, in a process of its own); its figures."""
    with tempfile.NamedTemporaryFile(prefix="nbtext-scale-", suffix=".time") as t:
        start = time.perf_counter()
        timed = ([GNU_TIME, "-f", "%e %U %S %M", "-o", t.name] if GNU_TIME else
                 [sys.executable, __file__, "rusage", t.name])
        try:
            p = subprocess.run([*timed, *cmd], stdin=subprocess.DEVNULL,
                               stdout=stdout, stderr=subprocess.PIPE, timeout=timeout)
            status, err = p.returncode, p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            status, err = -1, f"timed out after {timeout:.0f} s"
        wall = time.perf_counter() - start
        lines = Path(t.name).read_text().splitlines()  # ("Command exited with non-zero status 1" first)
        fields = lines[-1].split() if lines else []
    if len(fields) >= 4 and status >= 0:
        return Run(wall, float(fields[1]) + float(fields[2]), int(fields[3]) / 1024, status, err)
    return Run(wall, float("nan"), float("nan"), status, err)


def corpus(name: str) -> Path:
    """SCALE/NAME.ft (build/scale/, or --cache), generated when missing (NAME: SIZE-CLASSES)."""
    size, classes = name.split("-")
    path = SCALE / f"{name}.ft"
    if not path.exists():
        SCALE.mkdir(parents=True, exist_ok=True)
        print(f"bench-scale: generating {path} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_corpus.py"), "--size", size,
                        "--classes", classes, "-o", str(path)], check=True)
    return path


def predict_lines() -> Path:
    """50 MB of unlabelled lines (the 20-class generator, another seed): what predict scores."""
    path = SCALE / f"predict-{PREDICT_SIZE}.txt"
    if not path.exists():
        SCALE.mkdir(parents=True, exist_ok=True)
        labelled = SCALE / f"predict-{PREDICT_SIZE}.ft"
        subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_corpus.py"), "--size", PREDICT_SIZE,
                        "--classes", "20", "--seed", "1", "-o", str(labelled)], check=True)
        with open(labelled, "rb") as src, open(str(path) + ".part", "wb") as out:
            for line in src:
                out.write(line.split(b" ", 1)[1])
        os.replace(str(path) + ".part", path)
        labelled.unlink()
    return path


def sklearn_train(src: str, model: str) -> None:
    """HashingVectorizer + MultinomialNB over a fastText line file, chunk by chunk."""
    import joblib
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.naive_bayes import MultinomialNB

    labels = set()
    with open(src, "rb") as f:
        for line in f:
            labels.add(line.split(b" ", 1)[0])
    classes = sorted(lb.decode() for lb in labels)
    vec = HashingVectorizer(n_features=2 ** 20, alternate_sign=False, decode_error="replace")
    nb = MultinomialNB()
    with open(src, "rb") as f:
        while True:
            chunk = [line for _, line in zip(range(50_000), f)]
            if not chunk:
                break
            y, docs = zip(*(line.rstrip(b"\n").split(b" ", 1) for line in chunk))
            nb.partial_fit(vec.transform(docs), [lb.decode() for lb in y], classes=classes)
    joblib.dump((vec, nb), model)


SKLEARN_MOST = 4 << 30  # bytes scikit-learn's model may take here


def sklearn_bytes(classes: int) -> int:
    """What MultinomialNB over 2^20 hashed features holds: feature_count_, feature_log_prob_ and
    partial_fit's update, each classes x 2^20 float64."""
    return 3 * classes * 2 ** 20 * 8


def size_of(path: Path) -> float:
    return path.stat().st_size / MIB if path.exists() else float("nan")


def figure(run: Run | None, model: float | None = None, corpus_mib: float | None = None) -> list[str]:
    """wall, CPU, RSS, model cells of a row."""
    if run is None:
        return ["-"] * 4
    if run.status != 0:
        what = f"refused after {run.wall:.0f} s" if run.refusal else f"failed ({run.status})"
        return [what, f"{run.cpu:.0f}", f"{run.rss:,.0f}", "-"]
    share = f" ({model / corpus_mib:.0%})" if model is not None and corpus_mib else ""
    return [f"{run.wall:.1f}", f"{run.cpu:.1f}", f"{run.rss:,.0f}",
            f"{model:,.0f}{share}" if model is not None else "-"]


def ratio(a: Run | None, b: Run | None) -> str:
    """a's wall and CPU time as multiples of b's."""
    if a is None or b is None or a.status or b.status:
        return "-"
    return f"{a.wall / b.wall:.2f}x / {a.cpu / b.cpu:.2f}x"


TARGETS = {  # issue 34's targets for nbtext, by corpus
    "200M-20": "train <= 0.5x fastText, <= 1x sklearn; RSS <= 1 GiB; model <= 25% of corpus",
    "1G-20": "trains with defaults; time <= 1.2x linear from 50M; RSS flat past the budget",
    "50M-500": "trains with defaults",
}


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None) -> int:
    global SCALE
    if argv is None and sys.argv[1:2] == ["sklearn-train"]:
        sklearn_train(sys.argv[2], sys.argv[3])
        return 0
    if argv is None and sys.argv[1:2] == ["rusage"]:
        return rusage(sys.argv[2], sys.argv[3:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", default=",".join(CORPORA), help="SIZE-CLASSES,... to run (default: %(default)s)")
    ap.add_argument("--max", default=os.environ.get("SCALE_MAX", "200M"),
                    help="leave out corpora larger than this (default: $SCALE_MAX, else 200M)")
    ap.add_argument("--no-predict", action="store_true", help="train only")
    ap.add_argument("--predict-only", action="store_true",
                    help="predict alone, with the models an earlier run left in --cache")
    ap.add_argument("--rounds", type=int, default=5, help="predict's interleaved rounds (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds a process may take")
    ap.add_argument("--out", default=str(ROOT / "build" / "bench-scale.md"))
    ap.add_argument("--cache", default=str(SCALE), help="where the corpora and models are kept (default: %(default)s)")
    a = ap.parse_args(argv)
    SCALE = Path(a.cache)
    names = [n for n in a.corpora.split(",") if parse_size(n.split("-")[0]) <= parse_size(a.max)]
    left_out = [n for n in a.corpora.split(",") if n not in names]
    fasttext = shutil.which("fasttext")
    have_sklearn = subprocess.run([sys.executable, "-c", "import sklearn"], capture_output=True).returncode == 0
    nbtext = str(BIN / "nbtext")
    started = loadavg()

    rows, results, skipped = [], {}, []
    for name in names:
        path = corpus(name)
        mib = size_of(path)
        models = {"nbtext": SCALE / f"{name}.nbm", "nbtext, words": SCALE / f"{name}-words.nbm",
                  "fastText": SCALE / f"ft-{name}", "sklearn": SCALE / f"sk-{name}.joblib"}
        if a.predict_only:
            if not models["nbtext"].exists():
                sys.exit(f"bench-scale: --predict-only: no {models['nbtext']} (run without it first)")
            results[name] = ({"nbtext": Run(0, 0, 0, 0, "")}, models, mib)
            continue
        for m in models.values():
            for p in (m, m.with_name(m.name + ".bin"), m.with_name(m.name + ".vec")):
                p.unlink(missing_ok=True)
        print(f"bench-scale: {name}: nbtext ...", file=sys.stderr, flush=True)
        runs = {"nbtext": measure([nbtext, "train", str(path), "-o", str(models["nbtext"]), "-q"], timeout=a.timeout)}
        print(f"bench-scale: {name}: nbtext, words ...", file=sys.stderr, flush=True)
        runs["nbtext, words"] = measure([nbtext, "train", str(path), "-o", str(models["nbtext, words"]), "-q", *WORDS],
                                        timeout=a.timeout)
        if fasttext:
            print(f"bench-scale: {name}: fastText ...", file=sys.stderr, flush=True)
            runs["fastText"] = measure([fasttext, "supervised", "-input", str(path), "-output", str(models["fastText"]),
                                        "-epoch", "1", "-thread", "2", "-verbose", "0"], timeout=a.timeout)
        if have_sklearn and sklearn_bytes(int(name.split("-")[1])) > SKLEARN_MOST:
            skipped.append(f"scikit-learn on {name}: its MultinomialNB would hold "
                           f"{sklearn_bytes(int(name.split('-')[1])) / (1 << 30):.0f} GiB (classes x 2^20 float64 "
                           f"counts, log probabilities and a chunk's update), more than a shared machine lends")
        elif have_sklearn:
            print(f"bench-scale: {name}: scikit-learn ...", file=sys.stderr, flush=True)
            runs["sklearn"] = measure([sys.executable, __file__, "sklearn-train", str(path), str(models["sklearn"])],
                                      timeout=a.timeout)
        results[name] = (runs, models, mib)
        sizes = {"nbtext": size_of(models["nbtext"]), "nbtext, words": size_of(models["nbtext, words"]),
                 "fastText": size_of(models["fastText"].with_name(f"ft-{name}.bin")),
                 "sklearn": size_of(models["sklearn"])}
        for system, run in runs.items():
            vs = ([ratio(run, runs.get("fastText")), ratio(run, runs.get("sklearn"))] if system.startswith("nbtext")
                  else ["", ""])
            note = TARGETS.get(name, "") if system == "nbtext" else ""
            if system.startswith("nbtext") and run.refusal:
                why = run.refusal if len(run.refusal) <= 120 else run.refusal[:117] + "..."
                note = (note + "; " if note else "") + f"refused: \"{why}\""
            rows.append([name, f"{mib:,.0f}", system, *figure(run, sizes[system] if run.status == 0 else None, mib),
                         *vs, note])
        for system, run in runs.items():
            if run.status and not run.refusal:
                print(f"bench-scale: {name}: {system} failed ({run.status}): {run.err[-400:]}", file=sys.stderr)

    out = ["# nbtext at scale: generated corpora (scripts/gen_corpus.py), beside fastText and scikit-learn", "",
           f"Load average at the start: {started}. Train: one run each; predict: medians of its rounds. CPU is user + "
           "sys of the process and its children.",
           "nbtext: `train` with defaults; nbtext, words: `train " + " ".join(WORDS) + "`; fastText: "
           "`supervised -epoch 1 -thread 2`; scikit-learn: "
           "HashingVectorizer(2^20) + MultinomialNB, partial_fit over chunks of 50,000 lines.", ""]
    if not fasttext:
        out += ["fastText is not installed (Debian package `fasttext`): its column is left out.", ""]
    if skipped:
        out += [f"Left out: {s}." for s in skipped] + [""]
    if left_out:
        out += [f"Left out (larger than --max {a.max}; SCALE_MAX=1G make bench-scale runs them): "
                f"{', '.join(left_out)}.", ""]
    if not a.predict_only:
        out += ["## Train", "",
                "| corpus | MiB | system | wall s | CPU s | peak RSS MiB | model MiB (of corpus) | "
                "wall / CPU vs fastText | wall / CPU vs sklearn | issue 34's target / note |",
                "|---|---:|---|---:|---:|---:|---:|---:|---:|---|"]
        out += ["| " + " | ".join(r) + " |" for r in rows]
    growth = [] if a.predict_only else [n for n in names if n.endswith("-20")]
    nb = {n: results[n][0]["nbtext"] for n in growth}
    ok = [n for n in growth if nb[n].status == 0]
    if len(ok) >= 2:
        first, last = ok[0], ok[-1]
        scale = results[last][2] / results[first][2]
        out += ["", f"nbtext's growth {first} -> {last}: CPU {nb[last].cpu / nb[first].cpu / scale:.2f}x linear, "
                    f"peak RSS {nb[last].rss / nb[first].rss:.2f}x (target: time <= 1.2x linear, RSS flat past "
                    f"the budget)."]
    if not a.no_predict:
        lines = predict_lines()
        trained = next((n for n in names if n.endswith("-20") and results[n][0]["nbtext"].status == 0), None)
        out += ["", f"## Predict: {size_of(lines):,.0f} MiB of lines ({sum(1 for _ in open(lines, 'rb')):,} lines)", ""]
        if trained is None:
            out += ["No 20-class corpus trained with nbtext (refused above): nothing for predict to load."]
        else:
            _, models, _ = results[trained]
            commands = {"nbtext": [nbtext, "predict", "-m", str(models["nbtext"]), "--lines", str(lines), "-q"]}
            if fasttext:
                commands["fastText"] = [fasttext, "predict", str(models["fastText"].with_name(f"ft-{trained}.bin")),
                                        str(lines)]
            rounds: dict = {system: [] for system in commands}
            for r in range(max(1, a.rounds)):
                print(f"bench-scale: predict, round {r + 1} ...", file=sys.stderr, flush=True)
                for system, cmd in commands.items():
                    rounds[system].append(measure(cmd, timeout=a.timeout))
            p = {system: Run.median(runs) for system, runs in rounds.items()}
            each = ""
            if fasttext and not any(r.status for runs in rounds.values() for r in runs):
                walls = sorted(n.wall / f.wall for n, f in zip(rounds["nbtext"], rounds["fastText"]))
                each = f" Each round's nbtext / fastText wall time: {walls[0]:.2f}x to {walls[-1]:.2f}x."
            out += [f"With the models of {trained}; medians of {max(1, a.rounds)} interleaved rounds.{each}", "",
                    "| system | wall s | CPU s | peak RSS MiB | wall / CPU vs fastText | issue 34's target |",
                    "|---|---:|---:|---:|---:|---|"]
            for system, run in p.items():
                cells = figure(run)[:3]
                out.append(f"| {system} | {' | '.join(cells)} | "
                           f"{ratio(run, p.get('fastText')) if system == 'nbtext' else ''} | "
                           f"{'no slower than fastText predict' if system == 'nbtext' else ''} |")
    out += ["", f"Load average at the end: {loadavg()}."]
    text = "\n".join(out) + "\n"
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
