"""`nbtext serve`: the daemon as mail servers use it, over real sockets, with the stock spamc.

The daemon runs as a real process (`nbtext serve`); spamd's protocol is driven by Debian's
spamc (installed here when missing and we are root; its tests are skipped with a message
otherwise) and by raw sockets for what spamc never sends. No test bounds a wall time: each
waits on an event (a reply, a line in the log, a process's end) with a generous safety limit.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from conftest import DATA, SHARED, debian_program

from nbtext.fastscore import FastScorer
from nbtext.operations import digest

SAFETY = 60.0  # seconds: a limit on waiting for an event, never a measure
NBTEXT = [sys.executable, "-m", "nbtext"]
SPAM = DATA / "example-spam.eml"
HAM = DATA / "example-ham.eml"


def spamc_path():
    """Debian's spamc: installed when missing and we are root (apt-get), else the test skips."""
    found = debian_program("spamc", "spamc")
    if found is None:
        pytest.skip("the stock spamc client is not installed (Debian package spamc; apt-get install spamc)")
    return found


class Daemon:
    """`nbtext serve` as a subprocess; its log lines read as they come."""

    def __init__(self, model, *args, env=None):
        self.proc = subprocess.Popen([*NBTEXT, "serve", "-m", str(model), *map(str, args)],
                                     stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     env=dict(os.environ, **(env or {})))
        self.lines: list[str] = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.spamd = self.http = None
        for proto in ("spamd", "http"):
            if f"--{proto}" in map(str, args):
                line = self.wait_for(rf"listening for {proto} on (\S+)")
                where = re.search(rf"listening for {proto} on (\S+)", line).group(1)
                setattr(self, proto, where)

    def _read(self):
        for raw in self.proc.stderr:
            with self.cond:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_for(self, pattern, start=0):
        deadline = time.monotonic() + SAFETY
        with self.cond:
            while True:
                for line in self.lines[start:]:
                    if re.search(pattern, line):
                        return line
                if self.proc.poll() is not None and not self.reader.is_alive():
                    raise AssertionError(f"nbtext serve ended ({self.proc.returncode}):\n" + "\n".join(self.lines))
                left = deadline - time.monotonic()
                assert left > 0, f"no line matching {pattern!r} in:\n" + "\n".join(self.lines)
                self.cond.wait(min(left, 1.0))

    @property
    def port(self):
        return int(self.spamd.rsplit(":", 1)[1])

    @property
    def http_url(self):
        return f"http://{self.http}"

    def spamc(self, *args, data: bytes, user=None):
        cmd = [spamc_path(), "-d", "127.0.0.1", "-p", str(self.port), *(["-u", user] if user else []), *args]
        return subprocess.run(cmd, input=data, capture_output=True, timeout=SAFETY)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(SAFETY)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(SAFETY)
        return self.proc.returncode


@pytest.fixture
def daemon(request):
    started = []

    def start(model, *args, **kw):
        d = Daemon(model, *args, **kw)
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()


def raw(port, data: bytes, shut=True) -> bytes:
    """Send bytes to the spamd port and read the whole reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=SAFETY) as s:
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        return read_all(s)


def read_all(s) -> bytes:
    out = b""
    while chunk := s.recv(65536):
        out += chunk
    return out


def request(method, body: bytes, version="1.5", **headers) -> bytes:
    head = f"{method} SPAMC/{version}\r\nContent-length: {len(body)}\r\n"
    head += "".join(f"{k.replace('_', '-')}: {v}\r\n" for k, v in headers.items())
    return head.encode() + b"\r\n" + body


def classify(model, path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([*NBTEXT, "classify", "-m", str(model), *map(str, args), str(path)],
                          capture_output=True, timeout=SAFETY)


def http_post(url, data: bytes, headers=None):
    req = urllib.request.Request(url, data=data, method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=SAFETY) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def metric(text: str, name: str) -> float:
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    assert m, f"{name} not in metrics"
    return float(m.group(1))


# -- spamd's protocol with the stock spamc --------------------------------------------------

def test_spamc_check_exit_codes_and_score(daemon, sample_model):
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--workers", "1")
    spam, ham = d.spamc("-c", data=SPAM.read_bytes()), d.spamc("-c", data=HAM.read_bytes())
    assert (spam.returncode, ham.returncode) == (1, 0)
    for r, path in ((spam, SPAM), (ham, HAM)):
        label, p = classify(sample_model, path).stdout.decode().split()
        p_spam = float(p) if label == "spam" else 1 - float(p)
        score, required = r.stdout.decode().strip().split("/")
        assert required == "5.0" and float(score) == pytest.approx(10 * p_spam, abs=0.051)


def test_spamc_report_is_classify_explain(daemon, sample_model):
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--workers", "1")
    r = d.spamc("-R", data=SPAM.read_bytes())
    assert r.returncode == 0
    lines = r.stdout.decode().replace("\r\n", "\n").splitlines()
    assert re.fullmatch(r"\d+\.\d/5\.0", lines[0])
    assert lines[1].startswith("nbtext: spam (P(spam) = ")
    explained = classify(sample_model, SPAM, "--explain", "10").stdout.decode().splitlines()[1:]
    assert lines[2:] == explained  # prior, unknown tokens, then the tokens for and against


def test_spamc_process_and_headers_add_classify_passthrough_and_spamassassin_headers(daemon, sample_model):
    """PROCESS writes the message back as classify --passthrough does, with SpamAssassin's
    X-Spam-* fields after nbtext's (spamass-milter and users' rules read them)."""
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--workers", "1")
    for path, flag in ((SPAM, "X-Spam-Flag: YES\n"), (HAM, "")):
        passthrough = classify(sample_model, path, "--passthrough").stdout
        assert b"X-Nbtext-Class: " in passthrough
        end = passthrough.index(b"\n\n") + 1
        score = d.spamc("-c", data=path.read_bytes()).stdout.decode().strip().split("/")[0]
        yes, tests = ("Yes", "NBTEXT_SPAM") if flag else ("No", "NBTEXT_HAM")
        added = (f"{flag}X-Spam-Status: {yes}, score={score} required=5.0 tests={tests} version=nbtext\n"
                 f"X-Spam-Level: {'*' * int(float(score))}\n").encode()
        expected = passthrough[:end] + added + passthrough[end:]
        assert d.spamc(data=path.read_bytes()).stdout == expected  # PROCESS
        assert d.spamc("--headers", data=path.read_bytes()).stdout == expected  # HEADERS, body added by spamc


def test_spamc_symbols_and_ping(daemon, sample_model):
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--workers", "1")
    assert d.spamc("-y", data=SPAM.read_bytes()).stdout.decode().strip() == "NBTEXT_SPAM"
    assert d.spamc("-y", data=HAM.read_bytes()).stdout.decode().strip() == "NBTEXT_HAM"
    ping = d.spamc("-K", data=b"")
    assert ping.returncode == 0 and ping.stdout.decode().startswith("SPAMD/1.5 0")


def test_spamd_wire_format(daemon, sample_model):
    """What spamc never sends or never shows: the exact replies."""
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--workers", "1")
    msg = SPAM.read_bytes()
    assert raw(d.port, b"PING SPAMC/1.5\r\n\r\n") == b"SPAMD/1.5 0 PONG\r\n"
    assert raw(d.port, b"PING SPAMC/1.2\r\n", shut=False) == b"SPAMD/1.5 0 PONG\r\n"  # (no blank line before 1.5)
    check = raw(d.port, request("CHECK", msg))
    assert re.fullmatch(rb"SPAMD/1\.1 0 EX_OK\r\nSpam: True ; \d+\.\d / 5\.0\r\n\r\n", check)
    ifspam = raw(d.port, request("REPORT_IFSPAM", HAM.read_bytes()))
    assert re.fullmatch(rb"SPAMD/1\.1 0 EX_OK\r\nContent-length: 0\r\nSpam: No ; \d\.\d / 5\.0\r\n\r\n", ifspam)
    assert raw(d.port, request("SKIP", b"")) == b""
    assert raw(d.port, b"FROB SPAMC/1.5\r\n\r\n").startswith(b"SPAMD/1.0 76 Bad header line: FROB SPAMC/1.5")
    bad_length = raw(d.port, b"CHECK SPAMC/1.5\r\nContent-length: 12x\r\n\r\nabc")
    assert bad_length.startswith(b"SPAMD/1.0 76 ")
    short = raw(d.port, b"CHECK SPAMC/1.5\r\nContent-length: 100\r\n\r\nonly this")
    assert short == b"SPAMD/1.0 76 Bad header line: (Content-Length mismatch: Expected 100 bytes, got 9 bytes)\r\n"


@pytest.mark.slow
def test_verdicts_equal_classify_on_real_mail(daemon, tmp_path, request):
    """The same verdict and probability as classify, on real mail: a sample of the
    spamassassin-2002 split's test messages with a model of its training messages (conftest's
    spamassassin_model; the bundled sample's own messages where ../shared is absent)."""
    if (SHARED / "splits" / "spamassassin-2002.test").exists():
        names = set((SHARED / "splits" / "spamassassin-2002.test").read_text().split())
        test = [SHARED / "spamassassin-2002" / n for n in sorted(names)][::10]  # 65 of 650
        model = request.getfixturevalue("spamassassin_model")
    else:
        test = sorted((DATA / "corpus" / "spam").iterdir())[:20] + sorted((DATA / "corpus" / "ham").iterdir())[:20]
        model = tmp_path / "m.nbm"
        subprocess.run([*NBTEXT, "train", str(DATA / "corpus"), "-o", str(model), "-q"], check=True, timeout=600)
    d = daemon(model, "--spamd", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "2")
    scorer = FastScorer(str(model))  # (what classify runs)
    labels = set()
    for path in test:
        data = path.read_bytes()
        label, prob, unsure, _ = scorer.score(data)
        labels.add(label)
        assert d.spamc("-c", data=data).returncode == (1 if label == "spam" and not unsure else 0), path
        status, body = http_post(d.http_url + "/checkv2", data)
        got = json.loads(body)["nbtext"]
        assert (got["label"], got["probability"], got["unsure"]) == (label, prob, unsure), path
    assert labels == {"spam", "ham"}
    for path in test[:3] + test[-3:]:  # and against the command itself
        label, p = classify(model, path).stdout.decode().split()
        got = json.loads(http_post(d.http_url + "/checkv2", path.read_bytes())[1])["nbtext"]
        assert (got["label"], f"{got['probability']:.6f}") == (label, p)


