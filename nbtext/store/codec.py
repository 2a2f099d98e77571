"""A Model to and from the model file's sections and header.

    header         format name, nbtext version, tokenizer and model settings, classes, documents
                   per class, vocabulary size and block, the decision, and "derived": the
                   estimator's summary() (per-class sums over the vocabulary that its weights
                   need), so that `classify` computes a message's weights without the whole
                   vocabulary (nbtext.fastscore)
    vocab_fc, vocab_heads   the sorted, front-coded vocabulary (nbtext.store.vocabfile)
    counts         (n_classes, V) raw counts, in the smallest unsigned type that holds them
                   (uint8/16/32), float64 when any is fractional; or, from format 5, for
                   models of three classes or more (nb.counts.SPARSE_FROM), the counts by
                   token, only where not zero, as CSR arrays (docs/state.md):
      counts_indptr  (V + 1,) token i's entries are [indptr[i], indptr[i + 1]) (uint32/64)
      counts_classes (nnz,) their classes, increasing within a token (uint8/16/32)
      counts_values  (nnz,) their counts, none zero, typed as ``counts``; from format 6, where
                     whole counts need more than a byte, a byte each, ESCAPE (255) standing for
                     a count of 255 or more, which is in
      counts_over_at (m,) the places of the ESCAPE bytes in counts_values, increasing (uint32/64)
      counts_over    (m,) their counts, typed as ``counts``
    last_seen      (V,) uint16, per token the last UTC day (days since 1970-01-01) a document
                   holding it was counted (format 5; older files: unknown, nb.counts.UNKNOWN_DAY);
                   where every token has the same day (a model trained at once), the header's
                   "last_seen_day" says it instead (2 bytes a token saved: docs/state.md)
    ledger         16-byte BLAKE2b digests of learned documents, sorted
    doc_freq       (V,) documents per token; only in idf models
    layer_ids      (m,) the decision layer's tokens (nbtext.nb.layer), increasing (uint32/64);
    layer_weights  (m, J) float32 their weights, J the layer's SVMs (format 7; the header's
                   "layer" holds its bias, ratios' denominators, alpha and strength; absent:
                   no layer, as every older file)

Token i of the sorted vocabulary is column i of the counts. The reading half below imports
numpy only inside decode.
"""
from __future__ import annotations

import math
import operator

from ..errors import KernelError, ModelFileError, NbtextError, shown
from .container import frame, read_container, section
from .fields import MAX_COUNT, array_section, names, stored_type, whole_counts
from .vocabfile import BLOCK, SortedVocabulary, VocabularyError, check_tokens, front_code, front_decode


MAX_BLOCK = 4096  # tokens per front-coded block at most (nbtext writes vocabfile.BLOCK)


def meta(d: dict) -> tuple:
    """(tokenizer settings, model settings, classes, documents per class, decision) of a model
    file's header or a dump's settings line, every field checked: ValueError (or SettingError)
    naming the first that is wrong. Files come from strangers: a temperature of -3 inverted
    every verdict, an n-gram size of 1e9 hung every classify."""
    from ..nb.decision import Decision
    from ..settings import VARIANTS, ModelSettings, TokenizerSettings

    tokenizer = TokenizerSettings.from_dict(_object(d, "tokenizer"))
    settings = ModelSettings.from_dict(_object(d, "model"))
    if settings.variant not in VARIANTS:
        raise ValueError(f"model variant must be one of {', '.join(VARIANTS)} in a model, not {settings.variant!r}")
    classes = names(d["classes"], "classes")
    if classes != sorted(set(classes)):
        raise ValueError("classes must be distinct and sorted")
    class_count = whole_counts(d["class_count"], len(classes), "class_count", whole=False)
    decision = Decision.from_dict(_object(d, "decision"))
    decision.check_classes(classes)
    return tokenizer, settings, classes, class_count, decision


# A stored sum over the vocabulary (derived) at most this in size: nbtext's own are logarithms
# and their sums over at most 2**40 tokens (below 1e15); a model's scores stay below 1e107,
# where nbtext.nb.decision's calibration map is finite (NaN came of a stored Infinity).
MAX_SCORE = 1e100
# A decision layer's weight at most this in size: the file stores them as float32 (finite below
# 3.4e38), so that a weight a dump brings is one its model file can hold and read back.
MAX_WEIGHT = 1e38


