"""The model file's frame: one self-checking binary file, data only (never pickle).

Layout (all integers little-endian):

    8 bytes   magic  b"NBTEXT\\x1a\\n"
    4 bytes   format version (uint32)
    8 bytes   header length H (uint64)
    4 bytes   CRC-32 of the header
    H bytes   header: UTF-8 JSON (settings, classes, section table, payload CRC-32, ...)
    padding   to a multiple of 8
    payload   sections, each 8-byte aligned, named in the header's section table with their
              offset, length, dtype and shape

What the sections and the header hold is nbtext.store.codec's; this module only frames and
checks them. Its reading half imports nothing heavier than json and zlib: `nbtext classify`
reads sections in place, as memoryviews.
"""
from __future__ import annotations

import json
import os
import stat
import struct
import sys
import zlib

from ..errors import ModelFileError, shown

MAGIC = b"NBTEXT\x1a\n"
# 7: a text model's decision layer (layer_ids, layer_weights and the header's "layer":
#    nbtext.store.codec), which an older nbtext must refuse rather than score without;
# 6: sparse counts of two bytes or more stored as a byte each, the large ones listed apart
#    (counts_over_at, counts_over: nbtext.store.codec);
# 5: a text model's counts of three classes or more are stored by token, only where not zero
#    (counts_indptr, counts_classes, counts_values: nbtext.store.codec), and each token's
#    last_seen day;
# 4: table models too (header "kind": "table", nbtext.store.tables), and a text model's decision
#    has the calibration map's length_power, soft and floor: an older nbtext must refuse both
#    as newer rather than call them corrupt;
# 3: the header's "derived" sums are each estimator's summary() (nbtext.nb.estimators);
# 2: a sorted, front-coded vocabulary; 1: a hashed one. Every older format is still read.
FORMAT_VERSION = 7
PREFIX = struct.Struct("<8sIQI")
ALIGN = 8


def _pad(n: int) -> int:
    return -n % ALIGN


