"""Send records end to end (issue 16), on a real Redis broker with real ``seamkit worker``
subprocesses and a real Redis or PostgreSQL store: a message lost before any worker took it is
sent again (by the workers' sweeper, by ``runs wait``, by the caller of a queued child run); a
mistyped run id ends ``runs wait`` at once; a worker's rejection reaches ``runs wait``; a run id
submitted again with another spec is refused.

A lost message is made by deleting it from the broker (the Redis list named after the queue)
before any worker runs, as a worker killed between Redis' pop and its unacked record loses it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from celery_testlib import Env, composition


def _write(env: Env, name: str, text: str) -> Path:
    path = env.cwd / name
    path.write_text(text)
    return path


def _lose(env: Env, queue: str, n: int = 1, timeout: float = 20) -> None:
    """Delete the ``n`` messages waiting in ``queue`` on the broker (after they arrive)."""
    import redis

    _wait_messages(env, queue, n, timeout)
    r = redis.Redis.from_url(env.broker)
    try:
        assert r.delete(queue) == 1
    finally:
        r.close()


def _store_yaml(env: Env, kind: str, postgres_dsn: str | None) -> str | None:
    if kind == "redis":
        return None
    assert postgres_dsn is not None
    schema = env.prefix.replace("-", "_")
    return f'{{use: postgres, dsn: "{postgres_dsn}", schema: {schema}}}'


@pytest.fixture(params=["redis", "postgres"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_a_lost_submit_is_sent_again_by_a_worker_nobody_waits(env: Env, store_kind: str, request: pytest.FixtureRequest
                                                              ) -> None:
    dsn = request.getfixturevalue("postgres_dsn") if store_kind == "postgres" else None
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix,
                                               store=_store_yaml(env, store_kind, dsn)))
    if store_kind == "postgres":
        assert env.cli("stores", "setup", "--agent", str(file)).returncode == 0
    r = env.submit(file, "record it")
    assert r.returncode == 0, r
    run_id = r.stdout.strip()
    _lose(env, env.prefix)
    w = env.worker(file, "--requeue-after", "1", "--sweep-every", "0.25")
    w.wait_ready()
    ready = time.monotonic()
    status = _wait_status(env, file, run_id, 30)
    recovered = time.monotonic() - ready
    assert status == "done", w.text()
    assert "has not started" in w.text() and "sent it again" in w.text()
    assert [a["run"] for a in env.applied()] == [run_id]
    print(f"\nlost message ({store_kind}) recovered by the sweeper {recovered:.2f} s after the worker was ready "
          "(requeue-after 1 s, sweep every 0.25 s)")


def _submit_recorded(env: Env, file: Path, n: int) -> list[str]:
    """``n`` runs sent as ``seamkit submit`` sends them (recorded first), without loading ``file``
    in this process (its test tool is registered in the workers' processes only)."""
    import asyncio

    from seamkit_celery import make_app
    from seamkit_celery.task import make_spec, send_recorded
    from seamkit_redis.store import RedisStore

    app = make_app(env.broker, queue=env.prefix)
    specs = [make_spec(file, f"task {i}") for i in range(n)]

    async def go() -> None:
        store = RedisStore(env.redis_url, prefix=env.prefix)
        try:
            for spec in specs:
                await send_recorded(app, store, spec, env.prefix)
        finally:
            await store.aclose()

    asyncio.run(go())
    return [str(s["run_id"]) for s in specs]


def _wait_status(env: Env, file: Path, run_id: str, timeout: float) -> str:
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", str(timeout), "--json",
                "--requeue-after", "600")  # this waiter never sends: the worker must
    return str(json.loads(w.stdout)["status"]) if w.stdout.strip() else f"exit {w.returncode}: {w.stderr}"


def test_a_waiting_message_is_not_sent_again_while_the_queue_is_busy(env: Env) -> None:
    # two runs queued behind a slow one on a solo worker: they wait their turn, unstarted longer
    # than --requeue-after; the sweeper must not send them again (the queue is not empty, and no
    # run sent after them has started)
    file = _write(env, "slow.yaml", composition(redis_url=env.redis_url, prefix=env.prefix, sleep=2.5))
    w = env.worker(file, "--pool", "solo", "--requeue-after", "0.5", "--sweep-every", "0.25")
    w.wait_ready()
    runs = _submit_recorded(env, file, 3)  # at once (a CLI submit takes longer than a run here)
    found = env.outcomes(runs, timeout=40)
    assert [found[r].status for r in runs] == ["done"] * 3, w.text()
    assert "sent it again" not in w.text(), w.text()
    assert len(env.attempts()) == 3


