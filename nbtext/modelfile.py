"""The model file: one self-checking binary file, data only (never pickle).

Layout (all integers little-endian):

    8 bytes   magic  b"NBTEXT\\x1a\\n"
    4 bytes   format version (uint32)
    8 bytes   header length H (uint64)
    4 bytes   CRC-32 of the header
    H bytes   header: UTF-8 JSON (settings, classes, section table, payload CRC-32, ...)
    padding   to a multiple of 8
    payload   sections, each 8-byte aligned:
                vocab_fc       the tokens in UTF-8 byte order, front-coded in blocks of BLOCK:
                               each entry is one byte p+1, the token's bytes after the p it
                               shares with the entry before (p = 0 at a block's head), a NUL
                vocab_heads    uint32/uint64 (ceil(V / BLOCK)): where each block's head starts
                counts         (n_classes, V) raw counts, in the smallest unsigned type that
                               holds them (uint8/16/32), float64 when any is fractional
                ledger         16-byte BLAKE2b digests of learned documents, sorted
                doc_freq       (V,) documents per term; only in --idf models

Token i of the sorted vocabulary is column i of the counts. `nbtext classify` finds a message's
tokens in place, without numpy and without building a dict of the whole vocabulary: a binary
search over the block heads, then at most BLOCK entries decoded. Sorted and front-coded, the
vocabulary takes 3.2 MB instead of 5.8 MB raw plus 5.9 MB of offsets and hash table (format 1)
on spamassassin-2002, and the whole model 4.9 MB instead of 15.3 MB (bogofilter's wordlist:
5.6 MB). Format 1 files are still read.

Files are written to a temporary file in the same directory, fsynced and renamed over the old
one, so readers and crashes see either the old model or the new one. This module's reading half
imports nothing heavier than json and zlib.
"""
from __future__ import annotations

import json
import os
import struct
import sys
import zlib

from .errors import ModelFileError, NbtextError

MAGIC = b"NBTEXT\x1a\n"
FORMAT_VERSION = 2
BLOCK = 16  # tokens per front-coded block: 16 -> 3.20 MB, 64 -> 2.98 MB, 8 -> 3.49 MB (spamassassin)
PREFIX = struct.Struct("<8sIQI")
ALIGN = 8
PICKLE_OPCODES = (b"\x80", b"(", b"}", b"]", b"c")


def _pad(n: int) -> int:
    return -n % ALIGN


def describe_foreign(head: bytes) -> str:
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "a Python pickle, which nbtext never loads (it could run code)"
    if head[:6] == b"\x93NUMPY" or head[:2] == b"PK":
        return "a numpy/zip archive, not an nbtext model"
    if head[:1] in (b"{", b"["):
        return "JSON text, not an nbtext model (use 'nbtext import' for a text dump)"
    if head.startswith(b"# nbtext"):
        return "an nbtext text dump (turn it back into a model with 'nbtext import')"
    return "not an nbtext model file"


