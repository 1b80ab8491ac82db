"""The ``budget`` middleware: a ``Decimal`` USD ledger per run with a ceiling that a run overshoots
by at most one in-flight reservation (see Admission below).

How a chat call goes through it (tool calls are not wrapped):

1. **Price.** ``call.model.price`` (a :class:`~seamkit._pricing.Price`) prices the call. A model
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

**Shared mode** (``store=`` given): the ceiling's ledger is kept in the store
(:mod:`seamkit_budget.shared`), keyed by ``ledger`` or else by the run tree's root run id, so every
process using that store charges one ceiling. Admission is one atomic ``increment`` there of the
reservation in whole nano-dollars (:mod:`seamkit_budget.units`, rounded up), with the same rule
(the total before this call's amount under the ceiling) and so the same bound: one in-flight
reservation in all. The local ledgers below still record what this process saw (calls, refusals,
charges) but do not decide admission.

Ledgers live in the middleware instance, keyed by run id; a run's ``spent`` includes the spend of
its child runs. :meth:`BudgetMiddleware.ledger` shows one. A run's ancestors come from its
context (``ctx.ancestors``, parent first, set by ``RunContext.child()``), so a grandchild is
charged to every ancestor even when the runs between never called a model; a context that only
names its ``parent_run_id`` links that one level, and spend recorded before a run's parent is
learnt is carried up when it is. Up to ``max_tracked_runs`` ledgers are kept; the least recently used ones
with nothing in flight are dropped first (a dropped run that calls again starts from zero).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

from seamkit.errors import BudgetExceeded, SeamkitError
from seamkit.plugin import MILLION, Call, Next, Price, RunContext, cost_of, estimate_tokens
from seamkit.values import ChatRequest, Delta, Scope, Usage

from seamkit_budget.config import BudgetConfig, _exact_usd
from seamkit_budget.shared import SharedLedger, check_ledger_key
from seamkit_budget.units import ceiling_units, from_units, to_units

__all__ = ["BudgetMiddleware", "LedgerView", "build"]

log = logging.getLogger("seamkit.budget")

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
    shared: tuple[Scope, str, int] | None = None  # shared mode: (scope, ledger key, units reserved)


class BudgetMiddleware:
    """A chat middleware enforcing a USD ceiling per run (see the module doc for the rules).

    ``max_cost_usd``: the ceiling of each run (``Decimal``, ``str`` or ``int`` USD; floats raise
    ``ValueError`` as inexact; must be > 0). ``allow_unpriced``: admit unpriced models.
    ``default_max_tokens``: output tokens reserved when a request sets no ``max_tokens``.
    ``max_tracked_runs``: idle ledgers kept (least recently used dropped first).
    ``store``: a :class:`~seamkit._ports.StorePort` to keep the ceiling's ledger in, shared with
    every process using the same store (see *Shared mode* in the module doc); ``None`` (default):
    in this instance's memory. ``ledger``: the shared ledger's key (default: the root run id of
    each call's run); ``namespace``: prefix of its store keys. The ceiling of a shared ledger must
    have at most 9 decimal places (``ValueError``).

    Calling it (``mw(call, next)``) returns the async iterator of deltas; it raises
    :class:`~seamkit.errors.BudgetExceeded` before dispatch when a call is refused.
    """

    kinds = frozenset({"chat"})

    def __init__(self, max_cost_usd: Decimal | str | int, *, allow_unpriced: bool = False,
                 default_max_tokens: int = 4096, max_tracked_runs: int = 100_000, store: Any = None,
                 ledger: str | None = None, namespace: str = "budget") -> None:
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
        if ledger is not None and store is None:
            raise ValueError("a ledger key names a shared ledger: it needs a store")
        self.ledger_key = check_ledger_key(ledger) if ledger is not None else None
        self.shared = SharedLedger(store, namespace=check_ledger_key(namespace)) if store is not None else None
        self._ceiling_units = ceiling_units(self.ceiling) if store is not None else 0

    def __repr__(self) -> str:
        where = "" if self.shared is None else (
            f", store={type(self.shared.store).__name__}, ledger={self.ledger_key or '<root run>'!s}")
        return (f"BudgetMiddleware(max_cost_usd={str(self.ceiling)!r}, allow_unpriced={self.allow_unpriced}, "
                f"default_max_tokens={self.default_max_tokens}{where})")

    async def aclose(self) -> None:
        """Close the shared ledger's store (nothing to do in-process)."""
        if self.shared is not None:
            await self.shared.store.aclose()

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

    def _admit(self, call: Call, needed: Decimal, *, check: bool = True) -> _Ticket:
        ctx = call.ctx
        with self._lock:
            lineage = self._lineage(ctx)
            if needed > 0 and check:
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
        about a run reaching its ceiling (in-process mode only: a shared ledger warns itself)."""
        notes: list[str] = []
        with self._lock:
            own = ticket.own
            for led in (own, *self._ancestors(own)):
                led.reserved -= ticket.needed
                led.spent += charge
                led.in_flight -= 1
                if (ticket.shared is None and charge > 0 and not led.warned_ceiling
                        and led.spent >= self.ceiling):
                    led.warned_ceiling = True
                    notes.append(f"budget: run {led.run_id} has spent {_usd(led.spent)}, reaching its "
                                 f"{_usd(self.ceiling)} ceiling; further model calls will be refused")
        return notes

    # ------------------------------------------------------------------------------ the shared ledger

    def shared_ledger_key(self, ctx: RunContext) -> str:
        """The shared ledger a call of ``ctx``'s run charges: the configured ``ledger``, else the
        root of the run's lineage (``ctx.ancestors[-1]``, else ``ctx.parent_run_id``, else
        ``ctx.run_id``)."""
        if self.ledger_key is not None:
            return self.ledger_key
        if ctx.ancestors:
            return ctx.ancestors[-1]
        return ctx.parent_run_id if ctx.parent_run_id is not None else ctx.run_id

    def _ledger_name(self, key: str, run_id: str) -> str:
        if self.ledger_key is not None:
            return f"shared ledger {key}"
        return f"run {key}" if key == run_id else f"run {key} (an ancestor of run {run_id})"

    async def _admit_shared(self, call: Call, needed: Decimal) -> _Ticket:
        """Reserve on the shared ledger (raises BudgetExceeded when refused), then record the call
        in this process's ledgers without checking them (the shared ledger is the ceiling)."""
        assert self.shared is not None
        ctx = call.ctx
        key = self.shared_ledger_key(ctx)
        scope = Scope(ctx.scope.tenant)
        units = to_units(needed)
        if units > 0:
            # a task of its own, shielded: a caller cancelled mid-reservation must not leave an
            # admitted reservation behind with nobody to settle it
            task = asyncio.ensure_future(self.shared.reserve(scope, key, units, self._ceiling_units))
            try:
                refusal = await asyncio.shield(task)
            except asyncio.CancelledError:
                task.add_done_callback(lambda t: self._abandoned(t, scope, key, units))
                raise
            if refusal is not None:
                with self._lock:
                    self._lineage(ctx)[0].refused += 1
                spent, reserved = from_units(refusal.spent), from_units(refusal.reserved)
                raise BudgetExceeded(
                    f"budget: {self._ledger_name(key, ctx.run_id)} has spent {_usd(spent)} and reserved "
                    f"{_usd(reserved)} of its {_usd(self.ceiling)} ceiling; the call to {_model_name(call.model)} "
                    f"needing {_usd(needed)} was not sent",
                    ceiling=self.ceiling, spent=spent, reserved=reserved, needed=needed, run_id=key,
                )
        ticket = self._admit(call, needed, check=False)
        ticket.shared = (scope, key, units)
        return ticket

    def _abandoned(self, task: asyncio.Future[Any], scope: Scope, key: str, units: int) -> None:
        """A reservation whose caller was cancelled: give it back if it was admitted."""
        if task.cancelled() or task.exception() is not None or task.result() is not None:
            return
        assert self.shared is not None
        release = asyncio.ensure_future(self.shared.settle(scope, key, units, 0))
        release.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved: no loop warning

    async def _settle_shared(self, ticket: _Ticket, charge: Decimal, model: Any) -> list[str]:
        """Settle on the shared ledger (charge rounded up to whole units), then locally; a store
        failure leaves the reservation held (the ledger errs towards refusing) and says so."""
        assert self.shared is not None and ticket.shared is not None
        scope, key, units = ticket.shared
        charge_units = to_units(charge)
        notes = self._settle(ticket, charge)
        if units == 0 and charge_units == 0:
            return notes
        try:
            spent = await asyncio.shield(self.shared.settle(scope, key, units, charge_units))
        except SeamkitError as exc:
            log.warning("budget: settling the call to %s on shared ledger %s failed (%s); its reservation stays "
                        "held", _model_name(model), key, exc)
            notes.append(f"budget: the shared ledger {key} could not be settled ({type(exc).__name__}); the call's "
                         f"{_usd(from_units(units))} reservation stays held there")
            return notes
        own = ticket.own
        if charge_units > 0 and spent >= self._ceiling_units and not own.warned_ceiling:
            own.warned_ceiling = True
            notes.append(f"budget: {self._ledger_name(key, own.run_id)} has spent {_usd(from_units(spent))}, "
                         f"reaching its {_usd(self.ceiling)} ceiling; further model calls will be refused")
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
        needed = self.reservation(call.request, price)  # type: ignore[arg-type]
        ticket = self._admit(call, needed) if self.shared is None else await self._admit_shared(call, needed)
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
            # runs on success, failure, cancellation and early close alike; in-process there is no
            # await in here, and the shared settlement runs shielded so a cancellation cannot cut it
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
            if ticket.shared is None:
                notes.extend(self._settle(ticket, charge))
            else:
                notes.extend(await self._settle_shared(ticket, charge, call.model))
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
    store = None
    if config.store is not None:
        from seamkit.plugin import build_nested

        store = build_nested("store", config.store, at="store")
    return BudgetMiddleware(config.max_cost_usd, allow_unpriced=config.allow_unpriced,
                            default_max_tokens=config.default_max_tokens,
                            max_tracked_runs=config.max_tracked_runs, store=store, ledger=config.ledger,
                            namespace=config.namespace)
