"""Shared helpers of the output_coerce tests: run the middleware over a scripted model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from seamkit._middleware import Call, chain
from seamkit.testing import ScriptedModel, ScriptedTurn, make_test_ctx
from seamkit.values import ChatRequest, Delta, Message, TextBlock, ToolSchema, freeze
from seamkit_output_coerce import OutputCoerceMiddleware

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "n": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "n"],
}
GOOD = {"name": "Ada Lovelace", "n": 1815, "tags": ["math", "engines"]}
BAD = {"name": "Ada Lovelace", "n": "eighteen fifteen"}


def request(schema: Any = SCHEMA, tools: tuple[ToolSchema, ...] = ()) -> ChatRequest:
    return ChatRequest((Message("user", (TextBlock("who?"),)),), tools,
                       output_schema=freeze(schema) if schema is not None else None)


def turn(value: Any, chunk: int = 5) -> ScriptedTurn:
    return ScriptedTurn(text=value if isinstance(value, str) else json.dumps(value), chunk_size=chunk)


async def run(mw: OutputCoerceMiddleware, turns: Sequence[Any], req: ChatRequest | None = None,
              ) -> tuple[list[Delta], ScriptedModel, list[Call]]:
    """The deltas ``mw`` yields for one chat call over ``turns``, the model, and every call that
    reached it."""
    model = ScriptedModel(list(turns))
    seen: list[Call] = []

    def terminal(call: Call) -> Any:
        seen.append(call)
        return model.stream(call.request)  # type: ignore[arg-type]

    run_chain = chain([mw], terminal, kind="chat")
    call = Call("chat", req if req is not None else request(), make_test_ctx(), model=model)
    return [d async for d in run_chain(call)], model, seen


def partials(deltas: Sequence[Delta]) -> list[Any]:
    return [d.partial_output for d in deltas if d.partial_output is not None]


def text(deltas: Sequence[Delta]) -> str:
    return "".join(d.text for d in deltas if d.text)


def warnings(deltas: Sequence[Delta]) -> list[str]:
    return [d.warning for d in deltas if d.warning]


def grows(a: Any, b: Any) -> bool:
    """``b`` extends ``a``: the same members and elements, each extended; strings by appending."""
    if isinstance(a, dict):
        return isinstance(b, dict) and set(a) <= set(b) and all(grows(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) <= len(b) and all(grows(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, str):
        return isinstance(b, str) and b.startswith(a)
    return type(a) is type(b) and a == b
