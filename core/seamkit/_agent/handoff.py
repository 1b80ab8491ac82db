"""Handoffs: an agent hands the conversation to another agent.

An agent with ``handoffs=`` offers the model one tool per target, ``transfer_to_<name>``. When
the model calls one, the tool batch finishes (every call of the turn gets its result), this
agent's part ends and the target continues **the same run** (same run id, checkpoints, usage,
step count) from the next model turn, with the transcript as the handoff's ``filter`` shows it:

- ``all``: every message as it is (the transfer call and its result included);
- ``no_tools``: without tool calls and tool results (an assistant message left empty is dropped);
- ``user_only``: only the person's messages (role ``user``);
- ``last_user``: only the person's last message.

The target's own system prompt replaces the one before (system messages are never carried over);
messages after the handoff are seen whole. A later handoff filters what its agent saw. The stored
transcript is never changed (a durable run's log is append-only): the filtered view exists only in
the requests. The run's state records each handoff (``handoffs``: ``from``, ``to``, ``at``: the
transcript length at the handoff, ``step``) and ``agent``: who holds the conversation, so a
resumed run continues with the holder (found by name among the entry agent's handoff targets,
transitively). ``AgentResult.answered_by`` names the agent that answered and
``AgentResult.handoffs`` the chain of agents, entry first.

The holder's ``max_steps`` counts its own model turns (since it took over). The entry agent's
checkpointer records the whole run; a target's own checkpointer is not used within it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from seamkit._runtime.context import RunContext
from seamkit._tools.registry import tool_name_of
from seamkit.values import EMPTY, Message, ToolCall, ToolResult, ToolSchema, freeze

if TYPE_CHECKING:
    from seamkit._agent.agent import Agent
    from seamkit._agent.definition import AgentDefinition

__all__ = ["FILTERS", "Handoff", "HandoffFilter", "HandoffTool", "filter_messages", "find_agent", "handoff_tool_name"]

HandoffFilter = Literal["all", "no_tools", "user_only", "last_user"]
#: The filter rules, by name (see the module docstring).
FILTERS: tuple[str, ...] = ("all", "no_tools", "user_only", "last_user")

_TRANSFERRED = "Transferred to {name}: it continues the conversation from here."


def handoff_tool_name(agent_name: str) -> str:
    """``transfer_to_<name>``, characters a tool name cannot hold replaced by ``_`` (64 at most)."""
    return ("transfer_to_" + tool_name_of(agent_name))[:64]


@dataclass(frozen=True, slots=True)
class Handoff:
    """A handoff target of an agent: ``agent`` takes the conversation over, seeing it through
    ``filter`` (a rule name of :data:`FILTERS`). ``description``: what the model reads to decide
    when to transfer (default: names the agent and its prompt).

    Raises ``ValueError`` for an unknown filter, ``TypeError`` when ``agent`` is not an Agent."""

    agent: Agent
    filter: HandoffFilter = "all"
    description: str | None = None

    def __post_init__(self) -> None:
        from seamkit._agent.agent import Agent

        if not isinstance(self.agent, Agent):
            raise TypeError(f"a handoff target must be an Agent, got {type(self.agent).__name__}")
        if self.filter not in FILTERS:
            raise ValueError(f"unknown handoff filter {self.filter!r}; use one of {', '.join(FILTERS)}")

    @property
    def tool_name(self) -> str:
        return handoff_tool_name(self.agent.name)


class HandoffTool:
    """The ``transfer_to_<name>`` tool of a :class:`Handoff`: no arguments; its result tells the
    model the conversation was transferred. The agent loop does the transfer (it recognises the
    call by the tool's name)."""

    __slots__ = ("_schema", "handoff")

    def __init__(self, handoff: Handoff) -> None:
        self.handoff = handoff
        target = handoff.agent
        description = handoff.description or (
            f"Hand the conversation over to the agent {target.name!r}, which then answers the person "
            "instead of you. Call it alone, when that agent is the right one to continue.")
        self._schema = ToolSchema(handoff.tool_name, description,
                                  freeze({"type": "object", "properties": {}, "additionalProperties": False}), False)

    @property
    def schema(self) -> ToolSchema:
        return self._schema

    def validate(self, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
        return EMPTY  # extra arguments are ignored: there is nothing to get wrong

    async def invoke(self, arguments: Mapping[str, Any], ctx: RunContext) -> str:
        return _TRANSFERRED.format(name=self.handoff.agent.name)

    def __repr__(self) -> str:
        return f"<handoff tool {self._schema.name} filter={self.handoff.filter}>"


def as_handoff(value: Any) -> Handoff:
    """A :class:`Handoff` from a Handoff or a bare Agent (filter ``all``)."""
    return value if isinstance(value, Handoff) else Handoff(value)


def filter_messages(rule: str, messages: Sequence[Message]) -> list[Message]:
    """``messages`` (system messages left out) as the handoff ``rule`` shows them."""
    if rule == "all":
        return [m for m in messages if m.role != "system"]
    if rule == "user_only":
        return [m for m in messages if m.role == "user"]
    if rule == "last_user":
        for m in reversed(messages):
            if m.role == "user":
                return [m]
        return []
    if rule == "no_tools":
        out: list[Message] = []
        for m in messages:
            if m.role in ("system", "tool"):
                continue
            kept = tuple(b for b in m.content if type(b) not in (ToolCall, ToolResult))
            if kept:
                out.append(m if len(kept) == len(m.content) else Message(m.role, kept))
        return out
    raise ValueError(f"unknown handoff filter {rule!r}; use one of {', '.join(FILTERS)}")


def handoff_view(transcript: Sequence[Message], handoffs: Sequence[Mapping[str, Any]],
                 system_of: Callable[[str], Message | None]) -> list[Message]:
    """The messages the current holder sees: for each handoff record (``to``, ``at``, ``filter``)
    in order, what the previous holder saw up to it, filtered by its rule, after the target's
    system message (``system_of(name)``); then the transcript since the last handoff."""
    view: list[Message] = []  # what the holder saw of transcript[:consumed]
    consumed = 0
    for h in handoffs:
        at = int(h["at"])
        seen = view + list(transcript[consumed:at])
        system = system_of(str(h["to"]))
        view = ([system] if system is not None else []) + filter_messages(str(h.get("filter", "all")), seen)
        consumed = at
    return view + list(transcript[consumed:])


def find_agent(entry: AgentDefinition, name: str) -> AgentDefinition | None:
    """The agent called ``name``: ``entry`` or one of its handoff targets, transitively
    (breadth-first, the first found), or ``None``."""
    seen: set[int] = set()
    queue: list[AgentDefinition] = [entry]
    while queue:
        a = queue.pop(0)
        if id(a) in seen:
            continue
        seen.add(id(a))
        if a.name == name:
            return a
        queue.extend(h.agent for h in a.handoffs)
    return None