@pytest.mark.parametrize("options", [[], ["--variant", "bernoulli"], ["--variant", "complement", "--tf", "--idf"],
                                     ["--variant", "complement", "--length-norm"], ["--no-layer"]])
def test_the_kernels_sums_are_fastscores_bit_for_bit(sample_model, tmp_path, options, run):
    """A message's sums through the compiled kernel (nbtext/_c/score.c: lookups, byte checks,
    cached weights, the additions) equal fastscore's own (counted_contributions, then _summed:
    the reference) to the bit, with the same unknown and known counts, on real mail and for
    each variant's feature values; the decision layer's d from the kernel's sums (Layer.values'
    additions in its order, in the same call) equals fastscore's (Layer.values) to the bit; and
    the daemon's verdicts on the kernel and on the pure-Python path (counting, index and sums in
    Python, which --explain takes) are the same, probabilities to rounding."""
    from conftest import implementation
    from nbtext.features import kernel
    from nbtext.serve.scoring import ServedModel

    with implementation("c"):
        if kernel.compiled() is None:
            pytest.skip("the compiled kernel is not built (no C compiler at install)")
    if (SHARED / "splits" / "spamassassin-2002.test").exists():
        names = sorted((SHARED / "splits" / "spamassassin-2002.test").read_text().split())
        messages = [(SHARED / "spamassassin-2002" / n).read_bytes() for n in names[::13]]
    else:
        messages = [f.read_bytes() for f in sorted((DATA / "corpus" / "spam").iterdir())[:25]
                    + sorted((DATA / "corpus" / "ham").iterdir())[:25]]
    messages += [b"", b"Subject: nothing known\n\nzzqx zzqx qqzx", SPAM.read_bytes() * 3]
    model = tmp_path / "m.nbm"
    if options:
        assert run("train", DATA / "corpus", "-o", model, "-q", *options).exit_code == 0
    else:
        model = sample_model
    with implementation("c"):
        fast = ServedModel(str(model))
    with implementation("python"):
        reference = ServedModel(str(model))
    assert (fast._sums is None) == ("--length-norm" in options)  # (a whole document's values: Python's)
    assert reference._sums is None
    assert (fast.layer is None) == ("--no-layer" in options)  # (on by default)
    for data in messages:
        with implementation("c"):
            bias, contrib, unknown, known, d = fast.counted_contributions(data)
            if fast._sums is not None:
                jll, *counted, d_kernel = fast.counted_sums(data)
                assert (jll, *counted, d_kernel) == (fast._summed(bias, contrib), unknown, known, d)
            got = fast.judge(data)
        with implementation("python"):
            assert reference.counted_contributions(data) == (bias, contrib, unknown, known, d)
            want = reference.judge(data)
            assert (want.label, want.unsure, want.spam) == (got.label, got.unsure, got.spam)
            assert (want.probability, want.p_positive) == pytest.approx((got.probability, got.p_positive), abs=1e-12)
    k = len(fast.classes)
    cached = [t for t in range(fast.n_features) if fast._weights[t * k] == fast._weights[t * k]]
    assert cached and all(fast._weights[t * k:(t + 1) * k].tolist() == FastScorer.token_weights(fast, t)
                          for t in cached)


# -- learning -----------------------------------------------------------------------------

def test_spamc_learn_and_forget_go_to_disk_through_the_ledger(daemon, sample_copy, sample_model):
    from nbtext import store

    d = daemon(sample_copy, "--spamd", "127.0.0.1:0", "--workers", "2")
    msg = HAM.read_bytes()
    before = store.load(str(sample_copy))
    r = d.spamc("-L", "spam", data=msg)
    assert (r.returncode, r.stdout) == (0, b"Message successfully un/learned\n")
    after = store.load(str(sample_copy))  # (acknowledged: on disk)
    assert digest("spam", msg) in after.ledger
    assert list(after.class_count) == [before.class_count[0], before.class_count[1] + 1]
    assert d.spamc("-L", "spam", data=msg).stdout == b"Message was already un/learned\n"
    assert d.spamc("-L", "ham", data=msg).stdout == b"Message successfully un/learned\n"  # (a correction)
    moved = store.load(str(sample_copy))
    assert digest("ham", msg) in moved.ledger and digest("spam", msg) not in moved.ledger
    assert list(moved.class_count) == [before.class_count[0] + 1, before.class_count[1]]
    assert d.spamc("-L", "forget", data=msg).stdout == b"Message successfully un/learned\n"
    assert d.spamc("-L", "forget", data=msg).stdout == b"Message was already un/learned\n"
    restored = store.load(str(sample_copy))
    assert restored.ledger == before.ledger and list(restored.class_count) == list(before.class_count)
    assert (restored.feature_count == before.feature_count).all()


