"""The built-in ``seamkit`` commands. Each takes the parsed arguments and returns an exit code;
errors propagate to :func:`seamkit._cli.main.main`, which prints them and picks the exit code."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from seamkit._cli.common import close_stores, existing_file, read_task
from seamkit._cli.outcomes import EXIT_FAILED, EXIT_OK, EXIT_SUSPENDED, BuildFailed, UsageError

if TYPE_CHECKING:
    from seamkit._agent.agent import Agent
    from seamkit._agent.result import AgentResult
    from seamkit._cli.render import EventSink
    from seamkit._plugins.registry import Registry
    from seamkit.composition import Composition
    from seamkit.values import Message

T = TypeVar("T")

__all__ = ["cmd_resume", "cmd_run", "cmd_schema", "cmd_stores_setup", "cmd_validate"]


def _registry() -> Registry:
    from seamkit._plugins.registry import get_registry

    return get_registry()


# -- run -------------------------------------------------------------------------------------------


def _check_variables(agent: Agent, variables: dict[str, str]) -> None:
    """Fail early (exit 2) when ``--var`` does not match the prompt template's variables."""
    from seamkit._agent.prompt import Prompt

    prompt = agent.prompt
    if isinstance(prompt, str):
        prompt = Prompt(prompt, id=agent.name)
    if prompt is None:
        if variables:
            raise UsageError(f"--var given ({', '.join(sorted(variables))}) but the agent has no prompt")
        return
    names = prompt.variables
    label = f"{prompt.id}@{prompt.version}"
    missing = sorted(names - variables.keys())
    if missing:
        what = "a variable" if len(missing) == 1 else "variables"
        raise UsageError(f"the prompt {label} needs {what} {', '.join(missing)}: pass "
                         f"{'it' if len(missing) == 1 else 'each'} with --var KEY=VALUE")
    extra = sorted(variables.keys() - names)
    if extra:
        has = f"its variables are {', '.join(sorted(names))}" if names else "it has no variables"
        raise UsageError(f"--var {', '.join(extra)}: the prompt {label} does not use "
                         f"{'it' if len(extra) == 1 else 'them'} ({has}); remove that --var")


async def _drive(
    agent: Agent, task: str, variables: dict[str, str], sink: EventSink, metadata: dict[str, Any],
    ctx: Any = None, started: list[str] | None = None, history: Sequence[Message] = (),
) -> AgentResult | None:
    """Run ``agent`` on ``task`` (after ``history``, the earlier messages of a conversation), each
    event to ``sink``; closes the sink and the agent's stores. Used by ``run`` and ``chat``."""
    result: AgentResult | None = None
    try:
        async for event in agent.stream(task, variables=variables or None, metadata=metadata, ctx=ctx,
                                        history=history):
            if event.kind == "run_started" and started is not None:
                started.append(event.run_id)  # its first checkpoint is written by now
            sink.event(event)
            if event.kind == "run_finished":
                result = event.data["result"]
    finally:
        sink.close()
        await close_stores(agent)
    return result


def built_agent(composition: Composition, registry: Registry) -> Agent:
    """The agent of ``composition``. A configuration the agent refuses is a ``ConfigError`` (exit
    2); a valid one whose component fails to build is :class:`BuildFailed` (the run failed, exit 1)."""
    from seamkit.composition import ComponentBuildError, build_agent

    try:
        return build_agent(composition, registry=registry)
    except ComponentBuildError as exc:
        raise BuildFailed(exc.issues) from exc


def cmd_run(args: argparse.Namespace) -> int:
    """``seamkit run FILE TASK [--json] [--var KEY=VALUE ...]``: exit 0 when the run completes,
    1 when it fails or stops without an answer (``max_steps``), 2 for a configuration problem
    (also one a component finds when built), 3 when it waits for a person, 4 when a guardrail stopped it
    (a tripwire; not resumable), 130 when interrupted
    (Ctrl-C) or cancelled (its cancellation token, e.g. from a tool: not a failure, the run stays
    resumable), 143 when terminated. With ``--json`` a failed run ends with a ``run_failed`` line
    on stdout."""
    variables = dict(args.var)
    path = existing_file(args.file)


    from seamkit._cli._loop import run_interruptible
    from seamkit._cli.outcomes import exit_code_for
    from seamkit._cli.overrides import overrides_of
    from seamkit._cli.render import HumanRenderer, JsonRenderer
    from seamkit._cli.scrub import scrub_output
    from seamkit._cli.status import with_status
    from seamkit.composition import load_composition

    registry = _registry()
    composition = load_composition(path, registry=registry, overrides=overrides_of(args))  # ConfigError: exit 2
    scrub_output(composition.secret_values())  # from here on, stdout and stderr mask the secrets
    if composition.workflow is not None:
        from seamkit._cli.workflow_cmd import run_workflow_cmd

        if variables:
            raise UsageError("--var fills an agent's prompt; a workflow's input is its task")
        return run_workflow_cmd(args, composition, registry, read_task(args.task),
                                _resume_agent_file(composition, args.file), str(path.resolve()))
    agent = built_agent(composition, registry)
    _check_variables(agent, variables)
    task = read_task(args.task)
    if agent.checkpointer is not None and agent.approvals and not getattr(agent.checkpointer.port, "persistent", True):
        raise UsageError(f"approvals need a store that outlives this process to resume from the command line; "
                         f"'{type(agent.checkpointer.port).__name__}' does not (use sqlite, postgres or redis)")
    from seamkit._runtime.context import RunContext
    from seamkit.values import Scope

    ctx = RunContext(scope=Scope(thread=args.thread)) if args.thread else RunContext()
    secrets = composition.secret_values()
    json_sink = JsonRenderer(secrets=secrets) if args.json else None
    if json_sink is not None:
        json_sink.run_id = ctx.run_id
    agent_file = _resume_agent_file(composition, args.file)
    sink: EventSink = (json_sink if json_sink is not None
                       else HumanRenderer(typed=agent.output is not None, secrets=secrets, agent_file=agent_file))
    sink = with_status(sink, json_output=args.json)  # a status line on a terminal's stderr
    started: list[str] = []
    metadata = run_metadata(path, args, composition)
    try:
        result = run_interruptible(_drive(agent, task, variables, sink, metadata, ctx, started))
    except (Exception, KeyboardInterrupt) as exc:
        if json_sink is not None:
            if not started:  # refused before it was stored (TaskTooLarge...): no run to name
                json_sink.run_id = None
            json_sink.failed(exc, exit_code_for(exc))
        elif started and agent.checkpointer is not None:
            _resume_hint(ctx.run_id, exc, agent_file, unstored=metadata.get(UNSTORED, ()))
        raise
    return _exit_for(result)


