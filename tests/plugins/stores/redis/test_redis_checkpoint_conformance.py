"""The CheckpointPort conformance suite on a real Redis server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from pytest_seamkit.conformance import CheckpointConformance
from seamkit_redis.store import RedisStore


class TestRedisCheckpointConformance(CheckpointConformance):
    @pytest_asyncio.fixture
    async def checkpoints(self, redis_store: RedisStore) -> AsyncIterator[RedisStore]:
        yield redis_store
