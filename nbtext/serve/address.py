"""Where the daemon listens and who may connect: addresses, networks, sizes, user names, socket paths."""
from __future__ import annotations

import functools
import ipaddress
import os
import re
import socket
import stat
from dataclasses import dataclass

from ..errors import NbtextError

# Clients on the loopback interface are always allowed; --allow adds networks (as spamd's -A).
LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))

# A user name picks DIR/USER.nbm: letters, digits and _ . @ + - (an address as Dovecot passes
# it), not starting with a dot, so that no name is a path (no "/", never "." or ".."); spamd's
# PROTOCOL gives a user name as [-A-Za-z0-9_]+.
USER_RE = re.compile(r"[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]{0,127}\Z")


@dataclass(frozen=True)
class Address:
    protocol: str            # "spamd" or "http"
    family: int              # socket.AF_INET, AF_INET6 or AF_UNIX
    where: tuple | str       # (host, port) or a socket path
    given: str               # as the user wrote it

    def shown(self, sock: socket.socket | None = None) -> str:
        if self.family == socket.AF_UNIX:
            return f"unix:{self.where}"
        host, port = sock.getsockname()[:2] if sock is not None else self.where
        return f"[{host}]:{port}" if self.family == socket.AF_INET6 else f"{host}:{port}"


def parse_address(protocol: str, text: str) -> Address:
    """HOST:PORT ([V6]:PORT) or unix:PATH; NbtextError naming the option otherwise."""
    flag = f"--{protocol}"
    if text.startswith("unix:"):
        path = text[5:]
        if not path:
            raise NbtextError(f"{flag}: {text!r} names no socket path (unix:PATH)")
        return Address(protocol, socket.AF_UNIX, os.path.abspath(path), text)
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:(\d{1,5})|([^:\[\]]+):(\d{1,5})", text)
    if not m:
        raise NbtextError(f"{flag}: {text!r} is not HOST:PORT or unix:PATH")
    host, port = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    if int(port) > 65535:
        raise NbtextError(f"{flag}: port {port} is out of range")
    try:
        info = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise NbtextError(f"{flag}: cannot resolve {host!r}: {e.strerror}") from None
    family, _, _, _, sockaddr = info[0]
    return Address(protocol, family, sockaddr[:2], text)


def parse_networks(values: list[str]) -> tuple:
    """--allow's CIDRs (comma-separated or repeated)."""
    nets = []
    for value in values:
        for part in filter(None, (p.strip() for p in value.split(","))):
            try:
                nets.append(ipaddress.ip_network(part, strict=False))
            except ValueError:
                raise NbtextError(f"--allow: {part!r} is not an address or network (CIDR, e.g. 10.0.0.0/8)") from None
    return tuple(nets)


@functools.lru_cache(maxsize=1024)
def allowed(networks: tuple, host: str) -> bool:
    """Whether a TCP client at ``host`` may connect: loopback, or one of ``networks``. Kept for
    the last 1,024 hosts: a mail server connects from a few addresses, once a message, and
    parsing one costs a tenth of the rest of a connection's work in the worker."""
    try:
        ip = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip.version == n.version and ip in n for n in LOOPBACK + tuple(networks))


def parse_size(text: str) -> int:
    """A byte count with an optional K, M or G suffix (powers of 1024)."""
    m = re.fullmatch(r"\s*(\d+)\s*([KkMmGg]?)[Bb]?\s*", text)
    if not m or int(m.group(1)) == 0:
        raise NbtextError(f"--max-size: {text!r} is not a positive size (e.g. 2M, 512K, 100000)")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


def parse_mode(text: str) -> int:
    """--socket-mode's octal permissions (000 to 777)."""
    try:
        mode = int(text, 8)
    except ValueError:
        mode = -1
    if not 0 <= mode <= 0o777:
        raise NbtextError(f"--socket-mode: {text!r} is not an octal file mode (e.g. 660)")
    return mode


def user_model_path(directory: str, user: str) -> str | None:
    """DIR/USER.nbm, or None for a name that could name something outside DIR."""
    if not USER_RE.match(user):
        return None
    return os.path.join(directory, user + ".nbm")


def check_socket_path(path: str) -> None:
    """A unix socket path may replace a stale socket, never anything else."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not os.path.isdir(os.path.dirname(path)):
            raise NbtextError(f"unix:{path}: directory {os.path.dirname(path)} does not exist") from None
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise NbtextError(f"unix:{path}: exists and is not a socket; nbtext replaces only a stale socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        os.unlink(path)  # (stale: nobody listens)
        return
    except OSError as e:
        raise NbtextError(f"unix:{path}: cannot use it: {e.strerror}") from None
    finally:
        probe.close()
    raise NbtextError(f"unix:{path}: another process is listening on it")
