"""Conformance suites for backends of :class:`~seamkit.ports.StorePort` and
:class:`~seamkit.ports.CheckpointPort`, and for model providers (:class:`ProviderConformance`,
see :mod:`pytest_seamkit.conformance.provider`).

A backend's test module subclasses a suite and provides a fixture that yields a fresh, empty,
isolated backend instance (and closes it afterwards): ``store`` for :class:`StoreConformance`,
``checkpoints`` for :class:`CheckpointConformance`. Use ``pytest_asyncio.fixture`` so the fixture
works whether or not the project sets ``asyncio_mode = "auto"``::

    import pytest_asyncio
    from pytest_seamkit.conformance import CheckpointConformance, StoreConformance

    class TestMyStore(StoreConformance):
        @pytest_asyncio.fixture
        async def store(self, tmp_path):
            backend = MyStore(path=tmp_path / "db")
            yield backend
            await backend.aclose()

    class TestMyCheckpoints(CheckpointConformance):
        @pytest_asyncio.fixture
        async def checkpoints(self, tmp_path):
            backend = MyStore(path=tmp_path / "db")
            yield backend
            await backend.aclose()

Every test is ``async`` and carries the ``asyncio`` mark (needs pytest-asyncio). The suites use
real time: TTL tests sleep a fraction of a second (longer when the backend's ``ttl_resolution``
is coarse); every other test takes well under a second on a local backend.
"""

from __future__ import annotations

from pytest_seamkit.conformance.checkpoint import CheckpointConformance
from pytest_seamkit.conformance.provider import CONFORMANCE_SECRET, SCENARIOS, ProviderConformance
from pytest_seamkit.conformance.store import StoreConformance

__all__ = ["CONFORMANCE_SECRET", "SCENARIOS", "CheckpointConformance", "ProviderConformance", "StoreConformance"]
