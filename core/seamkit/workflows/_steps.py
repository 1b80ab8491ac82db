"""Steps from what seamkit already has: a Python function, an agent, a tool, a capability, a gate,
a nested workflow. Each returns a :class:`~seamkit.workflows._model.Step`; the keyword arguments
``consumes``, ``emits``, ``join`` and ``origin`` are the step's (see the model's module doc).

An agent step's input is its task: text as it is; a mapping with ``"messages"`` (a non-empty list
of :class:`~seamkit.values.Message` or ``{"role": "system" | "user" | "assistant", "text": str}``,
e.g. what a compose step puts together) as those messages, after the agent's own prompt;
anything else as JSON. Its output (the typed
output, or the reply text) is what it returns; ``pick`` takes one field of it (a list there fans
out). Rerun after a crash, an agent with a checkpointer continues its own child run from its
checkpoint instead of starting over. An agent that suspends for an approval inside a workflow is
a step failure naming the child run (approve it there; use a gate step for the workflow's own
human decisions).

An agent step built with ``queue=NAME`` hands its agent run to the
:class:`~seamkit._agent.child_runs.ChildRunDispatcher` the workflow run offers in ``ctx.services``
(:data:`~seamkit._agent.child_runs.CHILD_RUNS_SERVICE`; seamkit-celery's workers offer one), under
the activation's run id, and waits for its outcome: parallel activations then run on several
workers at once. Without a dispatcher it runs in-process as above (``queue`` is a request).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from seamkit.errors import StepError
from seamkit.values import Message, TextBlock, thaw
from seamkit.workflows._model import START, Step, StepFn, Workflow

if TYPE_CHECKING:
    from seamkit._agent.agent import Agent
    from seamkit._ports import ToolPort
    from seamkit.capabilities import Capability
    from seamkit.workflows._engine import StepContext

__all__ = ["StepError", "agent_step", "capability_step", "function_step", "gate", "tool_step", "workflow_step"]


_ROLES = ("system", "user", "assistant")


def _task(value: Any) -> str | list[Message]:
    """An agent step's task from its input (see the module doc). Raises :class:`StepError`
    ``INVALID_STEP_INPUT`` for a ``"messages"`` list that is empty or holds anything but messages."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and "messages" in value:
        return _messages(value["messages"])
    return json.dumps(thaw(value), ensure_ascii=False, default=str)


def _messages(items: Any) -> list[Message]:
    """``items`` (a ``"messages"`` value) as messages. Raises :class:`StepError` ``INVALID_STEP_INPUT``."""
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence) or not items:
        raise StepError("INVALID_STEP_INPUT", f"'messages' must be a non-empty list of messages, got {items!r:.80}")
    out: list[Message] = []
    for i, m in enumerate(items):
        if isinstance(m, Message):
            out.append(m)
        elif (isinstance(m, Mapping) and m.get("role") in _ROLES and isinstance(m.get("text"), str)):
            out.append(Message(m["role"], (TextBlock(m["text"]),)))
        else:
            raise StepError("INVALID_STEP_INPUT", f"messages[{i}] must be a Message or {{'role': "
                            f"{' | '.join(map(repr, _ROLES))}, 'text': str}}, got {m!r:.80}")
    return out


def _field(value: Any, name: str) -> Any:
    """The field ``name`` of ``value`` (a mapping key or an attribute). Raises :class:`StepError`
    ``MISSING_FIELD``."""
    if isinstance(value, Mapping):
        if name not in value:
            raise StepError("MISSING_FIELD", f"the output has no field {name!r} (has: {', '.join(map(str, value))})")
        return value[name]
    if hasattr(value, name):
        return getattr(value, name)
    raise StepError("MISSING_FIELD", f"the output ({type(value).__name__}) has no field {name!r}")


def _waits_for(state: Mapping[str, Any], run_id: str) -> str:
    """What the suspended agent run ``run_id`` waits for, with the command that gives it."""
    if state.get("waiting_for") == "settlement":
        return f"a person to settle a tool call whose outcome is unknown (seamkit runs settle {run_id} CALL_ID ...)"
    calls = [getattr(p, "call_id", "?") for p in state.get("pending_approvals") or ()]
    first = calls[0] if calls else "CALL_ID"
    return (f"an approval of {', '.join(calls) or 'a tool call'} (seamkit resume {run_id} --approve {first}, "
            "or --reject)")


def _types(value: tuple[str, ...] | str) -> tuple[str, ...]:
    """``consumes`` / ``emits`` as :class:`~seamkit.workflows._model.Step` stores them: one type
    given as text is a tuple of one."""
    return (value,) if isinstance(value, str) else tuple(value)


def function_step(fn: StepFn, *, name: str | None = None, consumes: tuple[str, ...] | str = (START,),
                  emits: tuple[str, ...] | str = (), join: bool = False, origin: str | None = None) -> Step:
    """A step running ``fn(ctx, input)`` (``name``: the function's name by default)."""
    return Step(name or fn.__name__, fn, _types(consumes), _types(emits), join, "function", origin=origin)


