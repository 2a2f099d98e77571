"""The daemon's processes: a parent that owns the listening sockets and supervises, and N
workers forked from it, each an event loop over all the listeners (docs/serve.md says why).

A worker accepts from the shared listening sockets whenever it is free, reads requests without
blocking (a connection is a few buffers: an idle or slow client costs a file descriptor, never
the worker), bounds each request's head, body and time, answers a check at once (a few
milliseconds of scoring in the loop), and hands learning to a thread (nbtext.serve.models
.Learner) so that checks go on meanwhile. The parent restarts a worker that dies, forwards
SIGHUP (read every model again) and SIGTERM (stop accepting, finish the requests in flight,
exit), and removes its unix sockets when it ends.
"""
from __future__ import annotations

import errno
import os
import selectors
import signal
import socket
import sys
import time

from ..errors import NbtextError, shown
from . import http, spamd
from .address import allowed, check_socket_path
from .options import ServeOptions
from .metrics import Metrics
from .models import BadUser, Learn, Learner, Models, NotSaved

HEAD_MAX = 64 << 10   # bytes of a request's head (request line and header fields)
LINGER = 2.0          # seconds a connection is drained after its reply, so the reply is not reset
READ = 1 << 16
ACCEPTS = 8           # connections a worker takes from the listen queue between two looks at its others
ACCEPT_RETRY = 1.0    # seconds a worker out of file descriptors waits to accept again, unless a connection ends


def log_line(message: str) -> None:
    """One line on stderr, written whole (os.write of a line: the workers' lines never mix)."""
    try:
        os.write(2, f"nbtext serve[{os.getpid()}]: {shown(message)}\n".encode("utf-8", "backslashreplace"))
    except OSError:
        pass


class Conn:
    __slots__ = ("sock", "address", "peer", "buf", "scanned", "body_start", "req", "deadline", "out", "started",
                 "accepted", "stage", "user", "outcome", "method", "registered")

    def __init__(self, sock, address, peer, now, timeout):
        self.sock, self.address, self.peer = sock, address, peer
        self.buf = bytearray()
        self.scanned = 0
        self.body_start = -1
        self.req = None
        self.deadline = now + timeout
        self.out = b""
        self.started = None       # the first byte's time
        self.accepted = now       # (a connection that sent no byte is timed from here)
        self.stage = "read"       # read, learn, write, linger
        self.user = None
        self.outcome = ""
        self.method = "-"
        self.registered = 0