def _object(d: dict, key: str) -> dict:
    if not isinstance(d[key], dict):
        raise ValueError(f"{key} must be a JSON object")
    return d[key]


def check_header(header: dict) -> int:
    """The vocabulary's size, with the binary header's own fields checked: its size, block and
    the counts' shape (each section's place is checked by container.section)."""
    v, block = header["n_features"], header.get("vocab_block", BLOCK)
    for name, value, hi in (("n_features", v, 1 << 40), ("vocab_block", block, MAX_BLOCK)):
        if not isinstance(value, int) or isinstance(value, bool) or not (name == "n_features" or value >= 1) \
                or not 0 <= value <= hi:
            raise ValueError(f"{name} {value!r} is out of range")
    sections = header["sections"]
    if not isinstance(sections, dict):
        raise ValueError("sections must be a JSON object")
    if "counts" in sections or not any(name in sections for name in SPARSE_SECTIONS):
        if sections["counts"]["shape"] != [len(header["classes"]), v]:
            raise ValueError("the counts' shape does not match the classes and vocabulary")
    else:
        indptr, classes, values = (sections[name]["shape"] for name in SPARSE_SECTIONS)
        if indptr != [v + 1] or classes != values or not (isinstance(values, list) and len(values) == 1):
            raise ValueError("the sparse counts' shapes do not match the vocabulary")
        # (classify indexes by them as stored: a float there is no index, a truncated one a lie)
        for name, what in (("counts_indptr", "token starts"), ("counts_classes", "classes")):
            if sections[name]["dtype"] not in ("|u1", "<u2", "<u4", "<u8"):
                raise ValueError(f"the sparse counts' {what} are not whole numbers")
        if ("counts_over" in sections or "counts_over_at" in sections) and (
                sections["counts_values"]["dtype"] != "|u1"
                or sections["counts_over_at"]["shape"] != sections["counts_over"]["shape"]
                or len(sections["counts_over"]["shape"]) != 1):
            raise ValueError("the sparse counts' large counts do not match their places")
    if "last_seen" in sections and (sections["last_seen"]["shape"] != [v] or sections["last_seen"]["dtype"] != "<u2"):
        raise ValueError("last_seen does not hold a 16-bit day per token")
    return v


SPARSE_SECTIONS = ("counts_indptr", "counts_classes", "counts_values")
ESCAPE = 255  # a sparse count's byte that stands for one in counts_over (format 6)


# What check_sparse and layer_of refuse, said alike by classify's checks of what it reads
# (nbtext.fastscore, which reads the sections in place, without numpy).
BAD_STARTS = "the sparse counts' token starts are out of order"
BAD_CLASS = "the sparse counts name a class past the classes"
BAD_ORDER = "a token's classes are not increasing"
BAD_SPARSE = "sparse counts must be numbers above 0 to 2**53"
BAD_COUNTS = "{} must be numbers from 0 to 2**53"
BAD_LAYER_IDS = "the layer's tokens must be increasing ids of the vocabulary"
BAD_LAYER_WEIGHTS = f"the layer's weights must be numbers from -{MAX_WEIGHT:g} to {MAX_WEIGHT:g}"


def sparse_row(indptr, classes, values, tid: int, k: int) -> tuple[range, list]:
    """(the entries, their classes) of token ``tid``'s sparse counts read in place (classify),
    checked as check_sparse checks them all: ValueError when its start and end do not fit or
    its classes are not increasing below k. (Its counts are count_read's to check.)"""
    lo, hi = indptr[tid], indptr[tid + 1]
    if not lo <= hi <= len(values):
        raise ValueError(BAD_STARTS)
    row = list(classes[lo:hi])
    if row and row[-1] >= k:
        raise ValueError(BAD_CLASS)
    if not all(map(operator.lt, row, row[1:])):
        raise ValueError(BAD_ORDER)
    return range(lo, hi), row


def count_read(x, what: str = "counts", sparse: bool = False) -> float:
    """A count read in place (classify), as a float: ValueError unless from 0 to 2**53 (above
    0 where ``sparse``; not NaN), as decode checks them all: a count of NaN, -2 or infinity
    gave classify and the daemon NaN or a math domain error."""
    x = float(x)
    if not ((0 < x if sparse else 0 <= x) and x <= MAX_COUNT):
        raise ValueError(BAD_SPARSE if sparse else BAD_COUNTS.format(what))
    return x


