"""`nbtext` and `python -m nbtext`: plain classify calls are answered without click
(nbtext.quick); everything else goes to the click command line (nbtext.cli)."""
import sys


def main(argv=None):
    from .process import printable_streams, single_threaded_blas
    from .quick import quick_classify

    single_threaded_blas()  # (before anything imports numpy)
    printable_streams()
    status = quick_classify(sys.argv[1:] if argv is None else list(argv))
    if status is not None:
        sys.exit(status)
    from .cli import main as cli_main

    cli_main(argv)


def run():
    """The `nbtext` command."""
    main()


if __name__ == "__main__":
    run()
