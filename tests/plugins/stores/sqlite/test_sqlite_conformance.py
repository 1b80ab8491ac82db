"""The SQLite backend passes the store and checkpoint conformance suites (a fresh file per test),
including the durability checks: reopened, in another process, after a killed writer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pytest_seamkit.conformance import CheckpointConformance, StoreConformance
from seamkit_sqlite.store import SqliteStore


class TestSqliteStore(StoreConformance):
    @pytest_asyncio.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SqliteStore]:
        backend = SqliteStore(tmp_path / "store.db")
        yield backend
        await backend.aclose()

    @pytest.fixture
    def open_store(self, tmp_path: Path) -> Callable[[], SqliteStore]:
        return lambda: SqliteStore(tmp_path / "store.db")

    @pytest.fixture
    def store_component(self, tmp_path: Path) -> tuple[str, dict[str, Any]]:
        return ("sqlite", {"path": str(tmp_path / "store.db")})


class TestSqliteMemoryStore(StoreConformance):
    """``:memory:`` is one private database per store object (``persistent`` is False)."""
    declared_persistent = False  # the durability checks are left out


    @pytest_asyncio.fixture
    async def store(self) -> AsyncIterator[SqliteStore]:
        backend = SqliteStore(":memory:")
        yield backend
        await backend.aclose()


class TestSqliteCheckpoints(CheckpointConformance):
    @pytest_asyncio.fixture
    async def checkpoints(self, tmp_path: Path) -> AsyncIterator[SqliteStore]:
        backend = SqliteStore(tmp_path / "checkpoints.db")
        yield backend
        await backend.aclose()

    @pytest.fixture
    def open_checkpoints(self, tmp_path: Path) -> Callable[[], SqliteStore]:
        return lambda: SqliteStore(tmp_path / "checkpoints.db")

    @pytest.fixture
    def checkpoints_component(self, tmp_path: Path) -> tuple[str, dict[str, Any]]:
        return ("sqlite", {"path": str(tmp_path / "checkpoints.db")})


class TestSqliteMemoryCheckpoints(CheckpointConformance):
    declared_persistent = False  # the durability checks are left out

    @pytest_asyncio.fixture
    async def checkpoints(self) -> AsyncIterator[SqliteStore]:
        backend = SqliteStore(":memory:")
        yield backend
        await backend.aclose()
