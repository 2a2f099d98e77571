"""The Dask engine: train, predict and cv with partitions of the input read, tokenized and counted
on a Dask cluster's workers, and the result equal to local training, count for count.

The spine (docs/architecture.md) is what makes this a map and a reduce:

- map (workers): a partition (a list of files, or a byte range of a line file or an mbox) is read with
  read's own readers, cut into chunks and counted as on one machine (batch.chunks.counted,
  batch.train.chunk_sums), and its chunks reduced there by local training's reduce
  (batch.train.Reduction) into the partition's Sums: its tokens in first-seen order (bytes and
  64-bit keys, no ids), its sums over them, its labels and ledger digests;
- reduce (the client): the partitions' Sums, in input order, added by the same Reduction as
  local training's chunks: tokens appended in first-seen order (the whole input's, as local
  training numbers them), counts added at their ids. Counts of whole numbers add exactly in
  float64 whatever the grouping, so the sums are local training's bits.
- calibration's sample: the partitions' rows sent with their Sums and kept by the same
  Reservoir; or, on a large input, the reservoir keys drawn on the client after the reduce from
  the same seeded generator in input order (one key per document, as batch.train.Reservoir
  draws them), the documents with the smallest keys chosen, and only those documents' rows
  counted again on the workers (a second, small map): the sample local training keeps, row
  for row.

Table models plug in by their statistics: a map function from a partition to its mergeable
statistics, and a tree of joins on the workers (Cluster.reduced). They do so (the end of this
file): byte ranges of CSV/TSV tables read by nbtext.table.read's reader on the workers into
TableStats, whose Gaussian statistics are exact sums (nbtext.table.exact), so that the tree of
combines gives local training's bits whatever the partitions. Inputs must be paths
the workers can read (a shared filesystem); the model file too, for predict.
"""
from __future__ import annotations

import os
import stat
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from ..errors import NbtextError, SettingError, no_documents, shown
from ..read import Document, LineOptions

INSTALL = "pip install 'nbtext[dask]'"
CONNECT_TIMEOUT = 10      # seconds to reach a scheduler before giving up
PART_BYTES = 16 << 20     # input a partition holds at most: a byte range of a line file, or files
PART_FILES = 4000         # files a partition holds at most


# -- the cluster --------------------------------------------------------------------------------

def _distributed():
    try:
        import distributed
    except ImportError:
        raise NbtextError(f"--engine dask needs Dask, an optional extra: {INSTALL}") from None
    return distributed


def address_problem(address: str) -> str | None:
    """What makes ``address`` no scheduler address Dask can connect to (None: nothing): an
    unknown scheme, no port, a port out of range, no host. SCHEME:// may be left out (tcp)."""
    from distributed.comm.addressing import parse_address
    from distributed.comm.registry import backends

    scheme, location = parse_address(address)
    if scheme not in backends:
        return f"unknown scheme '{scheme}'"
    if scheme in ("inproc", "ucx"):
        return None  # (addresses of their own kind)
    host, colon, port = location.rpartition(":")
    if not colon:
        return "no port"
    if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        return f"port '{port}' is not a number from 1 to 65535"
    if not host.strip("[]"):
        return "no host"
    return None


def _bounded_client(distributed):
    """distributed.Client whose whole start, connection, handshake and first exchange, is
    bounded by its ``timeout``: Client bounds the connection and the exchange, but waits for
    the handshake's answer without end (a server that accepts and never answers hung it)."""

    class Client(distributed.Client):
        def start(self, **kwargs):
            try:
                super().start(callback_timeout=self._timeout, **kwargs)
            except BaseException:
                self.close()  # (its loop thread and the half-open connection)
                raise

    return Client


def _not_interrupted_before_it_began(record) -> bool:
    """A filter for tornado's log (distributed's event loop): False for distributed's own failure
    to cancel a call that Ctrl-C interrupted before the call began (distributed.utils.sync's
    ``cancel`` reads ``future`` before it is set: a NameError, logged with its traceback beside
    `nbtext: interrupted`), True for every other record."""
    exc, tb = record.exc_info[1:] if record.exc_info else (None, None)
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return not (isinstance(exc, NameError) and "future" in str(exc) and tb is not None
                and tb.tb_frame.f_code.co_name == "cancel")


