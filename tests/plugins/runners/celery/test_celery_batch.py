"""``seamkit batch`` end to end on a real Redis broker and real ``seamkit worker`` subprocesses:
results in input order, resumable (finished inputs are not redone, queued ones not enqueued
again), bad input refused before anything is queued, 1,000 runs over 4 worker processes with a
worker killed, and the same batch under one budget ceiling shared by the workers."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from batch_testlib import batch_plugin, composition, overlapping, spans, table
from celery_testlib import Env, wait_for


@pytest.fixture
def benv(celery_plugin_paths: list[Path], tmp_path: Path, redis_url: str) -> Iterator[Env]:
    e = Env([*celery_plugin_paths, batch_plugin(tmp_path / "plugins")], tmp_path, redis_url,
            f"cb-{uuid.uuid4().hex[:10]}")
    yield e
    e.stop_all()


def _write(env: Env, name: str, text: str) -> Path:
    path = env.cwd / name
    path.write_text(text)
    return path


def _inputs(env: Env, n: int, name: str = "inputs.jsonl") -> Path:
    # strings and objects, mixed (both are inputs), and a blank line (skipped)
    lines = [json.dumps(f"item {i}") if i % 2 else json.dumps({"task": f"item {i}", "variables": {}})
             for i in range(n)]
    if n > 3:
        lines.insert(3, "")
    return _write(env, name, "\n".join(lines) + "\n")


def _batch(env: Env, file: Path, inputs: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return env.cli("batch", str(file), str(inputs), "--queue", env.prefix, *args, timeout=timeout)


def _popen_batch(env: Env, file: Path, inputs: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "seamkit", "batch", str(file), str(inputs), "--queue", env.prefix,
                             *args], cwd=env.cwd, env=env.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _results(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _queued_messages(env: Env) -> int:
    import redis

    r = redis.Redis.from_url(env.broker)
    try:
        return int(r.llen(env.prefix))
    finally:
        r.close()



def test_bad_input_lines_are_located_and_nothing_is_enqueued(benv: Env) -> None:
    file = _write(benv, "tick.yaml", composition(redis_url=benv.redis_url, prefix=benv.prefix))
    bad = _write(benv, "bad.jsonl", '"fine"\n{"task": 3}\nnot json\n[1]\n{"task": "x", "vars": {}}\n"ok"\n')
    r = _batch(benv, file, bad)
    assert r.returncode == 2, r
    for line, why in ((2, "'task' must be a string"), (3, "not JSON"),
                      (4, "an input is a string (the task) or an object, got list"), (5, "unknown key 'vars'")):
        assert f"bad.jsonl:{line}: {why}" in r.stderr, r.stderr
    assert "bad.jsonl:1:" not in r.stderr and "bad.jsonl:6:" not in r.stderr
    assert "Traceback" not in r.stderr
    # variables are checked against the prompt for every input before anything is queued
    templ = _write(benv, "team.yaml", composition(redis_url=benv.redis_url, prefix=benv.prefix,
                                                  prompt="You tick for {{team}}."))
    mixed = _write(benv, "mixed.jsonl", '{"task": "a", "variables": {"team": "ops"}}\n"b"\n')
    r = _batch(benv, templ, mixed)
    assert r.returncode == 2, r
    assert "mixed.jsonl:2:" in r.stderr and "team" in r.stderr and "mixed.jsonl:1:" not in r.stderr, r.stderr
    r = _batch(benv, file, _write(benv, "empty.jsonl", "\n\n"))
    assert r.returncode == 2 and "no inputs" in r.stderr, r
    r = _batch(benv, file, _inputs(benv, 2), "--batch-id", "no spaces")
    assert r.returncode == 2 and "--batch-id" in r.stderr, r
    # half a surrogate pair (valid JSON, not text) and bytes that are not UTF-8: located like the rest
    odd = benv.cwd / "odd.jsonl"
    odd.write_bytes(b'"fine"\n"bad \\ud800 here"\n"caf\xe9"\n{"task": 3}\n')
    r = _batch(benv, file, odd)
    assert r.returncode == 2, r
    assert "odd.jsonl:2: the escape \\ud800 is half of a UTF-16 surrogate pair" in r.stderr, r.stderr
    assert "odd.jsonl:3: not UTF-8 text" in r.stderr and "odd.jsonl:4: 'task' must be a string" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "unexpected" not in r.stderr
    assert _queued_messages(benv) == 0
    assert table(benv.redis_url, benv.prefix, "executions") == {}


def test_results_in_input_order_and_a_rerun_redoes_nothing(benv: Env) -> None:
    file = _write(benv, "tick.yaml", composition(redis_url=benv.redis_url, prefix=benv.prefix,
                                                 prompt="You tick for {{team}}."))
    inputs = _write(benv, "in.jsonl", "".join(json.dumps({"task": f"t{i}", "variables": {"team": f"team{i}"}}) + "\n"
                                              for i in range(6)))
    benv.worker(file, "--concurrency", "2").wait_ready()
    out = benv.cwd / "results.jsonl"
    r = _batch(benv, file, inputs, "--out", str(out))
    assert r.returncode == 0, (r, benv.workers[0].text())
    batch_id = r.stderr.split("seamkit: batch ", 1)[1].split(":", 1)[0]
    assert batch_id.startswith("b") and len(batch_id) == 17  # the default: a digest, printed
    rows = _results(out)
    assert [(x["index"], x["line"], x["run_id"], x["status"], x["output"]) for x in rows] == [
        (i, i + 1, f"{batch_id}-{i}", "done", "ticked") for i in range(6)]
    assert rows[0]["usage"]["requests"] == 2 and rows[0]["error"] is None
    # each input's variables travelled with its run
    found = benv.outcomes([x["run_id"] for x in rows], timeout=1)
    assert [found[x["run_id"]].transcript[0].content[0].text for x in rows] == [
        f"You tick for team{i}." for i in range(6)]
    # the same command again: the same batch id, nothing enqueued, the stored results reused
    again = _batch(benv, file, inputs, "--out", str(out))
    assert again.returncode == 0, again
    assert f"batch {batch_id}:" in again.stderr and "0 enqueued now, 6 finished before" in again.stderr, again.stderr
    assert _results(out) == rows
    assert table(benv.redis_url, benv.prefix, "executions") == dict.fromkeys((x["run_id"] for x in rows), 1)
    assert "━" not in r.stderr + again.stderr  # no progress bar when stderr is no terminal
    # results to stdout without --out; an edited input file is another batch; on a terminal the
    # progress bar shows done / failed / suspended
    inputs.write_text(inputs.read_text() + json.dumps({"task": "t6", "variables": {"team": "x"}}) + "\n")
    code, stdout, tty = _batch_on_tty(benv, file, inputs)
    assert code == 0, tty
    rows3 = [json.loads(x) for x in stdout.splitlines()]
    assert len(rows3) == 7 and rows3[0]["run_id"] != rows[0]["run_id"] and "7 enqueued now" in tty
    assert "━" in tty and "7/7" in tty and "done 7" in tty and "failed 0" in tty and "suspended 0" in tty, tty


def _batch_on_tty(env: Env, file: Path, inputs: Path) -> tuple[int, str, str]:
    """``seamkit batch`` with its stderr on a pseudo-terminal: (exit code, stdout, what the terminal got)."""
    import os
    import pty

    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "seamkit", "batch", str(file), str(inputs), "--queue", env.prefix],
                         cwd=env.cwd, env={**env.env(), "COLUMNS": "160", "TERM": "xterm"}, stdout=subprocess.PIPE,
                         stderr=slave, text=True)
    os.close(slave)
    got = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    stdout = p.stdout.read() if p.stdout is not None else ""
    return p.wait(timeout=60), stdout, got.decode(errors="replace")


def test_queued_runs_are_waited_for_not_enqueued_again_and_ctrl_c_leaves_the_batch_running(benv: Env) -> None:
    file = _write(benv, "tick.yaml", composition(redis_url=benv.redis_url, prefix=benv.prefix))
    inputs = _inputs(benv, 5)
    out = benv.cwd / "r.jsonl"
    # no worker yet: every run stays queued; --timeout reports them, one line each, exit 1
    r = _batch(benv, file, inputs, "--batch-id", "q1", "--timeout", "1", "--out", str(out))
    assert r.returncode == 1, r
    assert [(x["run_id"], x["status"]) for x in _results(out)] == [(f"q1-{i}", "queued") for i in range(5)]
    assert "5 unfinished" in r.stderr and _queued_messages(benv) == 5
    # again, interrupted (Ctrl-C): exit 130, nothing enqueued a second time
    assert _interrupt(benv, file, inputs, "q1") == 0  # interrupted while waiting: nothing sent again
    assert _queued_messages(benv) == 5
    # interrupted at once, while it enqueues a bigger batch: it says (and records) what it sent
    big = _inputs(benv, 300, "big.jsonl")
    sent = _interrupt(benv, file, big, "q2")
    assert _queued_messages(benv) == 5 + sent
    # a worker starts; each batch picked up again waits for its queued runs and sends only the rest
    benv.worker(file, "--concurrency", "2")
    r = _batch(benv, file, inputs, "--batch-id", "q1", "--out", str(out))
    assert r.returncode == 0, (r, benv.workers[0].text())
    assert "0 enqueued now" in r.stderr
    assert [(x["run_id"], x["status"]) for x in _results(out)] == [(f"q1-{i}", "done") for i in range(5)]
    r = _batch(benv, file, big, "--batch-id", "q2", "--out", str(out))
    assert r.returncode == 0 and f"{300 - sent} enqueued now" in r.stderr, (r, benv.workers[0].text())
    assert table(benv.redis_url, benv.prefix, "executions") == {
        **{f"q1-{i}": 1 for i in range(5)}, **{f"q2-{i}": 1 for i in range(300)}}
    log = benv.workers[0].log
    wait_for(lambda: log.read_text().count(" succeeded in ") >= 305, 30, "the deliveries")
    assert log.read_text().count(" received") == 305  # one message per run


def _interrupt(env: Env, file: Path, inputs: Path, batch_id: str) -> int:
    """Ctrl-C ``seamkit batch`` as soon as it says it started; checks exit 130 and the message, and
    returns how many runs it said it enqueued."""
    import re

    log = env.cwd / f"batch-{batch_id}.log"
    p = subprocess.Popen([sys.executable, "-m", "seamkit", "batch", str(file), str(inputs), "--queue", env.prefix,
                          "--batch-id", batch_id], cwd=env.cwd, env=env.env(), stdout=subprocess.DEVNULL,
                         stderr=log.open("w"))
    wait_for(lambda: f"seamkit: batch {batch_id}:" in log.read_text(), 30, "the batch to start")
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=30) == 130, log.read_text()
    stderr = log.read_text()
    assert "run the same command again" in stderr and "Traceback" not in stderr, stderr
    m = re.search(r"interrupted: (\d+) enqueued now", stderr)
    assert m is not None, stderr
    return int(m.group(1))


def test_suspended_and_failed_runs_are_reported_with_exit_1(benv: Env) -> None:
    text = composition(redis_url=benv.redis_url, prefix=benv.prefix)
    file = _write(benv, "ask.yaml", text.replace("  tools: [tick]\n",
                                                 "  tools: [tick]\n  approvals: {tick: every_call}\n"))
    benv.worker(file).wait_ready()
    out = benv.cwd / "r.jsonl"
    r = _batch(benv, file, _inputs(benv, 2), "--batch-id", "s1", "--out", str(out), "--timeout", "60")
    assert r.returncode == 1, (r, benv.workers[0].text())
    rows = _results(out)
    assert [x["status"] for x in rows] == ["suspended", "suspended"]
    assert "2 suspended" in r.stderr
    # a run whose model fails (its script has no second turn): failed, with its error; one that stops
    # without an answer (max_steps) is done but counts as not successful
    short = _write(benv, "short.yaml", text.replace("      - text: ticked\n", ""))
    capped = _write(benv, "capped.yaml", text.replace("  tools: [tick]\n", "  tools: [tick]\n  max_steps: 1\n"))
    for f in (short, capped):
        benv.worker(f).wait_ready()
    r = _batch(benv, short, _inputs(benv, 1, "one.jsonl"), "--batch-id", "f1", "--out", str(out), "--timeout", "60")
    assert r.returncode == 1, (r, benv.workers[1].text())
    (row,) = _results(out)
    assert (row["status"], row["error_type"], row["output"]) == ("failed", "ProviderError", None), row
    assert "no turn left" in row["error"]
    r = _batch(benv, capped, _inputs(benv, 1, "one.jsonl"), "--batch-id", "m1", "--out", str(out), "--timeout", "60")
    assert r.returncode == 1, (r, benv.workers[2].text())
    (row,) = _results(out)
    assert (row["status"], row["stop_reason"]) == ("done", "max_steps"), row


# -- the batch ------------------------------------------------------------------------------

N = 1000


async def _owner_sequences(env: Env, run_ids: list[str]) -> list[list[str]]:
    from seamkit._durability.checkpointer import Checkpointer
    from seamkit_redis.store import RedisStore

    cp = Checkpointer(RedisStore(env.redis_url, prefix=env.prefix))
    sem = asyncio.Semaphore(32)

    async def owners(run_id: str) -> list[str]:
        async with sem:
            out = []
            for info in await cp.history(run_id):
                snap = await cp.at_version(run_id, info.version)
                out.append(str(snap.metadata.get("owner")) if snap is not None else "?")
            return out

    try:
        return list(await asyncio.gather(*(owners(r) for r in run_ids)))
    finally:
        await cp.aclose()


def _interleaved(owners: list[str]) -> bool:
    """Whether a process wrote versions of the run, another one then, and the first again."""
    seen: list[str] = []
    for o in owners:
        if not seen or seen[-1] != o:
            if o in seen:
                return True
            seen.append(o)
    return False


def _children(pid: int) -> set[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return {int(x) for x in out.split()}


def test_a_batch_of_1000_runs_over_4_worker_processes_with_one_killed(benv: Env,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTT_SLOW_EVERY", "97")  # about ten runs take a second in the tool
    file = _write(benv, "tick.yaml", composition(redis_url=benv.redis_url, prefix=benv.prefix))
    inputs = _inputs(benv, N)
    out = benv.cwd / "results.jsonl"
    workers = [benv.worker(file, "--concurrency", "2") for _ in range(2)]  # 4 worker processes
    for w in workers:
        w.wait_ready()
    started = time.monotonic()
    # --requeue-after 5: a message the killed worker had just popped is lost with it (Celery's Redis
    # transport pops, then records it unacknowledged): the batch sends such a run again
    p = _popen_batch(benv, file, inputs, "--batch-id", "big", "--out", str(out), "--timeout", "240",
                     "--requeue-after", "5")
    wait_for(lambda: len(table(benv.redis_url, benv.prefix, "applied")) >= N // 3, 120, "a third of the runs")

    def inside_slow_call() -> Any:  # a worker with a process inside a slow run's tool call now
        busy = {s["pid"] for s in spans(benv.redis_url, benv.prefix)
                if s["end"] is None and int(s["run"].rsplit("-", 1)[1]) % 97 == 96}
        return next((w for w in workers if _children(w.pid) & busy), None)

    wait_for(inside_slow_call, 120, "a run inside its slow tool call")
    victim = inside_slow_call()
    killed_at = time.time()
    victim.kill_main()  # SIGKILL mid-batch, mid-run: its pool processes die with it
    benv.worker(file, "--concurrency", "2")
    _, stderr = p.communicate(timeout=280)
    elapsed = time.monotonic() - started
    assert p.returncode == 0, (stderr[-2000:], benv.workers[-1].text())
    rows = _results(out)
    assert [x["index"] for x in rows] == list(range(N))  # every result, in input order
    assert [x["run_id"] for x in rows] == [f"big-{i}" for i in range(N)]
    assert {(x["status"], x["output"]) for x in rows} == {("done", "ticked")}
    run_ids = [x["run_id"] for x in rows]
    # each run's side effect landed exactly once (the table of effects)...
    assert table(benv.redis_url, benv.prefix, "applied") == dict.fromkeys(run_ids, 1)
    # ...though a call the kill interrupted ran again (same key): at most one per killed process
    executions = table(benv.redis_url, benv.prefix, "executions")
    assert set(executions) == set(run_ids)
    again = sorted(r for r, n in executions.items() if n > 1)
    assert 1 <= len(again) <= 2 and all(executions[r] == 2 for r in again), again  # the slow call, at least
    # no run in two workers at once: its executions never overlap, and its checkpoints were written
    # by one process, then (after a kill) by the next, never back and forth
    all_spans = spans(benv.redis_url, benv.prefix)
    assert len(all_spans) == sum(executions.values())
    assert overlapping(all_spans, killed_at) == []
    owners = asyncio.run(_owner_sequences(benv, run_ids))
    assert not [r for r, o in zip(run_ids, owners, strict=True) if _interleaved(o)]
    resumed = sum(1 for o in owners if len(set(o)) > 1)
    assert resumed >= 1  # the killed run was resumed from its checkpoint by another worker
    resent = stderr.split("sent again")[0].rsplit(", ", 1)[-1] if "sent again" in stderr else "0"
    print(f"\n{N} runs, 2x2 worker processes, one worker killed: {elapsed:.1f} s ({N / elapsed:.1f} runs/s), "
          f"{resumed} resumed by another worker, {len(again)} interrupted calls run again, {resent} sent again")
    # picked up again: all reused, nothing run
    r = _batch(benv, file, inputs, "--batch-id", "big", "--out", str(out))
    assert r.returncode == 0 and f"0 enqueued now, {N} finished before" in r.stderr, r
    assert table(benv.redis_url, benv.prefix, "executions") == executions


def _reservation(env: Env) -> Decimal:
    """The largest reservation the budget took: the largest token estimate of a request at $1/M
    plus its output allowance (``default_max_tokens: 100``) at $2/M."""
    import redis

    r = redis.Redis.from_url(env.redis_url)
    try:
        seen = [x.decode().split(":") for x in r.smembers(f"{env.prefix}:requests")]
    finally:
        r.close()
    return max((int(est) * Decimal(1) + (int(mx) or 100) * Decimal(2)) / 1_000_000 for est, mx in seen)


def test_the_batch_under_one_budget_ceiling_shared_by_the_workers(benv: Env) -> None:
    from seamkit.values import Scope
    from seamkit_budget.shared import SharedLedger
    from seamkit_redis.store import RedisStore

    ceiling = Decimal("0.06")  # $0.0002 a call, two calls a run: about 150 runs
    ledger = f"{benv.prefix}-ledger"
    file = _write(benv, "budget.yaml", composition(redis_url=benv.redis_url, prefix=benv.prefix, budget=str(ceiling),
                                                   ledger=ledger))
    workers = [benv.worker(file, "--concurrency", "2") for _ in range(2)]
    for w in workers:
        w.wait_ready()
    out = benv.cwd / "results.jsonl"
    r = _batch(benv, file, _inputs(benv, N), "--batch-id", "budget", "--out", str(out), "--timeout", "240",
               timeout=280)
    assert r.returncode == 1, (r.stderr[-2000:], workers[0].text())
    rows = _results(out)
    assert [x["index"] for x in rows] == list(range(N))
    done = [x for x in rows if x["status"] == "done"]
    failed = [x for x in rows if x["status"] != "done"]
    assert done and failed and len(done) + len(failed) == N
    # every run beyond the budget ended failed with BudgetExceeded
    assert {x["status"] for x in failed} == {"failed"}
    assert {x["error_type"] for x in failed} == {"BudgetExceeded"}, failed[0]
    assert all(f"shared ledger {ledger} has spent" in x["error"] for x in failed), failed[0]
    assert all(Decimal(x["cost"]) == Decimal("0.0004") for x in done)  # exact decimal text

    async def view() -> Any:
        store = RedisStore(benv.redis_url, prefix=f"{benv.prefix}-budget")
        try:
            return await SharedLedger(store).view(ledger, Scope())
        finally:
            await store.aclose()

    v = asyncio.run(view())
    reservation = _reservation(benv)
    # a call is charged less than its reservation (else the bound is on admissions only), and a
    # reservation is small next to the ceiling (a bound that means something)
    assert Decimal("0.0002") < reservation < ceiling / 100
    workers_n = 4
    assert v.spent <= ceiling + workers_n * reservation, (v.spent, reservation)  # one in flight per worker
    assert v.reserved == 0  # every admitted call settled
    assert v.spent + workers_n * reservation >= ceiling  # refusals came at the ceiling, not before
    charged = sum((Decimal(x["cost"]) for x in rows if x["cost"] is not None), Decimal(0))
    assert charged == v.spent  # what the runs report is what the ledger holds
    print(f"\nshared budget, {N} runs over 4 worker processes: {len(done)} done, {len(failed)} refused; spent "
          f"${v.spent} of ${ceiling} (over by ${max(v.spent - ceiling, Decimal(0))}; one reservation ${reservation})")


def test_requeue_sends_again_what_the_broker_lost(benv: Env) -> None:
    import redis

    file = _write(benv, "tick.yaml", composition(redis_url=benv.redis_url, prefix=benv.prefix))
    inputs = _inputs(benv, 2)
    out = benv.cwd / "r.jsonl"
    r = _batch(benv, file, inputs, "--batch-id", "lost", "--timeout", "0.5", "--out", str(out))
    assert r.returncode == 1 and _queued_messages(benv) == 2, r
    broker = redis.Redis.from_url(benv.broker)
    broker.delete(benv.prefix)  # the broker forgot its messages (a restart without persistence)
    broker.close()
    benv.worker(file).wait_ready()
    r = _batch(benv, file, inputs, "--batch-id", "lost", "--timeout", "2", "--out", str(out))
    assert r.returncode == 1 and "0 enqueued now" in r.stderr, r  # recorded as enqueued: only waited for
    assert [x["status"] for x in _results(out)] == ["queued", "queued"]
    r = _batch(benv, file, inputs, "--batch-id", "lost", "--requeue", "--out", str(out))
    assert r.returncode == 0 and "2 enqueued now" in r.stderr, (r, benv.workers[0].text())
    assert [x["status"] for x in _results(out)] == ["done", "done"]


def test_a_run_whose_message_was_lost_is_sent_again_once_overtaken(benv: Env) -> None:
    import redis

    file = _write(benv, "tick.yaml", composition(redis_url=benv.redis_url, prefix=benv.prefix))
    inputs = _inputs(benv, 4)
    out = benv.cwd / "r.jsonl"
    r = _batch(benv, file, inputs, "--batch-id", "gone", "--timeout", "0.5", "--out", str(out))
    assert r.returncode == 1 and _queued_messages(benv) == 4, r
    # the message of the first run disappears, as it does with a worker killed right after popping it
    broker = redis.Redis.from_url(benv.broker)
    try:
        (lost,) = [m for m in broker.lrange(benv.prefix, 0, -1) if json.loads(m)["headers"]["id"].startswith("gone-0:")]
        assert broker.lrem(benv.prefix, 1, lost) == 1
    finally:
        broker.close()
    benv.worker(file).wait_ready()
    r = _batch(benv, file, inputs, "--batch-id", "gone", "--requeue-after", "1", "--out", str(out), "--timeout", "60")
    assert r.returncode == 0, (r, benv.workers[0].text())
    assert "0 enqueued now" in r.stderr and "1 sent again (overtaken without starting)" in r.stderr, r.stderr
    assert [x["status"] for x in _results(out)] == ["done"] * 4
    assert table(benv.redis_url, benv.prefix, "executions") == {f"gone-{i}": 1 for i in range(4)}
