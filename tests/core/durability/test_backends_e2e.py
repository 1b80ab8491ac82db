"""Durable runs end to end on the real backends (SQLite, PostgreSQL, Redis), across processes.

- A crash test: a scripted 10-step payment run is SIGKILLed right after each checkpoint save in
  turn (a worker subprocess, ``durable_worker.py``), then resumed in a new process; each time the
  output, transcript and usage equal an uninterrupted run's and each payment was executed once.
- 100 concurrent runs on one store instance: no lost or mixed-up checkpoints.
- An approval round trip across processes: edited arguments, a rejection, a second resume refused.
- The CLI: ``seamkit run`` suspends (exit 3), ``seamkit resume --approve`` completes, ``runs``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from seamkit import tool
from seamkit._agent.agent import Agent
from seamkit._agent.loop import EDITED_TEMPLATE, REJECTED_TEMPLATE
from seamkit._durability.checkpointer import Checkpointer
from seamkit._plugins.registry import get_registry
from seamkit._runtime.context import RunContext
from seamkit.testing import ScriptedModel

WORKER = Path(__file__).with_name("durable_worker.py")
STEPS = 10
WORKER_TIMEOUT_S = 60.0
BACKENDS = ["sqlite", "postgres", "redis"]


# -- fixtures and helpers -------------------------------------------------------------------------


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(store name, config params)`` of a fresh, empty namespace on that backend."""
    name: str = request.param
    tag = uuid.uuid4().hex[:12]
    if name == "sqlite":
        params: dict[str, Any] = {"path": str(tmp_path / "checkpoints.db")}
    elif name == "postgres":
        params = {"dsn": request.getfixturevalue("postgres_dsn"), "schema": f"e2e_{tag}"}

        async def setup() -> None:
            async with build_store(name, params) as store:
                await store.setup()

        asyncio.run(setup())
    else:
        params = {"url": request.getfixturevalue("redis_url"), "prefix": f"e2e-{tag}"}
    yield name, params


def build_store(name: str, params: dict[str, Any]) -> Any:
    return get_registry().resolve("store", name).build(params)


