"""A workflow file on the queue: ``seamkit submit wf.yaml TASK`` runs the workflow on a worker, its
two agent-step branches marked ``queue:`` run on two other workers at once and the join gets both
outputs; a workflow worker killed while it waits on its branches is re-delivered, resumes from the
workflow's checkpoint and waits for the same branches (each branch's effect applied once);
``seamkit runs wait`` reports the workflow run; a workflow whose store is not shared is refused,
located."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from celery_testlib import Env


def workflow_file(env: Env, *, sleep: float = 0.0, step_store: str | None = None) -> Path:
    """Two branches (steps ``a`` and ``b``, both the ``researcher`` agent, queued) on the start
    event, each recording (sleeping ``sleep`` s) and answering ``found it``; ``write`` joins them."""
    store = f'{{use: redis, url: "{env.redis_url}", prefix: "{env.prefix}"}}'
    queue = f"{{name: {env.prefix}-children}}"
    text = (
        "seamkit: 1\n"
        "agent:\n"
        "  name: lead\n"
        "  model: {use: scripted, turns: [unused], repeat: true}\n"
        f"  checkpoints: {store}\n"
        "agents:\n"
        "  researcher:\n"
        "    model: {use: scripted, follow_transcript: true, turns: "
        f"[{{tool_calls: [{{name: record, arguments: {{sleep: {sleep}}}}}]}}, {{text: found it}}]}}\n"
        "    tools: [record]\n"
        f"    checkpoints: {step_store or store}\n"
        "  writer:\n"
        "    model: {use: scripted, turns: [written], repeat: true}\n"
        f"    checkpoints: {store}\n"
        "workflow:\n"
        "  name: brief\n"
        "  outcomes: [done]\n"
        "  steps:\n"
        f"    a: {{agent: researcher, emits: a_done, queue: {queue}}}\n"
        f"    b: {{agent: researcher, emits: b_done, queue: {queue}}}\n"
        "    write: {agent: writer, consumes: [a_done, b_done], emits: done}\n"
    )
    path = env.cwd / "wf.yaml"
    path.write_text(text)
    return path


def _submit(env: Env, file: Path) -> str:
    from seamkit_celery import make_app, submit

    # check=False: the test tool is registered in the workers' processes, not in this one
    return submit(make_app(env.broker, queue=env.prefix), file, "part 7", queue=env.prefix, check=False)


def _children(env: Env, parent: str) -> dict[str, list[Any]]:
    """The child runs of ``parent`` (latest checkpoint, and every version's), by agent."""
    async def go() -> dict[str, list[Any]]:
        from seamkit._durability.checkpointer import Checkpointer
        from seamkit_redis.store import RedisStore

        cp = Checkpointer(RedisStore(env.redis_url, prefix=env.prefix))
        try:
            out: dict[str, list[Any]] = {}
            for info in await cp.list_runs(parent_run_id=parent):
                snap = await cp.latest(info.run_id)
                versions = [await cp.at_version(info.run_id, h.version) for h in await cp.history(info.run_id)]
                out.setdefault(snap.state["agent"], []).append((snap, versions))
            return out
        finally:
            await cp.aclose()

    return asyncio.run(go())


def _owner_pids(versions: list[Any]) -> set[str]:
    return {str(v.metadata.get("owner")).rsplit(":", 1)[1] for v in versions}


def _group(pid: str) -> str:
    import subprocess

    return subprocess.run(["ps", "-o", "pgid=", "-p", pid], capture_output=True, text=True).stdout.strip()


def test_two_queued_branches_run_on_two_workers_at_once_and_join(env: Env) -> None:
    file = workflow_file(env, sleep=1.5)
    flows = env.worker(file)
    kids = [env.worker(file, "--queue", f"{env.prefix}-children") for _ in range(2)]
    for w in (flows, *kids):
        w.wait_ready()
    run_id = _submit(env, file)
    found = env.outcomes([run_id], timeout=40)
    assert found[run_id].status == "done", (flows.text(), kids[0].text(), kids[1].text())
    assert found[run_id].state["output"] == "written"
    children = _children(env, run_id)
    branches = children["researcher"]
    assert len(branches) == 2 and {s.status for s, _ in branches} == {"done"}
    # each branch was run (every checkpoint written) by one process, and the two by different
    # worker processes, each a child of a different `seamkit worker`
    owners = [_owner_pids(v) for _, v in branches]
    assert all(len(o) == 1 for o in owners) and owners[0] != owners[1], owners
    groups = {_group(next(iter(o))) for o in owners}
    assert groups == {str(k.pid) for k in kids}, (groups, [k.pid for k in kids])
    # at once: each branch started before the other finished
    (a_snap, a_versions), (b_snap, b_versions) = branches
    assert a_versions[0].created_at < b_snap.created_at and b_versions[0].created_at < a_snap.created_at
    # the join got both outputs (the writer ran in the workflow's process: it is not queued)
    ((writer, writer_versions),) = children["writer"]
    assert [m.text for m in writer.transcript if m.role == "user"] == [
        json.dumps({"a_done": "found it", "b_done": "found it"})]
    assert _owner_pids(writer_versions) != owners[0] | owners[1]
    assert {a["key"] for a in env.applied()} == {a["key"] for a in env.attempts()} and len(env.applied()) == 2
    # the branches' usage is the workflow's
    assert found[run_id].state["usage"].requests == 2 * 2 + 1
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "10", "--json")
    assert w.returncode == 0, w
    out = json.loads(w.stdout)
    assert (out["status"], out["output"]) == ("done", "written")


