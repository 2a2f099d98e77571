"""--engine dask (issue 21): partitions counted on a real LocalCluster give local training's model,
export line for line, and predict's rows; a worker killed mid-run is retried and changes nothing;
an unreachable scheduler and a missing Dask are one `nbtext: error:` line."""
import os
import re
import signal
import sys

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from nbtext import store  # noqa: E402
from nbtext.batch import cluster as C  # noqa: E402
from nbtext.batch.train import count_corpus, train_model  # noqa: E402
from nbtext.read import LineOptions, labelled_documents  # noqa: E402
from nbtext.settings import DecisionOptions, FeatureOptions, ModelSettings, TokenizerSettings  # noqa: E402
from nbtext.store.dump import export_lines  # noqa: E402

from conftest import DATA  # noqa: E402

# (make check leaves these out: make test runs them); on one pytest-xdist worker (make test's
# --dist loadgroup), which starts the module's LocalCluster once, not once a worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dask")]

CORPUS = str(DATA / "corpus")
SMALL = 1 << 16  # bytes a partition: the sample's 432 messages in ~30 partitions
LINES = 1 << 14  # and a TSV of 144 lines in ~25 byte ranges


@pytest.fixture(scope="module")
def cluster():
    import logging

    local = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                     silence_logs=logging.ERROR)
    c = C.Cluster(local.scheduler_address)
    yield c, local
    c.close()
    local.close()


