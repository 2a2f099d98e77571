"""The model file: one self-checking binary file, data only (never pickle).

Layout (all integers little-endian):

    8 bytes   magic  b"NBTEXT\\x1a\\n"
    4 bytes   format version (uint32)
    8 bytes   header length H (uint64)
    4 bytes   CRC-32 of the header
    H bytes   header: UTF-8 JSON (settings, classes, section table, payload CRC-32, ...)
    padding   to a multiple of 8
    payload   sections, each 8-byte aligned:
                vocab_blob     the tokens, UTF-8, each followed by a NUL
                vocab_offsets  uint32/uint64 (V+1): token i is blob[off[i]:off[i+1]-1]
                hash_slots     uint32, a power of two >= 2V: open addressing on
                               crc32(token) with linear probing; a slot holds id+1, 0 = empty
                counts         (n_classes, V) raw counts, uint32 when all are whole, else float64
                ledger         16-byte BLAKE2b digests of learned documents, sorted
                doc_freq       (V,) documents per term; only in --idf models

The hash table lets `nbtext classify` look up a message's tokens in place, without numpy and
without building a dict of the whole vocabulary. Files are written to a temporary file in the
same directory, fsynced and renamed over the old one, so readers and crashes see either the old
model or the new one. This module's reading half imports nothing heavier than json and zlib.
"""
from __future__ import annotations

import json
import os
import struct
import sys
import zlib

from .errors import ModelFileError, NbtextError

MAGIC = b"NBTEXT\x1a\n"
FORMAT_VERSION = 1
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
    return header, payload


def section(header: dict, payload: memoryview, name: str) -> memoryview:
    """A typed, zero-copy view of a section ('I', 'Q', 'd' or 'B' items)."""
    s = header["sections"][name]
    view = payload[s["offset"]:s["offset"] + s["length"]]
    code = {"<u4": "I", "<u8": "Q", "<f8": "d", "|u1": "B"}[s["dtype"]]
    if code != "B" and sys.byteorder != "little":
        from array import array

        arr = array(code, bytes(view))
        arr.byteswap()
        return memoryview(arr)
    return view.cast(code)


def token_hash(token: bytes) -> int:
    return zlib.crc32(token)


# --------------------------------------------------------------------------------------
# The numpy half: whole models in and out.
# --------------------------------------------------------------------------------------

def _hash_table(tokens_b: list[bytes]):
    """Open-addressing table (slot = id+1) built in vectorized rounds of linear probing."""
    import numpy as np

    n = len(tokens_b)
    size = 8
    while size < 2 * n:
        size *= 2
    slots = np.zeros(size, dtype=np.uint32)
    pos = np.fromiter(map(zlib.crc32, tokens_b), dtype=np.uint64, count=n) & (size - 1)
    pending = np.arange(n, dtype=np.int64)
    pos = pos.astype(np.int64)
    while len(pending):
        free = slots[pos] == 0
        # Among pending items aiming at the same free slot, the first one wins it.
        cand = pending[free]
        uniq, first = np.unique(pos[free], return_index=True)
        slots[uniq] = cand[first] + 1
        placed = np.zeros(len(pending), dtype=bool)
        placed[np.flatnonzero(free)[first]] = True
        pending, pos = pending[~placed], (pos[~placed] + 1) & (size - 1)
    return slots


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
    """Whole numbers below 2**32 as uint32 (half the size), anything else as float64."""
    import numpy as np

    a = np.ascontiguousarray(a, dtype=np.float64)
    whole = a.size == 0 or (np.all(a == np.round(a)) and a.min() >= 0 and a.max() < 2**32)
    dtype = "<u4" if whole else "<f8"
    return (name, dtype, a.shape, a.astype(dtype).tobytes())


def encode(model) -> bytes:
    import numpy as np

    from . import __version__

    # One join and one encode for the whole vocabulary; token boundaries are the NULs.
    tokens = model.vocab.tokens
    blob = ("\x00".join(tokens) + "\x00").encode("utf-8", "surrogatepass") if tokens else b""
    ends = np.flatnonzero(np.frombuffer(blob, dtype=np.uint8) == 0) + 1
    if len(ends) != len(tokens):
        raise NbtextError("a token contains a NUL character; tokens must not")
    offsets = np.concatenate([[0], ends])
    tokens_b = blob.split(b"\x00")[:-1]
    off_dtype = "<u4" if len(blob) < 2**32 else "<u8"
    ledger = b"".join(sorted(model.ledger))
    arrays = [
        ("vocab_blob", "|u1", (len(blob),), blob),
        ("vocab_offsets", off_dtype, offsets.shape, offsets.astype(off_dtype).tobytes()),
        ("hash_slots", "<u4", None, _hash_table(tokens_b).astype("<u4").tobytes()),
        _array_section("counts", model.feature_count),
        ("ledger", "|u1", (len(ledger),), ledger),
    ]
    if model.doc_freq is not None:
        arrays.append(_array_section("doc_freq", model.doc_freq))
    sections, chunks, offset = {}, [], 0
    for name, dtype, shape, raw in arrays:
        if shape is None:
            shape = (len(raw) // 4,)
        sections[name] = {"offset": offset, "length": len(raw), "dtype": dtype, "shape": list(shape)}
        chunks += [raw, b"\x00" * _pad(len(raw))]
        offset += len(raw) + _pad(len(raw))
    payload = b"".join(chunks)
    header = {
        "format": "nbtext-model",
        "created_by": f"nbtext {__version__}",
        "tokenizer": model.tokenizer_settings.to_dict(),
        "model": model.settings.to_dict(),
        "classes": list(model.classes),
        "class_count": model.class_count.tolist(),
        "n_features": len(model.vocab),
        "decision": model.decision.to_dict(),
        "derived": derived_values(model),
        "sections": sections,
        "payload_length": len(payload),
        "payload_crc32": zlib.crc32(payload),
    }
    raw_header = json.dumps(header, sort_keys=True).encode("utf-8")
    prefix = PREFIX.pack(MAGIC, FORMAT_VERSION, len(raw_header), zlib.crc32(raw_header))
    head = prefix + raw_header
    return head + b"\x00" * _pad(len(head)) + payload


def decode(header: dict, payload: memoryview, path: str = "model"):
    import numpy as np

    from .model import Decision, Model
    from .settings import ModelSettings, TokenizerSettings
    from .vectorize import Vocabulary

    try:
        blob = bytes(section(header, payload, "vocab_blob"))
        tokens = blob.decode("utf-8", "surrogatepass").split("\x00")[:-1] if blob else []
        classes = list(header["classes"])
        shape = tuple(header["sections"]["counts"]["shape"])
        counts = np.asarray(section(header, payload, "counts"), dtype=np.float64).reshape(shape)
        ledger_raw = bytes(section(header, payload, "ledger"))
        model = Model(
            TokenizerSettings.from_dict(header["tokenizer"]),
            ModelSettings.from_dict(header["model"]),
            classes,
            Vocabulary(tokens),
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
    if (counts.shape != (len(classes), len(tokens)) or len(model.class_count) != len(classes)
            or (model.doc_freq is not None and model.doc_freq.shape != (len(tokens),))):
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
    data = encode(model)
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
            f.write(data)
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
