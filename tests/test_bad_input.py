"""Bad input, tried on purpose: a clear `nbtext: error:` or a sane result; never a traceback,
never a hang, models untouched. And kill -9 at any moment leaves the old model or the new one."""
import base64
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from nbtext import store

from conftest import DATA


@pytest.fixture
def model(sample_copy):
    return sample_copy


def nb(*args, input=None, timeout=120):
    r = subprocess.run([sys.executable, "-m", "nbtext", *map(str, args)], input=input,
                       capture_output=True, timeout=timeout)
    assert b"Traceback" not in r.stderr, r.stderr.decode()
    return r


BAD_DOCUMENTS = {
    "binary": bytes(range(256)) * 40,
    "invalid utf-8": b"caf\xe9 \xff\xfe na\xc3ve \xed\xa0\x80 text",
    "nul bytes": b"hello\x00world\x00\x00 spam",
    "empty": b"",
    "malformed headers": b"From: <<<@@@>>>\nSubject\nTo: ,,,;;\n: no name\nContent-Type: text/\n\nbody",
    "unknown charset": b"From: a@b.example\nContent-Type: text/plain; charset=klingon-8\n\n\xe0\xe1 words",
    "truncated base64": b"From: a@b.example\nContent-Type: text/html\nContent-Transfer-Encoding: base64\n\n"
                        + base64.b64encode(b"<p>hello there friend</p>" * 20)[:-7],
    "deep mime": b"From: a@b.example\n" + b"".join(
        b'Content-Type: multipart/mixed; boundary="b%d"\n\n--b%d\n' % (i, i) for i in range(1000)) + b"\nx\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BAD_DOCUMENTS))
def test_bad_documents_classify_and_predict(model, tmp_path, name):
    before = model.read_bytes()
    r = nb("classify", "-m", model, input=BAD_DOCUMENTS[name])
    assert r.returncode == 0
    label, prob = r.stdout.decode().rstrip("\n").split("\t")
    assert label in ("ham", "spam") and 0 <= float(prob) <= 1
    doc = tmp_path / "doc"
    doc.write_bytes(BAD_DOCUMENTS[name])
    r = nb("predict", "-m", model, doc)
    assert r.returncode == 0 and r.stdout.decode().startswith(f"{doc}\t")
    assert model.read_bytes() == before


@pytest.mark.slow
def test_bad_documents_in_a_training_corpus(tmp_path):
    for i, (name, data) in enumerate(sorted(BAD_DOCUMENTS.items())):
        d = tmp_path / "corpus" / ("spam" if i % 2 else "ham")
        d.mkdir(parents=True, exist_ok=True)
        (d / f"doc{i}").write_bytes(data)
    r = nb("train", tmp_path / "corpus", "-o", tmp_path / "m.nbm")
    assert r.returncode == 0
    assert store.load(str(tmp_path / "m.nbm")).n_documents == len(BAD_DOCUMENTS)


@pytest.mark.slow
def test_fifty_megabyte_message(model, tmp_path):
    big = tmp_path / "big.eml"
    with open(big, "wb") as f:
        f.write(b"From: a@b.example\nSubject: huge\nContent-Type: text/plain\n\n")
        line = b"lorem ipsum dolor sit amet consectetur adipiscing elit " * 2 + b"\n"
        f.write(line * (50 * 2**20 // len(line)))
    r = nb("classify", "-m", model, big, timeout=300)  # (a safety stop: a hang fails, not a slow machine)
    assert r.returncode == 0


def test_unreadable_path(model, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads everything; permission errors cannot be produced")
    p = tmp_path / "secret.eml"
    p.write_bytes(b"hello")
    p.chmod(0)
    r = nb("classify", "-m", model, p)
    assert r.returncode == 1 and r.stderr.decode() == f"nbtext: error: {p}: permission denied\n"


@pytest.mark.slow
@pytest.mark.parametrize("content,reason", [
    (b"", "empty file, not a model"),
    (b"NBTEXT\x1a\n\x01\x00", "truncated model file"),
    (b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00\x8c\x08builtins", "a Python pickle, which nbtext never loads"),
    (b"PK\x03\x04 zip", "a numpy/zip archive, not an nbtext model"),
    (b"# nbtext dump 1\n{}", "an nbtext text dump"),
])
def test_bad_model_files(tmp_path, content, reason):
    p = tmp_path / "m.nbm"
    p.write_bytes(content)
    for cmd in (["classify", "-m", p], ["predict", "-m", p, DATA / "example-ham.eml"],
                ["learn", "-m", p, "--label", "spam", DATA / "example-ham.eml"], ["info", "-m", p]):
        r = nb(*cmd, input=b"x")
        assert r.returncode == 1, cmd
        assert r.stderr.decode().startswith(f"nbtext: error: {p}: {reason}"), r.stderr
        assert p.read_bytes() == content


def timed(cmd):
    """Run nbtext cmd to its end; its wall time, the window the kills below aim into."""
    t0 = time.monotonic()
    assert nb(*cmd).returncode == 0, cmd
    return time.monotonic() - t0


def kill_loop(cmd, path, tries, window):
    """Start cmd, kill -9 it after a random delay within window, and check that path is whole
    every time, until tries kills have hit the command while it was still running (at most 4 x
    tries runs). Returns how many did (a loop whose kills all came after the command had ended
    would have tested nothing). A run that ends before its kill halves the window: the command's
    time depends on the machine's load, so the aim follows it rather than racing it."""
    rng = random.Random(1)
    hits = 0
    for _ in range(4 * tries):
        if hits == tries:
            break
        before = path.read_bytes() if path.exists() else None
        p = subprocess.Popen([sys.executable, "-m", "nbtext", *map(str, cmd)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, window))
        hit = p.poll() is None
        hits += hit
        window = window if hit else window / 2
        p.send_signal(signal.SIGKILL)
        p.wait()
        if path.exists():
            store.load(str(path))  # whole: loads, or this raises
        else:
            assert before is None
    return hits


@pytest.mark.slow
def test_kill_minus_nine_during_train_learn_merge(tmp_path):
    """Each command is timed once to its end, then killed at random moments within that time,
    over a model that exists (it must stay whole) and, for train, one that does not yet."""
    corpus = DATA / "corpus"
    model = tmp_path / "m.nbm"
    train = ["train", corpus, "-o", model, "-q", "-j", "1"]
    kill_loop(train, tmp_path / "new.nbm", 2, 1.0)  # no model yet: none after a kill, or a whole one
    assert kill_loop(train, model, 5, timed(train)) > 0
    msgs = sorted((corpus / "ham").iterdir())[:40]
    learn = ["learn", "-m", model, "--label", "spam", "-q", *msgs]
    assert kill_loop(learn, model, 5, timed(learn)) > 0
    other = tmp_path / "o.nbm"  # (other documents: merge refuses models that share some)
    assert nb("train", "--label", "spam", DATA / "example-spam.eml", "--label", "ham", DATA / "example-ham.eml",
              "-o", other, "-q").returncode == 0
    merged = tmp_path / "merged.nbm"
    merge = ["merge", "-o", merged, model, other]
    assert kill_loop(merge, merged, 5, timed(merge)) > 0
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    nb("learn", "-m", model, "--label", "ham", "-q", DATA / "example-ham.eml")
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".m.nbm") and p.name.endswith(".tmp")], \
        f"stale temporaries not cleaned: {leftovers}"
