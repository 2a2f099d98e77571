"""Issue 18's classes of defect looked for again in what came after it: table models and their
dumps, the table reader, names that reach a terminal or an output row. Each test is a
regression test of a defect an attacker's probe found (docs/hostile.md)."""
import copy
import json

import pytest

from nbtext.errors import NbtextError
from nbtext.store.dump import import_lines

from conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
GOLF = FIXTURES / "play_golf.csv"


@pytest.fixture(scope="module")
def golf_dump(tmp_path_factory):
    from conftest import CliRunner

    from nbtext.cli import cli

    path = tmp_path_factory.mktemp("golf") / "golf.nbm"
    runner = CliRunner()
    assert runner.invoke(cli, ["train", str(GOLF), "--label-column", "Play", "-q", "-o", str(path)]).exit_code == 0
    lines = runner.invoke(cli, ["export", "-m", str(path)]).stdout.splitlines()
    return lines


def crafted(lines, change=None, arrays=None):
    head = json.loads(lines[1])
    rows = [json.loads(x) for x in lines[2:]]
    if change:
        change(head)
    if arrays:
        arrays(rows)
    return [lines[0], json.dumps(head), *map(json.dumps, rows)]


def setter(key, value):
    return lambda h: h.__setitem__(key, copy.deepcopy(value))


@pytest.mark.parametrize("change, arrays, message", [
    # names that split output rows or drive a terminal
    (setter("classes", ["n\to", "yes"]), None, r"classes: 'n\\to' holds a control character"),
    (setter("classes", ["\x1b[31mno", "yes"]), None, "holds a control character"),
    (lambda h: h["columns"].__setitem__(0, "Out\nlook"), None, "columns: 'Out\\\\nlook' holds"),
    (setter("label_column", "Pl\x00ay"), None, "label_column: 'Pl\\\\x00ay' holds"),
    # counts: not numbers, not whole, beyond what a float holds exactly, above the class's rows
    (setter("class_count", [True, 9]), None, "class_count must hold whole numbers"),
    (setter("class_count", [1e308, 1e308]), None, "class_count must hold whole numbers"),
    (setter("class_count", [0, 0]), None, "counts of a column exceed its rows"),
    (None, lambda a: a[0].update(data=[1e308] * 20), "counts must be whole numbers"),
    (None, lambda a: a[0].update(data=[0.5] * 20), "counts must be whole numbers"),
    (None, lambda a: a[0].update(data=[1000] * 20), "counts of a column exceed its rows"),
    # the dump's own shape: an array twice, fields it never writes, settings that disagree
    (None, lambda a: a.append(copy.deepcopy(a[0])), "array cat_counts given twice"),
    (setter("ledger", ["ab"]), None, "unknown field 'ledger'"),
    (setter("kind", "text"), None, 'kind must be "table"'),
])
def test_import_refuses_hostile_table_dumps(golf_dump, change, arrays, message):
    """Each of these was imported, and then split predict's rows, printed escape sequences,
    made every classify an internal error (OverflowError, math domain error) or called every
    row one class."""
    with pytest.raises(NbtextError, match=message):
        import_lines(crafted(golf_dump, change, arrays), "d")


def test_an_untouched_table_dump_imports(golf_dump):
    assert import_lines(crafted(golf_dump), "d").class_count.tolist() == [5, 9]


def test_a_text_model_class_with_a_tab_is_refused(tmp_path):
    from nbtext.store.dump import export_lines
    from nbtext.model import Model  # noqa: F401  (the text model's dump, as export writes it)
    from conftest import CliRunner

    from nbtext.cli import cli
    from nbtext import store

    tsv = tmp_path / "t.tsv"
    tsv.write_text("spam\tbuy cheap\nham\tlunch\n")
    assert CliRunner().invoke(cli, ["train", str(tsv), "-q", "--no-calibrate", "-o", str(tmp_path / "m.nbm")]).exit_code == 0
    lines = list(export_lines(store.load(str(tmp_path / "m.nbm"))))
    head = json.loads(lines[1])
    head["classes"] = ["h\tam", "spam"]
    with pytest.raises(NbtextError, match="holds a control character"):
        import_lines([lines[0], json.dumps(head), *lines[2:]], "d")
    head["classes"], head["class_count"] = ["ham", "spam"], [True, "1"]
    with pytest.raises(NbtextError, match="class_count must hold numbers from 0 to 2"):
        import_lines([lines[0], json.dumps(head), *lines[2:]], "d")


