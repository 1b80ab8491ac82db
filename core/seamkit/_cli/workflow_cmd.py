"""The command line for workflows (``workflow:`` in the composition): ``seamkit run`` runs the
workflow, ``seamkit resume RUN --answer TEXT`` answers its gate (``--gate`` says which when several
wait), ``--event TYPE=JSON`` hands in an outside event (a plain resume continues an interrupted
run, ``--allow-finished`` a failed one), ``seamkit runs show`` prints its step tree.

Step events go to stderr, one line each (``--json``: one JSON object per event on stdout, then a
``workflow_finished`` or ``run_failed`` line); the output goes to stdout (text as it is, anything
else as JSON). Exit codes as ``seamkit run``: 0 done, 1 failed, 3 waiting at a gate or for an
outside event, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from seamkit._cli.outcomes import EXIT_OK, EXIT_SUSPENDED
from seamkit.values import StreamEvent

if TYPE_CHECKING:
    from seamkit._durability.checkpointer import RunSnapshot
    from seamkit._plugins.registry import Registry
    from seamkit.composition import Composition
    from seamkit.workflows import Activation, Workflow, WorkflowResult

__all__ = ["resume_workflow_cmd", "run_workflow_cmd", "show_workflow", "workflow_json"]

T = TypeVar("T")


class _Sink:
    """Step events as lines: human ones on stderr, or JSON on stdout."""

    def __init__(self, as_json: bool, secrets: frozenset[str]) -> None:
        from seamkit._cli.render import JsonRenderer

        self.json = JsonRenderer(secrets=secrets) if as_json else None

    def on_event(self, event: StreamEvent) -> None:
        if self.json is not None:
            self.json.event(event)
            return
        if event.kind != "step":
            return
        from seamkit._cli.render import visible

        d = event.data
        what = d["event"]
        arrow = "->" if what == "started" else "<-" if what == "finished" else "!!"
        line = f"{arrow} step {d['name']} ({d['activation']})"
        if what == "finished":
            line += " done" + (f": emitted {', '.join(d.get('emitted') or ())}" if d.get("emitted") else "")
        elif what == "failed":
            line += f" failed: {d.get('error')}"
        elif what == "suspended":
            line += f" waits for the person: {d.get('prompt')}"
        elif what == "skipped":
            line += " skipped (a fan-out of no branches)"
        sys.stderr.write(visible(line)[:400] + "\n")


def _routed(workflow: Workflow) -> frozenset[str]:
    """The names of ``workflow``'s yes/no gates (``on_yes`` / ``on_no``)."""
    return frozenset(s.name for s in workflow.steps if s.kind == "gate" and s.on_yes is not None)


def _print_result(result: WorkflowResult, sink: _Sink, agent_file: str | None, routed: frozenset[str]) -> int:
    """Print how the run ended (the output, or what it waits for with the command that continues
    it) and return the exit code: ``EXIT_OK`` or ``EXIT_SUSPENDED``."""
    from seamkit._cli.render import jsonable, resume_command, visible

    if sink.json is not None:
        sink.json._write({"kind": "workflow_finished", "run_id": result.run_id, "status": result.status,
                          "outcome": result.outcome, "output": jsonable(result.output),
                          "steps": len(result.steps), "warnings": list(result.warnings),
                          "awaiting": list(result.awaiting),
                          "waiting": [{"step": a.step, "activation": a.id, "prompt": p} for a, p in result.waiting]})
        return EXIT_SUSPENDED if result.status == "suspended" else EXIT_OK
    for w in result.warnings:
        sys.stderr.write(f"seamkit: warning: {visible(w)}\n")
    if result.status == "suspended" and result.awaiting:
        hand = resume_command(result.run_id, ("--event", f"{result.awaiting[0]}=JSON"), agent_file=agent_file)
        sys.stderr.write(visible(f"waiting for an outside event: {', '.join(result.awaiting)}") + "\n"
                         + "hand it in with: " + hand + "\n")
        return EXIT_SUSPENDED
    if result.status == "suspended":
        lines = ["waiting for the person:"]
        for a, prompt in result.waiting:
            lines.append(f"  {a.step} ({a.id}): {prompt}{_input_hint(a)}")
        several = len(result.waiting) > 1
        for a, _ in result.waiting if several else result.waiting[:1]:
            gate = (("--gate", a.id),) if several else ()
            lines.append(f"answer {a.step} ({a.id}) with: " if several else "answer with: ")
            if a.step in routed:  # a yes/no gate
                lines[-1] += resume_command(result.run_id, *gate, ("--answer", "yes"), agent_file=agent_file)
                lines.append("         or: " + resume_command(result.run_id, *gate, ("--answer", "no"),
                                                              agent_file=agent_file))
            else:
                lines[-1] += resume_command(result.run_id, *gate, ("--answer", "TEXT"), agent_file=agent_file)
        sys.stderr.write("\n".join(visible(x) for x in lines) + "\n")
        return EXIT_SUSPENDED
    out = result.output
    text = out if isinstance(out, str) else json.dumps(jsonable(out), indent=2, ensure_ascii=False)
    sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
    n = len(result.steps)
    sys.stderr.write(f"seamkit: workflow {result.run_id} done: outcome {result.outcome}, "
                     f"{n} step{'s' if n != 1 else ''}\n")
    return EXIT_OK


