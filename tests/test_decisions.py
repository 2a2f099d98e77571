"""Calibration, thresholds, the unsure band and --max-fpr: what a user relies on."""
import json

import numpy as np
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from nbtext.nb.calibrate import median, lengths_of, brier_at, fit_temperature, golden_section, out_of_fold_jll, stratified_folds, threshold_for_fpr
from nbtext.settings import DecisionOptions
from nbtext.errors import NbtextError
from nbtext.nb.estimators import logsumexp_rows, make_estimator
from nbtext.batch.train import fit_matrix
from nbtext.read import label_directory
from nbtext.report import evaluate
from nbtext.settings import ModelSettings, TokenizerSettings

from conftest import DATA, IIR_TEST, IIR_TRAIN

IIR = ("--alpha", "1", "--ngrams", "1", "--char-ngrams", "0,0", "--no-calibrate", "--positive", "yes")


@pytest.mark.parametrize("true_t", [0.01, 1.0, 40.0])
def test_fit_temperature_recovers_a_known_temperature(true_t):
    """Labels drawn from softmax(z), scores reported as z * T: the fit must find T."""
    rng = np.random.default_rng(0)
    z = rng.normal(scale=2.0, size=(20000, 3))
    p = np.exp(z - logsumexp_rows(z)[:, None])
    labels = (rng.random(len(z))[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    assert fit_temperature(z * true_t, labels) == pytest.approx(true_t, rel=0.05)


@pytest.mark.filterwarnings("ignore:invalid value")
@pytest.mark.parametrize("n", [1, 2, 3, 4, 11, 100, 3250])
def test_median_is_numpys_to_the_bit(n):
    """fit_temperature's median (np.median without its numpy.ma import): the same bits, on
    scores of every scale, with infinities, and NaN where there is one."""
    rng = np.random.default_rng(n)
    for i in range(40):
        a = rng.standard_normal(n) * 10.0 ** rng.integers(-4, 5)
        if i % 5 == 1:
            a[rng.integers(n)] = np.inf
        if i % 7 == 2:
            a[rng.integers(n)] = -np.inf
        if i % 11 == 3:
            a[rng.integers(n)] = np.nan
        got, want = median(a), float(np.median(a))
        assert got == want or (np.isnan(got) and np.isnan(want)), (a, got, want)


def test_golden_section_agrees_with_scipy_on_the_real_objective(sample_counts):
    """Our search (written so that train need not import scipy.optimize) finds the Brier
    minimum scipy's bounded Brent search finds, on the bundled sample's out-of-fold scores."""
    from scipy.optimize import minimize_scalar

    X, y, vocab = sample_counts
    classes = sorted(set(y))
    jll = out_of_fold_jll(X, y, classes, ModelSettings())
    t_idx = np.searchsorted(classes, y)
    f = lambda lt: brier_at(jll, t_idx, float(np.exp(lt)))  # noqa: E731
    ref = minimize_scalar(f, bounds=(-5.0, 10.0), method="bounded", options={"xatol": 1e-6}).x
    ours = golden_section(f, -5.0, 10.0, xtol=1e-6)
    assert ours == pytest.approx(ref, abs=1e-4)
    assert f(ours) <= f(ref) + 1e-12
    assert golden_section(lambda x: (x - 2.5) ** 2, -10, 10, xtol=1e-9) == pytest.approx(2.5, abs=1e-8)


def unseen_left_out(X, seen_in):
    """X with the columns that ``seen_in`` (rows) never has set to zero: tokens a model never saw."""
    return X.multiply(np.asarray(seen_in.sum(axis=0)) > 0).tocsr()


def test_candidates_scored_in_one_pass_equal_each_scored_alone(monkeypatch, sample_counts):
    """auto scores its candidates on the same folds in one pass (calibrate.out_of_fold_jlls),
    each fold's counts taken out once for the variants that count a document alike: the same
    numbers, bit for bit, as scoring each alone."""
    from nbtext.nb.calibrate import out_of_fold_jlls
    from nbtext.nb.counts import Counts
    from nbtext.nb.estimators import make_estimator

    X, y, vocab = sample_counts
    classes = sorted(set(y))
    counts = Counts(classes, X.shape[1])
    counts.add(X, list(y))
    candidates = [ModelSettings().chosen("multinomial"), ModelSettings().chosen("complement"),
                  ModelSettings(variant="complement", tf=True), ModelSettings(variant="complement", idf=True)]
    taken = []
    real = Counts.minus_at
    monkeypatch.setattr(Counts, "minus_at", lambda self, *a: taken.append(1) or real(self, *a))
    for whole in (True, False):
        pairs = [(s, make_estimator(s, counts) if whole else None) for s in candidates]
        taken.clear()
        together = out_of_fold_jlls(X, y, classes, pairs, k=4, seed=1, unseen="both")
        shared = len(taken)
        for (s, full), got in zip(pairs, together):
            alone = out_of_fold_jll(X, y, classes, s, k=4, seed=1, full=full, unseen="both")
            for a, b in zip(got, alone):
                np.testing.assert_array_equal(a, b)
        if whole:  # multinomial and plain complement share the fold's counts (idf's take them out
            assert shared == 4 * 3, shared  # again, with document frequencies); tf's are its own


def test_folds_scored_in_forked_workers_equal_the_folds_scored_in_turn(monkeypatch, sample_counts):
    """train scores calibration's folds on its cores (batch.train.fold_mapper: workers forked
    from it, each taking the next fold): the same numbers, bit for bit, as one fold after
    another in one process."""
    from nbtext.batch import pool, train
    from nbtext.nb.calibrate import out_of_fold_jlls

    monkeypatch.setattr(train, "fork_safe", lambda: True)  # (loky's threads, once run, say no)
    started = []
    real = pool.ForkedWorkers
    monkeypatch.setattr(pool, "ForkedWorkers", lambda fn, n, **kw: started.append(n) or real(fn, n, **kw))
    X, y, _ = sample_counts
    classes = sorted(set(y))
    pairs = [(ModelSettings().chosen("multinomial"), None), (ModelSettings().chosen("complement"), None)]
    serial = out_of_fold_jlls(X, y, classes, pairs, k=5, seed=1, unseen="both")
    for n_jobs in (2, 3):
        forked = out_of_fold_jlls(X, y, classes, pairs, k=5, seed=1, unseen="both",
                                  mapper=train.fold_mapper(n_jobs))
        for got, want in zip(forked, serial):
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)
    assert started == [2, 3]  # (the workers; who took which: the test below)


def test_fold_workers_take_folds_as_they_are_free(monkeypatch):
    """Each worker takes the next fold when it is free, results in order: here each worker's
    first fold waits (a barrier, 30 s at most, no sleep) until every worker has taken one."""
    import multiprocessing
    import os

    from nbtext.batch import train

    monkeypatch.setattr(train, "fork_safe", lambda: True)
    for n_jobs in (2, 3):
        barrier, met = multiprocessing.Barrier(n_jobs, timeout=30), []

        def fold(f):
            if not met:  # (each worker's own copy of the list)
                met.append(barrier.wait())
            return f, os.getpid()

        got = list(train.fold_mapper(n_jobs)(fold, range(5)))
        assert [f for f, _ in got] == list(range(5))
        assert len({pid for _, pid in got}) == n_jobs and os.getpid() not in {pid for _, pid in got}


def test_an_error_in_a_fold_worker_is_raised_in_the_parent(monkeypatch):
    from nbtext.batch import train
    from nbtext.errors import SettingError

    def fold(f):
        raise SettingError("folds", None, f"fold {f} failed")

    monkeypatch.setattr(train, "fork_safe", lambda: True)
    with pytest.raises(SettingError, match=r"^folds fold \d failed$"):
        list(train.fold_mapper(2)(fold, range(5)))


def test_folds_are_scored_in_turn_where_forking_is_unsafe(monkeypatch):
    """No worker is forked where fork_safe says no (a thread of the caller's), nor on one core,
    nor for a single fold: the folds are scored in this process, as before."""
    import os

    from nbtext.batch import pool, train

    def no_pool(*a, **k):
        raise AssertionError("a pool was started")

    monkeypatch.setattr(pool, "ForkedWorkers", no_pool)
    monkeypatch.setattr(train, "fork_safe", lambda: False)
    assert list(train.fold_mapper(2)(lambda f: os.getpid(), range(5))) == [os.getpid()] * 5
    monkeypatch.setattr(train, "fork_safe", lambda: True)
    assert list(train.fold_mapper(1)(lambda f: os.getpid(), range(5))) == [os.getpid()] * 5  # (one core: no pool)
    assert list(train.fold_mapper(2)(lambda f: os.getpid(), range(1))) == [os.getpid()]


@pytest.mark.slow
def test_out_of_fold_scores_equal_refitting_on_the_other_folds(sample_counts):
    """Taking a fold's counts out of the whole sample's is the model trained without it, and it
    scores the fold as it would score new mail: the tokens it never saw are left out."""
    X, y, vocab = sample_counts
    classes = sorted(set(y))
    for settings in (ModelSettings(), ModelSettings(variant="complement", alpha=0.3, tf=True, idf=True),
                     ModelSettings(variant="bernoulli")):
        kept, jll = out_of_fold_jll(X, y, classes, settings, k=4, seed=3, unseen="both")
        np.testing.assert_array_equal(kept, out_of_fold_jll(X, y, classes, settings, k=4, seed=3))
        np.testing.assert_array_equal(jll, out_of_fold_jll(X, y, classes, settings, k=4, seed=3, unseen="drop"))
        folds = stratified_folds(y, 4, 3)
        for f in range(4):
            test = folds == f
            est = make_estimator(settings).partial_fit(X[~test], y[~test], classes=classes)
            np.testing.assert_allclose(jll[test], est.predict_joint_log_proba(unseen_left_out(X[test], X[~test])),
                                       rtol=1e-9)
            np.testing.assert_allclose(kept[test], est.predict_joint_log_proba(X[test]), rtol=1e-9)
            assert not np.allclose(jll[test], kept[test])  # every fold has tokens of its own


def test_out_of_fold_scores_of_a_sample_come_from_the_whole_corpus_less_the_fold(sample_counts):
    """Calibrating on a sample of a larger corpus (as train does past its calibration sample):
    each sampled document is scored by the whole corpus's counts less its fold's sampled
    documents, the size of the model being calibrated; a sample stored as float32 counts
    gives the float64 sample's scores."""
    X, y, vocab = sample_counts
    classes = sorted(set(y))
    rows = np.random.default_rng(5).permutation(len(y))[:150]
    sample, ys = X[rows], y[rows]
    for settings in (ModelSettings(), ModelSettings(variant="complement", alpha=0.3, tf=True, idf=True)):
        whole = make_estimator(settings).fit(X, y)
        jll, dropped = out_of_fold_jll(sample.astype(np.float32), ys, classes, settings, k=3, seed=2, full=whole,
                                       unseen="both")
        folds = stratified_folds(ys, 3, 2)
        for f in range(3):
            rest = np.ones(len(y), dtype=bool)
            rest[rows[folds == f]] = False
            est = make_estimator(settings).partial_fit(X[rest], y[rest], classes=classes)
            np.testing.assert_allclose(jll[folds == f], est.predict_joint_log_proba(sample[folds == f]), rtol=1e-9)
            np.testing.assert_allclose(dropped[folds == f], est.predict_joint_log_proba(
                unseen_left_out(sample[folds == f], X[rest])), rtol=1e-9)
        # the whole corpus's model is untouched by taking folds out of its copies
        np.testing.assert_array_equal(whole.feature_count_, make_estimator(settings).fit(X, y).feature_count_)


def test_training_does_not_import_scipy_optimize(tmp_path):
    """Calibration's one-dimensional search is ours: scipy.optimize cost train 0.46 s of import
    and 28 MiB."""
    import subprocess
    import sys

    code = ("import sys; from nbtext.cli import main\n"
            "try:\n    main(['train', sys.argv[1], '-o', sys.argv[2], '-q', '-j', '1'])\n"
            "except SystemExit:\n    pass\n"
            "assert 'scipy.optimize' not in sys.modules, 'scipy.optimize imported'\n")
    subprocess.run([sys.executable, "-c", code, str(DATA / "corpus"), str(tmp_path / "m.nbm")], check=True)
    assert (tmp_path / "m.nbm").stat().st_size > 0


def test_calibration_lowers_held_out_log_loss_brier_and_ece(sample_counts):
    """On the bundled sample, 80/20 by position: the calibrated model's test log-loss, Brier
    score and calibration error are lower than the raw model's, and its verdicts are the same
    (T > 0 keeps the argmax)."""
    X, y, vocab = sample_counts
    test = np.arange(len(y)) % 5 == 0
    results = {}
    for calibrate in (False, True):
        model, keep = fit_matrix(X[~test], y[~test], vocab, TokenizerSettings(), ModelSettings(),
                                 decisions=DecisionOptions(calibrate=calibrate, layer=False))
        proba = model.proba(X[test][:, keep])
        d = model.decision
        # what a document of the median test length has its log-likelihoods divided by
        scale = d.temperature * np.median(lengths_of(X[test][:, keep])) ** d.length_power
        results[calibrate] = (scale, evaluate(model.classes, list(y[test]), model.verdicts(proba), proba, "spam"))
    (t_raw, raw), (t_cal, cal) = results[False], results[True]
    assert t_raw == 1.0 and t_cal > 1.0  # Naive Bayes is over-confident: the fit softens it
    assert cal["log_loss"] < raw["log_loss"]
    # and not by making every answer a coin toss (what fitting T by log-loss did): the Brier
    # score and the calibration error improve too
    assert cal["brier"] < raw["brier"] and cal["ece"] < raw["ece"]
    assert cal["accuracy"] == raw["accuracy"]


def test_threshold_and_unsure_band_on_the_worked_example(run, tmp_path):
    """IIR 13.1: P(yes | test document) = 0.000301 / (0.000301 + 0.000136) = 0.6898."""
    tsv = tmp_path / "iir.tsv"
    tsv.write_text("".join(f"{lab}\t{text}\n" for lab, text in IIR_TRAIN))
    model = tmp_path / "m.nbm"
    assert run("train", tsv, *IIR, "-o", model, "-q").exit_code == 0
    assert run("classify", "-m", model, input=IIR_TEST).stdout == "yes\t0.689759\n"
    assert run("classify", "-m", model, "--threshold", "0.8", input=IIR_TEST).stdout == "no\t0.310241\n"
    # stored at train time, and the same in predict
    assert run("train", tsv, *IIR, "--threshold", "0.8", "-o", model, "-q").exit_code == 0
    assert run("classify", "-m", model, input=IIR_TEST).stdout == "no\t0.310241\n"
    r = run("predict", "-m", model, "--lines", "-", input=IIR_TEST + "\n")
    assert r.stdout == "-:1\tno\t0.310241\n"
    # the unsure band: exit code 2 from classify, "unsure": true in JSONL
    assert run("classify", "-m", model, "--unsure", "0.6,0.9", "--exit-code", input=IIR_TEST).exit_code == 2
    assert run("classify", "-m", model, "--unsure", "0.1,0.6", "--exit-code", input=IIR_TEST).exit_code == 1
    r = run("predict", "-m", model, "--unsure", "0.6,0.9", "--lines", "-", "--format", "jsonl", input=IIR_TEST + "\n")
    assert json.loads(r.stdout)["unsure"] is True
    r = run("classify", "-m", model, "--unsure", "0.9,0.6", input=IIR_TEST)
    assert r.exit_code == 1 and "--unsure needs 0 <= LOW <= HIGH <= 1, got 0.9,0.6" in r.stderr


@pytest.mark.slow
def test_max_fpr_keeps_out_of_fold_false_positives_under_the_rate(run, tmp_path, sample_model):
    model = tmp_path / "m.nbm"
    r = run("train", DATA / "corpus", "--max-fpr", "0.01", "-o", model)
    assert r.exit_code == 0, r.stderr
    info = json.loads(run("info", "-m", model, "--format", "json").stdout)
    t = info["decision"]["threshold"]
    assert 0.5 < t <= 1.0
    # the threshold comes from scores with fold-unseen tokens left out; the temperature is still
    # the one fitted without --max-fpr (calibrate.out_of_fold_jll says why)
    default = json.loads(run("info", "-m", sample_model, "--format", "json").stdout)["decision"]  # (the defaults)
    assert info["decision"]["temperature"] == default["temperature"]
    # No bundled ham message scores at or above the stored threshold.
    r = run("predict", "-m", model, "--format", "jsonl", DATA / "corpus" / "ham")
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(rows) == 298 and all(row["label"] == "ham" for row in rows)
    r = run("train", DATA / "corpus", "--max-fpr", "0.01", "--threshold", "0.9", "-o", tmp_path / "x.nbm")
    assert r.exit_code == 1 and "--threshold or --max-fpr: give one, not both" in r.stderr


def test_max_fpr_refused_uncalibrated_says_why_and_what_to_do(run, tmp_path):
    """Untempered, two bundled ham score P(spam) = 1 out of fold, so no threshold keeps them
    out; the refusal names the cause, and the same rate with calibration on is met."""
    model = tmp_path / "m.nbm"
    r = run("train", DATA / "corpus", "--no-calibrate", "--max-fpr", "0", "-o", model)
    assert r.exit_code == 1 and not model.exists()
    assert r.stderr == ("nbtext: error: --max-fpr 0.0 cannot be met: 2 of the 298 negative-class documents "
                        "score P(positive) = 1 in internal cross-validation (probabilities uncalibrated, "
                        "as --calibrate is off: try it on)\n")
    assert run("train", DATA / "corpus", "--max-fpr", "0", "-o", model).exit_code == 0


def test_threshold_for_fpr_is_exact():
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.9, 0.95])
    neg = np.array([True, True, True, True, False, False])
    assert threshold_for_fpr(p, neg, 0.0) == np.nextafter(0.4, 1)   # no negative at or above
    assert threshold_for_fpr(p, neg, 0.25) == np.nextafter(0.3, 1)  # one of four allowed
    # a negative that is certainly positive out of fold: no threshold <= 1 keeps it out
    with pytest.raises(NbtextError, match="^max_fpr 0.0 cannot be met: 1 of the 4 negative-class"):
        threshold_for_fpr(np.array([0.1, 0.2, 0.3, 1.0]), np.ones(4, bool), 0.0)
    with pytest.raises(NbtextError, match="^max_fpr must be a number in"):
        threshold_for_fpr(p, neg, 1.5)


