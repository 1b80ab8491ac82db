"""The cache key of a model call: a SHA-256 of its canonical request.

**In the key** (everything that is sent to the model and can change its answer):
``provider`` and ``model`` (of the :class:`~seamkit._ports.LLMPort` the chain ends at), every
message (its role and every content block: text, images (their bytes as a SHA-256 digest, or
their URL), tool calls (id, name, arguments), tool results (call id, name, content, error flag,
images), reasoning (text, signature, provider, model)), the advertised ``tools`` (name,
description, parameters schema, side-effecting and idempotent flags), ``tool_choice``,
``output_schema``, ``temperature``, ``max_tokens``, ``seed``, ``stop`` and ``extra``.

**Not in the key**: ``metadata`` (for middlewares, never sent), the run id, scope, step and any
``Call.meta``; the provider's endpoint, credentials and other construction settings not exposed
as ``provider`` / ``model`` (two configurations of one provider and model that reach different
servers share answers: give them different ``namespace`` values). The store scope adds the
tenant (answers are never shared across tenants).

Mappings are encoded with sorted keys, so equal requests whose dicts were built in another order
have one key. ``1`` and ``1.0`` are different keys (JSON keeps them apart); ``Decimal`` values
are encoded as their exact text.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from seamkit.values import (
    ChatRequest,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCall,
    ToolResult,
    ToolSchema,
)

__all__ = ["KEY_VERSION", "canonical_request", "request_key"]

#: Bumped whenever the canonical form changes, so old entries are never read as new ones.
KEY_VERSION = 1


class UnkeyableRequest(TypeError):
    """A request holds a value the canonical form cannot encode (an object in ``extra``); such a
    call is not cached."""


def _value(v: Any) -> Any:
    if v is None or isinstance(v, str | bool | int | float):
        return v
    if isinstance(v, Decimal):
        return {"$decimal": str(v)}
    if isinstance(v, bytes | bytearray | memoryview):
        return {"$sha256": hashlib.sha256(bytes(v)).hexdigest()}
    if isinstance(v, Mapping):
        return {str(k): _value(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_value(x) for x in v]
    raise UnkeyableRequest(f"a {type(v).__name__} cannot be part of a cache key")


def _image(b: ImageBlock) -> dict[str, Any]:
    return {"type": "image", "media_type": b.media_type, "url": b.url,
            "data": None if b.data is None else hashlib.sha256(b.data).hexdigest()}


def _block(b: Any) -> dict[str, Any]:
    if type(b) is TextBlock:
        return {"type": "text", "text": b.text}
    if type(b) is ImageBlock:
        return _image(b)
    if type(b) is ToolCall:
        return {"type": "tool_call", "id": b.id, "name": b.name, "arguments": _value(b.arguments),
                "arguments_error": b.arguments_error}
    if type(b) is ToolResult:
        return {"type": "tool_result", "call_id": b.call_id, "name": b.name, "content": b.content,
                "is_error": b.is_error, "images": [_image(i) for i in b.images]}
    if type(b) is ReasoningBlock:
        return {"type": "reasoning", "text": b.text, "signature": b.signature, "provider": b.provider,
                "model": b.model}
    raise UnkeyableRequest(f"a {type(b).__name__} content block cannot be part of a cache key")


def _message(m: Message) -> dict[str, Any]:
    return {"role": m.role, "content": [_block(b) for b in m.content]}


def _tool(t: ToolSchema) -> dict[str, Any]:
    return {"name": t.name, "description": t.description, "parameters": _value(t.parameters),
            "side_effecting": t.side_effecting, "idempotent": t.idempotent}


def canonical_request(provider: str | None, model: str | None, request: ChatRequest) -> str:
    """The canonical JSON text of ``request`` sent to ``provider``/``model`` (see the module doc
    for what is in it). Raises :class:`UnkeyableRequest` (a ``TypeError``) for a value that has no
    canonical form."""
    doc = {
        "v": KEY_VERSION,
        "provider": provider,
        "model": model,
        "messages": [_message(m) for m in request.messages],
        "tools": [_tool(t) for t in request.tools],
        "tool_choice": request.tool_choice,
        "output_schema": _value(request.output_schema),
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "seed": request.seed,
        "stop": list(request.stop),
        "extra": _value(request.extra),
    }
    try:
        return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError) as exc:  # pragma: no cover - _value already refused it
        raise UnkeyableRequest(str(exc)) from None


def request_key(provider: str | None, model: str | None, request: ChatRequest) -> str:
    """The hex SHA-256 (64 characters) of :func:`canonical_request`. Raises
    :class:`UnkeyableRequest` like it."""
    digest = hashlib.sha256(canonical_request(provider, model, request).encode("utf-8")).digest()
    return base64.b16encode(digest).decode("ascii").lower()