class Worker:
    def __init__(self, opts: ServeOptions, listeners: list, metrics: Metrics, models: Models, parent: int):
        self.opts, self.listeners, self.metrics, self.models = opts, listeners, metrics, models
        self.conns: dict[int, Conn] = {}
        self.sel = selectors.DefaultSelector()
        self.stopping = False
        # (the supervisor's pid, taken before the fork: a getppid() here, after a parent killed
        # meanwhile, would be its reaper's; once it is gone, nobody restarts or reloads this worker)
        self.parent = parent
        self.paused = False       # (not accepting: the listening sockets are out of the selector)
        self.resume_at = None     # (paused for want of file descriptors: when to try again)

    # -- the loop -----------------------------------------------------------------------
    def run(self) -> int:
        sel = self.sel
        for sock, address in self.listeners:
            sel.register(sock, selectors.EVENT_READ, ("listen", address))
        wake_r, wake_w = socket.socketpair()
        for s in (wake_r, wake_w):
            s.setblocking(False)
        sel.register(wake_r, selectors.EVENT_READ, ("wake", None))
        # (a learn waits for its model's lock as a request waits for its bytes, --timeout: a lock
        # held elsewhere must not keep connections, and at --max-connections the worker, forever)
        self.learner = Learner(lambda: self._poke(wake_w), self.opts.timeout)
        self.metrics.set("models_loaded", 1)  # (the global model, read by the parent)
        signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        signal.signal(signal.SIGHUP, lambda *_: self.models.reload())
        while True:
            if self.stopping and self._drained():
                break
            if not self.stopping and os.getppid() != self.parent:  # (checked at least once a second: _wait)
                # (its parent killed, SIGKILL or the OOM killer: a worker left alone would go on
                # serving the port with no one to reload, restart or stop it, and hold the port
                # against a new daemon's bind)
                log_line("the supervising process is gone: stopping")
                self._stop()
            for key, _ in sel.select(self._wait()):
                kind, address = key.data if isinstance(key.data, tuple) else ("conn", None)
                if kind == "listen":
                    self._accept(key.fileobj, address)
                elif kind == "wake":
                    try:
                        while wake_r.recv(4096):
                            pass
                    except BlockingIOError:
                        pass
                else:
                    self._ready(key.data)
            self._learned()
            self._expire()
            if self.resume_at is not None and time.monotonic() >= self.resume_at:
                self._resume()
        return 0

    @staticmethod
    def _poke(wake_w) -> None:
        try:
            wake_w.send(b"\0")
        except OSError:
            pass

    def _stop(self, *_) -> None:
        """SIGTERM: accept no more; the connections open are finished (each within --timeout)."""
        if not self.stopping:
            self.stopping = True
            for sock, _ in self.listeners:
                try:
                    self.sel.unregister(sock)
                except (KeyError, ValueError):
                    pass
                sock.close()

    def _drained(self) -> bool:
        return not self.conns and self.learner.pending == 0

    def _wait(self) -> float:
        now = time.monotonic()
        soonest = min((c.deadline for c in self.conns.values() if c.stage != "learn"), default=now + 1.0)
        if self.resume_at is not None:
            soonest = min(soonest, self.resume_at)
        return max(0.0, min(soonest - now, 1.0))

    def _expire(self) -> None:
        now = time.monotonic()
        for c in [c for c in self.conns.values() if c.deadline <= now and c.stage != "learn"]:
            if c.stage == "read":
                self.metrics.add("errors:timeout")
                seconds = self.opts.timeout
                err = (spamd.SpamdError("EX_TIMEOUT", f"Timeout: ({seconds:g} second timeout reading input from "
                                                      "client)").reply() if c.address.protocol == "spamd"
                       else http.HttpError(408, f"no whole request within {seconds:g} seconds").reply())
                try:
                    c.sock.send(err)
                except OSError:
                    pass
                c.outcome = "timeout"
                self._log(c)
            self._close(c)

    # -- connections --------------------------------------------------------------------
    def _accept(self, lsock, address) -> None:
        """Take up to ACCEPTS connections from the listen queue, each read at once: a request
        already there whole is answered before the next is taken, so a worker holds no
        connection it has not started on while the other workers could (the queue is the
        workers' one first-come first-served line), and such a connection never enters the
        selector."""
        for _ in range(ACCEPTS):
            if len(self.conns) >= self.opts.max_connections:
                return self._pause()  # (the bound reached: new clients wait in the listen queue)
            try:
                sock, peer = lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    # (the client stays in the listen queue, and the listening socket stays
                    # readable: accepting again at once fails again, a loop that holds the CPU
                    # and writes this line thousands of times a second)
                    log_line(f"cannot accept a connection: {e.strerror}; accepting again when a "
                             f"connection ends, or in {ACCEPT_RETRY:g} s")
                    self._pause(time.monotonic() + ACCEPT_RETRY)
                return
            sock.setblocking(False)
            host = peer[0] if isinstance(peer, tuple) else "local"
            now = time.monotonic()
            c = Conn(sock, address, host, now, self.opts.timeout)
            fd = sock.fileno()
            self.conns[fd] = c
            self.metrics.set("connections", len(self.conns))
            if address.family != socket.AF_UNIX and not allowed(self.opts.networks, host):
                self.metrics.add("errors:refused")
                c.outcome = "refused: not an allowed address (--allow)"
                self._reply(c, spamd.SpamdError("EX_NOPERM", "Permission denied").reply()
                            if address.protocol == "spamd" else http.HttpError(403, "not allowed").reply())
                continue
            self._ready(c)
            if c.stage == "read" and self.conns.get(fd) is c:  # (more to come: the selector says when)
                self._watch(c, selectors.EVENT_READ)

    def _pause(self, until: float | None = None) -> None:
        """Stop accepting: until a connection ends, or (``until``) a time to try again."""
        if not self.paused:
            self.paused = True
            for s, _ in self.listeners:
                self.sel.unregister(s)
        self.resume_at = until

    def _resume(self) -> None:
        self.resume_at = None
        if self.paused and not self.stopping:
            self.paused = False
            for s, address in self.listeners:
                self.sel.register(s, selectors.EVENT_READ, ("listen", address))

    def _watch(self, c: Conn, events: int) -> None:
        if c.registered == events:
            return
        if c.registered and events:
            self.sel.modify(c.sock, events, c)
        elif events:
            self.sel.register(c.sock, events, c)
        else:
            self.sel.unregister(c.sock)
        c.registered = events

    def _close(self, c: Conn) -> None:
        self._watch(c, 0)
        self.conns.pop(c.sock.fileno(), None)
        try:
            c.sock.close()
        except OSError:
            pass
        self.metrics.set("connections", len(self.conns))
        if self.paused and len(self.conns) < self.opts.max_connections:
            self._resume()  # (a place, and a file descriptor, free)

    def _ready(self, c: Conn) -> None:
        try:
            if c.stage == "write":
                self._send(c)
            elif c.stage == "linger":
                if not c.sock.recv(READ):
                    self._close(c)
            elif c.stage == "read":
                self._read(c)
        except (ConnectionError, OSError):
            self._close(c)

    def _read(self, c: Conn) -> None:
        try:
            data = c.sock.recv(READ)
        except BlockingIOError:  # (a connection just accepted whose request is still on its way)
            return
        if c.started is None:
            c.started = time.monotonic()
        if data:
            c.buf += data
        proto = spamd if c.address.protocol == "spamd" else http
        try:
            if c.req is None:
                end = proto.head_end(c.buf, c.scanned)
                c.scanned = len(c.buf)
                if end < 0:
                    if len(c.buf) > HEAD_MAX:
                        raise self._error(c, "malformed", "request head too long")
                    if not data:
                        if not c.buf:
                            return self._close(c)  # (connected and left: nothing to answer)
                        raise self._error(c, "malformed", "(EOF during headers)")
                    return
                if end > HEAD_MAX:
                    raise self._error(c, "malformed", "request head too long")
                c.req = proto.parse_head(bytes(c.buf[:end]))
                c.method = c.req.method if c.address.protocol == "spamd" else c.req.route
                c.user = c.req.user
                c.body_start = end
                if c.req.has_body and c.req.length is not None and c.req.length > self.opts.max_size:
                    raise self._error(c, "too_big", f"message too big: {c.req.length} bytes, the limit is "
                                                    f"{self.opts.max_size} (--max-size)")
            body = len(c.buf) - c.body_start
            if not c.req.has_body:
                return self._answer(c)
            if c.req.length is not None:
                if body >= c.req.length:
                    return self._answer(c)
                if not data:
                    raise self._error(c, "malformed", f"(Content-Length mismatch: Expected {c.req.length} bytes, "
                                                      f"got {body} bytes)")
            else:
                if body > self.opts.max_size:
                    raise self._error(c, "too_big", f"message too big: more than {self.opts.max_size} bytes, "
                                                    "the limit (--max-size)")
                if not data:
                    return self._answer(c)
        except (spamd.SpamdError, http.HttpError) as e:
            if not getattr(e, "counted", False):
                self.metrics.add("errors:malformed")
            c.outcome = f"error: {e.text}"
            self._reply(c, e.reply())

    def _error(self, c: Conn, reason: str, text: str):
        self.metrics.add(f"errors:{reason}")
        if c.address.protocol == "spamd":
            code = "EX_DATAERR" if reason == "too_big" else "EX_PROTOCOL"
            err = spamd.SpamdError(code, text if reason == "too_big" else f"Bad header line: {text}")
        else:
            err = http.HttpError(413 if reason == "too_big" else 400, text)
        err.counted = True
        return err

    def _reply(self, c: Conn, out: bytes) -> None:
        c.out = out
        c.stage = "write"
        c.deadline = time.monotonic() + self.opts.timeout
        self._log(c)  # (before the reply goes: a client that has read it finds its request in /metrics)
        try:
            self._send(c)
        except OSError:  # (the client is gone)
            self._close(c)

    def _send(self, c: Conn) -> None:
        """Send what is left of the reply (a reply is tried at once: most fit the socket's
        buffer, and then the connection is never watched for writing), then end it."""
        while c.out:
            try:
                n = c.sock.send(c.out)
            except BlockingIOError:
                return self._watch(c, selectors.EVENT_WRITE)
            c.out = c.out[n:]
        try:
            c.sock.shutdown(socket.SHUT_WR)
            if not c.sock.recv(READ):  # (the client has ended its side: nothing to drain)
                return self._close(c)
        except BlockingIOError:
            pass
        except OSError:
            return self._close(c)
        c.stage = "linger"
        c.deadline = time.monotonic() + LINGER
        self._watch(c, selectors.EVENT_READ)

    def _log(self, c: Conn) -> None:
        elapsed = time.monotonic() - (c.accepted if c.started is None else c.started)
        if c.req is not None and c.outcome and not c.outcome.startswith(("error", "timeout", "refused")):
            self.metrics.observe(elapsed)
        if self.opts.log:
            size = len(c.buf) - max(c.body_start, 0)
            log_line(f"{c.address.protocol} {c.method} from {c.peer} user={c.user or '-'}: {c.outcome} "
                     f"in {elapsed * 1e3:.1f} ms, {size} bytes")

    # -- answers ------------------------------------------------------------------------
    def _answer(self, c: Conn) -> None:
        body = bytes(c.buf[c.body_start:c.body_start + c.req.length] if c.req.length is not None
                     else c.buf[c.body_start:])
        c.req.body = body
        try:
            out = self._spamd(c) if c.address.protocol == "spamd" else self._http(c)
        except (spamd.SpamdError, http.HttpError) as e:
            c.outcome = f"error: {e.text}"
            out = e.reply()
        except NbtextError as e:  # (a user name that names no model: the model's own errors are logged)
            c.outcome = f"error: {e}"
            out = (spamd.SpamdError("EX_NOUSER" if isinstance(e, BadUser) else "EX_SOFTWARE", str(e)).reply()
                   if c.address.protocol == "spamd" else http.HttpError(400, str(e)).reply())
        except Exception as e:  # (a bug: this client gets an error, the others go on)
            self.metrics.add("errors:internal")
            c.outcome = f"error: internal error: {e.__class__.__name__}: {e}"
            out = (spamd.SpamdError("EX_SOFTWARE", "internal error").reply() if c.address.protocol == "spamd"
                   else http.HttpError(500, "internal error").reply())
        if out is None:  # (learning: answered when the learner is done)
            c.stage = "learn"
            self._watch(c, 0)
            return
        if out is _CLOSE:
            self._log(c)
            return self._close(c)
        self._reply(c, out)

    def _count(self, c: Conn, kind: str) -> None:
        self.metrics.add(f"requests:{c.address.protocol}:{kind}")

    def _judge(self, c: Conn, explain: int):
        model, name = self.models.for_user(c.req.user)
        v = model.judge(c.req.body, explain)
        self.metrics.add(f"verdict:{'unsure' if v.unsure else 'spam' if v.spam else 'ham'}")
        c.outcome = f"{v.shown_label} {v.score:.1f}/{v.required:.1f} ({name})"
        return v, name

    def _spamd(self, c: Conn):
        req = c.req
        self._count(c, req.method)
        if req.method == "PING":
            c.outcome = "pong"
            return spamd.PONG
        if req.method == "SKIP":
            c.outcome = "skipped"
            return _CLOSE
        if req.method == "TELL":
            if not (req.set_local or req.remove_local):
                c.outcome = "nothing to do"
                return spamd.tell_reply(False, False)
            return self._learn(c, req.message_class, req.remove_local)
        explain = spamd.EXPLAINED if req.method in ("REPORT", "REPORT_IFSPAM") else 0
        v, name = self._judge(c, explain)
        processed = None
        if req.method in ("PROCESS", "HEADERS"):
            from ..quick import with_headers

            processed = with_headers(req.body, v.shown_label, v.probability, v.p_positive,
                                     spamd.spamassassin_headers(v))
        return spamd.check_reply(req, v, name, processed)

    def _http(self, c: Conn):
        req = c.req
        self._count(c, req.route)
        if req.route == "ping":
            c.outcome = "pong"
            return http.reply(200, "pong\n", "text/plain")
        if req.route == "metrics":
            c.outcome = "metrics"
            return http.reply(200, self.metrics.text(), "text/plain; version=0.0.4")
        if req.route == "checkv2":
            t = time.monotonic()
            v, name = self._judge(c, spamd.EXPLAINED)
            return http.check_reply(v, name, time.monotonic() - t)
        label = {"learnspam": "spam", "learnham": "ham"}.get(req.route)
        return self._learn(c, label, req.route == "forget")

    def _learn(self, c: Conn, label: str | None, forget: bool):
        user_path = self.models.user_path(c.req.user)
        main = self.models.main.path
        self.learner.submit(Learn(user_path or main, c.req.body, label, forget,
                                  template=main if user_path else None, token=c))
        return None

    def _learned(self) -> None:
        while True:
            try:
                job = self.learner.finished.get_nowait()
            except Exception:
                return
            self.learner.pending -= 1
            c: Conn = job.token
            if c.sock.fileno() not in self.conns:
                continue
            r = job.result
            did = isinstance(r, tuple) and r[0] > 0
            if isinstance(r, tuple):
                outcome = "forget" if job.forget else job.label
                self.metrics.add(f"learn:{outcome if did else 'already'}")
                c.outcome = (("forgot" if job.forget else f"learned as {job.label}") if did
                             else ("already forgotten" if job.forget else f"already learned as {job.label}"))
            else:
                self.metrics.add(f"learn:{'refused' if isinstance(r, NbtextError) else 'failed'}")
                c.outcome = f"not {'forgotten' if job.forget else 'learned'}: {r}"
            if c.address.protocol == "spamd":
                # (a refused learn is spamd's "already": the model is as the client asks)
                if isinstance(r, NbtextError) or isinstance(r, tuple):
                    out = spamd.tell_reply(did and not job.forget, did and job.forget)
                else:  # (spamc exits non-zero: a Sieve script or a user learns that it was not learned)
                    code = ("EX_TEMPFAIL" if getattr(r, "busy", False) else "EX_IOERR") if isinstance(r, NotSaved) \
                        else "EX_SOFTWARE"
                    out = spamd.SpamdError(code, f"cannot learn: {r}").reply()
            elif did:
                out = http.reply(200, {"success": True})
            elif isinstance(r, tuple):
                out = http.reply(208, {"success": False, "error": c.outcome})
            elif isinstance(r, NbtextError):
                out = http.reply(404 if job.forget else 400, {"success": False, "error": str(r)})
            else:
                out = http.reply(503 if getattr(r, "busy", False) else 500, {"success": False, "error": str(r)})
            self._reply(c, out)


