"""Fitting a request over its input budget, in stages that give up the least first.

:meth:`seamkit._request.RequestBuilder.build` calls :func:`fit_request` when a request is estimated
(:func:`seamkit._tokens.estimate_tokens`) above ``budget_tokens``. The tail (the run's transcript as
the request sends it) is read as

* **earlier turns**: the conversation before the user's request;
* **the user's request**: the last user message;
* **earlier rounds**: the tool rounds of this answer before the latest one;
* **the latest round**: the last unit of the tail after the request (:func:`seamkit._compaction.turn_units`).

The stages, each run only while the request is still over the budget:

1. **condense** the tool results of earlier turns and earlier rounds in place, oldest first: the
   result keeps its call id, tool name and error flag; its text becomes :data:`CONDENSED_TEMPLATE`
   (how long it was and how it began);
2. **summarize earlier turns into the system head**: with a compactor, the compactor rewrites the
   earlier turns to the room they have, and the summaries it writes
   (:func:`seamkit._compaction.summary_message`) move into the system message; without one, the
   oldest units give way to a deterministic summary there, one line per message
   (:func:`summary_line`);
3. **drop the oldest**: what is left of the earlier turns, then earlier rounds, oldest first, each
   unit whole (a call never loses its result).

The user's request and the latest round are never touched. When the request is still over the
budget and it offers tools, the stages run again on the original tail without the tool schemas:
when that fits, the model answers without tools (:attr:`Fitting.without_tools`). What comes back
may still be over the budget (the request and the latest round alone are); the builder's budget
check decides then. Units keep the compaction invariants (:mod:`seamkit._compaction`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seamkit._compaction import SUMMARY_MARKER, is_summary, turn_units
from seamkit._tokens import estimate_message_tokens, estimate_tokens
from seamkit.values import ChatRequest, FrozenDict, Message, TextBlock, ToolResult, ToolSchema, freeze

if TYPE_CHECKING:
    from seamkit._compaction import CompactorPort
    from seamkit._runtime.context import RunContext

__all__ = ["CONDENSED_TEMPLATE", "CONDENSE_ABOVE", "Fitting", "fit_request", "summary_line"]

#: What a condensed tool result says instead of its text.
CONDENSED_TEMPLATE = "[condensed to fit the input budget: {chars} characters, beginning: {head!r}]"
#: Tool results of at most this many characters are never condensed (the condensed form would not be shorter).
CONDENSE_ABOVE = 240
_HEAD_CHARS = 80
_LINE_CHARS = 120

Unit = tuple[Message, ...]


@dataclass(frozen=True, slots=True)
class Fitting:
    """What :func:`fit_request` did to a request over its budget. ``tokens_before`` /
    ``tokens_after``: the estimates (tokens) before and after. ``condensed``: call ids of tool
    results condensed in place; ``summarized``: messages of earlier turns summarized into the
    system head; ``dropped``: messages dropped whole (``dropped_calls``: the call ids among them);
    ``without_tools``: the tool schemas were left out (the model answers without tools)."""

    tokens_before: int
    tokens_after: int
    condensed: tuple[str, ...] = ()
    summarized: int = 0
    dropped: int = 0
    dropped_calls: tuple[str, ...] = ()
    without_tools: bool = False

    def as_data(self) -> FrozenDict:
        """The fields as frozen JSON data (a ``context_condensed`` event's ``data``)."""
        data: FrozenDict = freeze({
            "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
            "condensed": list(self.condensed), "summarized": self.summarized, "dropped": self.dropped,
            "dropped_calls": list(self.dropped_calls), "without_tools": self.without_tools,
        })
        return data


def summary_line(message: Message) -> str:
    """One line of the deterministic summary: the role (a tool result: ``tool NAME``) and the start
    of the text, or the tools called."""
    if message.tool_results:
        r = message.tool_results[0]
        more = f" (+{len(message.tool_results) - 1} more results)" if len(message.tool_results) > 1 else ""
        return f"- tool {r.name}: {_clip(r.content, _LINE_CHARS)}{more}"
    text = _clip(message.text, _LINE_CHARS)
    calls = message.tool_calls
    if calls:
        called = f"called {', '.join(c.name for c in calls)}"
        text = f"{text} ({called})" if text else called
    return f"- {message.role}: {text}"


def _clip(text: str, n: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 1] + "…"


def _condense(result: ToolResult) -> ToolResult:
    text = CONDENSED_TEMPLATE.format(chars=len(result.content), head=_clip(result.content, _HEAD_CHARS))
    return ToolResult(result.call_id, result.name, text, result.is_error)


def _tokens(unit: Sequence[Message], count: Callable[[Message], int] = estimate_message_tokens) -> int:
    return sum([count(m) for m in unit])


def _calls(unit: Sequence[Message]) -> list[str]:
    return [c.id for m in unit for c in m.tool_calls]


class _Plan:
    """The request being fitted: head (system messages), earlier turns, the request, earlier
    rounds, the latest round. ``tokens`` is kept up to date by each change (the estimate is a sum
    over messages), so a long transcript is fitted in linear time."""

    def __init__(self, prefix: tuple[Message, ...], tail: tuple[Message, ...], fixed: int, budget: int,
                 count: Callable[[Message], int] = estimate_message_tokens) -> None:
        self.count = count  # one message's estimate (tokens)
        self.fixed = fixed
        self.budget = budget
        head = list(prefix)
        lead: list[Message] = []
        rest = tail
        if not any(m.role == "system" for m in head) and rest and rest[0].role == "system":
            lead, rest = [rest[0]], rest[1:]  # the transcript's own system message is the head
        self.prefix_size = len(prefix)
        self.head = head
        self.lead = lead
        r = max((i for i, m in enumerate(rest) if m.role == "user"), default=-1)
        self.earlier: list[Unit] = turn_units(rest[:r]) if r > 0 else []
        self.request: Unit = (rest[r],) if r >= 0 else ()
        after = turn_units(rest[r + 1 :])
        self.latest: Unit = after[-1] if after else ()
        self.rounds: list[Unit] = after[:-1]
        self.summary: list[str] = []
        self.condensed: list[str] = []
        self.summarized = 0
        self.dropped = 0
        self.dropped_calls: list[str] = []
        self.head_tokens = _tokens(prefix, count) + _tokens(lead, count)
        self.tokens = self.total()

    def _resummarized(self) -> None:
        """Account for a change of the summary (it lives in the head)."""
        head, lead = self.head_messages()
        new = _tokens(head, self.count) + _tokens(lead, self.count)
        self.tokens += new - self.head_tokens
        self.head_tokens = new

    def head_messages(self) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
        """``(prefix, lead)`` with the summary merged into the system head."""
        head, lead = list(self.head), list(self.lead)
        if self.summary:
            text = SUMMARY_MARKER + "\n" + "\n".join(self.summary)
            target = head if any(m.role == "system" for m in head) else lead if lead else None
            if target is None:
                head.insert(0, Message.system(text))
            else:
                i = next(i for i, m in enumerate(target) if m.role == "system")
                old = target[i]
                merged = f"{old.text}\n\n{text}" if old.text else text
                others = tuple(b for b in old.content if type(b) is not TextBlock)
                target[i] = Message("system", (TextBlock(merged), *others))
        return tuple(head), tuple(lead)

    def messages(self) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
        head, lead = self.head_messages()
        tail = [*lead, *(m for u in self.earlier for m in u), *self.request,
                *(m for u in self.rounds for m in u), *self.latest]
        return head, tuple(tail)

    def total(self) -> int:
        head, tail = self.messages()
        return self.fixed + _tokens(head, self.count) + _tokens(tail, self.count)

    def fits(self) -> bool:
        return self.tokens <= self.budget

    def condense(self) -> None:
        for units in (self.earlier, self.rounds):
            for k, unit in enumerate(units):
                for j, m in enumerate(unit):
                    for b, block in enumerate(m.content):
                        if self.fits():
                            return
                        if type(block) is not ToolResult or len(block.content) <= CONDENSE_ABOVE:
                            continue
                        content = list(m.content)
                        content[b] = _condense(block)
                        old = m
                        m = Message(m.role, tuple(content))
                        self.tokens += self.count(m) - self.count(old)
                        unit = (*unit[:j], m, *unit[j + 1 :])
                        units[k] = unit
                        self.condensed.append(block.call_id)

    async def summarize(self, compactor: CompactorPort | None, ctx: RunContext | None) -> None:
        if not self.earlier or self.fits():
            return
        if compactor is None:
            while self.earlier and not self.fits():
                unit = self.earlier.pop(0)
                self.tokens -= _tokens(unit, self.count)
                self.summary.extend(summary_line(m) for m in unit)
                self.summarized += len(unit)
                self._resummarized()
            return
        earlier = tuple(m for u in self.earlier for m in u)
        room = max(1, self.budget - (self.tokens - _tokens(earlier, self.count)))
        out = tuple(await compactor.compact(earlier, budget_tokens=room, ctx=ctx))
        kept = [m for m in out if not is_summary(m)]
        for m in out:
            if is_summary(m):
                self.summary.append(m.text.removeprefix(SUMMARY_MARKER).strip())
        self.summarized += max(0, len(earlier) - len(kept))
        self.earlier = turn_units(kept)
        head, lead = self.head_messages()
        self.head_tokens = _tokens(head, self.count) + _tokens(lead, self.count)
        self.tokens = self.total()

    def drop(self) -> None:
        for units in (self.earlier, self.rounds):
            while units and not self.fits():
                unit = units.pop(0)
                self.tokens -= _tokens(unit, self.count)
                self.dropped += len(unit)
                self.dropped_calls.extend(_calls(unit))


async def _fit(prefix: tuple[Message, ...], tail: tuple[Message, ...], tools: tuple[ToolSchema, ...],
               schema: FrozenDict | None, budget: int, compactor: CompactorPort | None,
               ctx: RunContext | None, count: Callable[[Message], int]) -> _Plan:
    fixed = estimate_tokens(ChatRequest((), tools, output_schema=schema))
    plan = _Plan(prefix, tail, fixed, budget, count)
    plan.condense()
    await plan.summarize(compactor, ctx)
    plan.drop()
    return plan


async def fit_request(
    prefix: Sequence[Message],
    tail: Sequence[Message],
    *,
    budget_tokens: int,
    tools: Sequence[ToolSchema] = (),
    output_schema: Mapping[str, Any] | None = None,
    compactor: CompactorPort | None = None,
    ctx: RunContext | None = None,
    message_tokens: Callable[[Message], int] | None = None,
) -> tuple[tuple[Message, ...], tuple[Message, ...], Fitting]:
    """Fit ``prefix + tail`` (with ``tools`` and ``output_schema`` counted) into ``budget_tokens``
    in the stages of the module docstring. Returns ``(prefix, tail, fitting)``: the prefix with a
    summary merged into its system message (a system message is added when it has none and the
    tail does not start with one), the fitted tail, and what was done. Raises what ``compactor``
    raises. ``message_tokens``: one message's estimate (tokens), :func:`estimate_message_tokens`
    unless given (a request builder passes its run's
    :class:`~seamkit._tokens.MessageTokenCache`, which counts each message once per run)."""
    count = message_tokens if message_tokens is not None else estimate_message_tokens
    prefix, tail, tools = tuple(prefix), tuple(tail), tuple(tools)
    schema = freeze(dict(output_schema)) if output_schema is not None else None
    before = (estimate_tokens(ChatRequest((), tools, output_schema=schema))
              + _tokens(prefix, count) + _tokens(tail, count))
    plan = await _fit(prefix, tail, tools, schema, budget_tokens, compactor, ctx, count)
    without_tools = False
    if not plan.fits() and tools:
        bare = await _fit(prefix, tail, (), schema, budget_tokens, compactor, ctx, count)
        if bare.fits():
            plan, without_tools = bare, True
    head, fitted = plan.messages()
    after = plan.tokens
    return head, fitted, Fitting(before, after, tuple(plan.condensed), plan.summarized, plan.dropped,
                                 tuple(plan.dropped_calls), without_tools)
