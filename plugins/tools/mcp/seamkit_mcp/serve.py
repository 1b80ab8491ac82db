"""``seamkit mcp serve FILE [--http HOST:PORT] [--no-agent-tool]``: FILE's entry agent over MCP.

Built on the official SDK's low-level server (:class:`mcp.server.lowlevel.Server`): ``tools/list``
and ``tools/call`` are answered by :class:`~seamkit_mcp.serve_tools.AgentServer` (what is offered
and how a call runs: approvals through MCP elicitation, guardrails, middlewares, budgets).

Transports:

- **stdio** (default): for a client that starts this command. The process's standard input and
  output carry only the protocol: before anything else is loaded, the two descriptors are taken
  over (duplicated for the wire; fd 0 then reads ``/dev/null`` and fd 1 writes to stderr), so a
  tool, a plugin or a C library writing to stdout cannot corrupt the stream. Logs and errors go
  to stderr. The command exits 0 when the client closes stdin, or closes its end of the wire
  while a reply is on its way (a broken pipe: one line on stderr says so).
- **streamable HTTP** (``--http HOST:PORT``, path ``/mcp``, served by uvicorn): several clients,
  each its own session. With a loopback host the SDK's DNS-rebinding protection is on; a
  non-loopback host serves anyone who can reach it (there is no authentication here: a warning
  on stderr says so at start).

Exit codes as every seamkit command: 0 (the client closed stdin or the wire, or the HTTP server stopped), 2 for a
usage or configuration problem (``file:line:column`` on stderr), 1 when a component fails to
build, 130 on Ctrl-C, 143 on SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from seamkit import Agent

    from seamkit_mcp.serve_tools import AgentServer, Answer, Asking

__all__ = ["main", "parse_http_address"]

_log = logging.getLogger("seamkit_mcp.serve")
PROG = "seamkit"


def parse_http_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for an IPv6 host) as ``(host, port)``. Raises
    :class:`~seamkit._cli.main.UsageError` for anything else or a port outside 1-65535."""
    from seamkit.plugin import UsageError

    host, sep, port_text = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise UsageError(f"--http takes HOST:PORT (e.g. 127.0.0.1:8765), got {text!r}")
    return host, int(port_text)


def main(args: argparse.Namespace) -> int:
    """Serve FILE's entry agent until the client goes away (stdio) or the server is stopped.
    Raises what the CLI reports: :class:`~seamkit._cli.main.UsageError` and
    :class:`~seamkit.errors.ConfigError` (exit 2), :class:`~seamkit._cli.main.BuildFailed` (exit 1),
    ``KeyboardInterrupt`` (130; SIGTERM: 143)."""
    from seamkit.plugin import BuildFailed, UsageError

    address = parse_http_address(args.http) if args.http else None
    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"no such file: {args.file}" if not path.exists() else f"not a file: {args.file}")
    wire = None if address is not None else _claim_stdio()  # first: nothing may write to the wire

    from seamkit.composition import ComponentBuildError, build_agent, load_composition
    from seamkit.plugin import get_registry, run_interruptible, scrub_output

    from seamkit_mcp.serve_tools import AgentServer

    registry = get_registry()
    composition = load_composition(path, registry=registry)  # ConfigError: exit 2
    secrets = composition.secret_values()
    scrub_output(secrets)  # stderr (and the diverted stdout) mask the secrets from here on
    _log_to_stderr()
    if composition.workflow is not None:
        raise UsageError(f"{args.file} describes a workflow; seamkit mcp serve serves an agent")
    try:
        agent = build_agent(composition, registry=registry)  # ConfigError: exit 2
    except ComponentBuildError as exc:
        raise BuildFailed(exc.issues) from exc
    if agent.capabilities is not None:
        raise UsageError(f"the agent {agent.name!r} has capabilities (it runs conversation turns): "
                         "seamkit mcp serve serves tool-calling agents")
    try:
        core = AgentServer(agent, agent_tool=not args.no_agent_tool, secrets=list(secrets),
                           metadata={"agent_file": str(path.resolve()), "served_by": "mcp"})
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not core.tools:
        raise UsageError(f"the agent {agent.name!r} has no tools to serve (and --no-agent-tool was given)")
    server = _mcp_server(core)
    if wire is not None:
        run_interruptible(_stopping_on_sigterm(_serve_stdio(server, wire, agent)))
    else:
        assert address is not None
        run_interruptible(_stopping_on_sigterm(_serve_http(server, address, agent)))
    return 0


