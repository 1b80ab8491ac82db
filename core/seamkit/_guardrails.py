"""Guardrails: checks that act at four points of a run and return a :class:`Verdict`.

The points (``Point``), and what a check receives:

- ``input``: ``check_input(text, guard)``: the user's task (the text of the last user message
  the run starts from) before the first model call. A rewrite replaces that message's text.
- ``tool``: ``check_tool_call(call, guard)``: a :class:`~seamkit.values.ToolCall` (name and
  arguments) before it runs, side-effecting or not, after approvals (edited arguments are what
  is checked). A rewrite replaces its arguments (a mapping); the tool still validates them.
- ``tool_result``: ``check_tool_result(result, guard)``: a :class:`~seamkit.values.ToolResult`
  before the model sees it. A rewrite replaces its content (a ``str``).
- ``output``: ``check_output(output, guard)``: the final answer (``str``, or the typed value)
  before the run returns it. A rewrite replaces it.

A verdict is :data:`ALLOW` (optionally with ``flags``: things noticed but allowed, which become run
warnings and ``guardrail`` stream events), :func:`block` (a **tripwire**: the run stops with
:class:`GuardrailTripped`, its checkpoint saying why) or :func:`rewrite`.

A guardrail is any object with the ``check_*`` methods of the points it acts at (async; see the
Protocols below). It is put on an agent with :class:`Guard`, which says at which points, whether it
is ``advisory`` and, at the input point, whether it runs ``parallel`` to the first model call.
Plugins register guardrails with ``seamkit_register_guardrails``; YAML wires them as
``agent.guardrails: [{use: NAME, at: [input, tool, tool_result, output], advisory: false, ...}]``.

Failures are classified: a check that raises (or returns something that is not a verdict) blocks,
failing closed, unless its guard is ``advisory``, in which case the run records a warning and goes
on. An advisory guard's blocks are warnings too; its rewrites apply.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from seamkit.errors import GuardrailTripped
from seamkit.values import ChatRequest, LLMResult, ToolCall, ToolResult, ToolSchema

if TYPE_CHECKING:
    from seamkit._ports import LLMPort
    from seamkit._runtime.context import RunContext

__all__ = [
    "ALLOW",
    "Guard",
    "GuardContext",
    "Guardrail",
    "GuardrailTripped",
    "InputGuardrail",
    "METHODS",
    "OutputGuardrail",
    "POINTS",
    "Point",
    "ToolCallGuardrail",
    "ToolResultGuardrail",
    "Verdict",
    "allow",
    "block",
    "placement_problems",
    "points_of",
    "rewrite",
]

Point = Literal["input", "tool", "tool_result", "output"]
#: The points, in the order a run meets them.
POINTS: tuple[Point, ...] = ("input", "tool", "tool_result", "output")
#: The method a guardrail implements to act at each point.
METHODS: Mapping[str, str] = {
    "input": "check_input",
    "tool": "check_tool_call",
    "tool_result": "check_tool_result",
    "output": "check_output",
}
Action = Literal["allow", "block", "rewrite"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a check decided. ``action``: ``allow``, ``block`` (a tripwire) or ``rewrite``;
    ``reason``: why (required for block and rewrite; shown to people, never to the model);
    ``value``: for a rewrite, the replacement (see the module doc for its type per point);
    ``flags``: things noticed but allowed (e.g. injection markers in a tool result), recorded as
    run warnings. Build verdicts with :data:`ALLOW`, :func:`allow`, :func:`block`, :func:`rewrite`."""

    action: Action
    reason: str = ""
    value: Any = None
    flags: tuple[str, ...] = ()


#: The verdict that lets the value through unchanged.
ALLOW = Verdict("allow")


def allow(*flags: str) -> Verdict:
    """Let the value through; ``flags`` (each one line) become run warnings."""
    return Verdict("allow", flags=tuple(flags)) if flags else ALLOW


def block(reason: str) -> Verdict:
    """Stop the run (a tripwire) because of ``reason``. Raises ``ValueError`` for an empty reason:
    a run stopped for no stated reason cannot be inspected."""
    if not reason or not reason.strip():
        raise ValueError("block() needs a reason: the run's checkpoint says why it stopped")
    return Verdict("block", reason)


def rewrite(value: Any, reason: str, *flags: str) -> Verdict:
    """Replace the value with ``value`` (text for ``input`` / ``tool_result``, an arguments
    mapping for ``tool``, the answer for ``output``); ``reason`` says what changed (e.g.
    ``"redacted 2 emails"``). Raises ``ValueError`` for an empty reason."""
    if not reason or not reason.strip():
        raise ValueError("rewrite() needs a reason saying what changed")
    return Verdict("rewrite", reason, value, tuple(flags))


