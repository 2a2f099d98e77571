"""The vocabulary in a model file: sorted by UTF-8 bytes and front-coded in blocks.

    vocab_fc       the tokens in UTF-8 byte order, front-coded in blocks of BLOCK: each entry
                   is one byte p+1, the token's bytes after the p it shares with the entry
                   before (p = 0 at a block's head), a NUL
    vocab_heads    uint32/uint64 (ceil(V / BLOCK)): where each block's head starts

Token i of the sorted vocabulary is column i of the counts. `nbtext classify` finds a message's
tokens in place (SortedVocabulary), without numpy and without building a dict of the whole
vocabulary: a binary search over the block heads, then at most BLOCK entries decoded. Sorted and
front-coded, the vocabulary takes about a quarter of what the raw tokens with offsets and a hash
table took (format 1, still read: HashedVocabulary; figures in docs/bench.md). Coding and decoding the
whole vocabulary (front_code, front_decode) use numpy, imported inside them, or the compiled kernel.
"""
from __future__ import annotations

import zlib

from .container import section

BLOCK = 16  # tokens per front-coded block: larger blocks save little space and cost classify's decoding


class HashedVocabulary:
    """Token ids looked up in a format 1 file: open addressing on crc32(token), linear probing,
    a slot holds id+1 (0 = empty) over NUL-terminated tokens and their offsets."""

    def __init__(self, header: dict, payload: memoryview, n_features: int):
        self.blob = section(header, payload, "vocab_blob")
        self.offsets = section(header, payload, "vocab_offsets")
        self.slots = section(header, payload, "hash_slots")
        self.mask = len(self.slots) - 1
        if len(self.offsets) != n_features + 1 or not self.slots or len(self.slots) & self.mask:
            raise ValueError("hash table does not match the vocabulary size")

    def token_id(self, key: bytes) -> int | None:
        slots, offsets, blob, mask = self.slots, self.offsets, self.blob, self.mask
        i = zlib.crc32(key) & mask
        for _ in range(len(slots)):
            slot = slots[i]
            if slot == 0 or slot > len(offsets) - 1:
                return None
            tid = slot - 1
            a, b = offsets[tid], offsets[tid + 1] - 1
            if b - a == len(key) and blob[a:b] == key:
                return tid
            i = (i + 1) & mask
        return None

    def token_ids(self, keys) -> dict[bytes, int]:
        """The ids of those of ``keys`` the vocabulary holds."""
        return {k: t for k in keys if (t := self.token_id(k)) is not None}


def vocabulary_index(header: dict, payload: memoryview, n_features: int):
    """The in-place token lookup of a file of either format."""
    if "vocab_fc" in header["sections"]:
        return SortedVocabulary(header, payload, n_features)
    return HashedVocabulary(header, payload, n_features)


