"""A worker process for the workflow crash tests (run as a script, not a test module).

Usage: ``python crash_worker.py '<json spec>'``. The workflow (``fanout``): ``plan`` fans out to
``branches`` items (``item-0`` ...), ``branch`` runs once per item (``max_concurrency`` 3) and
performs its side effect through ``ctx.run_effect("append", ...)``: one line ``<item> <pid>``
appended to the file ``effects``; ``report`` joins every branch. Each call of a step function
appends ``<step> <item or -> <pid>`` to the file ``calls``. The checkpointer is a
``SqliteStore`` on ``db``.

The spec: ``mode`` (``run``, ``resume``), ``db``, ``effects``, ``calls``, ``run_id``,
``branches``, and

- ``run``: in the order branches reach their effect, the first ``finish`` return at once, the next
  ``hold`` block forever right after their effect completed, and with ``in_effect`` the one after
  those blocks forever *inside* its effect, after its line is written (the receipt stays
  ``prepared``). With ``barrier`` set, once all of that has happened and the checkpoint shows the
  ``finish`` branches done, the worker writes the file ``barrier`` and waits to be killed.
  Without ``barrier`` it runs to the end (an uninterrupted run).
- ``resume``: ``resume_workflow`` (``allow_finished``) in this process; every branch returns.

Prints one JSON line on stdout: ``{"ok": true, "status", "output"}``, or for a
:class:`~seamkit.workflows.WorkflowFailed` ``{"ok": false, "code", "step", "error", "cause"}``
(exit 3).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from seamkit._durability.checkpointer import Checkpointer
from seamkit._runtime.context import RunContext
from seamkit.workflows import Step, StepContext, Workflow, WorkflowFailed, resume_workflow, run_workflow, workflow_state
from seamkit_sqlite.store import SqliteStore

EXIT_FAILED = 3
WAIT_S = 60.0


def append(path: str, line: str) -> None:
    # one write of one line in append mode: the line is there (or not) as a whole when the process dies
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


class Script:
    """How the branches behave in ``run`` mode (see the module doc), and when the worker is ready to
    be killed."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.finish = int(spec.get("finish", 0))
        self.hold = int(spec.get("hold", 0))
        self.in_effect = bool(spec.get("in_effect"))
        self.stop = spec.get("barrier") is not None
        self.arrived = 0
        self.waiting = 0
        self.ready = asyncio.Event()

    def _park(self) -> asyncio.Future[None]:
        self.waiting += 1
        if self.waiting == self.hold + int(self.in_effect):
            self.ready.set()
        return asyncio.get_running_loop().create_future()  # never resolved: the process is killed here

    def arrive(self) -> int:
        self.arrived += 1
        return self.arrived

    async def inside_effect(self, k: int) -> None:
        if self.stop and self.in_effect and k == self.finish + self.hold + 1:
            await self._park()

    async def after_effect(self, k: int) -> None:
        if self.stop and self.finish < k <= self.finish + self.hold:
            await self._park()


def workflow(spec: dict[str, Any], store: SqliteStore, script: Script | None) -> Workflow:
    effects, calls, pid = spec["effects"], spec["calls"], os.getpid()

    async def plan(ctx: StepContext, n: int) -> list[str]:
        append(calls, f"plan - {pid}")
        return [f"item-{i}" for i in range(n)]

    async def branch(ctx: StepContext, item: str) -> dict[str, str]:
        append(calls, f"branch {item} {pid}")
        arrival = 0

        async def effect() -> str:
            nonlocal arrival
            arrival = script.arrive() if script is not None else 0
            append(effects, f"{item} {pid}")
            if script is not None:
                await script.inside_effect(arrival)
            return f"receipt-{item}"

        receipt = await ctx.run_effect("append", effect)
        if script is not None:
            await script.after_effect(arrival)
        return {"item": item, "receipt": receipt}

    async def report(ctx: StepContext, done: list[dict[str, str]]) -> list[str]:
        append(calls, f"report - {pid}")
        return [f"{d['item']}={d['receipt']}" for d in done]

    return Workflow("fanout", (Step("plan", plan, ("start",), ("item",)),
                               Step("branch", branch, ("item",), ("branch_done",)),
                               Step("report", report, ("branch_done",), ("report",), join=True)),
                    outcomes=("report",), max_concurrency=3, checkpointer=Checkpointer(store))


async def ready_to_die(spec: dict[str, Any], script: Script, cp: Checkpointer, task: asyncio.Future[Any]) -> None:
    """Wait until the script's branches are parked and the checkpoint shows the ``finish`` branches
    done, then write the barrier file (the test kills this process once it sees it)."""
    await asyncio.wait_for(script.ready.wait(), WAIT_S)
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while True:
        if task.done():
            task.result()  # the workflow ended early: say why
            raise RuntimeError("the workflow finished before the kill point")
        snap = await cp.latest(spec["run_id"])
        done = [a for a in workflow_state(snap.state).finished if a.step == "branch"] if snap else []
        if len(done) == script.finish:
            break
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"the checkpoint never showed {script.finish} branches done")
        await asyncio.sleep(0.01)  # polling the store for a checkpoint another task writes
    write_barrier(spec["barrier"])


def write_barrier(path: str) -> None:
    # written whole, then renamed: the test never sees a half-written barrier
    tmp = Path(path + ".tmp")
    tmp.write_text(str(os.getpid()))
    tmp.rename(path)


async def main(spec: dict[str, Any]) -> dict[str, Any]:
    store = SqliteStore(spec["db"])
    try:
        if spec["mode"] == "run":
            script = Script(spec)
            w = workflow(spec, store, script)
            task = asyncio.ensure_future(run_workflow(w, int(spec["branches"]),
                                                      ctx=RunContext(run_id=spec["run_id"])))
            if script.stop:
                await ready_to_die(spec, script, w.checkpointer, task)
            result = await task
        else:
            w = workflow(spec, store, None)
            result = await resume_workflow(w, spec["run_id"], allow_finished=bool(spec.get("allow_finished")))
        return {"ok": True, "status": result.status, "output": list(result.output)}
    except WorkflowFailed as exc:
        cause = exc.__cause__
        return {"ok": False, "code": exc.code, "step": exc.step, "error": str(exc),
                "cause": type(cause).__name__ if cause is not None else None,
                "key": getattr(cause, "key", None)}
    finally:
        await store.aclose()


if __name__ == "__main__":
    out = asyncio.run(main(json.loads(sys.argv[1])))
    print(json.dumps(out), flush=True)
    sys.exit(0 if out["ok"] else EXIT_FAILED)
