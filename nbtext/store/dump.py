"""The text dump of `nbtext export` / `nbtext import`: a model as lines, and back, exactly.

A magic line, one JSON line of settings, classes, documents per class, decision, ledger, the
decision layer (its constants and [token line, weights...] per token it weighs), what train's
memory budget pruned ("pruned", as the model file's header says it; absent: exact counts) and
the day the tokens were last seen ("last_seen_day": that day where they share one, as the
header says it; "per token" where they do not), then one line per token: the token as a JSON
string, a tab, its count per class (and, for --idf models, a tab and its document frequency;
where the days are per token, a tab and its day). Every field of the model file that is not
derived from the others is in it, so that import writes the very file export read. A dump of an older nbtext has no "pruned" (its
model is exact) and no "last_seen_day": import counts its tokens as seen on the day of the
import.
"""
from __future__ import annotations

import json
import re
from array import array
from collections.abc import Iterable, Iterator

import numpy as np

from ..errors import KernelError, NbtextError, shown
from ..ledger import DIGEST_SIZE, Ledger
from .container import json_object

DUMP_MAGIC = "# nbtext dump 1"
PER_TOKEN = "per token"  # "last_seen_day" where the tokens' days differ: each token line ends with its day
DAY_TEXT = "0|[1-9][0-9]{0,4}"  # a token's day as export writes it (checked by codec.last_seen_day)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 2**53 else repr(float(x))


def export_lines(model) -> Iterator[str]:
    if model.kind == "table":
        from .tables import export_table

        yield from export_table(model)
        return
    from .codec import the_one_day

    days = model.counts.last_seen
    one_day = the_one_day(days)
    per_token = len(days) > 0 and one_day is None  # (no tokens: no day to say)
    yield DUMP_MAGIC
    yield json.dumps({
        "tokenizer": model.tokenizer_settings.to_dict(), "model": model.settings.to_dict(),
        "classes": model.classes, "class_count": [_num(x) for x in model.class_count],
        "decision": model.decision.to_dict(), "ledger": _hex_digests(model.ledger),
        **({} if model.layer is None else {"layer": _layer(model.layer)}),
        **({"pruned": model.pruned} if model.pruned else {}),
        **({"last_seen_day": PER_TOKEN if per_token else one_day} if len(days) else {}),
    }, sort_keys=True)
    lines = _sparse_lines(model) if model.counts.sparse else _dense_lines(model)
    if not per_token:
        yield from lines
        return
    for line, day in zip(lines, days.tolist()):
        yield f"{line}\t{day}"


def _dense_lines(model) -> Iterator[str]:
    fc = model.feature_count if model.doc_freq is None else np.vstack([model.feature_count, model.doc_freq])
    for i, t in enumerate(model.vocab.tokens):
        yield json.dumps(t, ensure_ascii=False) + "\t" + "\t".join(_num(x) for x in fc[:, i])


def _hex_digests(ledger) -> list[str]:
    """The ledger's digests in hex, sorted (a JSON list: the dump is text)."""
    data, size = ledger.tobytes().hex(), 2 * DIGEST_SIZE
    return [data[i:i + size] for i in range(0, len(data), size)]


def _layer(layer) -> dict:
    """The decision layer as the settings line holds it: its constants, and [id, weights...] per
    token it weighs (ids of the token lines, in their order)."""
    return {**layer.header(), "weights": [[i, *w] for i, w in zip(layer.ids.tolist(), layer.weights.tolist())]}


def _sparse_lines(model) -> Iterator[str]:
    """_dense_lines' token lines of sparse counts (a token's row of its nonzero classes: no
    classes x tokens array): the same lines."""
    s, k, df = model.counts.token_sums, len(model.classes), model.doc_freq
    indptr, classes, values = s.indptr.tolist(), s.classes.tolist(), s.values.tolist()
    for i, t in enumerate(model.vocab.tokens):
        row = [0.0] * k
        for j in range(indptr[i], indptr[i + 1]):
            row[classes[j]] = values[j]
        if df is not None:
            row.append(df[i])
        yield json.dumps(t, ensure_ascii=False) + "\t" + "\t".join(_num(x) for x in row)


