"""How often a run killed mid-batch is left with an uncertain effect, and how long the effect
ledger's writes wait, on a store shared by many concurrent runs.

Run: ``.venv/bin/python benchmarks/effects_kill_bench.py [--trials 20] [--runs 20] [--calls 4]
[--kill-after 0.2 1.0] [--latency-s 5] [--json]``. Prints numbers; exits 0 (no asserts).

Workload (one child process per trial, SQLite store in a temporary directory): ``--runs``
concurrent agent runs on ONE store object, each turn a batch of ``--calls`` side-effecting tool
calls (an async tool that returns at once, ~1 KB result), so every call goes through the effect
ledger (receipt ``prepared``, the call, receipt ``completed``) while the other runs write their
checkpoints (after every model turn and tool batch) to the same store.

1. Kills: once every run has started its first tool batch, the parent waits a random time in
   ``--kill-after`` seconds and SIGKILLs the child, then counts in the database the runs with at
   least one receipt left ``prepared`` or ``uncertain`` (the call's outcome is unknown: a person
   must settle it, unless the tool is idempotent). A kill that lands while a tool's own code runs
   leaves it uncertain whatever the store does; what the store decides is how long the receipt
   write after the call waits, i.e. how wide that window is.
2. Latency: the same workload in one child for ``--latency-s`` seconds, timing every ledger write
   (``StorePort.set`` in the ledger's scope) from the call to its return: p50 / p95 / max ms.

Compare two builds of the store by running this script against each (e.g. ``git stash`` a change).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

EFFECTS_TENANT_PREFIX = "seamkit.effects"


# -- the child: many runs on one store ---------------------------------------------------------------


async def child(path: str, runs: int, calls: int, seconds: float | None) -> dict[str, Any]:
    from seamkit import tool
    from seamkit._agent.agent import Agent
    from seamkit._runtime.context import RunContext
    from seamkit.testing import ScriptedModel
    from seamkit_sqlite.store import SqliteStore

    store = SqliteStore(path)
    waits: list[float] = []
    base_set = store.set

    async def timed_set(scope: Any, key: str, value: Any, *, ttl: float | None = None) -> None:
        t0 = time.perf_counter()
        await base_set(scope, key, value, ttl=ttl)
        if scope.tenant.startswith(EFFECTS_TENANT_PREFIX):
            waits.append(time.perf_counter() - t0)

    store.set = timed_set  # type: ignore[method-assign]
    started: set[int] = set()
    body = "x" * 1000

    def make_tool(i: int) -> Any:
        @tool(side_effecting=True)
        async def charge(n: int) -> str:
            """Charge an amount (returns at once)."""
            if i not in started:
                started.add(i)
                if len(started) == runs:
                    print("go", flush=True)
            return f"charged {n} {body}"

        return charge

    turn = {"tool_calls": [{"name": "charge", "arguments": {"n": j}} for j in range(calls)]}
    agents = [
        Agent(ScriptedModel([turn], repeat=True), tools=[make_tool(i)], checkpointer=store, max_steps=100_000)
        for i in range(runs)
    ]
    tasks = [asyncio.create_task(a.run("charge", ctx=RunContext(run_id=f"run-{i}"))) for i, a in enumerate(agents)]
    if seconds is None:
        await asyncio.gather(*tasks)  # until killed
        return {}
    await asyncio.sleep(seconds)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await store.aclose()
    return {"ledger_writes": len(waits), "waits_ms": sorted(w * 1000 for w in waits)}


# -- the parent ----------------------------------------------------------------------------------------


def uncertain_runs(db: Path) -> tuple[int, int]:
    """(runs with a receipt left prepared/uncertain, such receipts) in ``db``."""
    from seamkit._durability import codec

    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT ns, key, value FROM kv WHERE ns LIKE ?", (f"%{EFFECTS_TENANT_PREFIX}%",)).fetchall()
    finally:
        conn.close()
    open_runs: set[str] = set()
    n = 0
    for _, key, value in rows:
        status = codec.loads(value).get("status")
        if status in ("prepared", "uncertain"):
            n += 1
            open_runs.add(key.split(":", 1)[0])
    return len(open_runs), n


def spawn(args: argparse.Namespace, db: Path, seconds: float | None) -> subprocess.Popen[str]:
    cmd = [sys.executable, __file__, "--child", str(db), "--runs", str(args.runs), "--calls", str(args.calls)]
    if seconds is not None:
        cmd += ["--child-seconds", str(seconds)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)


def kill_trials(args: argparse.Namespace, tmp: Path) -> list[tuple[int, int, float]]:
    rng = random.Random(args.seed)
    out: list[tuple[int, int, float]] = []
    for t in range(args.trials):
        db = tmp / f"kill-{t}.db"
        proc = spawn(args, db, None)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line.strip() != "go":
            proc.kill()
            raise SystemExit(f"trial {t}: the child did not start its runs (said {line!r})")
        delay = rng.uniform(*args.kill_after)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        runs, receipts = uncertain_runs(db)
        out.append((runs, receipts, delay))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--calls", type=int, default=4)
    p.add_argument("--kill-after", type=float, nargs=2, default=(0.2, 1.0), metavar=("MIN_S", "MAX_S"))
    p.add_argument("--latency-s", type=float, default=5.0)
    p.add_argument("--seed", type=int, default=10)
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", metavar="DB", help=argparse.SUPPRESS)
    p.add_argument("--child-seconds", type=float, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        got = asyncio.run(child(args.child, args.runs, args.calls, args.child_seconds))
        print(json.dumps(got), flush=True)
        return

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        kills = kill_trials(args, tmp)
        proc = spawn(args, tmp / "latency.db", args.latency_s)
        stdout, _ = proc.communicate()
    lat = json.loads(stdout.strip().splitlines()[-1])
    waits = lat["waits_ms"]
    left = sum(1 for r, _, _ in kills if r)
    result = {
        "trials": args.trials,
        "runs_per_trial": args.runs,
        "calls_per_batch": args.calls,
        "trials_with_an_uncertain_run": left,
        "uncertain_runs_per_trial": [r for r, _, _ in kills],
        "uncertain_runs_total": sum(r for r, _, _ in kills),
        "uncertain_receipts_total": sum(n for _, n, _ in kills),
        "ledger_writes": lat["ledger_writes"],
        "ledger_write_ms_p50": statistics.median(waits) if waits else None,
        "ledger_write_ms_p95": waits[int(0.95 * (len(waits) - 1))] if waits else None,
        "ledger_write_ms_max": waits[-1] if waits else None,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"SQLite, {args.runs} concurrent runs x {args.calls} side-effecting calls per batch, "
          f"{args.trials} kills (SIGKILL {args.kill_after[0]}-{args.kill_after[1]} s after all runs started)")
    print(f"  runs left with an uncertain receipt, per kill: {result['uncertain_runs_per_trial']}")
    print(f"  total: {result['uncertain_runs_total']} of {args.trials * args.runs} runs "
          f"({result['uncertain_receipts_total']} receipts); kills leaving any: {left} of {args.trials}")
    print(f"  ledger write latency under load ({lat['ledger_writes']} writes in {args.latency_s:.0f} s): "
          f"p50 {result['ledger_write_ms_p50']:.2f} ms, p95 {result['ledger_write_ms_p95']:.2f} ms, "
          f"max {result['ledger_write_ms_max']:.2f} ms")


if __name__ == "__main__":
    main()
