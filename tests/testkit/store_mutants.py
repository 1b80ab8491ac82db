"""Deliberately broken store backends and the conformance suites run against each; not collected
by the normal run (no ``test_`` prefix): test_store_conformance_mutants.py runs this file in a
pytest subprocess and asserts which checks fail for which mutant.

The backends are the in-memory reference store (:class:`~seamkit.testing._memory_store.MemoryStore`)
with one thing wrong:

- :class:`AmnesiacStore`: claims ``persistent = True`` but keeps everything in the instance.
- :class:`ProcessGlobalStore`: claims persistence, keeps everything in a process-global dict (every
  instance in one process shares it, so reopening in-process looks fine; another process sees nothing).
- :class:`FileStore`: a pickle file rewritten (atomically) after every write: the correct control.
- :class:`NeverFlushedStore`: the same file, written only by ``close()``: a killed process loses
  every acknowledged write.
- :class:`NaiveDbmStore`: the same state in a ``dbm.dumb`` database, written after every write, with
  no protection against a kill in the middle of one (dbm.dumb renames its index away before writing
  the new one): a process killed there loses every acknowledged write.
- :class:`ForgetfulCheckpointStore`: flushes every write but never saves pending writes.
- :class:`LossyStore`: drops every 5th ``set`` and ``append`` (declares ``persistent = False``).

``TestSqlite*``: the real SQLite store through the same harness, which must pass.

The child process of the durability checks builds them from ``"store_mutants:NAME"`` (this
directory is on its ``sys.path``, inherited from the pytest process).
"""

from __future__ import annotations

import dbm.dumb
import os
import pickle
import time
import unicodedata
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pytest_seamkit.conformance import CheckpointConformance, StoreConformance
from seamkit._durability.records import scope_namespace
from seamkit.errors import StoreUnavailable
from seamkit.testing._memory_store import MemoryStore
from seamkit.values import Scope
from seamkit_sqlite.store import SqliteStore

_WRITES = ("set", "get_or_set", "delete", "append", "increment", "prune",
           "save", "put_write", "delete_run", "prune_runs")
_READS = ("get", "list", "latest", "at_version", "list_versions", "list_runs", "pending_writes")


class AmnesiacStore(MemoryStore):
    persistent = True  # a lie


_GLOBAL: dict[str, Any] = {}


class ProcessGlobalStore(MemoryStore):
    persistent = True  # true only within one process

    def __init__(self, name: str = "shared") -> None:
        super().__init__()
        state = _GLOBAL.setdefault(name, {"kv": {}, "runs": {}, "writes": {}})
        self._kv, self._runs, self._writes = state["kv"], state["runs"], state["writes"]


class FileStore(MemoryStore):
    """The reference store's state in a pickle file: read again before every operation when
    another instance changed it (each write stamps the file with a fresh token), rewritten (temp
    file + rename) after every write when ``flush_every_write``, and on ``close()``. No file lock:
    enough for the suites, which never write from two processes at the same moment."""

    persistent = True
    flush_every_write = True
    keep_pending_writes = True
    reload_every_operation = True

    def __init__(self, path: str) -> None:
        super().__init__()
        self._file = Path(path)
        self._token: str | None = None
        self._load()

    def _load(self) -> None:
        if self._file.exists():
            token, state = pickle.loads(self._file.read_bytes())
            if token != self._token:  # written by another instance (or never read)
                self._token = token
                self._restore(state)

    def _restore(self, state: Any) -> None:
        self._kv, self._runs, self._writes, self._seq = state

    def _state(self) -> Any:
        return (self._kv, self._runs, self._writes if self.keep_pending_writes else {}, self._seq)

    def _flush(self) -> None:
        self._token = uuid.uuid4().hex
        tmp = self._file.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps((self._token, self._state())))
        os.replace(tmp, self._file)

    async def aclose(self) -> None:
        self._flush()


def _flushing(name: str, write: bool) -> Callable[..., Any]:
    async def method(self: FileStore, *args: Any, **kwargs: Any) -> Any:
        if self.reload_every_operation:
            self._load()
        try:
            return await getattr(MemoryStore, name)(self, *args, **kwargs)
        finally:
            if write and self.flush_every_write:
                self._flush()

    method.__name__ = name
    return method


for _name in _WRITES:
    setattr(FileStore, _name, _flushing(_name, True))
for _name in _READS:
    setattr(FileStore, _name, _flushing(_name, False))


class NeverFlushedStore(FileStore):
    flush_every_write = False
    reload_every_operation = False


