"""Operations on whole models: learn and forget in place, merge, and prune.

All exact, because the model is counts (nbtext.nb.counts): learning adds a document's counts,
forgetting subtracts them, merging adds two models' counts, each at its tokens' ids. Pruning
takes tokens out whole, so what remains is counted exactly as before, and learn and forget
still add and subtract exactly on it.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from hashlib import blake2b

import numpy as np

from .errors import NbtextError
from .features.vocabulary import Vocabulary
from .ledger import DIGEST_SIZE, Ledger
from .model import Model
from .nb import counts as nb_counts
from .nb.counts import UNKNOWN_DAY, Counts
from .nb.decision import Decision
from .read import Document
from .record import Record
from .store.fields import MAX_COUNT, PAST_MAX, check_class_sums


def digest(label: str, data: bytes | str) -> bytes:
    """Content hash of a labelled document for the ledger (16 bytes of BLAKE2b)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    h = blake2b(label.encode("utf-8") + b"\x00", digest_size=DIGEST_SIZE)
    h.update(data)  # (the same hash as of the joined bytes, without a copy of each document)
    return h.digest()


def learn(model: Model, docs: Iterable[Document], label: str, forget: bool = False,
          where: str = "the model") -> tuple[int, int]:
    """Add (or with forget, take out) documents under ``label``. Returns (changed, skipped).

    Learning a document already learned under that label is a no-op (skipped); forgetting
    one that was never learned under it is an error, and nothing changes; so is learning
    documents that would take a count past what a model file holds (``where``: the model's
    path, which the error names)."""
    model.counts.check_labels([label])
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
    if todo and not forget and top(model.counts) >= NEAR_MAX:
        check_learnable(model, [t for _, t in todo], label, where)
    if todo:
        model.add([t for _, t in todo], [label] * len(todo), weight=-1.0 if forget else 1.0)
        (model.ledger.difference_update if forget else model.ledger.update)([h for h, _ in todo])
    return len(todo), skipped


def merge(models: list[tuple[str, Model]], disjoint: bool = False) -> Model:
    """Sum models trained with the same settings on different documents. Models that learned
    a document in common are refused: its counts would be added twice while the ledger lists
    it once, so it could never be forgotten. So is a model that shares no class with the
    others (a spam filter and a language model made a 14-class model), unless ``disjoint``."""
    (first_path, first), rest = models[0], models[1:]
    if not disjoint and len({m.kind for _, m in models}) == 1:
        for i, (path, m) in enumerate(models):
            others = {c for j, (_, o) in enumerate(models) if j != i for c in o.classes}
            if not others & set(m.classes):
                raise NbtextError(f"{path}: its classes ({', '.join(m.classes)}) share none with the other "
                                  f"models' ({', '.join(sorted(others))}); merged, they would make one model of "
                                  f"{len(others | set(m.classes))} classes: give --disjoint if that is meant")
    if any(m.kind == "table" for _, m in models):
        from .table.model import merge_tables

        if first.kind != "table":
            raise NbtextError(f"{first_path}: a text model; it cannot be merged with table models")
        return merge_tables(models)
    for path, m in rest:
        for name, a, b in (("tokenizer", first.tokenizer_settings, m.tokenizer_settings),
                           ("model", first.settings, m.settings)):
            da, db = ({f: getattr(x, f) for f in x._fields} for x in (a, b))
            if name == "model" and a.auto and b.auto:
                # variants the auto rule chose count alike: the first model's is kept (until
                # calibrate chooses again on all the documents)
                da["variant"] = db["variant"] = "auto"
            if da != db:
                k = [k for k in sorted(set(da) | set(db)) if da.get(k) != db.get(k)][0]
                raise NbtextError(
                    f"{path}: {name} setting {k} differs ({first_path}: {da.get(k)!r}, "
                    f"{path}: {db.get(k)!r}); only models with equal settings can be merged")
    ledger = Ledger()  # (the models' so far)
    for i, (path, m) in enumerate(models):
        common = m.ledger.common(ledger)
        if common:
            owner = next(p for p, o in models[:i] if m.ledger.common(o.ledger))
            raise NbtextError(f"{path}: learned {common} of the same documents as "
                              f"{owner}; merged, they would be counted twice")
        ledger.update(m.ledger.tobytes())
    pruned = [(path, m.pruned) for path, m in models if m.pruned]
    tokens = sum(p["tokens"] for _, p in pruned)
    if tokens > MAX_COUNT:  # (each is at most that, store.codec.pruning; no real model comes near)
        raise NbtextError(f"{', '.join(path for path, _ in pruned)}: merged, their pruned tokens would number "
                          f"{tokens}, {PAST_MAX}")
    vocab = Vocabulary()
    ids = [vocab.extend_encoded(m.vocab.encoded(), m.vocab.keys()) for _, m in models]
    check_sum([(m.counts, i) for (_, m), i in zip(models, ids)], vocab,
              f"{', '.join(path for path, _ in models)}: merged")
    counts = Counts()
    for (_, m), i in zip(models, ids):
        counts.merge(m.counts, i, len(vocab))
    counts.compact()
    out = Model(first.tokenizer_settings, first.settings, vocab, counts,
                Decision.from_dict(first.decision.to_dict()), ledger)
    if pruned:  # (counts pruned anywhere are pruned here: the largest threshold, the tokens of all)
        out.pruned = {"tokens": tokens, "threshold": max(p["threshold"] for _, p in pruned),
                      "documents": max(p["documents"] for _, p in pruned)}
    if out.decision.positive not in out.classes:
        out.decision.positive = None
    return out