def import_lines(lines: Iterable[str], source: str):
    """The model of a dump, every field checked (store.codec.meta): a dump is a stranger's."""
    from ..features.vocabulary import Vocabulary
    from ..model import Model
    from ..nb.counts import Counts
    from ..nb.sparse import TokenSums
    from .codec import check_documents, last_seen_day, meta, pruning
    from .fields import COUNT_TEXT, MAX_COUNT, count_of

    count_text, day_text = re.compile(COUNT_TEXT), re.compile(DAY_TEXT)
    counts_text = re.compile(f"(?:\t{COUNT_TEXT})+")

    from .tables import TABLE_DUMP_MAGIC, import_table

    it = iter(lines)
    first = next(it, "").rstrip("\n")
    if first == TABLE_DUMP_MAGIC:
        return import_table(first, it, source)
    if first != DUMP_MAGIC:
        raise NbtextError(f"{source}: not an nbtext dump (first line should be {DUMP_MAGIC!r})")
    try:
        settings_line = json_object(next(it))
        if not isinstance(settings_line, dict):
            raise ValueError("the settings line is not a JSON object")
        tokenizer, settings, classes, class_count, decision = meta(settings_line)
        ledger = settings_line["ledger"]
        if not isinstance(ledger, list) or not all(isinstance(h, str) and len(h) == 2 * DIGEST_SIZE for h in ledger):
            raise ValueError("ledger entries must be 32 hex digits each")
        digests = bytes.fromhex("".join(ledger))
        if len(digests) != DIGEST_SIZE * len(ledger):  # (fromhex skips blanks: " 0a..." is not a digest)
            raise ValueError("ledger entries must be 32 hex digits each")
        ledger = Ledger.from_bytes(digests)
        pruned = pruning(settings_line)
        day = settings_line.get("last_seen_day")
        per_token = day == PER_TOKEN
        if day is not None and not per_token:
            last_seen_day(day)
        k = len(classes)
        width = k + settings.idf + per_token
        # (a token's nonzero counts only: a dump of many classes is mostly zeros, nb.sparse)
        tokens, indptr, at, values, doc_freq = [], array("q", [0]), array("q"), array("d"), array("d")
        days = array("l")
        for n, line in enumerate(it, 3):
            line = line.rstrip("\n")
            if not line:
                continue
            tok, *counts = line.split("\t")
            if len(counts) != width:
                want = f"{width - 1} counts and a day" if per_token else f"{width} counts"
                raise NbtextError(f"{source}:{n}: expected {want}, found {len(counts)}")
            end = len(line)
            if per_token:
                text = counts.pop()
                end -= len(text) + 1
                if not day_text.fullmatch(text):
                    raise NbtextError(f"{source}:{n}: a token's day must be written as the dump writes it "
                                      f"(digits), not {shown(text)[:40]!r}")
                try:
                    days.append(last_seen_day(int(text)))
                except ValueError as e:
                    raise NbtextError(f"{source}:{n}: {e}") from None
            if not counts_text.fullmatch(line, len(tok), end):
                bad = next(c for c in counts if not count_text.fullmatch(c))
                raise NbtextError(f"{source}:{n}: a count must be written as the dump writes it "
                                  f"(digits, or a float's digits), not {shown(bad)[:40]!r}")
            tok = json.loads(tok)
            if not isinstance(tok, str) or not tok or "\x00" in tok:
                raise NbtextError(f"{source}:{n}: a token must be a non-empty JSON string without NUL")
            tokens.append(tok)
            row = [float(c) for c in counts]
            if MAX_COUNT in row or max(row) > MAX_COUNT:  # (exactly: 9007199254740993 floats to 2**53)
                try:
                    row = [count_of(c) for c in counts]
                except ValueError as e:
                    raise NbtextError(f"{source}:{n}: {e}") from None
            if settings.idf:
                doc_freq.append(row[k])
            for c in range(k):
                if row[c]:
                    at.append(c)
                    values.append(row[c])
            indptr.append(len(values))
        sums = TokenSums.of_csr(np.frombuffer(indptr, dtype=np.int64), np.frombuffer(at, dtype=np.int64),
                                np.frombuffer(values, dtype=np.float64), k)
        counts = Counts.of_token_sums(classes, sums, np.asarray(class_count, dtype=np.float64),
                                      np.frombuffer(doc_freq, dtype=np.float64) if settings.idf else None)
        check_documents(classes, class_count, counts)  # (as a model file's: import writes no file load refuses)
        # (an older nbtext's dump holds no days: its tokens are counted as of the import)
        counts.last_seen[:] = days if per_token else counts.today if day is None else day
        model = Model(tokenizer, settings, Vocabulary(tokens), counts, decision, ledger, pruned,
                      _layer_of(settings_line.get("layer"), k, len(tokens)))
    except (KeyError, TypeError, ValueError, OverflowError, StopIteration, RecursionError) as e:
        raise NbtextError(f"{source}: malformed dump ({e.__class__.__name__}: {e})") from None
    except NbtextError as e:
        if str(e).startswith(source) or isinstance(e, KernelError):
            raise
        raise NbtextError(f"{source}: malformed dump ({e})") from None
    if len(set(tokens)) != len(tokens):
        raise NbtextError(f"{source}: malformed dump (a token appears twice)")
    return model


def _layer_of(d, k: int, n_tokens: int):
    """A dump's decision layer (export's _layer), checked as a model file's (store.codec)."""
    from .codec import layer_fields, layer_of

    if d is None:
        return None
    if not isinstance(d, dict) or not isinstance(d.get("weights"), list):
        raise ValueError("layer must hold weights, a list")
    rows = d["weights"]
    j = 1 if k == 2 else k
    if not all(isinstance(r, list) and len(r) == j + 1 and type(r[0]) is int
               and all(type(x) in (int, float) for x in r[1:]) for r in rows):
        raise ValueError(f"layer weights must be [token line, {j} numbers] each")
    constants = layer_fields({key: v for key, v in d.items() if key != "weights"}, k)
    ids = np.asarray([r[0] for r in rows], dtype=np.int64)
    weights = np.asarray([r[1:] for r in rows], dtype=np.float64).reshape(len(rows), j)
    return layer_of(constants, ids, weights, n_tokens)
