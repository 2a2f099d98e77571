"""The models a worker scores with, kept in step with their files, and learning into them.

A model file is looked at (stat) before each message it scores: replaced (a cron retrain, a
CLI `nbtext learn`, another worker's learn: an atomic save is a new file) or changed, it is
read again; one that cannot be read keeps the model in use and is logged. SIGHUP reads every
file again.

With --user-models DIR, `User: alice` picks DIR/alice.nbm once it has learned at least
--min-learns messages of each class (as rspamd's min_learns and SpamAssassin's
bayes_min_spam_num / bayes_min_ham_num); until then the global model scores alice's mail.
Learning (TELL, /learnspam, ...) goes through nbtext.operations, as `nbtext learn` does: the
model's lock, its ledger, an atomic save; a user's model is made by its first learn, empty,
with the global model's settings, classes and decision.
"""
from __future__ import annotations

import os
import queue
import threading
from collections import OrderedDict
from dataclasses import dataclass

from ..errors import NbtextError
from ..nb.weights import check_scorable
from .address import user_model_path
from .scoring import ServedModel

WARM_UP = b"From: a@example.com\nSubject: warm up\nContent-Type: text/html\n\n<p>warm up http://example.com/</p>\n"
USERS_KEPT = 64  # users' models held per worker (the least recently used is let go)


class BadUser(NbtextError):
    """A user name that cannot name a model file in --user-models' directory."""


class NotSaved(Exception):
    """A learn the model file could not take: its lock, reading it or writing it failed (a full
    disk, a read-only directory, a damaged file), or (``busy``) another process held the lock
    longer than --timeout. The daemon's failure, not the client's, which a learn refused for
    what it asks (a forget of a message never learned) is."""

    def __init__(self, text: str, busy: bool = False):
        super().__init__(text)
        self.busy = busy


class Watched:
    """A model file and the model read from it, read again when the file changes."""

    def __init__(self, path: str, log, metrics, keep_when_gone: bool = True):
        self.path, self.log, self.metrics = path, log, metrics
        self.model: ServedModel | None = None
        self.identity = None
        self.keep_when_gone = keep_when_gone  # (the global model: a file removed keeps it in use)

    def current(self, force: bool = False) -> ServedModel | None:
        try:
            st = os.stat(self.path)
            identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            identity = None
        if identity != self.identity or force:
            self.identity = identity
            if identity is not None:
                self.load()
            elif not self.keep_when_gone and self.model is not None:
                self.model = None  # (a user's model removed: the global model scores again)
                self.metrics.add("models_loaded", -1)
        return self.model

    def load(self) -> None:
        try:
            model = ServedModel(self.path)
        except NbtextError as e:
            self.log(f"cannot read the model, keeping the one in use: {e}")
            return
        except MemoryError:
            self.log(f"{self.path}: out of memory reading the model, keeping the one in use")
            return
        if self.model is None:
            self.metrics.add("models_loaded")
        self.model = model
        self.metrics.add("model_loads")


