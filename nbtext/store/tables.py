"""A table model to and from the model file's sections, and its text dump.

    header      "kind": "table", the table settings, the label column, the feature columns and
                their types, each categorical column's values (in the order of the counts),
                classes, rows per class, the decision
    cat_counts  (n_classes, sum of d_j) rows per class and value, the columns side by side
    gauss       (3, n_classes, n_numeric): per class and numeric column: rows with a value,
                mean, M2
    joint       (n_classes, 1 + p + p*p), models with shared or full covariance: per class the
                complete rows, their mean vector and scatter matrix
    exact       the state the floats of gauss and joint are derived from (nbtext.table.stats):
                UTF-8 JSON {"sum": [...], "sumsq": [...]} (and "joint_sum", "joint_products"
                with shared or full covariance), each a flat list of exact sums in the order of
                the arrays, written '-0x1bp-4' (-27/16: an odd hexadecimal mantissa and a binary
                exponent) or '0'. A file without it (written before nbtext kept exact sums) is
                read as the sums its floats stand for, and gives the same floats.

Every size is checked against the header before it is trusted, every number for being finite
(counts and M2s not negative), as for text models. The dump is one JSON line of the header's
fields and one JSON line per array: floats written by repr, so import gives the same bits.
"""
from __future__ import annotations

import json
import math

import numpy as np

from ..errors import ModelFileError, NbtextError
from .fields import MAX_COUNT, names, whole_counts
from .container import frame, json_object, section

TABLE_DUMP_MAGIC = "# nbtext table dump 1"
KINDS = ("categorical", "numeric")
FLOAT_ARRAYS = ("cat_counts", "gauss", "joint")
EXACT = ("sum", "sumsq", "joint_sum", "joint_products")


def is_table_header(header: dict) -> bool:
    return isinstance(header, dict) and header.get("kind") == "table"


FIELDS = ("kind", "table", "label_column", "columns", "kinds", "values", "classes", "class_count", "decision")


def _header_fields(model) -> dict:
    return {
        "kind": "table",
        "table": model.settings.to_dict(),
        "label_column": model.label_column,
        "columns": list(model.columns),
        "kinds": list(model.kinds),
        "values": [list(v) for v in model.stats.values],
        "classes": list(model.classes),
        "class_count": model.class_count.tolist(),
        "decision": model.decision.to_dict(),
    }


def _arrays(model) -> dict:
    s = model.stats
    k, p = len(s.classes), s.n_numeric
    out = {"cat_counts": np.hstack([a.reshape(k, -1) for a in s.cat]) if s.cat else np.zeros((k, 0)),
           "gauss": np.stack([s.n, s.mean, s.m2]).reshape(3, k, p)}
    if s.joint:
        out["joint"] = np.hstack([s.jn[:, None], s.jmean, s.jm2.reshape(k, p * p)])
    return out


def _exact_strings(model) -> dict:
    return {name: a.strings() for name, a in model.stats.exact_sums().items()}


def encode_table(model) -> list:
    from .. import __version__
    from .fields import array_section

    header = {"format": "nbtext-model", "created_by": f"nbtext {__version__}", **_header_fields(model)}
    arrays = _arrays(model)
    sections = [array_section("cat_counts", arrays["cat_counts"]),
                ("gauss", "<f8", arrays["gauss"].shape, np.ascontiguousarray(arrays["gauss"], dtype="<f8").tobytes())]
    if "joint" in arrays:
        sections.append(("joint", "<f8", arrays["joint"].shape,
                         np.ascontiguousarray(arrays["joint"], dtype="<f8").tobytes()))
    exact = json.dumps(_exact_strings(model), separators=(",", ":")).encode("ascii")
    sections.append(("exact", "|u1", (len(exact),), exact))
    return frame(header, sections)


def _strings(value, what: str, distinct: bool = True) -> list:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise ValueError(f"{what} must be a list of strings")
    if distinct and len(set(value)) != len(value):
        raise ValueError(f"{what} must be distinct")
    return value


