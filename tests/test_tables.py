"""Tables (nbtext.table): the play-golf worked example by hand, agreement with scikit-learn's
GaussianNB, CategoricalNB, LinearDiscriminantAnalysis and QuadraticDiscriminantAnalysis on wine
and iris over 200 stratified 80/20 splits each, the linear view, chunked training equal to
training in one piece, and bad tables refused naming the row and column."""
from __future__ import annotations

import json
import math
import pathlib
from fractions import Fraction as Fr

import numpy as np
import pytest

from nbtext import store
from nbtext.settings import TableSettings
from nbtext.table.estimate import TableEstimator, linear_score
from nbtext.table.model import TableModel, train_table
from nbtext.table.read import Frame, TableOptions
from nbtext.table.stats import TableStats

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
GOLF = FIXTURES / "play_golf.csv"


# -- the play-golf table, by hand ---------------------------------------------------------------

@pytest.fixture(scope="module")
def golf(tmp_path_factory):
    path = tmp_path_factory.mktemp("golf") / "golf.nbm"
    from conftest import CliRunner

    from nbtext.cli import cli

    r = CliRunner().invoke(cli, ["train", str(GOLF), "--label-column", "Play", "-o", str(path)])
    assert r.exit_code == 0, r.output
    assert "trained on 14 rows (5 no, 9 yes), 4 columns (4 categorical, 0 numeric)" in r.stderr
    return path


def test_play_golf_counts_and_probabilities_as_the_notes_give_them(golf):
    m = store.load(str(golf))
    s = m.stats
    yes, no = m.classes.index("yes"), m.classes.index("no")
    assert m.classes == ["no", "yes"] and list(s.class_count) == [5, 9]
    assert math.isclose(math.exp(m.estimator.log_prior[yes]), 9 / 14, rel_tol=1e-12)
    outlook = s.cat[m.columns.index("Outlook")]
    sunny, overcast = s.values[0].index("Sunny"), s.values[0].index("Overcast")
    # without smoothing: the raw counts
    assert Fr(int(outlook[yes, sunny]), int(outlook[yes].sum())) == Fr(3, 9)
    assert Fr(int(outlook[no, overcast]), int(outlook[no].sum())) == Fr(0, 5)
    # with add-one: (0 + 1) / (5 + 1 * 3), d = 3 outlook values (not the 2 classes)
    assert math.isclose(math.exp(m.estimator.cat_logp[0][no, overcast]), 1 / 8, rel_tol=1e-12)


def test_play_golf_posterior_of_overcast_hot_high_windy_by_hand(golf, run):
    # P(yes) P(overcast|yes) P(hot|yes) P(high|yes) P(windy|yes), add-one, d = 3, 3, 2, 2
    yes = Fr(9, 14) * Fr(4 + 1, 9 + 3) * Fr(2 + 1, 9 + 3) * Fr(3 + 1, 9 + 2) * Fr(3 + 1, 9 + 2)
    no = Fr(5, 14) * Fr(0 + 1, 5 + 3) * Fr(2 + 1, 5 + 3) * Fr(4 + 1, 5 + 2) * Fr(3 + 1, 5 + 2)
    p_yes = float(yes / (yes + no))
    m = store.load(str(golf))
    row = m.row_frame({"Outlook": "Overcast", "Temp": "Hot", "Humidity": "High", "Windy": "true"})
    assert math.isclose(m.proba(row)[0][m.classes.index("yes")], p_yes, rel_tol=1e-12)
    r = run("classify", "-m", golf, "--row", "Outlook=Overcast,Temp=Hot,Humidity=High,Windy=true")
    assert r.exit_code == 0 and r.stdout == f"yes\t{p_yes:.6f}\n"
    r = run("classify", "-m", golf, input="Overcast,Hot,High,true\n")
    assert r.stdout == f"yes\t{p_yes:.6f}\n"
    # log p(x): the sum over classes of prior times likelihood
    assert math.isclose(float(m.scores(row)[1][0]), math.log(float(yes + no)), rel_tol=1e-12)


def test_play_golf_unseen_value_is_one_more_value_and_missing_is_skipped(golf):
    m = store.load(str(golf))
    est = m.estimator
    no = m.classes.index("no")
    # a value never seen: alpha / (n_kj + alpha (d_j + 1))
    assert math.isclose(math.exp(est.cat_unseen[0][no]), 1 / (5 + 4), rel_tol=1e-12)
    missing = m.row_frame({"Outlook": "?", "Temp": "Hot", "Humidity": "High", "Windy": "true"})
    dropped = m.row_frame({"Temp": "Hot", "Humidity": "High", "Windy": "true"})
    assert np.array_equal(m.joint_log_likelihood(missing), m.joint_log_likelihood(dropped))
    assert "?" not in m.stats.values[0]