class Models:
    """The global model and the users' models of one worker."""

    def __init__(self, path: str, user_dir: str | None, min_learns: int, log, metrics):
        self.user_dir, self.min_learns, self.log, self.metrics = user_dir, min_learns, log, metrics
        self.main = Watched(path, log, metrics)
        self.users: OrderedDict[str, Watched] = OrderedDict()
        self.stale = False

    def load(self) -> ServedModel:
        """The global model, read now (at start: NbtextError when it cannot be)."""
        self.main.model = ServedModel(self.main.path)
        check_scorable(self.main.model.class_count, self.main.path)
        self.main.model.judge(WARM_UP)  # (the tokenizer's modules imported before the workers fork)
        st = os.stat(self.main.path)
        self.main.identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        self.metrics.add("model_loads")
        return self.main.model

    def reload(self) -> None:
        """SIGHUP: every model is read again before it next scores."""
        self.stale = True

    def user_path(self, user: str | None) -> str | None:
        """DIR/USER.nbm; NbtextError for a name that could name a path outside DIR; None
        without --user-models or without a user."""
        if self.user_dir is None or not user:
            return None
        path = user_model_path(self.user_dir, user)
        if path is None:
            raise BadUser(f"user name {user!r} cannot name a model (letters, digits and _ . @ + - only)")
        return path

    def for_user(self, user: str | None) -> tuple[ServedModel, str]:
        """(the model that scores this user's mail, its name for logs and reports)."""
        force, self.stale = self.stale, False
        if force:
            for w in self.users.values():
                w.identity = None
        main = self.main.current(force)
        path = self.user_path(user)
        if path is None:
            return main, "global"
        w = self.users.pop(path, None) or Watched(path, self.log, self.metrics, keep_when_gone=False)
        self.users[path] = w
        while len(self.users) > USERS_KEPT:
            _, gone = self.users.popitem(last=False)
            if gone.model is not None:
                self.metrics.add("models_loaded", -1)
        m = w.current()
        # (a model of no documents, every one forgotten, scores NaN: the global model scores then)
        if (m is not None and m.classes == main.classes and all(n >= self.min_learns for n in m.class_count)
                and sum(m.class_count)):
            return m, f"user {user}"
        return main, "global"


@dataclass
class Learn:
    """One learn or forget: the message, the class (None: forget as whatever it was learned as),
    which model file, and, once done, (changed, skipped), the NbtextError that refused it, or
    the NotSaved (or, from a bug, other exception) that failed it."""
    path: str
    data: bytes
    label: str | None
    forget: bool
    template: str | None = None   # the global model: a user's model is made from it
    token: object = None          # the connection waiting for the answer
    result: object = None


class Learner:
    """A thread that learns, so that a worker goes on scoring meanwhile: it takes every learn
    queued, and does each model's in one load and one save (nbtext.operations), then hands
    them back through ``finished`` and a byte on ``wake`` (the worker's event loop)."""

    def __init__(self, wake, wait: float):
        self.wait = wait  # (seconds a batch waits for its model's lock: then each job is NotSaved, busy)
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.finished: queue.SimpleQueue = queue.SimpleQueue()
        self.wake = wake
        self.pending = 0
        self.thread = threading.Thread(target=self._run, name="nbtext-learner", daemon=True)
        self.thread.start()

    def submit(self, job: Learn) -> None:
        self.pending += 1
        self.jobs.put(job)

    def _run(self) -> None:
        while True:
            batch = [self.jobs.get()]
            while True:
                try:
                    batch.append(self.jobs.get_nowait())
                except queue.Empty:
                    break
            by_path: dict[str, list[Learn]] = {}
            for job in batch:
                by_path.setdefault(job.path, []).append(job)
            for path, jobs in by_path.items():
                self._learn(path, jobs, self.wait)
            for job in batch:
                self.finished.put(job)
            self.wake()

    @staticmethod
    def _learn(path: str, jobs: list[Learn], wait: float) -> None:
        from ..operations import learn_each_in_place
        from ..read import Document
        from ..store.atomic import Busy

        template = jobs[0].template
        try:
            results = learn_each_in_place(path, [([Document("message", j.data)], j.label, j.forget) for j in jobs],
                                          new_model=(lambda: empty_like(template)) if template else None,
                                          relearn=True, wait=wait)
        except NbtextError as e:  # (the lock, the load or the save: nothing learned, and not for the client's asking)
            results = [NotSaved(str(e), busy=isinstance(e, Busy))] * len(jobs)
        except Exception as e:  # (a bug: each waiting client gets an error reply, the worker goes on)
            results = [RuntimeError(f"{e.__class__.__name__}: {e}")] * len(jobs)
        for job, result in zip(jobs, results):
            job.result = result


def empty_like(path: str):
    """A model with no documents and the settings, classes and decision of the model at path."""
    from ..model import Model
    from ..nb.decision import Decision
    from ..store.codec import meta
    from ..store.container import read_container

    header, _ = read_container(path, header_only=True)
    tokenizer, settings, classes, _, decision = meta(header)
    model = Model.empty(tokenizer, settings, classes)
    model.decision = Decision.from_dict(decision.to_dict())
    return model
