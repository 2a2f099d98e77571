"""The daemon's settings, once (the click options take their defaults from here)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServeOptions:
    model: str
    listeners: tuple                      # Address, ...
    user_models: str | None = None        # DIR of per-user models
    min_learns: int = 200                 # per class, before a user's model is used
    workers: int = 2
    networks: tuple = ()                  # --allow's, beside loopback (nbtext.serve.address)
    max_size: int = 2 << 20               # bytes of one message
    timeout: float = 30.0                 # seconds to read a request, to write its reply; a learn's lock wait
    max_connections: int = 256            # open connections per worker
    socket_mode: int | None = None        # of unix sockets (default: as the umask leaves it)
    log: bool = True                      # a line per request on stderr
