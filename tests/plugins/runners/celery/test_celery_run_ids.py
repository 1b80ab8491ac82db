"""A run id belongs to one piece of work: ``seamkit batch`` refuses run ids taken by a submitted run
(a send record, or checkpoints of another task), and ``seamkit submit --run-id`` refuses the run id
of a batch's run or of a run that has checkpoints of other work (found by an outside pass: each
reported the other's outcome as its own)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from batch_testlib import batch_plugin, composition
from celery_testlib import Env
from test_celery_batch import _batch, _queued_messages, _results, _write


@pytest.fixture
def benv(celery_plugin_paths: list[Path], tmp_path: Path, redis_url: str) -> Iterator[Env]:
    e = Env([*celery_plugin_paths, batch_plugin(tmp_path / "plugins")], tmp_path, redis_url,
            f"ci-{uuid.uuid4().hex[:10]}")
    yield e
    e.stop_all()


def _delete(env: Env, key: str) -> None:
    """Remove ``key`` (scope ``Scope()``) from the test's store: a send record expired, a batch's
    record of what it enqueued lost in a crash."""
    from seamkit.values import Scope
    from seamkit_redis.store import RedisStore

    async def go() -> None:
        store = RedisStore(env.redis_url, prefix=env.prefix)
        try:
            await store.delete(Scope(), key)
        finally:
            await store.aclose()

    asyncio.run(go())


def test_a_batch_whose_run_ids_are_taken_is_refused_before_sending(benv: Env) -> None:
    file = _write(benv, "tick.yaml", composition(redis_url=benv.redis_url, prefix=benv.prefix))
    inputs = _write(benv, "c.jsonl", '"first"\n"second"\n')
    s = benv.submit(file, "something else", "--run-id", "coll-0")  # no worker yet: a send record, queued
    assert s.returncode == 0, s
    r = _batch(benv, file, inputs, "--batch-id", "coll", "--timeout", "0.5")
    assert r.returncode == 2, r
    assert "coll-0" in r.stderr and "taken" in r.stderr and "new --batch-id" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and _queued_messages(benv) == 1  # nothing of the batch was sent

    # the submitted run done and its record gone (expired): its checkpoints still say it is other work
    benv.worker(file, "--pool", "solo")
    w = benv.cli("runs", "wait", "coll-0", "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0, (w, benv.workers[0].text())
    _delete(benv, "seamkit-sent:coll-0")
    r = _batch(benv, file, inputs, "--batch-id", "coll", "--timeout", "0.5")
    assert r.returncode == 2 and "coll-0 (it has checkpoints of another task" in r.stderr, r.stderr


def test_a_batch_run_sent_but_not_recorded_is_the_batchs_own(benv: Env) -> None:
    # a crash between sending and recording what was sent leaves the batch's own checkpointed runs
    # unrecorded: the next command reuses them, not a collision
    file = _write(benv, "tick.yaml", composition(redis_url=benv.redis_url, prefix=benv.prefix))
    inputs = _write(benv, "c.jsonl", '"first"\n{"task": "second", "variables": {}}\n')
    benv.worker(file, "--pool", "solo")
    out = benv.cwd / "r.jsonl"
    r = _batch(benv, file, inputs, "--batch-id", "own", "--timeout", "30")
    assert r.returncode == 0, (r, benv.workers[0].text())
    _delete(benv, "seamkit-batch:own:queued")
    r = _batch(benv, file, inputs, "--batch-id", "own", "--timeout", "30", "--out", str(out))
    assert r.returncode == 0, r
    assert [x["run_id"] for x in _results(out)] == ["own-0", "own-1"]


def test_submit_refuses_the_run_id_of_a_batch_run_or_of_other_work(benv: Env) -> None:
    file = _write(benv, "tick.yaml", composition(redis_url=benv.redis_url, prefix=benv.prefix))
    inputs = _write(benv, "c.jsonl", '"the batch input"\n')
    r = _batch(benv, file, inputs, "--batch-id", "myb", "--timeout", "0.5")  # no worker: enqueued, no checkpoint
    assert r.returncode == 1, r
    s = benv.submit(file, "OTHER TASK", "--run-id", "myb-0")
    assert s.returncode == 2, s
    assert "run myb-0 is a run of a seamkit batch" in s.stderr and "Traceback" not in s.stderr, s.stderr
    assert _queued_messages(benv) == 1

    benv.worker(file, "--pool", "solo")
    w = benv.cli("runs", "wait", "myb-0", "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0, (w, benv.workers[0].text())
    s = benv.submit(file, "OTHER TASK", "--run-id", "myb-0")  # checkpoints of the batch's input, no record
    assert s.returncode == 2, s
    assert "run myb-0 already exists" in s.stderr and "--resume myb-0" in s.stderr, s.stderr

    # a submitted run whose record expired is still its own work: submitting it again is the same run
    s = benv.submit(file, "mine", "--run-id", "mine-1")
    assert s.returncode == 0, s
    w = benv.cli("runs", "wait", "mine-1", "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0, w
    _delete(benv, "seamkit-sent:mine-1")
    again = benv.submit(file, "mine", "--run-id", "mine-1")
    assert again.returncode == 0, again
    _delete(benv, "seamkit-sent:mine-1")
    other = benv.submit(file, "not mine", "--run-id", "mine-1")
    assert other.returncode == 2 and "run mine-1 already exists" in other.stderr, other
