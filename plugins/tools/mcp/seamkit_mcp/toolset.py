"""``use: mcp``: an MCP server's tools (and read tools for its resources and prompts) as seamkit
tools.

:func:`build_toolset` connects once, lists what the server offers and closes; the tools it
returns open the run's own session on their first call (``ctx.resource("mcp:<server>")``, closed
when the run ends on every exit path) and share it. Opening a session lists the tools again; the
first call on it checks each tool against its pin and against the definition the model was offered
(:mod:`seamkit_mcp.pins`): a changed tool is refused, never called.

Failures are classified :class:`~seamkit.errors.ToolUnavailable` s (``stop_run`` with
``on_failure: stop``): ``timeout`` when a call outlives ``timeout`` (the SDK sends the server a
cancellation notification; the session is kept), ``server_error`` when the server died or the
connection closed (the session is discarded, the next call starts it again, the run gets a
warning) or could not be started. A call that certainly was not sent (the server could not be
started, the definition changed) raises ``EffectNotApplied`` on the effect ledger's path so that
the ledger knows nothing happened; a call that was sent and then failed stays uncertain.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from seamkit.errors import ConfigError, ConfigIssue, EffectNotApplied, FailureClass, ToolUnavailable
from seamkit.plugin import run_sync, tool_name_of
from seamkit.values import ToolOutput, ToolSchema, freeze

from seamkit_mcp.config import McpConfig
from seamkit_mcp.connection import Listing, McpConnectError, McpSession, ServerSpec, check_server
from seamkit_mcp.pins import digest_of, pin_store_for
from seamkit_mcp.results import Limits, call_output, limited, prompt_output, resource_output
from seamkit_mcp.schema import ArgumentValidator, normalise_schema

if TYPE_CHECKING:
    from mcp.client.session import ClientSession
    from seamkit.plugin import RunContext

__all__ = ["McpTool", "McpToolset", "build_toolset", "discover"]

T = TypeVar("T")
MAX_NAME = 64  # what OpenAI and Anthropic accept in a tool name

#: Seconds, beyond the call's ``timeout``, before the call is abandoned even if the SDK's own
#: request timeout did not fire (a write blocked on a full pipe).
_BACKSTOP = 2.0


def _approve_hint(tool: str) -> str:
    return f"seamkit mcp approve FILE.yaml --tool {tool}"


class McpServerLink:
    """What the tools of one toolset share: the server, the definitions the model was offered,
    and the run's session with it (:meth:`call`)."""

    def __init__(self, spec: ServerSpec, offered: Mapping[str, str]) -> None:
        self.spec = spec
        self.key = spec.session_key
        #: the server's tool name -> digest of the definition offered to the model at build
        self.offered = dict(offered)
        cfg = spec.config
        self.stop = cfg.on_failure == "stop"
        self.limits = Limits(cfg.max_result_chars, cfg.max_images, cfg.max_image_bytes)

    async def _open(self, ctx: RunContext) -> McpSession:
        cfg = self.spec.config
        return await McpSession.open(self.spec, want_resources=cfg.resources, want_prompts=cfg.prompts)

    async def refused(self, session: McpSession, ctx: RunContext) -> dict[str, str]:
        """This toolset's tools refused on ``session``: checked against their pins once per
        session and toolset (two toolsets of one server share the run's session, not their
        tools)."""
        refused: dict[str, str] | None = session.notes.get(self)
        if refused is None:
            refused = session.notes[self] = await self._check_pins(session, ctx)
        return refused

    async def _check_pins(self, session: McpSession, ctx: RunContext) -> dict[str, str]:
        """The tools whose definition changed, with the reason each is refused; records the pins
        of tools seen for the first time (unchanged since build)."""
        assert session.listing is not None
        pins = pin_store_for(ctx)
        now = {t.name: t for t in session.listing.tools}
        refused: dict[str, str] = {}
        known = await pins.known(self.spec.id)
        if known is None:  # the first session with this server: pin everything it offers
            for name, tool in now.items():
                if name not in self.offered or digest_of(tool) == self.offered[name]:
                    await pins.put(self.spec.id, tool)
            known = frozenset(now)
        for name, offered in self.offered.items():
            tool = now.get(name)
            if tool is None:
                refused[name] = f"tool {name!r} is no longer offered by MCP server {self.spec.id!r}"
                continue
            current = digest_of(tool)
            pin = await pins.get(self.spec.id, name)
            if pin is None and name not in known:
                refused[name] = (
                    f"tool {name!r} is new on MCP server {self.spec.id!r} since its tools were approved "
                    f"(now {current[:12]}); review it and approve it: {_approve_hint(name)}")
                continue
            if pin is None and current == offered:
                await pins.put(self.spec.id, tool)  # pinned before under a store that lost it: pin again
                continue
            old = pin.digest if pin is not None else offered
            if current != old or current != offered:
                was = old if current != old else offered
                refused[name] = (
                    f"the definition of tool {name!r} of MCP server {self.spec.id!r} changed since it was approved "
                    f"(approved {was[:12]}, now {current[:12]}); it is not offered and no call to it is sent. "
                    f"Review the change and approve it: {_approve_hint(name)}")
        for why in refused.values():
            ctx.warn(why)
        return refused

    def _failure(self, ctx: RunContext, tool: str, message: str, cls: FailureClass, *, sent: bool,
                 stop: bool | None = None) -> NoReturn:
        u = ToolUnavailable(tool, self.spec.mask(message), failure_class=cls,
                            stop_run=self.stop if stop is None else stop)
        if not sent and ctx.idempotency_key is not None:
            raise EffectNotApplied(str(u)) from u  # the ledger must know nothing was applied
        raise u

    async def session(self, ctx: RunContext, tool: str) -> McpSession:
        """The run's session, opened (or restarted, if it died) on demand. Raises
        :class:`~seamkit.errors.ToolUnavailable` (not sent) when the server cannot be started."""
        for _ in range(2):
            try:
                session = await ctx.resource(self.key, partial(self._open, ctx))
            except McpConnectError as exc:
                self._failure(ctx, tool, str(exc), FailureClass.SERVER_ERROR, sent=False)
            if session.alive:
                return session
            assert ctx.resources is not None
            await ctx.resources.discard(self.key)  # died between calls: start it again
            ctx.warn(f"MCP server {self.spec.id!r} had stopped; it was started again")
        self._failure(ctx, tool, f"MCP server {self.spec.id!r} stops right after starting", FailureClass.SERVER_ERROR,
                      sent=False)

    async def call(self, ctx: RunContext, tool: str, op: Callable[[ClientSession], Awaitable[T]], *,
                   pinned: str | None = None) -> T:
        """``await op(client)`` on the run's session, bounded by the configured ``timeout``;
        ``pinned``: the server's name of a tool whose pin is checked first."""
        import pydantic
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED, INVALID_PARAMS, METHOD_NOT_FOUND, REQUEST_TIMEOUT

        session = await self.session(ctx, tool)
        try:
            refused = await self.refused(session, ctx)
        except Exception as exc:  # a store that is down: nothing was sent, nothing may be assumed
            self._failure(ctx, tool, f"the pinned tool definitions of MCP server {self.spec.id!r} could not be "
                          f"checked ({type(exc).__name__}: {exc}); the call was not sent",
                          FailureClass.SERVER_ERROR, sent=False, stop=False)
        if pinned is not None and pinned in refused:
            self._failure(ctx, tool, refused[pinned], FailureClass.INVALID_REQUEST, sent=False, stop=False)
        timeout = self.spec.config.timeout
        try:
            async with asyncio.timeout(timeout + _BACKSTOP):
                return await op(session.client)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT and session.alive:
                self._timed_out(ctx, tool, timeout)
            if exc.code in (REQUEST_TIMEOUT, CONNECTION_CLOSED):
                await self._died(ctx, tool, session)
            # a JSON-RPC error saying the request itself was refused (unknown tool, invalid
            # parameters: JSON-RPC 2.0, section 5.1) means the tool never ran: nothing applied
            bad = exc.code in (INVALID_PARAMS, METHOD_NOT_FOUND)
            cls = FailureClass.INVALID_REQUEST if bad else FailureClass.SERVER_ERROR
            self._failure(ctx, tool, f"MCP server {self.spec.id!r} refused the call of {tool!r}: {exc.message}"
                          f"{session.http_note()}", cls, sent=not bad, stop=False)
        except TimeoutError:
            if session.alive:
                self._timed_out(ctx, tool, timeout)
            await self._died(ctx, tool, session)
        except pydantic.ValidationError as exc:  # the SDK's parsing of the server's answer
            self._failure(ctx, tool, f"MCP server {self.spec.id!r} sent a result that does not follow the MCP schema "
                          f"({_first_error(exc)})", FailureClass.SERVER_ERROR, sent=True)
        except (OSError, EOFError) as exc:
            await self._died(ctx, tool, session, exc)
        except Exception as exc:
            import anyio

            if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream):
                await self._died(ctx, tool, session, exc)
            raise

    def _timed_out(self, ctx: RunContext, tool: str, timeout: float) -> NoReturn:
        self._failure(ctx, tool, f"tool {tool!r} of MCP server {self.spec.id!r} did not answer within {timeout:g} s "
                      "(timeout); the server was asked to cancel it", FailureClass.TIMEOUT, sent=True)

    async def _died(self, ctx: RunContext, tool: str, session: McpSession,
                    exc: BaseException | None = None) -> NoReturn:
        assert ctx.resources is not None
        await ctx.resources.discard(self.key)
        ctx.warn(f"MCP server {self.spec.id!r} stopped during a call of {tool!r}; it is started again on the next call")
        why = f" ({type(exc).__name__}: {exc})" if exc is not None and str(exc) else ""
        self._failure(ctx, tool, session.describe(
            f"MCP server {self.spec.id!r} stopped or closed the connection during the call of {tool!r}{why}"),
            FailureClass.SERVER_ERROR, sent=True)


