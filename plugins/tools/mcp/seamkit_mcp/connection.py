"""One MCP session with one server, owned by a dedicated task.

The SDK's transports (``stdio_client``, ``streamable_http_client``) and ``ClientSession`` hold
anyio task groups, which must be entered and exited by the same task. A run's tools call the
session from whatever task runs them, and the run closes it from yet another (the one ending the
run), so :class:`McpSession` starts an *owner task* that enters the transport and the session,
initializes, lists the server's tools (and, when offered, its resources and prompts), signals that
it is ready, waits to be told to close, and exits both contexts itself. Every wait is bounded:
opening by ``connect_timeout`` (a server that never answers ``initialize`` included), closing by
:data:`CLOSE_TIMEOUT` after which the owner task is cancelled.

A stdio server's stderr goes to a pipe drained by a thread into a bounded buffer
(:class:`StderrTail`); its tail goes into error messages, never to our stdout. Secrets (the
configured ``env`` values and HTTP ``headers``) are masked in every message built here
(:meth:`ServerSpec.mask`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from seamkit.errors import ConfigError, ConfigIssue, SeamkitError

from seamkit_mcp.config import HttpServer, McpConfig, StdioServer

if TYPE_CHECKING:
    from mcp.client.session import ClientSession
    from mcp.types import Prompt, Resource, ServerCapabilities, Tool

__all__ = ["CLOSE_TIMEOUT", "McpConnectError", "McpSession", "ServerSpec", "StderrTail", "check_server",
           "server_id_of"]

#: Seconds :meth:`McpSession.aclose` waits for the owner task to shut the session down (a stdio
#: server gets the SDK's own bounded grace: stdin closed, then SIGTERM, then SIGKILL) before it
#: cancels the task.
CLOSE_TIMEOUT = 8.0

#: Bytes of a stdio server's stderr kept (the newest ones).
STDERR_LIMIT = 8192

#: HTTP headers (lower case) whose values are masked in messages, whatever
#: :func:`~seamkit.composition._models.is_secret_name` says of their names.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key"})

#: Characters of the stderr tail put into a message (the newest ones).
TAIL_CHARS = 600

_INTERPRETERS = ("python", "python3", "node", "uv", "uvx", "npx", "bun", "deno", "pipx", "docker")


class McpConnectError(SeamkitError):
    """The MCP server could not be started, reached or initialized in time. The message names the
    server, says why, and ends with the tail of a stdio server's stderr (secrets masked)."""


def command_of(server: StdioServer) -> str:
    """The program a stdio server runs: ``python`` and ``python3`` are the interpreter running
    seamkit (``sys.executable``), whose packages the server then sees (on a machine where
    ``python`` on PATH is another installation, a server written with the SDK would not import);
    anything else is looked up on PATH as written."""
    import sys

    return sys.executable if server.command in ("python", "python3") else server.command


def check_server(config: McpConfig) -> None:
    """Refuse, before anything is started, a stdio server that cannot start: its ``command`` is
    not an executable found on PATH (or, written as a path, not an executable file; relative to
    ``cwd`` when that is given, as the process will see it), or its ``cwd`` is not a directory.

    Raises :class:`~seamkit.errors.ConfigError` with one issue at the ``server`` key."""
    import shutil

    server = config.server
    if not isinstance(server, StdioServer):
        return
    problems: list[str] = []
    cwd = server.cwd
    if cwd is not None and not cwd.is_dir():
        problems.append(f"cwd {str(cwd)!r} is not a directory")
    command = command_of(server)
    if os.sep in command and not os.path.isabs(command) and cwd is not None and cwd.is_dir():
        command = str(cwd / command)  # a relative path is taken from the server's working directory
    if shutil.which(command) is None:
        where = "is not an executable file" if os.sep in command else "is not found on PATH"
        problems.append(f"command {server.command!r} {where}")
    if problems:
        raise ConfigError([ConfigIssue(f"the MCP server cannot be started: {'; '.join(problems)}", "server")])