def read_container(path: str) -> tuple[dict, memoryview]:
    """The header and the verified payload of a model file, or ModelFileError saying why not."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such model file") from None
    except IsADirectoryError:
        raise ModelFileError(f"{path}: is a directory, not a model file") from None
    except OSError as e:
        raise ModelFileError(f"{path}: cannot read model file: {e.strerror}") from None
    if len(data) < PREFIX.size:
        if MAGIC.startswith(data[:8]) and data:
            raise ModelFileError(f"{path}: truncated model file ({len(data)} bytes)")
        raise ModelFileError(f"{path}: {describe_foreign(data) if data else 'empty file, not a model'}")
    magic, version, hlen, hcrc = PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise ModelFileError(f"{path}: {describe_foreign(data[:16])}")
    if version > FORMAT_VERSION:
        raise ModelFileError(
            f"{path}: written by a newer nbtext (model format {version}; "
            f"this nbtext reads format {FORMAT_VERSION} and older)")
    start = PREFIX.size
    if start + hlen > len(data):
        raise ModelFileError(f"{path}: truncated model file (header cut short)")
    raw_header = data[start:start + hlen]
    if zlib.crc32(raw_header) != hcrc:
        raise ModelFileError(f"{path}: corrupt model file (header checksum mismatch)")
    try:
        header = json.loads(raw_header)
    except ValueError:
        raise ModelFileError(f"{path}: corrupt model file (header is not JSON)") from None
    pstart = start + hlen + _pad(start + hlen)
    if any(data[start + hlen:pstart]):
        raise ModelFileError(f"{path}: corrupt model file (padding after the header is not zero)")
    plen = header.get("payload_length", -1)
    if pstart + plen > len(data):
        raise ModelFileError(
            f"{path}: truncated model file ({len(data)} bytes, expected {pstart + plen})")
    if pstart + plen < len(data):
        raise ModelFileError(f"{path}: corrupt model file (trailing bytes after the payload)")
    payload = memoryview(data)[pstart:pstart + plen]
    if zlib.crc32(payload) != header.get("payload_crc32"):
        raise ModelFileError(f"{path}: corrupt model file (payload checksum mismatch)")
    header["format_version"] = version  # not stored in the JSON: the prefix holds it
    return header, payload


def section(header: dict, payload: memoryview, name: str) -> memoryview:
    """A typed, zero-copy view of a section ('I', 'Q', 'd' or 'B' items)."""
    s = header["sections"][name]
    view = payload[s["offset"]:s["offset"] + s["length"]]
    code = {"<u2": "H", "<u4": "I", "<u8": "Q", "<f8": "d", "|u1": "B"}[s["dtype"]]
    if code != "B" and sys.byteorder != "little":
        from array import array

        arr = array(code, bytes(view))
        arr.byteswap()
        return memoryview(arr)
    return view.cast(code)


class HashedVocabulary:
    """Token ids looked up in a format 1 file: open addressing on crc32(token), linear probing,
    a slot holds id+1 (0 = empty) over NUL-terminated tokens and their offsets."""

    def __init__(self, header: dict, payload: memoryview, n_features: int):
        self.blob = section(header, payload, "vocab_blob")
        self.offsets = section(header, payload, "vocab_offsets")
        self.slots = section(header, payload, "hash_slots")
        self.mask = len(self.slots) - 1
        if len(self.offsets) != n_features + 1 or len(self.slots) & self.mask:
            raise ValueError("hash table does not match the vocabulary size")

    def token_id(self, key: bytes) -> int | None:
        slots, offsets, blob, mask = self.slots, self.offsets, self.blob, self.mask
        i = zlib.crc32(key) & mask
        for _ in range(len(slots)):
            slot = slots[i]
            if slot == 0:
                return None
            tid = slot - 1
            a, b = offsets[tid], offsets[tid + 1] - 1
            if b - a == len(key) and blob[a:b] == key:
                return tid
            i = (i + 1) & mask
        return None


def vocabulary_index(header: dict, payload: memoryview, n_features: int):
    """The in-place token lookup of a file of either format."""
    if "vocab_fc" in header["sections"]:
        return SortedVocabulary(header, payload, n_features)
    return HashedVocabulary(header, payload, n_features)


class SortedVocabulary:
    """Token ids looked up in the front-coded vocabulary of a format 2 file, in place."""

    def __init__(self, header: dict, payload: memoryview, n_features: int):
        self.fc = bytes(section(header, payload, "vocab_fc"))
        self.heads = section(header, payload, "vocab_heads")
        self.block = int(header.get("vocab_block", BLOCK))
        if len(self.heads) != -(-n_features // self.block) or (n_features and self.heads[0] != 0):
            raise ValueError("vocabulary blocks do not match the vocabulary size")

    def _head(self, b: int) -> bytes:
        start = self.heads[b] + 1
        return self.fc[start:self.fc.index(b"\x00", start)]

    def token_id(self, key: bytes) -> int | None:
        heads, fc = self.heads, self.fc
        lo, hi = 0, len(heads)
        while lo < hi:  # the last block whose head is <= key
            mid = (lo + hi) // 2
            if self._head(mid) <= key:
                lo = mid + 1
            else:
                hi = mid
        if lo == 0:
            return None
        b = lo - 1
        pos, end, tid, prev = heads[b], heads[lo] if lo < len(heads) else len(fc), b * self.block, b""
        while pos < end:
            nul = fc.index(b"\x00", pos)
            prev = prev[:fc[pos] - 1] + fc[pos + 1:nul]
            if prev >= key:
                return tid if prev == key else None
            pos, tid = nul + 1, tid + 1
        return None


# --------------------------------------------------------------------------------------
# The numpy half: whole models in and out.
# --------------------------------------------------------------------------------------

def _words(b, starts, lengths, depth: int):
    """Bytes depth..depth+7 of each token as one big-endian uint64, zero past its end. Read in
    place, eight bytes at any offset through a view with a one-byte stride (a copy of eight
    bytes per token, and a padded copy of the whole vocabulary, were the peak of saving)."""
    import numpy as np

    pos = starts + depth
    word = np.zeros(len(pos), dtype=np.uint64)
    inside = pos <= len(b) - 8
    if len(b) >= 8:
        eights = np.ndarray((len(b) - 7,), dtype=">u8", buffer=b, strides=(1,))
        word[inside] = eights[pos[inside]]
    for i in np.flatnonzero(~inside):  # the last few tokens: fewer than 8 bytes to the end
        word[i] = int.from_bytes(bytes(b[pos[i]:pos[i] + 8]).ljust(8, b"\0"), "big")
    kept = np.clip(lengths - depth, 0, 8)
    shift = ((8 - kept) * 8).astype(np.uint64)
    shift[kept == 0] = 0
    word >>= shift
    word <<= shift
    word[kept == 0] = 0
    return word


def _byte_order(b, starts, lengths):
    """The permutation sorting the tokens by their bytes: sorted on their first 8 bytes, then
    only the ties on the next 8, and so on (0.06 s for spamassassin's 441,690 tokens, where
    sorting the Python strings took 0.45 s). Positions are 32-bit while they fit: this sort is
    the peak of saving a model."""
    import numpy as np

    n = len(starts)
    pos = np.int32 if n < 2**31 else np.int64
    order = np.arange(n, dtype=pos)
    group = np.zeros(n, dtype=pos)  # per sorted position: where its run of ties starts
    active = np.arange(n, dtype=pos)  # sorted positions still tied with a neighbour
    depth, longest = 0, int(lengths.max()) if n else 0
    while len(active) > 1 and depth <= longest:
        ids = order[active]
        word = _words(b, starts[ids], lengths[ids], depth)
        sub = np.lexsort((word, group[active]))
        ids, word, g = ids[sub], word[sub], group[active][sub]
        del sub
        order[active] = ids
        new = np.ones(len(active), dtype=bool)
        new[1:] = (g[1:] != g[:-1]) | (word[1:] != word[:-1])
        del ids, word, g
        firsts = np.flatnonzero(new)
        group[active] = active[firsts][np.cumsum(new, dtype=pos) - 1]
        sizes = np.diff(np.append(firsts, len(active)))
        active = active[np.repeat(sizes > 1, sizes)]
        depth += 8
    return order


def _spans(total: int, starts, lengths):
    """A boolean mask of ``total`` items, True inside each [start, start + length)."""
    import numpy as np

    delta = np.zeros(total + 1, dtype=np.int8)
    some = lengths > 0
    delta[starts[some]] = 1                # spans do not overlap: distinct starts, distinct ends
    delta[(starts + lengths)[some]] -= 1
    return np.cumsum(delta[:-1], dtype=np.int8).view(bool)


FRONT_CODE_PIECE = BLOCK * 4096  # tokens front-coded at a time (whole blocks: independent)


def front_code(blob: bytes) -> tuple[bytes, "np.ndarray", "np.ndarray"]:
    """(front-coded vocabulary, block head offsets, the sorting permutation) of NUL-terminated
    UTF-8 tokens (Vocabulary.encoded()).

    Every block starts with a whole token, so the sorted tokens are coded a piece of whole
    blocks at a time, with the same bytes as in one go (spamassassin: peak 49 -> 31 MB with
    the sort read in place, see _words)."""
    import numpy as np

    from .vectorize import gather, token_spans

    b = np.frombuffer(blob, dtype=np.uint8)
    starts, lengths = token_spans(b)
    if len(b) < 2**31:
        starts, lengths = starts.astype(np.int32), lengths.astype(np.int32)
    order = _byte_order(b, starts, lengths)
    del b
    pieces, heads, at = [], [], 0
    for i in range(0, len(order), FRONT_CODE_PIECE):
        rows = order[i:i + FRONT_CODE_PIECE]
        out, entry = _front_code_sorted(gather(blob, starts, lengths, rows), lengths[rows])
        pieces.append(out)
        heads.append(at + entry[::BLOCK])
        at += len(out)
    heads = np.concatenate(heads) if heads else np.zeros(0, dtype=np.int64)
    return b"".join(pieces), heads, order


def _front_code_sorted(tokens: bytes, length) -> tuple[bytes, "np.ndarray"]:
    """(front-coded bytes, offset of each entry) of sorted NUL-terminated tokens whose first
    one starts a block: each entry is 1 + the bytes it shares with the token before (0 at a
    block's head, at most 254), then the rest of the token and its NUL."""
    import numpy as np

    srt = np.frombuffer(tokens, dtype=np.uint8)
    n = len(length)
    s = np.cumsum(length + 1) - (length + 1)
    shared = np.zeros(n, dtype=np.int64)  # bytes each token shares with the one before
    active, j = np.arange(1, n), 0
    while len(active):  # NUL-terminated and distinct, so every comparison ends by a mismatch
        same = srt[s[active - 1] + j] == srt[s[active] + j]
        shared[active[~same]] = j
        active, j = active[same], j + 1
    shared = np.minimum(shared, 254)
    shared[::BLOCK] = 0
    kept = srt[~_spans(len(srt), s, shared)]   # each token without its shared prefix
    rest_start = s - (np.cumsum(shared) - shared)
    out = np.insert(kept, rest_start, (shared + 1).astype(np.uint8))
    return out.tobytes(), rest_start + np.arange(n)


def front_decode(fc: bytes, block: int) -> bytes:
    """The NUL-terminated tokens of a front-coded vocabulary (see front_code), decoded block
    row by block row with numpy; ValueError when the entries do not fit together."""
    import numpy as np

    from .vectorize import ranges, token_spans

    if block < 1:
        raise ValueError(f"vocabulary block size {block}")
    f = np.frombuffer(fc, dtype=np.uint8)
    if len(f) and f[-1] != 0:
        raise ValueError("vocabulary does not end with a NUL")
    starts, entry = token_spans(f)  # an entry: its shared-prefix byte, then the rest
    n = len(starts)
    if n and (entry < 1).any():
        raise ValueError("empty vocabulary entry")
    shared = f[starts].astype(np.int64) - 1 if n else np.zeros(0, dtype=np.int64)
    length = shared + (entry - 1)
    if (shared[::block] != 0).any() or (shared[1:] > length[:-1]).any() or (shared < 0).any():
        raise ValueError("vocabulary entries share more than the entry before holds")
    out_start = np.cumsum(length + 1) - (length + 1)
    total = int((length + 1).sum())
    out = np.zeros(total, dtype=np.uint8)
    head = np.zeros(len(f), dtype=bool)
    head[starts] = True
    out[~_spans(total, out_start, shared)] = f[~head]  # the bytes after each shared prefix, NULs
    for r in range(1, block):  # row r of every block copies its prefix from row r-1
        i = np.arange(r, n, block)
        i = i[shared[i] > 0]
        out[ranges(out_start[i], shared[i])] = out[ranges(out_start[i - 1], shared[i])]
    return out.tobytes()


def derived_values(model) -> dict:
    """Per-class sums over the whole vocabulary, cached so the pure-Python scorer never
    has to walk the vocabulary. Recomputed from the counts at every save, summed over
    C-ordered copies so that equal counts give equal bytes whatever their memory layout."""
    import numpy as np

    est = model.estimator
    out = {"feature_total": np.ascontiguousarray(model.feature_count).sum(axis=1).tolist()}
    if model.settings.variant == "bernoulli" and len(model.vocab):
        out["bernoulli_neg_sum"] = est._params()[2].tolist()
    if model.settings.variant == "complement" and len(model.vocab):
        fc, alpha = np.ascontiguousarray(est.weighted_counts()), model.settings.alpha
        out["feature_total"] = fc.sum(axis=1).tolist()
        if model.settings.norm:
            comp = fc.sum(axis=0) + alpha - fc
            logged = np.log(comp) - np.log(comp.sum(axis=1, keepdims=True))
            out["complement_log_sum"] = logged.sum(axis=1).tolist()
    return out


def _array_section(name: str, a) -> tuple:
    """Whole numbers in the smallest unsigned type that holds them (spamassassin's counts fit
    uint16: 1.8 MB where float64 takes 7.1), anything else as float64."""
    import numpy as np

    a = np.ascontiguousarray(a, dtype=np.float64)
    flat, step = a.reshape(-1), 1 << 16  # (checked a slice at a time: no rounded copy of it all)
    whole = a.size == 0 or (a.min() >= 0 and all(
        np.array_equal(flat[i:i + step], np.round(flat[i:i + step])) for i in range(0, a.size, step)))
    top = a.max() if a.size else 0
    dtype = ("|u1" if top < 2**8 else "<u2" if top < 2**16 else "<u4" if top < 2**32 else "<f8") \
        if whole else "<f8"
    return (name, dtype, a.shape, a.astype(dtype).tobytes())


def encode(model) -> bytes:
    """The model file's bytes."""
    return b"".join(encode_pieces(model))


def encode_pieces(model) -> list:
    """The model file as consecutive pieces, which save writes one by one: joined, the
    payload and then the whole file were two more copies of it in memory."""
    import dataclasses

    import numpy as np

    from . import __version__

    fc, heads, order = front_code(model.vocab.buffer())
    # The columns in the file's (sorted) order, so that the derived sums, too, depend only on
    # the counts per token and not on the order tokens were first seen in. (The vocabulary
    # object is only asked for its length here.)
    model = dataclasses.replace(
        model, feature_count=np.asarray(model.feature_count)[:, order],
        doc_freq=None if model.doc_freq is None else np.asarray(model.doc_freq)[order])
    head_dtype = "<u4" if len(fc) < 2**32 else "<u8"
    ledger = b"".join(sorted(model.ledger))
    arrays = [
        ("vocab_fc", "|u1", (len(fc),), fc),
        ("vocab_heads", head_dtype, heads.shape, heads.astype(head_dtype).tobytes()),
        _array_section("counts", model.feature_count),
        ("ledger", "|u1", (len(ledger),), ledger),
    ]
    if model.doc_freq is not None:
        arrays.append(_array_section("doc_freq", model.doc_freq))
    derived = derived_values(model)
    model.feature_count = model.doc_freq = None  # (reordered copies, now in the sections)
    sections, chunks, offset, crc = {}, [], 0, 0
    for name, dtype, shape, raw in arrays:
        sections[name] = {"offset": offset, "length": len(raw), "dtype": dtype, "shape": list(shape)}
        chunks += [raw, b"\x00" * _pad(len(raw))]
        offset += len(raw) + _pad(len(raw))
    for chunk in chunks:
        crc = zlib.crc32(chunk, crc)
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
        "sections": sections,
        "payload_length": offset,
        "payload_crc32": crc,
    }
    raw_header = json.dumps(header, sort_keys=True).encode("utf-8")
    prefix = PREFIX.pack(MAGIC, FORMAT_VERSION, len(raw_header), zlib.crc32(raw_header))
    head = prefix + raw_header
    return [head + b"\x00" * _pad(len(head)), *chunks]