async def _stopping_on_sigterm(serving: Any) -> None:
    """``await serving``, ended by SIGTERM the way asyncio ends a run on Ctrl-C: the serving task
    is cancelled (its cleanup runs: the SDK's task groups, the stores) and
    :class:`~seamkit._cli.main.Terminated` is raised afterwards (exit 143). The CLI's own SIGTERM
    handler raises from whatever code the signal lands in, which inside the SDK's task groups can
    leave the shutdown waiting."""
    import signal

    from seamkit.plugin import mark_terminated

    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(serving)
    got: list[int] = []

    def on_sigterm() -> None:
        got.append(signal.SIGTERM)
        task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
        await task
        return
    try:
        await task
    except asyncio.CancelledError:
        if not got:
            raise
        raise mark_terminated() from None  # recorded as the CLI's own handler records it
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        if not task.done():
            task.cancel()


# -- the MCP server ----------------------------------------------------------------------------


def _mcp_server(core: AgentServer) -> Server[Any]:
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from seamkit import __version__

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await core.offered_tools())

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
                        ) -> types.CallToolResult | types.InputRequiredResult:
        return await core.call(params.name, params.arguments, _asking(ctx, params))

    return Server(
        core.agent.name,
        version=__version__,
        description=f"seamkit agent {core.agent.name!r}: its tools, and the agent itself as a tool",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _asking(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Asking:
    """How this request can ask the person (see :class:`~seamkit_mcp.serve_tools.Asking`): not at
    all when the client did not declare elicitation; on a 2026-07-28 connection by
    ``InputRequiredResult`` (with the answers and state this request carries); else by an
    ``elicitation/create`` request, when the request has a channel back to the client."""
    import mcp_types as types
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    from seamkit_mcp.serve_tools import APPROVAL_FORM, NO_ASKING, Asking

    session = ctx.session
    if not session.check_client_capability(types.ClientCapabilities(elicitation=types.ElicitationCapability())):
        return NO_ASKING
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        responses: dict[str, Answer] = {}
        for key, value in (params.input_responses or {}).items():
            if isinstance(value, types.ElicitResult):
                responses[key] = value.action if value.action in ("accept", "decline") else "cancel"
        return Asking(input_required=True, responses=responses, state=params.request_state)
    if not session.can_send_request:
        return NO_ASKING
    request_id = ctx.request_id

    async def ask(message: str) -> Answer:
        try:
            result = await session.elicit_form(message, dict(APPROVAL_FORM), related_request_id=request_id)
        except Exception as exc:  # no answer is a refusal (fail closed)
            _log.warning("asking for approval failed: %s: %s", type(exc).__name__, exc)
            return "cancel"
        action = result.action
        return action if action in ("accept", "decline") else "cancel"

    return Asking(ask=ask)


async def _close_store(agent: Agent) -> None:
    cp = agent.checkpointer
    if cp is not None:
        try:
            await cp.aclose()
        except Exception as exc:  # exiting anyway; say why the store may not be closed cleanly
            _log.warning("closing the checkpoint store failed: %s: %s", type(exc).__name__, exc)


# -- stdio ---------------------------------------------------------------------------------------


def _claim_stdio() -> tuple[IO[bytes], IO[bytes]]:
    """Take fd 0 and fd 1 for the protocol: duplicates of them (close-on-exec, above 2) carry the
    wire; fd 0 is pointed at ``/dev/null`` (a child process or tool reading stdin reads nothing)
    and fd 1 at stderr (whatever else writes to stdout lands there). Returns (wire in, wire out)."""
    import fcntl

    from seamkit.plugin import UsageError

    sys.stdout.flush()
    try:
        wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
        wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError as exc:
        raise UsageError(f"serving over stdio needs stdin and stdout open (the client talks through them): "
                         f"{exc.strerror or exc}") from None
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return os.fdopen(wire_in, "rb"), os.fdopen(wire_out, "wb")


class _StdinLines:
    """The lines of the wire's input, read by a daemon thread (a blocking read must not keep the
    process alive after Ctrl-C or SIGTERM, as a worker thread of the event loop would); an async
    iterator of text lines, ending at EOF."""

    def __init__(self, wire: IO[bytes]) -> None:
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def read() -> None:
            try:
                while True:
                    line = wire.readline()
                    if not line:
                        break
                    loop.call_soon_threadsafe(self._queue.put_nowait, line.decode("utf-8", "replace"))
            except (OSError, ValueError) as exc:
                _log.warning("reading stdin failed: %s", exc)
            finally:
                try:
                    loop.call_soon_threadsafe(self._queue.put_nowait, None)
                except RuntimeError:  # the loop is closed: nobody is reading
                    pass

        threading.Thread(target=read, name="seamkit-mcp-stdin", daemon=True).start()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while True:
            line = await self._queue.get()
            if line is None:
                return
            yield line


class _WireWriter:
    """The wire's output as the SDK's stdio transport writes it (``await write(text)``,
    ``await flush()``): UTF-8, written in a worker thread so a slow reader does not block the loop."""

    def __init__(self, wire: IO[bytes]) -> None:
        self._wire = wire

    async def write(self, text: str) -> None:
        data = text.encode("utf-8")
        await asyncio.to_thread(self._wire.write, data)

    async def flush(self) -> None:
        await asyncio.to_thread(self._wire.flush)


async def _serve_stdio(server: Server[Any], wire: tuple[IO[bytes], IO[bytes]], agent: Agent) -> None:
    from mcp.server.stdio import stdio_server

    stdin = cast(Any, _StdinLines(wire[0]))
    stdout = cast(Any, _WireWriter(wire[1]))
    _say(f"serving agent {agent.name!r} over MCP on stdio")
    try:
        async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    except BaseException as exc:
        if not _client_gone(exc):
            raise
        # the client closed its end while a reply was on its way: the end of the session, as EOF is
        _say(f"the client closed the connection ({_first_leaf(exc)}); stopping")
    finally:
        await _close_store(agent)


def _client_gone(exc: BaseException) -> bool:
    """Whether ``exc`` says only that the client's end of the wire is gone: a broken or reset
    pipe, a closed file, or the SDK's streams closed or broken under it (alone or as every
    exception of an exception group, as the SDK's task groups raise them)."""
    import anyio

    if isinstance(exc, BaseExceptionGroup):
        return all(_client_gone(e) for e in exc.exceptions)
    if isinstance(exc, (BrokenPipeError, ConnectionResetError, anyio.ClosedResourceError,
                        anyio.BrokenResourceError)):
        return True
    return isinstance(exc, ValueError) and "closed file" in str(exc)  # a write after the wire was closed


def _first_leaf(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return type(exc).__name__


# -- streamable HTTP ---------------------------------------------------------------------------


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (uvicorn listens on it). Raises
    :class:`~seamkit._cli.main.UsageError` when it cannot be bound (in use, not an address here)."""
    from seamkit.plugin import UsageError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, where = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise UsageError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(where)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def _is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable from this machine only; a
    name other than ``localhost`` counts as reachable from others (it may resolve to anything)."""
    import ipaddress

    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _serve_http(server: Server[Any], address: tuple[str, int], agent: Agent) -> None:
    import uvicorn
    from seamkit.plugin import UsageError

    host, port = address
    sock = _listen(host, port)
    if not _is_loopback(host):
        _say(f"warning: this server has no authentication, and on {host} it is reachable from other machines: "
             "anyone who can connect can call the agent's tools")
    app = server.streamable_http_app(streamable_http_path="/mcp", host=host)
    config = uvicorn.Config(app, host=host, port=port, log_config=None, log_level="warning", access_log=False,
                            lifespan="on", timeout_graceful_shutdown=5)
    userver = uvicorn.Server(config)
    shown = f"[{host}]" if ":" in host else host

    async def announce() -> None:
        while not userver.started:
            if userver.should_exit:
                return
            await asyncio.sleep(0.02)
        _say(f"serving agent {agent.name!r} over MCP at http://{shown}:{port}/mcp")

    announcer = asyncio.ensure_future(announce())
    try:
        await userver.serve(sockets=[sock])
    except SystemExit:  # uvicorn exits the process when it cannot start; say so as a usage error
        raise UsageError(f"could not serve on {shown}:{port} (see the error above)") from None
    finally:
        announcer.cancel()
        sock.close()
        await _close_store(agent)
    if not userver.started:
        raise UsageError(f"could not serve on {shown}:{port} (see the error above)")


# -- output ------------------------------------------------------------------------------------


def _say(message: str) -> None:
    sys.stderr.write(f"{PROG}: {message}\n")
    sys.stderr.flush()


def _log_to_stderr() -> None:
    """Warnings of seamkit, the SDK and uvicorn on stderr (never stdout: on stdio it is the wire)."""
    root = logging.getLogger()
    if not any(isinstance(h, logging.StreamHandler) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(f"{PROG}: %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)
