"""examples/chat.yaml on the local models (llama.cpp Gemma 3 270M, MiniLM embeddings, sqlite-vec),
as its header says to run it: one chat turn as a workflow. Asserts the workflow's part (what the
tiny model writes is its own): the steps in their order with the two gathers in parallel before
compose, the outcome's shape, and the exchange remembered in the vector memory exactly once, found
again by meaning from a new question."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from seamkit.composition import build_workflow, load_composition
from seamkit.values import Scope

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chat.yaml"


def _run(cwd: Path, question: str) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([sys.executable, "-m", "seamkit", "run", str(EXAMPLE), question, "--json"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


async def _remembered(cwd: Path, question: str) -> list[Any]:
    old = Path.cwd()
    os.chdir(cwd)  # the memory's store is .seamkit/vectors.db in the working directory
    try:
        w = build_workflow(load_composition(EXAMPLE))
        embeddings, vectors = w.services["embeddings"], w.services["vectors"]
        [vec] = await embeddings.embed([question])
        hits = await vectors.query(Scope(), vec, k=10)
        return [h for h in hits if h[0].startswith("exchange:")]
    finally:
        os.chdir(old)


def test_a_chat_turn_runs_as_a_workflow_on_the_local_models(tmp_path: Path) -> None:
    events = _run(tmp_path, "How does a workflow join a fan-out?")
    steps = [(e["event"], e["name"]) for e in events if e["kind"] == "step"]
    started = [name for what, name in steps if what == "started"]
    assert started[0] == "contextualize" and set(started[1:3]) == {"recall", "gather"}
    finished = [name for what, name in steps if what == "finished"]
    assert finished.index("compose") > max(finished.index("recall"), finished.index("gather"))
    assert sorted(finished) == sorted(["contextualize", "recall", "gather", "compose", "answer", "complete",
                                       "remember"])
    last = events[-1]
    assert (last["kind"], last["status"], last["outcome"]) == ("workflow_finished", "done", "turn")
    assert isinstance(last["output"]["answer"], str) and isinstance(last["output"]["followups"], list)
    hits = asyncio.run(_remembered(tmp_path, "joining a fan-out in a workflow"))
    assert len(hits) == 1  # the exchange, stored once, found by meaning