def decode(header: dict, payload: memoryview, path: str = "model"):
    import numpy as np

    from .model import Decision, Model
    from .settings import ModelSettings, TokenizerSettings
    from .vectorize import Vocabulary

    try:
        if "vocab_fc" in header["sections"]:
            blob = front_decode(bytes(section(header, payload, "vocab_fc")), int(header["vocab_block"]))
        else:  # format 1: the tokens in id order, NUL-terminated
            blob = bytes(section(header, payload, "vocab_blob"))
        if blob and blob[-1] != 0:
            raise ValueError("vocabulary does not end with a NUL")
        n_tokens = blob.count(0)
        classes = list(header["classes"])
        shape = tuple(header["sections"]["counts"]["shape"])
        counts = np.asarray(section(header, payload, "counts"), dtype=np.float64).reshape(shape)
        ledger_raw = bytes(section(header, payload, "ledger"))
        model = Model(
            TokenizerSettings.from_dict(header["tokenizer"]),
            ModelSettings.from_dict(header["model"]),
            classes,
            Vocabulary.from_encoded(blob),
            counts,
            np.asarray(header["class_count"], dtype=np.float64),
            Decision.from_dict(header["decision"]),
            {ledger_raw[i:i + 16] for i in range(0, len(ledger_raw), 16)},
        )
        if "doc_freq" in header["sections"]:
            model.doc_freq = np.asarray(section(header, payload, "doc_freq"), dtype=np.float64)
        elif model.settings.idf:
            raise ValueError("--idf model without document frequencies")
    except (KeyError, TypeError, ValueError) as e:
        raise ModelFileError(f"{path}: corrupt model file ({e.__class__.__name__}: {e})") from None
    except NbtextError as e:
        raise ModelFileError(f"{path}: corrupt model file ({e})") from None
    if len(model.vocab) != n_tokens:
        raise ModelFileError(f"{path}: corrupt model file (a token appears twice in the vocabulary)")
    if (counts.shape != (len(classes), n_tokens) or len(model.class_count) != len(classes)
            or (model.doc_freq is not None and model.doc_freq.shape != (n_tokens,))):
        raise ModelFileError(f"{path}: corrupt model file (count matrix does not match the vocabulary)")
    return model


def load(path: str):
    header, payload = read_container(path)
    return decode(header, payload, path)


def _remove_stale_temporaries(directory: str, base: str) -> None:
    """Temporary files of writers that were killed (kill -9 leaves them behind)."""
    import glob

    for tmp in glob.glob(os.path.join(glob.escape(directory), f".{glob.escape(base)}.*.tmp")):
        pid = tmp[len(os.path.join(directory, f".{base}.")):-len(".tmp")]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        except PermissionError:
            pass  # alive, and someone else's


def save(model, path: str) -> None:
    """Write atomically: a temporary file in the same directory, fsync, rename over."""
    pieces = encode_pieces(model)
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    tmp = os.path.join(directory, f".{base}.{os.getpid()}.tmp")
    _remove_stale_temporaries(directory, base)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileNotFoundError:
        raise NbtextError(f"{path}: directory {directory} does not exist") from None
    except OSError as e:
        raise NbtextError(f"{path}: cannot write model file: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            for piece in pieces:
                f.write(piece)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise NbtextError(f"{path}: cannot write model file: {e.strerror or e}") from None
        raise
    try:
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass  # some filesystems cannot fsync a directory; the rename is still atomic
