"""The one middleware contract.

A :class:`Call` envelope carries a ``chat``, ``tool`` or ``run`` request with its run context. A
middleware is an async generator function ``mw(call, next)`` that yields what the rest of the chain
yields (``Delta`` items for chat calls, a single ``ToolResult`` for tool calls, a single
:class:`~seamkit._agent.result.AgentResult` for a run), and may act

- *before* ``next`` (change the call), - *after* it (change or add items),
- *around* it (call ``next`` again, e.g. retry), - *instead* of it (yield without calling ``next``).

:func:`chain` folds middlewares around a terminal; :func:`collect` and :func:`collect_one` reduce
a stream. A middleware may set ``kinds`` (via :func:`middleware`) to say which call kinds it
wraps; it is left out of the other chains entirely, so it costs nothing there. A middleware without
``kinds`` wraps ``chat`` and ``tool`` calls.

A ``run`` call (:class:`~seamkit.values.RunRequest`) wraps one whole agent run, from before its
first model turn to its result, the run's chat and tool calls happening inside ``next``: for what
spans a run (a tracing span, a run-level timer). Only middlewares that name ``"run"`` in their
``kinds`` see it; a run of an agent with none goes straight to its loop. A resumed run is a new
``run`` call (``request.resumed``), and so is each turn of an agent with capabilities.

Two optional attributes (class or instance, default ``False``) declare what the order of a chain
means for a middleware, so that a composition can warn about an order that defeats it
(:func:`hidden_calls`):

- ``answers_without_next``: it may answer a call itself, without calling ``next`` (a cache such
  as ``memoize``); the middlewares inside it never see such a call.
- ``sees_every_call``: it is meant to see every call the agent makes (an audit trail such as
  ``audit``); placed inside an ``answers_without_next`` middleware it misses the calls answered
  there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from seamkit._frozen import fast_init
from seamkit.errors import SeamkitError
from seamkit.values import EMPTY, ChatRequest, FrozenDict, RunRequest, ToolRequest

if TYPE_CHECKING:
    from seamkit._runtime.context import RunContext

__all__ = ["Call", "CallKind", "Next", "Middleware", "middleware", "chain", "collect", "collect_one", "hidden_calls"]

CallKind = Literal["chat", "tool", "run"]
T = TypeVar("T")


@fast_init
@dataclass(frozen=True, slots=True)
class Call:
    """One call travelling through a middleware chain: ``kind``, the ``request`` (a
    :class:`~seamkit.values.ChatRequest`, :class:`~seamkit.values.ToolRequest` or
    :class:`~seamkit.values.RunRequest`), the run's
    ``ctx``, ``meta`` (free-form, frozen; an agent run sets ``step``, the model turn from 1, and
    ``agent``, the name of the agent making the call) and, for chat calls, the ``model``
    (the :class:`~seamkit._ports.LLMPort` the chain ends at: its ``provider``, ``model`` and, when
    it has one, ``price`` (a :class:`~seamkit._pricing.Price`) are what budget and fallback
    middlewares read; for a run call, the agent's model)."""

    kind: CallKind
    request: ChatRequest | ToolRequest | RunRequest
    ctx: RunContext
    meta: FrozenDict = EMPTY
    model: Any = None

    def replace(self, **changes: Any) -> Call:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)


Next = Callable[[Call], AsyncIterator[Any]]
Middleware = Callable[[Call, Next], AsyncIterator[Any]]


def middleware(*, kinds: Iterable[CallKind] = ("chat", "tool")) -> Callable[[Middleware], Middleware]:
    """Mark a middleware with the call ``kinds`` it wraps (default: ``chat`` and ``tool``; ``run``
    only when named). Raises ``ValueError`` for any other kind."""
    ks = frozenset(kinds)
    bad = ks - {"chat", "tool", "run"}
    if bad:
        raise ValueError(f"unknown call kinds: {sorted(bad)}")

    def mark(fn: Middleware) -> Middleware:
        fn.kinds = ks  # type: ignore[attr-defined]
        return fn

    return mark


def _wrap(mw: Middleware, nxt: Next) -> Next:
    def bound(call: Call) -> AsyncIterator[Any]:
        return mw(call, nxt)

    return bound


def chain(middlewares: Sequence[Middleware], terminal: Next, *, kind: CallKind | None = None) -> Next:
    """Fold ``middlewares`` around ``terminal``; the first middleware is the outermost.

    With ``kind``, middlewares whose ``kinds`` exclude it are left out. With no middleware left,
    the terminal itself is returned (no overhead).
    """
    nxt = terminal
    for mw in reversed(middlewares):
        if kind is not None and kind not in getattr(mw, "kinds", ("chat", "tool")):
            continue
        nxt = _wrap(mw, nxt)
    return nxt


def hidden_calls(middlewares: Sequence[Any]) -> list[tuple[int, int]]:
    """The pairs ``(outer, inner)`` of indexes into ``middlewares`` (outermost first, as
    :func:`chain` takes them; middleware objects or their classes) where ``inner`` declares
    ``sees_every_call`` and ``outer`` (listed before it) declares ``answers_without_next``, and
    both wrap a common call kind: the calls ``outer`` answers itself never reach ``inner``. Sorted;
    ``[]`` when the order is sound."""
    out = []
    for j, inner in enumerate(middlewares):
        if not getattr(inner, "sees_every_call", False):
            continue
        kinds = frozenset(getattr(inner, "kinds", ("chat", "tool")))
        for i in range(j):
            outer = middlewares[i]
            if getattr(outer, "answers_without_next", False) and kinds & frozenset(
                    getattr(outer, "kinds", ("chat", "tool"))):
                out.append((i, j))
    return sorted(out)


async def collect(stream: AsyncIterator[T]) -> list[T]:
    """All items of ``stream`` as a list. One reducer per purpose: :func:`collect` for every item,
    :func:`collect_one` for the one item of a tool or run chain, and
    :func:`seamkit._accumulate.collect_result` for a chat stream as an ``LLMResult``."""
    return [item async for item in stream]


@overload
async def collect_one(stream: AsyncIterator[T]) -> T: ...


@overload
async def collect_one(stream: AsyncIterator[Any], of: type[T]) -> T: ...


async def collect_one(stream: AsyncIterator[Any], of: type[Any] | None = None) -> Any:
    """The single item of ``stream``; with ``of``, an instance of that type (a run chain's
    ``AgentResult``). Raises :class:`~seamkit.errors.SeamkitError` naming what the stream yielded
    when it yields no item, more than one, or one that is not an ``of`` (a middleware broke the
    contract)."""
    items = [item async for item in stream]
    if len(items) != 1 or (of is not None and not isinstance(items[0], of)):
        if of is None:
            raise SeamkitError(f"expected exactly one item from the chain, got {len(items)}")
        got = ", ".join(type(i).__name__ for i in items) or "nothing"
        raise SeamkitError(f"the chain must yield exactly one {of.__name__}, yielded {got}")
    return items[0]
