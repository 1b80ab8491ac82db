"""Send records: a run is known from the moment it is submitted, not from its first checkpoint.

Every run ``seamkit submit`` (or :func:`~seamkit_celery.task.submit` with ``check=True``) sends,
and every child run an agent tool with ``queue:`` sends, gets a *send record* in the checkpoint
store of its composition (:class:`~seamkit._ports.StorePort`, scope ``Scope()``, as ``seamkit
batch`` keeps its own records). Keys::

    seamkit-sent:<run id>                   the record: a SendRecord.to_value() dict
    seamkit-sent-index:<queue>:<minute>     the run ids sent to <queue> in that minute (a list);
                                            <minute> = floor(sent_at / 60)

The record holds the task message itself (``spec``, see :func:`~seamkit_celery.task.make_spec`),
so anyone holding the store can send the run again; ``digest``, what makes two submits the same
run (file, agent, task, variables); ``queue``; ``sent_at`` (epoch seconds of the latest send) and
``sends``; ``state``: ``sent``, or ``rejected`` with ``reason`` once a worker could not load the
run's composition.

Retention: a record lives :data:`RECORD_TTL_S` (7 days) from its latest write, far longer than
any wait for a lost message (the point of the record) and as long as a person plausibly runs
``seamkit runs wait`` on a run id. A checkpointed run no longer needs its record (its checkpoints
say more), so nothing removes it early.

The index exists because a :class:`~seamkit._ports.StorePort` cannot enumerate keys: the worker's
:class:`Sweeper` reads the last :data:`INDEX_WINDOW_S` (one hour) of minute buckets of the
queues it consumes. A bucket is created by ``append`` (which sets no TTL); the first sweep that
sees a bucket closed (two minutes old) rewrites it with the runs not yet settled (unstarted, or
``running``) and a seal (:data:`SEAL`), and with a TTL of :data:`INDEX_WINDOW_S`: so the index
holds about an hour of run ids per queue, and a run leaves it once it is settled (``done``,
``failed``, ``suspended``: the next rewrite of its bucket drops it) or when its bucket expires.
*Retention*: a run is watched for :data:`INDEX_WINDOW_S` (one hour) from its first send, no
longer: a run stuck after that is not found by any sweeper (``seamkit resume`` continues it). (A bucket no sweeper ever
saw, because no worker consumed its queue for an hour, keeps its run ids until the store's own
eviction; one key per minute of such submits.) Several workers sweeping at once each read and
rewrite the same buckets with the same content and may each send a lost run again: a second
message runs nothing (a run id runs once), so that costs a message, never a second run.

Order at submit: the record is written *before* the message is sent. A crash between the two
leaves a record of a run with no message, which the sweeper (or ``runs wait``) sends again after
``requeue_after``; the other order could leave a message and no record, and a lost message
would then be lost for good. When the send fails (the broker is unreachable: the caller is told
so), a record written for it is removed again, so that the run is not sent later behind the
caller's back.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from seamkit.values import Scope

if TYPE_CHECKING:
    from celery import Celery

__all__ = [
    "DEFAULT_REQUEUE_AFTER_S",
    "INDEX_WINDOW_S",
    "LostMessages",
    "RECORD_TTL_S",
    "SEAL",
    "SendRecord",
    "SpecConflict",
    "SweepThread",
    "Sweeper",
    "differences",
    "forget",
    "index_key",
    "mark_rejected",
    "mark_resent",
    "read_record",
    "record_key",
    "record_send",
    "refuse_other_checkpoints",
    "refuse_unrecorded",
    "spec_digest",
    "task_digest",
    "waiting_messages",
]

#: Seconds a sent run may stay without a checkpoint before it is sent again (as ``seamkit batch``'s
#: ``--requeue-after``).
DEFAULT_REQUEUE_AFTER_S = 60.0
#: Seconds a send record is kept after its latest write.
RECORD_TTL_S = 7 * 24 * 3600.0
#: Width (seconds) of one index bucket.
BUCKET_S = 60
#: How far back (seconds) a sweeper looks; also the TTL of a sealed index bucket.
INDEX_WINDOW_S = 3600.0
#: The last item of a bucket the sweeper has rewritten (an index item is otherwise a run id).
SEAL = {"sealed": True}
_SCOPE = Scope()
#: What makes two submits of one run id the same run.
_IDENTITY = ("file", "agent", "task", "variables")

log = logging.getLogger("seamkit.celery")


class SpecConflict(ValueError):
    """A run id submitted again with another spec; the message names what differs."""


def record_key(run_id: str) -> str:
    """The store key of ``run_id``'s send record."""
    return f"seamkit-sent:{run_id}"


