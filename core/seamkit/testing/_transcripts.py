"""Random and fixed transcripts for testing compactors and anything else that rewrites messages.

:func:`transcripts` is a hypothesis strategy (this module needs ``hypothesis`` installed; the rest
of :mod:`seamkit.testing` does not): an optional leading system message, then user and assistant
text, assistant turns with 1-4 parallel tool calls whose results come one message each, all in
one message, or split between messages, occasional error results, reasoning blocks, a system
message mid-way, huge tool arguments or results, and, at the very end, possibly an assistant turn
whose calls are not answered yet. Tool-call ids are unique within a transcript.

:func:`big_tool_call_transcript` builds the fixed case of issue 5: one tool call whose arguments
hold ``chars`` characters (324,000 by default; about 81,000 tokens), followed by later turns.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from seamkit.values import Message, ReasoningBlock, TextBlock, ToolCall, ToolResult, freeze

__all__ = ["transcripts", "big_tool_call_transcript", "report_text", "TOOL_NAMES"]

TOOL_NAMES = ("search", "read_file", "calculator", "write_note")

_PARAGRAPH = (
    "Section {i}. The migration moved the billing service to the new cluster without downtime; "
    "latency at the 99th percentile fell from 840 ms to 310 ms, and the error budget for the quarter "
    "was never at risk. Two follow-ups remain: retire the old queue consumers, and document the "
    "rollback procedure for the on-call team.\n"
)


def report_text(chars: int) -> str:
    """Exactly ``chars`` characters of plain English report prose (numbered paragraphs of about
    320 characters): text a tokenizer counts at about four characters per token, unlike a run of
    one repeated character."""
    parts: list[str] = []
    size, i = 0, 0
    while size < chars:
        i += 1
        parts.append(_PARAGRAPH.format(i=i))
        size += len(parts[-1])
    return "".join(parts)[:chars]


_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=60)


@st.composite
def _big_text(draw: st.DrawFn) -> str:
    """Text of 0-60 random characters, or (rarely) long: 2k-40k characters of report prose or
    of one repeated character."""
    if draw(st.integers(0, 9)) == 0:
        n = draw(st.integers(2_000, 40_000))
        return report_text(n) if draw(st.booleans()) else draw(st.sampled_from("xé字")) * n
    return draw(_text)


@st.composite
def _tool_turn(draw: st.DrawFn, next_id: list[int], answered: bool) -> list[Message]:
    n_calls = draw(st.integers(1, 4))
    calls: list[ToolCall] = []
    for _ in range(n_calls):
        next_id[0] += 1
        arguments: dict[str, Any] = {"q": draw(_big_text())}
        if draw(st.booleans()):
            arguments["n"] = draw(st.integers(-5, 10_000))
        calls.append(ToolCall(f"call_{next_id[0]}", draw(st.sampled_from(TOOL_NAMES)), freeze(arguments)))
    head: list[Any] = []
    if draw(st.booleans()):
        head.append(ReasoningBlock(draw(_text)))
    if draw(st.booleans()):
        head.append(TextBlock(draw(_text)))
    assistant = Message("assistant", (*head, *calls))
    if not answered:
        return [assistant]
    results = [ToolResult(c.id, c.name, draw(_big_text()), is_error=draw(st.integers(0, 5)) == 0) for c in calls]
    results = draw(st.permutations(results))
    layout = draw(st.sampled_from(("separate", "together", "split")))
    if layout == "separate" or len(results) == 1:
        replies = [Message("tool", (r,)) for r in results]
    elif layout == "together":
        replies = [Message("tool", tuple(results))]
    else:
        cut = draw(st.integers(1, len(results) - 1))
        replies = [Message("tool", tuple(results[:cut])), Message("tool", tuple(results[cut:]))]
    return [assistant, *replies]


@st.composite
def transcripts(draw: st.DrawFn, *, min_units: int = 0, max_units: int = 12) -> tuple[Message, ...]:
    """A random transcript (a tuple of messages) with ``min_units``..``max_units`` units after an
    optional leading system message (see the module doc for what it contains)."""
    next_id = [0]
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(Message.system(draw(_text) or "You are terse."))
    n = draw(st.integers(min_units, max_units))
    for i in range(n):
        kind = draw(st.sampled_from(("user", "assistant", "tools", "tools", "system")))
        if kind == "user":
            out.append(Message.user(draw(_big_text())))
        elif kind == "assistant":
            out.append(Message.assistant(draw(_text)))
        elif kind == "system":
            out.append(Message.system(draw(_text)))
        else:
            answered = i < n - 1 or draw(st.integers(0, 4)) > 0
            out.extend(draw(_tool_turn(next_id, answered)))
    return tuple(out)


def big_tool_call_transcript(chars: int = 324_000, *, later_turns: int = 3) -> tuple[Message, ...]:
    """A system message, a user task, an assistant turn calling ``write_note`` with arguments
    ``{"content": report_text(chars)}`` and its result, then ``later_turns`` short user/assistant
    pairs. With the default 324,000 characters the call alone is about 81,000 tokens."""
    msgs = [
        Message.system("You are a careful note taker."),
        Message.user("Save the whole report as a note."),
        Message("assistant", (ToolCall("call_big", "write_note", freeze({"content": report_text(chars)})),)),
        Message("tool", (ToolResult("call_big", "write_note", "saved note 1"),)),
    ]
    for i in range(later_turns):
        msgs.append(Message.user(f"Question {i + 1}: what is in note 1?"))
        msgs.append(Message.assistant(f"Answer {i + 1}: the report."))
    return tuple(msgs)
