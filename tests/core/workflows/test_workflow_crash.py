"""A workflow killed with SIGKILL mid fan-out and resumed in a new OS process over one SQLite file.

The workflow (``crash_worker.py``): ``plan`` fans out to 8 items, ``branch`` runs once per item
with at most 3 at once and appends one line per item to a file through ``ctx.run_effect`` (the
effect ledger), ``report`` joins every branch. The worker process is killed at a point the test
arranges with a barrier file, not with sleeps: the worker writes the barrier only once its branches
are parked where the test wants them and the checkpoint shows the finished ones.

- Killed with 2 branches finished, 3 in flight past their effect and 3 not started: the resumed
  process reruns exactly the 6 unfinished activations, each effect line is there exactly once (the
  3 in flight get their receipts back from the ledger), and the output equals an uninterrupted
  run's.
- Killed while a branch's effect is in flight (its receipt stays ``prepared``): on resume the
  ledger cannot know whether the line was written, so it does not run the effect again: the
  branch raises ``EffectUncertain``, the step fails and the workflow fails naming it
  (``STEP_FAILED``, step ``branch``), again on every resume, until a person settles the receipt
  (``EffectLedger.settle``); then ``resume_workflow(..., allow_finished=True)`` finishes with the
  same output and the effect still once.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from seamkit._durability.checkpointer import Checkpointer
from seamkit._durability.ledger import INTERRUPTED_REASON, EffectLedger
from seamkit.workflows import WorkflowState, workflow_state
from seamkit_sqlite.store import SqliteStore

WORKER = Path(__file__).with_name("crash_worker.py")
BRANCHES = 8
WORKER_TIMEOUT_S = 60.0
ITEMS = [f"item-{i}" for i in range(BRANCHES)]
EXPECTED = [f"{item}=receipt-{item}" for item in ITEMS]


def spec_for(tmp_path: Path, run_id: str, **extra: Any) -> dict[str, Any]:
    return {"db": str(tmp_path / "wf.db"), "effects": str(tmp_path / "effects.log"),
            "calls": str(tmp_path / "calls.log"), "run_id": run_id, "branches": BRANCHES, **extra}


def worker(spec: dict[str, Any], *, expect_rc: int = 0) -> dict[str, Any]:
    """Run ``crash_worker.py`` to the end; its JSON line."""
    proc = subprocess.run([sys.executable, str(WORKER), json.dumps(spec)], capture_output=True, text=True,
                          timeout=WORKER_TIMEOUT_S)
    assert proc.returncode == expect_rc, f"worker exited {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def run_and_kill(spec: dict[str, Any], barrier: Path) -> int:
    """Start a ``run`` worker, wait for its barrier file, SIGKILL it; the dead worker's pid."""
    proc = subprocess.Popen([sys.executable, str(WORKER), json.dumps({**spec, "mode": "run", "barrier": str(barrier)})],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + WORKER_TIMEOUT_S
        while not barrier.exists():
            if proc.poll() is not None:
                out, err = proc.communicate()
                raise AssertionError(f"the worker ended before the kill point ({proc.returncode}):\n{out}\n{err}")
            assert time.monotonic() < deadline, "the worker never reached the kill point"
            time.sleep(0.01)  # polling for the barrier file the worker writes
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=WORKER_TIMEOUT_S)  # reaped: its pid is gone, so its lease is void
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    return proc.pid


def lines(path: Path) -> list[list[str]]:
    return [ln.split() for ln in path.read_text().splitlines()] if path.exists() else []


def effects_by_item(tmp_path: Path) -> Counter[str]:
    return Counter(item for item, _ in lines(tmp_path / "effects.log"))


def branch_calls(tmp_path: Path, pid: int) -> list[str]:
    return sorted(item for step, item, p in lines(tmp_path / "calls.log") if step == "branch" and int(p) == pid)


async def latest_state(tmp_path: Path, run_id: str) -> tuple[str, WorkflowState]:
    store = SqliteStore(tmp_path / "wf.db")
    try:
        snap = await Checkpointer(store).latest(run_id)
        assert snap is not None
        state = workflow_state(snap.state)
        assert isinstance(state, WorkflowState)
        return snap.status, state
    finally:
        await store.aclose()


def test_an_uninterrupted_run_is_the_reference(tmp_path: Path) -> None:
    out = worker({**spec_for(tmp_path, "plain"), "mode": "run"})
    assert out == {"ok": True, "status": "done", "output": EXPECTED}
    assert effects_by_item(tmp_path) == Counter(dict.fromkeys(ITEMS, 1))


