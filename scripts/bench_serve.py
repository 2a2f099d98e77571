"""`make bench-serve`: `nbtext serve` under 32 concurrent connections, beside one bogofilter process
per message and one `nbtext classify` per message, on the same messages, in one run.

    python scripts/bench_serve.py [--shared ../shared/data] [--concurrency 32] [--requests 3000]
                                  [--rounds 3] [--workers N] [--long 100000]
                                  [--compare NAME=PATH/bin/nbtext ...]

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

Latency is a client's wall time per message (connect to reply; process start to exit), given
as p50, p90 and p99 and as a histogram of every message of every round. On a
machine shared with other work the wall-clock figures depend on the neighbours' load, so the
CPU time a message costs (all processes: clients, programs, daemon) is measured too, with the
messages a second it would allow on the machine's cores alone.
Rounds alternate the ways (each way once a round, in the reverse order every other round, so
that no way always follows the same one), and the table gives each way's median over rounds,
so that a neighbour's load on a shared machine falls on all of them alike.
Before the rounds each daemon is sent every message five times over by the clients, so that
each worker has met (and keeps the weights of) nearly every token of the messages: the rounds
measure a daemon in its steady state, not its first meeting of each token. The load average
(1 minute) is read before and after each way's round and its range printed: the clients share
the machine's cores with the daemon, and on a shared machine with the neighbours' work too.
Memory is the daemon's parent and workers' RSS and PSS summed (/proc), after the model is read
and after the rounds; --long N then sends N more messages through the protocol client and
samples it ten times on the way, to show whether memory stays flat.

--compare NAME=NBTEXT runs another daemon beside this checkout's, from another install's
`nbtext` (a checkout of main, or of a change to measure: before and after in one run), as one
more way of each round, on the same model and messages.

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


def tree(pid: int) -> list[int]:
    """A process and its descendants (the daemon's parent and workers)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def cpu_seconds(daemon_pid: int | None) -> float:
    """CPU seconds used so far by this process, its waited-for children (the programs started
    per message) and the daemon's processes: what a message costs whatever else runs."""
    own = os.times()
    return own.user + own.system + own.children_user + own.children_system + daemon_seconds(daemon_pid)


def daemon_seconds(daemon_pid: int | None) -> float:
    """CPU seconds used so far by the daemon's processes alone (0 for none)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in tree(daemon_pid) if daemon_pid else []:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
        except (OSError, IndexError, ValueError):
            pass
    return total


def memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of a process and its children (the workers), in KiB: the workers share the
    parent's pages (the model read before they fork), which RSS counts in each process and PSS
    divides among them."""
    rss = pss = 0
    for p in tree(pid):
        try:
            rss += int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{p}/status").read_text()).group(1))
            pss += int(re.search(r"Pss:\s+(\d+)", Path(f"/proc/{p}/smaps_rollup").read_text()).group(1))
        except (OSError, AttributeError):
            pass
    return rss, pss


def start_daemon(model: Path, workers: int, nbtext: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([nbtext, "serve", "-m", str(model), "-q",
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


HISTOGRAM = (2, 5, 10, 15, 20, 30, 50, 100)  # ms: the edges of the latency histogram's columns


def histogram(times: list[float]) -> list[float]:
    """The share (%) of ``times`` in each column of HISTOGRAM (the last: above its last edge)."""
    counts = [0] * (len(HISTOGRAM) + 1)
    for t in times:
        counts[next((k for k, edge in enumerate(HISTOGRAM) if t * 1e3 < edge), len(HISTOGRAM))] += 1
    return [100 * c / max(len(times), 1) for c in counts]


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
    ap.add_argument("--compare", action="append", default=[], metavar="NAME=NBTEXT",
                    help="also a daemon run by another install's nbtext executable, as a way named NAME")
    a = ap.parse_args()
    others = dict(c.split("=", 1) for c in a.compare)
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
        proc, port = start_daemon(model, a.workers, nbtext)
        daemons = {"serve (spamd protocol, 32 connections)": (proc, port)}
        try:
            for name, other in others.items():
                daemons[f"serve (spamd protocol, 32 connections), {name}"] = start_daemon(model, a.workers, other)
            for _, p in daemons.values():  # (warm: each worker meets nearly every message's tokens)
                clients(a.concurrency, 5 * len(messages), lambda i, p=p: check(p, messages[i % len(messages)]))
            rss_start = {w: memory_kib(d.pid) for w, (d, _) in daemons.items()}
            # (name: messages a round, one message, the daemon whose CPU is the way's, or None)
            ways = {w: (a.requests, lambda i, p=p: check(p, messages[i % len(messages)]), d)
                    for w, (d, p) in daemons.items()}
            if spamc:
                ways["serve (stock spamc -c per message)"] = (a.per_process, lambda i: subprocess.run(
                    [spamc, "-d", "127.0.0.1", "-p", str(port), "-c"], input=messages[i % len(messages)],
                    capture_output=True), proc)
            if bogo:
                ways["bogofilter per message"] = (a.per_process, lambda i: subprocess.run(
                    [bogo, "-d", str(db)], input=messages[i % len(messages)], capture_output=True), None)
            ways["nbtext classify per message"] = (a.per_process, lambda i: subprocess.run(
                [nbtext, "classify", "-m", str(model)], input=messages[i % len(messages)], capture_output=True),
                None)
            results: dict[str, list] = {w: [] for w in ways}
            every: dict[str, list] = {w: [] for w in ways}
            load = [os.getloadavg()[0]]
            for r in range(a.rounds):
                for name in list(ways)[::-1 if r % 2 else 1]:
                    n, one, daemon = ways[name]
                    pid = daemon.pid if daemon else None
                    cpu, own = cpu_seconds(pid), daemon_seconds(pid)
                    wall, times = clients(a.concurrency, n, one)
                    cpu, own = cpu_seconds(pid) - cpu, daemon_seconds(pid) - own
                    load.append(os.getloadavg()[0])
                    every[name] += times
                    results[name].append((n / wall, percentile(times, 0.5), percentile(times, 0.9),
                                          percentile(times, 0.99), cpu / n, own / n))
            rss_end = {w: memory_kib(d.pid) for w, (d, _) in daemons.items()}
            long_rss = []
            if a.long:
                step = max(a.long // 10, 1)
                done = 0
                while done < a.long:
                    clients(a.concurrency, step, lambda i: check(port, messages[(done + i) % len(messages)]))
                    done += step
                    long_rss.append((done, memory_kib(proc.pid)))
        finally:
            for d, _ in daemons.values():
                d.send_signal(signal.SIGTERM)
                d.wait()
    med = {w: tuple(statistics.median(r[k] for r in rs) for k in range(6)) for w, rs in results.items()}
    base = med.get("bogofilter per message")
    cores = os.cpu_count() or 1
    print(f"# nbtext serve: {a.concurrency} concurrent clients, {a.workers} workers, {cores} cores\n")
    print(f"Messages: {source}; {a.rounds} rounds, medians of the rounds. CPU: every process's CPU "
          f"time a message (the clients, the programs started, the daemon), and the messages a "
          f"second that it allows on {cores} cores of our own. Load average (1 minute) during the run: "
          f"{min(load):.1f} to {max(load):.1f}.\n")
    print("| way | messages a round | messages/s | p50 ms | p90 ms | p99 ms | vs bogofilter | CPU ms a message "
          f"| of which the daemon's | messages/s on {cores} idle cores | vs bogofilter |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w, (tput, p50, p90, p99, cpu, own) in med.items():
        ratio = f"{tput / base[0]:.2f}x" if base else "-"
        cpu_ratio = f"{base[4] / cpu:.2f}x" if base and cpu else "-"  # (0: below the clock's tick)
        print(f"| {w} | {ways[w][0]} | {tput:.0f} | {p50 * 1e3:.1f} | {p90 * 1e3:.1f} | {p99 * 1e3:.1f} | {ratio} | "
              f"{cpu * 1e3:.2f} | {f'{own * 1e3:.2f}' if ways[w][2] else '-'} | {f'{cores / cpu:.0f}' if cpu else '-'} "
              f"| {cpu_ratio} |")
    edges = ("0",) + HISTOGRAM
    print(f"\nLatency histogram, every message of the {a.rounds} rounds (% of messages, ms):\n")
    print("| way | " + " | ".join(f"{lo}-{hi}" for lo, hi in zip(edges, edges[1:])) + f" | over {HISTOGRAM[-1]} |")
    print("|---|" + "---:|" * (len(HISTOGRAM) + 1))
    for w, times in every.items():
        print(f"| {w} | " + " | ".join(f"{share:.1f}" for share in histogram(times)) + " |")
    mib = lambda m: f"RSS {m[0] / 1024:.1f} MiB, PSS {m[1] / 1024:.1f} MiB"  # noqa: E731
    for w in daemons:
        print(f"\nDaemon memory, {w} (parent and {a.workers} workers, summed): {mib(rss_start[w])} after "
              f"reading the model and the warm-up messages; {mib(rss_end[w])} after the rounds.")
    if long_rss:
        print(f"\nOver {a.long} more messages through the protocol client, PSS (MiB) after: "
              + ", ".join(f"{n}: {m[1] / 1024:.1f}" for n, m in long_rss))
    for note in notes:
        print(f"\nNote: {note}")


if __name__ == "__main__":
    main()