def test_a_learn_the_model_file_cannot_take_is_an_error_not_already_learned(daemon, sample_copy):
    """A model file that cannot be written (here a worker limited to files of 1 KiB, as a full
    disk refuses a write) leaves the model as it was, and the client is told that nothing was
    learned: spamc -L exits 74 (EX_IOERR) where it once printed "Message was already
    un/learned" and exited 0, HTTP answers 500 where it answered 400 (a forget 404), and
    /metrics counts the learns as failed. A forget of a message never learned is still the
    client's error, and spamd's "already"."""
    import resource

    d = daemon(sample_copy, "--spamd", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "1")
    assert raw(d.port, b"PING SPAMC/1.5\r\n\r\n") == b"SPAMD/1.5 0 PONG\r\n"  # (the worker's loop runs)
    (worker,) = workers_of(d)
    resource.prlimit(worker, resource.RLIMIT_FSIZE, (1024, resource.RLIM_INFINITY))
    before = sample_copy.read_bytes()
    msg = HAM.read_bytes()
    r = d.spamc("-L", "spam", data=msg)
    assert (r.returncode, r.stdout) == (74, b"")
    reply = raw(d.port, request("TELL", msg, Message_class="spam", Set="local"))
    assert reply == f"SPAMD/1.0 74 cannot learn: {sample_copy}: cannot write: File too large\r\n".encode()
    assert raw(d.port, request("TELL", msg, Message_class="spam", Remove="local")) == spamd_ok()  # (never learned)
    status, body = http_post(d.http_url + "/learnspam", msg)
    assert (status, json.loads(body)) == (500, {"success": False, "error": f"{sample_copy}: cannot write: File too large"})
    assert http_post(d.http_url + "/forget", msg)[0] == 404
    assert sample_copy.read_bytes() == before
    text = urllib.request.urlopen(d.http_url + "/metrics", timeout=SAFETY).read().decode()
    assert metric(text, 'nbtext_learns_total{outcome="failed"}') == 3
    assert metric(text, 'nbtext_learns_total{outcome="refused"}') == 2


def test_a_model_locked_elsewhere_fails_learns_in_time_and_stalls_no_one(daemon, sample_copy):
    """Another process holds the model's lock (a long `nbtext learn` from cron, or a stuck
    one): a learn waits for it --timeout at most, then the client is told to try again
    (EX_TEMPFAIL 75, HTTP 503) and nothing is learned. Learns once waited for the lock with no
    limit, each holding its connection: at --max-connections of them the worker accepted
    nobody, not even a PING, until the lock was let go. Once it is, a learn goes through."""
    import fcntl

    from nbtext import store

    d = daemon(sample_copy, "--spamd", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "1",
               "--max-connections", "3", "--timeout", "1")
    lock = f"{sample_copy}.lock"
    msg = HAM.read_bytes()
    before = store.load(str(sample_copy))
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        tells = [socket.create_connection(("127.0.0.1", d.port), timeout=SAFETY) for _ in range(3)]  # (every place)
        for s in tells:
            s.sendall(request("TELL", msg, Message_class="spam", Set="local"))
            s.shutdown(socket.SHUT_WR)
        busy = f"cannot learn: {lock}: held by another process for 1 s; try again"
        for s in tells:
            assert read_all(s) == f"SPAMD/1.0 75 {busy}\r\n".encode()
            s.close()
        assert raw(d.port, b"PING SPAMC/1.5\r\n\r\n") == b"SPAMD/1.5 0 PONG\r\n"
        status, body = http_post(d.http_url + "/learnspam", msg)
        assert (status, json.loads(body)) == (503, {"success": False, "error": busy.split(": ", 1)[1]})
        assert digest("spam", msg) not in store.load(str(sample_copy)).ledger
    learned = raw(d.port, request("TELL", msg, Message_class="spam", Set="local"))
    assert learned == b"SPAMD/1.1 0 EX_OK\r\nDidSet: local\r\n\r\n"
    after = store.load(str(sample_copy))
    assert digest("spam", msg) in after.ledger and sum(after.class_count) == sum(before.class_count) + 1


def spamd_ok() -> bytes:
    from nbtext.serve.spamd import tell_reply

    return tell_reply(False, False)


