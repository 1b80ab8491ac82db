"""The ``postgres`` store passes the StorePort and CheckpointPort conformance suites on a real server,
including the durability checks (reopened, in another process, after a killed writer)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import psycopg
import pytest
import pytest_asyncio
from pytest_seamkit.conformance import CheckpointConformance, StoreConformance
from seamkit_postgres.config import PostgresConfig
from seamkit_postgres.store import PostgresStore


def _config(dsn: str, schema: str) -> dict[str, Any]:
    return {"dsn": dsn, "schema": schema, "min_size": 1, "max_size": 20, "connect_timeout": 10}


@pytest.fixture
def schema(postgres_dsn: str) -> Iterator[str]:
    """A new schema name for one test, dropped afterwards (after the stores using it closed)."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield name
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


async def _fresh_store(dsn: str, schema: str) -> AsyncIterator[PostgresStore]:
    """A store in its own new schema (set up)."""
    store = PostgresStore(PostgresConfig.model_validate(_config(dsn, schema)))
    await store.setup()
    try:
        yield store
    finally:
        await store.aclose()


def _opener(dsn: str, schema: str) -> Callable[[], PostgresStore]:
    return lambda: PostgresStore(PostgresConfig.model_validate(_config(dsn, schema)))


class TestPostgresStoreConformance(StoreConformance):
    @pytest_asyncio.fixture
    async def store(self, postgres_dsn: str, schema: str) -> AsyncIterator[PostgresStore]:
        async for s in _fresh_store(postgres_dsn, schema):
            yield s

    @pytest.fixture
    def open_store(self, postgres_dsn: str, schema: str) -> Callable[[], PostgresStore]:
        return _opener(postgres_dsn, schema)

    @pytest.fixture
    def store_component(self, postgres_dsn: str, schema: str) -> tuple[str, dict[str, Any]]:
        return ("postgres", _config(postgres_dsn, schema))


class TestPostgresCheckpointConformance(CheckpointConformance):
    @pytest_asyncio.fixture
    async def checkpoints(self, postgres_dsn: str, schema: str) -> AsyncIterator[PostgresStore]:
        async for s in _fresh_store(postgres_dsn, schema):
            yield s

    @pytest.fixture
    def open_checkpoints(self, postgres_dsn: str, schema: str) -> Callable[[], PostgresStore]:
        return _opener(postgres_dsn, schema)

    @pytest.fixture
    def checkpoints_component(self, postgres_dsn: str, schema: str) -> tuple[str, dict[str, Any]]:
        return ("postgres", _config(postgres_dsn, schema))