def _input_hint(a: Activation) -> str:
    """`` [input: ...]``: what a waiting gate decides about (a gate in a fan-out: which branch)."""
    from seamkit._cli.render import jsonable, truncate

    if not a.inputs:
        return ""
    payload = a.inputs[0].payload
    text = payload if isinstance(payload, str) else json.dumps(jsonable(payload), ensure_ascii=False)
    return f" [input: {truncate(text, 120)}]"


def _drive(work: Callable[[], Coroutine[Any, Any, T]], sink: _Sink, run_id: str, agent_file: str | None) -> T:
    """Run ``work`` interruptibly; when it raises, report it (``--json``: a ``run_failed`` line;
    otherwise, for an interruption or a failed step, the command that continues the run) and
    re-raise."""
    from seamkit._cli._loop import run_interruptible
    from seamkit._cli.outcomes import exit_code_for
    from seamkit._cli.render import resume_command
    from seamkit.errors import RunCancelled

    try:
        return run_interruptible(work())
    except (Exception, KeyboardInterrupt) as exc:
        if sink.json is not None:
            sink.json.failed(exc, exit_code_for(exc))
        elif isinstance(exc, KeyboardInterrupt | RunCancelled):
            sys.stderr.write(f"seamkit: workflow {run_id} was interrupted; continue it with: "
                             f"{resume_command(run_id, agent_file=agent_file)}\n")
        elif getattr(exc, "code", None) == "STEP_FAILED":
            sys.stderr.write(f"seamkit: workflow {run_id} failed; once the cause is fixed, run its failed step "
                             f"again with: {resume_command(run_id, '--allow-finished', agent_file=agent_file)}\n")
        raise


def _built(args: argparse.Namespace, composition: Composition, registry: Registry,
           run_id: str) -> tuple[Workflow, _Sink]:
    """The composition's workflow, its step events going to a new :class:`_Sink` (``--json``:
    for ``run_id``). Raises :class:`~seamkit._cli.main.BuildFailed` when a component fails to build."""
    import dataclasses

    from seamkit._cli.outcomes import BuildFailed
    from seamkit.composition import ComponentBuildError, build_workflow

    try:
        workflow = build_workflow(composition, registry=registry)
    except ComponentBuildError as exc:
        raise BuildFailed(exc.issues) from exc
    sink = _Sink(args.json, composition.secret_values())
    if sink.json is not None:
        sink.json.run_id = run_id
    return dataclasses.replace(workflow, observers=(*workflow.observers, sink)), sink


def run_workflow_cmd(args: argparse.Namespace, composition: Composition, registry: Registry, task: str,
                     agent_file: str | None, file: str) -> int:
    """``seamkit run FILE TASK`` for a composition with ``workflow:``: ``task`` is the start
    event's payload; ``file``: the composition's path, recorded with the run (a plain ``seamkit
    resume RUN`` finds it)."""

    from seamkit._cli.common import close_stores
    from seamkit._cli.outcomes import UsageError
    from seamkit._runtime.context import RunContext
    from seamkit.values import Scope
    from seamkit.workflows import run_workflow

    ctx = RunContext(scope=Scope(thread=args.thread)) if getattr(args, "thread", None) else RunContext()
    workflow, sink = _built(args, composition, registry, ctx.run_id)
    waits = workflow.external or any(s.kind == "gate" for s in workflow.steps)
    cp = workflow.checkpointer
    if waits and (cp is None or not getattr(cp.port, "persistent", True)):
        what = ("no checkpoint store" if cp is None
                else f"'{type(cp.port).__name__}', which does not outlive this process")
        raise UsageError(f"workflow {workflow.name} has gates or outside events: a run waiting for them is resumed "
                         f"from its checkpoints, and this file has {what} (use sqlite, postgres or redis)")
    try:  # a JSON object on the command line is the workflow's structured input
        parsed = json.loads(task)
    except ValueError:
        parsed = None
    data: Any = parsed if isinstance(parsed, dict) else task
    if sink.json is None:  # the run id first: after a crash it is what `seamkit resume` needs
        sys.stderr.write(f"seamkit: workflow {workflow.name} run {ctx.run_id}\n")
    agents = workflow.services.get("agents") or {}

    async def work() -> WorkflowResult:
        try:
            return await run_workflow(workflow, data, ctx=ctx, metadata={"agent_file": file})
        finally:
            for agent in agents.values():
                await close_stores(agent)

    result = _drive(work, sink, ctx.run_id, agent_file)
    return _print_result(result, sink, agent_file, _routed(workflow))


