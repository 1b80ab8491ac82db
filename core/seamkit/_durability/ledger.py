"""The effect ledger: run an operation with outside effects at most once per idempotency key.

A receipt per key moves ``prepared`` -> ``completed`` (value stored) / ``failed`` (the operation
raised :class:`~seamkit.errors.EffectNotApplied`: certainly not applied, may be retried) /
``uncertain`` (it raised anything else, or a crash left it ``prepared``: never retried
automatically, unless the operation is idempotent). A person who has checked the outside system
:meth:`EffectLedger.settle`\\ s an uncertain receipt: ``completed`` (applied) or ``failed`` (not
applied). Receipts live in a :class:`~seamkit._ports.StorePort`, so they survive the process (the
ledger asks only for the three methods of :class:`ReceiptStore`).

:class:`UncertainEffect` is how a run records a tool call whose outcome is unknown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from seamkit._durability.singleflight import SingleFlight
from seamkit.errors import (
    CodecError,
    EffectNotApplied,
    EffectUncertain,
    InfrastructureUnavailable,
    StoreUnavailable,
)
from seamkit.values import EMPTY, FrozenDict, Scope, freeze

__all__ = [
    "APPLIED_TEMPLATE",
    "INTERRUPTED_REASON",
    "STOPPED_REASON",
    "UNCERTAIN_TEMPLATE",
    "EffectLedger",
    "ReceiptStore",
    "ReceiptStatus",
    "Settlement",
    "UncertainEffect",
    "applied_text",
    "check_effect_key",
    "effect_key",
    "effects_detail",
    "uncertain_warning",
]

T = TypeVar("T")


class ReceiptStore(Protocol):
    """What the ledger asks of its store: three methods of :class:`~seamkit._ports.StorePort` (every
    store is one). Named here, not imported from the ports, because the run context holds a ledger
    and the run context sits below the ports (docs/layers.md)."""

    async def get(self, scope: Scope, key: str, default: Any = None) -> Any: ...

    async def set(self, scope: Scope, key: str, value: Any, *, ttl: float | None = None) -> None: ...

    async def delete(self, scope: Scope, key: str) -> bool: ...
ReceiptStatus = Literal["prepared", "completed", "failed", "uncertain"]
Settlement = Literal["applied", "not_applied"]
_LEDGER_SCOPE = Scope(tenant="seamkit.effects")

#: The tool result of a side-effecting call whose outcome is unknown (``reason``: why).
UNCERTAIN_TEMPLATE = (
    "The outcome of this call is unknown: {reason}. It may or may not have taken effect, and it will "
    "not be run again automatically; do not repeat it unless you know that it did not happen."
)
#: The tool result of a call a person settled as applied (see :func:`applied_text`).
APPLIED_TEMPLATE = "A person checked: this call was applied."


#: Why the outcome of an operation is unknown when the run stopped while it ran (the task running
#: it was cancelled: ``ctx.cancellation``, Ctrl-C, SIGTERM).
STOPPED_REASON = "the run was stopped (cancelled, interrupted or terminated) while the call ran"
#: Why the outcome is unknown when a receipt was left ``prepared`` (the process died mid-call).
INTERRUPTED_REASON = "the process stopped while the call ran (killed or crashed), before its outcome was recorded"


def effect_key(run_id: str, step: int, call_id: str) -> str:
    """The idempotency key of a side-effecting tool call in the effect ledger:
    ``<run id>:<step>:<call id>``, the same for every attempt of the call (the step is restored on
    resume) and different for every other call (the step too: providers, local ones above all, may
    reuse call ids across turns)."""
    return f"{run_id}:{step}:{call_id}"


def check_effect_key(key: object) -> str:
    """``key`` when it is a usable idempotency key. Raises ``TypeError`` for a non-``str`` and
    ``ValueError`` for an empty or blank one: every effect would share that one receipt, so an
    unrelated effect would be skipped as already done."""
    if not isinstance(key, str):
        raise TypeError(f"an effect key must be a str, got {type(key).__name__}")
    if not key.strip():
        raise ValueError(
            f"an effect key must name one effect (e.g. '<order id>:charge'), got {key!r}: with an empty "
            "or blank key, unrelated effects would share one receipt and all but the first would be skipped"
        )
    return key


@dataclass(frozen=True, slots=True)
class UncertainEffect:
    """A side-effecting tool call of a run whose outcome is unknown, as the run records it in its
    checkpoint state (``state["uncertain_effects"]``).

    ``call_id`` / ``tool`` / ``arguments``: the call as it ran. ``key``: its idempotency key in the
    effect ledger. ``reason``: why the outcome is unknown. ``waits``: ``True`` when the run is
    suspended until a person settles it (a crash interrupted the call: it has no result yet);
    ``False`` when the model was already told that the outcome is unknown. ``settled``:
    ``"applied"`` / ``"not_applied"`` once a person has settled it (``None``: unresolved);
    ``result``: the text a person gave with ``applied``.
    """

    call_id: str
    tool: str
    key: str
    reason: str
    arguments: FrozenDict = EMPTY
    waits: bool = False
    settled: Settlement | None = None
    result: str | None = None

    def __post_init__(self) -> None:
        if type(self.arguments) is not FrozenDict:
            object.__setattr__(self, "arguments", freeze(self.arguments))


def applied_text(result: str | None) -> str:
    """The tool result the model sees for a call a person settled as applied, with the person's
    ``result`` text when given."""
    return APPLIED_TEMPLATE if not result else f"{APPLIED_TEMPLATE} Result: {result}"


def uncertain_warning(run_id: str, effect: UncertainEffect) -> str:
    """The run warning for an unresolved uncertain effect (removed once it is settled). It names
    the ways to settle it but no command line: only the caller knows how its store is reached (the
    CLI prints runnable ``seamkit runs settle`` commands, ``--agent FILE`` included, itself)."""
    waits = "; the run waits for that" if effect.waits else ""
    return (
        f"the outcome of tool call {effect.call_id} ({effect.tool}) of run {run_id} is unknown ({effect.reason}); "
        f"check it, then settle it as applied or not applied (Agent.settle_effect, or seamkit runs settle){waits}"
    )


def effects_detail(effects: Iterable[UncertainEffect]) -> str | None:
    """The run's status detail for its unresolved uncertain effects, ``None`` when there are none."""
    open_ = [e for e in effects if e.settled is None]
    if not open_:
        return None
    waiting = [e.call_id for e in open_ if e.waits]
    if waiting:
        n = len(waiting)
        return f"waiting for a person to settle {n} tool call{'s' if n != 1 else ''} whose outcome is unknown: " + (
            ", ".join(waiting))
    n = len(open_)
    return f"{n} tool call{'s' if n != 1 else ''} with an unknown outcome, not settled: " + (
        ", ".join(e.call_id for e in open_))


