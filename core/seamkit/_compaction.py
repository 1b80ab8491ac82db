"""Compaction: rewriting a transcript so it fits a token budget without breaking it.

A *compactor* (:class:`CompactorPort`) takes the messages of a request and a budget in tokens
(:func:`seamkit._tokens.estimate_message_tokens` estimates, see :func:`transcript_tokens`) and
returns the messages to send. Compactors are plugins registered under the kind ``"compactor"``
(hook ``seamkit_register_compactors``); the factory takes the validated config and returns a
:class:`CompactorPort`.

Every compactor keeps these invariants (:func:`check_invariants` checks them):

- **Units are atomic.** An assistant message with tool calls and *all* the messages carrying
  their results (parallel calls included, whether the results come one message each or together)
  form one unit (:func:`turn_units`); a unit is kept or dropped whole, so no tool result is ever
  cut away from the call that asked for it (providers reject such transcripts).
- **A leading system message is kept verbatim** when present.
- **A transcript already within the budget is returned unchanged** (an equal tuple).
- **The result is never empty.** When even the newest unit alone does not fit, it is kept anyway
  (the result then exceeds the budget; the caller's budget check decides what to do) and the
  compactor says so with :func:`note` (a warning on the ``seamkit._compaction`` logger, and in
  ``ctx.state[NOTES_KEY]`` when it runs with a context).

Rewrites are allowed only where a compactor says so explicitly: a unit whose tool results were
replaced by a placeholder keeps its shape (roles, tool-call ids and names, result call ids), and
a summary of dropped units is a message built with :func:`summary_message`.

This module is light: it imports only :mod:`seamkit.values` and :mod:`seamkit._tokens`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from seamkit._tokens import estimate_message_tokens
from seamkit.values import Message, TextBlock, ToolCall, ToolResult

if TYPE_CHECKING:
    from seamkit._runtime.context import RunContext

__all__ = [
    "CompactorPort",
    "turn_units",
    "transcript_tokens",
    "check_invariants",
    "split_leading_system",
    "unit_signature",
    "SUMMARY_MARKER",
    "summary_message",
    "is_summary",
    "NOTES_KEY",
    "note",
    "logger",
]

logger = logging.getLogger("seamkit.compaction")

SUMMARY_MARKER = "[summary of earlier conversation]"
"""The first line of every summary message (:func:`summary_message`); :func:`is_summary` looks
for it, and :func:`check_invariants` accepts such messages where units were dropped."""

NOTES_KEY = "seamkit.compaction.notes"
"""``ctx.state`` key: a list of strings, the warnings compactors raised in this run (see
:func:`note`; the ``compaction`` middleware reports them on the call's result)."""

Unit = tuple[Message, ...]


def note(ctx: RunContext | None, message: str) -> None:
    """Say what a compactor could not do (e.g. the newest unit alone is over the budget): log
    ``message`` as a warning on the ``seamkit._compaction`` logger and, when ``ctx`` is given,
    append it to ``ctx.state[NOTES_KEY]``."""
    logger.warning("%s", message)
    if ctx is not None:
        ctx.state.setdefault(NOTES_KEY, []).append(message)


@runtime_checkable
class CompactorPort(Protocol):
    """Rewrites a transcript to fit ``budget_tokens`` (seamkit._tokens estimate).

    ``name``: the compactor's registered name. ``compact(messages, budget_tokens=..., ctx=...)``
    returns the messages to send, as a tuple, keeping the module's invariants: units whole, a
    leading system message verbatim, the input unchanged when it already fits
    (``transcript_tokens(messages) <= budget_tokens``), never empty for a non-empty input.
    ``ctx`` is the run's context when compaction runs inside a run (LLM compactors call models
    through it); ``None`` otherwise.
    """

    name: str

    async def compact(
        self, messages: Sequence[Message], *, budget_tokens: int, ctx: RunContext | None = None
    ) -> tuple[Message, ...]: ...


def turn_units(messages: Sequence[Message]) -> list[tuple[Message, ...]]:
    """Split ``messages`` into atomic units, in order; their concatenation is ``messages``.

    An assistant message with tool calls opens a unit; each following message carrying a
    :class:`~seamkit.values.ToolResult` for one of its still-unanswered calls joins it (one
    message per result, or one message with all of them, or any mix), until every call is
    answered or a message answers none of them. Every other message is a unit by itself
    (including a result whose call is not in the transcript, and an assistant message whose
    calls have no results yet).
    """
    units: list[Unit] = []
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        i += 1
        if m.role != "assistant":
            units.append((m,))
            continue
        pending = {b.id for b in m.content if type(b) is ToolCall}
        if not pending:
            units.append((m,))
            continue
        unit = [m]
        while pending and i < n:
            answered = {b.call_id for b in messages[i].content if type(b) is ToolResult} & pending
            if not answered:
                break
            pending -= answered
            unit.append(messages[i])
            i += 1
        units.append(tuple(unit))
    return units


def transcript_tokens(messages: Sequence[Message]) -> int:
    """Estimated input tokens of ``messages`` (tokens): the sum of
    :func:`seamkit._tokens.estimate_message_tokens` (tool schemas and reply priming not included)."""
    return sum(estimate_message_tokens(m) for m in messages)


def split_leading_system(messages: Sequence[Message]) -> tuple[Message | None, tuple[Message, ...]]:
    """``(system, rest)``: the leading system message (``None`` when the first message is not a
    system message) and the messages after it."""
    if messages and messages[0].role == "system":
        return messages[0], tuple(messages[1:])
    return None, tuple(messages)


def summary_message(text: str, *, role: str = "user") -> Message:
    """A message standing for dropped units: :data:`SUMMARY_MARKER`, a newline, then ``text``.
    ``role`` is ``"user"`` (default), ``"assistant"`` or ``"system"``; raises ``ValueError``
    for another role."""
    if role not in ("user", "assistant", "system"):
        raise ValueError(f"a summary message's role is user, assistant or system, not {role!r}")
    return Message(role, (TextBlock(f"{SUMMARY_MARKER}\n{text}"),))  # type: ignore[arg-type]


def is_summary(message: Message) -> bool:
    """Whether ``message`` is a summary built by :func:`summary_message` (text only, starting
    with :data:`SUMMARY_MARKER`)."""
    blocks = message.content
    return (
        bool(blocks)
        and all(type(b) is TextBlock for b in blocks)
        and blocks[0].text.startswith(SUMMARY_MARKER)  # type: ignore[union-attr]
    )


def unit_signature(unit: Sequence[Message]) -> tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...]:
    """The shape a rewrite must keep: per message, its role and its tool calls / tool results as
    ``(kind, id, tool name)``, in order. Two units with equal signatures answer the same calls."""
    sig = []
    for m in unit:
        ids: list[tuple[str, str, str]] = []
        for b in m.content:
            if type(b) is ToolCall:
                ids.append(("call", b.id, b.name))
            elif type(b) is ToolResult:
                ids.append(("result", b.call_id, b.name))
        sig.append((m.role, tuple(ids)))
    return tuple(sig)


