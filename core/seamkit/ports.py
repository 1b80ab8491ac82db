"""Ports: what seamkit cannot build itself, as runtime-checkable ``typing.Protocol``s.

A plugin implements a port by shape alone (no base class). ``isinstance(x, LLMPort)`` checks
that the methods exist, not their signatures. Anything buildable from a port plus logic (cache,
idempotency, budget, audit) is a middleware, not a port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from seamkit.values import ChatRequest, Delta, LLMResult, Scope, ToolSchema

if TYPE_CHECKING:
    from seamkit.runtime.context import RunContext

__all__ = [
    "LLMPort",
    "ToolPort",
    "StorePort",
    "CheckpointPort",
    "VectorPort",
    "EmbeddingPort",
    "FetchPort",
    "SearchPort",
    "ClockPort",
    "TracePort",
    "MetricsPort",
    "ObserverPort",
]


@runtime_checkable
class LLMPort(Protocol):
    """A model provider bound to one model.

    ``stream(request)`` is the primitive: an async iterator of :class:`~seamkit.values.Delta`
    ending with one that carries ``finish_reason``. ``chat(request)`` collects the stream into an
    :class:`~seamkit.values.LLMResult` (``seamkit.middleware.collect_result`` does it for you).
    ``provider`` names the component (``"openai"``), ``model`` the model id.
    Raises :class:`~seamkit.errors.ProviderError` with a failure class on any failure, also in the
    middle of a stream.
    """

    provider: str
    model: str

    def stream(self, request: ChatRequest) -> AsyncIterator[Delta]: ...

    async def chat(self, request: ChatRequest) -> LLMResult: ...


@runtime_checkable
class ToolPort(Protocol):
    """A callable tool.

    ``schema`` advertises it. ``validate(arguments)`` returns the validated arguments or raises
    :class:`~seamkit.errors.ToolArgumentError`. ``invoke(arguments, ctx)`` runs it on validated
    arguments and returns a JSON-serialisable value or ``str``; any exception it raises becomes an
    error tool result.
    """

    @property
    def schema(self) -> ToolSchema: ...

    def validate(self, arguments: Mapping[str, Any]) -> Mapping[str, Any]: ...

    async def invoke(self, arguments: Mapping[str, Any], ctx: RunContext) -> Any: ...


@runtime_checkable
class StorePort(Protocol):
    """A key-value store scoped by :class:`~seamkit.values.Scope`. ``ttl`` in seconds. Backend
    failures raise :class:`~seamkit.errors.StoreUnavailable`."""

    async def get(self, scope: Scope, key: str) -> Any | None: ...

    async def set(self, scope: Scope, key: str, value: Any, *, ttl: float | None = None) -> None: ...

    async def delete(self, scope: Scope, key: str) -> bool: ...

    async def increment(self, scope: Scope, key: str, by: int = 1) -> int: ...


@runtime_checkable
class CheckpointPort(Protocol):
    """Durable snapshots of runs. ``save`` takes the version the writer last saw
    (``expected_version``) and returns the new version; a stale writer gets a conflict error."""

    async def save(self, run_id: str, state: Mapping[str, Any], *, expected_version: int | None) -> int: ...

    async def latest(self, run_id: str) -> tuple[int, Mapping[str, Any]] | None: ...

    async def list_versions(self, run_id: str) -> Sequence[int]: ...

    async def delete(self, run_id: str) -> None: ...


@runtime_checkable
class VectorPort(Protocol):
    """A vector index scoped by tenant. ``query`` returns ``(id, score, metadata)`` best first."""

    async def upsert(
        self, scope: Scope, items: Sequence[tuple[str, Sequence[float], Mapping[str, Any]]]
    ) -> None: ...

    async def query(
        self, scope: Scope, vector: Sequence[float], *, k: int = 5, where: Mapping[str, Any] | None = None
    ) -> Sequence[tuple[str, float, Mapping[str, Any]]]: ...


@runtime_checkable
class EmbeddingPort(Protocol):
    """Text to vectors; ``dimensions`` is the vector length."""

    dimensions: int

    async def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]: ...


@runtime_checkable
class FetchPort(Protocol):
    """Fetches a URL's content as text (egress policy is a middleware's concern)."""

    async def fetch(self, url: str, *, timeout: float | None = None) -> str: ...  # noqa: ASYNC109 - port contract


@runtime_checkable
class SearchPort(Protocol):
    """Web or document search: ``(title, url, snippet)`` best first."""

    async def search(self, query: str, *, limit: int = 5) -> Sequence[tuple[str, str, str]]: ...


@runtime_checkable
class ClockPort(Protocol):
    """Time, injectable so tests control it. ``now()`` is timezone-aware UTC; ``monotonic()`` and
    ``sleep()`` are in seconds."""

    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


@runtime_checkable
class TracePort(Protocol):
    """Spans around operations. ``start_span`` returns an opaque handle for ``end_span``;
    attributes must never contain secrets."""

    def start_span(self, name: str, attributes: Mapping[str, Any]) -> Any: ...

    def end_span(self, span: Any, *, error: BaseException | None = None) -> None: ...


@runtime_checkable
class MetricsPort(Protocol):
    """Counters and histograms with string labels."""

    def count(self, name: str, value: float = 1, labels: Mapping[str, str] | None = None) -> None: ...

    def observe(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None: ...


@runtime_checkable
class ObserverPort(Protocol):
    """Receives every :class:`~seamkit.values.StreamEvent` of a run (for UIs, logs, audit)."""

    def on_event(self, event: Any) -> None: ...
