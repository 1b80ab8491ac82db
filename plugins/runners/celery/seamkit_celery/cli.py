"""The bodies of ``seamkit worker``, ``seamkit submit`` and ``seamkit runs wait``. Each takes the
parsed arguments and returns an exit code; errors propagate to seamkit's ``main``, which prints them
(no traceback) and picks the exit code."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from seamkit.cli.main import EXIT_FAILED, EXIT_OK, EXIT_SUSPENDED, UsageError

__all__ = ["EXIT_TIMEOUT", "cmd_batch", "cmd_runs_wait", "cmd_submit", "cmd_worker"]

#: ``seamkit runs wait`` gave up (``--timeout``) before the run finished or suspended.
EXIT_TIMEOUT = 124


def _broker(args: argparse.Namespace) -> str:
    from seamkit.cli.scrub import scrub_output

    from seamkit_celery.app import broker_from_env, url_password

    try:
        url = broker_from_env(args.broker)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    password = url_password(url)
    if password:
        scrub_output([password])
    return url


def _checked(file: str, agent: str | None) -> Any:
    from seamkit.cli.scrub import scrub_output

    from seamkit_celery.task import QueueConfigError, load_checked

    try:
        composition, name = load_checked(file, agent)
    except QueueConfigError as exc:
        raise UsageError(str(exc)) from None
    scrub_output(composition.secret_values())
    return composition, name


def cmd_worker(args: argparse.Namespace) -> int:
    """``seamkit worker FILE [--concurrency N] [--queue NAME] [--pool prefork|solo]``: runs until
    stopped (SIGTERM: a warm shutdown that lets running runs finish)."""
    import os
    import socket

    from seamkit_celery.app import check_broker, make_app

    url = _broker(args)
    composition, name = _checked(args.file, args.agent_name)
    import asyncio

    agent = _build(composition, name)  # once here: a component that cannot be built fails now, not per run
    if agent.checkpointer is not None:
        asyncio.run(agent.checkpointer.close())
    app = make_app(url, visibility_timeout_s=args.visibility_timeout, queue=args.queue, composition=args.file,
                   requeue_after_s=args.requeue_after, sweep_every_s=0 if args.no_sweep else args.sweep_every)
    check_broker(app)
    worker = app.Worker(
        hostname=f"seamkit-{os.getpid()}@{socket.gethostname()}",
        concurrency=args.concurrency if args.pool == "prefork" else 1,
        pool=args.pool,
        queues=[args.queue],
        loglevel=args.loglevel,
        without_gossip=True,
        without_mingle=True,
        without_heartbeat=True,
        quiet=True,
    )
    sys.stderr.write(f"seamkit: worker {os.getpid()} ({args.pool}, {worker.concurrency} at once) consumes queue "
                     f"{args.queue!r} for agent {name!r}\n")
    sys.stderr.flush()
    worker.start()
    code = worker.exitcode
    return EXIT_OK if not code else int(code)


def _build(composition: Any, name: str) -> Any:
    """The agent ``name`` of ``composition``; :class:`~seamkit.cli.main.BuildFailed` when a
    component fails to build."""
    from seamkit.cli.main import BuildFailed
    from seamkit.composition import ComponentBuildError, build_agents

    try:
        return build_agents(composition)[name]
    except ComponentBuildError as exc:
        raise BuildFailed(exc.issues) from exc


def _decisions(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}

    def put(call_id: str, decision: dict[str, Any], flag: str) -> None:
        if not call_id:
            raise UsageError(f"{flag} needs a tool call id")
        if call_id in out:
            raise UsageError(f"call {call_id} has more than one decision")
        out[call_id] = decision

    for call_id in args.approve:
        put(call_id, {"approved": True, "arguments": None, "reason": None}, "--approve")
    for item in args.reject:
        call_id, sep, reason = item.partition("=")
        put(call_id, {"approved": False, "arguments": None, "reason": reason if sep else None}, "--reject")
    for item in args.edit:
        call_id, sep, text = item.partition("=")
        if not sep:
            raise UsageError(f"--edit {item}: write CALL_ID='{{...json arguments...}}'")
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--edit {call_id}: the arguments are not JSON ({exc.msg}, column {exc.colno})") from None
        if not isinstance(arguments, dict):
            raise UsageError(f"--edit {call_id}: the arguments must be a JSON object")
        put(call_id, {"approved": True, "arguments": arguments, "reason": None}, "--edit")
    return out


async def _snapshot(agent: Any, run_id: str) -> Any:
    cp = agent.checkpointer
    try:
        return await cp.latest(run_id)
    finally:
        await cp.close()


def cmd_submit(args: argparse.Namespace) -> int:
    """``seamkit submit FILE TASK [--run-id ID] [--var K=V]`` or ``seamkit submit FILE --resume RUN_ID
    [--approve ID] [--reject ID[=REASON]] [--edit ID=JSON]``: prints the run id; exit 0 once the
    message is on the broker."""
    import asyncio

    from seamkit.cli.commands import _check_variables, _existing_file, _read_task

    from seamkit_celery.app import make_app
    from seamkit_celery.task import make_spec

    decisions = _decisions(args)
    _existing_file(args.file)
    if args.resume is None and decisions:
        raise UsageError("--approve/--reject/--edit go with --resume RUN_ID")
    if args.resume is not None and (args.task is not None or args.var or args.run_id is not None):
        raise UsageError("--resume RUN_ID continues a run: it takes no TASK, --var or --run-id")
    if args.resume is None and args.task is None:
        raise UsageError("a TASK is required (or --resume RUN_ID)")
    url = _broker(args)
    composition, name = _checked(args.file, args.agent_name)
    if args.resume is not None:
        snap = asyncio.run(_snapshot(_build(composition, name), args.resume))  # that agent's store
        if snap is None:
            raise UsageError(f"no run {args.resume!r} in the store of {args.file}")
        if snap.status in ("done", "failed"):
            raise UsageError(f"run {args.resume} is {snap.status}: nothing to continue")
        if snap.status == "suspended" and snap.state.get("waiting_for") != "settlement":
            pending = {p.call_id for p in snap.state.get("pending_approvals") or () if hasattr(p, "call_id")}
            if not decisions:
                raise UsageError(f"run {args.resume} waits for a decision on {', '.join(sorted(pending))}: "
                                 "pass --approve/--reject/--edit CALL_ID")
            unknown = sorted(set(decisions) - pending)
            if unknown:
                raise UsageError(f"no pending tool call {', '.join(unknown)} in run {args.resume}; pending: "
                                 f"{', '.join(sorted(pending)) or 'none'}")
        elif decisions:
            raise UsageError(f"run {args.resume} is {snap.status}, not waiting for approval: "
                             "--approve/--reject/--edit do not apply")
        spec = make_spec(args.file, None, run_id=args.resume, agent=args.agent_name, decisions=decisions or None)
    else:
        task = _read_task(args.task)
        variables = dict(args.var)
        agent = _build(composition, name)
        try:
            _check_variables(agent, variables)
        finally:
            if agent.checkpointer is not None:
                asyncio.run(agent.checkpointer.close())
        spec = make_spec(args.file, task, run_id=args.run_id, agent=args.agent_name, variables=variables)
    app = make_app(url, queue=args.queue)
    if args.resume is not None:  # a continuation: the run has checkpoints, nothing to record
        from seamkit_celery.task import _send

        _send(app, spec, args.queue)
    else:
        from seamkit.composition import build_store

        from seamkit_celery.sent import SpecConflict
        from seamkit_celery.task import send_recorded

        try:
            asyncio.run(send_recorded(app, build_store(composition), spec, args.queue, close=True))
        except SpecConflict as exc:
            raise UsageError(str(exc)) from None
    sys.stdout.write(f"{spec['run_id']}\n")
    return EXIT_OK


def cmd_runs_wait(args: argparse.Namespace) -> int:
    """``seamkit runs wait RUN_ID --agent FILE [--timeout S] [--requeue-after S] [--json]``: exit 0
    done, 1 failed, stopped without an answer or rejected by a worker, 2 no such run submitted, 3
    suspended, 124 timed out. A run with no checkpoint yet is queued when its send record (see
    :mod:`seamkit_celery.sent`) says it was sent: it is waited for like a running one, and sent
    again when it stays unstarted ``--requeue-after`` seconds after its latest send."""
    import asyncio

    from seamkit.cli.commands import _load
    from seamkit.cli.render import visible

    from seamkit_celery.task import outcome_of

    composition, _ = _load(args.agent)
    assert composition is not None
    requeue_after = getattr(args, "requeue_after", None) or 60.0

    async def poll() -> tuple[Any, Any]:
        from seamkit.composition import build_store
        from seamkit.durability.checkpointer import Checkpointer

        from seamkit_celery.sent import mark_resent, read_record

        store = build_store(composition)
        if store is None:
            raise UsageError(f"{args.agent} has no checkpoint store ('checkpoints: null')")
        cp = Checkpointer(store, secrets=composition.secret_values())
        deadline = None if args.timeout is None else time.monotonic() + args.timeout
        pause = 0.05
        resend = _Resender(args)
        known: list[bool] = []

        async def batch_run(store: Any) -> bool:
            from seamkit_celery.batch import was_enqueued

            if not known:
                known.append(await was_enqueued(store, args.run_id))
            return known[0]

        try:
            while True:
                snap = await cp.latest(args.run_id)
                if snap is not None and snap.status != "running":
                    return snap, None
                if snap is None:
                    rec = await read_record(store, args.run_id)
                    if rec is None and await batch_run(store):
                        pass  # a batch's run: the batch records (and guards) it, not a send record
                    elif rec is None:
                        raise UsageError(f"no run {args.run_id!r} was submitted to the store of {args.agent} "
                                         "(no checkpoint, no send record)")
                    elif rec.state == "rejected":
                        return None, rec
                    elif time.time() - rec.sent_at >= requeue_after and resend.ready():
                        await mark_resent(store, rec)  # recorded first, as at submit
                        resend(rec, requeue_after)
                if deadline is not None and time.monotonic() >= deadline:
                    return snap, None
                await asyncio.sleep(pause if deadline is None else min(pause, max(0.0, deadline - time.monotonic())))
                pause = min(pause * 1.5, 1.0)
        finally:
            await cp.close()

    snap, rejected = asyncio.run(poll())
    if rejected is not None:
        why = rejected.reason or "no reason recorded"
        if args.json:
            sys.stdout.write(json.dumps({"run_id": args.run_id, "status": "rejected", "stop_reason": None,
                                         "output": None, "error": why, "detail": None, "pending_approvals": []},
                                        ensure_ascii=False) + "\n")
        else:
            sys.stderr.write(visible(f"seamkit: run {args.run_id} was rejected by a worker, nothing ran: {why}")
                             + "\n")
        return EXIT_FAILED
    if snap is None or snap.status == "running":
        where = "not started by any worker yet" if snap is None else "still running"
        if args.json:
            sys.stdout.write(json.dumps({"run_id": args.run_id, "status": "queued" if snap is None else "running"})
                             + "\n")
        sys.stderr.write(f"seamkit: run {args.run_id} is {where} after {args.timeout:g} s\n")
        return EXIT_TIMEOUT
    out = outcome_of(snap)
    if args.json:
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    elif out["status"] == "done":
        output = out["output"]
        sys.stdout.write((output if isinstance(output, str) else json.dumps(output, indent=2, ensure_ascii=False))
                         + "\n")
    if out["status"] == "done":
        if out["stop_reason"] not in (None, "completed"):
            sys.stderr.write(f"seamkit: run {args.run_id} stopped without an answer ({out['stop_reason']})\n")
            return EXIT_FAILED
        return EXIT_OK
    if out["status"] == "suspended":
        if not args.json:
            lines = [f"seamkit: run {args.run_id} is suspended: {out['detail'] or 'it waits for a person'}"]
            for p in out["pending_approvals"]:
                lines.append(f"  {p['call_id']}: {p['tool']}({json.dumps(p['arguments'], ensure_ascii=False)})")
            if out["pending_approvals"]:
                lines.append(f"continue it on the queue with: seamkit submit {args.agent} --resume {args.run_id} "
                             "--approve CALL_ID (or --reject CALL_ID)")
            sys.stderr.write("\n".join(visible(line) for line in lines) + "\n")
        return EXIT_SUSPENDED
    if not args.json:
        why = out["error"] or out["detail"] or "no error recorded"
        sys.stderr.write(visible(f"seamkit: run {args.run_id} failed: {why}") + "\n")
    return EXIT_FAILED


class _Resender:
    """Sends a recorded run again for ``runs wait`` (the broker of ``--broker`` or
    ``$SEAMKIT_BROKER_URL``); without a broker it says so once on stderr and sends nothing."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.app: Any = None
        self.no_broker = False

    def ready(self) -> bool:
        if self.app is None and not self.no_broker:
            try:
                url = _broker(self.args)
            except UsageError as exc:
                self.no_broker = True
                sys.stderr.write(f"seamkit: run {self.args.run_id} has not started; it cannot be sent again ({exc}); "
                                 "waiting\n")
                return False
            from seamkit_celery.app import make_app

            self.app = make_app(url)
        return self.app is not None

    def __call__(self, rec: Any, after: float) -> None:
        from seamkit_celery.app import QueueUnavailable
        from seamkit_celery.task import _send

        try:
            _send(self.app, dict(rec.spec), rec.queue)
        except QueueUnavailable as exc:
            sys.stderr.write(f"seamkit: {exc}; trying again in {after:g} s\n")
            return
        sys.stderr.write(f"seamkit: run {rec.run_id} had not started {after:g} s after it was sent (its message was "
                         f"most likely lost): sent it again to queue {rec.queue!r}\n")


def cmd_batch(args: argparse.Namespace) -> int:
    """``seamkit batch FILE INPUTS.jsonl``: :func:`seamkit_celery.batch_cli.cmd_batch`."""
    from seamkit_celery.batch_cli import cmd_batch as run

    return run(args)