# A token's documents are at most the documents learned: idf, log(N / df), is below 0 past
# them, and Complement NB's logarithms of idf-weighted counts went negative (NaN in predict, a
# math domain error in classify). (With fractional sample weights the two sums are of the same
# weights in other orders: a last bit's leeway.)
BAD_DOC_FREQ = "document frequencies must be at most the documents learned"


def documents_most(class_count) -> float:
    """The most documents a token may be in: those learned, with a last bit's leeway."""
    return float(sum(class_count)) * (1 + 1e-12)


def check_documents(classes, class_count, counts) -> None:
    """ValueError unless ``counts`` (nb.counts.Counts: a model file's or a dump's) agree with
    the documents learned (``class_count``): no token in more documents (BAD_DOC_FREQ), no
    class of 0 documents with counts (check_empty_classes)."""
    doc_freq = counts.doc_freq  # (zeros where the file holds none)
    if len(doc_freq) and doc_freq.max() > documents_most(class_count):
        raise ValueError(BAD_DOC_FREQ)
    check_empty_classes(classes, class_count, counts.class_totals())


def check_empty_classes(classes, class_count, totals) -> None:
    """ValueError unless a class of 0 documents has counts of 0 (``totals``: the class's counts,
    summed over the tokens, or one token's): its counts came from no document. Such a file
    (checksums intact) was scored by every command, its class's prior log 0 printed as
    -Infinity in predict's JSON, and Complement NB weighed the other classes by those counts.
    A class that `learn --forget` took every document out of has counts of 0 as well."""
    for c, n, total in zip(classes, class_count, totals):
        if n == 0 and total > 0:
            raise ValueError(f"the counts of class {c!r} must be 0: it has 0 documents")


def check_layer_ids_in_place(ids, n_tokens: int) -> None:
    """layer_of's check of a layer's ids as stored (a memoryview: classify imports no numpy),
    in one pass, at load: classify finds a token's weights by a binary search of the ids,
    which, out of order, silently found none. (Its weights are checked as they are read:
    weights_read.)"""
    if len(ids) and (ids[-1] >= n_tokens or not all(map(operator.lt, ids[:-1], ids[1:]))):
        raise ValueError(BAD_LAYER_IDS)


def weights_read(w: list) -> list:
    """A token's layer weights read in place (classify), checked as layer_of checks them all."""
    if not all(abs(x) <= MAX_WEIGHT for x in w):  # (also NaN)
        raise ValueError(BAD_LAYER_WEIGHTS)
    return w


def check_sparse(indptr, classes, values, k: int) -> None:
    """Refuse CSR counts (numpy arrays) that are not as nbtext writes them: starts from 0 to the
    entries, increasing; classes below k, increasing within a token; counts from 1 to 2**53
    (none zero: the stored form of counts is one). Their types are check_header's: unsigned."""
    import numpy as np

    from ..nb.sparse import TokenSums

    if indptr[0] != 0 or indptr[-1] != len(values) or (np.diff(indptr) < 0).any():
        raise ValueError(BAD_STARTS)
    if len(classes) and int(classes.max()) >= k:
        raise ValueError(BAD_CLASS)
    # (piece by piece: a piece's first key is past the last piece's keys, its token being later)
    for _, tok, cls in TokenSums.of_csr(indptr, classes, values, k).pieces():
        if (np.diff(tok * k + cls) <= 0).any():
            raise ValueError(BAD_ORDER)
    if len(values) and not ((values > 0).all() and (values <= MAX_COUNT).all()):
        raise ValueError(BAD_SPARSE)


def sparse_values(header: dict, payload: memoryview, stored):
    """The sparse counts' values (numpy, float64) of counts_values as stored, each ESCAPE byte
    replaced by its count in counts_over (format 6); ValueError when the places listed are not
    exactly those of the ESCAPE bytes, or a count there is below ESCAPE or above 2**53."""
    import numpy as np

    values = stored.astype(np.float64)
    if "counts_over" not in header["sections"]:
        return values
    at = np.asarray(section(header, payload, "counts_over_at")).astype(np.int64)
    over = np.asarray(section(header, payload, "counts_over"), dtype=np.float64)
    if not np.array_equal(at, np.flatnonzero(stored == ESCAPE)):
        raise ValueError("the sparse counts' large counts are not where their bytes say")
    if len(over) and not ((over >= ESCAPE).all() and (over <= MAX_COUNT).all()):
        raise ValueError(f"the sparse counts' large counts must be numbers from {ESCAPE} to 2**53")
    values[at] = over
    return values


