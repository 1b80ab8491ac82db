"""seamkit's errors.

Every error seamkit raises derives from :class:`SeamkitError`. Retry decisions read a
:class:`FailureClass`, never substrings of messages. A :class:`Failure` is an error as a value
(for ``gather_best_effort`` slots, tool results and checkpoints).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

__all__ = [
    "SeamkitError",
    "FailureClass",
    "Failure",
    "ProviderError",
    "UnsupportedFeature",
    "BudgetExceeded",
    "ToolError",
    "ToolArgumentError",
    "ToolUnavailable",
    "ToolDefinitionError",
    "ChildRunFailed",
    "UnknownToolError",
    "OutputValidationError",
    "RunCancelled",
    "KernelError",
    "StoreUnavailable",
    "InfrastructureUnavailable",
    "StoreValueError",
    "ConfigError",
    "ConfigIssue",
    "PluginError",
    "ComponentNotFound",
    "AmbiguousComponent",
]


class SeamkitError(Exception):
    """Base of every error seamkit raises."""


class FailureClass(enum.StrEnum):
    """Why a call failed, for retry and fallback decisions.

    Permanent: ``authentication``, ``quota``, ``context_length``, ``invalid_request``,
    ``refusal``, ``content_filter``. Transient: ``rate_limited``, ``overloaded``,
    ``server_error``, ``timeout``. ``unknown`` is treated as permanent.
    """

    AUTHENTICATION = "authentication"
    QUOTA = "quota"
    RATE_LIMITED = "rate_limited"
    OVERLOADED = "overloaded"
    SERVER_ERROR = "server_error"
    TIMEOUT = "timeout"
    CONTEXT_LENGTH = "context_length"
    INVALID_REQUEST = "invalid_request"
    REFUSAL = "refusal"
    CONTENT_FILTER = "content_filter"
    UNKNOWN = "unknown"

    @property
    def transient(self) -> bool:
        """``True`` when retrying the same request later may succeed."""
        return self in _TRANSIENT


_TRANSIENT = frozenset(
    {FailureClass.RATE_LIMITED, FailureClass.OVERLOADED, FailureClass.SERVER_ERROR, FailureClass.TIMEOUT}
)


class ProviderError(SeamkitError):
    """A model provider refused or failed a call.

    ``failure_class`` classifies it; ``status`` is the HTTP status (``None`` for in-process
    providers and for errors sent inside a stream); ``retry_after`` is the delay in seconds the
    server asked for as a number (``Retry-After: 2``, ``retry-after-ms``), and ``retry_at`` the
    time it named instead as an HTTP date (an aware UTC ``datetime``; ``Retry-After: Wed, 21 Oct
    2026 07:28:00 GMT``): at most one of them is set, and :meth:`retry_delay` turns either into
    seconds against a clock the caller passes (the run's clock port, so a fake clock controls
    it). ``should_retry`` is the server's own retry advice (the ``x-should-retry: true|false``
    response header OpenAI and Anthropic send; ``None`` when it gave none). ``code`` is the error
    body's type or code as the provider wrote it (``insufficient_quota``, ``overloaded_error``);
    ``param`` the request parameter the error names (OpenAI's ``error.param``, e.g.
    ``response_format``; a dotted path such as ``response_format.type`` when the server named a
    nested one); ``request_id`` the provider's id of the request, for support tickets.
    """

    def __init__(
        self,
        message: str,
        failure_class: FailureClass = FailureClass.UNKNOWN,
        *,
        provider: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        code: str | None = None,
        request_id: str | None = None,
        should_retry: bool | None = None,
        retry_at: datetime | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.failure_class = failure_class
        self.provider = provider
        self.status = status
        self.retry_after = retry_after
        self.code = code
        self.request_id = request_id
        self.should_retry = should_retry
        self.retry_at = retry_at
        self.param = param

    def __str__(self) -> str:
        where = f"{self.provider}: " if self.provider else ""
        return f"{where}{self.failure_class.value}: {self.args[0]}"

    def retry_delay(self, now: datetime) -> float | None:
        """Seconds to wait before sending the request again as the server asked, or ``None`` when
        it did not say: ``retry_after``, else ``retry_at - now`` (``0.0`` for a time already past).
        ``now`` is an aware datetime (a naive one is taken as UTC), normally ``ctx.clock.now()``."""
        if self.retry_after is not None:
            return self.retry_after
        if self.retry_at is None:
            return None
        when = self.retry_at if self.retry_at.tzinfo is not None else self.retry_at.replace(tzinfo=UTC)
        ref = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
        return max(0.0, (when - ref).total_seconds())

    def replace(self, message: str | None = None, failure_class: FailureClass | None = None) -> ProviderError:
        """A copy with another ``message`` and/or ``failure_class`` and every other field kept (the
        copy is not chained to this error; use ``raise copy from self``)."""
        return ProviderError(
            self.args[0] if message is None else message,
            self.failure_class if failure_class is None else failure_class,
            provider=self.provider, status=self.status, retry_after=self.retry_after, code=self.code,
            request_id=self.request_id, should_retry=self.should_retry, retry_at=self.retry_at, param=self.param,
        )


class UnsupportedFeature(SeamkitError, ValueError):
    """A request asks for something the bound model cannot do (a setting it does not accept, a
    JSON Schema construct its structured-output dialect cannot express). Raised before anything is
    sent. ``provider``, ``model``, ``feature`` (the setting or schema construct, e.g.
    ``temperature`` or ``$.properties.x: patternProperties``)."""

    def __init__(self, message: str, *, provider: str | None = None, model: str | None = None,
                 feature: str | None = None) -> None:
        self.provider = provider
        self.model = model
        self.feature = feature
        where = f"{provider}:{model}: " if provider and model else (f"{provider}: " if provider else "")
        super().__init__(where + message)


class BudgetExceeded(SeamkitError):
    """A call was refused before dispatch because its reservation would pass a USD ceiling, or an
    unpriced model was called under a USD ceiling. ``ceiling``, ``spent`` (settled),
    ``reserved`` (held by calls in flight) and ``needed`` (this call's reservation) are USD as
    ``Decimal`` (``needed`` is ``None`` for an unpriced model); ``run_id`` names the ledger."""

    def __init__(self, message: str, *, ceiling: Decimal, spent: Decimal, reserved: Decimal,
                 needed: Decimal | None, run_id: str | None = None) -> None:
        self.ceiling = ceiling
        self.spent = spent
        self.reserved = reserved
        self.needed = needed
        self.run_id = run_id
        super().__init__(message)


class ToolError(SeamkitError):
    """A tool could not be run or failed; the agent loop turns it into an error tool result."""


class ToolUnavailable(ToolError):
    """The system behind a tool could not serve the call: its server died, hung past the call's
    timeout, refused the connection, or the tool's definition changed since it was approved.
    ``tool`` names the tool, ``failure_class`` says why (:class:`FailureClass`: ``timeout``,
    ``server_error``, ``invalid_request``...). With ``stop_run`` the run stops with this error
    (a durable run's checkpoint is marked ``failed``); without, the model gets it as an error
    tool result and the run goes on."""

    def __init__(self, tool: str, message: str, *, failure_class: FailureClass = FailureClass.SERVER_ERROR,
                 stop_run: bool = False) -> None:
        self.tool = tool
        self.failure_class = failure_class
        self.stop_run = stop_run
        super().__init__(message)


class ChildRunFailed(ToolError):
    """An agent tool's (or a workflow agent step's) child run, run elsewhere (a worker queue), failed
    or gave no answer.
    ``run_id`` names the child, ``status`` is its checkpoint's (``failed``, ``suspended``, ``done``
    without an answer), ``failure_class`` the class of its error when it had one."""

    def __init__(self, run_id: str, status: str, message: str, *, failure_class: FailureClass | None = None) -> None:
        self.run_id = run_id
        self.status = status
        self.failure_class = failure_class
        super().__init__(message)


class ToolArgumentError(ToolError):
    """The arguments of a tool call do not match the tool's schema. ``problems`` lists each
    problem as ``"path: message"``."""

    def __init__(self, tool: str, problems: Sequence[str]) -> None:
        self.tool = tool
        self.problems = tuple(problems)
        super().__init__(f"invalid arguments for tool {tool!r}: " + "; ".join(self.problems))


class ToolDefinitionError(SeamkitError, TypeError):
    """A function cannot become a tool as written: no description, ``*args``/``**kwargs``, a
    parameter without a type hint or of a type that cannot be described to a model. A defect of the
    tool's definition, so a composition using a plugin factory that raises it is a configuration
    problem (``seamkit validate`` and ``seamkit run`` report it at the tool's slot, exit 2). A
    ``TypeError``, as ``@tool`` always raised for these."""


class UnknownToolError(ToolError):
    """The model called a tool the agent does not have."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        self.known = tuple(known)
        listed = ", ".join(sorted(self.known)) or "none"
        super().__init__(f"unknown tool {name!r}; available tools: {listed}")


class OutputValidationError(SeamkitError):
    """The model's final answer did not parse or validate against the output type. ``raw`` keeps
    the text the model produced; ``problems`` lists what was wrong."""

    def __init__(self, problems: Sequence[str], raw: str) -> None:
        self.problems = tuple(problems)
        self.raw = raw
        super().__init__("output did not validate: " + "; ".join(self.problems))


class RunCancelled(SeamkitError):
    """A run's cancellation token was cancelled; ``reason`` says why."""

    def __init__(self, reason: str = "cancelled") -> None:
        self.reason = reason
        super().__init__(reason)


class StoreUnavailable(SeamkitError):
    """A store backend could not be reached or failed; never a driver's own exception type."""


class InfrastructureUnavailable(SeamkitError):
    """Something a run needs that is neither its model nor its tools' own systems could not be
    reached: the broker a queued child run is sent through. Not the run's failure, nor a tool's
    answer: a tool call raising it is never shown to the model; it stops the run unfinished, as a
    store outage does (a durable run's checkpoint stays ``running``, resumable; an effect ledger
    marks the call uncertain, so only an idempotent call runs again), and whoever drives the run
    (a queue worker) tries it again later."""


class StoreValueError(SeamkitError):
    """A stored value has the wrong type for the operation (e.g. increment of a non-integer)."""


class TTLNotSupported(SeamkitError, ValueError):
    """A time-to-live the backend cannot honour (not finite, not positive, finer than its
    resolution, or on an operation without expiry); refused rather than silently ignored."""


class CheckpointConflict(SeamkitError):
    """A checkpoint write expected a version that is no longer the run's latest (another writer
    saved first). Nothing was written. ``run_id``, ``expected`` and ``actual`` (latest version,
    ``None`` when the run has none)."""

    def __init__(self, run_id: str, expected: int | None, actual: int | None) -> None:
        self.run_id = run_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"checkpoint conflict on run {run_id!r}: expected latest version {expected}, found {actual}"
        )


