"""Send records and the sweeper without a broker (:mod:`seamkit_celery.sent`): the record's
stored form, what makes two submits one run, the index, and when the sweeper sends a run again
(a fake clock; sends are recorded, not made)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit._agent.agent import Agent
from seamkit._durability import codec
from seamkit._runtime.context import RunContext
from seamkit.testing import ScriptedModel
from seamkit.testing._memory_store import MemoryStore
from seamkit.values import Scope
from seamkit_celery.sent import (
    BUCKET_S,
    INDEX_WINDOW_S,
    SEAL,
    LostMessages,
    SendRecord,
    SpecConflict,
    Sweeper,
    differences,
    index_key,
    mark_rejected,
    read_record,
    record_send,
    spec_digest,
)
from seamkit_celery.task import make_spec

T0 = 1_000_000.0  # a minute boundary plus 40 s


def spec(run_id: str, task: str = "go", **kw: Any) -> dict[str, Any]:
    return make_spec("/abs/a.yaml", task, run_id=run_id, **kw)


texts = st.text(max_size=20)
json_values = st.recursive(st.none() | st.booleans() | st.integers() | texts,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
                           max_leaves=10)
records = st.builds(
    SendRecord, run_id=texts, spec=st.dictionaries(texts, json_values, max_size=4), queue=st.none() | texts,
    sent_at=st.floats(0, 1e10), first_sent_at=st.floats(0, 1e10), sends=st.integers(1, 10**6),
    state=st.sampled_from(["sent", "rejected"]), reason=st.none() | texts,
)


@given(records)
def test_a_record_survives_the_store_codec(rec: SendRecord) -> None:
    assert SendRecord.from_value(codec.loads(codec.dumps(rec.to_value()))) == rec


@given(json_values)
def test_anything_else_stored_reads_as_no_record_never_an_error(value: Any) -> None:
    assert SendRecord.from_value(value) is None


@given(st.dictionaries(texts, json_values, max_size=4), st.data())
def test_a_damaged_record_reads_as_none_or_a_record(value: dict[str, Any], data: st.DataObject) -> None:
    good = SendRecord("r", {"task": "x"}, "q", 1.0, 1.0).to_value()
    mixed = {**good, **data.draw(st.dictionaries(st.sampled_from(sorted(good)), json_values, max_size=3))}
    out = SendRecord.from_value(mixed)
    assert out is None or isinstance(out, SendRecord)


def test_the_digest_is_file_agent_task_and_variables_only() -> None:
    a = spec("r1", variables={"x": "1", "y": "2"})
    assert spec_digest(a) == spec_digest(spec("r2", variables={"y": "2", "x": "1"}))  # run id, key order: same
    assert spec_digest(a) != spec_digest(spec("r1", task="other", variables={"x": "1", "y": "2"}))
    assert differences(a, spec("r1", "other", agent="b")) == ["agent (b, not None)", "task", "variables"]


async def test_a_run_id_recorded_twice_is_one_run_and_another_spec_is_refused() -> None:
    store = MemoryStore()
    rec, new = await record_send(store, spec("r1"), "q", now=lambda: T0)
    assert new and rec.sends == 1 and rec.state == "sent"
    assert await store.list(Scope(), index_key("q", int(T0 // BUCKET_S))) == ["r1"]
    again, new = await record_send(store, spec("r1"), "q", now=lambda: T0 + 5)
    assert not new and (again.sends, again.sent_at, again.first_sent_at) == (2, T0 + 5, T0)
    assert await store.list(Scope(), index_key("q", int(T0 // BUCKET_S))) == ["r1"]  # indexed once
    with pytest.raises(SpecConflict, match="run r1 was submitted before with another task"):
        await record_send(store, spec("r1", task="else"), "q")
    assert (await read_record(store, "r1")) == again  # the refused one changed nothing
    assert await mark_rejected(store, "r1", "FileNotFoundError: gone")
    rejected = await read_record(store, "r1")
    assert rejected is not None and (rejected.state, rejected.reason) == ("rejected", "FileNotFoundError: gone")
    assert not await mark_rejected(store, "never", "x")
    fixed, _ = await record_send(store, spec("r1"), "q", now=lambda: T0 + 9)  # submitted again once fixed
    assert (fixed.state, fixed.reason, fixed.sends) == ("sent", None, 3)


async def test_no_agent_and_the_entry_agent_named_are_one_run_also_against_a_record_written_before() -> None:
    store = MemoryStore()
    legacy = SendRecord("r1", spec("r1"), "q", T0, T0)  # digested without an entry: agent None
    await store.set(Scope(), "seamkit-sent:r1", legacy.to_value())
    rec, new = await record_send(store, spec("r1", agent="a"), "q", now=lambda: T0 + 1, entry="a")
    assert not new and rec.sends == 2
    rec, new = await record_send(store, spec("r2", agent="a"), "q", entry="a")
    assert rec.digest == spec_digest(spec("r2"), "a") == spec_digest(spec("r2", agent="a"))
    with pytest.raises(SpecConflict, match=r"another agent \(b, not a\)"):
        await record_send(store, spec("r2", agent="b"), "q", entry="a")
    # a workflow file passes no entry: its None (the workflow) and its entry agent are two runs
    await record_send(store, spec("w1"), "q")
    with pytest.raises(SpecConflict, match="another agent"):
        await record_send(store, spec("w1", agent="a"), "q")


class Harness:
    """A sweeper over a memory store on a fake clock; ``sent`` lists its sends."""

    __test__ = False

    def __init__(self, waiting: int | None = 0) -> None:
        self.store = MemoryStore()
        self.clock = [T0]
        self.sent: list[tuple[str, str]] = []
        self.specs: list[Mapping[str, Any]] = []
        self.waiting = waiting
        self.sweeper = Sweeper(self.store, ["q"], self.send, lambda q: self.waiting, requeue_after_s=60,
                               now=lambda: self.clock[0])

    def send(self, spec: Mapping[str, Any], queue: str) -> None:
        self.sent.append((str(spec["run_id"]), queue))
        self.specs.append(spec)

    async def submit(self, run_id: str) -> None:
        await record_send(self.store, spec(run_id), "q", now=lambda: self.clock[0])

    async def start(self, run_id: str) -> None:
        await Agent(ScriptedModel(["ok"]), name="a", checkpointer=self.store).run("go", ctx=RunContext(run_id=run_id))

    async def sweep_at(self, t: float) -> list[str]:
        self.clock[0] = t
        return await self.sweeper.sweep()


async def test_a_lost_run_is_sent_again_once_the_queue_is_idle_on_two_sweeps() -> None:
    h = Harness(waiting=0)
    await h.submit("lost")
    assert await h.sweep_at(T0 + 30) == []  # not requeue_after old yet
    assert await h.sweep_at(T0 + 61) == []  # first sight: a worker may have taken it a moment ago
    assert await h.sweep_at(T0 + 62) == ["lost"]
    assert h.sent == [("lost", "q")]
    rec = await read_record(h.store, "lost")
    assert rec is not None and (rec.sends, rec.sent_at) == (2, T0 + 62)
    assert await h.sweep_at(T0 + 63) == []  # just sent: wait requeue_after again
    assert await h.sweep_at(T0 + 123) == [] and await h.sweep_at(T0 + 124) == ["lost"]


async def test_a_run_waiting_its_turn_is_not_sent_again_unless_a_later_one_started() -> None:
    h = Harness(waiting=5)  # a backlog: messages wait in the queue
    await h.submit("early")
    h.clock[0] = T0 + 1
    await h.submit("late")
    for t in (T0 + 100, T0 + 101, T0 + 102):
        assert await h.sweep_at(t) == []
    await h.start("late")  # overtaken: a run sent after it started, it did not
    assert await h.sweep_at(T0 + 103) == []
    assert await h.sweep_at(T0 + 104) == ["early"]


async def test_started_and_rejected_runs_are_never_sent_and_closed_buckets_are_sealed() -> None:
    h = Harness(waiting=0)
    for r in ("started", "rejected", "lost"):
        await h.submit(r)
    await h.start("started")
    await mark_rejected(h.store, "rejected", "no file")
    key = index_key("q", int(T0 // BUCKET_S))
    assert await h.sweep_at(T0 + 61) == []
    assert list(await h.store.list(Scope(), key)) == ["started", "rejected", "lost"]  # still open: untouched
    assert await h.sweep_at(T0 + 3 * BUCKET_S) == ["lost"]
    assert list(await h.store.list(Scope(), key)) == ["lost", SEAL]  # closed: only what is unresolved, sealed
    assert h.sent == [("lost", "q")]
    h.clock[0] = T0 + INDEX_WINDOW_S + 3 * BUCKET_S
    assert await h.sweep_at(h.clock[0]) == []  # out of the window: the sweeper gave up on it


async def _checkpoint(h: Harness, run_id: str, version: int, status: str, *, owner: str = "elsewhere:1",
                      lease_until: float | None = None) -> None:
    """A checkpoint of ``run_id`` as a worker ``owner`` writes it (``lease_until``: its lease)."""
    from seamkit._durability.records import CheckpointRecord
    from seamkit.values import freeze

    meta = freeze({"owner": owner, "lease_until": lease_until})
    await h.store.save(CheckpointRecord(run_id, version, status, codec.dumps({}), metadata=meta),
                       expected_version=version - 1 if version > 1 else None)


async def test_a_running_run_whose_lease_stays_void_gets_a_continuation_and_stays_indexed_until_settled() -> None:
    h = Harness(waiting=3)  # a busy queue does not matter: the run started, its message is not waiting its turn
    await h.submit("stuck")
    await _checkpoint(h, "stuck", 1, "running", lease_until=T0 + 100)  # a slow tool call: the lease is live
    key = index_key("q", int(T0 // BUCKET_S))
    assert await h.sweep_at(T0 + 61) == [] and await h.sweep_at(T0 + 99) == []
    assert await h.sweep_at(T0 + 3 * BUCKET_S) == []  # expired: first seen void (its worker may renew it now)
    assert list(await h.store.list(Scope(), key)) == ["stuck", SEAL]  # closed and sealed, but still watched
    assert await h.sweep_at(T0 + 3 * BUCKET_S + 59) == []  # void, but not requeue_after long yet
    assert await h.sweep_at(T0 + 3 * BUCKET_S + 60) == ["stuck"]
    assert [(s["run_id"], s["task"], s["agent"]) for s in h.specs] == [("stuck", None, None)]  # a resume message
    assert await h.sweep_at(T0 + 3 * BUCKET_S + 61) == []  # just sent: requeue_after again before another
    assert await h.sweep_at(T0 + 3 * BUCKET_S + 120) == ["stuck"]
    # a worker took it: a new version with a live lease resets the clock
    t = T0 + 3 * BUCKET_S + 121
    await _checkpoint(h, "stuck", 2, "running", lease_until=t + 300)
    for dt in (0, 100, 250):
        assert await h.sweep_at(t + dt) == []
    await _checkpoint(h, "stuck", 3, "running", lease_until=None)  # released (its store went away mid-run)
    assert await h.sweep_at(t + 260) == [] and await h.sweep_at(t + 319) == []
    assert await h.sweep_at(t + 320) == ["stuck"]
    await _checkpoint(h, "stuck", 4, "done")  # settled: it leaves the index
    assert await h.sweep_at(t + 400) == []
    assert list(await h.store.list(Scope(), key)) == [SEAL]
    assert len(h.specs) == 3


def _dead_pid() -> str:
    """The process id of a process that has exited."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()


