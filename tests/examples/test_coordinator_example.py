"""examples/coordinator.yaml on the bundled local model (llama.cpp, Gemma 3 270M, CPU), as its
header says to run it: the planner's three topics fan out to three researcher runs and the writer
joins their notes. Asserts the workflow's part (what the tiny model writes is its own): the events
in order, three branches joined once, each agent step a child run of the workflow in the embedded
SQLite store, the step tree in ``runs show``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coordinator.yaml"


def _seamkit(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([sys.executable, "-m", "seamkit", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_the_coordinator_fans_out_to_three_researchers_and_joins_them_on_the_bundled_model(tmp_path: Path) -> None:
    proc = _seamkit(tmp_path, "run", str(EXAMPLE), "How do bees make honey?", "--json")
    assert proc.returncode == 0, proc.stderr
    events: list[dict[str, Any]] = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    finished = [e["name"] for e in events if e["kind"] == "step" and e["event"] == "finished"]
    assert finished == ["plan", "research", "research", "research", "write"]
    last = events[-1]
    assert (last["kind"], last["status"], last["outcome"]) == ("workflow_finished", "done", "answer")
    assert isinstance(last["output"], str) and last["output"].strip()
    run_id = last["run_id"]
    show = json.loads(_seamkit(tmp_path, "runs", "show", run_id, "--json").stdout)
    steps = show["workflow"]["steps"]
    # steps are listed in the order they finished; concurrent branches finish in any order
    assert sorted(s["branch"] for s in steps if s["step"] == "research") == [[[0, 3]], [[1, 3]], [[2, 3]]]
    rows = json.loads(_seamkit(tmp_path, "runs", "list", "--json").stdout)
    children = {r["run_id"]: r for r in rows if r["parent_run_id"] == run_id}
    assert set(children) == {s["run_id"] for s in steps}
    assert sorted(r["agent"] for r in children.values()) == ["planner", "researcher", "researcher", "researcher",
                                                             "writer"]
