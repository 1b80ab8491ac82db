"""seamkit-celery when the checkpoint store goes away: a real ``redis-server`` (or PostgreSQL) of
the test's own is the store, killed for real before a run's message is delivered and while a run
runs, then started again on the same port and data. The delivery must never be acknowledged as
done meanwhile: it is retried until the store is back, and the run finishes once, with its write
applied once. The broker (the session's Redis) stays up throughout."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery_testlib import Env, composition, wait_for
from seamkit_services import free_port


class PersistentRedis:
    """A ``redis-server`` on a port of its own whose data survives a SIGKILL (AOF, fsync on every
    write), so that killing it is an outage, not a loss of the runs' checkpoints."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import redis

        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
             "--appendfsync", "always", "--dir", str(self.dir), "--daemonize", "no", "--unixsocket", "",
             "--logfile", str(self.dir / "redis.log")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if redis.Redis.from_url(self.url, socket_timeout=0.5).ping():
                    return
            except redis.RedisError:
                time.sleep(0.02)
        raise AssertionError(f"the store's redis-server did not start:\n{(self.dir / 'redis.log').read_text()}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[PersistentRedis]:
    s = PersistentRedis(tmp_path / "store")
    s.start()
    yield s
    s.kill()


def _write(env: Env, store: PersistentRedis, name: str, **kw: object) -> Path:
    path = env.cwd / name
    path.write_text(composition(redis_url=env.redis_url, prefix=env.prefix,
                                store=f'{{use: redis, url: "{store.url}", prefix: "{env.prefix}"}}', **kw))  # type: ignore[arg-type]
    return path



def _outcome(store_url: str, prefix: str, run_id: str, timeout: float) -> object:
    """The run's latest checkpoint once it is no longer running (or at the timeout)."""
    import asyncio

    from seamkit._durability.checkpointer import Checkpointer
    from seamkit_redis.store import RedisStore

    async def poll() -> object:
        cp = Checkpointer(RedisStore(store_url, prefix=prefix))
        deadline = time.monotonic() + timeout
        try:
            while True:
                snap = await cp.latest(run_id)
                if (snap is not None and snap.status != "running") or time.monotonic() > deadline:
                    return snap
                await asyncio.sleep(0.05)
        finally:
            await cp.aclose()

    return asyncio.run(poll())


def _on_the_broker(env: Env, file: Path, task: str) -> str:
    """Put a run's message on the broker without a send record, as a message already queued when
    its store went away is (``seamkit submit`` itself refuses while the store is down: it records
    the run first); returns its run id."""
    from seamkit_celery import make_app
    from seamkit_celery.task import _send, make_spec

    spec = make_spec(file, task)
    _send(make_app(env.broker, queue=env.prefix), spec, env.prefix)
    return str(spec["run_id"])


def _submit_refused_while_the_store_is_down(env: Env, file: Path) -> None:
    r = env.submit(file, "record it")
    assert r.returncode == 1 and "StoreUnavailable" in r.stderr, r  # nothing sent, and said so
    assert "Traceback" not in r.stderr and r.stdout == ""


def _retries(text: str, run_id: str) -> list[str]:
    return re.findall(rf"run {run_id}: (.*); delivery retried in", text)


def test_a_run_delivered_while_its_store_is_down_waits_for_it_and_runs_once(env: Env, store: PersistentRedis) -> None:
    file = _write(env, store, "rec.yaml")
    worker = env.worker(file, "--pool", "solo")
    worker.wait_ready()
    store.kill()
    _submit_refused_while_the_store_is_down(env, file)
    run_id = _on_the_broker(env, file, "record it")
    # the delivery found no store: retried (with backoff), never acknowledged as done
    wait_for(lambda: len(_retries(worker.text(), run_id)) >= 2, 15, "two retries of the delivery")
    assert env.attempts() == []
    assert all("StoreUnavailable" in why and "127.0.0.1" in why for why in _retries(worker.text(), run_id))
    store.start()
    back = time.monotonic()
    snap = _outcome(store.url, env.prefix, run_id, timeout=20)
    recovered = time.monotonic() - back
    assert snap is not None and snap.status == "done", worker.text()  # type: ignore[attr-defined]
    assert [a["run"] for a in env.applied()] == [run_id] and len(env.attempts()) == 1
    assert worker.proc.poll() is None  # the outage did not stop the worker
    assert "Traceback" not in worker.text()
    print(f"\nstore down before delivery: done {recovered:.2f} s after the store came back")


def test_a_store_killed_mid_run_the_delivery_retries_and_the_run_resumes_once(env: Env, store: PersistentRedis) -> None:
    file = _write(env, store, "slow.yaml", sleep=1.0)
    worker = env.worker(file, "--pool", "solo")
    worker.wait_ready()
    r = env.submit(file, "record it")
    assert r.returncode == 0, r
    run_id = r.stdout.strip()
    wait_for(lambda: len(env.attempts()) == 1, 20, "the run inside the tool")
    store.kill()  # the tool finishes into a dead store: its result and the next checkpoint cannot be written
    wait_for(lambda: len(_retries(worker.text(), run_id)) >= 1, 15, "the delivery retried")
    store.start()
    back = time.monotonic()
    snap = _outcome(store.url, env.prefix, run_id, timeout=20)
    recovered = time.monotonic() - back
    assert snap is not None and snap.status == "done", worker.text()  # type: ignore[attr-defined]
    assert snap.state.get("output") == "recorded"  # type: ignore[attr-defined]
    # resumed from its last checkpoint: the interrupted call ran again under its key, applied once
    applied = env.applied()
    assert [a["run"] for a in applied] == [run_id]
    keys = [a["key"] for a in env.attempts()]
    assert len(keys) <= 2 and set(keys) == {applied[0]["key"]}
    assert worker.proc.poll() is None
    print(f"\nstore killed mid-run: done {recovered:.2f} s after the store came back "
          f"({len(_retries(worker.text(), run_id))} retries)")


def test_a_worker_whose_store_is_unreachable_at_start_exits_with_a_clear_error(env: Env) -> None:
    file = env.cwd / "gone.yaml"
    url = f"redis://:hunter2-secret@127.0.0.1:{free_port()}/0"
    file.write_text(composition(redis_url=env.redis_url, prefix=env.prefix,
                                store=f'{{use: redis, url: "{url}", retries: 0}}'))
    r = env.cli("worker", str(file), "--queue", env.prefix, timeout=60)
    assert r.returncode == 1, r
    assert "StoreUnavailable" in r.stderr and "could not be read" in r.stderr and "gone.yaml" in r.stderr, r
    assert "hunter2-secret" not in r.stderr + r.stdout
    assert "Traceback" not in r.stderr


def test_a_worker_whose_postgres_store_is_not_set_up_says_how_to_set_it_up(env: Env, postgres_dsn: str) -> None:
    file = env.cwd / "pg.yaml"
    file.write_text(composition(redis_url=env.redis_url, prefix=env.prefix, store=(
        f'{{use: postgres, dsn: "{postgres_dsn}", schema: {env.prefix.replace("-", "_")}}}')))
    r = env.cli("worker", str(file), "--queue", env.prefix, timeout=60)
    assert r.returncode == 1, r
    assert "could not be read" in r.stderr and "seamkit stores setup" in r.stderr and "Traceback" not in r.stderr, r


def test_runs_in_postgres_wait_out_a_stopped_server(env: Env, tmp_path: Path) -> None:
    from seamkit_services import start_postgres

    server = start_postgres(tmp_path / "pg")
    try:
        file = env.cwd / "pg.yaml"
        file.write_text(composition(redis_url=env.redis_url, prefix=env.prefix, store=(
            f'{{use: postgres, dsn: "{server.dsn}", connect_timeout: 1}}')))
        assert env.cli("stores", "setup", "--agent", str(file)).returncode == 0
        worker = env.worker(file, "--pool", "solo")
        worker.wait_ready()
        server.stop(remove=False)
        _submit_refused_while_the_store_is_down(env, file)
        run_id = _on_the_broker(env, file, "record it")
        wait_for(lambda: len(_retries(worker.text(), run_id)) >= 1, 15, "the delivery retried")
        assert env.attempts() == []
        server.start()
        back = time.monotonic()
        wait_for(lambda: len(env.attempts()) == 1, 20, "the run started once the store was back")
        # started: it has checkpoints now (it had no send record, so runs wait could not know it before)
        w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "20")
        assert w.returncode == 0 and w.stdout.strip() == "recorded", (w, worker.text())
        assert [a["run"] for a in env.applied()] == [run_id]
        print(f"\npostgres stopped before delivery: done {time.monotonic() - back:.2f} s after it came back")
    finally:
        server.stop()