def test_runs_wait_sends_a_lost_run_again(env: Env) -> None:
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    r = env.submit(file, "record it")
    assert r.returncode == 0, r
    run_id = r.stdout.strip()
    _lose(env, env.prefix)
    env.worker(file, "--no-sweep").wait_ready()
    started = time.monotonic()
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30", "--requeue-after", "1")
    elapsed = time.monotonic() - started
    assert w.returncode == 0 and w.stdout.strip() == "recorded", (w, env.workers[0].text())
    assert f"run {run_id} had not started" in w.stderr and "sent it again" in w.stderr, w
    assert [a["run"] for a in env.applied()] == [run_id]
    print(f"\nlost message recovered by runs wait in {elapsed:.2f} s (requeue-after 1 s)")


def test_runs_wait_does_not_send_again_a_run_whose_message_waits_in_its_queue(env: Env) -> None:
    # no worker consumes the queue: the message waits there, it is not lost (the sweeper's rule)
    import redis

    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    run_id = env.submit(file, "record it").stdout.strip()
    _wait_messages(env, env.prefix, 1)
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "4", "--requeue-after", "1")
    assert w.returncode == 124, w
    assert "sent it again" not in w.stderr, w
    r = redis.Redis.from_url(env.broker)
    try:
        assert r.llen(env.prefix) == 1
    finally:
        r.close()


def test_runs_wait_without_a_broker_says_so_and_keeps_waiting(env: Env) -> None:
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    run_id = env.submit(file, "record it").stdout.strip()
    _lose(env, env.prefix)
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "2", "--requeue-after", "0.5",
                env={"SEAMKIT_BROKER_URL": ""})
    assert w.returncode == 124, w
    assert w.stderr.count("cannot be sent again") == 1 and "no broker" in w.stderr, w


def test_runs_wait_on_a_run_id_never_submitted_ends_at_once(env: Env) -> None:
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    w = env.cli("runs", "wait", "no-such-run", "--agent", str(file), "--timeout", "10")
    assert w.returncode == 2, w
    assert f"no run 'no-such-run' was submitted to the store of {file}" in w.stderr, w
    assert "Traceback" not in w.stderr


def test_runs_wait_waits_for_a_batch_run_not_started_yet(env: Env) -> None:
    # a batch's runs have no send record (the batch records what it enqueued): still a queued run
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    inputs = _write(env, "in.jsonl", '"one"\n')
    b = env.cli("batch", str(file), str(inputs), "--batch-id", "b1", "--queue", env.prefix, "--timeout", "0.5")
    assert b.returncode == 1 and '"status": "queued"' in b.stdout, b
    w = env.cli("runs", "wait", "b1-0", "--agent", str(file), "--timeout", "1")
    assert w.returncode == 124 and "not started" in w.stderr, w
    nope = env.cli("runs", "wait", "b1-1", "--agent", str(file), "--timeout", "5")
    assert nope.returncode == 2, nope
    env.worker(file)
    w = env.cli("runs", "wait", "b1-0", "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0 and w.stdout.strip() == "recorded", w


def test_a_rejected_message_is_reported_by_runs_wait(env: Env) -> None:
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    gone = _write(env, "gone.yaml", file.read_text())  # same store, missing on the worker's machine
    run_id = env.submit(gone, "record it").stdout.strip()
    gone.unlink()
    env.worker(file, "--no-sweep")
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
    assert w.returncode == 1, (w, env.workers[0].text())
    assert f"run {run_id} was rejected by a worker" in w.stderr and "gone.yaml" in w.stderr, w
    j = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30", "--json")
    assert j.returncode == 1, j
    out = json.loads(j.stdout)
    assert out["status"] == "rejected" and "gone.yaml" in out["error"]
    assert env.attempts() == []


def test_a_rejection_reason_of_several_lines_is_shown_as_lines(env: Env) -> None:
    import asyncio

    from seamkit_celery.sent import mark_rejected
    from seamkit_redis.store import RedisStore

    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    run_id = env.submit(file, "record it").stdout.strip()

    async def reject() -> None:
        store = RedisStore(env.redis_url, prefix=env.prefix)
        try:
            assert await mark_rejected(store, run_id, "gone.yaml: no such file\nfix it\u202e")
        finally:
            await store.aclose()

    asyncio.run(reject())
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "10")
    assert w.returncode == 1, w
    assert w.stderr.endswith("nothing ran: gone.yaml: no such file\n  fix it\\u202e\n"), w.stderr
    j = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "10", "--json")
    assert json.loads(j.stdout)["error"] == "gone.yaml: no such file\nfix it\u202e", j


