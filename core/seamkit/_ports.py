"""Ports: what seamkit cannot build itself, as runtime-checkable ``typing.Protocol``s.

A plugin implements a port by shape alone (no base class). ``isinstance(x, LLMPort)`` checks
that the methods exist, not their signatures. Anything buildable from a port plus logic (cache,
idempotency, budget, audit) is a middleware, not a port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

# ClockPort is defined beside the real clock, in the run-context layer below this one: the run
# context holds a clock, and every port call gets the run context (docs/layers.md).
from seamkit._runtime.clock import ClockPort
from seamkit.values import ChatRequest, Delta, LLMResult, Scope, ToolSchema

if TYPE_CHECKING:
    from seamkit._durability.records import CheckpointInfo, CheckpointRecord, StoredCheckpoint
    from seamkit._runtime.context import RunContext

__all__ = [
    "LLMPort",
    "ToolPort",
    "ToolsetPort",
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
    "PROVIDER_FEATURES",
]

PROVIDER_FEATURES: frozenset[str] = frozenset({
    "system_prompt",
    "tools",
    "tool_call_ids",
    "parallel_tool_calls",
    "structured_output",
    "reasoning",
    "images",
    "temperature",
    "credential",
    "service",
})
"""The names a provider may list in its ``features`` (see :class:`LLMPort`)."""


@runtime_checkable
class LLMPort(Protocol):
    """A model provider bound to one model.

    ``stream(request)`` is the primitive: an async iterator of :class:`~seamkit.values.Delta`
    ending with one that carries ``finish_reason``. ``chat(request)`` collects the stream into an
    :class:`~seamkit.values.LLMResult` (``seamkit.middleware.collect_result`` does it for you).
    ``provider`` names the component (``"openai"``), ``model`` the model id.
    Raises :class:`~seamkit.errors.ProviderError` with a failure class on any failure, also in the
    middle of a stream; :class:`~seamkit.errors.UnsupportedFeature` before sending anything when the
    request asks for what the model cannot do.

    Optional attribute read by middlewares: ``price`` (a :class:`~seamkit._pricing.Price`, or
    ``None`` when the model is unpriced; a local model has no ``price`` attribute and reports
    ``cost_source="local"``). Every ``usage`` a provider reports is priced with it
    (:func:`seamkit._pricing.price_usage`).

    Optional attribute ``context_window``: the model's context window in tokens (prompt and
    output); an agent refuses a task estimated over it before the run starts
    (:mod:`seamkit._agent.task_size`; a config's ``n_ctx`` counts too).

    Optional attribute ``features``: a ``frozenset[str]`` of :data:`PROVIDER_FEATURES` names saying
    what the bound model and its API can do (the conformance suite skips, naming the feature, what
    is not declared; a provider without the attribute claims every feature):

    - ``system_prompt``: system messages reach the model as instructions (a system role, the API's
      system field, or where a rendered prompt's chat template puts them), not as a user turn.
    - ``tools``: takes ``tools``, returns tool calls, and sends tool calls and results back.
    - ``tool_call_ids``: the wire format links each tool result to its call by the call's id.
    - ``parallel_tool_calls``: several tool calls in one reply (kept apart by id).
    - ``structured_output``: honours ``output_schema``.
    - ``reasoning``: reports reasoning (``ReasoningBlock`` s or ``reasoning_tokens``).
    - ``images``: sends :class:`~seamkit.values.ImageBlock` inputs.
    - ``temperature``: sends ``temperature``.
    - ``credential``: authenticates with a credential it sends with each request.
    - ``service``: a remote service answering HTTP errors (authentication, quota, rate limits with
      a retry delay, server errors).

    A request asking for ``tools``, ``images``, ``structured_output`` or ``temperature`` that the
    provider does not declare is refused with :class:`~seamkit.errors.UnsupportedFeature` before
    anything is sent, or served with a warning delta saying what was left out; never dropped
    silently.
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

    A tool may also define ``async prepare(ctx) -> str | None``: the agent run calls it once,
    before its first model turn (a resumed run again), and a tool answering a reason (text) is
    not offered in that run, the reason becoming a run warning. For tools whose definition lives
    elsewhere (an MCP server's), so a definition that changed since it was approved never reaches
    the model. A ``prepare`` that raises leaves the tool offered.
    """

    @property
    def schema(self) -> ToolSchema: ...

    def validate(self, arguments: Mapping[str, Any]) -> Mapping[str, Any]: ...

    async def invoke(self, arguments: Mapping[str, Any], ctx: RunContext) -> Any: ...


@runtime_checkable
class ToolsetPort(Protocol):
    """Several tools from one component: every tool of an MCP server, of an OpenAPI document.
    ``tools``: the :class:`ToolPort` s, in the order to offer them. A tool factory may return one
    instead of a single tool; YAML then adds each of its tools to the agent (``approvals``,
    ``disabled_tools`` and ``tool_choice`` name them one by one)."""

    @property
    def tools(self) -> Sequence[ToolPort]: ...


@runtime_checkable
class StorePort(Protocol):
    """A key-value store scoped by :class:`~seamkit.values.Scope` (each scope is its own namespace).

    Values are anything :mod:`seamkit._durability.codec` encodes; they come back equal and of the
    same type. ``ttl`` is in seconds (finite, positive, at least ``ttl_resolution``; anything else
    raises :class:`~seamkit.errors.TTLNotSupported`). An expired key reads as missing.
    Backend failures raise :class:`~seamkit.errors.StoreUnavailable`, never a driver's exception.

    - ``get`` returns ``default`` for a missing or expired key.
    - ``get_or_set`` is single-flight: concurrent misses for one key (in one process) run
      ``producer`` once and all get its value; a raising producer caches nothing and its error
      reaches every waiter.
    - ``delete`` says whether the key existed.
    - ``append`` adds to a list value and returns the new length; ``list`` returns items
      ``[start:stop]`` (``[]`` when missing).
    - ``increment`` adds ``by`` to an integer (missing = 0) atomically and returns the result; a
      non-integer value raises :class:`~seamkit.errors.StoreValueError` and is left unchanged. It
      keeps an existing TTL.
    - ``prune`` deletes expired keys now and returns how many.

    Optional attribute ``persistent: bool`` (read with ``getattr(store, "persistent", True)``):
    whether every acknowledged write (the awaited call returned) outlives this object, its
    ``close()`` and its process, readable by another instance opened on the same location.
    ``False`` for an in-memory store (the CLI then refuses approvals that could never be
    resumed). It is not a protocol member, so a store that predates it still satisfies the port
    and counts as persistent; the conformance suite holds a persistent store to it (reopen,
    another process, a killed writer) and skips those checks for ``persistent = False``.
    """

    ttl_resolution: float

    async def get(self, scope: Scope, key: str, default: Any = None) -> Any: ...

    async def set(self, scope: Scope, key: str, value: Any, *, ttl: float | None = None) -> None: ...

    async def get_or_set(
        self, scope: Scope, key: str, producer: Callable[[], Awaitable[Any]], *, ttl: float | None = None
    ) -> Any: ...

    async def delete(self, scope: Scope, key: str) -> bool: ...

    async def append(self, scope: Scope, key: str, value: Any) -> int: ...

    async def list(self, scope: Scope, key: str, start: int = 0, stop: int | None = None) -> Sequence[Any]: ...

    async def increment(self, scope: Scope, key: str, by: int = 1) -> int: ...

    async def prune(self) -> int: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class CheckpointPort(Protocol):
    """Durable, versioned checkpoints of runs; the storage half of
    :class:`~seamkit._durability.checkpointer.Checkpointer`, which owns the semantics.

    A run's versions are 1, 2, 3, ... Each :class:`~seamkit._durability.records.CheckpointRecord`
    carries a small ``state`` (replaced each version) and ``entries`` appended to the run's log
    (so a step writes what changed, never the whole transcript again). Payloads are codec text
    the port stores verbatim.

    - ``save(record, expected_version=)``: atomically, when the run's latest version equals
      ``expected_version`` (``None``: the run has no versions) store ``record`` (whose ``version``
      must be ``expected_version + 1``, or 1); otherwise raise
      :class:`~seamkit.errors.CheckpointConflict` and write nothing.
    - ``latest`` / ``at_version``: a :class:`~seamkit._durability.records.StoredCheckpoint` (the
      record plus the log up to that version) or ``None``.
    - ``list_versions``: :class:`~seamkit._durability.records.CheckpointInfo` per stored version,
      oldest first. ``list_runs``: the latest version of each run, newest first, optionally only
      one ``status`` or the children of ``parent_run_id``.
    - ``put_write`` / ``pending_writes``: results of one step's tasks (tool call id -> payload)
      recorded as they finish, before the next checkpoint, so a crash does not re-run them.
    - ``delete_run``: everything of a run; says whether it existed.
    - ``prune_runs(keep_last=, finished_before=)``: keep each run's last ``keep_last`` versions (the log
      is kept); delete whole runs whose latest status is ``done`` or ``failed`` and whose latest
      version was created before ``finished_before`` (unix seconds). Returns versions deleted.

    Optional method ``save_many(records, *, expected_version, writes=())``: what ``save`` of each
    of ``records`` (consecutive versions, the first ``expected_version + 1``) and ``put_write`` of
    each :class:`~seamkit._durability.records.PendingWrite` of ``writes`` do, in one call - one
    transaction (one round trip) where the backend can: the records are checked against
    ``expected_version`` and stored all or none (:class:`~seamkit.errors.CheckpointConflict`
    otherwise, and then no write is recorded either). With no records, only the writes are recorded.
    :class:`~seamkit._durability.checkpointer.RunHandle` uses it to store a run's step (the tool
    results, the version after the tool batch and the one after the next model turn) with one
    hand-off; without it, it makes one ``save`` / ``put_write`` call each, in order.

    Method names differ from :class:`StorePort`'s (``delete_run`` / ``prune_runs``) so that one
    backend object can implement both ports.

    Backend failures raise :class:`~seamkit.errors.StoreUnavailable`.

    Optional attribute ``persistent: bool``, as for :class:`StorePort` (absent means ``True``):
    saved versions, logs and pending writes outlive the object and its process.
    """

    async def save(self, record: CheckpointRecord, *, expected_version: int | None) -> None: ...

    async def latest(self, run_id: str) -> StoredCheckpoint | None: ...

    async def at_version(self, run_id: str, version: int) -> StoredCheckpoint | None: ...

    async def list_versions(self, run_id: str) -> Sequence[CheckpointInfo]: ...

    async def list_runs(
        self, *, status: str | None = None, parent_run_id: str | None = None, limit: int = 100
    ) -> Sequence[CheckpointInfo]: ...

    async def put_write(self, run_id: str, version: int, task_id: str, payload: str) -> None: ...

    async def pending_writes(self, run_id: str, version: int) -> Mapping[str, str]: ...

    async def delete_run(self, run_id: str) -> bool: ...

    async def prune_runs(self, *, keep_last: int = 1, finished_before: float | None = None) -> int: ...

    async def aclose(self) -> None: ...


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
    """Fetches a URL's content as text, ``timeout`` in seconds. An implementation that fetches
    URLs a model chose enforces an egress policy itself (seamkit-guardrails-web's
    ``GuardedFetcher``: SSRF checks, DNS pinning, re-checked redirects, size caps)."""

    async def fetch(self, url: str, *, timeout: float | None = None) -> str: ...  # noqa: ASYNC109 - port contract


@runtime_checkable
class SearchPort(Protocol):
    """Web or document search: ``(title, url, snippet)`` best first."""

    async def search(self, query: str, *, limit: int = 5) -> Sequence[tuple[str, str, str]]: ...


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
