"""The CheckpointPort conformance suite on a real Redis server, including the durability checks
(another store object and another process on the same prefix, a killed writer)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
from pytest_seamkit.conformance import CheckpointConformance
from seamkit_redis.store import RedisStore


class TestRedisCheckpointConformance(CheckpointConformance):
    @pytest_asyncio.fixture
    async def checkpoints(self, redis_store: RedisStore) -> AsyncIterator[RedisStore]:
        yield redis_store

    @pytest.fixture
    def open_checkpoints(self, redis_url: str, redis_store: RedisStore) -> Callable[[], RedisStore]:
        return lambda: RedisStore(redis_url, prefix=redis_store.prefix)

    @pytest.fixture
    def checkpoints_component(self, redis_url: str, redis_store: RedisStore) -> tuple[str, dict[str, Any]]:
        return ("redis", {"url": redis_url, "prefix": redis_store.prefix})