def test_predict_writes_row_numbers_label_probability_and_density(golf, run):
    r = run("predict", "-m", golf, GOLF, "--density", "--header")
    lines = r.stdout.splitlines()
    assert r.exit_code == 0 and lines[0] == "id\tlabel\tprobability\tlog_density" and len(lines) == 15
    assert [ln.split("\t")[0] for ln in lines[1:]] == [str(i) for i in range(1, 15)]
    m = store.load(str(golf))
    frame = next(m.frames_of(str(GOLF), TableOptions()))
    proba, dens = m.scores(frame)
    for ln, p, d in zip(lines[1:], proba, dens):
        _, label, prob, density = ln.split("\t")
        assert float(prob) == round(p[m.classes.index(label)], 6) and float(density) == round(d, 6)
        assert p[m.classes.index(label)] >= 0.5
    j = [json.loads(x) for x in run("predict", "-m", golf, GOLF, "--density", "--format", "jsonl").stdout.splitlines()]
    assert j[0]["id"] == "1" and set(j[0]) == {"id", "label", "probability", "scores", "log_density"}


# -- wine and iris against scikit-learn -----------------------------------------------------------

def load_fixture(name: str):
    label = "class"
    model = train_table([str(FIXTURES / f"{name}.csv")], TableOptions(label_column=label), TableSettings())
    frame = next(model.frames_of(str(FIXTURES / f"{name}.csv"), TableOptions(label_column=label, chunk_rows=10**6),
                                 labelled=True))
    return frame.num, np.asarray(frame.labels)


def test_fixtures_are_scikit_learns_bundled_data():
    from sklearn.datasets import load_iris, load_wine

    for name, loader in (("wine", load_wine), ("iris", load_iris)):
        X, y = load_fixture(name)
        d = loader()
        assert np.array_equal(X, d.data) and list(y) == list(d.target_names[d.target])


def splits(y, n=50):
    from sklearn.model_selection import StratifiedShuffleSplit

    return StratifiedShuffleSplit(n, test_size=0.2, random_state=0).split(np.zeros(len(y)), y)


def fitted(X, y, settings: TableSettings, cat: list | None = None) -> TableEstimator:
    s = TableStats(len(cat or []), X.shape[1], settings.covariance != "diagonal")
    s.add(Frame(list(range(len(y))), np.arange(len(y)), list(y), cat or [], X))
    return TableEstimator(s, settings)


def posteriors(est: TableEstimator, X, cat=None) -> np.ndarray:
    jll = est.joint_log_likelihood(cat or [], X)
    return np.exp(jll - est.log_density(jll)[:, None])


def sklearn_models():
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis, QuadraticDiscriminantAnalysis
    from sklearn.naive_bayes import GaussianNB

    return [("diagonal", 0.0, GaussianNB), ("shared", 0.0, LinearDiscriminantAnalysis),
            ("full", 0.0, QuadraticDiscriminantAnalysis),
            ("full", 0.25, lambda: QuadraticDiscriminantAnalysis(reg_param=0.25))]


def need_ml_covariances():
    """scikit-learn 1.9 made LDA and QDA maximum-likelihood (divide by n, as Gaussian NB does);
    earlier ones divided by n - K and n_k - 1."""
    import sklearn

    if tuple(int(x) for x in sklearn.__version__.split(".")[:2]) < (1, 9):
        pytest.skip(f"scikit-learn {sklearn.__version__}: LDA/QDA covariances are not maximum-likelihood")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["wine", "iris"])
def test_gaussian_nb_lda_qda_equal_scikit_learn_in_every_split(name):
    X, y = load_fixture(name)
    worst = {}
    for cov, reg, make in sklearn_models():
        if cov != "diagonal":
            need_ml_covariances()
        settings = TableSettings(covariance=cov, reg=reg)
        for train, test in splits(y):
            est = fitted(X[train], y[train], settings)
            theirs = make().fit(X[train], y[train])
            assert list(theirs.classes_) == est.stats.classes
            ours = posteriors(est, X[test])
            assert np.array_equal(np.asarray(est.stats.classes)[ours.argmax(axis=1)], theirs.predict(X[test]))
            diff = np.abs(ours - theirs.predict_proba(X[test])).max()
            assert diff <= 1e-9, (cov, reg, diff)
            worst[cov, reg] = max(worst.get((cov, reg), 0.0), diff)
    print(name, worst)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["wine", "iris"])
