"""Agent tools' child runs on the queue (``queue:`` on an ``{agent: NAME}`` tool entry): a lead run
by one worker hands its researcher child to the children's queue, another worker runs it, and the
lead gets its answer; a lead killed while it waits is re-delivered and finds the same child; a
failing child is an error result; the YAML is checked, located."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from celery_testlib import Env, wait_for


def lead_file(env: Env, *, sleep: float = 0.0, child_turns: str | None = None, child_store: str | None = None,
              queue: str | None = None, budget: bool = False, fanout: int = 1) -> Path:
    """A lead that records (``record``), then asks ``researcher`` (queued), then answers; the
    researcher records (sleeping ``sleep`` s) and answers ``found it``."""
    store = f'{{use: redis, url: "{env.redis_url}", prefix: "{env.prefix}"}}'
    turns = child_turns or (f"[{{tool_calls: [{{name: record, arguments: {{sleep: {sleep}}}}}]}}, "
                            "{text: found it}]")
    text = (
        "seamkit: 1\n"
        "agent:\n"
        "  name: lead\n"
        "  model:\n"
        f"    use: {'priced_scripted' if budget else 'scripted'}\n"
        "    follow_transcript: true\n"
        "    turns:\n"
        "      - tool_calls: [{name: record, arguments: {sleep: 0}}]\n"
        "      - tool_calls: ["
        + ", ".join(f"{{name: researcher, arguments: {{task: look up part {i}}}}}" for i in range(fanout)) + "]\n"
        "      - text: lead done\n"
        "  tools:\n"
        "    - record\n"
        "    - agent: researcher\n"
        f"      queue: {queue or '{name: ' + env.prefix + '-children}'}\n"
        f"  checkpoints: {store}\n"
        + ("  parallel_side_effects: true\n" if fanout > 1 else "")
        + (f"  middlewares: [{{use: budget, max_cost_usd: '1.00', store: {store}}}]\n" if budget else "")
        + "agents:\n"
        "  researcher:\n"
        f"    model: {{use: {'priced_scripted' if budget else 'scripted'}, follow_transcript: true, turns: {turns}}}\n"
        "    tools: [record]\n"
        f"    checkpoints: {child_store or store}\n"
        + (f"    middlewares: [{{use: budget, max_cost_usd: '1.00', store: {store}}}]\n" if budget else "")
    )
    path = env.cwd / "lead.yaml"
    path.write_text(text)
    return path


def _submit(env: Env, file: Path) -> str:
    from seamkit_celery import make_app, submit

    # check=False: the test tool is registered in the workers' processes, not in this one
    return submit(make_app(env.broker, queue=env.prefix), file, "brief me", queue=env.prefix, check=False)


def _children(env: Env, lead: str) -> list[Any]:
    async def go() -> list[Any]:
        from seamkit._durability.checkpointer import Checkpointer
        from seamkit_redis.store import RedisStore

        cp = Checkpointer(RedisStore(env.redis_url, prefix=env.prefix))
        try:
            return [await cp.latest(info.run_id) for info in await cp.list_runs(parent_run_id=lead)]
        finally:
            await cp.aclose()

    return asyncio.run(go())


def _tool_results(snap: Any) -> list[Any]:
    return [b for m in snap.transcript if m.role == "tool" for b in m.content if hasattr(b, "is_error")]



def test_the_child_runs_on_another_worker_and_the_lead_gets_its_answer(env: Env) -> None:
    file = lead_file(env, budget=True)
    leads = env.worker(file)
    kids = env.worker(file, "--queue", f"{env.prefix}-children")
    lead = _submit(env, file)
    found = env.outcomes([lead], timeout=40)
    assert found[lead].status == "done", (leads.text(), kids.text())
    assert found[lead].state["output"] == "lead done"
    results = _tool_results(found[lead])
    assert [(r.name, r.content, r.is_error) for r in results][-1] == ("researcher", "found it", False)
    (child,) = _children(env, lead)
    assert child.status == "done" and child.parent_run_id == lead and child.state["agent"] == "researcher"
    assert child.metadata.get("queued") == "celery"
    by_run = {a["run"]: a["pid"] for a in env.attempts()}
    assert set(by_run) == {lead, child.run_id}
    assert by_run[lead] != by_run[child.run_id]  # two processes: the lead's worker, the children's
    assert str(by_run[child.run_id]) in _pids_of(kids.pid) and str(by_run[lead]) in _pids_of(leads.pid)
    # the child's usage is the lead's too
    assert found[lead].state["usage"].requests == 3 + child.state["usage"].requests == 5
    # a shared budget charged the child, on the other worker, to the lead's ledger (its root run):
    # both processes reserved on it, and the child has no ledger of its own
    holders = asyncio.run(_ledger_pids(env, lead))
    assert sorted(holders) == sorted([by_run[lead], by_run[child.run_id]])
    assert asyncio.run(_ledger_pids(env, child.run_id)) == []


async def _ledger_pids(env: Env, ledger: str) -> list[int]:
    from seamkit_budget.shared import SharedLedger
    from seamkit_redis.store import RedisStore

    store = RedisStore(env.redis_url, prefix=env.prefix)
    try:
        return [h.pid for h in (await SharedLedger(store).view(ledger)).holders]
    finally:
        await store.aclose()


def _pids_of(pid: int) -> list[str]:
    import subprocess

    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [*out.split(), str(pid)]


def test_a_turn_of_three_calls_fans_out_three_children_to_the_workers(env: Env) -> None:
    # the researcher's tool is side-effecting, so the lead says its calls may run at once
    file = lead_file(env, sleep=1.0, fanout=3)
    env.worker(file)
    kids = env.worker(file, "--queue", f"{env.prefix}-children", "--concurrency", "3")
    lead = _submit(env, file)
    found = env.outcomes([lead], timeout=40)
    assert found[lead].status == "done", kids.text()
    children = _children(env, lead)
    assert len(children) == 3 and {c.status for c in children} == {"done"}
    tasks = sorted(m.text for c in children for m in c.transcript if m.role == "user")
    assert tasks == [f"look up part {i}" for i in range(3)]
    assert [r.content for r in _tool_results(found[lead])[-3:]] == ["found it"] * 3
    child_pids = {a["pid"] for a in env.attempts() if a["run"] != lead}
    assert len(child_pids) == 3  # each child in its own pool process: they ran at once


def test_a_lead_killed_while_it_waits_is_redelivered_and_submits_no_second_child(env: Env) -> None:
    file = lead_file(env, sleep=4.0)
    first = env.worker(file)
    env.worker(file, "--queue", f"{env.prefix}-children")
    first.wait_ready()
    r = env.submit(file, "brief me")  # recorded: if the broker never re-delivers it, a sweeper continues it
    assert r.returncode == 0, r
    lead = r.stdout.strip()
    # the child is inside its tool (4 s): the lead waits on it; kill the lead's worker there
    wait_for(lambda: any(a["run"] != lead for a in env.attempts()), 30, "the child inside its tool")
    first.kill_main()
    second = env.worker(file, "--requeue-after", "5")
    found = env.outcomes([lead], timeout=60)
    assert found[lead].status == "done", second.text()
    children = _children(env, lead)
    assert len(children) == 1 and children[0].status == "done"  # one child, awaited by the new lead worker
    child_attempts = [a for a in env.attempts() if a["run"] == children[0].run_id]
    assert len(child_attempts) == 1  # the child ran once
    assert _tool_results(found[lead])[-1].content == "found it"
    owners = {o.rsplit(":", 1)[1] for o in asyncio.run(env.history_owners(lead))}
    assert len(owners) == 2  # the lead was resumed by the second worker, not started again


def test_a_failing_child_is_an_error_result_and_the_lead_goes_on(env: Env) -> None:
    # the researcher's script ends after its tool call: its next model turn fails (invalid_request)
    file = lead_file(env, child_turns="[{tool_calls: [{name: record, arguments: {sleep: 0}}]}]")
    env.worker(file)
    env.worker(file, "--queue", f"{env.prefix}-children")
    lead = _submit(env, file)
    found = env.outcomes([lead], timeout=40)
    assert found[lead].status == "done", env.workers[0].text()
    result = _tool_results(found[lead])[-1]
    assert result.is_error and result.name == "researcher"
    assert "ChildRunFailed" in result.content and "failed (invalid_request)" in result.content, result.content
    (child,) = _children(env, lead)
    assert child.status == "failed" and child.run_id in result.content


def test_a_queued_child_whose_store_is_not_shared_is_refused_at_its_queue_key(env: Env) -> None:
    file = lead_file(env, child_store="{use: sqlite, path: kids.db}")
    r = env.submit(file, "go")
    assert r.returncode == 2, r
    lines = file.read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if t.strip().startswith("queue:"))
    assert f"lead.yaml:{line}:" in r.stderr, r.stderr
    assert "sends its 'researcher' runs to the queue" in r.stderr and "'sqlite'" in r.stderr
    w = env.cli("worker", str(file), "--queue", env.prefix, timeout=30)
    assert w.returncode == 2 and f"lead.yaml:{line}:" in w.stderr, w
    assert "Traceback" not in r.stderr + w.stderr


def test_queue_on_a_tool_component_is_located(env: Env) -> None:
    file = lead_file(env)
    file.write_text(file.read_text().replace("    - record\n", "    - {use: record, queue: true}\n"))
    r = env.cli("validate", str(file))
    assert r.returncode == 2, r
    assert "lead.yaml:12:" in r.stderr and "only an agent tool" in r.stderr, r.stderr
