"""Fixtures for the Redis store tests: an isolated :class:`RedisStore` per test (unique prefix) on
the session's throwaway server (``redis_url`` from tests/conftest.py); its keys are removed after."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable

import pytest_asyncio
import redis.asyncio as aioredis
from seamkit_redis.store import RedisStore


async def drop_prefix(url: str, prefix: str) -> int:
    """Delete every key under ``prefix:`` (and the prefix's own index keys); how many."""
    client = aioredis.Redis.from_url(url)
    try:
        keys = [k async for k in client.scan_iter(match=f"{prefix}:*", count=1000)]
        for i in range(0, len(keys), 500):
            await client.delete(*keys[i : i + 500])
        return len(keys)
    finally:
        await client.aclose()


@pytest_asyncio.fixture
async def make_store(redis_url: str) -> AsyncIterator[Callable[..., RedisStore]]:
    """``make_store(prefix=None, **kwargs)``: a RedisStore on the test server; every store made is
    closed and every prefix used is dropped after the test."""
    made: list[RedisStore] = []

    def make(prefix: str | None = None, **kwargs: object) -> RedisStore:
        store = RedisStore(redis_url, prefix=prefix or f"t-{uuid.uuid4().hex[:12]}", **kwargs)  # type: ignore[arg-type]
        made.append(store)
        return store

    yield make
    for store in made:
        await store.aclose()
    for prefix in {s.prefix for s in made}:
        await drop_prefix(redis_url, prefix)


@pytest_asyncio.fixture
async def redis_store(redis_url: str) -> AsyncIterator[RedisStore]:
    prefix = f"t-{uuid.uuid4().hex[:12]}"
    backend = RedisStore(redis_url, prefix=prefix)
    yield backend
    await backend.aclose()
    await drop_prefix(redis_url, prefix)
