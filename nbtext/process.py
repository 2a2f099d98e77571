"""The process edge: how a run of `nbtext` ends, and process-wide settings only a command sets.

Both command lines (nbtext.cli with click, nbtext.quick without it) end through ``finish``:
a user error is one line `nbtext: error: ...` and status 1 (3 for `classify --exit-code`), a
reader that left (`| head`) ends quietly with status 0, Ctrl-C with `nbtext: interrupted` and
130, and an unexpected failure is reported without a traceback. Importing this module is free.
"""
from __future__ import annotations

import os
import sys

from .errors import NbtextError, SettingError, shown


class Stderr:
    """Whether stderr's last line is a progress line not ended yet (``mid_line``: nbtext.cli.Progress
    draws it, in place, without a newline): a line written meanwhile (an error, a note, the end
    of a run) begins with a newline (line_start), else it would be appended to the progress line."""

    mid_line = False


def line_start() -> str:
    """What a line written to stderr now begins with: a newline where a progress line is open."""
    was, Stderr.mid_line = Stderr.mid_line, False
    return "\n" if was else ""


def _on_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def progress_shown(rows_on_stdout: bool = False) -> bool:
    """Whether a progress line may be drawn on stderr: only on a terminal, and for a command
    that writes rows to stdout as it goes (``rows_on_stdout``: predict), only where they are not
    written to that very terminal, as curl shows its meter only when the output goes elsewhere:
    the line would be drawn between the rows and break them."""
    if not _on_terminal(sys.stderr):
        return False
    if not rows_on_stdout or not _on_terminal(sys.stdout):
        return True
    try:
        return not _same_terminal(sys.stdout.fileno(), sys.stderr.fileno())
    except (AttributeError, ValueError, OSError):  # (a stream that is not a file: no terminal of its own)
        return True


def _same_terminal(a: int, b: int) -> bool:
    """Whether descriptors a and b, each on a terminal, are on one: one device (/dev/pts/3, under
    any name), or both the process's controlling terminal, as `2>/dev/tty` beside a stdout on
    /dev/pts/3 is (/dev/tty is a device of its own that stands for the controlling terminal)."""
    if os.fstat(a).st_rdev == os.fstat(b).st_rdev:
        return True
    return _controlling(a) and _controlling(b)


def _controlling(fd: int) -> bool:
    """Whether fd is on the process's controlling terminal: only there has the terminal a
    foreground process group for this process to ask of (elsewhere tcgetpgrp fails, ENOTTY)."""
    try:
        os.tcgetpgrp(fd)
        return True
    except OSError:
        return False