def test_decisions_need_two_classes(run, tmp_path):
    t = tmp_path / "three.tsv"
    t.write_text("a\tx y\nb\ty z\nc\tz w\n")
    r = run("train", t, "--threshold", "0.7", "-o", tmp_path / "m.nbm")
    assert r.exit_code == 1 and "--threshold, --unsure and --max-fpr need two classes" in r.stderr


def test_calibration_fits_on_a_bounded_sample_and_counts_stay_whole():
    """A corpus larger than the calibration sample: counts still cover every document, and
    the temperature comes from a sample of the given size (memory stays bounded)."""
    from nbtext.batch.train import Reservoir, train_model
    import scipy.sparse as sp

    docs = lambda: label_directory(str(DATA / "corpus"))  # noqa: E731
    whole, _ = train_model(docs(), TokenizerSettings(), ModelSettings(), decisions=DecisionOptions())
    small, _ = train_model(docs(), TokenizerSettings(), ModelSettings(), decisions=DecisionOptions(),
                           calibration_sample=120)
    np.testing.assert_array_equal(small.feature_count, whole.feature_count)
    np.testing.assert_array_equal(small.class_count, [298, 134])
    assert small.decision.temperature != whole.decision.temperature
    r = Reservoir(50, seed=1)
    for start in range(0, 1000, 37):
        n = min(37, 1000 - start)
        r.add(sp.csr_matrix(np.arange(start, start + n, dtype=float)[:, None]), ["x"] * n)
    X, y = r.sample(1)
    rows = X.toarray().ravel()
    assert len(rows) == 50 and list(rows) == sorted(rows) and len(set(rows)) == 50
    assert rows.min() < 200 and rows.max() > 800  # drawn from the whole stream, not its start
    # Counts are kept in 16 bits when a chunk's fit, else as float32: exact either way
    r = Reservoir(10, seed=0)
    r.add(sp.csr_matrix(np.array([[65535.0, 3.0], [1.0, 0.0]])), ["a", "b"])
    r.add(sp.csr_matrix(np.array([[70000.0, 5.0]])), ["a"])
    X, y = r.sample(2)
    assert X.toarray().tolist() == [[65535.0, 3.0], [1.0, 0.0], [70000.0, 5.0]] and list(y) == ["a", "b", "a"]