class Cluster:
    """A Dask client: on the scheduler at ``address``, or on a LocalCluster sized to this
    machine's cores (its dashboard's address said on ``say``)."""

    def __init__(self, address: str | None = None, workers: int | None = None, say: Callable = None,
                 timeout: float = CONNECT_TIMEOUT):
        distributed = _distributed()
        import logging

        tornado_log = logging.getLogger("tornado.application")
        if _not_interrupted_before_it_began not in tornado_log.filters:
            tornado_log.addFilter(_not_interrupted_before_it_began)
        self.local = None
        if address:
            problem = address_problem(address)
            if problem:
                raise NbtextError(f"{shown(address)}: not a Dask scheduler address ({problem}); "
                                  f"give tcp://HOST:PORT")
            import asyncio

            try:
                self.client = _bounded_client(distributed)(address, timeout=timeout)
            except (OSError, TimeoutError, asyncio.TimeoutError, ValueError) as e:  # (asyncio's: its own class before 3.11)
                raise NbtextError(f"{address}: cannot reach the Dask scheduler within {timeout:g} s "
                                  f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'no answer'})"
                                  ) from None
            except Exception as e:  # something answered that does not speak Dask's protocol (a
                # web proxy's reply read as a frame length asked numpy for exabytes: MemoryError)
                raise NbtextError(f"{address}: not a Dask scheduler ({type(e).__name__} while connecting)") from None
        else:
            from .chunks import default_jobs, interrupts_held

            # (its worker processes, started meanwhile, are in the terminal's process group: Ctrl-C
            # left ignored in them, as in train's own pool, so that only this process has one to
            # handle, and closes them; else each printed its traceback, asyncio's or an import's)
            from multiprocessing import resource_tracker

            resource_tracker.ensure_running()  # (see interrupts_held: before its window, not in it)
            with interrupts_held(loky=False):
                self.local = distributed.LocalCluster(n_workers=workers or default_jobs(), threads_per_worker=1,
                                                      processes=True, dashboard_address=":0",
                                                      silence_logs=logging.ERROR)
            self.client = distributed.Client(self.local)
            if say:
                say(f"nbtext: Dask LocalCluster of {len(self.local.workers)} workers; dashboard "
                    f"{self.local.dashboard_link}")

    def workers(self) -> int:
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def close(self):
        self.client.close()
        if self.local is not None:
            self.local.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def reduced(self, fn, parts: list, args: tuple, join, progress=None):
        """fn(part, *args) for each part on the workers, combined pairwise in the parts' order
        by ``join`` on the workers too: the client receives one result (None: no parts).
        ``progress`` is called with each part's number of documents (or rows) as it is counted."""
        distributed = _distributed()
        client, tag = self.client, uuid.uuid4().hex  # (keys of their own: a run's keys are cancelled at its end)
        level = [client.submit(fn, p, *args, key=f"nbtext-{fn.__name__}-{i}-{tag}", pure=False)
                 for i, p in enumerate(parts)]
        counted = [client.submit(_documents_of, f, key=f"nbtext-documents-{i}-{tag}", pure=False)
                   for i, f in enumerate(level)] if progress else []
        depth = 0
        while len(level) > 1:
            depth += 1
            paired = [client.submit(join, level[i], level[i + 1], key=f"nbtext-combine-{depth}-{i}-{tag}",
                                    pure=False) for i in range(0, len(level) - 1, 2)]
            level = paired + level[len(level) - len(level) % 2:]
        if not level:
            return None
        final = level[0]
        del level
        try:
            for f in distributed.as_completed(counted):
                progress(f.result())
            return final.result()
        finally:
            client.cancel([final, *counted])

    def ordered(self, fn, parts: list, *args) -> Iterator:
        """fn(part, *args) for each part on the workers; results in the parts' order, each as
        soon as it and those before it are done (the reduce goes on while workers count)."""
        tag = uuid.uuid4().hex
        futures = [self.client.submit(fn, p, *args, key=f"nbtext-{fn.__name__}-{i}-{tag}", pure=False)
                   for i, p in enumerate(parts)]
        try:
            for f in futures:
                yield f.result()
                f.release()
        finally:
            self.client.cancel(futures)


# -- partitions: where the workers read -----------------------------------------------------------

