"""seamkit-celery end to end: ``seamkit submit`` enqueues, ``seamkit worker`` subprocesses run the
runs on a real Redis broker, ``seamkit runs wait`` reports; killed workers lose no run and repeat no
write."""

from __future__ import annotations

from pathlib import Path

from celery_testlib import Env, composition


def _write(env: Env, name: str, text: str) -> Path:
    path = env.cwd / name
    path.write_text(text)
    return path


def test_submit_worker_wait_done(env: Env) -> None:
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    env.worker(file, "--concurrency", "2")
    r = env.submit(file, "record it")
    assert r.returncode == 0, r
    run_id = r.stdout.strip()
    assert run_id and "\n" not in run_id
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0, (w, env.workers[0].text())
    assert w.stdout.strip() == "recorded"
    applied = env.applied()
    assert [a["run"] for a in applied] == [run_id]
    assert len(env.attempts()) == 1