def run_metadata(path: Path, args: argparse.Namespace, composition: Composition, *,
                 overrides: Sequence[Any] | None = None) -> dict[str, Any]:
    """The metadata ``run`` and ``chat`` store with a run: the agent file, and the ``-m``/``-o``
    overrides it was started with (``seamkit resume`` applies them again; ``overrides``: those
    applied when not just ``args``'s, as a continued chat's). An override that may give
    ``composition`` (the one built with them) a secret is not stored
    (:func:`seamkit.composition._overrides.may_hold_secret`): a warning, naming it without its
    value, says that a resume will not have it."""
    from seamkit._cli.overrides import overrides_of
    from seamkit.composition._build import secret_texts
    from seamkit.composition._overrides import record_overrides

    meta: dict[str, Any] = {"agent_file": str(path.resolve())}
    if overrides is None:
        overrides = overrides_of(args)
    kept, left = record_overrides(overrides, secret_texts(composition) if overrides else ())
    if kept is not None:
        meta["overrides"] = kept
    if left:
        meta[UNSTORED] = left  # their labels (-o api_key), never their values
        sys.stderr.write(f"seamkit: warning: {', '.join(left)} not stored with the run (the value may be a secret): "
                         "a resume of this run uses the file's value\n")
    return meta


#: run metadata: the labels of the overrides a run was started with but does not store
UNSTORED = "overrides_not_stored"


def _resume_agent_file(composition: Composition, file: str) -> str | None:
    """The ``--agent FILE`` a printed ``seamkit resume`` command needs: ``file`` (as the user
    wrote it) when the composition names its own ``checkpoints:`` store, which ``seamkit resume``
    without ``--agent`` would not open (it reads the embedded default store); else ``None``."""
    return file if "checkpoints" in composition.agent.model_fields_set else None


#: what ``run`` and ``runs show`` say of a run whose prompt the provider refused as too long
TOO_LONG = ("its prompt does not fit the model's context window, so resuming it would fail the same way: "
            "start a new run with a shorter task, or with a larger context window (llamacpp: -o n_ctx=N; "
            "or a model with a larger context)")


def is_context_length(error: BaseException | str | None) -> bool:
    """Whether ``error`` (an exception, or a failed run's stored error text) is a provider's
    ``context_length`` refusal: the prompt is larger than the model's context window."""
    from seamkit.errors import FailureClass, ProviderError

    if isinstance(error, ProviderError):
        return error.failure_class is FailureClass.CONTEXT_LENGTH
    return isinstance(error, str) and error.startswith("ProviderError: ") and (
        f" {FailureClass.CONTEXT_LENGTH.value}: " in error.split("\n", 1)[0]
        or error.startswith(f"ProviderError: {FailureClass.CONTEXT_LENGTH.value}: "))


def _resume_hint(run_id: str, exc: BaseException, agent_file: str | None, *, unstored: Sequence[str] = ()) -> None:
    """The line saying how ``run_id`` goes on after ``exc`` (or that it does not); ``unstored``: the
    overrides it does not store, said on a line of their own after the command."""
    if _resume_line(run_id, exc, agent_file) and unstored:
        from seamkit._cli.overrides import unstored_note

        sys.stderr.write(f"seamkit: {unstored_note(unstored)}\n")