def _has_tool_blocks(unit: Unit) -> bool:
    return any(type(b) in (ToolCall, ToolResult) for m in unit for b in m.content)


def _describe(unit: Unit) -> str:
    ids = [b.id for m in unit for b in m.content if type(b) is ToolCall]
    ids += [b.call_id for m in unit for b in m.content if type(b) is ToolResult and b.call_id not in ids]
    roles = "+".join(m.role for m in unit)
    return f"{roles} unit" + (f" (tool calls {', '.join(ids)})" if ids else "")


def check_invariants(
    before: Sequence[Message], after: Sequence[Message], *, budget_tokens: int
) -> list[str]:
    """The compaction invariants ``after`` breaks, as readable problems; ``[]`` when it keeps them.

    Checked: a non-empty ``before`` gives a non-empty ``after`` that still holds at least one
    message besides the leading system message when ``before`` did; a ``before`` within
    ``budget_tokens`` (:func:`transcript_tokens`) comes back equal; a leading system message of
    ``before`` is ``after[0]``, verbatim; the units of ``after`` (:func:`turn_units`) are, in order,
    units of ``before`` kept whole. A kept unit may be rewritten only if it has tool calls or
    results and keeps its :func:`unit_signature` (e.g. cleared tool results); messages built by
    :func:`summary_message` may stand anywhere after the leading system message.
    """
    before, after = tuple(before), tuple(after)
    problems: list[str] = []
    if not before:
        return [] if not after else ["an empty transcript came back non-empty"]
    if not after:
        return ["the result is empty"]
    if transcript_tokens(before) <= budget_tokens and after != before:
        problems.append(
            f"a transcript within the budget ({transcript_tokens(before)} <= {budget_tokens} tokens) was changed"
        )
    system, rest_before = split_leading_system(before)
    rest_after = after
    if system is not None:
        if after[0] != system:
            problems.append("the leading system message was not kept verbatim as the first message")
        else:
            rest_after = after[1:]
    if rest_before and not rest_after:
        problems.append("only the system message is left: the newest unit must be kept")
    units_before = turn_units(rest_before)
    j = 0
    for unit in turn_units(rest_after):
        if len(unit) == 1 and is_summary(unit[0]):
            continue
        sig = unit_signature(unit) if _has_tool_blocks(unit) else None
        k = j
        while k < len(units_before):
            candidate = units_before[k]
            if candidate == unit or (sig is not None and unit_signature(candidate) == sig):
                break
            k += 1
        if k == len(units_before):
            if any(unit == u or (sig is not None and unit_signature(u) == sig) for u in units_before):
                problems.append(f"the {_describe(unit)} is out of order or repeated")
            else:
                problems.append(f"the {_describe(unit)} is not a whole unit of the original transcript")
        else:
            j = k + 1
    return problems
