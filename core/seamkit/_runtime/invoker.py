"""The ``Invoker``: runs chat and tool calls through their middleware chains."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from seamkit._accumulate import checked_stream, collect_result
from seamkit._lazy import lazy_module
from seamkit._middleware import Call, Middleware, Next, chain, collect_one
from seamkit._ports import LLMPort
from seamkit._runtime.context import RunContext
from seamkit._tools.registry import ToolRegistry
from seamkit.errors import (
    EffectNotApplied,
    InfrastructureUnavailable,
    SeamkitError,
    ToolArgumentError,
    ToolUnavailable,
    UnknownToolError,
)
from seamkit.values import (
    EMPTY,
    ChatRequest,
    Delta,
    FrozenDict,
    LLMResult,
    ToolCall,
    ToolOutput,
    ToolRequest,
    ToolResult,
)

if TYPE_CHECKING:
    import asyncio
else:  # imported on first use: a third of a usable agent's import time (issue 19)
    asyncio = lazy_module("asyncio", globals())

__all__ = ["Invoker", "render_tool_value", "sniff_media_type", "unusable_arguments_result"]


#: Leading bytes of the binary formats a tool most often returns, and their media types: the
#: patterns of the WHATWG MIME Sniffing Standard (https://mimesniff.spec.whatwg.org/, section 6.1
#: "Matching an image type pattern" and 6.4 "Matching an archive type pattern"; PDF from
#: section 7.1, "Identifying a resource with an unknown MIME type"). WebP is checked separately
#: (``RIFF`` + 4 size bytes + ``WEBP``).
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x1f\x8b\x08", "application/gzip"),
)
#: WHATWG MIME Sniffing, section 7.2: "A binary data byte is a byte in the range 0x00 to 0x08
#: (NUL to BS), the byte 0x0B (VT), a byte in the range 0x0E to 0x1A (SO to SUB), or a byte in the
#: range 0x1C to 0x1F (FS to US)." Text containing one is binary data even when it decodes.
_BINARY_DATA_BYTES = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])


def sniff_media_type(data: bytes) -> str:
    """The media type of ``data`` from its leading bytes (PNG, JPEG, GIF, WebP, PDF, ZIP, gzip;
    see :data:`_SIGNATURES`), or ``application/octet-stream`` when none matches."""
    for signature, media_type in _SIGNATURES:
        if data.startswith(signature):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return "application/octet-stream"


def _render_bytes(data: bytes) -> str:
    media_type = sniff_media_type(data)
    if media_type == "application/octet-stream":
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            if len(data.translate(None, _BINARY_DATA_BYTES)) == len(data):
                return text
    import base64

    return json.dumps(
        {"media_type": media_type, "size_bytes": len(data), "base64": base64.b64encode(data).decode("ascii")}
    )


class ToolCancelledItself(Exception):
    """A tool's own code raised ``asyncio.CancelledError`` while nobody was cancelling the task
    running it: that tool's failure, not the run's cancellation."""


class _Entered:
    """Set when a tool's own code is entered; until then its call certainly changed nothing."""

    __slots__ = ("entered",)

    def __init__(self) -> None:
        self.entered = False


# The marker of the side-effecting call in flight in this task (contexts copied for tasks a
# middleware starts share the marker object, so the terminal's mark is seen here).
_ENTERED: ContextVar[_Entered | None] = ContextVar("seamkit_tool_entered", default=None)


def _cancelled_by_caller() -> bool:
    """Whether the task running a tool call is being cancelled (``Task.cancelling()``): an
    ``asyncio.CancelledError`` then is the caller's, not one the tool's own code raised."""
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


def _self_cancelled(exc: asyncio.CancelledError) -> str:
    """The text for an ``asyncio.CancelledError`` a tool's own code raised."""
    why = f": {exc}" if str(exc) else ""
    return f"CancelledError{why} (raised by the tool itself; the run was not cancelled)"