def _first_error(exc: Any) -> str:
    """The first error of a pydantic ``ValidationError``, short: ``structuredContent: Input should
    be a valid dictionary`` (no input values, no links)."""
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return "not valid"
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"])
    more = f"; {len(errors) - 1} more" if len(errors) > 1 else ""
    return f"{where + ': ' if where else ''}{str(first['msg'])[:200]}{more}"


class McpTool:
    """One tool of an MCP server as a :class:`~seamkit._ports.ToolPort`. ``server_name`` is the
    name the server knows it by; ``schema.name`` the (prefixed, cleaned, cut) name the model sees."""

    def __init__(self, link: McpServerLink, server_name: str, schema: ToolSchema) -> None:
        self.link = link
        self.server_name = server_name
        self._schema = schema
        self._validator = ArgumentValidator(schema.name, schema.parameters)

    @property
    def schema(self) -> ToolSchema:
        return self._schema

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return self._validator.validate(arguments)

    async def prepare(self, ctx: RunContext) -> str | None:
        """Before the run's first model turn (see :class:`~seamkit._ports.ToolPort`): open the run's
        session (the server starts now) and check this tool's pin, so that a definition that
        changed since it was approved is never shown to the model. ``None`` when the tool may be
        offered, else why not. A server that cannot be started leaves the tool offered: a call
        reports the failure, classified."""
        try:
            session = await self.link.session(ctx, self._schema.name)
            refused = await self.link.refused(session, ctx)
        except Exception:
            return None
        return refused.get(self.server_name)

    async def invoke(self, arguments: Mapping[str, Any], ctx: RunContext) -> ToolOutput:
        timeout = self.link.spec.config.timeout
        result = await self.link.call(
            ctx, self._schema.name,
            lambda c: c.call_tool(self.server_name, dict(arguments), read_timeout_seconds=timeout),
            pinned=self.server_name)
        return limited(call_output(result), self.link.limits)

    def __repr__(self) -> str:
        return f"<mcp tool {self._schema.name} of {self.link.spec.id} side_effecting={self._schema.side_effecting}>"


