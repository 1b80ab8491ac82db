"""The in-memory reference backend passes both conformance suites, and registers as ``memory``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from pydantic import ValidationError
from pytest_seamkit.conformance import CheckpointConformance, StoreConformance
from seamkit._durability.records import CheckpointRecord
from seamkit._plugins.registry import get_registry
from seamkit._ports import CheckpointPort, StorePort
from seamkit.testing._clock import FakeClock
from seamkit.testing._memory_store import MemoryStore
from seamkit.values import Scope


class TestMemoryStoreConformance(StoreConformance):
    declared_persistent = False  # the durability checks are left out

    @pytest_asyncio.fixture
    async def store(self) -> AsyncIterator[MemoryStore]:
        backend = MemoryStore()
        yield backend
        await backend.aclose()


class TestMemoryCheckpointConformance(CheckpointConformance):
    declared_persistent = False  # the durability checks are left out
    declared_save_many = False  # and so are save_many's (an optional method it does not have)

    @pytest_asyncio.fixture
    async def checkpoints(self) -> AsyncIterator[MemoryStore]:
        async with MemoryStore() as backend:
            yield backend


def test_registered_as_the_memory_store() -> None:
    spec = get_registry().resolve("store", "memory")
    backend = spec.build({})
    assert isinstance(backend, MemoryStore)
    assert isinstance(backend, StorePort) and isinstance(backend, CheckpointPort)
    config_model = spec.config_model()
    assert config_model is not None
    with pytest.raises(ValidationError):
        config_model.model_validate({"path": "x"})


async def test_fake_clock_drives_expiry_without_sleeping() -> None:
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    scope = Scope("t")
    await store.set(scope, "k", 1, ttl=10)
    await store.set(scope, "untouched", 2, ttl=10)
    await store.set(scope, "later", 3, ttl=20)
    clock.advance(9.999)
    assert await store.get(scope, "k") == 1
    clock.advance(0.001)
    assert await store.get(scope, "k", "gone") == "gone"  # a read drops an expired key at once
    assert await store.prune() == 1
    assert await store.get(scope, "later") == 3


async def test_both_ports_on_one_object_keep_their_data_apart() -> None:
    store = MemoryStore()
    scope = Scope("t")
    await store.set(scope, "run-1", 1)
    await store.save(CheckpointRecord("run-1", 1, "done", "{}", created_at=1.0), expected_version=None)
    assert await store.delete_run("run-1") is True
    assert await store.get(scope, "run-1") == 1
    await store.save(CheckpointRecord("run-1", 1, "done", "{}", created_at=1.0), expected_version=None)
    assert await store.delete(scope, "run-1") is True
    assert await store.latest("run-1") is not None
    await store.set(scope, "short", 1, ttl=0.001)
    await asyncio.sleep(0.01)
    assert await store.prune() == 1
    assert await store.latest("run-1") is not None
    assert await store.prune_runs(finished_before=2.0) == 1
    with pytest.raises(ValueError):
        await store.prune_runs(keep_last=0)
