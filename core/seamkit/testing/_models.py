"""Fake models: :class:`ScriptedModel` and :class:`SchemaDrivenModel`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from seamkit._accumulate import collect_result
from seamkit.errors import FailureClass, ProviderError
from seamkit.values import ChatRequest, Delta, LLMResult, ToolCallDelta, Usage

__all__ = ["ScriptedModel", "ScriptedTurn", "SchemaDrivenModel", "example_for_schema"]

_FREE = Usage(requests=1, cost=Decimal(0), cost_source="local")


@dataclass(frozen=True)
class ScriptedTurn:
    """One scripted model turn: ``text`` (streamed in ``chunk_size``-character pieces),
    ``tool_calls`` (each ``{"name": ..., "arguments": {...}, "id"?: ...}``), ``reasoning``,
    ``usage`` and a ``delay`` in seconds before the first delta. ``error``: raise this
    :class:`~seamkit.errors.ProviderError` instead of answering."""

    text: str = ""
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    reasoning: str = ""
    usage: Usage = _FREE
    delay: float = 0.0
    error: ProviderError | None = None
    chunk_size: int = 16

    def deltas(self, turn_index: int) -> tuple[Delta, ...]:
        out: list[Delta] = []
        if self.reasoning:
            out.append(Delta(reasoning=self.reasoning))
        t = self.text
        n = max(1, self.chunk_size)
        for i in range(0, len(t), n):
            out.append(Delta(text=t[i : i + n]))
        for i, call in enumerate(self.tool_calls):
            cid = call.get("id") or f"call_{turn_index}_{i}"
            out.append(
                Delta(tool_call=ToolCallDelta(i, cid, call["name"], json.dumps(dict(call.get("arguments", {})))))
            )
        out.append(Delta(usage=self.usage, finish_reason="tool_calls" if self.tool_calls else "stop",
                         model="scripted"))
        return tuple(out)


Turn = str | ScriptedTurn | Mapping[str, Any] | ProviderError | Callable[[ChatRequest], Any]


def _as_turn(turn: Any) -> ScriptedTurn | Callable[[ChatRequest], Any]:
    if isinstance(turn, ScriptedTurn):
        return turn
    if isinstance(turn, str):
        return ScriptedTurn(text=turn)
    if isinstance(turn, ProviderError):
        return ScriptedTurn(error=turn)
    if isinstance(turn, Mapping):
        known = {"text", "tool_calls", "reasoning", "usage", "delay", "chunk_size"}
        extra = set(turn) - known
        if extra:
            raise ValueError(f"unknown scripted-turn keys {sorted(extra)}; use {sorted(known)}")
        kw = dict(turn)
        kw["tool_calls"] = tuple(kw.get("tool_calls") or ())
        for c in kw["tool_calls"]:
            if "name" not in c:
                raise ValueError("a scripted tool call needs a 'name'")
        return ScriptedTurn(**kw)
    if callable(turn):
        return turn  # type: ignore[no-any-return]
    raise TypeError(f"cannot script a turn from {type(turn).__name__}")


class ScriptedModel:
    """An :class:`~seamkit._ports.LLMPort` that plays back ``turns`` in order.

    A turn is a ``str`` (text), a :class:`ScriptedTurn`, a mapping of its fields, a
    :class:`~seamkit.errors.ProviderError` (raised), or a callable ``(request) -> turn`` computing
    one. ``requests`` records every :class:`~seamkit.values.ChatRequest` received. With
    ``repeat=True`` the script starts over when it ends; otherwise a call past the end raises
    :class:`~seamkit.errors.ProviderError` (``invalid_request``). With ``follow_transcript=True``
    the turn played is picked by the number of assistant messages in the request, not by how many
    calls this object has seen, so a run resumed in another process continues its script.
    """

    provider = "scripted"

    def __init__(self, turns: Sequence[Turn], *, model: str = "scripted", repeat: bool = False,
                 record: bool = True, follow_transcript: bool = False) -> None:
        self.model = model
        self._turns = [_as_turn(t) for t in turns]
        self._deltas = [t.deltas(i) if isinstance(t, ScriptedTurn) else None for i, t in enumerate(self._turns)]
        self.repeat = repeat
        self.record = record
        self.requests: list[ChatRequest] = []
        self._next = 0
        self._calls = 0
        self.follow_transcript = follow_transcript

    @property
    def calls(self) -> int:
        """How many model calls (requests) this object received, including ones answered with a
        scripted error or refused because the script had no turn left. With
        ``follow_transcript=True`` too: the turn played follows the transcript, the count does not."""
        return self._calls

    def _take(self) -> int:
        i = self._next
        n = len(self._turns)
        if i >= n and (not self.repeat or n == 0):
            raise ProviderError(f"the script has no turn left (it has {n})", FailureClass.INVALID_REQUEST,
                                provider="scripted")
        self._next = i + 1
        return i % n if n else 0

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        self._calls += 1
        if self.record:
            self.requests.append(request)
        if self.follow_transcript:
            self._next = sum(1 for m in request.messages if m.role == "assistant")
        i = self._take()
        turn = self._turns[i]
        deltas = self._deltas[i]
        if deltas is None:
            computed = _as_turn(turn(request))  # type: ignore[operator]
            if not isinstance(computed, ScriptedTurn):
                raise TypeError("a callable turn must return a turn, not another callable")
            turn, deltas = computed, computed.deltas(i)
        assert isinstance(turn, ScriptedTurn)
        if turn.delay:
            await asyncio.sleep(turn.delay)
        if turn.error is not None:
            raise turn.error
        for d in deltas:
            yield d

    async def chat(self, request: ChatRequest) -> LLMResult:
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)


def example_for_schema(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """A deterministic value valid for a JSON Schema (the subset tools and outputs use: ``type``,
    ``properties``/``required``, ``items``, ``enum``, ``const``, ``anyOf``/``oneOf``, ``$ref`` to
    ``$defs``, ``minimum``, ``minLength``, ``minItems``, ``default``)."""
    root = root if root is not None else schema
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            raise ValueError(f"only local $ref supported, got {ref!r}")
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        return example_for_schema(target, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return example_for_schema(options[0], root)
    if "allOf" in schema:
        return example_for_schema(schema["allOf"][0], root)
    t = schema.get("type", "object")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t == "object":
        props = schema.get("properties", {})
        required = schema.get("required", list(props))
        return {k: example_for_schema(props[k], root) for k in required if k in props}
    if t == "array":
        n = schema.get("minItems", 1)
        items = schema.get("items", {"type": "string"})
        return [example_for_schema(items, root) for _ in range(n)]
    if t == "string":
        return "x" * max(1, schema.get("minLength", 1))
    if t == "integer":
        lo = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        return int(lo)
    if t == "number":
        lo = schema.get("minimum", 0)
        return float(lo) + (1.0 if "exclusiveMinimum" in schema else 0.0)
    if t == "boolean":
        return True
    return None


class SchemaDrivenModel:
    """An :class:`~seamkit._ports.LLMPort` that exercises an agent's tools: on the first call it
    calls every advertised tool once, with arguments built from its schema
    (:func:`example_for_schema`); afterwards it answers with ``final`` text, or with an example of
    the request's output schema when there is one. ``requests`` records every request."""

    provider = "schema-driven"

    def __init__(self, *, final: str = "done", model: str = "schema-driven") -> None:
        self.model = model
        self.final = final
        self.requests: list[ChatRequest] = []

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        self.requests.append(request)
        called = any(m.role == "tool" for m in request.messages)
        if request.tools and not called and request.tool_choice != "none":
            for i, t in enumerate(request.tools):
                args = example_for_schema(t.parameters)
                yield Delta(tool_call=ToolCallDelta(i, f"call_sd_{i}", t.name, json.dumps(args)))
            yield Delta(usage=_FREE, finish_reason="tool_calls", model=self.model)
            return
        if request.output_schema is not None:
            yield Delta(text=json.dumps(example_for_schema(request.output_schema)))
        else:
            yield Delta(text=self.final)
        yield Delta(usage=_FREE, finish_reason="stop", model=self.model)

    async def chat(self, request: ChatRequest) -> LLMResult:
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)
