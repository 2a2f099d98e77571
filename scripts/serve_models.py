"""Which server model for `nbtext serve`: three ways of serving spamd's CHECK, measured side by side.

    python scripts/serve_models.py [--shared ../shared/data] [--workers 2] [--requests 2000]

- prefork: spamd's own model. N forked children share the listening socket; each accepts one
  connection, reads its request with blocking reads (a 30 s timeout, as spamd's), answers,
  and only then accepts the next.
- asyncio+pool: one asyncio process reads every connection and sends each message to a
  ProcessPoolExecutor of N processes (each holding the model), the message and the verdict
  crossing a pipe.
- nbtext serve: what nbtext ships (nbtext.serve.server): N forked workers, each an event loop
  (selectors) over the shared listening socket that reads every connection without blocking
  and scores in the loop.

Each answers CHECK with the same scorer (nbtext.serve.scoring.ServedModel) and the same reply
(nbtext.serve.spamd). Figures: throughput and p50/p99 latency of 32 concurrent clients, each
sending CHECKs one after another (bench_serve.py's client); and the time a CHECK takes to be
answered while 60 other connections are open and silent (a client that connected and stalls,
or a scanner), up to a 5 s cap.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_serve import check, clients, percentile, start_daemon  # noqa: E402
from spamassassin_split import materialize  # noqa: E402

from nbtext.serve import spamd  # noqa: E402
from nbtext.serve.scoring import ServedModel  # noqa: E402

CAP = 5.0


def answer(model, head: bytes, body: bytes) -> bytes:
    req = spamd.parse_head(head)
    req.body = body
    return spamd.check_reply(req, model.judge(body), "global")


def read_request(sock) -> tuple[bytes, bytes]:
    buf = b""
    while (end := spamd.head_end(buf)) < 0:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError
        buf += chunk
    length = spamd.parse_head(buf[:end]).length or 0
    while len(buf) - end < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError
        buf += chunk
    return buf[:end], buf[end:end + length]


def prefork(model_path: str, workers: int) -> tuple[list[int], int]:
    model = ServedModel(model_path)
    model.judge(b"Subject: warm\n\nwarm\n")
    lsock = socket.create_server(("127.0.0.1", 0), backlog=1024)
    pids = []
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            while True:
                conn, _ = lsock.accept()
                conn.settimeout(30)
                try:
                    head, body = read_request(conn)
                    conn.sendall(answer(model, head, body))
                except (OSError, ConnectionError):
                    pass
                conn.close()
        pids.append(pid)
    port = lsock.getsockname()[1]
    lsock.close()
    return pids, port


_MODEL = None


def _pool_init(path):
    global _MODEL
    _MODEL = ServedModel(path)


def _pool_judge(head, body):
    return answer(_MODEL, head, body)


def asyncio_pool(model_path: str, workers: int) -> tuple[list[int], int]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)  # (its pool's processes too: the whole group is ended)
        os.close(r)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        pool = ProcessPoolExecutor(workers, initializer=_pool_init, initargs=(model_path,))
        list(pool.map(_pool_judge, [b"CHECK SPAMC/1.5\r\n\r\n"] * workers, [b""] * workers))

        async def handle(reader, writer):
            try:
                buf = b""
                while (end := spamd.head_end(buf)) < 0:
                    chunk = await reader.read(65536)
                    if not chunk:
                        return
                    buf += chunk
                length = spamd.parse_head(buf[:end]).length or 0
                while len(buf) - end < length:
                    chunk = await reader.read(65536)
                    if not chunk:
                        return
                    buf += chunk
                loop = asyncio.get_running_loop()
                writer.write(await loop.run_in_executor(pool, _pool_judge, buf[:end], buf[end:end + length]))
                await writer.drain()
            finally:
                writer.close()

        async def main():
            server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
            os.write(w, str(server.sockets[0].getsockname()[1]).encode())
            os.close(w)
            await server.serve_forever()

        asyncio.run(main())
        os._exit(0)
    os.close(w)
    port = int(os.read(r, 100))
    os.close(r)
    return [pid], port


def stalled_check(port: int, message: bytes) -> float:
    """Seconds to answer a CHECK while 60 silent connections are open (CAP: not answered)."""
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]
    try:
        t = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port), timeout=CAP) as s:
            s.sendall(b"CHECK SPAMC/1.5\r\nContent-length: %d\r\n\r\n" % len(message) + message)
            s.shutdown(socket.SHUT_WR)
            try:
                s.recv(100)
            except socket.timeout:
                return CAP
        return time.perf_counter() - t
    finally:
        for s in idle:
            s.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if (a.shared / "splits" / "spamassassin-2002.test").exists():
            train, test = materialize(a.shared, tmp / "split")
        else:
            train = test = ROOT / "data" / "corpus"
        messages = [f.read_bytes() for f in sorted((test / "ham").iterdir()) + sorted((test / "spam").iterdir())]
        model = tmp / "sa.nbm"
        subprocess.run([sys.executable, "-m", "nbtext", "train", str(train), "-o", str(model), "-q"], check=True)
        servers = {}
        procs = []
        pids, servers["prefork (spamd's model)"] = prefork(str(model), a.workers)
        procs += pids
        pids, servers["asyncio + process pool"] = asyncio_pool(str(model), a.workers)
        procs += pids
        daemon, servers["nbtext serve (event loop per worker)"] = start_daemon(model, a.workers)
        results = {name: [] for name in servers}
        try:
            for port in servers.values():
                for m in messages[:100]:
                    check(port, m)
            for _ in range(a.rounds):
                for name, port in servers.items():
                    wall, times = clients(32, a.requests, lambda i: check(port, messages[i % len(messages)]))
                    results[name].append((a.requests / wall, percentile(times, 0.5), percentile(times, 0.99),
                                          stalled_check(port, messages[0])))
        finally:
            for pid in procs:
                try:
                    os.killpg(pid, signal.SIGKILL)  # (asyncio's: its group, the pool with it)
                except ProcessLookupError:
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            daemon.send_signal(signal.SIGTERM)
            daemon.wait()
    print(f"# Server models: {a.workers} workers, {os.cpu_count()} cores, 32 clients, "
          f"{a.requests} CHECKs a round, medians of {a.rounds} rounds\n")
    print("| server model | CHECKs/s | p50 ms | p99 ms | a CHECK beside 60 silent connections |")
    print("|---|---:|---:|---:|---:|")
    for name, rs in results.items():
        tput, p50, p99, stall = (statistics.median(r[k] for r in rs) for k in range(4))
        stalled = f"not answered in {CAP:g} s" if stall >= CAP else f"{stall * 1e3:.1f} ms"
        print(f"| {name} | {tput:.0f} | {p50 * 1e3:.1f} | {p99 * 1e3:.1f} | {stalled} |")


if __name__ == "__main__":
    main()
