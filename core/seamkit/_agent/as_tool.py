"""An agent offered to another agent as a tool: :func:`agent_tool`.

The tool runs the agent as a **child run** of the calling run (``ctx.child()``): its own run id,
the caller recorded as its parent (in its checkpoints too, when it has a checkpointer), a
cancellation token cancelled with the caller's, and the caller's run ids as its ``ancestors``, so a
budget middleware instance shared by both charges the child's spend to every ancestor's ledger.
The child's usage is added to the caller's (:data:`CHILD_USAGE_KEY`).

Depth. A run's depth is how many agent tool calls it is nested in, ``ctx.agent_depth``: 0 for a
run no agent tool started (a top-level run, also one that is itself the child of a workflow or of
another run), and the tool gives its child run its caller's depth plus one. Other parents do not
count: an agent calls its agent tools the same way on its own and as a workflow step. The tool
refuses to start a child deeper than its ``max_depth`` with a :class:`~seamkit.errors.ToolError`
the model sees as an error result: a chain of agents calling agents (``A -> B -> C -> ...``) is
bounded at run time whatever built it.

Elsewhere. A tool built with ``queue=NAME`` hands its child runs to the
:class:`~seamkit._agent.child_runs.ChildRunDispatcher` the calling run offers in ``ctx.services``
(seamkit-celery's workers offer one that submits them to the queue ``NAME``), under a run id
derived from the tool call (a re-run caller finds its child instead of starting another); the
child's outcome comes back as the tool result (its usage added to the caller's), a failed child
as a :class:`~seamkit.errors.ChildRunFailed` error result. Without a dispatcher the child runs
in-process as above.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from seamkit._agent.child_runs import child_run_id, current_call_key
from seamkit._middleware import Middleware
from seamkit._runtime.context import RunContext
from seamkit.errors import ChildRunFailed, ToolArgumentError, ToolError
from seamkit.values import ToolSchema, Usage, freeze

if TYPE_CHECKING:
    from seamkit._agent.agent import Agent
    from seamkit._agent.output import OutputSpec

__all__ = ["AgentTool", "CHILD_USAGE_KEY", "DEFAULT_INPUT", "agent_tool", "agent_tool_name", "take_child_usage"]

#: The input schema of an agent tool without ``input=``: one required text, the task.
DEFAULT_INPUT: Mapping[str, Any] = freeze({
    "type": "object",
    "properties": {"task": {"type": "string", "description": "The task for the agent, written out in full"}},
    "required": ["task"],
    "additionalProperties": False,
})

#: Where an agent tool leaves the usage of its child runs in the calling run's ``ctx.state``
#: (a :class:`~seamkit.values.Usage`); the agent loop adds it to the run's usage after each tool
#: batch (:func:`take_child_usage`).
CHILD_USAGE_KEY = "seamkit.child_usage"


def take_child_usage(ctx: RunContext) -> Usage | None:
    """The usage child runs added to ``ctx`` since the last call (removed from it), or ``None``."""
    usage = ctx.state.pop(CHILD_USAGE_KEY, None)
    return usage if isinstance(usage, Usage) else None


def _add_child_usage(ctx: RunContext, usage: Usage) -> None:
    # no await between read and write: concurrent calls of one batch (one event loop) cannot interleave
    before = ctx.state.get(CHILD_USAGE_KEY)
    ctx.state[CHILD_USAGE_KEY] = before + usage if isinstance(before, Usage) else usage


class AgentTool:
    """A :class:`~seamkit._ports.ToolPort` running ``agent`` as a child run. Build it with
    :func:`agent_tool` (its docstring says what it does); ``agent`` is the agent as it runs (the
    extra middlewares and ``max_steps`` applied)."""

    __slots__ = ("_input", "_schema", "agent", "max_depth", "queue")

    def __init__(self, agent: Agent, schema: ToolSchema, input_spec: OutputSpec | None, max_depth: int,
                 queue: str | None = None) -> None:
        self.agent = agent
        self._schema = schema
        self._input = input_spec
        self.max_depth = max_depth
        self.queue = queue

    @property
    def schema(self) -> ToolSchema:
        return self._schema

    @property
    def name(self) -> str:
        return self._schema.name

    def __repr__(self) -> str:
        queued = f" queue={self.queue!r}" if self.queue is not None else ""
        return f"<agent tool {self.name} -> agent {self.agent.name!r} max_depth={self.max_depth}{queued}>"

    def validate(self, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
        """The arguments checked against the input schema; raises
        :class:`~seamkit.errors.ToolArgumentError` listing each problem."""
        from seamkit.errors import OutputValidationError

        if self._input is None:
            task = arguments.get("task") if isinstance(arguments, Mapping) else None
            extra = sorted(set(arguments) - {"task"}) if isinstance(arguments, Mapping) else []
            problems = [f"{k}: not an argument of this tool (it takes 'task')" for k in extra]
            if not isinstance(task, str) or not task.strip():
                problems.insert(0, "task: the task is required, as non-blank text")
            if problems:
                raise ToolArgumentError(self.name, problems)
            return {"task": task}
        try:
            value = self._input.parse(json.dumps(dict(arguments), default=str))
        except OutputValidationError as exc:
            raise ToolArgumentError(self.name, list(exc.problems)) from None
        return {"input": value}

    async def invoke(self, arguments: Mapping[str, Any], ctx: RunContext) -> Any:
        """Run the agent as a child of ``ctx``'s run on the validated ``arguments``; returns its
        typed output (shown to the model as JSON) or its answer's text. Raises
        :class:`~seamkit.errors.ToolError` when the child would be deeper than ``max_depth`` or
        stops without an answer, and whatever the child run raises (the model sees each as an error
        result; :class:`~seamkit.errors.RunCancelled` and ``asyncio.CancelledError`` stop the
        caller too). With a ``queue`` and a dispatcher in ``ctx.services`` the child runs there
        (see the module doc): a child that failed, suspended or stopped without an answer raises
        :class:`~seamkit.errors.ChildRunFailed`."""
        depth = ctx.agent_depth + 1
        if depth > self.max_depth:
            raise ToolError(
                f"agent {self.agent.name!r} was not run: it would run at depth {depth} (agents calling agents), "
                f"deeper than this tool's max_depth {self.max_depth}; answer with what you have"
            )
        if "task" in arguments:
            task = str(arguments["task"])
        else:
            task = json.dumps(_plain(arguments["input"]), ensure_ascii=False, default=str)
        if self.queue is not None:
            from seamkit._agent.child_runs import CHILD_RUNS_SERVICE

            dispatcher = ctx.services.get(CHILD_RUNS_SERVICE)
            if dispatcher is not None:
                return await self._dispatch(dispatcher, task, ctx, depth)
        # a child that raises (failed, cancelled) adds no usage here: its result is not known (a
        # budget middleware charged its calls all the same)
        child = ctx.child()
        child.agent_depth = depth
        key = current_call_key() if self.queue is not None else None
        if key is not None:
            # a queued tool's call is idempotent (see agent_tool): run in-process too, a re-run call
            # names the same child, continues it, or returns its stored result
            child.run_id = child_run_id(key, self.agent.name)
            result = await self._run_or_continue(task, child)
        else:
            result = await self.agent.run(task, ctx=child)
        _add_child_usage(ctx, result.usage)
        if result.stop_reason != "completed":
            why = {"max_steps": f"it stopped after {result.steps} model turns without an answer",
                   "suspended": "it waits for a person (an approval or an effect to settle)"}.get(
                       result.stop_reason, result.stop_reason)
            raise ToolError(f"agent {self.agent.name!r} (run {result.run_id}) gave no answer: {why}")
        return result.output


    async def _run_or_continue(self, task: str, child: RunContext) -> Any:
        """The child run ``child.run_id``: started, or (a re-run call) continued from its checkpoint,
        or its stored result when it is done. Raises :class:`~seamkit.errors.ChildRunFailed` for a
        child that failed before."""
        agent = self.agent
        cp = agent.checkpointer
        snap = await cp.latest(child.run_id) if cp is not None else None
        if snap is None:
            return await agent.run(task, ctx=child)
        if snap.status == "failed":
            raise ChildRunFailed(child.run_id, "failed", f"agent {agent.name!r} (run {child.run_id}) failed: "
                                 f"{snap.state.get('error') or 'no error recorded'}")
        return await agent.resume(child.run_id, ctx=child, allow_finished=snap.status == "done")

    async def _dispatch(self, dispatcher: Any, task: str, ctx: RunContext, depth: int) -> Any:
        """The child run handed to ``dispatcher`` (a :class:`~seamkit._agent.child_runs.ChildRunDispatcher`);
        its output, or :class:`~seamkit.errors.ChildRunFailed`."""
        from seamkit._agent.child_runs import ChildRunRequest
        from seamkit._runtime.context import new_run_id

        key = current_call_key()
        agent = self.agent
        request = ChildRunRequest(
            agent=agent, tool=self.name, task=task,
            run_id=child_run_id(key, agent.name) if key is not None else new_run_id(),
            parent_run_id=ctx.run_id, ancestors=(ctx.run_id, *ctx.ancestors), agent_depth=depth,
            queue=str(self.queue), scope=ctx.scope,
        )
        out = await dispatcher.run_child(request, ctx)
        if out.usage is not None:
            _add_child_usage(ctx, out.usage)
        where = f"agent {agent.name!r} (run {out.run_id}, on queue {self.queue!r})"
        if out.status == "done" and out.stop_reason in (None, "completed"):
            return out.output
        if out.status == "failed":
            cls = f" ({out.failure_class})" if out.failure_class is not None else ""
            raise ChildRunFailed(out.run_id, out.status, f"{where} failed{cls}: {out.error or 'no error recorded'}",
                                 failure_class=out.failure_class)
        if out.status == "suspended":
            calls = ", ".join(f"{p.get('tool')} ({p.get('call_id')})" for p in out.pending)
            waits = out.detail or (f"approval of {calls}" if calls else "a person")
            raise ChildRunFailed(out.run_id, out.status, f"{where} gave no answer: it waits for {waits}; a person "
                                 "must decide before it can go on, so answer without it or try again later")
        why = {"max_steps": "it stopped after its model turns ran out, without an answer"}.get(
            str(out.stop_reason), str(out.stop_reason))
        raise ChildRunFailed(out.run_id, out.status, f"{where} gave no answer: {why}")


def _plain(value: Any) -> Any:
    """A validated input value as JSON data (a pydantic model or dataclass dumped)."""
    import pydantic_core

    if isinstance(value, (dict, list, str, int, float, bool)) or value is None:
        return value
    return json.loads(pydantic_core.to_json(value))


def agent_tool_name(name: str) -> str:
    """The tool name an agent tool named ``name`` (its ``name=`` or its agent's name) gets:
    characters other than letters, digits, ``_`` and ``-`` replaced by ``_``, 64 at most
    (``agent`` for an empty name). The composition loader uses it to find tool-name clashes."""
    from seamkit._tools.registry import tool_name_of

    return tool_name_of(name)[:64] or "agent"


def agent_tool(
    agent: Agent,
    *,
    name: str | None = None,
    description: str | None = None,
    input: Any = None,
    max_depth: int = 3,
    max_steps: int | None = None,
    middlewares: Sequence[Middleware] = (),
    side_effecting: bool | None = None,
    queue: str | None = None,
) -> AgentTool:
    """``agent`` as a tool another agent can call: each call runs it as a **child run** of the
    calling run (``ctx.child()``: a new run id, the caller as parent, recorded in the child's
    checkpoints when it has a checkpointer; cancelling the caller cancels the child).

    :param agent: the agent to run (a tool-calling agent; not one with capabilities).
    :param name: the tool's name (default: the agent's name, characters other than letters,
        digits, ``_`` and ``-`` replaced by ``_``).
    :param description: what the model reads to decide when to call it (default: built from the
        agent's name and prompt id). Say what the agent does and what it returns.
    :param input: the arguments: ``None`` for ``{"task": string}`` (the task becomes the child's
        user message), a JSON Schema mapping (an object) or a Python type pydantic can describe
        (a model, a dataclass): the validated arguments are handed to the child as JSON text.
    :param max_depth: the deepest child run this tool starts: a run's depth is the number of
        agent tool calls it is nested in (``ctx.agent_depth``), so the child of a run no agent
        tool started (a top-level run, a workflow step) is at depth 1. Deeper calls get a
        :class:`~seamkit.errors.ToolError` result instead of a run.
    :param max_steps: the child's model turns (default: the agent's own ``max_steps``).
    :param middlewares: extra middlewares wrapping only the child's calls, outside the agent's
        own (e.g. a :class:`seamkit_budget.BudgetMiddleware` instance: its ceiling is this tool's
        budget share; the instance also links the child's ledger to its ancestors' in it, so the
        ceiling holds for each child run and for the total of all child runs under one caller).
        A budget middleware instance shared by the caller and the agent charges the child's spend
        to the caller's ceiling.
    :param side_effecting: whether a call changes anything outside the run (approvals and the
        effect ledger guard such calls); default: whether any tool of the agent is side-effecting.
    :param queue: run each child elsewhere: the name of a queue, handed with the child to the
        :class:`~seamkit._agent.child_runs.ChildRunDispatcher` the calling run provides in
        ``ctx.services`` (:data:`~seamkit._agent.child_runs.CHILD_RUNS_SERVICE`); a run without
        one runs the child in-process. Either way the child's run id is derived from the tool
        call (:func:`~seamkit._agent.child_runs.child_run_id`) and the tool is ``idempotent``: a
        call re-run after a crash finds its child (waits for it, continues it, or takes its stored
        result) instead of starting a second one. ``None`` (default): in-process, a new child
        run per call.
    :returns: an :class:`AgentTool`. The tool result is the child's typed output (JSON) or the
        text of its answer; the child's usage is added to the caller's.
    :raises ValueError: ``max_depth`` or ``max_steps`` below 1, an agent with capabilities, or an
        ``input`` that is not an object schema.
    :raises TypeError: ``agent`` is not an :class:`~seamkit._agent.agent.Agent`.
    """
    from seamkit._agent.agent import Agent
    from seamkit._agent.output import OutputSpec, output_spec

    if not isinstance(agent, Agent):
        raise TypeError(f"agent_tool takes an Agent, got {type(agent).__name__}")
    if agent.capabilities is not None:
        raise ValueError(f"agent {agent.name!r} has capabilities: it runs conversation turns, not tool calls")
    if max_depth < 1:
        raise ValueError("max_depth must be at least 1 (a child of a run no agent tool started is at depth 1)")
    if max_steps is not None and max_steps < 1:
        raise ValueError("max_steps must be at least 1")
    if queue is not None and (not isinstance(queue, str) or not queue.strip()):
        raise ValueError(f"queue must be a non-blank queue name, got {queue!r}")
    spec: OutputSpec | None = None
    params: Mapping[str, Any] = DEFAULT_INPUT
    if input is not None:
        spec = output_spec(input) if not isinstance(input, OutputSpec) else input
        if spec is None or spec.schema.get("type") != "object":
            raise ValueError("input must describe an object (a JSON Schema with type: object, a pydantic model or "
                             "a dataclass): tool arguments are named")
        params = spec.schema
    if description is None:
        description = (f"Ask the agent {agent.name!r} to do a task and return its answer"
                       + (" as JSON" if agent.output_spec is not None else "")
                       + ". It works on its own and sees only what you pass it.")
    if side_effecting is None:
        side_effecting = any(t.schema.side_effecting for t in agent.tools)
    # a queued tool's call is idempotent: a re-run call (after a crash) names the same child run and
    # finds it, so the effect ledger re-runs an interrupted call instead of waiting for a person
    schema = ToolSchema(agent_tool_name(name or agent.name), description, freeze(dict(params)), side_effecting,
                        idempotent=queue is not None)
    changes: dict[str, Any] = {}
    if middlewares:
        changes["middlewares"] = (*middlewares, *agent.middlewares)
    if max_steps is not None:
        changes["max_steps"] = max_steps
    if changes:
        agent = _replaced(agent, **changes)
    return AgentTool(agent, schema, spec, max_depth, queue)


def _replaced(agent: Agent, **changes: Any) -> Agent:
    """``agent`` with ``changes``; a prompt a request builder adopted stays with the builder only
    (setting it on both is refused)."""
    if agent.request_builder is not None and agent.request_builder.prompt is not None:
        changes.setdefault("prompt", None)
    return dataclasses.replace(agent, **changes)