def agent_step(name: str, agent: Agent, *, consumes: tuple[str, ...] | str = (START,),
               emits: tuple[str, ...] | str = (), join: bool = False, pick: str | None = None,
               origin: str | None = None, queue: str | None = None) -> Step:
    """A step running ``agent`` as a child run on its input (see the module doc); ``queue``: the
    queue to hand the run to when the workflow run offers a dispatcher. Raises ``ValueError`` for
    a blank ``queue``; and (as the step's failure) :class:`StepError` ``AGENT_SUSPENDED`` when the
    agent waits for an approval or a settlement, ``INVALID_STEP_INPUT`` for a ``"messages"`` input
    that holds anything but messages (or any ``"messages"`` input, when the run goes to a queue:
    a queued run's task is text), ``MISSING_FIELD`` when ``pick`` names no field of the output;
    :class:`~seamkit.errors.ChildRunFailed` (with the child's failure class) when a queued run
    failed, :class:`~seamkit.errors.ToolError` when it could not be dispatched."""
    if queue is not None and (not isinstance(queue, str) or not queue.strip()):
        raise ValueError(f"step {name!r}: queue must be a non-blank queue name, got {queue!r}")

    async def run(ctx: StepContext, data: Any) -> Any:
        if queue is not None:
            from seamkit._agent.child_runs import CHILD_RUNS_SERVICE

            dispatcher = ctx.run.services.get(CHILD_RUNS_SERVICE)
            if dispatcher is not None:
                out = await _dispatched(dispatcher, ctx, data)
                return _field(out, pick) if pick is not None else out
        cp = agent.checkpointer
        child = await cp.latest(ctx.run.run_id) if ctx.resumed and cp is not None else None
        if child is not None and child.status == "suspended":  # a person has not decided yet
            raise StepError("AGENT_SUSPENDED", f"agent {agent.name!r} (run {child.run_id}) still waits for "
                            f"{_waits_for(child.state, child.run_id)}; then resume the workflow")
        if child is not None:
            result = await agent.resume(ctx.run.run_id, allow_finished=True, ctx=ctx.run)
        else:
            result = await agent.run(_task(data), ctx=ctx.run)
        ctx.add_usage(result.usage)
        if result.stop_reason == "suspended":
            what = _waits_for({"waiting_for": "settlement"} if result.uncertain_effects and not
                              result.pending_approvals else {"pending_approvals": result.pending_approvals},
                              result.run_id)
            raise StepError("AGENT_SUSPENDED", f"agent {agent.name!r} (run {result.run_id}) waits for {what}; "
                            "then resume the workflow")
        out = result.output
        return _field(out, pick) if pick is not None else out

    async def _dispatched(dispatcher: Any, ctx: StepContext, data: Any) -> Any:
        """The agent run handed to ``dispatcher`` (its output), mapped like the in-process run's."""
        from seamkit._agent.child_runs import ChildRunRequest
        from seamkit.errors import ChildRunFailed

        task = _task(data)
        if not isinstance(task, str):
            raise StepError("INVALID_STEP_INPUT", f"step {name!r} sends its agent run to the queue {queue!r}, whose "
                            "task is text: a 'messages' input cannot go there (remove queue: to run it in-process)")
        child = ctx.run  # the activation's context: its run id is checkpointed before it starts
        request = ChildRunRequest(
            agent=agent, tool=None, task=task, run_id=child.run_id, parent_run_id=ctx.workflow_run_id,
            ancestors=child.ancestors or (ctx.workflow_run_id,), agent_depth=child.agent_depth,
            queue=str(queue), scope=child.scope,
        )
        out = await dispatcher.run_child(request, child)
        if out.usage is not None:
            ctx.add_usage(out.usage)
        where = f"agent {agent.name!r} (run {out.run_id}, on queue {queue!r})"
        if out.status == "suspended":
            calls = [str(p.get("call_id")) for p in out.pending]
            what = out.detail or (f"an approval of {', '.join(calls)}" if calls else "a person")
            raise StepError("AGENT_SUSPENDED", f"{where} waits for {what}; then resume the workflow")
        if out.status == "failed":
            cls = f" ({out.failure_class})" if out.failure_class is not None else ""
            raise ChildRunFailed(out.run_id, out.status, f"{where} failed{cls}: {out.error or 'no error recorded'}",
                                 failure_class=out.failure_class)
        return out.output

    return Step(name, run, _types(consumes), _types(emits), join, "agent", origin=origin)


