"""A run left ``running`` with nobody on it (issue 16), end to end on a real Redis broker and store
with real ``seamkit worker`` subprocesses: its worker is killed mid-run and its message is lost
(deleted from the broker's queue and its unacked records, as a broker that lost it would), so no
re-delivery ever comes; another worker's sweeper sees the run's lease void (its owner process is
gone) on two sweeps ``--requeue-after`` apart and sends its continuation; the run finishes once,
its interrupted idempotent tool call applied once."""

from __future__ import annotations

import json
import time

from celery_testlib import Env, composition


def _lose_everything_of(env: Env, run_id: str) -> int:
    """Delete every message of ``run_id`` from the broker: waiting in the queue, or held unacked by
    a (dead) worker. Returns how many."""
    import redis

    r = redis.Redis.from_url(env.broker)
    try:
        n = 0
        for raw in r.lrange(env.prefix, 0, -1):
            if run_id.encode() in raw:
                n += r.lrem(env.prefix, 0, raw)
        for tag, raw in r.hgetall("unacked").items():
            if run_id.encode() in raw:
                n += r.hdel("unacked", tag)
                r.zrem("unacked_index", tag)
        return n
    finally:
        r.close()


def _wait_attempts(env: Env, n: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while len(env.attempts()) < n:
        assert time.monotonic() < deadline, f"{n} tool attempts expected: {env.attempts()}"
        time.sleep(0.05)


def test_a_run_whose_worker_died_and_whose_message_was_lost_is_continued_by_the_sweeper(env: Env) -> None:
    file = env.cwd / "stuck.yaml"
    # the record call is in flight at the kill: the continuation runs it again with the same
    # idempotency key (the tool is idempotent), so it is applied once
    file.write_text(composition(redis_url=env.redis_url, prefix=env.prefix, sleep=1.5))
    w1 = env.worker(file, "--no-sweep")
    w1.wait_ready()
    r = env.submit(file, "record it")
    assert r.returncode == 0, r
    run_id = r.stdout.strip()
    _wait_attempts(env, 1)  # the run is in its tool call: checkpointed running, leased to w1's pool process
    w1.kill()
    killed = time.monotonic()
    assert _lose_everything_of(env, run_id) == 1  # the message w1 held unacknowledged: nobody re-delivers it
    running = env.outcomes([run_id], timeout=5, until=lambda s: True)
    assert running[run_id].status == "running"
    w2 = env.worker(file, "--requeue-after", "1", "--sweep-every", "0.25")
    w2.wait_ready()
    ready = time.monotonic()
    done = env.outcomes([run_id], timeout=15)
    recovered = time.monotonic() - ready
    assert done[run_id].status == "done", w2.text()
    assert "sent its continuation" in w2.text(), w2.text()
    applied = env.applied()
    assert [a["run"] for a in applied] == [run_id] and len({a["key"] for a in applied}) == 1
    assert env.overlaps() == []
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "5", "--json")
    assert w.returncode == 0 and json.loads(w.stdout)["status"] == "done", w
    print(f"\nstuck run (worker killed, message lost) done {recovered:.2f} s after the sweeping worker was ready, "
          f"{time.monotonic() - killed:.2f} s after the kill (requeue-after 1 s, sweep every 0.25 s)")
