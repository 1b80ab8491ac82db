"""The ``budget`` middleware: a ``Decimal`` USD ledger per run with a ceiling that a run overshoots
by at most one in-flight reservation (see Admission below).

How a chat call goes through it (tool calls are not wrapped):

1. **Price.** ``call.model.price`` (a :class:`~seamkit.pricing.Price`) prices the call. A model
   with no ``price`` attribute (or a call with no model) is *local* (costs nothing: always
   admitted, never charged). A model
   whose ``price`` is ``None`` is *unpriced*: under a USD ceiling it is refused with
   :class:`~seamkit.errors.BudgetExceeded` (``needed=None``) unless ``allow_unpriced`` is set, in
   which case it is admitted, not counted, and the result records a warning (once per run).
2. **Reservation.** Before dispatch the call reserves
   ``estimate_tokens(request)`` input tokens at the input price (the cache-write price when that is
   higher: a prompt written to a cache is billed at it) plus ``request.max_tokens`` (or
   ``default_max_tokens``) output tokens at the output price, in USD per million tokens.
3. **Admission.** The call is admitted iff, for its run *and every ancestor run*
   (``ctx.parent_run_id``, recorded per run by this middleware instance),
   ``spent + reserved < ceiling``; the reservation is then added to each of those ledgers in one
   synchronous critical section (no ``await`` inside it, guarded by a lock), so concurrent calls
   see each other's reservations. A ceiling is therefore passed by at most one in-flight
   reservation, however many calls run at once (provided actual costs stay within their
   reservations; see 5). A call whose reservation is 0 (a model priced at 0) is always admitted.
4. **Settlement.** When the stream ends, the reservation is released and the actual cost is added
   to ``spent``: ``usage.cost`` of the last usage seen, or its cost at the model's price when the
   provider left it unpriced. A stream that ends without any usage is charged its reservation (and
   the result says so). A stream that fails or is cancelled is charged **nothing** (or the usage
   it reported, if any) when it yielded no content (text, reasoning or tool-call fragment: the
   provider refused it before generating) and **its whole reservation** (or the usage it reported
   so far, when larger) when it did: it may have generated up to ``max_tokens``, and usage seen
   mid-stream is partial, so charging the reservation is the conservative choice.
5. **Warnings.** A ``Delta(warning=...)`` is added at the end of the stream only when something is
   noteworthy: an unpriced model was admitted, the actual cost exceeded the reservation (the token
   estimate was low, so the ceiling may be passed by that excess), no usage was reported, or the
   run reached its ceiling (later calls will be refused).

Place it *inside* ``retry`` and ``fallback`` (after them in ``middlewares:``, the first being the
outermost) so that every attempt is reserved and charged at the price of the model it really goes
to.

Ledgers live in the middleware instance, keyed by run id; a run's ``spent`` includes the spend of
its child runs. :meth:`BudgetMiddleware.ledger` shows one. A run's ancestors come from its
context (``ctx.ancestors``, parent first, set by ``RunContext.child()``), so a grandchild is
charged to every ancestor even when the runs between never called a model; a context that only
names its ``parent_run_id`` links that one level, and spend recorded before a run's parent is
learnt is carried up when it is. Up to ``max_tracked_runs`` ledgers are kept; the least recently used ones
with nothing in flight are dropped first (a dropped run that calls again starts from zero).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

from seamkit.errors import BudgetExceeded
from seamkit.middleware import Call, Next
from seamkit.pricing import MILLION, Price, cost_of
from seamkit.runtime.context import RunContext
from seamkit.tokens import estimate_tokens
from seamkit.values import ChatRequest, Delta, Usage

from seamkit_budget.config import BudgetConfig, _exact_usd

__all__ = ["BudgetMiddleware", "LedgerView", "build"]

ZERO = Decimal(0)
_LOCAL = object()  # getattr default: the model has no `price` attribute at all


class _Closing:
    """``async with _Closing(stream) as s``: closes ``s`` on exit when it can be closed (an async
    generator), so the inner stream (and a provider's HTTP response) is released at once when this
    middleware's own stream is closed early or cancelled (``contextlib.aclosing`` needs ``aclose``)."""

    __slots__ = ("stream",)

    def __init__(self, stream: AsyncIterator[Any]) -> None:
        self.stream = stream

    async def __aenter__(self) -> AsyncIterator[Any]:
        return self.stream

    async def __aexit__(self, *exc: object) -> None:
        close = getattr(self.stream, "aclose", None)
        if close is not None:
            await close()


def _usd(d: Decimal) -> str:
    return f"${d:f}"


@dataclass(slots=True)
class _Ledger:
    run_id: str
    parent: str | None = None
    spent: Decimal = ZERO
    reserved: Decimal = ZERO
    calls: int = 0
    in_flight: int = 0
    refused: int = 0
    unpriced_calls: int = 0
    warned_unpriced: bool = False
    warned_ceiling: bool = False


@dataclass(frozen=True, slots=True)
class LedgerView:
    """A snapshot of one run's ledger. USD amounts are ``Decimal``.

    ``spent``: settled cost of the run's calls and of its child runs' calls; ``reserved``: held by
    calls in flight (the run's and its children's); ``ceiling``: the run's limit; ``calls``:
    priced calls this run admitted itself; ``in_flight``: admitted calls (own and children's) not
    yet settled; ``refused``: calls of this run refused; ``unpriced_calls``: calls to an unpriced
    model admitted under ``allow_unpriced`` (not counted in ``spent``)."""

    run_id: str
    parent_run_id: str | None
    ceiling: Decimal
    spent: Decimal
    reserved: Decimal
    calls: int
    in_flight: int
    refused: int
    unpriced_calls: int

    @property
    def remaining(self) -> Decimal:
        """``ceiling - spent - reserved``, never below 0 (USD)."""
        return max(self.ceiling - self.spent - self.reserved, ZERO)


@dataclass(slots=True)
class _Ticket:
    own: _Ledger  # the calling run's ledger (its ancestors are looked up again at settlement)
    needed: Decimal


class BudgetMiddleware:
    """A chat middleware enforcing a USD ceiling per run (see the module doc for the rules).

    ``max_cost_usd``: the ceiling of each run (``Decimal``, ``str`` or ``int`` USD; floats raise
    ``ValueError`` as inexact; must be > 0). ``allow_unpriced``: admit unpriced models.
    ``default_max_tokens``: output tokens reserved when a request sets no ``max_tokens``.
    ``max_tracked_runs``: idle ledgers kept (least recently used dropped first).

    Calling it (``mw(call, next)``) returns the async iterator of deltas; it raises
    :class:`~seamkit.errors.BudgetExceeded` before dispatch when a call is refused.
    """

    kinds = frozenset({"chat"})

    def __init__(self, max_cost_usd: Decimal | str | int, *, allow_unpriced: bool = False,
                 default_max_tokens: int = 4096, max_tracked_runs: int = 100_000) -> None:
        if default_max_tokens < 1:
            raise ValueError("default_max_tokens must be at least 1")
        if max_tracked_runs < 1:
            raise ValueError("max_tracked_runs must be at least 1")
        self.ceiling: Decimal = _exact_usd(max_cost_usd)
        self.allow_unpriced = allow_unpriced
        self.default_max_tokens = default_max_tokens
        self.max_tracked_runs = max_tracked_runs
        self._ledgers: OrderedDict[str, _Ledger] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (f"BudgetMiddleware(max_cost_usd={str(self.ceiling)!r}, allow_unpriced={self.allow_unpriced}, "
                f"default_max_tokens={self.default_max_tokens})")

    # ----------------------------------------------------------------------------------- inspection

    def ledger(self, run_id: str) -> LedgerView:
        """A snapshot of ``run_id``'s ledger (all zeros for a run this middleware has not seen)."""
        with self._lock:
            led = self._ledgers.get(run_id)
            if led is None:
                return LedgerView(run_id, None, self.ceiling, ZERO, ZERO, 0, 0, 0, 0)
            return self._view(led)

    def _view(self, led: _Ledger) -> LedgerView:
        return LedgerView(led.run_id, led.parent, self.ceiling, led.spent, led.reserved, led.calls,
                          led.in_flight, led.refused, led.unpriced_calls)

    def reservation(self, request: ChatRequest, price: Price) -> Decimal:
        """The USD reserved for ``request`` at ``price``: ``estimate_tokens(request)`` at the input
        price (or the cache-write price when higher) plus ``request.max_tokens`` (or
        ``default_max_tokens``) at the output price, prices being USD per million tokens."""
        tokens_in = estimate_tokens(request)
        tokens_out = request.max_tokens or self.default_max_tokens
        price_in = price.input
        if price.cache_write is not None and price.cache_write > price_in:
            price_in = price.cache_write
        return (tokens_in * price_in + tokens_out * price.output) / MILLION

    # -------------------------------------------------------------------------------- ledger access

    def _get(self, run_id: str) -> _Ledger:
        led = self._ledgers.get(run_id)
        if led is None:
            led = _Ledger(run_id)
            self._ledgers[run_id] = led
        else:
            self._ledgers.move_to_end(run_id)
        return led

    def _evict(self, keep: set[str]) -> None:
        over = len(self._ledgers) - self.max_tracked_runs
        if over <= 0:
            return
        idle: list[str] = []
        for rid, led in self._ledgers.items():  # oldest first; stops as soon as enough are found
            if led.in_flight == 0 and rid not in keep:
                idle.append(rid)
                if len(idle) == over:
                    break
        for rid in idle:
            del self._ledgers[rid]

    def _ancestors(self, led: _Ledger) -> list[_Ledger]:
        out: list[_Ledger] = []
        seen = {led.run_id}
        nxt = led.parent
        while nxt is not None and nxt not in seen:
            seen.add(nxt)
            a = self._get(nxt)
            out.append(a)
            nxt = a.parent
        return out

    def _link(self, run_id: str, parent: str) -> _Ledger:
        """Record ``parent`` as the parent of ``run_id`` (once). What the run's ledger already holds
        (its own and its children's spend and reservations) is carried up to the new ancestors, so
        every ledger always includes its whole subtree."""
        own = self._get(run_id)
        if own.parent is None and parent != run_id:
            own.parent = parent
            ancestors = self._ancestors(own)
            if any(a.parent == run_id for a in ancestors):
                own.parent = None  # a cycle: refuse the link
            else:
                for a in ancestors:
                    a.spent += own.spent
                    a.reserved += own.reserved
                    a.in_flight += own.in_flight
        return own

    def _lineage(self, ctx: RunContext) -> tuple[_Ledger, ...]:
        """The calling run's ledger then its ancestors' (created as needed), linked from
        ``ctx.ancestors`` (parent first), so a grandchild is charged to every ancestor even when
        the runs between never called a model themselves."""
        chain = (ctx.run_id, *ctx.ancestors) if ctx.ancestors else (
            (ctx.run_id, ctx.parent_run_id) if ctx.parent_run_id is not None else (ctx.run_id,))
        for i in range(len(chain) - 2, -1, -1):  # oldest link first
            self._link(chain[i], chain[i + 1])
        own = self._get(ctx.run_id)
        lineage = (own, *self._ancestors(own))
        self._evict({led.run_id for led in lineage})
        return lineage

    # -------------------------------------------------------------------------------- the ledger ops

    def _admit(self, call: Call, needed: Decimal) -> _Ticket:
        ctx = call.ctx
        with self._lock:
            lineage = self._lineage(ctx)
            if needed > 0:
                for led in lineage:
                    if led.spent + led.reserved >= self.ceiling:
                        lineage[0].refused += 1
                        raise self._refusal(lineage[0], led, needed, call)
            for led in lineage:
                led.reserved += needed
                led.in_flight += 1
            lineage[0].calls += 1
            return _Ticket(lineage[0], needed)

    def _refusal(self, own: _Ledger, led: _Ledger, needed: Decimal, call: Call) -> BudgetExceeded:
        whose = f"run {led.run_id}" if led is own else f"run {led.run_id} (an ancestor of run {own.run_id})"
        return BudgetExceeded(
            f"budget: {whose} has spent {_usd(led.spent)} and reserved {_usd(led.reserved)} of its "
            f"{_usd(self.ceiling)} ceiling; the call to {_model_name(call.model)} needing {_usd(needed)} "
            "was not sent",
            ceiling=self.ceiling, spent=led.spent, reserved=led.reserved, needed=needed, run_id=led.run_id,
        )

    def _settle(self, ticket: _Ticket, charge: Decimal) -> list[str]:
        """Release the reservation and add ``charge`` to every ledger of the lineage; the warnings
        about a run reaching its ceiling."""
        notes: list[str] = []
        with self._lock:
            own = ticket.own
            for led in (own, *self._ancestors(own)):
                led.reserved -= ticket.needed
                led.spent += charge
                led.in_flight -= 1
                if charge > 0 and not led.warned_ceiling and led.spent >= self.ceiling:
                    led.warned_ceiling = True
                    notes.append(f"budget: run {led.run_id} has spent {_usd(led.spent)}, reaching its "
                                 f"{_usd(self.ceiling)} ceiling; further model calls will be refused")
        return notes

    # ------------------------------------------------------------------------------------ the chain

    async def __call__(self, call: Call, nxt: Next) -> AsyncIterator[Any]:
        """The deltas of ``call`` through the rest of the chain, with warnings added when
        noteworthy. Raises :class:`~seamkit.errors.BudgetExceeded` (when iteration starts, before
        ``nxt`` is called) for a refused call."""
        if call.kind != "chat":
            async with _Closing(nxt(call)) as items:
                async for item in items:
                    yield item
            return
        price = getattr(call.model, "price", _LOCAL)
        if price is _LOCAL:  # a local model: free, nothing to reserve or record
            async with _Closing(nxt(call)) as stream:
                async for d in stream:
                    yield d
            return
        if price is None:
            if self._admit_unpriced(call):
                yield Delta(warning=f"budget: {_model_name(call.model)} has no known price; its calls are not "
                                    f"counted against the {_usd(self.ceiling)} ceiling of run {call.ctx.run_id}")
            async with _Closing(nxt(call)) as stream:
                async for d in stream:
                    yield d
            return
        price = cast(Price, price)
        # admission is synchronous: no other call can slip in between the check and the reservation
        ticket = self._admit(call, self.reservation(call.request, price))  # type: ignore[arg-type]
        usage: Usage | None = None
        content = False
        finished = False
        notes: list[str] = []
        try:
            async with _Closing(nxt(call)) as stream:
                async for d in stream:
                    if d.usage is not None:
                        usage = d.usage
                    if not content and (d.text or d.reasoning or d.tool_call is not None):
                        content = True
                    yield d
            finished = True
        finally:
            # runs on success, failure, cancellation and early close alike; no await in here
            if usage is not None:
                charge = usage.cost if usage.cost is not None else cost_of(usage, price)
                if not finished and content and charge < ticket.needed:
                    charge = ticket.needed  # usage seen mid-stream is partial: stay conservative
                elif charge > ticket.needed:
                    notes.append(f"budget: the call to {_model_name(call.model)} cost {_usd(charge)}, above "
                                 f"its {_usd(ticket.needed)} reservation (the token estimate was low)")
            elif finished or content:
                charge = ticket.needed
                if finished:
                    notes.append(f"budget: {_model_name(call.model)} reported no usage; charged the "
                                 f"call's {_usd(charge)} reservation")
            else:
                charge = ZERO
            notes.extend(self._settle(ticket, charge))
        for note in notes:
            yield Delta(warning=note)

    def _admit_unpriced(self, call: Call) -> bool:
        """Refuse a call to an unpriced model (raises BudgetExceeded) or count it; True when the
        run should be warned (its first such call)."""
        ctx = call.ctx
        with self._lock:
            led = self._lineage(ctx)[0]
            if not self.allow_unpriced:
                led.refused += 1
                raise BudgetExceeded(
                    f"budget: {_model_name(call.model)} has no known price, so its cost cannot be held "
                    f"under the {_usd(self.ceiling)} ceiling of run {led.run_id}; set a price for it or "
                    "allow_unpriced: true",
                    ceiling=self.ceiling, spent=led.spent, reserved=led.reserved, needed=None, run_id=led.run_id,
                )
            led.unpriced_calls += 1
            warn = not led.warned_unpriced
            led.warned_unpriced = True
            return warn


def _model_name(model: Any) -> str:
    provider = getattr(model, "provider", None)
    name = getattr(model, "model", None)
    if provider and name:
        return f"model {provider}:{name}"
    return f"model {name or provider or '?'}"


def build(config: BudgetConfig) -> BudgetMiddleware:
    """The ``budget`` middleware for a validated :class:`~seamkit_budget.config.BudgetConfig`."""
    return BudgetMiddleware(config.max_cost_usd, allow_unpriced=config.allow_unpriced,
                            default_max_tokens=config.default_max_tokens,
                            max_tracked_runs=config.max_tracked_runs)