def test_a_text_model_learned_with_fractional_weights_saves_and_loads(tmp_path):
    """scikit-learn's partial_fit takes fractional sample weights, and so does a text model's:
    its class counts are then not whole, and a load-time check refused every such file."""
    import nbtext
    from nbtext.settings import ModelSettings, TokenizerSettings

    m = nbtext.Model.empty(TokenizerSettings(), ModelSettings(variant="multinomial"), ["ham", "spam"])
    m.add([["a", "b"], ["c"]], ["ham", "spam"], weight=2.5)
    nbtext.save(m, str(tmp_path / "w.nbm"))
    assert nbtext.load(str(tmp_path / "w.nbm")).class_count.tolist() == [2.5, 2.5]


def test_a_table_model_with_every_row_forgotten_is_refused_not_a_crash(run, tmp_path):
    model = tmp_path / "g.nbm"
    assert run("train", GOLF, "--label-column", "Play", "-q", "-o", model).exit_code == 0
    assert run("learn", "-m", model, "--forget", "--label", "no", GOLF, "-q").exit_code == 1  # (yes rows too)
    rows = GOLF.read_text().splitlines()
    for label in ("no", "yes"):
        part = tmp_path / f"{label}.csv"
        part.write_text("\n".join([rows[0], *(r for r in rows[1:] if r.endswith("," + label))]) + "\n")
        assert run("learn", "-m", model, "--forget", "--label", label, part, "-q").exit_code == 0
    r = run("predict", "-m", model, GOLF)
    assert r.exit_code == 1 and r.stderr == ("nbtext: error: the table model holds no rows (every row was "
                                             "forgotten): learn rows before scoring with it\n")


def test_error_messages_show_control_characters_escaped(run, tmp_path):
    """A column name (or a file name, a header) with an escape sequence was printed raw in the
    error line: a hostile file drove the terminal."""
    bad = tmp_path / "esc.csv"
    bad.write_text("a\x1b[31m,b,label\n1,2,x\n3,4,y\n")
    r = run("train", bad, "--variant", "categorical", "-o", tmp_path / "m.nbm")
    assert r.exit_code == 1 and "\x1b" not in r.stderr
    assert r.stderr == f"nbtext: error: {bad}:1: column name 'a\\x1b[31m' holds a control character\n"
    r = run("train", bad, "--label-column", "lab", "--variant", "categorical", "-o", tmp_path / "m.nbm")
    assert r.exit_code == 1 and "\x1b" not in r.stderr and "(columns: a\\x1b[31m, b, label)" in r.stderr
    from nbtext.errors import shown

    assert shown("a\tb\x9b\udce9\u2028 c") == "a\\x09b\\x9b\\xe9\\u2028 c"


def pipe_of(data: bytes) -> str:
    """A pipe holding data, as `<(...)` gives one: a path that can be read once."""
    import os

    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    return f"/dev/fd/{r}"


