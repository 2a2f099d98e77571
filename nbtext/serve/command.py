"""`nbtext serve`'s options checked, then the daemon run (nbtext.serve.server). The click options
are nbtext.cli's (the one importer of click); their defaults are ServeOptions'."""
from __future__ import annotations

from .options import ServeOptions


def run(model_path: str, spamd, http, workers, allow, user_models, min_learns, max_size: str, timeout,
        max_connections, socket_mode: str | None, quiet) -> int:
    """Check the options (NbtextError naming the one that is wrong), then run the daemon until
    SIGTERM; the exit status."""
    import os

    from ..errors import NbtextError
    from .address import parse_address, parse_mode, parse_networks, parse_size

    if not spamd and not http:
        raise NbtextError("serve needs a listener: --spamd ADDR and/or --http ADDR "
                          "(e.g. --spamd 127.0.0.1:783, --http unix:/run/nbtext/http.sock)")
    listeners = tuple([parse_address("spamd", a) for a in spamd] + [parse_address("http", a) for a in http])
    opts = ServeOptions(model=model_path, listeners=listeners, user_models=user_models, min_learns=min_learns,
                        workers=workers or os.cpu_count() or 1, networks=parse_networks(list(allow)),
                        max_size=parse_size(max_size), timeout=timeout, max_connections=max_connections,
                        socket_mode=None if socket_mode is None else parse_mode(socket_mode), log=not quiet)
    from .server import serve

    return serve(opts)
