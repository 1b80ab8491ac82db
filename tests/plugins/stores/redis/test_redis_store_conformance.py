"""The StorePort conformance suite on a real Redis server, including the durability checks
(another store object and another process on the same prefix, a killed writer)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
from pytest_seamkit.conformance import StoreConformance
from seamkit_redis.store import RedisStore


class TestRedisStoreConformance(StoreConformance):
    @pytest_asyncio.fixture
    async def store(self, redis_store: RedisStore) -> AsyncIterator[RedisStore]:
        yield redis_store

    @pytest.fixture
    def open_store(self, redis_url: str, redis_store: RedisStore) -> Callable[[], RedisStore]:
        return lambda: RedisStore(redis_url, prefix=redis_store.prefix)

    @pytest.fixture
    def store_component(self, redis_url: str, redis_store: RedisStore) -> tuple[str, dict[str, Any]]:
        return ("redis", {"url": redis_url, "prefix": redis_store.prefix})