def error_line(message: str) -> None:
    """The one line of a failure, on stderr (nowhere when stderr is closed: never on stdout),
    with whatever in it came from a file made visible (``shown``)."""
    if sys.stderr is not None:
        try:
            print(f"{line_start()}nbtext: error: {shown(message)}", file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass


def printable_streams() -> None:
    """Have stdout and stderr write what their encoding cannot hold as \\xNN or \\uNNNN: with
    PYTHONIOENCODING=ascii (or any encoding short of Unicode), cv's "±", a class name "spám"
    from a stranger's model or a header's text would otherwise be an internal error halfway
    through the output."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):  # (closed, or not a text file)
            pass


def stdout():
    """Standard output, for a command whose output is its answer: refused when it is closed
    (`>&-`), so that such a run does not end with status 0 having said nothing."""
    if sys.stdout is None:
        from .errors import NbtextError

        raise NbtextError("standard output is closed: nowhere to write the answer")
    return sys.stdout


FLAGS = {"ngram_max": "--ngrams", "char_ngram_min": "--char-ngrams", "char_ngram_max": "--char-ngrams",
         "mode": "--email/--text/--auto"}


def flag_of(param: str) -> str:
    """The command-line flag that sets a library parameter (nbtext.settings), for messages."""
    return FLAGS.get(param, "--" + param.replace("_", "-"))


class Reported(Exception):
    """A failure already reported on stderr, line by line (inputs that could not be read): the
    run ends with the status of a user error and nothing more is said."""


class ReaderLeft(Exception):
    """The reader of our output went away (EPIPE), carried past click, which would exit 1."""


def finish(body, error_status: int = 1, name_of=flag_of) -> int:
    """Run body() and return the process's exit status. ``error_status`` is the status of a user
    error (or a callable, asked when the error happens); ``name_of`` names a setting in
    messages (by default, the flag that sets it)."""
    status = error_status if callable(error_status) else (lambda: error_status)
    try:
        return body() or 0
    except SettingError as e:
        error_line(e.worded(name_of))
        return status()
    except Reported:
        return status()
    except NbtextError as e:
        error_line(str(e))
        return status()
    except (BrokenPipeError, ReaderLeft):
        # The reader left: end quietly, as cat does; point stdout at /dev/null so the
        # interpreter's final flush cannot complain either. Where the exit status is the
        # answer (classify --exit-code: a user error there is 3, not 1), the answer is not
        # delivered, and that is an error.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 0 if status() == 1 else status()
    except Terminated:
        if sys.stderr is not None:
            print(f"{line_start()}nbtext: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        if sys.stderr is not None:  # (a terminal shows ^C where its cursor was: that line is ended)
            print((line_start() or ("\n" if _on_terminal(sys.stderr) else "")) + "nbtext: interrupted",
                  file=sys.stderr)
        return 130
    except MemoryError:
        error_line("out of memory")
        return status()
    except OSError as e:  # writing the output failed (a full disk: /dev/full); reading is nbtext.read's
        error_line(f"{e.filename or 'output'}: {e.strerror or e}")
        return status()
    except Exception as e:  # the last line of defence: a bug, reported without a traceback
        if os.environ.get("NBTEXT_DEBUG"):
            raise
        error_line(f"internal error: {e.__class__.__name__}: {e} "
                   "(rerun with NBTEXT_DEBUG=1 for a traceback, and please report it)")
        return status()


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def single_threaded_blas() -> None:
    """Have NumPy's OpenBLAS start no threads of its own, unless the environment already says
    how many (any of BLAS_THREADS): called by the entry point before NumPy is imported, as
    OpenBLAS reads the variable once, when it is loaded. nbtext's parallel work is its worker
    processes (nbtext.batch.pool), one a core; a BLAS thread only competes with them. It is
    made when NumPy is imported and then waits for work by spinning, on the cores the workers
    are starting on (perf: blas_thread_server); train measures faster without it
    (docs/bench.md). No nbtext product is large enough for BLAS's
    threads to pay (the sparse products are the kernel's or scipy's, never BLAS), and a
    product's value does not depend on them. Worker processes inherit the variable.
    A library caller's process is left as it is: only the command line calls this."""
    if not any(os.environ.get(name) for name in BLAS_THREADS):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an exception so that the run ends as after Ctrl-C: worker pools shut
    down and temporaries are removed (killed by the default handler, joblib's resource
    tracker warns of leaked semaphores)."""


def interrupts_to_main_thread() -> None:
    """Import numpy with Ctrl-C blocked, so that the threads its BLAS library starts (one per
    core, at import) keep it blocked and a Ctrl-C always reaches the main thread. While train
    starts its workers, the main thread holds Ctrl-C back (nbtext.batch.chunks.interrupts_held):
    a BLAS thread could take it meanwhile, and, ignored then, it would be lost and train run on.
    The commands that start workers call this first (they import numpy anyway); classify, which
    must start fast without numpy, never does."""
    import signal
    import sys

    if "numpy" in sys.modules:
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        import numpy  # noqa: F401
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def terminate_cleanly() -> None:
    """Make SIGTERM end the run through the process edge (status 143). Main thread only."""
    import signal

    def handler(signum, frame):
        raise Terminated()

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (a library caller's): leave it alone
        pass