def summary(header: dict) -> dict:
    """The estimator's summary as stored, also for files of format 2 and older, whose header
    held the sums it is made of (feature totals: log_den = log(N_c + alpha V), or for Complement
    NB log(N + alpha V - N_c) of the IDF-weighted totals)."""
    out = _stored_summary(header)
    k = len(header["classes"])
    from ..nb.weights import VARIANTS
    from ..settings import ModelSettings

    settings = ModelSettings.from_dict(header["model"])
    for key in VARIANTS[settings.variant].summary_keys(settings):
        if key not in out:
            raise ValueError(f"derived {key} is missing")
    for key, values in out.items():
        if not (isinstance(values, list) and len(values) == k
                and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values)):
            raise ValueError(f"derived {key} must hold a number per class")
        if not all(abs(x) <= MAX_SCORE for x in values):  # (also NaN, and JSON's Infinity)
            raise ValueError(f"derived {key} must hold numbers from -{MAX_SCORE:g} to {MAX_SCORE:g}")
    return out


# How far a stored sum may be from the same sum made from the counts: sums of the same counts
# in another order (an older nbtext's) differ in their last bits, and classify and predict
# agree to 1e-9 (tests/test_modelfile.py).
SUMMARY_TOLERANCE = 1e-9


def check_summary(stored: dict, made: dict) -> None:
    """ValueError unless the header's derived sums (``stored``: summary()) are those of the
    file's counts (``made``: the estimator's summary()): classify and the daemon score with the
    stored sums, predict with sums made from the counts, so a file whose two disagree gave
    two verdicts on one message."""
    import numpy as np

    for key, values in made.items():
        if not np.allclose(stored[key], values, rtol=SUMMARY_TOLERANCE, atol=SUMMARY_TOLERANCE):
            raise ValueError(f"derived {key} is not the sum of the counts")


def _stored_summary(header: dict) -> dict:
    derived = header["derived"]
    if not isinstance(derived, dict):
        raise ValueError("derived must be a JSON object")
    if header["format_version"] >= 3:
        return derived
    variant, alpha, v = header["model"]["variant"], float(header["model"]["alpha"]), int(header["n_features"])
    if variant == "bernoulli":
        return {"neg_sum": derived.get("bernoulli_neg_sum", [0.0] * len(header["classes"]))}
    totals = derived["feature_total"]
    if variant == "multinomial":
        return {"log_den": [math.log(t + alpha * v) for t in totals]}
    grand = sum(totals)
    out = {"log_den": [math.log(grand + alpha * v - t) for t in totals]}
    if "complement_log_sum" in derived:
        out["log_sum"] = derived["complement_log_sum"]
    return out


def _counts_sections(counts) -> list:
    """The counts' sections: by token, only where not zero, for counts held so (three classes
    or more: the smaller file there, docs/state.md), else the classes x tokens array."""
    if not counts.sparse:
        return [array_section("counts", counts.feature_count)]
    from ..nb.sparse import class_dtype

    s = counts.token_sums
    ptr = "<u4" if s.indptr[-1] < 2**32 else "<u8"
    cls = {1: "|u1", 2: "<u2"}.get(class_dtype(s.k)().itemsize, "<u4")
    return [("counts_indptr", ptr, s.indptr.shape, s.indptr.astype(ptr).tobytes()),
            ("counts_classes", cls, s.classes.shape, s.classes.astype(cls).tobytes()),
            *_values_sections(s.values)]


def _values_sections(values) -> list:
    """Sparse counts' values: in their smallest type where that is a byte or float64, else a byte
    each with the counts of ESCAPE or more listed apart (format 6): nearly every count of a large
    vocabulary's tokens is small, and the few large ones, a common token's, made every count
    two or four bytes (docs/memory.md)."""
    import numpy as np

    if stored_type(values) in ("|u1", "<f8"):
        return [array_section("counts_values", values)]
    at = np.flatnonzero(values >= ESCAPE)
    small = np.empty(len(values), dtype=np.uint8)
    np.minimum(values, ESCAPE, out=small, casting="unsafe")
    place = "<u4" if len(values) < 2**32 else "<u8"
    return [("counts_values", "|u1", small.shape, small),
            ("counts_over_at", place, at.shape, at.astype(place).tobytes()),
            array_section("counts_over", values[at])]


