"""Token estimates for requests, before anything is sent (budget reservations, compaction).

The estimate counts everything a provider bills as input: message text, tool-call names and
arguments, tool results, reasoning text, the advertised tool schemas and the output schema, plus
a fixed cost per image and a small overhead per message. Text is counted as one token per four
UTF-8 bytes (OpenAI's rule of thumb for English, "What are tokens and how to count them").
"""

from __future__ import annotations

import json

from seamkit.values import ChatRequest, ImageBlock, Message, ReasoningBlock, TextBlock, ToolCall, ToolResult, thaw

__all__ = ["estimate_tokens", "estimate_message_tokens", "IMAGE_TOKENS", "MESSAGE_OVERHEAD"]

IMAGE_TOKENS = 1600
"""Fixed estimate per image: Anthropic's vision guide puts an image of about 1.15 megapixels (the
largest sent without resizing) at about 1,600 tokens; OpenAI's high-detail images cost less."""

MESSAGE_OVERHEAD = 4
"""Role markers and separators per message (OpenAI's cookbook counts 3-4 tokens per message)."""


def _text_tokens(text: str) -> int:
    if not text:
        return 0
    return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4


def estimate_message_tokens(message: Message) -> int:
    """Estimated input tokens of one message (tokens)."""
    n = MESSAGE_OVERHEAD
    for b in message.content:
        t = type(b)
        if t is TextBlock:
            n += _text_tokens(b.text)  # type: ignore[union-attr]
        elif t is ToolCall:
            n += _text_tokens(b.name) + _text_tokens(json.dumps(thaw(b.arguments), ensure_ascii=False)) + 3  # type: ignore[union-attr]
        elif t is ToolResult:
            n += _text_tokens(b.content) + 3  # type: ignore[union-attr]
        elif t is ReasoningBlock:
            n += _text_tokens(b.text)  # type: ignore[union-attr]
        elif t is ImageBlock:
            n += IMAGE_TOKENS
    return n


def estimate_tokens(request: ChatRequest) -> int:
    """Estimated input tokens of ``request`` (tokens): every message, the tool schemas and the
    output schema. Output tokens are not included (see ``request.max_tokens``)."""
    n = 3  # the reply's priming tokens
    for m in request.messages:
        n += estimate_message_tokens(m)
    for t in request.tools:
        n += _text_tokens(t.name) + _text_tokens(t.description)
        n += _text_tokens(json.dumps(thaw(t.parameters), ensure_ascii=False)) + 8
    if request.output_schema is not None:
        n += _text_tokens(json.dumps(thaw(request.output_schema), ensure_ascii=False))
    return n
