"""The measuring scripts run (what they measure is for `make bench`, never for a test)."""
import importlib.util
import json
import shutil
import subprocess
import sys

import pytest

from conftest import DATA, ROOT

pytestmark = pytest.mark.slow  # (make check leaves these out: make test runs them)


def test_bench_script_prints_its_tables(small_corpus):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), "--corpus", str(small_corpus),
                        "--scales", "1,2", "--repeat", "1", "--runs", "1", "--table-rows", "3000",
                        "--no-python-path"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "# nbtext benchmark"
    assert f"on {small_corpus.name}: 60 messages" in r.stdout
    rows = [ln.split(" | ")[0].lstrip("| ") for ln in lines if ln.startswith("| ") and "---" not in ln]
    assert rows.count("nbtext") == 2 and rows.count("nbtext --no-calibrate") == 2  # 1x and growth tables
    assert not [row for row in rows if "Python path" in row]  # --no-python-path
    assert "## Growth with the corpus" in r.stdout and "2x / 1x time" in r.stdout
    assert "## Tables: 3,000 rows" in r.stdout and rows.count("nbtext (Gaussian NB)") == 1
    assert "(under 1e-9)" in r.stdout
    if importlib.util.find_spec("distributed"):  # the Dask section: 1 and 2 workers, models as local
        dask = [ln for ln in lines if ln.startswith(("| local, -j", "| dask, "))]
        assert len(dask) == 4 and all(ln.endswith("| yes |") for ln in dask), dask


def test_phases_script_times_each_phase_of_a_real_run(small_corpus, sample_model):
    def table(*args):
        r = subprocess.run([sys.executable, str(ROOT / "scripts" / "phases.py"), "--runs", "1", *map(str, args)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        rows = [ln.strip("| ").split(" | ") for ln in r.stdout.splitlines() if ln.startswith("| ") and "---" not in ln]
        return {row[0]: [float(v) for v in row[1:]] for row in rows[1:]}

    train = table("train", small_corpus, "--", "-j", "1")  # (options after --: for the command)
    assert list(train) == ["start-up", "counting", "the model", "calibration", "saving", "whole run"]
    # (the model's phase on this small corpus takes about 0.5 ms: printed to the millisecond, it
    # can read 0.000; every other phase takes milliseconds)
    assert all(v[0] > 0 for k, v in train.items() if k != "the model") and train["the model"][0] >= 0
    assert train["counting"][2] == 0  # (-j 1: no workers)
    assert sum(v[0] for k, v in train.items() if k != "whole run") <= train["whole run"][0] + 0.005  # (rounding)
    predict = table("predict", sample_model, small_corpus)
    assert list(predict) == ["start-up", "loading the model", "scoring", "whole run"]
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "phases.py"), "train", str(small_corpus / "nope"),
                        "--runs", "1"], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "no such file or directory" in r.stderr


def test_mail_ablation_script_turns_each_rule_off(small_corpus):
    from nbtext.settings import MAIL_RULES as RULES

    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "mail_ablation.py"), "--corpus",
                        str(small_corpus), "--folds", "2"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [ln.split(" | ") for ln in r.stdout.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    assert [row[0].lstrip("| ") for row in rows] == ["(all rules on)"] + [f"no {k}" for k in RULES] + ["no skip"]
    assert rows[0][-1] == "+0.0000 |"
    # the switches reach the worker processes: turning the header rules off changes the figures
    assert len({row[2] + row[5] for row in rows}) > 1


def test_calibration_study_compares_the_maps_on_held_out_folds(tmp_path):
    (tmp_path / "sample").symlink_to(DATA / "corpus")
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "calibration_study.py"), "--shared", str(tmp_path),
                        "--corpora", "sample", "--folds", "3", "--cache", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [ln.split(" | ") for ln in r.stdout.splitlines() if ln.startswith("| sample")]
    assert [row[1] for row in rows][0] == "temperature, Brier (today)" and len(rows) == 8
    assert rows[-1][1] == "nbtext: T * length^b, asinh, floor (fit_calibration)"
    # the map keeps every verdict: accuracy is the same whatever the map
    assert len({row[3] for row in rows}) == 1


