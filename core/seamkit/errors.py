"""seamkit's errors: every error class an application or a plugin catches or raises, in one tree.

Every error seamkit raises derives from :class:`SeamkitError`. Retry decisions read a
:class:`FailureClass`, never substrings of messages. A :class:`Failure` is an error as a value
(for ``gather_best_effort`` slots, tool results and checkpoints). Catch a family base where any
member calls for the same handling (``except StoreError``: the backend let us down)::

    SeamkitError
    ├── ProviderError                 a model provider refused or failed a call (.failure_class)
    ├── UnsupportedFeature            (also ValueError) a request asks what the provider cannot do
    ├── ToolError                     a tool failed; the model sees the message
    │   ├── ToolUnavailable           the tool's own system could not be reached
    │   ├── ToolArgumentError         the model's arguments did not validate
    │   ├── UnknownToolError          the model called a tool that does not exist
    │   └── ChildRunFailed            an agent used as a tool ended without an answer
    ├── ToolDefinitionError           (also TypeError) a function cannot be a tool
    ├── AgentDefinitionError          (also TypeError, ValueError) an Agent(...) argument is wrong
    ├── OutputValidationError         the final answer did not validate (.problems, .raw)
    ├── RunError                      a run stopped without an answer
    │   ├── RunCancelled              its cancellation token was cancelled
    │   ├── RunNotResumable           resume refused (unknown, finished, taken, not suspended)
    │   ├── BudgetExceeded            a USD ceiling refused a call
    │   ├── GuardrailTripped          a guardrail blocked it (or failed closed)
    │   └── EffectUncertain           an effect's outcome is unknown; a person must decide
    ├── EffectNotApplied              raised by an effect's operation: it certainly did not happen
    ├── StoreError                    a store or checkpoint backend failed or refused
    │   ├── StoreUnavailable          the backend could not be reached
    │   ├── StoreValueError           a stored value has the wrong type for the operation
    │   ├── TTLNotSupported           (also ValueError) a time-to-live the backend cannot honour
    │   └── CheckpointConflict        another writer saved the run's checkpoint first
    ├── CodecError                    a value could not be encoded, or a payload decoded
    ├── InfrastructureUnavailable     a broker a run needs could not be reached
    ├── KernelError                   the capability kernel refused what a capability did
    ├── ConfigError                   a composition is invalid (.issues: ConfigIssue, located)
    │   └── ComponentBuildError       a valid composition's component could not be built
    ├── PluginError                   a plugin could not be loaded or registered
    │   ├── ComponentNotFound         no component of that kind and name (did-you-mean)
    │   └── AmbiguousComponent        two plugins register the name
    ├── AskFailed                     ``Answer.raise_for_outcome``: a model-neutral call failed
    ├── PromptVariablesError          (also ValueError) variables do not match the prompt
    ├── ContextBudgetExceeded         (also ValueError) the request is over the token budget
    ├── TaskTooLarge                  (also ValueError) a task larger than the model's context window
    ├── UnsupportedSchemaType         (also TypeError) no schema flavour supports the output type
    ├── CompileError                  capabilities do not compile (.problems)
    ├── WorkflowInvalid               a workflow failed validation (.problems)
    ├── WorkflowFailed                a workflow run failed (.code, .step)
    └── StepError                     a step adapter could not produce a result (.code)

Not in the tree, on purpose: the CLI's exit signals (``UsageError``, ``BuildFailed``,
``Terminated``; command plugins import them from :mod:`seamkit.plugin`) are not errors a library
caller sees, and ``seamkit.testing.NetworkBlocked`` is a test's ``RuntimeError``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

# the errors module is the bottom layer (docs/layers.md): the few errors that carry a value of a
# higher layer (an Answer, a Prompt, problems) type it as Any rather than import upwards

__all__ = [
    "SeamkitError",
    "FailureClass",
    "Failure",
    "ProviderError",
    "UnsupportedFeature",
    "ToolError",
    "ToolUnavailable",
    "ToolArgumentError",
    "UnknownToolError",
    "ChildRunFailed",
    "ToolDefinitionError",
    "OutputValidationError",
    "RunError",
    "RunCancelled",
    "RunNotResumable",
    "BudgetExceeded",
    "GuardrailTripped",
    "EffectUncertain",
    "EffectNotApplied",
    "StoreError",
    "StoreUnavailable",
    "StoreValueError",
    "TTLNotSupported",
    "CheckpointConflict",
    "CodecError",
    "InfrastructureUnavailable",
    "KernelError",
    "ConfigError",
    "ConfigIssue",
    "ComponentBuildError",
    "PluginError",
    "ComponentNotFound",
    "AmbiguousComponent",
    "AskFailed",
    "PromptVariablesError",
    "ContextBudgetExceeded",
    "TaskTooLarge",
    "AgentDefinitionError",
    "UnsupportedSchemaType",
    "CompileError",
    "WorkflowInvalid",
    "WorkflowFailed",
    "StepError",
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


class RunError(SeamkitError):
    """A run stopped without an answer for a reason of the run's own (cancelled, over budget,
    blocked by a guardrail, an uncertain effect) or could not be resumed. Catch it to treat "the
    run did not finish" in one place; each subclass carries its own details."""


