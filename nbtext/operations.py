"""Operations on whole models: learn and forget in place, merge, and the text dump.

All exact, because the model is counts: learning adds a document's counts, forgetting
subtracts them, merging adds two models' counts column by column.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable, Iterator

import numpy as np

from .decision import Decision
from .errors import NbtextError
from .model import Model
from .read import Document
from .settings import ModelSettings, TokenizerSettings
from .vectorize import Vocabulary

DUMP_MAGIC = "# nbtext dump 1"


def digest(label: str, data: bytes | str) -> bytes:
    """Content hash of a labelled document for the ledger (16 bytes of BLAKE2b)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    return hashlib.blake2b(label.encode("utf-8") + b"\x00" + data, digest_size=16).digest()


@contextlib.contextmanager
def locked(path: str) -> Iterator[None]:
    """An exclusive lock beside the model, so concurrent learn/merge runs lose no counts."""
    import fcntl

    try:
        fd = open(path + ".lock", "a")
    except OSError as e:
        raise NbtextError(f"{path}.lock: cannot create lock file: {e.strerror}") from None
    with fd:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)


def learn(model: Model, docs: Iterable[Document], label: str, forget: bool = False) -> tuple[int, int]:
    """Add (or with forget, take out) documents under ``label``. Returns (changed, skipped).

    Learning a document already learned under that label is a no-op (skipped); forgetting
    one that was never learned under it is an error, and nothing changes."""
    if label not in model.classes:
        raise NbtextError(f"unknown label {label!r}: the model's classes are {', '.join(model.classes)}")
    tok = model.tokenizer
    todo, seen, skipped = [], set(), 0
    for d in docs:
        h = digest(label, d.data)
        if forget and h not in model.ledger:
            raise NbtextError(f"{d.id}: was never learned as {label!r}, so it cannot be forgotten")
        if (not forget and h in model.ledger) or h in seen:
            skipped += 1
            continue
        seen.add(h)
        todo.append((h, tok(d.data)))
    if todo:
        model.add([t for _, t in todo], [label] * len(todo), weight=-1.0 if forget else 1.0)
        for h, _ in todo:
            (model.ledger.discard if forget else model.ledger.add)(h)
    return len(todo), skipped


def merge(models: list[tuple[str, Model]]) -> Model:
    """Sum models trained with the same settings."""
    (first_path, first), rest = models[0], models[1:]
    for path, m in rest:
        for name, a, b in (("tokenizer", first.tokenizer_settings, m.tokenizer_settings),
                           ("model", first.settings, m.settings)):
            if a != b:
                diffs = [k for k, v in a.to_dict().items() if b.to_dict().get(k) != v]
                k = diffs[0]
                raise NbtextError(
                    f"{path}: {name} setting {k} differs ({first_path}: {a.to_dict()[k]!r}, "
                    f"{path}: {b.to_dict()[k]!r}); only models with equal settings can be merged")
    classes = sorted(set().union(*(m.classes for _, m in models)))
    vocab = Vocabulary()
    columns = [vocab.extend_encoded(m.vocab.encoded(), m.vocab.keys()) for _, m in models]
    fc = np.zeros((len(classes), len(vocab)))
    cc = np.zeros(len(classes))
    df = np.zeros(len(vocab)) if first.settings.idf else None
    ledger: set = set()
    for (_, m), cols in zip(models, columns):
        rows = [classes.index(c) for c in m.classes]
        fc[np.ix_(rows, cols)] += m.feature_count
        cc[rows] += m.class_count
        if df is not None:
            df[cols] += m.doc_freq
        ledger |= m.ledger
    out = Model(first.tokenizer_settings, first.settings, classes, vocab, fc, cc,
                Decision.from_dict(first.decision.to_dict()), ledger, df)
    if out.decision.positive not in classes:
        out.decision.positive = None
    return out


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 2**53 else repr(float(x))


def export_lines(model: Model) -> Iterator[str]:
    """The text dump: a magic line, one JSON line of settings, then token<TAB>counts per class
    (and<TAB>its document frequency, for --idf models)."""
    yield DUMP_MAGIC
    yield json.dumps({
        "tokenizer": model.tokenizer_settings.to_dict(), "model": model.settings.to_dict(),
        "classes": model.classes, "class_count": [_num(x) for x in model.class_count],
        "decision": model.decision.to_dict(), "ledger": sorted(h.hex() for h in model.ledger),
    }, sort_keys=True)
    fc = model.feature_count if model.doc_freq is None else np.vstack([model.feature_count, model.doc_freq])
    for i, t in enumerate(model.vocab.tokens):
        yield json.dumps(t, ensure_ascii=False) + "\t" + "\t".join(_num(x) for x in fc[:, i])


def import_lines(lines: Iterable[str], source: str) -> Model:
    it = iter(lines)
    first = next(it, "").rstrip("\n")
    if first != DUMP_MAGIC:
        raise NbtextError(f"{source}: not an nbtext dump (first line should be {DUMP_MAGIC!r})")
    try:
        meta = json.loads(next(it))
        classes = list(meta["classes"])
        settings = ModelSettings.from_dict(meta["model"])
        width = len(classes) + settings.idf
        tokens, rows = [], []
        for n, line in enumerate(it, 3):
            line = line.rstrip("\n")
            if not line:
                continue
            tok, *counts = line.split("\t")
            if len(counts) != width:
                raise NbtextError(f"{source}:{n}: expected {width} counts, found {len(counts)}")
            tokens.append(json.loads(tok))
            rows.append([float(c) for c in counts])
        table = np.asarray(rows, dtype=np.float64).reshape(len(tokens), width).T.copy()
        fc = table[:len(classes)].copy()
        model = Model(TokenizerSettings.from_dict(meta["tokenizer"]), settings,
                      classes, Vocabulary(tokens), fc,
                      np.asarray([float(x) for x in meta["class_count"]]),
                      Decision.from_dict(meta["decision"]), {bytes.fromhex(h) for h in meta["ledger"]},
                      table[len(classes)] if settings.idf else None)
    except (KeyError, TypeError, ValueError, StopIteration) as e:
        raise NbtextError(f"{source}: malformed dump ({e.__class__.__name__}: {e})") from None
    if len(set(tokens)) != len(tokens):
        raise NbtextError(f"{source}: malformed dump (a token appears twice)")
    if (table < 0).any() or (model.class_count < 0).any():
        raise NbtextError(f"{source}: malformed dump (negative counts)")
    return model
