"""The checked fields that text and table model files share: names, counts, and arrays of
counts stored in the smallest type that holds them. Every value read here comes from a file a
stranger may have written, so each is checked before it is used."""
from __future__ import annotations

import math
import re

from ..errors import BAD_NAME_CHAR, NbtextError, shown

MAX_COUNT = 2.0 ** 53  # (a count beyond it is no longer a whole number in a float64)
PAST_MAX = "past 2**53, more than a model file holds"  # (how a sum's refusal ends: merge, learn)


def names(value, what: str) -> list:
    """A model file's list of names (classes, columns): strings, not empty, without the
    characters no name may hold (nbtext.errors.BAD_NAME_CHAR: a class "a<TAB>b" split every
    output row, an escape sequence drove the terminal)."""
    if not isinstance(value, list) or not all(isinstance(c, str) and c for c in value):
        raise ValueError(f"{what} must be a list of names")
    for c in value:
        if BAD_NAME_CHAR.search(c):
            raise ValueError(f"{what}: {c!r} holds a control character")
    return value


# A count as the text dump writes it (store.dump._num): digits, or a float's repr (1.5, 1e-05).
# Nothing else: float() would take '1_000', ' 7', '+3' and '1e300' too.
COUNT_TEXT = r"[0-9]{1,17}(?:\.[0-9]{1,17})?(?:e[+-][0-9]{1,3})?"
_COUNT = re.compile(COUNT_TEXT)


def count_of(value) -> float:
    """A count of a model file or dump (a JSON number, or text as the dump writes it) as a
    float; ValueError unless it is a number from 0 to 2**53, exactly: 9007199254740993 is no
    count, though float() makes it 2**53."""
    if type(value) is str and _COUNT.fullmatch(value):
        x = float(value)
        if x == MAX_COUNT:  # (only there can rounding bring a larger number in)
            from fractions import Fraction

            exact = Fraction(value)
        else:
            exact = x
    elif type(value) in (int, float):
        x = exact = float(value) if type(value) is float else value
        x = float(x) if 0 <= exact <= MAX_COUNT else math.nan
    else:
        raise ValueError(f"{shown(str(value))[:40]!r} is not a count")
    if not 0 <= exact <= MAX_COUNT:
        raise ValueError(f"{shown(str(value))[:40]!r} is not a count from 0 to 2**53")
    return x


def check_class_sums(parts, what: str, unit: str) -> None:
    """Refuse (NbtextError: ``what``, then the class) the sum of models' or rows' numbers per
    class (``parts``: (classes, their numbers of ``unit``) each) where one would pass MAX_COUNT,
    which a model file holds at most. Summed exactly, as whole numbers (a fraction rounded up):
    a float64 sum past 2**53 rounds, 2**53 + 1 to 2**53."""
    sums: dict = {}
    for classes, numbers in parts:
        for c, n in zip(classes, numbers):
            sums[c] = sums.get(c, 0) + math.ceil(n)
    for c, n in sums.items():
        if n > int(MAX_COUNT):
            raise NbtextError(f"{what}, class {c!r} would hold {n} {unit}, {PAST_MAX}")


def whole_counts(value, n: int, what: str, whole: bool = True) -> list:
    """A list of ``n`` counts: numbers from 0 to 2**53 (JSON numbers, or strings of them as the
    text dump writes them; not true or false), whole ones unless ``whole`` is false (a text
    model learned with fractional sample weights, as scikit-learn's partial_fit takes them)."""
    if not isinstance(value, list) or len(value) != n:
        raise ValueError(f"{what} must hold one count per class ({n})")
    try:
        counts = [count_of(x) for x in value]
    except ValueError:
        counts = [math.nan]
    if not all(0 <= x <= MAX_COUNT and (x.is_integer() or not whole) for x in counts):
        raise ValueError(f"{what} must hold {'whole ' if whole else ''}numbers from 0 to 2**53")
    return counts


def stored_type(a) -> str:
    """The smallest unsigned type that holds the numbers of ``a`` (float64, any layout) when they
    are whole, else "<f8"."""
    import numpy as np

    # (read in place, a block at a time: the counts are a transposed view, and a whole float64
    # copy would sit in save's peak)
    step = 1 << 16
    rows = () if a.size == 0 else a.reshape(1, -1) if a.ndim < 2 else a.reshape(-1, a.shape[-1])
    whole = a.size == 0 or (a.min() >= 0 and all(
        np.array_equal(r[i:i + step], np.round(r[i:i + step])) for r in rows for i in range(0, len(r), step)))
    top = a.max() if a.size else 0
    return ("|u1" if top < 2**8 else "<u2" if top < 2**16 else "<u4" if top < 2**32 else "<f8") \
        if whole else "<f8"


def array_section(name: str, a) -> tuple:
    """Whole numbers in the smallest unsigned type that holds them (a quarter of float64's
    bytes where they fit 16 bits, as a mail corpus's counts do), anything else as float64."""
    import numpy as np

    a = np.asarray(a, dtype=np.float64)
    dtype = stored_type(a)
    out = np.empty(a.shape, dtype=dtype)  # (C order, written once: no copy made by tobytes)
    out[...] = a
    return (name, dtype, a.shape, out.reshape(-1).view(np.uint8))
