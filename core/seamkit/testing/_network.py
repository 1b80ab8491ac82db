"""A switch that blocks real network calls in tests."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

__all__ = ["NetworkBlocked", "block_network"]


class NetworkBlocked(RuntimeError):
    """A test tried to open a connection to a non-loopback address while the network was blocked."""


def _is_loopback(address: Any) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    host = address[0] if isinstance(address, tuple) and address else address
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def block_network(*, allow_loopback: bool = True) -> Iterator[None]:
    """Inside the block, ``socket.connect`` / ``connect_ex`` / ``getaddrinfo`` to anything but
    loopback (and Unix sockets) raise :class:`NetworkBlocked`."""
    orig_connect = socket.socket.connect
    orig_connect_ex = socket.socket.connect_ex
    orig_getaddrinfo = socket.getaddrinfo

    def check(address: Any) -> None:
        if not (allow_loopback and _is_loopback(address)):
            raise NetworkBlocked(f"network access to {address!r} is blocked in tests")

    def connect(self: socket.socket, address: Any) -> None:
        check(address)
        return orig_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(address)
        return orig_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None:
            h = host.decode() if isinstance(host, bytes) else host
            check((h, 0))
        return orig_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = getaddrinfo
    try:
        yield
    finally:
        socket.socket.connect = orig_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = orig_connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = orig_getaddrinfo
