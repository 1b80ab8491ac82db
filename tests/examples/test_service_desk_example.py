"""examples/service-desk.yaml on the bundled local model (llama.cpp, Gemma 3 270M, CPU), as the
example's header says to run it: ``seamkit run`` in one process ends waiting for the person's
confirmation of the write; ``seamkit resume --answer yes`` in another process runs the write once,
with the input stored on the agenda; the same turn id again returns the stored turn without a
model call or a capability run. The store is the embedded default SQLite file, read back here.

What the tiny model proposes is its own (it mostly copies the example in the prompt); the test
asserts the kernel's part: dispositions, outcomes, the checkpointed agenda and interaction, the
ticket count, the replay."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from seamkit._agent.kernel import kernel_state
from seamkit._durability.checkpointer import Checkpointer
from seamkit.composition import build_store
from seamkit.values import Scope

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "service-desk.yaml"
TASK = "My laptop screen is broken, please open a request"


def _seamkit(cwd: Path, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([sys.executable, "-m", "seamkit", *args, "--json"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, events, proc.stderr


def _finished(events: list[dict[str, Any]]) -> dict[str, Any]:
    assert events and events[-1]["kind"] == "run_finished", events[-3:]
    return events[-1]


async def _read(cwd: Path, run_id: str) -> tuple[Any, Any]:
    """The run's latest checkpoint and its ticket counter, from the default store in ``cwd``."""
    old = Path.cwd()
    os.chdir(cwd)
    try:
        store = build_store(None)
        cp = Checkpointer(store)
        snap = await cp.latest(run_id)
        tickets = await store.get(Scope(), "servicedesk:next_ticket")
        await cp.aclose()
        return snap, tickets
    finally:
        os.chdir(old)


def test_a_confirmation_round_trip_across_two_processes_on_the_bundled_model(tmp_path: Path) -> None:
    rc, events, err = _seamkit(tmp_path, "run", str(EXAMPLE), TASK)
    assert rc == 3, err  # waiting for the person
    first = _finished(events)
    run_id = first["run_id"]
    turn = first["turn"]
    assert first["stop_reason"] == "suspended"
    outcomes = [(e["capability"], e["outcome"]) for e in turn["executions"]]
    assert ("search_services@1", "completed") in outcomes
    assert ("submit_request@1", "awaiting_confirmation") in outcomes
    assert [i["kind"] for i in turn["interactions"]] == ["confirmation"]
    [item] = turn["agenda"]
    assert item["capability"] == "submit_request@1" and item["kind"] == "confirmation"
    # the planner's events went out: one per intention, one per capability run
    kinds = [e["event"] for e in events if e["kind"] == "capability"]
    assert "planned" in kinds and "finished" in kinds

    snap, tickets = asyncio.run(_read(tmp_path, run_id))
    found = kernel_state(snap.state)
    assert found is not None
    kernel = found[0]
    assert [a.id for a in kernel.agenda] == [item["id"]] and len(kernel.interactions) == 1
    assert "service.match@1" in kernel.facts and kernel.evidence  # the search's fact and its evidence
    assert tickets is None  # nothing written before the yes

    rc, events, err = _seamkit(tmp_path, "resume", run_id, "--answer", "yes", "--turn-id", "t2")
    assert rc in (0, 3), err
    second = _finished(events)
    runs = [e for e in second["turn"]["executions"] if e["capability"] == "submit_request@1"
            and e["outcome"] == "completed"]
    assert len(runs) == 1
    assert runs[0]["confirmed"] is True and runs[0]["reason"] == f"agenda:{item['id']}"
    assert runs[0]["input"] == item["input"]  # the stored input, whatever the model proposes now
    snap, tickets = asyncio.run(_read(tmp_path, run_id))
    assert tickets == 1
    assert "t2" in snap.state["kernel"].turns
    steps = second["steps"]

    rc, events, err = _seamkit(tmp_path, "resume", run_id, "--answer", "yes", "--turn-id", "t2")
    assert rc == (0 if second["stop_reason"] == "completed" else 3), err
    replay = _finished(events)
    assert replay["turn"]["replayed"] is True
    assert replay["steps"] == steps  # no model call
    assert replay["turn"]["executions"] == second["turn"]["executions"]
    assert not [e for e in events if e["kind"] in ("model_result", "capability")]
    _, tickets = asyncio.run(_read(tmp_path, run_id))
    assert tickets == 1


def test_no_declines_the_write_and_clears_the_agenda(tmp_path: Path) -> None:
    rc, events, err = _seamkit(tmp_path, "run", str(EXAMPLE), TASK)
    assert rc == 3, err
    run_id = _finished(events)["run_id"]
    rc, events, err = _seamkit(tmp_path, "resume", run_id, "--answer", "No thanks.")
    assert rc in (0, 3), err
    turn = _finished(events)["turn"]
    declined = [e for e in turn["executions"] if e["outcome"] == "declined"]
    assert [e["code"] for e in declined] == ["CONFIRMATION_DECLINED"]
    assert not [e for e in turn["executions"] if e["capability"] == "submit_request@1" and e["outcome"] == "completed"]
    snap, tickets = asyncio.run(_read(tmp_path, run_id))
    assert tickets is None
    kernel = snap.state["kernel"]
    assert all(a.id != declined[0]["reason"].split(":")[1] for a in kernel.agenda)