def _resume_line(run_id: str, exc: BaseException, agent_file: str | None) -> bool:
    """Print how ``run_id`` goes on; ``True`` when that is a ``seamkit resume`` command."""
    from seamkit._cli.render import resume_command, show_command
    from seamkit._guardrails import GuardrailTripped
    from seamkit.errors import CheckpointConflict, RunCancelled, RunNotResumable, StoreUnavailable, UnsupportedFeature

    if isinstance(exc, RunNotResumable | UnsupportedFeature):  # resuming would only repeat an UnsupportedFeature
        return False
    if is_context_length(exc):  # a resume sends the same prompt to the same window
        sys.stderr.write(f"seamkit: run {run_id} failed: {TOO_LONG}\n")
        return False
    if isinstance(exc, GuardrailTripped):  # not resumable: a resume must not slip past the guardrail
        sys.stderr.write(f"seamkit: run {run_id} was stopped by a guardrail; inspect it with: "
                         f"{show_command(run_id, agent_file=agent_file)}\n")
        return False
    if isinstance(exc, CheckpointConflict):
        sys.stderr.write(f"seamkit: run {run_id} was taken over by another worker (or deleted); "
                         "this process stopped without changing it\n")
        return False
    if isinstance(exc, KeyboardInterrupt | RunCancelled | StoreUnavailable):  # Ctrl-C, SIGTERM, cancel(), a store
        # not a failure: the run stays `running`, and a plain resume continues it
        what = ("terminated" if type(exc).__name__ == "Terminated"
                else f"cancelled ({exc})" if isinstance(exc, RunCancelled)
                else "stopped: a store it needs could not be reached" if isinstance(exc, StoreUnavailable)
                else "interrupted")
        sys.stderr.write(f"seamkit: run {run_id} was {what}; continue it with: "
                         f"{resume_command(run_id, agent_file=agent_file)}\n")
        return True
    else:
        sys.stderr.write(f"seamkit: run {run_id} failed; once the cause is fixed, continue it with: "
                         f"{resume_command(run_id, '--allow-finished', agent_file=agent_file)}\n")
    return True


def _exit_for(result: AgentResult | None) -> int:
    if result is None:  # the stream ended without run_finished: should not happen
        sys.stderr.write("seamkit: error: the run ended without a result\n")
        return EXIT_FAILED
    if result.stop_reason == "suspended":
        return EXIT_SUSPENDED
    if result.stop_reason != "completed":
        more = ("; a resume cannot give it more steps: start a new run with more (-o agent.max_steps=N)"
                if result.stop_reason == "max_steps" else "")
        sys.stderr.write(f"seamkit: error: the run stopped without an answer ({result.stop_reason}){more}\n")
        return EXIT_FAILED
    return EXIT_OK


# -- resume / runs / stores -------------------------------------------------------------------------


def _decisions(args: argparse.Namespace) -> dict[str, Any] | None:
    """The decisions of ``--approve`` / ``--reject`` / ``--edit`` (:class:`UsageError` for bad
    flags); ``None`` when none was given."""
    from seamkit._durability.approvals import decisions_from_data, parse_decision_flags

    try:
        data = parse_decision_flags(args.approve, args.reject, args.edit)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return decisions_from_data(data) or None


def _load(file: str | None) -> tuple[Composition | None, Registry]:
    from seamkit._cli.scrub import scrub_output
    from seamkit.composition import load_composition

    registry = _registry()
    if file is None:
        return None, registry
    composition = load_composition(existing_file(file), registry=registry)
    scrub_output(composition.secret_values())
    return composition, registry


def _checkpointer(composition: Composition | None, registry: Registry, *, must_exist: bool = True,
                  lookup: tuple[list[str], list[str]] | None = None) -> Any:
    """The checkpointer of ``composition``'s store (``None``: the embedded default). ``must_exist``:
    a missing default store is a :class:`UsageError` rather than created; ``lookup`` (a command's
    words and positionals, the run id first): that error then names the composition of the current
    directory whose own store has the run (see :func:`no_run_text`)."""
    from seamkit._durability.checkpointer import Checkpointer
    from seamkit.composition import build_store

    if composition is None and must_exist and not Path(DEFAULT_DB).exists():
        text = (f"no runs here: {DEFAULT_DB} does not exist (run this where you ran 'seamkit run', "
                "or pass --agent FILE to use that composition's store)")
        if lookup is not None:
            from seamkit._cli.run_lookup import elsewhere_hint

            hint = elsewhere_hint(lookup[1][0], registry, *lookup)
            if hint is not None:
                text += "\n" + hint
        raise UsageError(text)
    store = build_store(composition, registry=registry)
    if store is None:
        where = "this composition has 'checkpoints: null'" if composition is not None else (
            "no store is installed for the default (pip install seamkit-sqlite) — or pass --agent FILE")
        raise UsageError(f"no checkpoint store: {where}")
    secrets = composition.secret_values() if composition is not None else ()
    return Checkpointer(store, secrets=secrets)


DEFAULT_DB = ".seamkit/seamkit.db"


def no_run_text(run_id: str, agent_file: str | None, what: str = "run",
                command: tuple[list[str], list[str]] | None = None) -> str:
    """What ``resume``, ``runs show``, ``runs settle`` and ``runs delete`` say about a run the
    store does not have: which store was searched, and how to search another. ``command`` (the
    command's words and positionals): when the default store was searched, a composition of the
    current directory whose own SQLite store has the run is named, with that command and its
    ``--agent FILE`` (see :mod:`seamkit._cli.run_lookup`)."""
    if agent_file is not None:
        return (f"no {what} {run_id!r} in the store of {agent_file}; a run started from another composition "
                "is in that one's store (pass its file with --agent FILE), or in the default store (omit --agent)")
    text = (f"no {what} {run_id!r} in the default store ({DEFAULT_DB} in this directory); a run started from "
            "a composition that sets its own 'checkpoints:' is in that store: pass the file with --agent FILE")
    if command is not None:
        from seamkit._cli.run_lookup import elsewhere_hint

        hint = elsewhere_hint(run_id, _registry(), *command)
        if hint is not None:
            text += "\n" + hint
    return text


