"""`nbtext` and `python -m nbtext`: plain classify calls are answered without click
(nbtext.quick); everything else goes to the click command line (nbtext.cli). The environment
variables the README lists are read here and in nbtext.process (and NBTEXT_MODEL by click's
option), and their values handed down: the library reads none."""
import gc
import os
import sys


def main(argv=None):
    from .features.implementation import use
    from .process import printable_streams, single_threaded_blas
    from .quick import quick_classify

    single_threaded_blas()  # (before anything imports numpy)
    printable_streams()
    use(os.environ.get("NBTEXT_KERNEL", ""))
    status = quick_classify(sys.argv[1:] if argv is None else list(argv), os.environ.get("NBTEXT_MODEL") or None)
    if status is not None:
        sys.exit(status)
    from .cli import main as cli_main

    cli_main(argv)


def run():
    """The `nbtext` command: main(), then the interpreter's teardown, with what the run made
    frozen first (gc.freeze: the teardown's collections then walk none of it)."""
    try:
        main()
    finally:
        # Process policy, here only: after forked workers every page of this process is shared
        # copy-on-write, and a collection's walk writes to each object's header, so the
        # teardown's collections fault and copy page after page (docs/bench.md: issue 33).
        gc.freeze()


if __name__ == "__main__":
    run()