class NaiveDbmStore(FileStore):
    """The state in one entry of a ``dbm.dumb`` database, as a dbm store without crash protection
    (a newcomer's, with its write-in-progress mark and append-only values taken out). Every write
    ends with dbm.dumb's index rewrite: ``PATH.dir`` renamed to ``PATH.bak``, then a new
    ``PATH.dir`` written; killed between the two, the database opens empty."""

    def _load(self) -> None:
        with dbm.dumb.open(str(self._file), "c") as db:
            raw = db.get(b"state")
        if raw is not None:
            token, state = pickle.loads(raw)
            if token != self._token:
                self._token = token
                self._restore(state)

    def _flush(self) -> None:
        self._token = uuid.uuid4().hex
        with dbm.dumb.open(str(self._file), "c") as db:
            db[b"state"] = pickle.dumps((self._token, self._state()))


class ForgetfulCheckpointStore(FileStore):
    keep_pending_writes = False


class CounterOrderedStore(FileStore):
    """Orders a list's items by a per-instance counter that starts again at 0 for a list found
    when the store was opened: an item appended after a reopen sorts in among the old ones
    (``['a', 'd', 'b', 'c']``), though the new length is right. From an outside tester's report."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._found = set(self._kv)  # the keys there when this instance opened the file
        self._next: dict[Any, int] = {}

    async def append(self, scope: Any, key: str, value: Any) -> int:
        length: int = await FileStore.append(self, scope, key, value)
        k = (scope_namespace(scope), key)
        entry = self._kv[k]
        assert entry.items is not None
        at = self._next.get(k, 0 if k in self._found else length - 1)
        entry.items.insert(min(at, length - 1), entry.items.pop())
        self._next[k] = at + 1
        self._flush()
        return length


class SingleInstanceFileStore(FileStore):
    """Reads the file once, when built (the first example store of stores.md): another open
    instance's writes are never seen, and its next write undoes them."""

    reload_every_operation = False


_HELD: set[str] = set()


class ExclusiveFileStore(FileStore):
    """Correct: holds its file exclusively while open and refuses a second instance with
    StoreUnavailable (within this process: enough for the suites) rather than sharing it."""

    def __init__(self, path: str) -> None:
        if path in _HELD:
            raise StoreUnavailable(f"{path} is in use by another open instance")
        _HELD.add(path)
        self._held = path
        super().__init__(path)

    async def aclose(self) -> None:
        await super().aclose()
        _HELD.discard(self._held)


class ManglingDiskStore(FileStore):
    """Writes keys to the file as ASCII (``?`` for the rest) but keeps its own writes in memory:
    only a reopened instance, or another process, sees keys mangled and merged."""

    def _state(self) -> Any:
        kv, runs, writes, seq = super()._state()
        lossy = {(ns, key.encode("ascii", "replace").decode()): e for (ns, key), e in kv.items()}
        return (lossy, runs, writes, seq)


class RelativeTtlStore(FileStore):
    """Keeps each key's TTL as a duration and arms it again whenever it reads the file: a key's
    life restarts at every reopen (reopened once an hour, a one-hour key never expires)."""

    def __init__(self, path: str) -> None:
        self._ttls: dict[Any, float] = {}
        super().__init__(path)

    def _state(self) -> Any:
        return (*super()._state(), self._ttls)

    def _restore(self, state: Any) -> None:
        *rest, self._ttls = state
        super()._restore(tuple(rest))
        now = time.monotonic()
        for k, ttl in self._ttls.items():
            entry = self._kv.get(k)
            if entry is not None and entry.expires is not None:
                entry.expires = now + ttl

    async def set(self, scope: Any, key: str, value: Any, *, ttl: float | None = None) -> None:
        await super().set(scope, key, value, ttl=ttl)
        if ttl is None:
            self._ttls.pop((scope_namespace(scope), key), None)
        else:
            self._ttls[(scope_namespace(scope), key)] = ttl
        self._flush()


class LossyStore(MemoryStore):
    """Acknowledges every ``set`` and ``append`` but drops every 5th."""

    def __init__(self) -> None:
        super().__init__()
        self._calls = 0

    def _lose(self) -> bool:
        self._calls += 1
        return self._calls % 5 == 0

    async def set(self, scope: Any, key: str, value: Any, *, ttl: float | None = None) -> None:
        if not self._lose():
            await super().set(scope, key, value, ttl=ttl)

    async def append(self, scope: Any, key: str, value: Any) -> int:
        if self._lose():
            return len(await self.list(scope, key)) + 1
        return await super().append(scope, key, value)