def test_certain_correct_answers_print_a_log_loss_of_zero_not_minus_zero():
    """-log(1) is -0.0 in floating point; eval printed "log-loss -0.0000" for a perfect model."""
    from nbtext.report import format_eval

    r = evaluate(["ham", "spam"], ["ham", "spam"], ["ham", "spam"], np.array([[1.0, 0.0], [0.0, 1.0]]), "spam")
    assert "log-loss      0.0000\n" in format_eval(r)
    assert json.dumps(r["log_loss"]) == "0.0"


@pytest.mark.slow
def test_merge_then_calibrate_predicts_as_training_on_everything(run, tmp_path, small_corpus):
    """merge keeps the first model's decision (its calibration was fitted to its own documents);
    calibrate on all the documents refits it as train does, so merge(A, B) + calibrate predicts
    what train(A + B) predicts."""
    import json
    import shutil

    halves = [tmp_path / "a", tmp_path / "b"]
    for label in ("ham", "spam"):
        for i, f in enumerate(sorted((small_corpus / label).iterdir())):
            dest = halves[i % 2] / label
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, dest / f.name)
    for h in halves:
        assert run("train", h, "-q", "-o", tmp_path / f"{h.name}.nbm").exit_code == 0
    assert run("train", *halves, "-q", "-o", tmp_path / "whole.nbm").exit_code == 0
    r = run("merge", "-o", tmp_path / "merged.nbm", tmp_path / "a.nbm", tmp_path / "b.nbm")
    assert r.exit_code == 0
    assert f"kept the decision of {tmp_path / 'a.nbm'}" in r.stderr and "nbtext calibrate -m" in r.stderr

    def decision(name):
        return json.loads(run("info", "-m", tmp_path / name, "--format", "json").stdout)["decision"]

    def predicted(name):  # as printed (the unrounded log scores agree to about 1e-13)
        return run("predict", "-m", tmp_path / name, DATA / "corpus").stdout

    assert decision("merged.nbm") == decision("a.nbm") != decision("whole.nbm")
    assert predicted("merged.nbm") != predicted("whole.nbm")
    r = run("calibrate", "-m", tmp_path / "merged.nbm", *halves)
    assert r.exit_code == 0 and "calibrated on 60 documents (temperature" in r.stderr
    got, want = decision("merged.nbm"), decision("whole.nbm")
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == (pytest.approx(want[k], rel=1e-9) if isinstance(want[k], float) else want[k]), k
    assert predicted("merged.nbm") == predicted("whole.nbm")
    # and the counts did not move
    assert run("export", "-m", tmp_path / "merged.nbm").stdout.split("\n")[2:] == \
        run("export", "-m", tmp_path / "whole.nbm").stdout.split("\n")[2:]