def cmd_resume(args: argparse.Namespace) -> int:
    """``seamkit resume RUN_ID [--agent FILE] [--approve ID] [--reject ID[=REASON]] [--edit ID=JSON]``:
    exit codes as ``run`` (3: it waits for approval again); 2 for an unknown run or bad decisions."""
    import asyncio

    from seamkit._cli.overrides import overrides_of
    from seamkit._cli.render import HumanRenderer, JsonRenderer, pending_text
    from seamkit._cli.scrub import scrub_output
    from seamkit._cli.status import with_status
    from seamkit.composition import load_composition
    from seamkit.composition._overrides import recorded_overrides
    from seamkit.errors import RunNotResumable, ToolArgumentError

    decisions = _decisions(args)
    composition, registry = _load(args.agent)
    if composition is None:
        # the store is the embedded default; the agent file is the one the run started with
        cp0 = _checkpointer(None, registry, lookup=(["seamkit", "resume"], [args.run_id]))
        found = asyncio.run(_recorded_agent_file(cp0, args.run_id))
        if found is None:
            raise UsageError(no_run_text(args.run_id, None, command=(["seamkit", "resume"], [args.run_id])))
        file = found[1]
        if file is None:
            raise UsageError(f"run {args.run_id} does not record its agent file, nor do its parent runs: "
                             "pass --agent FILE")
        if not Path(file).is_file():
            raise UsageError(f"the agent file of run {args.run_id} is gone ({file}): pass --agent FILE")
        composition = load_composition(Path(file), registry=registry)
        scrub_output(composition.secret_values())
    agent = built_agent(composition, registry)
    cp = agent.checkpointer
    if cp is None:
        raise UsageError("this composition has no checkpoints ('checkpoints: null'): nothing to resume")
    snap = asyncio.run(_latest(cp, args.run_id, close=False))
    if snap is None:
        asyncio.run(cp.aclose())
        raise UsageError(no_run_text(args.run_id, args.agent))
    # started with -m/-o: rebuilt as it ran; -m/-o given now apply after those (a bad override
    # the run started with can be replaced: `seamkit resume RUN -m llamacpp`)
    overrides = recorded_overrides(snap.metadata) + overrides_of(args)
    given = {o.label for o in overrides_of(args)}
    missing = [label for label in snap.metadata.get(UNSTORED) or () if isinstance(label, str) and label not in given]
    if missing:  # started with overrides it could not store: without them it runs as the file says
        sys.stderr.write(f"seamkit: warning: run {args.run_id} was started with {', '.join(missing)}, not stored "
                         "(the value may be a secret); without it again the file's value is used\n")
    if overrides and composition.file is not None:
        asyncio.run(cp.aclose())
        composition = load_composition(composition.file, registry=registry, overrides=overrides)
        scrub_output(composition.secret_values())
        agent = built_agent(composition, registry)
        cp = agent.checkpointer
        assert cp is not None
    if "workflow_state" in snap.state:
        asyncio.run(cp.aclose())
        if composition.workflow is None:
            raise UsageError(f"run {args.run_id} is a workflow run, and this file has no workflow: pass the "
                             "workflow's file with --agent FILE")
        from seamkit._cli.workflow_cmd import resume_workflow_cmd

        if decisions is not None:
            raise UsageError("a workflow takes --answer TEXT for its gate; --approve/--reject/--edit do not apply")
        return resume_workflow_cmd(args, composition, registry, args.agent)
    if getattr(args, "gate", None) is not None or getattr(args, "event", None):
        asyncio.run(cp.aclose())
        raise UsageError("--gate and --event are for workflow runs; this run is an agent's")
    named = snap.metadata.get("agent")
    if isinstance(named, str) and named != agent.name and named in composition.all_agents():
        # a run of another agent of the file (a workflow step's, an agent tool's child run): resume
        # it with that agent, its tools and approvals, from that agent's store
        asyncio.run(cp.aclose())
        agent, snap = _resume_other_agent(composition, registry, named, args)
        cp = agent.checkpointer
        assert cp is not None
    if agent.capabilities is not None:
        return _resume_turn(args, agent, composition, snap, decisions)
    if getattr(args, "answer", None) is not None or getattr(args, "turn_id", None) is not None:
        asyncio.run(cp.aclose())
        raise UsageError("--answer and --turn-id are for agents with capabilities; this one takes "
                         "--approve/--reject/--edit")
    if snap.status == "suspended" and snap.state.get("waiting_for") == "settlement":
        from seamkit._cli.render import uncertain_text

        waiting = [e for e in snap.state.get("uncertain_effects") or ()
                   if getattr(e, "waits", False) and getattr(e, "settled", "") is None]
        if waiting or decisions is not None:
            asyncio.run(cp.aclose())
            what = ("--approve/--reject/--edit do not apply: it waits for a person to settle a tool call whose "
                    "outcome is unknown, not for approval" if not waiting
                    else f"run {args.run_id} waits for a person to settle a tool call whose outcome is unknown")
            hint = uncertain_text(args.run_id, waiting, agent_file=args.agent) if waiting else ""
            raise UsageError(what + ("\n" + hint if hint else ""))
    elif snap.status == "suspended":
        if decisions is None:
            asyncio.run(cp.aclose())
            raise UsageError(f"run {args.run_id} waits for a decision\n"
                             + pending_text(args.run_id, snap.state.get("pending_approvals") or (),
                                            agent_file=args.agent))
        try:  # the decisions are for the agent holding the conversation (a handoff target, maybe)
            agent.check_decisions(args.run_id, snap.state, decisions)
        except (ValueError, ToolArgumentError, RunNotResumable) as exc:
            asyncio.run(cp.aclose())
            raise UsageError(str(exc)) from None
    elif decisions is not None:
        asyncio.run(cp.aclose())
        raise UsageError(f"run {args.run_id} is {snap.status}, not waiting for approval: "
                         "--approve/--reject/--edit do not apply")
    _check_finished(args, snap, cp)
    runner = None if getattr(args, "here", False) else _runner_of(snap, registry)
    if runner is not None:
        held = cp.lease_holder(snap)
        asyncio.run(cp.aclose())
        if held is not None:  # a worker is on it now: a continuation would only find it taken
            owner, left = held
            raise UsageError(f"run {args.run_id} is running on a worker ({owner}, lease for {left:.0f} s more): "
                             "there is nothing to continue; wait for it: "
                             + _wait_command(args.run_id, args.agent or str(composition.file)))
        return _requeue(args, runner, composition, agent.name, snap, decisions)
    secrets = composition.secret_values()
    json_sink = JsonRenderer(secrets=secrets) if args.json else None
    if json_sink is not None:
        json_sink.run_id = args.run_id
    # the store was found through --agent, or it is the embedded default that needs none
    sink: EventSink = (json_sink if json_sink is not None
                       else HumanRenderer(typed=agent.output is not None, secrets=secrets, agent_file=args.agent))
    sink = with_status(sink, json_output=args.json)

    result = _resume_streamed(args, agent, sink, json_sink, decisions=decisions)
    if snap.status == "done":
        # a finished run's stored result: nothing streamed, so show it as `seamkit run` would have
        _show_stored(result, sink, json_sink is not None)
    sink.close()
    return _exit_for(result)


