"""seamkit-celery without a broker: the app's delivery settings, masking, the composition check and
the task message."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from seamkit.composition import loads_composition
from seamkit_celery.app import TASK_NAME, broker_from_env, make_app, mask_url
from seamkit_celery.task import QueueConfigError, check_composition, make_spec, retry_countdown

AGENT = """
seamkit: 1
agent:
  name: a
  model: {use: scripted, turns: ["hi"]}
  CHECKPOINTS
agents:
  helper:
    model: {use: scripted, turns: ["hi"]}
    checkpoints: {use: redis, url: "redis://127.0.0.1:6379/0"}
"""


def _composition(checkpoints: str) -> object:
    return loads_composition(textwrap.dedent(AGENT).replace("CHECKPOINTS", checkpoints))


def test_the_app_states_the_delivery_settings() -> None:
    app = make_app("redis://127.0.0.1:1/0", visibility_timeout_s=30)
    c = app.conf
    assert (c.task_acks_late, c.task_reject_on_worker_lost, c.worker_prefetch_multiplier) == (True, True, 1)
    assert c.task_serializer == "json" and list(c.accept_content) == ["json"]
    assert c.broker_transport_options["visibility_timeout"] == 30
    assert c.broker_transport_options["unacked_restore_interval"] == 6  # a fifth of the timeout
    assert TASK_NAME in app.tasks
    task = app.tasks[TASK_NAME]
    assert task.acks_late and task.reject_on_worker_lost and task.max_retries is None
    assert make_app("redis://x/0", worker_prefetch_multiplier=4).conf.worker_prefetch_multiplier == 4
    with pytest.raises(ValueError, match="visibility_timeout_s must be > 0"):
        make_app("redis://x/0", visibility_timeout_s=0)


def test_a_retry_waits_at_most_half_the_visibility_timeout() -> None:
    assert retry_countdown(make_app("redis://x/0", visibility_timeout_s=2), 60) == 1
    assert retry_countdown(make_app("redis://x/0"), 60) == 5
    assert retry_countdown(make_app("redis://x/0"), 0.5) == 0.5


def test_broker_urls_are_masked_and_required(monkeypatch: pytest.MonkeyPatch) -> None:
    assert mask_url("redis://:s3cret-pw@host:6380/0") == "redis://:***@host:6380/0"
    assert mask_url("amqp://user:s3cret-pw@rabbit/vhost") == "amqp://user:***@rabbit/vhost"
    assert mask_url("redis://host:6379/0") == "redis://host:6379/0"
    monkeypatch.delenv("SEAMKIT_BROKER_URL", raising=False)
    with pytest.raises(ValueError, match="SEAMKIT_BROKER_URL"):
        broker_from_env(None)
    monkeypatch.setenv("SEAMKIT_BROKER_URL", " redis://h/0 ")
    assert broker_from_env(None) == "redis://h/0"
    assert broker_from_env("redis://other/0") == "redis://other/0"


def test_only_a_shared_store_is_accepted() -> None:
    assert check_composition(_composition('checkpoints: {use: redis, url: "redis://h/0"}')) == "a"
    for checkpoints, said in (("checkpoints: {use: sqlite, path: r.db}", "checkpoints into 'sqlite'"),
                              ("checkpoints: {use: memory}", "checkpoints into 'memory'"),
                              ("", "checkpoints into the default store (sqlite)"),
                              ("checkpoints: null", "has 'checkpoints: null'")):
        with pytest.raises(QueueConfigError, match=r"<text>:\d+:\d+: agent 'a' ") as info:
            check_composition(_composition(checkpoints))
        assert said in str(info.value)
    # another agent of the file is checked on its own
    assert check_composition(_composition("checkpoints: {use: memory}"), "helper") == "helper"
    with pytest.raises(QueueConfigError, match="no agent 'nope'"):
        check_composition(_composition("checkpoints: {use: memory}"), "nope")


def test_the_task_message_is_json_with_an_absolute_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    monkeypatch.chdir(tmp_path)
    spec = make_spec("a.yaml", "go", variables={"k": "v"})
    assert spec["file"] == str(tmp_path / "a.yaml") and spec["v"] == 1
    assert len(spec["run_id"]) == 32 and spec["decisions"] is None
    assert json.loads(json.dumps(spec)) == spec
    assert make_spec("a.yaml", "go", run_id="r1")["run_id"] == "r1"


def test_registering_the_commands_imports_no_celery() -> None:
    import subprocess
    import sys

    code = ("import argparse, sys; from seamkit_celery.plugin import seamkit_register_commands as r; "
            "p = argparse.ArgumentParser(); s = p.add_subparsers(); s.add_parser('runs').add_subparsers(); "
            "r(cli=s); print(sorted(m for m in ('celery', 'kombu', 'seamkit._agent') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


DELIVERED = """
seamkit: 1
agent:
  name: a
  model: {use: scripted, follow_transcript: true, delay: 0.1, turns: ["hello"]}
  checkpoints: {use: memory}