@pytest.mark.slow
def test_kill_9_during_a_storm_of_learns_keeps_every_acknowledged_learn(daemon, sample_copy):
    """Clients learn messages as fast as they can; the daemon (parent and workers) is killed
    with SIGKILL meanwhile: the model file loads, and every learn that was acknowledged is in
    it (an acknowledgement follows the atomic save)."""
    from nbtext import store

    d = daemon(sample_copy, "--spamd", "127.0.0.1:0", "--workers", "2")
    messages = [f.read_bytes() for f in sorted((DATA / "corpus" / "ham").iterdir())[:40]]
    acknowledged, lock = [], threading.Lock()

    def learner(mine):
        for msg in mine:
            try:
                reply = raw(d.port, request("TELL", msg, Message_class="spam", Set="local"))
            except OSError:
                return
            if b"DidSet: local" in reply:
                with lock:
                    acknowledged.append(msg)

    threads = [threading.Thread(target=learner, args=(messages[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + SAFETY
    while len(acknowledged) < 3:  # (a storm under way: some learns acknowledged, more in flight)
        assert time.monotonic() < deadline
        time.sleep(0.01)
    for pid in [d.proc.pid, *workers_of(d)]:
        os.kill(pid, signal.SIGKILL)
    for t in threads:
        t.join(SAFETY)
    model = store.load(str(sample_copy))
    assert acknowledged and all(digest("spam", m) in model.ledger for m in acknowledged)


def test_learning_moves_the_verdict_and_a_replaced_model_is_read(daemon, sample_copy, tmp_path):
    """A learn changes the next check (every worker reads the file again); a model file
    replaced behind the daemon's back (a cron retrain) is used by the next check."""
    d = daemon(sample_copy, "--spamd", "127.0.0.1:0", "--workers", "2")
    flipped = tmp_path / "flipped"
    for src, dst in (("spam", "ham"), ("ham", "spam")):
        shutil.copytree(DATA / "corpus" / src, flipped / dst)
    retrained = tmp_path / "retrained.nbm"
    subprocess.run([*NBTEXT, "train", str(flipped), "-o", str(retrained), "-q"], check=True, timeout=600)
    assert d.spamc("-c", data=SPAM.read_bytes()).returncode == 1
    os.replace(retrained, sample_copy)
    for _ in range(4):  # (whichever worker answers)
        assert d.spamc("-c", data=SPAM.read_bytes()).returncode == 0


def test_sighup_reads_the_models_again(daemon, sample_model):
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "1")
    loads = metric(urllib.request.urlopen(d.http_url + "/metrics", timeout=SAFETY).read().decode(),
                   "nbtext_model_loads_total")
    start = len(d.lines)
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for("SIGHUP: reading the models again", start)
    deadline = time.monotonic() + SAFETY
    while True:  # (the worker gets the signal from the parent: wait for it to have read the model)
        assert d.spamc("-c", data=SPAM.read_bytes()).returncode == 1
        text = urllib.request.urlopen(d.http_url + "/metrics", timeout=SAFETY).read().decode()
        if metric(text, "nbtext_model_loads_total") == loads + 1:
            break
        assert time.monotonic() < deadline, text


def test_a_sighup_while_the_daemon_starts_is_a_reload_not_its_end(sample_model, tmp_path):
    """`systemctl reload` just after a start (Type=simple: started once forked) sends SIGHUP
    while the daemon sets up: it once ended the daemon, silently, as the default action (and
    systemd counts that end as clean: no restart). Here the daemon's stderr is a pipe already
    full, so it stops at its log lines, after it listens and before it forks: the SIGHUP comes
    then, and once the pipe is read the daemon goes on and answers."""
    sock = tmp_path / "spamd.sock"
    r, w = os.pipe()
    os.set_blocking(w, False)
    filler = 0
    for size in (65536, 4096, 1):
        while True:
            try:
                filler += os.write(w, b"." * size)
            except BlockingIOError:
                break
    os.set_blocking(w, True)
    proc = subprocess.Popen([*NBTEXT, "serve", "-m", str(sample_model), "--spamd", f"unix:{sock}", "--workers", "1"],
                            stderr=w, stdout=subprocess.DEVNULL)
    os.close(w)
    try:
        deadline = time.monotonic() + SAFETY
        while True:  # (listening: then it logs, and the log is full)
            assert proc.poll() is None and time.monotonic() < deadline
            try:
                with socket.socket(socket.AF_UNIX) as probe:
                    probe.connect(str(sock))
                break
            except OSError:
                time.sleep(0.01)
        proc.send_signal(signal.SIGHUP)
        with os.fdopen(r, "rb") as log:
            assert log.read(filler) == b"." * filler
            lines = [log.readline().decode() for _ in range(2)]
            assert lines[0].endswith(f"listening for spamd on unix:{sock}\n") and " 1 workers" in lines[1], \
                (lines, proc.poll())  # (-1: ended by the SIGHUP)
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(SAFETY)
                s.connect(str(sock))
                s.sendall(request("CHECK", SPAM.read_bytes()))
                s.shutdown(socket.SHUT_WR)
                assert read_all(s).startswith(b"SPAMD/1.1 0 EX_OK\r\nSpam: True")
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(SAFETY) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def running(pid: int) -> bool:
    """Whether a process runs (an orphan that ended and was not reaped yet is a zombie: not)."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_workers_stop_when_their_supervisor_is_killed(daemon, sample_model):
    """The parent killed outright (SIGKILL, the OOM killer): its workers once went on serving
    the port, unsupervised (no restart, no reload, no stop) and holding it against a new
    daemon's bind; each now sees that its parent is gone, finishes what it holds and exits."""
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--workers", "2")
    assert raw(d.port, b"PING SPAMC/1.5\r\n\r\n") == b"SPAMD/1.5 0 PONG\r\n"
    deadline = time.monotonic() + SAFETY
    while len(workers_of(d)) < 2:  # (one answered: the other may not be forked yet)
        assert time.monotonic() < deadline
        time.sleep(0.01)
    workers = workers_of(d)
    start = len(d.lines)
    d.proc.kill()  # (a worker just forked may not have begun its loop: it sees the parent gone too)
    d.proc.wait(SAFETY)
    deadline = time.monotonic() + SAFETY
    try:
        for pid in workers:
            while running(pid):
                assert time.monotonic() < deadline, f"worker {pid} still runs without its supervisor"
                time.sleep(0.01)
    finally:  # (a failure leaves no orphan behind)
        for pid in filter(running, workers):
            os.kill(pid, signal.SIGKILL)
    d.reader.join(SAFETY)  # (the workers' ends closed the log pipe: every line is read)
    assert len([line for line in d.lines[start:] if "the supervising process is gone: stopping" in line]) == 2
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", d.port), timeout=SAFETY).close()


def test_a_sigterm_as_a_worker_is_started_again_stops_the_daemon(daemon, sample_model):
    """A worker that dies in its first second is started again after a second; a SIGTERM that
    comes meanwhile is forwarded to the new worker just after its fork, before it has set its
    own handlers: it once ran the handler inherited from the parent (which marks the parent's
    state, in the child's copy) and was lost, the worker served on, and the daemon never
    ended. Signals are now held across the fork: the daemon ends, 0."""
    for _ in range(3):  # (the window is a few microseconds wide: a few tries)
        d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--workers", "1")
        deadline = time.monotonic() + SAFETY
        while not workers_of(d):
            assert time.monotonic() < deadline
        (worker,) = workers_of(d)
        start = len(d.lines)
        os.kill(worker, signal.SIGKILL)  # (within its first second: started again after a second)
        d.wait_for(rf"worker 0 \(pid {worker}\) ended \(killed by signal 9\); starting another", start)
        d.proc.send_signal(signal.SIGTERM)
        try:
            assert d.proc.wait(SAFETY) == 0
        finally:
            for pid in filter(running, workers_of(d) if d.proc.poll() is None else []):
                os.kill(pid, signal.SIGKILL)


def test_sigterm_finishes_the_request_in_flight(daemon, sample_model):
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "1")
    msg = request("CHECK", SPAM.read_bytes())
    s = socket.create_connection(("127.0.0.1", d.port), timeout=SAFETY)
    s.sendall(msg[:100])
    deadline = time.monotonic() + SAFETY
    while metric(urllib.request.urlopen(d.http_url + "/metrics", timeout=SAFETY).read().decode(),
                 "nbtext_connections") < 2:  # (this one and the /metrics one: accepted)
        assert time.monotonic() < deadline
    start = len(d.lines)
    d.proc.send_signal(signal.SIGTERM)
    d.wait_for("stopping: finishing the requests in flight", start)
    s.sendall(msg[100:])
    s.shutdown(socket.SHUT_WR)
    assert read_all(s).startswith(b"SPAMD/1.1 0 EX_OK\r\nSpam: True ; ")
    s.close()
    assert d.proc.wait(SAFETY) == 0
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", d.port), timeout=SAFETY).close()


# -- HTTP/JSON ----------------------------------------------------------------------------

def test_http_checkv2_learn_forget_ping_and_metrics(daemon, sample_copy):
    d = daemon(sample_copy, "--http", "127.0.0.1:0", "--workers", "2")
    status, body = http_post(d.http_url + "/checkv2", SPAM.read_bytes())
    got = json.loads(body)
    assert status == 200 and got["action"] == "add header" and got["required_score"] == 5.0
    assert got["score"] == round(10 * got["nbtext"]["p_spam"], 4) and got["is_skipped"] is False
    sym = got["symbols"]["NBTEXT_SPAM"]
    assert sym["name"] == "NBTEXT_SPAM" and sym["options"] and sym["score"] == got["score"]
    ham = json.loads(http_post(d.http_url + "/checkv2", HAM.read_bytes())[1])
    assert ham["action"] == "no action" and list(ham["symbols"]) == ["NBTEXT_HAM"]
    msg = HAM.read_bytes()
    assert http_post(d.http_url + "/learnham", msg) == (200, b'{"success": true}')
    assert http_post(d.http_url + "/learnham", msg)[0] == 208
    assert http_post(d.http_url + "/forget", msg) == (200, b'{"success": true}')
    assert http_post(d.http_url + "/forget", msg)[0] == 404
    with urllib.request.urlopen(d.http_url + "/ping", timeout=SAFETY) as r:
        assert r.read() == b"pong\n"
    text = urllib.request.urlopen(d.http_url + "/metrics", timeout=SAFETY).read().decode()
    assert metric(text, 'nbtext_requests_total{protocol="http",method="checkv2"}') == 2
    assert metric(text, 'nbtext_verdicts_total{verdict="spam"}') == 1
    assert metric(text, 'nbtext_verdicts_total{verdict="ham"}') == 1
    assert metric(text, 'nbtext_learns_total{outcome="ham"}') == 1
    assert metric(text, 'nbtext_learns_total{outcome="forget"}') == 1
    assert metric(text, 'nbtext_learns_total{outcome="already"}') == 1
    assert metric(text, 'nbtext_learns_total{outcome="refused"}') == 1
    assert metric(text, "nbtext_request_duration_seconds_count") == 7
    assert metric(text, 'nbtext_request_duration_seconds_bucket{le="+Inf"}') == 7
    assert metric(text, "nbtext_models_loaded") == 2  # (one per worker)
    assert http_post(d.http_url + "/nowhere", b"x")[0] == 404
    assert http_post(d.http_url + "/ping", b"x")[0] == 405


# -- bad clients --------------------------------------------------------------------------

def test_bad_clients_stall_nobody(daemon, sample_model):
    """60 idle connections (a third silent, the others a request begun and never finished: a
    slow client, garbage without an end), an oversized message and garbage bytes, all on one
    worker: each bad client that ends its request gets an error reply, and a well-formed CHECK
    from spamc is answered while the 60 are still open and before any of them is timed out
    (none has been sent anything: the daemon's answer to a timeout is a line), so the CHECK
    waited on none of them."""
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--workers", "1", "--max-size", "64K")
    idle = [socket.create_connection(("127.0.0.1", d.port), timeout=SAFETY) for _ in range(60)]
    begun = [b"", b"CHECK SPAMC/1.5\r\n", b"CHECK SPAMC/1.5\r\nContent-length: 500\r\n\r\nFrom: a@b",
             bytes(range(256)) * 2]
    for i, s in enumerate(idle):
        if begun[i % 4]:
            s.sendall(begun[i % 4])
    try:
        big = raw(d.port, request("CHECK", b"x" * (65 << 10)), shut=False)
        assert big == b"SPAMD/1.0 65 message too big: 66560 bytes, the limit is 65536 (--max-size)\r\n"
        garbage = raw(d.port, bytes(range(256)) * 4 + b"\r\n\r\n")
        assert garbage.startswith(b"SPAMD/1.0 76 Bad header line: ")
        unbounded = raw(d.port, b"CHECK SPAMC/1.5\r\n\r\n" + b"y" * (70 << 10))  # (no length: read to the end)
        assert unbounded.startswith(b"SPAMD/1.0 65 message too big")
        head = raw(d.port, b"CHECK SPAMC/1.5\r\nX-Filler: " + b"z" * (70 << 10))
        assert head.startswith(b"SPAMD/1.0 76 Bad header line: request head too long")
        assert d.spamc("-c", data=SPAM.read_bytes()).returncode == 1
        for s in idle:  # (still open, answered nothing: not one timed out before the CHECK)
            s.setblocking(False)
            with pytest.raises(BlockingIOError):
                s.recv(1)
    finally:
        for s in idle:
            s.close()
    assert d.proc.poll() is None


def test_a_silent_client_is_timed_out(daemon, sample_model):
    """A client that sends part of a request, or nothing, is answered with a timeout error after
    --timeout, and logged with the time it held its connection (one that sent nothing was
    logged "timeout in -0.0 ms", timed from a first byte that never came)."""
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "1",
               "--timeout", "0.5")
    with socket.create_connection(("127.0.0.1", d.port), timeout=SAFETY) as s:
        s.sendall(b"CHECK SPAMC/1.5\r\n")
        assert read_all(s) == b"SPAMD/1.0 79 Timeout: (0.5 second timeout reading input from client)\r\n"
    host, port = d.http.rsplit(":", 1)
    start = len(d.lines)
    with socket.create_connection((host, int(port)), timeout=SAFETY) as s:
        assert read_all(s).startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    line = d.wait_for(r"\]: http - from 127\.0\.0\.1 user=-: timeout in ", start)
    held = float(re.search(r"timeout in (\S+) ms, 0 bytes$", line).group(1))
    assert held >= 500, line  # (the daemon's own clock: it answers no sooner than --timeout)
    assert d.spamc("-c", data=HAM.read_bytes()).returncode == 0


def accept_queue(port: int) -> int | None:
    """Connections waiting in the accept queue of the listening TCP socket on ``port``
    (/proc/net/tcp's rx_queue of a socket in LISTEN), or None where /proc does not say."""
    try:
        lines = open("/proc/net/tcp").read().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        f = line.split()
        if f[1].endswith(f":{port:04X}") and f[3] == "0A":
            return int(f[4].split(":")[1], 16)
    return None


def test_connections_beyond_the_bound_wait_their_turn(daemon, sample_model):
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--workers", "1", "--max-connections", "2")
    if accept_queue(d.port) is None:
        pytest.skip("/proc/net/tcp does not show the listen queue")
    idle = [socket.create_connection(("127.0.0.1", d.port), timeout=SAFETY) for _ in range(2)]
    third = socket.create_connection(("127.0.0.1", d.port), timeout=SAFETY)
    third.sendall(request("CHECK", SPAM.read_bytes()))
    third.shutdown(socket.SHUT_WR)
    deadline = time.monotonic() + SAFETY
    while accept_queue(d.port) != 1:  # (the bound reached: the third waits in the listen queue)
        assert time.monotonic() < deadline, "the third connection was not left in the listen queue"
        time.sleep(0.01)
    idle[0].close()  # (a place: the third is accepted and answered)
    assert read_all(third).startswith(b"SPAMD/1.1 0 EX_OK\r\nSpam: True")
    third.close()
    idle[1].close()


def workers_of(d) -> list[int]:
    """The pids of a daemon's worker processes (its parent's children)."""
    return [int(p) for task in os.listdir(f"/proc/{d.proc.pid}/task")
            for p in open(f"/proc/{d.proc.pid}/task/{task}/children").read().split()]


def test_a_worker_out_of_file_descriptors_waits_instead_of_spinning(daemon, sample_model):
    """A worker whose accept fails for want of file descriptors leaves the client in the listen
    queue and stops accepting until a connection ends (or a second passes), with one line in the
    log: it once tried again at once, in a loop that held a core and wrote thousands of lines a
    second until a descriptor was free. Here it runs out with two idle clients held and four
    waiting; between its first line and its first timeout of an idle client (--timeout 1, the
    daemon's own clock) it tries at most twice more; then every client is answered."""
    import resource

    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--workers", "1", "--max-connections", "1000",
               "--timeout", "1")
    assert raw(d.port, b"PING SPAMC/1.5\r\n\r\n") == b"SPAMD/1.5 0 PONG\r\n"  # (the worker's loop runs)
    (worker,) = workers_of(d)
    _, hard = resource.prlimit(worker, resource.RLIMIT_NOFILE)
    resource.prlimit(worker, resource.RLIMIT_NOFILE, (len(os.listdir(f"/proc/{worker}/fd")) + 2, hard))
    start = len(d.lines)
    idle = [socket.create_connection(("127.0.0.1", d.port), timeout=SAFETY) for _ in range(6)]
    try:
        d.wait_for("cannot accept a connection: Too many open files", start)
        timed_out = d.wait_for(r"spamd - from 127\.0\.0\.1 user=-: timeout in ", start)
        before = d.lines[start:d.lines.index(timed_out)]
        assert len([line for line in before if "cannot accept" in line]) <= 3, len(before)
    finally:
        for s in idle:
            s.close()
    assert raw(d.port, request("CHECK", SPAM.read_bytes())).startswith(b"SPAMD/1.1 0 EX_OK\r\nSpam: True")