class BudgetExceeded(RunError):
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


class RunCancelled(RunError):
    """A run's cancellation token was cancelled; ``reason`` says why."""

    def __init__(self, reason: str = "cancelled") -> None:
        self.reason = reason
        super().__init__(reason)


class StoreError(SeamkitError):
    """A store or checkpoint backend failed or refused an operation. Catch it where every store
    problem is handled alike (report, retry later); each subclass says which."""


class StoreUnavailable(StoreError):
    """A store backend could not be reached or failed; never a driver's own exception type."""


class InfrastructureUnavailable(SeamkitError):
    """Something a run needs that is neither its model nor its tools' own systems could not be
    reached: the broker a queued child run is sent through. Not the run's failure, nor a tool's
    answer: a tool call raising it is never shown to the model; it stops the run unfinished, as a
    store outage does (a durable run's checkpoint stays ``running``, resumable; an effect ledger
    marks the call uncertain, so only an idempotent call runs again), and whoever drives the run
    (a queue worker) tries it again later."""


class StoreValueError(StoreError):
    """A stored value has the wrong type for the operation (e.g. increment of a non-integer)."""


class TTLNotSupported(StoreError, ValueError):
    """A time-to-live the backend cannot honour (not finite, not positive, finer than its
    resolution, or on an operation without expiry); refused rather than silently ignored."""


class CheckpointConflict(StoreError):
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


class RunNotResumable(RunError):
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


class EffectUncertain(RunError):
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


class AskFailed(SeamkitError):
    """An :class:`Answer` whose outcome is not ``ok``, raised by :meth:`Answer.raise_for_outcome`.

    ``outcome``, ``failure`` (a :class:`~seamkit.errors.Failure`), ``failure_class`` (the provider's
    :class:`~seamkit.errors.FailureClass` when the failure came from the provider, else ``None``),
    ``call_id`` and the ``answer`` itself. The message never holds a resolved credential.
    """

    def __init__(self, answer: Any) -> None:  # a seamkit._calls.answer.Answer
        self.answer = answer
        self.outcome = answer.outcome
        self.failure = answer.failure
        self.failure_class: FailureClass | None = answer.failure.failure_class if answer.failure else None
        self.call_id = answer.call_id
        what = f"{answer.failure.type}: {answer.failure.message}" if answer.failure else "no details"
        super().__init__(f"call {answer.call_id} ended {answer.outcome}: {what}")



