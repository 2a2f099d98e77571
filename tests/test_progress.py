"""Progress lines: `nbtext train` on a terminal shows each phase (counting with bytes of the
total, calibration's folds, saving), one line rewritten in place; a pipe and -q get none.

The terminal is a real pseudo-terminal (the pty module) given to a real `nbtext train` process
as its stderr, as a user's shell would."""
import os
import pty
import signal
import subprocess
import sys

import pytest

from conftest import DATA

NBTEXT = [sys.executable, "-m", "nbtext"]


# A shell's `2>/dev/tty`: the pseudo-terminal (on stdout) made the process's controlling
# terminal, as a login's is, and stderr opened by the name that stands for that terminal.
VIA_DEV_TTY = ("import fcntl, os, sys, termios; os.setsid(); fcntl.ioctl(1, termios.TIOCSCTTY, 0); "
               "os.dup2(os.open('/dev/tty', os.O_WRONLY), 2); os.execv(sys.argv[1], sys.argv[1:])")


def on_terminal(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr="terminal") -> tuple[int, str]:
    """(status, what the terminal showed) of nbtext with stderr on a pseudo-terminal (stdout
    too, with stdout="terminal"; stderr="/dev/tty" opens it by that name, the pseudo-terminal
    being the process's controlling terminal)."""
    master, slave = pty.openpty()
    prefix = [sys.executable, "-c", VIA_DEV_TTY] if stderr == "/dev/tty" else []
    p = subprocess.Popen(prefix + NBTEXT + [str(a) for a in args], stdin=stdin, stderr=slave,
                         stdout=slave if stdout == "terminal" else stdout)
    os.close(slave)
    shown = bytearray()
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # (EIO: the process ended and closed the terminal's last end)
            break
        if not data:
            break
        shown += data
    os.close(master)
    return p.wait(), shown.decode()


def test_train_on_a_terminal_shows_each_phase_on_a_line_rewritten_in_place(tmp_path):
    corpus = DATA / "corpus"
    total = sum(f.stat().st_size for f in corpus.rglob("*") if f.is_file() and not f.name.startswith("."))
    status, shown = on_terminal(["train", corpus, "-o", tmp_path / "m.nbm"])
    assert status == 0, shown
    lines = shown.replace("\r\n", "\n").split("\n")  # (the terminal turns "\n" into "\r\n")
    counting, calibrating, saving, trained = lines[:4]
    # Counting: rewritten in place ("\r"), the documents and the bytes read of the inputs' total
    # (from the walk's sizes), ended with its time.
    assert counting.startswith("\rcounting: ") and counting.count("\r") >= 1
    assert f" of {total / (1 << 20):,.1f} MiB (" in counting
    assert counting.split("\r")[-1].startswith("counting: 432 documents, ") and " MiB in " in counting
    # Calibration: its internal folds, one by one as they are taken, then its time.
    assert "calibrating: 5 internal folds" in calibrating and "calibrating: fold 5 of 5" in calibrating
    assert calibrating.split("\r")[-1].startswith("calibrating: 5 internal folds in ")
    assert saving.startswith(f"\rsaving: {tmp_path / 'm.nbm'}") and saving.rstrip().endswith(" s")
    assert trained.startswith("nbtext: trained on 432 documents (298 ham, 134 spam)")


def test_one_core_shows_every_fold(tmp_path):
    status, shown = on_terminal(["train", DATA / "corpus", "-o", tmp_path / "m.nbm", "-j", "1"])
    assert status == 0, shown
    for i in range(1, 6):
        assert f"\rcalibrating: fold {i} of 5" in shown


