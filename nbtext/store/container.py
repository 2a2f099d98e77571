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
import struct
import sys
import zlib

from ..errors import ModelFileError, NbtextError

MAGIC = b"NBTEXT\x1a\n"
# 3: the header's "derived" sums are each estimator's summary() (nbtext.nb.estimators);
# 2: a sorted, front-coded vocabulary; 1: a hashed one. Every older format is still read.
FORMAT_VERSION = 3
PREFIX = struct.Struct("<8sIQI")
ALIGN = 8


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
    header = {**header, "sections": table, "payload_length": offset, "payload_crc32": crc}
    raw_header = json.dumps(header, sort_keys=True).encode("utf-8")
    head = PREFIX.pack(MAGIC, FORMAT_VERSION, len(raw_header), zlib.crc32(raw_header)) + raw_header
    return [head + b"\x00" * _pad(len(head)), *chunks]
