import contextlib
import os
import pathlib
import shutil
import subprocess
import tempfile

import click.testing
import pytest

from nbtext.cli import cli
from nbtext.features.implementation import use

# The suite is an entry point of its own: the library it runs in-process takes the
# implementation NBTEXT_KERNEL names, as `nbtext` does (CI runs the suite with c, then python).
use(os.environ.get("NBTEXT_KERNEL", ""))


def CliRunner() -> click.testing.CliRunner:
    """click's test runner with the command's standard error apart from its output, as click 8.2
    and later always keep it (click 8.1, the last for Python 3.9, mixes them unless told)."""
    try:
        return click.testing.CliRunner(mix_stderr=False)
    except TypeError:  # (click 8.2 and later: no mix_stderr)
        return click.testing.CliRunner()


@contextlib.contextmanager
def implementation(choice):
    """The library on ``choice`` ("c", "python") for the block, then on the suite's again."""
    previous = use(choice)
    try:
        yield
    finally:
        use(previous)

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
DATA = ROOT / "data"

# The golden example of Manning, Raghavan & Schuetze, IR book, chapter 13 (table 13.1).
IIR_TRAIN = [
    ("yes", "Chinese Beijing Chinese"),
    ("yes", "Chinese Chinese Shanghai"),
    ("yes", "Chinese Macao"),
    ("no", "Tokyo Japan Chinese"),
]
IIR_TEST = "Chinese Chinese Chinese Tokyo Japan"