class SortedVocabulary:
    """Token ids looked up in the front-coded vocabulary of a file of format 2 or later, in place."""

    def __init__(self, header: dict, payload: memoryview, n_features: int):
        self.fc = bytes(section(header, payload, "vocab_fc"))
        self.heads = section(header, payload, "vocab_heads")
        self.block = int(header.get("vocab_block", BLOCK))  # (checked by codec.check_header)
        self.n = n_features
        if len(self.heads) != -(-n_features // self.block) or (n_features and self.heads[0] != 0):
            raise ValueError("vocabulary blocks do not match the vocabulary size")
        if self.fc[-1:] not in (b"", b"\x00"):
            raise ValueError("vocabulary does not end with a NUL")
        last = -1
        for h in self.heads:  # each block's head: after the one before, a whole token
            if not last < h < len(self.fc) or self.fc[h] != 1:
                raise ValueError("vocabulary block heads are out of order")
            last = h

    def _head(self, b: int) -> bytes:
        start = self.heads[b] + 1
        return self.fc[start:self.fc.index(b"\x00", start)]

    def _block_of(self, key: bytes, lo: int = 0) -> int:
        """The last block whose head is <= key (from block ``lo`` on), -1 when none is."""
        hi, below, above = len(self.heads), None, None
        while lo < hi:
            mid = (lo + hi) // 2
            head = self._head(mid)  # (between the heads compared before it, as in sorted order)
            if (below is not None and not below < head) or (above is not None and not head < above):
                raise VocabularyError(f"vocabulary block {mid}'s first token is out of byte order")
            if head <= key:
                lo, below = mid + 1, head
            else:
                hi, above = mid, head
        return lo - 1

    def _block(self, b: int) -> dict[bytes, int]:
        """Block b's tokens and ids, decoded and checked: each UTF-8 and after the one before
        it, the last before the next block's head (what classify reads of a vocabulary is
        checked as it is read, at a cost of the blocks it decodes; store.load checks it whole:
        tokens out of order made the binary search and predict's dictionary disagree)."""
        heads, fc = self.heads, self.fc
        pos, end, tid, prev = heads[b], heads[b + 1] if b + 1 < len(heads) else len(fc), b * self.block, b""
        stop = min(tid + self.block, self.n)  # (a block never holds more: a crafted one may)
        out = {}
        while pos < end and tid < stop:
            nul = fc.index(b"\x00", pos)
            token = prev[:fc[pos] - 1] + fc[pos + 1:nul]
            if tid > b * self.block and not prev < token:
                raise VocabularyError(f"vocabulary tokens {tid - 1} and {tid} are not in byte order")
            out[token], prev = tid, token
            pos, tid = nul + 1, tid + 1
        try:
            b"\x00".join(out).decode("utf-8", "surrogatepass")  # (NULs between: no sequence spans two)
        except UnicodeDecodeError:
            for token, t in out.items():
                _utf8(token, t)
        if b + 1 < len(heads) and out and not prev < self._head(b + 1):
            raise VocabularyError(f"vocabulary tokens {tid - 1} and {tid} are not in byte order")
        return out

    def token_id(self, key: bytes) -> int | None:
        b = self._block_of(key)
        return self._block(b).get(key) if b >= 0 else None

    def token_ids(self, keys) -> dict[bytes, int]:
        """The ids of those of ``keys`` the vocabulary holds: keys sorted, so that each block is
        searched from the last one found and decoded once (a large message has tens of thousands
        of distinct tokens: a binary search and a block decoded for each would dominate)."""
        out, b, block = {}, -1, {}
        for key in sorted(keys):
            found = self._block_of(key, max(b, 0))
            if found < 0:
                continue
            if found != b:
                b, block = found, self._block(found)
            if key in block:
                out[key] = block[key]
        return out


class VocabularyError(ValueError):
    """A model file's vocabulary that is not what nbtext writes (the message says how)."""


def _utf8(token: bytes, i: int) -> None:
    try:
        token.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise VocabularyError(f"vocabulary token {i} is not UTF-8") from None


def check_tokens(blob: bytes, ordered: bool) -> None:
    """VocabularyError naming the first NUL-terminated token of ``blob`` that is not UTF-8 (a
    lone surrogate passes, as nbtext encodes one: surrogatepass), and with ``ordered`` one not
    after the token before it in byte order. Linear in the blob's size. With the compiled
    kernel the order is its one pass over the pairs (first_unordered, nbtext/_c/frontcode.c);
    the numpy below is the reference (the same token named: tests/test_kernel.py)."""
    from ..features.implementation import compiled

    try:
        blob.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as e:
        raise VocabularyError(f"vocabulary token {blob.count(0, 0, e.start)} is not UTF-8") from None
    if not ordered:
        return
    kernel = compiled()
    i = kernel.first_unordered(blob) if kernel is not None else first_unordered_numpy(blob)
    if i >= 0:
        raise VocabularyError(f"vocabulary tokens {i - 1} and {i} are not in byte order")


def first_unordered_numpy(blob: bytes) -> int:
    """The first NUL-terminated token of ``blob`` not after the token before it in byte order,
    -1 when none: the tokens compared eight bytes at a time, deeper only for the pairs still
    equal."""
    import numpy as np

    from ..features.vocabulary import token_spans

    b = np.frombuffer(blob, dtype=np.uint8)
    starts, lengths = token_spans(b)
    pairs, depth, first = np.arange(1, len(starts)), 0, -1  # (token i - 1 and token i)
    while len(pairs):
        if depth:
            before = _words(b, starts[pairs - 1], lengths[pairs - 1], depth)
            after = _words(b, starts[pairs], lengths[pairs], depth)
        else:  # (every pair: each token's first word once)
            words = _words(b, starts, lengths, 0)
            before, after = words[:-1], words[1:]
        tied = before == after
        longer = lengths[pairs] > depth + 8
        bad = (after < before) | (tied & ~longer)  # (tied to their ends: the same token twice)
        if bad.any():  # (a pair before it may still be found out of order deeper)
            first = int(pairs[bad].min())
        pairs, depth = pairs[tied & longer], depth + 8
        if first >= 0:
            pairs = pairs[pairs < first]
    return first


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
    only the ties on the next 8, and so on (several times faster than sorting Python strings).
    Positions are 32-bit while they fit: this sort is the peak of saving a model."""
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
    UTF-8 tokens (Vocabulary.encoded()), distinct as a vocabulary's are.

    With the compiled kernel (nbtext/_c/frontcode.c, docs/kernel.md), in C: a stable radix sort of
    the tokens' ids by their bytes, then one pass writing the entries (a third of numpy's
    memory, and faster than a comparison sort through the namespaces' shared prefixes; figures
    in docs/kernel.md); the numpy implementation below is the reference, and both give the same bytes and order
    (tests/test_modelfile.py, and the kernel's fuzz under AddressSanitizer)."""
    import numpy as np

    from ..features.implementation import compiled

    kernel = compiled()
    if kernel is not None:
        fc, heads, order = kernel.front_code(blob, BLOCK)
        return fc, np.frombuffer(heads, dtype=np.int64), np.frombuffer(order, dtype=np.int64)
    return front_code_numpy(blob)


def front_code_numpy(blob: bytes) -> tuple[bytes, "np.ndarray", "np.ndarray"]:
    """front_code in numpy. Every block starts with a whole token, so the sorted tokens are
    coded a piece of whole blocks at a time, with the same bytes as in one go (a lower peak,
    with the sort read in place: see _words)."""
    import numpy as np

    from ..features.vocabulary import gather, token_spans

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


# A front-coded entry of 3 bytes can stand for a token of 256 (254 bytes shared with the token
# before it), so a model file's vocabulary could decode to 85 times its size: a decompression
# bomb. Every block starts with a whole token, so at nbtext's BLOCK of 16 a vocabulary decodes
# to at most 13.6 times its size (a real vocabulary's, about 2); a file's vocab_block may say up
# to 4096. Decoding past this many times the section's size is refused before allocating.
MAX_EXPANSION = 16


def front_decode(fc: bytes, block: int) -> bytes:
    """The NUL-terminated tokens of a front-coded vocabulary (see front_code); ValueError when
    the entries do not fit together, or decode to more than MAX_EXPANSION times their size.
    With the compiled kernel, in C, in one pass (in numpy it is half of a model's load); the
    numpy implementation below is the reference,
    and both give the same bytes or the same error (tests/test_modelfile.py, and the kernel's
    fuzz under AddressSanitizer on any bytes)."""
    from ..features.implementation import compiled

    kernel = compiled()
    if kernel is not None:
        return kernel.front_decode(fc, block, MAX_EXPANSION * len(fc))
    return front_decode_numpy(fc, block, MAX_EXPANSION * len(fc))


def front_decode_numpy(fc: bytes, block: int, limit: int | None = None) -> bytes:
    """front_decode with numpy, block row by block row (``limit``: the most bytes it may
    decode to)."""
    import numpy as np

    from ..features.rows import ranges
    from ..features.vocabulary import token_spans

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
    if limit is not None and total > max(limit, 0):
        raise ValueError("vocabulary decodes to more bytes than its limit")
    out = np.zeros(total, dtype=np.uint8)
    head = np.zeros(len(f), dtype=bool)
    head[starts] = True
    out[~_spans(total, out_start, shared)] = f[~head]  # the bytes after each shared prefix, NULs
    for r in range(1, block):  # row r of every block copies its prefix from row r-1
        i = np.arange(r, n, block)
        i = i[shared[i] > 0]
        out[ranges(out_start[i], shared[i])] = out[ranges(out_start[i - 1], shared[i])]
    return out.tobytes()


