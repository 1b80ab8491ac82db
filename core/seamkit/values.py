"""The values that cross seamkit's boundaries.

Every type here is a frozen dataclass. Container payloads (tool-call arguments, JSON Schemas,
metadata) are deeply frozen :class:`~seamkit._frozen.FrozenDict` / ``FrozenList`` copies of what
the caller passed. Types with frozen payloads hash on their identity fields (a tool call on its
id, a tool result on the id of the call it answers) and compare on every field, so a ``set`` of
messages carrying tool calls works.

Units: token counts are ``int`` tokens; money is USD as ``Decimal``; an unknown cost is ``None``,
never ``0``; durations are seconds as ``float``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from itertools import islice
from operator import index as _index
from typing import Any, Literal, NoReturn, overload

from seamkit._frozen import FrozenDict, FrozenList, fast_init, freeze, thaw

__all__ = [
    "FrozenDict",
    "FrozenList",
    "freeze",
    "thaw",
    "Scope",
    "CostSource",
    "Usage",
    "TextBlock",
    "ImageBlock",
    "ToolCall",
    "ToolResult",
    "ToolOutput",
    "ReasoningBlock",
    "ContentBlock",
    "Role",
    "Message",
    "MessageSnapshot",
    "MessageLog",
    "ToolSchema",
    "ToolChoice",
    "ChatRequest",
    "ToolRequest",
    "RunRequest",
    "FinishReason",
    "LLMResult",
    "ToolCallDelta",
    "Delta",
    "StreamEventKind",
    "StreamEvent",
    "Operation",
    "EMPTY",
]

EMPTY: FrozenDict = FrozenDict()


def _frozen_map(value: Any) -> FrozenDict:
    if type(value) is FrozenDict:
        return value
    if value is None:
        return EMPTY
    frozen = freeze(value)
    if not isinstance(frozen, FrozenDict):
        raise TypeError(f"expected a mapping, got {type(value).__name__}")
    return frozen


@fast_init
@dataclass(frozen=True, slots=True)
class Scope:
    """Who a run acts for: ``tenant`` (isolation boundary), ``user`` and ``thread`` (a conversation)."""

    tenant: str = "default"
    user: str | None = None
    thread: str | None = None


CostSource = Literal["reported", "estimated", "local", "cache", "unpriced"]


@fast_init
@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one or more model calls consumed, and what they cost.

    ``input_tokens`` counts every prompt token *including* cached ones; ``cache_read_tokens`` and
    ``cache_write_tokens`` are the parts of the input served from / written to a prompt cache.
    ``output_tokens`` includes ``reasoning_tokens``. ``cost`` is USD as ``Decimal``, or ``None``
    when unknown; ``cost_source`` says where it came from: ``reported`` by the provider,
    ``estimated`` from a price table, ``local`` (a model on this machine: cost 0), ``cache`` (an
    answer replayed from a cache such as the ``memoize`` middleware's: cost 0, the tokens are those
    the original call took, no provider was called), ``unpriced`` (cost unknown, ``cost`` is
    ``None``). Adding usages sums tokens; the cost of a sum is unknown if any part is unknown; a
    ``cache`` part adds nothing to the cost, so the sum keeps the other part's source.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    requests: int = 0
    cost: Decimal | None = None
    cost_source: CostSource = "unpriced"

    def __post_init__(self) -> None:
        if self.cost is None and self.cost_source != "unpriced":
            raise ValueError(f"cost_source {self.cost_source!r} needs a cost; use 'unpriced'")
        if self.cost is not None and self.cost_source == "unpriced":
            raise ValueError("an unpriced usage has cost None")

    @property
    def total_tokens(self) -> int:
        """``input_tokens + output_tokens``."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        if type(other) is not Usage:
            return NotImplemented
        if self.requests == 0 and self.input_tokens == 0 and self.output_tokens == 0 and self.cost is None:
            return other
        if other.requests == 0 and other.input_tokens == 0 and other.output_tokens == 0 and other.cost is None:
            return self
        cost: Decimal | None
        source: CostSource
        if self.cost is None or other.cost is None:
            cost, source = None, "unpriced"
        else:
            cost = self.cost + other.cost
            if self.cost_source == other.cost_source or other.cost_source == "cache":
                source = self.cost_source
            elif self.cost_source == "cache":
                source = other.cost_source
            elif "estimated" in (self.cost_source, other.cost_source):
                source = "estimated"
            else:
                source = "reported"
        return _new_usage(  # type: ignore[no-any-return]
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.requests + other.requests,
            cost,
            source,
        )