def test_calibrate_refuses_unknown_labels_and_leaves_the_model(run, tmp_path, sample_copy):
    before = sample_copy.read_bytes()
    t = tmp_path / "other.tsv"
    t.write_text("eggs\tsome words\nham\tmore words\n")
    r = run("calibrate", "-m", sample_copy, t)
    assert r.exit_code == 1 and "unknown label 'eggs'" in r.stderr and "Traceback" not in r.stderr
    assert sample_copy.read_bytes() == before
    r = run("calibrate", "-m", sample_copy, tmp_path / "missing")
    assert r.exit_code == 1 and "missing" in r.stderr
    assert sample_copy.read_bytes() == before


def test_calibrate_refuses_documents_without_a_token_of_the_model_and_leaves_it(run, tmp_path, sample_copy):
    """calibrate on documents none of which holds a token of the model (each empty, or all of
    their tokens foreign to it) replaced the model's calibration and layer with none, exit 0:
    every document scored by the priors alone. Refused, as train refuses documents of no token."""
    before = sample_copy.read_bytes()
    for name, text in (("empty.tsv", "spam\t!!!\nham\t...\n"), ("foreign.tsv", "spam\tqqqzx\nham\tzzxqv\n")):
        t = tmp_path / name
        t.write_text(text)
        r = run("calibrate", "-m", sample_copy, t)
        assert (r.exit_code, r.stderr) == (1, f"nbtext: error: {t}: none of the 2 documents read has a token of "
                                              "the model: nothing to calibrate on\n")
        assert sample_copy.read_bytes() == before
    t.write_text("spam\tqqqzx\nham\tzzxqv free money\n")  # (one token of the model: calibrated)
    assert run("calibrate", "-m", sample_copy, t, "-q").exit_code == 0


