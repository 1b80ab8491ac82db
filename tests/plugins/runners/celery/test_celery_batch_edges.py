"""Edges of ``seamkit batch`` found by an outside pass: a ``--batch-id`` reused for other work, an
``--out`` that cannot be written (found before anything is sent), every problem of an input file
in one report, and retrying failed inputs."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from batch_testlib import batch_plugin, composition, table
from celery_testlib import Env
from test_celery_batch import _batch, _inputs, _queued_messages, _results, _write


@pytest.fixture
def benv(celery_plugin_paths: list[Path], tmp_path: Path, redis_url: str) -> Iterator[Env]:
    e = Env([*celery_plugin_paths, batch_plugin(tmp_path / "plugins")], tmp_path, redis_url,
            f"ce-{uuid.uuid4().hex[:10]}")
    yield e
    e.stop_all()


def test_a_batch_id_reused_for_other_work_is_refused(benv: Env) -> None:
    file = _write(benv, "tick.yaml", composition(redis_url=benv.redis_url, prefix=benv.prefix))
    inputs = _inputs(benv, 3)
    r = _batch(benv, file, inputs, "--batch-id", "same", "--timeout", "0.5")  # no worker: queued, exit 1
    assert r.returncode == 1 and _queued_messages(benv) == 3, r
    # the same inputs reformatted are the same work: waited for, nothing sent again
    inputs.write_text("\n".join(json.dumps(json.loads(x), indent=None, separators=(",", ":"))
                                for x in inputs.read_text().splitlines() if x.strip()) + "\n")
    r = _batch(benv, file, inputs, "--batch-id", "same", "--timeout", "0.5")
    assert r.returncode == 1 and "0 enqueued now" in r.stderr and _queued_messages(benv) == 3, r
    other = _write(benv, "other.jsonl", '"something else"\n"and more"\n"and more"\n')
    r = _batch(benv, file, other, "--batch-id", "same", "--timeout", "0.5")
    assert r.returncode == 2, r
    assert "batch same exists for other work" in r.stderr and "other inputs" in r.stderr, r.stderr
    assert "new --batch-id" in r.stderr and "Traceback" not in r.stderr
    copy = _write(benv, "copy.yaml", file.read_text())
    r = _batch(benv, copy, inputs, "--batch-id", "same", "--timeout", "0.5")
    assert r.returncode == 2 and "another composition" in r.stderr and "other inputs" not in r.stderr, r.stderr
    r = _batch(benv, file, inputs, "--batch-id", "same", "--timeout", "0.5", "--agent-name", "ticker")
    assert r.returncode == 2 and "another agent (ticker" in r.stderr, r.stderr
    assert _queued_messages(benv) == 3  # nothing was sent by the refused commands


def test_an_out_that_cannot_be_written_is_refused_before_anything_is_sent(benv: Env) -> None:
    file = _write(benv, "tick.yaml", composition(redis_url=benv.redis_url, prefix=benv.prefix))
    inputs = _inputs(benv, 2)
    for out, said in ((benv.cwd / "nodir" / "r.jsonl", "no directory"), (benv.cwd, "is a directory")):
        r = _batch(benv, file, inputs, "--out", str(out), "--timeout", "0.5")
        assert r.returncode == 2, r
        assert said in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert _queued_messages(benv) == 0
    assert not any(p.name.startswith(".") for p in benv.cwd.iterdir() if p.is_file())  # no probe left behind


def test_every_problem_of_the_input_file_is_reported_at_once(benv: Env) -> None:
    templ = _write(benv, "team.yaml", composition(redis_url=benv.redis_url, prefix=benv.prefix,
                                                  prompt="You tick for {{team}}."))
    mixed = _write(benv, "mixed.jsonl", '{"task": "a", "variables": {"team": "ops"}}\nnot json\n"no team"\n'
                                        '{"task": 3}\n')
    r = _batch(benv, templ, mixed)
    assert r.returncode == 2, r
    lines = [x for x in r.stderr.splitlines() if "mixed.jsonl:" in x]
    assert [x.split("mixed.jsonl:", 1)[1].split(":", 1)[0] for x in lines] == ["2", "3", "4"], r.stderr
    assert "not JSON" in lines[0] and "team" in lines[1] and "'task' must be a string" in lines[2]
    assert _queued_messages(benv) == 0


def test_failed_inputs_are_retried_under_new_run_ids_only_when_asked(benv: Env) -> None:
    text = composition(redis_url=benv.redis_url, prefix=benv.prefix)
    file = _write(benv, "flaky.yaml", text.replace("      - text: ticked\n", ""))  # no answer turn: fails
    benv.worker(file).wait_ready()
    inputs = _inputs(benv, 2)
    out = benv.cwd / "r.jsonl"
    r = _batch(benv, file, inputs, "--batch-id", "f", "--out", str(out), "--timeout", "60")
    assert r.returncode == 1, (r, benv.workers[0].text())
    assert [x["status"] for x in _results(out)] == ["failed", "failed"]
    assert "--retry-failed" in r.stderr, r.stderr  # the summary says how to retry them
    again = _batch(benv, file, inputs, "--batch-id", "f", "--out", str(out), "--timeout", "60")
    assert again.returncode == 1 and "0 enqueued now" in again.stderr, again  # failed runs are reused as is
    file.write_text(text)  # fixed; the worker rebuilds the agent of a changed file
    r = _batch(benv, file, inputs, "--batch-id", "f", "--out", str(out), "--retry-failed", "--timeout", "60")
    assert r.returncode == 0, (r, benv.workers[0].text())
    assert [(x["run_id"], x["status"]) for x in _results(out)] == [("f-0-r1", "done"), ("f-1-r1", "done")]
    assert "2 enqueued now" in r.stderr and "2 failed before retried" in r.stderr, r.stderr
    # the retries are recorded: the same command again reuses them
    r = _batch(benv, file, inputs, "--batch-id", "f", "--out", str(out), "--timeout", "60")
    assert r.returncode == 0 and "0 enqueued now" in r.stderr, r
    assert [x["run_id"] for x in _results(out)] == ["f-0-r1", "f-1-r1"]
    assert table(benv.redis_url, benv.prefix, "executions") == {"f-0": 1, "f-1": 1, "f-0-r1": 1, "f-1-r1": 1}