def _is_text(head: bytes) -> bool:
    """Whether these first bytes of a file read as UTF-8 text (the last character may be cut)."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 3 or e.reason != "unexpected end of data":
            return False
        text = head[: e.start].decode("utf-8")
    return all(c.isprintable() or c in "\t\n\r" for c in text)


def describe_foreign(head: bytes) -> str:
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "a Python pickle, which nbtext never loads (it could run code)"
    if head[:6] == b"\x93NUMPY" or head[:2] == b"PK":
        return "a numpy/zip archive, not an nbtext model"
    if head[:1] in (b"{", b"[") and _is_text(head):
        return "JSON text, not an nbtext model (use 'nbtext import' for a text dump)"
    if head.startswith(b"# nbtext"):
        return "an nbtext text dump (turn it back into a model with 'nbtext import')"
    return "not an nbtext model file"


class KeyTwice(ValueError):
    """A JSON object that names one key twice."""


def _one_of_each(pairs: list) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise KeyTwice(f"holds the key {shown(twice)[:40]!r} twice in one object")
    return d


def json_object(text):
    """JSON text as the model file's header and a dump's settings line are written, checked:
    KeyTwice (a ValueError) for a key given twice in one object (Python's json keeps the
    last, other readers the first: one file would say two things)."""
    return json.loads(text, object_pairs_hook=_one_of_each)


MAX_HEADER = 1 << 24  # a header holds settings, classes and per-class sums: 16 MiB is absurdly many


def read_container(path: str, header_only: bool = False) -> tuple[dict, memoryview | None]:
    """The header and the verified payload of a model file, or ModelFileError saying why not
    (``header_only``: the checked header alone, and None; the payload is neither read nor
    checked, as for learn's look at which kind of model it is before loading it).

    Only a regular file is read (a FIFO would hang, /dev/zero never end), and the prefix and
    header are checked before the rest is read: a large file that is not ours costs 24 bytes."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            what = "is a directory" if stat.S_ISDIR(st.st_mode) else "is not a regular file"
            raise ModelFileError(f"{path}: {what}, not a model file")
        with open(path, "rb") as f:
            return _read(f, os.fstat(f.fileno()).st_size, path, header_only)
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such model file" if path else "'': an empty file name names no model file") from None
    except IsADirectoryError:
        raise ModelFileError(f"{path}: is a directory, not a model file") from None
    except OSError as e:
        raise ModelFileError(f"{path}: cannot read model file: {e.strerror}") from None


def _read(f, size: int, path: str, header_only: bool = False) -> tuple[dict, memoryview | None]:
    head = f.read(PREFIX.size)
    if len(head) < PREFIX.size:
        if MAGIC.startswith(head[:8]) and head:
            raise ModelFileError(f"{path}: truncated model file ({len(head)} bytes)")
        raise ModelFileError(f"{path}: {describe_foreign(head) if head else 'empty file, not a model'}")
    magic, version, hlen, hcrc = PREFIX.unpack_from(head)
    if magic != MAGIC:
        raise ModelFileError(f"{path}: {describe_foreign(head[:16])}")
    if version > FORMAT_VERSION:
        raise ModelFileError(
            f"{path}: written by a newer nbtext (model format {version}; "
            f"this nbtext reads format {FORMAT_VERSION} and older)")
    if version < 1:
        raise ModelFileError(f"{path}: corrupt model file (format version {version})")
    start = PREFIX.size
    if start + hlen > size:
        raise ModelFileError(f"{path}: truncated model file (header cut short)")
    if hlen > MAX_HEADER:
        raise ModelFileError(f"{path}: corrupt model file (header of {hlen} bytes)")
    raw_header = f.read(hlen)
    if zlib.crc32(raw_header) != hcrc:
        raise ModelFileError(f"{path}: corrupt model file (header checksum mismatch)")
    try:
        header = json_object(raw_header)
    except KeyTwice as e:
        raise ModelFileError(f"{path}: corrupt model file (the header {e})") from None
    except (ValueError, RecursionError):
        raise ModelFileError(f"{path}: corrupt model file (header is not JSON)") from None
    if not isinstance(header, dict):
        raise ModelFileError(f"{path}: corrupt model file (header is not a JSON object)")
    pstart = start + hlen + _pad(start + hlen)
    plen = header.get("payload_length")
    if not isinstance(plen, int) or isinstance(plen, bool) or plen < 0:
        raise ModelFileError(f"{path}: corrupt model file (payload length {plen!r})")
    if pstart + plen > size:
        raise ModelFileError(f"{path}: truncated model file ({size} bytes, expected {pstart + plen})")
    if pstart + plen < size:
        raise ModelFileError(f"{path}: corrupt model file (trailing bytes after the payload)")
    # The prefix's version is outside the header's checksum: the header says it again (format
    # 4's files do; an older file's header may not), so that a damaged
    # prefix is not read as an older format. An older nbtext ignores the field.
    said = header.get("format_version", version)
    if said != version:
        raise ModelFileError(f"{path}: corrupt model file (format {version} in the prefix, "
                             f"{repr(said)[:40]} in the header)")
    header["format_version"] = version
    if header_only:
        return header, None
    rest = f.read(size - start - hlen)
    if len(rest) != size - start - hlen:
        raise ModelFileError(f"{path}: truncated model file (it shrank while being read)")
    if any(rest[:pstart - start - hlen]):
        raise ModelFileError(f"{path}: corrupt model file (padding after the header is not zero)")
    payload = memoryview(rest)[pstart - start - hlen:]
    if zlib.crc32(payload) != header.get("payload_crc32"):
        raise ModelFileError(f"{path}: corrupt model file (payload checksum mismatch)")
    return header, payload


CODES = {"<u2": "H", "<u4": "I", "<u8": "Q", "<f8": "d", "<f4": "f", "|u1": "B"}
SIZES = {"H": 2, "I": 4, "Q": 8, "d": 8, "f": 4, "B": 1}


def section(header: dict, payload: memoryview, name: str) -> memoryview:
    """A typed, zero-copy view of a section ('I', 'Q', 'd' or 'B' items), checked against the
    payload: ValueError when its place, type or shape does not fit (a crafted header with valid
    checksums must not reach past the payload or mislabel its items)."""
    s = header["sections"][name]
    offset, length, dtype, shape = s["offset"], s["length"], s["dtype"], s["shape"]
    if dtype not in CODES:
        raise ValueError(f"section {name}: unknown type {dtype!r}")
    code = CODES[dtype]
    sizes = [offset, length, *shape] if isinstance(shape, list) else None
    if sizes is None or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in sizes):
        raise ValueError(f"section {name}: bad offset, length or shape")
    if offset + length > len(payload) or offset % ALIGN:
        raise ValueError(f"section {name}: outside the payload")
    items = 1
    for n in shape:
        items *= n
    if items * SIZES[code] != length:
        raise ValueError(f"section {name}: {length} bytes do not hold shape {shape} of {dtype}")
    view = payload[offset:offset + length]
    if code != "B" and sys.byteorder != "little":
        from array import array

        arr = array(code, bytes(view))
        arr.byteswap()
        return memoryview(arr)
    return view.cast(code)


def frame(header: dict, sections: list) -> list:
    """The file as consecutive pieces (written one by one: joined, the payload and then the
    whole file were two more copies of it in memory): ``sections`` are (name, dtype, shape,
    bytes); the header gets their table, the payload's length and its CRC-32."""
    table, chunks, offset, crc = {}, [], 0, 0
    for name, dtype, shape, raw in sections:
        table[name] = {"offset": offset, "length": len(raw), "dtype": dtype, "shape": list(shape)}
        chunks += [raw, b"\x00" * _pad(len(raw))]
        offset += len(raw) + _pad(len(raw))
    for chunk in chunks:
        crc = zlib.crc32(chunk, crc)
    header = {**header, "sections": table, "payload_length": offset, "payload_crc32": crc,
              "format_version": FORMAT_VERSION}
    raw_header = json.dumps(header, sort_keys=True).encode("utf-8")
    head = PREFIX.pack(MAGIC, FORMAT_VERSION, len(raw_header), zlib.crc32(raw_header)) + raw_header
    return [head + b"\x00" * _pad(len(head)), *chunks]