def _key_mapping(name: str, fn: Callable[[str], str], doc: str) -> type[MemoryStore]:
    """A MemoryStore whose keys go through ``fn`` first (a backend's collation or column type)."""

    def make(meth: str) -> Callable[..., Any]:
        async def method(self: MemoryStore, scope: Any, key: str, *args: Any, **kwargs: Any) -> Any:
            return await getattr(MemoryStore, meth)(self, scope, fn(key), *args, **kwargs)

        method.__name__ = meth
        return method

    return type(name, (MemoryStore,), {"__doc__": doc, **{m: make(m) for m in _KEYED}})


_KEYED = ("get", "set", "get_or_set", "delete", "append", "list", "increment")

CaseInsensitiveKeysStore = _key_mapping("CaseInsensitiveKeysStore", str.casefold, "MySQL's *_ci collations.")
TruncatedKeysStore = _key_mapping("TruncatedKeysStore", lambda k: k[:255], "A VARCHAR(255) key column.")
TrailingSpaceKeysStore = _key_mapping("TrailingSpaceKeysStore", lambda k: k.rstrip(" "), "SQL PAD SPACE.")
NormalisedKeysStore = _key_mapping(
    "NormalisedKeysStore", lambda k: unicodedata.normalize("NFC", k), "NFC and NFD forms are one key."
)


def _joined(scope: Scope) -> Scope:
    return Scope("|".join(p for p in (scope.tenant, scope.user, scope.thread) if p))


class JoinedScopesStore(MemoryStore):
    """Flattens a scope to ``'|'.join`` of its parts: Scope('acme', user='bob') is
    Scope('acme|bob') is Scope('acme', thread='bob'), one tenant reads another's data."""


def _scoped(meth: str) -> Callable[..., Any]:
    async def method(self: MemoryStore, scope: Scope, *args: Any, **kwargs: Any) -> Any:
        return await getattr(MemoryStore, meth)(self, _joined(scope), *args, **kwargs)

    method.__name__ = meth
    return method


for _name in _KEYED:
    setattr(JoinedScopesStore, _name, _scoped(_name))


class PruneDeletesListsStore(MemoryStore):
    """prune() also deletes every appended list and every counter (live, no TTL)."""

    async def prune(self) -> int:
        n = await super().prune()
        with self._lock:
            for k in [k for k, e in self._kv.items() if e.items is not None]:
                del self._kv[k]
        return n


class FloatCountersStore(MemoryStore):
    """increment() in float arithmetic (a JSON/JS or REAL-column backend): inexact beyond 2**53."""

    async def increment(self, scope: Any, key: str, by: int = 1) -> int:
        current = await self.get(scope, key, 0)
        result = await super().increment(scope, key, by)
        inexact = int(float(current) + float(by))
        if inexact != result:
            await MemoryStore.set(self, scope, key, inexact)
        return inexact


class NativeExpiryStore(MemoryStore):
    """Correct: a backend that removes expired keys by itself (Redis without an expiry index,
    TTL indexes), so prune() finds nothing left to delete and returns 0."""

    async def get(self, scope: Any, key: str, default: Any = None) -> Any:
        await MemoryStore.prune(self)  # the backend's own expiry, before anyone looks
        return await super().get(scope, key, default)

    async def prune(self) -> int:
        await MemoryStore.prune(self)
        return 0


class TiesByRunIdStore(MemoryStore):
    """list_runs breaks created_at ties by run id, not "the later save first"."""

    async def list_runs(self, *, status: str | None = None, parent_run_id: str | None = None,
                        limit: int = 100) -> Any:
        every = await super().list_runs(status=status, parent_run_id=parent_run_id, limit=10**9)
        every = sorted(sorted(every, key=lambda i: i.run_id), key=lambda i: -i.created_at)
        return every[:limit]


# -- the suites, once per mutant ------------------------------------------------------------------


def _suites(cls: type[MemoryStore], *, file: bool) -> tuple[type, type]:
    """A StoreConformance and a CheckpointConformance subclass for ``cls``."""
    component = f"store_mutants:{cls.__name__}"

    def make(tmp_path: Path) -> MemoryStore:
        return cls(str(tmp_path / "db.pickle")) if file else cls()  # type: ignore[call-arg]

    def config(tmp_path: Path) -> dict[str, Any]:
        return {"path": str(tmp_path / "db.pickle")} if file else {}

    class Store(StoreConformance):
        @pytest_asyncio.fixture
        async def store(self, tmp_path: Path) -> AsyncIterator[MemoryStore]:
            _GLOBAL.clear()
            backend = make(tmp_path)
            yield backend
            await backend.aclose()

        @pytest.fixture
        def open_store(self, tmp_path: Path) -> Callable[[], MemoryStore]:
            return lambda: make(tmp_path)

        @pytest.fixture
        def store_component(self, tmp_path: Path) -> tuple[str, dict[str, Any]]:
            return (component, config(tmp_path))

    class Checkpoints(CheckpointConformance):
        @pytest_asyncio.fixture
        async def checkpoints(self, tmp_path: Path) -> AsyncIterator[MemoryStore]:
            _GLOBAL.clear()
            backend = make(tmp_path)
            yield backend
            await backend.aclose()

        @pytest.fixture
        def open_checkpoints(self, tmp_path: Path) -> Callable[[], MemoryStore]:
            return lambda: make(tmp_path)

        @pytest.fixture
        def checkpoints_component(self, tmp_path: Path) -> tuple[str, dict[str, Any]]:
            return (component, config(tmp_path))

    return Store, Checkpoints


