"""Tool-loop controls: what an admin sets on an agent without touching code.

The agent loop (:mod:`seamkit._agent.loop`) applies them; this module holds their vocabulary (the
modes, the limits, the texts the model is shown) and the pure functions behind them:

- **limits** (``Agent.max_tool_calls``, ``Agent.max_tool_rounds``): once one is reached, every
  later model turn of the run is called with ``tool_choice="none"`` and :func:`limit_note` after
  the transcript, so the model answers from what it has; a call the model asks for past the limit
  is not run and gets :func:`limit_result`;
- **withdrawn tools** (``Agent.disabled_tools``, and a tool whose call a person rejected): not
  offered; a call to one is answered by :func:`unknown_tool_result`, in the words the invoker uses
  for a tool the agent does not have;
- **gather mode** (``Agent.mode="gather"``): the run's output is the context block
  :func:`render_gathered` writes from :func:`gathered_calls`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Literal

from seamkit._agent.result import GatheredCall
from seamkit.errors import UnknownToolError
from seamkit.values import Message, ToolCall, ToolResult, thaw

__all__ = [
    "GATHER_HEADER",
    "LIMITS",
    "LIMIT_NOTE",
    "LIMIT_RESULT",
    "Limit",
    "MODES",
    "Mode",
    "gathered_calls",
    "limit_note",
    "limit_result",
    "render_gathered",
    "unknown_tool_result",
]

Mode = Literal["answer", "gather"]
#: ``answer``: the loop runs until the model answers. ``gather``: one gathering decision, its calls
#: run, and their results are the output (a context block); no answer is asked for.
MODES: tuple[Mode, ...] = ("answer", "gather")

Limit = Literal["max_tool_calls", "max_tool_rounds"]
LIMITS: tuple[Limit, ...] = ("max_tool_calls", "max_tool_rounds")

#: The note sent after the transcript (in the request only) once a limit is reached.
LIMIT_NOTE = (
    "The limit on {what} for this answer ({n}) has been reached: no more tools can be called. "
    "Answer now from the information you already have."
)
#: The result of a tool call the model asked for past a limit (it did not run).
LIMIT_RESULT = "Not run: the limit on {what} for this answer ({n}) was reached."

_WHAT = {"max_tool_calls": "tool calls", "max_tool_rounds": "tool-calling turns"}

#: The first line of a non-empty gathered-context block.
GATHER_HEADER = "Gathered context"


def limit_note(limit: Limit, n: int) -> Message:
    """The user message telling the model that ``limit`` (its value ``n``) was reached."""
    return Message.user(LIMIT_NOTE.format(what=_WHAT[limit], n=n))


def limit_result(call: ToolCall, limit: Limit, n: int) -> ToolResult:
    """The error result of ``call``, not run because ``limit`` (its value ``n``) was reached."""
    return ToolResult(call.id, call.name, LIMIT_RESULT.format(what=_WHAT[limit], n=n), is_error=True)


def unknown_tool_result(call: ToolCall, available: Iterable[str]) -> ToolResult:
    """The error result of a call to a tool that is not offered (disabled, withdrawn, made up):
    the same text the invoker gives for a tool the agent does not have
    (``UnknownToolError: unknown tool 'x'; available tools: a, b``), listing ``available``."""
    exc = UnknownToolError(call.name, tuple(available))
    return ToolResult(call.id, call.name, f"{type(exc).__name__}: {exc}", is_error=True)


def gathered_calls(transcript: Sequence[Message]) -> tuple[GatheredCall, ...]:
    """The calls of the transcript's last tool round with their results, in the model's call
    order: the ``tool`` messages at the end of ``transcript`` and the assistant turn right before
    them. ``()`` when the transcript does not end with such a round (a gathering decision that
    called no tool, or no decision at all). A call without a result in the round is left out."""
    i = len(transcript)
    while i and transcript[i - 1].role == "tool":
        i -= 1
    if i == 0 or i == len(transcript):
        return ()
    turn = transcript[i - 1]
    if turn.role != "assistant" or not turn.tool_calls:
        return ()
    results: dict[str, ToolResult] = {}
    for m in transcript[i:]:
        for r in m.tool_results:
            results.setdefault(r.call_id, r)
    return tuple(GatheredCall(c, results[c.id]) for c in turn.tool_calls if c.id in results)


def render_gathered(gathered: Sequence[GatheredCall]) -> str:
    """The context block of ``gathered``: ``""`` when nothing was gathered; else
    :data:`GATHER_HEADER` with the count, then per call a line ``[i] name {arguments}`` (JSON,
    ``(error)`` appended for an error result) followed by its result text."""
    if not gathered:
        return ""
    n = len(gathered)
    parts = [f"{GATHER_HEADER} ({n} tool call{'s' if n != 1 else ''}):"]
    for i, g in enumerate(gathered, 1):
        arguments = json.dumps(thaw(g.call.arguments), ensure_ascii=False, sort_keys=True, default=str)
        error = " (error)" if g.result.is_error else ""
        parts.append(f"[{i}] {g.call.name} {arguments}{error}\n{g.result.content}")
    return "\n\n".join(parts)
