"""A lead whose child cannot be sent because the broker is down (issue 16), end to end: a real
``redis-server`` of the test's own is the broker (AOF, so that killing it is an outage, not a
loss), killed while the lead is in its first tool call, so that the lead's send of its queued
child finds no broker; it is started again on the same port and data. The lead's model must never
be told that the child failed: its delivery is retried, resumed, sends the child then, and the
lead gets the child's answer. The checkpoint store (the session's Redis) stays up throughout."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery_testlib import Env, wait_for
from test_celery_children import _tool_results, lead_file
from test_celery_store_outage import PersistentRedis


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[PersistentRedis]:
    b = PersistentRedis(tmp_path / "broker")
    b.start()
    yield b
    b.kill()


def test_a_child_send_that_finds_the_broker_down_retries_the_lead_and_never_tells_its_model(
        env: Env, broker: PersistentRedis) -> None:
    file = lead_file(env)
    text = file.read_text()
    lead_call = "      - tool_calls: [{name: record, arguments: {sleep: 0}}]\n"
    assert lead_call in text
    file.write_text(text.replace(lead_call, lead_call.replace("sleep: 0", "sleep: 1.5")))  # time to kill it
    url = broker.url.rsplit("/", 1)[0] + "/1"
    leads = env.worker(file, "--pool", "solo", "--broker", url, "--no-sweep")
    kids = env.worker(file, "--queue", f"{env.prefix}-children", "--broker", url, "--no-sweep")
    leads.wait_ready()
    kids.wait_ready()
    r = env.cli("submit", str(file), "brief me", "--queue", env.prefix, "--broker", url)
    assert r.returncode == 0, r
    lead = r.stdout.strip()
    wait_for(lambda: len(env.attempts()) == 1, 20, "the lead inside its first tool call")
    broker.kill()
    def refused() -> bool:  # (or, wrongly, the lead went on as if the child had failed)
        snap = env.outcomes([lead], timeout=0).get(lead)
        return "could not be sent" in leads.text() or (snap is not None and snap.status != "running")

    wait_for(refused, 30, "the child's send refused by the broker")
    broker.start()
    back = time.monotonic()
    done = env.outcomes([lead], timeout=30)
    assert done[lead].status == "done", leads.text()
    results = _tool_results(done[lead])
    assert [(x.is_error, x.content) for x in results][1:] == [(False, "found it")], (results, leads.text())
    assert "InfrastructureUnavailable" in leads.text()
    print(f"\nchild send with the broker down: lead done {time.monotonic() - back:.2f} s after the broker came back")
