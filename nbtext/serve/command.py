"""`nbtext serve`'s options (click). Importing this module starts nothing and imports no server."""
from __future__ import annotations

import click

from .options import ServeOptions

DEFAULTS = ServeOptions(model="", listeners=())


def _size(ctx, param, value):
    from .address import parse_size

    try:
        return parse_size(value) if isinstance(value, str) else value
    except Exception as e:
        raise click.BadParameter(str(e).split(": ", 1)[-1]) from None


def _mode(ctx, param, value):
    if value is None:
        return None
    try:
        mode = int(value, 8)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an octal mode (e.g. 660)") from None
    if not 0 <= mode <= 0o777:
        raise click.BadParameter(f"{value!r} is not a file mode (000 to 777)")
    return mode


def serve_options(f):
    opts = [
        click.option("--spamd", "spamd", multiple=True, metavar="ADDR",
                     help="Answer spamd's protocol (spamc, Exim, spamass-milter) on HOST:PORT or unix:PATH "
                          "(repeatable)."),
        click.option("--http", "http", multiple=True, metavar="ADDR",
                     help="Answer HTTP/JSON (rspamd's /checkv2, /learnspam, /learnham, /forget, /ping, "
                          "/metrics) on HOST:PORT or unix:PATH (repeatable)."),
        click.option("--workers", type=click.IntRange(1, 64), default=None,
                     help="Worker processes (default: the number of cores)."),
        click.option("--allow", multiple=True, metavar="CIDR",
                     help="Also accept TCP clients from these networks (loopback always; as spamd's -A)."),
        click.option("--user-models", type=click.Path(file_okay=False), default=None, metavar="DIR",
                     help="`User: alice` scores with and learns into DIR/alice.nbm."),
        click.option("--min-learns", type=click.IntRange(min=0), default=DEFAULTS.min_learns, show_default=True,
                     help="Messages of each class a user's model must have learned before it scores that "
                          "user's mail (until then the global model does)."),
        click.option("--max-size", type=str, callback=_size, default=str(DEFAULTS.max_size), show_default=True,
                     metavar="SIZE",
                     help="Largest message accepted (K, M suffixes); a larger one gets an error reply."),
        click.option("--timeout", type=click.FloatRange(min=0.1), default=DEFAULTS.timeout, show_default=True,
                     metavar="SECONDS", help="Time a client has to send its request (and to read the reply)."),
        click.option("--max-connections", type=click.IntRange(min=1), default=DEFAULTS.max_connections,
                     show_default=True, help="Open connections per worker; more wait in the listen queue."),
        click.option("--socket-mode", callback=_mode, default=None, metavar="MODE",
                     help="Permissions of unix sockets, in octal (default: as the umask leaves them)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def run(model_path: str, spamd, http, workers, allow, user_models, min_learns, max_size, timeout,
        max_connections, socket_mode, quiet) -> int:
    """Check the options, then run the daemon (nbtext.serve.server) until SIGTERM."""
    import os

    from ..errors import NbtextError
    from .address import parse_address, parse_networks

    if not spamd and not http:
        raise NbtextError("serve needs a listener: --spamd ADDR and/or --http ADDR "
                          "(e.g. --spamd 127.0.0.1:783, --http unix:/run/nbtext/http.sock)")
    listeners = tuple([parse_address("spamd", a) for a in spamd] + [parse_address("http", a) for a in http])
    opts = ServeOptions(model=model_path, listeners=listeners, user_models=user_models, min_learns=min_learns,
                        workers=workers or os.cpu_count() or 1, networks=parse_networks(list(allow)),
                        max_size=max_size, timeout=timeout, max_connections=max_connections,
                        socket_mode=socket_mode, log=not quiet)
    from .server import serve

    return serve(opts)
