"""Test helpers for the network half of seamkit-guardrails-web: a stub resolver, a recording
httpcore network backend (real connections, or canned HTTP answers), and a real HTTP server on
127.0.0.1 (``http.server`` in a thread) with redirect, size, gzip, slow and binary routes."""

from __future__ import annotations

import gzip
import ipaddress
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpcore

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
PUBLIC = "93.184.215.14"
PRIVATE = "10.0.0.5"


class StubResolver:
    """Answers ``answers[i]`` to the i-th query (the last one to every later query); records the
    names asked. ``StubResolver([PUBLIC], [PRIVATE])`` is a rebinding name."""

    __test__ = False

    def __init__(self, *answers: Iterable[str]) -> None:
        self.answers = [[ipaddress.ip_address(a) for a in answer] for answer in answers] or [[]]
        self.queries: list[str] = []

    async def resolve(self, host: str) -> list[IPAddress]:
        self.queries.append(host)
        return list(self.answers[min(len(self.queries), len(self.answers)) - 1])


class _Canned(httpcore.AsyncNetworkStream):
    """A connection that answers one canned HTTP response and records what was written."""

    def __init__(self, backend: RecordingBackend, reply: bytes) -> None:
        self.backend = backend
        self.reply = reply

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        out, self.reply = self.reply[:max_bytes], self.reply[max_bytes:]
        return out

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        self.backend.written.append(bytes(buffer))

    async def aclose(self) -> None:
        pass

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:  # noqa: ASYNC109
        self.backend.tls.append(server_hostname)
        return self

    def get_extra_info(self, info: str) -> Any:
        return None


class _Recorded(httpcore.AsyncNetworkStream):
    """A real connection whose TLS upgrade is recorded."""

    def __init__(self, backend: RecordingBackend, stream: httpcore.AsyncNetworkStream) -> None:
        self.backend = backend
        self.stream = stream

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        return await self.stream.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        self.backend.written.append(bytes(buffer))
        await self.stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:  # noqa: ASYNC109
        self.backend.tls.append(server_hostname)
        return _Recorded(self.backend, await self.stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self.stream.get_extra_info(info)


class RecordingBackend(httpcore.AsyncNetworkBackend):
    """Records every ``connect_tcp`` (host, port) and TLS ``server_hostname``, and the bytes
    written. With ``replies``, each connection answers the next canned response (no socket);
    without, connections are real (``httpcore.AnyIOBackend``)."""

    def __init__(self, replies: Iterable[bytes] | None = None) -> None:
        self.replies = list(replies) if replies is not None else None
        self.inner = httpcore.AnyIOBackend()
        self.connects: list[tuple[str, int]] = []
        self.tls: list[str | None] = []
        self.written: list[bytes] = []

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,  # noqa: ASYNC109
                          local_address: str | None = None, socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        self.connects.append((host, port))
        if self.replies is not None:
            return _Canned(self, self.replies.pop(0) if len(self.replies) > 1 else self.replies[0])
        return _Recorded(self, await self.inner.connect_tcp(host, port, timeout=timeout, local_address=local_address,
                                                            socket_options=socket_options))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,  # noqa: ASYNC109
                                  socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        raise AssertionError("no Unix socket expected")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)

    @property
    def requests(self) -> bytes:
        return b"".join(self.written)


def canned(status: int = 200, body: bytes = b"ok", headers: dict[str, str] | None = None) -> bytes:
    """One HTTP/1.1 response (``Connection: close``)."""
    h = {"Content-Type": "text/plain; charset=utf-8", "Content-Length": str(len(body)), "Connection": "close",
         **(headers or {})}
    head = f"HTTP/1.1 {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
    return head.encode("latin-1") + body


# -- a real local server --------------------------------------------------------------------------------

BOMB_BYTES = 20_000_000  # zeros, gzip-compressed to ~20 kB: a 1000:1 ratio
_BOMB = gzip.compress(b"\0" * BOMB_BYTES, compresslevel=9)
_PAGE = "<html><body><h1>Hello from the local server</h1><p>Grüße, ünïcödé.</p></body></html>"


@dataclass
class LocalServer:
    port: int
    seen: list[dict[str, Any]] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


class _Handler(BaseHTTPRequestHandler):
    server_version = "seamkit-test"
    protocol_version = "HTTP/1.0"  # one request per connection: connections are countable

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, ctype: str = "text/plain; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the fetcher stopped reading (a cap)
            pass

    def do_GET(self) -> None:
        info: LocalServer = self.server.info  # type: ignore[attr-defined]
        parts = urlsplit(self.path)
        info.seen.append({"path": self.path, "host": self.headers.get("Host"), "headers": dict(self.headers)})
        q = {k: v[0] for k, v in parse_qs(parts.query).items()}
        route = parts.path
        if route == "/page":
            self._send(200, _PAGE.encode("utf-8"), "text/html; charset=utf-8")
        elif route == "/latin1":
            self._send(200, "café".encode("latin-1"), "text/plain; charset=iso-8859-1")
        elif route == "/raw":  # a body (hex) with a Content-Type of the test's choosing
            self._send(200, bytes.fromhex(q.get("hex", "")), q.get("ctype", "text/plain"))
        elif route == "/host":
            self._send(200, (self.headers.get("Host") or "").encode(), "text/plain")
        elif route == "/redirect":
            self._send(int(q.get("status", "302")), b"", headers={"Location": q["to"]})
        elif route == "/redirect-with-credentials":
            self._send(302, b"", headers={"Location": f"{q.get('scheme', 'ftp')}://user:s3cret@127.0.0.1/"})
        elif route.startswith("/chain/"):
            n = int(route.rsplit("/", 1)[1])
            if n == 0:
                self._send(200, b"end of chain")
            else:
                self._send(302, b"", headers={"Location": f"/chain/{n - 1}"})
        elif route == "/big":
            self._send(200, b"a" * 1_000_000)
        elif route == "/bomb":
            self._send(200, _BOMB, headers={"Content-Encoding": "gzip"})
        elif route == "/gzip":
            self._send(200, gzip.compress(_PAGE.encode("utf-8") * 3), "text/html; charset=utf-8",
                       headers={"Content-Encoding": "gzip"})
        elif route == "/slow":
            time.sleep(float(q.get("s", "3")))
            self._send(200, b"late")
        elif route == "/binary":
            self._send(200, b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "image/png")
        elif route == "/json":
            self._send(200, b'{"ok": true}', "application/problem+json")
        else:
            self._send(404, b"not found")


@contextmanager
def local_server() -> Iterator[LocalServer]:
    """A real HTTP server on 127.0.0.1 (a free port), in a thread, for one test."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.block_on_close = False
    info = LocalServer(server.server_address[1])
    server.info = info  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield info
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