def index_key(queue: str, minute: int) -> str:
    """The store key of the run ids sent to ``queue`` in ``minute`` (epoch seconds // 60)."""
    return f"seamkit-sent-index:{queue}:{minute}"


def _identity(spec: Mapping[str, Any], entry: str | None) -> dict[str, Any]:
    ident = {k: spec.get(k) for k in _IDENTITY}
    if ident["agent"] is None and entry is not None:
        ident["agent"] = entry
    return ident


def spec_digest(spec: Mapping[str, Any], entry: str | None = None) -> str:
    """SHA-256 (hex) of the parts of a task message that make it one run: file, agent, task and
    variables (not the run id, the lineage of a child, nor a resume's decisions). ``entry``: the
    name of the file's entry agent when its file has no workflow, so that no agent (``None``: the
    entry agent) and the entry agent named are the same run. (A workflow file's ``None`` is its
    workflow, another run than its entry agent's: pass no ``entry`` for it.)"""
    ident = _identity(spec, entry)
    text = json.dumps(ident, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


#: The checkpoint metadata key of :func:`task_digest` (a worker writes it when it starts a run).
TASK_DIGEST_KEY = "task_digest"


def task_digest(task: Any, variables: Mapping[str, Any] | None) -> str:
    """SHA-256 (hex) of a run's task and variables: written in the metadata of the run's
    checkpoints by the worker that starts it, so that a run id reused for other work is known
    from its checkpoints (a batch's runs, and runs whose send record expired, have no record)."""
    text = json.dumps({"task": task, "variables": dict(variables or {})}, sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def same_work(meta: Mapping[str, Any], file: str, task: Any, variables: Mapping[str, Any] | None) -> bool:
    """Whether checkpoint metadata ``meta`` says its run was started from ``file`` with ``task``
    and ``variables``. Metadata without a task digest (a run started by ``seamkit run``, or
    before digests were written) is not known to be the same work: ``False``."""
    return (str(meta.get("agent_file")) == str(file)
            and meta.get(TASK_DIGEST_KEY) == task_digest(task, variables))


def differences(old: Mapping[str, Any], new: Mapping[str, Any], entry: str | None = None) -> list[str]:
    """The identity fields (see :func:`spec_digest`, also for ``entry``) on which ``old`` and
    ``new`` differ, each as ``"task"`` or ``"file (/a.yaml, not /b.yaml)"`` (file and agent say
    both values; a task or its variables may be long or private, so only their names)."""
    out = []
    old, new = _identity(old, entry), _identity(new, entry)
    for k in _IDENTITY:
        a, b = old.get(k), new.get(k)
        if k in ("variables",):
            a, b = dict(a or {}), dict(b or {})
        if a == b:
            continue
        out.append(f"{k} ({b}, not {a})" if k in ("file", "agent") else k)
    return out


@dataclass(frozen=True, slots=True)
class SendRecord:
    """What was sent for one run (see the module doc)."""

    run_id: str
    """The run's id."""
    spec: Mapping[str, Any]
    """The task message as sent (JSON object)."""
    queue: str | None
    """The queue it went to (``None``: the app's default queue)."""
    sent_at: float
    """Epoch seconds of the latest send."""
    first_sent_at: float
    """Epoch seconds of the first send."""
    sends: int = 1
    """How many times it was sent."""
    state: str = "sent"
    """``sent`` or ``rejected`` (a worker could not load its composition)."""
    reason: str | None = None
    """Why it was rejected."""
    digest: str = field(default="")
    """:func:`spec_digest` of ``spec`` (filled in when empty)."""

    def __post_init__(self) -> None:
        if not self.digest:
            object.__setattr__(self, "digest", spec_digest(self.spec))

    def to_value(self) -> dict[str, Any]:
        """The stored form: a JSON object with ``"v": 1``."""
        return {"v": 1, "run_id": self.run_id, "digest": self.digest, "spec": json.loads(json.dumps(self.spec)),
                "queue": self.queue, "sent_at": self.sent_at, "first_sent_at": self.first_sent_at,
                "sends": self.sends, "state": self.state, "reason": self.reason}

    @classmethod
    def from_value(cls, value: Any) -> SendRecord | None:
        """The record stored as ``value``; ``None`` for anything else (another version, a damaged
        value): a record that cannot be read is treated as no record."""
        if not isinstance(value, Mapping) or value.get("v") != 1:
            return None
        try:
            spec = value["spec"]
            sent_at, first = float(value["sent_at"]), float(value["first_sent_at"])
            if not isinstance(spec, Mapping) or not all(map(math.isfinite, (sent_at, first))):
                return None
            state = str(value["state"])
            if state not in ("sent", "rejected"):
                return None
            queue = value.get("queue")
            reason = value.get("reason")
            return cls(run_id=str(value["run_id"]), spec=dict(spec), queue=None if queue is None else str(queue),
                       sent_at=sent_at, first_sent_at=first, sends=int(value["sends"]), state=state,
                       reason=None if reason is None else str(reason), digest=str(value["digest"]))
        except (KeyError, TypeError, ValueError):
            return None


async def read_record(store: Any, run_id: str) -> SendRecord | None:
    """The send record of ``run_id`` in ``store``, or ``None``. Raises
    :class:`~seamkit.errors.StoreUnavailable`."""
    return SendRecord.from_value(await store.get(_SCOPE, record_key(run_id)))


async def _write(store: Any, rec: SendRecord) -> None:
    await store.set(_SCOPE, record_key(rec.run_id), rec.to_value(), ttl=RECORD_TTL_S)


async def record_send(store: Any, spec: Mapping[str, Any], queue: str | None, *,
                      now: Callable[[], float] = time.time, entry: str | None = None) -> tuple[SendRecord, bool]:
    """Record that ``spec`` is about to be sent to ``queue`` (call it before sending). Returns the
    record and whether it is new. The same run id recorded before with the same digest is the same
    run: its record counts one more send. ``entry``: the file's entry agent (see
    :func:`spec_digest`). Both specs are digested again with it (the old record's stored digest is
    not trusted for this: a record written before ``entry`` existed digested an entry run with no
    agent). Raises :class:`SpecConflict` (naming what differs) for a run id recorded with another
    spec, :class:`~seamkit.errors.StoreUnavailable`."""
    run_id = str(spec["run_id"])
    t = now()
    old = await read_record(store, run_id)
    if old is not None:
        if spec_digest(old.spec, entry) != spec_digest(spec, entry):
            what = ", ".join(differences(old.spec, spec, entry)) or "its spec"
            raise SpecConflict(f"run {run_id} was submitted before with another {what}; submit it with a new "
                               "--run-id (or the same spec)")
        rec = replace(old, sent_at=t, sends=old.sends + 1, queue=queue, state="sent", reason=None)  # a fix retried
        await _write(store, rec)
        return rec, False
    rec = SendRecord(run_id=run_id, spec=dict(spec), queue=queue, sent_at=t, first_sent_at=t,
                     digest=spec_digest(spec, entry))
    await _write(store, rec)
    if queue is not None:
        await store.append(_SCOPE, index_key(queue, int(t // BUCKET_S)), run_id)
    return rec, True


async def refuse_other_checkpoints(port: Any, spec: Mapping[str, Any]) -> None:
    """Raise :class:`SpecConflict` when ``spec``'s run already has checkpoints written from another
    composition file or by another agent (their metadata says which). ``port``: the store's
    :class:`~seamkit._ports.CheckpointPort` side."""
    stored = await port.latest(str(spec["run_id"]))
    if stored is None:
        return
    meta = stored.record.metadata or {}
    file, agent = meta.get("agent_file"), meta.get("agent")
    if file is not None and str(file) != str(spec.get("file")):
        raise SpecConflict(f"run {spec['run_id']} already has checkpoints from {file}, not {spec.get('file')}; "
                           "submit it with a new --run-id")
    if spec.get("agent") is not None and agent is not None and str(agent) != str(spec.get("agent")):
        raise SpecConflict(f"run {spec['run_id']} already has checkpoints of agent {agent!r}, not "
                           f"{spec.get('agent')!r}; submit it with a new --run-id")


async def refuse_unrecorded(store: Any, spec: Mapping[str, Any], *, batch_run: bool) -> None:
    """Raise :class:`SpecConflict` when ``spec``'s run id is already taken by a run this send
    cannot be a copy of: it has no send record, and it has checkpoints of other work (another
    file, task or variables: see :func:`same_work`), or (``batch_run``) it is a run ``seamkit
    batch`` enqueued. ``store``: both sides (StorePort and CheckpointPort)."""
    run_id = str(spec["run_id"])
    if await read_record(store, run_id) is not None:
        return  # record_send compares the digests
    stored = await store.latest(run_id)
    if stored is not None and not same_work(stored.record.metadata or {}, str(spec.get("file")), spec.get("task"),
                                            spec.get("variables")):
        raise SpecConflict(f"run {run_id} already exists (it has checkpoints) and was not submitted with this task "
                           f"and file: continue it with seamkit submit FILE --resume {run_id}, or submit this task "
                           "with a new --run-id")
    if stored is None and batch_run:
        raise SpecConflict(f"run {run_id} is a run of a seamkit batch (enqueued, not started yet): submit this task "
                           "with a new --run-id")


async def forget(store: Any, run_id: str) -> None:
    """Remove ``run_id``'s record (its send failed; see the module doc). Best effort: a store that
    fails here is logged."""
    try:
        await store.delete(_SCOPE, record_key(run_id))
    except Exception as exc:
        log.warning("the send record of run %s could not be removed after its send failed (%s); a worker may "
                    "send it later", run_id, exc)


async def mark_resent(store: Any, rec: SendRecord, *, now: Callable[[], float] = time.time) -> SendRecord:
    """Count one more send of ``rec`` (now)."""
    new = replace(rec, sent_at=now(), sends=rec.sends + 1)
    await _write(store, new)
    return new


async def mark_rejected(store: Any, run_id: str, reason: str) -> bool:
    """Record that a worker rejected ``run_id``'s message (``reason``). ``False`` when the run has
    no record (it was not submitted through a path that records, or it expired). Raises
    :class:`~seamkit.errors.StoreUnavailable`."""
    rec = await read_record(store, run_id)
    if rec is None:
        return False
    await _write(store, replace(rec, state="rejected", reason=reason))
    return True


# -- the sweeper ------------------------------------------------------------------------------------


def waiting_messages(app: Celery, queue: str) -> int | None:
    """How many messages wait in ``queue`` on ``app``'s broker (not those a worker holds), or
    ``None`` when the broker does not say. A queue the broker does not know holds nothing (Redis
    keeps no empty list: an empty queue is an unknown one)."""
    try:
        with app.connection_for_read() as conn:
            ok = conn.default_channel.queue_declare(queue=queue, passive=True)
            return int(ok.message_count)
    except Exception as exc:
        if "NOT_FOUND" in str(exc) or getattr(exc, "reply_code", None) == 404:
            return 0
        return None


@dataclass
class LostMessages:
    """The one rule for whether an unstarted run's message was lost (so it is sent again), used by
    the workers' :class:`Sweeper`, ``seamkit runs wait`` and the caller of a queued child run.

    A run (a send record in state ``sent``, no checkpoint) is *suspect* when its latest send is at
    least ``after_s`` old and its message cannot merely be waiting its turn: its queue has no
    message waiting, or a run sent to the same queue after it has started (workers take messages
    about in the order they were sent). It is *lost* when found suspect on two checks in a row: a
    message a worker took a moment ago (the queue is empty, the run has no checkpoint yet) has a
    checkpoint by the next check. One instance per queue; a run not found suspect on a check
    starts over."""

    after_s: float
    _suspects: set[str] = field(default_factory=set)

    def check(self, records: Iterable[SendRecord], t: float, waiting: Callable[[], int | None],
              latest_started: float = -math.inf) -> list[SendRecord]:
        """Of ``records`` (unstarted runs of one queue, at time ``t``), those lost, oldest first.
        ``waiting``: the messages waiting in the queue (``None``: unknown, so not idle), asked
        only when a record is old enough; ``latest_started``: the latest first send of a run of
        the queue that has started."""
        previous, self._suspects = self._suspects, set()
        due = sorted((r for r in records if t - r.sent_at >= self.after_s), key=lambda r: r.first_sent_at)
        if not due:
            return []
        idle = waiting() == 0
        lost: list[SendRecord] = []
        for rec in due:
            if not (idle or rec.first_sent_at < latest_started):
                continue
            self._suspects.add(rec.run_id)
            if rec.run_id in previous:
                lost.append(rec)
        return lost


@dataclass
class Sweeper:
    """Sends again the runs sent to ``queues`` that never started, and continues those left
    ``running`` with nobody on them (see the module doc).

    A run is sent again when it has a record in state ``sent``, no checkpoint, its latest send is
    at least ``requeue_after_s`` old, and its message cannot merely be waiting its turn: the queue
    has no message waiting, or a run sent to the same queue after it has started (workers take
    messages about in the order they were sent), and so on two sweeps in a row
    (:class:`LostMessages`). ``send``: sends a spec to a queue (the app's
    :func:`~seamkit_celery.task._send`); ``waiting``: messages waiting in a queue (``None``:
    unknown); ``store``: the composition's store (both sides: StorePort and CheckpointPort).

    A run whose latest checkpoint is ``running`` with a void lease
    (:func:`~seamkit._durability.checkpointer.lease_void`: released, expired, or its owner a process
    on this host that is gone) on every sweep for at least ``requeue_after_s`` seconds, unchanged
    (so on two sweeps or more), and whose latest send is as old, gets a continuation message (a
    resume spec for the same run id, :func:`~seamkit_celery.task.make_spec` with no task): its
    worker died and the message's re-delivery never came (lost by the broker, or a retry copy
    that could not be published). A live lease is never second-guessed: a run in a slow tool call
    whose lease outlives it is left alone (a lease shorter than the call expires, as any
    re-delivery would then find). The queue being busy does not hold a continuation back (the
    run's message is not waiting its turn: it started); a duplicate (its real re-delivery was
    only late) finds the run taken and retries (``LeaseHeld``) or finds it settled and reports it:
    it costs a message, never a second worker on the run."""

    store: Any
    queues: Sequence[str]
    send: Callable[[Mapping[str, Any], str], None]
    waiting: Callable[[str], int | None]
    requeue_after_s: float = DEFAULT_REQUEUE_AFTER_S
    now: Callable[[], float] = time.time
    resent: int = 0
    _latest_started: dict[str, float] = field(default_factory=dict)
    _lost: dict[str, LostMessages] = field(default_factory=dict)
    _void_since: dict[str, dict[str, tuple[int, float]]] = field(default_factory=dict)
    """By queue, its runs seen ``running`` with a void lease: run id -> (checkpoint version, when
    first seen so)."""

    async def sweep(self) -> list[str]:
        """One pass over every queue; returns the run ids sent again."""
        out: list[str] = []
        for queue in self.queues:
            out.extend(await self._sweep_queue(queue))
        self.resent += len(out)
        return out

    async def _sweep_queue(self, queue: str) -> list[str]:
        t = self.now()
        current = int(t // BUCKET_S)
        first = int((t - INDEX_WINDOW_S) // BUCKET_S)
        last = int((t - self.requeue_after_s) // BUCKET_S)
        if last < first:
            return []
        buckets: dict[int, list[Any]] = {}
        for minute in range(first, last + 1):
            items = list(await self.store.list(_SCOPE, index_key(queue, minute)))
            if items:
                buckets[minute] = items
        unresolved: dict[str, SendRecord] = {}
        running: set[str] = set()
        stuck: list[SendRecord] = []
        latest_started = self._latest_started.get(queue, -math.inf)
        voids = self._void_since.setdefault(queue, {})
        for items in buckets.values():
            for run_id in _run_ids(items):
                rec = await read_record(self.store, run_id)
                if rec is None or rec.state != "sent":
                    continue
                stored = await self.store.latest(run_id)
                if stored is None:
                    unresolved[run_id] = rec
                    continue
                latest_started = max(latest_started, rec.first_sent_at)
                if stored.record.status != "running":  # settled: done, failed, suspended
                    voids.pop(run_id, None)
                    continue
                running.add(run_id)
                after = self.requeue_after_s
                if _stuck(voids, run_id, stored.record, t, after) and t - rec.sent_at >= after:
                    stuck.append(rec)
        self._latest_started[queue] = latest_started
        for run_id in [r for r in voids if r not in running]:
            del voids[run_id]  # no longer in the index (its bucket expired)
        for minute, items in buckets.items():  # seal closed buckets: unsettled runs only, with a TTL
            if minute >= current - 1:
                continue
            keep = [r for r in _run_ids(items) if r in unresolved or r in running]
            if SEAL in items and len(keep) == len(items) - 1:
                continue
            await self.store.set(_SCOPE, index_key(queue, minute), [*keep, SEAL], ttl=INDEX_WINDOW_S)
        out = [rec.run_id for rec in sorted(stuck, key=lambda r: r.first_sent_at)
               if await self._continue(rec, queue, t, voids)]
        rule = self._lost.setdefault(queue, LostMessages(self.requeue_after_s))
        for rec in rule.check(unresolved.values(), t, lambda: self.waiting(queue), latest_started):
            fresh = await read_record(self.store, rec.run_id)  # another sweeper may have sent it just now
            if fresh is None or fresh.state != "sent" or t - fresh.sent_at < self.requeue_after_s:
                continue
            await mark_resent(self.store, fresh, now=self.now)
            self.send(fresh.spec, fresh.queue or queue)
            log.warning("run %s sent %.0f s ago has not started (its message was most likely lost): sent it again",
                        rec.run_id, t - rec.sent_at)
            out.append(rec.run_id)
        return out

    async def _continue(self, rec: SendRecord, queue: str, t: float, voids: dict[str, tuple[int, float]]) -> bool:
        """Send a continuation of the stuck run ``rec`` (a resume message: no task; a second one
        that finds the run taken retries as :class:`~seamkit_celery.task.LeaseHeld`, one that finds
        it settled only reports it). ``False`` when another sweeper sent something for it just now."""
        from seamkit_celery.task import make_spec

        fresh = await read_record(self.store, rec.run_id)
        if fresh is None or fresh.state != "sent" or t - fresh.sent_at < self.requeue_after_s:
            return False
        spec = rec.spec
        cont = make_spec(str(spec["file"]), None, run_id=rec.run_id, agent=spec.get("agent"))
        if spec.get("child") is not None:  # a child resumed as its tool runs it, in its lineage
            cont["child"] = dict(spec["child"])
        await mark_resent(self.store, fresh, now=self.now)
        voids[rec.run_id] = (voids[rec.run_id][0], t)  # the next one no sooner than requeue_after_s from now
        self.send(cont, fresh.queue or queue)
        log.warning("run %s is running with nobody on it (its worker is gone and its message was not delivered "
                    "again): sent its continuation", rec.run_id)
        return True


def _stuck(voids: dict[str, tuple[int, float]], run_id: str, record: Any, t: float, after_s: float) -> bool:
    """Whether the ``running`` checkpoint ``record`` of ``run_id`` has had a void lease
    (:func:`~seamkit._durability.checkpointer.lease_void`), unchanged, on every sweep for at least
    ``after_s`` seconds (so on two sweeps or more); ``voids`` keeps since when (updated)."""
    from seamkit.plugin import lease_void

    if not lease_void(record.metadata, t):
        voids.pop(run_id, None)
        return False
    seen = voids.get(run_id)
    if seen is None or seen[0] != record.version:
        voids[run_id] = (record.version, t)
        return False
    return t - seen[1] >= after_s


def _run_ids(items: Iterable[Any]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        if isinstance(item, str):
            seen.setdefault(item, None)
    return list(seen)


class SweepThread:
    """Runs a :class:`Sweeper` every ``every_s`` seconds in a daemon thread with its own event loop
    (the worker's main process; its pool processes are not involved). ``open_store``: builds the
    store, in that thread (a store's connections belong to the loop that made them). A sweep that
    fails (the store or the broker away) is logged and tried again next time."""

    def __init__(self, open_store: Callable[[], Any], queues: Sequence[str], *,
                 send: Callable[[Mapping[str, Any], str], None], waiting: Callable[[str], int | None],
                 requeue_after_s: float, every_s: float) -> None:
        import threading

        self.open_store = open_store
        self.queues = list(queues)
        self.send = send
        self.waiting = waiting
        self.requeue_after_s = requeue_after_s
        self.every_s = every_s
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._main, name="seamkit-sweeper", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join(timeout)

    def _main(self) -> None:
        import asyncio

        asyncio.run(self._loop())

    async def _loop(self) -> None:
        import asyncio

        try:
            store = self.open_store()
        except Exception as exc:
            log.error("the sweeper that sends lost runs again cannot open its store (%s); it does not run", exc)
            return
        sweeper = Sweeper(store, self.queues, self.send, self.waiting, self.requeue_after_s)
        try:
            while not self.stopped.is_set():
                try:
                    await sweeper.sweep()
                except Exception as exc:
                    log.warning("sweep for lost runs failed (%s: %s); trying again in %.1f s", type(exc).__name__,
                                exc, self.every_s)
                await asyncio.to_thread(self.stopped.wait, self.every_s)
        finally:
            await store.aclose()