def _check_finished(args: argparse.Namespace, snap: Any, cp: Any) -> None:
    """Refuse, as a usage error (exit 2, like every other misuse of ``seamkit resume``), to resume
    a finished run without ``--allow-finished`` (a run a guardrail stopped: that it cannot be
    resumed); the message gives the command that works. ``cp`` is closed before raising. With
    ``--allow-finished`` nothing changes: a done run prints its result, a failed one continues, one a
    guardrail stopped is refused by :meth:`~seamkit.Agent.resume` (exit 1)."""
    import asyncio

    from seamkit._cli.render import resume_command, show_command

    run_id, agent_file = args.run_id, args.agent
    if args.allow_finished:  # asked for: Agent.resume gives the result, continues, or refuses (exit 1)
        return
    if snap.state.get("tripwire"):
        why = f"run {run_id} was stopped by a guardrail; it cannot be resumed: start a new run (inspect it with: " \
              f"{show_command(run_id, agent_file=agent_file)})"
    elif isinstance(snap.state.get("not_resumable"), str):
        why = f"run {run_id} cannot be resumed: {snap.state['not_resumable']}"
    elif snap.status == "done" and snap.state.get("stop_reason") == "max_steps":
        why = (f"run {run_id} stopped at max_steps without an answer; it cannot be continued: start a new run "
               f"with more steps (seamkit run FILE TASK -o agent.max_steps=N); see it with: "
               + show_command(run_id, agent_file=agent_file))
    elif snap.status == "done":
        why = (f"run {run_id} cannot be resumed: it is done; to print its result: "
               + resume_command(run_id, "--allow-finished", agent_file=agent_file))
    elif snap.status == "failed":
        error = snap.state.get("error")
        why = (f"run {run_id} failed" + (f" ({error})" if isinstance(error, str) else "")
               + "; once the cause is fixed, continue it with: "
               + resume_command(run_id, "--allow-finished", agent_file=agent_file))
    else:
        return
    asyncio.run(cp.aclose())
    raise UsageError(why)


def _runner_of(snap: Any, registry: Any) -> tuple[str, Any] | None:
    """``(name, runner)`` of the runner that started the run ``snap`` (see :mod:`seamkit._runners`),
    ``None`` for a run started in a process of its own. A :class:`UsageError` when the runner is
    not installed here or fails to build (a broken plugin is reported, never a traceback)."""
    from seamkit._runners import queued_by
    from seamkit.errors import ComponentNotFound

    name = queued_by(snap.metadata)
    if name is None or snap.status in ("done", "failed"):
        return None
    try:
        return name, registry.build("runner", name)
    except ComponentNotFound:
        raise UsageError(f"run {snap.run_id} was started on the {name!r} queue, and no runner {name!r} is installed "
                         f"here (the plugin that provides it, e.g. seamkit-{name}): install it, or pass --here to "
                         "continue the run in this process") from None
    except Exception as exc:
        raise UsageError(f"run {snap.run_id} was started on the {name!r} queue, and its runner failed to load "
                         f"({type(exc).__name__}: {exc}); pass --here to continue the run in this process") from None


