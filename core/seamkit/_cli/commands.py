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
    from seamkit._plugins.check import ComponentCheck
    from seamkit._plugins.check_isolated import CheckJob, RegistrySnapshot
    from seamkit._plugins.registry import Registry
    from seamkit.composition import Composition
    from seamkit.values import Message

T = TypeVar("T")

__all__ = ["cmd_new_plugin", "cmd_plugins", "cmd_run", "cmd_schema", "cmd_validate", "plugin_rows"]


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


def _info_json(info: Any) -> dict[str, Any]:
    import datetime as _dt

    return {
        "run_id": info.run_id,
        "version": info.version,
        "status": info.status,
        "parent_run_id": info.parent_run_id,
        "agent": info.metadata.get("agent"),
        "created_at": _dt.datetime.fromtimestamp(info.created_at, _dt.UTC).isoformat(),
    }


def cmd_runs_list(args: argparse.Namespace) -> int:
    """``seamkit runs list [--status S] [--limit N] [--agent FILE] [--json]``: a table with a header
    (see :mod:`seamkit._cli.runs_view`), or a JSON list of :func:`~seamkit._cli.runs_view.list_row`."""
    from seamkit._cli.runs_view import list_row, list_rows, print_runs_table

    if not 1 <= args.limit <= 100_000:
        raise UsageError("--limit must be between 1 and 100000")
    if args.agent is None and not Path(DEFAULT_DB).exists():  # nothing stored here yet: not an error
        if args.json:
            sys.stdout.write("[]\n")
        else:
            sys.stderr.write(f"no runs (no store yet at {DEFAULT_DB})\n")
        return EXIT_OK
    listed = _with_store(args, lambda cp: list_rows(cp, status=args.status, limit=args.limit))
    if args.json:
        sys.stdout.write(json.dumps([list_row(i, s) for i, s in listed], indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    if not listed:
        sys.stderr.write("no runs\n")
        return EXIT_OK
    print_runs_table(listed)
    return EXIT_OK


def cmd_runs_show(args: argparse.Namespace) -> int:
    """``seamkit runs show RUN_ID [--version V] [--agent FILE] [--json]``."""
    from seamkit._cli.render import call_json, jsonable, result_json, visible

    async def read(cp: Any) -> Any:
        snap = await (cp.latest(args.run_id) if args.version is None else cp.at_version(args.run_id, args.version))
        # calls a killed process left with an unknown outcome, before any resume recorded them
        interrupted = await cp.interrupted_effects(snap) if snap is not None and args.version is None else []
        if snap is None:
            return None, [], [], None, []
        from seamkit._cli.runs_view import summary_of

        history = await cp.history(args.run_id)
        head = next((i for i in history if i.version == snap.version), None)
        summary = await summary_of(cp, head if head is not None else snap, snap)
        children = await cp.list_runs(parent_run_id=args.run_id, limit=1000)
        return snap, history, interrupted, summary, list(reversed(children))

    snap, history, interrupted, summary, children = _with_store(
        args, read, lookup=(["seamkit", "runs", "show"], [args.run_id]))
    if snap is None:
        what = f"version {args.version} of run" if args.version is not None else "run"
        raise UsageError(no_run_text(args.run_id, args.agent, what, (["seamkit", "runs", "show"], [args.run_id])))
    state = {k: jsonable(v) for k, v in snap.state.items()}
    doc = {
        "run_id": snap.run_id,
        "version": snap.version,
        "status": snap.status,
        "parent_run_id": snap.parent_run_id,
        "metadata": {k: v for k, v in snap.metadata.items() if k != "lease_until"},
        "versions": [_info_json(i) for i in history],
        "state": state,
        "transcript": [{"role": m.role, "text": m.text,
                        "tool_calls": [call_json(c) for c in m.tool_calls],
                        "tool_results": [result_json(r) for r in m.tool_results]}
                       for m in snap.transcript],
        "interrupted_effects": [jsonable(e) for e in interrupted],
    }
    from seamkit._cli.runs_view import list_row

    # the same facts as `runs list` (creation time, duration, task, tokens, cost), why it failed,
    # and the runs it started
    doc["summary"] = list_row(snap, summary)
    error = snap.state.get("error")
    doc["error"] = error if snap.status == "failed" and isinstance(error, str) else None
    doc["children"] = [{"run_id": c.run_id, "status": c.status, "agent": c.metadata.get("agent")} for c in children]
    from seamkit._cli.workflow_cmd import show_workflow, workflow_json

    tree = workflow_json(snap.state)
    if tree is not None:
        doc["workflow"] = tree
        state.pop("workflow_state", None)  # its readable form is "workflow"
        state.pop("workflow_finished", None)
    kernel = _kernel_json(snap.state)
    if kernel is not None:
        doc["kernel"] = kernel
        # the raw kernel state keeps its facts and evidence as codec texts: "kernel" has them readable
        for raw in ("kernel", "kernel_facts", "kernel_evidence", "kernel_turns"):
            state.pop(raw, None)
    if args.json:
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n")
        return EXIT_OK
    out = sys.stdout
    from seamkit._cli.runs_view import show_head, step_lines

    error = snap.state.get("error")
    show_head(out, snap, summary, len(history), error if isinstance(error, str) else None)
    if snap.parent_run_id:
        out.write(f"parent: {visible(snap.parent_run_id)}\n")
    out.write("".join(line + "\n" for line in step_lines(snap, children)))
    detail = snap.state.get("status_detail")
    if isinstance(detail, str):
        out.write(f"detail: {visible(detail)}\n")
    for warning in snap.state.get("warnings") or ():  # e.g. what an advisory guardrail flagged
        if isinstance(warning, str):  # a traceback (SEAMKIT_DEBUG=1) keeps its lines
            out.write("warning: " + "\n  ".join(visible(x) for x in warning.split("\n")) + "\n")
    _show_ending(out, snap, args.agent, kernel)
    if kernel is not None:
        _show_kernel(out, snap, kernel, args.agent)
    if tree is not None:
        show_workflow(out, snap, tree, args.agent)
    pending = snap.state.get("pending_approvals")
    if pending:
        from seamkit._cli.render import pending_text

        out.write(pending_text(snap.run_id, pending, agent_file=args.agent) + "\n")
    effects = [*(snap.state.get("uncertain_effects") or ()), *interrupted]
    if effects:
        from seamkit._cli.render import uncertain_text

        text = uncertain_text(snap.run_id, effects, agent_file=args.agent)
        if text:
            out.write(text + "\n")
    return EXIT_OK


def _kernel_json(state: Any) -> dict[str, Any] | None:
    """For ``runs show``: the kernel state of a conversation with capabilities as JSON data
    (``None`` for another run): ``facts`` (type -> value), ``agenda`` and ``interactions`` (the
    open items, oldest first; an agenda item's private continuation left out), ``turns`` (the
    committed turn ids, oldest first), ``last_turn`` (the last committed one or ``None``) and
    ``turn_in_progress`` (the id of a turn that has not committed: running or interrupted).
    A fact text that does not decode gives ``{"error": ...}`` instead of the facts."""
    from seamkit._agent.kernel import kernel_state
    from seamkit._cli.render import jsonable
    from seamkit.errors import CodecError

    ks = state.get("kernel")
    if ks is None:
        return None
    try:
        found = kernel_state(state)
    except CodecError as exc:
        return {"error": f"its facts could not be read: {exc}"}
    if found is None:
        return None
    k = found[0]
    return {
        "facts": {t: jsonable(f.value) for t, f in k.facts.items()},
        "agenda": [{"id": a.id, "kind": a.kind, "capability": a.capability, "input": jsonable(a.input),
                    "turn_id": a.turn_id, "summary": a.summary, "waits_for": a.waits_for} for a in k.agenda],
        "interactions": [jsonable(i) for i in k.interactions],
        "turns": list(k.turns),
        "last_turn": k.turns[-1] if k.turns else None,
        "turn_in_progress": k.turn[0] if k.turn else None,
        "uncertain_effects": list(k.uncertain),
    }


def _show_kernel(out: Any, snap: Any, kernel: dict[str, Any], agent_file: str | None) -> None:
    """For ``runs show``: what a conversation with capabilities knows and holds (see
    :func:`_kernel_json`), one short line each, and what it asks the person."""
    from seamkit._agent.kernel import kernel_state
    from seamkit._cli.render import interactions_text, settle_command, truncate, visible

    if "error" in kernel:
        out.write(f"kernel: {visible(kernel['error'])}\n")
        return
    turns = kernel["turns"]
    last = f"last turn {kernel['last_turn']} ({len(turns)} committed)" if turns else "no turn committed"
    if kernel["turn_in_progress"]:
        last += f", turn {kernel['turn_in_progress']} not committed"
    out.write(f"turns: {visible(last)}\n")
    facts = kernel["facts"]
    out.write("facts:" + ("" if facts else " none") + "\n")
    for t, value in facts.items():
        short = truncate(json.dumps(value, ensure_ascii=False, default=str), 120)
        out.write(f"  {visible(t)} = {visible(short)}\n")
    for a in kernel["agenda"]:
        what = f"waits for {a['waits_for']}" if a["kind"] == "dependency" else "waits for confirmation"
        short = truncate(json.dumps(a["input"], ensure_ascii=False, default=str), 120)
        out.write(f"agenda {visible(a['id'])}: {visible(a['capability'])} {visible(short)} ({what}, "
                  f"turn {visible(a['turn_id'])})\n")
    found = kernel_state(snap.state)
    if found is None:
        return
    for key in found[0].uncertain:
        out.write(f"outcome unknown: {visible(key)}; check the outside system, then settle it with: "
                  + settle_command(snap.run_id, key, "applied", agent_file=agent_file) + "  or: "
                  + settle_command(snap.run_id, key, "not-applied", agent_file=agent_file) + "\n")
    # a turn in progress (interrupted) has asked nothing yet; a failed one will ask again
    if found[0].interactions and snap.status == "suspended":
        out.write(interactions_text(snap.run_id, found[0].interactions, agent_file=agent_file) + "\n")


def _show_ending(out: Any, snap: Any, agent_file: str | None, kernel: dict[str, Any] | None = None) -> None:
    """For ``runs show``: how a failed or interrupted run ended (its stored error or interruption)
    and the ``seamkit resume`` command that continues it, runnable as printed (``agent_file``: the
    ``--agent FILE`` the store was found with; ``kernel``: :func:`_kernel_json` of a conversation
    with capabilities, whose failed turn runs again and whose next turn takes ``--answer``)."""
    from seamkit._cli.render import resume_command, visible

    if snap.status == "failed":  # its error is shown first (seamkit._cli.runs_view.show_head)
        if kernel is not None and "error" not in kernel:
            turn = kernel["turn_in_progress"]
            if turn is not None:
                out.write(f"once the cause is fixed, run turn {visible(turn)} again with: "
                          + resume_command(snap.run_id, "--allow-finished", agent_file=agent_file) + "\n")
            out.write("or take the next turn with: "
                      + resume_command(snap.run_id, ("--answer", "TEXT"), agent_file=agent_file) + "\n")
        elif snap.state.get("tripwire"):
            out.write("a guardrail stopped this run; it cannot be resumed: start a new run\n")
        elif isinstance(snap.state.get("not_resumable"), str):  # e.g. a chat turn interrupted
            out.write("it cannot be resumed\n")
        elif is_context_length(snap.state.get("error")):
            out.write(TOO_LONG[0].upper() + TOO_LONG[1:] + "\n")
        elif not snap.state.get("redacted"):
            out.write("once the cause is fixed, continue it with: "
                      + resume_command(snap.run_id, "--allow-finished", agent_file=agent_file) + "\n")
    elif snap.status == "running" and isinstance(snap.state.get("interrupted"), str):
        why = snap.state["interrupted"].strip().rstrip(":")
        if why in ("CancelledError", "KeyboardInterrupt", "Terminated"):  # nothing more was said
            why = "stopped before it finished (Ctrl-C, SIGTERM, or its task cancelled)"
        out.write(f"interrupted: {visible(why)}\n")
        out.write("continue it with: " + resume_command(snap.run_id, agent_file=agent_file) + "\n")


def cmd_runs_settle(args: argparse.Namespace) -> int:
    """``seamkit runs settle RUN_ID CALL_ID applied|not-applied [--result TEXT] [--agent FILE]``:
    exit 0 when recorded; 2 for an unknown run or a call that is not an unsettled uncertain one.
    ``CALL_ID`` may be a capability's effect, ``capability:<capability id>:<key>``, or a workflow
    step's effect, ``<step run id>:<key>`` (``--result``: the JSON value its operation returned)."""
    from seamkit._cli.render import resume_command
    from seamkit._durability.checkpointer import CAPABILITY_EFFECT_PREFIX
    from seamkit.errors import RunNotResumable

    applied = args.outcome == "applied"
    if args.result is not None and not applied:
        raise UsageError("--result goes with 'applied' only: a call that was not applied has no result")

    async def settle(cp: Any) -> Any:
        snap = await cp.latest(args.run_id)
        if snap is None:
            return None  # said below, outside the event loop (the hint may look into other stores)
        settled = await cp.settle_effect(args.run_id, args.call_id, applied=applied, result=args.result)
        return snap.status, settled, "workflow_state" in snap.state

    try:
        found = _with_store(args, settle, lookup=(["seamkit", "runs", "settle"],
                                                  [args.run_id, args.call_id, args.outcome]))
    except (ValueError, RunNotResumable) as exc:
        raise UsageError(str(exc)) from None
    if found is None:
        raise UsageError(no_run_text(args.run_id, args.agent, command=(
            ["seamkit", "runs", "settle"], [args.run_id, args.call_id, args.outcome])))
    status, settled, workflow = found
    if workflow:
        then = "gets the recorded result without running it" if applied else "runs it again"
        if applied and args.result is None:
            then = "gets null as the effect's value (no --result was given) without running it"
        sys.stderr.write(f"settled effect {args.call_id} of step {settled.tool} of workflow run {args.run_id} as "
                         f"{args.outcome}: the step, run again, {then}: "
                         f"{resume_command(args.run_id, '--allow-finished', agent_file=args.agent)}\n")
        return EXIT_OK
    if args.call_id.startswith(CAPABILITY_EFFECT_PREFIX):
        then = ("returns the recorded result without running again" if applied
                else "runs again")
        later = resume_command(args.run_id, ("--answer", "TEXT"), agent_file=args.agent)
        sys.stderr.write(f"settled capability effect {args.call_id} of run {args.run_id} as {args.outcome}: "
                         f"the next time the capability runs this effect it {then} (the model proposes it "
                         f"in a later turn: {later})\n")
        return EXIT_OK
    done = f"settled call {args.call_id} of run {args.run_id} as {args.outcome}"
    if status == "done" or not settled.waits:
        # nothing reruns: the run is over, or the model was already told the outcome is unknown
        why = "the run is done" if status == "done" else "the model was already told that its outcome is unknown"
        sys.stderr.write(f"{done}; recorded only ({why}): nothing runs again\n")
        return EXIT_OK
    then = ("the call runs again when the run resumes" if not applied
            else "the model is told it was applied when the run resumes")
    flags = ("--allow-finished",) if status == "failed" else ()
    sys.stderr.write(f"{done}; {then}: {resume_command(args.run_id, *flags, agent_file=args.agent)}\n")
    return EXIT_OK


def cmd_runs_delete(args: argparse.Namespace) -> int:
    """``seamkit runs delete RUN_ID [--agent FILE]``."""
    async def delete(cp: Any) -> bool:
        snap = await cp.latest(args.run_id)
        held = cp.lease_holder(snap) if snap is not None and not args.force else None
        if held is not None:
            raise UsageError(f"run {args.run_id} is being run by {held[0]} right now; wait for it, or pass --force")
        return bool(await cp.delete(args.run_id))

    if not _with_store(args, delete, lookup=(["seamkit", "runs", "delete"], [args.run_id])):
        raise UsageError(no_run_text(args.run_id, args.agent, command=(["seamkit", "runs", "delete"], [args.run_id])))
    sys.stderr.write(f"deleted run {args.run_id}\n")
    return EXIT_OK


def cmd_runs_prune(args: argparse.Namespace) -> int:
    """``seamkit runs prune [--keep-last N] [--finished-days D] [--agent FILE]``."""
    import math
    import time

    if args.keep_last < 1:
        raise UsageError("--keep-last must be at least 1 (the latest version is what resume needs)")
    days = args.finished_days
    if days is not None and (not math.isfinite(days) or days < 0):
        raise UsageError("--finished-days must be a number of days, 0 or more")
    before = time.time() - days * 86400 if days is not None else None

    async def prune(cp: Any) -> tuple[int, int]:
        versions = await cp.prune(keep_last=args.keep_last, finished_before=before)
        keys = await cp.store.prune() if cp.store is not None else 0
        return versions, keys

    versions, keys = _with_store(args, prune)
    sys.stderr.write(f"pruned {versions} checkpoint version{'s' if versions != 1 else ''} and "
                     f"{keys} expired key{'s' if keys != 1 else ''}\n")
    return EXIT_OK


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


# -- plugins ---------------------------------------------------------------------------------------

COLUMNS = ("distribution", "version", "kind", "name", "status", "error")
#: ``--check``: seconds a component's import and factory may take (a blocking factory must not hang
#: CI), unless ``SEAMKIT_CHECK_TIMEOUT`` says otherwise
CHECK_TIMEOUT_S = 60.0
#: the kinds ``--check KIND/NAME`` takes for a plugin that adds CLI commands
COMMAND_KINDS = ("command", "plugin")


def check_timeout() -> float:
    """``SEAMKIT_CHECK_TIMEOUT`` (seconds, a number > 0), else :data:`CHECK_TIMEOUT_S`."""
    import math
    import os

    try:
        value = float(os.environ.get("SEAMKIT_CHECK_TIMEOUT", "").strip())
    except ValueError:
        return CHECK_TIMEOUT_S
    return value if value > 0 and math.isfinite(value) else CHECK_TIMEOUT_S


def plugin_rows(registry: Registry | RegistrySnapshot) -> list[dict[str, Any]]:
    """One row per installed component, one per plugin that failed (``kind`` ``plugin``, ``name``
    its entry-point name) and one per plugin that loaded but registered no component. Keys:
    ``distribution``, ``version``, ``kind``, ``name``, ``status`` (``ok``/``failed``), ``error``
    (``None`` when ok), ``plugin`` (entry-point name) and ``description``. A component that another
    distribution registers too is ``ok`` with an ``error`` saying it is ambiguous (a bare ``use:``
    of it is refused). A plugin whose commands failed keeps the rows of its components."""
    rows: list[dict[str, Any]] = []
    for report in registry.reports:
        base = {"distribution": report.distribution, "version": report.version, "plugin": report.plugin}
        if report.status == "failed" or not report.components:
            rows.append({**base, "kind": "plugin", "name": report.plugin, "status": report.status,
                         "error": report.error, "description": ""})
        for kind, name in report.components:
            desc = ""
            specs = registry.components.get(kind, {}).get(name, [])
            for spec in specs:
                if spec.plugin == report.plugin and spec.distribution == report.distribution:
                    desc = spec.description
            others = sorted({s.distribution for s in specs if s.distribution != report.distribution})
            error = (f"ambiguous: {', '.join(others)} also registers {kind} {name!r}; 'use: {name}' is refused "
                     f"without 'from: DISTRIBUTION'") if others else None
            rows.append({**base, "kind": kind, "name": name, "status": "ok", "error": error, "description": desc})
    rows.sort(key=lambda r: (r["status"] == "ok", r["distribution"], r["kind"], r["name"]))
    return rows


class _Checker:
    """Runs ``--check``'s checks: in child processes where the platform allows
    (:mod:`seamkit._plugins.check_isolated`: this process then imports no plugin at all), else here."""

    def __init__(self) -> None:
        from seamkit._plugins.check_isolated import load_isolated, supported

        self._child: Any = None
        self._excluded: list[str] = []
        self.registry: Registry | RegistrySnapshot
        if supported():
            try:
                self.registry, self._child, self._excluded = load_isolated()
            except RuntimeError as exc:  # no child could load the plugins: say why
                raise UsageError(str(exc)) from None
            self.isolated = True
        else:
            self.registry = _registry()
            self.isolated = False

    def run(self, jobs: list[CheckJob]) -> list[ComponentCheck]:
        from seamkit._plugins.check_isolated import check_isolated

        if self.isolated:
            child, self._child = self._child, None
            return check_isolated(jobs, timeout_s=check_timeout(), child=child, excluded=self._excluded)
        from seamkit._plugins.check import check_commands, check_component

        results = []
        registry = self.registry
        for job in jobs:
            if job.kind == "command":
                hook = next(h for h in registry.command_hooks() if (h[0], h[1]) == (job.plugin, job.distribution))
                results.append(check_commands(*hook))
                continue
            specs = registry.components[job.kind][job.name]
            spec = next(s for s in specs if s.plugin == job.plugin and s.distribution == job.distribution)
            results.append(check_component(spec, clashes=[s for s in specs if s is not spec],
                                           timeout_s=check_timeout()))
        return results

    def close(self) -> None:
        if self._child is not None:
            self._child.stop()
            self._child = None


def cmd_plugins(args: argparse.Namespace) -> int:
    """``seamkit plugins [--json] [--check [NAME]]``: installed components and plugin load reports
    (failed ones with their error); exit 1 when a plugin failed to load. ``--check NAME`` checks one
    component (``KIND/NAME``: of that kind); ``--check`` alone checks them all, each in a child
    process. Exit 1 when a check finds a problem. With ``--json``, a usage error (an unknown name,
    exit 2) is a JSON object on stdout too (``json_usage_error``), besides the message on stderr."""
    from seamkit._cli.common import CHECK_ALL
    from seamkit._cli.plugins_show import check_target, json_usage_error

    with json_usage_error(args.json):
        if args.check is None:
            return _list_plugins(_registry(), args)
        if args.check != CHECK_ALL:
            check_target(args.check)  # before starting any child process
        checker = _Checker()
        try:
            if args.check != CHECK_ALL:
                return _check_one(checker, args.check, as_json=args.json)
            return _list_plugins(checker.registry, args, checker)
        finally:
            checker.close()




def _list_plugins(registry: Registry | RegistrySnapshot, args: argparse.Namespace,
                  checker: _Checker | None = None) -> int:
    rows = plugin_rows(registry)
    failed = any(r["status"] == "failed" and r["kind"] == "plugin" for r in rows)
    if checker is not None:
        from seamkit._plugins.check_isolated import CheckJob

        commands = {(p, d) for p, d, _, _ in registry.command_hooks()}
        jobs: list[tuple[dict[str, Any], CheckJob]] = []
        for row in rows:
            if row["kind"] == "plugin":
                if (row["plugin"], row["distribution"]) in commands:  # its hook runs on a throwaway parser
                    jobs.append((row, CheckJob("command", row["plugin"], row["distribution"], row["version"],
                                               row["plugin"])))
                    continue
                row["check"] = "failed" if row["status"] == "failed" else "ok"
                row["problems"] = [row["error"]] if row["error"] else []
                row["notes"] = []
                continue
            jobs.append((row, CheckJob(row["kind"], row["name"], row["distribution"], row["version"], row["plugin"])))
        for (row, _), result in zip(jobs, checker.run([job for _, job in jobs]), strict=True):
            row["check"] = result.status
            row["problems"] = list(result.problems)
            row["notes"] = list(result.notes)  # private imports, processes left running...: shown, not failed
        for row in rows:  # the keys of --check NAME's rows too (CHECK_KEYS)
            row["ok"] = row["check"] != "failed"
            row["checked"] = row["check"] != "unchecked"
        failed = any(r["check"] == "failed" for r in rows)
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
        return EXIT_FAILED if failed else EXIT_OK
    import os

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 200)
    if not rows:
        limits = [f"{v}={os.environ[v]!r}" for v in ("SEAMKIT_LOAD_PLUGINS", "SEAMKIT_DISABLE_PLUGINS")
                  if v in os.environ]
        console.print("no plugins loaded" + (f" ({', '.join(limits)} in force)" if limits else ""))
        return EXIT_OK
    # the description says what each component is; errors (rare, long) go under the table, whole
    columns = (*COLUMNS[:5], "description") if args.check is None else (*COLUMNS[:5], "check", "problems")
    table = Table(*columns, show_lines=False, box=None, pad_edge=False)
    for r in rows:
        status = "[green]ok[/]" if r["status"] == "ok" else "[bold red]failed[/]"
        cells = [escape(r["distribution"]), escape(r["version"]), r["kind"], escape(r["name"]), status]
        if args.check is None:
            cells.append(escape((r["description"] or "").strip().split("\n")[0]
                                or ("failed to load (see below)" if r["status"] == "failed" else "")))
        else:
            cells.append({"ok": "[green]ok[/]", "unchecked": "[yellow]unchecked[/]"}.get(r["check"],
                                                                                         "[bold red]failed[/]"))
            cells.append(escape("; ".join(r["problems"])))
        table.add_row(*cells)
    console.print(table)
    if args.check is None:
        for r in rows:  # under the table: an error is as long as it needs
            if r["error"]:
                what = "plugin" if r["kind"] == "plugin" else r["kind"]
                console.print(escape(f"error: {what} {r['name']!r} ({r['distribution']} {r['version']}): "
                                     f"{r['error']}"), soft_wrap=True)
    for r in rows:  # under the table: a note is as long as it needs
        for note in r.get("notes", ()):
            console.print(escape(f"note: {r['kind']} {r['name']!r} ({r['distribution']}): {note}"), soft_wrap=True)
    return EXIT_FAILED if failed else EXIT_OK


def _check_one(checker: _Checker, target: str, *, as_json: bool) -> int:
    """``seamkit plugins --check NAME``: check every component called NAME (of the kind KIND for
    ``KIND/NAME``), or report the plugin NAME that failed to load. Exit 1 on a problem; a name that
    matches nothing is a usage error (exit 2) with the close names."""
    import difflib

    from seamkit._plugins.check_isolated import CheckJob

    registry = checker.registry
    kind, sep, name = target.rpartition("/")
    kind = {"schema": "schema_adapter"}.get(kind, kind)  # `seamkit new plugin`'s word for the kind
    kinds = sorted(registry.components)
    commands = not sep or kind in COMMAND_KINDS
    if sep and kind not in kinds and not commands:
        raise UsageError(f"no component of kind {kind!r} is installed (kinds: {', '.join(kinds) or 'none'}; "
                         f"command/NAME or plugin/NAME: a plugin that adds commands)")
    specs = [s for s in registry.all_components() if s.name == name and (not sep or s.kind == kind)]
    hooks = [h for h in registry.command_hooks() if name in (h[0], h[1])] if commands else []
    with_hooks = {(h[0], h[1]) for h in hooks}
    failed = [r for r in registry.reports if r.status == "failed" and (name in (r.plugin, r.distribution))
              and (not sep or commands) and (r.plugin, r.distribution) not in with_hooks]
    if not specs and not failed and not hooks:
        known = sorted({s.name for s in registry.all_components() if not sep or s.kind == kind}
                       | ({r.plugin for r in registry.reports if r.status == "failed"}
                          | {h[0] for h in registry.command_hooks()} if commands else set()))
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        what = f"{kind} component" if sep and not commands else "command plugin" if sep else \
            "component, command plugin or failed plugin"
        raise UsageError(f"no {what} named {name!r} is installed{hint} (see 'seamkit plugins')")

    jobs = [CheckJob.of(s) for s in sorted(specs, key=lambda s: (s.kind, s.distribution))]
    jobs += [CheckJob("command", h[0], h[1], h[2], h[0]) for h in hooks]
    results = checker.run(jobs)
    if as_json:  # the rows of `--check --json` (every component), those of NAME
        listed = {(r["kind"], r["name"], r["distribution"]): r for r in plugin_rows(registry)}
        out: list[dict[str, Any]] = []
        for r in failed:
            row = dict(listed.get(("plugin", r.plugin, r.distribution)) or {
                "distribution": r.distribution, "version": r.version, "plugin": r.plugin, "kind": "plugin",
                "name": r.plugin, "status": "failed", "error": r.error, "description": ""})
            out.append({**row, "check": "failed", "problems": [f"the plugin failed to load: {r.error}"],
                        "notes": [], "ok": False, "checked": True})
        for c in results:
            kind = "plugin" if c.kind == "command" else c.kind  # a command plugin's row in the listing
            row = dict(listed.get((kind, c.name, c.distribution)) or {
                "distribution": c.distribution, "version": c.version, "plugin": c.plugin, "kind": kind,
                "name": c.name, "status": "ok", "error": None, "description": ""})
            out.append({**row, "check": c.status, "problems": list(c.problems), "notes": list(c.notes),
                        "ok": c.ok, "checked": c.checked})
        sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    else:
        from seamkit._cli.render import visible

        lines: list[str] = []
        for r in failed:
            version = f" {r.version}" if r.version else ""
            lines.append(f"plugin {r.plugin!r} ({r.distribution}{version}): failed to load: {r.error}")
        for c in results:
            if c.ok:
                lines.append(f"{c.label}: {c.status}")
            else:
                n = len(c.problems)
                lines.append(f"{c.label}: {n} problem{'s' if n != 1 else ''}")
                lines += [f"  - {p}" for p in c.problems]
            lines += [f"  note: {note}" for note in c.notes]
        sys.stdout.write("".join(visible(line) + "\n" for line in lines))
    return EXIT_FAILED if failed or any(not c.ok for c in results) else EXIT_OK


# -- new plugin ------------------------------------------------------------------------------------


def cmd_new_plugin(args: argparse.Namespace) -> int:
    """``seamkit new plugin KIND NAME [--dir DIR]``: write a plugin distribution from the template
    of KIND (see :mod:`seamkit._cli.scaffold`)."""
    from seamkit._cli.scaffold import ScaffoldError, write_plugin

    parent = Path(args.dir)
    missing = next((p for p in reversed((parent, *parent.parents)) if not p.exists() and not p.is_symlink()), None)
    try:
        root = write_plugin(args.kind, args.name, parent)
    except ScaffoldError as exc:
        raise UsageError(str(exc)) from None
    if missing is not None:  # a typo in --dir must not go unnoticed
        sys.stderr.write(f"seamkit: note: --dir {args.dir}: {missing} did not exist; created it\n")
    # pip reads a bare "seamkit-x[test]" as a project name: a relative path needs its "./"
    shown = root.as_posix() if root.is_absolute() or root.as_posix().startswith(".") else f"./{root.as_posix()}"
    sys.stdout.write(
        f"created {shown}/: a {args.kind} plugin, component {args.name!r}\n"
        + _test_kit_step()
        + f"next: pip install -e '{shown}[test]' && pytest {shown}\n"
    )
    return EXIT_OK


def _test_kit_step() -> str:
    """A ``first:`` line when pytest-seamkit (the generated tests' kit, the ``[test]`` extra) is
    not installed: it is not on a package index yet, so ``pip install -e './x[test]'`` cannot find
    it; it comes from a seamkit checkout (this one's path, when seamkit runs from one)."""
    import importlib.util
    import shlex

    if importlib.util.find_spec("pytest_seamkit") is not None:
        return ""
    kit = Path(__file__).resolve().parents[3] / "testkit" / "pytest-seamkit"  # core/seamkit/_cli/ -> checkout
    where = shlex.quote(kit.as_posix()) if kit.is_dir() else "<seamkit checkout>/testkit/pytest-seamkit"
    return f"first: pip install -e {where}   (the test kit, pytest-seamkit, is not on a package index yet)\n"


def cmd_plugins_show(args: argparse.Namespace) -> int:
    """``seamkit plugins show NAME [--json]`` (see :mod:`seamkit._cli.plugins_show`)."""
    from seamkit._cli.plugins_show import cmd_plugins_show as show

    return show(args, _registry())
