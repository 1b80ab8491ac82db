"""The one middleware contract.

A :class:`Call` envelope carries a ``chat`` or ``tool`` request with its run context. A middleware
is an async generator function ``mw(call, next)`` that yields what the rest of the chain yields
(``Delta`` items for chat calls, a single ``ToolResult`` for tool calls), and may act

- *before* ``next`` (change the call), - *after* it (change or add items),
- *around* it (call ``next`` again, e.g. retry), - *instead* of it (yield without calling ``next``).

:func:`chain` folds middlewares around a terminal; :func:`collect` and :func:`collect_one` reduce
a stream. A middleware may set ``kinds`` (via :func:`middleware`) to say which call kinds it
wraps; it is left out of the other chains entirely, so it costs nothing there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from seamkit._frozen import fast_init
from seamkit.errors import SeamkitError
from seamkit.values import EMPTY, ChatRequest, FrozenDict, ToolRequest

if TYPE_CHECKING:
    from seamkit.runtime.context import RunContext

__all__ = ["Call", "CallKind", "Next", "Middleware", "middleware", "chain", "collect", "collect_one"]

CallKind = Literal["chat", "tool"]
T = TypeVar("T")


@fast_init
@dataclass(frozen=True, slots=True)
class Call:
    """One call travelling through a middleware chain: ``kind``, the ``request`` (a
    :class:`~seamkit.values.ChatRequest` or :class:`~seamkit.values.ToolRequest`), the run's
    ``ctx``, ``meta`` (free-form, frozen; an agent run sets ``step``, the model turn from 1, and
    ``agent``, the name of the agent making the call) and, for chat calls, the ``model``
    (the :class:`~seamkit.ports.LLMPort` the chain ends at: its ``provider``, ``model`` and, when
    it has one, ``price`` (a :class:`~seamkit.pricing.Price`) are what budget and fallback
    middlewares read)."""

    kind: CallKind
    request: ChatRequest | ToolRequest
    ctx: RunContext
    meta: FrozenDict = EMPTY
    model: Any = None

    def replace(self, **changes: Any) -> Call:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)


Next = Callable[[Call], AsyncIterator[Any]]
Middleware = Callable[[Call, Next], AsyncIterator[Any]]


def middleware(*, kinds: Iterable[CallKind] = ("chat", "tool")) -> Callable[[Middleware], Middleware]:
    """Mark a middleware with the call ``kinds`` it wraps (default: both)."""
    ks = frozenset(kinds)
    bad = ks - {"chat", "tool"}
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


async def collect(stream: AsyncIterator[T]) -> list[T]:
    """All items of ``stream`` as a list."""
    return [item async for item in stream]


async def collect_one(stream: AsyncIterator[T]) -> T:
    """The single item of ``stream``. Raises :class:`~seamkit.errors.SeamkitError` when the stream
    yields no item or more than one (a middleware broke the tool-call contract)."""
    items = [item async for item in stream]
    if len(items) != 1:
        raise SeamkitError(f"expected exactly one item from the chain, got {len(items)}")
    return items[0]