def test_floor_script_prints_its_tables(small_corpus):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "floor.py"), "--corpus", str(small_corpus),
                        "--repeat", "1"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"# Floors: {small_corpus.name}, 60 documents")
    steps = [ln.split(" | ")[0].lstrip("| ") for ln in lines if ln.startswith("| ") and "---" not in ln]
    assert steps[1:5] == ["parse (stdlib email, compat32)", "tokenize (parsing included)",
                          "count, Python path (a worker's whole job)",
                          "mail rules, Python's part (Tokenizer.parts)"]
    rss = {ln.split(" | ")[0].lstrip("| "): int(ln.split(" | ")[1].rstrip(" |")) for ln in lines
           if ln.startswith("| ") and ln.split(" | ")[1].rstrip(" |").isdigit()}
    assert rss["python"] < rss["+ numpy"] < rss["+ joblib (worker processes)"]


def test_accuracy_script_reports_the_split_and_the_same_folds_for_both_systems(small_corpus, tmp_path):
    """The script's rows and arithmetic, on a stand-in for the shared data (the small sample as
    'spamassassin-2002', a fifth of it listed as the split's test set): what it measures on the
    real corpus is `make accuracy`'s, and tests/test_corpus.py checks nbtext there."""
    shared = tmp_path / "shared"
    (shared / "splits").mkdir(parents=True)
    (shared / "spamassassin-2002").symlink_to(small_corpus)
    docs = {label: sorted(p.name for p in (small_corpus / label).iterdir()) for label in ("ham", "spam")}
    test = [f"{label}/{name}" for label in docs for name in docs[label][::5]]
    (shared / "splits" / "spamassassin-2002.test").write_text("\n".join(test) + "\n")
    n_test, n, n_ham = len(test), sum(map(len, docs.values())), len(docs["ham"])
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "spamassassin_split.py"), "--shared",
                        str(shared), "--folds", "3"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    split, cv = r.stdout.split("3-fold cross-validation")
    row = {ln.split(" | ")[0].lstrip("| ").strip(): ln.rstrip(" |").split(" | ")[1:] for ln in split.splitlines()
           if ln.startswith("| ") and "---" not in ln}
    for system in ("nbtext", "bogofilter") if shutil.which("bogofilter") else ("nbtext",):
        accuracy, fp, fn, best, best_accuracy, auc, extremes = row[system][:7]
        assert accuracy == f"{(n_test - int(fp) - int(fn)) / n_test:.2%}"
        assert 0.5 < float(auc) <= 1 and len(auc.split(".")[1]) == 6  # AUC of printed scores, 6 decimals
        assert sum(int(k) for k in extremes.split(" / ")) <= n_test  # printed 1.000000 / 0.000000
        assert best_accuracy == f"{(n_test - int(best)) / n_test:.2%}"
        if int(fp) == 0:  # then the system's own threshold is one the best case looked at
            assert int(best) <= int(fn)
    # the k-fold row is nbtext cv's own confusion matrix, pooled
    direct = json.loads(subprocess.run([sys.executable, "-m", "nbtext", "cv", str(small_corpus), "--folds", "3",
                                        "--format", "json", "-q"], capture_output=True, text=True,
                                       check=True).stdout)["confusion_matrix"]["matrix"]
    cv_rows = {ln.split(" | ")[0].lstrip("| ").strip(): ln.rstrip(" |").split(" | ")[1:] for ln in cv.splitlines()
               if ln.startswith("| ") and "---" not in ln}
    assert cv_rows["nbtext"][:4] == [f"{(direct[0][0] + direct[1][1]) / n:.2%}", f"{direct[0][1] / n_ham:.2%}",
                                     str(direct[0][1]), str(direct[1][0])]
    for system in ("nbtext", "bogofilter") if shutil.which("bogofilter") else ("nbtext",):
        accuracy, fpr, fp, fn, best, best_accuracy, auc, extremes = cv_rows[system]
        assert 0.5 < float(auc) <= 1 and sum(int(k) for k in extremes.split(" / ")) <= n
        assert fpr == f"{int(fp) / n_ham:.2%}" and accuracy == f"{1 - (int(fp) + int(fn)) / n:.2%}"
        assert best_accuracy == f"{1 - int(best) / n:.2%}"
        if int(fp) <= 0.002 * n_ham:  # then the 0.5 threshold is one of those the best case looked at
            assert int(best) <= int(fp) + int(fn)


