"""seamkit-celery end to end: ``seamkit submit`` enqueues, ``seamkit worker`` subprocesses run the
runs on a real Redis broker, ``seamkit runs wait`` reports; killed workers lose no run and repeat no
write."""

from __future__ import annotations

import json
from pathlib import Path

from celery_testlib import Env, composition, wait_for


def _write(env: Env, name: str, text: str) -> Path:
    path = env.cwd / name
    path.write_text(text)
    return path


def test_submit_worker_wait_done(env: Env) -> None:
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix,
                                               prompt="You record for {{team}}."))
    env.worker(file, "--concurrency", "2")
    r = env.submit(file, "record it")
    assert r.returncode == 2 and "needs a variable team" in r.stderr, r  # checked before it is queued
    r = env.submit(file, "record it", "--var", "team=ops")
    assert r.returncode == 0, r
    run_id = r.stdout.strip()
    assert run_id and "\n" not in run_id
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0, (w, env.workers[0].text())
    assert w.stdout.strip() == "recorded"
    system = env.outcomes([run_id], timeout=1)[run_id].transcript[0]
    assert system.role == "system" and system.content[0].text == "You record for ops."  # the --var travelled
    applied = env.applied()
    assert [a["run"] for a in applied] == [run_id]
    assert len(env.attempts()) == 1
    # the same run id submitted again with the same spec: the delivery finds the run done and runs nothing
    again = env.submit(file, "record it", "--run-id", run_id, "--var", "team=ops")
    assert again.returncode == 0 and again.stdout.strip() == run_id, again
    wait_for(lambda: env.workers[0].text().count(" succeeded in ") == 2, 20, "the second delivery")
    assert len(env.attempts()) == 1
    # a message naming a file this worker does not have: rejected, said once in the log, no traceback
    from seamkit_celery import make_app, submit

    gone = submit(make_app(env.broker, queue=env.prefix), env.cwd / "gone.yaml", "x", queue=env.prefix,
                  check=False)
    wait_for(lambda: f"run {gone} rejected" in env.workers[0].text(), 20, "the rejection")
    assert "gone.yaml" in env.workers[0].text() and "Traceback" not in env.workers[0].text()


def _submit_many(env: Env, file: Path, n: int) -> list[str]:
    from seamkit_celery import make_app, submit

    app = make_app(env.broker, queue=env.prefix)
    # check=False: the test tool is registered in the workers' processes, not in this one
    return [submit(app, file, f"item {i}", queue=env.prefix, check=False) for i in range(n)]



def test_sigkill_mid_run_the_next_worker_resumes_it_and_no_write_repeats(env: Env) -> None:
    file = _write(env, "slow.yaml", composition(redis_url=env.redis_url, prefix=env.prefix, sleep=1.0))
    first = env.worker(file, "--concurrency", "2")
    first.wait_ready()
    run_ids = _submit_many(env, file, 4)
    # both pool processes are inside the tool (a run each): kill the worker there
    wait_for(lambda: len(env.attempts()) >= 2, 20, "two runs inside the tool")
    first.kill_main()
    killed_pids = {a["pid"] for a in env.attempts()}
    second = env.worker(file, "--concurrency", "2")
    found = env.outcomes(run_ids, timeout=40)
    assert {r: s.status for r, s in found.items()} == dict.fromkeys(run_ids, "done"), second.text()
    assert all(s.state.get("output") == "recorded" for s in found.values())
    # each side-effecting call applied exactly once, though the killed ones ran again (same key)
    applied = env.applied()
    assert sorted(a["run"] for a in applied) == sorted(run_ids)
    assert len({a["key"] for a in applied}) == len(run_ids)
    attempts = env.attempts()
    retried = [a for a in attempts if a["pid"] not in killed_pids and a["key"] in
               {b["key"] for b in attempts if b["pid"] in killed_pids}]
    assert len(retried) == 2  # the two calls the kill interrupted, each run again once by the new worker
    assert len(attempts) == len(run_ids) + 2
    assert env.overlaps() == []
    # a killed run was resumed from its checkpoint (versions by both workers), not started again
    import asyncio

    resumed = [r for r in run_ids if len({o.rsplit(":", 1)[1] for o in asyncio.run(env.history_owners(r))}) > 1]
    assert len(resumed) == 2


