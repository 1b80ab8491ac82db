"""The in-memory reference backend of :class:`~seamkit._ports.StorePort` and
:class:`~seamkit._ports.CheckpointPort` (registered as the ``memory`` store).

Nothing survives the process. Values go through :mod:`seamkit._durability.codec` exactly as in the
real backends, so typing, isolation (every read is a fresh copy) and encoding errors match them.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from seamkit._durability import codec
from seamkit._durability.records import (
    FINISHED_STATUSES,
    CheckpointInfo,
    CheckpointRecord,
    StoredCheckpoint,
    scope_namespace,
)
from seamkit._durability.singleflight import SingleFlight
from seamkit._ports import ClockPort
from seamkit.errors import CheckpointConflict, StoreValueError, TTLNotSupported
from seamkit.testing._memory_store_config import MemoryStoreConfig
from seamkit.values import Scope

__all__ = ["MemoryStore", "build"]

_MISSING: Any = object()


@dataclass(slots=True)
class _Entry:
    """A stored value: ``text`` (codec text of a scalar/whole value) or ``items`` (codec texts of
    a list's items, for cheap appends); ``expires`` on the store's monotonic clock or ``None``."""

    text: str | None
    items: list[str] | None
    expires: float | None


@dataclass(slots=True)
class _Run:
    """One run: its kept versions (oldest first), its log, and where each version's log ends."""

    versions: dict[int, CheckpointRecord] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    log_end: dict[int, int] = field(default_factory=dict)
    seq: int = 0  # global save order of the latest version (breaks created_at ties)


class MemoryStore:
    """Both ports in process memory; the reference the conformance suites are checked against.

    ``clock`` supplies ``monotonic()`` seconds for TTLs (default: :func:`time.monotonic`); a
    :class:`~seamkit.testing.FakeClock` makes expiry deterministic. ``ttl_resolution`` is 0.001 s.

    Every operation's critical section runs without awaiting, under a :class:`threading.Lock`, so
    each is atomic across tasks, event loops and threads. ``get_or_set`` is single-flight per
    (scope, key) within one event loop. ``aclose()`` keeps the data (there is no connection).
    """

    #: nothing outlives the process (the CLI refuses approvals that could never be resumed)
    persistent = False

    ttl_resolution: float = 0.001

    def __init__(self, *, clock: ClockPort | None = None) -> None:
        self._now: Callable[[], float] = clock.monotonic if clock is not None else time.monotonic
        self._lock = threading.Lock()
        self._kv: dict[tuple[str, str], _Entry] = {}
        self._flight = SingleFlight()
        self._runs: dict[str, _Run] = {}
        self._writes: dict[str, dict[int, dict[str, str]]] = {}
        self._seq = 0

    def __repr__(self) -> str:
        return f"MemoryStore(keys={len(self._kv)}, runs={len(self._runs)})"

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Nothing to release; the data stays (in-memory, per instance)."""

    # --- StorePort ---------------------------------------------------------------------------

    def _expiry(self, ttl: float | None) -> float | None:
        """The monotonic deadline for ``ttl`` seconds; raises TTLNotSupported for a bad ttl."""
        if ttl is None:
            return None
        if isinstance(ttl, bool) or not isinstance(ttl, int | float):
            raise TTLNotSupported(f"ttl must be a number of seconds or None, got {type(ttl).__name__}")
        if not math.isfinite(ttl) or ttl <= 0:
            raise TTLNotSupported(f"ttl must be finite and positive, got {ttl!r}")
        if ttl < self.ttl_resolution:
            raise TTLNotSupported(f"ttl {ttl!r} s is finer than this store's resolution ({self.ttl_resolution} s)")
        return self._now() + ttl

    def _live(self, k: tuple[str, str]) -> _Entry | None:
        """The entry at ``k`` unless missing or expired (an expired one is dropped). Lock held."""
        entry = self._kv.get(k)
        if entry is None:
            return None
        if entry.expires is not None and entry.expires <= self._now():
            del self._kv[k]
            return None
        return entry

    @staticmethod
    def _decode(entry: _Entry) -> Any:
        if entry.items is not None:
            return [codec.loads(t) for t in entry.items]
        assert entry.text is not None
        return codec.loads(entry.text)

    def _read(self, k: tuple[str, str]) -> Any:
        with self._lock:
            entry = self._live(k)
            if entry is None:
                return _MISSING
            return self._decode(entry)

    async def get(self, scope: Scope, key: str, default: Any = None) -> Any:
        """The value at ``key`` in ``scope`` (a fresh copy), or ``default`` when missing or expired."""
        value = self._read((scope_namespace(scope), key))
        return default if value is _MISSING else value

    async def set(self, scope: Scope, key: str, value: Any, *, ttl: float | None = None) -> None:
        """Store ``value`` (replacing any value and TTL). Raises TTLNotSupported, or the codec's
        error for a value it cannot encode (nothing is stored in either case)."""
        expires = self._expiry(ttl)
        text = codec.dumps(value)
        with self._lock:
            if expires is not None:
                expires = self._now() + ttl  # type: ignore[operator]
            self._kv[(scope_namespace(scope), key)] = _Entry(text, None, expires)

    async def get_or_set(
        self, scope: Scope, key: str, producer: Callable[[], Awaitable[Any]], *, ttl: float | None = None
    ) -> Any:
        """The stored value, or ``await producer()`` stored with ``ttl`` and returned. Concurrent
        misses share one producer run; its exception reaches every waiter and nothing is stored."""
        self._expiry(ttl)
        k = (scope_namespace(scope), key)
        value = self._read(k)
        if value is not _MISSING:
            return value

        async def produce() -> str:
            with self._lock:
                entry = self._live(k)
                if entry is not None and entry.text is not None:
                    return entry.text
                if entry is not None:
                    return codec.dumps(self._decode(entry))
            text = codec.dumps(await producer())
            with self._lock:
                self._kv[k] = _Entry(text, None, None if ttl is None else self._now() + ttl)
            return text

        return codec.loads(await self._flight.run(k, produce))

    async def delete(self, scope: Scope, key: str) -> bool:
        """Remove ``key``; ``True`` when it existed (an expired key did not)."""
        k = (scope_namespace(scope), key)
        with self._lock:
            existed = self._live(k) is not None
            self._kv.pop(k, None)
            return existed

    async def append(self, scope: Scope, key: str, value: Any) -> int:
        """Append ``value`` to the list at ``key`` (created when missing); returns the new length.
        Raises StoreValueError when the stored value is not a list."""
        text = codec.dumps(value)
        k = (scope_namespace(scope), key)
        with self._lock:
            entry = self._live(k)
            if entry is None:
                self._kv[k] = _Entry(None, [text], None)
                return 1
            if entry.items is None:
                assert entry.text is not None
                current = codec.loads(entry.text)
                if type(current) is not list:
                    raise StoreValueError(f"cannot append to {key!r}: it holds a {type(current).__name__}, not a list")
                entry.items = [codec.dumps(item) for item in current]
                entry.text = None
            entry.items.append(text)
            return len(entry.items)

    async def list(self, scope: Scope, key: str, start: int = 0, stop: int | None = None) -> Sequence[Any]:
        """Items ``[start:stop]`` (Python slicing) of the list at ``key``; ``[]`` when missing.
        Raises StoreValueError when the stored value is not a list."""
        k = (scope_namespace(scope), key)
        with self._lock:
            entry = self._live(k)
            if entry is None:
                return []
            if entry.items is not None:
                return [codec.loads(t) for t in entry.items[start:stop]]
        value = self._decode(entry)
        if type(value) is not list:
            raise StoreValueError(f"{key!r} holds a {type(value).__name__}, not a list")
        return value[start:stop]

    async def increment(self, scope: Scope, key: str, by: int = 1) -> int:
        """Add ``by`` to the integer at ``key`` (missing = 0), keeping its TTL; returns the result.
        Raises StoreValueError (value unchanged) when it holds anything but an ``int``."""
        if isinstance(by, bool) or not isinstance(by, int):
            raise TypeError(f"by must be an int, got {type(by).__name__}")
        k = (scope_namespace(scope), key)
        with self._lock:
            entry = self._live(k)
            if entry is None:
                self._kv[k] = _Entry(codec.dumps(by), None, None)
                return by
            current = self._decode(entry)
            if type(current) is not int:
                raise StoreValueError(f"cannot increment {key!r}: it holds a {type(current).__name__}, not an int")
            result: int = current + by
            entry.text = codec.dumps(result)
            return result

    async def prune(self) -> int:
        """Delete expired keys now; returns how many."""
        with self._lock:
            now = self._now()
            dead = [k for k, e in self._kv.items() if e.expires is not None and e.expires <= now]
            for k in dead:
                del self._kv[k]
            return len(dead)

    # --- CheckpointPort ----------------------------------------------------------------------

    async def save(self, record: CheckpointRecord, *, expected_version: int | None) -> None:
        """Store ``record`` when the run's latest version is ``expected_version`` (``None``: no
        versions). Raises CheckpointConflict otherwise, ValueError when ``record.version`` is not
        ``expected_version + 1`` (or 1); nothing is written in either case."""
        if not isinstance(record, CheckpointRecord):
            raise TypeError(f"expected a CheckpointRecord, got {type(record).__name__}")
        with self._lock:
            run = self._runs.get(record.run_id)
            actual = next(reversed(run.versions)) if run is not None and run.versions else None
            if actual != expected_version:
                raise CheckpointConflict(record.run_id, expected_version, actual)
            if record.version != (expected_version or 0) + 1:
                raise ValueError(f"record version {record.version} does not follow expected version {expected_version}")
            if run is None:
                run = self._runs[record.run_id] = _Run()
            run.versions[record.version] = record
            run.log.extend(record.entries)
            run.log_end[record.version] = len(run.log)
            self._seq += 1
            run.seq = self._seq

    def _stored(self, run: _Run, version: int) -> StoredCheckpoint | None:
        record = run.versions.get(version)
        if record is None:
            return None
        return StoredCheckpoint(record, tuple(run.log[: run.log_end[version]]))

    async def latest(self, run_id: str) -> StoredCheckpoint | None:
        """The run's latest version with its whole log, or ``None``."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or not run.versions:
                return None
            return self._stored(run, next(reversed(run.versions)))

    async def at_version(self, run_id: str, version: int) -> StoredCheckpoint | None:
        """Version ``version`` with the log up to it, or ``None`` (unknown or pruned)."""
        with self._lock:
            run = self._runs.get(run_id)
            return None if run is None else self._stored(run, version)

    @staticmethod
    def _info(record: CheckpointRecord) -> CheckpointInfo:
        return CheckpointInfo(
            run_id=record.run_id,
            version=record.version,
            status=record.status,
            parent_run_id=record.parent_run_id,
            metadata=record.metadata,
            created_at=record.created_at,
        )

    async def list_versions(self, run_id: str) -> Sequence[CheckpointInfo]:
        """Headers of the run's stored versions, oldest first (``[]`` for an unknown run)."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                return []
            return [self._info(run.versions[v]) for v in sorted(run.versions)]

    async def list_runs(
        self, *, status: str | None = None, parent_run_id: str | None = None, limit: int = 100
    ) -> Sequence[CheckpointInfo]:
        """The latest version of each run, newest ``created_at`` first, optionally only runs whose
        latest ``status`` matches or the children of ``parent_run_id``; at most ``limit``."""
        with self._lock:
            picked: list[tuple[float, int, CheckpointRecord]] = []
            for run in self._runs.values():
                if not run.versions:
                    continue
                rec = run.versions[next(reversed(run.versions))]
                if status is not None and rec.status != status:
                    continue
                if parent_run_id is not None and rec.parent_run_id != parent_run_id:
                    continue
                picked.append((rec.created_at, run.seq, rec))
        picked.sort(key=lambda t: (t[0], t[1]), reverse=True)
        return [self._info(rec) for _, _, rec in picked[: max(limit, 0)]]

    async def put_write(self, run_id: str, version: int, task_id: str, payload: str) -> None:
        """Record ``payload`` (codec text) for task ``task_id`` of the run's ``version``; a second
        write for the same task replaces the first."""
        if not isinstance(payload, str):
            raise TypeError(f"payload must be codec text (str), got {type(payload).__name__}")
        with self._lock:
            self._writes.setdefault(run_id, {}).setdefault(version, {})[task_id] = payload

    async def pending_writes(self, run_id: str, version: int) -> Mapping[str, str]:
        """Task id -> payload recorded for the run's ``version`` (``{}`` when none)."""
        with self._lock:
            return dict(self._writes.get(run_id, {}).get(version, {}))

    async def delete_run(self, run_id: str) -> bool:
        """Remove every version, log entry and pending write of ``run_id``; ``True`` when it had versions."""
        with self._lock:
            run = self._runs.pop(run_id, None)
            self._writes.pop(run_id, None)
            return run is not None and bool(run.versions)

    async def prune_runs(self, *, keep_last: int = 1, finished_before: float | None = None) -> int:
        """Keep each run's last ``keep_last`` (>= 1) versions (the log stays whole); delete whole
        runs whose latest status is done/failed and latest ``created_at < finished_before`` (unix
        seconds). Returns the number of versions deleted. Raises ValueError for ``keep_last < 1``."""
        if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 1:
            raise ValueError(f"keep_last must be an int of at least 1, got {keep_last!r}")
        deleted = 0
        with self._lock:
            for run_id in list(self._runs):
                run = self._runs[run_id]
                if not run.versions:
                    continue
                latest = run.versions[next(reversed(run.versions))]
                if (
                    finished_before is not None
                    and latest.status in FINISHED_STATUSES
                    and latest.created_at < finished_before
                ):
                    deleted += len(run.versions)
                    del self._runs[run_id]
                    self._writes.pop(run_id, None)
                    continue
                old = sorted(run.versions)[:-keep_last]
                writes = self._writes.get(run_id, {})
                for v in old:
                    del run.versions[v]
                    del run.log_end[v]
                    writes.pop(v, None)
                deleted += len(old)
        return deleted


def build(cfg: MemoryStoreConfig | None = None) -> MemoryStore:
    """Factory of the ``memory`` store component."""
    return MemoryStore()