class GuardrailTripped(RunError):
    """A guardrail blocked the run (a tripwire), or failed while not advisory (``failed``).
    ``guardrail``: its name; ``point``: where (``input``, ``tool``, ``tool_result``, ``output``);
    ``reason``: why. The CLI exits with status 4 (``EXIT_TRIPPED``); a durable run's checkpoint is
    ``failed`` with ``tripwire`` in its state."""

    def __init__(self, guardrail: str, point: str, reason: str, *, failed: bool = False) -> None:
        self.guardrail = guardrail
        self.point = point
        self.reason = reason
        self.failed = failed
        what = "failed (failing closed)" if failed else "blocked the run"
        super().__init__(f"guardrail {guardrail!r} {what} at the {point} point: {reason}")

    def detail(self) -> dict[str, Any]:
        """The tripwire as a checkpoint records it: ``{guardrail, point, reason, failed}``."""
        return {"guardrail": self.guardrail, "point": self.point, "reason": self.reason, "failed": self.failed}



class WorkflowFailed(SeamkitError):
    """A workflow run failed, ``code`` saying how: ``STEP_FAILED`` (a step raised, the original as
    ``__cause__``, or returned what it cannot emit or store), ``WORKFLOW_STALLED`` (it ended
    without an outcome) or ``ACTIVATION_LIMIT`` (it ran more activations than
    ``Workflow.max_activations``). ``run_id``: the workflow's run; ``step``: the failed step's
    name (``None`` unless ``STEP_FAILED``)."""

    def __init__(self, run_id: str, code: str, message: str, step: str | None = None) -> None:
        self.run_id = run_id
        self.code = code
        self.step = step
        super().__init__(f"{code}: {message}")



class StepError(SeamkitError):
    """A step adapter could not produce a result: ``code`` (``INVALID_STEP_INPUT``,
    ``MISSING_FIELD``, ``AGENT_SUSPENDED``, ``WORKFLOW_SUSPENDED``, ``CAPABILITY_NEEDS_TURN``, or a
    capability's own failure code) and a message safe to show and store."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(f"{code}: {message}")



class WorkflowInvalid(SeamkitError):
    """A workflow failed validation; ``problems`` lists every :class:`WorkflowProblem`."""

    def __init__(self, name: str, problems: Iterable[Any]) -> None:  # seamkit.workflows._validate.WorkflowProblem
        self.name = name
        self.problems = tuple(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        n = len(self.problems)
        super().__init__(f"workflow {name!r} has {n} problem{'s' if n != 1 else ''}:\n{lines}")



class CompileError(SeamkitError):
    """The capabilities do not compile; ``problems`` lists every problem, sorted by code and ids."""

    def __init__(self, problems: Iterable[Any]) -> None:  # seamkit.capabilities._compiler.Problem
        self.problems = tuple(sorted(problems))
        n = len(self.problems)
        super().__init__(f"{n} capability problem{'s' if n != 1 else ''}: " + "; ".join(map(str, self.problems)))

    @property
    def codes(self) -> tuple[str, ...]:
        """The problems' codes, in order."""
        return tuple(p.code for p in self.problems)



class PromptVariablesError(SeamkitError, ValueError):
    """The variables given for a prompt template do not match it. ``missing``: variables the
    template uses that were not given; ``unknown``: variables given that it does not use."""

    def __init__(self, prompt: Any, missing: Sequence[str], unknown: Sequence[str]) -> None:  # an agent Prompt
        self.prompt_id = prompt.id
        self.prompt_version = prompt.version
        self.missing = tuple(missing)
        self.unknown = tuple(unknown)
        parts = []
        if self.missing:
            parts.append(f"missing variables: {', '.join(self.missing)}")
        if self.unknown:
            parts.append(f"unknown variables: {', '.join(self.unknown)} (the template uses: "
                         f"{', '.join(sorted(prompt.variables)) or 'none'})")
        super().__init__(f"prompt {prompt.id}@{prompt.version}: {'; '.join(parts)}")



class ContextBudgetExceeded(SeamkitError, ValueError):
    """A built request is estimated above the token budget even after compaction (and no
    ``budget_check`` hook was set to decide otherwise). ``estimated`` and ``budget`` are tokens."""

    def __init__(self, estimated: int, budget: int) -> None:
        self.estimated = estimated
        self.budget = budget
        super().__init__(f"the request is estimated at {estimated} tokens, over the budget of {budget} tokens "
                         "even after compaction")



