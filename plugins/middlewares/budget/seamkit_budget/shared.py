"""A budget ledger kept in a :class:`~seamkit._ports.StorePort`, shared by every process (and
machine) that names the same store and ledger key.

Amounts are integers in nano-dollars (:mod:`seamkit_budget.units`). A ledger ``L`` in scope
``Scope(tenant)`` is these store keys (``ns`` is the namespace, ``budget`` by default):

- ``ns:L:committed``: spent plus reserved. This is the admission counter: a reservation is one
  atomic ``increment`` of it by the amount needed; the value before the increment (the result
  minus the amount) decides. Admitted iff it was below the ceiling (as in-process: ``spent +
  reserved < ceiling``); otherwise the amount is taken back and the call refused. Every admitted
  call saw less than the ceiling before adding its own amount, so the committed total (and so what
  is spent, while charges stay within reservations) never passes the ceiling by more than the
  largest single reservation, however many processes reserve at once. A refused call's amount
  is in the counter for one round trip: it can only make a concurrent call be refused, never admit
  one.
- ``ns:L:spent``: settled charges; the reserved amount reads as ``committed - spent``.
- ``ns:L:held:OWNER``: what one owner (one process: ``host:pid:random``) holds reserved now, and
  ``ns:L:owners``: the list of owners that reserved on the ledger (host, pid, start time), so the
  reservations of a process that died can be found and released (:meth:`SharedLedger.release`,
  :meth:`SharedLedger.release_dead`).

Order of the writes, chosen so that a crash between two of them leaves the ledger holding too
much, never too little: reserve = ``committed += n`` then ``held += n``; settle = ``held -= n``,
then ``committed += charge - n``, then ``spent += charge``. A process killed between the two
writes of a reservation or settlement leaves at most that one amount in ``committed`` without an
owner; :meth:`SharedLedger.view` shows it as ``unattributed``.

Nothing here expires by itself: the store's TTLs cannot expire part of a counter, and releasing
the reservation of a process that only *looks* dead (a long pause, a partition) would let its
later settlement release it a second time, under-counting the ledger, which a budget must never
do. A dead process's reservations therefore stay held (the ledger errs towards refusing) until
:meth:`SharedLedger.release_dead` (same host: the pid is checked) or :meth:`SharedLedger.release`
(an owner named by someone who knows it is gone) gives them back.
"""

from __future__ import annotations

import os
import re
import socket
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from seamkit.plugin import StorePort
from seamkit.values import Scope

from seamkit_budget.units import from_units

__all__ = ["Holder", "SharedLedger", "SharedLedgerView"]

_REGISTERED_KEPT = 10_000  # ledgers this process remembers having registered on (an LRU; a re-registration is harmless)
_KEY = re.compile(r"^[A-Za-z0-9_.:@-]{1,200}$")


def check_ledger_key(key: str) -> str:
    """``key`` when it can name a shared ledger (1-200 of ``A-Z a-z 0-9 _ . : @ -``); else ``ValueError``."""
    if not isinstance(key, str) or not _KEY.match(key):
        raise ValueError(f"a ledger key is 1-200 characters of letters, digits and _ . : @ -; got {key!r}")
    return key


@dataclass(frozen=True, slots=True)
class Holder:
    """One process that reserved on a ledger: ``owner`` (``host:pid:random``), ``host``, ``pid``,
    ``started`` (unix seconds) and ``reserved`` (USD it holds now)."""

    owner: str
    host: str
    pid: int
    started: float
    reserved: Decimal


@dataclass(frozen=True, slots=True)
class SharedLedgerView:
    """A snapshot of a shared ledger, USD as ``Decimal``: ``spent`` (settled), ``reserved``
    (``committed - spent``: held by calls in flight, including any left by dead processes),
    ``holders`` (every owner that ever reserved on it, with what it holds now) and
    ``unattributed`` (reserved but held by no owner: left by a process killed between two writes)."""

    ledger: str
    spent: Decimal
    reserved: Decimal
    holders: tuple[Holder, ...]

    @property
    def unattributed(self) -> Decimal:
        return self.reserved - sum((h.reserved for h in self.holders), Decimal(0))


@dataclass(frozen=True, slots=True)
class Refusal:
    """A reservation that was refused: the ledger's ``spent`` and ``reserved`` (units) before it."""

    spent: int
    reserved: int