async def test_killed_mid_fan_out_a_new_process_runs_each_branch_effect_exactly_once(tmp_path: Path) -> None:
    spec = spec_for(tmp_path, "wf-killed", finish=2, hold=3)
    dead = await asyncio.to_thread(run_and_kill, spec, tmp_path / "barrier")

    # at the kill: 2 branches done, 3 past their effect and parked, 3 never started
    status, state = await latest_state(tmp_path, "wf-killed")
    assert status == "running"
    assert [a.step for a in state.finished] == ["plan", "branch", "branch"]
    unfinished = [a for a in state.active if a.step == "branch"]
    assert len(unfinished) == 6 and {a.status for a in unfinished} == {"running"}
    assert len(branch_calls(tmp_path, dead)) == 5
    before = effects_by_item(tmp_path)
    assert len(before) == 5 and set(before.values()) == {1}

    out = await asyncio.to_thread(worker, {**spec, "mode": "resume"})
    assert out == {"ok": True, "status": "done", "output": EXPECTED}  # what an uninterrupted run returns
    assert effects_by_item(tmp_path) == Counter(dict.fromkeys(ITEMS, 1))  # every effect exactly once
    # a finished activation keeps its branch, not its inputs: the plan fanned ITEMS out in order
    finished_before = {ITEMS[a.frame[-1].index] for a in state.finished if a.step == "branch"}
    [resumer] = {int(p) for _, _, p in lines(tmp_path / "calls.log")} - {dead}
    # the resumed process ran the 6 unfinished activations (3 of them got their receipt from the
    # ledger without writing again), not the finished ones, and not the plan
    assert branch_calls(tmp_path, resumer) == sorted(set(ITEMS) - finished_before)
    assert [ln[0] for ln in lines(tmp_path / "calls.log") if int(ln[2]) == resumer].count("plan") == 0
    assert sorted(item for item, pid in lines(tmp_path / "effects.log") if int(pid) == resumer) == sorted(
        set(ITEMS) - set(before))
    status, _ = await latest_state(tmp_path, "wf-killed")
    assert status == "done"


async def test_killed_while_an_effect_is_in_flight_the_workflow_fails_naming_it_until_a_person_settles_it(
        tmp_path: Path) -> None:
    spec = spec_for(tmp_path, "wf-in-flight", finish=5, hold=2, in_effect=True)
    dead = await asyncio.to_thread(run_and_kill, spec, tmp_path / "barrier")
    # all 8 effects happened in the dead process; the last one's receipt was never completed
    assert effects_by_item(tmp_path) == Counter(dict.fromkeys(ITEMS, 1))
    status, state = await latest_state(tmp_path, "wf-in-flight")
    assert status == "running" and len([a for a in state.finished if a.step == "branch"]) == 5

    failed = await asyncio.to_thread(worker, {**spec, "mode": "resume"}, expect_rc=3)
    assert (failed["ok"], failed["code"], failed["step"], failed["cause"]) == (
        False, "STEP_FAILED", "branch", "EffectUncertain")
    assert "is uncertain" in failed["error"] and INTERRUPTED_REASON in failed["error"]
    key = failed["key"]
    assert effects_by_item(tmp_path) == Counter(dict.fromkeys(ITEMS, 1))  # not run again
    status, state = await latest_state(tmp_path, "wf-in-flight")
    [bad] = [a for a in state.active if a.status == "failed"]
    assert status == "failed" and bad.step == "branch" and key == f"{bad.run_id}:append"
    item = bad.inputs[0].payload
    assert [item, str(dead)] in lines(tmp_path / "effects.log")  # it did happen, in the dead process

    # resumed again before anyone looked: the same failure, still no second line
    again = await asyncio.to_thread(worker, {**spec, "mode": "resume", "allow_finished": True}, expect_rc=3)
    assert (again["code"], again["step"], again["key"]) == ("STEP_FAILED", "branch", key)
    assert effects_by_item(tmp_path) == Counter(dict.fromkeys(ITEMS, 1))

    assert f"seamkit runs settle {spec['run_id']} {key} applied --result JSON" in failed["error"]
    # a person checks the file, finds the line and settles the receipt as applied, through the run
    store = SqliteStore(tmp_path / "wf.db")
    try:
        cp = Checkpointer(store)
        assert (await EffectLedger(store).receipt(key) or {}).get("status") == "uncertain"
        with pytest.raises(ValueError, match="has no unfinished step whose effect is 'run_elsewhere:append'"):
            await cp.settle_effect(spec["run_id"], "run_elsewhere:append", applied=True)
        settled = await cp.settle_effect(spec["run_id"], key, applied=True, result=json.dumps(f"receipt-{item}"))
        assert (settled.settled, settled.tool) == ("applied", "branch")
        with pytest.raises(ValueError, match="whose outcome is unknown"):  # settled already
            await cp.settle_effect(spec["run_id"], key, applied=True)
    finally:
        await store.aclose()
    done = await asyncio.to_thread(worker, {**spec, "mode": "resume", "allow_finished": True})
    assert done == {"ok": True, "status": "done", "output": EXPECTED}
    assert effects_by_item(tmp_path) == Counter(dict.fromkeys(ITEMS, 1))