class AgentDefinitionError(SeamkitError, TypeError, ValueError):
    """An ``Agent(...)`` argument of the wrong type or value; the message names the argument, what
    was given and what it accepts. A ``TypeError`` and a ``ValueError`` too, as a wrong type or
    value is in plain Python."""


class TaskTooLarge(SeamkitError, ValueError):
    """A task refused before the run starts (nothing sent, nothing stored): it is estimated at
    ``estimated`` tokens (``chars`` characters), more than ``limit`` tokens, the model's context
    window (``window`` is ``True``; ``where`` says where it was read, e.g. ``n_ctx``) or, when
    the model declares none, :data:`seamkit._agent.task_size.MAX_TASK_TOKENS` (``window`` is
    ``False``). ``exact``: ``estimated`` is the model's own count, not an estimate."""

    def __init__(self, estimated: int, limit: int, chars: int, *, window: bool, where: str = "",
                 exact: bool = False) -> None:
        self.estimated = estimated
        self.limit = limit
        self.chars = chars
        self.window = window
        self.exact = exact
        if window:
            what = f"the model's context window of {limit:,} tokens" + (f" ({where})" if where else "")
            hint = "shorten the task, or use a model with a larger context"
        else:
            what = (f"{limit:,} tokens, more than any model takes (the model declares no context window, "
                    f"so this cap applies)")
            hint = "shorten the task"
        size = f"{estimated:,} tokens by the model's tokenizer" if exact else f"about {estimated:,} tokens"
        super().__init__(f"the task is too large: {size} ({chars:,} characters), over {what}; "
                         f"nothing was sent or stored; {hint}")


def describe_type(tp: Any) -> str:
    """A short human name for ``tp``: ``module.Qualname`` for classes, else its ``repr``."""
    if isinstance(tp, type):
        module = getattr(tp, "__module__", "")
        qual = getattr(tp, "__qualname__", tp.__name__)
        kind = " (a msgspec Struct; msgspec is not supported yet)" if hasattr(tp, "__struct_fields__") else ""
        return f"{module}.{qual}{kind}" if module and module != "builtins" else f"{qual}{kind}"
    text = repr(tp)
    return text if len(text) <= 200 else text[:197] + "..."



#: what typed output accepts, for messages
OUTPUT_ACCEPTED = ("a type (a pydantic model, a dataclass, an attrs class, a TypedDict, int...), a typing construct "
                   "(list[int], X | None, Literal[...]), a JSON Schema (a dict) or a SchemaAdapter")


class UnsupportedSchemaType(SeamkitError, TypeError):
    """No installed schema flavour supports ``python_type``. ``flavours`` lists the installed ones;
    ``value``: ``python_type`` is a value (``5``), not a type: the message says what is accepted."""

    def __init__(self, python_type: Any, flavours: tuple[str, ...], detail: str = "", *, value: bool = False) -> None:
        self.python_type = python_type
        self.flavours = flavours
        installed = ", ".join(flavours) or "none installed"
        extra = f"; {detail}" if detail else ""
        if value:
            super().__init__(
                f"cannot use {describe_type(python_type)} for typed output: it is a value "
                f"({type(python_type).__name__}), not a type; give {OUTPUT_ACCEPTED} "
                f"(installed schema flavours: {installed})"
            )
            return
        super().__init__(
            f"cannot adapt {describe_type(python_type)} for typed output: no installed schema flavour "
            f"supports it (installed: {installed}){extra}"
        )



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


class ComponentBuildError(ConfigError):
    """:func:`build_agent` could not build a component of a valid composition for a reason other
    than its configuration: its module failed to import, or its factory raised something other
    than :class:`~seamkit.errors.ConfigError` (a missing library, a failing service...).
    ``issues`` locates each failure at its slot. (A factory raising ``ConfigError`` is a
    configuration problem: :func:`build_agent` raises a plain ``ConfigError`` for it.)"""



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