def server_id_of(config: McpConfig) -> str:
    """The server's name in messages and pins: ``config.name``; else, for stdio, the command's
    name (for an interpreter such as ``python`` or ``npx``: the stem of its first non-option
    argument); for HTTP, the url's host and path."""
    if config.name:
        return config.name
    server = config.server
    if isinstance(server, StdioServer):
        name = Path(server.command).name
        if name.split(".")[0].rstrip("0123456789.") in _INTERPRETERS:
            script = next((a for a in server.args if not a.startswith("-")), None)
            if script:
                return Path(script).stem or name
        return name
    from urllib.parse import urlsplit

    parts = urlsplit(server.url)
    return f"{parts.hostname or ''}{parts.path.rstrip('/')}" or server.url


class _OneLine(logging.Filter):
    """Drops a record's traceback, keeping its message and the exception's one-line reason."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None and os.environ.get("SEAMKIT_DEBUG") != "1":
            record.msg = f"{record.getMessage()} ({_reason(record.exc_info[1])})"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


_ONE_LINE = _OneLine()


def quiet_sdk_tracebacks() -> None:
    """Keep the MCP SDK's ``logger.exception(...)`` records (e.g. "Failed to parse JSONRPC
    message from server", once per line of junk a server prints on stdout) to one line each: the
    filter goes on the ``mcp`` logger and every ``mcp.*`` logger created so far (a logger's filters
    apply only to its own records, not to those propagated from its children). Idempotent; called
    when a session is opened, after the SDK's client modules are imported. ``SEAMKIT_DEBUG=1``
    keeps the tracebacks."""
    from mcp.client import session, stdio, streamable_http  # noqa: F401  (their loggers exist now)

    names = ["mcp", *(n for n in logging.Logger.manager.loggerDict if n.startswith("mcp."))]
    for name in names:
        logger = logging.getLogger(name)
        if _ONE_LINE not in logger.filters:
            logger.addFilter(_ONE_LINE)


@dataclass(frozen=True)
class ServerSpec:
    """What a session needs to know about its server: its ``id`` (for messages), the
    configuration, and the secret values to mask."""

    id: str
    config: McpConfig
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def of(cls, config: McpConfig) -> ServerSpec:
        """The spec of ``config``; the values masked are those of ``env`` variables and
        ``headers`` whose name says they hold a secret (:func:`~seamkit.composition._models.is_secret_name`,
        or a header in :data:`SECRET_HEADERS`) and that are at least
        :data:`~seamkit.composition._models.MIN_SECRET_LENGTH` characters long: masking every
        value, however short, garbles messages (``env: {DEBUG: x}`` would mask each "x"). Values
        written as ``${VAR}`` in YAML are masked wherever seamkit prints, whatever their name."""
        from seamkit.plugin import MIN_SECRET_LENGTH, is_secret_name

        server = config.server
        named = server.env.items() if isinstance(server, StdioServer) else server.headers.items()
        values = {v.get_secret_value() for k, v in named
                  if is_secret_name(k) or k.lower() in SECRET_HEADERS}
        secrets = tuple(sorted((v for v in values if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True))
        return cls(server_id_of(config), config, secrets)

    @property
    def session_key(self) -> str:
        """The key of the run's session with this server (``ctx.resource``): its name and a digest
        of everything that says which server it is and how to reach it (command, arguments,
        environment, working directory; url, headers), so that two slots naming different servers
        alike never share a session, and two slots for the same server do. The digest is one-way:
        no secret can be read back from it."""
        import hashlib
        import json

        server = self.config.server
        if isinstance(server, StdioServer):
            what: dict[str, object] = {"command": server.command, "args": server.args, "cwd": server.cwd,
                                       "env": {k: v.get_secret_value() for k, v in sorted(server.env.items())}}
        else:
            what = {"url": server.url, "headers": {k: v.get_secret_value() for k, v in sorted(server.headers.items())}}
        digest = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]
        return f"mcp:{self.id}:{digest}"

    def mask(self, text: str) -> str:
        """``text`` with every secret value replaced by ``***``."""
        for s in self.secrets:
            text = text.replace(s, "***")
        return text


class StderrTail:
    """A stdio server's stderr: the write end of a pipe (:attr:`file`, given to the process) and a
    daemon thread keeping the newest :data:`STDERR_LIMIT` bytes of what arrives at the read end.
    The thread ends when every holder of the write end has closed it (the server exited)."""

    def __init__(self, limit: int = STDERR_LIMIT) -> None:
        read_fd, write_fd = os.pipe()
        self.file: TextIO = os.fdopen(write_fd, "w")
        self._limit = limit
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, args=(read_fd,), name="seamkit-mcp-stderr",
                                        daemon=True)
        self._thread.start()

    def _drain(self, fd: int) -> None:
        try:
            while chunk := os.read(fd, 4096):
                with self._lock:
                    self._buf += chunk
                    if len(self._buf) > self._limit:
                        del self._buf[: len(self._buf) - self._limit]
        except OSError:
            pass
        finally:
            os.close(fd)

    def release(self) -> None:
        """Close our copy of the write end (the child holds its own once spawned)."""
        with contextlib.suppress(OSError):
            self.file.close()

    def settle(self, timeout: float = 0.5) -> None:
        """Wait (briefly) for what a process that just exited wrote to arrive."""
        self._thread.join(timeout)

    def tail(self, lines: int = 12) -> str:
        """The last ``lines`` lines received (decoded leniently, stripped)."""
        with self._lock:
            text = self._buf.decode("utf-8", "replace")
        return "\n".join(text.strip().splitlines()[-lines:])


@dataclass(frozen=True)
class Listing:
    """What the server offers: its tools, resources and prompts (``None``: not offered or not
    asked for) and its capabilities."""

    tools: tuple[Tool, ...]
    resources: tuple[Resource, ...] | None
    prompts: tuple[Prompt, ...] | None
    capabilities: ServerCapabilities | None


class McpSession:
    """An initialized session with one server, ready for calls (:attr:`client`), with what the
    server listed when it was opened (:attr:`listing`). Open it with :meth:`open`; close it with
    :meth:`aclose` (bounded; safe to call twice). :attr:`alive` turns false when the connection
    ended by itself (the server died). Calls to ``client`` may be made from any task."""

    def __init__(self, spec: ServerSpec, *, want_resources: bool = False, want_prompts: bool = False) -> None:
        self.spec = spec
        self._want = (want_resources, want_prompts)
        self._close = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._client: ClientSession | None = None
        self.listing: Listing | None = None
        self.stderr: StderrTail | None = None
        #: The status of the HTTP server's latest error response (4xx, 5xx), cleared by a later
        #: success; ``None`` over stdio.
        self.http_status: int | None = None
        #: What the users of this session learnt about it, by user (e.g. each toolset's tools
        #: refused by their pins, checked once per session).
        self.notes: dict[object, Any] = {}

    @classmethod
    async def open(cls, spec: ServerSpec, *, want_resources: bool = False, want_prompts: bool = False) -> McpSession:
        """Start (or reach) the server, initialize and list, within ``connect_timeout``.

        Raises :class:`McpConnectError` naming the server (the stderr tail of a stdio server that
        exited or never answered included); cancellation stops the server before propagating."""
        quiet_sdk_tracebacks()
        self = cls(spec, want_resources=want_resources, want_prompts=want_prompts)
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._task = asyncio.create_task(self._own(ready), name=f"seamkit-mcp:{spec.id}")
        timeout = spec.config.connect_timeout
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(ready)
        except TimeoutError:
            await self._stop()
            raise McpConnectError(self.describe(f"MCP server {spec.id!r} did not start and initialize "
                                                f"within {timeout:g} s (connect_timeout)")) from None
        except BaseException as exc:
            await self._stop()
            if isinstance(exc, Exception) and not isinstance(exc, McpConnectError):
                raise McpConnectError(self.describe(
                    f"MCP server {spec.id!r} could not be started or reached: {_reason(exc)}{self.http_note()}")
                ) from None
            raise
        return self

    @property
    def client(self) -> ClientSession:
        if self._client is None:
            raise RuntimeError(f"the session with MCP server {self.spec.id!r} is not open")
        return self._client

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done() and not self._close.is_set()

    def _saw(self, status: int) -> None:
        if status >= 400:
            self.http_status = status
        elif status < 300:
            self.http_status = None

    def http_note(self) -> str:
        """`` (HTTP 401: check the server's headers...)`` after an HTTP error response, else ``""``:
        the SDK reports every status but 404 as "Server returned an error response"."""
        status = self.http_status
        if status is None:
            return ""
        hint = ": check the server's headers, e.g. the Authorization token" if status in (401, 403) else ""
        return f" (HTTP {status}{hint})"

    def describe(self, message: str) -> str:
        """``message`` followed, on the same line, by the tail of the server's stderr (if any: its
        last lines joined with `` | ``, at most :data:`TAIL_CHARS` characters), secrets masked."""
        tail = ""
        if self.stderr is not None:
            if self._task is None or self._task.done():
                self.stderr.settle()
            tail = self.stderr.tail()
        if tail:
            # one line: error texts are printed on one line (the CLI escapes newlines)
            lines = " | ".join(line.strip() for line in tail.splitlines() if line.strip())
            if len(lines) > TAIL_CHARS:
                lines = "..." + lines[-TAIL_CHARS:]
            message = f"{message}; server stderr (last lines): {lines}"
        return self.spec.mask(message)

    async def aclose(self) -> None:
        """Close the session and stop a stdio server: the owner task exits the session and the
        transport (bounded by :data:`CLOSE_TIMEOUT`, then cancelled)."""
        self._close.set()
        await self._stop(graceful=True)

    async def _stop(self, *, graceful: bool = False) -> None:
        task = self._task
        if task is None or task.done():
            return
        if graceful:
            try:
                await asyncio.wait_for(asyncio.shield(task), CLOSE_TIMEOUT)
                return
            except TimeoutError:
                pass
            except Exception:
                return  # the owner task's own failure: it has exited its contexts
        task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(task), CLOSE_TIMEOUT)

    async def _own(self, ready: asyncio.Future[None]) -> None:
        from mcp.client.session import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                client = await stack.enter_async_context(ClientSession(read, write))
                init = await client.initialize()
                self.listing = await _list(client, init.capabilities, *self._want)
                self._client = client
                if not ready.done():
                    ready.set_result(None)
                await self._close.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            # after ready, a failure here is the connection ending: ``alive`` turns false

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        server = self.spec.config.server
        if isinstance(server, HttpServer):
            async with _http_transport(server, self._saw) as streams:
                yield streams
            return
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=command_of(server), args=list(server.args),
            env={k: v.get_secret_value() for k, v in server.env.items()} or None,
            cwd=str(server.cwd) if server.cwd is not None else None)
        self.stderr = tail = StderrTail()
        try:
            async with stdio_client(params, errlog=tail.file) as streams:
                tail.release()  # the child has its own copy now: EOF comes when it exits
                yield streams
        finally:
            tail.release()


@contextlib.asynccontextmanager
async def _http_transport(server: HttpServer, saw: Callable[[int], None]) -> AsyncIterator[tuple[Any, Any]]:
    """The streamable HTTP transport; ``saw`` is told the status of every response (an httpx
    response hook: the SDK turns error statuses into one undifferentiated JSON-RPC error)."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def on_response(response: Any) -> None:
        saw(int(response.status_code))

    headers = {k: v.get_secret_value() for k, v in server.headers.items()}
    async with create_mcp_http_client(headers=headers or None) as http:
        http.event_hooks["response"].append(on_response)
        async with streamable_http_client(server.url, http_client=http) as streams:
            yield streams


async def _list(client: ClientSession, caps: ServerCapabilities | None, resources: bool, prompts: bool) -> Listing:
    """Every page of the server's tools, and of its resources and prompts when it declares them
    and they are wanted."""
    from mcp.types import PaginatedRequestParams

    async def pages(fetch: Any, attr: str) -> tuple[Any, ...]:
        out: list[Any] = []
        cursor: str | None = None
        for _ in range(1000):  # a server whose cursor never ends cannot hang the open
            got = await fetch(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            out.extend(getattr(got, attr))
            cursor = got.next_cursor
            if not cursor:
                break
        return tuple(out)

    tools: Sequence[Tool] = await pages(client.list_tools, "tools") if caps is None or caps.tools else ()
    res = await pages(client.list_resources, "resources") if resources and caps is not None and caps.resources else None
    pro = await pages(client.list_prompts, "prompts") if prompts and caps is not None and caps.prompts else None
    return Listing(tuple(tools), res, pro, caps)


def _reason(exc: BaseException) -> str:
    """A one-line reason for ``exc`` (an exception group: its first leaf)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