def _model(d: dict, arrays: dict, where: str = "", lazy: bool = False):
    """The TableModel of a header's (or dump's) fields and its arrays, every field checked:
    ValueError (or SettingError) naming the first that is wrong."""
    from ..nb.decision import Decision
    from ..settings import TableSettings
    from ..table.model import TableModel
    from ..table.stats import TableStats

    if not isinstance(d.get("table"), dict):
        raise ValueError("table must be a JSON object")
    settings = TableSettings.from_dict(d["table"])
    label = d["label_column"]
    if not isinstance(label, str):
        raise ValueError("label_column must be a name")
    names([label], "label_column")
    columns = names(d["columns"], "columns")
    if len(set(columns)) != len(columns):
        raise ValueError("columns must be distinct")
    kinds = _strings(d["kinds"], "kinds", distinct=False)
    if not columns or len(kinds) != len(columns) or any(k not in KINDS for k in kinds):
        raise ValueError("kinds must say categorical or numeric for each of the columns")
    if label in columns:
        raise ValueError("columns must not hold the label column")
    # (the variant is the columns' default type: --categorical and --numeric type columns
    # otherwise, so a categorical model may hold numeric columns and a gaussian one categorical)
    values = d["values"]
    n_cat, p = kinds.count("categorical"), kinds.count("numeric")
    if not isinstance(values, list) or len(values) != n_cat:
        raise ValueError(f"values must hold a list per categorical column ({n_cat})")
    values = [_strings(v, "a column's values") for v in values]
    classes = names(d["classes"], "classes")
    if not classes or classes != sorted(set(classes)):
        raise ValueError("classes must be distinct and sorted")
    k = len(classes)
    cc = np.asarray(whole_counts(d["class_count"], k, "class_count"))
    if not isinstance(d.get("decision"), dict):
        raise ValueError("decision must be a JSON object")
    decision = Decision.from_dict(d["decision"])
    decision.check_classes(classes)
    widths = [len(v) for v in values]
    cat = np.asarray(arrays["cat_counts"], dtype=np.float64)
    if cat.shape != (k, sum(widths)):
        raise ValueError(f"cat_counts has shape {list(cat.shape)}, the columns need {[k, sum(widths)]}")
    gauss = np.asarray(arrays["gauss"], dtype=np.float64)
    if gauss.shape != (3, k, p):
        raise ValueError(f"gauss has shape {list(gauss.shape)}, the columns need {[3, k, p]}")
    joint = arrays.get("joint")
    if (joint is not None) != (settings.covariance != "diagonal"):
        raise ValueError("joint statistics are there exactly when the covariance is shared or full")
    if joint is not None:
        joint = np.asarray(joint, dtype=np.float64)
        if joint.shape != (k, 1 + p + p * p):
            raise ValueError(f"joint has shape {list(joint.shape)}, the columns need {[k, 1 + p + p * p]}")
    for name, a in (("class_count", cc), ("cat_counts", cat), ("gauss", gauss), ("joint", joint)):
        if a is not None and not np.isfinite(a).all():
            raise ValueError(f"{name} must be finite")
    if (cc < 0).any() or (cat < 0).any() or (gauss[0] < 0).any() or (gauss[2] < 0).any():
        raise ValueError("counts and M2s must not be negative")
    # Counts are whole numbers, and a class's counts of a column (its rows with a value there)
    # are at most its rows: counts of 1e308 overflowed every score, counts above the rows gave
    # every row one class.
    bounds = np.cumsum([0, *widths])
    for name, a in (("cat_counts", cat), ("gauss", gauss[0]), ("joint", None if joint is None else joint[:, 0])):
        if a is not None and ((a < 0).any() or (a > MAX_COUNT).any() or (a != np.round(a)).any()):
            raise ValueError(f"{name}: counts must be whole numbers from 0 to 2**53")
    per_column = [cat[:, bounds[j]:bounds[j + 1]].sum(axis=1) for j in range(n_cat)]
    for name, n in [*(("cat_counts", c) for c in per_column), ("gauss", gauss[0].T),
                    ("joint", None if joint is None else joint[:, 0])]:
        if n is not None and (n > cc).any():
            raise ValueError(f"{name}: a class's counts of a column exceed its rows (class_count)")
    stats = TableStats.of_arrays(
        classes, cc, values, [cat[:, bounds[j]:bounds[j + 1]] for j in range(n_cat)], tuple(gauss),
        None if joint is None else (joint[:, 0], joint[:, 1:1 + p], joint[:, 1 + p:].reshape(k, p, p)),
        _exact(arrays.get("exact"), k, p, joint is not None, lazy), where)
    if "exact" in arrays and not lazy and not stats.agrees():
        raise ValueError("exact: the sums do not give the means and M2s stored in gauss and joint")
    return TableModel(settings, label, columns, kinds, stats, decision)