def _requeue(args: argparse.Namespace, runner: tuple[str, Any], composition: Any, agent_name: str, snap: Any,
             decisions: Mapping[str, Any] | None) -> int:
    """Hand the continuation of ``snap``'s run to ``runner`` (``seamkit resume`` on a queued run):
    prints the run id (stdout) and where it went (stderr); exit 0 once it is enqueued."""
    from seamkit._runners import RequeueRequest

    name, impl = runner
    file = str(Path(composition.file).resolve()) if composition.file is not None else None
    if file is None:
        raise UsageError(f"run {args.run_id} runs on the {name!r} queue, whose workers need the composition's file: "
                         "pass --agent FILE (or --here to continue it in this process)")
    request = RequeueRequest(file=file, agent=agent_name, run_id=args.run_id, decisions=decisions,
                             metadata=dict(snap.metadata))
    try:
        where = impl.requeue(request)
    except ValueError as exc:
        raise UsageError(f"run {args.run_id} runs on the {name!r} queue: {exc} (or pass --here to continue it in "
                         "this process)") from None
    sys.stdout.write(f"{args.run_id}\n")
    sys.stderr.write(f"seamkit: run {args.run_id} was started on the {name!r} queue; its continuation is enqueued "
                     f"on {where}. Wait for it: {_wait_command(args.run_id, args.agent or file)}\n")
    return EXIT_OK


def _wait_command(run_id: str, agent_file: str) -> str:
    """A ``seamkit runs wait RUN --agent FILE`` command line that works as printed (a path with
    spaces quoted: :func:`seamkit._cli.render.resume_command`'s rules)."""
    from seamkit._cli.render import _command_line

    return _command_line(["seamkit", "runs", "wait"], [run_id], [("--agent", agent_file)])


#: How many parent runs ``seamkit resume`` looks through for the agent file a run does not record.
_PARENT_LEVELS = 8


async def _recorded_agent_file(cp: Any, run_id: str) -> tuple[Any, str | None] | None:
    """``(latest checkpoint, agent file)`` of ``run_id`` in ``cp`` (closed after); ``None`` when
    the store has no such run. The file is the one the run records in its metadata, else the one
    the nearest of its parent runs records (``parent_run_id`` chain, at most :data:`_PARENT_LEVELS`
    up: an agent run that is a workflow step, or an agent tool's child, records none; the run
    started from the command line does); ``None`` when none of them records one."""
    try:
        first = await cp.latest(run_id)
        snap, seen = first, {run_id}
        for _ in range(_PARENT_LEVELS + 1):
            if snap is None:
                break
            file = snap.metadata.get("agent_file")
            if isinstance(file, str):
                return first, file
            parent = snap.parent_run_id
            if parent is None or parent in seen:
                break
            seen.add(parent)
            snap = await cp.latest(parent)
        return (first, None) if first is not None else None
    finally:
        await cp.aclose()


def _resume_other_agent(composition: Composition, registry: Registry, name: str,
                        args: argparse.Namespace) -> tuple[Agent, Any]:
    """The agent ``name`` of ``composition`` (not its entry agent) and the latest checkpoint of
    ``args.run_id`` in that agent's store; :class:`UsageError` when it has no store or the run is
    not in it, :class:`BuildFailed` when a component fails to build."""
    import asyncio

    from seamkit.composition import ComponentBuildError, build_agents

    try:
        agent = build_agents(composition, registry=registry)[name]
    except ComponentBuildError as exc:
        raise BuildFailed(exc.issues) from exc
    cp = agent.checkpointer
    if cp is None:
        raise UsageError(f"run {args.run_id} is a run of the agent {name!r}, which has no checkpoints "
                         "('checkpoints: null'): nothing to resume")
    snap = asyncio.run(_latest(cp, args.run_id, close=False))
    if snap is None:
        asyncio.run(cp.aclose())
        raise UsageError(no_run_text(args.run_id, args.agent))
    return agent, snap


def _resume_streamed(args: argparse.Namespace, agent: Agent, sink: EventSink, json_sink: Any,
                     **resume: Any) -> AgentResult:
    """``agent.resume(args.run_id, **resume)`` with its events going to ``sink``, the stores closed
    after; on an error or interruption the sink is closed (``--json``: the failure line; otherwise
    the command that continues an interrupted run) and the exception propagates."""
    import dataclasses

    from seamkit._cli._loop import run_interruptible
    from seamkit._cli.outcomes import exit_code_for
    from seamkit.errors import RunCancelled

    class _Observer:
        def on_event(self, event: Any) -> None:
            sink.event(event)

    observed = dataclasses.replace(agent, observers=(*agent.observers, _Observer()))

    async def _resume() -> AgentResult:
        try:
            return await observed.resume(args.run_id, allow_finished=args.allow_finished, steal=args.steal,
                                         **resume)
        finally:
            await close_stores(observed)

    try:
        return run_interruptible(_resume())
    except (Exception, KeyboardInterrupt) as exc:
        sink.close()
        if json_sink is not None:
            json_sink.failed(exc, exit_code_for(exc))
        elif isinstance(exc, KeyboardInterrupt | RunCancelled):
            _resume_hint(args.run_id, exc, args.agent)
        raise