def test_categorical_nb_on_binned_features_equals_scikit_learn_in_every_split(name):
    from sklearn.naive_bayes import CategoricalNB

    X, y = load_fixture(name)
    edges = np.quantile(X, [0.25, 0.5, 0.75], axis=0)
    B = np.stack([np.digitize(X[:, j], edges[:, j]) for j in range(X.shape[1])], axis=1)
    cells = [[str(v) for v in B[:, j]] for j in range(B.shape[1])]
    worst = 0.0
    for train, test in splits(y):
        # every bin of every column is in each training part, so d_j = 4 = scikit-learn's n_categories
        assert all(len(set(B[train, j])) == len(set(B[:, j])) for j in range(B.shape[1]))
        est = fitted(np.zeros((len(train), 0)), y[train], TableSettings(variant="categorical"),
                     [[c[i] for i in train] for c in cells])
        theirs = CategoricalNB().fit(B[train], y[train])
        ours = posteriors(est, np.zeros((len(test), 0)), [[c[i] for i in test] for c in cells])
        assert np.array_equal(np.asarray(est.stats.classes)[ours.argmax(axis=1)], theirs.predict(B[test]))
        diff = np.abs(ours - theirs.predict_proba(B[test])).max()
        assert diff <= 1e-9
        worst = max(worst, diff)
    print(name, "categorical", worst)


# -- the linear view --------------------------------------------------------------------------------

@pytest.mark.parametrize("covariance", ["diagonal", "shared", "full"])
def test_linear_view_gives_the_models_decisions_on_every_row(covariance, tmp_path):
    X, y = load_fixture("iris")
    two = y != "setosa"
    X, y = X[two], y[two]
    # a mixed table: the four measurements and a categorical binning of the first
    cat = [["long" if v > 6.2 else "short" for v in X[:, 0]]]
    model = TableModel.empty(TableSettings(covariance=covariance), "class",
                             ["size", *map(str, range(4))], ["categorical"] + ["numeric"] * 4)
    frame = Frame(list(range(len(y))), np.arange(len(y)), list(y), cat, X)
    model.add(frame)
    for threshold in (0.5, 0.9):
        model.decision.choose(model.classes, "virginica", threshold)
        view = model.linear()
        assert view["quadratic"] == (covariance != "shared")
        f = linear_score(view, cat, X)
        said = np.asarray([label == "virginica" for label, _ in model.decide_rows(model.proba(frame))])
        assert np.array_equal(f >= 0, said)
        assert 0 < said.sum() < len(said)


def test_info_linear_of_a_text_model_gives_its_decisions(run, tmp_path):
    from conftest import IIR_TEST, IIR_TRAIN

    src = tmp_path / "iir.tsv"
    src.write_text("".join(f"{label}\t{text}\n" for label, text in IIR_TRAIN))
    for variant in ("multinomial", "bernoulli"):
        path = tmp_path / f"{variant}.nbm"
        assert run("train", src, "-o", path, "--variant", variant, "--no-calibrate", "-q").exit_code == 0
        view = json.loads(run("info", "-m", path, "--linear", "--format", "json").stdout)
        model = store.load(str(path))
        for doc in [IIR_TEST, "Tokyo Japan", "Chinese Macao"]:
            X = model.matrix([model.tokenizer(doc)])
            x = np.asarray(model.estimator.linear().features(X).toarray()).ravel()
            f = view["b"] + sum(e["w"] * xi for e, xi in zip(view["tokens"], x))
            said = model.verdicts(model.proba(X))[0]
            assert (f >= 0) == (said == view["positive"])


# -- chunks, learn, merge: the statistics of training in one piece -------------------------------------

def write_table(path, n, seed=0):
    """A mixed table with missing values: two numeric columns, one categorical, a label."""
    rng = np.random.default_rng(seed)
    label = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    x = rng.normal(1000.0, 3.0, n) + (label == "b") * 2
    z = rng.normal(0.0, 1.0, n) * 1e-3
    color = rng.choice(["red", "green", "blue"], n)
    missing = rng.random(n) < 0.02
    with open(path, "w") as f:
        f.write("x,color,z,label\n")
        for i in range(n):
            xs = "NA" if missing[i] else repr(float(x[i]))
            cs = "?" if i % 97 == 0 else color[i]
            f.write(f"{xs},{cs},{float(z[i])!r},{label[i]}\n")


