"""The basic compactors: ``sliding_window``, ``truncation`` and ``tool_result_clearing``.

Each implements :class:`seamkit._compaction.CompactorPort` and keeps its invariants: a transcript
already within ``budget_tokens`` (the :func:`seamkit._compaction.transcript_tokens` estimate, in
tokens) is returned unchanged; a leading system message is kept verbatim; an assistant turn with
tool calls and all of its results (parallel ones included) is kept or dropped as one unit
(:func:`seamkit._compaction.turn_units`); the result of a non-empty transcript is never empty.

*When nothing fits*: ``truncation`` keeps the newest unit (and the leading system message) even
when that alone exceeds the budget, and says so with :func:`seamkit._compaction.note` (a warning
logged on ``seamkit._compaction`` and added to ``ctx.state[NOTES_KEY]`` when a context is given); the
result is then over budget and the caller (a budget check, the provider) decides. The other two
compactors do not promise to fit either (see each class).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from seamkit.plugin import estimate_message_tokens, note, split_leading_system, transcript_tokens, turn_units
from seamkit.values import Message, ToolResult

from seamkit_compactors.config import SlidingWindowConfig, ToolResultClearingConfig, TruncationConfig

if TYPE_CHECKING:
    from seamkit.plugin import RunContext

__all__ = [
    "SlidingWindowCompactor",
    "TruncationCompactor",
    "ToolResultClearingCompactor",
    "cleared_placeholder",
    "is_cleared",
    "build_sliding_window",
    "build_truncation",
    "build_tool_result_clearing",
]

_CLEARED = re.compile(r"\[tool result cleared: [\d,]+ characters\]")


def cleared_placeholder(content: str) -> str:
    """The text that replaces a cleared tool result: ``"[tool result cleared: 12,345 characters]"``
    (the original length in characters, with thousands separators)."""
    return f"[tool result cleared: {len(content):,} characters]"


def is_cleared(result: ToolResult) -> bool:
    """Whether ``result`` already holds a :func:`cleared_placeholder`."""
    return _CLEARED.fullmatch(result.content) is not None


def _flatten(units: Sequence[tuple[Message, ...]]) -> tuple[Message, ...]:
    return tuple(m for u in units for m in u)


class SlidingWindowCompactor:
    """Keeps the leading system message and the ``keep_turns`` most recent turns (units: one
    message, or an assistant tool-call message with all of its results) once the transcript
    exceeds the budget. It bounds the number of turns, not tokens: the result may still exceed
    the budget (follow it with ``truncation`` for a hard limit). Raises ``ValueError`` for
    ``keep_turns < 1``."""

    name = "sliding_window"

    def __init__(self, keep_turns: int = 20) -> None:
        if keep_turns < 1:
            raise ValueError(f"keep_turns must be at least 1, got {keep_turns}")
        self.keep_turns = keep_turns

    def __repr__(self) -> str:
        return f"SlidingWindowCompactor(keep_turns={self.keep_turns})"

    async def compact(
        self, messages: Sequence[Message], *, budget_tokens: int, ctx: RunContext | None = None
    ) -> tuple[Message, ...]:
        msgs = tuple(messages)
        if transcript_tokens(msgs) <= budget_tokens:
            return msgs
        system, rest = split_leading_system(msgs)
        units = turn_units(rest)
        if len(units) <= self.keep_turns:
            return msgs
        head = (system,) if system is not None else ()
        return head + _flatten(units[-self.keep_turns :])


class TruncationCompactor:
    """Drops the oldest units (after the leading system message) until the estimate fits
    ``budget_tokens``. When even the newest unit does not fit beside the system message, that
    unit is kept anyway (the result exceeds the budget) and noted (:func:`seamkit._compaction.note`)."""

    name = "truncation"

    def __repr__(self) -> str:
        return "TruncationCompactor()"

    async def compact(
        self, messages: Sequence[Message], *, budget_tokens: int, ctx: RunContext | None = None
    ) -> tuple[Message, ...]:
        msgs = tuple(messages)
        sizes = [estimate_message_tokens(m) for m in msgs]
        if sum(sizes) <= budget_tokens:
            return msgs
        system, rest = split_leading_system(msgs)
        head = (system,) if system is not None else ()
        room = budget_tokens - (sizes[0] if head else 0)
        units = turn_units(rest)
        offset = len(head)
        unit_sizes: list[int] = []
        for u in units:
            unit_sizes.append(sum(sizes[offset : offset + len(u)]))
            offset += len(u)
        start, used = len(units), 0
        while start > 0 and used + unit_sizes[start - 1] <= room:
            start -= 1
            used += unit_sizes[start]
        if start == len(units) and units:
            start = len(units) - 1
            note(
                ctx,
                f"truncation: the newest turn alone ({unit_sizes[start]} tokens) does not fit the budget "
                f"of {budget_tokens} tokens beside the system message; it is kept anyway",
            )
        return head + _flatten(units[start:])


class ToolResultClearingCompactor:
    """Replaces old tool results, oldest first, with :func:`cleared_placeholder` (the result keeps
    its ``call_id``, tool ``name`` and ``is_error``), until the estimate fits ``budget_tokens``.
    The ``keep_recent`` most recent results are never cleared, nor are results already shorter
    than their placeholder; no message is dropped, so the result may still exceed the budget
    (follow it with ``truncation`` for a hard limit). Raises ``ValueError`` for
    ``keep_recent < 0``."""

    name = "tool_result_clearing"

    def __init__(self, keep_recent: int = 3) -> None:
        if keep_recent < 0:
            raise ValueError(f"keep_recent must be at least 0, got {keep_recent}")
        self.keep_recent = keep_recent

    def __repr__(self) -> str:
        return f"ToolResultClearingCompactor(keep_recent={self.keep_recent})"

    async def compact(
        self, messages: Sequence[Message], *, budget_tokens: int, ctx: RunContext | None = None
    ) -> tuple[Message, ...]:
        msgs = list(messages)
        sizes = [estimate_message_tokens(m) for m in msgs]
        total = sum(sizes)
        if total <= budget_tokens:
            return tuple(msgs)
        first = 1 if msgs and msgs[0].role == "system" else 0
        where = [
            (i, j)
            for i in range(first, len(msgs))
            for j, b in enumerate(msgs[i].content)
            if type(b) is ToolResult
        ]
        clearable = where[: max(0, len(where) - self.keep_recent)]
        for i, j in clearable:
            block = msgs[i].content[j]
            if type(block) is not ToolResult:  # pragma: no cover - positions hold results only
                continue
            placeholder = cleared_placeholder(block.content)
            if is_cleared(block) or len(placeholder) >= len(block.content):
                continue
            content = list(msgs[i].content)
            content[j] = replace(block, content=placeholder)
            msgs[i] = Message(msgs[i].role, tuple(content))
            new_size = estimate_message_tokens(msgs[i])
            total += new_size - sizes[i]
            sizes[i] = new_size
            if total <= budget_tokens:
                break
        return tuple(msgs)


def build_sliding_window(config: SlidingWindowConfig) -> SlidingWindowCompactor:
    """Factory of the ``sliding_window`` component."""
    return SlidingWindowCompactor(config.keep_turns)


def build_truncation(config: TruncationConfig) -> TruncationCompactor:
    """Factory of the ``truncation`` component."""
    return TruncationCompactor()


def build_tool_result_clearing(config: ToolResultClearingConfig) -> ToolResultClearingCompactor:
    """Factory of the ``tool_result_clearing`` component."""
    return ToolResultClearingCompactor(config.keep_recent)