def _resume_turn(args: argparse.Namespace, agent: Agent, composition: Composition, snap: Any,
                 decisions: dict[str, Any] | None) -> int:
    """``seamkit resume`` of a conversation with capabilities: ``--answer`` takes the next turn,
    ``--turn-id`` of a committed turn prints its stored result; without an answer an interrupted
    turn runs again."""
    import asyncio

    from seamkit._cli.render import HumanRenderer, JsonRenderer
    from seamkit._cli.status import with_status

    cp = agent.checkpointer
    assert cp is not None
    if decisions is not None:
        asyncio.run(cp.aclose())
        raise UsageError(f"run {args.run_id} is a conversation with capabilities: answer it with --answer TEXT "
                         "(yes / no to a confirmation); --approve/--reject/--edit do not apply")
    try:
        answer = read_task(args.answer, "answer") if args.answer is not None else None
        _check_turn_args(args, snap, answer)
    except UsageError:
        asyncio.run(cp.aclose())
        raise
    secrets = composition.secret_values()
    json_sink = JsonRenderer(secrets=secrets) if args.json else None
    if json_sink is not None:
        json_sink.run_id = args.run_id
    sink: EventSink = (json_sink if json_sink is not None
                       else HumanRenderer(secrets=secrets, agent_file=args.agent))
    sink = with_status(sink, json_output=args.json)

    result = _resume_streamed(args, agent, sink, json_sink, answer=answer, turn_id=args.turn_id)
    if result.turn is None or result.turn.replayed or (answer is None and snap.status == "done"):
        # a stored result: nothing streamed, so show it as the turn showed it
        from seamkit.values import FrozenDict, StreamEvent

        if json_sink is None and result.output and not getattr(result, "gathered", ()):  # the renderer shows it
            sink.event(StreamEvent("text", result.run_id, result.steps, text=str(result.output)))
        sink.event(StreamEvent("run_finished", result.run_id, result.steps,
                               data=FrozenDict(stop_reason=result.stop_reason, result=result)))
    sink.close()
    return _exit_for(result)


def _check_turn_args(args: argparse.Namespace, snap: Any, answer: str | None) -> None:
    """Refuse, as a usage error (exit 2) with the command that works, a ``seamkit resume`` of a
    conversation with capabilities that :meth:`Agent.resume` would refuse for its arguments: a
    ``--turn-id`` that is not an id, no ``--answer`` for a conversation that waits for the person
    or is over (``--steal`` changes nothing there), an ``--answer`` for an interrupted turn. Raises
    :class:`~seamkit._cli.main.UsageError`."""
    from seamkit._agent.agent import _turn_id
    from seamkit._agent.kernel import kernel_state
    from seamkit._cli.render import interactions_text, resume_command

    if args.turn_id is not None:
        try:
            _turn_id(args.turn_id)
        except ValueError:
            raise UsageError(f"--turn-id must be non-blank text of at most 200 characters, got "
                             f"{args.turn_id!r:.80}") from None
    found = kernel_state(snap.state)
    if found is None:
        return  # not a conversation: Agent.resume says so
    ks = found[0]
    if args.turn_id is not None and args.turn_id in ks.turns:
        return  # a committed turn: its stored result is printed
    interrupted = snap.status == "running" and ks.turn is not None
    run_id, agent_file = args.run_id, args.agent
    if interrupted and answer is not None and ks.turn is not None:
        raise UsageError(f"run {run_id}: turn {ks.turn[0]} was interrupted; run it again first (no --answer): "
                         + resume_command(run_id, agent_file=agent_file))
    failed_turn = snap.status == "failed" and ks.turn is not None
    if answer is not None or interrupted or (snap.status == "done" and args.allow_finished) or (
            failed_turn and args.allow_finished):
        return
    if failed_turn and ks.turn is not None:
        raise UsageError(f"run {run_id}: turn {ks.turn[0]} failed; once the cause is fixed, run it again: "
                         + resume_command(run_id, "--allow-finished", agent_file=agent_file)
                         + "; or take a new turn: "
                         + resume_command(run_id, ("--answer", "TEXT"), agent_file=agent_file))
    if snap.status == "suspended" and ks.interactions:
        raise UsageError(f"run {run_id} waits for the person's answer: pass it with --answer\n"
                         + interactions_text(run_id, ks.interactions, agent_file=agent_file))
    also = (f"; to print its last result: {resume_command(run_id, '--allow-finished', agent_file=agent_file)}"
            if snap.status == "done" else "")
    raise UsageError(f"run {run_id} is {snap.status}: its next turn needs the person's message: "
                     + resume_command(run_id, ("--answer", "TEXT"), agent_file=agent_file) + also)


def _show_stored(result: AgentResult, sink: EventSink, as_json: bool) -> None:
    from seamkit.values import FrozenDict, StreamEvent

    if as_json:
        sink.event(StreamEvent("run_finished", result.run_id, result.steps,
                               data=FrozenDict(stop_reason=result.stop_reason, result=result)))
        return
    out = result.output
    if isinstance(out, str):
        sys.stdout.write(out + ("" if out.endswith("\n") else "\n"))
    else:
        sys.stdout.write(json.dumps(_jsonable(out), indent=2, ensure_ascii=False) + "\n")


def _jsonable(value: Any) -> Any:
    from seamkit._cli.render import jsonable

    return jsonable(value)