class _HelperTool:
    """A read-only tool for the server's resources or prompts (no pin: its definition is ours)."""

    def __init__(self, link: McpServerLink, schema: ToolSchema,
                 run: Callable[[ClientSession, dict[str, Any]], Awaitable[Any]]) -> None:
        self.link = link
        self._schema = schema
        self._run = run
        self._validator = ArgumentValidator(schema.name, schema.parameters)

    @property
    def schema(self) -> ToolSchema:
        return self._schema

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return self._validator.validate(arguments)

    async def invoke(self, arguments: Mapping[str, Any], ctx: RunContext) -> Any:
        args = dict(arguments)
        out = await self.link.call(ctx, self._schema.name, lambda c: self._run(c, args))
        return limited(out, self.link.limits) if isinstance(out, ToolOutput) else out


class McpToolset:
    """The tools of one MCP server (a :class:`~seamkit._ports.ToolsetPort`): ``tools`` in the
    server's order, then the resource and prompt tools."""

    def __init__(self, link: McpServerLink, tools: Sequence[Any]) -> None:
        self.link = link
        self._tools = tuple(tools)

    @property
    def tools(self) -> tuple[Any, ...]:
        return self._tools

    def __repr__(self) -> str:
        return f"<mcp toolset {self.link.spec.id}: {', '.join(t.schema.name for t in self._tools)}>"


