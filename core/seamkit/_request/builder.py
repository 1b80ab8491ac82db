"""``RequestBuilder``: the messages of each model turn, built from a cache-stable prefix and a tail.

A run's :class:`WorkingContext` has two parts:

* the **prefix**: one system message holding the system prompt (a versioned
  :class:`~seamkit._agent.prompt.Prompt`, its ``{{variables}}`` checked when the context is made),
  the grounding block (the admitted items of a :class:`~seamkit._grounding.MemorySource`, rendered
  one ``[s1a2b3c] source: content`` line each) and the output-schema block. It is written on the
  first turn and reused, **byte-identical**, on every later turn (so a provider's prompt cache
  keeps hitting), unless ``reground_every_turn`` re-retrieves and re-renders the grounding;
* the **tail**: the task and every continuation turn (the run's transcript). When the request
  is estimated over ``budget_tokens``, it is fitted in stages (:mod:`seamkit._request.fit`):
  earlier tool results condensed in place, earlier turns summarized into the system head (by the
  ``compactor`` when one is set), then the oldest units dropped; the user's request and the
  latest tool round are never touched, and when only leaving out the tool schemas makes it fit,
  the request goes without tools. The prefix is never compacted (a summary is appended to its
  system message in that request only).

:meth:`RequestBuilder.build` returns a :class:`BuiltRequest` (messages, prompt id and version,
estimated tokens, the grounding items used and their citation ids) after the ``budget_check``
hook has seen it. ``record_to`` stores the admitted items of every retrieval, encoded with
:mod:`seamkit._durability.codec` (:func:`record_grounding` / :func:`load_grounding`).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from seamkit._agent.prompt import Prompt
from seamkit._grounding import MemoryItem, MemorySource, cite_ids, not_inferred, render_items, unknown_citations
from seamkit._request.fit import Fitting, fit_request
from seamkit._tokens import MessageTokenCache
from seamkit.errors import ContextBudgetExceeded, PromptVariablesError
from seamkit.values import EMPTY, FrozenDict, Message, MessageLog, MessageSnapshot, Scope, ToolSchema, freeze

if TYPE_CHECKING:
    from seamkit._compaction import CompactorPort
    from seamkit._ports import StorePort
    from seamkit._runtime.context import RunContext

__all__ = [
    "BuiltRequest",
    "ContextBudgetExceeded",
    "GROUNDING_HEADER",
    "PromptVariablesError",
    "RECORD_KEY",
    "RequestBuilder",
    "SCHEMA_HEADER",
    "WorkingContext",
    "check_variables",
    "last_user_text",
    "load_grounding",
    "record_grounding",
]

GROUNDING_HEADER = "Sources (cite a source by writing its id in square brackets, e.g. [s1a2b3c]):"
SCHEMA_HEADER = "Reply with only a JSON value valid against this JSON Schema:"
RECORD_KEY = "seamkit.grounding"
"""Key prefix of recorded grounding: ``{RECORD_KEY}:{run_id}:{turn}``."""


def check_variables(prompt: Prompt, variables: Mapping[str, Any], *, partial: bool = False) -> None:
    """Raise :class:`PromptVariablesError` when ``variables`` name variables ``prompt`` does not
    use, or (unless ``partial``) miss some it uses."""
    names = prompt.variables
    unknown = sorted(set(variables) - names)
    missing = [] if partial else sorted(names - set(variables))
    if unknown or missing:
        raise PromptVariablesError(prompt, missing, unknown)


def last_user_text(tail: Sequence[Message]) -> str:
    """The default grounding query: the text of the last user message of the tail (``""`` if none)."""
    for m in reversed(tail):
        if m.role == "user" and m.text:
            return m.text
    return ""


async def record_grounding(store: StorePort, scope: Scope, key: str, items: Sequence[MemoryItem]) -> None:
    """Store ``items`` at ``key`` in ``store``, encoded with :mod:`seamkit._durability.codec` (plain
    JSON data, which every durable store accepts). Raises what the store raises."""
    from seamkit._durability.codec import encode

    await store.set(scope, key, encode(tuple(items)))


async def load_grounding(store: StorePort, scope: Scope, key: str) -> tuple[MemoryItem, ...] | None:
    """The items :func:`record_grounding` stored at ``key`` (``None`` when nothing is stored).
    Raises :class:`~seamkit.errors.CodecError` for a value that is not recorded grounding."""
    from seamkit._durability.codec import decode
    from seamkit.errors import CodecError

    raw = await store.get(scope, key)
    if raw is None:
        return None
    value = decode(raw)
    if not isinstance(value, tuple) or not all(isinstance(i, MemoryItem) for i in value):
        raise CodecError("$", f"the value at {key!r} is not recorded grounding (a tuple of MemoryItem)")
    return value


@dataclass(frozen=True, slots=True)
class BuiltRequest:
    """The messages of one model turn and what went into them.

    ``messages``: the prefix (``prefix_size`` messages) then the (possibly compacted) tail: a
    ``tuple``, or a :class:`~seamkit.values.MessageSnapshot` (which behaves as one, see
    ``ChatRequest.messages``) when the tail extends the previous request's without fitting (the
    agent loop's requests: each turn adds its new messages instead of copying the transcript).
    ``prompt_id`` / ``prompt_version``: the prompt used (``None`` without one).
    ``estimated_tokens``: :func:`seamkit._tokens.estimate_tokens` of the request (messages, tools
    and output schema). ``grounding``: the admitted items in the prefix; ``citation_ids``: theirs.
    ``turn``: 1 for the first build of a run, then 2, 3... ``fitting``: what fitting the request
    into ``budget_tokens`` did (:class:`~seamkit._request.fit.Fitting`; ``None`` when it was within
    the budget).
    """

    messages: tuple[Message, ...] | MessageSnapshot
    prompt_id: str | None
    prompt_version: str | None
    estimated_tokens: int
    grounding: tuple[MemoryItem, ...] = ()
    citation_ids: tuple[str, ...] = ()
    prefix_size: int = 0
    turn: int = 1
    fitting: Fitting | None = None

    @property
    def without_tools(self) -> bool:
        """The tool schemas were left out to fit the budget: send the request without tools."""
        return self.fitting is not None and self.fitting.without_tools

    @property
    def prefix(self) -> tuple[Message, ...]:
        return self.messages[: self.prefix_size]

    @property
    def tail(self) -> tuple[Message, ...]:
        return self.messages[self.prefix_size :]

    @property
    def metadata(self) -> FrozenDict:
        """For ``ChatRequest.metadata``: prompt id and version, citation ids, estimate, turn."""
        meta: FrozenDict = freeze({
            "prompt_id": self.prompt_id, "prompt_version": self.prompt_version,
            "citation_ids": list(self.citation_ids), "estimated_tokens": self.estimated_tokens, "turn": self.turn,
        })
        return meta


@dataclass
class WorkingContext:
    """One run's working context (made by :meth:`RequestBuilder.context`). ``prefix`` is ``None``
    until the first build; ``grounding`` holds the items of the current prefix; ``seen`` every
    item handed to the model in this run, by citation id; ``turn`` counts builds; ``tokens``
    remembers the estimate of each message the run's requests carried (each is counted once)."""

    variables: FrozenDict = EMPTY
    scope: Scope = field(default_factory=Scope)
    prefix: tuple[Message, ...] | None = None
    grounding: tuple[MemoryItem, ...] = ()
    seen: dict[str, MemoryItem] = field(default_factory=dict)
    turn: int = 0
    tokens: MessageTokenCache = field(default_factory=MessageTokenCache, repr=False, compare=False)
    # the last unfitted request as one append-only log (see _joined), with the prefix and the
    # tail storage and length it was built from
    sent: tuple[MessageLog, tuple[Message, ...], list[Message], int] | None = field(
        default=None, repr=False, compare=False)

    def unknown_citations(self, text: str) -> list[str]:
        """The ids ``text`` cites that name no item handed to the model in this run."""
        return unknown_citations(text, self.seen.values())


