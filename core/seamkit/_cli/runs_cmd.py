"""``seamkit runs``: list, show, settle, delete and prune the runs of an agent's store. Each command
takes the parsed arguments and returns an exit code; errors propagate to
:func:`seamkit._cli.main.main`, which prints them and picks the exit code."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from seamkit._cli.commands import DEFAULT_DB, TOO_LONG, _with_store, is_context_length, no_run_text
from seamkit._cli.outcomes import EXIT_OK, UsageError

__all__ = ["cmd_runs_delete", "cmd_runs_list", "cmd_runs_prune", "cmd_runs_settle", "cmd_runs_show"]


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