_CLOSE = b""  # (a reply of nothing: the connection is closed, as SKIP asks)


def bind(address) -> socket.socket:
    """A listening socket for an Address (non-blocking), or NbtextError naming it."""
    try:
        if address.family == socket.AF_UNIX:
            check_socket_path(address.where)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(address.where)
        else:
            sock = socket.socket(address.family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if address.family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address.where)
        sock.listen(1024)
    except OSError as e:
        raise NbtextError(f"--{address.protocol} {address.given}: cannot listen: {e.strerror}") from None
    sock.setblocking(False)
    return sock


def serve(opts: ServeOptions) -> int:
    """Run the daemon until SIGTERM or SIGINT; the exit status."""
    metrics = Metrics(opts.workers)
    models = Models(opts.model, opts.user_models, opts.min_learns, log_line, metrics)
    # (a SIGHUP before the supervisor's handler is set, `systemctl reload` just after a start,
    # asks the workers to read the models again: its default action would end the daemon, and
    # systemd counts an end by SIGHUP as clean, so Restart=on-failure would not start it again)
    signal.signal(signal.SIGHUP, lambda *_: models.reload())
    model = models.load()  # (a model that cannot be read is an error before anything listens)
    if opts.user_models is not None and not os.path.isdir(opts.user_models):
        raise NbtextError(f"--user-models: {opts.user_models} is not a directory")
    listeners = []
    try:
        for address in opts.listeners:
            sock = bind(address)
            listeners.append((sock, address))
            if address.family == socket.AF_UNIX and opts.socket_mode is not None:
                os.chmod(address.where, opts.socket_mode)
        for sock, address in listeners:
            log_line(f"listening for {address.protocol} on {address.shown(sock)}")
        log_line(f"model {opts.model}: {int(sum(model.class_count))} documents learned "
                 f"({', '.join(f'{c} {n}' for c, n in model.learned.items())}); {opts.workers} workers")
        return _supervise(opts, listeners, metrics, models)
    finally:
        for sock, address in listeners:
            sock.close()
            if address.family == socket.AF_UNIX:
                try:
                    os.unlink(address.where)
                except OSError:
                    pass