def test_a_table_from_a_pipe_or_stdin_is_read_once(run, tmp_path):
    """train, eval and cv opened a table more than once (its header, then its rows; typing,
    then training): from a pipe the second read was empty ("empty table"), and eval of stdin
    never looked for the model's label column."""
    model = tmp_path / "g.nbm"
    r = run("train", pipe_of(GOLF.read_bytes()), "--label-column", "Play", "--variant", "categorical", "-o", model)
    assert r.exit_code == 0 and "trained on 14 rows (5 no, 9 yes)" in r.stderr, r.stderr
    for source in (pipe_of(GOLF.read_bytes()), "-"):
        r = run("eval", "-m", model, source, input=GOLF.read_bytes())
        assert r.exit_code == 0 and r.stdout.startswith("documents     14\n"), r.stderr
    r = run("cv", pipe_of(GOLF.read_bytes()), "--label-column", "Play", "--variant", "categorical", "--folds", "2")
    assert r.exit_code == 0 and "of 14 rows" in r.stdout, r.stderr


def test_a_table_whose_rows_cannot_be_read_is_reported_as_a_table(run, tmp_path):
    """A CSV whose header has the label column but a row with a quote left open was taken for a
    text line file, and the error blamed a missing text column."""
    rows = GOLF.read_text().splitlines()
    bad = tmp_path / "q.csv"
    bad.write_text("\n".join([*rows[:5], 'Rainy,"Hot,High,false,no', *rows[5:]]) + "\n")
    r = run("train", bad, "--label-column", "Play", "-o", tmp_path / "m.nbm")
    assert r.exit_code == 1 and r.stderr == f"nbtext: error: {bad}:6: bad CSV (a quote opened in this record is never closed)\n"


def test_a_table_bomb_of_columns_is_refused_and_blocks_are_bounded_by_characters(run, tmp_path, monkeypatch):
    """A gzip of 40 rows of a million columns took 43 s and 2.4 GB (a block of 8,192 rows held
    every cell as a string, and the statistics cost as much per column): a table has at most
    MAX_COLUMNS columns, refused from its first line, and a block of rows holds at most about
    BLOCK_CHARS characters however few rows that is."""
    import gzip

    from nbtext.table import read

    wide = tmp_path / "wide.csv.gz"
    with gzip.open(wide, "wb") as f:
        f.write(b"c," * read.MAX_COLUMNS + b"label\n" + b"1," * read.MAX_COLUMNS + b"a\n")
    r = run("train", wide, "--label-column", "label", "-o", tmp_path / "m.nbm")
    assert r.exit_code == 1 and r.stderr == f"nbtext: error: {wide}:1: more than 100,000 columns: not a table nbtext reads\n"
    table = tmp_path / "t.csv"
    table.write_text("a,b,label\n" + "".join(f"{i},{'x' * 90},{i % 2}\n" for i in range(100)))
    monkeypatch.setattr(read, "BLOCK_CHARS", 1000)
    blocks = list(read.raw_blocks(str(table), None, 8192))
    assert len(blocks) == 10 and all(sum(len(",".join(r)) + 1 for r in rows) < 1100 for _, rows in blocks)
    assert sum((lines for lines, _ in blocks), []) == list(range(1, 102))


def test_statistics_too_large_to_hold_are_refused_before_they_are_allocated(run, tmp_path, monkeypatch):
    """20,000 numeric columns with --covariance full took 23 GB before the kernel killed train
    (a 20,000 x 20,000 scatter matrix a class); a label column of ids asked a class by every
    value. Statistics beyond stats.MAX_NUMBERS numbers are refused before they are allocated."""
    from nbtext.table import stats

    p = 6000  # (2 classes x 6000 x 6000 > MAX_NUMBERS)
    wide = tmp_path / "wide.csv"
    wide.write_text(",".join(f"x{i}" for i in range(p)) + ",label\n"
                    + "".join(",".join(str((r * 7 + i) % 5) for i in range(p)) + f",{r % 2}\n" for r in range(4)))
    r = run("train", wide, "--label-column", "label", "--covariance", "full", "-o", tmp_path / "m.nbm")
    each = 3 * p + 1 + p + p * p + stats.EXACT_WEIGHT * (2 * p + p + p * p)  # (floats; exact sums weigh more)
    assert r.exit_code == 1 and f"the table's statistics would hold {2 * each:,} numbers (2 classes x {each:,})" in r.stderr
    assert not (tmp_path / "m.nbm").exists()
    ids = tmp_path / "ids.csv"
    ids.write_text("id,label\n" + "".join(f"v{i},L{i}\n" for i in range(200)))
    monkeypatch.setattr(stats, "MAX_NUMBERS", 10_000)
    r = run("train", ids, "--label-column", "label", "-o", tmp_path / "m.nbm")
    assert r.exit_code == 1 and "too many classes (is the label column right?)" in r.stderr