_new_usage = Usage.__fast_new__  # type: ignore[attr-defined]  # for sums of valid usages


# --- content blocks -------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class TextBlock:
    """Plain text."""

    text: str
    type: Literal["text"] = "text"


@fast_init
@dataclass(frozen=True, slots=True, eq=True)
class ImageBlock:
    """An image, either by ``url`` or inline ``data`` (raw bytes) with its ``media_type``."""

    media_type: str = "image/png"
    url: str | None = None
    data: bytes | None = None
    type: Literal["image"] = "image"

    def __post_init__(self) -> None:
        if (self.url is None) == (self.data is None):
            raise ValueError("an image needs exactly one of url or data")


@fast_init(coerce={"arguments": (FrozenDict, lambda v: _frozen_map(v))})
@dataclass(frozen=True, slots=True, eq=True)
class ToolCall:
    """The model asking for a tool: ``id`` (unique in a run's transcript), ``name`` and decoded
    JSON ``arguments`` (deeply frozen). Hashes on ``id``; compares on every field.

    ``arguments_error``: why the arguments the model wrote could not be used (not valid JSON,
    e.g. cut off at max_tokens; not a JSON object; NaN; nested too deeply), ``None`` when they
    could. ``arguments`` is then empty, the call is never run, and its result tells the model
    the reason (:func:`seamkit._runtime.invoker.unusable_arguments_result`)."""

    id: str
    name: str
    arguments: FrozenDict = EMPTY
    type: Literal["tool_call"] = "tool_call"
    arguments_error: str | None = None

    def __hash__(self) -> int:
        return hash(("tool_call", self.id))


