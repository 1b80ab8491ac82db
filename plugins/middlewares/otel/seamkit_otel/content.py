"""Captured content (``capture_content: true`` only) in the shapes of the OpenTelemetry GenAI
semantic conventions v1.41.0 ("Capturing instructions, inputs, and outputs" in
``docs/gen-ai/gen-ai-spans.md``; the JSON schemas ``gen-ai-input-messages.json``,
``gen-ai-output-messages.json`` and ``gen-ai-system-instructions.json``), serialized as JSON
strings (span attributes cannot hold structured values in the Python SDK; the conventions say to
record JSON text then).

Parts: text ``{"type": "text", "content"}``; a tool call ``{"type": "tool_call", "id", "name",
"arguments"}``; a tool result ``{"type": "tool_call_response", "id", "response"}``; reasoning
``{"type": "reasoning", "content"}``; an image by URL ``{"type": "uri", "modality": "image",
"mime_type", "uri"}``, inline ``{"type": "blob", "modality": "image", "mime_type", "content"}``
(base64).

Masking (what is still hidden when content is captured): every value under a key whose name looks
secret (:func:`seamkit.composition._models.is_secret_name`: ``api_key``, ``token``,
``password``...) in tool-call arguments, at any depth, becomes ``***``; then every credential the
:class:`Masker` knows (the models' API keys and headers from their ``secrets()``, the exporter's
header values) is replaced by ``***`` wherever it appears in the text, also when cut short
(:class:`seamkit._cli.scrub.TextScrubber`). Each captured text (a text part, a tool result, a
string in tool arguments, an inline image's base64) is cut to ``content_max_chars`` characters
(:func:`clip`). Lone surrogates, which UTF-8 (and so OTLP) cannot
carry, are written as ``\\uXXXX`` escapes (:func:`utf8`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from seamkit.plugin import MASK, TextScrubber, is_secret_name
from seamkit.values import ImageBlock, Message, ReasoningBlock, TextBlock, ToolCall, ToolResult, thaw

from seamkit_otel.config import CONTENT_MAX_CHARS

__all__ = ["MAX_CHARS", "Masker", "clip", "input_attributes", "mask_arguments", "output_messages", "tool_arguments",
           "utf8"]

# seamkit finish reasons -> the conventions' FinishReason enum (gen-ai-output-messages.json)
_FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool_call", "content_filter": "content_filter",
           "refusal": "content_filter", "error": "error"}


MAX_CHARS = CONTENT_MAX_CHARS  # see seamkit_otel.config


def clip(text: str, max_chars: int) -> str:
    """``text``, or its first ``max_chars`` characters and a note of how many were left out."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}...[{len(text) - max_chars} more characters]"


def mask_arguments(value: Any, secret: bool = False, max_chars: int | None = None) -> Any:
    """``value`` (JSON data) with every value under a secret-named key, at any depth, as ``***``
    (and each string cut to ``max_chars`` characters, when given)."""
    if isinstance(value, Mapping):
        return {str(k): mask_arguments(v, secret or (isinstance(k, str) and is_secret_name(k)), max_chars)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_arguments(v, secret, max_chars) for v in value]
    if secret and value is not None:
        return MASK
    if max_chars is not None and isinstance(value, str):
        return clip(value, max_chars)
    return value


def utf8(text: str) -> str:
    """``text`` with each lone surrogate (a file name decoded with ``surrogateescape``, a model's
    ``\\ud800`` escape) written as its ``\\uXXXX`` escape: OTLP carries UTF-8 only, and the
    exporter's encoder drops (and logs a traceback for) an attribute it cannot encode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


class Masker:
    """Replaces known credential values in captured text. :meth:`add` more as models show theirs."""

    def __init__(self, secrets: Iterable[str] = (), max_chars: int = MAX_CHARS) -> None:
        self.max_chars = max_chars  # of one captured text (see clip)
        self._secrets: frozenset[str] = frozenset()
        self._scrubber = TextScrubber(())
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        """Also mask ``secrets`` (values shorter than 4 characters are ignored, as the CLI does)."""
        new = frozenset(s for s in secrets if isinstance(s, str) and len(s) >= 4) - self._secrets
        if new:
            self._secrets = self._secrets | new
            self._scrubber = TextScrubber(self._secrets)

    def __call__(self, text: str) -> str:
        return utf8(self._scrubber.scrub(text))

    def __repr__(self) -> str:
        return f"Masker({len(self._secrets)} secrets)"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _image(b: ImageBlock, n: int) -> dict[str, Any]:
    if b.url is not None:
        return {"type": "uri", "modality": "image", "mime_type": b.media_type, "uri": clip(b.url, n)}
    data = base64.b64encode(b.data or b"").decode("ascii")
    return {"type": "blob", "modality": "image", "mime_type": b.media_type, "content": clip(data, n)}


def _part(b: Any, n: int) -> dict[str, Any] | None:
    t = type(b)
    if t is TextBlock:
        return {"type": "text", "content": clip(b.text, n)}
    if t is ToolCall:
        return {"type": "tool_call", "id": b.id, "name": b.name,
                "arguments": mask_arguments(thaw(b.arguments), max_chars=n)}
    if t is ToolResult:
        return {"type": "tool_call_response", "id": b.call_id, "response": clip(b.content, n)}
    if t is ReasoningBlock:
        return {"type": "reasoning", "content": clip(b.text, n)}
    if t is ImageBlock:
        return _image(b, n)
    return None


def _message(m: Message, n: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for b in m.content:
        p = _part(b, n)
        if p is not None:
            parts.append(p)
        if type(b) is ToolResult:
            parts.extend(_image(i, n) for i in b.images)
    return {"role": m.role, "parts": parts}


def input_attributes(messages: Sequence[Message], mask: Masker) -> dict[str, str]:
    """``gen_ai.system_instructions`` (the leading system messages' text parts, which seamkit's
    providers send as the API's instructions) and ``gen_ai.input.messages`` (the rest, in order),
    as masked JSON text; a key is left out when it would be empty."""
    i = 0
    instructions: list[dict[str, Any]] = []
    while i < len(messages) and messages[i].role == "system":
        instructions.extend(p for p in _message(messages[i], mask.max_chars)["parts"])
        i += 1
    out: dict[str, str] = {}
    if instructions:
        out["gen_ai.system_instructions"] = mask(_dumps(instructions))
    rest = [_message(m, mask.max_chars) for m in messages[i:]]
    if rest:
        out["gen_ai.input.messages"] = mask(_dumps(rest))
    return out


def output_messages(message: Message, finish_reason: str | None, mask: Masker) -> str:
    """``gen_ai.output.messages``: the one answer (seamkit asks for one choice), masked JSON text."""
    doc = _message(message, mask.max_chars)
    doc["finish_reason"] = _FINISH.get(finish_reason or "", finish_reason or "error")
    return mask(_dumps([doc]))


def tool_arguments(arguments: Any, mask: Masker) -> str:
    """``gen_ai.tool.call.arguments``: the decoded arguments, secret-named values masked, as JSON."""
    return mask(_dumps(mask_arguments(thaw(arguments), max_chars=mask.max_chars)))