def _supervise(opts, listeners, metrics, models) -> int:
    children: dict[int, tuple[int, float]] = {}  # pid -> (worker number, started)
    state = {"stop": False, "hup": False}
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)

    def spawn(n: int) -> None:
        # (signals held across the fork: one sent to a new worker before it has set its own
        # handlers would run the parent's, which mark the parent's state in the child's copy,
        # and be lost; a SIGTERM so lost left a worker, and the daemon, running)
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
        pid, parent = -1, os.getpid()
        try:
            pid = os.fork()
        finally:
            if pid != 0:  # (the parent, or a fork that failed)
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
        if pid == 0:
            status = 70
            try:
                signal.set_wakeup_fd(-1)
                os.close(wake_r)
                os.close(wake_w)
                for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
                    signal.signal(sig, signal.SIG_DFL)  # (a SIGTERM held until now ends it: it holds nothing yet)
                signal.signal(signal.SIGHUP, lambda *_: models.reload())  # (never the default: the end)
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
                metrics.use_row(n)
                status = Worker(opts, listeners, metrics, models, parent).run()
            except BaseException as e:  # (a worker ends here, whatever happens: never in the parent's code)
                log_line(f"worker {n} failed: {e.__class__.__name__}: {e}")
            finally:
                try:
                    sys.stderr.flush()
                finally:
                    os._exit(status)
        children[pid] = (n, time.monotonic())

    def on_stop(*_):
        state["stop"] = True

    def on_hup(*_):
        state["hup"] = True

    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGHUP, on_hup)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    for n in range(opts.workers):
        spawn(n)
    stopping = False
    while children:
        if state["stop"] and not stopping:
            stopping = True
            log_line("stopping: finishing the requests in flight")
            for sock, _ in listeners:
                sock.close()  # (the workers close theirs: then a new client is refused, not queued)
            for pid in children:
                _signal(pid, signal.SIGTERM)
        if state["hup"]:
            state["hup"] = False
            log_line("SIGHUP: reading the models again")
            for pid in children:
                _signal(pid, signal.SIGHUP)
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                children.clear()
                break
            if pid == 0:
                break
            n, started = children.pop(pid, (None, 0.0))
            if n is None:
                continue
            if not stopping:
                log_line(f"worker {n} (pid {pid}) ended ({_status(status)}); starting another")
                if time.monotonic() - started < 1.0:
                    time.sleep(1.0)  # (one that dies at once is not restarted in a loop)
                spawn(n)
        if children:
            try:
                import select

                select.select([wake_r], [], [], 1.0)
                while os.read(wake_r, 4096):
                    pass
            except (BlockingIOError, InterruptedError):
                pass
    log_line("stopped")
    return 0


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.WEXITSTATUS(status)}"
