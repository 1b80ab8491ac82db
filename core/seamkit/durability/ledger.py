"""The effect ledger: run an operation with outside effects at most once per idempotency key.

A receipt per key moves ``prepared`` -> ``completed`` (value stored) / ``failed`` (the operation
raised :class:`~seamkit.errors.EffectNotApplied`: certainly not applied, may be retried) /
``uncertain`` (it raised anything else, or a crash left it ``prepared``: never retried
automatically). Receipts live in a :class:`~seamkit.ports.StorePort`, so they survive the process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

from seamkit.durability.singleflight import SingleFlight
from seamkit.errors import CodecError, EffectNotApplied, EffectUncertain, StoreUnavailable
from seamkit.ports import StorePort
from seamkit.values import Scope

__all__ = ["EffectLedger", "ReceiptStatus"]

T = TypeVar("T")
ReceiptStatus = Literal["prepared", "completed", "failed", "uncertain"]
_LEDGER_SCOPE = Scope(tenant="seamkit.effects")


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
    (the agent loop uses ``"<run id>:<step>:<tool call id>"``).
    """

    __slots__ = ("_flight", "_local", "_scope", "store")

    def __init__(self, store: StorePort | None = None, *, tenant: str = "default") -> None:
        self.store = store
        self._scope = Scope(tenant=f"{_LEDGER_SCOPE.tenant}:{tenant}")
        self._local: dict[str, dict[str, Any]] = {}
        self._flight = SingleFlight()

    async def receipt(self, key: str) -> dict[str, Any] | None:
        """The receipt for ``key`` (``{"status": ..., "value": ..., "error": ...}``) or ``None``."""
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
        await self._put(key, {"status": "uncertain", "error": reason})

    async def forget(self, key: str) -> None:
        """Delete ``key``'s receipt: a person has checked that the effect did not happen."""
        if self.store is None:
            self._local.pop(key, None)
        else:
            await self.store.delete(self._scope, key)

    async def run(self, key: str, op: Callable[[], Awaitable[T]]) -> T:
        # two callers with one key in one process share one attempt
        result: T = await self._flight.run(key, lambda: self._run(key, op))
        return result

    async def _run(self, key: str, op: Callable[[], Awaitable[T]]) -> T:
        r = await self.receipt(key)
        if r is not None:
            status = r.get("status")
            if status == "completed":
                value: T = r.get("value")  # type: ignore[assignment]
                return value
            if status == "uncertain":
                raise EffectUncertain(key, r.get("error") or "outcome unknown")
            if status == "prepared":
                reason = "a previous attempt was interrupted after it was prepared"
                await self.mark_uncertain(key, reason)
                raise EffectUncertain(key, reason)
        await self._put(key, {"status": "prepared"})
        try:
            value = await op()
        except EffectNotApplied as exc:
            await self._put(key, {"status": "failed", "error": f"{type(exc).__name__}: {exc}"})
            raise
        except (asyncio.CancelledError, Exception) as exc:
            reason = f"the operation raised {type(exc).__name__}: {exc}"
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