@pytest.mark.slow
def test_auto_keeps_the_variant_with_fewest_out_of_fold_errors(monkeypatch, sample_counts):
    """The default variant, auto, scores each candidate (multinomial, complement: they count a
    document alike) on the internal folds and keeps the one with the fewest errors, ties broken by
    the Brier score of its calibrated probabilities."""
    from nbtext.nb.calibrate import brier_of, calibrated_log, fit_calibration, out_of_fold_jll
    from nbtext.nb.decision import Decision
    from nbtext.nb.estimators import make_estimator
    from nbtext.settings import AUTO_CANDIDATES

    X, labels, vocab = sample_counts
    for corpus in ("corpus", "three"):
        y = labels
        if corpus == "three":  # three classes, where the two variants differ more
            y = np.where((y == "ham") & (np.arange(len(y)) % 2 == 0), "other", y)
        model, _ = fit_matrix(X, y, vocab, TokenizerSettings(), ModelSettings(), decisions=DecisionOptions())
        assert model.settings.auto and model.settings.variant in AUTO_CANDIDATES
        t = np.searchsorted(model.classes, y)
        scores = {}
        for v in AUTO_CANDIDATES:
            s = ModelSettings().chosen(v)
            jll = out_of_fold_jll(X, y, model.classes, s, 5, 0, full=make_estimator(s, model.counts))
            lp = calibrated_log(Decision(**fit_calibration(jll, lengths_of(X), t)), jll, lengths_of(X))
            scores[v] = (int((jll.argmax(axis=1) != t).sum()), brier_of(lp, t))
        assert model.settings.variant == min(AUTO_CANDIDATES, key=lambda v: scores[v]), scores
        if corpus == "corpus":
            # the sample's errors tie (56 each): the Brier scores decide, whichever comes first
            assert len({e for e, _ in scores.values()}) == 1, scores
            import nbtext.batch.train

            monkeypatch.setattr(nbtext.batch.train, "AUTO_CANDIDATES", AUTO_CANDIDATES[::-1])
            again, _ = fit_matrix(X, y, vocab, TokenizerSettings(), ModelSettings(), decisions=DecisionOptions())
            monkeypatch.undo()
            assert again.settings.variant == model.settings.variant


