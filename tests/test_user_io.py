"""What a user meets at the inputs and outputs (issue 32): a label left in a scored line, inputs
given twice, empty input, P(spam) for bogofilter's users, the mail-filter recipes as the
README writes them, and the messages of a mistaken command line."""
import json

import pytest

from conftest import DATA, IIR_TEST


def test_predict_tsv_scores_the_text_field_alone(run, sample_model):
    """A label in the first field of a TSV line was scored as a word of the text: the answer
    leaked into predict (issue 32: debian-sections' accuracy rose from 86.0% to 88.3%)."""
    rows = {}
    for label in ("zzzz", "spam", "ham"):
        r = run("predict", "-m", sample_model, "--input-format", "tsv", "-", "--format", "jsonl",
                input=f"{label}\tHello world, buy now\n")
        assert r.exit_code == 0, r.output
        rows[label] = json.loads(r.stdout)
    assert rows["zzzz"]["log_scores"] == rows["spam"]["log_scores"] == rows["ham"]["log_scores"]
    r = run("predict", "-m", sample_model, "--lines", "-", "--format", "jsonl", input="Hello world, buy now\n")
    assert json.loads(r.stdout)["log_scores"] == rows["spam"]["log_scores"]
    # a header row is skipped as train skips it; a line without a tab is all text
    r = run("predict", "-m", sample_model, "--input-format", "tsv", "-",
            input="label\ttext\nspam\tHello world, buy now\nHello world, buy now\n")
    ids = [ln.split("\t")[0] for ln in r.stdout.splitlines()]
    probs = {ln.split("\t")[2] for ln in r.stdout.splitlines()}
    assert ids == ["-:2", "-:3"] and len(probs) == 1


def test_a_folder_given_twice_is_refused_not_counted_twice(run, sample_model, tmp_path):
    """The same folder listed twice was counted twice while the ledger listed each message once,
    so `learn --forget` took out one copy and then refused the other (issue 32)."""
    spam, ham, model = DATA / "corpus" / "spam", DATA / "corpus" / "ham", tmp_path / "m.nbm"
    for args, message in [
        (("--label", "spam", spam, "--label", "spam", f"{spam}/"), f"{spam}/: given twice (also as {spam})"),
        ((DATA / "corpus", "--label", "spam", spam), f"{spam}: inside {DATA / 'corpus'}, also given"),
    ]:
        r = run("train", *args, "--label", "ham", ham, "-o", model)
        assert r.exit_code == 1 and not model.exists()
        assert r.stderr == (f"nbtext: error: {message}; its documents would be counted twice (and a "
                            "model's ledger lists each once)\n")
    r = run("eval", "-m", sample_model, DATA / "corpus", DATA / "corpus")
    assert r.exit_code == 1 and "given twice" in r.stderr


def test_learn_refuses_an_empty_stdin_and_leaves_the_model(run, sample_copy):
    before = sample_copy.read_bytes()
    r = run("learn", "-m", sample_copy, "--label", "spam", input=b"")
    assert r.exit_code == 1 and r.stderr == "nbtext: error: -: standard input is empty: no message to learn\n"
    assert sample_copy.read_bytes() == before
    r = run("learn", "-m", sample_copy, "--label", "spam", input=b"Subject: hi\n\nbuy now\n")
    assert r.exit_code == 0 and sample_copy.read_bytes() != before


NO_FORMAT = "cannot tell its format (name it .tsv, .csv, .jsonl or .ft, or pass {flag})"


@pytest.mark.parametrize("sources,line", [
    (["corpus"], "corpus: no documents found in the {what}sources"),  # (its label folders empty)
    (["bare"], "bare: no label directories in it (expected bare/LABEL/... such as bare/spam and bare/ham; "
               "or use --label LABEL bare)"),
    (["empty.tsv"], "empty.tsv: no documents found in the {what}sources"),
    (["/dev/null"], f"/dev/null: {NO_FORMAT}"),
    (["-"], f"-: {NO_FORMAT}"),
    (["--label", "spam", "bare", "--label", "ham", "corpus/ham"],
     "bare, corpus/ham: no documents found in the {what}sources"),
], ids=["empty-label-folders", "no-label-folders", "empty-file", "dev-null", "empty-stdin", "empty-label-paths"])
@pytest.mark.parametrize("command,what,flag", [
    (["train", "-o", "m.nbm"], "training ", "--format"), (["eval", "-m", "model.nbm"], "evaluation ", "--input-format"),
    (["cv"], "", "--input-format"), (["calibrate", "-m", "model.nbm"], "calibration ", "--format")])