def test_malformed_http_gets_an_error(daemon, sample_model):
    d = daemon(sample_model, "--http", "127.0.0.1:0", "--workers", "1")
    host, port = d.http.rsplit(":", 1)
    assert raw(int(port), b"\x16\x03\x01\x02\x00garbage\r\n\r\n").startswith(b"HTTP/1.1 400 Bad Request")
    assert raw(int(port), b"POST /checkv2 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").startswith(
        b"HTTP/1.1 411 ")
    assert raw(int(port), b"POST /checkv2 HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n",
               shut=False).startswith(b"HTTP/1.1 413 ")
    with urllib.request.urlopen(d.http_url + "/ping", timeout=SAFETY) as r:
        assert r.read() == b"pong\n"


@pytest.mark.parametrize("length", ["\u00b2", "\uff15", "\u0663"])  # (², fullwidth 5, Arabic-Indic 3)
def test_a_content_length_of_unicode_digits_is_refused_by_both_protocols(daemon, sample_model, length):
    """A length is ASCII digits: one that Python's str.isdigit takes but int() cannot read (²)
    once ended the worker, and every connection it held, where the client gets a 400."""
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "1")
    host, port = d.http.rsplit(":", 1)
    head = f"POST /checkv2 HTTP/1.1\r\nContent-Length: {length}\r\n\r\n".encode()
    assert raw(int(port), head + b"hello") == http_error(400, "Content-Length is not a number")
    head = f"CHECK SPAMC/1.5\r\nContent-length: {length}\r\n\r\n".encode()
    assert raw(d.port, head + b"hello") == b"SPAMD/1.0 76 Bad header line: (Content-Length contains non-numeric bytes)\r\n"
    with urllib.request.urlopen(d.http_url + "/ping", timeout=SAFETY) as r:
        assert r.read() == b"pong\n"
    assert not [line for line in d.lines if "failed" in line or "ended" in line]


