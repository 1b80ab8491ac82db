"""The store every memoize test runs on: SQLite (a file), Redis and PostgreSQL (the session's
throwaway servers from tests/conftest.py), each isolated per test and removed after."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio


@pytest_asyncio.fixture(params=["sqlite", "redis", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    kind = request.param
    if kind == "sqlite":
        from seamkit_sqlite.store import SqliteStore

        s: Any = SqliteStore(tmp_path / "memo.db")
        yield s
        await s.aclose()
    elif kind == "redis":
        import redis.asyncio as aioredis
        from seamkit_redis.store import RedisStore

        url = request.getfixturevalue("redis_url")
        prefix = f"t-{uuid.uuid4().hex[:12]}"
        s = RedisStore(url, prefix=prefix)
        yield s
        await s.aclose()
        client = aioredis.Redis.from_url(url)
        try:
            keys = [k async for k in client.scan_iter(match=f"{prefix}:*", count=1000)]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()
    else:
        import psycopg
        from seamkit_postgres.config import PostgresConfig
        from seamkit_postgres.store import PostgresStore

        dsn = request.getfixturevalue("postgres_dsn")
        schema = f"t_{uuid.uuid4().hex[:16]}"
        s = PostgresStore(PostgresConfig(dsn=dsn, schema=schema, min_size=1, max_size=4, connect_timeout=10))
        await s.setup()
        yield s
        await s.aclose()
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