def same_stats(a: TableStats, b: TableStats, tol=1e-9):
    assert a.classes == b.classes and np.array_equal(a.class_count, b.class_count)
    assert a.values == b.values and all(np.array_equal(x, y) for x, y in zip(a.cat, b.cat))
    assert np.array_equal(a.n, b.n) and np.array_equal(a.jn, b.jn)
    for x, y in ((a.mean, b.mean), (a.m2, b.m2), (a.jmean, b.jmean), (a.jm2, b.jm2)):
        assert np.allclose(x, y, rtol=tol, atol=0), np.abs(x - y).max()


@pytest.mark.slow
@pytest.mark.parametrize("covariance", ["diagonal", "full"])
def test_chunked_training_equals_one_piece(covariance, tmp_path):
    """Exact sums: chunks of 777 rows give the bits of the whole file in one piece."""
    from nbtext.store.dump import export_lines

    path = tmp_path / "t.csv"
    write_table(path, 30000)
    settings = TableSettings(covariance=covariance)
    whole = train_table([str(path)], TableOptions(chunk_rows=10**6), settings)
    chunked = train_table([str(path)], TableOptions(chunk_rows=777), settings)
    assert whole.kinds == ["numeric", "categorical", "numeric"]
    assert whole.stats.n[:, 0].sum() < 30000 < whole.class_count.sum() + 1  # NA skipped
    assert list(export_lines(whole)) == list(export_lines(chunked))
    same_stats(whole.stats, chunked.stats, tol=0)
    frame = next(whole.frames_of(str(path), TableOptions(chunk_rows=10**6)))
    assert np.allclose(whole.proba(frame), chunked.proba(frame), rtol=0, atol=1e-9)


def test_merge_and_learn_equal_training_in_one_piece(tmp_path, run):
    path = tmp_path / "t.csv"
    write_table(path, 4000)
    lines = path.read_text().splitlines(keepends=True)
    (tmp_path / "a.csv").write_text("".join(lines[:2001]))
    (tmp_path / "b.csv").write_text(lines[0] + "".join(lines[2001:]))
    for name in ("t", "a", "b"):
        assert run("train", tmp_path / f"{name}.csv", "-o", tmp_path / f"{name}.nbm", "-q").exit_code == 0
    assert run("merge", "-o", tmp_path / "ab.nbm", tmp_path / "a.nbm", tmp_path / "b.nbm").exit_code == 0
    same_stats(store.load(str(tmp_path / "t.nbm")).stats, store.load(str(tmp_path / "ab.nbm")).stats, tol=0)
    dumps = [run("export", "-m", tmp_path / f"{name}.nbm").stdout.splitlines()[2:] for name in ("t", "ab")]
    assert dumps[0] == dumps[1]  # (the arrays and exact sums, bit for bit)
    # learn the second half's "a" rows into the first half's model, then forget them again
    only_a = lines[0] + "".join(ln for ln in lines[2001:] if ln.rstrip().endswith(",a"))
    (tmp_path / "rows.csv").write_text(only_a)
    before = (tmp_path / "a.nbm").read_bytes()
    assert run("learn", "-m", tmp_path / "a.nbm", "--label", "a", tmp_path / "rows.csv").exit_code == 0
    assert run("learn", "-m", tmp_path / "a.nbm", "--label", "a", "--forget", tmp_path / "rows.csv").exit_code == 0
    back = store.load(str(tmp_path / "a.nbm")).stats
    same_stats(_load_bytes(before, tmp_path).stats, back, tol=0)  # (forget subtracts exact sums)
    assert (tmp_path / "a.nbm").read_bytes() == before


def test_exact_sums_do_not_depend_on_the_grouping():
    """The sums of values of any magnitude (and their squares and products) are exact: equal to
    Fraction arithmetic, and equal when summed in other groupings or taken out again."""
    from nbtext.table.exact import column_sums, cross_products

    rng = np.random.default_rng(3)
    X = rng.normal(size=(700, 3)) * np.array([1e-7, 1.0, 1e9])
    X[::5, 0], X[7, 1], X[8, 2] = 0.0, 5e-310, -3e200

    def value(E, i):
        return Fr(int(E.m[i])) * Fr(2) ** int(E.e[i])

    S, S2 = column_sums(X)
    P = cross_products(X[:, :2])
    for j in range(3):
        assert value(S, j) == sum(map(Fr, X[:, j].tolist()))
        assert value(S2, j) == sum(Fr(v) ** 2 for v in X[:, j].tolist())
    assert value(P, (0, 1)) == value(P, (1, 0)) == sum(Fr(a) * Fr(b) for a, b in X[:, :2].tolist())
    A, A2 = column_sums(X[:123])
    B, B2 = column_sums(X[123:])
    assert B.plus(A).strings() == S.strings() and A2.plus(B2).strings() == S2.strings()
    assert S.plus(B, -1).strings() == A.strings()
    assert list(S.divided(np.full(3, 700))) == [float(value(S, j) / 700) for j in range(3)]


