"""The Gemma turn format, rendered explicitly (the bundled GGUF carries no chat template).

A prompt is a list of :class:`Segment`: control markers (``<start_of_turn>``, ``<end_of_turn>``)
are *special* segments, tokenized as Gemma's control tokens; every piece of message content is a
plain segment, tokenized as text, so content that happens to contain ``<end_of_turn>`` cannot
forge a turn. The rendered conversation looks like this::

    <start_of_turn>user
    {system text}

    {tool instructions, when tools are offered}

    {output instructions, when an output schema is set}

    {first user message}<end_of_turn>
    <start_of_turn>model
    {assistant text}
    {"name": "calculator", "arguments": {"expression": "17 * 23"}}<end_of_turn>
    <start_of_turn>user
    Tool result (calculator): 391<end_of_turn>
    <start_of_turn>model

Rules:

- Gemma has no system role: every system message's text is joined and prepended, with the tool
  and output instructions, to the first user turn (a user turn holding only that preamble is
  opened when the conversation starts otherwise).
- Roles map ``user`` → ``user``, ``assistant`` → ``model``, ``tool`` → ``user``; consecutive turns
  of one Gemma role are merged, separated by a blank line.
- An assistant's tool call is rendered as the JSON object the model itself emits for one:
  ``{"name": <tool>, "arguments": {...}}``, one per line after the assistant's text.
- A tool result is ``Tool result (<tool>): <content>``; a failed one is
  ``Tool error (<tool>): <content>``.
- Images cannot be shown to this text model; each is replaced by ``[image omitted]`` (the
  provider reports a warning). The images a tool returned with its result are named after the
  result's text with the note of :mod:`seamkit._tool_images` (``[1 image left out (image/png,
  2,048 bytes): this model does not take images]``; the provider reports a warning), so the model
  knows the result had more than it sees. Reasoning blocks are not sent back.
- The prompt ends with an open ``<start_of_turn>model`` turn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from seamkit.plugin import text_with_images_note
from seamkit.values import ChatRequest, ImageBlock, Message, TextBlock, ToolCall, ToolResult, ToolSchema, thaw

__all__ = [
    "START",
    "END",
    "Segment",
    "render",
    "as_text",
    "tool_call_json",
    "tool_instructions",
    "output_instructions",
]

START = "<start_of_turn>"
END = "<end_of_turn>"


@dataclass(frozen=True, slots=True)
class Segment:
    """A piece of a prompt: ``text``, and whether it is a ``special`` control marker."""

    text: str
    special: bool = False


def tool_call_json(name: str, arguments: Mapping[str, Any]) -> str:
    """The JSON text of one tool call as the model writes it: ``{"name": ..., "arguments": {...}}``."""
    return json.dumps({"name": name, "arguments": thaw(arguments)}, ensure_ascii=False)


def _compact(schema: Any) -> str:
    return json.dumps(thaw(schema), ensure_ascii=False, separators=(",", ":"))


def tool_instructions(tools: Sequence[ToolSchema], choice: str) -> str:
    """What the model is told about the ``tools`` it may call (``choice`` as in ``ChatRequest``)."""
    offered = [t for t in tools if choice in ("auto", "required") or t.name == choice]
    lines = ["You can use these tools:"]
    for t in offered:
        desc = " ".join(t.description.split()) or "(no description)"
        lines.append(f"- {t.name}: {desc} Arguments (JSON Schema): {_compact(t.parameters)}")
    lines.append('To use a tool, reply with only a JSON object: {"name": <tool name>, "arguments": {...}}.')
    if choice == "required":
        lines.append("Call one of these tools now.")
    elif choice not in ("auto", "none"):
        lines.append(f"Call the tool {choice} now.")
    return "\n".join(lines)


def output_instructions(schema: Mapping[str, Any]) -> str:
    """What the model is told about the shape of its final answer."""
    return f"Give the final answer as a JSON object matching this JSON Schema: {_compact(schema)}"


def _content_text(msg: Message) -> str:
    parts: list[str] = []
    calls: list[str] = []
    for block in msg.content:
        if type(block) is TextBlock:
            parts.append(block.text)
        elif type(block) is ImageBlock:
            parts.append("[image omitted]")
        elif type(block) is ToolCall:
            calls.append(tool_call_json(block.name, block.arguments))
        elif type(block) is ToolResult:
            label = "Tool error" if block.is_error else "Tool result"
            parts.append(f"{label} ({block.name}): {text_with_images_note(block)}")
    text = "\n\n".join(p for p in parts if p) if msg.role == "tool" else "".join(parts)
    if calls:
        text = "\n".join([text, *calls]) if text else "\n".join(calls)
    return text


def render(request: ChatRequest) -> list[Segment]:
    """The Gemma prompt for ``request``, as segments (see the module doc for the format)."""
    preamble: list[str] = [m.text for m in request.messages if m.role == "system" and m.text]
    if request.tools and request.tool_choice != "none":
        preamble.append(tool_instructions(request.tools, request.tool_choice))
    if request.output_schema is not None:
        preamble.append(output_instructions(request.output_schema))

    turns: list[tuple[str, list[str]]] = []
    for msg in request.messages:
        if msg.role == "system":
            continue
        role = "model" if msg.role == "assistant" else "user"
        text = _content_text(msg)
        if turns and turns[-1][0] == role:
            turns[-1][1].append(text)
        else:
            turns.append((role, [text]))

    head = "\n\n".join(preamble)
    if head:
        if turns and turns[0][0] == "user":
            turns[0][1].insert(0, head)
        else:
            turns.insert(0, ("user", [head]))

    out: list[Segment] = []
    for role, texts in turns:
        out.append(Segment(START, True))
        out.append(Segment(f"{role}\n" + "\n\n".join(t for t in texts if t)))
        out.append(Segment(END, True))
        out.append(Segment("\n"))
    out.append(Segment(START, True))
    out.append(Segment("model\n"))
    return out


def as_text(segments: Sequence[Segment]) -> str:
    """The prompt as one string (for logs and docs; the provider tokenizes segment by segment)."""
    return "".join(s.text for s in segments)
