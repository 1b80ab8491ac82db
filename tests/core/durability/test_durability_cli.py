"""``seamkit runs`` and ``seamkit resume`` on the embedded default store (SQLite in ./.seamkit)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

AGENT = """\
seamkit: 1
agent:
  model:
    use: scripted
    follow_transcript: true
    turns: [{tool_calls: [{name: calculator, arguments: {expression: "1+1"}}]}, "two"]
  tools: [calculator]
"""


def seamkit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
    env["NO_COLOR"] = "1"
    return subprocess.run([str(Path(sys.executable).with_name("seamkit")), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def runs(cwd: Path) -> list[dict[str, object]]:
    listed = seamkit("runs", "list", "--json", cwd=cwd)
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)  # type: ignore[no-any-return]


def test_runs_are_checkpointed_by_default_listed_shown_pruned_and_deleted(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(AGENT)
    for _ in range(2):
        done = seamkit("run", "a.yaml", "hi", cwd=tmp_path)
        assert done.returncode == 0 and done.stdout.strip() == "two", done.stderr
    assert (tmp_path / ".seamkit" / "seamkit.db").is_file()
    listed = runs(tmp_path)
    assert [r["status"] for r in listed] == ["done", "done"] and [r["version"] for r in listed] == [4, 4]
    first = str(listed[1]["run_id"])
    shown = seamkit("runs", "show", first, "--json", cwd=tmp_path)
    doc = json.loads(shown.stdout)
    assert [v["version"] for v in doc["versions"]] == [1, 2, 3, 4]
    assert [m["role"] for m in doc["transcript"]] == ["user", "assistant", "tool", "assistant"]
    assert doc["metadata"]["agent_file"] == str((tmp_path / "a.yaml").resolve())
    old = json.loads(seamkit("runs", "show", first, "--version", "2", "--json", cwd=tmp_path).stdout)
    assert [m["role"] for m in old["transcript"]] == ["user", "assistant"]

    pruned = seamkit("runs", "prune", "--keep-last", "1", cwd=tmp_path)
    assert pruned.returncode == 0 and "pruned 6 checkpoint versions" in pruned.stderr, pruned.stderr
    doc = json.loads(seamkit("runs", "show", first, "--json", cwd=tmp_path).stdout)
    assert [v["version"] for v in doc["versions"]] == [4] and len(doc["transcript"]) == 4  # log kept whole
    gone = seamkit("runs", "show", first, "--version", "2", cwd=tmp_path)
    assert gone.returncode == 2 and "no version 2 of run" in gone.stderr

    deleted = seamkit("runs", "delete", first, cwd=tmp_path)
    assert deleted.returncode == 0 and [r["run_id"] for r in runs(tmp_path)] != [] and len(runs(tmp_path)) == 1
    again = seamkit("runs", "delete", first, cwd=tmp_path)
    assert again.returncode == 2 and f"no run {first!r}" in again.stderr
    assert seamkit("runs", "prune", "--finished-days", "0", cwd=tmp_path).returncode == 0
    assert runs(tmp_path) == []


def test_resume_errors_are_clear_and_change_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(AGENT)
    nothing = seamkit("resume", "run_nope", cwd=tmp_path)
    assert nothing.returncode == 2 and "no runs here" in nothing.stderr
    assert not (tmp_path / ".seamkit").exists()  # looking does not create a store
    assert seamkit("run", "a.yaml", "hi", cwd=tmp_path).returncode == 0
    unknown = seamkit("resume", "run_nope", cwd=tmp_path)
    assert unknown.returncode == 2 and "no run 'run_nope'" in unknown.stderr and "Traceback" not in unknown.stderr
    (run,) = runs(tmp_path)
    finished = seamkit("resume", str(run["run_id"]), cwd=tmp_path)
    assert finished.returncode == 2 and "it is done" in finished.stderr and "Traceback" not in finished.stderr
    shown = seamkit("resume", str(run["run_id"]), "--allow-finished", cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout == "two\n"  # once, as `seamkit run` printed it
    decided = seamkit("resume", str(run["run_id"]), "--allow-finished", "--approve", "c1", cwd=tmp_path)
    assert decided.returncode == 2 and "not waiting for approval" in decided.stderr
    bad = seamkit("resume", str(run["run_id"]), "--edit", "c1={not json", cwd=tmp_path)
    assert bad.returncode == 2 and "not JSON" in bad.stderr
    both = seamkit("resume", str(run["run_id"]), "--approve", "c1", "--reject", "c1", cwd=tmp_path)
    assert both.returncode == 2 and "more than one decision" in both.stderr
    assert [r["version"] for r in runs(tmp_path)] == [run["version"]]
    for n in ("0", "99999999999999999999"):
        limit = seamkit("runs", "list", "--limit", n, cwd=tmp_path)
        assert limit.returncode == 2 and "--limit" in limit.stderr and "unexpected" not in limit.stderr


def test_approvals_on_a_store_that_dies_with_the_process_are_refused_before_running(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(AGENT + "  checkpoints: {use: memory}\n  approvals: {calculator: every_call}\n")
    done = seamkit("run", "m.yaml", "hi", cwd=tmp_path)
    assert done.returncode == 2 and "outlives this process" in done.stderr
    # SQLite's ':memory:' declares persistent=False too
    (tmp_path / "s.yaml").write_text(AGENT + '  checkpoints: {use: sqlite, path: ":memory:"}\n'
                                     "  approvals: {calculator: every_call}\n")
    done = seamkit("run", "s.yaml", "hi", cwd=tmp_path)
    assert done.returncode == 2 and "outlives this process" in done.stderr


def test_stores_setup_opens_the_default_store(tmp_path: Path) -> None:
    done = seamkit("stores", "setup", cwd=tmp_path)
    assert done.returncode == 0 and "ready" in done.stderr and (tmp_path / ".seamkit" / "seamkit.db").is_file()
    (tmp_path / "broken").mkdir()
    (tmp_path / "b.yaml").write_text(AGENT + "  checkpoints: {use: sqlite, path: broken}\n")
    broken = seamkit("stores", "setup", "--agent", "b.yaml", cwd=tmp_path)
    assert broken.returncode == 1 and "StoreUnavailable" in broken.stderr and "Traceback" not in broken.stderr


def test_runs_delete_refuses_a_run_a_live_worker_holds_unless_forced(tmp_path: Path) -> None:
    import asyncio

    from seamkit._durability.checkpointer import Checkpointer, worker_id
    from seamkit._plugins.registry import get_registry
    from seamkit.values import Message

    async def start() -> str:
        store = get_registry().resolve("store", "sqlite").build({"path": str(tmp_path / ".seamkit" / "seamkit.db")})
        cp = Checkpointer(store, owner=worker_id())  # this (live) test process holds the lease
        try:
            await cp.begin("run_live", {"step": 0}, [Message.user("hi")])
        finally:
            await cp.aclose()
        return "run_live"

    run_id = asyncio.run(start())
    refused = seamkit("runs", "delete", run_id, cwd=tmp_path)
    assert refused.returncode == 2 and "being run by" in refused.stderr and "--force" in refused.stderr
    assert [r["run_id"] for r in runs(tmp_path)] == [run_id]
    forced = seamkit("runs", "delete", run_id, "--force", cwd=tmp_path)
    assert forced.returncode == 0 and runs(tmp_path) == []


def test_approval_prompts_show_invisible_characters_escaped() -> None:
    # regression: a bidi override (U+202E) in a path made the prompt show a different file name
    from seamkit._cli.render import pending_text
    from seamkit._durability.approvals import PendingApproval

    text = pending_text("run_1", [PendingApproval("c1", "write_file", {"path": "notes\u202etxt.hs"})])
    assert "\u202e" not in text and "notes\\u202etxt.hs" in text


def test_number_and_flag_values_from_the_environment_are_not_masked(tmp_path: Path) -> None:
    # regression: max_bytes: ${MAXB} with MAXB=1000 turned the answer {"answer": 1000} into {"answer": ***}
    (tmp_path / "t.yaml").write_text(
        "seamkit: 1\nagent:\n  model: {use: scripted, turns: ['{\"answer\": 1000}']}\n"
        "  tools: [{use: write_file, root: ., max_bytes: '${MAXB}'}]\n"
        "  output: {json_schema: {type: object, properties: {answer: {type: number}}}}\n"
    )
    env_run = subprocess.run([str(Path(sys.executable).with_name("seamkit")), "run", "t.yaml", "q"], cwd=tmp_path,
                             env={**os.environ, "MAXB": "1000"}, capture_output=True, text=True, timeout=120)
    assert env_run.returncode == 0, env_run.stderr
    assert json.loads(env_run.stdout) == {"answer": 1000}


def test_sigterm_leaves_the_run_resumable_and_exits_143(tmp_path: Path) -> None:
    import signal
    import time

    (tmp_path / "slow.yaml").write_text(
        "seamkit: 1\nagent:\n  model:\n    use: scripted\n    follow_transcript: true\n    delay: 1.5\n"
        "    turns: [{tool_calls: [{name: calculator, arguments: {expression: '2+2'}}]}, four]\n"
        "  tools: [calculator]\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
    proc = subprocess.Popen([str(Path(sys.executable).with_name("seamkit")), "run", "--json", "slow.yaml", "go"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    while True:  # wait until the tool batch is done: the second model turn is in flight
        line = proc.stdout.readline()
        assert line, proc.communicate(timeout=30)
        if json.loads(line)["kind"] == "tool_result":
            break
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, (out, err)
    assert "Traceback" not in err
    (run,) = runs(tmp_path)
    assert run["status"] == "running"
    resumed = seamkit("resume", str(run["run_id"]), cwd=tmp_path)
    assert resumed.returncode == 0 and resumed.stdout.strip() == "four", resumed.stderr


def test_runs_show_says_why_a_failed_runs_final_checkpoint_was_not_saved(tmp_path: Path) -> None:
    import asyncio

    from seamkit._agent.agent import Agent
    from seamkit._durability.checkpointer import Checkpointer
    from seamkit._plugins.registry import get_registry
    from seamkit._runtime.context import RunContext
    from seamkit.errors import ProviderError
    from seamkit.testing import ScriptedModel

    secret = "sk-live-0123456789abcdef"
    ctx = RunContext()

    async def fail() -> None:
        store = get_registry().resolve("store", "sqlite").build({"path": str(tmp_path / ".seamkit" / "seamkit.db")})
        model = ScriptedModel(["noted", ProviderError("the provider is down")])
        agent = Agent(model, checkpointer=Checkpointer(store, secrets=[secret]))
        try:
            first = await agent.run("hello", ctx=RunContext())
            # a follow-up conversation that holds the secret, and then the provider fails
            await agent.run(f"my key is {secret}", ctx=ctx, history=first.transcript[1:])
        except ProviderError:
            pass
        finally:
            await store.aclose()

    asyncio.run(fail())
    shown = seamkit("runs", "show", ctx.run_id, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"run {ctx.run_id}: failed" in shown.stdout
    assert "detail: the run failed, but its final checkpoint was not saved" in shown.stdout
    assert "secret" in shown.stdout and secret not in shown.stdout