def _joined(
    wc: WorkingContext, prefix: tuple[Message, ...], tail: Sequence[Message]
) -> tuple[Message, ...] | MessageSnapshot:
    """``prefix + tail``: for a tail that extends the one of the run's previous request (a
    snapshot of the same append-only log, the prefix unchanged) a snapshot of that request's log
    with the new messages added, O(new messages); else built anew."""
    if type(tail) is not MessageSnapshot:
        return prefix + tuple(tail)
    items, n = tail._items, tail._n  # the log's shared storage: append-only
    last = wc.sent
    if last is not None and last[1] is prefix and last[2] is items and n >= last[3]:
        log = last[0]
        log.extend(items[last[3]:n])
    else:
        log = MessageLog(prefix)
        log.extend(tail)
    wc.sent = (log, prefix, items, n)
    return log.snapshot()


BudgetCheck = Callable[[BuiltRequest], "BuiltRequest | Awaitable[BuiltRequest | None] | None"]


@dataclass(frozen=True)
class RequestBuilder:
    """Builds each turn's messages (see the module docstring).

    ``prompt``: a :class:`~seamkit._agent.prompt.Prompt` (a ``str`` becomes one, id ``"prompt"``)
    or ``None``. ``variables``: defaults for the template, overridden by a run's. ``grounding``: a
    :class:`~seamkit._grounding.MemorySource`; ``k``: items to retrieve; ``query``: tail -> query
    text (default :func:`last_user_text`); ``admit``: item -> keep it? (default: refuse items whose
    ``origin`` is ``"inferred"``); ``render``: items -> the grounding block text (default one
    ``[id] source: content`` line per item). ``reground_every_turn``: re-retrieve and re-render
    the grounding on every turn (the prefix then changes with it). ``include_schema``: write the
    output schema into the prefix. ``budget_tokens``: a request estimated above it is fitted
    (see the module docstring); ``compactor`` (needs ``budget_tokens``): summarizes the earlier
    turns while fitting.
    ``budget_check``: called with every :class:`BuiltRequest` (may be async); it may raise, return
    a replacement, or ``None`` to keep it. Without a hook, a request still over ``budget_tokens``
    raises :class:`ContextBudgetExceeded`. ``record_to``: a store receiving the admitted items of
    every retrieval at ``{record_key}:{run_id}:{turn}``.

    Raises ``ValueError`` for ``k < 1``, ``budget_tokens < 1``, a compactor without a budget, and
    :class:`PromptVariablesError` for default ``variables`` the template does not use.
    """

    prompt: Prompt | str | None = None
    variables: Mapping[str, Any] = EMPTY
    grounding: MemorySource | None = None
    k: int = 5
    query: Callable[[Sequence[Message]], str] = last_user_text
    admit: Callable[[MemoryItem], bool] = not_inferred
    render: Callable[[Sequence[MemoryItem]], str] = render_items
    reground_every_turn: bool = False
    include_schema: bool = True
    compactor: CompactorPort | None = None
    budget_tokens: int | None = None
    budget_check: BudgetCheck | None = None
    record_to: StorePort | None = None
    record_key: str = RECORD_KEY

    def __post_init__(self) -> None:
        if isinstance(self.prompt, str):
            object.__setattr__(self, "prompt", Prompt(self.prompt))
        if type(self.variables) is not FrozenDict:
            object.__setattr__(self, "variables", freeze(dict(self.variables)))
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")
        if self.budget_tokens is not None and self.budget_tokens < 1:
            raise ValueError(f"budget_tokens must be at least 1, got {self.budget_tokens}")
        if self.compactor is not None and self.budget_tokens is None:
            raise ValueError("a compactor needs budget_tokens (the budget it compacts the request to)")
        if self.grounding is not None and not isinstance(self.grounding, MemorySource):
            raise TypeError(f"grounding must be a MemorySource (async retrieve(query, scope=, k=)), "
                            f"got {type(self.grounding).__name__}")
        p = self.prompt
        if isinstance(p, Prompt):
            check_variables(p, self.variables, partial=True)
        elif self.variables:
            raise ValueError("variables were given but there is no prompt template")

    def context(self, variables: Mapping[str, Any] | None = None, *, scope: Scope | None = None) -> WorkingContext:
        """A new run's working context. The template's variables (defaults, then ``variables``)
        are checked now: raises :class:`PromptVariablesError` naming missing and unknown ones."""
        merged = {**self.variables, **(variables or {})}
        p = self.prompt
        if isinstance(p, Prompt):
            check_variables(p, merged)
        elif merged:
            raise PromptVariablesError(Prompt("", id="(no prompt)"), (), sorted(merged))
        return WorkingContext(freeze(merged), scope if scope is not None else Scope())

    async def _retrieve(self, wc: WorkingContext, tail: Sequence[Message], ctx: RunContext | None) -> None:
        source = self.grounding
        if source is None:
            return
        found = await source.retrieve(self.query(tail), scope=wc.scope, k=self.k)
        items = tuple(i for i in found if self.admit(i))
        wc.grounding = items
        for i in items:
            wc.seen.setdefault(i.citation_id, i)
        if self.record_to is not None:
            run_id = ctx.run_id if ctx is not None else "run"
            await record_grounding(self.record_to, wc.scope, f"{self.record_key}:{run_id}:{wc.turn}", items)

    def _prefix(self, wc: WorkingContext, output_schema: Mapping[str, Any] | None) -> tuple[Message, ...]:
        parts: list[str] = []
        p = self.prompt
        if isinstance(p, Prompt):
            parts.append(p.render(wc.variables) if p.variables else p.template)
        if wc.grounding:
            parts.append(f"{GROUNDING_HEADER}\n{self.render(wc.grounding)}")
        if self.include_schema and output_schema is not None:
            schema = json.dumps(output_schema, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            parts.append(f"{SCHEMA_HEADER}\n{schema}")
        return (Message.system("\n\n".join(parts)),) if parts else ()

    async def build(
        self,
        wc: WorkingContext,
        tail: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        output_schema: Mapping[str, Any] | None = None,
        ctx: RunContext | None = None,
    ) -> BuiltRequest:
        """The messages of the next turn: the prefix (made on the first call, or every call with
        ``reground_every_turn``) then ``tail`` (fitted when over ``budget_tokens``).
        ``tools`` and ``output_schema`` count in the estimate. Raises what the grounding source,
        the store, the compactor and the ``budget_check`` hook raise; :class:`ContextBudgetExceeded`
        as described on the class; ``ValueError`` for an empty request."""
        wc.turn += 1
        if wc.prefix is None or self.reground_every_turn:
            await self._retrieve(wc, tail, ctx)
            wc.prefix = self._prefix(wc, output_schema)
        prefix = wc.prefix
        schema = freeze(dict(output_schema)) if output_schema is not None else None
        tools = tuple(tools)
        # the estimate of the request as it stands (each message counted once per run: wc.tokens);
        # it is the request's estimate unless fitting changes the request
        counted = wc.tokens
        estimated = counted.request((prefix, tail), tools, schema)
        fitting: Fitting | None = None
        full: tuple[Message, ...] | MessageSnapshot
        if self.budget_tokens is not None and estimated > self.budget_tokens:
            prefix, messages, fitting = await fit_request(
                prefix, tail, budget_tokens=self.budget_tokens, tools=tools, output_schema=schema,
                compactor=self.compactor, ctx=ctx, message_tokens=counted.message)
            if fitting.without_tools:
                tools = ()
            full = prefix + messages
        else:
            full = _joined(wc, prefix, tail)
        if not full:
            raise ValueError("the request has no messages (no prompt, no grounding and an empty tail)")
        if fitting is not None:
            estimated = counted.request((full,), tools, schema)
        counted.retain(full)
        p = self.prompt if isinstance(self.prompt, Prompt) else None
        built = BuiltRequest(
            full,
            p.id if p is not None else None,
            p.version if p is not None else None,
            estimated,
            wc.grounding,
            tuple(cite_ids(wc.grounding)),
            len(prefix),
            wc.turn,
            fitting,
        )
        hook = self.budget_check
        if hook is not None:
            replaced = hook(built)
            if inspect.isawaitable(replaced):
                replaced = await replaced
            if replaced is not None:
                if not isinstance(replaced, BuiltRequest):
                    raise TypeError(f"budget_check must return a BuiltRequest or None, got {type(replaced).__name__}")
                built = replaced
        elif self.budget_tokens is not None and built.estimated_tokens > self.budget_tokens:
            raise ContextBudgetExceeded(built.estimated_tokens, self.budget_tokens)
        return built