def test_text_counts_too_large_to_hold_are_refused(run, tmp_path, monkeypatch):
    """A TSV of 20,000 labels, one a line, took 6.5 GB and was still growing after two minutes
    (the counts were a class by every token). Beyond counts.MAX_NUMBERS held counts (the nonzero
    ones, from three classes on) they are refused."""
    from nbtext.nb import counts

    many = tmp_path / "many.tsv"
    many.write_text("".join(f"L{i}\tword{i} common text\n" for i in range(60)))
    monkeypatch.setattr(counts, "MAX_NUMBERS", 1000)
    r = run("train", many, "--no-calibrate", "-o", tmp_path / "m.nbm")
    assert r.exit_code == 1 and "too many classes (are the labels right?)" in r.stderr
    assert not (tmp_path / "m.nbm").exists()


def test_calibrate_on_one_class_is_refused_and_the_model_kept(run, sample_copy):
    """calibrate on documents of one class replaced the model's calibration with none and said
    it had calibrated; train refuses one class, and so does calibrate now, the model untouched."""
    from conftest import DATA

    before = sample_copy.read_bytes()
    r = run("calibrate", "-m", sample_copy, "--label", "spam", DATA / "corpus" / "spam")
    assert r.exit_code == 1 and r.stderr == "nbtext: error: need documents of at least two classes to calibrate, got only 'spam'\n"
    assert sample_copy.read_bytes() == before


def test_learn_and_calibrate_refuse_a_model_inside_their_inputs(run, sample_model, tmp_path):
    """A model inside a folder given to learn or calibrate was read as one of its documents (its
    vocabulary learned as a ham message), as train's output was before issue 18."""
    folder = tmp_path / "c" / "ham"
    folder.mkdir(parents=True)
    (folder / "1.eml").write_text("Subject: lunch\n\nsee you at noon\n")
    (tmp_path / "c" / "spam").mkdir()
    (tmp_path / "c" / "spam" / "1.eml").write_text("Subject: pills\n\nbuy cheap pills\n")
    model = folder / "m.nbm"
    model.write_bytes(sample_model.read_bytes())
    before = model.read_bytes()
    for args in (["learn", "-m", model, "--label", "ham", folder], ["calibrate", "-m", model, tmp_path / "c"]):
        r = run(*args)
        assert r.exit_code == 1 and "m.nbm: is inside the input" in r.stderr, r.stderr
    assert model.read_bytes() == before