def test_two_different_content_lengths_are_refused_by_both_protocols(daemon, sample_model):
    """Which of two lengths ends the message is a guess (a proxy in front may guess the other):
    both protocols refuse the request; the same length twice is one length."""
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "1")
    host, port = d.http.rsplit(":", 1)
    msg = SPAM.read_bytes()
    two = b"POST /checkv2 HTTP/1.1\r\nContent-Length: %d\r\nContent-Length: 5\r\n\r\n" % len(msg) + msg
    assert raw(int(port), two) == http_error(400, f"Content-Length given twice, as {len(msg)} and 5")
    two = b"CHECK SPAMC/1.5\r\nContent-length: %d\r\nContent-length: 5\r\n\r\n" % len(msg) + msg
    assert raw(d.port, two) == b"SPAMD/1.0 76 Bad header line: (Content-Length given twice, as %d and 5)\r\n" % len(msg)
    same = b"CHECK SPAMC/1.5\r\nContent-length: %d\r\nContent-length: %d\r\n\r\n" % (len(msg), len(msg)) + msg
    assert raw(d.port, same) == raw(d.port, request("CHECK", msg))
    same = b"POST /checkv2 HTTP/1.1\r\nContent-Length: %d\r\nContent-Length: %d\r\n\r\n" % (len(msg), len(msg))
    assert raw(int(port), same + msg).startswith(b"HTTP/1.1 200 OK\r\n")


def http_error(status: int, text: str) -> bytes:
    from nbtext.serve.http import HttpError

    return HttpError(status, text).reply()


