"""``seamkit submit FILE --resume RUN_ID`` refuses, before anything is queued, what the worker
could not continue: edited arguments the pending tool's schema rejects, and a FILE that is not
the composition the run came from."""

from __future__ import annotations

from pathlib import Path

from celery_testlib import Env, composition


def test_bad_edits_and_another_composition_are_refused_at_submit(env: Env) -> None:
    file = env.cwd / "ask.yaml"
    file.write_text(composition(redis_url=env.redis_url, prefix=env.prefix, approvals=True))
    other = env.cwd / "other.yaml"  # the same store (so the run is found there), another composition
    other.write_text(file.read_text().replace("name: recorder", "name: recorder2"))
    env.worker(file, "--pool", "solo")
    run_id = env.submit(file, "task").stdout.strip()
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
    assert w.returncode == 3, (w, env.workers[0].text())

    bad = env.submit(file, "--resume", run_id, "--edit", 'call_0_0={"sleep": "soon"}')
    assert bad.returncode == 2, bad
    assert f"run {run_id}:" in bad.stderr and "sleep" in bad.stderr and "Traceback" not in bad.stderr, bad
    notjson = env.submit(file, "--resume", run_id, "--edit", "call_0_0={sleep")
    assert notjson.returncode == 2 and "the arguments are not JSON" in notjson.stderr, notjson

    elsewhere = env.submit(other, "--resume", run_id, "--approve", "call_0_0")
    assert elsewhere.returncode == 2, elsewhere
    assert f"comes from {file.resolve()}, not {other}" in elsewhere.stderr, elsewhere
    assert f"seamkit submit {file.resolve()} --resume {run_id}" in elsewhere.stderr

    ok = env.submit(Path(str(file)), "--resume", run_id, "--edit", 'call_0_0={"sleep": 0}')
    assert ok.returncode == 0, ok
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0 and w.stdout.strip() == "recorded", (w, env.workers[0].text())
    assert [a["run"] for a in env.applied()] == [run_id]


def test_runs_wait_with_another_composition_names_the_runs_own_file(env: Env) -> None:
    file = env.cwd / "ask.yaml"
    file.write_text(composition(redis_url=env.redis_url, prefix=env.prefix, approvals=True))
    other = env.cwd / "other.yaml"  # the same store (so the run is found there), another composition
    other.write_text(file.read_text().replace("name: recorder", "name: recorder2"))
    env.worker(file, "--pool", "solo")
    run_id = env.submit(file, "task").stdout.strip()
    w = env.cli("runs", "wait", run_id, "--agent", str(other), "--timeout", "30")
    assert w.returncode == 3, (w, env.workers[0].text())
    assert f"comes from {file.resolve()}, not {other}" in w.stderr, w.stderr
    assert f"--approve call_0_0 --agent {file.resolve()}" in w.stderr, w.stderr
    assert f"--agent {other}" not in w.stderr, w.stderr


def test_a_second_continuation_while_one_is_pending_is_refused_and_waited_for(env: Env) -> None:
    file = env.cwd / "ask.yaml"
    file.write_text(composition(redis_url=env.redis_url, prefix=env.prefix, approvals=True))
    first = env.worker(file, "--pool", "solo")
    run_id = env.submit(file, "task").stdout.strip()
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
    assert w.returncode == 3, (w, first.text())
    first.kill()  # no worker takes the continuation for now

    ok = env.submit(file, "--resume", run_id, "--approve", "call_0_0")
    assert ok.returncode == 0, ok
    again = env.submit(file, "--resume", run_id, "--reject", "call_0_0")
    assert again.returncode == 2, again
    assert f"a continuation of run {run_id} was already sent at" in again.stderr, again.stderr
    assert "(approve call_0_0)" in again.stderr and f"seamkit runs wait {run_id}" in again.stderr, again.stderr
    core = env.cli("resume", run_id, "--agent", str(file), "--reject", "call_0_0")  # through the celery runner
    assert core.returncode == 2 and "already sent" in core.stderr and "Traceback" not in core.stderr, core

    # runs wait: the run is still queued (its continuation pending), not suspended again
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "1")
    assert w.returncode == 124 and "continuation was sent" in w.stderr and "--reject" not in w.stderr, w
    env.worker(file, "--pool", "solo")
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0 and w.stdout.strip() == "recorded", w  # the approval, the one sent first
    assert [a["run"] for a in env.applied()] == [run_id]