def test_broker_and_store_down_together_mid_run_the_message_is_kept_and_the_run_resumes(
        env: Env, store: PersistentRedis) -> None:
    # one redis-server is both the broker (db 1) and the store (db 0): killed mid-run, the retry
    # cannot be sent either; the message must stay unacknowledged on the broker (AOF) and come back
    broker = store.url.rsplit("/", 1)[0] + "/1"
    file = _write(env, store, "slow.yaml", sleep=1.0)
    worker = env.worker(file, "--pool", "solo", "--broker", broker)
    worker.wait_ready()
    r = env.cli("submit", str(file), "record it", "--queue", env.prefix, "--broker", broker)
    assert r.returncode == 0, r
    run_id = r.stdout.strip()
    wait_for(lambda: len(env.attempts()) == 1, 20, "the run inside the tool")
    store.kill()
    wait_for(lambda: "the retry could not be sent" in worker.text(), 20, "the retry refused by the broker")
    store.start()
    back = time.monotonic()
    snap = _outcome(store.url, env.prefix, run_id, timeout=30)
    assert snap is not None and snap.status == "done", worker.text()  # type: ignore[attr-defined]
    applied = env.applied()
    assert [a["run"] for a in applied] == [run_id]
    assert worker.proc.poll() is None
    print(f"\nbroker and store killed mid-run: done {time.monotonic() - back:.2f} s after they came back")