def test_auto_is_stored_and_merges_across_the_chosen_variants(tmp_path):
    from nbtext import store
    from nbtext.model import Model
    from nbtext.operations import merge

    a = Model.empty(TokenizerSettings(), ModelSettings(), ["ham", "spam"])
    b = Model.empty(TokenizerSettings(), ModelSettings(), ["ham", "spam"])
    a.add([["cheap", "pills"], ["hello", "bob"]], ["spam", "ham"])
    b.add([["cheap", "watches"], ["lunch", "bob"]], ["spam", "ham"])
    b.settings = b.settings.chosen("complement")
    assert a.settings.variant == "multinomial" and a.settings.auto
    for m in (a, b):
        store.save(m, str(tmp_path / "m.nbm"))
        assert store.load(str(tmp_path / "m.nbm")).settings == m.settings
    assert merge([("a", a), ("b", b)]).settings == a.settings  # the first's, until calibrate chooses
    explicit = Model.empty(TokenizerSettings(), ModelSettings(variant="complement"), ["ham", "spam"])
    explicit.add([["cheap"], ["bob"]], ["spam", "ham"])
    with pytest.raises(Exception, match=r"setting auto differs \(a: True, c: False\)"):
        merge([("a", a), ("c", explicit)])
    assert "auto" not in explicit.settings.to_dict()  # an explicit variant is stored as before


def test_calibrate_refuses_a_table_model(run, tmp_path):
    from conftest import ROOT

    model = tmp_path / "golf.nbm"
    assert run("train", ROOT / "tests" / "fixtures" / "play_golf.csv", "--label-column", "Play", "-q",
               "-o", model).exit_code == 0
    before = model.read_bytes()
    r = run("calibrate", "-m", model, ROOT / "tests" / "fixtures" / "play_golf.csv", "--label-column", "Play")
    assert r.exit_code == 1 and "a table model; its probabilities are not calibrated" in r.stderr
    assert model.read_bytes() == before


def test_two_class_log_sum_exp_is_the_general_formula_to_the_bit():
    """logsumexp_rows takes two columns the short way (calibration's fit calls it hundreds of
    times): the same bits as numpy's row reductions, infinities, NaN and signed zeros too."""
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.normal(size=(500, 2)) * s for s in (1e-3, 1.0, 1e2, 1e4)])
    a[::5, 0], a[::7, 1] = -np.inf, -np.inf
    a[:8] = [[-np.inf, -np.inf], [np.inf, 1.0], [np.nan, 0.0], [0.0, -0.0], [-0.0, -0.0], [-800.0, -0.0],
             [np.inf, np.inf], [1e308, 1e308]]
    with np.errstate(all="ignore"):
        m = np.max(a, axis=1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        want = (m + np.log(np.sum(np.exp(a - m), axis=1, keepdims=True)))[:, 0]
        got = logsumexp_rows(a)
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))


