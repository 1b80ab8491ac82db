"""The bodies of ``seamkit worker``, ``seamkit submit`` and ``seamkit runs wait``. Each takes the
parsed arguments and returns an exit code; errors propagate to seamkit's ``main``, which prints them
(no traceback) and picks the exit code."""

from __future__ import annotations

import argparse
import functools
import json
import logging
import shlex
import sys
import time
from typing import Any

from seamkit.errors import SeamkitError
from seamkit.plugin import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_SUSPENDED, UsageError

__all__ = ["EXIT_TIMEOUT", "MAX_CONCURRENCY", "WorkerStartFailed", "cmd_batch", "cmd_runs_wait", "cmd_submit",
           "cmd_worker"]

#: ``seamkit runs wait`` gave up (``--timeout``) before the run finished or suspended.
EXIT_TIMEOUT = 124


def _broker(args: argparse.Namespace) -> str:
    from seamkit.plugin import MIN_SECRET_LENGTH, scrub_output

    from seamkit_celery.app import broker_from_env, check_broker_url, url_secrets

    try:
        url = broker_from_env(args.broker)
        # before anything can print it (shorter ones would mask common text; mask_url masks them)
        scrub_output([s for s in url_secrets(url) if len(s) >= MIN_SECRET_LENGTH])
        check_broker_url(url)  # a URL that names no broker is a usage error, not an outage
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return url


def _checked(file: str, agent: str | None) -> Any:
    from seamkit.plugin import scrub_output

    from seamkit_celery.task import QueueConfigError, load_checked

    try:
        composition, name = load_checked(file, agent)
    except QueueConfigError as exc:
        raise UsageError(str(exc)) from None
    scrub_output(composition.secret_values())
    return composition, name


#: Most processes one ``seamkit worker`` starts (``--concurrency``); start more workers for more.
MAX_CONCURRENCY = 1024
_FDS_PER_PROCESS = 6  # a prefork process's three pipes (in, out, sync), both ends held by the worker
_FDS_BASE = 64  # the worker's own: broker and store connections, logs, the interpreter's


class WorkerStartFailed(SeamkitError):
    """``seamkit worker`` could not start its pool or consumer; the message says why (no traceback)."""


def _check_concurrency(n: int, pool: str) -> None:
    """Refuse a ``--concurrency`` above :data:`MAX_CONCURRENCY`, or one whose pipes would not fit
    in the open-file limit (raised to the hard limit first when that is enough)."""
    if n > MAX_CONCURRENCY:
        raise UsageError(f"--concurrency {n}: at most {MAX_CONCURRENCY} processes per worker; start more workers "
                         "(on this machine or others) for more runs at once")
    if pool != "prefork":
        return
    try:
        import resource
    except ImportError:  # not POSIX: the pool's own error is reported
        return
    needed = n * _FDS_PER_PROCESS + _FDS_BASE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or needed <= soft:
        return
    if hard == resource.RLIM_INFINITY or needed <= hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
        return
    raise UsageError(f"--concurrency {n} needs about {needed} open files (pipes to each process), but this "
                     f"process may open {soft} (ulimit -n; hard limit {hard}): lower --concurrency to "
                     f"{max(1, (hard - _FDS_BASE) // _FDS_PER_PROCESS)} or raise the limit")


class _StartFailure(logging.Filter):
    """Keeps Celery's "Unrecoverable error" (logged with its traceback) for the worker to report
    as one line; every other record passes."""

    def __init__(self) -> None:
        super().__init__()
        self.error: BaseException | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith("Unrecoverable error") and record.exc_info and record.exc_info[1]:
            self.error = record.exc_info[1]
            return False
        return True