@pytest.mark.slow
def test_fuzz_table_reader_model_files_and_dumps(golf_dump, tmp_path):
    """A seeded pass (a few seconds) of mutated tables, table model files and table dumps: each
    is trained on or scored, or refused with NbtextError; never another exception (the fuzz
    pass of tests/test_hostile.py covers text models, mail and line files)."""
    import random

    import numpy as np

    from nbtext import store
    from nbtext.errors import ModelFileError
    from nbtext.settings import TableSettings
    from nbtext.table.model import train_table
    from nbtext.table.read import TableOptions

    from test_hostile import mutations

    rng = random.Random(18)
    opts = TableOptions(label_column="Play")
    model = import_lines(golf_dump, "d")

    def score(m, path):
        for frame in m.frames_of(str(path), TableOptions(), labelled=False):
            proba, dens = m.scores(frame)
            assert np.isfinite(proba).all() and ((proba >= 0) & (proba <= 1)).all()

    seeds = {"csv": GOLF.read_bytes(), "tsv": GOLF.read_bytes().replace(b",", b"\t"),
             "num": (ROOT / "tests" / "fixtures" / "iris.csv").read_bytes()[:3000]}
    for name, seed in seeds.items():
        for i, data in enumerate(mutations(seed, rng, 60)):
            path = tmp_path / f"{i}.{name}{'.csv' if name == 'num' else ''}"
            path.write_bytes(data)
            try:
                o = TableOptions(label_column="class") if name == "num" else opts
                m = train_table([str(path)], o, TableSettings())
                score(m, path)
            except NbtextError:
                pass
            try:
                score(model, path)
            except NbtextError:
                pass
    path = tmp_path / "m.nbm"
    store.save(model, str(path))
    good = path.read_bytes()
    for data in mutations(good, rng, 150):
        path.write_bytes(data)
        try:
            score(store.load(str(path)), GOLF)
        except NbtextError:
            pass
    dump = "\n".join(golf_dump).encode()
    for data in mutations(dump, rng, 150):
        try:
            score(import_lines(data.decode("utf-8", "replace").splitlines(), "d"), GOLF)
        except NbtextError:
            pass


@pytest.mark.slow
def test_an_output_encoding_short_of_unicode_escapes_rather_than_fails(tmp_path):
    """With PYTHONIOENCODING=ascii, cv's report ('0.9 ± 0.1') was an internal error halfway
    through its output (as would be a class name from a stranger's model): what the encoding
    cannot hold is written \\xNN."""
    import os
    import subprocess
    import sys

    t = tmp_path / "t.tsv"
    t.write_text("".join(f"{'spam' if i % 2 else 'ham'}\t{'buy cheap' if i % 2 else 'lunch noon'} {i}\n"
                         for i in range(8)))
    r = subprocess.run([sys.executable, "-m", "nbtext", "cv", str(t), "--folds", "2"], capture_output=True,
                       cwd=ROOT, env={**os.environ, "PYTHONIOENCODING": "ascii"}, timeout=120)
    assert r.returncode == 0 and b"internal error" not in r.stderr, r.stderr
    assert b" \\xb1 " in r.stdout


def test_import_reads_no_more_than_a_first_line_of_what_is_not_a_dump(run, tmp_path, monkeypatch):
    """import read its whole input before checking the first line: /dev/zero until memory ran
    out (2.6 GB in 15 s), a stranger's file of gigabytes whole. It reads a dump a line at a time,
    the first at most 64 bytes."""
    from nbtext import read

    reads = []
    for name in ("read", "readline"):
        real = getattr(read._Input, name)
        monkeypatch.setattr(read._Input, name, lambda self, n, real=real: reads.append(len(b := real(self, n))) or b)
    big = tmp_path / "big.dump"
    with open(big, "wb") as f:
        f.truncate(50 << 20)  # (sparse: 50 MiB of NULs without a line end)
    r = run("import", big, "-o", tmp_path / "m.nbm")
    assert r.exit_code == 1 and "not an nbtext dump (first line should be '# nbtext dump 1')" in r.stderr
    assert sum(reads) < 1 << 20 and not (tmp_path / "m.nbm").exists()


def test_a_table_row_with_a_field_past_the_csv_limit_is_a_user_error(run, tmp_path):
    """classify of a table model read a CSV row whose field passed the csv module's 128 KiB
    limit as an internal error."""
    model = tmp_path / "g.nbm"
    assert run("train", GOLF, "--label-column", "Play", "-q", "-o", model).exit_code == 0
    row = tmp_path / "row.csv"
    row.write_bytes(b"x" * 200_000 + b",Hot,High,true\n")
    r = run("classify", "-m", model, row)
    assert r.exit_code == 1 and r.stderr == f"nbtext: error: {row}: bad CSV (field larger than field limit (131072))\n"
    r = run("classify", "-m", model, "--row", "Outlook=" + "x" * 200_000)
    assert r.exit_code == 1 and r.stderr.startswith("nbtext: error: --row: bad CSV (field larger")