def top(counts: Counts) -> int:
    """The largest number ``counts`` hold (a token's count in a class, a class's documents, a
    token's documents), rounded up to a whole number."""
    values = counts.token_sums.values if counts.sparse else counts.token_major
    return math.ceil(max((float(a.max()) for a in (values, counts.class_count, counts.doc_freq) if a.size),
                         default=0.0))


def check_sum(parts: Sequence[tuple[Counts, np.ndarray]], vocab: Vocabulary, what: str) -> None:
    """Refuse (NbtextError: ``what``, then the number) the sum of counts ``parts``, each with the
    id each of its tokens has in the sum (in ``vocab``), where a number of it would pass
    MAX_COUNT, which a model file holds at most: a float64 sum past 2**53 rounds (2**53 + 1 to
    2**53), and a file past it is refused at load. Checked exactly, as whole numbers (a fraction
    rounded up), before anything is added; by one max of each part where their largest numbers
    sum to at most MAX_COUNT, as those of any model learned from real documents do."""
    limit = int(MAX_COUNT)
    check_class_sums([(counts.classes, counts.class_count.tolist()) for counts, _ in parts], what, "documents")
    if sum(top(counts) for counts, _ in parts) <= limit:
        return
    # (only files made to be near the limit come here: the sums per token and class, exactly)
    classes = sorted({c for counts, _ in parts for c in counts.classes})
    index, k, width = {c: i for i, c in enumerate(classes)}, len(classes), len(vocab)
    keys, values, doc_freq = [], [], np.zeros(width, dtype=np.int64)
    for counts, ids in parts:
        s, rows = counts.token_sums, np.asarray([index[c] for c in counts.classes], dtype=np.int64)
        keys.append(ids[s.token_of_entries()] * k + rows[s.classes.astype(np.int64)])
        values.append(np.ceil(s.values).astype(np.int64))
        np.add.at(doc_freq, ids, np.ceil(counts.doc_freq).astype(np.int64))
    cells, at = np.unique(np.concatenate(keys), return_inverse=True)
    sums = np.zeros(len(cells), dtype=np.int64)
    np.add.at(sums, at.reshape(-1), np.concatenate(values))
    if len(sums) and sums.max() > limit:
        i = int(sums.argmax())
        token, c = divmod(int(cells[i]), k)
        raise NbtextError(f"{what}, the count of token {vocab.token(token)!r} in class {classes[c]!r} would be "
                          f"{int(sums[i])}, {PAST_MAX}")
    if width and doc_freq.max() > limit:
        token = int(doc_freq.argmax())
        raise NbtextError(f"{what}, token {vocab.token(token)!r} would be in {int(doc_freq[token])} documents, "
                          f"{PAST_MAX}")


# Below this, no count of a model can pass MAX_COUNT by a learn: the documents would have to add
# 2**52 to one count (petabytes of text in one run).
NEAR_MAX = int(MAX_COUNT) // 2


def check_learnable(model: Model, token_lists: list[list[str]], label: str, where: str) -> None:
    """check_sum of the model and the documents ``token_lists`` learned as ``label`` (counted
    apart, as the model counts them), where the model holds a number near MAX_COUNT."""
    docs = Model(model.tokenizer_settings, model.settings, Vocabulary(), Counts(model.classes),
                 Decision(), Ledger())
    docs.add(token_lists, [label] * len(token_lists))
    vocab = Vocabulary()
    ids = [vocab.extend_encoded(m.vocab.encoded(), m.vocab.keys()) for m in (model, docs)]
    check_sum([(model.counts, ids[0]), (docs.counts, ids[1])], vocab, f"{where}: with these documents learned")


class PruneRule(Record):
    """Which tokens prune takes out: those counted at most ``seen_at_most`` times in all (as the
    model counts a document) and last seen more than ``older_than`` days ago (None: none by
    age), then, while more than ``max_tokens`` remain, the least recently seen (the rarest first
    among tokens of one day)."""

    older_than: int | None = None
    seen_at_most: int = 1
    max_tokens: int | None = None