def test_sqlite_or_default_store_is_refused_at_submit_and_at_worker_start(env: Env) -> None:
    sqlite = _write(env, "local.yaml", composition(redis_url=env.redis_url, prefix=env.prefix,
                                                   store="{use: sqlite, path: runs.db}"))
    default = _write(env, "default.yaml", composition(redis_url=env.redis_url, prefix=env.prefix).replace(
        "  checkpoints:", "  # checkpoints:"))
    for file, what in ((sqlite, "'sqlite'"), (default, "the default store")):
        r = env.submit(file, "go")
        assert r.returncode == 2, r
        assert f"checkpoints into {what}" in r.stderr and "shared store" in r.stderr, r
        assert f"{file.name}:" in r.stderr  # located
        assert "Traceback" not in r.stderr
        w = env.cli("worker", str(file), "--queue", env.prefix, timeout=30)
        assert w.returncode == 2, w
        assert f"checkpoints into {what}" in w.stderr, w


def test_unreachable_broker_is_named_with_its_password_masked(env: Env) -> None:
    from seamkit_services import free_port

    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    broker = f"redis://:hunter2-secret@127.0.0.1:{free_port()}/0"
    for args in (("submit", str(file), "go"), ("worker", str(file))):
        r = env.cli(*args, "--broker", broker, timeout=60)
        assert r.returncode == 1, r
        assert "unreachable" in r.stderr and "127.0.0.1" in r.stderr, r
        assert "hunter2-secret" not in r.stderr + r.stdout
        assert "Traceback" not in r.stderr


