"""`make bench-serve`: `nbtext serve` under 32 concurrent connections, beside one bogofilter process
per message and one `nbtext classify` per message, on the same messages, in one run.

    python scripts/bench_serve.py [--shared ../shared/data] [--concurrency 32] [--requests 3000]
                                  [--rounds 3] [--workers N] [--long 100000]

Messages: the 650 test messages of the spamassassin-2002 split (the bundled sample where
../shared is absent), cycled; nbtext's model and bogofilter's wordlist are trained on the
split's 2,600 training messages. Each way of filtering runs --concurrency clients at once, each
client sending one message after another (the next message of the shared list) until the
round's messages are done:

- serve, spamd protocol: a client keeps nothing between messages and speaks SPAMC/1.5 CHECK
  itself over a new TCP connection per message, as Exim's `spam =` condition and
  spamass-milter do from inside their own process;
- serve, stock spamc: `spamc -c` started per message, as a procmail or Sieve pipe does;
- bogofilter: `bogofilter -d WORDLIST` started per message (Debian package bogofilter);
- classify: `nbtext classify -m MODEL` started per message (the console script).

Latency is a client's wall time per message (connect to reply; process start to exit).
Rounds alternate the ways (each way once a round), and the table gives each way's median
over rounds, so that a neighbour's load on a shared machine falls on all of them alike.
RSS is the daemon's parent and workers' resident memory summed (/proc), after the model is
read and after the rounds; --long N then sends N more messages through the protocol client
and samples the RSS ten times on the way, to show whether memory stays flat.

Set-up installs spamc and bogofilter with apt-get when missing and run as root; a way whose
program is missing is skipped with a note.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from spamassassin_split import bogofilter_scores, materialize  # noqa: E402


def ensure(program: str, package: str, notes: list) -> str | None:
    found = shutil.which(program)
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-q", package], env=env, capture_output=True)
        found = shutil.which(program)
    if found is None:
        notes.append(f"{program}: not installed (apt-get install {package}), skipped")
    return found


def clients(concurrency: int, n: int, one) -> tuple[float, list[float]]:
    """(wall seconds, each message's seconds) of n calls one(i) by ``concurrency`` threads."""
    lock = threading.Lock()
    next_i = [0]
    times: list[float] = []

    def work():
        mine = []
        while True:
            with lock:
                i = next_i[0]
                next_i[0] += 1
            if i >= n:
                break
            t = time.perf_counter()
            one(i)
            mine.append(time.perf_counter() - t)
        with lock:
            times.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(concurrency)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, times


def check(port: int, message: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"CHECK SPAMC/1.5\r\nContent-length: %d\r\n\r\n" % len(message) + message)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(4096):
            out += chunk
    if not out.startswith(b"SPAMD/1.1 0 EX_OK"):
        raise RuntimeError(f"bad reply: {out[:80]!r}")
    return out


def rss_kib(pid: int) -> int:
    """Resident memory of a process and its children (the workers), in KiB."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            total += int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, AttributeError):
            pass
    return total


def start_daemon(model: Path, workers: int) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([str(ROOT / ".venv" / "bin" / "nbtext"), "serve", "-m", str(model), "-q",
                             "--spamd", "127.0.0.1:0", "--workers", str(workers),
                             "--max-connections", "1024"],
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"listening for spamd on 127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    else:
        raise RuntimeError("nbtext serve did not start")
    threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
    while True:  # (the workers are up once a PING is answered)
        try:
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(b"PING SPAMC/1.5\r\n\r\n")
                if s.recv(100).startswith(b"SPAMD/1.5 0 PONG"):
                    break
        except OSError:
            time.sleep(0.05)
    return proc, port


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--requests", type=int, default=3000, help="messages per round through the daemon")
    ap.add_argument("--per-process", type=int, default=650, help="messages per round for the per-process ways")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--long", type=int, default=0, help="then N messages more, sampling the daemon's RSS")
    a = ap.parse_args()
    notes: list[str] = []
    spamc = ensure("spamc", "spamc", notes)
    bogo = ensure("bogofilter", "bogofilter", notes)
    nbtext = str(ROOT / ".venv" / "bin" / "nbtext")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if (a.shared / "splits" / "spamassassin-2002.test").exists():
            train, test = materialize(a.shared, tmp / "split")
            source = "spamassassin-2002 split (2,600 training, 650 test messages)"
        else:
            train, test = ROOT / "data" / "corpus", ROOT / "data" / "corpus"
            source = "the bundled sample (trained and scored on the same messages)"
        files = sorted((test / "ham").iterdir()) + sorted((test / "spam").iterdir())
        messages = [f.read_bytes() for f in files]
        model = tmp / "sa.nbm"
        subprocess.run([nbtext, "train", str(train), "-o", str(model), "-q"], check=True)
        db = tmp / "bogo"
        if bogo:
            bogofilter_scores(bogo, sorted((train / "spam").iterdir()), sorted((train / "ham").iterdir()), [], tmp)
        proc, port = start_daemon(model, a.workers)
        try:
            for m in messages[:200]:  # (warm: every worker's weights for common tokens)
                check(port, m)
            rss_start = rss_kib(proc.pid)
            ways = {"serve (spamd protocol, 32 connections)":
                    (a.requests, lambda i: check(port, messages[i % len(messages)]))}
            if spamc:
                ways["serve (stock spamc -c per message)"] = (a.per_process, lambda i: subprocess.run(
                    [spamc, "-d", "127.0.0.1", "-p", str(port), "-c"], input=messages[i % len(messages)],
                    capture_output=True))
            if bogo:
                ways["bogofilter per message"] = (a.per_process, lambda i: subprocess.run(
                    [bogo, "-d", str(db)], input=messages[i % len(messages)], capture_output=True))
            ways["nbtext classify per message"] = (a.per_process, lambda i: subprocess.run(
                [nbtext, "classify", "-m", str(model)], input=messages[i % len(messages)], capture_output=True))
            results: dict[str, list] = {w: [] for w in ways}
            for _ in range(a.rounds):
                for name, (n, one) in ways.items():
                    wall, times = clients(a.concurrency, n, one)
                    results[name].append((n / wall, percentile(times, 0.5), percentile(times, 0.99)))
            rss_end = rss_kib(proc.pid)
            long_rss = []
            if a.long:
                step = max(a.long // 10, 1)
                done = 0
                while done < a.long:
                    clients(a.concurrency, step, lambda i: check(port, messages[(done + i) % len(messages)]))
                    done += step
                    long_rss.append((done, rss_kib(proc.pid)))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
    med = {w: tuple(statistics.median(r[k] for r in rs) for k in range(3)) for w, rs in results.items()}
    base = med.get("bogofilter per message", (None,))[0]
    print(f"# nbtext serve: {a.concurrency} concurrent clients, {a.workers} workers, {os.cpu_count()} cores\n")
    print(f"Messages: {source}; {a.rounds} rounds, medians of the rounds.\n")
    print("| way | messages a round | messages/s | p50 ms | p99 ms | throughput vs bogofilter |")
    print("|---|---:|---:|---:|---:|---:|")
    for w, (tput, p50, p99) in med.items():
        n = ways[w][0]
        ratio = f"{tput / base:.2f}x" if base else "-"
        print(f"| {w} | {n} | {tput:.0f} | {p50 * 1e3:.1f} | {p99 * 1e3:.1f} | {ratio} |")
    print(f"\nDaemon RSS (parent and {a.workers} workers): {rss_start / 1024:.1f} MiB after reading the model "
          f"and 200 warm-up messages, {rss_end / 1024:.1f} MiB after the rounds.")
    if long_rss:
        print(f"\nRSS over {a.long} more messages (MiB): "
              + ", ".join(f"{n}: {kib / 1024:.1f}" for n, kib in long_rss))
    for note in notes:
        print(f"\nNote: {note}")


if __name__ == "__main__":
    main()