TestFileStore, TestFileCheckpoints = _suites(FileStore, file=True)
TestAmnesiacStore, TestAmnesiacCheckpoints = _suites(AmnesiacStore, file=False)
TestProcessGlobalStore = _suites(ProcessGlobalStore, file=False)[0]
TestNeverFlushedStore, TestNeverFlushedCheckpoints = _suites(NeverFlushedStore, file=True)
TestNaiveDbmStore, TestNaiveDbmCheckpoints = _suites(NaiveDbmStore, file=True)
TestForgetfulCheckpoints = _suites(ForgetfulCheckpointStore, file=True)[1]
TestLossyStore = _suites(LossyStore, file=False)[0]
TestSingleInstanceStore, TestSingleInstanceCheckpoints = _suites(SingleInstanceFileStore, file=True)
TestCounterOrderedStore = _suites(CounterOrderedStore, file=True)[0]
TestExclusiveStore, TestExclusiveCheckpoints = _suites(ExclusiveFileStore, file=True)
TestManglingDiskStore = _suites(ManglingDiskStore, file=True)[0]
TestRelativeTtlStore = _suites(RelativeTtlStore, file=True)[0]
TestCaseInsensitiveKeysStore = _suites(CaseInsensitiveKeysStore, file=False)[0]
TestTruncatedKeysStore = _suites(TruncatedKeysStore, file=False)[0]
TestTrailingSpaceKeysStore = _suites(TrailingSpaceKeysStore, file=False)[0]
TestNormalisedKeysStore = _suites(NormalisedKeysStore, file=False)[0]
TestJoinedScopesStore = _suites(JoinedScopesStore, file=False)[0]
TestPruneDeletesListsStore = _suites(PruneDeletesListsStore, file=False)[0]
TestFloatCountersStore = _suites(FloatCountersStore, file=False)[0]
TestNativeExpiryStore = _suites(NativeExpiryStore, file=False)[0]
TestTiesByRunIdCheckpoints = _suites(TiesByRunIdStore, file=False)[1]


# -- an incomplete test class: persistent, but the fixtures the durability checks need are missing


class TestNoOpenerStore(StoreConformance):
    """Declares nothing (so persistent) and gives no ``open_store``: the durability checks fail."""

    @pytest_asyncio.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[MemoryStore]:
        backend = FileStore(str(tmp_path / "db.pickle"))
        yield backend
        await backend.aclose()


class TestNoComponentStore(TestNoOpenerStore):
    """Gives ``open_store`` but no ``store_component``: the checks in another process are skipped."""

    @pytest.fixture
    def open_store(self, tmp_path: Path) -> Callable[[], MemoryStore]:
        return lambda: FileStore(str(tmp_path / "db.pickle"))


class TestSqliteStore(StoreConformance):
    @pytest_asyncio.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SqliteStore]:
        backend = SqliteStore(tmp_path / "db")
        yield backend
        await backend.aclose()

    @pytest.fixture
    def open_store(self, tmp_path: Path) -> Callable[[], SqliteStore]:
        return lambda: SqliteStore(tmp_path / "db")

    @pytest.fixture
    def store_component(self, tmp_path: Path) -> tuple[str, dict[str, Any]]:
        return ("sqlite", {"path": str(tmp_path / "db")})


class TestSqliteCheckpoints(CheckpointConformance):
    @pytest_asyncio.fixture
    async def checkpoints(self, tmp_path: Path) -> AsyncIterator[SqliteStore]:
        backend = SqliteStore(tmp_path / "db")
        yield backend
        await backend.aclose()

    @pytest.fixture
    def open_checkpoints(self, tmp_path: Path) -> Callable[[], SqliteStore]:
        return lambda: SqliteStore(tmp_path / "db")

    @pytest.fixture
    def checkpoints_component(self, tmp_path: Path) -> tuple[str, dict[str, Any]]:
        return ("sqlite", {"path": str(tmp_path / "db")})
