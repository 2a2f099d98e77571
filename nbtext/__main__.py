"""`nbtext` and `python -m nbtext`: plain classify calls are answered without click
(nbtext.quick); everything else goes to the click command line (nbtext.cli). Both start at
run(), which ends the process once the command is done (nbtext.process.leave); main() is the
command alone, which ends by raising SystemExit."""
import gc
import sys


def main(argv=None):
    from .process import printable_streams, single_threaded_blas, start_quietly, started, without_openssl
    from .quick import quick_classify

    start_quietly()  # (until the command starts: process.started)
    single_threaded_blas()  # (before anything imports numpy)
    without_openssl()
    printable_streams()
    try:
        status = quick_classify(sys.argv[1:] if argv is None else list(argv))
        if status is not None:
            sys.exit(status)
        from .cli import main as cli_main

        cli_main(argv)
    finally:
        started()  # (the collector as the caller had it, also where no command ran: --help, --version)
        # The command is done and the process ends: Python's exit would still walk every
        # object the run left for cycles (its collections at shutdown), which frozen ones are
        # not. Nothing else changes: objects are freed by their counts as before, files were
        # closed by the commands, and the standard streams are flushed as ever.
        # spamassassin-2002's train: exit 25 -> 12 ms (10 runs, time from the command's end).
        # (This is the process's entry point: a caller that runs it inside a longer-lived
        # process and catches SystemExit keeps the freeze; the library's API never calls it.)
        gc.freeze()


def run():
    """The `nbtext` command: main(), then the process ends at once with its status, as the
    interpreter would end it but without freeing the run's objects one by one (process.leave;
    where that would not be the same, the interpreter ends it as ever)."""
    try:
        main()
    except SystemExit as e:
        from .process import leave

        leave(e.code)
        raise


if __name__ == "__main__":
    run()
