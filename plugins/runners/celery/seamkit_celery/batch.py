"""``seamkit batch``: many runs of one composition on the queue, resumable, results in input order.

An input file is JSON Lines, one input per line (blank lines are skipped)::

    "summarise report 17"                                   # a text task
    {"task": "summarise report 18", "variables": {"team": "ops"}}

Every input gets the run id ``<batch id>-<index>`` (``index``: its 0-based position among the
inputs), so the same command run again finds the runs it enqueued before: a finished run's
stored outcome is reused, a run still queued or running is waited for (not enqueued again), and
only inputs never enqueued are sent. The batch id defaults to a digest of the input file's bytes
and the composition's path (:func:`default_batch_id`): the same file and composition give the
same batch; an edited input file is a new batch.

What was enqueued is remembered in the composition's checkpoint store (key
``seamkit-batch:<batch id>:queued``, a list of index lists, one per chunk of up to 200 sent),
because a queued run has no checkpoint yet; only those inputs are looked up when the command
starts again. Messages are sent *before* they are recorded, so a crash between the two can only
cause a second message for a run, which runs nothing (a run id runs once).

A message can be lost after it was sent: Celery's Redis transport pops a message and records it
as unacknowledged in two steps, so a worker killed between them (SIGKILL, a machine gone) takes
the message with it, and its run never starts. The broker delivers in about the order it was
sent, so the batch watches for runs *overtaken*: still without a checkpoint while a run sent
later has one. Such a run is sent again ``requeue_after_s`` seconds later (default 60; again every
``requeue_after_s`` while it stays so). A second message is harmless: whichever delivery comes
second finds the run started or finished and runs nothing. ``--requeue`` sends again at once
every run recorded as enqueued that has no checkpoint (after a broker restart that lost its
messages, say).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seamkit.plugin import lease_void

if TYPE_CHECKING:
    from celery import Celery

log = logging.getLogger("seamkit.celery")

__all__ = [
    "BATCH_ID_RE",
    "DEFAULT_REQUEUE_AFTER_S",
    "BatchInputError",
    "BatchItem",
    "BatchMismatch",
    "BatchState",
    "batch_identity",
    "check_identity",
    "default_batch_id",
    "parse_inputs",
    "read_inputs",
    "result_line",
    "run_batch",
    "run_id_of",
    "was_enqueued",
]

#: What a batch id may be made of: it goes into run ids and store keys.
BATCH_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: Statuses a batch stops waiting for: the run will not move without a person (or never).
SETTLED = frozenset({"done", "failed", "suspended"})
_QUEUED_KEY = "seamkit-batch:{batch_id}:queued"
_IDENTITY_KEY = "seamkit-batch:{batch_id}:identity"
_RETRIES_KEY = "seamkit-batch:{batch_id}:retries"
_POLL_CONCURRENCY = 64  # reads in flight at once while polling: the store's pool, not the CPU, limits
#: Seconds a run may stay unstarted after a run sent later started, before it is sent again.
DEFAULT_REQUEUE_AFTER_S = 60.0
_MIN_WINDOW = 64  # unfinished runs read per poll, at least...
_MAX_WINDOW = 5000  # ...and at most


class BatchInputError(ValueError):
    """Bad lines in an input file; ``problems`` are ``FILE:LINE: why`` texts (all of them, up to 20)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        more = f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__("bad input lines, nothing was enqueued:\n" + "\n".join(problems[:20]) + more)


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One input: its ``index`` (0-based, input order), the ``line`` it came from (1-based), the task
    text and its prompt ``variables``."""

    index: int
    line: int
    task: str
    variables: Mapping[str, str] = field(default_factory=dict)


def read_inputs(path: Path) -> tuple[list[BatchItem], list[tuple[int, str]]]:
    """The inputs of the good lines of the JSON Lines file ``path``, and a ``(line, "FILE:LINE:
    why")`` problem for every bad one (see :func:`parse_inputs`), so that a caller can add its
    own checks of the good ones and report every problem of the file at once (a line that is not
    UTF-8, or whose text holds half a UTF-16 surrogate pair, is one of them). Lines end at
    ``\n``, ``\r\n`` or ``\r``. Raises ``FileNotFoundError``."""
    items: list[BatchItem] = []
    problems: list[tuple[int, str]] = []
    for n, data in enumerate(path.read_bytes().splitlines(), start=1):
        where = f"{path}:{n}"
        try:
            raw = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append((n, f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start + 1} of the line)"))
            continue
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append((n, f"{where}: not JSON ({exc.msg}, column {exc.colno}); write a text task as a JSON "
                                'string ("...") or an object {"task": "...", "variables": {...}}'))
            continue
        variables: dict[str, str] = {}
        if isinstance(value, str):
            task = value
        elif isinstance(value, dict):
            unknown = sorted(set(value) - {"task", "variables"})
            raw_task, raw_vars = value.get("task"), value.get("variables") or {}
            if unknown:
                problems.append((n, f"{where}: unknown key {', '.join(map(repr, unknown))} (an input has task, "
                                    "variables)"))
                continue
            if not isinstance(raw_task, str):
                problems.append((n, f"{where}: 'task' must be a string, got {type(raw_task).__name__}"))
                continue
            if not isinstance(raw_vars, dict) or not all(isinstance(v, str) for v in raw_vars.values()):
                problems.append((n, f"{where}: 'variables' must be an object of strings"))
                continue
            task, variables = raw_task, {str(k): v for k, v in raw_vars.items()}
        else:
            problems.append((n, f"{where}: an input is a string (the task) or an object, got {type(value).__name__}"))
            continue
        if not task.strip():
            problems.append((n, f"{where}: the task is empty"))
            continue
        half = _lone_surrogate([task, *variables, *variables.values()])
        if half is not None:
            problems.append((n, f"{where}: the escape {half} is half of a UTF-16 surrogate pair, not a character "
                                "(write the character itself, or both halves of its pair)"))
            continue
        items.append(BatchItem(len(items), n, task, dict(variables)))
    if not items and not problems:
        problems.append((0, f"{path}: no inputs (one JSON string or object per line)"))
    return items, problems


def _lone_surrogate(texts: Sequence[str]) -> str | None:
    """The first code point of ``texts`` that is half a surrogate pair (JSON lets ``"\\ud800"``
    through alone; it cannot be encoded, hashed or sent) as a ``\\uXXXX`` escape, or ``None``."""
    for text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"\\u{ord(text[exc.start]):04x}"
    return None


def parse_inputs(path: Path) -> list[BatchItem]:
    """The inputs of the JSON Lines file ``path``. Raises ``FileNotFoundError``, and
    :class:`BatchInputError` naming every bad line (not JSON, not a string or an object, an object
    without a text ``task``, unknown keys, ``variables`` not an object of strings, not UTF-8, a
    lone surrogate)."""
    items, problems = read_inputs(path)
    if problems:
        raise BatchInputError([p for _, p in problems])
    return items


def default_batch_id(inputs: Path, composition: Path, agent: str | None = None) -> str:
    """``b`` + 16 hex digits of SHA-256 over the input file's bytes, the composition's absolute path
    and the agent name: the same command on the same files names the same batch."""
    h = hashlib.sha256(inputs.read_bytes())
    h.update(b"\0" + str(composition.resolve()).encode() + b"\0" + (agent or "").encode())
    return "b" + h.hexdigest()[:16]


def batch_identity(items: Sequence[BatchItem], composition: Path, agent: str | None = None) -> dict[str, Any]:
    """What a batch id stands for, stored with the batch: ``inputs`` (SHA-256 of the inputs' tasks
    and variables, in order: reformatting the file keeps it, any change of an input changes
    it), ``count``, ``composition`` (absolute path) and ``agent``."""
    h = hashlib.sha256()
    for it in items:
        h.update(json.dumps([it.task, dict(sorted(it.variables.items()))], ensure_ascii=False).encode() + b"\n")
    return {"inputs": h.hexdigest(), "count": len(items), "composition": str(composition.resolve()),
            "agent": agent}


class BatchMismatch(ValueError):
    """A batch id reused for other inputs, another composition or another agent: its stored runs
    belong to what it was started with, so reusing them would give wrong results."""


def check_identity(batch_id: str, recorded: Mapping[str, Any], current: Mapping[str, Any]) -> None:
    """Raise :class:`BatchMismatch` (saying what differs and what to do) unless ``current`` is
    what batch ``batch_id`` was started with (``recorded``)."""
    differs = []
    if (recorded.get("inputs"), recorded.get("count")) != (current["inputs"], current["count"]):
        differs.append(f"other inputs ({current['count']} now, digest {current['inputs'][:12]}; it was started "
                       f"with {recorded.get('count')}, digest {str(recorded.get('inputs'))[:12]})")
    if recorded.get("composition") != current["composition"]:
        differs.append(f"another composition ({current['composition']}; it was started with "
                       f"{recorded.get('composition')})")
    if recorded.get("agent") != current["agent"]:
        differs.append(f"another agent ({current['agent'] or 'the entry agent'}; it was started with "
                       f"{recorded.get('agent') or 'the entry agent'})")
    if differs:
        raise BatchMismatch(f"batch {batch_id} exists for other work: this command has {'; '.join(differs)}. Its "
                            "runs would be reused as the results of these inputs, which would be wrong: give this "
                            "work a new --batch-id (or leave --batch-id out: the default follows the inputs, the "
                            "composition and the agent)")


def run_id_of(batch_id: str, index: int, attempt: int = 0) -> str:
    """The run id of input ``index`` of ``batch_id``; ``attempt`` n > 0: its n-th retry
    (``--retry-failed``), ``<batch id>-<index>-r<n>``."""
    return f"{batch_id}-{index}" + (f"-r{attempt}" if attempt else "")


async def was_enqueued(store: Any, run_id: str) -> bool:
    """Whether ``run_id`` is a batch's run (``<batch id>-<index>``) that the batch recorded as
    enqueued in ``store`` (a batch's runs have no send record: ``seamkit runs wait`` asks this)."""
    from seamkit.values import Scope

    batch_id, sep, index = run_id.rpartition("-")
    if not sep or not index.isdigit() or not BATCH_ID_RE.match(batch_id):
        return False
    chunks = await store.list(Scope(), _QUEUED_KEY.format(batch_id=batch_id))
    return any(int(index) in chunk for chunk in chunks)


# -- state ------------------------------------------------------------------------------------------


@dataclass
class BatchState:
    """What the batch knows of each input, by index: ``status`` (``done``, ``failed``,
    ``suspended``, ``running``, ``queued``: enqueued, no checkpoint yet) and the settled runs'
    outcomes. Kept outside the event loop so an interrupted command can still say how far it got."""

    items: Sequence[BatchItem]
    batch_id: str
    status: dict[int, str] = field(default_factory=dict)
    outcome: dict[int, dict[str, Any]] = field(default_factory=dict)
    enqueued: int = 0
    reused: int = 0
    resent: int = 0
    #: index -> its latest retry (``--retry-failed``); absent: the first run
    attempt: dict[int, int] = field(default_factory=dict)
    retried: int = 0
    #: index -> version of its latest checkpoint, for a ``running`` run whose lease is void
    #: (released, expired, owner gone on this host): nobody is on it at the latest look
    void: dict[int, int] = field(default_factory=dict)
    continued: int = 0

    def run_id(self, index: int) -> str:
        """The run id input ``index`` has now (its latest retry's, if any)."""
        return run_id_of(self.batch_id, index, self.attempt.get(index, 0))

    def count(self, status: str) -> int:
        return sum(1 for s in self.status.values() if s == status)

    @property
    def settled(self) -> int:
        return sum(1 for s in self.status.values() if s in SETTLED)


def _usage(snap: Any) -> tuple[dict[str, Any] | None, str | None]:
    usage = snap.state.get("usage")
    if usage is None or not hasattr(usage, "input_tokens"):
        return None, None
    cost = usage.cost
    cost_text = None if cost is None else format(Decimal(cost), "f")
    return ({"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
             "requests": usage.requests, "cost": cost_text, "cost_source": usage.cost_source}, cost_text)


_ERROR_TYPE_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*): ")


def _error_type(snap: Any) -> str | None:
    """The exception class a failed run stopped on: its checkpoint's error reads ``"Name: text"``."""
    err = snap.state.get("error")
    if isinstance(err, BaseException):
        return type(err).__name__
    m = _ERROR_TYPE_RE.match(err) if isinstance(err, str) else None
    return m.group(1) if m else None


def outcome_with_usage(snap: Any) -> dict[str, Any]:
    """:func:`~seamkit_celery.task.outcome_of` plus ``usage`` (tokens; ``cost`` as exact decimal
    text), ``cost`` and ``error_type``."""
    from seamkit_celery.task import outcome_of

    out = outcome_of(snap)
    out["usage"], out["cost"] = _usage(snap)
    out["error_type"] = _error_type(snap)
    return out


def result_line(item: BatchItem, batch_id: str, status: str, outcome: Mapping[str, Any] | None,
                run_id: str | None = None) -> dict[str, Any]:
    """One line of the results file: ``index``, ``line``, ``run_id``, ``status``, ``stop_reason``,
    ``output``, ``usage``, ``cost`` (USD, exact decimal text, or ``null``), ``error``,
    ``error_type``."""
    o = outcome or {}
    return {"index": item.index, "line": item.line, "run_id": run_id or run_id_of(batch_id, item.index),
            "status": status,
            "stop_reason": o.get("stop_reason"), "output": o.get("output"), "usage": o.get("usage"),
            "cost": o.get("cost"), "error": o.get("error"), "error_type": o.get("error_type")}


def is_success(status: str, outcome: Mapping[str, Any] | None) -> bool:
    """Done with an answer (``stop_reason`` completed, as ``seamkit runs wait`` counts it)."""
    return status == "done" and (outcome or {}).get("stop_reason") in (None, "completed")


# -- running ----------------------------------------------------------------------------------------


def _resend_overtaken(state: BatchState, overtaken: dict[int, float], after_s: float,
                      send: Callable[[int], None]) -> None:
    """Send again each run still without a checkpoint ``after_s`` seconds after a run sent later
    was seen started (then again every ``after_s`` while it stays so)."""
    started = [i for i, s in state.status.items() if s not in ("new", "queued")]
    if not started:
        return
    latest = max(started)
    now = time.monotonic()
    for i, s in state.status.items():
        if s != "queued" or i > latest:
            overtaken.pop(i, None)
            continue
        since = overtaken.setdefault(i, now)
        if now - since >= after_s:
            send(i)
            state.resent += 1
            overtaken[i] = now


def _continue_stuck(state: BatchState, stuck: dict[int, tuple[int, float]], after_s: float,
                    send: Callable[[int], None]) -> None:
    """Send a continuation for each run left ``running`` with nobody on it (a void lease at the
    same checkpoint version) for ``after_s`` seconds (then again every ``after_s`` while it stays
    so): its worker died and the broker's re-delivery of its message never came (a broker that
    lost it). A duplicate finds the run claimed or finished and runs nothing."""
    now = time.monotonic()
    for i in list(stuck):
        if state.void.get(i) != stuck[i][0]:
            stuck.pop(i)
    for i, version in state.void.items():
        seen = stuck.setdefault(i, (version, now))
        if now - seen[1] >= after_s:
            send(i)
            state.continued += 1
            stuck[i] = (version, now)


async def _gather_limited(fns: Sequence[Callable[[], Any]]) -> list[Any]:
    sem = asyncio.Semaphore(_POLL_CONCURRENCY)

    async def one(fn: Callable[[], Any]) -> Any:
        async with sem:
            return await fn()

    return list(await asyncio.gather(*(one(fn) for fn in fns)))


async def _look(cp: Any, state: BatchState, indices: Sequence[int]) -> None:
    """Read the latest checkpoint status of ``indices``; decode the settled ones' outcomes."""
    port = cp.port

    def header(i: int) -> Callable[[], Any]:
        return lambda: port.latest(state.run_id(i))

    stored = await _gather_limited([header(i) for i in indices])
    settled: list[int] = []
    for i, s in zip(indices, stored, strict=True):
        if s is None:  # never enqueued ("new"), or enqueued and not started yet ("queued")
            state.status.setdefault(i, "new")
            continue
        status = s.record.status
        state.void.pop(i, None)
        if status in SETTLED:
            settled.append(i)
        else:
            state.status[i] = "running"
            if lease_void(s.record.metadata, time.time()):
                state.void[i] = s.record.version

    def full(i: int) -> Callable[[], Any]:
        return lambda: cp.latest(state.run_id(i))

    for i, snap in zip(settled, await _gather_limited([full(i) for i in settled]), strict=True):
        state.outcome[i] = outcome_with_usage(snap)
        state.status[i] = snap.status


async def _refuse_collisions(cp: Any, store: Any, file: Path, state: BatchState, new: Sequence[BatchItem]) -> None:
    """Raise :class:`BatchMismatch` (before anything is sent) when a run id this batch is about to
    enqueue for the first time is already taken: it has a send record (``seamkit submit``, an agent
    tool's child) or checkpoints of other work (another file, task or variables; see
    :func:`~seamkit_celery.sent.same_work`: a run this batch sent but did not record before a crash
    is its own). Otherwise the batch would report that other run's outcome as its input's."""
    from seamkit_celery.sent import read_record, same_work

    port = cp.port
    path = str(Path(file).resolve())  # noqa: ASYNC240 (once, cheap) as the task message says it (make_spec)

    def check(it: BatchItem) -> Callable[[], Any]:
        async def one() -> str | None:
            run_id = state.run_id(it.index)
            if await read_record(store, run_id) is not None:
                return f"{run_id} (submitted with seamkit submit or by an agent tool)"
            stored = await port.latest(run_id)
            if stored is not None and not same_work(stored.record.metadata or {}, path, it.task, it.variables):
                return f"{run_id} (it has checkpoints of another task or composition)"
            return None
        return one

    taken = [why for why in await _gather_limited([check(it) for it in new]) if why is not None]
    if taken:
        more = f" and {len(taken) - 3} more" if len(taken) > 3 else ""
        raise BatchMismatch(f"batch {state.batch_id}'s run ids are taken by other runs: {', '.join(taken[:3])}{more}; "
                            "its results would be theirs: give this work a new --batch-id")


async def run_batch(
    app: Celery,
    file: Path,
    items: Sequence[BatchItem],
    state: BatchState,
    *,
    cp: Any,
    store: Any,
    agent: str | None = None,
    queue: str | None = None,
    timeout_s: float | None = None,
    requeue: bool = False,
    retry_failed: bool = False,
    requeue_after_s: float = DEFAULT_REQUEUE_AFTER_S,
    poll_s: float = 0.5,
    on_progress: Callable[[BatchState], None] | None = None,
    interrupted: Callable[[], bool] = lambda: False,
    identity: Mapping[str, Any] | None = None,
) -> None:
    """Enqueue the inputs of ``items`` not enqueued before (``requeue``: also those recorded as
    enqueued that have no checkpoint, e.g. after the broker lost its messages), then poll ``cp``
    until every run is done, failed or suspended, or ``timeout_s`` seconds have passed.
    ``state`` is filled in as it goes. ``store``: the :class:`~seamkit._ports.StorePort` that
    remembers what was enqueued (the checkpoints' store). Uses
    :func:`~seamkit_celery.task.submit` (``check=False``: the caller checked the composition;
    ``record=False``: the batch keeps its own records).
    ``requeue_after_s``: a run still without a checkpoint this long after a run sent later got one
    (it was overtaken: its message was most likely lost, see the module doc) is sent again.
    ``interrupted``: asked between sends and while waiting; when it says yes, ``KeyboardInterrupt``
    is raised there (between store round trips, so the caller's store closes cleanly; the runs
    enqueued so far are recorded first). ``identity``: what the batch id stands for
    (:func:`batch_identity`); stored with the batch the first time, and compared with what is
    stored every next time (:class:`BatchMismatch` before anything is sent when it differs).
    ``retry_failed``: every input whose latest run failed is run again under a new run id
    (:func:`run_id_of` with the next attempt), recorded in the store after it is sent."""
    from seamkit.values import Scope

    from seamkit_celery.task import submit

    key = _QUEUED_KEY.format(batch_id=state.batch_id)
    scope = Scope()
    if identity is not None:
        async def mine() -> Any:
            return dict(identity)

        recorded = await store.get_or_set(scope, _IDENTITY_KEY.format(batch_id=state.batch_id), mine)
        check_identity(state.batch_id, recorded, identity)
    queued = {int(i) for chunk in await store.list(scope, key) for i in chunk}
    retries_key = _RETRIES_KEY.format(batch_id=state.batch_id)
    for chunk in await store.list(scope, retries_key):  # [[index, attempt], ...] per chunk sent
        for i, n in chunk:
            state.attempt[int(i)] = max(int(n), state.attempt.get(int(i), 0))
    for it in items:  # only what was enqueued before can have a checkpoint: read those alone
        state.status.setdefault(it.index, "new")
    await _look(cp, state, [it.index for it in items if it.index in queued])
    for i in queued:
        if state.status.get(i) == "new":
            state.status[i] = "queued"
    retry: set[int] = set()
    if retry_failed:
        for it in items:
            if state.status[it.index] == "failed":
                state.attempt[it.index] = state.attempt.get(it.index, 0) + 1
                state.status[it.index] = "new"
                state.outcome.pop(it.index, None)
                retry.add(it.index)
        state.retried = len(retry)
    state.reused = state.settled
    send = [it for it in items if state.status[it.index] == "new" or (requeue and state.status[it.index] == "queued")]
    await _refuse_collisions(cp, store, file, state, [it for it in send if state.status[it.index] == "new"])
    def send_one(it: BatchItem) -> None:
        submit(app, file, it.task, run_id=state.run_id(it.index), agent=agent,
               variables=it.variables, queue=queue, check=False, record=False)

    for start in range(0, len(send), 200):
        sent = []
        for it in send[start:start + 200]:
            if interrupted():
                break
            send_one(it)
            state.status[it.index] = "queued"
            state.enqueued += 1
            sent.append(it.index)
        queued.update(sent)
        if sent:  # after sending: a record lost in a crash only resends (harmless)
            await store.append(scope, key, sent)
        again = [[i, state.attempt[i]] for i in sent if i in retry]
        if again:  # likewise: a retry lost from the record is retried again under the same run id
            await store.append(scope, retries_key, again)
        if interrupted():
            raise KeyboardInterrupt
        if on_progress is not None:
            on_progress(state)
    by_index = {it.index: it for it in items}
    overtaken: dict[int, float] = {}  # queued run -> when a run sent later was first seen started
    stuck: dict[int, tuple[int, float]] = {}  # running run, nobody on it -> (version, first seen so)

    def send_continuation(i: int) -> None:
        from seamkit_celery.task import _send, make_spec

        _send(app, make_spec(file, None, run_id=state.run_id(i), agent=agent), queue)
        log.warning("batch %s: run %s has been running with nobody on it for %.0f s (its worker died and its "
                    "message did not come back): sent its continuation", state.batch_id, state.run_id(i),
                    requeue_after_s)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    window = _MIN_WINDOW
    while True:
        if on_progress is not None:
            on_progress(state)
        waiting = [it.index for it in items if state.status[it.index] not in SETTLED]
        if not waiting:
            return
        if deadline is not None and time.monotonic() >= deadline:
            await _look(cp, state, waiting)  # every unfinished one, so the results say where each is
            return
        until = time.monotonic() + poll_s if deadline is None else min(time.monotonic() + poll_s, deadline)
        while time.monotonic() < until:  # in short naps: an interruption is seen within 0.1 s
            if interrupted():
                raise KeyboardInterrupt
            await asyncio.sleep(min(0.1, max(0.0, until - time.monotonic())))
        # Workers take messages about in the order they were sent, so the runs that finish next
        # are mostly the earliest unfinished: read a window of those, as wide as twice what the
        # last round found finished (at least _MIN_WINDOW), not all of them: a sweep of 1,000
        # runs costs ~100 ms of CPU, which a poller on the workers' machine takes from them.
        before = state.settled
        await _look(cp, state, waiting[:window])
        window = min(_MAX_WINDOW, max(_MIN_WINDOW, 2 * (state.settled - before) + _MIN_WINDOW))
        _resend_overtaken(state, overtaken, requeue_after_s, lambda i: send_one(by_index[i]))
        _continue_stuck(state, stuck, requeue_after_s, send_continuation)