class RunNotResumable(SeamkitError):
    """A run cannot be resumed: unknown run id, finished (without ``allow_finished``), already
    resumed by another worker, or not suspended when decisions were given. ``run_id``, ``reason``."""

    def __init__(self, run_id: str, reason: str) -> None:
        self.run_id = run_id
        self.reason = reason
        super().__init__(f"run {run_id!r} cannot be resumed: {reason}")


class CodecError(SeamkitError):
    """A value could not be encoded (at snapshot time) or a payload could not be decoded.
    ``path`` locates the value inside the state (``$.transcript[3].content[0]``); ``reason`` says why."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class EffectUncertain(SeamkitError):
    """An effect's outcome is unknown (its operation raised, or a crash interrupted it after it was
    prepared). It is never retried automatically; a person must decide. ``key`` is its idempotency key."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"effect {key!r} is uncertain: {reason}")


class EffectNotApplied(SeamkitError):
    """Raised by an effect's operation to say it certainly did not happen (e.g. the payment API
    answered 'declined' before charging): the ledger records it as failed and allows a retry."""


class KernelError(SeamkitError):
    """The capability kernel refused something a capability did: a stable ``code`` and the
    offending ``ids`` (capability refs, fact types); the message is safe to show and store."""

    def __init__(self, code: str, ids: tuple[str, ...], message: str) -> None:
        self.code = code
        self.ids = ids
        super().__init__(f"{code} ({', '.join(ids)}): {message}")


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """One problem in a composition: ``path`` (key path such as ``agent.model.temperature``),
    ``message``, and where it is (``file``, 1-based ``line`` and ``column``) when known."""

    message: str
    path: str = ""
    file: str | None = None
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file
            if self.line is not None:
                where += f":{self.line}:{self.column or 1}"
            where += ": "
        key = f"{self.path}: " if self.path else ""
        return f"{where}{key}{self.message}"


