"""Where an agent tool's (or a workflow agent step's) child runs run: the :class:`ChildRunDispatcher` seam.

An agent tool (:func:`~seamkit._agent.as_tool.agent_tool`) runs its agent as a child run *in the
calling process* unless two things hold: the tool names a ``queue`` (``agent_tool(...,
queue="children")``, ``queue: true`` in YAML), **and** the calling run's context provides a
dispatcher under :data:`CHILD_RUNS_SERVICE` in ``ctx.services``. Then the tool hands the child to
the dispatcher (:meth:`ChildRunDispatcher.run_child`), which runs it elsewhere (e.g. seamkit-celery
submits it to a worker queue) and waits for its outcome. Without a dispatcher (``seamkit run``, a
test, a process with no queue) the child runs in-process as always: ``queue`` is a request, not a
requirement.

The child's run id is deterministic (:func:`child_run_id`): it is derived from the calling tool
call's key (:func:`current_call_key`: ``"<parent run id>:<step>:<tool call id>"``, set by the
agent loop around each tool call), so a parent re-run after a crash (a re-delivered message, a
resume) names the same child again, and a dispatcher finds it (running, or finished with its
stored outcome) instead of starting a second one.

A workflow's agent step built with ``queue=NAME`` (:func:`~seamkit.workflows._steps.agent_step`,
``queue:`` on a step in YAML) hands its agent run to the same dispatcher, under the activation's
run id (checkpointed before the activation starts, so a resumed workflow names the same child);
its request has no ``tool``: the remote side finds the agent by its name.

Nothing here imports a queue; the dispatcher is the deployment's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from seamkit.errors import FailureClass
from seamkit.values import Scope, Usage

if TYPE_CHECKING:
    from seamkit._agent.agent import Agent
    from seamkit._runtime.context import RunContext

__all__ = [
    "CALL_KEY",
    "CHILD_RUNS_SERVICE",
    "ChildRunDispatcher",
    "ChildRunOutcome",
    "ChildRunRequest",
    "calling",
    "child_run_id",
    "current_call_key",
]

#: The ``ctx.services`` name under which a run offers its :class:`ChildRunDispatcher`.
CHILD_RUNS_SERVICE = "seamkit.child_runs"

#: The key of the tool call running in this task (see :func:`current_call_key`); the agent loop
#: sets and resets it around each call (``CALL_KEY.set`` / ``reset``: cheaper than :func:`calling`).
CALL_KEY: ContextVar[str | None] = ContextVar("seamkit.tool_call_key", default=None)


def current_call_key() -> str | None:
    """The key of the tool call running in this task, ``"<run id>:<step>:<tool call id>"`` (the
    effect ledger's key, :func:`~seamkit._durability.ledger.effect_key`), set by the agent loop
    around each call; ``None`` outside an agent loop's tool call (a tool invoked directly)."""
    return CALL_KEY.get()


@contextmanager
def calling(key: str | None) -> Iterator[None]:
    """Make ``key`` the :func:`current_call_key` inside the block (the agent loop's, and tests')."""
    token = CALL_KEY.set(key)
    try:
        yield
    finally:
        CALL_KEY.reset(token)


def child_run_id(call_key: str, agent: str) -> str:
    """The run id of the child run of agent ``agent`` that the tool call ``call_key`` starts:
    ``run_`` + 32 hex digits of SHA-256 over both, the same every time (a re-run parent names the
    same child), different for every other call or agent."""
    import hashlib  # here: ~4 ms of start-up for an agent that may start no child run

    digest = hashlib.sha256(f"seamkit.child\x00{call_key}\x00{agent}".encode()).hexdigest()
    return "run_" + digest[:32]


@dataclass(frozen=True, slots=True)
class ChildRunRequest:
    """One child run for a :class:`ChildRunDispatcher` to run elsewhere."""

    agent: Agent
    """The child agent as the tool runs it (its extra middlewares and ``max_steps`` applied); a
    dispatcher reads its ``name`` and ``checkpointer`` (where to wait for its checkpoints)."""
    tool: str | None
    """The agent tool's name (the remote side finds the same tool, so the same agent, by it);
    ``None`` for a workflow's agent step: the remote side finds the agent by its name."""
    task: str
    """The child's user message (the task, or the validated arguments as JSON text)."""
    run_id: str
    """The child's run id (:func:`child_run_id` when the call has a key, else a fresh one)."""
    parent_run_id: str
    """The calling run's id, recorded in the child's checkpoints."""
    ancestors: tuple[str, ...]
    """The run ids above the child, parent first (``ancestors[0] == parent_run_id``): a shared
    budget charges the child to the root run (``ancestors[-1]``)."""
    agent_depth: int
    """The child's depth (its caller's plus one)."""
    queue: str
    """Where the tool asked its children to go (a queue name the dispatcher understands)."""
    scope: Scope = field(default_factory=Scope)
    """Who the run is for (the caller's scope)."""


@dataclass(frozen=True, slots=True)
class ChildRunOutcome:
    """How a child run ended, as its latest checkpoint says."""

    run_id: str
    status: Literal["done", "failed", "suspended"]
    output: Any = None
    """``done``: the child's output (its typed output, or its answer's text)."""
    stop_reason: str | None = None
    """``done``: ``completed``, or why it stopped without an answer (``max_steps``...)."""
    usage: Usage | None = None
    """The child's usage (added to the caller's), ``None`` when unknown."""
    error: str | None = None
    """``failed``: the error (``"Type: message"``)."""
    failure_class: FailureClass | None = None
    """``failed``: the error's class when it had one (a provider's ``rate_limited``...)."""
    detail: str | None = None
    """``suspended``: what it waits for."""
    pending: tuple[Mapping[str, Any], ...] = ()
    """``suspended``: the calls waiting for approval (``{call_id, tool, arguments}``)."""


@runtime_checkable
class ChildRunDispatcher(Protocol):
    """Runs an agent tool's (or a workflow agent step's) child runs somewhere else (another worker)
    and waits for them. A run offers one in ``ctx.services[CHILD_RUNS_SERVICE]``; agent tools and
    agent steps with a ``queue`` use it."""

    async def run_child(self, request: ChildRunRequest, ctx: RunContext) -> ChildRunOutcome:
        """Run ``request``'s child (or find it: a child with that run id already started, or
        finished, is waited for or reported, never started again) and return its outcome once it
        is done, failed or suspended. ``ctx`` is the calling run's: stop waiting when its
        cancellation is cancelled (raise :class:`~seamkit.errors.RunCancelled`). Raises
        :class:`~seamkit.errors.ToolError` (the caller's model sees it as an error result) when the
        child cannot be dispatched, and :class:`~seamkit.errors.InfrastructureUnavailable` when
        what it dispatches through (a broker) cannot be reached: the caller's model is not told,
        the calling run stops unfinished and resumable."""
        ...