def test_a_file_edited_into_an_invalid_one_is_reported_as_rejected(env: Env) -> None:
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    reader = _write(env, "reader.yaml", file.read_text())  # the same store, for runs wait
    w = env.worker(file, "--no-sweep")
    (first,) = _submit_recorded(env, file, 1)
    assert env.outcomes([first], timeout=30)[first].status == "done", w.text()
    file.write_text(file.read_text().replace("  tools: [record]\n", "  tools: [record]\n  max_stepz: 3\n"))
    (second,) = _submit_recorded(env, file, 1)
    r = env.cli("runs", "wait", second, "--agent", str(reader), "--timeout", "30")
    assert r.returncode == 1 and "was rejected by a worker" in r.stderr and "max_stepz" in r.stderr, (r, w.text())


def test_the_same_run_id_with_another_spec_is_refused(env: Env) -> None:
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix,
                                               prompt="You record for {{team}}."))
    other = _write(env, "other.yaml", file.read_text())
    first = env.submit(file, "task a", "--run-id", "r1", "--var", "team=ops")
    assert first.returncode == 0, first
    for args, what in ((("task b", "--var", "team=ops"), "another task"),
                       (("task a", "--var", "team=dev"), "another variables")):
        r = env.submit(file, *args, "--run-id", "r1")
        assert r.returncode == 2 and f"run r1 was submitted before with {what}" in r.stderr, r
    r = env.submit(other, "task a", "--run-id", "r1", "--var", "team=ops")
    assert r.returncode == 2 and f"another file ({other}, not {file})" in r.stderr, r
    again = env.submit(file, "task a", "--run-id", "r1", "--var", "team=ops")  # the same spec: idempotent
    assert again.returncode == 0 and again.stdout.strip() == "r1", again
    env.worker(file)
    w = env.cli("runs", "wait", "r1", "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0, w
    assert len(env.attempts()) == 1  # two messages, one run
    # a run whose record is gone (expired) still has checkpoints that name their file
    import asyncio

    from seamkit.values import Scope
    from seamkit_celery.sent import record_key
    from seamkit_redis.store import RedisStore

    async def drop() -> None:
        store = RedisStore(env.redis_url, prefix=env.prefix)
        try:
            assert await store.delete(Scope(), record_key("r1"))
        finally:
            await store.aclose()

    asyncio.run(drop())
    r = env.submit(other, "task a", "--run-id", "r1", "--var", "team=ops")
    assert r.returncode == 2 and f"run r1 already has checkpoints from {file}" in r.stderr, r


def test_a_library_submit_without_check_records_the_run_when_its_file_loads_here(env: Env) -> None:
    # submit(check=False) of a file that loads in this process: recorded, so runs wait knows the run
    # before any worker started it; a file that needs a worker-only component is sent unrecorded
    from seamkit_celery import make_app, submit
    from seamkit_celery.sent import read_record

    plain = _write(env, "plain.yaml", (
        "seamkit: 1\nagent:\n  name: plain\n  model: {use: scripted, turns: [{text: hello}]}\n"
        f'  checkpoints: {{use: redis, url: "{env.redis_url}", prefix: "{env.prefix}"}}\n'))
    app = make_app(env.broker, queue=env.prefix)
    run_id = submit(app, plain, "say hello", queue=env.prefix, check=False)
    assert _read(env, read_record, run_id) is not None
    w = env.cli("runs", "wait", run_id, "--agent", str(plain), "--timeout", "0.5")
    assert w.returncode == 124, w  # known and not started yet: waited, not "never submitted" (exit 2)
    worker_only = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    other = submit(app, worker_only, "record it", queue=env.prefix, check=False)  # `record`: in the workers only
    assert _read(env, read_record, other) is None
    env.worker(worker_only)
    for r, f in ((run_id, plain), (other, worker_only)):
        w = env.cli("runs", "wait", r, "--agent", str(f), "--timeout", "30")
        assert w.returncode == 0, w


def _read(env: Env, fn: Any, *args: Any) -> Any:
    """``fn(store, *args)`` on this test's Redis store."""
    import asyncio

    from seamkit_redis.store import RedisStore

    async def go() -> Any:
        store = RedisStore(env.redis_url, prefix=env.prefix)
        try:
            return await fn(store, *args)
        finally:
            await store.aclose()

    return asyncio.run(go())


def test_the_entry_agent_named_or_not_is_the_same_run(env: Env) -> None:
    # --agent-name NAME where NAME is the file's entry agent runs what no --agent-name runs: a
    # resubmit of the run id either way is the same run (one run, two sends), not "another agent"
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix, name="recorder"))
    for first, second in ((("r1",), ("r1", "--agent-name", "recorder")), (("r2", "--agent-name", "recorder"), ("r2",))):
        a = env.submit(file, "task a", "--run-id", *first)
        assert a.returncode == 0, a
        b = env.submit(file, "task a", "--run-id", *second)
        assert b.returncode == 0 and b.stdout.strip() == first[0], b
    env.worker(file)
    for run_id in ("r1", "r2"):
        w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
        assert w.returncode == 0, w
    assert sorted(a["run"] for a in env.attempts()) == ["r1", "r2"]  # four messages, two runs
    other = env.submit(file, "task a", "--run-id", "r1", "--agent-name", "nobody")
    assert other.returncode != 0 and "no agent 'nobody'" in other.stderr, other


