"""The SQLite backend passes the store and checkpoint conformance suites (a fresh file per test)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from pytest_seamkit.conformance import CheckpointConformance, StoreConformance
from seamkit_sqlite.store import SqliteStore


class TestSqliteStore(StoreConformance):
    @pytest_asyncio.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SqliteStore]:
        backend = SqliteStore(tmp_path / "store.db")
        yield backend
        await backend.aclose()


class TestSqliteMemoryStore(StoreConformance):
    """``:memory:`` is one private database per store object."""

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


class TestSqliteMemoryCheckpoints(CheckpointConformance):
    @pytest_asyncio.fixture
    async def checkpoints(self) -> AsyncIterator[SqliteStore]:
        backend = SqliteStore(":memory:")
        yield backend
        await backend.aclose()