@pytest.mark.parametrize("options,phase", [
    (["--no-calibrate"], "choosing the variant"),
    (["--no-calibrate", "--max-fpr", "0.05", "--variant", "multinomial"], "choosing the threshold"),
    (["--no-calibrate", "--max-fpr", "0.05"], "choosing the variant and the threshold"),
    (["--variant", "multinomial"], "calibrating"),
])
def test_folds_that_calibrate_nothing_say_what_they_choose(tmp_path, options, phase):
    """With --no-calibrate, auto's folds said "calibrating: 5 internal folds": they choose the
    variant (or a --max-fpr threshold), and calibrate nothing."""
    status, shown = on_terminal(["train", DATA / "corpus", "-o", tmp_path / "m.nbm", "-j", "1", *options])
    assert status == 0, shown
    folds = shown.replace("\r\n", "\n").split("\n")[1]
    assert folds.startswith(f"\r{phase}: 5 internal folds\r{phase}: fold 1 of 5"), folds
    assert folds.split("\r")[-1].startswith(f"{phase}: 5 internal folds in ")
    assert ("calibrating" in shown) == (phase == "calibrating")


def test_stdin_has_no_total_and_no_eta(tmp_path):
    lines = tmp_path / "in.tsv"
    lines.write_text("".join(f"{'spam' if i % 2 else 'ham'}\tword{i % 7} other{i % 3} w{i}\n" for i in range(200)))
    with open(lines, "rb") as stdin:
        status, shown = on_terminal(["train", "-", "--format", "tsv", "-o", tmp_path / "m.nbm"], stdin=stdin)
    assert status == 0, shown
    assert "counting: 200 documents, " in shown and " MiB of " not in shown and "ETA" not in shown


def test_a_pipe_and_quiet_get_no_progress(tmp_path):
    r = subprocess.run(NBTEXT + ["train", str(DATA / "corpus"), "-o", str(tmp_path / "m.nbm")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("nbtext: trained on 432 documents") and r.stderr.count("\n") == 1
    status, shown = on_terminal(["train", DATA / "corpus", "-o", tmp_path / "q.nbm", "-q"])
    assert (status, shown) == (0, "")


def test_calibrate_ends_its_documents_line_before_its_folds(sample_copy):
    status, shown = on_terminal(["calibrate", "-m", sample_copy, DATA / "corpus", "-j", "1"])
    assert status == 0, shown
    lines = shown.replace("\r\n", "\n").split("\n")
    assert lines[0].split("\r")[-1] == "calibrating: 432 documents"
    assert lines[1].startswith("\rcalibrating: 5 internal folds\rcalibrating: fold 1 of 5")
    assert lines[2].startswith("nbtext: calibrated on 432 documents")


def test_an_error_after_counting_begins_a_line_of_its_own(tmp_path):
    """A refusal that comes once counting is done (--min-df keeping no token) was written at
    the end of the counting line ("... 2.0 MiB (98%)nbtext: error: --min-df ..."): the progress
    line is ended first (process.line_start), and the error is the terminal's last line."""
    status, shown = on_terminal(["train", DATA / "corpus", "--min-df", "100000", "-o", tmp_path / "m.nbm"])
    lines = shown.replace("\r\n", "\n").split("\n")
    assert status == 1 and lines[0].startswith("\rcounting: ") and len(lines) == 3 and lines[2] == "", shown
    assert lines[1].startswith("nbtext: error: --min-df 100000 and --max-df 1.0 keep no token")


def test_a_save_that_fails_is_not_shown_as_saved(tmp_path, capsys, monkeypatch):
    """The saving line was ended with a size and time whether or not the model was written: a
    save that failed showed the old file's size, as if saved, before its error."""
    from nbtext.cli import Progress
    from nbtext.process import Stderr

    monkeypatch.setattr(Stderr, "mid_line", False)  # (this process's: restored after)

    old = tmp_path / "m.nbm"
    old.write_bytes(b"an old model" * 100000)
    progress = Progress("training", quiet=False)
    progress.on = True  # (as on a terminal)
    with pytest.raises(OSError):
        with progress.saving(str(old)):
            raise OSError(28, "No space left on device")
    assert capsys.readouterr().err == f"\rsaving: {old}"


def test_ctrl_c_while_counting_ends_the_line_once(tmp_path):
    """Ctrl-C while counting left a blank line above `nbtext: interrupted` (click ended the line,
    then the edge ended it again). train reads a pipe this test holds open, so the interrupt
    comes while it waits for more (an event, not a time)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(NBTEXT + ["train", "-", "--format", "tsv", "-j", "1", "-o", str(tmp_path / "m.nbm")],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=slave, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    os.close(slave)
    p.stdin.write(b"".join(b"%s\tword%d other%d words\n" % (b"ab"[i % 2:][:1], i, i % 7) for i in range(1000)))
    p.stdin.flush()
    shown = bytearray()
    while b"counting: " not in shown:
        shown += os.read(master, 65536)
    os.killpg(p.pid, signal.SIGINT)
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        shown += data
    os.close(master)
    assert p.wait(timeout=60) == 130
    text = shown.decode()
    assert text.endswith("\r\nnbtext: interrupted\r\n") and "\r\n\r\n" not in text, text
    assert not (tmp_path / "m.nbm").exists()


def test_an_interrupt_on_a_pipe_is_one_line(capsys, monkeypatch):
    """With no progress line and no terminal, `nbtext: interrupted` is the only line: it began
    with a blank one (and click's own newline made two: tests/test_hostile.py's SIGTERM)."""
    from nbtext.process import Stderr, finish

    monkeypatch.setattr(Stderr, "mid_line", False)

    def body():
        raise KeyboardInterrupt

    assert finish(body) == 130
    assert capsys.readouterr().err == "nbtext: interrupted\n"


def test_predict_counts_documents_as_train_does(tmp_path, sample_model):
    """predict's line said "predicting: 1200 documents" where train's says "counting: 1,200
    documents": both group thousands."""
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"word{i % 7} other{i % 3}\n" for i in range(1200)))
    status, shown = on_terminal(["predict", "-m", sample_model, "--lines", lines])
    assert status == 0 and shown.endswith("\rpredicting: 1,200 documents\r\n"), shown