def test_empty_input_is_one_error_line_naming_it(run, sample_model, tmp_path, monkeypatch, sources, line,
                                                  command, what, flag):
    """A folder with no label folders (and /dev/null, an empty stdin: no format to tell) said
    why on one line, then "no documents found" on a second; eval, cv and calibrate's line
    named no path. One mistake, one line, naming what was given (and in eval and cv, whose
    --format chooses their output, the option that names a line file's format there)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus" / "spam").mkdir(parents=True)
    (tmp_path / "corpus" / "ham").mkdir()
    (tmp_path / "bare").mkdir()
    (tmp_path / "empty.tsv").write_bytes(b"")
    (tmp_path / "model.nbm").write_bytes(sample_model.read_bytes())
    r = run(*command, *sources, input=b"")
    assert (r.exit_code, r.stdout, r.stderr) == (1, "", f"nbtext: error: {line.format(what=what, flag=flag)}\n")
    assert (tmp_path / "model.nbm").read_bytes() == sample_model.read_bytes() and not (tmp_path / "m.nbm").exists()


def test_a_refusal_names_at_most_ten_sources(run, tmp_path, monkeypatch):
    """After `nbtext train data/*.tsv` on thousands of empty files, the refusal named every one:
    a line of thousands of names. Past ten, as train's summary line names classes: the first
    nine and how many more."""
    monkeypatch.chdir(tmp_path)
    names = [f"f{i:02}.tsv" for i in range(25)]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    r = run("train", *names, "-o", "m.nbm")
    assert (r.exit_code, r.stderr) == (1, f"nbtext: error: {', '.join(names[:9])} and 16 more: no documents "
                                          "found in the training sources\n")
    r = run("train", *names[:10], "-o", "m.nbm")  # (ten: all of them)
    assert r.stderr == f"nbtext: error: {', '.join(names[:10])}: no documents found in the training sources\n"
    (tmp_path / "f00.tsv").write_text("spam\t\nham\t\n")  # (labels alone: documents of no token)
    r = run("train", *names, "-o", "m.nbm")
    assert r.stderr == (f"nbtext: error: {', '.join(names[:9])} and 16 more: none of the 2 documents read "
                        "has a token: nothing to train on\n")
    assert not (tmp_path / "m.nbm").exists()


@pytest.mark.parametrize("message", ["", "qqqzzzunknownword xxyyzzqq"])
def test_a_document_without_known_tokens_gets_the_prior(run, sample_model, message):
    """An empty message classified ham 0.9987 though the prior was 0.85: the calibration map
    divided the prior's log-odds by its temperature (fitted to how words over-count) as if
    it were evidence. With no known token there is none: the posterior is the prior (through
    the map's floor). Both paths: classify's pure Python, predict's numpy."""
    d = json.loads(run("info", "-m", sample_model, "--format", "json").stdout)
    n = d["classes"]
    assert d["decision"]["soft"] == 0  # (the map's other part, which would bend the prior a little)
    floor = d["decision"]["floor"]
    expected = (1 - floor) * n["ham"] / (n["ham"] + n["spam"]) + floor / 2
    assert run("classify", "-m", sample_model, input=message).stdout == f"ham\t{expected:.6f}\n"
    r = run("predict", "-m", sample_model, "--format", "jsonl", input=message)
    assert json.loads(r.stdout)["scores"]["ham"] == round(expected, 6)


@pytest.mark.parametrize("command", [("train", DATA / "corpus", "-o", ""), ("info", "-m", ""),
                                     ("cv", DATA / "corpus", "--predictions", "")])
def test_an_empty_file_name_is_named(run, command):
    """`-o ''` said `: cannot write: Is a directory`."""
    r = run(*command)
    assert r.exit_code == 1
    assert r.stderr in ("nbtext: error: '': an empty file name names no file to write\n",
                        "nbtext: error: '': an empty file name names no model file\n")


def nbtext_process(*args, input=None):
    """The `nbtext` command as procmail runs it (plain classify calls take the click-free path)."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "nbtext", *map(str, args)], input=input, capture_output=True,
                          timeout=120)


def test_spamicity_is_p_spam_and_unsure_shows_in_the_plain_outputs(run, sample_model):
    """For a two-class model the TSV and X-Nbtext-Score give P(chosen label): a ham showed 0.96,
    where bogofilter's users sort and threshold on P(spam) (its X-Bogosity's spamicity), and an
    unsure verdict showed only in the exit status and JSONL. --spamicity adds P(positive) and
    the verdict (the label, or unsure, as bogofilter -t's S/H/U) after the contract's columns;
    --passthrough adds X-Nbtext-Spamicity. Without the flag the rows are as the contract says."""
    ham, spam = DATA / "example-ham.eml", DATA / "example-spam.eml"
    scores = [json.loads(ln)["scores"] for ln in
              run("predict", "-m", sample_model, ham, spam, "--format", "jsonl").stdout.splitlines()]
    p_spam = [f"{s['spam']:.6f}" for s in scores]
    p_ham = f"{scores[0]['ham']:.6f}"
    assert float(p_spam[0]) < 0.5 < float(p_spam[1])
    plain = run("predict", "-m", sample_model, ham, spam).stdout
    assert plain == f"{ham}\tham\t{p_ham}\n{spam}\tspam\t{p_spam[1]}\n"
    r = run("predict", "-m", sample_model, ham, spam, "--spamicity", "--header")
    assert r.stdout == (f"id\tlabel\tprobability\tspamicity\tverdict\n{ham}\tham\t{p_ham}\t{p_spam[0]}\tham\n"
                        f"{spam}\tspam\t{p_spam[1]}\t{p_spam[1]}\tspam\n")
    band = ("--unsure", f"0.000001,{float(p_spam[0]) + 0.001}")
    r = run("predict", "-m", sample_model, ham, "--spamicity", "--format", "csv", *band)
    assert r.stdout == f"{ham},ham,{p_ham},{p_spam[0]},unsure\n"
    r = run("predict", "-m", sample_model, ham, "--spamicity", "--format", "jsonl", *band)
    row = json.loads(r.stdout)
    assert row["spamicity"] == float(p_spam[0]) and row["unsure"] is True and row["label"] == "ham"
    for classify in (run, nbtext_process):  # (click's path and the click-free one print alike)
        r = classify("classify", "-m", sample_model, "--spamicity", ham, *band)
        out = r.stdout if isinstance(r.stdout, str) else r.stdout.decode()
        assert out == f"ham\t{p_ham}\t{p_spam[0]}\tunsure\n"
        r = classify("classify", "-m", sample_model, "--passthrough", ham, *band)
        out = r.stdout if isinstance(r.stdout, str) else r.stdout.decode()
        head = out.split("\n\n")[0].splitlines()
        assert head[-3:] == ["X-Nbtext-Class: unsure", f"X-Nbtext-Score: {p_ham}", f"X-Nbtext-Spamicity: {p_spam[0]}"]
        assert classify("classify", "-m", sample_model, ham).stdout in (f"ham\t{p_ham}\n", f"ham\t{p_ham}\n".encode())


def test_spamicity_needs_two_classes(run, tmp_path):
    lang = tmp_path / "lang.tsv"
    lang.write_text("en\thello world\nde\thallo welt\nfr\tbonjour monde\n")
    run("train", lang, "-o", tmp_path / "l.nbm", "--no-calibrate", "-q")
    for args in (("predict", "-"), ("classify",)):
        r = run(*args, "-m", tmp_path / "l.nbm", "--spamicity", input="hello")
        assert r.exit_code == 1
        assert r.stderr == (f"nbtext: error: --spamicity: {tmp_path / 'l.nbm'} has 3 classes (de, en, fr); "
                            "P(positive) needs two\n")


def readme_block(after: str) -> list[str]:
    """The lines of the README's first code block after the line that starts with ``after``."""
    from conftest import ROOT

    text = (ROOT / "README.md").read_text()
    rest = text[text.index("\n" + after) + 1:]
    start = rest.index("```\n") + 4
    return rest[start:rest.index("```", start)].splitlines()


def test_the_readme_recipes_run_as_written_with_nbtext_installed_as_it_says(tmp_path):
    """The procmail, maildrop and cron recipes ran `nbtext`, which the README installed into the
    clone's .venv alone: from procmail, maildrop or cron, `nbtext: not found` (issue 32). Each
    recipe's command lines run here as written, by sh, in the environment cron gives a job
    (HOME, SHELL=/bin/sh, PATH=/usr/bin:/bin), with nbtext installed as the README says: pipx's
    layout, a virtual environment's command (this one's) linked into ~/.local/bin.
    (procmail and maildrop themselves need not be here: the commands they run are.)"""
    import os
    import re
    import shutil
    import subprocess
    import sys

    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    os.symlink(os.path.join(sys.prefix, "bin", "nbtext"), home / ".local" / "bin" / "nbtext")
    (home / ".nbtext").mkdir()  # (the README's mkdir -p ~/.nbtext)
    for folder, label in ((".Spam", "spam"), (".Archive", "ham")):
        for sub in ("cur", "new", "tmp"):
            (home / "Maildir" / folder / sub).mkdir(parents=True)
        for f in sorted((DATA / "corpus" / label).iterdir())[:30]:
            shutil.copy(f, home / "Maildir" / folder / "cur" / f"{f.name}:2,S")
    env = {"HOME": str(home), "SHELL": "/bin/sh", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}

    def sh(command: str, message: bytes = b""):
        return subprocess.run(["/bin/sh", "-c", command], input=message, env=env, capture_output=True,
                              timeout=300)

    cron = [ln for ln in readme_block("A nightly retrain from cron") if ln and not ln.startswith("#")]
    assert len(cron) == 1
    r = sh(cron[0].split(None, 5)[5])  # (after the five time fields)
    assert r.returncode == 0 and r.stdout == r.stderr == b"", r.stderr
    assert (home / ".nbtext" / "spam.nbm").stat().st_size > 0

    procmail = readme_block("A procmail recipe")
    pipes = [ln[1:].strip() for ln in procmail if ln.startswith("|")]
    condition = next(ln[1:].strip() for ln in procmail if ln.startswith("*"))
    maildrop = readme_block("A maildrop recipe")
    xfilter = next(re.fullmatch(r'xfilter "(.*)"', ln).group(1) for ln in maildrop if ln.startswith("xfilter"))
    pattern = next(re.fullmatch(r"if \(/(.*)/\)", ln).group(1) for ln in maildrop if ln.startswith("if"))
    assert len(pipes) == 1
    for command, matches in ((pipes[0], condition), (xfilter, pattern)):
        for name, label in (("example-spam.eml", "spam"), ("example-ham.eml", "ham")):
            message = (DATA / name).read_bytes()
            r = sh(command, message)
            assert r.returncode == 0 and r.stderr == b"", r.stderr
            assert r.stdout.replace(re.search(rb"(?m)^X-Nbtext-Class:(?:.*\n)+?(?=\n)", r.stdout).group(), b"") \
                == message  # (the message as it came, with the headers added)
            filed = re.search(matches.encode(), r.stdout, re.M) is not None
            assert filed == (label == "spam")


def test_a_csv_of_messages_without_text_column_is_not_taken_for_a_table(run, tmp_path):
    """A CSV of labelled messages whose text column is not named `text` became a table model
    (each message one category: accuracy 0 on new ones), without a word (issue 32)."""
    import csv

    rows = [("spam" if i % 2 else "ham", f"message number {i} says {'buy now' if i % 2 else 'see you at lunch'}")
            for i in range(20)]
    path = tmp_path / "msgs.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([("label", "message"), *rows])
    for command in ("train", "cv"):
        r = run(command, path, *(["-o", tmp_path / "m.nbm"] if command == "train" else []))
        assert r.exit_code == 1 and not (tmp_path / "m.nbm").exists()
        assert r.stderr == (f"nbtext: error: {path}: column 'message' looks like free text (20 of the first 20 "
                            "values distinct, most of several words), which a table model reads as one category "
                            "per value: for a text model, give --text-column message; for a table anyway, "
                            "--variant table\n")
    r = run("train", path, "--text-column", "message", "-o", tmp_path / "m.nbm", "-q")
    assert r.exit_code == 0 and run("info", "-m", tmp_path / "m.nbm").stdout.count("tokens") >= 1
    r = run("eval", "-m", tmp_path / "m.nbm", path)  # (the model keeps no columns: the message says so)
    assert r.exit_code == 1 and r.stderr.startswith(
        f"nbtext: error: {path}: no text column 'text' (columns: label, message; a text model does not keep "
        "train's columns: name it with --text-column)\n")
    assert run("eval", "-m", tmp_path / "m.nbm", path, "--text-column", "message").exit_code == 0
    assert run("train", path, "--variant", "table", "-o", tmp_path / "t.nbm", "-q").exit_code == 0
    golf = DATA.parent / "tests" / "fixtures" / "play_golf.csv"  # (a table of categories stays one)
    r = run("train", golf, "--label-column", "Play", "-o", tmp_path / "g.nbm")
    assert r.exit_code == 0 and "4 columns (4 categorical, 0 numeric)" in r.stderr


def test_merge_refuses_models_that_share_no_class(run, sample_model, tmp_path):
    """A spam model and a language model merged, silently, into one model of 14 classes."""
    lang = tmp_path / "lang.tsv"
    lang.write_text("en\thello world\nde\thallo welt\nen\tgood morning\nde\tguten morgen\n")
    run("train", lang, "-o", tmp_path / "l.nbm", "--no-calibrate", "-q")
    out = tmp_path / "out.nbm"
    r = run("merge", "-o", out, sample_model, tmp_path / "l.nbm")
    assert r.exit_code == 1 and not out.exists()
    assert r.stderr == (f"nbtext: error: {sample_model}: its classes (ham, spam) share none with the other "
                        "models' (de, en); merged, they would make one model of 4 classes: give --disjoint "
                        "if that is meant\n")
    r = run("merge", "-o", out, sample_model, tmp_path / "l.nbm", "--disjoint")
    assert r.exit_code == 0 and json.loads(run("info", "-m", out, "--format", "json").stdout)["classes"] == {
        "de": 2, "en": 2, "ham": 298, "spam": 134}


def test_predict_says_when_a_line_file_is_scored_as_one_document(run, sample_model, tmp_path):
    """`predict file.tsv` without --lines scored the whole file as one document, silently: the
    contract makes a file one document, so it stays one, with a note naming the options."""
    tsv = tmp_path / "mail.tsv"
    tsv.write_text("spam\tbuy now\nham\tsee you at lunch\n")
    r = run("predict", "-m", sample_model, tsv)
    assert r.exit_code == 0 and r.stdout.startswith(f"{tsv}\t") and len(r.stdout.splitlines()) == 1
    assert r.stderr == (f"nbtext: note: {tsv} is scored as one document; to score each of its lines, give "
                        "--input-format tsv (its text field) or --lines (each whole line)\n")
    assert run("predict", "-m", sample_model, tsv, "-q").stderr == ""
    r = run("predict", "-m", sample_model, tsv, "--input-format", "tsv")
    assert [ln.split("\t")[0] for ln in r.stdout.splitlines()] == [f"{tsv}:1", f"{tsv}:2"] and r.stderr == ""


@pytest.mark.parametrize("variant", ["multinomial", "complement", "bernoulli"])
def test_a_model_of_no_token_scores_without_warnings(variant, tmp_path):
    """Documents without a token made a model of an empty vocabulary: numpy's RuntimeWarning
    (log of 0) reached the user, and classify of a Bernoulli one failed with an internal error.
    train now refuses such documents (tests/test_cli.py); a model that --forget left with no
    token (its documents with one forgotten, its empty ones kept) still scores without warnings."""
    tsv = tmp_path / "e.tsv"
    tsv.write_text("a\t!!!\nb\t???\na\t...\nb\t,,,\n")
    model = tmp_path / "e.nbm"
    r = nbtext_process("train", tsv, "-o", model, "--variant", variant)
    assert (r.returncode, r.stderr) == (1, f"nbtext: error: {tsv}: none of the 4 documents read has a token: "
                                           f"nothing to train on\n".encode())
    corpus = tmp_path / "c"
    for label, text in (("a", "apple"), ("b", "banana")):
        (corpus / label).mkdir(parents=True)
        (corpus / label / "1").write_text(text)
        (corpus / label / "empty").write_bytes(b"")
    for args, out in [(("train", corpus, "-o", model, "--variant", variant, "-q"), b""),
                      (("learn", "-m", model, "--forget", "--label", "a", corpus / "a" / "1", "-q"), b""),
                      (("learn", "-m", model, "--forget", "--label", "b", corpus / "b" / "1", "-q"), b""),
                      (("predict", "-m", model, "-"), b"-\ta\t0.500000\n"),
                      (("classify", "-m", model), b"a\t0.500000\n"),
                      (("classify", "-m", model, "--explain", "2"), b"a\t0.500000\nprior\t+0.0000\nunknown tokens\t16\n"),
                      (("eval", "-m", model, tsv), None)]:
        r = nbtext_process(*args, input=b"hello")
        assert r.returncode == 0 and r.stderr == b"", (args, r.stderr)
        assert out is None or r.stdout == out
    from nbtext import store

    assert len(store.load(str(model)).vocab) == 0


def test_a_model_of_no_documents_is_refused_for_scoring_and_still_learns(tmp_path):
    """Every document forgotten, a model's priors are log(0 / 0): classify printed `a nan`, predict
    `"probability": NaN` (not JSON), eval numpy's warnings. Scoring commands refuse it, naming
    the file; info, export and learn still work, and learning brings it back."""
    corpus = tmp_path / "c"
    for label, text in (("a", "apple pie"), ("b", "dog food")):
        (corpus / label).mkdir(parents=True)
        (corpus / label / "1").write_text(text)
    model = tmp_path / "m.nbm"
    for args in (("train", corpus, "-o", model), ("learn", "-m", model, "--forget", "--label", "a", corpus / "a" / "1"),
                 ("learn", "-m", model, "--forget", "--label", "b", corpus / "b" / "1")):
        assert nbtext_process(*args, "-q").returncode == 0
    refusal = (f"nbtext: error: {model}: the model has learned no documents (each one was forgotten): "
               "nothing to score with; learn some first\n").encode()
    for args, status in ((("classify", "-m", model), 1), (("classify", "-m", model, "--exit-code"), 3),
                         (("predict", "-m", model, "-"), 1), (("predict", "-m", model, "--format", "jsonl", "-"), 1),
                         (("eval", "-m", model, corpus), 1), (("info", "-m", model, "--linear"), 1)):
        r = nbtext_process(*args, input=b"apple")
        assert (r.returncode, r.stdout, r.stderr) == (status, b"", refusal), args
    for args in (("info", "-m", model), ("info", "-m", model, "--format", "json"), ("export", "-m", model)):
        r = nbtext_process(*args)
        assert r.returncode == 0 and r.stderr == b"", (args, r.stderr)
    assert nbtext_process("learn", "-m", model, "--label", "a", corpus / "a" / "1", "-q").stderr == b""
    assert nbtext_process("classify", "-m", model, input=b"apple").stdout == b"a\t1.000000\n"


def test_info_lists_no_top_tokens_for_a_class_of_no_documents(run, sample_copy):
    """A class whose documents were all forgotten has only the smoothing's weights: info listed
    as its "top tokens" those the other class lacks ($30, $499, 0000). It says the class has
    none, as its count line does; JSON gives it an empty list."""
    r = run("learn", "-m", sample_copy, "--forget", "--label", "spam", DATA / "corpus" / "spam", "-q")
    assert r.exit_code == 0, r.output
    r = run("info", "-m", sample_copy, "--top", "3")
    lines = r.stdout.splitlines()
    assert r.exit_code == 0 and "  spam         0 documents, 0 tokens" in lines
    d = json.loads(run("info", "-m", sample_copy, "--top", "3", "--format", "json").stdout)
    assert d["classes"] == {"ham": 298, "spam": 0} and d["top_tokens"]["spam"] == []
    assert len(d["top_tokens"]["ham"]) == 3
    assert lines[-2:] == ["top tokens for ham: " + ", ".join(t["token"] for t in d["top_tokens"]["ham"]),
                          "top tokens for spam: none (0 documents)"]
