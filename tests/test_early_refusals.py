"""Refusals come before the work: what train and calibrate would refuse once they knew the
classes is refused before any document is read, when the classes are known up front (label
directories and --label paths; a model being recalibrated).

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