class SharedLedger:
    """Shared ledgers in ``store`` under key prefix ``namespace`` (see the module doc).

    Every method raises what the store raises (:class:`~seamkit.errors.StoreUnavailable`...)."""

    def __init__(self, store: StorePort, *, namespace: str = "budget") -> None:
        self.store = store
        self.namespace = namespace
        self._pid = -1
        self._owner = ""
        self._registered: OrderedDict[tuple[str, str], None] = OrderedDict()

    def _key(self, ledger: str, part: str) -> str:
        return f"{self.namespace}:{ledger}:{part}"

    @property
    def owner(self) -> str:
        """This process's owner id, ``host:pid:random`` (a new one after a fork)."""
        pid = os.getpid()
        if pid != self._pid:
            self._pid = pid
            self._owner = f"{socket.gethostname()}:{pid}:{uuid.uuid4().hex[:8]}"
            self._registered = OrderedDict()
        return self._owner

    async def _register(self, scope: Scope, ledger: str) -> str:
        owner = self.owner
        at = (scope.tenant, ledger)
        if at in self._registered:
            self._registered.move_to_end(at)
        else:
            await self.store.append(scope, self._key(ledger, "owners"), {
                "owner": owner, "host": socket.gethostname(), "pid": os.getpid(), "started": time.time()})
            self._registered[at] = None
            if len(self._registered) > _REGISTERED_KEPT:
                self._registered.popitem(last=False)
        return owner

    async def reserve(self, scope: Scope, ledger: str, units: int, ceiling: int) -> Refusal | None:
        """Reserve ``units`` (> 0) on ``ledger`` when its committed total is below ``ceiling``
        (units). Returns ``None`` when admitted, else a :class:`Refusal` (the amount is given back)."""
        committed = self._key(ledger, "committed")
        after = await self.store.increment(scope, committed, units)
        before = after - units
        if before >= ceiling:
            await self.store.increment(scope, committed, -units)
            spent = await self._read(scope, self._key(ledger, "spent"))
            return Refusal(spent, before - spent)
        try:
            owner = await self._register(scope, ledger)
            await self.store.increment(scope, self._key(ledger, f"held:{owner}"), units)
        except BaseException:
            # not admitted after all: give the amount back (if this fails too, it stays held: safe)
            await self.store.increment(scope, committed, -units)
            raise
        return None

    async def settle(self, scope: Scope, ledger: str, units: int, charge: int) -> int:
        """Release a reservation of ``units`` and charge ``charge`` (units); returns the ledger's
        spent total after it."""
        if units:
            await self.store.increment(scope, self._key(ledger, f"held:{self.owner}"), -units)
        if charge != units:
            await self.store.increment(scope, self._key(ledger, "committed"), charge - units)
        return await self.store.increment(scope, self._key(ledger, "spent"), charge)

    # ------------------------------------------------------------------------------- operations

    async def view(self, ledger: str, scope: Scope | None = None) -> SharedLedgerView:
        """The ledger's totals and holders (all zero for a ledger never used)."""
        scope = scope or Scope()
        spent = await self._read(scope, self._key(ledger, "spent"))
        committed = await self._read(scope, self._key(ledger, "committed"))
        holders: list[Holder] = []
        for rec in await self._owners(scope, ledger):
            held = await self._read(scope, self._key(ledger, f"held:{rec['owner']}"))
            holders.append(Holder(str(rec["owner"]), str(rec["host"]), int(rec["pid"]), float(rec["started"]),
                                  from_units(held)))
        return SharedLedgerView(ledger, from_units(spent), from_units(committed - spent), tuple(holders))

    async def exists(self, ledger: str, scope: Scope | None = None) -> bool:
        """Whether ``ledger`` was ever used in ``scope``: some process registered on it, or its
        totals were written. A ledger never used reads as all zero in :meth:`view`; a command
        showing it must tell the two apart (a misspelt name is not an empty ledger)."""
        scope = scope or Scope()
        if await self._owners(scope, ledger):
            return True
        for part in ("spent", "committed"):
            if await self.store.get(scope, self._key(ledger, part)) is not None:
                return True
        return False

    async def release(self, ledger: str, owner: str, scope: Scope | None = None) -> Decimal:
        """Give back what ``owner`` holds on ``ledger`` (USD released). Only for an owner that is
        gone for good: if it is still running, its own settlement releases the same amount again
        and the ledger under-counts."""
        scope = scope or Scope()
        held_key = self._key(ledger, f"held:{owner}")
        held = await self._read(scope, held_key)
        if held:
            await self.store.increment(scope, held_key, -held)
            await self.store.increment(scope, self._key(ledger, "committed"), -held)
        return from_units(held)

    async def release_dead(self, ledger: str, scope: Scope | None = None) -> dict[str, Decimal]:
        """Release the reservations of owners on *this host* whose process no longer exists
        (``owner -> USD released``). Owners on other hosts are left alone (use :meth:`release`)."""
        scope = scope or Scope()
        host = socket.gethostname()
        out: dict[str, Decimal] = {}
        for rec in await self._owners(scope, ledger):
            if rec["host"] != host or rec["owner"] == self.owner or _alive(int(rec["pid"])):
                continue
            released = await self.release(ledger, str(rec["owner"]), scope)
            if released:
                out[str(rec["owner"])] = released
        return out

    async def delete(self, ledger: str, scope: Scope | None = None) -> bool:
        """Delete the ledger's keys (its totals, owners and holdings); says whether it existed.
        For a ledger no longer used (a finished run tree's, a past batch's): nothing expires by
        itself. A process still charging it would start it again from its own amounts."""
        scope = scope or Scope()
        owners = await self._owners(scope, ledger)
        found = False
        for part in ("committed", "spent", "owners", *(f"held:{rec['owner']}" for rec in owners)):
            found = await self.store.delete(scope, self._key(ledger, part)) or found
        return found

    async def _read(self, scope: Scope, key: str) -> int:
        value = await self.store.get(scope, key, 0)
        return value if type(value) is int else 0

    async def _owners(self, scope: Scope, ledger: str) -> list[dict[str, Any]]:
        seen: dict[str, dict[str, Any]] = {}
        for rec in await self.store.list(scope, self._key(ledger, "owners")):
            if isinstance(rec, dict) and "owner" in rec:
                seen.setdefault(str(rec["owner"]), dict(rec))
        return list(seen.values())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True