@pytest.mark.parametrize("k", [2, 3])
def test_the_true_class_entries_and_log_loss_are_the_indexed_ones_to_the_bit(k):
    """calibrate.picked takes two classes by np.where (the fit's log-loss calls it hundreds of
    times): the entries a[arange, t] gives, and so the log-loss of the general formula."""
    from nbtext.nb.calibrate import log_loss_at, picked

    rng = np.random.default_rng(k)
    a = rng.normal(size=(3000, k)) * rng.choice([1e-3, 1.0, 300.0], size=(3000, 1))
    t = rng.integers(0, k, 3000)
    np.testing.assert_array_equal(picked(a, t), a[np.arange(3000), t])
    for temperature in (1e-3, 0.37, 1.0, 45.0):
        z = a / temperature
        m = np.max(z, axis=1, keepdims=True)
        general = (m + np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)))[:, 0] - z[np.arange(3000), t]
        assert log_loss_at(a, t, temperature) == float(general.mean())


@pytest.mark.slow
def test_fold_workers_forked_without_what_they_never_read_make_the_same_model(monkeypatch):
    """Calibration's fold workers are forked without the vocabulary and, where the sample is not
    every document (its counts fitted apart), without the model's counts (a worker that read
    them would die: SIGSEGV, the pool's WorkerError). The same model file as one process makes,
    for a sample of the corpus and for the whole corpus."""
    from nbtext.batch import train
    from nbtext.store.codec import encode

    monkeypatch.setattr(train, "fork_safe", lambda: True)
    withheld = []
    real = train.withheld_from_forks
    monkeypatch.setattr(train, "withheld_from_forks", lambda buffers: withheld.append(len(buffers)) or real(buffers))
    docs = lambda: label_directory(str(DATA / "corpus"))  # noqa: E731
    for sample in (120, train.CALIBRATION_SAMPLE):
        one, _ = train.train_model(docs(), calibration_sample=sample)
        forked, _ = train.train_model(docs(), calibration_sample=sample, n_jobs=2)
        assert encode(forked) == encode(one)
    assert withheld == [5, 1]  # (the vocabulary and the counts' four arrays; the vocabulary alone)


def test_buffers_withheld_from_forks_are_not_in_the_child_and_are_again_after():
    """withheld_from_forks: a child forked within has none of the buffer's whole pages but its
    first (a read there ends the child with SIGSEGV, never a wrong value); the parent reads it all
    throughout, and a child forked after has it all again."""
    import subprocess
    import sys

    script = '''
import os, signal, sys
import numpy as np
from nbtext.batch.memory import withheld_from_forks
a = np.arange(1 << 20, dtype=np.int64)  # (8 MiB)
def child(index):
    pid = os.fork()
    if pid == 0:
        os._exit(0 if a[index] == index else 3)
    _, status = os.waitpid(pid, 0)
    return "segv" if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSEGV else os.WEXITSTATUS(status)
with withheld_from_forks([a]):
    print(child(0), child(len(a) // 2), child(len(a) - 1024), int(a[len(a) // 2]) == len(a) // 2)
print(child(len(a) // 2), child(len(a) - 1024))
try:  # (a buffer that is not one: what came before it is withheld, and given back on leaving)
    with withheld_from_forks([a, object()]):
        print(child(len(a) // 2), end=" ")
        raise KeyError("the block's own error")
except KeyError:
    print(child(len(a) // 2), child(len(a) - 1024))
'''
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60).stdout.split("\n")
    assert out[:3] == ["0 segv segv True", "0 0", "segv 0 0"]


@hsettings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.integers(1, 60), st.lists(st.integers(1, 50), min_size=1, max_size=40), st.booleans())
def test_the_reservoir_keeps_the_smallest_keys_whatever_it_lets_go_early(n_size, seed, chunks, drawn):
    """Once cut, the reservoir lets a document go as its key is drawn (it can never be in the
    sample), without taking or moving its rows: the same documents, in input order, as keeping
    every key and the ``size`` smallest at the end (cluster.sample_positions, the reference),
    with or without a move of the kept rows; and the stacked sample holds their rows."""
    from nbtext.batch.cluster import sample_positions
    from nbtext.batch.train import Reservoir
    from nbtext.features.rows import Rows

    r, start = Reservoir(n_size, seed), 0
    for n in chunks:
        X = Rows.of(np.arange(start, start + n, dtype=float)[:, None] + 1)  # (row i holds i + 1)
        labels = [f"d{i}" for i in range(start, start + n)]
        if drawn:  # (moved as train moves the rows onto the vocabulary's ids: here onto themselves)
            r.add(X, labels, move=lambda R: R.moved(np.arange(R.shape[1]), R.shape[1], distinct=True))
        else:
            r.add(X, labels)
        start += n
    X, y = r.sample(1)
    want = sample_positions(start, n_size, seed)
    assert list(y) == [f"d{i}" for i in want]
    assert X.toarray().ravel().tolist() == [float(i + 1) for i in want]
    if start > n_size + n_size // 4 + max(chunks):  # (cut before the last chunk: it lets documents go)
        assert r.cut is not None