def test_fewest_errors_at_a_false_positive_limit():
    import importlib.util

    spec = importlib.util.spec_from_file_location("split", ROOT / "scripts" / "spamassassin_split.py")
    split = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(split)
    ham, spam = [0.1, 0.2, 0.8], [0.3, 0.5, 0.9]
    assert split.fewest_errors(ham, spam, 0) == 2  # above 0.8: the spam at 0.3 and 0.5 are missed
    assert split.fewest_errors(ham, spam, 1) == 1  # at 0.3: only the ham at 0.8 is called spam
    assert split.fewest_errors([0.1], [0.9], 0) == 0
    assert split.fewest_errors([0.9], [0.9], 0) == 1  # a tie: the spam cannot be caught without the ham


def test_roc_auc_of_printed_scores_counts_ties_one_half():
    """The accuracy script's AUC on scores as printed: of 9 (spam, ham) pairs, the spam above in
    5 and tied in 3 (two at 1.000000 with the ham at 1.000000, one at 0.5): (5 + 3/2) / 9; it is
    nbtext eval's own rank-sum AUC; printed ties at exactly 1 and 0 are counted."""
    import importlib.util

    import numpy as np

    from nbtext.report import roc_auc

    spec = importlib.util.spec_from_file_location("split", ROOT / "scripts" / "spamassassin_split.py")
    split = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(split)
    ham, spam = [0.1, 0.5, 1.0], [0.5, 1.0, 1.0]
    assert split.roc_auc(ham, spam) == pytest.approx(6.5 / 9, abs=1e-15)
    assert split.roc_auc(ham, spam) == pytest.approx(
        roc_auc(np.array([False] * 3 + [True] * 3), np.array(ham + spam)), abs=1e-15)
    assert split.roc_auc([0.0, 0.2], [0.3, 1.0]) == 1.0 and split.roc_auc([1.0], [1.0]) == 0.5
    assert split.ranking([0.0, 0.0, 0.4], [1.0, 0.9]) == {"auc": 1.0, "at_one": 1, "at_zero": 2}
    assert split.tally([("ham", "ham", "0.999999"), ("spam", "spam", "1.000000")])[0] == {
        "ham": [0.000001], "spam": [1.0]}  # P(spam) of a ham-labelled row: one minus it, as printed


def test_feature_selection_script_compares_the_criteria_at_equal_sizes():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "feature_selection.py"), "--corpus",
                        str(DATA / "corpus"), "--sizes", "300,3000", "--folds", "2"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [ln.split(" | ") for ln in r.stdout.splitlines() if ln.startswith("| corpus |") and "tokens kept" not in ln]
    assert [(row[1], row[2]) for row in rows] == [
        (rows[0][1], "(none)"), ("300", "frequency"), ("300", "chi2"), ("300", "mi"),
        ("3,000", "frequency"), ("3,000", "chi2"), ("3,000", "mi")]
    assert rows[0][1].startswith("all ")
    assert len({row[3] for row in rows}) > 1  # the kept tokens change the figures


