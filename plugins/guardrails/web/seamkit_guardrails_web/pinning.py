"""IP pinning: an httpx transport whose connections go only to addresses the egress check chose.

httpx hands each request to an httpcore connection pool; the pool opens a connection with its
*network backend*: ``connect_tcp(host, port, ...)`` with the URL's host name, and then, for
``https``, ``stream.start_tls(ssl_context, server_hostname=<the same host name>)`` (httpcore 1.0,
``_async/connection.py``, ``AsyncHTTPConnection._connect``: ``server_hostname`` is the request's
``sni_hostname`` extension, which seamkit never sets, else the origin's host). The request's
``Host`` header is written by httpx from the URL. So a backend that connects to a *pinned
address* when asked for a name leaves the Host header, the TLS SNI and the certificate check on
the name, and no second DNS lookup happens anywhere (DNS rebinding has nothing to rebind).

:class:`PinnedBackend` is that backend (it wraps httpcore's own ``AnyIOBackend``, or any other,
e.g. a recording one in tests); a host it holds no pin for is refused, never resolved.
:class:`PinnedTransport` is ``httpx.AsyncHTTPTransport`` with its pool built on such a backend,
no proxy and no environment (``trust_env=False``: a proxy from ``HTTPS_PROXY`` would make the
proxy, not the pinned address, the peer).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Mapping

import httpcore
import httpx

from seamkit_guardrails_web.errors import EgressRefused
from seamkit_guardrails_web.resolver import IPAddress

__all__ = ["PinnedBackend", "PinnedTransport"]


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that connects a host name only to its pinned addresses.

    ``inner``: the backend that opens real connections (default ``httpcore.AnyIOBackend()``).
    :meth:`pin` records the checked addresses of a host (the key is httpcore's origin host:
    ASCII, lower case, an IPv6 literal without brackets). :meth:`connect_tcp` tries the pinned
    addresses in order (the resolver's order) and raises the last connection error when none
    answers; a host with no pin raises :class:`~seamkit_guardrails_web.errors.EgressRefused`
    (``resolution``) without opening anything. Unix sockets are refused."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.inner = inner if inner is not None else httpcore.AnyIOBackend()
        self._pins: dict[str, tuple[IPAddress, ...]] = {}

    @property
    def pins(self) -> Mapping[str, tuple[IPAddress, ...]]:
        """host -> its pinned addresses (read-only view)."""
        return dict(self._pins)

    def pin(self, host: str, addresses: Iterable[IPAddress]) -> None:
        """Connect ``host`` only to ``addresses`` (already checked) from now on."""
        addrs = tuple(addresses)
        if not addrs:
            raise ValueError(f"no address to pin {host!r} to")
        self._pins[host.lower()] = addrs

    def pinned(self, host: str) -> tuple[IPAddress, ...] | None:
        """The addresses ``host`` is pinned to, or ``None``."""
        return self._pins.get(host.lower())

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore backend contract
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = self._pins.get(host.lower())
        if not addresses:
            raise EgressRefused(host, "no checked address for this host (refusing to resolve it again)", "resolution")
        last: Exception | None = None
        for address in addresses:
            try:
                return await self.inner.connect_tcp(
                    str(address), port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore backend contract
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise EgressRefused(path, "Unix sockets are not an egress destination", "scheme")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class PinnedTransport(httpx.AsyncHTTPTransport):
    """``httpx.AsyncHTTPTransport`` (HTTP/1.1, no proxy, no retries, ``trust_env=False``) whose
    connection pool connects through ``backend`` (a :class:`PinnedBackend`). ``ssl_context``:
    the TLS context (certificate verification on; default ``httpx.create_ssl_context()`` without
    the environment). ``limits``: httpx's connection limits.

    httpx's transport has no ``network_backend`` parameter, so the pool it builds is replaced by
    an identical one on ``backend``; a future httpx whose transport no longer keeps an httpcore
    ``AsyncConnectionPool`` as ``_pool`` makes this raise ``RuntimeError`` at construction rather
    than connect unpinned."""

    def __init__(
        self,
        backend: PinnedBackend,
        *,
        ssl_context: ssl.SSLContext | None = None,
        limits: httpx.Limits = httpx.Limits(max_connections=10, max_keepalive_connections=5),
    ) -> None:
        if not isinstance(backend, PinnedBackend):
            raise TypeError("PinnedTransport needs a PinnedBackend: connections must go to checked addresses only")
        ctx = ssl_context if ssl_context is not None else httpx.create_ssl_context(trust_env=False)
        super().__init__(verify=ctx, trust_env=False, http1=True, http2=False, limits=limits, retries=0)
        if not isinstance(getattr(self, "_pool", None), httpcore.AsyncConnectionPool):
            raise RuntimeError("this httpx version's AsyncHTTPTransport has no httpcore pool to pin; "
                               "seamkit-guardrails-web needs an update")
        self.backend = backend
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ctx,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=False,
            retries=0,
            network_backend=backend,
        )

    def __repr__(self) -> str:
        return f"PinnedTransport(pins={sorted(self.backend.pins)})"