async def test_a_run_whose_owner_process_is_gone_on_this_host_is_stuck_although_its_lease_is_not_expired() -> None:
    import os

    from seamkit._durability.checkpointer import worker_id

    owner = worker_id().rsplit(":", 1)[0] + ":" + _dead_pid()
    h = Harness()
    await h.submit("orphan")
    await _checkpoint(h, "orphan", 1, "running", owner=owner, lease_until=T0 + 10_000)
    assert await h.sweep_at(T0 + 61) == []  # first seen so
    assert await h.sweep_at(T0 + 121) == ["orphan"]
    h2 = Harness()
    await h2.submit("alive")
    await _checkpoint(h2, "alive", 1, "running", owner=worker_id().rsplit(":", 1)[0] + f":{os.getpid()}",
                      lease_until=T0 + 10_000)
    assert await h2.sweep_at(T0 + 61) == [] and await h2.sweep_at(T0 + 121) == []


def test_lost_messages_rule_waits_for_an_idle_queue_or_an_overtaking_run_on_two_checks() -> None:
    # the one rule the sweeper, runs wait and a queued child's caller share
    a, b = SendRecord("a", spec("a"), "q", T0, T0), SendRecord("b", spec("b"), "q", T0 + 5, T0 + 5)
    asked: list[int] = []

    def waiting(n: int | None) -> Any:
        return lambda: asked.append(1) or n

    rule = LostMessages(60)
    assert rule.check([a, b], T0 + 30, waiting(0)) == [] and asked == []  # not old enough: broker not asked
    busy = [rule.check([a, b], T0 + 70 + i, waiting(1)) for i in range(3)]
    assert busy == [[], [], []]  # a message waits: maybe theirs
    assert rule.check([a, b], T0 + 80, waiting(None)) == []  # the broker does not say: not idle
    assert rule.check([a, b], T0 + 81, waiting(0)) == []  # idle once: suspects only
    assert rule.check([a, b], T0 + 82, waiting(0)) == [a, b]  # twice in a row: lost, oldest first
    assert rule.check([b], T0 + 83, waiting(1)) == []
    assert rule.check([b], T0 + 84, waiting(1), latest_started=T0 + 6) == []  # overtaken: a suspect again
    assert rule.check([b], T0 + 85, waiting(1), latest_started=T0 + 6) == [b]