def test_a_lost_child_message_is_sent_again_by_the_lead_that_waits(env: Env) -> None:
    from test_celery_children import _children, _submit, _tool_results, lead_file

    file = lead_file(env)
    kids_queue = f"{env.prefix}-children"
    leads = env.worker(file, "--requeue-after", "1", "--no-sweep")  # the lead's guard, not a sweeper
    lead = _submit(env, file)
    _lose(env, kids_queue)  # no worker consumes the children's queue yet: delete the child's message
    kids = env.worker(file, "--queue", kids_queue, "--no-sweep")
    kids.wait_ready()
    ready = time.monotonic()
    found = env.outcomes([lead], timeout=40)
    assert found[lead].status == "done", (leads.text(), kids.text())
    recovered = time.monotonic() - ready
    assert _tool_results(found[lead])[-1].content == "found it"
    (child,) = _children(env, lead)
    assert child.status == "done"
    assert f"child run {child.run_id}" in leads.text() and "sent it again" in leads.text()
    print(f"\nlost child message recovered by its lead within {recovered:.2f} s of the children's worker "
          "being ready (requeue-after 1 s)")


def test_a_child_message_waiting_in_its_queue_is_not_sent_again_by_its_lead(env: Env) -> None:
    import redis
    from test_celery_children import _submit, lead_file

    file = lead_file(env)
    kids_queue = f"{env.prefix}-children"
    leads = env.worker(file, "--requeue-after", "1", "--no-sweep")
    _submit(env, file)
    _wait_messages(env, kids_queue)  # the child is sent; no worker consumes its queue
    time.sleep(4)  # four times --requeue-after: what is observed is that nothing happens
    r = redis.Redis.from_url(env.broker)
    try:
        assert r.llen(kids_queue) == 1, leads.text()
    finally:
        r.close()
    assert "sent it again" not in leads.text()


def test_a_rejected_child_is_an_error_result_not_a_wait_forever(env: Env) -> None:
    from test_celery_children import _submit, _tool_results, lead_file

    file = lead_file(env)
    kids_queue = f"{env.prefix}-children"
    leads = env.worker(file)
    lead = _submit(env, file)
    _wait_messages(env, kids_queue)  # the child is sent; no worker consumes its queue yet
    # the children's worker runs from a copy (same store); the file the child names is gone
    copy = _write(env, "copy.yaml", file.read_text())
    file.rename(env.cwd / "elsewhere.yaml")
    kids = env.worker(copy, "--queue", kids_queue, "--no-sweep")
    found = env.outcomes([lead], timeout=40)
    assert found[lead].status == "done", (leads.text(), kids.text())
    result = _tool_results(found[lead])[-1]
    assert result.is_error and "rejected by a worker" in result.content and "lead.yaml" in result.content, result
    assert f"run {lead}" not in kids.text()  # the lead itself ran on its own worker


def _wait_messages(env: Env, queue: str, n: int = 1, timeout: float = 30) -> None:
    import redis

    r = redis.Redis.from_url(env.broker)
    try:
        deadline = time.monotonic() + timeout
        while r.llen(queue) < n:
            assert time.monotonic() < deadline, f"no {n} messages in {queue}"
            time.sleep(0.05)
    finally:
        r.close()
