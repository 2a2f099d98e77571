"""Refusals come before the work: what train and calibrate would refuse once they knew the
classes is refused before any document is read, when the classes are known up front (label
directories and --label paths; a model being recalibrated); so are an output that cannot be
written and an input that cannot be opened.

Each test gives, among the inputs, a FIFO that nobody writes: opening it to read would wait
forever, so a command that ends, with the refusal, refused before reading. (The timeout only
keeps a failing run from hanging the suite; nothing here bounds a time.)"""
import os
import subprocess
import sys

import pytest

from conftest import DATA

NEVER = 120  # seconds: far past any refusal; a command still running then is waiting on the FIFO


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "nobody-writes"
    os.mkfifo(path)
    return path


def nbtext(*args) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-m", "nbtext", *map(str, args)], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=NEVER)
    except subprocess.TimeoutExpired:
        pytest.fail("the command read the FIFO (and waits on it) before refusing")


@pytest.fixture
def doc(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("some words of a document\n")
    return path


def test_train_refuses_one_class_before_reading(tmp_path, fifo):
    r = nbtext("train", "--label", "spam", fifo, "-o", tmp_path / "m.nbm")
    assert (r.returncode, r.stderr) == (1, "nbtext: error: need documents of at least two classes to train, "
                                           "got ['spam']\n")
    assert not (tmp_path / "m.nbm").exists()


def test_train_refuses_a_positive_class_it_will_not_have_before_reading(tmp_path, fifo, doc):
    r = nbtext("train", "--label", "spam", doc, "--label", "ham", fifo, "--positive", "nope", "-o", tmp_path / "m.nbm")
    assert (r.returncode, r.stderr) == (1, "nbtext: error: --positive 'nope' is not one of the classes (ham, spam)\n")


def test_train_refuses_a_threshold_for_three_classes_before_reading(tmp_path, fifo, doc):
    other = tmp_path / "b.txt"
    other.write_text("other words\n")
    r = nbtext("train", "--label", "a", doc, "--label", "b", other, "--label", "c", fifo,
               "--threshold", "0.3", "-o", tmp_path / "m.nbm")
    assert r.returncode == 1
    assert r.stderr == ("nbtext: error: --threshold, --unsure and --max-fpr need two classes and a positive one "
                        "(--positive; the classes are a, b, c)\n")


def test_label_directories_give_their_classes_before_reading(tmp_path, fifo):
    corpus = tmp_path / "corpus"
    for label in ("a", "b"):
        (corpus / label).mkdir(parents=True)
        (corpus / label / "1.txt").write_text(f"{label} words\n")
    r = nbtext("train", corpus, "--label", "c", fifo, "--max-fpr", "0.01", "-o", tmp_path / "m.nbm")
    assert r.returncode == 1 and "need two classes and a positive one (--positive; the classes are a, b, c)" in r.stderr


def test_calibrate_refuses_a_positive_class_the_model_lacks_before_reading(tmp_path, fifo, sample_copy):
    before = sample_copy.read_bytes()
    lines = tmp_path / "lines.tsv"
    os.mkfifo(lines)
    r = nbtext("calibrate", "-m", sample_copy, lines, "--positive", "nope")
    assert (r.returncode, r.stderr) == (1, "nbtext: error: --positive 'nope' is not one of the classes (ham, spam)\n")
    assert sample_copy.read_bytes() == before


def test_an_empty_corpus_still_says_why(tmp_path):
    (tmp_path / "empty").mkdir()
    r = nbtext("train", tmp_path / "empty", "-o", tmp_path / "m.nbm")
    assert r.stderr.startswith(f"nbtext: error: {tmp_path / 'empty'}: no label directories in it")


def test_a_corpus_of_two_classes_trains(tmp_path):
    r = nbtext("train", DATA / "corpus", "--threshold", "0.7", "-o", tmp_path / "m.nbm")
    assert r.returncode == 0, r.stderr


def test_an_input_in_error_is_named_rather_than_refused_for_its_classes(tmp_path, doc):
    r = nbtext("train", "--label", "spam", doc, "--label", "ham", tmp_path / "missing", "-o", tmp_path / "m.nbm")
    assert r.returncode == 1
    assert r.stderr.startswith(f"nbtext: error: {tmp_path / 'missing'}: no such file or directory\n")


def test_label_directories_classes_are_known_from_each_ones_first_file(tmp_path):
    """What labelled_classes walks: each label directory to its first file (not every file of a
    large corpus again before reading it); a label with no file gives no class."""
    from nbtext.read import label_directory_files, labelled_classes

    corpus = tmp_path / "corpus"
    for name in ("a/1.txt", "a/2.txt", "a/sub/3.txt", "b/x/y.txt", "b/z.txt"):
        (corpus / name).parent.mkdir(parents=True, exist_ok=True)
        (corpus / name).write_text("words\n")
    (corpus / "c").mkdir()
    assert list(label_directory_files(str(corpus), first=True)) == [
        (str(corpus / "a" / "1.txt"), False, "a"), (str(corpus / "b" / "x" / "y.txt"), False, "b")]
    assert [label for *_, label in label_directory_files(str(corpus))] == ["a", "a", "a", "b", "b"]
    assert labelled_classes([str(corpus)], []) == ["a", "b"]


@pytest.mark.parametrize("where", ["read-only directory", "/proc"])
def test_train_refuses_an_output_it_cannot_write_before_reading(tmp_path, fifo, doc, where):
    """A model whose directory cannot take a new file (read-only, not the user's, or a
    filesystem such as /proc) was refused only when it was saved, after all the work (a
    train of 2 MB with `-o /proc/x.nbm`: 10 s, then "directory /proc does not exist"). A
    temporary is made there and removed first (store.atomic.check_target)."""
    if where == "/proc":
        if not os.path.isdir("/proc/self"):
            pytest.skip("no /proc")
        out = "/proc/nbtext-test.nbm"
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only directory")
        (tmp_path / "ro").mkdir(mode=0o555)
        out = tmp_path / "ro" / "m.nbm"
    r = nbtext("train", "--label", "spam", doc, "--label", "ham", fifo, "-o", out)
    assert r.returncode == 1 and r.stderr.startswith(f"nbtext: error: {out}: cannot write: "), r.stderr
    assert r.stderr.count("\n") == 1


def test_train_refuses_an_input_it_cannot_open_before_reading(tmp_path, fifo, doc):
    """An input named on the command line that is missing was reported when reading came to
    it, and the command failed after all the work on the inputs before it (a train of 2 MB
    given a missing second file: 10 s, calibration included). Every input is opened (a
    directory listed) before any is read (read.check_openable); a FIFO is not opened."""
    r = nbtext("train", "--label", "spam", doc, "--label", "ham", fifo, tmp_path / "missing.ft",
               "-o", tmp_path / "m.nbm")
    assert (r.returncode, r.stderr) == (1, f"nbtext: error: {tmp_path / 'missing.ft'}: no such file or directory\n")
    assert not (tmp_path / "m.nbm").exists()


@pytest.mark.parametrize("command", ["eval", "cv", "calibrate"])
def test_the_other_labelled_commands_refuse_an_input_they_cannot_open_before_reading(tmp_path, fifo,
                                                                                       sample_copy, command):
    before = sample_copy.read_bytes()
    model = ["-m", sample_copy] if command in ("eval", "calibrate") else []
    r = nbtext(command, *model, "--label", "ham", fifo, tmp_path / "gone")
    assert (r.returncode, r.stderr) == (1, f"nbtext: error: {tmp_path / 'gone'}: no such file or directory\n")
    assert sample_copy.read_bytes() == before