class ConfigError(SeamkitError):
    """A composition (YAML) or component configuration is invalid. ``issues`` lists every problem
    found, each with its location."""

    def __init__(self, issues: Sequence[ConfigIssue]) -> None:
        self.issues = tuple(issues)
        count = len(self.issues)
        head = f"{count} problem{'s' if count != 1 else ''} in configuration"
        super().__init__(head + ":\n" + "\n".join(f"  {i}" for i in self.issues))


class PluginError(SeamkitError):
    """A plugin failed to load or to register (raised only under ``SEAMKIT_STRICT_PLUGINS=1``, or
    when a broken component is used)."""


class ComponentNotFound(PluginError):
    """No installed plugin registers a component of that kind and name. ``suggestions`` holds
    close names."""

    def __init__(self, kind: str, name: str, known: Sequence[str], suggestions: Sequence[str] = ()) -> None:
        self.kind = kind
        self.name = name
        self.known = tuple(known)
        self.suggestions = tuple(suggestions)
        hint = f"; did you mean {' or '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        listed = ", ".join(sorted(known)) or "none installed"
        super().__init__(f"no {kind} named {name!r}{hint} (known: {listed})")


class AmbiguousComponent(PluginError):
    """Two or more distributions register the same component name; name one with ``from:``."""

    def __init__(self, kind: str, name: str, distributions: Sequence[str]) -> None:
        self.kind = kind
        self.name = name
        self.distributions = tuple(distributions)
        super().__init__(
            f"{kind} {name!r} is registered by {' and '.join(distributions)}; "
            f"pick one with 'from: <distribution>'"
        )


@dataclass(frozen=True, slots=True)
class Failure:
    """An error as a value: its ``type`` name, ``message``, ``failure_class`` (for provider errors)
    and a formatted ``traceback``. ``Failure.of(exc)`` builds one; the exception itself is not kept,
    so a Failure can be stored and compared."""

    type: str
    message: str
    failure_class: FailureClass | None = None
    traceback: str = ""

    @classmethod
    def of(cls, exc: BaseException) -> Failure:
        import traceback

        fc = getattr(exc, "failure_class", None)
        tb = "".join(traceback.format_exception(exc))
        return cls(type(exc).__name__, str(exc), fc if isinstance(fc, FailureClass) else None, tb)