def test_a_model_file_without_exact_sums_reads_as_its_floats(tmp_path, run):
    """A format-4 table model written before exact sums were kept: the sums its floats stand
    for, which give the same floats again."""
    path = tmp_path / "t.csv"
    write_table(path, 300)
    m = tmp_path / "m.nbm"
    assert run("train", path, "-o", m, "--covariance", "shared", "-q").exit_code == 0
    dump = run("export", "-m", m).stdout.splitlines(keepends=True)
    assert dump[-1].startswith('{"exact": ')
    (tmp_path / "old.txt").write_text("".join(dump[:-1]))
    assert run("import", tmp_path / "old.txt", "-o", tmp_path / "old.nbm").exit_code == 0
    old = run("export", "-m", tmp_path / "old.nbm").stdout.splitlines(keepends=True)
    assert old[:-1] == dump[:-1]
    same_stats(store.load(str(m)).stats, store.load(str(tmp_path / "old.nbm")).stats, tol=0)


def _load_bytes(data: bytes, tmp_path):
    p = tmp_path / "before.nbm"
    p.write_bytes(data)
    return store.load(str(p))


def test_export_import_is_exact_and_the_file_is_checked(tmp_path, run):
    path = tmp_path / "t.csv"
    write_table(path, 500)
    m = tmp_path / "m.nbm"
    assert run("train", path, "-o", m, "--covariance", "full", "-q").exit_code == 0
    dump = run("export", "-m", m).stdout
    (tmp_path / "d.txt").write_text(dump)
    assert run("import", tmp_path / "d.txt", "-o", tmp_path / "back.nbm").exit_code == 0
    assert (tmp_path / "back.nbm").read_bytes() == m.read_bytes()
    bad = dump.replace('"shape": [3, 3, 2]', '"shape": [3, 2, 3]')
    assert bad != dump
    (tmp_path / "bad.txt").write_text(bad)
    r = run("import", tmp_path / "bad.txt", "-o", tmp_path / "bad.nbm")
    assert r.exit_code == 1 and "malformed dump" in r.stderr and "gauss has shape [3, 2, 3]" in r.stderr


# -- bad tables --------------------------------------------------------------------------------------

@pytest.mark.parametrize("content, args, message", [
    ("a,b,label\n1,2,x\n3,4\n", [], "t.csv:3: expected 3 columns, found 2 (a ragged row)"),
    ("a,b,c\n1,2,x\n", ["--label-column", "label", "--variant", "table"], "t.csv: no label column 'label' (columns: a, b, c)"),
    ("label\nx\ny\n", ["--variant", "table"], "t.csv: no feature columns: the only column is the label 'label'"),
    ("a,b,label\n1,2,x\n3,oops,y\n", ["--numeric", "b"], "t.csv:3: column 'b': 'oops' is not a number (the column is numeric)"),
    ("a,b,label\n1,2,x\n3,oops,y\n", ["--variant", "gaussian"], "t.csv:3: column 'b': 'oops' is not a number"),
    ("", ["--variant", "table"], "t.csv: empty table (no header row)"),
    ("a,b,label\n1,2,x\n3,inf,y\n", ["--numeric", "a,b"], "t.csv:3: column 'b': 'inf' is not a finite number"),
    ("a,b,label\n1,2,x\n3,4,\n", [], "t.csv:3: column 'label': the label is missing"),
    ("a,b,label\n1,2,x\n3,4,x\n", [], "need rows of at least two classes to train, got ['x']"),
    ("x,label\n1e200,a\n-1e200,b\n3,a\n4,b\n", [], "column 'x': values too large for Gaussian statistics"),
    ("a,a,label\n1,2,x\n3,4,y\n", [], "t.csv:1: column 'a' appears twice in the header"),
])
def test_bad_tables_are_refused_naming_the_row_and_column(tmp_path, run, content, args, message):
    src = tmp_path / "t.csv"
    src.write_text(content)
    r = run("train", src, "-o", tmp_path / "m.nbm", *args)
    assert r.exit_code == 1 and r.stderr.startswith("nbtext: error: ") and message in r.stderr, r.stderr
    assert not (tmp_path / "m.nbm").exists()