class EffectLedger:
    """``await ledger.run(key, op)``: the first call with ``key`` runs ``op()`` and stores its value
    in a ``completed`` receipt; later calls (any process using the same store) return the stored
    value without running ``op``.

    Raises :class:`~seamkit.errors.EffectUncertain` when the key's receipt is ``uncertain`` or was
    left ``prepared`` by an interrupted attempt, and when ``op`` raises anything but
    :class:`~seamkit.errors.EffectNotApplied` (the exception is chained as ``__cause__``). An
    ``EffectNotApplied`` from ``op`` records ``failed`` and propagates; the next call runs ``op``
    again. A value the codec cannot store leaves the receipt ``uncertain`` (the op ran).
    ``store=None`` keeps receipts in this process only.

    ``tenant`` keeps ledgers of different tenants apart; keys are the caller's idempotency keys
    (the agent loop uses ``"<run id>:<step>:<tool call id>"``). Every method refuses an empty or
    blank key (see :func:`check_effect_key`).
    """

    __slots__ = ("_flight", "_local", "_scope", "store")

    def __init__(self, store: ReceiptStore | None = None, *, tenant: str = "default") -> None:
        self.store = store
        self._scope = Scope(tenant=f"{_LEDGER_SCOPE.tenant}:{tenant}")
        self._local: dict[str, dict[str, Any]] = {}
        self._flight = SingleFlight()

    async def receipt(self, key: str) -> dict[str, Any] | None:
        """The receipt for ``key`` (``{"status": ..., "value": ..., "error": ...}``) or ``None``."""
        check_effect_key(key)
        if self.store is None:
            r = self._local.get(key)
            return dict(r) if r is not None else None
        got = await self.store.get(self._scope, key)
        return dict(got) if got is not None else None

    async def _put(self, key: str, receipt: dict[str, Any]) -> None:
        if self.store is None:
            self._local[key] = receipt
        else:
            await self.store.set(self._scope, key, receipt)

    async def mark_uncertain(self, key: str, reason: str) -> None:
        """Record ``key`` as uncertain (e.g. a person says the outcome is unknown)."""
        check_effect_key(key)
        await self._put(key, {"status": "uncertain", "error": reason})

    async def forget(self, key: str) -> None:
        """Delete ``key``'s receipt: a person has checked that the effect did not happen."""
        check_effect_key(key)
        if self.store is None:
            self._local.pop(key, None)
        else:
            await self.store.delete(self._scope, key)

    async def settle(self, key: str, *, applied: bool, value: Any = None, note: str = "") -> None:
        """Record what a person found out about ``key``'s effect: ``applied=True`` stores a
        ``completed`` receipt holding ``value`` (what a later :meth:`run` with ``key`` returns
        without running its operation); ``applied=False`` stores ``failed`` (the next :meth:`run`
        runs it). ``note`` is kept in the receipt. Raises ``ValueError`` when the receipt is already
        ``completed`` by the operation itself (nothing to settle), and
        :class:`~seamkit.errors.CodecError` for a ``value`` the store cannot encode."""
        check_effect_key(key)
        current = await self.receipt(key)
        if current is not None and current.get("status") == "completed" and not current.get("settled"):
            raise ValueError(f"effect {key!r} completed and its result was recorded: there is nothing to settle")
        if applied:
            await self._put(key, {"status": "completed", "value": value, "settled": "applied", "note": note})
        else:
            await self._put(key, {"status": "failed", "error": note or "a person settled it as not applied",
                                  "settled": "not_applied"})

    async def run(self, key: str, op: Callable[[], Awaitable[T]], *, idempotent: bool = False) -> T:
        """Run ``op`` at most once for ``key`` (see the class doc). ``idempotent=True``: ``op``
        hands ``key`` to the outside system, which applies one key at most once, so an ``uncertain``
        or interrupted (``prepared``) receipt is no reason to hold back: ``op`` runs again.

        Raises ``ValueError`` / ``TypeError`` for an empty, blank or non-``str`` ``key`` before
        anything runs."""
        check_effect_key(key)
        # two callers with one key in one process share one attempt
        result: T = await self._flight.run(key, lambda: self._run(key, op, idempotent))
        return result

    async def _run(self, key: str, op: Callable[[], Awaitable[T]], idempotent: bool) -> T:
        r = await self.receipt(key)
        if r is not None:
            status = r.get("status")
            if status == "completed":
                value: T = r.get("value")  # type: ignore[assignment]
                return value
            if status == "uncertain" and not idempotent:
                raise EffectUncertain(key, r.get("error") or "outcome unknown")
            if status == "prepared" and not idempotent:
                reason = INTERRUPTED_REASON
                await self.mark_uncertain(key, reason)
                raise EffectUncertain(key, reason)
        await self._put(key, {"status": "prepared"})
        try:
            value = await op()
        except EffectNotApplied as exc:
            await self._put(key, {"status": "failed", "error": f"{type(exc).__name__}: {exc}"})
            raise
        except InfrastructureUnavailable as exc:
            # not the call's outcome: the run stops unfinished (its caller retries it); the call is
            # uncertain, so only an idempotent one runs again then
            try:
                await self.mark_uncertain(key, f"the operation raised {type(exc).__name__}: {exc}")
            except StoreUnavailable:
                pass
            raise
        except (asyncio.CancelledError, Exception) as exc:
            # a CancelledError here is the run being stopped (its text is empty or internal)
            reason = (STOPPED_REASON if isinstance(exc, asyncio.CancelledError)
                      else f"the operation raised {type(exc).__name__}: {exc}")
            try:
                await self.mark_uncertain(key, reason)
            except StoreUnavailable:
                pass  # the receipt stays 'prepared', which also reads as uncertain
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise EffectUncertain(key, reason) from exc
        try:
            await self._put(key, {"status": "completed", "value": value})
        except CodecError as exc:
            await self.mark_uncertain(key, f"its value cannot be stored: {exc}")
            raise
        return value
