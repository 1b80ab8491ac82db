"""The request token estimate counts everything a provider bills as input."""

from __future__ import annotations

from seamkit.tokens import IMAGE_TOKENS, estimate_tokens
from seamkit.values import ChatRequest, ImageBlock, Message, ToolCall, ToolResult, ToolSchema


def test_tool_arguments_count_not_only_message_text() -> None:
    big = {"blob": "x" * 324_000}
    req = ChatRequest((Message.user("hi"), Message("assistant", (ToolCall("c1", "save", big),))))
    n = estimate_tokens(req)
    assert 80_000 <= n <= 82_000  # 324,000 characters at about four per token


def test_tool_results_images_and_schemas_add_up() -> None:
    base = ChatRequest((Message.user("hello there"),))
    with_result = base.replace(messages=(*base.messages, Message("tool", (ToolResult("c1", "t", "y" * 400),))))
    assert estimate_tokens(with_result) - estimate_tokens(base) >= 100
    with_image = base.replace(messages=(Message("user", (ImageBlock(url="https://x.invalid/a.png"),)),))
    assert estimate_tokens(with_image) >= IMAGE_TOKENS
    schema = ToolSchema("lookup", "Look a thing up", {"type": "object", "properties": {"q": {"type": "string"}}}, False)
    assert estimate_tokens(base.replace(tools=(schema,))) > estimate_tokens(base)
    assert estimate_tokens(base.replace(output_schema={"type": "object"})) > estimate_tokens(base)
