"""The table row of `make bench`: nbtext and scikit-learn's GaussianNB on a generated table.

    python scripts/bench_tables.py [--rows 2000000] [--dir DIR]

A CSV of --rows rows (five numeric columns, three classes, seeded) is generated once (kept in
--dir, default build/). nbtext trains on it a chunk of rows at a time (`nbtext train` with its
defaults: the columns typed by their values, Gaussian NB) and predicts every row; scikit-learn
reads the same file with numpy.loadtxt, fits GaussianNB and writes the same id, label and
probability rows. Wall time and peak RSS of each whole process (bench.measure). Then the
chunked model's statistics are compared with the same statistics computed in one piece, the
whole file in memory (numpy, two-pass per class): the largest relative difference is printed,
and must be under 1e-9.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import BIN, GNU_TIME, ROOT, measure  # noqa: E402

COLUMNS = ["x1", "x2", "x3", "x4", "x5"]


def generate(path: Path, rows: int, seed: int = 0) -> None:
    """Three classes with different means and scales; written a block at a time."""
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0, 0, 0, 0], [1, -1, 0.5, 2, 0], [-1, 1, 2, 0, -2]], dtype=float)
    scales = np.array([1, 2, 0.5, 1.5, 3], dtype=float)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write(",".join(COLUMNS) + ",label\n")
        block = 200_000
        for start in range(0, rows, block):
            n = min(block, rows - start)
            y = rng.integers(0, 3, n)
            X = centers[y] + rng.normal(size=(n, 5)) * scales * (1 + 0.2 * y[:, None])
            lines = ["%.6f,%.6f,%.6f,%.6f,%.6f,c%d" % (*x, c) for x, c in zip(X.tolist(), y.tolist())]
            f.write("\n".join(lines) + "\n")
    tmp.replace(path)


SKLEARN_TRAIN = """
import sys, pickle, numpy as np
from sklearn.naive_bayes import GaussianNB
X = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1, usecols=range(5))
y = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1, usecols=5, dtype=str)
pickle.dump(GaussianNB().fit(X, y), open(sys.argv[2], "wb"))
"""
SKLEARN_PREDICT = """
import sys, pickle, numpy as np
m = pickle.load(open(sys.argv[2], "rb"))
X = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1, usecols=range(5))
P = m.predict_proba(X)
best = P.argmax(axis=1)
out = sys.stdout
for start in range(0, len(X), 65536):
    out.write("".join("%d\\t%s\\t%.6f\\n" % (i + 1, m.classes_[b], P[i, b])
                      for i, b in zip(range(start, min(start + 65536, len(X))), best[start:start + 65536])))
"""


def timed(cmd: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one whole process: bench.measure, and the CPU time
    (user + system, from GNU time) too, which a busy machine does not inflate as it does wall time."""
    import tempfile

    if not GNU_TIME:
        wall, rss = measure(cmd)
        return wall, float("nan"), rss
    with tempfile.NamedTemporaryFile(prefix="nbtext-bench-", suffix=".cpu") as f:
        wall, rss = measure([GNU_TIME, "-f", "%U %S", "-o", f.name, *cmd])
        user, system = (float(x) for x in Path(f.name).read_text().split()[-2:])
    return wall, user + system, rss


def one_piece_difference(csv: Path, model_path: Path) -> float:
    """The largest relative difference between the chunked model's per-class means and M2s and
    the same computed in one piece from the whole file in memory."""
    sys.path.insert(0, str(ROOT))
    from nbtext import store

    model = store.load(str(model_path))
    X = np.loadtxt(csv, delimiter=",", skiprows=1, usecols=range(5))
    y = np.loadtxt(csv, delimiter=",", skiprows=1, usecols=5, dtype=str)
    worst = 0.0
    for i, c in enumerate(model.classes):
        Xc = X[y == c]
        mean = Xc.mean(axis=0)
        m2 = ((Xc - mean) ** 2).sum(axis=0)
        assert np.array_equal(model.stats.n[i], np.full(5, len(Xc)))
        for ours, theirs in ((model.stats.mean[i], mean), (model.stats.m2[i], m2)):
            worst = max(worst, float(np.max(np.abs(ours - theirs) / np.abs(theirs))))
    return worst


def run(rows: int, directory: Path) -> list[str]:
    """The table's rows (markdown) for bench.md."""
    import importlib.util
    import tempfile

    directory.mkdir(parents=True, exist_ok=True)
    csv = directory / f"table-{rows}.csv"
    if not csv.exists():
        generate(csv, rows)
    nbtext = str(BIN / "nbtext")
    out = [f"\n## Tables: {rows:,} rows, 5 numeric columns, 3 classes ({csv.stat().st_size / 1e6:.0f} MB CSV)\n",
           "Training reads the file a chunk of 8,192 rows at a time (the columns typed by the first "
           "chunk, checked on the rest); scikit-learn reads it whole with numpy.loadtxt. Rows/s of "
           "the whole process.\n",
           "| system | train s (CPU s) | train rows/s | train RSS MiB | predict s (CPU s) | predict rows/s | predict RSS MiB |",
           "|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="nbtext-bench-tables-") as tmp:
        model = Path(tmp) / "t.nbm"
        tw, tc, tr = timed([nbtext, "train", str(csv), "-o", str(model), "-q"])
        pw, pc, pr = timed([nbtext, "predict", "-m", str(model), str(csv)])
        out.append(f"| nbtext (Gaussian NB) | {tw:.2f} ({tc:.2f}) | {rows / tw:,.0f} | {tr:.0f} | {pw:.2f} ({pc:.2f}) | "
                   f"{rows / pw:,.0f} | {pr:.0f} |")
        if importlib.util.find_spec("sklearn") is not None:
            pk = Path(tmp) / "gnb.pickle"
            tw, tc, tr = timed([sys.executable, "-c", SKLEARN_TRAIN, str(csv), str(pk)])
            pw, pc, pr = timed([sys.executable, "-c", SKLEARN_PREDICT, str(csv), str(pk)])
            out.append(f"| scikit-learn GaussianNB (numpy.loadtxt) | {tw:.2f} ({tc:.2f}) | {rows / tw:,.0f} | {tr:.0f} | "
                       f"{pw:.2f} ({pc:.2f}) | {rows / pw:,.0f} | {pr:.0f} |")
        diff = one_piece_difference(csv, model)
        out.append(f"\nChunked training against the statistics computed in one piece: largest relative "
                   f"difference of a class's mean or M2 {diff:.1e} ({'under' if diff < 1e-9 else 'NOT under'} 1e-9).")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--dir", type=Path, default=ROOT / "build")
    args = ap.parse_args()
    print("\n".join(run(args.rows, args.dir)))


if __name__ == "__main__":
    main()
