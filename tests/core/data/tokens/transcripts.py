"""The token-estimate test transcripts (the ``*.json`` files next to this module) as requests.

Each file holds ``description``, ``tools`` (name, description, parameters), ``output_schema`` and
``messages``: a role and content blocks typed ``text`` / ``tool_call`` (id, name, arguments) /
``tool_result`` (call_id, name, content, is_error) / ``reasoning`` (text). ``big_tool_args`` is
built here instead of stored: one ``write_file`` call whose ``content`` argument is 324,000
characters of source code (``_code_sample.txt`` repeated), the issue's oversized transcript;
``big_blob_args`` is the degenerate one of the first test: a ``save`` call whose ``blob`` is
``"x" * 324000``.
``gemma_counts.json`` records what the Gemma 3 tokenizer of the bundled GGUF gives for each
transcript, rendered the way :func:`seamkit._tokens.estimate_tokens` counts it (refreshed and
checked by tests/plugins/providers/llamacpp/test_llamacpp_tokens_accuracy.py).

Loaded by file path (``importlib``) from the tests, which are not a package.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seamkit.values import (
    ChatRequest,
    ContentBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCall,
    ToolResult,
    ToolSchema,
)

HERE = Path(__file__).resolve().parent
BIG_CHARS = 324_000
COUNTS_FILE = HERE / "gemma_counts.json"


def names() -> list[str]:
    """Every transcript name: the stored files, then ``big_tool_args`` and ``big_blob_args``."""
    stored = sorted(p.stem for p in HERE.glob("*.json") if p.name != COUNTS_FILE.name)
    return [*stored, "big_tool_args", "big_blob_args"]


def _block(raw: dict[str, Any]) -> ContentBlock:
    kind = raw["type"]
    if kind == "text":
        return TextBlock(raw["text"])
    if kind == "tool_call":
        return ToolCall(raw["id"], raw["name"], raw["arguments"])
    if kind == "tool_result":
        return ToolResult(raw["call_id"], raw["name"], raw["content"], bool(raw.get("is_error", False)))
    if kind == "reasoning":
        return ReasoningBlock(raw["text"])
    raise ValueError(f"unknown block type {kind!r}")


def big_content() -> str:
    """Exactly ``BIG_CHARS`` characters of source code."""
    sample = (HERE / "_code_sample.txt").read_text(encoding="utf-8")
    return (sample * (BIG_CHARS // len(sample) + 1))[:BIG_CHARS]


def load(name: str) -> ChatRequest:
    """The transcript ``name`` as a request (raises FileNotFoundError for an unknown name)."""
    if name == "big_tool_args":
        arguments = {"path": "src/jobs.py", "content": big_content()}
        return ChatRequest(
            (
                Message.user("Write the job queue module to src/jobs.py."),
                Message("assistant", (ToolCall("c1", "write_file", arguments),)),
            )
        )
    if name == "big_blob_args":
        return ChatRequest(
            (Message.user("hi"), Message("assistant", (ToolCall("c1", "save", {"blob": "x" * BIG_CHARS}),)))
        )
    raw = json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))
    messages = tuple(Message(m["role"], tuple(_block(b) for b in m["content"])) for m in raw["messages"])
    tools = tuple(ToolSchema(t["name"], t["description"], t["parameters"], False) for t in raw["tools"])
    return ChatRequest(messages, tools=tools, output_schema=raw["output_schema"])


def gemma_counts() -> dict[str, int]:
    """The recorded Gemma token count of each transcript (``estimate_tokens`` with the Gemma
    tokenizer plugged in)."""
    data: dict[str, int] = json.loads(COUNTS_FILE.read_text(encoding="utf-8"))
    return data