@pytest.mark.parametrize("name, value", [
    ("sumsq", "-0x1p900"),             # a negative sum of squares under the stored, sane M2s
    ("sum", "0x1p9"),                  # a mean of 512 where gauss says otherwise
    ("joint_products", "0x0p0"),       # a scatter the joint statistics do not have
])
def test_exact_sums_that_disagree_with_the_stored_floats_are_refused(tmp_path, name, value):
    """A table model keeps exact sums beside the means and M2s derived from them (nbtext.table
    .exact); a dump edited in one and not the other was imported, predicted by its floats, and
    after one learn predicted by its sums: a sum of squares of -2**900 called a setosa row
    versicolor at 1.000000."""
    from conftest import CliRunner

    from nbtext.cli import cli

    path = tmp_path / "iris.nbm"
    runner = CliRunner()
    assert runner.invoke(cli, ["train", str(FIXTURES / "iris.csv"), "--label-column", "class",
                               "--covariance", "full", "-q", "-o", str(path)]).exit_code == 0
    lines = runner.invoke(cli, ["export", "-m", str(path)]).stdout.splitlines()
    assert import_lines(lines, "d").class_count.tolist() == [50, 50, 50]  # untouched: imports
    at = next(i for i, line in enumerate(lines) if line.startswith('{"exact"'))
    d = json.loads(lines[at])
    d["exact"][name][0] = value
    lines[at] = json.dumps(d)
    with pytest.raises(NbtextError, match="exact: the sums do not give the means and M2s"):
        import_lines(lines, "d")


def test_a_variant_with_columns_typed_otherwise_trains_saves_and_loads(run, tmp_path):
    """The variant is the columns' default type; --numeric and --categorical type a column
    otherwise, and such a model is a model like any other (a load-time check refused it, and
    the files it had written)."""
    for variant, flag in (("categorical", "--numeric"), ("gaussian", "--categorical")):
        m = tmp_path / f"{variant}.nbm"
        r = run("train", FIXTURES / "iris.csv", "--label-column", "class", "--variant", variant, flag,
                "sepal_length", "-o", m, "-q")
        assert r.exit_code == 0, r.stderr
        r = run("predict", "-m", m, FIXTURES / "iris.csv")
        assert r.exit_code == 0 and len(r.stdout.splitlines()) == 150, r.stderr
        dump = run("export", "-m", m).stdout
        assert run("import", "-", "-o", tmp_path / "back.nbm", input=dump).exit_code == 0
        assert run("export", "-m", tmp_path / "back.nbm").stdout == dump


def test_a_model_file_whose_exact_sums_disagree_is_refused_when_they_are_used(run, tmp_path):
    """A model file's exact sums are read when first needed (learn, forget, merge): scoring uses
    the floats stored beside them (a wide table's sums took seconds to read for each classify).
    A file whose sums were forged under sane floats (valid checksums) scores by its floats, and
    learn refuses it, naming the file, and leaves it as it was."""
    from nbtext import store

    path = tmp_path / "iris.nbm"
    assert run("train", FIXTURES / "iris.csv", "--label-column", "class", "-q", "-o", path).exit_code == 0
    want = run("predict", "-m", path, FIXTURES / "iris.csv").stdout
    model = store.load(str(path))
    model.stats._exact()
    model.stats.S2.m[0, 0] = -(1 << 900)  # (the floats kept as derived: the file holds both)
    store.save(model, str(path))
    before = path.read_bytes()
    assert run("predict", "-m", path, FIXTURES / "iris.csv").stdout == want
    row = tmp_path / "row.csv"
    row.write_text("sepal_length,sepal_width,petal_length,petal_width\n5.1,3.5,1.4,0.2\n")
    r = run("learn", "-m", path, "--label", "setosa", row)
    assert r.exit_code == 1
    assert r.stderr == (f"nbtext: error: {path}: corrupt model file (exact: the sums do not give the means "
                        "and M2s stored in gauss and joint)\n")
    assert path.read_bytes() == before


