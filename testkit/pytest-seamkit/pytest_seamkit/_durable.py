"""Durability checks shared by the store and checkpoint suites: what is written, how it is checked
after the backend is opened again (in this process or another), the child process that reads,
writes and is killed, and the ``persistent`` flag.

:mod:`pytest_seamkit._durable_child` is that child: it reads one JSON
request on stdin (the component as YAML names it, the data to check, the data to write), builds
the backend through the registry (never by unpickling an object), and reports problems on stderr
with exit status 3. In ``crash`` mode it writes forever, printing ``ack N`` on stdout after each
write's awaited call returned, until the suite kills it.

This module imports no pytest: the child needs only seamkit and the backend's distribution.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import itertools
import json
import math
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from seamkit.plugin import CheckpointInfo, CheckpointRecord, StoredCheckpoint, codec
from seamkit.values import Message, Scope, freeze

__all__ = [
    "ChildResult",
    "CrashChild",
    "KillPlan",
    "RoundResult",
    "aclose",
    "build_component",
    "check_checkpoints",
    "check_crash_checkpoints",
    "check_crash_store",
    "check_store",
    "crash_record",
    "crash_run",
    "kill_steps",
    "declared_persistent",
    "open_with",
    "run_child",
    "same",
    "serve",
    "zygote",
    "write_checkpoints",
    "write_store",
]

S = Scope("conformance-durable")
_MISSING: Any = object()

#: the longest a child may take (start-up included), seconds
CHILD_TIMEOUT = 60.0
#: the longest the kill check's child may take, every round included, seconds
CRASH_TIMEOUT = 120.0


# -- helpers -------------------------------------------------------------------------------------


def same(got: Any, want: Any) -> bool:
    """Equal and of the same type at every depth (``True`` is not ``1``, ``1.0`` is not ``1``)."""
    if type(got) is not type(want):
        return False
    if isinstance(want, dict):
        return bool(got.keys() == want.keys()) and all(same(got[k], want[k]) for k in want)
    if isinstance(want, list | tuple):
        return len(got) == len(want) and all(same(g, w) for g, w in zip(got, want, strict=True))
    if isinstance(want, float) and math.isnan(want):
        return math.isnan(got)
    if isinstance(want, datetime):
        return bool(got == want) and bool(got.utcoffset() == want.utcoffset())
    if isinstance(want, Decimal):
        return str(got) == str(want)
    return bool(got == want)


async def aclose(backend: Any) -> None:
    """Close ``backend`` with ``aclose()``, the one closing method of every component (a store with
    only ``close()`` fails the port check: seamkit never calls it)."""
    await backend.aclose()


async def open_with(opener: Callable[[], Any]) -> Any:
    """A new backend instance from an ``open_store`` / ``open_checkpoints`` fixture's callable
    (a coroutine function or a plain one)."""
    backend = opener()
    if inspect.isawaitable(backend):
        backend = await backend
    return backend


def declared_persistent(backend: Any) -> bool:
    """The backend's ``persistent`` flag; ``True`` when it declares none. Raises TypeError for a
    flag that is not a bool."""
    value = getattr(backend, "persistent", True)
    if not isinstance(value, bool):
        raise TypeError(f"{type(backend).__name__}.persistent must be a bool, got {value!r}")
    return value


def build_component(component: Sequence[Any]) -> Any:
    """Build ``(name, config)``: a registered ``store`` component (as YAML's ``use: name``), or a
    ``"module:attr"`` factory called with the config as keyword arguments."""
    name, config = component
    if ":" in name:
        module, _, attr = name.partition(":")
        return getattr(importlib.import_module(module), attr)(**dict(config))
    return _registered(name).build(dict(config))


def _registered(name: str) -> Any:
    """The registered ``store`` component ``name``, or an error saying why a child process cannot
    find it (the plugin is not installed: its entry point exists only once it is)."""
    from seamkit.errors import ComponentNotFound, PluginError
    from seamkit.plugin import get_registry

    try:
        return get_registry().resolve("store", name)
    except ComponentNotFound as exc:
        raise PluginError(
            f"{exc}. The durability checks build the store in another process by its registered name, "
            "so the plugin must be installed (`pip install -e .` in its project: its entry point is "
            "what registers the name), or the fixture (store_component / checkpoints_component) can "
            "give a 'module:attr' factory path instead of a name") from None


# -- the key-value data set ----------------------------------------------------------------------

_VALUES: list[tuple[str, Any]] = [
    ("int", 42),
    ("big-int", 2**70),
    ("negative-int", -7),
    ("float", 0.1),
    ("str", "ключ 🔑 naïve \u0000 end"),
    ("empty-str", ""),
    ("true", True),
    ("false", False),
    ("decimal", Decimal("12.3400")),
    ("datetime", datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)),
    ("bytes", b"\x00\xffbinary"),
    ("none", None),
    ("empty-list", []),
    ("nested", {"a": [1, 2.5, "x", None, True, {"b": []}], "cost": Decimal("0.0012")}),
    ("message", Message.user("hello")),
]
ITEMS: list[Any] = ["first", {"n": 2, "d": Decimal("2.50")}, None, Message.user("fourth")]
_SCOPES: list[Scope] = [
    Scope("durable"),
    Scope("durable", user="u1"),
    Scope("durable", user="u1", thread="t1"),
    Scope("durable|u1"),
    Scope("durable", thread="u1"),
    Scope("durable", user="ключ 🔑"),
    Scope("durable", user="ключ ??"),
]
#: keys a backend's collation, column type or file encoding may merge or mangle: case, length
#: (a 255-character column), trailing spaces (SQL PAD SPACE), Unicode form (NFC and NFD of one
#: text are different keys), non-ASCII text. Each must hold its own value, also after a reopen.
LOOKALIKE_KEYS: list[str] = [
    "key",
    "Key",
    "KEY",
    "straße",
    "STRASSE",
    "strasse",
    "x" * 255,
    "x" * 255 + "1",
    "x" * 255 + "2",
    "x" * 300,
    "pad",
    "pad ",
    "pad  ",
    " pad",
    "caf\u00e9",  # NFC
    "cafe\u0301",  # NFD of the same text
    "\u212b",  # ANGSTROM SIGN, NFC is U+00C5
    "\u00c5",
    "ключ",
    "🔑",
    "?",
    "na\u00efve",
]
COUNTER_END = 43


async def write_store(store: Any, tag: str) -> None:
    """Write the data set ``tag``: typed values, a value with a long TTL, an overwritten key, a
    deleted key, a list built by appends, a counter built by increments, a key in several scopes."""
    for label, value in _VALUES:
        await store.set(S, f"{tag}/value/{label}", value)
    await store.set(S, f"{tag}/ttl", "still here", ttl=3600)
    await store.set(S, f"{tag}/over", "first")
    await store.set(S, f"{tag}/over", {"second": 2})
    await store.set(S, f"{tag}/gone", 1)
    await store.delete(S, f"{tag}/gone")
    for item in ITEMS:
        await store.append(S, f"{tag}/list", item)
    for _ in range(3):
        await store.increment(S, f"{tag}/counter")
    await store.increment(S, f"{tag}/counter", COUNTER_END - 3)
    for i, scope in enumerate(_SCOPES):
        await store.set(scope, f"{tag}/scoped", i)
    for i, key in enumerate(LOOKALIKE_KEYS):
        await store.set(S, f"{tag}/{key}", {"lookalike": i, "key": key})


async def check_store(store: Any, tag: str) -> list[str]:
    """What of the data set ``tag`` ``store`` lost or got wrong; ``[]`` when it is all there."""
    problems: list[str] = []

    def expect(what: str, got: Any, want: Any) -> None:
        if got is _MISSING:
            problems.append(f"{what}: missing (wrote {want!r})")
        elif not same(got, want):
            problems.append(f"{what}: read back {got!r}, wrote {want!r}")

    for label, value in _VALUES:
        expect(f"value {tag}/value/{label}", await store.get(S, f"{tag}/value/{label}", _MISSING), value)
    expect(f"value {tag}/ttl (set with ttl=3600)", await store.get(S, f"{tag}/ttl", _MISSING), "still here")
    expect(f"overwritten {tag}/over", await store.get(S, f"{tag}/over", _MISSING), {"second": 2})
    gone = await store.get(S, f"{tag}/gone", _MISSING)
    if gone is not _MISSING:
        problems.append(f"deleted key {tag}/gone is back: {gone!r}")
    expect(f"list {tag}/list (appended)", list(await store.list(S, f"{tag}/list")), ITEMS)
    expect(f"counter {tag}/counter (incremented)", await store.get(S, f"{tag}/counter", _MISSING), COUNTER_END)
    for i, scope in enumerate(_SCOPES):
        expect(f"value {tag}/scoped in {scope}", await store.get(scope, f"{tag}/scoped", _MISSING), i)
    for i, key in enumerate(LOOKALIKE_KEYS):
        expect(f"value of key {tag + '/' + key!r}", await store.get(S, f"{tag}/{key}", _MISSING),
               {"lookalike": i, "key": key})
    return problems


# -- the checkpoint data set ---------------------------------------------------------------------

T0 = 1_767_225_600.125  # 2026-01-01T00:00:00.125Z, unix seconds


def _rec(run_id: str, version: int, *, status: str = "running", parent: str | None = None,
         created_at: float = T0) -> CheckpointRecord:
    return CheckpointRecord(
        run_id=run_id,
        version=version,
        status=status,
        state=codec.dumps({"state": f"{run_id}/v{version}"}),
        entries=tuple(codec.dumps({"role": "user", "text": f"{run_id}/v{version}/{k}"}) for k in range(version % 3)),
        parent_run_id=parent,
        metadata=freeze({"agent": "durable", "v": version, "ratio": 0.5, "flag": True}),
        created_at=created_at + version,
    )


def _payload(run_id: str, version: int, task: str) -> str:
    return codec.dumps({"result": f"{run_id}/v{version}/{task}", "cost": "0.0012"})


def _runs(tag: str) -> dict[str, list[CheckpointRecord]]:
    """The runs of data set ``tag``: a three-version run, its child, a finished run."""
    base = T0 + (100 if tag.endswith("child") else 0)
    main, child, done = f"{tag}-run", f"{tag}-child", f"{tag}-done"
    return {
        main: [_rec(main, v, status="suspended" if v == 3 else "running", created_at=base) for v in (1, 2, 3)],
        child: [_rec(child, 1, parent=main, created_at=base + 10)],
        done: [_rec(done, 1, created_at=base + 0.5), _rec(done, 2, status="done", created_at=base + 0.5)],
    }


def _writes(tag: str) -> dict[tuple[str, int], dict[str, str]]:
    main = f"{tag}-run"
    return {
        (main, 2): {"call-a": _payload(main, 2, "a")},
        (main, 3): {"call-b": _payload(main, 3, "b"), "call-c": _payload(main, 3, "c2")},
    }


def _info(rec: CheckpointRecord) -> CheckpointInfo:
    return CheckpointInfo(run_id=rec.run_id, version=rec.version, status=rec.status,
                          parent_run_id=rec.parent_run_id, metadata=rec.metadata, created_at=rec.created_at)


async def write_checkpoints(cp: Any, tag: str) -> None:
    """Write the checkpoint data set ``tag``: versioned runs with logs and pending writes (one
    overwritten), and a run that is deleted."""
    for records in _runs(tag).values():
        for rec in records:
            await cp.save(rec, expected_version=None if rec.version == 1 else rec.version - 1)
    main = f"{tag}-run"
    await cp.put_write(main, 2, "call-a", _payload(main, 2, "a"))
    await cp.put_write(main, 3, "call-b", _payload(main, 3, "b"))
    await cp.put_write(main, 3, "call-c", _payload(main, 3, "c1"))
    await cp.put_write(main, 3, "call-c", _payload(main, 3, "c2"))  # the last write wins
    deleted = f"{tag}-deleted"
    await cp.save(_rec(deleted, 1), expected_version=None)
    await cp.put_write(deleted, 1, "call", _payload(deleted, 1, "x"))
    await cp.delete_run(deleted)


def _stored_problem(what: str, got: Any, records: Sequence[CheckpointRecord]) -> str | None:
    want = StoredCheckpoint(records[-1], tuple(e for r in records for e in r.entries))
    if got is None:
        return f"{what}: missing (saved version {want.record.version})"
    if type(got) is not StoredCheckpoint or got != want:
        return f"{what}: read back {got!r}, saved {want!r}"
    if type(got.record.created_at) is not float or type(got.log) is not tuple:
        return f"{what}: created_at must come back a float and log a tuple, got {got!r}"
    return None


async def check_checkpoints(cp: Any, tag: str) -> list[str]:
    """What of the checkpoint data set ``tag`` ``cp`` lost or got wrong; ``[]`` when all is there."""
    problems: list[str] = []
    runs = _runs(tag)
    for run_id, records in runs.items():
        if (p := _stored_problem(f"latest({run_id!r})", await cp.latest(run_id), records)) is not None:
            problems.append(p)
        for k in range(1, len(records) + 1):
            got = await cp.at_version(run_id, k)
            if (p := _stored_problem(f"at_version({run_id!r}, {k})", got, records[:k])) is not None:
                problems.append(p)
        versions = list(await cp.list_versions(run_id))
        if versions != [_info(r) for r in records]:
            problems.append(f"list_versions({run_id!r}): {versions!r}, saved {[r.version for r in records]}")
    for (run_id, version), want in _writes(tag).items():
        got = dict(await cp.pending_writes(run_id, version))
        if got != want:
            problems.append(f"pending_writes({run_id!r}, {version}): {got!r}, wrote {want!r}")
    deleted = f"{tag}-deleted"
    if await cp.latest(deleted) is not None or dict(await cp.pending_writes(deleted, 1)):
        problems.append(f"deleted run {deleted!r} is back")
    listed = [i for i in await cp.list_runs(limit=1000) if i.run_id.startswith(f"{tag}-")]
    want_listed = sorted((_info(r[-1]) for r in runs.values()), key=lambda i: -i.created_at)
    if listed != want_listed:
        problems.append(f"list_runs(): {[(i.run_id, i.version) for i in listed]}, want "
                        f"{[(i.run_id, i.version) for i in want_listed]}")
    children = list(await cp.list_runs(parent_run_id=f"{tag}-run"))
    if children != [_info(runs[f"{tag}-child"][0])]:
        problems.append(f"list_runs(parent_run_id={tag + '-run'!r}): {children!r}")
    done = [i for i in await cp.list_runs(status="done") if i.run_id.startswith(f"{tag}-")]
    if done != [_info(runs[f"{tag}-done"][-1])]:
        problems.append(f"list_runs(status='done'): {done!r}")
    return problems


# -- the crash writer ----------------------------------------------------------------------------
#
# Each round the child (imported once) forks a writer that builds the backend and writes without
# pause, printing ``ack R N`` after write N's awaited calls returned; the suite kills the writer
# (SIGKILL) while a write is in flight, opens the backend again and checks it. A round kills it
# either just before the K-th file-system step (a PEP 578 audit event: open, rename, remove...) of
# the write after the acknowledged ones, where the writer stops and says so (deterministic: every step of a
# write done in Python is a kill point of its own round), or, for writes with no such steps (C
# libraries, sockets), at a random moment of that write.

#: the audit events that mark a step of a write done in Python
IO_EVENTS = frozenset({"open", "os.rename", "os.remove", "os.truncate", "os.mkdir", "os.rmdir", "os.chmod",
                       "os.link", "os.symlink", "shutil.copyfile", "shutil.move"})
#: rounds killed at a random moment of a write
TIMED_ROUNDS = 5
#: the most rounds killed at a step (one round per step of one write, up to this)
MAX_STEP_ROUNDS = 24
#: acknowledged writes before the killed one: at least this many, at most ``MAX_ACKS``
MIN_ACKS, MAX_ACKS = 1, 6


@dataclass(frozen=True, slots=True)
class KillPlan:
    """Round ``round`` (1, 2, ...): kill the writer during write ``acks + 1``, at its ``step``-th
    file-system step (0: at ``phase`` (0..1) of a write's duration, from the moment write
    ``acks`` was acknowledged)."""

    round: int
    acks: int
    step: int
    phase: float


@dataclass(frozen=True, slots=True)
class RoundResult:
    """How a round's writer died: the ``plan``, the writes it ``acked``, where it was killed
    (``how``, for messages), and the file-system ``steps`` of its last acknowledged write."""

    plan: KillPlan
    acked: int
    how: str
    steps: int


def kill_steps(steps: int, rng: random.Random) -> list[int]:
    """The steps after the first at which to kill a write of ``steps`` steps: each of them, or,
    for more than ``MAX_STEP_ROUNDS``, that many spread evenly from a random one."""
    if steps - 1 < MAX_STEP_ROUNDS:
        return list(range(2, steps + 1))
    stride = (steps - 1) / (MAX_STEP_ROUNDS - 1)
    offset = rng.random() * stride
    return sorted({2 + int(offset + i * stride) for i in range(MAX_STEP_ROUNDS - 1)})


def crash_key(round_no: int, n: int) -> str:
    return f"crash/{round_no}/{n}"


def crash_run(round_no: int) -> str:
    return f"crash-{round_no}"


def crash_record(round_no: int, n: int) -> CheckpointRecord:
    return _rec(crash_run(round_no), n)


def crash_payload(round_no: int, n: int) -> str:
    return _payload(crash_run(round_no), n, "w")


async def _crash_write(backend: Any, kind: str, round_no: int, n: int) -> None:
    """Write ``n`` of round ``round_no``: ``set`` + ``append`` + ``increment`` (an overwrite), or
    ``save`` + ``put_write``."""
    if kind == "store":
        await backend.set(S, crash_key(round_no, n), n)
        await backend.append(S, "crash/log", f"{round_no}/{n}")
        await backend.increment(S, "crash/count")
    else:
        await backend.save(crash_record(round_no, n), expected_version=None if n == 1 else n - 1)
        await backend.put_write(crash_run(round_no), n, f"call-{n}", crash_payload(round_no, n))


def _say(line: str) -> None:
    """One line on stdout, in one write (the zygote and its writer share the pipe)."""
    os.write(1, (line.replace("\n", " ") + "\n").encode("utf-8", "replace"))


def _writer(kind: str, component: Sequence[Any], plan: KillPlan) -> None:
    """The forked writer of one round: write forever, stopping at the planned step, and say
    after each write how many steps it had (``ack R N STEPS``)."""
    seen = [0]
    armed = [False]

    def hook(event: str, args: Any) -> None:
        if event in IO_EVENTS:
            seen[0] += 1
            if armed[0] and seen[0] == plan.step:
                _say(f"step {plan.round} {plan.step} {event}")
                time.sleep(CRASH_TIMEOUT)  # the suite kills us here, in the middle of the write

    sys.addaudithook(hook)
    _say(f"writer {plan.round} {os.getpid()}")  # before any ack: the suite can kill it from the first one

    async def main() -> None:
        backend = build_component(component)
        for n in range(1, 1_000_000):
            seen[0] = 0
            armed[0] = bool(plan.step) and n == plan.acks + 1
            await _crash_write(backend, kind, plan.round, n)
            if armed[0]:  # the write had fewer steps than planned
                armed[0] = False
                _say(f"nostep {plan.round} {seen[0]}")
            _say(f"ack {plan.round} {n} {seen[0]}")

    asyncio.run(main())


def _warm(component: Sequence[Any]) -> None:
    """Import the backend's module once, before the writers are forked."""
    name = component[0]
    if ":" in name:
        importlib.import_module(name.partition(":")[0])
        return
    _registered(name).factory_callable()


def zygote(request: Mapping[str, Any]) -> int:
    """Fork a writer for each ``ROUND ACKS STEP`` line on stdin (it says ``writer R PID``, then
    ``ack R N STEPS`` after each write, or ``error R TEXT`` when it raised); report ``dead R
    STATUS`` once it died."""
    kind, component = request["kind"], request["component"]
    _warm(component)
    while line := sys.stdin.readline():
        round_no, acks, step = (int(x) for x in line.split())
        pid = os.fork()
        if pid == 0:  # the writer: never returns into the zygote's code
            code = 0
            try:
                _writer(kind, component, KillPlan(round_no, acks, step, 0.0))
            except BaseException as exc:
                _say(f"error {round_no} {type(exc).__name__}: {exc}")
                code = 3
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        _say(f"dead {round_no} {status}")
    return 0


async def check_crash_store(backend: Any, rounds: Sequence[RoundResult], *, only_last: bool) -> list[str]:
    """What ``backend`` (opened after the kills of ``rounds``) lost or holds half: every
    acknowledged write whole, each killed write absent or present in a prefix of its calls
    (an overwrite whole), nothing after it. ``only_last``: the keys of the last round only (the
    list and the counter of every round)."""
    problems: list[str] = []
    extras = 0
    log = list(await backend.list(S, "crash/log"))
    pos = 0
    for r in rounds:
        rn, a = r.plan.round, r.acked
        where = f"round {rn} ({r.how}, {a} acknowledged)"
        inflight: Any = None  # not read again: checked when its round was the last
        if not only_last or r is rounds[-1]:
            for n in range(1, a + 1):
                got = await backend.get(S, crash_key(rn, n), _MISSING)
                if got is _MISSING or not same(got, n):
                    problems.append(f"{where}: acknowledged set of {crash_key(rn, n)} reads back "
                                    f"{'nothing' if got is _MISSING else repr(got)}")
            inflight = await backend.get(S, crash_key(rn, a + 1), _MISSING)
            if inflight is not _MISSING and not same(inflight, a + 1):
                problems.append(f"{where}: the killed set of {crash_key(rn, a + 1)} is half there: {inflight!r}")
            later = await backend.get(S, crash_key(rn, a + 2), _MISSING)
            if later is not _MISSING:
                problems.append(f"{where}: {crash_key(rn, a + 2)} was never written but reads back {later!r}")
        want = [f"{rn}/{n}" for n in range(1, a + 1)]
        if log[pos:pos + a] != want:
            problems.append(f"{where}: acknowledged appends {want[:1]}..{want[-1:]} to crash/log read back "
                            f"{log[pos:pos + a + 1]!r}")
            return problems
        pos += a
        if pos < len(log) and log[pos] == f"{rn}/{a + 1}":  # the killed write's append
            pos += 1
            extras += 1
            if inflight is _MISSING:
                problems.append(f"{where}: the killed write's append is there but its earlier set is not")
    if pos != len(log):
        problems.append(f"crash/log holds items never appended: {log[pos:pos + 5]!r}")
    total = sum(r.acked for r in rounds)
    count = await backend.get(S, "crash/count", _MISSING)
    if count is _MISSING or type(count) is not int or not total <= count <= total + extras:
        problems.append(f"crash/count, incremented once by each of {total} acknowledged writes (and at most "
                        f"{extras} killed ones), reads back {'nothing' if count is _MISSING else repr(count)}")
    return problems


async def check_crash_checkpoints(backend: Any, r: RoundResult, *, continued: bool = False) -> list[str]:
    """What ``backend`` lost or holds half of round ``r``'s run: every acknowledged save and
    pending write whole; the killed save absent or whole, its pending write absent or whole.
    ``continued``: the suite saved one more version since (check the acknowledged ones only)."""
    problems: list[str] = []
    rn, a = r.plan.round, r.acked
    run = crash_run(rn)
    where = f"round {rn} ({r.how}, {a} acknowledged)"
    latest = await backend.latest(run)
    v = latest.record.version if latest is not None else 0
    if not continued and v not in (a, a + 1):
        problems.append(f"{where}: latest({run!r}) is version {v}, but version {a} was the last acknowledged")
    records = [crash_record(rn, k) for k in range(1, a + 2)]
    top = a if continued else min(max(v, a), a + 1)
    for k in range(1, top + 1):
        got = await backend.at_version(run, k)
        if (p := _stored_problem(f"{where}: at_version({run!r}, {k})", got, records[:k])) is not None:
            problems.append(p)
    for k in range(1, a + 2):
        writes = dict(await backend.pending_writes(run, k))
        want = {f"call-{k}": crash_payload(rn, k)}
        if k <= a and writes != want:
            problems.append(f"{where}: acknowledged pending write of version {k} reads back {writes!r}")
        if k == a + 1 and not continued and writes and (writes != want or v != a + 1):
            problems.append(f"{where}: the killed write's pending write reads back {writes!r} "
                            f"(latest version {v})")
    return problems


# -- running the child ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChildResult:
    """How a child ended: exit ``returncode`` (negative: killed by that signal), the highest
    ``acked`` write (crash mode), and its ``stderr``."""

    returncode: int
    acked: int
    stderr: str

    def explain(self) -> str:
        tail = self.stderr.strip()[-3000:]
        return f"the child process exited with status {self.returncode}" + (f":\n{tail}" if tail else "")


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.setdefault("PYTHONIOENCODING", "utf-8")
    return env


def run_child(request: Mapping[str, Any]) -> ChildResult:
    """Run the child on ``request`` to its end (blocking: call it in a thread)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_seamkit._durable_child"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_child_env(), text=True,
    )
    timer = threading.Timer(CHILD_TIMEOUT, proc.kill)  # a hung child must not hang the suite
    timer.start()
    try:
        _, stderr = proc.communicate(json.dumps(request) + "\n")
        return ChildResult(proc.returncode, 0, stderr)
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


class CrashChild:
    """The crash child of one check (blocking: call :meth:`round` in a thread): a process that
    imports the backend once and forks a writer per round, which the suite kills.

    :param request: ``kind`` and ``component``, as for :func:`serve`.
    :param rng: chooses each round's acknowledged writes and timed kill's moment.
    """

    def __init__(self, request: Mapping[str, Any], rng: random.Random) -> None:
        self.rng = rng
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pytest_seamkit._durable_child"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_child_env(), text=True,
        )
        self._writer: int | None = None
        self._gap = 0.002  # a write's duration, seconds: measured from the acks
        self._timer = threading.Timer(CRASH_TIMEOUT, self._expire)  # a hung child must not hang the suite
        self._timer.start()
        self._send(json.dumps({**request, "action": "crash"}))

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def _line(self) -> list[str]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            stderr = self.proc.stderr.read() if self.proc.stderr is not None else ""
            raise RuntimeError(f"the kill check's child ended early (killed after {CRASH_TIMEOUT:g} s if it "
                               f"ran that long): {ChildResult(self.proc.returncode, 0, stderr).explain()}")
        return line.split(maxsplit=3)

    def _kill(self) -> None:
        if self._writer is not None:
            try:
                os.kill(self._writer, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def round(self, round_no: int, step: int) -> RoundResult:
        """Run round ``round_no``: kill the writer at the ``step``-th file-system step of its
        write after the acknowledged ones (``0``: at a random moment of that write). Raises
        RuntimeError when the writer failed on its own, with what it said."""
        plan = KillPlan(round_no, self.rng.randint(MIN_ACKS, MAX_ACKS), step, self.rng.random())
        self._send(f"{plan.round} {plan.acks} {plan.step}")
        acked, steps, how, times = 0, 0, "", []
        killed = False
        while True:
            word, *rest = self._line()
            if word == "writer":
                self._writer = int(rest[1])
            elif word == "ack":
                acked, steps = int(rest[1]), int(rest[2])
                times.append(time.monotonic())
                if acked == plan.acks and not plan.step and not killed:
                    self._kill_at(plan.phase, times)
                    killed = True
                    how = f"killed {plan.phase:.2f} of a write's time after write {plan.acks} was acknowledged"
            elif word == "step":
                self._kill()
                killed = True
                how = f"killed just before step {plan.step} ({rest[2].strip()}) of write {plan.acks + 1}"
            elif word == "nostep":  # the write had fewer steps: kill at a moment of the next one instead
                self._kill_at(plan.phase, times)
                killed = True
                how = f"killed {plan.phase:.2f} of a write's time after write {plan.acks + 1} was acknowledged"
            elif word == "error":
                raise RuntimeError(f"the crash writer of round {round_no} failed: {' '.join(rest[1:])}")
            elif word == "dead":
                self._writer = None
                status = int(rest[1])
                if not os.WIFSIGNALED(status) or os.WTERMSIG(status) != signal.SIGKILL:
                    raise RuntimeError(f"the crash writer of round {round_no} ended by itself (status {status})")
                return RoundResult(plan, acked, how, steps)

    def _kill_at(self, phase: float, times: Sequence[float]) -> None:
        """Kill ``phase`` of one write's duration (the mean gap between the last acks, the first
        write's left out: it builds the backend) from now."""
        gaps = [b - a for a, b in itertools.pairwise(times[-4:])]
        if gaps:
            self._gap = sum(gaps) / len(gaps)
        time.sleep(phase * self._gap)
        self._kill()

    def _expire(self) -> None:
        """Past ``CRASH_TIMEOUT``: end the writer and the child (the round then fails, saying so)."""
        self._kill()
        self.proc.kill()

    def close(self) -> None:
        self._timer.cancel()
        self._kill()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


async def serve(request: Mapping[str, Any]) -> int:
    """Serve one child ``request``: ``kind`` (``"store"`` / ``"checkpoints"``), ``component``
    (``[name, config]``), and data set tags to ``check`` then ``write``.
    Returns the exit status (3: problems, listed on stderr)."""
    kind = request["kind"]
    backend = build_component(request["component"])
    try:
        check, write = (check_store, write_store) if kind == "store" else (check_checkpoints, write_checkpoints)
        problems = await check(backend, request["check"]) if request.get("check") else []
        if problems:
            sys.stderr.write("".join(f"in another process: {p}\n" for p in problems))
            return 3
        if request.get("write"):
            await write(backend, request["write"])
        return 0
    finally:
        await aclose(backend)