def _with_store(args: argparse.Namespace, work: Callable[[Any], Awaitable[T]], *, must_exist: bool = True,
                lookup: tuple[list[str], list[str]] | None = None) -> T:
    """Open the checkpoint store of ``--agent FILE`` (or the embedded default), run ``work(cp)``
    with its :class:`~seamkit._durability.checkpointer.Checkpointer`, and close the store
    (``must_exist``, ``lookup``: as :func:`_checkpointer`)."""
    import asyncio

    composition, registry = _load(args.agent)
    cp = _checkpointer(composition, registry, must_exist=must_exist, lookup=lookup)

    async def go() -> T:
        try:
            return await work(cp)
        finally:
            await cp.aclose()

    return asyncio.run(go())


async def _latest(cp: Any, run_id: str, *, close: bool = True) -> Any:
    try:
        return await cp.latest(run_id)
    finally:
        if close:
            await cp.aclose()


def cmd_stores_setup(args: argparse.Namespace) -> int:
    """``seamkit stores setup [--agent FILE]``: apply the store's schema migrations."""
    async def setup(cp: Any) -> tuple[str, bool]:
        store = cp.port
        migrate = getattr(store, "setup", None)
        if migrate is not None:
            await migrate()
        else:
            await store.list_runs(limit=1)  # opens (and creates) it: a broken store fails here
        return type(store).__name__, migrate is not None

    name, migrated = _with_store(args, setup, must_exist=False)
    what = "schema is up to date" if migrated else "ready (it needs no migrations)"
    sys.stderr.write(f"{name}: {what}\n")
    return EXIT_OK


# -- validate --------------------------------------------------------------------------------------


def _agent_tool_summary(t: Any) -> str:
    queue = t.queue_name()
    return f"agent {t.agent}" + (f" (queue {queue})" if queue is not None else "")


def describe(composition: Composition) -> str:
    """One line naming the agent, its model component, tools, middlewares, capabilities and output kind (never
    their parameters, which may hold secrets)."""
    a = composition.agent
    from seamkit.composition._models import AgentToolRef

    tools = ", ".join(_agent_tool_summary(t) if isinstance(t, AgentToolRef) else t.use for t in a.tools) or "none"
    parts = [f"agent {a.name or 'agent'!r}", f"model {a.model.use}", f"tools: {tools}"]
    if a.middlewares:
        parts.append(f"middlewares: {', '.join(m.use for m in a.middlewares)}")
    if a.capabilities:
        parts.append(f"capabilities: {', '.join(c.use for c in a.capabilities)}")
    if a.handoffs:
        parts.append(f"handoffs: {', '.join(h.agent for h in a.handoffs)}")
    parts.append(f"output: {'typed (JSON Schema)' if a.output is not None else 'text'}")
    if composition.agents:
        parts.append(f"more agents: {', '.join(composition.agents)}")
    w = composition.workflow
    if w is not None:
        parts.append(f"workflow: {len(w.steps)} steps ({', '.join(w.steps)}), outcomes: {', '.join(w.outcomes)}")
    return ", ".join(parts)


def cmd_validate(args: argparse.Namespace) -> int:
    """``seamkit validate FILE``: prints ``ok: ...`` (exit 0); problems raise ``ConfigError`` (exit 2).

    The tools are built (only them) to check what the model will be told about each: an empty
    description is an error, a very short one a warning on stderr. A middleware order that hides
    calls from one meant to see them all (``audit`` after ``memoize``) is a warning, and so is an agent
    tool whose child runs go to the queue their caller is consumed from (a deadlock). The
    capabilities are built and compiled (:func:`~seamkit.capabilities.compile_agent`): each compile problem is an error
    ``FILE:LINE:COL: agent.capabilities[i]: CODE: message``."""
    path = existing_file(args.file)
    from seamkit._cli.scrub import scrub_output
    from seamkit.composition import load_composition
    from seamkit.composition._build import (
        capability_issues,
        child_queue_issues,
        middleware_order_issues,
        tool_description_issues,
    )
    from seamkit.errors import ConfigError

    registry = _registry()
    composition = load_composition(path, registry=registry)
    scrub_output(composition.secret_values())
    errors, warnings = tool_description_issues(composition, registry=registry)
    errors = [*errors, *capability_issues(composition, registry=registry)]
    if errors:
        raise ConfigError(errors)
    for w in (*warnings, *middleware_order_issues(composition, registry=registry), *child_queue_issues(composition)):
        sys.stderr.write(f"seamkit: warning: {w}\n")
    from seamkit._cli.run_lookup import checkpoints_line

    sys.stdout.write(f"ok: {args.file}: {describe(composition)}\n{checkpoints_line(composition, args.file)}\n")
    return EXIT_OK


# -- schema ----------------------------------------------------------------------------------------


def cmd_schema(args: argparse.Namespace) -> int:
    """``seamkit schema [--output FILE]``: the composition JSON Schema, every installed component's
    config included."""
    from seamkit.composition import composition_json_schema

    if args.output is not None and not args.output.strip():
        raise UsageError("--output needs a file name (omit it to print the schema on stdout)")
    schema = composition_json_schema(_registry())
    text = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    if args.output is not None:
        out = Path(args.output)
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        sys.stderr.write(f"seamkit: wrote the schema to {args.output}\n")
    else:
        sys.stdout.write(text)
    return EXIT_OK