def test_scoring_a_table_without_the_models_column_is_refused(golf, run, tmp_path):
    src = tmp_path / "s.csv"
    src.write_text("Outlook,Temp,Windy\nSunny,Hot,true\n")
    r = run("predict", "-m", golf, src)
    assert r.exit_code == 1 and "s.csv: no feature column 'Humidity'" in r.stderr


def test_a_text_csv_stays_a_text_line_file(tmp_path, run):
    src = tmp_path / "t.csv"
    src.write_text("label,text\nspam,buy cheap pills now\nham,lunch at noon tomorrow\n" * 3)
    r = run("train", src, "-o", tmp_path / "m.nbm", "--no-calibrate")
    assert r.exit_code == 0 and "documents" in r.stderr and "kind" not in store.read_container(str(tmp_path / "m.nbm"))[0]


def test_eval_reports_how_density_separates_a_held_out_class(tmp_path, run):
    src = FIXTURES / "iris.csv"
    known = tmp_path / "known.csv"
    lines = src.read_text().splitlines(keepends=True)
    known.write_text(lines[0] + "".join(ln for ln in lines[1:] if "virginica" not in ln))
    assert run("train", known, "--label-column", "class", "-o", tmp_path / "m.nbm", "-q").exit_code == 0
    r = run("eval", "-m", tmp_path / "m.nbm", src, "--format", "json")
    d = json.loads(r.stdout)
    assert d["documents"] == 100 and d["accuracy"] == 1.0
    assert d["density"]["novel_rows"] == 50 and d["density"]["novel_classes"] == ["virginica"]
    from sklearn.metrics import roc_auc_score

    rows = run("predict", "-m", tmp_path / "m.nbm", src, "--density").stdout.splitlines()
    novel = ["virginica" in ln for ln in lines[1:]]
    auc = roc_auc_score(novel, [-float(r.split("\t")[3]) for r in rows])
    assert d["density"]["novelty_roc_auc"] == pytest.approx(auc, abs=1e-12) and auc > 0.95
    assert "novelty       ROC-AUC" in run("eval", "-m", tmp_path / "m.nbm", src).stdout


def test_cv_on_a_table(run):
    r = run("cv", FIXTURES / "iris.csv", "--label-column", "class", "--folds", "5", "--format", "json")
    d = json.loads(r.stdout)
    assert r.exit_code == 0 and d["documents"] == 150 and d["mean"]["accuracy"] > 0.9


def test_a_table_model_file_with_a_size_that_does_not_fit_is_refused(golf, tmp_path, run):
    from nbtext.store.atomic import write_atomically
    from nbtext.store.tables import encode_table

    m = store.load(str(golf))
    m.stats.values[0].append("Snowy")  # the header names 4 outlook values, the counts hold 3
    write_atomically(encode_table(m), str(tmp_path / "bad.nbm"))
    r = run("predict", "-m", tmp_path / "bad.nbm", GOLF)
    assert r.exit_code == 1 and "bad.nbm: corrupt model file (ValueError: cat_counts has shape [2, 10], " \
        "the columns need [2, 11])" in r.stderr


def test_cv_predictions_of_a_table(run, tmp_path):
    out = tmp_path / "cv.tsv"
    r = run("cv", GOLF, "--label-column", "Play", "--folds", "3", "--predictions", out)
    rows = [ln.split("\t") for ln in out.read_text().splitlines()]
    assert r.exit_code == 0 and [row[0] for row in rows] == [str(i) for i in range(1, 15)]
    truth = [ln.rstrip().split(",")[-1] for ln in GOLF.read_text().splitlines()[1:]]
    assert [row[3] for row in rows] == truth and {row[4] for row in rows} == {"1", "2", "3"}


@pytest.mark.parametrize("covariance", ["shared", "full"])
def test_a_singular_covariance_gets_a_ridge(covariance, tmp_path, run):
    src = tmp_path / "t.csv"
    rng = np.random.default_rng(1)
    x = rng.normal(size=60)
    y = np.where(x + rng.normal(size=60) * 0.5 > 0, "p", "q")
    src.write_text("x,twice,label\n" + "".join(f"{float(a)!r},{float(2 * a)!r},{b}\n" for a, b in zip(x, y)))
    m = tmp_path / "m.nbm"
    assert run("train", src, "--covariance", covariance, "-o", m, "-q").exit_code == 0
    model = store.load(str(m))
    assert model.kinds == ["numeric", "numeric"] and len(model.estimator.gaussians) == 2
    assert all(g.ridge > 0 for g in model.estimator.gaussians)
    r = run("predict", "-m", m, src)
    said = [ln.split("\t")[1] for ln in r.stdout.splitlines()]
    assert r.exit_code == 0 and np.mean(np.asarray(said) == y) > 0.7