def own_address():
    """An address of this machine other than loopback, or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # (no packet is sent: the route picks the address)
            host = s.getsockname()[0]
    except OSError:
        return None
    return None if host.startswith("127.") else host


def test_a_client_outside_loopback_is_refused_unless_allowed(daemon, sample_model):
    host = own_address()
    if host is None:
        pytest.skip("this machine has no address but loopback")
    for allow, want in (((), b"SPAMD/1.0 77 Permission denied\r\n"), (("--allow", f"{host}/32"), b"SPAMD/1.1 0 EX_OK")):
        d = daemon(sample_model, "--spamd", "0.0.0.0:0", "--workers", "1", *allow)
        with socket.create_connection((host, d.port), timeout=SAFETY) as s:
            s.sendall(request("CHECK", SPAM.read_bytes()))
            s.shutdown(socket.SHUT_WR)
            assert read_all(s).startswith(want)
        assert raw(d.port, request("CHECK", SPAM.read_bytes())).startswith(b"SPAMD/1.1 0 EX_OK")  # (loopback)
        d.stop()


def test_only_loopback_unless_allowed(daemon, sample_model):
    from nbtext.serve.address import allowed, parse_networks

    assert allowed((), "127.0.0.1") and allowed((), "::1") and allowed((), "::ffff:127.0.0.5")
    assert not allowed((), "10.1.2.3") and not allowed((), "192.168.0.9")
    nets = parse_networks(["10.0.0.0/8,192.168.1.0/24"])
    assert allowed(nets, "10.1.2.3") and allowed(nets, "::ffff:192.168.1.7") and not allowed(nets, "192.168.2.1")


# -- per-user models ----------------------------------------------------------------------

def test_user_models_learn_and_take_over_after_min_learns(daemon, sample_model, tmp_path):
    users = tmp_path / "users"
    users.mkdir()
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--workers", "2", "--user-models", users,
               "--min-learns", "2")
    spams = sorted((DATA / "corpus" / "spam").iterdir())[:2]
    hams = sorted((DATA / "corpus" / "ham").iterdir())[:2]
    assert d.spamc("-L", "spam", data=spams[0].read_bytes(), user="alice").returncode == 0
    assert (users / "alice.nbm").exists() and not (users / "bob.nbm").exists()
    report = d.spamc("-R", data=SPAM.read_bytes(), user="alice").stdout.decode()
    assert "model global)" in report  # (one spam, no ham: too few learns)
    for f in spams[1:]:
        d.spamc("-L", "spam", data=f.read_bytes(), user="alice")
    for f in hams:
        d.spamc("-L", "ham", data=f.read_bytes(), user="alice")
    user_model = FastScorer(str(users / "alice.nbm"))
    assert list(user_model.class_count) == [2, 2]
    for path in (SPAM, HAM):
        report = d.spamc("-R", data=path.read_bytes(), user="alice").stdout.decode()
        assert "model user alice)" in report
        label, prob, _, _ = user_model.score(path.read_bytes())
        assert f"nbtext: {label} (P({label}) = {prob:.6f};" in report
    assert "model global)" in d.spamc("-R", data=SPAM.read_bytes(), user="bob").stdout.decode()
    assert (users / "alice.nbm").read_bytes() != sample_model.read_bytes()


def test_a_user_model_of_no_documents_leaves_the_global_model_scoring(daemon, sample_model, tmp_path, run):
    """With --min-learns 0 a user's model is used at once; one whose every message was forgotten
    has no documents, its scores NaN: the global model scores the user's mail then. A global model
    of no documents is refused at start."""
    users = tmp_path / "users"
    users.mkdir()
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--workers", "1", "--user-models", users,
               "--min-learns", "0")
    d.spamc("-L", "spam", data=SPAM.read_bytes(), user="alice")
    assert "model user alice)" in d.spamc("-R", data=SPAM.read_bytes(), user="alice").stdout.decode()
    d.spamc("-L", "forget", data=SPAM.read_bytes(), user="alice")
    assert list(FastScorer(str(users / "alice.nbm")).class_count) == [0, 0]
    report = d.spamc("-R", data=SPAM.read_bytes(), user="alice").stdout.decode()
    assert "model global)" in report and "nan" not in report.lower()
    r = run("serve", "-m", users / "alice.nbm", "--spamd", "127.0.0.1:0")
    assert (r.exit_code, r.stderr) == (1, f"nbtext: error: {users / 'alice.nbm'}: the model has learned no "
                                          "documents (each one was forgotten): nothing to score with; learn some first\n")


@pytest.mark.parametrize("user", ["../../etc/passwd", "..", ".hidden", "a/b", "a" * 200])
def test_user_names_cannot_leave_the_directory(daemon, sample_model, tmp_path, user):
    users = tmp_path / "users"
    users.mkdir()
    d = daemon(sample_model, "--spamd", "127.0.0.1:0", "--workers", "1", "--user-models", users)
    for method in ("CHECK", "TELL"):
        reply = raw(d.port, request(method, SPAM.read_bytes(), User=user, Message_class="spam", Set="local"))
        assert reply.startswith(b"SPAMD/1.0 67 "), reply
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["users"]


# -- the command line ---------------------------------------------------------------------

def test_serve_refuses_bad_options(sample_model, tmp_path, run):
    r = run("serve", "-m", sample_model)
    assert r.exit_code == 1 and "nbtext: error: serve needs a listener" in r.stderr
    r = run("serve", "-m", sample_model, "--spamd", "localhost")
    assert r.exit_code == 1 and "nbtext: error: --spamd: 'localhost' is not HOST:PORT or unix:PATH" in r.stderr
    r = run("serve", "-m", tmp_path / "none.nbm", "--spamd", "127.0.0.1:0")
    assert r.exit_code == 1 and "no such model file" in r.stderr
    r = run("serve", "-m", sample_model, "--spamd", "127.0.0.1:0", "--allow", "10.0.0.300/8")
    assert r.exit_code == 1 and "--allow: '10.0.0.300/8' is not an address or network" in r.stderr
    not_socket = tmp_path / "file"
    not_socket.write_text("keep me")
    r = run("serve", "-m", sample_model, "--spamd", f"unix:{not_socket}")
    assert r.exit_code == 1 and "exists and is not a socket" in r.stderr and not_socket.read_text() == "keep me"
    r = run("serve", "-m", sample_model, "--spamd", "127.0.0.1:0", "--max-size", "lots")
    assert r.exit_code == 1 and "nbtext: error: --max-size: 'lots' is not a positive size" in r.stderr
    r = run("serve", "-m", sample_model, "--spamd", "127.0.0.1:0", "--socket-mode", "99")
    assert r.exit_code == 1 and "nbtext: error: --socket-mode: '99' is not an octal file mode" in r.stderr


def test_unix_socket_with_mode(daemon, sample_model, tmp_path):
    path = tmp_path / "spamd.sock"
    d = daemon(sample_model, "--spamd", f"unix:{path}", "--workers", "1", "--socket-mode", "600")
    d.wait_for("listening for spamd on unix:")
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    r = subprocess.run([spamc_path(), "-U", str(path), "-c"], input=SPAM.read_bytes(), capture_output=True,
                       timeout=SAFETY)
    assert r.returncode == 1
    assert d.stop() == 0
    assert not path.exists()


def test_classify_does_not_import_the_server(sample_model):
    code = ("import sys, runpy; sys.argv = ['nbtext', 'classify', '-m', %r, %r]\n"
            "from nbtext.__main__ import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('nbtext.serve')), file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code % (str(sample_model), str(SPAM))], capture_output=True,
                       timeout=SAFETY)
    assert r.stderr.decode().strip().splitlines()[-1] == "[]"


# -- the kit: what each recipe of docs/serve.md runs ------------------------------------------

CONTRIB = DATA.parent / "contrib"


def test_recipes_spamc_commands(daemon, sample_copy, tmp_path):
    """The spamc commands the recipes run, against a live daemon: Postfix's content filter
    (spamc -e), spamass-milter and procmail/maildrop (PROCESS, X-Spam-Flag), Exim's `spam =`
    (its own REPORT SPAMC/1.2 exchange), Dovecot IMAPSieve's learn scripts (contrib/dovecot)."""
    from nbtext import store

    d = daemon(sample_copy, "--spamd", "127.0.0.1:0", "--workers", "1")
    spam, ham = SPAM.read_bytes(), HAM.read_bytes()
    # Postfix content filter: spamc pipes the processed message into sendmail (here: cat)
    piped = d.spamc("-e", "/bin/cat", data=spam)
    assert piped.returncode == 0 and piped.stdout == d.spamc(data=spam).stdout
    assert b"\nX-Spam-Flag: YES\n" in piped.stdout
    # procmail (:0fw | spamc, then * ^X-Spam-Flag: YES) and maildrop (xfilter "spamc")
    assert b"X-Spam-Flag: YES" not in d.spamc(data=ham).stdout
    assert d.spamc("-E", data=spam).returncode == 1 and d.spamc("-E", data=ham).returncode == 0
    # Exim's spam = condition: REPORT SPAMC/1.2 with User and Content-length; Exim reads
    # "Spam: %*s ; %lf / %lf" and calls the message spam when score >= threshold
    for msg, want in ((spam, True), (ham, False)):
        reply = raw(d.port, b"REPORT SPAMC/1.2\r\nUser: mail\r\nContent-length: %d\r\n\r\n" % len(msg) + msg)
        m = re.match(rb"SPAMD/\S+ 0 EX_OK\r\nSpam: \S+ ; ([-\d.]+) / ([-\d.]+)\r\n\r\n", reply)
        assert m and (float(m.group(1)) >= float(m.group(2))) == want
        assert b"\r\nfor\t" in reply  # (the report Exim puts in $spam_report)
    # Dovecot IMAPSieve: into Junk learns spam, out of Junk moves it to ham
    env = dict(os.environ, NBTEXT_SPAMC_ARGS=f"-d 127.0.0.1 -p {d.port}", PATH=os.environ["PATH"])
    spamc_path()
    r = subprocess.run([str(CONTRIB / "dovecot" / "learn-spam.sh"), "alice"], input=ham, env=env,
                       capture_output=True, timeout=SAFETY)
    assert r.stdout == b"Message successfully un/learned\n"
    assert digest("spam", ham) in store.load(str(sample_copy)).ledger
    r = subprocess.run([str(CONTRIB / "dovecot" / "learn-ham.sh"), "alice"], input=ham, env=env,
                       capture_output=True, timeout=SAFETY)
    assert r.stdout == b"Message successfully un/learned\n"
    ledger = store.load(str(sample_copy)).ledger
    assert digest("ham", ham) in ledger and digest("spam", ham) not in ledger