def test_check_costs_script_measures_classify_and_load_against_a_revision(sample_model):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_costs.py"), "--base", "HEAD", "--runs", "1",
                        str(sample_model), str(DATA / "example-ham.eml")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["classify", "store.load"]
    assert all("HEAD " in line and "working tree " in line and "; ratio " in line for line in lines), r.stdout


def test_mail_detection_probe_counts_flips_and_messages_read_as_text(small_corpus, tmp_path):
    """On a stand-in for the shared data (the small sample as 'spamassassin-2002', a fifth of it
    held out): a row per set of messages, and one per inserted line, none read as text."""
    shared = tmp_path / "shared"
    (shared / "splits").mkdir(parents=True)
    (shared / "spamassassin-2002").symlink_to(small_corpus)
    test = [f"{label}/{p.name}" for label in ("ham", "spam") for p in sorted((small_corpus / label).iterdir())[::5]]
    (shared / "splits" / "spamassassin-2002.test").write_text("\n".join(test) + "\n")
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "mail_detection_probe.py"), "--shared", str(shared),
                        "--line", "X-Foo:", "--line", "not a field"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = {ln[:40].strip(): ln[40:].split() for ln in r.stdout.splitlines()[2:]}
    assert rows["training ham"] == ["32", "0", "0"] and rows["held-out spam"][:3] == ["4", "0", "0"]
    assert rows["held-out spam + 'X-Foo:'"] == ["4", "0", "0", "0"]
    assert rows["held-out spam + 'not a field'"][:3] == ["4", "0", "0"]


def test_large_inputs_script_prints_both_measures(small_corpus, tmp_path):
    (tmp_path / "debian-sections").mkdir()
    for label in ("ham", "spam"):  # (plain-text files named as debian-sections' are)
        (tmp_path / "debian-sections" / label).mkdir()
        for p in sorted((small_corpus / label).iterdir())[:10]:
            (tmp_path / "debian-sections" / label / (p.name + ".txt")).write_bytes(p.read_bytes())
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "large_inputs.py"), "--shared", str(tmp_path),
                        "--size", "100000"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("1. tokenizing a Subject of RFC 2047 words") and lines[3].startswith("2. one plain")
    assert [ln.split()[0] for ln in lines[1:3] + lines[4:]] == ["c", "python", "classify", "predict"]


def test_gen_corpus_is_deterministic_and_cut_at_a_document(tmp_path):
    def generate(*args):
        out = tmp_path / f"c{len(list(tmp_path.iterdir()))}.ft"
        r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_corpus.py"), "--size", "300k",
                            "--types", "200000", "--words", "10", *args, "-o", str(out)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return out.read_bytes()

    a, b, other = generate("--classes", "7"), generate("--classes", "7"), generate("--classes", "7", "--seed", "1")
    assert a == b and a != other
    assert 300 * 1024 <= len(a) < 300 * 1024 + 64 * 1024 and a.endswith(b"\n")
    lines = a.decode().splitlines()
    labels = {line.split(" ", 1)[0] for line in lines}
    assert labels == {f"__label__c{i}" for i in range(7)}
    assert min(len(line.split(" ")) for line in lines) == 4  # (a label and at least 3 words, at 10 a line on average)
    words = {w for line in lines for w in line.split(" ")[1:]}
    assert len(words) > 10_000  # (the vocabulary grows with the text: thousands of types in 300 kB)


def test_bench_scale_prints_its_table(tmp_path):
    out = tmp_path / "scale.md"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_scale.py"), "--corpora", "100K-3,100K-4",
                        "--max", "100K", "--no-predict", "--out", str(out), "--cache", str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == r.stdout
    rows = [ln.split(" | ") for ln in r.stdout.splitlines() if ln.startswith("| 100K-")]
    assert [row[0] for row in rows if row[2] == "nbtext"] == ["| 100K-3", "| 100K-4"]
    assert [row[0] for row in rows if row[2] == "nbtext, words"] == ["| 100K-3", "| 100K-4"]
    assert ("fastText" in [row[2] for row in rows]) == bool(shutil.which("fasttext"))
    assert "Load average at the start: " in r.stdout and "nbtext's growth 100K-3 -> 100K-4" not in r.stdout