def worker(spec: dict[str, Any], cwd: Path, *, expect_rc: int | None = 0) -> tuple[int, dict[str, Any] | None, str]:
    """Run ``durable_worker.py`` with ``spec``; returns ``(exit code, its JSON line or None, stderr)``."""
    proc = subprocess.run(
        [sys.executable, str(WORKER), json.dumps(spec)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=WORKER_TIMEOUT_S,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    out = json.loads(lines[-1]) if lines else None
    if expect_rc is not None:
        assert proc.returncode == expect_rc, (
            f"worker {spec['mode']} exited {proc.returncode}, expected {expect_rc}\n"
            f"stdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-4000:]}"
        )
    return proc.returncode, out, proc.stderr


def effect_counts(path: Path) -> dict[str, dict[int, int]]:
    """run id -> payment id -> how many times the tool really executed it."""
    if not path.exists():
        return {}
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT run_id, payment_id, COUNT(*) FROM effects GROUP BY run_id, payment_id").fetchall()
    out: dict[str, dict[int, int]] = {}
    for run_id, payment_id, n in rows:
        out.setdefault(run_id, {})[payment_id] = n
    return out


# -- 1. SIGKILL at every step boundary, resume in a new process ----------------------------------


async def test_a_run_killed_at_every_step_boundary_resumes_in_a_new_process_with_each_payment_once(
    backend: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    name, params = backend
    effects = tmp_path / "effects.db"
    base_spec = {"backend": name, "params": params, "effects": str(effects), "steps": STEPS}
    t0 = time.perf_counter()
    _, base, _ = worker({**base_spec, "mode": "run", "run_id": "run-base"}, tmp_path)
    assert base is not None and base["stop_reason"] == "completed"
    t_base = time.perf_counter() - t0
    saves = base["saves"]
    # one store call per step: begin, the first model turn, (tool batch + next model turn) x 9,
    # (the last tool batch + the final turn); 2 versions a step all the same
    assert saves == STEPS + 2
    assert base["versions"][-1] == 2 * STEPS + 2
    assert base["output"] == "done: " + "; ".join(f"pay_{i}=recorded payment {i}" for i in range(1, STEPS + 1))
    assert base["usage"]["requests"] == STEPS + 1

    def crash_then_resume(k: int) -> tuple[int, int, dict[str, Any] | None, str, float]:
        run_id = f"run-k{k}"
        started = time.perf_counter()
        rc, out, err = worker({**base_spec, "mode": "run", "run_id": run_id, "crash_after": k}, tmp_path,
                              expect_rc=None)
        assert out is None, f"k={k}: the crashing worker finished instead of dying: {out}"
        rc2, resumed, err2 = worker({**base_spec, "mode": "resume", "run_id": run_id}, tmp_path, expect_rc=None)
        return rc, rc2, resumed, err + err2, time.perf_counter() - started

    ks = list(range(1, saves))
    t1 = time.perf_counter()
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = await asyncio.gather(*(loop.run_in_executor(pool, crash_then_resume, k) for k in ks))
    t_all = time.perf_counter() - t1

    for k, (rc, rc2, resumed, err, _) in zip(ks, outcomes, strict=True):
        assert rc == -signal.SIGKILL, f"k={k}: the worker was not killed (exit {rc}): {err[-2000:]}"
        assert rc2 == 0 and resumed is not None, f"k={k}: the resume failed (exit {rc2}): {err[-3000:]}"
        assert resumed["resumed_from"] == base["versions"][k - 1], f"k={k}: the k-th save must be the one resumed from"
        assert resumed["output"] == base["output"], f"k={k}"
        assert resumed["transcript"] == base["transcript"], f"k={k}"
        assert resumed["usage"] == base["usage"], f"k={k}: usage from before the crash must be kept exactly"
    counts = effect_counts(effects)
    expected = {i: 1 for i in range(1, STEPS + 1)}
    assert counts.get("run-base") == expected
    for k in ks:
        assert counts.get(f"run-k{k}") == expected, f"k={k}: each payment exactly once, got {counts.get(f'run-k{k}')}"

    async with build_store(name, params) as store:
        cp = Checkpointer(store)
        assert list(await cp.list_runs(status="running")) == []
        assert list(await cp.list_runs(status="failed")) == []
        for k in ks:
            snap = await cp.latest(f"run-k{k}")
            assert snap is not None and snap.status == "done", f"k={k}: {snap and snap.status}"
            assert snap.state["output"] == base["output"]
            versions = [i.version for i in await cp.history(f"run-k{k}")]
            assert versions == list(range(1, len(versions) + 1)), f"k={k}: versions {versions}"
            # the crashed worker's k saves are kept; the resume claims the run and continues from v{k}
            assert len(versions) > base["versions"][k - 1]
    per_k = sorted(o[4] for o in outcomes)
    print(
        f"\n[{name}] uninterrupted run (1 process): {t_base:.2f} s; {len(ks)} crash+resume pairs "
        f"({2 * len(ks)} processes, 2 at a time): {t_all:.2f} s; per pair median {per_k[len(per_k) // 2]:.2f} s, "
        f"max {per_k[-1]:.2f} s"
    )


# -- 2. 100 concurrent runs on one store instance ------------------------------------------------


async def test_100_concurrent_runs_on_one_store_instance_keep_their_own_checkpoints(
    backend: tuple[str, dict[str, Any]],
) -> None:
    name, params = backend
    n_runs, n_steps = 100, 3
    executed: list[str] = []

    @tool(side_effecting=True)
    async def note(tag: str) -> str:
        """Note a tag (a side effect recorded in this process)."""
        executed.append(tag)
        return f"noted {tag}"

    rng = random.Random(4)

    def script(i: int) -> list[Any]:
        turns: list[Any] = [
            {
                "tool_calls": [{"id": f"c{j}", "name": "note", "arguments": {"tag": f"run{i}-step{j}"}}],
                "delay": rng.random() * 0.005,
            }
            for j in range(1, n_steps + 1)
        ]
        turns.append({"text": f"run {i} done", "delay": rng.random() * 0.005})
        return turns

    prefix = uuid.uuid4().hex[:8]
    run_ids = [f"conc-{prefix}-{i}" for i in range(n_runs)]
    t0 = time.perf_counter()
    async with build_store(name, params) as store:
        cp = Checkpointer(store)  # one store instance, one checkpointer, 100 agents
        agents = [Agent(ScriptedModel(script(i)), tools=[note], checkpointer=cp) for i in range(n_runs)]
        results = await asyncio.gather(
            *(a.run(f"task {i}", ctx=RunContext(run_id=run_ids[i])) for i, a in enumerate(agents))
        )
        elapsed = time.perf_counter() - t0
        assert sorted(executed) == sorted(f"run{i}-step{j}" for i in range(n_runs) for j in range(1, n_steps + 1))
        n_versions = 1 + 2 * n_steps + 1
        for i, (run_id, result) in enumerate(zip(run_ids, results, strict=True)):
            assert result.output == f"run {i} done" and result.run_id == run_id
            snap = await cp.latest(run_id)
            assert snap is not None, f"run {i}: its checkpoints were lost"
            assert snap.run_id == run_id and snap.status == "done"
            assert snap.state["output"] == f"run {i} done"
            assert snap.transcript == result.transcript, f"run {i}: the stored transcript is not its own"
            tags = [c.arguments["tag"] for m in snap.transcript for c in m.tool_calls]
            assert tags == [f"run{i}-step{j}" for j in range(1, n_steps + 1)]
            assert snap.transcript[0].text == f"task {i}"
            history = await cp.history(run_id)
            assert [h.version for h in history] == list(range(1, n_versions + 1)), f"run {i}"
            assert [h.status for h in history] == ["running"] * (n_versions - 1) + ["done"]
            assert all(h.run_id == run_id for h in history)
        done = {i.run_id for i in await cp.list_runs(status="done", limit=1000)}
        assert set(run_ids) <= done
    print(f"\n[{name}] {n_runs} concurrent runs x {n_versions} checkpoints: {elapsed:.2f} s")


# -- 3. approval round trip across processes -----------------------------------------------------


async def test_an_approval_round_trip_across_processes_with_edited_arguments_and_a_rejection(
    backend: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    name, params = backend
    effects = tmp_path / "effects.db"
    run_id = f"appr-{uuid.uuid4().hex[:8]}"
    spec = {"backend": name, "params": params, "effects": str(effects), "run_id": run_id}

    _, first, _ = worker({**spec, "mode": "approve_run"}, tmp_path)
    assert first is not None and first["stop_reason"] == "suspended" and first["output"] is None
    assert first["pending"] == [
        ["ask_a", "record_payment", {"payment_id": 1}],
        ["ask_b", "record_payment", {"payment_id": 2}],
    ]
    assert effect_counts(effects) == {}  # nothing ran before a person decided

    decisions = {
        "ask_a": {"approve": True, "arguments": {"payment_id": 42}},
        "ask_b": {"approve": False, "reason": "a duplicate of ask_a"},
    }
    _, second, _ = worker({**spec, "mode": "approve_resume", "decisions": decisions}, tmp_path)
    assert second is not None and second["stop_reason"] == "completed"
    assert effect_counts(effects) == {run_id: {42: 1}}  # exactly the edited payment
    rejection = f"{REJECTED_TEMPLATE} Reason: a duplicate of ask_a"
    edited = EDITED_TEMPLATE.format(arguments='{"payment_id": 42}') + "\nrecorded payment 42"
    assert second["output"] == f"done: ask_a={edited}; ask_b=ERROR {rejection}"
    tool_msgs = [m for m in second["transcript"] if m["role"] == "tool"]
    assert len(tool_msgs) == 1
    assert tool_msgs[0]["results"] == [["ask_a", edited, False], ["ask_b", rejection, True]]

    async with build_store(name, params) as store:
        before = [(i.version, i.status) for i in await Checkpointer(store).history(run_id)]
    assert before[-1][1] == "done"

    rc, third, err = worker({**spec, "mode": "approve_resume", "decisions": decisions}, tmp_path, expect_rc=None)
    assert rc != 0
    assert third is not None and third["ok"] is False
    assert "RunNotResumable" in err and run_id in err and "done" in err, err
    assert "Traceback" not in err
    assert effect_counts(effects) == {run_id: {42: 1}}
    async with build_store(name, params) as store:
        after = [(i.version, i.status) for i in await Checkpointer(store).history(run_id)]
    assert after == before  # the refused resume changed nothing


# -- 4. the CLI: run (suspends), resume --approve, runs list / show -------------------------------


def seamkit_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("SEAMKIT_DEBUG", None)
    return subprocess.run(
        [str(Path(sys.executable).with_name("seamkit")), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=WORKER_TIMEOUT_S,
        env=env,
    )


def agent_yaml(turns: str) -> str:
    return (
        "seamkit: 1\n"
        "agent:\n"
        "  name: cli-approval\n"
        "  model:\n"
        "    use: scripted\n"
        "    follow_transcript: true\n"
        f"    turns:\n{turns}"
        "  tools: [{use: write_file, root: ./out}]\n"
        "  approvals: {write_file: every_call}\n"
        "  checkpoints: {use: sqlite, path: .seamkit/seamkit.db}\n"
    )


def test_the_cli_suspends_for_approval_resumes_in_another_process_and_lists_the_run(tmp_path: Path) -> None:
    agent_file = tmp_path / "agent.yaml"
    agent_file.write_text(agent_yaml(
        "      - tool_calls: [{name: write_file, arguments: {path: note.txt, content: approved text}}]\n"
        "      - the note is written\n"
    ))
    run = seamkit_cli("run", str(agent_file), "write the note", cwd=tmp_path)
    text = run.stdout + run.stderr
    assert run.returncode == 3, text
    m = re.search(r"seamkit resume (\S+) --approve (\S+)", text)
    assert m is not None, text
    run_id, call_id = m.group(1), m.group(2)
    assert f"call {call_id}: write_file" in text and "note.txt" in text
    assert not (tmp_path / "out" / "note.txt").exists()

    listed = seamkit_cli("runs", "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    runs = {r["run_id"]: r for r in json.loads(listed.stdout)}
    assert runs[run_id]["status"] == "suspended" and runs[run_id]["agent"] == "cli-approval"

    # seamkit resume rebuilds the agent from the same file; follow_transcript makes the scripted
    # model continue its script from the transcript, as a real model would
    resumed = seamkit_cli("resume", run_id, "--approve", call_id, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "the note is written" in resumed.stdout
    assert (tmp_path / "out" / "note.txt").read_text() == "approved text"

    again = seamkit_cli("resume", run_id, "--approve", call_id, cwd=tmp_path)
    assert again.returncode != 0
    assert run_id in again.stderr and "Traceback" not in again.stderr, again.stderr
    assert (tmp_path / "out" / "note.txt").read_text() == "approved text"

    shown = seamkit_cli("runs", "show", run_id, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert run_id in shown.stdout and "done" in shown.stdout and "the note is written" in shown.stdout
    listed = seamkit_cli("runs", "list", "--status", "done", "--json", cwd=tmp_path)
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [run_id]


# -- 5. a process killed while a side-effecting call runs ----------------------------------------


def effect_keys(path: Path, run_id: str) -> list[tuple[int, str | None]]:
    """(payment id, idempotency key the tool was given) of each real execution, in order."""
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT payment_id, idem_key FROM effects WHERE run_id = ? ORDER BY rowid",
                            (run_id,)).fetchall()


@pytest.mark.parametrize("case", ["applied", "not-applied", "idempotent"])
def test_a_call_killed_mid_run_is_uncertain_until_settled_then_the_run_continues(tmp_path: Path, case: str) -> None:
    """SIGKILL inside the tool on SQLite; the resumed run suspends listing the call (``runs show``)
    until a person settles it (``runs settle``), then continues accordingly; an idempotent tool is
    retried at once with the same idempotency key."""
    db = tmp_path / ".seamkit" / "seamkit.db"  # the CLI's default store in this directory
    effects = tmp_path / "effects.db"
    run_id = f"kill-{case}"
    spec = {"backend": "sqlite", "params": {"path": str(db)}, "effects": str(effects), "run_id": run_id,
            "steps": 2, "kill_in_call": 2, "kill_before_write": case == "not-applied",
            "idempotent": case == "idempotent"}
    rc, out, err = worker({**spec, "mode": "effect_run"}, tmp_path, expect_rc=None)
    assert rc == -signal.SIGKILL and out is None, err
    _, resumed, _ = worker({**spec, "mode": "effect_resume"}, tmp_path)
    assert resumed is not None
    key = f"{run_id}:2:pay_2"  # run id, step, call id: the same in every attempt
    if case == "idempotent":
        assert resumed["stop_reason"] == "completed" and resumed["uncertain"] == []
        assert resumed["output"] == "done: pay_1=recorded payment 1; pay_2=recorded payment 2"
        assert effect_keys(effects, run_id) == [(1, f"{run_id}:1:pay_1"), (2, key), (2, key)]
        return

    # the run waits for a person: the call is listed with a status detail and a warning
    assert resumed["stop_reason"] == "suspended" and resumed["uncertain"] == [["pay_2", "record_payment", True]]
    assert any("pay_2" in w and "runs settle" in w for w in resumed["warnings"])
    shown = seamkit_cli("runs", "show", run_id, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "suspended" in shown.stdout and "waiting for a person to settle 1 tool call" in shown.stdout
    assert "call pay_2: record_payment" in shown.stdout and f"seamkit runs settle {run_id} pay_2" in shown.stdout
    refused = worker({**spec, "mode": "effect_resume"}, tmp_path, expect_rc=None)
    assert refused[0] != 0 and "settle" in refused[2] and "Traceback" not in refused[2]

    settle = ["applied", "--result", "payment 2 is in the ledger"] if case == "applied" else ["not-applied"]
    settled = seamkit_cli("runs", "settle", run_id, "pay_2", *settle, cwd=tmp_path)
    assert settled.returncode == 0, settled.stderr
    after = seamkit_cli("runs", "show", run_id, cwd=tmp_path).stdout
    assert "outcome unknown" not in after and "waiting for a person" not in after, after
    _, final, _ = worker({**spec, "mode": "effect_resume"}, tmp_path)
    assert final is not None and final["stop_reason"] == "completed" and final["uncertain"] == []
    if case == "applied":
        assert final["output"] == ("done: pay_1=recorded payment 1; "
                                   "pay_2=A person checked: this call was applied. Result: payment 2 is in the ledger")
        assert effect_keys(effects, run_id) == [(1, f"{run_id}:1:pay_1"), (2, key)]  # not run again
    else:
        assert final["output"] == "done: pay_1=recorded payment 1; pay_2=recorded payment 2"
        assert effect_keys(effects, run_id) == [(1, f"{run_id}:1:pay_1"), (2, key)]  # ran once, on resume
    assert not any("pay_2" in w for w in final["warnings"])
