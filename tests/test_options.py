"""The typed boundary under the command lines (nbtext.options): what a command was asked is built
once, as records, by either command line; click stays in nbtext/cli.py."""
import pathlib
import re

import pytest

from nbtext.options import Classify, Overrides, Sources
from nbtext.quick import CLASSIFY_OPTIONS, parse
from nbtext.read import LineOptions

NBTEXT = pathlib.Path(__file__).resolve().parent.parent / "nbtext"


def test_every_classify_option_reaches_the_call():
    """Each row of classify's option table lands in Classify, which both command lines build
    (Classify.of): a row added to the table and not read into the record fails here, rather
    than being silently dropped."""
    given = {"flag": True, "str": "x", "float": 0.5, "pair": (0.1, 0.2), "count": 3}
    plain = {dest: (False if kind == "flag" else None) for _, dest, kind, _ in CLASSIFY_OPTIONS}
    plain.update(model_path="m.nbm", file="-")
    for _, dest, kind, _ in CLASSIFY_OPTIONS:
        assert Classify.of({**plain, dest: given[kind]}) != Classify.of(plain), dest
    argv = ["classify", "-m", "m.nbm", "--exit-code", "--positive", "ham", "--threshold", "0.7",
            "--unsure", "0.2,0.4", "-p", "--spamicity", "--row", "a=1", "-q", "msg.eml"]
    assert parse(argv) == Classify(model_path="m.nbm", file="msg.eml", row="a=1",
                                   overrides=Overrides("ham", 0.7, (0.2, 0.4)), exit_code=True,
                                   passthrough=True, spamicity=True, quiet=True)
    assert parse(["classify", "-m", "m.nbm"]) == Classify(model_path="m.nbm")
    assert parse(["classify", "-m", "m.nbm", "--explain", "3"]) is None  # (click reads --explain)


def test_sources_list_every_path_read_sources_first():
    s = Sources(("corpus", "more.tsv"), (("spam", "junk.mbox"), ("ham", "Maildir")), LineOptions())
    assert s.all == ["corpus", "more.tsv", "junk.mbox", "Maildir"]
    assert Sources((), (), LineOptions()).table_paths == ["-"]


def test_click_is_imported_by_the_click_command_line_alone():
    importers = sorted(str(p.relative_to(NBTEXT)) for p in NBTEXT.rglob("*.py")
                       if re.search(r"^\s*(import click|from click)", p.read_text(), re.M))
    assert importers == ["cli.py"]


def test_a_size_out_of_range_says_which_end():
    """--max-memory 1000000000000T was refused as "out of range: from 1M", the one end it is above."""
    from nbtext.options import parse_size

    assert parse_size("1.5G") == 3 << 29 and parse_size("500mb") == 500 << 20
    for value in ("1K", "1000000000000T", "1e30"):
        with pytest.raises(ValueError, match=rf"^'{value}' is out of range: from 1M, less than 8388608T$"):
            parse_size(value)