class Part:
    """Documents a worker reads: files (path, one message, label), or the lines of a line file
    that start in a byte range (``before`` lines before it: ids are FILE:LINE as locally)."""

    def __init__(self, files=None, path=None, fmt=None, opts=None, labelled=True, start=0, size=None,
                 before=0, whole=False, label=None, mbox=False):
        self.files, self.path, self.fmt, self.opts = files, path, fmt, opts
        self.labelled, self.start, self.size, self.before = labelled, start, size, before
        self.whole, self.label, self.mbox = whole, label, mbox
        self.lines = None  # (a line range's, once number_lines counted them)

    def bytes(self) -> int:
        """The input bytes it reads (for progress: a byte range's size, else its files' sizes)."""
        if self.files is None and self.size is not None:
            return self.size
        return sum(_file_size(f[0]) for f in self.files) if self.files is not None else _file_size(self.path)

    def documents(self, on_error) -> Iterator[Document]:
        from .. import read

        if self.files is not None:
            for path, single, label in self.files:
                for doc in read.file_documents(path, single, on_error):
                    if label is not None:
                        doc.label = label
                    yield doc
        elif self.mbox:  # (a byte range of an mbox file, from a message's From_ line)
            docs = read.mbox_range_documents(self.path, self.start, self.size, self.before)
            for doc in read._guarded(docs, on_error):
                doc.label = self.label
                yield doc
        elif self.whole:  # (a gzip or CSV line file: read by one worker)
            docs = read.line_documents(self.path, self.opts, self.labelled)
            yield from read._guarded(docs, on_error)
        else:
            docs = read.line_range_documents(self.path, self.fmt, self.opts, self.labelled, self.start,
                                             self.size, self.before)
            yield from read._guarded(docs, on_error)


def check_reachable(path: str):
    """Refuse what the workers cannot read: standard input, and a pipe or device named by a
    path (`<(...)`: the client would read its header and the workers nothing)."""
    if path == "-":
        raise NbtextError("-: --engine dask reads files its workers can reach, not standard input")
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # (the readers report it)
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise NbtextError(f"{path}: --engine dask reads files its workers can reach, not a pipe or device")


PART_MIN = 1 << 18  # (a partition of at least a chunk's input: 256 KiB)


def _sized(files: Iterable[tuple]) -> list[tuple]:
    out = []
    for f in files:
        try:
            out.append((f, os.path.getsize(f[0])))
        except OSError:
            out.append((f, 0))  # (the worker reports it)
    return out


def _file_parts(sized: list[tuple], part_bytes: int) -> Iterator[Part]:
    """Consecutive files, about part_bytes a partition; an mbox file larger than that in byte
    ranges of whole messages (read.mbox_starts)."""
    from .. import read

    group, held = [], 0
    for f, size in sized:
        if size > part_bytes and not f[1]:
            starts = read.mbox_starts(f[0], part_bytes)
            if len(starts) > 1:
                if group:
                    yield Part(files=group)
                    group, held = [], 0
                for s, e in zip(starts, starts[1:] + [size]):
                    yield Part(path=f[0], start=s, size=e - s, label=f[2], mbox=True)
                continue
        group.append(f)
        held += size
        if held >= part_bytes or len(group) >= PART_FILES:
            yield Part(files=group)
            group, held = [], 0
    if group:
        yield Part(files=group)


def _line_parts(path: str, opts: LineOptions, labelled: bool, part_bytes: int) -> list[Part]:
    """A line file's byte ranges, each starting at a line's start; gzip and CSV whole."""
    from .. import read

    fmt = read.line_file_format(path, opts)
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
        size = os.fstat(f.fileno()).st_size
        if gz or fmt == "csv":  # (no seeking in gzip; a CSV record may span lines)
            return [Part(path=path, opts=opts, labelled=labelled, whole=True)]
        starts = _line_starts(f, size, part_bytes)
    ends = starts[1:] + [size]
    return [Part(path=path, fmt=fmt, opts=opts, labelled=labelled, start=s, size=e - s)
            for s, e in zip(starts, ends)]


def _line_starts(f, size: int, part_bytes: int) -> list[int]:
    """Byte offsets that cut an open binary file of ``size`` bytes into ranges of about
    part_bytes, each at a line's start (after a "\n"), the first 0."""
    starts = [0]
    for cut in range(part_bytes, size, part_bytes):
        if cut <= starts[-1]:
            continue
        f.seek(cut - 1)
        at = cut - 1 + len(f.readline())  # the line after the one holding byte cut-1
        if at < size and at > starts[-1]:
            starts.append(at)
    return starts


