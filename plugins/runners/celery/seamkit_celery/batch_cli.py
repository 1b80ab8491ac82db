"""The body of ``seamkit batch FILE INPUTS.jsonl`` (see :mod:`seamkit_celery.batch`).

Exit codes: 0 every run done with an answer; 1 any failed, suspended, stopped without an answer
or still unfinished at ``--timeout``; 2 bad input (nothing enqueued); 130 Ctrl-C (the runs go on
on the workers; the same command again picks the batch up)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from seamkit.plugin import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, UsageError

from seamkit_celery.batch import (
    BATCH_ID_RE,
    BatchInputError,
    BatchMismatch,
    BatchState,
    batch_identity,
    default_batch_id,
    is_success,
    read_inputs,
    result_line,
    run_batch,
)

__all__ = ["cmd_batch"]


class _Bar:
    """A rich progress bar of done / failed / suspended on stderr (only on a terminal)."""

    def __init__(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("batch"), BarColumn(), MofNCompleteColumn(),
            TextColumn("[green]done {task.fields[done]}[/] [red]failed {task.fields[failed]}[/] "
                       "[yellow]suspended {task.fields[suspended]}[/]"),
            TimeElapsedColumn(), console=Console(stderr=True), transient=False,
        )
        self.task = self.progress.add_task("batch", total=total, done=0, failed=0, suspended=0)
        self.progress.start()

    def __call__(self, state: BatchState) -> None:
        self.progress.update(self.task, completed=state.settled, done=state.count("done"),
                             failed=state.count("failed"), suspended=state.count("suspended"))

    def stop(self) -> None:
        self.progress.stop()


def _check_out(out: str) -> None:
    """Refuse ``--out RESULTS`` up front (exit 2, nothing enqueued) unless a results file can be
    written there: its directory exists and takes a new file (it is written whole, as a temporary
    file renamed over it), and it is not a directory."""
    target = Path(out)
    if not out.strip():
        raise UsageError("--out needs a file name (leave it out to write the results to stdout)")
    if target.is_dir():
        raise UsageError(f"--out {out}: is a directory; name a file in it (e.g. {target / 'results.jsonl'})")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"--out {out}: no directory {parent}; create it first")
    try:  # the real test (os.access says yes to root, and knows nothing of read-only mounts)
        fd, probe = tempfile.mkstemp(dir=parent, prefix=f".{target.name}.")
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write in {parent} ({exc.strerror or exc})") from None
    os.close(fd)
    Path(probe).unlink(missing_ok=True)


def _write_results(out: str | None, lines: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    if out is None:
        sys.stdout.write(text)
        return
    target = Path(out)
    fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", prefix=f".{target.name}.")
    try:  # whole or not at all: a reader never sees half a results file
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cmd_batch(args: argparse.Namespace) -> int:
    """``seamkit batch FILE INPUTS.jsonl [--out RESULTS.jsonl] [--batch-id ID] [--timeout S]``."""
    from seamkit.composition import build_store
    from seamkit.plugin import Checkpointer, existing_file
    from seamkit.plugin import check_variables as _check_variables

    from seamkit_celery.app import check_broker, make_app
    from seamkit_celery.cli import _broker, _build, _checked

    existing_file(args.file)
    inputs = Path(args.inputs)
    if not inputs.is_file():
        raise UsageError(f"no input file {args.inputs}")
    if args.batch_id is not None and not BATCH_ID_RE.match(args.batch_id):
        raise UsageError(f"--batch-id {args.batch_id!r}: 1 to 64 letters, digits, '.', '_' or '-', starting with a "
                         "letter or digit")
    if args.out is not None:
        _check_out(args.out)
    try:
        items, problems = read_inputs(inputs)
    except BatchInputError as exc:
        raise UsageError(str(exc)) from None
    url = _broker(args)
    composition, name = _checked(args.file, args.agent_name)
    agent = _build(composition, name)
    try:  # every good input's variables too: every problem of the file in one report
        for it in items:
            try:
                if it.variables and composition.workflow is not None and args.agent_name is None:
                    raise UsageError("variables fill an agent's prompt; a workflow's input is its task")
                _check_variables(agent, dict(it.variables))
            except UsageError as exc:
                problems.append((it.line, f"{inputs}:{it.line}: {str(exc).replace('--var', 'variables')}"))
        if problems:
            raise UsageError(str(BatchInputError([p for _, p in sorted(problems, key=lambda p: p[0])])))
    finally:
        if agent.checkpointer is not None:
            asyncio.run(agent.checkpointer.aclose())
    batch_id = args.batch_id or default_batch_id(inputs, Path(args.file), args.agent_name)
    identity = batch_identity(items, Path(args.file), args.agent_name)
    app = make_app(url, queue=args.queue)
    check_broker(app)
    state = BatchState(items, batch_id)
    bar: _Bar | None = None

    async def go() -> None:
        store = build_store(composition)
        cp = Checkpointer(store, secrets=composition.secret_values())
        try:
            await run_batch(app, Path(args.file), items, state, cp=cp, store=store, agent=args.agent_name,
                            queue=args.queue, timeout_s=args.timeout, requeue=args.requeue,
                            retry_failed=args.retry_failed,
                            requeue_after_s=args.requeue_after, on_progress=bar,
                            interrupted=stop.is_set, identity=identity)
        finally:
            await cp.aclose()

    # Ctrl-C only sets a flag that the batch looks at between store round trips: cancelling the
    # event loop's task mid-command (asyncio's own handling) can leave a store connection's close
    # waiting forever. A second Ctrl-C interrupts at once.
    stop = threading.Event()

    def on_sigint(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        sys.stderr.write(f"seamkit: batch {batch_id}: {len(items)} inputs (run ids {batch_id}-0 ...)\n")
        sys.stderr.flush()
        bar = _Bar(len(items)) if sys.stderr.isatty() else None
        asyncio.run(go())
    except KeyboardInterrupt:
        if bar is not None:
            bar.stop()
        sys.stderr.write(f"seamkit: interrupted: {state.enqueued} enqueued now, {state.settled} of {len(items)} "
                         f"settled; the runs go on on the workers: run the same command again (batch {batch_id}) "
                         "to pick the batch up\n")
        return EXIT_INTERRUPTED
    except BatchMismatch as exc:  # found before anything was sent
        if bar is not None:
            bar.stop()
        raise UsageError(str(exc)) from None
    finally:
        signal.signal(signal.SIGINT, previous)
    if bar is not None:
        bar.stop()
    lines = []
    for it in items:
        status = state.status.get(it.index, "queued")
        lines.append(result_line(it, batch_id, "queued" if status == "new" else status, state.outcome.get(it.index),
                                 state.run_id(it.index)))
    _write_results(args.out, lines)
    ok = sum(1 for it in items if is_success(lines[it.index]["status"], state.outcome.get(it.index)))
    counts = {s: sum(1 for line in lines if line["status"] == s) for s in
              ("done", "failed", "suspended", "running", "queued")}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    resent = f", {state.resent} sent again (overtaken without starting)" if state.resent else ""
    resent += f", {state.retried} failed before retried under new run ids" if state.retried else ""
    resent += f", {state.continued} continued (running with nobody on them)" if state.continued else ""
    sys.stderr.write(f"seamkit: batch {batch_id}: {summary} ({state.enqueued} enqueued now, {state.reused} "
                     f"finished before{resent})" + (f"; results in {args.out}" if args.out else "") + "\n")
    if counts["failed"]:
        sys.stderr.write(f"seamkit: running the same command again reuses the {counts['failed']} failed; add "
                         "--retry-failed to run them again (new run ids <batch id>-<index>-r<n>)\n")
    if counts["running"] or counts["queued"]:
        sys.stderr.write(f"seamkit: {counts['running'] + counts['queued']} unfinished after {args.timeout:g} s; "
                         "run the same command again to wait for them (with --requeue to send again the "
                         f"{counts['queued']} never started, if the broker may have lost their messages)\n")
    return EXIT_OK if ok == len(items) else EXIT_FAILED