@dataclass(frozen=True, slots=True)
class GuardContext:
    """What a check sees besides the value: the ``point``, the run's ``ctx`` (run id, scope,
    state, cancellation), the ``agent``'s name, the ``tool`` schema (``tool`` and ``tool_result``
    points; ``None`` for an unknown tool) and :meth:`chat` for checks that ask a model."""

    point: Point
    ctx: RunContext
    agent: str = "agent"
    tool: ToolSchema | None = None
    _chat: Callable[[LLMPort, ChatRequest], Awaitable[LLMResult]] | None = field(default=None, repr=False)

    async def chat(self, model: LLMPort, request: ChatRequest) -> LLMResult:
        """One call to ``model`` (a provider of the guardrail's own, e.g. a moderation model)
        through the agent's chat middlewares (budget, retry, tracing: ``meta["purpose"] ==
        "guardrail"``), in the run's context; its usage is added to the run's usage. Raises what
        the chain raises (:class:`~seamkit.errors.ProviderError`,
        :class:`~seamkit.errors.BudgetExceeded`...)."""
        if self._chat is not None:
            return await self._chat(model, request)
        from seamkit._runtime.invoker import Invoker
        from seamkit._tools.registry import ToolRegistry
        from seamkit.values import FrozenDict

        return await Invoker(model, ToolRegistry()).chat(request, self.ctx, FrozenDict(purpose="guardrail"))


@runtime_checkable
class InputGuardrail(Protocol):
    """Acts at the ``input`` point: ``text`` is the user's task."""

    async def check_input(self, text: str, guard: GuardContext) -> Verdict: ...


@runtime_checkable
class ToolCallGuardrail(Protocol):
    """Acts at the ``tool`` point, before the call runs."""

    async def check_tool_call(self, call: ToolCall, guard: GuardContext) -> Verdict: ...


@runtime_checkable
class ToolResultGuardrail(Protocol):
    """Acts at the ``tool_result`` point, before the model sees the result."""

    async def check_tool_result(self, result: ToolResult, guard: GuardContext) -> Verdict: ...


@runtime_checkable
class OutputGuardrail(Protocol):
    """Acts at the ``output`` point: ``output`` is the final answer (text or typed value)."""

    async def check_output(self, output: Any, guard: GuardContext) -> Verdict: ...


@runtime_checkable
class Guardrail(InputGuardrail, ToolCallGuardrail, ToolResultGuardrail, OutputGuardrail, Protocol):
    """A guardrail acting at every point. A guardrail needs only the methods of the points it
    acts at (:func:`points_of`)."""


def points_of(guardrail: Any) -> tuple[Point, ...]:
    """The points ``guardrail`` has a ``check_*`` method for, in run order."""
    return tuple(p for p in POINTS if callable(getattr(guardrail, METHODS[p], None)))


def placement_problems(
    name: str, has: Sequence[str], at: Sequence[Any], parallel: bool
) -> list[tuple[int | None, str]]:
    """Why the guardrail ``name``, which has checks for the points ``has``, cannot be placed at the
    points ``at`` (with ``parallel``): ``(index in at, message)`` per problem, index ``None`` for
    ``parallel``. One rule for :class:`Guard` (raised when built) and for loading a composition
    (located at ``at[i]`` before anything is built)."""
    problems: list[tuple[int | None, str]] = []
    for i, p in enumerate(at):
        if p not in METHODS:
            problems.append((i, f"unknown guardrail point {p!r}; the points are {', '.join(POINTS)}"))
        elif p not in has:
            problems.append((i, f"{name} cannot act at the {p} point: it has no {METHODS[p]} method "
                                f"(it acts at {', '.join(has)})"))
    if parallel and "input" not in at:
        problems.append((None, "parallel applies to the input point only"))
    return problems


@dataclass(frozen=True)
class Guard:
    """A guardrail as an agent uses it. ``guardrail``: the object with ``check_*`` methods;
    ``at``: the points it acts at (``None``: every point it has a method for); ``name``: how
    verdicts, warnings and tripwires name it (default: its registered or class name);
    ``advisory``: its blocks and failures become run warnings instead of stopping the run;
    ``parallel``: at the ``input`` point, run alongside the first model call instead of before it
    (lower latency; the call's tokens are spent even when the input is then blocked, and a rewrite
    makes the loop discard that call's answer and ask again with the rewritten task).

    Raises ``ValueError`` when ``at`` is empty, names an unknown point or a point the guardrail
    has no method for, or ``parallel`` is set without the ``input`` point; ``TypeError`` for a
    guardrail with no ``check_*`` method at all, ``at`` given as a string, or ``advisory`` /
    ``parallel`` that are not ``bool``."""

    guardrail: Any
    at: Sequence[Point] | None = None
    name: str = ""
    advisory: bool = False
    parallel: bool = False

    def __post_init__(self) -> None:
        has = points_of(self.guardrail)
        if not has:
            raise TypeError(
                f"{type(self.guardrail).__name__} is not a guardrail: it has none of "
                f"{', '.join(METHODS.values())}"
            )
        for flag in ("advisory", "parallel"):
            # a security control must not turn advisory by accident ("false" is a true string)
            if type(getattr(self, flag)) is not bool:
                raise TypeError(f"{flag} must be True or False, got {getattr(self, flag)!r}")
        if isinstance(self.at, str):
            raise TypeError(f"at is a list of points, e.g. [{self.at!r}], not a string")
        at = has if self.at is None else tuple(self.at)
        if not at:
            raise ValueError("at names no point: a guard acts at one point at least (leave it out for every point "
                             "the guardrail has a check for)")
        problems = placement_problems(type(self.guardrail).__name__, has, at, self.parallel)
        if problems:
            raise ValueError(problems[0][1])
        object.__setattr__(self, "at", tuple(p for p in POINTS if p in at))
        if not self.name:
            object.__setattr__(self, "name", getattr(self.guardrail, "name", None) or type(self.guardrail).__name__)