def cmd_worker(args: argparse.Namespace) -> int:
    """``seamkit worker FILE [--concurrency N] [--queue NAME] [--pool prefork|solo]``: runs until
    stopped. SIGTERM: a warm shutdown that lets running runs finish, exit 0; Ctrl-C (SIGINT): the
    same, exit 130 (a second Ctrl-C stops at once). A pool or consumer that cannot start is
    :class:`WorkerStartFailed` (exit 1, one line)."""
    import os
    import socket

    from celery import signals

    from seamkit_celery.app import check_broker, make_app

    url = _broker(args)
    _check_concurrency(args.concurrency, args.pool)
    composition, name = _checked(args.file, args.agent_name)
    import asyncio

    agent = _build(composition, name)  # once here: a component that cannot be built fails now, not per run
    asyncio.run(_check_store(agent, args.file))  # a workflow's checkpoints are its entry agent's store
    what = f"agent {name!r}"
    if composition.workflow is not None and args.agent_name is None:
        workflow = _build_workflow(composition)
        what = f"workflow {workflow.name!r}"
        if workflow.checkpointer is not None:
            asyncio.run(workflow.checkpointer.aclose())
    app = make_app(url, visibility_timeout_s=args.visibility_timeout, queue=args.queue, composition=args.file,
                   requeue_after_s=args.requeue_after, sweep_every_s=0 if args.no_sweep else args.sweep_every)
    check_broker(app)
    from seamkit.plugin import child_queue_issues

    for warning in child_queue_issues(composition, args.queue):  # a deadlock waiting to happen: say so now
        sys.stderr.write(f"seamkit: warning: {warning}\n")
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
                     f"{args.queue!r}: it runs every run sent there, whatever its composition and agent ({args.file}, "
                     f"{what}, was checked at start)\n")
    sys.stderr.flush()
    stopped_by: list[str] = []

    def on_shutdown(sender: Any = None, sig: str = "", **kwargs: Any) -> None:
        stopped_by.append(sig)

    signals.worker_shutting_down.connect(on_shutdown, weak=False)
    failure = _StartFailure()
    celery_log = logging.getLogger("celery.worker.worker")
    celery_log.addFilter(failure)
    try:
        worker.start()
    finally:
        celery_log.removeFilter(failure)
        signals.worker_shutting_down.disconnect(on_shutdown)
    if failure.error is not None and not stopped_by:
        exc = failure.error
        raise WorkerStartFailed(f"the worker could not start: {type(exc).__name__}: {exc}") from None
    if stopped_by and stopped_by[0] == "SIGINT":
        return EXIT_INTERRUPTED  # Ctrl-C: a clean stop, said as the shell's convention says it
    if stopped_by and stopped_by[0] == "SIGTERM":
        return EXIT_OK  # a warm shutdown asked for: its running runs finished
    code = worker.exitcode
    return EXIT_OK if not code else int(code)


#: The run id :func:`_check_store` reads (no run has it): one cheap read that needs the store.
PROBE_RUN_ID = "seamkit-worker-store-probe"


async def _check_store(agent: Any, file: str) -> None:
    """Read the checkpoint store of ``agent`` once (and close it): a worker whose store cannot be
    reached at start exits with :class:`~seamkit.errors.StoreUnavailable` (exit 1) naming it;
    a store that goes away later only makes runs wait (their deliveries are retried)."""
    from seamkit.errors import StoreUnavailable

    from seamkit_celery.task import mask_urls

    cp = agent.checkpointer
    if cp is None:
        return
    try:
        await cp.latest(PROBE_RUN_ID)
    except StoreUnavailable as exc:
        raise StoreUnavailable(f"the checkpoint store of {file} (agent {agent.name!r}) could not be read, so "
                               f"this worker could run nothing: {mask_urls(str(exc))}") from None
    finally:
        try:
            await cp.aclose()
        except StoreUnavailable:
            pass


def _build(composition: Any, name: str) -> Any:
    """The agent ``name`` of ``composition``; :class:`~seamkit._cli.main.BuildFailed` when a
    component fails to build."""
    from seamkit.composition import ComponentBuildError, build_agents
    from seamkit.plugin import BuildFailed

    try:
        return build_agents(composition)[name]
    except ComponentBuildError as exc:
        raise BuildFailed(exc.issues) from exc


def _build_workflow(composition: Any) -> Any:
    """The workflow of ``composition``; :class:`~seamkit._cli.main.BuildFailed` when a component
    fails to build."""
    from seamkit.composition import ComponentBuildError, build_workflow
    from seamkit.plugin import BuildFailed

    try:
        return build_workflow(composition)
    except ComponentBuildError as exc:
        raise BuildFailed(exc.issues) from exc