def prune_keep(counts: Counts, rule: PruneRule, today: int) -> np.ndarray:
    """The ids of the tokens ``rule`` keeps, in id order. A token whose last day is not known
    (a model file written before days were kept) is never old by age; to a cap it is the
    least recently seen."""
    seen, total = counts.last_seen.astype(np.int64), counts.token_totals()
    drop = np.zeros(counts.width, dtype=bool)
    if rule.older_than is not None:
        drop = (seen != UNKNOWN_DAY) & (seen < today - rule.older_than) & (total <= rule.seen_at_most)
    kept = np.flatnonzero(~drop)
    if rule.max_tokens is not None and len(kept) > rule.max_tokens:
        # the most recent first, then the most counted, then the lowest id (a stable order)
        order = np.lexsort((kept, -total[kept], -seen[kept]))
        kept = np.sort(kept[order[:rule.max_tokens]])
    return kept


def prune(model: Model, rule: PruneRule, today: int | None = None) -> int:
    """Take out of a text model the tokens ``rule`` drops; returns how many it took out. The
    documents stay learned (the ledger and the per-class document counts do not change): a
    document's surviving tokens are still forgotten exactly."""
    if model.kind != "text":
        raise NbtextError("prune takes tokens out of text models; a table model has none")
    today = nb_counts.today() if today is None else today  # (the day new counts mark their tokens with)
    keep = prune_keep(model.counts, rule, today)
    dropped = model.counts.width - len(keep)
    if dropped:
        model.keep_columns(keep)
    return dropped


def prune_in_place(model_path: str, rule: PruneRule, dry_run: bool = False) -> tuple[int, int]:
    """Load, prune, save, under the model's lock (a concurrent learn waits, then learns into the
    pruned model). Returns (tokens taken out, tokens before); ``dry_run`` saves nothing."""
    from . import store

    with store.locked(model_path):
        model = store.load(model_path)
        dropped = prune(model, rule)
        if dropped and not dry_run:
            store.save(model, model_path)
    return dropped, len(model.vocab) + dropped


def learn_in_place(model_path: str, docs: Iterable[Document], label: str, forget: bool = False) -> tuple[int, int]:
    """Load, learn or forget, save: under the model's lock, so concurrent runs lose nothing."""
    result = learn_each_in_place(model_path, [(docs, label, forget)])[0]
    if isinstance(result, NbtextError):
        raise result
    return result


def learned_as(model: Model, data: bytes | str) -> str | None:
    """The class a document was learned as (by the ledger), or None."""
    return next((c for c in model.classes if digest(c, data) in model.ledger), None)


def learn_each_in_place(model_path: str, requests: list[tuple], new_model=None, relearn: bool = False,
                        wait: float | None = None) -> list:
    """Several learns and forgets, each (docs, label, forget), in one load and one save under
    the model's lock. Each gets (changed, skipped), or the NbtextError that refused it and
    changed nothing (a forget of a document never learned), as learn() says; a label of None
    with forget is the class the ledger has the document as (spamd's "Remove: local" names
    none). ``new_model``: makes the model where the file does not exist yet (the daemon's
    per-user models, created by their first learn); without it, a missing file is an error.
    ``relearn``: a document learned under another class is first forgotten there (a user's
    correction, as SpamAssassin's learning moves a message from spam to ham). ``wait``: seconds
    to wait for the model's lock at most (store.locked)."""
    import os

    from . import store

    with store.locked(model_path, wait):
        model = new_model() if new_model is not None and not os.path.exists(model_path) else store.load(model_path)
        results: list = []
        for docs, label, forget in requests:
            try:
                if label is None:
                    docs = list(docs)
                    label = learned_as(model, docs[0].data) if len(docs) == 1 else None
                    if label is None:
                        raise NbtextError(f"{docs[0].id if docs else 'the document'}: was never learned, "
                                          "so it cannot be forgotten")
                if relearn and not forget:
                    docs = list(docs)
                    for d in docs:
                        other = learned_as(model, d.data)
                        if other not in (None, label):
                            learn(model, [d], other, forget=True)
                results.append(learn(model, docs, label, forget, model_path))
            except NbtextError as e:
                results.append(e)
        if any(isinstance(r, tuple) and r[0] for r in results):
            store.save(model, model_path)
    return results


def merge_files(output: str, paths: list[str], disjoint: bool = False) -> Model:
    """Merge model files into ``output``, under its lock (its own counts read inside it)."""
    import os

    from . import store
    from .store.atomic import check_target

    check_target(output)
    real = [os.path.realpath(p) for p in paths]
    for i, p in enumerate(real):
        if p in real[:i]:
            raise NbtextError(f"{paths[i]}: given twice (as {paths[real.index(p)]}); merged with "
                              "itself, a model's counts would be counted twice")
    with store.locked(output):
        merged = merge([(p, store.load(p)) for p in paths], disjoint)
        store.save(merged, output)
    return merged
