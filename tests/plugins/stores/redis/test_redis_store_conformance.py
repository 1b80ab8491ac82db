"""The StorePort conformance suite on a real Redis server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from pytest_seamkit.conformance import StoreConformance
from seamkit_redis.store import RedisStore


class TestRedisStoreConformance(StoreConformance):
    @pytest_asyncio.fixture
    async def store(self, redis_store: RedisStore) -> AsyncIterator[RedisStore]:
        yield redis_store