@fast_init
@dataclass(frozen=True, slots=True, eq=True)
class ToolResult:
    """What a tool returned for the call ``call_id``: ``content`` as text (JSON for structured
    results), ``is_error`` when the tool failed or was never run, ``images`` the tool returned
    with it (see :class:`ToolOutput`). Hashes on ``call_id``."""

    call_id: str
    name: str
    content: str
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"
    images: tuple[ImageBlock, ...] = ()

    def __hash__(self) -> int:
        return hash(("tool_result", self.call_id))


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool may return to say more than a value: ``value`` becomes the result's text (as
    any return value: ``str`` as is, anything else as JSON), ``images`` go with it
    (:attr:`ToolResult.images`; providers that accept images in a tool result send them, the
    others say in the text that an image was left out), and ``is_error=True`` makes it an error
    result (the tool ran, and reports a failure the model should see, as MCP's ``isError``)."""

    value: Any
    images: tuple[ImageBlock, ...] = ()
    is_error: bool = False


@fast_init
@dataclass(frozen=True, slots=True)
class ReasoningBlock:
    """Model reasoning ("thinking"). ``signature`` is the provider's opaque proof that must be sent
    back unchanged with the same model; ``provider``/``model`` say which one wrote it."""

    text: str
    signature: str | None = None
    provider: str | None = None
    model: str | None = None
    type: Literal["reasoning"] = "reasoning"


ContentBlock = TextBlock | ImageBlock | ToolCall | ToolResult | ReasoningBlock
Role = Literal["system", "user", "assistant", "tool"]
_ROLES = frozenset(("system", "user", "assistant", "tool"))


def _bad_role(role: object) -> NoReturn:
    raise ValueError(f"unknown role {role!r}")


@fast_init(coerce={"role": (_ROLES, _bad_role), "content": (tuple, tuple)})
@dataclass(frozen=True, slots=True, eq=True)
class Message:
    """One transcript entry: a ``role`` and a tuple of content blocks.

    ``Message.user("hi")`` / ``.system()`` / ``.assistant()`` build text messages. Hashes on the
    role and the blocks' identity fields.
    """

    role: Role
    content: tuple[ContentBlock, ...] = ()

    def __hash__(self) -> int:
        return hash((self.role, self.content))

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", (TextBlock(text),))

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", (TextBlock(text),))

    @classmethod
    def assistant(cls, text: str) -> Message:
        return cls("assistant", (TextBlock(text),))

    @property
    def text(self) -> str:
        """All text blocks joined (no separator)."""
        return "".join([b.text for b in self.content if type(b) is TextBlock])

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple([b for b in self.content if type(b) is ToolCall])

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple([b for b in self.content if type(b) is ToolResult])


class MessageSnapshot(Sequence[Message]):
    """An immutable sequence of messages sharing its storage with a :class:`MessageLog`: the
    ``ChatRequest.messages`` of the agent loop's requests, so that building a turn's request does
    not copy the transcript (turn 2,000 costs what turn 1 does).

    It behaves as a ``tuple`` of messages for what a provider or middleware does with one: ``len``,
    indexing (negative too), slicing (which gives a ``tuple``), iteration (``reversed`` too),
    ``in``, ``index``, ``count``, ``==`` with a ``tuple`` or another snapshot holding equal
    messages (then with the same ``hash``), ``+`` with a ``tuple`` or snapshot (a ``tuple``; the
    snapshot itself when the other side is empty), ``repr``, and ``pickle`` / ``copy.deepcopy``
    (which give a ``tuple``). It is not a ``tuple``: ``isinstance(x, tuple)`` is false, and
    ``dataclasses.asdict`` keeps it as an object instead of turning it into a list of dicts (take
    ``tuple(x)`` first where that matters). Its messages never change: the log it shares only ever
    appends after the messages a snapshot holds.

    ``MessageSnapshot(messages)`` copies ``messages`` (any iterable of :class:`Message`);
    :meth:`MessageLog.snapshot` shares the log's storage instead.
    """

    __slots__ = ("_items", "_n")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        items = list(messages)
        self._items = items
        self._n = len(items)

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Message: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Message, ...]: ...

    def __getitem__(self, i: int | slice) -> Message | tuple[Message, ...]:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._n)
            if step == 1:
                return tuple(self._items[start:stop])
            items = self._items
            return tuple([items[j] for j in range(start, stop, step)])
        j = _index(i)
        n = self._n
        if j < 0:
            j += n
        if 0 <= j < n:
            return self._items[j]
        raise IndexError("tuple index out of range")

    def __iter__(self) -> Iterator[Message]:
        return islice(self._items, self._n)  # bounded: messages appended later stay out

    def __reversed__(self) -> Iterator[Message]:
        items = self._items
        return (items[j] for j in range(self._n - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageSnapshot):
            if other._items is self._items:
                return other._n == self._n
            return other._n == self._n and tuple(self) == tuple(other)
        if isinstance(other, tuple):
            return len(other) == self._n and tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))  # equal to a tuple of the same messages: the same hash

    def __add__(self, other: object) -> MessageSnapshot | tuple[Message, ...]:
        if isinstance(other, (tuple, MessageSnapshot)):
            return self if not other else tuple(self) + tuple(other)
        return NotImplemented

    def __radd__(self, other: object) -> MessageSnapshot | tuple[Message, ...]:
        if isinstance(other, tuple):
            return self if not other else other + tuple(self)
        return NotImplemented

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (tuple(self),))

    def __copy__(self) -> MessageSnapshot:
        return self  # immutable, as copy.copy of a tuple


class MessageLog:
    """An append-only list of messages handing out :class:`MessageSnapshot` s of itself without
    copying: ``snapshot()`` is O(1), and a snapshot keeps the messages it had (the log has no way
    to change or remove a message, only ``append`` and ``extend``). ``len(log)``: messages so far.
    A log that must change a message is replaced by a new one (built from the changed messages)."""

    __slots__ = ("_items",)

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._items: list[Message] = list(messages)

    def __len__(self) -> int:
        return len(self._items)

    def append(self, message: Message) -> None:
        self._items.append(message)

    def extend(self, messages: Iterable[Message]) -> None:
        self._items.extend(messages)

    def snapshot(self) -> MessageSnapshot:
        """The log's messages now, as an immutable sequence sharing the log's storage."""
        # built without __init__ (which copies): called on every model turn
        s = _new_snapshot(MessageSnapshot)
        items = s._items = self._items
        s._n = len(items)
        return s