def pytest_xdist_auto_num_workers(config):
    """Workers for `-n auto` (make test, make check): one for each core this process may run on,
    at most 4. Each worker builds the session fixtures again, and many tests start processes of
    their own (train's workers, a daemon, a Dask cluster), which take cores and memory too."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(4, cores)


def debian_program(program, package):
    """The path of program, or None: when it is missing and we are root, Debian's package is
    installed with apt-get first, under a file lock (two test workers, or a worker and a script
    another one runs, would otherwise run apt-get at once, and the second fail on apt's lock)."""
    found = shutil.which(program)
    if found is not None or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    import fcntl

    with open(os.path.join(tempfile.gettempdir(), "nbtext-tests-apt.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = shutil.which(program)  # (another worker may have installed it meanwhile)
        if found is None and package not in _apt_tried:
            _apt_tried.add(package)
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=600)
            subprocess.run(["apt-get", "install", "-y", "-q", "-o", "DPkg::Lock::Timeout=600", package], env=env,
                           capture_output=True, timeout=900)
            found = shutil.which(program)
    return found


_apt_tried = set()  # (packages this process tried to install: a failed install is not tried again)


def need_shared(*parts):
    path = SHARED.joinpath(*parts)
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing, and CI must run the corpus tests")
        pytest.skip(f"{path} not present")
    return path


def once_a_run(tmp_path_factory, name, make):
    """The directory name that make(directory) fills, made once a test run. pytest-xdist's
    workers each hold a session of their own: the first to ask makes it in the directory the
    run's workers share, under a file lock; the others wait for it and read what it made."""
    import fcntl

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    where, made = root / name, root / f"{name}.made"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not made.exists():
            shutil.rmtree(where, ignore_errors=True)  # (what a worker that failed left half made)
            where.mkdir()
            make(where)
            made.touch()
    return where


def predicts_as_recorded(run, model, lines, recorded) -> int:
    """`predict` of the TSV ``lines`` with the (older) model file ``model`` prints what the
    nbtext that wrote it printed (``recorded``, its JSONL): the same labels and rounded scores, the
    log scores to 1e-9; classify gives the same labels. Returns the number of rows."""
    import json

    from nbtext.fastscore import FastScorer

    r = run("predict", "-m", model, "--input-format", "tsv", "--format", "jsonl", lines)
    assert r.exit_code == 0, r.stderr
    got = [json.loads(line) for line in r.stdout.splitlines()]
    want = [json.loads(line) for line in recorded.read_text().splitlines()]
    assert len(got) == len(want)
    fast = FastScorer(str(model))
    texts = [line.split("\t", 1)[1] for line in lines.read_text().splitlines()]
    for g, w, text in zip(got, want, texts):
        assert g["label"] == w["label"] and g["scores"] == w["scores"]
        for c, value in w["log_scores"].items():
            assert g["log_scores"][c] == pytest.approx(value, rel=1e-9, abs=1e-12)
        assert fast.score(text)[0] == w["label"]
    return len(got)


# The day this worker started: new counts mark their tokens last seen on it, so two models
# trained a moment apart are the same bytes even when midnight (UTC) falls between them.
TODAY = __import__("nbtext.nb.counts", fromlist=["today"]).today()


@pytest.fixture(autouse=True)
def _one_day(monkeypatch):
    from nbtext.nb import counts

    monkeypatch.setattr(counts, "today", lambda: TODAY)


@pytest.fixture(scope="session")
def sample_model(tmp_path_factory):
    """A model trained on the bundled sample through the real CLI with default options, once
    per test run; tests that change a model take a copy (sample_copy)."""
    def make(where):
        r = CliRunner().invoke(cli, ["train", str(DATA / "corpus"), "-o", str(where / "sample.nbm")])
        assert r.exit_code == 0, r.output
        assert "trained on 432 documents (298 ham, 134 spam)" in r.stderr
        (where / "sample.nbm").chmod(0o444)  # read-only: a test that writes to it must take a copy

    return once_a_run(tmp_path_factory, "sample", make) / "sample.nbm"


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory):
    """The first 40 ham and 20 spam of the bundled sample (sorted by name), as a labelled
    directory: for tests that check what a measuring script prints, not what it measures."""
    root = tmp_path_factory.mktemp("small")
    for label, n in (("ham", 40), ("spam", 20)):
        (root / label).mkdir()
        for f in sorted((DATA / "corpus" / label).iterdir())[:n]:
            (root / label / f.name).write_bytes(f.read_bytes())
    return root


@pytest.fixture(scope="session")
def spamassassin_split(tmp_path_factory):
    """spamassassin-2002's 80/20 split as label directories of symlinks, made once per test run
    (the tests only read them): (train, test)."""
    root = need_shared("spamassassin-2002")
    test = set(need_shared("splits", "spamassassin-2002.test").read_text().split())

    def make(where):
        for label_dir in sorted(root.iterdir()):
            if not label_dir.is_dir():
                continue
            for f in sorted(label_dir.iterdir()):
                rel = f"{label_dir.name}/{f.name}"
                dest = where / ("test" if rel in test else "train") / label_dir.name
                dest.mkdir(parents=True, exist_ok=True)
                (dest / f.name).symlink_to(f)

    where = once_a_run(tmp_path_factory, "split", make)
    return where / "train", where / "test"


@pytest.fixture(scope="session")
def spamassassin_model(tmp_path_factory, spamassassin_split):
    """A model of the split's training messages through the real CLI with default options, once
    per test run (read-only, as sample_model)."""
    def make(where):
        r = CliRunner().invoke(cli, ["train", str(spamassassin_split[0]), "-o", str(where / "sa.nbm"), "-q"])
        assert r.exit_code == 0, r.output
        (where / "sa.nbm").chmod(0o444)

    return once_a_run(tmp_path_factory, "spamassassin", make) / "sa.nbm"


@pytest.fixture(scope="session")
def _sample_counted():
    from nbtext.batch.train import count_corpus
    from nbtext.read import label_directory
    from nbtext.settings import TokenizerSettings

    return count_corpus(label_directory(str(DATA / "corpus")), TokenizerSettings())


@pytest.fixture
def sample_counts(_sample_counted):
    """The bundled sample's document-by-term matrix, labels and vocabulary (count_corpus with
    the default tokenizer), counted once a run; each test gets its own copy to change."""
    from nbtext.features.vocabulary import Vocabulary

    X, y, vocab = _sample_counted
    return X.copy(), y.copy(), Vocabulary.from_encoded(vocab.encoded(), vocab.keys())


@pytest.fixture
def sample_copy(sample_model, tmp_path):
    """A writable copy of sample_model, for a test that learns into it."""
    path = tmp_path / "m.nbm"
    path.write_bytes(sample_model.read_bytes())
    return path


@pytest.fixture
def run():
    """Drive the CLI as a user: run(args, input=...) -> result with exit_code/stdout/stderr."""
    runner = CliRunner()

    def _run(*args, input=None, env=None):
        return runner.invoke(cli, [str(a) for a in args], input=input, env=env, catch_exceptions=False,
                             prog_name="nbtext")

    return _run


@pytest.fixture
def iir_tsv(tmp_path):
    p = tmp_path / "iir.tsv"
    p.write_text("".join(f"{lab}\t{text}\n" for lab, text in IIR_TRAIN))
    return p