def test_bench_scale_takes_each_predict_figure_as_the_median_of_its_rounds(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_scale", ROOT / "scripts" / "bench_scale.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    runs = [bench.Run(9.0, 18.0, 400, 0, ""), bench.Run(12.0, 17.0, 420, 0, ""), bench.Run(8.0, 19.0, 410, 0, "")]
    m = bench.Run.median(runs)
    assert (m.wall, m.cpu, m.rss, m.status) == (9.0, 18.0, 410, 0)
    failed = bench.Run(1.0, 1.0, 10, 1, "nbtext: error: no model")
    assert bench.Run.median(runs + [failed]) is failed
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_scale.py"), "--corpora", "100K-3", "--max", "100K",
                        "--predict-only", "--cache", str(tmp_path), "--out", str(tmp_path / "o.md")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "--predict-only: no " in r.stderr and "100K-3.nbm" in r.stderr


def test_predict_stages_script_runs_two_kernels_in_turn_on_the_same_chunks(sample_model, tmp_path):
    from nbtext.features.implementation import compiled

    kernel = compiled()
    if kernel is None:
        pytest.skip("the compiled kernel is not built, or NBTEXT_KERNEL=python")
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"".join(f.read_bytes().replace(b"\n", b" ") + b"\n"
                               for f in sorted((DATA / "corpus" / "spam").iterdir())[:30]))
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "predict_stages_ab.py"), str(sample_model), str(lines),
                        "--other", kernel.__file__, "--lines", "20", "--runs", "2"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert [line.split(":")[0] for line in r.stdout.splitlines()] == ["count", "score"]
    assert all("1 chunks, 2 runs; CPU s A min " in line and " B/A " in line for line in r.stdout.splitlines()), r.stdout


def test_perf_parent_puts_each_sample_of_the_parents_threads_in_its_first_group(tmp_path):
    """scripts/perf_parent.py on `perf script -F comm,pid,tid,ip,sym,dso` text: the parent is the
    lowest pid; its main thread's samples go to the first group on their stack, its reader's and
    feeder's to theirs; a forked worker's (another pid) are left out."""
    def sample(ids, *frames):
        return f"python {ids} \n" + "".join(f"\t{i:x} {f}\n" for i, f in enumerate(frames)) + "\n"

    text = (sample("100/100", "ki_probe_from (_kernel.so)", "ki_fill (_kernel.so)", "KeyIndex_extend (_kernel.so)")
            + sample("100/100", "ki_probe_from (_kernel.so)", "KeyIndex_extend (_kernel.so)") * 2
            + sample("100/100", "mapiter_trivial_get (_multiarray_umath.so)")
            + sample("100/100", "_PyEval_EvalFrameDefault (libpython3.11.so)")
            + sample("100/104", "__memcpy (libc.so.6)", "_PyBytes_Resize (libpython3.11.so)", "_Py_read (libpython3.11.so)")
            + sample("100/105", "_Pickler_Write (_pickle.so)")
            + sample("101/101", "kernel_settle_sums (_kernel.so)") * 5)
    (tmp_path / "perf.txt").write_text(text)
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "perf_parent.py"), str(tmp_path / "perf.txt")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "7 samples of the parent's threads (3)", "| group | samples | share |", "| --- | ---: | ---: |",
        "| key index: a chunk's lookups and new tokens (KeyIndex_extend) | 2 | 28.6% |",
        "| key index: rebuilt as it doubles (ki_fill) | 1 | 14.3% |",
        "| numpy (indexing, temporaries, conversions) | 1 | 14.3% |",
        "| other (the interpreter, the allocator, the system) | 1 | 14.3% |",
        "| receiving results (the pool's reader thread) | 1 | 14.3% |",
        "| sending tasks (the pool's feeder thread) | 1 | 14.3% |"]
