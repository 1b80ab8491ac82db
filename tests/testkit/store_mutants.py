"""Deliberately broken store backends and the conformance suites run against each; not collected
by the normal run (no ``test_`` prefix): test_store_conformance_mutants.py runs this file in a
pytest subprocess and asserts which checks fail for which mutant.

The backends are the in-memory reference store (:class:`~seamkit.testing.memory_store.MemoryStore`)
with one thing wrong:

- :class:`AmnesiacStore`: claims ``persistent = True`` but keeps everything in the instance.
- :class:`ProcessGlobalStore`: claims persistence, keeps everything in a process-global dict (every
  instance in one process shares it, so reopening in-process looks fine; another process sees nothing).
- :class:`FileStore`: a pickle file rewritten (atomically) after every write: the correct control.
- :class:`NeverFlushedStore`: the same file, written only by ``close()``: a killed process loses
  every acknowledged write.
- :class:`ForgetfulCheckpointStore`: flushes every write but never saves pending writes.
- :class:`LossyStore`: drops every 5th ``set`` and ``append`` (declares ``persistent = False``).

``TestSqlite*``: the real SQLite store through the same harness, which must pass.

The child process of the durability checks builds them from ``"store_mutants:NAME"`` (this
directory is on its ``sys.path``, inherited from the pytest process).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pytest_seamkit.conformance import CheckpointConformance, StoreConformance
from seamkit.testing.memory_store import MemoryStore
from seamkit_sqlite.store import SqliteStore

_WRITES = ("set", "get_or_set", "delete", "append", "increment", "prune",
           "save", "put_write", "delete_run", "prune_runs")


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
    """The reference store's state in a pickle file: loaded when built, rewritten (temp file +
    rename) after every write when ``flush_every_write``, and on ``close()``."""

    persistent = True
    flush_every_write = True
    keep_pending_writes = True

    def __init__(self, path: str) -> None:
        super().__init__()
        self._file = Path(path)
        if self._file.exists():
            self._kv, self._runs, self._writes, self._seq = pickle.loads(self._file.read_bytes())

    def _flush(self) -> None:
        writes = self._writes if self.keep_pending_writes else {}
        tmp = self._file.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps((self._kv, self._runs, writes, self._seq)))
        os.replace(tmp, self._file)

    async def aclose(self) -> None:
        self._flush()


def _flushing(name: str) -> Callable[..., Any]:
    async def method(self: FileStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return await getattr(MemoryStore, name)(self, *args, **kwargs)
        finally:
            if self.flush_every_write:
                self._flush()

    method.__name__ = name
    return method


for _name in _WRITES:
    setattr(FileStore, _name, _flushing(_name))


class NeverFlushedStore(FileStore):
    flush_every_write = False


class ForgetfulCheckpointStore(FileStore):
    keep_pending_writes = False


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
TestForgetfulCheckpoints = _suites(ForgetfulCheckpointStore, file=True)[1]
TestLossyStore = _suites(LossyStore, file=False)[0]


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