def _decisions(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """``--approve`` / ``--reject`` / ``--edit`` as plain decision data (the task message's
    ``decisions``); :class:`UsageError` for bad flags, with core's ``seamkit resume`` messages."""
    from seamkit.plugin import parse_decision_flags

    try:
        data: dict[str, dict[str, Any]] = parse_decision_flags(args.approve, args.reject, args.edit)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return data


def _same_file(recorded: str, given: str) -> bool:
    import os
    from pathlib import Path

    if str(Path(given).resolve()) == recorded:
        return True
    try:
        return os.path.samefile(recorded, given)
    except OSError:
        return False


async def _snapshot(agent: Any, run_id: str) -> Any:
    cp = agent.checkpointer
    try:
        return await cp.latest(run_id)
    finally:
        await cp.aclose()


def cmd_submit(args: argparse.Namespace) -> int:
    """``seamkit submit FILE TASK [--run-id ID] [--var K=V]`` or ``seamkit submit FILE --resume RUN_ID
    [--approve ID] [--reject ID[=REASON]] [--edit ID=JSON]``: prints the run id; exit 0 once the
    message is on the broker."""
    import asyncio

    from seamkit.plugin import (
        check_variables as _check_variables,
    )
    from seamkit.plugin import existing_file, read_task

    from seamkit_celery.app import make_app
    from seamkit_celery.task import make_spec

    decisions = _decisions(args)
    existing_file(args.file)
    if args.resume is None and decisions:
        raise UsageError("--approve/--reject/--edit go with --resume RUN_ID")
    if args.resume is not None and (args.task is not None or args.var or args.run_id is not None):
        raise UsageError("--resume RUN_ID continues a run: it takes no TASK, --var or --run-id")
    if args.resume is None and args.task is None:
        raise UsageError("a TASK is required (or --resume RUN_ID)")
    url = _broker(args)
    composition, name = _checked(args.file, args.agent_name)
    if args.resume is not None:
        agent = _build(composition, name)
        snap = asyncio.run(_snapshot(agent, args.resume))  # that agent's store
        if snap is None:
            raise UsageError(f"no run {args.resume!r} in the store of {args.file}")
        recorded = snap.metadata.get("agent_file")
        if isinstance(recorded, str) and not _same_file(recorded, args.file):
            # a worker would load FILE's agent for a run of another composition: nothing would continue
            raise UsageError(f"run {args.resume} comes from {recorded}, not {args.file}: submit its continuation "
                             f"with that file (seamkit submit {shlex.quote(recorded)} --resume {args.resume} ...)")
        if snap.status in ("done", "failed"):
            raise UsageError(f"run {args.resume} is {snap.status}: nothing to continue")
        if snap.status == "suspended" and "workflow_state" in snap.state:
            waits = snap.state.get("status_detail") or "suspended"
            raise UsageError(f"run {args.resume} is a workflow waiting ({waits}): answer it with seamkit resume "
                             f"{args.resume} --answer TEXT (or --event TYPE=JSON) --agent {shlex.quote(args.file)}")
        if snap.status == "suspended" and snap.state.get("waiting_for") != "settlement":
            pending = {p.call_id for p in snap.state.get("pending_approvals") or () if hasattr(p, "call_id")}
            if not decisions:
                raise UsageError(f"run {args.resume} waits for a decision on {', '.join(sorted(pending))}: "
                                 "pass --approve/--reject/--edit CALL_ID")
            unknown = sorted(set(decisions) - pending)
            if unknown:
                raise UsageError(f"no pending tool call {', '.join(unknown)} in run {args.resume}; pending: "
                                 f"{', '.join(sorted(pending)) or 'none'}")
            _check_decisions(agent, args.resume, snap.state, decisions)
        elif decisions:
            raise UsageError(f"run {args.resume} is {snap.status}, not waiting for approval: "
                             "--approve/--reject/--edit do not apply")
        spec = make_spec(args.file, None, run_id=args.resume, agent=args.agent_name, decisions=decisions or None)
    else:
        task = read_task(args.task)
        variables = dict(args.var)
        if variables and composition.workflow is not None and args.agent_name is None:
            raise UsageError("--var fills an agent's prompt; a workflow's input is its task")
        agent = _build(composition, name)
        try:
            _check_variables(agent, variables)
        finally:
            if agent.checkpointer is not None:
                asyncio.run(agent.checkpointer.aclose())
        spec = make_spec(args.file, task, run_id=args.run_id, agent=args.agent_name, variables=variables)
    app = make_app(url, queue=args.queue)
    if args.resume is not None:  # a continuation: the run has checkpoints; claimed first (one at a time)
        from seamkit.composition import build_store

        from seamkit_celery.task import send_continuation

        asyncio.run(send_continuation(app, build_store(composition), spec, args.queue, version=snap.version,
                                      agent_file=args.file))
    else:
        from seamkit.composition import build_store

        from seamkit_celery.sent import SpecConflict
        from seamkit_celery.task import entry_agent, send_recorded

        try:
            asyncio.run(send_recorded(app, build_store(composition), spec, args.queue, close=True,
                                      entry=entry_agent(composition)))
        except SpecConflict as exc:
            raise UsageError(str(exc)) from None
    sys.stdout.write(f"{spec['run_id']}\n")
    return EXIT_OK


def _check_decisions(agent: Any, run_id: str, state: Any, decisions: dict[str, dict[str, Any]]) -> None:
    """Refuse decisions the worker's resume would refuse (edited arguments the tool's schema
    rejects, an approval of a tool the agent lacks) now, as ``seamkit resume`` does: a queued
    continuation that fails on the worker is only in its log."""
    from seamkit.errors import RunNotResumable, ToolArgumentError
    from seamkit.plugin import decisions_from_data

    try:
        agent.check_decisions(run_id, state, decisions_from_data(decisions))
    except (ValueError, ToolArgumentError, RunNotResumable) as exc:
        raise UsageError(f"run {run_id}: {exc}") from None


def cmd_runs_wait(args: argparse.Namespace) -> int:
    """``seamkit runs wait RUN_ID --agent FILE [--timeout S] [--requeue-after S] [--json]``: exit 0
    done, 1 failed, stopped without an answer or rejected by a worker, 2 no such run submitted, 3
    suspended, 124 timed out. A run with no checkpoint yet is queued when its send record (see
    :mod:`seamkit_celery.sent`) says it was sent: it is waited for like a running one, and sent
    again when it stays unstarted ``--requeue-after`` seconds after its latest send."""
    import asyncio

    from seamkit.plugin import load_for_command as _load
    from seamkit.plugin import visible

    from seamkit_celery.task import outcome_of

    composition, _ = _load(args.agent)
    assert composition is not None
    requeue_after = getattr(args, "requeue_after", None) or 60.0
    continuing: list[bool] = []  # the latest look found a suspended run with a continuation pending

    async def poll() -> tuple[Any, Any]:
        from seamkit.composition import build_store
        from seamkit.plugin import Checkpointer

        from seamkit_celery.pending import pending
        from seamkit_celery.sent import LostMessages, mark_resent, read_record

        store = build_store(composition)
        if store is None:
            raise UsageError(f"{args.agent} has no checkpoint store ('checkpoints: null')")
        cp = Checkpointer(store, secrets=composition.secret_values())
        deadline = None if args.timeout is None else time.monotonic() + args.timeout
        pause = 0.05
        resend = _Resender(args)
        lost = LostMessages(requeue_after)
        known: list[bool] = []

        async def batch_run(store: Any) -> bool:
            from seamkit_celery.batch import was_enqueued

            if not known:
                known.append(await was_enqueued(store, args.run_id))
            return known[0]

        try:
            while True:
                snap = await cp.latest(args.run_id)
                continuing.clear()
                if snap is not None and snap.status == "suspended" and await pending(store, args.run_id,
                                                                                     snap.version) is not None:
                    continuing.append(True)  # its continuation was sent, no worker took it yet: still queued
                elif snap is not None and snap.status != "running":
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
                        # the workers' sweeper's rule: not while its message may be waiting its turn
                        if lost.check([rec], time.time(), functools.partial(resend.waiting, rec)):
                            await mark_resent(store, rec)  # recorded first, as at submit
                            resend(rec, requeue_after)
                if deadline is not None and time.monotonic() >= deadline:
                    return snap, None
                await asyncio.sleep(pause if deadline is None else min(pause, max(0.0, deadline - time.monotonic())))
                pause = min(pause * 1.5, 1.0)
        finally:
            await cp.aclose()

    snap, rejected = asyncio.run(poll())
    if rejected is not None:
        why = rejected.reason or "no reason recorded"
        if args.json:
            sys.stdout.write(json.dumps({"run_id": args.run_id, "status": "rejected", "stop_reason": None,
                                         "output": None, "error": why, "detail": None, "pending_approvals": []},
                                        ensure_ascii=False) + "\n")
        else:
            sys.stderr.write(_shown(f"seamkit: run {args.run_id} was rejected by a worker, nothing ran: {why}"))
        return EXIT_FAILED
    if snap is None or snap.status == "running" or continuing:
        where = ("not started by any worker yet" if snap is None else "still running" if not continuing
                 else "suspended; its continuation was sent and no worker has taken it yet")
        if args.json:
            sys.stdout.write(json.dumps({"run_id": args.run_id,
                                         "status": "queued" if snap is None or continuing else "running"}) + "\n")
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
                from seamkit.plugin import resume_command

                # a run of another composition in the same store: its continuation needs its own file
                recorded = snap.metadata.get("agent_file")
                agent_file = args.agent
                if isinstance(recorded, str) and not _same_file(recorded, args.agent):
                    lines.append(f"run {args.run_id} comes from {recorded}, not {args.agent}: continue it with "
                                 "that file")
                    agent_file = recorded
                # seamkit resume enqueues a queued run's continuation on the queue it came from
                first = out["pending_approvals"][0]["call_id"]
                lines.append("continue it on the queue with: "
                             + resume_command(args.run_id, ("--approve", first), agent_file=agent_file))
                lines.append("                           or: "
                             + resume_command(args.run_id, ("--reject", first), agent_file=agent_file))
            sys.stderr.write("\n".join(visible(line) for line in lines) + "\n")
        return EXIT_SUSPENDED
    if not args.json:
        why = out["error"] or out["detail"] or "no error recorded"
        sys.stderr.write(_shown(f"seamkit: run {args.run_id} failed: {why}"))
    return EXIT_FAILED


def _shown(text: str) -> str:
    """``text`` for a terminal: its lines (a reason can have several) each made
    :func:`~seamkit._cli.render.visible`, the ones after the first indented, with a final newline."""
    from seamkit.plugin import visible

    lines = text.splitlines() or [""]
    return "\n".join([visible(lines[0]), *("  " + visible(line) for line in lines[1:])]) + "\n"


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

    def waiting(self, rec: Any) -> int | None:
        """Messages waiting in ``rec``'s queue (``None``: the broker does not say)."""
        from seamkit_celery.sent import waiting_messages

        return waiting_messages(self.app, rec.queue or str(self.app.conf.task_default_queue))

    def __call__(self, rec: Any, after: float) -> None:
        from seamkit_celery.app import QueueUnavailable
        from seamkit_celery.task import _send

        try:
            _send(self.app, dict(rec.spec), rec.queue)
        except QueueUnavailable as exc:
            sys.stderr.write(f"seamkit: {exc}; trying again in {after:g} s\n")
            return
        sys.stderr.write(f"seamkit: run {rec.run_id} had not started {after:g} s after it was sent and no message "
                         f"waits in its queue {rec.queue!r} (its message was most likely lost): sent it again\n")


def cmd_batch(args: argparse.Namespace) -> int:
    """``seamkit batch FILE INPUTS.jsonl``: :func:`seamkit_celery.batch_cli.cmd_batch`."""
    from seamkit_celery.batch_cli import cmd_batch as run

    return run(args)
