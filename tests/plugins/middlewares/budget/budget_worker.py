"""One worker process of the shared-budget tests: runs agents with a priced fake model against a
shared budget ledger until the ledger refuses, then prints what it recorded as one JSON line.

``python budget_worker.py '<json>'`` with ``store`` (a store slot: ``{"use": "redis", ...}``),
``ceiling`` (USD text), ``cost`` (USD text each call reports), ``ledger`` (a ledger key, or
``null`` to charge the root run ``root``: every agent run is then a child of a run of that id).
It prints ``ready`` and waits for a line on stdin before its first run, so that all workers start
together.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from decimal import Decimal
from typing import Any

from budget_fakes import PRICE, PricedModel
from seamkit._agent.agent import Agent
from seamkit.errors import BudgetExceeded
from seamkit.testing import make_test_ctx
from seamkit.values import ChatRequest
from seamkit_budget.config import BudgetConfig
from seamkit_budget.middleware import BudgetMiddleware, build


class _Recording(PricedModel):
    """A priced fake that records the largest reservation the budget took for a call it received."""

    def __init__(self, mw: BudgetMiddleware, **kw: Any) -> None:
        super().__init__(**kw)
        self.mw = mw
        self.reservation_max = Decimal(0)

    async def stream(self, request: ChatRequest):  # type: ignore[no-untyped-def, override]
        self.reservation_max = max(self.reservation_max, self.mw.reservation(request, PRICE))
        async for d in super().stream(request):
            yield d


async def main(args: dict[str, Any]) -> dict[str, Any]:
    mw = build(BudgetConfig(max_cost_usd=args["ceiling"], store=args["store"], ledger=args.get("ledger"),
                            default_max_tokens=1000))
    model = _Recording(mw, cost=Decimal(args["cost"]), delay=float(args.get("delay", 0.002)))
    agent = Agent(model, prompt="Be brief.", middlewares=[mw])
    root = make_test_ctx(run_id=args["root"]) if args.get("root") else None
    charged = Decimal(0)
    admitted = 0
    refusals: Counter[str] = Counter()
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(100_000):
        try:
            result = await agent.run("capital of France?", ctx=root.child() if root is not None else None)
        except BudgetExceeded:
            refusals["BudgetExceeded"] += 1
            break
        except Exception as exc:  # recorded for the test to fail on
            refusals[f"{type(exc).__name__}: {exc}"] += 1
            break
        assert result.usage.cost is not None
        charged += result.usage.cost
        admitted += 1
    await mw.aclose()
    return {"admitted": admitted, "charged": str(charged), "refusals": dict(refusals),
            "reservation_max": str(model.reservation_max), "owner": mw.shared.owner if mw.shared else None}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(json.loads(sys.argv[1])))), flush=True)
