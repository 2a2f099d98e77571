"""Generated labelled corpora whose vocabulary grows with the data, as real text's does.

    python scripts/gen_corpus.py --size 200M --classes 20 -o build/scale/200M-20.ft
    python scripts/gen_corpus.py --size 50M --classes 20 --folder -o build/scale/50M-20/

Why generated: spamassassin-2002 is 34 MB and two classes, and its copies (make bench's 16x)
repeat the same messages, so the vocabulary never grows. Here every word is drawn from a
Zipf-Mandelbrot law over --types word types (3 million by default): the common words come
back in every document, and ever rarer ones keep appearing as the corpus grows (Heaps' law),
so the distinct tokens grow with the size as they do in news or mail.

Each class has its own topical words: --topical of a document's words (30% by default) come
from a Zipf law over that class's own --topic-types words (drawn from the middle and tail of
the vocabulary, so classes share some), the rest from the common law. Documents have
log-normal lengths around --words words (about 830 bytes a line by default, as a short news
item or a mail body). Class sizes are mildly skewed (class i has weight 1/(i+5)).

Out: a fastText line file (`__label__c07 word word ...`, one document a line), or with
--folder a label directory (DIR/c07/000123.txt), which `nbtext train` and fastText and
scikit-learn all read. Deterministic: the same --seed and options give the same bytes.
The file is cut at the first document boundary past --size.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

CONSONANTS = b"bcdfghjklmnprstvwxz"
VOWELS = b"aeiouy"
BATCH_DOCS = 20_000  # documents drawn at a time (the random streams' unit: fixed, so output is deterministic)


def parse_size(text: str) -> int:
    """'200M', '1G', '500k', '12345' as bytes (binary multiples)."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower().rstrip("b")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def syllables() -> np.ndarray:
    """The two-letter syllables words are built of (consonant + vowel), as a (n, 2) byte array."""
    return np.array([[c, v] for c in CONSONANTS for v in VOWELS], dtype=np.uint8)