def test_a_suspended_run_releases_the_worker_and_continues_after_approval(env: Env) -> None:
    file = _write(env, "ask.yaml", composition(redis_url=env.redis_url, prefix=env.prefix, approvals=True))
    env.worker(file, "--pool", "solo")  # one run at a time: the second runs only if the first let go
    runs = [env.submit(file, f"task {i}").stdout.strip() for i in range(2)]
    for run_id in runs:
        w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
        assert w.returncode == 3, (w, env.workers[0].text())
        assert "call_0_0: record" in w.stderr
        assert f"seamkit resume {run_id} --approve call_0_0 --agent {file}" in w.stderr, w.stderr
    assert env.attempts() == []  # nothing ran without approval
    bad = env.submit(file, "--resume", runs[0], "--approve", "nope")
    assert bad.returncode == 2 and "no pending tool call nope" in bad.stderr, bad
    r = env.submit(file, "--resume", runs[0], "--approve", "call_0_0")
    assert r.returncode == 0 and r.stdout.strip() == runs[0], r
    w = env.cli("runs", "wait", runs[0], "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0 and w.stdout.strip() == "recorded", w
    assert [a["run"] for a in env.applied()] == [runs[0]]
    r = env.submit(file, "--resume", runs[1], "--reject", "call_0_0=not today")
    assert r.returncode == 0, r
    w = env.cli("runs", "wait", runs[1], "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0, w
    assert [a["run"] for a in env.applied()] == [runs[0]]  # the rejected call never ran


def test_a_redelivered_message_waits_on_the_live_lease_and_keeps_the_run_alive(env: Env) -> None:
    # the run outlasts the visibility timeout (1 s): its message comes back to the other worker while
    # the first still runs it. That delivery must not run it (lease) nor drop it (acknowledged, the
    # run would be lost when the first worker dies): it retries until the lease is gone, then resumes.
    file = _write(env, "long.yaml", composition(redis_url=env.redis_url, prefix=env.prefix, sleep=3.0))
    workers = [env.worker(file, "--visibility-timeout", "1") for _ in range(2)]
    for w in workers:
        w.wait_ready()
    (run_id,) = _submit_many(env, file, 1)
    wait_for(lambda: len(env.attempts()) == 1, 20, "the run inside the tool")
    running_pid = env.attempts()[0]["pid"]
    holder = next(w for w in workers if str(running_pid) in _children(w.pid).split())
    other = next(w for w in workers if w is not holder)
    wait_for(lambda: "received" in other.text(), 20, "the message delivered again, to the other worker")
    holder.kill_main()
    found = env.outcomes([run_id], timeout=30)
    assert found[run_id].status == "done", other.text()
    attempts = env.attempts()
    assert len(attempts) == 2 and attempts[1]["pid"] != running_pid  # the killed call, run again once
    assert len(env.applied()) == 1
    assert env.overlaps() == []


def _children(pid: int) -> str:
    import subprocess

    return subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout


def test_a_batch_of_100_runs_over_workers_with_one_killed_midway(env: Env) -> None:
    import asyncio
    import time

    file = _write(env, "batch.yaml", composition(redis_url=env.redis_url, prefix=env.prefix, sleep=0.05))
    workers = [env.worker(file, "--concurrency", "2") for _ in range(2)]
    for w in workers:
        w.wait_ready()
    started = time.monotonic()
    run_ids = _submit_many(env, file, 100)
    wait_for(lambda: len(env.applied()) >= 30, 60, "30 runs applied")
    workers[0].kill_main()
    env.worker(file, "--concurrency", "2")
    found = env.outcomes(run_ids, timeout=60)
    elapsed = time.monotonic() - started
    statuses = [found[r].status if r in found else "missing" for r in run_ids]
    assert statuses == ["done"] * 100, {s: statuses.count(s) for s in set(statuses)}
    applied = env.applied()
    assert sorted(a["run"] for a in applied) == sorted(run_ids)  # every write, once
    attempts = env.attempts()
    assert len(attempts) <= 100 + 2  # at most the calls the killed worker's two processes were in
    assert env.overlaps() == []
    # every run's versions were written by one process at a time: its owners change at most once
    # (the killed worker's process, then the one that resumed it)
    changes = [len(set(asyncio.run(env.history_owners(r)))) for r in run_ids]
    assert max(changes) <= 2
    print(f"\n100 runs, 2x2 processes, one worker killed: {elapsed:.1f} s ({100 / elapsed:.1f} runs/s), "
          f"{sum(c == 2 for c in changes)} resumed by another worker")


def test_a_bad_composition_is_located_and_a_task_is_required(env: Env) -> None:
    file = _write(env, "bad.yaml", composition(redis_url=env.redis_url, prefix=env.prefix).replace(
        "max_steps", "x").replace("  tools: [record]\n", "  tools: [record]\n  max_stepz: 3\n"))
    r = env.submit(file, "go")
    assert r.returncode == 2, r
    assert "bad.yaml:" in r.stderr and "max_stepz" in r.stderr and "Traceback" not in r.stderr
    r = env.submit(file)
    assert r.returncode == 2 and "a TASK is required" in r.stderr, r


def test_a_write_a_kill_interrupted_is_not_guessed_it_waits_for_a_person(env: Env) -> None:
    # record_once is not idempotent: the call the kill interrupted may or may not have happened, so
    # the next worker suspends the run (and lets it go) instead of running it again
    file = _write(env, "once.yaml", composition(redis_url=env.redis_url, prefix=env.prefix, sleep=2.0,
                                                tool="record_once"))
    first = env.worker(file)
    first.wait_ready()
    (run_id,) = _submit_many(env, file, 1)
    wait_for(lambda: len(env.attempts()) == 1, 20, "the run inside the tool")
    first.kill_main()
    env.worker(file)
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
    assert w.returncode == 3, (w, env.workers[1].text())
    assert "outcome is unknown" in w.stderr or "settle" in w.stderr, w
    assert len(env.attempts()) == 1 and env.applied() == []  # not run again
    r = env.cli("runs", "settle", run_id, "call_0_0", "not-applied", "--agent", str(file))
    assert r.returncode == 0, r
    r = env.submit(file, "--resume", run_id)
    assert r.returncode == 0, r
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0 and w.stdout.strip() == "recorded", (w, env.workers[1].text())
    assert len(env.attempts()) == 2 and len(env.applied()) == 1


def test_runs_checkpointed_in_postgres(env: Env, postgres_dsn: str) -> None:
    schema = env.prefix.replace("-", "_")
    file = _write(env, "pg.yaml", composition(redis_url=env.redis_url, prefix=env.prefix, store=(
        f'{{use: postgres, dsn: "{postgres_dsn}", schema: {schema}}}')))
    r = env.cli("stores", "setup", "--agent", str(file))
    assert r.returncode == 0, r
    env.worker(file, "--concurrency", "2")
    runs = [env.submit(file, "task 0").stdout.strip(), *_submit_many(env, file, 1)]
    for run_id in runs:
        w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30", "--json")
        assert w.returncode == 0, (w, env.workers[0].text())
        out = json.loads(w.stdout)
        assert (out["run_id"], out["status"], out["output"]) == (run_id, "done", "recorded")
    assert sorted(a["run"] for a in env.applied()) == sorted(runs)


def test_sigterm_lets_the_running_run_finish_then_the_worker_exits(env: Env) -> None:
    import signal

    file = _write(env, "slow.yaml", composition(redis_url=env.redis_url, prefix=env.prefix, sleep=1.0))
    w = env.worker(file)
    w.wait_ready()
    (run_id,) = _submit_many(env, file, 1)
    wait_for(lambda: len(env.attempts()) == 1, 20, "the run inside the tool")
    w.proc.send_signal(signal.SIGTERM)  # docker stop, Kubernetes: Celery's warm shutdown
    assert w.proc.wait(timeout=30) == 0, w.text()
    found = env.outcomes([run_id], timeout=1)
    assert found[run_id].status == "done"
    assert len(env.applied()) == 1


def test_seamkit_resume_on_a_queued_run_enqueues_it_on_the_queue_it_came_from(env: Env) -> None:
    file = _write(env, "ask.yaml", composition(redis_url=env.redis_url, prefix=env.prefix, approvals=True))
    env.worker(file, "--pool", "solo")
    run_id = env.submit(file, "task 0").stdout.strip()
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
    assert w.returncode == 3, (w, env.workers[0].text())
    bad = env.cli("resume", run_id, "--agent", str(file), "--approve", "nope")
    assert bad.returncode == 2 and "nope" in bad.stderr, bad  # decisions are checked before anything is sent
    no_broker = env.cli("resume", run_id, "--agent", str(file), "--approve", "call_0_0",
                        env={"SEAMKIT_BROKER_URL": ""})
    assert no_broker.returncode == 2 and "SEAMKIT_BROKER_URL" in no_broker.stderr and "--here" in no_broker.stderr
    assert "Traceback" not in no_broker.stderr
    r = env.cli("resume", run_id, "--agent", str(file), "--approve", "call_0_0")
    assert r.returncode == 0 and r.stdout.strip() == run_id, r
    assert f"queue {env.prefix!r}" in r.stderr and f"runs wait {run_id}" in r.stderr
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0 and w.stdout.strip() == "recorded", (w, env.workers[0].text())
    (applied,) = env.applied()
    assert applied["run"] == run_id and applied["pid"] == env.workers[0].pid, applied  # on the worker, not here


def test_seamkit_resume_on_a_run_a_worker_is_running_now_enqueues_nothing(env: Env) -> None:
    import redis

    file = _write(env, "long.yaml", composition(redis_url=env.redis_url, prefix=env.prefix, sleep=3.0))
    env.worker(file, "--pool", "solo")
    run_id = env.submit(file, "task 0").stdout.strip()
    wait_for(lambda: len(env.attempts()) == 1, 20, "the run inside the tool")
    r = env.cli("resume", run_id, "--agent", str(file))
    assert r.returncode == 2, r
    assert f"run {run_id} is running on a worker (" in r.stderr and "nothing to continue" in r.stderr, r.stderr
    assert "enqueued" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    broker = redis.Redis.from_url(env.broker)
    try:
        assert broker.llen(env.prefix) == 0  # no continuation message was sent
    finally:
        broker.close()
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0 and len(env.applied()) == 1, w