def _exact(exact, k: int, p: int, joint: bool, lazy: bool = False):
    """The exact sums of a file or dump (None when it has none), each checked for its shape;
    ``lazy``: a function that parses them (a model file's, when they are first needed)."""
    from ..table.exact import Exact

    if exact is None:
        return None
    names = EXACT if joint else EXACT[:2]
    if not isinstance(exact, dict) or sorted(exact) != sorted(names):
        raise ValueError(f"exact must hold {', '.join(names)}")
    shapes = {"sum": (k, p), "sumsq": (k, p), "joint_sum": (k, p), "joint_products": (k, p, p)}
    for name in names:
        data = exact[name]
        if not isinstance(data, list) or len(data) != math.prod(shapes[name]):
            raise ValueError(f"exact {name} must hold {math.prod(shapes[name])} sums")

    def parse() -> dict:
        return {name: Exact.of_strings(exact[name], shapes[name]) for name in names}

    return parse if lazy else parse()


def decode_table(header: dict, payload: memoryview, path: str = "model"):
    try:
        arrays = {}
        if "exact" in header["sections"]:
            arrays["exact"] = json.loads(bytes(section(header, payload, "exact")).decode("ascii"))
        for name in ("cat_counts", "gauss", "joint"):
            if name in header["sections"]:
                shape = header["sections"][name]["shape"]
                arrays[name] = np.array(section(header, payload, name), dtype=np.float64).reshape(shape)
        for name in ("cat_counts", "gauss"):
            if name not in arrays:
                raise ValueError(f"section {name} is missing")
        return _model(header, arrays, path, lazy=True)
    except (KeyError, TypeError, ValueError, RecursionError) as e:
        raise ModelFileError(f"{path}: corrupt model file ({e.__class__.__name__}: {e})") from None
    except NbtextError as e:
        raise ModelFileError(f"{path}: corrupt model file ({e})") from None


# -- the text dump ----------------------------------------------------------------------------

def _floats(a: np.ndarray) -> list:
    return [int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x) for x in a.reshape(-1).tolist()]


def export_table(model):
    yield TABLE_DUMP_MAGIC
    yield json.dumps(_header_fields(model), sort_keys=True, ensure_ascii=False)
    for name, a in _arrays(model).items():
        yield json.dumps({"array": name, "shape": list(a.shape), "data": _floats(a)})
    yield json.dumps({"exact": _exact_strings(model)})


def import_table(first: str, it, source: str):
    try:
        fields = json_object(next(it))
        if not isinstance(fields, dict):
            raise ValueError("the settings line is not a JSON object")
        unknown = sorted(set(fields) - set(FIELDS))
        if unknown or fields.get("kind") != "table":
            raise ValueError(f"unknown field {unknown[0]!r}" if unknown else 'kind must be "table"')
        arrays = {}
        for line in it:
            if not line.strip():
                continue
            row = json.loads(line)
            if isinstance(row, dict) and list(row) == ["exact"]:
                arrays["exact"] = row["exact"]
                continue
            if not isinstance(row, dict) or row.get("array") not in FLOAT_ARRAYS:
                raise ValueError("expected an array line")
            if row["array"] in arrays:
                raise ValueError(f"array {row['array']} given twice")
            shape, data = row["shape"], row["data"]
            if not (isinstance(shape, list) and all(isinstance(x, int) and x >= 0 for x in shape)
                    and isinstance(data, list) and len(data) == math.prod(shape)
                    and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in data)):
                raise ValueError(f"array {row['array']}: its data do not fill its shape")
            arrays[row["array"]] = np.asarray(data, dtype=np.float64).reshape(shape)
        for name in ("cat_counts", "gauss"):
            if name not in arrays:
                raise ValueError(f"array {name} is missing")
        return _model(fields, arrays)
    except (KeyError, TypeError, ValueError, StopIteration, RecursionError) as e:
        raise NbtextError(f"{source}: malformed dump ({e.__class__.__name__}: {e})") from None
    except NbtextError as e:
        raise NbtextError(f"{source}: malformed dump ({e})") from None