async def discover(spec: ServerSpec) -> Listing:
    """Connect, list what the server offers, and close. Raises
    :class:`~seamkit_mcp.connection.McpConnectError`."""
    cfg = spec.config
    session = await McpSession.open(spec, want_resources=cfg.resources, want_prompts=cfg.prompts)
    try:
        assert session.listing is not None
        return session.listing
    finally:
        await session.aclose()


def build_toolset(config: McpConfig) -> McpToolset:
    """``use: mcp``: connect to the server once, list its tools and build them.

    Raises :class:`~seamkit_mcp.connection.McpConnectError` when the server cannot be started or
    reached (the message names it; a stdio server's stderr tail included, secrets masked) and
    :class:`~seamkit.errors.ConfigError` for ``allow``/``deny`` names the server does not have and
    for tool names that clash, and for a stdio server whose command or cwd does not exist."""
    check_server(config)
    spec = ServerSpec.of(config)
    listing = run_sync(discover(spec))
    return toolset_from(spec, listing)


def _selected(spec: ServerSpec, listing: Listing) -> list[Any]:
    cfg = spec.config
    names = [t.name for t in listing.tools]
    issues = []
    for key in ("allow", "deny"):
        unknown = [n for n in (getattr(cfg, key) or []) if n not in names]
        if unknown:
            issues.append(ConfigIssue(
                f"{key} names {', '.join(map(repr, unknown))}, which MCP server {spec.id!r} does not offer; "
                f"it offers: {', '.join(names) or '(no tools)'}", key))
    if issues:
        raise ConfigError(issues)
    deny = set(cfg.deny)
    return [t for t in listing.tools if t.name not in deny and (cfg.allow is None or t.name in cfg.allow)]


def toolset_from(spec: ServerSpec, listing: Listing) -> McpToolset:
    """The toolset for what ``listing`` offers (see :func:`build_toolset`)."""
    cfg = spec.config
    chosen = _selected(spec, listing)
    link = McpServerLink(spec, {t.name: digest_of(t) for t in chosen})
    tools: list[Any] = []
    names = {t.name: (cfg.prefix + tool_name_of(t.name))[:MAX_NAME] for t in chosen}
    _refuse_clashes(spec, names)
    seen: dict[str, str] = {names[t.name]: f"tool {t.name!r}" for t in chosen}

    for t in chosen:
        name = names[t.name]
        description = (t.description or "").strip() or (
            f"Calls the tool {t.name!r} of the MCP server {spec.id!r} (the server gives no description).")
        read_only = t.annotations is not None and t.annotations.read_only_hint is True
        schema = ToolSchema(name, description, freeze(normalise_schema(t.input_schema)), side_effecting=not read_only)
        tools.append(McpTool(link, t.name, schema))
    for helper in _helpers(link, listing):
        schema = helper.schema
        if schema.name in seen:
            raise ConfigError([ConfigIssue(
                f"the tool {schema.name!r} for the {'resources' if 'resource' in schema.name else 'prompts'} of MCP "
                f"server {spec.id!r} clashes with {seen[schema.name]}: set a 'prefix' (e.g. prefix: "
                f"{tool_name_of(spec.id)[:20]}_) or turn it off (resources: false / prompts: false)", "prefix")])
        seen[schema.name] = f"the helper {schema.name!r}"
        tools.append(helper)
    return McpToolset(link, tools)