def test_predict_shows_no_progress_on_the_terminal_its_rows_go_to(tmp_path, sample_model):
    """predict's progress line was drawn between its rows when both went to one terminal
    ("predicting: 63 documents/corpus/spam/..."): as curl's meter, it is shown only when the
    rows go elsewhere (a file, a pipe, another terminal); train's, whose stdout is empty, stays.
    The terminal is one whatever it is called: `2>/dev/tty` drew the line among the rows."""
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"word{i % 7} other{i % 3}\n" for i in range(50)))
    status, shown = on_terminal(["predict", "-m", sample_model, "--lines", lines], stdout="terminal")
    rows = shown.replace("\r\n", "\n").splitlines()
    assert status == 0 and "predicting" not in shown and "\r" not in shown.replace("\r\n", ""), shown
    assert [row.split("\t")[0] for row in rows] == [f"{lines}:{i}" for i in range(1, 51)]
    # `2>/dev/tty` is the same terminal under another device's name: the line was drawn there
    status, by_name = on_terminal(["predict", "-m", sample_model, "--lines", lines], stdout="terminal",
                                  stderr="/dev/tty")
    assert status == 0 and by_name == shown
    with open(tmp_path / "rows.tsv", "wb") as out:
        status, shown = on_terminal(["predict", "-m", sample_model, "--lines", lines], stdout=out)
    assert status == 0 and shown == "\rpredicting: 50 documents\r\n"
    assert (tmp_path / "rows.tsv").read_text().count("\n") == 50
    other, other_slave = pty.openpty()  # (another terminal: the rows never meet the line)
    try:
        status, shown = on_terminal(["predict", "-m", sample_model, "--lines", lines], stdout=other_slave)
        assert status == 0 and shown == "\rpredicting: 50 documents\r\n"
        assert os.read(other, 65536).decode().startswith(f"{lines}:1\t")
    finally:
        os.close(other_slave)
        os.close(other)