def encode(model) -> bytes:
    """The model file's bytes."""
    return b"".join(encode_pieces(model))


def _coded(model) -> tuple:
    """((front-coded tokens, block heads), the counts in the tokens' sorted order, the layer in
    it): the sorting permutation (8 bytes a token) is not kept once the counts are put in it."""
    fc, heads, order = front_code(model.vocab.buffer())
    layer = model.layer.kept(order, len(order)) if model.layer is not None else None
    return (fc, heads), model.counts.columns(order, doc_freq=model.settings.idf), layer


def _layer_sections(layer) -> list:
    ids = "<u4" if not len(layer.ids) or layer.ids[-1] < 2**32 else "<u8"
    return [("layer_ids", ids, layer.ids.shape, layer.ids.astype(ids).tobytes()),
            ("layer_weights", "<f4", layer.weights.shape, layer.weights.astype("<f4").tobytes())]


LAYER_FIELDS = {"alpha", "strength", "min_count", "bias", "den", "den_not"}


def layer_fields(d, k: int) -> dict:
    """A decision layer's constants (a model file's header "layer", a dump's), every one checked:
    ValueError naming the first that is wrong."""
    if not isinstance(d, dict) or set(d) != LAYER_FIELDS:
        raise ValueError("layer must be {alpha, strength, min_count, bias, den, den_not}")
    if not (type(d["min_count"]) is int and 1 <= d["min_count"] <= MAX_COUNT):
        raise ValueError("layer min_count must be a whole number from 1 to 2**53")
    j = 1 if k == 2 else k
    for name, value, lo, hi in (("alpha", d["alpha"], 1e-10, 1e6), ("strength", d["strength"], 0.0, 1e6)):
        if not (type(value) in (int, float) and lo <= value <= hi):
            raise ValueError(f"layer {name} must be a number from {lo:g} to {hi:g}")
    for name, n in (("bias", j), ("den", k), ("den_not", k)):
        values = d[name]
        if not (isinstance(values, list) and len(values) == n and all(
                type(x) in (int, float) and abs(x) <= MAX_SCORE for x in values)):
            raise ValueError(f"layer {name} must hold {n} numbers from -{MAX_SCORE:g} to {MAX_SCORE:g}")
    return d


def layer_header(header: dict, k: int, n_tokens: int) -> dict | None:
    """The header's decision layer, every field checked (ValueError naming the first that is
    wrong), with its sections' shapes; None where the file has none."""
    d = header.get("layer")
    if d is None:
        if any(name in header["sections"] for name in LAYER_SECTIONS):  # (scored without them, silently)
            raise ValueError("the layer's sections are in the file without the header's layer")
        return None
    layer_fields(d, k)
    j = 1 if k == 2 else k
    sections = header["sections"]
    if not all(isinstance(sections.get(name), dict) for name in LAYER_SECTIONS):
        raise ValueError("the layer's sections are missing")
    if sections["layer_ids"].get("dtype") not in ("<u4", "<u8") or sections["layer_weights"].get("dtype") != "<f4":
        raise ValueError("the layer's sections must be whole ids and float32 weights")
    m = sections["layer_ids"]["shape"]
    if not (isinstance(m, list) and len(m) == 1 and sections["layer_weights"]["shape"] == [m[0], j]
            and isinstance(m[0], int) and m[0] <= n_tokens):
        raise ValueError(f"the layer's sections do not hold a token and {j} weights each")
    return d


def layer_of(d: dict, ids, weights, n_tokens: int):
    """The decision layer (nbtext.nb.layer.Layer) of checked constants ``d`` and its tokens' ids
    and weights (arrays, (m,) int64 and (m, J) float64), these checked: increasing ids of the
    vocabulary, finite weights."""
    import numpy as np

    from ..nb.layer import Layer

    if len(ids) and (ids[-1] >= n_tokens or ids[0] < 0 or (len(ids) > 1 and (ids[1:] <= ids[:-1]).any())):
        raise ValueError(BAD_LAYER_IDS)
    if not (np.abs(weights) <= MAX_WEIGHT).all():
        raise ValueError(BAD_LAYER_WEIGHTS)
    return Layer(ids, weights, [float(x) for x in d["bias"]], [float(x) for x in d["den"]],
                 [float(x) for x in d["den_not"]], float(d["alpha"]), float(d["strength"]), d["min_count"])