def render_tool_value(value: Any) -> str:
    """A tool's return value as tool-result text: ``str`` as is, anything else as JSON (pydantic
    models, dataclasses, ``Decimal``, ``datetime`` included).

    An iterator (a generator, ``map``, ``zip``...) is read once, into a list, and shown as a JSON
    array, on every path (read-only and side-effecting calls alike).

    ``bytes``, ``bytearray`` and ``memoryview``: UTF-8 text (with no binary data bytes) as that
    text; anything else as a JSON object ``{"media_type", "size_bytes", "base64"}`` (standard
    base64, RFC 4648 section 4; the media type sniffed by :func:`sniff_media_type`). Bytes nested
    inside a structure are UTF-8 text when every one of them decodes, otherwise all of them are
    base64 (URL-safe alphabet, RFC 4648 section 5: pydantic's ``bytes_mode="base64"``).

    Raises ``ValueError`` (``pydantic_core.PydanticSerializationError``) for a value that cannot be
    written as JSON."""
    t = type(value)
    if t is str:
        return value  # type: ignore[no-any-return]
    if t is int:
        return str(value)
    if t is bool or value is None:
        return json.dumps(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _render_bytes(bytes(value))
    if isinstance(value, Iterator):
        # a generator, map, zip... can be read once: read it here, so a second serialisation
        # pass (nested bytes that are not UTF-8, below) sees the items instead of an empty list
        value = list(value)
    import pydantic_core

    try:
        return pydantic_core.to_json(value).decode()
    except pydantic_core.PydanticSerializationError:
        # nested bytes that are not UTF-8: say what they hold rather than fail
        return pydantic_core.to_json(value, bytes_mode="base64").decode()


def tool_raised_warning(call: ToolCall, exc: BaseException) -> str:
    """The run's warning for a tool that raised an unexpected exception (the model gets an error
    result; whoever runs the agent reads this in ``AgentResult.warnings`` and ``seamkit runs
    show``): the tool, the call id, the exception's type and message, and with ``SEAMKIT_DEBUG=1``
    its traceback. What looks like a secret is masked (:func:`seamkit._plugins.redact.mask_message`)."""
    import os

    from seamkit._plugins.redact import mask_message

    text = (f"tool {call.name!r} (call {call.id}) raised {type(exc).__name__}: {exc}; the model was told "
            "the call failed")
    if os.environ.get("SEAMKIT_DEBUG", "").strip().lower() in ("1", "true", "yes"):
        import traceback

        text += "\n" + "".join(traceback.format_exception(exc)).rstrip()
    return mask_message(text)


def unusable_arguments_result(call: ToolCall) -> ToolResult:
    """The error result for a call whose arguments could not be decoded (``call.arguments_error``
    is set): the tool is not run, and the model is told why, as for arguments the tool refuses
    (a :class:`~seamkit.errors.ToolArgumentError`), and to call again with complete arguments."""
    problem = call.arguments_error or "the arguments could not be decoded"
    exc = ToolArgumentError(call.name, [f"(arguments): {problem}"])
    return ToolResult(
        call.id, call.name,
        f"{type(exc).__name__}: {exc}. The call was not run; call the tool again with complete JSON arguments.",
        is_error=True,
    )


def _result_of(call: ToolCall, value: Any) -> ToolResult:
    """The tool ran and returned ``value``: its result, or (a value that cannot be written as text)
    an error result saying that it ran and why its value cannot be shown, so the model does not
    take it for a failure and repeat the call."""
    try:
        if type(value) is ToolOutput:
            return ToolResult(call.id, call.name, render_tool_value(value.value), value.is_error,
                              images=tuple(value.images))
        return ToolResult(call.id, call.name, render_tool_value(value))
    except Exception as exc:  # the tool ran: whatever the rendering raised is not the tool's failure
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return ToolResult(
            call.id,
            call.name,
            f"The tool ran and returned a {type(value).__name__} value that cannot be shown as text ({why}). "
            "Do not repeat the call to see it.",
            is_error=True,
        )


class Invoker:
    """Runs one model binding's chat calls and a tool registry's tool calls through
    ``middlewares`` (outermost first). Chains are built once, here.

    ``run_middlewares``: those that also wrap whole runs (see :mod:`seamkit._agent.run_call`).
    ``stream_chat`` yields deltas; ``chat`` collects them; ``call_tool`` returns a
    :class:`~seamkit.values.ToolResult` and never raises for a tool's own failure (unknown tool,
    invalid arguments, a raising tool: an ``is_error`` result); ``call_effect`` (for the effect
    ledger) raises them instead, telling a call that never started from one whose outcome is
    unknown. ``asyncio.CancelledError`` propagates when the task running the call is being
    cancelled (``Task.cancelling()``); one that a tool raises while nobody cancels it is that
    tool's failure (an ``is_error`` result from ``call_tool``).
    """

    __slots__ = ("_chat", "_tool", "_tool_direct", "has_chat_middleware", "middlewares", "model",
                 "run_middlewares", "tools")

    def __init__(self, model: LLMPort, tools: ToolRegistry, middlewares: Sequence[Middleware] = ()) -> None:
        self.model = model
        self.tools = tools
        self.middlewares = tuple(middlewares)
        self._chat: Next = chain(self.middlewares, self._chat_terminal, kind="chat")
        self._tool: Next = chain(self.middlewares, self._tool_terminal, kind="tool")
        # With no tool middleware, tool calls skip the envelope and the async generator.
        self._tool_direct = self._tool == self._tool_terminal
        self.has_chat_middleware = self._chat != self._chat_terminal
        # the ones wrapping whole runs (kinds naming "run"): the agent run drives through them
        self.run_middlewares = tuple(mw for mw in self.middlewares if "run" in getattr(mw, "kinds", ()))

    def _chat_terminal(self, call: Call) -> AsyncIterator[Delta]:
        # checked here, before any middleware reads a delta: a provider yielding a dict or str is
        # a classified ProviderError naming it, not an AttributeError inside some middleware
        model = self.model
        return checked_stream(model.stream(call.request), model.provider, model.model)  # type: ignore[arg-type]

    async def _tool_terminal(self, call: Call) -> AsyncIterator[ToolResult]:
        req: ToolRequest = call.request  # type: ignore[assignment]
        tc = req.call
        t = self.tools.get(tc.name)
        if t is None:
            raise UnknownToolError(tc.name, self.tools.names)
        args = t.validate(tc.arguments)
        marker = _ENTERED.get()
        if marker is not None:
            marker.entered = True
        value = await t.invoke(args, call.ctx)
        yield _result_of(tc, value)

    def stream_chat(self, request: ChatRequest, ctx: RunContext, meta: FrozenDict = EMPTY) -> AsyncIterator[Delta]:
        """The deltas of one model call, through the chat chain."""
        return self._chat(Call("chat", request, ctx, meta, self.model))

    async def chat(self, request: ChatRequest, ctx: RunContext, meta: FrozenDict = EMPTY) -> LLMResult:
        """One model call, collected into an :class:`~seamkit.values.LLMResult`."""
        return await collect_result(self._chat(Call("chat", request, ctx, meta, self.model)),
                                    provider=self.model.provider, model=self.model.model)

    async def _run(self, call: ToolCall, ctx: RunContext, meta: FrozenDict, marker: _Entered | None) -> ToolResult:
        """The body ``call_tool`` and ``call_effect`` share: run ``call`` through the tool chain (or,
        with no tool middleware, straight), raising whatever fails. ``marker`` (``call_effect``'s)
        is set once the tool's own code is entered (by ``_tool_terminal`` through ``_ENTERED`` on
        the chain's path)."""
        t = self.tools.get(call.name)
        if self._tool_direct:
            if t is None:
                raise UnknownToolError(call.name, self.tools.names)
            args = t.validate(call.arguments)
            if marker is not None:
                marker.entered = True
            return _result_of(call, await t.invoke(args, ctx))
        req = ToolRequest(call, t.schema if t is not None else None)
        result: ToolResult = await collect_one(self._tool(Call("tool", req, ctx, meta)))
        return result

    async def call_tool(self, call: ToolCall, ctx: RunContext, meta: FrozenDict = EMPTY) -> ToolResult:
        """Run one tool call through the tool chain; failures become ``is_error`` results that
        name the problem so the model can correct itself. A call whose arguments could not be
        decoded (``arguments_error``) is answered without running anything
        (:func:`unusable_arguments_result`). Raises :class:`~seamkit.errors.InfrastructureUnavailable`
        (not the tool's answer: the run stops unfinished) and a
        :class:`~seamkit.errors.ToolUnavailable` with ``stop_run``. An exception that is not a
        :class:`~seamkit.errors.SeamkitError` is also added to the run's warnings
        (``ctx.warn``, :func:`tool_raised_warning`)."""
        if call.arguments_error is not None:
            return unusable_arguments_result(call)
        try:
            if self._tool_direct:  # _run's direct path, one coroutine fewer on every tool call
                t = self.tools.get(call.name)
                if t is None:
                    raise UnknownToolError(call.name, self.tools.names)
                return _result_of(call, await t.invoke(t.validate(call.arguments), ctx))
            return await self._run(call, ctx, meta, None)
        except asyncio.CancelledError as exc:
            if _cancelled_by_caller():
                raise  # the run (or whoever awaits this call) is being cancelled
            # nobody cancelled this task: the tool's own code raised it (an operation inside it was
            # cancelled), which is that tool's failure, not the run's cancellation
            return ToolResult(call.id, call.name, _self_cancelled(exc), is_error=True)
        except InfrastructureUnavailable:
            raise
        except ToolUnavailable as exc:
            if exc.stop_run:
                raise
            return ToolResult(call.id, call.name, f"{type(exc).__name__} ({exc.failure_class}): {exc}", is_error=True)
        except Exception as exc:
            # a seamkit error (a ToolError the tool raised to say it failed, invalid arguments, an
            # unknown tool) is expected; anything else is also kept as a run warning
            if not isinstance(exc, SeamkitError):
                ctx.warn(tool_raised_warning(call, exc))
            return ToolResult(call.id, call.name, f"{type(exc).__name__}: {exc}", is_error=True)

    async def call_effect(self, call: ToolCall, ctx: RunContext, meta: FrozenDict = EMPTY) -> ToolResult:
        """Run one side-effecting tool call through the tool chain, for the effect ledger: unlike
        :meth:`call_tool`, a failure raises, so the ledger records what is known about the effect.

        Raises :class:`~seamkit.errors.EffectNotApplied` (the original error as ``__cause__`` and
        in the message) when the call failed before the tool's own code was entered (unknown tool,
        invalid arguments, a middleware refusing the call): it certainly changed nothing. Once the
        tool was entered, its exception propagates unchanged (an ``EffectNotApplied`` it raises
        says it changed nothing; anything else leaves the outcome unknown)."""
        marker = _Entered()
        token = _ENTERED.set(marker)
        try:
            return await self._run(call, ctx, meta, marker)
        except asyncio.CancelledError as exc:
            if not marker.entered or _cancelled_by_caller():
                raise
            # as in call_tool: the tool's own code raised it while nobody cancelled this task; its
            # effect is unknown like any other exception from inside the tool
            raise ToolCancelledItself(_self_cancelled(exc)) from exc
        except Exception as exc:
            if marker.entered or isinstance(exc, EffectNotApplied):
                raise
            raise EffectNotApplied(f"{type(exc).__name__}: {exc}") from exc
        finally:
            _ENTERED.reset(token)