def test_a_renumbered_reservoir_holds_its_rows_moved_as_one_part_and_samples_the_same():
    """A pruning renumbers the sample's columns (Reservoir.renumber): its parts, a chunk's each,
    of the widths the vocabulary had then, are made one and moved at once; the sample is every
    row with the dropped columns gone and the rest renumbered, in order, with its label, and the
    rows added after it follow on the new columns."""
    from nbtext.batch.train import Reservoir
    from nbtext.features.rows import Rows

    rng = np.random.default_rng(3)
    r, dense, width = Reservoir(60, seed=2), [], 0
    for n in (7, 9, 5, 12):
        width += 4
        dense.append(rng.integers(0, 3, size=(n, width)).astype(float))
        r.add(Rows.of(dense[-1]), [f"d{i}" for i in range(sum(len(a) for a in dense) - n, sum(len(a) for a in dense))])
    keep = np.array([1, 2, 5, 8, 11, 15])
    mapping = np.full(width, -1)
    mapping[keep] = np.arange(len(keep))
    r.renumber(mapping, len(keep))
    assert len(r.parts) == 1
    later = rng.integers(0, 3, size=(4, len(keep) + 2)).astype(float)
    r.add(Rows.of(later), [f"d{i}" for i in range(33, 37)])
    X, y = r.sample(len(keep) + 2)
    before = np.vstack([np.pad(a, ((0, 0), (0, width - a.shape[1]))) for a in dense])[:, keep]
    assert list(y) == [f"d{i}" for i in range(37)]
    assert np.array_equal(X.toarray(), np.vstack([np.pad(before, ((0, 0), (0, 2))), later]))


def test_stacked_parts_are_let_go_as_they_are_copied():
    """Rows.stack(consume=True): the same rows as numpy's concatenation (values of the type that
    holds every part's), each part let go once copied."""
    from nbtext.features.rows import Rows

    parts = [Rows.of(np.array([[1.0, 0.0, 2.0]])).astype(np.uint16), Rows.of(np.array([[0.0, 3.5, 0.0], [4.0, 0.0, 0.0]])).astype(np.float32),
             Rows.of(np.zeros((1, 3))).astype(np.uint16)]
    want = np.vstack([p.toarray() for p in parts])
    X = Rows.stack(parts, 3, consume=True)
    assert X.data.dtype == np.float32 and np.array_equal(X.toarray(), want) and X.shape == (4, 3)
    assert parts == [None, None, None]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["c", "python"])
def test_workers_send_only_the_rows_the_sample_may_keep_and_make_the_same_model(kernel, monkeypatch, tmp_path):
    """Calibration's sample keys are drawn as each chunk of line documents is sent to be counted
    (Reservoir.draw_ahead), and the workers send back only the rows under the cut: a small sample
    (its cut falls in the first chunk) then takes a few rows of each chunk, not every one. Files
    not read yet (FileRef: their count unknown ahead) come in the middle: from them on, keys are
    drawn as chunks come back, every row sent. Forked workers, one process, and every row sent
    with every key drawn as it comes (as before draw_ahead) make the same model file."""
    from itertools import chain

    from conftest import implementation
    from nbtext.batch import chunks, train
    from nbtext.read import Document
    from nbtext.store.codec import encode

    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(400)]

    def lines(n, start):
        return [Document(f"lines:{start + i}", " ".join(rng.choice(words, rng.integers(5, 30))).encode(),
                         f"c{rng.integers(3)}") for i in range(n)]

    before, after = lines(8000, 0), lines(1200, 8000)
    for label in ("c0", "c1"):
        (tmp_path / label).mkdir()
        for i in range(40):
            (tmp_path / label / f"{i}.txt").write_text(" ".join(rng.choice(words, 20)))
    docs = lambda: chain(before, label_directory(str(tmp_path), deferred=True), after)  # noqa: E731
    monkeypatch.setattr(chunks, "fork_safe", lambda: True)
    sent = []  # (rows sent, documents, drawn ahead) of each chunk the parent reduces
    add = train.Reduction.add
    monkeypatch.setattr(train.Reduction, "add", lambda self, part: sent.append(
        (part.rows.shape[0], len(part.labels), part.drawn is not None)) or add(self, part))
    with implementation(kernel):
        forked, _ = train.train_model(docs(), calibration_sample=50, n_jobs=2)
        ahead = list(sent)
        one, _ = train.train_model(docs(), calibration_sample=50)
        monkeypatch.setattr(train.Reservoir, "draw_ahead", lambda self, n: None)
        sent.clear()
        every, _ = train.train_model(docs(), calibration_sample=50, n_jobs=2)
    assert encode(forked) == encode(one) == encode(every)
    assert all(rows == n for rows, n, _ in sent)
    drawn = [d for *_, d in ahead]
    assert drawn == [True] * 20 + [False] * (len(ahead) - 20)  # (the 20th chunk ends at document 8000)
    # (the first chunks are sent before the cut falls, every row; the last of the lines' a few each)
    assert all(rows < n // 10 for rows, n, _ in ahead[15:20])
    assert all(rows == n for rows, n, d in ahead if not d)
