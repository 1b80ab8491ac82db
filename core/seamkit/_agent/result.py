"""``AgentResult``: what a finished run returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from seamkit._durability.approvals import PendingApproval
from seamkit._frozen import fast_init
from seamkit.values import Message, ToolCall, ToolResult, Usage

if TYPE_CHECKING:
    from seamkit._durability.ledger import UncertainEffect
    from seamkit.capabilities._state import TurnResult

__all__ = ["AgentResult", "GatheredCall", "StopReason", "handoff_chain"]

StopReason = Literal["completed", "max_steps", "suspended", "cancelled"]


@fast_init
@dataclass(frozen=True, slots=True)
class GatheredCall:
    """One tool call of a gather-mode run (``Agent.mode="gather"``) and its result (an error
    result for a call that did not run: refused by a person, past a limit, an unknown tool)."""

    call: ToolCall
    result: ToolResult


@fast_init
@dataclass(frozen=True, slots=True)
class AgentResult:
    """A finished run.

    ``output``: the typed output (validated), or the final text when the agent has no output
    type, or ``None`` when the run stopped early. ``transcript``: every message, system prompt
    first. ``usage``: summed over every model call (``usage.cost`` USD ``Decimal`` or ``None``).
    ``stop_reason``: ``completed``, ``max_steps``, or ``suspended`` (tool calls wait for a
    person's decision: ``pending_approvals``, or for a person to settle an effect: the
    ``uncertain_effects`` with ``waits``; continue with ``Agent.resume``). ``steps``: model turns
    taken. ``warnings``: degradations providers reported, checkpoints skipped, and effects whose
    outcome is unknown. ``uncertain_effects``: the side-effecting tool calls of the run whose
    outcome is unknown and not settled yet (settle them with ``Agent.settle_effect`` or
    ``seamkit runs settle``). ``turn``: for an agent with capabilities, the turn's
    :class:`~seamkit.capabilities._state.TurnResult` (dispositions, executions, facts, open
    interactions; ``None`` otherwise). ``answered_by``: the name of the agent that answered (the
    agent run, or the last handoff target; ``None`` for a capability turn). ``handoffs``: the
    agents that held the conversation, in order (``("triage", "billing")``), when there were
    handoffs; else empty. ``stopped_early``: a tool-loop limit was reached (``limit_reached`` says which:
    ``max_tool_calls`` or ``max_tool_rounds``), so the answer was given without further tools.
    ``gathered``: for a gather-mode agent, each tool call of the gathering decision with its
    result (``output`` is then the same as a text block; both empty when nothing was gathered).
    ``citation_ids``: the citation ids (:func:`seamkit._grounding.citation_id`) of the grounding
    items the request builder handed to the model in this run, in the order first shown (empty
    without grounding; a resumed run has those shown since it resumed; a result read back from a
    checkpoint has none): what an eval's citation check compares the answer's citations with.
    """

    output: Any
    transcript: tuple[Message, ...]
    usage: Usage
    stop_reason: StopReason
    run_id: str
    parent_run_id: str | None = None
    steps: int = 0
    warnings: tuple[str, ...] = ()
    pending_approvals: tuple[PendingApproval, ...] = ()
    uncertain_effects: tuple[UncertainEffect, ...] = ()
    turn: TurnResult | None = None
    answered_by: str | None = None
    handoffs: tuple[str, ...] = ()
    stopped_early: bool = False
    limit_reached: str | None = None
    gathered: tuple[GatheredCall, ...] = ()
    citation_ids: tuple[str, ...] = ()

    @property
    def cost(self) -> Decimal | None:
        """Total cost in USD, ``None`` when any call's cost is unknown."""
        return self.usage.cost

    @property
    def text(self) -> str:
        """The text of the last assistant message."""
        for m in reversed(self.transcript):
            if m.role == "assistant":
                return m.text
        return ""


def handoff_chain(handoffs: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The agents that held a conversation, in order, from a run state's ``handoffs`` records
    (``()`` when there were none)."""
    if not handoffs:
        return ()
    return (str(handoffs[0]["from"]), *(str(h["to"]) for h in handoffs))
