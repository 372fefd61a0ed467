"""Serve addresses: `"host:port"` parsing, loopback detection, the handle's public URL."""

from __future__ import annotations

import ipaddress
import socket

from toolnexus.errors import ConfigError, ConfigTypeError, ServeError

DEFAULT_HOST = "127.0.0.1"
_LOOPBACK_NAMES = frozenset({"localhost"})


def parse_addr(addr: str) -> tuple[str, int]:
    """Split `addr` at its last `:` into `(host, port)`.

    An empty host means `127.0.0.1`; IPv6 hosts come in brackets (`"[::1]:8080"`) and are
    returned without them; port `0` asks for an ephemeral port.
    """
    if not isinstance(addr, str):
        raise ConfigTypeError(f'serve address must be a string like "127.0.0.1:8080", not {addr!r}')
    host, sep, port_text = addr.rpartition(":")
    if not sep:
        raise ConfigError(
            f'Invalid serve address "{addr}": expected "host:port", e.g. "127.0.0.1:8080"'
        )
    if host.startswith("["):
        if not host.endswith("]"):
            raise ConfigError(f'Invalid serve address "{addr}": unclosed "[" around an IPv6 host')
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ConfigError(
                f'Invalid serve address "{addr}": "{host}" is not an IPv6 address'
            ) from None
    elif ":" in host:
        raise ConfigError(
            f'Invalid serve address "{addr}": put an IPv6 host in brackets, e.g. "[::1]:8080"'
        )
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535 or not port_text.isdigit():
        raise ConfigError(
            f'Invalid serve address "{addr}": port must be a number from 0 to 65535 '
            "(0 picks a free port)"
        )
    return host or DEFAULT_HOST, port


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an IP literal, without brackets) names this machine only."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_unspecified(host: str) -> bool:
    """`0.0.0.0` / `::` — every interface."""
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def public_url(host: str, port: int) -> str:
    """`http://<host>:<port>`; a wildcard bind is reported as `127.0.0.1`."""
    if is_unspecified(host):
        host = DEFAULT_HOST
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def bind_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to `(host, port)`, ready for `listen` (IPv4 preferred for names)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ServeError(f"cannot resolve serve host {host!r}: {exc.strerror}") from None
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    family, kind, proto, _, sockaddr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            # `::` means every interface of both families (its URL is reported as 127.0.0.1);
            # any other IPv6 address means that address only.
            sock.setsockopt(
                socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if is_unspecified(host) else 1
            )
        sock.bind(sockaddr)
    except OSError as exc:
        sock.close()
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        error = ServeError(f"cannot listen on {where}: {exc.strerror or exc}")
        error.errno = exc.errno  # e.g. EADDRINUSE, for callers that branch on it
        raise error from None
    sock.setblocking(False)
    return sock
