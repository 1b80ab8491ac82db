"""The ``postgres`` store passes the StorePort and CheckpointPort conformance suites on a real server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest_asyncio
from pytest_seamkit.conformance import CheckpointConformance, StoreConformance
from seamkit_postgres.config import PostgresConfig
from seamkit_postgres.store import PostgresStore


async def _fresh_store(dsn: str) -> AsyncIterator[PostgresStore]:
    """A store in its own new schema (set up), dropped afterwards."""
    schema = f"t_{uuid.uuid4().hex[:16]}"
    store = PostgresStore(PostgresConfig(dsn=dsn, schema=schema, min_size=1, max_size=20, connect_timeout=10))
    await store.setup()
    try:
        yield store
    finally:
        await store.aclose()
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


class TestPostgresStoreConformance(StoreConformance):
    @pytest_asyncio.fixture
    async def store(self, postgres_dsn: str) -> AsyncIterator[PostgresStore]:
        async for s in _fresh_store(postgres_dsn):
            yield s


class TestPostgresCheckpointConformance(CheckpointConformance):
    @pytest_asyncio.fixture
    async def checkpoints(self, postgres_dsn: str) -> AsyncIterator[PostgresStore]:
        async for s in _fresh_store(postgres_dsn):
            yield s