"""


def _blind_first(port: object, owner: str) -> object:
    """A checkpointer of another worker that does not see the run on its first look (it read
    before the other worker wrote)."""
    from seamkit._durability.checkpointer import Checkpointer

    class BlindFirst(Checkpointer):
        looked = False

        async def latest(self, run_id: str) -> object:  # type: ignore[override]
            if not self.looked:
                self.looked = True
                return None
            return await super().latest(run_id)

    return BlindFirst(port, owner=owner)  # type: ignore[arg-type]


async def test_two_deliveries_of_one_run_at_once_run_it_once() -> None:
    import asyncio
    import dataclasses

    from seamkit._durability.checkpointer import Checkpointer
    from seamkit.composition import build_agent
    from seamkit_celery.task import LeaseHeld, deliver

    first = build_agent(loads_composition(DELIVERED))
    assert first.checkpointer is not None
    # another worker (another owner) on the same store, which looked before the first began
    other = Checkpointer(first.checkpointer.port, owner="elsewhere:1")
    second = dataclasses.replace(first, checkpointer=_blind_first(first.checkpointer.port, "elsewhere:1"))
    spec = make_spec("a.yaml", "hi", run_id="r1")
    results = await asyncio.gather(deliver(first, spec), deliver(second, spec), return_exceptions=True)
    assert results[0]["status"] == "done" and results[0]["output"] == "hello"  # type: ignore[index]
    assert isinstance(results[1], LeaseHeld)  # it lost the first checkpoint's version check: retry later
    again = await deliver(dataclasses.replace(first, checkpointer=other), spec)
    assert again["status"] == "done"
    history = await first.checkpointer.history("r1")
    assert [h.status for h in history][-1] == "done" and len(history) == len({h.version for h in history})


async def test_a_lease_held_on_another_host_is_waited_for_then_taken_once_expired() -> None:
    import asyncio
    import dataclasses

    from seamkit._durability.checkpointer import Checkpointer
    from seamkit.composition import build_agent
    from seamkit.errors import CheckpointConflict
    from seamkit_celery.task import LeaseHeld, deliver

    slow = DELIVERED.replace("delay: 0.1", "delay: 0.6")
    here = build_agent(loads_composition(slow))
    assert here.checkpointer is not None
    port = here.checkpointer.port
    # a worker on another machine (its process cannot be checked from here) whose lease is short
    there = dataclasses.replace(here, checkpointer=Checkpointer(port, owner="otherhost:4242", lease_s=0.3))
    spec = make_spec("a.yaml", "hi", run_id="r2")
    from seamkit._runtime.context import RunContext

    elsewhere = asyncio.create_task(there.run("hi", ctx=RunContext(run_id="r2")))
    for _ in range(500):  # until the other worker's first checkpoint is written
        if await here.checkpointer.latest("r2") is not None:
            break
        await asyncio.sleep(0.01)
    with pytest.raises(LeaseHeld) as held:  # the lease is live: wait, never run it alongside
        await deliver(here, spec)
    assert held.value.owner == "otherhost:4242" and 0 < held.value.retry_in <= 0.3
    await asyncio.sleep(0.35)  # the other worker went silent past its lease (it is inside a model call)
    out = await deliver(here, spec)
    assert out["status"] == "done" and out["output"] == "hello"
    with pytest.raises(CheckpointConflict):  # the other worker's next save finds the run taken over
        await elsewhere
    owners = [(await here.checkpointer.at_version("r2", h.version)).metadata["owner"]  # type: ignore[union-attr]
              for h in await here.checkpointer.history("r2")]
    assert owners[0] == "otherhost:4242" and set(owners[1:]) == {here.checkpointer.owner}


class _DownStore:
    """A checkpoint port whose every operation fails as an unreachable store does."""

    def __getattr__(self, name: str) -> object:
        from seamkit.errors import StoreUnavailable

        async def down(*args: object, **kwargs: object) -> None:
            raise StoreUnavailable("redis store redis://:s3cret-pw@store:6379/0 failed to read: Connection refused")

        return down


async def test_a_delivery_whose_store_is_down_is_retried_never_reported_with_the_password_masked() -> None:
    import dataclasses

    from seamkit._durability.checkpointer import Checkpointer
    from seamkit.composition import build_agent
    from seamkit_celery.task import LeaseHeld, RetryLater, deliver

    agent = build_agent(loads_composition(DELIVERED))
    down = dataclasses.replace(agent, checkpointer=Checkpointer(_DownStore()))  # type: ignore[arg-type]
    for spec in (make_spec("a.yaml", "hi", run_id="r3"), make_spec("a.yaml", None, run_id="r3")):
        with pytest.raises(RetryLater) as info:
            await deliver(down, spec)
        assert not isinstance(info.value, LeaseHeld) and info.value.retry_in is None  # backoff
        assert "StoreUnavailable" in info.value.why and "s3cret-pw" not in str(info.value) + info.value.why
        assert "redis://:***@store:6379/0" in info.value.why


def test_infrastructure_failures_are_told_from_the_runs_own() -> None:
    from seamkit.errors import BudgetExceeded, FailureClass, ProviderError, StoreUnavailable
    from seamkit_celery.task import infrastructure, mask_urls

    assert infrastructure(StoreUnavailable("down"))
    try:
        try:
            raise StoreUnavailable("down")
        except StoreUnavailable as exc:
            raise RuntimeError("wrapped") from exc
    except RuntimeError as wrapped:
        assert infrastructure(wrapped)
    from decimal import Decimal

    assert not infrastructure(ProviderError("no", FailureClass.SERVER_ERROR))
    assert not infrastructure(BudgetExceeded("over", ceiling=Decimal(1), spent=Decimal(1), reserved=Decimal(0),
                                             needed=None))
    assert not infrastructure(ValueError("x"))
    assert mask_urls("a postgresql://u:pw@h:5432/db and redis://:pw2@r/0, redis://r/0") == (
        "a postgresql://u:***@h:5432/db and redis://:***@r/0, redis://r/0")


def test_a_retry_the_broker_cannot_take_puts_the_message_back_instead_of_dropping_it() -> None:
    from types import SimpleNamespace

    from celery.exceptions import Reject, Retry
    from seamkit_celery.task import retry

    def refused(**kwargs: object) -> None:  # what Task.retry does when publishing the copy fails
        raise Reject(OSError("Error 111 connecting to redis://:s3cret-pw@broker:6379/1"), requeue=False)

    app = make_app("redis://127.0.0.1:1/0")
    out = retry(SimpleNamespace(app=app, retry=refused), 0.01, "r4")  # type: ignore[arg-type]
    assert isinstance(out, Reject) and out.requeue is True and "s3cret-pw" not in str(out.reason)

    def sent(**kwargs: object) -> None:
        assert kwargs == {"countdown": 0.01, "max_retries": None}
        raise Retry("Retry in 0.01s", when=0.01)

    assert isinstance(retry(SimpleNamespace(app=app, retry=sent), 0.01, "r4"), Retry)  # type: ignore[arg-type]


async def test_a_continuation_with_decisions_for_a_finished_run_is_logged_not_dropped_silently(
        caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from seamkit.composition import build_agent
    from seamkit_celery.task import deliver

    agent = build_agent(loads_composition(DELIVERED))
    assert (await deliver(agent, make_spec("a.yaml", "hi", run_id="r2")))["status"] == "done"
    late = make_spec("a.yaml", None, run_id="r2", decisions={"call_0_0": {"approved": False, "arguments": None,
                                                                          "reason": "no"}})
    with caplog.at_level(logging.WARNING, logger="seamkit.celery"):
        out = await deliver(agent, late)
    assert out["status"] == "done"
    assert any("run r2: a continuation with decisions arrived, but the run is done" in r.getMessage()
               for r in caplog.records), caplog.records


def test_every_broker_url_example_names_the_db_the_docs_give_the_broker() -> None:
    # docs/scale-out.md: db 1 for the broker, db 0 for the store (a FLUSHDB of one spares the other)
    import re

    from seamkit_celery import app as app_module
    from seamkit_celery import commands

    docs = (Path(__file__).parents[4] / "docs" / "scale-out.md").read_text()
    assert "`redis://host:6379/1` for the broker, `/0` for the store" in docs
    with pytest.raises(ValueError) as missing:
        app_module.broker_from_env("")
    with pytest.raises(ValueError) as not_a_url:
        app_module.check_broker_url("127.0.0.1")
    for text in (str(missing.value), str(not_a_url.value), commands._BROKER_HELP):
        assert re.findall(r"redis://[^\s)]*", text) == ["redis://127.0.0.1:6379/1"], text


ASKS = """
seamkit: 1
agent:
  name: asks
  model: {use: scripted, turns: [{tool_calls: [{name: calculator, arguments: {expression: "1+1"}}]}, "two"]}
  tools: [calculator]
  approvals: {calculator: every_call}
  checkpoints: {use: memory}
"""


async def test_a_continuation_the_worker_refuses_drops_its_claim() -> None:
    from seamkit.composition import build_agent
    from seamkit_celery.pending import claim, pending
    from seamkit_celery.task import deliver

    agent = build_agent(loads_composition(ASKS))
    first = await deliver(agent, make_spec("a.yaml", "go", run_id="r3"))
    assert first["status"] == "suspended"
    assert agent.checkpointer is not None
    snap = await agent.checkpointer.latest("r3")
    assert snap is not None
    store = agent.checkpointer.port
    await claim(store, "r3", snap.version, "edit call_0_0", agent_file="a.yaml")
    bad = make_spec("a.yaml", None, run_id="r3", decisions={
        "call_0_0": {"approved": True, "arguments": {"expression": 5}, "reason": None}})
    out = await deliver(agent, bad)  # edited arguments the tool's schema refuses (submit would have too)
    assert out["status"] == "suspended" and out["error"] and "expression" in out["error"]
    assert await pending(store, "r3", snap.version) is None  # a corrected continuation may be sent now