@pytest.mark.slow
def test_decisions_of_a_whole_array_are_those_of_each_row(golf):
    m = store.load(str(golf))
    rng = np.random.default_rng(0)
    p = rng.random(2000)
    proba = np.stack([1 - p, p], axis=1)
    proba[:5] = 0.5  # ties
    for positive, threshold, unsure in ((None, None, None), ("yes", 0.7, (0.4, 0.8)), ("no", 0.2, None)):
        m.decision.choose(m.classes, positive, threshold, unsure)
        best, uns = m.decide_array(proba)
        assert [(m.classes[b], bool(u)) for b, u in zip(best, uns)] == m.decide_rows(proba)


def test_quoted_fields_blank_lines_and_blocks_of_any_size(tmp_path):
    """A quoted field with a comma and a line break, across the end of a block; blank lines;
    the same records and line numbers whatever the block size."""
    from nbtext.table.read import raw_blocks

    src = tmp_path / "q.csv"
    src.write_text('a,b,label\n1,"x, y",p\n\n2,"two\nlines",q\n3,plain,p\n   \n4,"""quoted""",q\n')
    expect = [(1, ["a", "b", "label"]), (2, ["1", "x, y", "p"]), (4, ["2", "two\nlines", "q"]),
              (6, ["3", "plain", "p"]), (8, ["4", '"quoted"', "q"])]
    for size in (1, 2, 3, 100):
        got = [(n, row) for lines, rows in raw_blocks(str(src), None, size) for n, row in zip(lines, rows)]
        assert got == expect, size
    m = train_table([str(src)], TableOptions(chunk_rows=2), TableSettings())
    assert m.kinds == ["numeric", "categorical"] and m.stats.values[0] == ["x, y", "two\nlines", "plain", '"quoted"']


def test_a_quote_left_open_is_refused(tmp_path, run):
    src = tmp_path / "q.csv"
    src.write_text('a,b,label\n1,"x,p\n2,y,q\n')
    r = run("train", src, "-o", tmp_path / "m.nbm", "--variant", "table")
    assert r.exit_code == 1 and "q.csv:2: bad CSV (a quote opened in this record is never closed)" in r.stderr


def test_table_estimator_fits_in_pieces_as_scikit_learns_gaussian_nb_and_categorical_nb():
    from sklearn.naive_bayes import CategoricalNB, GaussianNB

    from nbtext import TableNB

    X, y = load_fixture("wine")
    ours = TableNB()
    for part in np.array_split(np.arange(len(y)), 7):
        ours.partial_fit(X[part], y[part], classes=np.unique(y))
    theirs = GaussianNB().fit(X, y)
    assert np.array_equal(ours.predict(X), theirs.predict(X))
    assert np.abs(ours.predict_proba(X) - theirs.predict_proba(X)).max() <= 1e-9
    jll = ours.predict_joint_log_proba(X)
    assert np.allclose(ours.score_samples(X), np.log(np.exp(jll).sum(axis=1)), rtol=1e-12)
    B = (X > np.median(X, axis=0)).astype(int)
    rows = [[str(v) for v in r] for r in B]
    cat = TableNB(categorical=range(B.shape[1])).fit(rows, y)
    assert np.abs(cat.predict_proba(rows) - CategoricalNB().fit(B, y).predict_proba(B)).max() <= 1e-9
    # taking rows out again
    ours.partial_fit(X[:10], y[:10], sample_weight=-np.ones(10))
    rest = GaussianNB().fit(X[10:], y[10:])
    assert np.abs(ours.predict_proba(X) - rest.predict_proba(X)).max() <= 1e-9
    # a mixed table with missing values: rows as Python lists
    mixed = [[r[0], None if i % 5 == 0 else r[1], "hi" if r[2] > 2.4 else "lo"] for i, r in enumerate(X.tolist())]
    m = TableNB(categorical=[2]).fit(mixed, y)
    assert m.predict_proba(mixed).shape == (len(y), 3) and m.stats_.n[:, 1].sum() == len(y) - len(range(0, len(y), 5))


def test_columns_typed_by_the_first_block_are_retyped_by_the_whole_file(tmp_path):
    src = tmp_path / "t.csv"
    rows = [f"{i},{'' if i < 5 else i % 3},{'x' if i % 2 else 'y'}\n" for i in range(40)]
    rows[30] = "oops,1,x\n"  # text in a column whose first block held numbers only
    src.write_text("a,b,label\n" + "".join(rows))
    for chunk in (4, 1000):
        m = train_table([str(src)], TableOptions(chunk_rows=chunk), TableSettings())
        # a: text at row 31; b: no value in the first block, numbers after
        assert m.kinds == ["categorical", "numeric"], chunk
        assert m.stats.n[:, 0].sum() == 35 and len(m.stats.values[0]) == 40