def vocabulary(types: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Word types by rank, shortest first (frequent words are short, as in real text): the
    first 114 one syllable, the next 114^2 two, and so on. Returned as one byte blob in which
    each word is followed by a space, with each word's start and length (space included)."""
    syl = syllables()
    base = len(syl)
    firsts, level, start = [], 1, 0
    while start < types:
        n = min(base ** level, types - start)
        firsts.append((start, n, level))
        start += n
        level += 1
    size = sum(n * (2 * lv + 1) for _, n, lv in firsts)
    blob = np.empty(size, dtype=np.uint8)
    starts = np.empty(types, dtype=np.int64)
    wlen = np.empty(types, dtype=np.int64)
    at = 0
    for first, n, lv in firsts:
        width = 2 * lv + 1
        block = np.empty((n, width), dtype=np.uint8)
        number = np.arange(n, dtype=np.int64)
        for k in range(lv):  # (syllable k of each word: digit k of its number in base 114)
            block[:, 2 * k:2 * k + 2] = syl[(number // base ** k) % base]
        block[:, -1] = ord(" ")
        blob[at:at + n * width] = block.ravel()
        starts[first:first + n] = at + np.arange(n) * width
        wlen[first:first + n] = width
        at += n * width
    return blob, starts, wlen


def zipf_cdf(n: int, s: float, q: float = 2.7) -> np.ndarray:
    """The cumulative Zipf-Mandelbrot law over ranks 0..n-1: p(r) proportional to 1/(r+q)^s."""
    p = 1.0 / (np.arange(n, dtype=np.float64) + q) ** s
    c = np.cumsum(p)
    return c / c[-1]


class Generator:
    def __init__(self, classes: int, types: int, seed: int, words: float, topical: float,
                 topic_types: int, exponent: float):
        self.classes, self.words, self.topical = classes, words, topical
        rng = np.random.default_rng([seed, 0])
        self.blob, self.starts, self.wlen = vocabulary(types)
        self.common = zipf_cdf(types, exponent)
        self.topic_cdf = zipf_cdf(topic_types, exponent)
        # Each class's topical words: topic_types of the ranks past the 1,000 most common.
        low = min(1000, types // 10)
        self.topics = rng.integers(low, types, size=(classes, topic_types))
        prior = 1.0 / (np.arange(classes) + 5.0)
        self.prior = np.cumsum(prior) / prior.sum()
        self.labels = [f"__label__{name} ".encode() for name in self.names()]
        self.rng = np.random.default_rng([seed, 1])

    def names(self) -> list[str]:
        digits = len(str(self.classes - 1))
        return [f"c{i:0{digits}d}" for i in range(self.classes)]

    def batch(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """BATCH_DOCS documents: (their classes, their texts as one byte array, each text's end
        in it). Each text is its words, separated by spaces, without the label."""
        rng = self.rng
        cls = np.minimum(np.searchsorted(self.prior, rng.random(BATCH_DOCS)), self.classes - 1)
        sigma = 0.6
        mu = np.log(self.words) - sigma ** 2 / 2
        k = np.maximum(3, rng.lognormal(mu, sigma, BATCH_DOCS).astype(np.int64))
        total = int(k.sum())
        ids = np.minimum(np.searchsorted(self.common, rng.random(total)), len(self.common) - 1)
        topical = rng.random(total) < self.topical
        word_cls = np.repeat(cls, k)[topical]
        ranks = np.minimum(np.searchsorted(self.topic_cdf, rng.random(int(topical.sum()))), len(self.topic_cdf) - 1)
        ids[topical] = self.topics[word_cls, ranks]
        lens = self.wlen[ids]
        ends = np.cumsum(lens)
        nbytes = int(ends[-1])
        # Gather each word's bytes (space included) from the blob: position i of the output
        # reads blob[start of its word + (i - where its word starts in the output)].
        offset = np.repeat(self.starts[ids] - (ends - lens), lens)
        text = self.blob[np.arange(nbytes, dtype=np.int64) + offset]
        doc_ends = ends[np.cumsum(k) - 1]  # (each document's last space: its end)
        return cls, text, doc_ends

    def documents(self, size: int):
        """(class, text bytes) of each document, until at least ``size`` bytes of lines."""
        written = 0
        while written < size:
            cls, text, doc_ends = self.batch()
            begin = 0
            for c, end in zip(cls.tolist(), doc_ends.tolist()):
                body = text[begin:end - 1].tobytes()  # (without its last space)
                begin = end
                yield c, body
                written += len(self.labels[c]) + len(body) + 1
                if written >= size:
                    return

    def write_lines(self, out, size: int) -> int:
        """The fastText line file of at least ``size`` bytes (cut at a document's end)."""
        written = 0
        while written < size:
            cls, text, doc_ends = self.batch()
            text[doc_ends - 1] = ord("\n")
            label_lens = np.array([len(lb) for lb in self.labels])[cls]
            line_ends = doc_ends + np.cumsum(label_lens)
            n = min(len(cls), int(np.searchsorted(line_ends, size - written)) + 1)
            starts = np.concatenate([[0], doc_ends[:n - 1]])
            pieces = []
            for c, a, b in zip(cls[:n].tolist(), starts.tolist(), doc_ends[:n].tolist()):
                pieces.append(self.labels[c])
                pieces.append(text[a:b])
            data = b"".join(bytes(p) for p in pieces)
            out.write(data)
            written += len(data)
        return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="50M", help="bytes of lines to write (K, M, G suffixes)")
    ap.add_argument("--classes", type=int, default=20)
    ap.add_argument("--types", type=int, default=3_000_000, help="word types of the vocabulary")
    ap.add_argument("--words", type=float, default=150.0, help="mean words a document")
    ap.add_argument("--topical", type=float, default=0.3, help="share of a document's words from its class's topic")
    ap.add_argument("--topic-types", type=int, default=20_000, help="word types in each class's topic")
    ap.add_argument("--exponent", type=float, default=1.0, help="the Zipf exponent")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--folder", action="store_true", help="write a label directory, not a line file")
    ap.add_argument("-o", "--output", required=True, help="the line file (- for stdout), or the folder")
    a = ap.parse_args(argv)
    if a.classes < 2 or a.types < 100 or not 0 <= a.topical <= 1 or a.topic_types < 1:
        ap.error("need --classes >= 2, --types >= 100, --topical in [0, 1], --topic-types >= 1")
    size = parse_size(a.size)
    gen = Generator(a.classes, a.types, a.seed, a.words, a.topical, min(a.topic_types, a.types), a.exponent)
    if a.folder:
        names = gen.names()
        for name in names:
            os.makedirs(os.path.join(a.output, name), exist_ok=True)
        for i, (c, body) in enumerate(gen.documents(size)):
            with open(os.path.join(a.output, names[c], f"{i:07d}.txt"), "wb") as f:
                f.write(body + b"\n")
        return 0
    if a.output == "-":
        gen.write_lines(sys.stdout.buffer, size)
        return 0
    tmp = a.output + ".part"
    with open(tmp, "wb") as f:
        gen.write_lines(f, size)
    os.replace(tmp, a.output)  # (a cut-short run leaves no file a cache would take for whole)
    return 0


if __name__ == "__main__":
    sys.exit(main())
