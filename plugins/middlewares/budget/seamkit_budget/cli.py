"""The body of ``seamkit budget show|release``: open the budget middleware's store, read or repair the ledger."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

__all__ = ["main"]


def _budget_config(composition: Any) -> Any:
    """The entry agent's ``budget`` middleware config (a BudgetConfig), or ``None``."""
    from seamkit_budget.config import BudgetConfig

    for ref in composition.agent.middlewares:
        if getattr(ref, "use", None) == "budget":
            return ref.config if ref.config is not None else BudgetConfig.model_validate(ref.params)
    return None


def main(args: argparse.Namespace) -> int:
    """Run ``seamkit budget show`` or ``release``; exit 0, or 2 (a usage error, and ``show`` of a
    ledger never used: no such ledger)."""
    from seamkit.plugin import UsageError, build_nested
    from seamkit.plugin import load_for_command as _load
    from seamkit.values import Scope

    from seamkit_budget.shared import SharedLedger, check_ledger_key

    composition, registry = _load(args.agent)  # ConfigError: exit 2; secrets masked from here on
    cfg = _budget_config(composition)
    if cfg is None or cfg.store is None:
        raise UsageError(f"{args.agent}: its agent has no budget middleware with a 'store:' (a shared ledger)")
    key = args.ledger or cfg.ledger
    if key is None:
        raise UsageError("name the LEDGER: the budget middleware has no 'ledger:' (each run tree then has its own, "
                         "keyed by its root run id)")
    try:
        check_ledger_key(key)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    store = build_nested("store", cfg.store, at="agent.middlewares.budget.store", registry=registry)
    ledger = SharedLedger(store, namespace=cfg.namespace)
    scope = Scope(args.tenant)

    async def act() -> Any:
        try:
            if args.budget_command == "show":
                if not await ledger.exists(key, scope):
                    return None
                return await ledger.view(key, scope)
            if args.dead:
                return await ledger.release_dead(key, scope)
            return {args.owner: await ledger.release(key, args.owner, scope)}
        finally:
            await store.aclose()

    out = asyncio.run(act())
    if out is None:  # a misspelt name is not an empty ledger
        named = f" (the composition names {cfg.ledger!r})" if cfg.ledger and cfg.ledger != key else ""
        raise UsageError(f"no ledger {key!r} (tenant {args.tenant}) in the budget store of {args.agent}: nothing has "
                         f"ever been reserved or charged on it{named}; check the name and --tenant")
    if args.budget_command == "show":
        if args.json:
            sys.stdout.write(json.dumps({
                "ledger": key, "tenant": args.tenant, "ceiling": str(cfg.max_cost_usd), "spent": str(out.spent),
                "reserved": str(out.reserved), "unattributed": str(out.unattributed),
                "holders": [{"owner": h.owner, "host": h.host, "pid": h.pid, "started": h.started,
                             "reserved": str(h.reserved)} for h in out.holders]}, indent=2) + "\n")
        else:
            sys.stdout.write(f"ledger {key} (tenant {args.tenant}): spent ${out.spent} and reserved ${out.reserved} "
                             f"of ${cfg.max_cost_usd}\n")
            for h in out.holders:
                if h.reserved:
                    sys.stdout.write(f"  {h.owner} holds ${h.reserved}\n")
            if out.unattributed:
                sys.stdout.write(f"  ${out.unattributed} held by no process (one killed between two writes)\n")
        return 0
    released = {k: v for k, v in out.items() if v}
    for owner, usd in released.items():
        sys.stdout.write(f"released ${usd} held by {owner}\n")
    if not released:
        sys.stdout.write("nothing to release\n")
    return 0