_new_snapshot = object.__new__


# --- requests -------------------------------------------------------------------------------


@fast_init(coerce={"parameters": (FrozenDict, lambda v: _frozen_map(v))})
@dataclass(frozen=True, slots=True, eq=True)
class ToolSchema:
    """How a tool is advertised to a model: ``name``, ``description``, ``parameters`` (a JSON
    Schema object, draft 2020-12), whether calling it has ``side_effecting`` effects outside the
    run, and whether it is ``idempotent``: it hands the call's idempotency key
    (``RunContext.idempotency_key``) to the outside system, which applies one key at most once, so
    the effect ledger may run it again after a crash. Hashes on ``name``."""

    name: str
    description: str
    parameters: FrozenDict
    side_effecting: bool
    idempotent: bool = False

    def __hash__(self) -> int:
        return hash(("tool", self.name))


ToolChoice = str
"""``"auto"`` (model decides), ``"required"`` (some tool), ``"none"``, or a tool's name."""


@fast_init(
    coerce={
        "messages": ((tuple, MessageSnapshot), tuple),
        "tools": (tuple, tuple),
        "output_schema": ((FrozenDict, type(None)), lambda v: _frozen_map(v)),
        "extra": (FrozenDict, lambda v: _frozen_map(v)),
        "metadata": (FrozenDict, lambda v: _frozen_map(v)),
    }
)
@dataclass(frozen=True, slots=True, eq=True)
class ChatRequest:
    """One model call.

    ``messages``: the transcript to send, a ``tuple`` (any other iterable is made one) or a
    :class:`MessageSnapshot` (what the agent loop sends: it shares the run's transcript instead of
    copying it on every turn, and behaves as a tuple). ``tools``: advertised tools. ``tool_choice``: see
    :data:`ToolChoice`. ``output_schema``: a JSON Schema the reply's text must satisfy (providers
    that can constrain decoding use it). ``temperature``, ``max_tokens`` (output tokens),
    ``seed``, ``stop``: sampling settings; ``None`` means the provider's default. ``extra``:
    provider-specific settings, passed through. ``metadata``: for middlewares, never sent.
    """

    messages: tuple[Message, ...] | MessageSnapshot
    tools: tuple[ToolSchema, ...] = ()
    tool_choice: ToolChoice = "auto"
    output_schema: FrozenDict | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    extra: FrozenDict = EMPTY
    metadata: FrozenDict = EMPTY

    def __hash__(self) -> int:
        return hash((self.messages, self.tools, self.tool_choice))

    def replace(self, **changes: Any) -> ChatRequest:
        """A copy with ``changes`` applied (``dataclasses.replace``)."""
        return replace(self, **changes)


@fast_init
@dataclass(frozen=True, slots=True, eq=True)
class ToolRequest:
    """One tool call to execute: the model's ``call`` and the advertised ``schema`` of the tool it
    names (``None`` when the model named an unknown tool)."""

    call: ToolCall
    schema: ToolSchema | None = None

    def __hash__(self) -> int:
        return hash(self.call)


@fast_init
@dataclass(frozen=True, slots=True, eq=False)
class RunRequest:
    """One agent run, as a ``run`` call carries it through the middlewares that wrap whole runs
    (``@middleware(kinds=("run",))``, see :mod:`seamkit._middleware`): the ``agent``'s name, the
    ``messages`` the run starts from (system prompt, history, the task; a resumed run: its
    transcript so far) and whether it is ``resumed`` from a checkpoint. Compared by identity: one
    request per run."""

    agent: str
    messages: tuple[Message, ...] = ()
    resumed: bool = False


FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "refusal", "error"]


@fast_init
@dataclass(frozen=True, slots=True, eq=True)
class LLMResult:
    """A finished model call: the assistant ``message``, its ``usage``, why it stopped, the model
    that answered, ``warnings`` (explicit degradations, e.g. a setting a model ignored) and
    ``raw_usage``: the usage object exactly as the provider reported it (``None`` if none)."""

    message: Message
    usage: Usage = Usage()
    finish_reason: FinishReason = "stop"
    model: str | None = None
    warnings: tuple[str, ...] = ()
    raw_usage: FrozenDict | None = None

    def __hash__(self) -> int:
        return hash(self.message)

    @property
    def text(self) -> str:
        return self.message.text

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return self.message.tool_calls