def _part_bytes(total: int, workers: int) -> int:
    """About a quarter of a worker's share of the input, between PART_MIN and PART_BYTES."""
    return min(PART_BYTES, max(PART_MIN, total // (4 * max(1, workers))))


def _planned(units: list[tuple], workers: int, part_bytes: int | None, on_error=None) -> list[Part]:
    """Partitions of the units (("files", sized files) or ("lines", path, options, labelled)):
    ``part_bytes`` each, or (None) about a quarter of a worker's share of the input, between
    PART_MIN and PART_BYTES, so that a small input is spread over the workers too. A line file
    of no format to tell is reported on ``on_error`` (and left out), as local reading does."""
    from ..read import _report

    if part_bytes is None:
        total = sum(sum(size for _, size in u[1]) if u[0] == "files" else _file_size(u[1]) for u in units)
        part_bytes = _part_bytes(total, workers)
    parts: list[Part] = []
    for u in units:
        if u[0] == "files":
            parts += _file_parts(u[1], part_bytes)
            continue
        try:
            parts += _line_parts(*u[1:], part_bytes)
        except NbtextError as e:
            _report(e, on_error)
    return parts


def _file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def labelled_parts(sources: list[str], labelled: list[tuple[str, str]], opts: LineOptions, on_error,
                   workers: int = 1, part_bytes: int | None = None) -> list[Part]:
    """Partitions of train's sources, in the order read.labelled_documents reads them."""
    from .. import read

    units: list[tuple] = []
    for src in sources:
        check_reachable(src)
        if os.path.exists(src) and not os.path.isdir(src):
            units.append(("lines", src, opts, True))
        elif os.path.isdir(src):
            units.append(("files", _sized(read.label_directory_files(src, on_error))))
        else:
            read._report(NbtextError(f"{src}: no such file or directory"), on_error)
    for label, path in labelled:
        check_reachable(path)
        read._label_chars(label, "--label")
        units.append(("files", _sized((p, single, label) for p, single in read.mail_folder_files(path, on_error))))
    return _planned(units, workers, part_bytes, on_error)


def input_parts(inputs: list[str], lines: bool, input_format: str | None, opts: LineOptions, on_error,
                workers: int = 1, part_bytes: int | None = None) -> list[Part]:
    """Partitions of predict's inputs, in the order read.input_documents reads them."""
    from .. import read

    units: list[tuple] = []
    for path in inputs:
        check_reachable(path)
        if lines or input_format:
            line_opts = LineOptions(input_format or "lines", opts.label_column, opts.text_column)
            if not os.path.isfile(path):
                read._report(NbtextError(f"{path}: no such file"), on_error)
                continue
            units.append(("lines", path, line_opts, False))
        else:
            units.append(("files", _sized((p, single, None) for p, single in read.mail_folder_files(path, on_error))))
    return _planned(units, workers, part_bytes, on_error)


def _count_lines(part: Part) -> int:
    """Lines that start in a line range (its newlines: ranges end after one); in an mbox
    range, as bytes.splitlines counts them (as mbox ids do)."""
    if part.mbox:
        from ..read import count_line_ends

        return count_line_ends(part.path, part.start, part.size)
    n, left = 0, part.size
    with open(part.path, "rb") as f:
        f.seek(part.start)
        while left > 0:
            block = f.read(min(left, 1 << 20))
            if not block:
                break
            n += block.count(b"\n")
            left -= len(block)
    return n


def number_lines(cluster: Cluster, parts: list[Part]) -> None:
    """Give each line range the number of lines before it in its file (counted on the workers)."""
    ranged = [p for p in parts if p.files is None and not p.whole]
    if not ranged:
        return
    seen: dict[str, int] = {}
    for part, n in zip(ranged, cluster.ordered(_count_lines, ranged)):
        part.before, part.lines = seen.get(part.path, 0), n
        seen[part.path] = part.before + n


# -- the map: on the workers ----------------------------------------------------------------------

def _documents_of(result) -> int:
    return result.n_documents


def _errors() -> tuple[list, Callable]:
    errors: list[str] = []
    return errors, lambda e: errors.append(str(e))


def count_part(part: Part, tokenizer, settings, keep_rows: bool = False) -> tuple:
    """The map of train: a partition's documents counted and mapped as local training maps
    them (batch.chunks.counted, batch.train.chunk_sums), its chunks reduced here by the same
    reduce (batch.train.Reduction) into one Sums for the client's; with ``keep_rows``, its rows
    and labels too, for calibration's sample. (Sums, errors reading it)."""
    from ..nb.estimators import make_estimator
    from .chunks import counted
    from .train import Reduction, chunk_sums

    errors, on_error = _errors()
    reduction, featurize = Reduction(partition=True, keep_rows=keep_rows), make_estimator(settings).featurizer()
    for chunk, batch in counted(part.documents(on_error), tokenizer):
        reduction.add(chunk_sums(chunk, batch, featurize, keep_rows))
    return reduction.sums(), errors


def rows_part(part: Part, tokenizer, wanted: np.ndarray | None = None):
    """(Batch of the partition's documents, or of those at the positions ``wanted``, their
    labels, their ids, errors): the second map of calibration's sample, and cv's matrix."""
    from ..features.counting import Batch, count_documents

    errors, on_error = _errors()
    want = None if wanted is None else set(wanted.tolist())
    docs = [d for i, d in enumerate(part.documents(on_error)) if want is None or i in want]
    batch = count_documents([d.data for d in docs], tokenizer) if docs else Batch.of_tokens([])
    return batch, [d.label for d in docs], [d.id for d in docs], errors


_models: dict = {}


def score_part(part: Part, model_path: str, stamp: tuple, keep_batches: bool):
    """The map of predict: (document ids, their log posteriors as Model.log_proba, their Batch
    when --explain needs it) per chunk, and errors; the model read from its path once per
    worker (``stamp``: its size and mtime as the client read it)."""
    from .chunks import counted

    model = _model_of(model_path, stamp)
    errors, on_error = _errors()
    out = []
    for chunk, batch in counted(part.documents(on_error), model.tokenizer_settings):
        out.append(([d.id for d in chunk], batch if keep_batches else None,
                    model.log_proba(batch.onto(model.vocab, grow=False))))
    return out, errors


def _model_of(model_path: str, stamp: tuple):
    """The model at a path, read once per worker process (``stamp``: its size and mtime as
    the client read it)."""
    from .. import store

    model = _models.get((model_path, stamp))
    if model is None:
        if _stamp(model_path) != stamp:
            raise NbtextError(f"{model_path}: the model file the workers read is not the client's "
                              f"(not on a shared filesystem, or changed)")
        _models.clear()
        model = _models[(model_path, stamp)] = store.load(model_path)
    return model


def _stamp(path: str) -> tuple:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


# -- the reduce: on the client ----------------------------------------------------------------------

def _report(errors: list[str], on_error) -> None:
    for e in errors:
        if on_error is None:
            raise NbtextError(e)
        on_error(NbtextError(e))


RESAMPLE_SHARE = 4  # documents per sampled one above which the sample is counted again, not sent


def estimated_documents(parts: list[Part]) -> int:
    """About how many documents the partitions hold (files, and line ranges' lines, once
    numbered; an mbox file counts one, a range of one a message per 5 KB)."""
    return sum(len(p.files) if p.files is not None else max(1, p.size // 5000) if p.mbox else (p.lines or 1)
               for p in parts)


def train_on_cluster(cluster: Cluster, parts: list[Part], tokenizer, settings, features, decisions,
                     progress=None, calibration_sample: int | None = None, on_error=None,
                     resample: bool | None = None, max_memory: int | None = None, sources: Sequence[str] = ()):
    """train_model's model (and max_fpr's fit), from partitions counted on the cluster: each
    partition's Sums (count_part) added in input order by local training's reduce
    (batch.train.Reduction) here. ``resample``: whether calibration's sample is counted again by
    a second map (None: when the input holds more than RESAMPLE_SHARE times as many documents)
    rather than sent with the counts and kept by a Reservoir here, as local training keeps it.
    ``max_memory``: the peak memory the reduce here is held to, as local training's (None:
    MAX_MEMORY). ``sources``: the paths the partitions were read from, which a refusal names."""
    from ..features.rows import Rows
    from ..progress import COUNTING, Step
    from .train import CALIBRATION_SAMPLE, Reduction, Reservoir, state_budget

    if settings.tf or settings.length_norm:
        raise SettingError("tf" if settings.tf else "length_norm", None,
                           "counts transformed rows, float sums whose last bits depend on the order "
                           "of addition: --engine dask trains only on whole counts (local training does it)")
    size = CALIBRATION_SAMPLE if calibration_sample is None else calibration_sample
    needs_sample = decisions.needs_matrix or settings.choosing
    # The sample's rows come back with the counts when it is likely a large share of the input
    # (re-reading it would cost more); else only the chosen documents are counted again after.
    if resample is None:
        resample = needs_sample and estimated_documents(parts) > RESAMPLE_SHARE * size
    keep_rows = needs_sample and not resample
    reduction = Reduction(Reservoir(size, decisions.seed) if keep_rows else None,
                          budget=state_budget(max_memory))
    sizes, read = [], 0
    for given, (part, errors) in zip(parts, cluster.ordered(count_part, parts, tokenizer, settings, keep_rows)):
        _report(errors, on_error)
        reduction.add(part)
        sizes.append(len(part.labels))
        if progress:  # (as local training tells it: the bytes counted, the documents reduced)
            read += given.bytes()
            progress(Step(COUNTING, read, documents=reduction.n_documents))
        del part
    if needs_sample and not keep_rows and reduction.n_documents:
        chosen = sample_positions(reduction.n_documents, size, decisions.seed)
        reduction.sample = _FixedSample(*_sample_rows(cluster, parts, sizes, chosen, tokenizer, reduction.vocab, Rows))
    return reduction.model(tokenizer, settings, features, decisions, progress=progress, sources=sources)


class _FixedSample:
    """Calibration's sample counted by a second map, standing in for the Reduction's Reservoir."""

    def __init__(self, X, y):
        self.X, self.y = X, y

    def sample(self, width: int):
        return self.X, self.y


def sample_positions(n: int, size: int, seed: int) -> np.ndarray:
    """The documents (positions in input order) batch.train.Reservoir keeps of n: one key each from
    default_rng(seed) in input order, the ``size`` smallest kept (all when n <= size)."""
    if n <= size:
        return np.arange(n)
    keys = np.random.default_rng(seed).random(n)
    cut = np.partition(keys, size - 1)[size - 1]
    return np.flatnonzero(keys <= cut)


def _sample_rows(cluster, parts, sizes, chosen, tokenizer, vocab, Rows):
    """The chosen documents' rows over the vocabulary, as the Reservoir keeps them, and their
    labels, in input order."""
    from .train import Reservoir

    bounds = np.concatenate([[0], np.cumsum(sizes)])
    wanted = [chosen[(chosen >= a) & (chosen < b)] - a for a, b in zip(bounds[:-1], bounds[1:])]
    which = [i for i, w in enumerate(wanted) if len(w)]
    pieces, labels = [], []
    for batch, part_labels, _, errors in cluster.ordered(_rows_of, [(parts[i], wanted[i]) for i in which],
                                                         tokenizer):
        if errors:
            raise NbtextError(f"an input changed while it was read: {errors[0]}")
        pieces.append(Reservoir.compact(batch.rows.moved(batch.ids_in(vocab, grow=False), len(vocab))))
        labels += part_labels
    if len(labels) != len(chosen):
        raise NbtextError("an input changed while it was read (its documents differ from the first reading)")
    return Rows.stack(pieces, len(vocab)), np.asarray(labels)


def _rows_of(task, tokenizer):
    part, wanted = task
    return rows_part(part, tokenizer, wanted)


def corpus_on_cluster(cluster: Cluster, parts: list[Part], tokenizer, progress=None, ids: list | None = None,
                      on_error=None, sources: Sequence[str] = ()):
    """count_corpus's (matrix, labels, vocabulary) from partitions counted on the cluster."""
    from ..features.rows import Rows
    from ..features.vocabulary import Vocabulary

    vocab, pieces, labels = Vocabulary(), [], []
    for batch, part_labels, part_ids, errors in cluster.ordered(rows_part, parts, tokenizer):
        _report(errors, on_error)
        pieces.append(batch.onto(vocab, grow=True))
        labels += part_labels
        if ids is not None:
            ids += part_ids
        if progress:
            progress(len(part_labels))
    if not labels:
        raise no_documents(sources=sources)
    return Rows.stack(pieces, len(vocab)).tocsr(), np.asarray(labels), vocab


def scored_on_cluster(cluster: Cluster, parts: list[Part], model_path: str, explain: bool, on_error=None
                      ) -> Iterator[tuple[list[str], object, np.ndarray, np.ndarray]]:
    """(document ids, Batch or None, posteriors, log posteriors) chunk by chunk, in input order:
    batch.score.log_scored_batches on the cluster."""
    stamp = _stamp(model_path)
    for chunks, errors in cluster.ordered(score_part, parts, model_path, stamp, explain):
        _report(errors, on_error)
        for doc_ids, batch, log_proba in chunks:
            yield doc_ids, batch, np.exp(log_proba), log_proba


# -- tables: the same map and reduce over a table's statistics -----------------------------------

class TablePart:
    """Rows of a CSV/TSV table a worker reads: the whole file, or the lines that start in a byte
    range of it (``before`` lines before it; ``names``: the file's header cells, which a range
    after the first does not hold)."""

    def __init__(self, path: str, names: list, start: int = 0, size: int | None = None, before: int = 0):
        self.path, self.names, self.start, self.size, self.before = path, names, start, size, before
        self.rows_before = 0  # (records before the range, the header not counted)
        self.lines, self.quoted = None, False  # (a range's lines, and whether it holds a '"': count_table_range)
        self.source = 0  # (which of the inputs it is of)

    def open(self, opts, labelled: bool = True, features=None):
        """(Header, blocks) as nbtext.table.read.open_table reads them, for this range."""
        from ..table.read import open_table

        return open_table(self.path, opts, labelled, features, part=(self.start, self.size, self.before, self.names))

    def frames(self, opts, kinds: list, labelled: bool = True, features=None, provisional=frozenset()):
        """The range's Frames as nbtext.table.read.frames makes them, rows numbered as the file's."""
        from ..table.read import frames

        header, blocks = self.open(opts, labelled, features)
        return frames(header, blocks, kinds, opts.chunk_rows, labelled, provisional, self.rows_before + 1)


def table_parts(cluster: Cluster, sources: list[str], fmt: str | None, part_bytes: int | None = None
                ) -> list[TablePart]:
    """Partitions of tables, in input order: byte ranges that start at a line's start, numbered
    by a first small map (lines as the table reader counts them: "\r\n", "\n" or a lone
    "\r"). A CSV file holding a quote anywhere is read whole by one worker (a quoted field may
    hold a line break, so a line start need not be a record's), as is a gzip file."""
    from ..table.read import raw_blocks, table_format

    files = []
    for path in sources:
        check_reachable(path)
        first = next((rows[0] for _, rows in raw_blocks(path, fmt, 1) if rows), None)  # (the header record)
        if first is None:
            raise NbtextError(f"{path}: empty table (no header row)")
        files.append((path, first, _file_size(path)))
    if part_bytes is None:
        part_bytes = _part_bytes(sum(size for *_, size in files), cluster.workers())
    parts: list[TablePart] = []
    for i, (path, names, size) in enumerate(files):
        with open(path, "rb") as f:
            starts = [0] if f.read(2) == b"\x1f\x8b" else _line_starts(f, size, part_bytes)
        ranges = [TablePart(path, names, s, e - s) for s, e in zip(starts, starts[1:] + [size])]
        if len(ranges) > 1:
            seen = records = 0
            for part, (lines, rows, quoted) in zip(ranges, cluster.ordered(count_table_range, ranges)):
                part.before, part.rows_before, part.lines, part.quoted = seen, records, lines, quoted
                seen += lines
                records += rows - (part.start == 0)  # (the header is no row)
            if table_format(path, fmt) == "csv" and any(p.quoted for p in ranges):
                ranges = [TablePart(path, names, 0, None)]
        else:
            ranges = [TablePart(path, names, 0, None)]
        for part in ranges:
            part.source = i
        parts += ranges
    return parts


def count_table_range(part: TablePart) -> tuple[int, int, bool]:
    """(lines that start in the range, as the table reader's universal newlines count them (the
    range ends after a "\n", so no "\r\n" is cut), those that are not blank (its records, when
    it holds no quote), whether it holds a '"')."""
    import io

    with open(part.path, "rb") as f:
        f.seek(part.start)
        data = f.read(part.size)
    text = data.decode("utf-8-sig" if part.start == 0 else "utf-8", errors="replace")
    lines = records = 0
    for line in io.StringIO(text, newline=""):
        lines += 1
        records += bool(line.strip())
    return lines, records, b'"' in data


class TableResult:
    """Consecutive partitions' table statistics (None when a column typed by the first block
    of rows turned out otherwise: ``retype``) and their rows."""

    def __init__(self, stats, n_documents: int, retype: bool = False):
        self.stats, self.n_documents, self.retype = stats, n_documents, retype


def combine_tables(a: TableResult, b: TableResult) -> TableResult:
    """a's partitions' statistics followed by b's (TableStats.merge: b's new values after a's,
    in b's first-seen order; exact sums, so any grouping gives the same bits)."""
    if a.retype or b.retype:
        return TableResult(None, a.n_documents + b.n_documents, True)
    a.stats.merge(b.stats)
    return TableResult(a.stats, a.n_documents + b.n_documents)


def table_stats_part(part: TablePart, opts, settings, names: list, kinds: list, provisional: set
                     ) -> TableResult:
    """The map of training a table: a partition's rows added as train_table's local pass adds
    them (nbtext.table.model.LocalTables.one_pass)."""
    from ..table.model import Retype, TableModel

    stats = TableModel.empty(settings, opts.label_column, names, kinds).stats
    n = 0
    try:
        for frame in part.frames(opts, kinds, features=names, provisional=provisional):
            stats.add(frame)
            n += len(frame)
    except Retype:
        return TableResult(None, n, True)
    return TableResult(stats, n)


def table_flags_part(part: TablePart, opts, undecided: list) -> dict:
    """The typing pass's map: nbtext.table.read.number_flags of a partition's rows."""
    from ..table.read import number_flags

    header, blocks = part.open(opts)
    return number_flags(header, blocks, undecided)


def table_frames_part(part: TablePart, opts, names: list, kinds: list) -> list:
    """cv's map: a partition's labelled Frames."""
    return list(part.frames(opts, kinds, features=names))


def table_score_part(part: TablePart, model_path: str, stamp: tuple, opts) -> list:
    """predict's map: (row numbers, posteriors, log densities) of each chunk of a partition's
    rows, as TableModel.scores gives them."""
    model = _model_of(model_path, stamp)
    return [(frame.rows, *model.scores(frame)) for frame in part.frames(opts, model.kinds, False, model.columns)]


class ClusterTables:
    """train_table's passes (nbtext.table.model.LocalTables) on a cluster: partitions of the tables
    counted on the workers into exact statistics, reduced in input order by combine_tables."""

    def __init__(self, cluster: Cluster, sources: list[str], fmt: str | None, part_bytes: int | None = None):
        self.cluster, self.sources = cluster, sources
        self.parts = table_parts(cluster, sources, fmt, part_bytes)

    def kinds(self, sources, opts, settings, header) -> list[str]:
        from ..table.read import forced_kinds, typed

        kinds = forced_kinds(header, opts, settings.variant)
        undecided = [j for j, k in enumerate(kinds) if k is None]
        flags = dict.fromkeys(undecided, (True, False))
        for part_flags in self.cluster.ordered(table_flags_part, self._of(sources[0]), opts, undecided):
            flags = {j: (flags[j][0] and part_flags[j][0], flags[j][1] or part_flags[j][1]) for j in undecided}
        return typed(kinds, flags)

    def one_pass(self, sources, opts, settings, header, kinds, auto, progress):
        from ..table.model import Retype, TableModel
        from ..table.read import NUMERIC, TableOptions

        names = header.feature_names
        label_name = header.names[header.label]
        o = TableOptions(format=opts.format, label_column=label_name, chunk_rows=opts.chunk_rows)
        provisional = {j for j in auto if kinds[j] == NUMERIC}
        result = self.cluster.reduced(table_stats_part, self.parts, (o, settings, names, kinds, provisional),
                                      combine_tables, progress)
        if result.retype:
            raise Retype()
        return TableModel(settings, label_name, names, kinds, result.stats)

    def frames(self, opts, model) -> Iterator:
        """(path, Frame) of every table's labelled rows, in input order."""
        for part, part_frames in zip(self.parts, self.cluster.ordered(table_frames_part, self.parts, opts,
                                                                      model.columns, model.kinds)):
            for frame in part_frames:
                yield part.path, frame

    def _of(self, path: str) -> list[TablePart]:
        return [p for p in self.parts if p.source == self.sources.index(path)]


def table_scores_on_cluster(cluster: Cluster, inputs: list[str], model_path: str, opts, part_bytes=None):
    """scored(path) for nbtext.tablecli.predict: (row numbers, posteriors, log densities) of a
    table's chunks, in order, scored on the cluster."""
    parts = table_parts(cluster, inputs, opts.format, part_bytes)
    stamp = _stamp(model_path)
    results = cluster.ordered(table_score_part, parts, model_path, stamp, opts)
    calls = iter(range(len(inputs)))

    def scored(path: str) -> Iterator:
        i = next(calls)  # (called once per input, in order)
        for _ in [p for p in parts if p.source == i]:
            yield from next(results)

    return scored


def say(msg: str) -> None:
    if sys.stderr is not None:
        print(msg, file=sys.stderr, flush=True)