LAYER_SECTIONS = ("layer_ids", "layer_weights")


def decode_layer(header: dict, payload: memoryview, k: int, n_tokens: int):
    """The file's decision layer (nbtext.nb.layer.Layer), checked; None where it has none."""
    import numpy as np

    d = layer_header(header, k, n_tokens)
    if d is None:
        return None
    ids = np.asarray(section(header, payload, "layer_ids")).astype(np.int64)
    # (the shape layer_header checked: -1 is no width where the layer weighs no token)
    weights = np.asarray(section(header, payload, "layer_weights"), dtype=np.float64).reshape(
        header["sections"]["layer_weights"]["shape"])
    return layer_of(d, ids, weights, n_tokens)


def encode_pieces(model) -> list:
    """The model file as consecutive pieces, which save writes one by one."""
    from .. import __version__
    from ..nb.estimators import make_estimator

    if model.kind == "table":
        from .tables import encode_table

        return encode_table(model)
    (fc, heads), counts, layer = _coded(model)
    head_dtype = "<u4" if len(fc) < 2**32 else "<u8"
    ledger = model.ledger.tobytes()  # (sorted)
    sections = [
        ("vocab_fc", "|u1", (len(fc),), fc),
        ("vocab_heads", head_dtype, heads.shape, heads.astype(head_dtype).tobytes()),
        *_counts_sections(counts),
        ("ledger", "|u1", (len(ledger),), ledger),
    ]
    days = counts.last_seen
    one_day = the_one_day(days)
    if len(days) and one_day is None:
        sections.append(("last_seen", "<u2", (len(days),), days.astype("<u2").tobytes()))
    if model.settings.idf:
        sections.append(array_section("doc_freq", counts.doc_freq))
    if layer is not None:
        sections += _layer_sections(layer)
    derived = make_estimator(model.settings, counts).summary() if len(model.vocab) else {}
    del counts  # (a reordered copy, now in the sections)
    header = {
        "format": "nbtext-model",
        "created_by": f"nbtext {__version__}",
        "tokenizer": model.tokenizer_settings.to_dict(),
        "model": model.settings.to_dict(),
        "classes": list(model.classes),
        "class_count": model.class_count.tolist(),
        "n_features": len(model.vocab),
        "vocab_block": BLOCK,
        "decision": model.decision.to_dict(),
        "derived": derived,
        **({"pruned": model.pruned} if model.pruned else {}),  # (absent: exact counts, the file as before)
        **({} if one_day is None else {"last_seen_day": one_day}),
        **({} if layer is None else {"layer": layer.header()}),
    }
    return frame(header, sections)


