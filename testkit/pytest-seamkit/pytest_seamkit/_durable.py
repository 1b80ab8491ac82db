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

import importlib
import inspect
import json
import math
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from seamkit.plugin import CheckpointInfo, CheckpointRecord, StoredCheckpoint, codec
from seamkit.values import Message, Scope, freeze

__all__ = [
    "ChildResult",
    "aclose",
    "build_component",
    "check_checkpoints",
    "check_crash",
    "check_store",
    "declared_persistent",
    "open_with",
    "run_child",
    "same",
    "serve",
    "write_checkpoints",
    "write_store",
]

S = Scope("conformance-durable")
_MISSING: Any = object()

#: acknowledged writes the suite waits for before it kills the crash writer
CRASH_ACKS = 20
#: the longest a child may take (start-up included), seconds
CHILD_TIMEOUT = 60.0


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
    from seamkit.plugin import get_registry

    return get_registry().build("store", name, dict(config))


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

CRASH_RUN = "crash-run"


async def _crash_writes(backend: Any, kind: str) -> None:
    """Write forever (bounded), printing ``ack N`` once the N-th write's awaited calls returned."""
    for n in range(1, 1_000_000):
        if kind == "store":
            await backend.set(S, f"crash/{n}", n)
            await backend.append(S, "crash/log", n)
        else:
            await backend.save(_rec(CRASH_RUN, n), expected_version=None if n == 1 else n - 1)
            await backend.put_write(CRASH_RUN, n, f"call-{n}", _payload(CRASH_RUN, n, "w"))
        sys.stdout.write(f"ack {n}\n")
        sys.stdout.flush()


async def check_crash(backend: Any, kind: str, acked: int) -> list[str]:
    """What of the first ``acked`` crash writes ``backend`` (opened after the kill) lacks."""
    problems: list[str] = []
    if kind == "store":
        for n in range(1, acked + 1):
            got = await backend.get(S, f"crash/{n}", _MISSING)
            if got is _MISSING or not same(got, n):
                problems.append(f"acknowledged set of crash/{n} reads back {'nothing' if got is _MISSING else got!r}")
        log = list(await backend.list(S, "crash/log"))
        if log[:acked] != list(range(1, acked + 1)):
            problems.append(f"acknowledged appends 1..{acked} to crash/log read back {log[: acked + 5]!r}")
        return problems
    latest = await backend.latest(CRASH_RUN)
    version = latest.record.version if latest is not None else 0
    if version < acked:
        problems.append(f"latest({CRASH_RUN!r}) is version {version}, but version {acked} was acknowledged")
    records = [_rec(CRASH_RUN, v) for v in range(1, acked + 1)]
    for v in range(1, acked + 1):
        got = await backend.at_version(CRASH_RUN, v)
        if (p := _stored_problem(f"at_version({CRASH_RUN!r}, {v})", got, records[:v])) is not None:
            problems.append(p)
        writes = dict(await backend.pending_writes(CRASH_RUN, v))
        if writes != {f"call-{v}": _payload(CRASH_RUN, v, "w")}:
            problems.append(f"acknowledged pending write of version {v} reads back {writes!r}")
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


def run_child(request: Mapping[str, Any], *, kill_after: int | None = None) -> ChildResult:
    """Run the child on ``request`` (blocking: call it in a thread). With ``kill_after``, SIGKILL
    it as soon as it acknowledged that many writes."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_seamkit._durable_child"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_child_env(), text=True,
    )
    timer = threading.Timer(CHILD_TIMEOUT, proc.kill)  # a hung child must not hang the suite
    timer.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(json.dumps(request))
        proc.stdin.close()
        if kill_after is None:
            proc.stdout.read()
            stderr = proc.stderr.read()
            return ChildResult(proc.wait(), 0, stderr)
        acked = 0
        for line in proc.stdout:
            if line.startswith("ack "):
                acked = int(line.split()[1])
                if acked >= kill_after:
                    proc.kill()
                    break
        proc.wait()
        return ChildResult(proc.returncode, acked, proc.stderr.read())
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


async def serve(request: Mapping[str, Any]) -> int:
    """Serve one child ``request``: ``kind`` (``"store"`` / ``"checkpoints"``), ``component``
    (``[name, config]``), and ``action: "crash"`` or data set tags to ``check`` then ``write``.
    Returns the exit status (3: problems, listed on stderr)."""
    kind = request["kind"]
    backend = build_component(request["component"])
    try:
        if request.get("action") == "crash":
            await _crash_writes(backend, kind)
            return 0
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
