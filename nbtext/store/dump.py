"""The text dump of `nbtext export` / `nbtext import`: a model as lines, and back, exactly.

A magic line, one JSON line of settings, classes, documents per class, decision and ledger,
then one line per token: the token as a JSON string, a tab, its count per class (and, for --idf
models, a tab and its document frequency).
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

import numpy as np

from ..errors import NbtextError

DUMP_MAGIC = "# nbtext dump 1"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 2**53 else repr(float(x))


def export_lines(model) -> Iterator[str]:
    yield DUMP_MAGIC
    yield json.dumps({
        "tokenizer": model.tokenizer_settings.to_dict(), "model": model.settings.to_dict(),
        "classes": model.classes, "class_count": [_num(x) for x in model.class_count],
        "decision": model.decision.to_dict(), "ledger": sorted(h.hex() for h in model.ledger),
    }, sort_keys=True)
    fc = model.feature_count if model.doc_freq is None else np.vstack([model.feature_count, model.doc_freq])
    for i, t in enumerate(model.vocab.tokens):
        yield json.dumps(t, ensure_ascii=False) + "\t" + "\t".join(_num(x) for x in fc[:, i])


def import_lines(lines: Iterable[str], source: str):
    from ..features.vocabulary import Vocabulary
    from ..model import Model
    from ..nb.counts import Counts
    from ..nb.decision import Decision
    from ..settings import ModelSettings, TokenizerSettings

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
        if (table < 0).any() or any(float(x) < 0 for x in meta["class_count"]):
            raise NbtextError(f"{source}: malformed dump (negative counts)")
        counts = Counts.of_arrays(classes, table[:len(classes)], [float(x) for x in meta["class_count"]],
                                  table[len(classes)] if settings.idf else None)
        model = Model(TokenizerSettings.from_dict(meta["tokenizer"]), settings, Vocabulary(tokens), counts,
                      Decision.from_dict(meta["decision"]), {bytes.fromhex(h) for h in meta["ledger"]})
    except (KeyError, TypeError, ValueError, StopIteration) as e:
        raise NbtextError(f"{source}: malformed dump ({e.__class__.__name__}: {e})") from None
    if len(set(tokens)) != len(tokens):
        raise NbtextError(f"{source}: malformed dump (a token appears twice)")
    return model
