"""Conformance suites for backends of :class:`~seamkit._ports.StorePort` and
:class:`~seamkit._ports.CheckpointPort`, and for model providers (:class:`ProviderConformance`,
see :mod:`pytest_seamkit.conformance.provider`; what a provider sends is recorded with
:class:`Recorder` / :class:`RecordingTransport`, see :mod:`pytest_seamkit.conformance.wire`).

A backend's test module subclasses a suite and provides fixtures:

``store`` (:class:`StoreConformance`) / ``checkpoints`` (:class:`CheckpointConformance`)
    a fresh, empty, isolated backend instance, closed afterwards (the suite may close it first:
    ``close()`` must be idempotent).
``open_store`` / ``open_checkpoints``
    a callable, plain or ``async``, returning a **new** instance on the same location as
    ``store`` / ``checkpoints`` (same file, schema, key prefix...). The suite writes through the
    first instance, closes it, opens another with this and checks that everything is there
    (non-ASCII and lookalike keys included; a TTL keeps its original deadline); it also keeps
    both open at once, and each must see the other's writes, with exactly one of two saves of
    one version winning. It closes what it opens.
``store_component`` / ``checkpoints_component``
    ``(name, config)``: the same location as YAML names it, for a child process to build
    (never pickled): ``name`` is a registered store (``"sqlite"``, built through the registry
    like ``use: sqlite``) or a ``"module:attr"`` factory called with the config as keyword
    arguments; ``config`` is a JSON-able mapping. A child reads what the suite wrote and writes
    more; another writes, acknowledging each write on stdout, and is killed with SIGKILL: every
    acknowledged write must be there after reopening.

These durability checks (closed and reopened, two open instances, another process, a killed
writer) apply to a
backend whose ``persistent`` attribute is ``True`` **or absent**. A backend that declares
``persistent = False`` (nothing outlives the instance: an in-memory store) has them skipped,
the reason shown (``... declares persistent=False``). A persistent backend whose class lacks
``open_store`` / ``open_checkpoints`` fails them, saying so; without the ``*_component`` fixture
the checks in another process are skipped with the reason. Use ``pytest_asyncio.fixture`` for
async fixtures so they work whether or not the project sets ``asyncio_mode = "auto"``::

    import pytest
    import pytest_asyncio
    from pytest_seamkit.conformance import CheckpointConformance, StoreConformance

    class TestMyStore(StoreConformance):
        @pytest_asyncio.fixture
        async def store(self, tmp_path):
            backend = MyStore(path=tmp_path / "db")
            yield backend
            await backend.aclose()

        @pytest.fixture
        def open_store(self, tmp_path):
            return lambda: MyStore(path=tmp_path / "db")

        @pytest.fixture
        def store_component(self, tmp_path):
            return ("mystore", {"path": str(tmp_path / "db")})

    class TestMyCheckpoints(CheckpointConformance):
        @pytest_asyncio.fixture
        async def checkpoints(self, tmp_path):
            backend = MyStore(path=tmp_path / "db")
            yield backend
            await backend.aclose()

        @pytest.fixture
        def open_checkpoints(self, tmp_path):
            return lambda: MyStore(path=tmp_path / "db")

        @pytest.fixture
        def checkpoints_component(self, tmp_path):
            return ("mystore", {"path": str(tmp_path / "db")})

Every test is ``async`` and carries the ``asyncio`` mark (needs pytest-asyncio). The suites use
real time: TTL tests sleep a fraction of a second (longer when the backend's ``ttl_resolution``
is coarse); each check in a child process takes about a second (its start-up), the kill check
(writers killed in the middle of a write, round after round) one to a few seconds; every other
test takes well under a second on a local backend. The suite closes stores with ``aclose()``. See
docs/plugins/stores.md for the contract the suites check.
"""

from __future__ import annotations

from pytest_seamkit.conformance.checkpoint import CheckpointConformance
from pytest_seamkit.conformance.provider import (
    CONFORMANCE_SECRET,
    MARKERS,
    SCENARIOS,
    ProviderConformance,
    features_of,
)
from pytest_seamkit.conformance.store import StoreConformance
from pytest_seamkit.conformance.wire import Recorder, SentRequest, WireReply

__all__ = [
    "CONFORMANCE_SECRET",
    "MARKERS",
    "SCENARIOS",
    "CheckpointConformance",
    "ProviderConformance",
    "Recorder",
    "RecordingTransport",
    "SentRequest",
    "StoreConformance",
    "WireReply",
    "features_of",
]


def __getattr__(name: str) -> object:
    # RecordingTransport imports httpx: loaded on first use, so non-HTTP plugins need no httpx
    if name == "RecordingTransport":
        from pytest_seamkit.conformance.transport import RecordingTransport

        return RecordingTransport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