def resume_workflow_cmd(args: argparse.Namespace, composition: Composition, registry: Registry,
                        agent_file: str | None) -> int:
    """``seamkit resume RUN [--answer TEXT [--gate STEP|ACTIVATION]] [--event TYPE=JSON ...]
    [--allow-finished] [--steal]`` of a workflow run. Raises ``UsageError`` for options that do
    not apply to a workflow and for a run that cannot be resumed as asked."""

    from seamkit._cli.common import close_stores, read_task
    from seamkit._cli.outcomes import UsageError
    from seamkit.errors import RunNotResumable
    from seamkit.workflows import resume_workflow

    if getattr(args, "turn_id", None) is not None or any(
            getattr(args, k, None) for k in ("approve", "reject", "edit")):
        raise UsageError("a workflow takes --answer TEXT for its gate (and --allow-finished); "
                         "--turn-id and --approve/--reject/--edit do not apply")
    workflow, sink = _built(args, composition, registry, args.run_id)
    answer = read_task(args.answer, "answer") if args.answer is not None else None
    events = _events(getattr(args, "event", None) or [])
    if getattr(args, "gate", None) is not None and answer is None:
        raise UsageError("--gate says which gate --answer answers: pass --answer TEXT too")
    agents = workflow.services.get("agents") or {}

    async def work() -> WorkflowResult:
        try:
            return await resume_workflow(workflow, args.run_id, answer=answer, gate=getattr(args, "gate", None),
                                         events=events or None, allow_finished=args.allow_finished, steal=args.steal)
        finally:
            for agent in agents.values():
                await close_stores(agent)

    try:
        result = _drive(work, sink, args.run_id, agent_file)
    except (RunNotResumable, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return _print_result(result, sink, agent_file, _routed(workflow))


def _events(items: list[str]) -> dict[str, list[Any]]:
    """``--event TYPE=JSON`` options as external events by type. Raises ``UsageError``."""
    from seamkit._cli.outcomes import UsageError

    out: dict[str, list[Any]] = {}
    for item in items:
        kind, sep, text = item.partition("=")
        if not sep or not kind.strip():
            raise UsageError(f"--event takes TYPE=JSON, got {item!r:.80}")
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"--event {kind}: the payload is not JSON ({exc}); quote text as JSON: "
                             f"{kind}='\"text\"'") from None
        out.setdefault(kind.strip(), []).append(value)
    return out


def workflow_json(state: Mapping[str, Any]) -> dict[str, Any] | None:
    """For ``runs show --json``: the step tree of a workflow run (``None`` for another run):
    ``steps`` (finished activations in order, then the open ones: ``activation``, ``step``,
    ``status``, ``run_id``, ``branch`` (``[index, size]`` per enclosing fan-out), ``emitted``,
    ``error``, ``answer``), ``outcomes`` (``type``, ``payload``), and the ``workflow``'s name."""
    from seamkit._cli.render import jsonable
    from seamkit.workflows import workflow_state

    ws = workflow_state(state)
    if ws is None:
        return None

    def one(a: Activation) -> dict[str, Any]:
        return {"activation": a.id, "step": a.step, "status": a.status, "run_id": a.run_id,
                "branch": [[b.index, b.size] for b in a.frame], "emitted": list(a.emitted), "error": a.error,
                "answer": a.answer}

    return {"workflow": state.get("workflow"), "steps": [one(a) for a in (*ws.finished, *ws.active)],
            "outcomes": [{"type": e.type, "payload": jsonable(e.payload)} for e in ws.outcomes]}


def show_workflow(out: TextIO, snap: RunSnapshot, tree: dict[str, Any], agent_file: str | None) -> None:
    """For ``runs show``: the step tree (one line per activation, indented per fan-out level, with
    its child run id) and what the run waits for, with the command that continues it."""
    from seamkit._cli.render import resume_command, visible

    out.write(f"workflow {visible(str(tree['workflow']))}: {len(tree['steps'])} steps\n")
    for s in tree["steps"]:
        indent = "  " * (1 + len(s["branch"]))
        branch = "".join(f"[{i + 1}/{n}]" for i, n in s["branch"])
        tail = ((f" answered {s['answer']!r}" if s["answer"] is not None else "")
                + (f" -> {', '.join(s['emitted'])}" if s["emitted"] else "")
                + (f": {s['error']}" if s["error"] else ""))
        out.write(visible(f"{indent}{s['step']} {branch} ({s['activation']}) {s['status']} {s['run_id']}{tail}")[:300]
                  + "\n")
    if snap.status != "suspended":
        return
    if snap.state.get("waiting_for") == "event":
        awaiting = (snap.state.get("awaiting") or ["TYPE"])[0]
        out.write("hand the event in with: " + resume_command(snap.run_id, ("--event", f"{awaiting}=JSON"),
                                                              agent_file=agent_file) + "\n")
        return
    gates = [s for s in tree["steps"] if s["status"] == "waiting"]
    for s in gates:
        flags = (("--gate", s["activation"]),) if len(gates) > 1 else ()
        out.write(f"answer {visible(s['step'])} ({s['activation']}) with: "
                  + resume_command(snap.run_id, *flags, ("--answer", "TEXT"), agent_file=agent_file) + "\n")