def decode(header: dict, payload: memoryview, path: str = "model"):
    import numpy as np

    from ..features.vocabulary import Vocabulary
    from ..ledger import Ledger
    from ..model import Model
    from ..nb.counts import Counts
    from .tables import decode_table, is_table_header

    if is_table_header(header):
        return decode_table(header, payload, path)
    try:
        tokenizer, settings, classes, class_count, decision = meta(header)
        n_tokens = check_header(header)
        if n_tokens:
            summary(header)  # (the classify path reads it: a file with a bad one is corrupt)
        if "vocab_fc" in header["sections"]:
            SortedVocabulary(header, payload, n_tokens)  # (checks the heads the classify path uses)
            blob = front_decode(bytes(section(header, payload, "vocab_fc")), int(header["vocab_block"]))
        else:  # format 1: the tokens in id order, NUL-terminated
            blob = bytes(section(header, payload, "vocab_blob"))
        if blob and blob[-1] != 0:
            raise ValueError("vocabulary does not end with a NUL")
        if blob.count(0) != n_tokens:
            raise ValueError(f"the vocabulary holds {blob.count(0)} tokens, the header says {n_tokens}")
        check_tokens(blob, ordered="vocab_fc" in header["sections"])  # (format 1: in id order)
        sparse = None
        if "counts" in header["sections"]:
            counts = np.asarray(section(header, payload, "counts"), dtype=np.float64).reshape(len(classes), n_tokens)
        else:
            from ..nb.sparse import class_dtype

            sparse = [np.asarray(section(header, payload, name)) for name in SPARSE_SECTIONS]
            sparse = [sparse[0].astype(np.int64), sparse[1], sparse_values(header, payload, sparse[2])]
            check_sparse(*sparse, len(classes))
            sparse[1] = sparse[1].astype(class_dtype(len(classes)))  # (a copy of the file's: counts change)
            counts = None
        last_seen = None
        if "last_seen" in header["sections"] and "last_seen_day" in header:
            raise ValueError("last_seen is both a section and the header's last_seen_day")
        if "last_seen" in header["sections"]:
            last_seen = np.asarray(section(header, payload, "last_seen"), dtype=np.uint16)
        elif "last_seen_day" in header:
            last_seen = np.full(n_tokens, last_seen_day(header["last_seen_day"]), dtype=np.uint16)
        doc_freq = None
        if "doc_freq" in header["sections"]:
            doc_freq = np.asarray(section(header, payload, "doc_freq"), dtype=np.float64)
            if doc_freq.shape != (n_tokens,):
                raise ValueError("document frequencies do not match the vocabulary")
        elif settings.idf:
            raise ValueError("an idf model without document frequencies")
        for name, a in (("counts", counts), ("document frequencies", doc_freq)):
            if a is not None and not ((a >= 0).all() and (a <= MAX_COUNT).all()):
                raise ValueError(BAD_COUNTS.format(name))
        ledger = Ledger.from_bytes(section(header, payload, "ledger"))
        if sparse is None:
            held = Counts.of_arrays(classes, counts, class_count, doc_freq, last_seen)
        else:
            from ..nb.sparse import TokenSums

            held = Counts.of_token_sums(classes, TokenSums.of_csr(*sparse, len(classes)), class_count, doc_freq,
                                        last_seen)
        model = Model(tokenizer, settings, Vocabulary.from_encoded(blob), held, decision,
                      ledger, pruning(header), decode_layer(header, payload, len(classes), n_tokens))
        check_documents(classes, class_count, held)
        if n_tokens:
            check_summary(summary(header), model.estimator.summary())
    except VocabularyError as e:
        raise ModelFileError(f"{path}: corrupt model file ({e})") from None
    except (KeyError, TypeError, ValueError) as e:
        raise ModelFileError(f"{path}: corrupt model file ({e.__class__.__name__}: {e})") from None
    except (ModelFileError, KernelError):
        raise
    except NbtextError as e:
        raise ModelFileError(f"{path}: corrupt model file ({e})") from None
    if len(model.vocab) != n_tokens:
        raise ModelFileError(f"{path}: corrupt model file (a token appears twice in the vocabulary)")
    return model


def the_one_day(days) -> int | None:
    """The day every token was last seen on, where they share one (a model trained at once: the
    header's "last_seen_day", a dump's), else None (none where there are no tokens)."""
    return None if not len(days) or (days != days[0]).any() else int(days[0])


def last_seen_day(day) -> int:
    """A day as last_seen keeps it (a header's or dump's "last_seen_day", a dump's token's),
    checked: ValueError unless it is a whole number from 0 to 65535."""
    if not (type(day) is int and 0 <= day < 2**16):
        raise ValueError(f"last_seen_day {shown(str(day))[:40]!r} is not a day from 0 to 65535")
    return day


def pruning(header: dict) -> dict | None:
    """The header's record of what train's memory budget dropped (None: exact counts), its
    numbers counts as the others are, at most 2**53: merge sums the tokens of its models'
    records, and two near 2**63 made a file this refused."""
    pruned = header.get("pruned")
    if pruned is None:
        return None
    if not (isinstance(pruned, dict) and set(pruned) == {"tokens", "threshold", "documents"}
            and all(type(v) is int and 0 <= v <= MAX_COUNT for v in pruned.values())):
        raise ValueError("pruned must be {tokens, threshold, documents}, whole numbers from 0 to 2**53")
    return pruned


def load(path: str):
    header, payload = read_container(path)
    return decode(header, payload, path)


def as_stored(model):
    """The model as its file holds it, encoded and decoded in memory: the tokens in the
    file's order, so that scoring sums a document's weights in the order a loaded model does
    (the library's TextClassifier, whose probabilities are those `nbtext predict` prints from
    the file, to the last bit)."""
    import io

    from .container import _read

    data = encode(model)
    return decode(*_read(io.BytesIO(data), len(data), "model"), "model")
