"""Turning a stream of :class:`~seamkit.values.Delta` into one :class:`~seamkit.values.LLMResult`.

``LLMPort.chat()`` is defined as ``collect_result(self.stream(request))``. Tool-call fragments are
joined per call: a fragment with a new ``id`` starts a new call even on an index already in use
(some servers send parallel calls all on index 0); a fragment without an ``id`` continues the
latest call on its index. Calls that never received an id get a unique synthetic one.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from seamkit._frozen import FrozenDict
from seamkit.errors import FailureClass, ProviderError, SeamkitError
from seamkit.values import (
    EMPTY,
    ContentBlock,
    Delta,
    FinishReason,
    LLMResult,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCall,
    ToolCallDelta,
    Usage,
    freeze,
)

_ONE_REQUEST = Usage(requests=1)
_new_message: Callable[..., Message] = Message.__fast_new__  # type: ignore[attr-defined]
_new_llm_result: Callable[..., LLMResult] = LLMResult.__fast_new__  # type: ignore[attr-defined]
_new_tool_call: Callable[..., ToolCall] = ToolCall.__fast_new__  # type: ignore[attr-defined]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")  # NaN/Infinity: not JSON (RFC 8259 section 6)


_scan_frozen = json.JSONDecoder(  # type: ignore[attr-defined]
    object_pairs_hook=FrozenDict, parse_constant=_no_constant
).scan_once


def _decode_frozen(raw: str) -> Any:
    """``json.loads`` for stripped text with objects built as FrozenDicts, minus the Python-level
    wrapper frames (the C scanner directly). Raises ``json.JSONDecodeError``."""
    try:
        value, end = _scan_frozen(raw, 0)
    except StopIteration as exc:
        raise json.JSONDecodeError("Expecting value", raw, exc.value) from None
    if end != len(raw):
        raise json.JSONDecodeError("Extra data", raw, end)
    return value

__all__ = ["Accumulator", "checked_stream", "collect_result", "not_a_delta", "stream_failed"]


def _a(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def not_a_delta(item: Any, provider: str | None, model: str | None) -> ProviderError:
    """The error for an item of a model stream that is not a :class:`~seamkit.values.Delta` (a
    dict, a str, an SDK's own chunk): a :class:`~seamkit.errors.ProviderError` of class
    ``unknown`` (permanent, never retried) naming the provider and the item's type, never its
    content (which may hold anything)."""
    where = f" (model {model})" if model else ""
    return ProviderError(
        f"stream(){where} yielded {_a(type(item).__name__)} where a seamkit.values.Delta belongs; the "
        "provider is broken: its stream() must yield Delta objects", FailureClass.UNKNOWN, provider=provider)


#: The most characters of a provider's own exception text a :func:`stream_failed` message quotes.
_MAX_CAUSE_CHARS = 500


def stream_failed(exc: Exception, provider: str | None, model: str | None) -> ProviderError:
    """The error for an exception that is not seamkit's (a ``KeyError`` from a wire format the
    provider did not expect, a ``TypeError`` from its own bug) raised by a provider's stream: a
    :class:`~seamkit.errors.ProviderError` of class ``unknown`` (permanent, never retried: nothing
    says a second try would parse better) naming the provider, the model and the exception (type
    and text, cut to :data:`_MAX_CAUSE_CHARS`). The caller raises it ``from exc``, so the
    original stays the ``__cause__``."""
    where = f" (model {model})" if model else ""
    text = str(exc)
    if len(text) > _MAX_CAUSE_CHARS:
        text = text[:_MAX_CAUSE_CHARS] + "…"
    detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return ProviderError(f"stream(){where} raised {detail}", FailureClass.UNKNOWN, provider=provider)


async def checked_stream(stream: Any, provider: str | None, model: str | None = None) -> AsyncIterator[Delta]:
    """``stream`` (what a provider's ``stream()`` returned), item by item, each checked to be a
    :class:`~seamkit.values.Delta`. Raises :class:`~seamkit.errors.ProviderError` (class
    ``unknown``, naming ``provider`` and ``model``) when ``stream`` is not an async iterator (a
    coroutine from an ``async def`` without ``yield``, a list...), yields anything else, or raises
    an exception that is not a :class:`~seamkit.errors.SeamkitError` (:func:`stream_failed`; the
    original chained as ``__cause__``). Closing this stream closes ``stream``."""
    if not hasattr(stream, "__aiter__"):
        close = getattr(stream, "close", None)
        if type(stream).__name__ == "coroutine" and close is not None:
            close()  # never awaited: no "coroutine was never awaited" warning on top of this error
        where = f" (model {model})" if model else ""
        raise ProviderError(
            f"stream(){where} returned {_a(type(stream).__name__)}, not an async iterator of Delta; the provider "
            "is broken: write stream() as an async generator (async def ... yield Delta(...))",
            FailureClass.UNKNOWN, provider=provider)
    try:
        async for d in stream:
            if type(d) is not Delta and not isinstance(d, Delta):
                raise not_a_delta(d, provider, model)
            yield d
    except SeamkitError:
        raise
    except Exception as exc:
        raise stream_failed(exc, provider, model) from exc
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()


class _PendingCall:
    __slots__ = ("id", "name", "parts")

    def __init__(self, id: str | None, name: str | None) -> None:
        self.id = id
        self.name = name
        self.parts: list[str] = []


class Accumulator:
    """Folds deltas one at a time (``add``) and builds the result (``result``).

    ``provider`` and ``model`` label the result. A tool call whose joined arguments are not a
    usable JSON object (cut off at max_tokens, a runaway argument, ``NaN``, nested too deeply, an
    array) does not fail the result: it gets empty ``arguments`` and an ``arguments_error``
    saying why (with the length of the arguments when ``finish_reason`` is ``length``), and the
    agent loop answers it with an error result instead of running it.
    Raises :class:`~seamkit.errors.ProviderError` (class ``unknown``) from ``add()`` for an item
    that is not a :class:`~seamkit.values.Delta` (see :func:`not_a_delta`).
    """

    __slots__ = (
        "_calls",
        "_latest",
        "_reasoning",
        "_signature",
        "_text",
        "finish_reason",
        "model",
        "provider",
        "raw_usage",
        "usage",
        "warnings",
    )

    def __init__(self, provider: str | None = None, model: str | None = None) -> None:
        # Lists are made on first use: most turns are text only, or one tool call.
        self._text: list[str] | None = None
        self._reasoning: list[str] | None = None
        self._signature: str | None = None
        self._calls: list[_PendingCall] | None = None
        self._latest: dict[int, _PendingCall] | None = None
        self.usage: Usage | None = None
        self.raw_usage: FrozenDict | None = None
        self.finish_reason: FinishReason | None = None
        self.model = model
        self.provider = provider
        self.warnings: list[str] | None = None

    def add(self, d: Delta) -> None:
        if type(d) is not Delta and not isinstance(d, Delta):
            raise not_a_delta(d, self.provider, self.model)
        text = d.text
        if text:
            if self._text is None:
                self._text = [text]
            else:
                self._text.append(text)
            if d.usage is None and d.tool_call is None and d.finish_reason is None:
                return  # the common case while streaming: a piece of text and nothing else
        if d.reasoning:
            if self._reasoning is None:
                self._reasoning = [d.reasoning]
            else:
                self._reasoning.append(d.reasoning)
        if d.reasoning_signature:
            self._signature = d.reasoning_signature
        tc = d.tool_call
        if tc is not None:
            self._add_call(tc)
        if d.usage is not None:
            self.usage = d.usage
        if d.raw_usage is not None:
            self.raw_usage = d.raw_usage
        if d.finish_reason is not None:
            self.finish_reason = d.finish_reason
        if d.model is not None:
            self.model = d.model
        if d.warning is not None:
            if self.warnings is None:
                self.warnings = [d.warning]
            else:
                self.warnings.append(d.warning)

    def _add_call(self, tc: ToolCallDelta) -> None:
        if self._calls is None:
            self._calls = []
            self._latest = {}
        latest = self._latest
        assert latest is not None
        cur = latest.get(tc.index)
        if cur is None or (tc.id is not None and cur.id is not None and tc.id != cur.id):
            cur = _PendingCall(tc.id, tc.name)
            self._calls.append(cur)
            latest[tc.index] = cur
        else:
            if tc.id is not None and cur.id is None:
                cur.id = tc.id
            if tc.name and not cur.name:
                cur.name = tc.name
        if tc.arguments:
            cur.parts.append(tc.arguments)

    def result(self) -> LLMResult:
        blocks: list[ContentBlock] = []
        if self._reasoning is not None or self._signature:
            blocks.append(
                ReasoningBlock("".join(self._reasoning or ()), self._signature, self.provider, self.model)
            )
        if self._text is not None:
            blocks.append(TextBlock(self._text[0] if len(self._text) == 1 else "".join(self._text)))
        calls = self._calls
        if calls is not None:
            self._build_calls(calls, blocks)
        finish = self.finish_reason or ("tool_calls" if calls else "stop")
        # both built without their checks: the role is known and the blocks a tuple; LLMResult has
        # none (every turn of every run ends here)
        return _new_llm_result(
            _new_message("assistant", tuple(blocks)),
            self.usage if self.usage is not None else _ONE_REQUEST,
            finish,
            self.model,
            tuple(self.warnings) if self.warnings is not None else (),
            self.raw_usage,
        )

    def _build_calls(self, calls: list[_PendingCall], blocks: list[ContentBlock]) -> None:
        # ids seen, to make a repeated one unique: none to compare with in a turn of one call
        seen: set[str] | None = set() if len(calls) > 1 else None
        for call in calls:
            parts = call.parts
            raw = (parts[0] if len(parts) == 1 else "".join(parts)).strip() or "{}"
            args, problem = _decode_arguments(raw)
            cid = call.id
            if cid is None or (seen is not None and cid in seen):
                import uuid  # here: most providers send ids, and uuid costs start-up 2.5 ms

                cid = f"call_{uuid.uuid4().hex[:24]}"
            if seen is not None:
                seen.add(cid)
            if problem is None:
                if type(args) is FrozenDict:  # what ToolCall's coercion would keep as it is
                    blocks.append(_new_tool_call(cid, call.name or "", args, "tool_call", None))
                else:
                    blocks.append(ToolCall(cid, call.name or "", args))
                continue
            if self.finish_reason == "length":
                problem += (f"; the answer was cut off at max_tokens (finish_reason length) after {len(raw)} "
                            "characters of arguments")
            blocks.append(ToolCall(cid, call.name or "", EMPTY, arguments_error=problem))


def _decode_arguments(raw: str) -> tuple[FrozenDict, str | None]:
    """``(arguments, None)``, or ``(EMPTY, why they cannot be used)``."""
    try:
        # Objects decode straight into FrozenDicts; only arrays need a freezing pass.
        args = _decode_frozen(raw) if "[" not in raw else freeze(json.loads(raw, parse_constant=_no_constant))
    except json.JSONDecodeError as exc:
        return EMPTY, f"the arguments are not valid JSON ({exc.msg}, at character {exc.pos})"
    except (ValueError, RecursionError) as exc:  # NaN, huge integers, deep nesting
        what = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return EMPTY, f"the arguments are not usable JSON: {what}"
    if not isinstance(args, FrozenDict):
        kind = ("null" if args is None else "a string" if isinstance(args, str) else
                "true or false" if isinstance(args, bool) else "a number" if isinstance(args, (int, float)) else
                "an array")
        return EMPTY, f"the arguments are not a JSON object but {kind}"
    return args, None


async def collect_result(
    stream: AsyncIterator[Delta] | Iterable[Delta], *, provider: str | None = None, model: str | None = None
) -> LLMResult:
    """Collect a delta stream (async or sync iterable) into an :class:`LLMResult`."""
    acc = Accumulator(provider, model)
    if hasattr(stream, "__aiter__"):
        async for d in stream:
            acc.add(d)
    else:
        for d in stream:
            acc.add(d)
    return acc.result()