def test_classify_exit_code_of_a_table_row(golf, run):
    r = run("classify", "-m", golf, "--exit-code", "--row", "Outlook=Overcast,Temp=Hot,Humidity=High,Windy=true")
    assert r.exit_code == 0 and r.stdout.startswith("yes\t")  # two classes: the second is the positive one
    r = run("classify", "-m", golf, "--exit-code", "--row", "Outlook=Rainy,Temp=Hot,Humidity=High,Windy=true")
    assert r.exit_code == 1 and r.stdout.startswith("no\t")
    r = run("classify", "-m", golf, "--exit-code", "--row", "Outlook=Rainy,Wind=true")
    assert r.exit_code == 3 and "--row: no column 'Wind' in the model" in r.stderr


def test_tables_from_stdin_tsv_and_gzip(tmp_path, run):
    import gzip

    text = GOLF.read_text()
    tsv = tmp_path / "golf.tsv"
    tsv.write_text(text.replace(",", "\t"))
    gz = tmp_path / "golf.csv.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    exports = []
    for source, stdin, extra in ((GOLF, None, []), ("-", text, ["--variant", "table"]), (tsv, None, []),
                                 (gz, None, [])):
        m = tmp_path / "m.nbm"
        r = run("train", source, "--label-column", "Play", "-o", m, "-q", *extra, input=stdin)
        assert r.exit_code == 0, (source, r.stderr)
        exports.append(run("export", "-m", m).stdout)
    assert exports[1:] == exports[:1] * 3
    days = "Outlook,Temp,Humidity,Windy\nOvercast,Hot,High,true\nRainy,Cool,?,false\n"
    r = run("predict", "-m", tmp_path / "m.nbm", "-", input=days)
    assert r.exit_code == 0 and [ln.split("\t")[:2] for ln in r.stdout.splitlines()] == [["1", "yes"], ["2", "yes"]]


def test_an_unnamed_column_is_named_by_its_number_and_a_huge_value_is_refused_in_scoring(tmp_path, run):
    src = tmp_path / "t.csv"
    src.write_text(",size,label\n0,1.5,x\n1,2.5,y\n2,1.4,x\n3,2.6,y\n")  # as pandas writes its index
    m = tmp_path / "m.nbm"
    assert run("train", src, "-o", m, "-q").exit_code == 0
    assert store.load(str(m)).columns == ["1", "size"]
    assert run("predict", "-m", m, src).stdout.splitlines()[1].split("\t")[1] == "y"
    (tmp_path / "s.csv").write_text(",size\n0,1.5\n1,1e300\n")
    r = run("predict", "-m", m, tmp_path / "s.csv")
    assert r.exit_code == 1 and "row 2 (line 3): a value too large to score" in r.stderr


def test_diagonal_statistics_hold_no_scatter_matrices():
    """Only shared/full covariance needs p x p per class: a diagonal model of a 5 MB file with
    100,000 numeric columns asked for 149 GiB at load (TableStats.of_arrays)."""
    import numpy as np
    from nbtext.table.stats import TableStats

    p, k = 100_000, 2
    gauss = (np.ones((k, p)), np.zeros((k, p)), np.ones((k, p)))
    s = TableStats.of_arrays(["a", "b"], [1.0, 1.0], [], [], gauss, None)
    assert s.jm2.size == 0 and s.jmean.size == 0
    assert TableStats(0, p, joint=False).jm2.size == 0 and TableStats(0, 3, joint=True).jm2.shape == (0, 3, 3)


def test_a_table_line_is_read_up_to_a_limit(tmp_path, monkeypatch, run):
    """A CSV with no line break was read whole into one line, whatever its size."""
    import nbtext.table.read as table_read

    monkeypatch.setattr(table_read, "MAX_DOCUMENT_BYTES", 1000)
    f = tmp_path / "t.csv"
    f.write_text("a,b,label\n1,2,x\n" + "3," * 2000 + "y\n")
    r = run("train", f, "--label-column", "label", "--variant", "table", "-o", tmp_path / "m.nbm")
    assert r.exit_code == 1 and "t.csv:3: a line longer than 1,000 characters" in r.stderr
    assert not (tmp_path / "m.nbm").exists()