def tool_step(name: str, tool: ToolPort, *, consumes: tuple[str, ...] | str = (START,),
              emits: tuple[str, ...] | str = (), join: bool = False, origin: str | None = None) -> Step:
    """A step calling ``tool`` with its input as the arguments (a mapping; anything else is passed
    as the tool's one required parameter). A side-effecting tool runs through the effect ledger:
    exactly once per activation, also when the step runs again after a crash. Raises (as the
    step's failure) :class:`StepError` ``INVALID_STEP_INPUT`` for an input that is not a mapping
    when the tool does not have exactly one required parameter, and
    :class:`~seamkit.errors.ToolArgumentError` for arguments the tool refuses."""
    schema = tool.schema

    async def run(ctx: StepContext, data: Any) -> Any:
        if isinstance(data, Mapping):
            arguments = dict(thaw(data))
        else:
            required = list(schema.parameters.get("required") or ())
            if len(required) != 1:
                raise StepError("INVALID_STEP_INPUT", f"tool {schema.name!r} takes an object of arguments "
                                f"(its input was {type(data).__name__})")
            arguments = {required[0]: thaw(data)}
        valid = tool.validate(arguments)
        if schema.side_effecting:
            return await ctx.run_effect(f"tool:{schema.name}", lambda: tool.invoke(valid, ctx.run))
        return await tool.invoke(valid, ctx.run)

    return Step(name, run, _types(consumes), _types(emits), join, "tool", origin=origin)


def capability_step(name: str, capability: Capability, *, consumes: tuple[str, ...] | str = (START,),
                    emits: tuple[str, ...] | str = (), join: bool = False, ports: Mapping[str, Any] | None = None,
                    origin: str | None = None) -> Step:
    """A step executing one capability on its input (validated by the capability's input schema;
    its effects through the effect ledger). Its output is the ``Completed`` output. Raises (as the
    step's failure) :class:`StepError` with the capability's code for a ``Failed`` result, and
    ``CAPABILITY_NEEDS_TURN`` for a result that needs a conversation (input, a confirmation, a
    dependency: use the capability in an agent with capabilities)."""
    from seamkit.capabilities import compile_agent

    compiled = compile_agent([capability])

    async def run(ctx: StepContext, data: Any) -> Any:
        from seamkit.capabilities import Completed, Failed
        from seamkit.capabilities._executor import execute_capability

        if not isinstance(data, Mapping):
            raise StepError("INVALID_STEP_INPUT", f"capability {capability.ref} takes an object as its input "
                            f"(its input was {type(data).__name__})")
        arguments = thaw(data)
        result = await execute_capability(compiled, capability.id, arguments, ctx=ctx.run, ports=ports or {})
        if isinstance(result, Completed):
            return result.output
        if isinstance(result, Failed):
            raise StepError(result.code, result.message)
        raise StepError("CAPABILITY_NEEDS_TURN", f"{capability.ref} returned {type(result).__name__}: a workflow "
                        "step takes only a completed or failed result")

    return Step(name, run, _types(consumes), _types(emits), join, "capability", origin=origin)


def gate(name: str, prompt: str, *, consumes: tuple[str, ...] | str = (START,), emits: tuple[str, ...] | str = (),
         on_yes: str | None = None, on_no: str | None = None, join: bool = False, origin: str | None = None) -> Step:
    """A human gate: the workflow suspends until the person answers ``prompt`` (see
    :class:`~seamkit.workflows._model.Step`)."""
    return Step(name, None, _types(consumes), _types(emits), join, "gate", prompt, on_yes, on_no, origin)


def workflow_step(name: str, inner: Workflow, *, consumes: tuple[str, ...] | str = (START,),
                  emits: tuple[str, ...] | str = (), join: bool = False, origin: str | None = None) -> Step:
    """A nested workflow as one step: ``inner`` runs as a child run on the input; its output is the
    step's. Rerun after a crash, a durable ``inner`` continues from its checkpoint. Raises (as the
    step's failure) :class:`StepError` ``WORKFLOW_SUSPENDED`` when ``inner`` stops at a gate or
    waits for an outside event (both belong to the outer workflow), and what ``inner`` raises."""

    async def run(ctx: StepContext, data: Any) -> Any:
        from seamkit.workflows._engine import resume_workflow, run_workflow

        cp = inner.checkpointer
        if ctx.resumed and cp is not None and await cp.latest(ctx.run.run_id) is not None:
            result = await resume_workflow(inner, ctx.run.run_id, allow_finished=True, ctx=ctx.run)
        else:
            result = await run_workflow(inner, data, ctx=ctx.run)
        ctx.add_usage(result.usage)
        if result.status == "suspended":
            what = (f"waits for an outside event ({', '.join(result.awaiting)})" if result.awaiting
                    else "stopped at a gate")
            raise StepError("WORKFLOW_SUSPENDED", f"workflow {inner.name!r} (run {result.run_id}) {what}: gates and "
                            "outside events belong to the outer workflow")
        return result.output

    return Step(name, run, _types(consumes), _types(emits), join, "workflow", origin=origin, inner=inner)