def test_a_workflow_worker_killed_while_it_waits_on_its_branches_is_resumed_elsewhere(env: Env) -> None:
    file = workflow_file(env, sleep=4.0)
    first = env.worker(file)
    env.worker(file, "--queue", f"{env.prefix}-children", "--concurrency", "2")
    first.wait_ready()
    run_id = _submit(env, file)
    # both branches are inside their tool (4 s): the workflow waits on them; kill its worker there
    deadline = time.monotonic() + 30
    while len(env.attempts()) < 2:
        assert time.monotonic() < deadline, first.text()
        time.sleep(0.05)
    first.kill_main()
    second = env.worker(file)
    found = env.outcomes([run_id], timeout=60)
    assert found[run_id].status == "done", second.text()
    assert found[run_id].state["output"] == "written"
    children = _children(env, run_id)
    assert len(children["researcher"]) == 2 and len(children["writer"]) == 1  # no branch started twice
    # each branch's effect applied once, by one execution
    assert len(env.attempts()) == 2 and len(env.applied()) == 2
    assert len({a["key"] for a in env.applied()}) == 2
    # the workflow was resumed by the second worker, not started again
    owners = {o.rsplit(":", 1)[1] for o in asyncio.run(env.history_owners(run_id))}
    assert len(owners) == 2


def test_a_workflow_whose_steps_store_is_not_shared_is_refused_located(env: Env) -> None:
    file = workflow_file(env, step_store="{use: sqlite, path: kids.db}")
    r = env.submit(file, "go")
    assert r.returncode == 2, r
    lines = file.read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if t.strip().startswith("a: {agent: researcher"))
    assert f"wf.yaml:{line}:" in r.stderr, r.stderr
    assert "step 'a' sends its agent run to the queue" in r.stderr and "'sqlite'" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_a_workflow_at_a_gate_is_reported_suspended_and_answered_outside_the_queue(env: Env) -> None:
    store = f'{{use: redis, url: "{env.redis_url}", prefix: "{env.prefix}"}}'
    file = env.cwd / "gate.yaml"
    file.write_text(
        "seamkit: 1\n"
        "agent:\n"
        "  name: lead\n"
        "  model: {use: scripted, turns: [unused], repeat: true}\n"
        f"  checkpoints: {store}\n"
        "workflow:\n"
        "  outcomes: [done]\n"
        "  steps:\n"
        "    ok: {gate: 'Go on?', emits: done}\n")
    env.worker(file)
    run_id = env.submit(file, "part 7").stdout.strip()  # the CLI records the run: runs wait knows it is queued
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30", "--json")
    assert w.returncode == 3, w
    assert json.loads(w.stdout)["status"] == "suspended"
    r = env.submit(file, "--resume", run_id)
    assert r.returncode == 2 and f"seamkit resume {run_id} --answer TEXT" in r.stderr, r
    assert "Traceback" not in r.stderr
    done = env.cli("resume", run_id, "--answer", "yes", "--agent", str(file))
    assert done.returncode == 0, done
    assert env.outcomes([run_id], timeout=10)[run_id].status == "done"


def test_seamkit_batch_runs_workflows_and_refuses_variables_for_them(env: Env) -> None:
    file = workflow_file(env)
    bad = env.cwd / "bad.jsonl"
    bad.write_text('"one"\n{"task": "two", "variables": {"team": "ops"}}\n')
    r = env.cli("batch", str(file), str(bad), "--queue", env.prefix, timeout=60)
    assert r.returncode == 2 and "bad.jsonl:2: variables fill an agent's prompt" in r.stderr, r
    env.worker(file)
    env.worker(file, "--queue", f"{env.prefix}-children", "--concurrency", "2")
    inputs = env.cwd / "inputs.jsonl"
    inputs.write_text('"part 1"\n{"task": "{\\"topic\\": \\"part 2\\"}"}\n')
    out = env.cwd / "results.jsonl"
    r = env.cli("batch", str(file), str(inputs), "--queue", env.prefix, "--out", str(out), "--timeout", "60",
                timeout=90)
    assert r.returncode == 0, (r, env.workers[0].text())
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(x["status"], x["output"]) for x in rows] == [("done", "written")] * 2
    # the second input is a JSON object: the workflow's structured input, sent to each branch as JSON
    children = _children(env, rows[1]["run_id"])
    tasks = {m.text for s, _ in children["researcher"] for m in s.transcript if m.role == "user"}
    assert tasks == {json.dumps({"topic": "part 2"})}