def _train_cpu_seconds(run, paths, label):
    """The CPU time of `train` on each table, the least of three runs (in this thread: no start-up,
    and none of the time of other threads of the test process, such as a Dask client's event loop).
    The runs alternate between the tables, so that a busy moment of a shared machine does not fall
    on one size alone. The collector is off while they run: in a test process that has run
    hundreds of tests before, its full passes over their objects came in the larger runs (19 of
    them in one test) and doubled the ratio, a cost of the test process's heap, not of train's
    (nbtext's entry point freezes the objects of its start-up)."""
    import gc
    import time

    best = [float("inf")] * len(paths)
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            for i, path in enumerate(paths):
                start = time.thread_time()
                r = run("train", path, "--label-column", label, "--variant", "table", "-q", "-o", f"{path}.nbm")
                best[i] = min(best[i], time.thread_time() - start)
                assert r.exit_code == 0, r.stderr
    finally:
        gc.enable()
    return best


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["label-of-ids", "distinct-values"])
def test_tables_train_in_time_linear_in_their_rows(run, tmp_path, kind):
    """A label column of ids took 4 s at 16,000 rows and 74 s at 64,000 (each block looked every
    class up with list.index, and each label's first line with tuple.index); a categorical column
    of all-distinct values grew as n^1.7 (each block copied every value seen so far). Eight times
    the rows must cost well under the 64 times of quadratic growth (linear: 8, here up to 11)."""
    def table(n):
        path = tmp_path / f"{kind}-{n}.csv"
        if kind == "label-of-ids":
            path.write_text("id,colour,x\n" + "".join(f"u{i},{'red' if i % 2 else 'blue'},{i % 7}.5\n"
                                                      for i in range(n)))
        else:
            path.write_text("label,item,x\n" + "".join(f"{'yes' if i % 2 else 'no'},v{i},{i % 7}.5\n"
                                                       for i in range(n)))
        return path

    label = "id" if kind == "label-of-ids" else "label"
    small = 8192 if kind == "label-of-ids" else 32768
    little, big = _train_cpu_seconds(run, [table(small), table(8 * small)], label)
    ratio = big / little
    assert ratio < 20, f"8 times the rows cost {ratio:.1f} times the CPU time"


def test_a_label_column_of_ids_is_refused_in_the_block_that_passes_the_limit(run, tmp_path, monkeypatch):
    """The README's own example of statistics too large to hold: refused before they are
    allocated, as the block of rows that passes the limit is read, the rest unread."""
    from nbtext.table import read, stats

    seen = []
    frames = read.frames

    def counted(*args, **kw):
        for frame in frames(*args, **kw):
            seen.append(len(frame))
            yield frame

    monkeypatch.setattr(read, "frames", counted)
    import nbtext.table.model as model_module
    monkeypatch.setattr(model_module, "frames", counted)
    monkeypatch.setattr(stats, "MAX_NUMBERS", 96 * 20_000)  # (96 numbers a class here: 20,000 classes)
    ids = tmp_path / "ids.csv"
    ids.write_text("id,colour,x\n" + "".join(f"u{i:06d},{'red' if i % 2 else 'blue'},{i % 7}.5\n"
                                             for i in range(100_000)))
    r = run("train", ids, "--label-column", "id", "--variant", "table", "-o", tmp_path / "m.nbm")
    assert r.exit_code == 1
    assert r.stderr.startswith("nbtext: error: the table's statistics would hold 2,359,200 numbers "
                               "(24,575 classes x 96), more than 1,920,000: too many classes"), r.stderr
    assert sum(seen) == 24_575 and not (tmp_path / "m.nbm").exists()  # (3 blocks of 100,000 rows)