def test_systemd_unit_starts_the_daemon(daemon, sample_model, tmp_path):
    """The unit's ExecStart, with its paths and ports moved into a temporary directory."""
    unit = (CONTRIB / "nbtext-serve.service").read_text()
    exec_start = re.search(r"^ExecStart=(.*?[^\\])$", unit, re.M | re.S).group(1).replace("\\\n", " ")
    args = exec_start.split()[2:]  # (after /usr/local/bin/nbtext serve)
    assert args[:2] == ["-m", "/var/lib/nbtext/spam.nbm"]
    (tmp_path / "users").mkdir()
    moved = [a.replace("/var/lib/nbtext/spam.nbm", str(sample_model)).replace("/var/lib/nbtext", str(tmp_path))
             .replace("/run/nbtext", str(tmp_path)) for a in args[2:]]
    moved = [re.sub(r"^127\.0\.0\.1:\d+$", "127.0.0.1:0", a) for a in moved]
    d = daemon(sample_model, *moved)
    d.wait_for("listening for spamd on unix:")
    assert d.spamc("-c", data=SPAM.read_bytes()).returncode == 1
    assert oct((tmp_path / "spamd.sock").stat().st_mode & 0o777) == "0o666"


def test_the_prune_timers_service_prunes_what_the_daemon_serves(daemon, sample_copy, tmp_path):
    """contrib/nbtext-prune.service's command, its paths moved into a temporary directory, run
    while the daemon serves the model: the file is pruned under its lock, and the daemon's next
    verdict is classify's on the pruned model."""
    from nbtext import store
    from nbtext.nb.counts import day_of

    unit = (CONTRIB / "nbtext-prune.service").read_text()
    command = re.search(r"^ExecStart=/bin/sh -c '(.*?)'$", unit, re.M | re.S).group(1).replace("\\\n", " ")
    home = tmp_path / "home"
    (home / "users").mkdir(parents=True)
    model = home / "spam.nbm"
    m = store.load(str(sample_copy))
    m.counts.last_seen[::2] = day_of(time.time()) - 100  # (half the tokens last seen 100 days ago)
    store.save(m, str(model))
    d = daemon(model, "--spamd", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "1")
    before = json.loads(http_post(d.http_url + "/checkv2", SPAM.read_bytes())[1])["nbtext"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nbtext").write_text(f"#!/bin/sh\nexec {sys.executable} -m nbtext \"$@\"\n")
    (bin_dir / "nbtext").chmod(0o755)
    moved = command.replace("/var/lib/nbtext", str(home)).replace("/usr/local/bin/nbtext", str(bin_dir / "nbtext"))
    r = subprocess.run(["/bin/sh", "-c", moved], capture_output=True, text=True, timeout=SAFETY)
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"nbtext: took out [\d,]+ of [\d,]+ tokens; [\d,]+ remain in \S+\n", r.stderr)
    pruned = store.load(str(model))
    assert len(pruned.vocab) < len(m.vocab)
    label, prob, unsure, _ = FastScorer(str(model)).score(SPAM.read_bytes())  # (what classify runs)
    got = json.loads(http_post(d.http_url + "/checkv2", SPAM.read_bytes())[1])["nbtext"]
    assert (got["label"], got["probability"], got["unsure"]) == (label, prob, unsure)
    assert got["probability"] != before["probability"]  # (the pruned model's, not the one read at start)


# -- the benchmark ------------------------------------------------------------------------

@pytest.mark.slow
def test_bench_serve_compares_another_daemon_and_samples_memory(tmp_path, small_corpus):
    """scripts/bench_serve.py (make bench-serve), briefly on a stand-in for the shared split (the
    small sample as 'spamassassin-2002', a fifth of it held out: the messages it sends): a row
    per way, one for a daemon of another install (--compare; here this one's own console
    script), each daemon's memory, and the memory samples of --long. Its figures are not
    checked: they measure the machine."""
    (tmp_path / "splits").mkdir()
    (tmp_path / "spamassassin-2002").symlink_to(small_corpus)
    (tmp_path / "splits" / "spamassassin-2002.test").write_text("".join(
        f"{label}/{p.name}\n" for label in ("ham", "spam") for p in sorted((small_corpus / label).iterdir())[::5]))
    for program in ("spamc", "bogofilter"):  # (installed here, under the suite's lock: not by the script)
        debian_program(program, program)
    nbtext = os.path.join(os.path.dirname(sys.executable), "nbtext")
    r = subprocess.run([sys.executable, str(DATA.parent / "scripts" / "bench_serve.py"), "--shared", str(tmp_path),
                        "--requests", "20", "--per-process", "2", "--rounds", "1", "--concurrency", "2",
                        "--workers", "1", "--long", "20", "--compare", f"again={nbtext}"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    rows = [line.split(" | ")[0].lstrip("| ") for line in r.stdout.splitlines() if line.startswith("| serve")]
    assert rows[:2] == ["serve (spamd protocol, 32 connections)", "serve (spamd protocol, 32 connections), again"]
    assert "| way | messages a round | messages/s | p50 ms | p90 ms | p99 ms | vs bogofilter | CPU ms a message " \
           "| of which the daemon's |" in r.stdout
    assert "| way | 0-2 | 2-5 | 5-10 | 10-15 | 15-20 | 20-30 | 30-50 | 50-100 | over 100 |" in r.stdout
    shares = [line.split(" | ")[1:] for line in r.stdout.splitlines() if line.startswith("| serve (spamd protocol")]
    assert [round(sum(float(x.rstrip(" |")) for x in row)) for row in shares[-2:]] == [100, 100]
    assert re.search(r"Load average \(1 minute\) during the run: [\d.]+ to [\d.]+\.", r.stdout)
    assert r.stdout.count("Daemon memory, serve (spamd protocol") == 2
    assert re.search(r"Over 20 more messages through the protocol client, PSS \(MiB\) after: 2: [\d.]+, ", r.stdout)


def test_profile_serve_prints_each_ways_cpu(sample_model, small_corpus):
    """scripts/profile_serve.py: the CPU a message of counting and of each way to a verdict."""
    r = subprocess.run([sys.executable, str(DATA.parent / "scripts" / "profile_serve.py"), str(sample_model),
                        str(small_corpus / "spam"), "--rounds", "1"], capture_output=True, text=True, timeout=SAFETY)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "20 messages, best of 1 passes, CPU ms a message:"
    names = [re.fullmatch(r"  (.+): \d+\.\d{3}", line).group(1) for line in lines[1:]]
    assert names[0] == "counting alone" and names[-1] == "verdict, fastscore's sums in Python"
