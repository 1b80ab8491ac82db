"""A shared budget ledger across OS processes, on real SQLite (one machine), Redis and PostgreSQL:
four worker processes run agents against one ceiling until it refuses them.

What is checked: the spend never passes the ceiling by more than one in-flight reservation per
worker (each worker has at most one call in flight; the single admission counter gives the
stronger bound of one reservation in all, asserted too), every refusal is ``BudgetExceeded``, and
no update is lost (the charges the workers recorded add up to the ledger's ``spent``, and nothing
is left reserved)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from seamkit._slots import NestedSlot, build_nested
from seamkit.values import Scope
from seamkit_budget.shared import SharedLedger
from seamkit_budget.units import to_units

WORKER = Path(__file__).with_name("budget_worker.py")
WORKERS = 4
CEILING = Decimal("0.1001")
COST = Decimal("0.002")  # each call's reported cost: just under its reservation ($0.002019)


def run_workers(store: dict[str, Any], *, ledger: str | None, root: str | None) -> list[dict[str, Any]]:
    args = json.dumps({"store": store, "ceiling": str(CEILING), "cost": str(COST), "ledger": ledger, "root": root})
    procs = [subprocess.Popen([sys.executable, str(WORKER), args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(WORKERS)]
    try:
        for p in procs:  # all ready (store connected, agent built) before any starts
            assert p.stdout is not None and p.stdout.readline().strip() == "ready", p.stderr and p.stderr.read()
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        out = []
        for p in procs:
            stdout, stderr = p.communicate(timeout=120)
            assert p.returncode == 0, stderr
            out.append(json.loads(stdout.strip().splitlines()[-1]))
        return out
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


async def check_ledger(store_slot: dict[str, Any], key: str, results: list[dict[str, Any]], scope: Scope) -> None:
    assert all(r["refusals"] == {"BudgetExceeded": 1} for r in results), results
    admitted = sum(r["admitted"] for r in results)
    charged = sum((Decimal(r["charged"]) for r in results), Decimal(0))
    reservation = max(Decimal(r["reservation_max"]) for r in results)
    assert charged == admitted * COST and reservation > COST
    store = build_nested("store", NestedSlot.model_validate(store_slot), at="store")
    try:
        view = await SharedLedger(store).view(key, scope)
    finally:
        await store.aclose()
    # no lost update: every charge a worker recorded is in the ledger, nothing stays reserved
    assert view.spent == charged
    assert view.reserved == 0 and view.unattributed == 0
    assert sorted(h.owner for h in view.holders) == sorted(r["owner"] for r in results)
    assert all(h.reserved == 0 for h in view.holders)
    # the bound: over the ceiling by at most one in-flight reservation per worker...
    assert view.spent <= CEILING + WORKERS * reservation
    # ...and, with one atomic admission counter, by less than one reservation in all
    assert to_units(view.spent) < to_units(CEILING) + to_units(reservation)
    # the ledger was used up: refusals came because the ceiling was reached, not too early
    assert view.spent + WORKERS * reservation >= CEILING
    print(f"\nshared budget over {WORKERS} processes: {admitted} calls, spent ${view.spent} of ${CEILING} "
          f"(over by ${max(view.spent - CEILING, Decimal(0))}; one reservation ${reservation})")


def _sqlite(tmp_path: Path) -> dict[str, Any]:
    return {"use": "sqlite", "path": str(tmp_path / "budget.db")}


@pytest.fixture(params=["sqlite", "redis", "postgres"])
def store_slot(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    makers: dict[str, Callable[[], dict[str, Any]]] = {
        "sqlite": lambda: _sqlite(tmp_path),
        "redis": lambda: {"use": "redis", "url": request.getfixturevalue("redis_url")},
        "postgres": lambda: {"use": "postgres", "dsn": request.getfixturevalue("postgres_dsn"), "schema": "budget"},
    }
    return makers[request.param]()


async def set_up(store_slot: dict[str, Any]) -> None:
    """Create the store's tables once, as a deployment does (``seamkit stores setup``)."""
    store = build_nested("store", NestedSlot.model_validate(store_slot), at="store")
    try:
        setup = getattr(store, "setup", None)
        if setup is not None:
            await setup()
    finally:
        await store.aclose()


async def test_a_named_ledger_holds_its_ceiling_across_processes(store_slot: dict[str, Any]) -> None:
    key = f"batch-{uuid.uuid4().hex[:8]}"
    await set_up(store_slot)
    results = run_workers(store_slot, ledger=key, root=None)
    await check_ledger(store_slot, key, results, Scope())  # agent.run's own context: the default tenant


async def test_child_runs_on_other_processes_charge_their_root_runs_ledger(redis_url: str) -> None:
    root = f"run_{uuid.uuid4().hex}"
    slot = {"use": "redis", "url": redis_url}
    results = run_workers(slot, ledger=None, root=root)
    await check_ledger(slot, root, results, Scope("test"))  # the tenant of make_test_ctx
