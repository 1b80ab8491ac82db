"""``seamkit resume`` on a run a runner started (checkpoint metadata ``queued: NAME``, see
:mod:`seamkit._runners`): its continuation goes back to that runner, not into this process."""

from __future__ import annotations

import asyncio
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest
from seamkit._cli import main as cli_main
from seamkit._hookspecs import hookimpl
from seamkit._runners import RequeueRequest
from seamkit.composition import build_agent, load_composition

AGENT = """
seamkit: 1
agent:
  name: queued
  model:
    use: scripted
    follow_transcript: true
    turns: [{tool_calls: [{name: calculator, arguments: {expression: "1+1"}}]}, {text: two}]
  tools: [calculator]
  approvals: {calculator: every_call}
  checkpoints: {use: sqlite, path: runs.db}
"""


class _Recorder:
    def __init__(self) -> None:
        self.requests: list[RequeueRequest] = []

    def requeue(self, request: RequeueRequest) -> str:
        self.requests.append(request)
        return "queue 'q1' on test://broker"


_RECORDER = _Recorder()


@pytest.fixture
def suspended(register_plugin: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    @hookimpl
    def seamkit_register_runners(register: Any) -> None:
        register("fakeq", lambda: _RECORDER)

    register_plugin(types.SimpleNamespace(seamkit_register_runners=seamkit_register_runners), name="fakeq-p")
    _RECORDER.requests.clear()
    monkeypatch.chdir(tmp_path)
    file = tmp_path / "agent.yaml"
    file.write_text(textwrap.dedent(AGENT))

    async def start(queued: str) -> str:
        agent = build_agent(load_composition(file))
        try:
            result = await agent.run("go", metadata={"queued": queued, "queue": "q1"})
        finally:
            assert agent.checkpointer is not None
            await agent.checkpointer.aclose()
        assert result.stop_reason == "suspended"
        return result.run_id

    return file, asyncio.run(start("fakeq"))


def _status(file: Path, run_id: str) -> str:
    async def read() -> str:
        agent = build_agent(load_composition(file))
        assert agent.checkpointer is not None
        try:
            snap = await agent.checkpointer.latest(run_id)
        finally:
            await agent.checkpointer.aclose()
        assert snap is not None
        return str(snap.status)

    return asyncio.run(read())


def test_the_continuation_goes_to_the_runner_with_the_checked_decisions(
        suspended: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    file, run_id = suspended
    assert cli_main.main(["resume", run_id, "--agent", str(file), "--approve", "nope"]) == 2
    assert "nope" in capsys.readouterr().err and _RECORDER.requests == []  # checked before it is handed on
    rc = cli_main.main(["resume", run_id, "--agent", str(file), "--edit", 'call_0_0={"expression": "2+2"}'])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert out == f"{run_id}\n" and "queue 'q1' on test://broker" in err and f"runs wait {run_id}" in err
    (req,) = _RECORDER.requests
    assert req.run_id == run_id and req.file == str(file.resolve()) and req.agent == "queued"
    assert req.metadata["queue"] == "q1"
    assert req.decisions is not None and req.decisions["call_0_0"].approved
    assert dict(req.decisions["call_0_0"].arguments or {}) == {"expression": "2+2"}
    assert _status(file, run_id) == "suspended"  # nothing ran in this process


def test_here_continues_it_in_this_process(suspended: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    file, run_id = suspended
    rc = cli_main.main(["resume", run_id, "--agent", str(file), "--approve", "call_0_0", "--here"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert out == "two\n" and _RECORDER.requests == []
    assert _status(file, run_id) == "done"


def test_a_runner_that_is_not_installed_is_named_with_the_way_out(
        suspended: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    file, _ = suspended

    async def start() -> str:
        agent = build_agent(load_composition(file))
        assert agent.checkpointer is not None
        try:
            return (await agent.run("go", metadata={"queued": "nowhere"})).run_id
        finally:
            await agent.checkpointer.aclose()

    run_id = asyncio.run(start())
    rc = cli_main.main(["resume", run_id, "--agent", str(file), "--approve", "call_0_0"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "'nowhere' queue" in err and "--here" in err and "Traceback" not in err
    assert _status(file, run_id) == "suspended"