@pytest.fixture(scope="module")
def tsv(tmp_path_factory):
    """Every third message of the sample as a TSV line file (label, then the first 3,000 bytes of
    the message on one line: plain text, tokenized with character n-grams too)."""
    path = tmp_path_factory.mktemp("tsv") / "sample.tsv"
    lines = ["label\ttext"]
    for d in list(labelled_documents([CORPUS], [], LineOptions()))[::3]:
        text = d.data[:3000].decode("latin-1").replace("\t", " ").replace("\r", " ").replace("\n", " ")
        lines.append(f"{d.label}\t{text}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def mboxes(tmp_path_factory):
    """The sample as two mbox files (--label spam, --label ham), mboxrd-quoted, with CRLF lines in
    every third message, a body line "From the desk" after a blank line (not a From_ line) and
    a quoted ">From " line: byte ranges must start only at true From_ lines."""
    import re as _re

    folder = tmp_path_factory.mktemp("mbox")
    paths = {}
    for label in ("spam", "ham"):
        out = []
        for i, d in enumerate(labelled_documents([], [(label, str(DATA / "corpus" / label))], LineOptions())):
            body = d.data.rstrip(b"\r\n") + b"\n\nFrom the desk of nobody\n>From Mon Jan  1 here\n"
            body = _re.sub(rb"(?m)^(>*From )", rb">\1", body)
            msg = b"From someone@example.com Mon Jan  1 00:00:%02d 2024\n" % (i % 60) + body + b"\n"
            out.append(msg.replace(b"\n", b"\r\n") if i % 3 == 0 else msg)
        paths[label] = folder / f"{label}.mbox"
        paths[label].write_bytes(b"".join(out))
    return [(label, str(path)) for label, path in paths.items()]


def test_an_mbox_in_byte_ranges_reads_as_the_whole_file(cluster, mboxes):
    parts = C.labelled_parts([], mboxes, LineOptions(), None, part_bytes=SMALL)
    assert sum(p.mbox for p in parts) > 10
    C.number_lines(cluster[0], parts)
    got = [(d.id, d.label, d.data) for p in parts for d in p.documents(None)]
    want = [(d.id, d.label, d.data) for d in labelled_documents([], mboxes, LineOptions())]
    assert len(want) == 432 and got == want


def test_mbox_ranges_train_as_locally(cluster, mboxes):
    tok, settings, features, decisions = TokenizerSettings(), ModelSettings(), FeatureOptions(), DecisionOptions()
    model, _ = train_model(labelled_documents([], mboxes, LineOptions()), tok, settings, features, decisions)
    parts = C.labelled_parts([], mboxes, LineOptions(), None, part_bytes=SMALL)
    C.number_lines(cluster[0], parts)
    remote, _ = C.train_on_cluster(cluster[0], parts, tok, settings, features, decisions)
    assert list(export_lines(remote)) == list(export_lines(model))


def local_export(sources, tok, settings, features, decisions, sample):
    docs = labelled_documents(sources, [], LineOptions())
    model, fit = train_model(docs, tok, settings, features, decisions, calibration_sample=sample)
    return list(export_lines(model)), fit


def cluster_export(c, sources, tok, settings, features, decisions, sample, part_bytes=SMALL, resample=None):
    parts = C.labelled_parts(sources, [], LineOptions(), None, part_bytes=part_bytes)
    C.number_lines(c, parts)
    model, fit = C.train_on_cluster(c, parts, tok, settings, features, decisions, calibration_sample=sample,
                                    resample=resample)
    return list(export_lines(model)), fit, len(parts)


OPTIONS = [  # (tokenizer, model settings, features, decisions, calibration sample); the defaults: the CLI test
    # a sample smaller than the corpus: the reservoir's keys decide, drawn in input order
    (TokenizerSettings(), ModelSettings(), FeatureOptions(), DecisionOptions(max_fpr=0.05), 150),
    (TokenizerSettings(ngram_max=1), ModelSettings(variant="bernoulli"), FeatureOptions(max_features=3000),
     DecisionOptions(seed=7), 200),
    (TokenizerSettings(), ModelSettings(variant="complement", idf=True), FeatureOptions(min_df=2),
     DecisionOptions(), 5000),
]


@pytest.mark.parametrize("i", range(len(OPTIONS)))
def test_train_on_the_cluster_exports_what_local_training_does(cluster, i):
    """Both ways to calibration's sample: the rows sent with the counts (a Reservoir on the client),
    and the chosen documents counted again by a second map (resample)."""
    tok, settings, features, decisions, sample = OPTIONS[i]
    local, local_fit = local_export([CORPUS], tok, settings, features, decisions, sample)
    remote, remote_fit, n_parts = cluster_export(cluster[0], [CORPUS], tok, settings, features, decisions, sample,
                                                 resample=i % 2 == 0)
    assert n_parts > 10
    assert len(local) > 1000 and remote == local
    assert remote_fit == local_fit


def test_a_line_file_in_byte_ranges_trains_as_locally(cluster, tsv):
    tok, settings, features, decisions = TokenizerSettings(), ModelSettings(), FeatureOptions(), DecisionOptions()
    local, _ = local_export([tsv], tok, settings, features, decisions, 100)
    remote, _, n_parts = cluster_export(cluster[0], [tsv], tok, settings, features, decisions, 100, LINES)
    assert n_parts > 10 and remote == local



@pytest.mark.parametrize("source", ["label directories", "line file"])
def test_training_on_the_cluster_tells_progress_the_bytes_counted(cluster, tsv, source):
    """On --engine dask the counting line said "training: N documents", without the bytes of the
    inputs' total, the rate and the ETA that local training shows (README): each partition
    reduced now tells the bytes it read and the documents reduced so far, as local chunks do."""
    from nbtext.progress import COUNTING
    from nbtext.read import labelled_size

    sources = [CORPUS] if source == "label directories" else [tsv]
    size = SMALL if source == "label directories" else LINES
    parts = C.labelled_parts(sources, [], LineOptions(), None, part_bytes=size)
    C.number_lines(cluster[0], parts)
    told = []
    C.train_on_cluster(cluster[0], parts, TokenizerSettings(), ModelSettings(variant="multinomial"), FeatureOptions(),
                       DecisionOptions(calibrate=False, layer=False), progress=told.append)
    counting = [s for s in told if not isinstance(s, int) and s.phase == COUNTING]
    assert len(counting) == len(parts) > 10 and len(counting) == len(told)
    done = [s.done for s in counting]
    assert done == sorted(set(done)) and done[-1] == labelled_size(sources, [])
    assert counting[-1].documents == len(list(labelled_documents(sources, [], LineOptions())))

def test_byte_ranges_start_at_lines_and_number_them_as_the_file(cluster, tsv):
    parts = C.labelled_parts([tsv], [], LineOptions(), None, part_bytes=LINES)
    C.number_lines(cluster[0], parts)
    ids = [d.id for p in parts for d in p.documents(None)]
    assert ids == [d.id for d in labelled_documents([tsv], [], LineOptions())]
    assert ids[0] == f"{tsv}:2"  # (line 1: the header row)


def test_cv_matrix_on_the_cluster_is_the_local_one(cluster):
    tok = TokenizerSettings()
    ids_local, ids_remote = [], []
    X, y, vocab = count_corpus(labelled_documents([CORPUS], [], LineOptions()), tok, ids=ids_local)
    parts = C.labelled_parts([CORPUS], [], LineOptions(), None, part_bytes=SMALL)
    X2, y2, vocab2 = C.corpus_on_cluster(cluster[0], parts, tok, ids=ids_remote)
    assert vocab2.encoded() == vocab.encoded() and list(y2) == list(y) and ids_remote == ids_local
    assert (X2 != X).nnz == 0 and (X2.indices == X.indices).all()


def test_cli_train_predict_and_cv_with_a_scheduler(cluster, run, tmp_path, sample_model):
    """(sample_model is `nbtext train` of CORPUS with the defaults, the local side.)"""
    address = cluster[1].scheduler_address
    r = run("train", CORPUS, "-o", tmp_path / "d.nbm", "--engine", "dask")  # (a LocalCluster of its own)
    assert r.exit_code == 0, r.stderr
    assert re.search(r"^nbtext: Dask LocalCluster of \d+ workers; dashboard http://\S+$", r.stderr, re.M)
    assert "trained on 432 documents (298 ham, 134 spam)" in r.stderr
    ex = [run("export", "-m", m).stdout for m in (sample_model, tmp_path / "d.nbm")]
    assert ex[0] == ex[1] and ex[0].count("\n") > 1000
    local = run("predict", "-m", sample_model, CORPUS, "--format", "jsonl")
    remote = run("predict", "-m", sample_model, CORPUS, "--format", "jsonl", "--engine", "dask",
                 "--scheduler", address)
    assert remote.exit_code == 0, remote.stderr
    assert remote.stdout == local.stdout and local.stdout.count("\n") == 432
    cv = [run("cv", CORPUS, "--folds", "3", *extra).stdout
          for extra in ((), ("--engine", "dask", "--scheduler", address))]
    assert cv[0] == cv[1] and "accuracy" in cv[0]


def test_documents_without_a_token_are_refused_on_the_cluster_as_locally(cluster, run, tmp_path):
    """Documents none of which holds a token are refused by local training's reduce, which the
    cluster's partitions end in too: no model of 0 tokens, and no internal error in its folds."""
    bare = tmp_path / "bare.txt"
    bare.write_text("__label__a\n__label__b\n" * 6)
    model = tmp_path / "m.nbm"
    r = run("train", bare, "--format", "fasttext", "-o", model, "--engine", "dask",
            "--scheduler", cluster[1].scheduler_address)
    assert (r.exit_code, r.stderr) == (
        1, f"nbtext: error: {bare}: none of the 12 documents read has a token: nothing to train on\n")
    assert not model.exists()


def test_predict_lines_in_byte_ranges_as_locally(cluster, run, sample_model, tsv):
    address = cluster[1].scheduler_address
    local = run("predict", "-m", sample_model, "--lines", tsv)
    remote = run("predict", "-m", sample_model, "--lines", tsv, "--engine", "dask", "--scheduler", address)
    assert remote.exit_code == 0, remote.stderr
    assert remote.stdout == local.stdout and local.stdout.count("\n") == 145


class KillOnce(distributed.WorkerPlugin):
    """Kills the worker process that starts counting a partition, once (a marker file says it
    happened): as a machine lost mid-run."""

    def __init__(self, marker):
        self.marker = marker

    def transition(self, key, start, finish, **kw):
        if finish == "executing" and "count_part" in str(key) and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_killed_during_training_is_retried_and_the_model_is_the_same(cluster, tmp_path):
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    c, local = cluster
    marker = str(tmp_path / "killed")
    c.client.register_plugin(KillOnce(marker), name="kill-once")
    try:
        tok, settings, features, decisions, sample = OPTIONS[0]
        remote, _, _ = cluster_export(c, [CORPUS], tok, settings, features, decisions, sample)
    finally:
        c.client.unregister_worker_plugin("kill-once")
    assert os.path.exists(marker)  # a worker was killed
    local_lines, _ = local_export([CORPUS], tok, settings, features, decisions, sample)
    assert remote == local_lines
    c.client.wait_for_workers(2, timeout=30)  # (the nanny restarted it)


def test_an_unreachable_scheduler_is_an_error_naming_it_within_the_timeout():
    with pytest.raises(C.NbtextError, match=r"^tcp://127\.0\.0\.1:9: cannot reach the Dask scheduler within 2 s"):
        C.Cluster("tcp://127.0.0.1:9", timeout=2)


# `nbtext` with the scheduler's connection timeout at 1 s (the command otherwise as a user runs it).
SHORT_CONNECT = ("import functools, sys; import nbtext.batch.cluster as C; "
                 "C.Cluster = functools.partial(C.Cluster, timeout=1); "
                 "from nbtext.__main__ import main; sys.argv[0] = 'nbtext'; main()")


def test_a_scheduler_that_accepts_and_never_answers_is_an_error_naming_it(tmp_path):
    """A server that accepts the connection and says nothing (a stopped scheduler's port taken
    by something else, a firewall that holds connections) hung `--engine dask` for ever: Dask's
    handshake waited without end. The real command ends with docs/cluster.md's error, status 1,
    no model written; the test waits on the process's end (its timeout a safety net only). The
    command runs with Cluster's connection timeout at 1 s (SHORT_CONNECT) in place of the
    CONNECT_TIMEOUT it waits out in use: the same handshake, bounded the same way."""
    import socket
    import subprocess
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held = []

    def accept():
        while True:
            try:
                held.append(server.accept()[0])  # (open, and never a byte back)
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
    model = tmp_path / "m.nbm"
    try:
        r = subprocess.run([sys.executable, "-c", SHORT_CONNECT, "train", CORPUS, "-o", str(model), "-q",
                            "--engine", "dask", "--scheduler", address], capture_output=True, timeout=300)
    finally:
        server.close()
        for conn in held:
            conn.close()
    assert held  # (it was reached, and accepted)
    assert r.returncode == 1, r.stderr
    assert r.stderr.decode().startswith(
        f"nbtext: error: {address}: cannot reach the Dask scheduler within 1 s ("), r.stderr
    assert r.stderr.count(b"\n") == 1 and not model.exists()


@pytest.mark.parametrize("address, problem", [
    ("foo://bar", "unknown scheme 'foo'"),
    ("http://head:8786", "unknown scheme 'http'"),
    ("127.0.0.1", "no port"),
    ("tcp://head", "no port"),
    ("tcp://head:port", "port 'port' is not a number from 1 to 65535"),
    ("tcp://head:99999", "port '99999' is not a number from 1 to 65535"),
    ("tcp://:8786", "no host"),
])
def test_a_malformed_scheduler_address_is_refused_as_such(run, tmp_path, address, problem):
    """`foo://bar` and `127.0.0.1` were reported as schedulers that could not be reached."""
    r = run("train", CORPUS, "-o", tmp_path / "m.nbm", "--engine", "dask", "--scheduler", address)
    assert (r.exit_code, r.stderr) == (
        1, f"nbtext: error: {address}: not a Dask scheduler address ({problem}); give tcp://HOST:PORT\n")
    assert not (tmp_path / "m.nbm").exists()


def test_engine_dask_without_dask_says_how_to_install_it(run, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)  # (import distributed: ImportError)
    r = run("train", CORPUS, "-o", tmp_path / "m.nbm", "--engine", "dask")
    assert r.exit_code == 1
    assert r.stderr == "nbtext: error: --engine dask needs Dask, an optional extra: pip install 'nbtext[dask]'\n"
    assert not (tmp_path / "m.nbm").exists()


def test_scheduler_without_engine_dask_is_a_usage_error(run, tmp_path):
    r = run("train", CORPUS, "-o", tmp_path / "m.nbm", "--scheduler", "tcp://127.0.0.1:8786")
    assert r.exit_code == 2 and "--scheduler needs --engine dask" in r.stderr


def test_stdin_is_refused_with_engine_dask(cluster, run, sample_model, tmp_path):
    r = run("predict", "-m", sample_model, "-", "--engine", "dask", "--scheduler", cluster[1].scheduler_address,
            input="Subject: hi\n\nhello\n")
    assert r.exit_code == 1
    assert r.stderr == "nbtext: error: -: --engine dask reads files its workers can reach, not standard input\n"
    # refused before a LocalCluster is started (its dashboard line would come first on stderr)
    for args in (["predict", "-m", sample_model], ["cv", "-"], ["train", "-", "-o", "m.nbm"],
                 ["train", "-", "--label-column", "Play", "--variant", "table", "-o", "m.nbm"]):
        r = run(*args, "--engine", "dask", input="Subject: hi\n\nhello\n")
        assert (r.exit_code, r.stderr) == (
            1, "nbtext: error: -: --engine dask reads files its workers can reach, not standard input\n"), args
    # a pipe given by name (as <(...) gives it): the client would read its header, the workers nothing
    import os

    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    r = run("train", fifo, "--label-column", "Play", "--variant", "table", "-o", tmp_path / "m.nbm",
            "--engine", "dask")
    assert (r.exit_code, r.stderr) == (
        1, f"nbtext: error: {fifo}: --engine dask reads files its workers can reach, not a pipe or device\n")


def test_a_server_that_is_not_a_scheduler_is_an_error_naming_it():
    """A web server (or proxy) on the port: its reply is no Dask frame (read as one, its length
    asked numpy for exabytes: a MemoryError, once printed as 'out of memory')."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def answer():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 4)
            conn.close()

    threading.Thread(target=answer, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
    try:
        with pytest.raises(C.NbtextError, match=rf"^{re.escape(address)}: not a Dask scheduler"):
            C.Cluster(address, timeout=60)  # (a safety net: the reply comes at once, whatever the load)
    finally:
        server.close()


# -- table models (CSV/TSV with a header) --------------------------------------------------------

TABLE_PART = 1 << 13  # bytes a partition: the table below in ~20 byte ranges


@pytest.fixture(scope="module")
def table_csv(tmp_path_factory):
    """3,000 rows: two categorical columns (one with missing cells, values first seen in different
    partitions), three numeric ones (one with NA cells, one of mixed magnitudes), three classes,
    a blank line and CRLF lines in the middle."""
    import numpy as np

    rng = np.random.default_rng(5)
    lines = ["colour,x,size,city,w,label"]
    for i in range(3000):
        c = int(rng.integers(0, 3))
        colour = ["red", "green", "blue", "teal" if i > 2000 else "red"][int(rng.integers(0, 4))]
        x = "NA" if i % 17 == 0 else repr(float(rng.normal(c, 1 + c)))
        city = "?" if i % 23 == 0 else f"c{int(rng.integers(0, 5 + i // 500))}"
        w = repr(float(rng.normal(0, 1) * 10.0 ** int(rng.integers(-6, 7))))
        lines.append(f"{colour},{x},{int(rng.integers(1, 9)) + c},{city},{w},k{c}")
    lines[1500] += "\r\n"  # (a blank line; and CRLF line ends from here on)
    path = tmp_path_factory.mktemp("table") / "t.csv"
    path.write_bytes(("\n".join(lines[:1500]) + "\n" + "\r\n".join(lines[1500:]) + "\r\n").encode())
    return str(path)


def _table_model(sources, covariance, engine=None, chunk_rows=8192):
    from nbtext.settings import TableSettings
    from nbtext.table.model import train_table
    from nbtext.table.read import TableOptions

    return train_table(sources, TableOptions(chunk_rows=chunk_rows), TableSettings(covariance=covariance),
                       engine=engine)


@pytest.mark.parametrize("covariance", ["diagonal", "shared", "full"])
def test_a_table_in_byte_ranges_trains_as_locally(cluster, table_csv, covariance):
    """Categorical and Gaussian statistics (exact sums) from ~20 byte ranges reduced on the
    workers: the export is local training's, line for line (and local training's in chunks of
    333 rows too: the sums do not depend on the grouping)."""
    engine = C.ClusterTables(cluster[0], [table_csv], None, part_bytes=TABLE_PART)
    assert len(engine.parts) > 10 and engine.parts[-1].before > 1500
    remote = list(export_lines(_table_model([table_csv], covariance, engine)))
    local = list(export_lines(_table_model([table_csv], covariance)))
    assert remote == local and '"kinds": ["categorical", "numeric", "numeric", "categorical", "numeric"]' in local[1]
    assert list(export_lines(_table_model([table_csv], covariance, chunk_rows=333))) == local


def test_table_predict_and_cv_on_the_cluster_are_local(cluster, run, table_csv, tmp_path, monkeypatch):
    monkeypatch.setattr(C, "PART_MIN", TABLE_PART)  # (the CLI's partitions: ranges of 8 KiB)
    address = cluster[1].scheduler_address
    dask = ("--engine", "dask", "--scheduler", address)
    for name, extra in (("l", ()), ("d", dask)):
        r = run("train", table_csv, "-o", tmp_path / f"{name}.nbm", "--covariance", "full", *extra)
        assert r.exit_code == 0, r.stderr
    ex = [run("export", "-m", tmp_path / f"{m}.nbm").stdout for m in ("l", "d")]
    assert ex[0] == ex[1]
    for fmt in ("tsv", "jsonl"):
        out = [run("predict", "-m", tmp_path / "l.nbm", table_csv, table_csv, "--density", "--format", fmt, *extra)
               for extra in ((), dask)]
        assert out[1].exit_code == 0, out[1].stderr
        assert out[0].stdout == out[1].stdout and out[0].stdout.count("\n") == 6000
    cv = [run("cv", table_csv, "--folds", "3", *extra).stdout for extra in ((), dask)]
    assert cv[0] == cv[1] and "accuracy" in cv[0]
    lines = open(table_csv, newline="").read().split("\n")
    cells = lines[2700].split(",")
    lines[2700] = ",".join([cells[0], "1e300", *cells[2:]])  # (x: its square overflows)
    (tmp_path / "huge.csv").write_bytes("\n".join(lines).encode())
    err = [run("predict", "-m", tmp_path / "l.nbm", tmp_path / "huge.csv", *extra).stderr for extra in ((), dask)]
    assert err[0].endswith("nbtext: error: row 2699 (line 2701): a value too large to score (its square overflows)\n")
    assert err[1].endswith(err[0].splitlines()[-1] + "\n")


def test_a_csv_table_with_quotes_is_read_whole_and_errors_name_the_line(cluster, table_csv, tmp_path):
    quoted = tmp_path / "q.csv"
    text = open(table_csv, newline="").read()
    quoted.write_bytes(text.replace("teal", '"te\nal"').encode())
    engine = C.ClusterTables(cluster[0], [str(quoted)], None, part_bytes=TABLE_PART)
    assert len(engine.parts) == 1  # (a quoted field may hold a line break)
    assert list(export_lines(_table_model([str(quoted)], "diagonal", engine))) == \
        list(export_lines(_table_model([str(quoted)], "diagonal")))
    bad = tmp_path / "bad.csv"
    lines = text.split("\n")
    lines[2600] = lines[2600].replace(",k", ",7,k")  # (a ragged row far into the file)
    bad.write_bytes("\n".join(lines).encode())
    engine = C.ClusterTables(cluster[0], [str(bad)], None, part_bytes=TABLE_PART)
    with pytest.raises(C.NbtextError) as local:
        _table_model([str(bad)], "diagonal")
    with pytest.raises(C.NbtextError) as remote:
        _table_model([str(bad)], "diagonal", engine)
    assert str(remote.value) == str(local.value) == f"{bad}:2601: expected 6 columns, found 7 (a ragged row)"


def test_columns_retyped_after_the_first_block_are_typed_as_locally(cluster, table_csv, tmp_path):
    """A column numeric in the first block with text far into the file, and one with no value in
    the first block and numbers after: typed again over the whole first table, as locally."""
    lines = open(table_csv, newline="").read().split("\n")
    lines[0] = lines[0].replace(",label", ",late,label")
    for i in range(1, len(lines)):
        if lines[i].strip():
            head, label = lines[i].rsplit(",", 1)
            lines[i] = f"{head},{'NA' if i < 150 else i % 7},{label}"
    lines[2800] = lines[2800].replace(",", ",big", 2).replace(",big", ",", 1)  # (size: text)
    path = tmp_path / "retype.csv"
    path.write_bytes("\n".join(lines).encode())
    engine = C.ClusterTables(cluster[0], [str(path)], None, part_bytes=TABLE_PART)
    local = list(export_lines(_table_model([str(path)], "shared", chunk_rows=100)))
    assert '"kinds": ["categorical", "numeric", "categorical", "categorical", "numeric", "numeric"]' in local[1]
    assert list(export_lines(_table_model([str(path)], "shared", engine, chunk_rows=100))) == local


def test_past_the_memory_budget_the_cluster_prunes_as_local_training_does(cluster):
    """The client's reduce is local training's, budget included: past it the rare tokens go and
    the model says so; a token kept counts at most what training without a budget counts (less
    where it was dropped, and counted again from its return), the most frequent exactly that
    (which tokens are rare at a pruning depends on where the chunks end, local and on the
    cluster alike: docs/memory.md)."""
    tok, settings, features, decisions = TokenizerSettings(), ModelSettings(), FeatureOptions(), DecisionOptions()
    exact, _ = train_model(labelled_documents([CORPUS], [], LineOptions()), tok, settings, features, decisions)
    parts = C.labelled_parts([CORPUS], [], LineOptions(), None, part_bytes=SMALL)
    remote, _ = C.train_on_cluster(cluster[0], parts, tok, settings, features, decisions, max_memory=1 << 20)
    local, _ = train_model(labelled_documents([CORPUS], [], LineOptions()), tok, settings, features, decisions,
                           max_memory=1 << 20)
    for pruned in (remote, local):
        assert pruned.pruned["tokens"] > 0 and len(pruned.vocab) < len(exact.vocab) // 2
        kept = pruned.vocab.tokens
        assert (pruned.feature_count <= exact.feature_count[:, exact.vocab.lookup(kept)]).all()
        frequent = [t for t, df in zip(exact.vocab.tokens, exact.counts.doc_freq) if df >= 200]
        assert len(frequent) > 40
        np.testing.assert_array_equal(pruned.feature_count[:, pruned.vocab.lookup(frequent)],
                                      exact.feature_count[:, exact.vocab.lookup(frequent)])


def test_ctrl_c_with_a_local_cluster_is_one_line(tmp_path):
    """Ctrl-C goes to the terminal's whole process group, the LocalCluster's worker processes
    too: each printed a traceback (asyncio's CancelledError, or an import's while starting)
    around `nbtext: interrupted`. They ignore it, as train's own pool's workers do, and the
    command closes them. The signal is sent to the group once the cluster is said to be up;
    the training after it (20,000 documents, calibrated) takes seconds."""
    import random
    import subprocess

    rng, words = random.Random(1), [f"w{i}" for i in range(3000)]
    lines = tmp_path / "lines.tsv"
    lines.write_text("".join(f"{label}\t{' '.join(rng.choice(words[i % 2 * 1000:][:2000]) for _ in range(12))}\n"
                             for i, label in enumerate(["ham", "spam"] * 10000)))
    p = subprocess.Popen([sys.executable, "-m", "nbtext", "train", "--engine", "dask", lines, "-o", tmp_path / "m.nbm"],
                         stderr=subprocess.PIPE, start_new_session=True)  # (its own group, as a shell's job)
    first = p.stderr.readline().decode()
    assert first.startswith("nbtext: Dask LocalCluster of "), first
    os.killpg(p.pid, signal.SIGINT)
    rest = p.stderr.read().decode()
    assert (p.wait(timeout=120), rest) == (130, "nbtext: interrupted\n")
    assert not (tmp_path / "m.nbm").exists()


def test_predict_on_a_local_cluster_into_head_ends_quietly(tmp_path, sample_model):
    """`nbtext predict --engine dask ... | head` printed "Exception ignored in: <generator object
    Cluster.ordered ...> ... RuntimeError: IOLoop is closed": the rows' generator was collected
    after the cluster had closed, and cancelled its work then. The reader leaves after one row
    of 20,000 (far more than a pipe holds), as head does."""
    import subprocess

    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"word{i % 7} other{i % 3}\n" for i in range(20000)))
    p = subprocess.Popen([sys.executable, "-m", "nbtext", "predict", "-q", "--engine", "dask", "-m", sample_model,
                          "--lines", lines], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline().decode().startswith(f"{lines}:1\t")
    p.stdout.close()
    assert (p.wait(timeout=120), p.stderr.read().decode()) == (0, "")