@fast_init
@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a streamed tool call. ``index`` orders calls within a turn; ``id`` and
    ``name`` arrive on the first fragment; ``arguments`` is a piece of the JSON text."""

    index: int = 0
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@fast_init
@dataclass(frozen=True, slots=True)
class Delta:
    """One streamed increment of a model call. Exactly the fields that changed are set.

    ``text`` / ``reasoning``: text to append; ``reasoning_signature`` completes the current
    reasoning block; ``tool_call``: a :class:`ToolCallDelta`; ``usage``: usage reported so far
    (the last one wins); ``finish_reason``: set once, at the end; ``model``: the answering model;
    ``warning``: an explicit degradation to record on the result; ``raw_usage``: the provider's
    usage object as it sent it (the last one wins). ``partial_output``: the typed output parsed so
    far from the text of this call (set by a middleware such as ``output_coerce``, never by a
    provider; JSON data, read-only); it is not part of the result (``Accumulator`` ignores it) and
    the agent loop turns it into a ``StreamEvent`` of kind ``partial_output``.
    """

    text: str | None = None
    reasoning: str | None = None
    reasoning_signature: str | None = None
    tool_call: ToolCallDelta | None = None
    usage: Usage | None = None
    finish_reason: FinishReason | None = None
    model: str | None = None
    warning: str | None = None
    raw_usage: FrozenDict | None = None
    partial_output: Any = None


StreamEventKind = Literal[
    "run_started",
    "text",
    "reasoning",
    "model_result",
    "tool_call",
    "tool_result",
    "partial_output",
    "output",
    "guardrail",
    "capability",
    "step",
    "handoff",
    "context_condensed",
    "run_finished",
]


@fast_init
@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One step of an agent run, as streamed by ``Agent.stream()``.

    ``kind`` says which fields are set: ``text``/``reasoning`` (a piece of model text),
    ``model_result`` (``result``: a finished :class:`LLMResult`), ``tool_call`` (``tool_call``),
    ``tool_result`` (``tool_result``), ``partial_output`` (``partial_output``: the typed output
    parsed so far), ``output`` (``output``: the final typed value), ``run_started`` /
    ``run_finished`` (``data`` holds the stop reason and usage on finish), ``guardrail`` (``data``:
    ``guardrail``, ``point``, ``action``: ``rewrite``, ``flag``, or an advisory guard's ``block``
    or ``failed``, and ``reason``), ``capability`` (an agent with capabilities: ``data["event"]`` is
    ``planned`` with the ``disposition`` of an intention, or ``finished`` with an ``execution``;
    see :mod:`seamkit.capabilities._state`), ``step`` (a workflow: ``data["event"]`` is ``started``,
    ``finished``, ``suspended``, ``failed`` or ``skipped``, with the step's ``name``, the
    ``activation`` id, its ``child_run_id``, its ``step_kind`` and what it ``emitted``; see
    :mod:`seamkit.workflows._engine`), ``handoff`` (``data``: ``from``, ``to``, ``filter``: the
    conversation changed hands, see :mod:`seamkit._agent.handoff`), ``context_condensed`` (a
    request over its input budget was made smaller: ``data`` holds
    :meth:`seamkit._request.fit.Fitting.as_data`). ``step`` counts model turns from 1 (in a
    workflow: the activations finished so far).
    """

    kind: StreamEventKind
    run_id: str
    step: int = 0
    text: str | None = None
    result: LLMResult | None = None
    tool_call: ToolCall | None = None
    tool_result: ToolResult | None = None
    partial_output: Any = None
    output: Any = None
    data: FrozenDict = EMPTY


@fast_init
@dataclass(frozen=True, slots=True)
class Operation:
    """A named unit of work that tracing, metrics and the effect ledger refer to: ``kind``
    (``chat`` or ``tool``), ``name`` (model or tool name), the ``run_id`` and ``step`` it belongs to,
    and the ``call_id`` of the tool call, if any."""

    kind: Literal["chat", "tool"]
    name: str
    run_id: str
    step: int = 0
    call_id: str | None = None