def _refuse_clashes(spec: ServerSpec, names: Mapping[str, str]) -> None:
    """Refuse tools of this one server whose names become the same tool name once made valid
    (``a.b``, ``a b`` and ``a_b`` all become ``a_b``): a prefix cannot part them, only ``deny``
    can. One issue per clash, at ``deny``, naming every tool in it."""
    by_name: dict[str, list[str]] = {}
    for server_name, name in names.items():
        by_name.setdefault(name, []).append(server_name)
    issues = []
    for name, group in by_name.items():
        if len(group) > 1:
            listed = ", ".join(map(repr, group[:-1])) + f" and {group[-1]!r}"
            others = ", ".join(json.dumps(n) for n in group[1:])
            issues.append(ConfigIssue(
                f"the tools {listed} of MCP server {spec.id!r} all become the tool name {name!r}: keep one and "
                f"deny the others (e.g. deny: [{others}])", "deny"))
    if issues:
        raise ConfigError(issues)


def _helpers(link: McpServerLink, listing: Listing) -> list[_HelperTool]:
    """The resource and prompt tools, when the server has any (declaring the capability with
    nothing behind it, as SDK servers do, offers nothing) and the config allows."""
    cfg = link.spec.config
    p = cfg.prefix
    sid = link.spec.id
    out: list[_HelperTool] = []

    def schema(name: str, description: str, params: dict[str, Any]) -> ToolSchema:
        return ToolSchema((p + name)[:MAX_NAME], description, freeze(params), side_effecting=False)

    if cfg.resources and listing.resources:
        async def list_resources(c: ClientSession, args: dict[str, Any]) -> Any:
            got = await c.list_resources()
            rows = [{k: v for k, v in {"uri": r.uri, "name": r.name, "description": r.description,
                                       "mime_type": r.mime_type}.items() if v is not None} for r in got.resources]
            return {"resources": rows, **({"more": "the server has more resources"} if got.next_cursor else {})}

        async def read_resource(c: ClientSession, args: dict[str, Any]) -> ToolOutput:
            return resource_output(await c.read_resource(args["uri"]))

        out.append(_HelperTool(link, schema(
            "list_resources", f"Lists the resources (documents, files, data) the MCP server {sid!r} offers: "
            "uri, name, description and media type of each. Read one with read_resource.",
            {"type": "object", "properties": {}}), list_resources))
        out.append(_HelperTool(link, schema(
            "read_resource", f"Reads one resource of the MCP server {sid!r} by its uri (from list_resources); "
            "returns its text, or its image.",
            {"type": "object", "properties": {"uri": {"type": "string", "description": "The resource's uri"}},
             "required": ["uri"]}), read_resource))
    if cfg.prompts and listing.prompts:
        async def list_prompts(c: ClientSession, args: dict[str, Any]) -> Any:
            got = await c.list_prompts()
            return {"prompts": [
                {"name": pr.name, "description": pr.description or "",
                 "arguments": [{"name": a.name, "required": bool(a.required), "description": a.description or ""}
                               for a in pr.arguments or ()]} for pr in got.prompts]}

        async def get_prompt(c: ClientSession, args: dict[str, Any]) -> ToolOutput:
            values = {k: v if isinstance(v, str) else json.dumps(v) for k, v in (args.get("arguments") or {}).items()}
            return prompt_output(await c.get_prompt(args["name"], values or None))

        out.append(_HelperTool(link, schema(
            "list_prompts", f"Lists the prompt templates the MCP server {sid!r} offers, with their arguments. "
            "Get one with get_prompt.", {"type": "object", "properties": {}}), list_prompts))
        out.append(_HelperTool(link, schema(
            "get_prompt", f"Gets one prompt template of the MCP server {sid!r} filled in with arguments; returns "
            "its messages as text.",
            {"type": "object", "properties": {
                "name": {"type": "string", "description": "The prompt's name (from list_prompts)"},
                "arguments": {"type": "object", "additionalProperties": {"type": "string"},
                              "description": "Values for the prompt's arguments, by name"}},
             "required": ["name"]}), get_prompt))
    return out
